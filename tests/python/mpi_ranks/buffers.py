"""Rank script: Tack arrays as mpi4py buffers (run by test_mpi_buffers.py with 2 ranks).

Every case runs on every rank and ends with a barrier; rank 0 prints `ok <case>` for
each case that passed everywhere. An assertion on any rank aborts the job (the script
runs under `python -m mpi4py`).

    mpiexec -n 2 python -m mpi4py tests/python/mpi_ranks/buffers.py [--device cuda]
"""

import argparse

import numpy as np
from mpi4py import MPI

import tack
from tack.interop.mpi import gpu_aware

comm = MPI.COMM_WORLD
rank = comm.rank
assert comm.size == 2, "run with mpiexec -n 2"
peer = 1 - rank


@tack.kernel
def scaled(src, dst, factor):
    for i in range(src.shape[0]):
        dst[i] = src[i] * factor


def address(a: tack.Array) -> int:
    """The array's data pointer, read independently of MPI."""
    if a.device.backend == "cpu":
        return np.from_dlpack(a).ctypes.data
    return a.__cuda_array_interface__["data"][0]


def arange(n: int, dtype=tack.f32, offset: float = 0.0) -> tack.Array:
    return tack.array(np.arange(n) + offset, dtype=dtype)


CASES = []
STAGED = set()  # cases that hand MPI only host arrays: they run with any MPI


def case(fn):
    CASES.append(fn)
    return fn


def staged(fn):
    STAGED.add(fn.__name__)
    return fn


@case
def send_recv_lands_in_place_and_a_kernel_reads_it():
    a = arange(1000, offset=rank * 10000)
    b = tack.full(1000, -1.0)
    before = address(b)
    comm.Sendrecv(a, peer, 7, b, peer, 7)
    assert address(b) == before
    np.testing.assert_array_equal(b.numpy(), np.arange(1000) + peer * 10000)
    out = tack.zeros(1000)
    scaled(b, out, 2.0)
    np.testing.assert_array_equal(out.numpy(), 2.0 * (np.arange(1000) + peer * 10000))


@case
def send_and_recv_each_dtype():
    for dt, npdt in [(tack.f64, np.float64), (tack.f32, np.float32),
                     (tack.f16, np.float16), (tack.i8, np.int8),
                     (tack.i16, np.int16), (tack.i32, np.int32), (tack.i64, np.int64),
                     (tack.u8, np.uint8), (tack.u16, np.uint16), (tack.u32, np.uint32),
                     (tack.u64, np.uint64), (tack.bool, np.bool_)]:
        values = (np.arange(24) % 7 == 3) if npdt is np.bool_ else np.arange(24) * 3 + 1
        a = tack.array(values.reshape(2, 3, 4), dtype=dt)
        if rank == 0:
            comm.Send(a, dest=1)
        else:
            b = tack.zeros((2, 3, 4), dtype=dt)
            before = address(b)
            comm.Recv(b, source=0)
            assert address(b) == before
            np.testing.assert_array_equal(b.numpy(), values.reshape(2, 3, 4).astype(npdt))


@case
def empty_and_zero_d_arrays():
    empty = tack.zeros(0)
    scalar = tack.full((), 2.5 + rank)
    got = tack.zeros(())
    comm.Sendrecv(empty, peer, 5, tack.zeros(0), peer, 5)
    comm.Sendrecv(scalar, peer, 6, got, peer, 6)
    assert got.numpy() == 2.5 + peer


@case
def vector_elements_travel_as_their_scalars():
    values = np.arange(30, dtype=np.float32).reshape(10, 3)
    if rank == 0:
        comm.Send(tack.array(values, dtype=tack.vec3), dest=1)
    else:
        b = tack.zeros(10, dtype=tack.vec3)
        comm.Recv([b, MPI.FLOAT], source=0)
        np.testing.assert_array_equal(b.numpy(), values)


@case
def message_specs():
    """[a, datatype], [a, count], [a, (count, displ)], and the 3- and 4-item forms."""
    a = arange(10, offset=100)
    specs = [
        ([a, MPI.FLOAT], lambda b: [b, MPI.FLOAT], slice(0, 10), slice(0, 10)),
        ([a, 3], lambda b: [b, 3], slice(0, 3), slice(0, 3)),
        ([a, (3, 2)], lambda b: [b, (3, 5)], slice(2, 5), slice(5, 8)),
        ([a, 4, MPI.FLOAT], lambda b: [b, 4, MPI.FLOAT], slice(0, 4), slice(0, 4)),
        ([a, (2, 7), MPI.FLOAT], lambda b: [b, (2, 1), MPI.FLOAT], slice(7, 9), slice(1, 3)),
        ([a, 3, 1, MPI.FLOAT], lambda b: [b, 3, 6, MPI.FLOAT], slice(1, 4), slice(6, 9)),
    ]
    for send_spec, recv_spec, sent, landed in specs:
        if rank == 0:
            comm.Send(send_spec, dest=1)
        else:
            b = tack.full(10, -1.0)
            comm.Recv(recv_spec(b), source=0)
            expected = np.full(10, -1.0, np.float32)
            expected[landed] = np.arange(10, dtype=np.float32)[sent] + 100
            np.testing.assert_array_equal(b.numpy(), expected)


@case
def bcast_into_a_tack_array():
    a = arange(64) if rank == 0 else tack.zeros(64)
    before = address(a)
    comm.Bcast(a, root=0)
    assert address(a) == before
    np.testing.assert_array_equal(a.numpy(), np.arange(64))


