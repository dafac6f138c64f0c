# mypy: allow-untyped-defs
# (Kernels take no annotations: their types come from the arguments of each call.)
"""The 3-D heat equation over MPI ranks: a Tack kernel steps each rank's slab, halos
travel between neighbours as Tack arrays (no copies), and rank 0 checks the gathered
field against the single-process run, value for value.

    mpiexec -n 4 python examples/mpi_heat.py --output heat.vti

The field is indexed [z, y, x] (x fastest, VTK's point order) and split along z: each
rank holds its planes plus one halo plane on either side. The outer faces of the box
are held fixed (z = 0 hot, the others cold), and a hot cube sits in the middle at the
start. Every step, each rank sends its first and last planes to its neighbours with
one Sendrecv each way; a plane is a message spec [u, (count, displacement)] into the
rank's own Tack array, so MPI reads and writes the kernel's memory directly.

Each point's update is the same arithmetic whatever the decomposition, so the result
is bit-for-bit the single-process one; rank 0 reruns the problem alone to prove it
(skip that with --no-check when timing). --output writes the gathered field as a .vti
image that VTK and ParaView open.
"""

import argparse
import os
import time

from mpi4py import MPI


def share_cores(comm: MPI.Comm) -> None:
    """Ranks on one node share its cores: Tack's thread pool takes its share of them,
    unless TACK_NUM_THREADS says otherwise. Runs before the pool starts."""
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    share = max(1, (os.cpu_count() or 1) // local.size)
    local.Free()
    os.environ.setdefault("TACK_NUM_THREADS", str(share))


share_cores(MPI.COMM_WORLD)

import numpy as np  # noqa: E402

import tack  # noqa: E402


@tack.kernel
def initial(u, z0, nz):
    """u's plane i is the global plane z0 + i - 1 (plane 0 is the lower halo)."""
    for i in range(u.shape[0]):
        z = z0 + i - 1
        for j in range(u.shape[1]):
            for k in range(u.shape[2]):
                hot = 0.0
                if z == 0:
                    hot = 1.0
                if (3 * z >= nz and 3 * z < 2 * nz and 3 * j >= u.shape[1]
                        and 3 * j < 2 * u.shape[1] and 3 * k >= u.shape[2]
                        and 3 * k < 2 * u.shape[2]):
                    hot = 1.0
                u[i, j, k] = hot


@tack.kernel
def heat_step(u, out, alpha):
    """One explicit step of the 7-point Laplacian on the planes between the halos;
    the y and x faces stay fixed."""
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            for k in range(1, u.shape[2] - 1):
                out[i, j, k] = u[i, j, k] + alpha * (
                    u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k]
                    + u[i, j, k - 1] + u[i, j, k + 1] - 6.0 * u[i, j, k])


def split(n: int, parts: int) -> list[int]:
    """n planes over parts ranks, as even as possible (the first ranks take one more)."""
    return [n // parts + (1 if r < n % parts else 0) for r in range(parts)]


class Slab:
    """One rank's planes of the global (nz, ny, nx) field, with a halo plane on each
    side; the global boundary planes z = 0 and z = nz - 1 sit in the outer halos."""

    def __init__(self, comm: MPI.Comm, shape: tuple[int, int, int]):
        nz, ny, nx = shape
        self.comm = comm
        self.counts = split(nz - 2, comm.size)
        if min(self.counts) < 1:
            raise SystemExit(f"{nz - 2} interior planes cannot be split over "
                             f"{comm.size} ranks: use a larger --nz")
        self.nloc = self.counts[comm.rank]
        self.z0 = 1 + sum(self.counts[:comm.rank])  # global index of the first own plane
        self.plane = ny * nx
        self.down = comm.rank - 1 if comm.rank > 0 else MPI.PROC_NULL
        self.up = comm.rank + 1 if comm.rank < comm.size - 1 else MPI.PROC_NULL
        self.exchange_seconds = 0.0  # time spent in halo exchanges, waits included
        self.u = tack.empty((self.nloc + 2, ny, nx))
        self.out = tack.empty((self.nloc + 2, ny, nx))
        # Both buffers hold the fixed faces; steps write only between them.
        initial(self.u, self.z0, nz)
        initial(self.out, self.z0, nz)

    def planes(self, first: int, count: int = 1) -> list[object]:
        """A message over `count` whole planes of u, starting at local plane `first`."""
        return [self.u, (count * self.plane, first * self.plane), MPI.FLOAT]

    def exchange_halos(self) -> None:
        # Upward: my last plane to the rank above, my lower halo from the rank below.
        self.comm.Sendrecv(self.planes(self.nloc), self.up, 1,
                           self.planes(0), self.down, 1)
        # Downward: my first plane to the rank below, my upper halo from the one above.
        self.comm.Sendrecv(self.planes(1), self.down, 2,
                           self.planes(self.nloc + 1), self.up, 2)

    def step(self, alpha: float) -> None:
        start = time.perf_counter()
        self.exchange_halos()
        self.exchange_seconds += time.perf_counter() - start
        heat_step(self.u, self.out, alpha)
        self.u, self.out = self.out, self.u

    def gather(self, shape: tuple[int, int, int]) -> "tack.Array | None":
        """The whole field on rank 0 (None elsewhere): the boundary planes from the
        initial state, the interior planes straight from each rank's slab."""
        field = None
        recv = None
        if self.comm.rank == 0:
            field = tack.empty(shape)
            initial(field, 1, shape[0])
            counts = [c * self.plane for c in self.counts]
            displs = [(1 + sum(self.counts[:r])) * self.plane
                      for r in range(self.comm.size)]
            recv = [field, (counts, displs), MPI.FLOAT]
        self.comm.Gatherv(self.planes(1, self.nloc), recv, root=0)
        return field


def simulate(comm: MPI.Comm, shape: tuple[int, int, int], steps: int,
             alpha: float) -> tuple["tack.Array | None", float, float]:
    """Runs `steps` steps over comm; returns the gathered field (rank 0), the slowest
    rank's seconds per step and the largest share of a step spent exchanging halos
    (the first step, which compiles, not counted)."""
    slab = Slab(comm, shape)
    slab.step(alpha)
    comm.Barrier()
    slab.exchange_seconds = 0.0
    start = time.perf_counter()
    for _ in range(steps - 1):
        slab.step(alpha)
    elapsed = time.perf_counter() - start
    per_step = comm.allreduce(elapsed, op=MPI.MAX) / max(1, steps - 1)
    exchange = comm.allreduce(slab.exchange_seconds, op=MPI.MAX) / max(1, steps - 1)
    return slab.gather(shape), per_step, exchange


def write_vti(field: "tack.Array", path: str) -> None:
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    from tack.interop.vtk import array_to_vtk

    nz, ny, nx = field.shape
    image = vtkImageData(dimensions=(nx, ny, nz))
    scalars = array_to_vtk(field.reshape(-1), name="temperature")  # shares the field
    image.point_data.SetScalars(scalars)
    writer = vtkXMLImageDataWriter(file_name=path)
    writer.SetInputData(image)
    if writer.Write() != 1:
        raise RuntimeError(f"VTK could not write {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nx", type=int, default=64)
    parser.add_argument("--ny", type=int, default=64)
    parser.add_argument("--nz", type=int, default=0,
                        help="global planes along z, boundaries included "
                             "(default: 16 interior planes per rank)")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--output", help="write the gathered field as a .vti image")
    parser.add_argument("--no-check", action="store_true",
                        help="skip rank 0's single-process rerun (for timing)")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    shape = (args.nz or 16 * comm.size + 2, args.ny, args.nx)
    alpha = 1.0 / 8.0  # stable for the explicit 7-point scheme (alpha <= 1/6)
    tack.set_default_device("cpu")
    field, per_step, exchange = simulate(comm, shape, args.steps, alpha)
    if field is None:  # every rank but 0
        return
    print(f"MPI heat: {comm.size} rank(s), grid {shape[0]}x{shape[1]}x{shape[2]} "
          f"(z, y, x), {args.steps} steps, {per_step * 1e3:.3f} ms per step "
          f"(halo exchange up to {exchange * 1e3:.3f} ms), "
          f"{os.environ['TACK_NUM_THREADS']} thread(s) per rank")
    if not args.no_check:
        alone, _, _ = simulate(MPI.COMM_SELF, shape, args.steps, alpha)
        assert alone is not None  # rank 0 of COMM_SELF
        got, want = np.from_dlpack(field), np.from_dlpack(alone)
        if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
            raise SystemExit("MPI heat: the gathered field differs from the "
                             "single-process run")
        print("MPI heat: check passed (bit-for-bit equal to the single-process run)")
    if args.output:
        write_vti(field, args.output)
        print(f"MPI heat: wrote {args.output}")


if __name__ == "__main__":
    main()