@case
def reductions_into_tack_arrays():
    a = tack.full(16, float(rank + 1))
    total = tack.zeros(16)
    before = address(total)
    comm.Allreduce(a, total, op=MPI.SUM)
    assert address(total) == before
    np.testing.assert_array_equal(total.numpy(), np.full(16, 3.0))
    comm.Allreduce(MPI.IN_PLACE, a, op=MPI.MAX)
    np.testing.assert_array_equal(a.numpy(), np.full(16, 2.0))
    root = tack.zeros(16)
    comm.Reduce(tack.full(16, float(rank + 1)), root if rank == 0 else None, op=MPI.PROD)
    if rank == 0:
        np.testing.assert_array_equal(root.numpy(), np.full(16, 2.0))


@case
def gather_and_scatter_with_counts():
    mine = arange(3, offset=10 * rank)
    every = tack.zeros(6)
    comm.Allgather(mine, every)
    np.testing.assert_array_equal(every.numpy(), [0, 1, 2, 10, 11, 12])
    # Gatherv: rank r sends r + 1 values into its own place.
    counts, displs = [1, 2], [0, 1]
    g = tack.full(3, -1.0)
    comm.Gatherv([arange(rank + 1, offset=5 * rank), MPI.FLOAT],
                 [g, (counts, displs), MPI.FLOAT] if rank == 0 else None, root=0)
    if rank == 0:
        np.testing.assert_array_equal(g.numpy(), [0, 5, 6])
    part = tack.zeros(2)
    comm.Scatter(arange(4) if rank == 0 else None, part, root=0)
    np.testing.assert_array_equal(part.numpy(), np.arange(2) + 2 * rank)


@case
def nonblocking_and_persistent_requests():
    a = arange(32, offset=rank)
    b = tack.zeros(32)
    reqs = [comm.Irecv(b, source=peer, tag=3), comm.Isend(a, dest=peer, tag=3)]
    MPI.Request.Waitall(reqs)
    np.testing.assert_array_equal(b.numpy(), np.arange(32) + peer)
    # A persistent request takes the buffers once; each Start sends what they hold now.
    c = tack.zeros(32)
    reqs = [comm.Recv_init(c, source=peer, tag=4), comm.Send_init(a, dest=peer, tag=4)]
    for step in range(3):
        tack.copyto(a, np.arange(32) + 100 * step + rank)
        MPI.Prequest.Startall(reqs)
        MPI.Request.Waitall(reqs)
        np.testing.assert_array_equal(c.numpy(), np.arange(32) + 100 * step + peer)
    for r in reqs:
        r.Free()


@case
def read_only_arrays_send_but_never_receive():
    """Two kinds of read-only array: host memory wrapped by array_from_ptr without
    writable=True (on the CPU device), and a DLPack import of a read-only NumPy array
    (a host array whatever the default device)."""
    on_cpu = tack.get_default_device().backend == "cpu"
    for source in ("pointer", "dlpack") if on_cpu else ("dlpack",):
        backing = np.arange(8, dtype=np.float32) + 50 * rank
        if source == "pointer":
            ro = tack.array_from_ptr(backing, (8,), tack.f32)
        else:
            backing.flags.writeable = False
            ro = tack.from_dlpack(backing)
        assert not ro.writable
        if rank == 0:
            comm.Send(ro, dest=1)
        else:
            for target in (ro, [ro, MPI.FLOAT], [ro, (2, 1)]):
                try:
                    comm.Recv(target, source=0)
                except BufferError:
                    pass
                else:
                    raise AssertionError(f"received into a read-only array via {target!r}")
            np.testing.assert_array_equal(backing, np.arange(8, dtype=np.float32) + 50)
            b = tack.zeros(8)
            comm.Recv(b, source=0)  # the message is still there, untouched
            np.testing.assert_array_equal(b.numpy(), np.arange(8))
        # Collectives check the receive buffer before any rank communicates.
        try:
            comm.Allreduce(tack.full(8, 1.0), ro)
        except BufferError:
            pass
        else:
            raise AssertionError("reduced into a read-only array")
        np.testing.assert_array_equal(backing, np.arange(8, dtype=np.float32) + 50 * rank)


@case
@staged
def staged_through_host_arrays():
    """For an MPI that cannot read device memory: one explicit copy each way through
    host Tack arrays (on the CPU the same code is a plain copy)."""
    a = arange(256, offset=rank)
    b = tack.zeros(256)
    cpu = tack.device("cpu")
    send_host = tack.zeros(256, device=cpu)
    recv_host = tack.zeros(256, device=cpu)
    tack.copyto(send_host, a)
    comm.Sendrecv(send_host, peer, 9, recv_host, peer, 9)
    tack.copyto(b, recv_host)
    out = tack.zeros(256)
    scaled(b, out, 0.5)
    np.testing.assert_array_equal(out.numpy(), 0.5 * (np.arange(256) + peer))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    direct = gpu_aware(args.device)
    tack.set_default_device(args.device)
    for fn in CASES:
        if not direct and fn.__name__ not in STAGED:
            if rank == 0:
                print(f"skip {fn.__name__}: this MPI cannot read {args.device} memory",
                      flush=True)
            continue
        fn()
        comm.Barrier()
        if rank == 0:
            print("ok", fn.__name__, flush=True)


if __name__ == "__main__":
    main()
