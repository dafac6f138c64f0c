"""Tack arrays through MPI (mpi4py) beside NumPy buffers, in one run, as ratios.

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/bench_mpi.py [--repeat 7]
        [--device cuda] [--quick] [--smoke] [--json PATH]

Part 1 (every rank at once, rank 0 reports; no communication): what mpi4py pays to
take one buffer, i.e. building `MPI.buffer(x)`, for a NumPy array (the buffer
protocol), for the same NumPy array seen only through its DLPack methods (the route
mpi4py takes for any object without the buffer protocol), and for a Tack array; then
the DLPack methods alone, Tack's beside NumPy's (the share that is Tack's own).

Part 2 (2 ranks): Sendrecv between the ranks, Bcast and Allreduce (sum) of float32
messages of 8, 1 Ki and 1 Mi elements, the time per call of the slower rank, best of
--repeat. Variants: NumPy arrays; Tack arrays passed as they are; NumPy views of the
Tack arrays made once with np.from_dlpack and reused; persistent requests over Tack
arrays (the buffers are taken once, at *_init) and over NumPy arrays. Ratios are to
the NumPy line of the same size and operation.

--device cuda puts the Tack arrays on the GPU: passed as they are when the loaded MPI
is CUDA-aware (tack.interop.mpi.gpu_aware), otherwise staged through host Tack arrays
(one copy each way), as docs/mpi.md describes. The NumPy lines stay on the host.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable

import numpy as np
from _harness import Report, arguments, finish
from mpi4py import MPI

import tack
from tack.interop.mpi import gpu_aware

comm = MPI.COMM_WORLD
rank = comm.rank
REPORT = Report("bench_mpi.py")
PER_BUFFER = "MPI: per buffer (rank 0), ns per call"
MESSAGES = "MPI: messages, the slower rank's time per call"


def best_ns(run: Callable[[int], None], n: int, repeat: int, sync: bool) -> float:
    """Best of `repeat` timings of run(n), in ns per call; with sync, every rank
    starts together and the slower rank's time counts."""
    best = float("inf")
    for _ in range(repeat):
        if sync:
            comm.Barrier()
        gc.disable()
        t0 = time.perf_counter_ns()
        run(n)
        t = (time.perf_counter_ns() - t0) / n
        gc.enable()
        if sync:
            t = comm.allreduce(t, op=MPI.MAX)
        best = min(best, t)
    return best


def looped(call: Callable[[], object]) -> Callable[[int], None]:
    def run(n: int) -> None:
        for _ in range(n):
            call()

    return run


class DLPackOnly:
    """A NumPy array's DLPack methods and nothing else: mpi4py takes it as it takes
    any object without the buffer protocol."""

    def __init__(self, x: np.ndarray):
        self.__dlpack__ = x.__dlpack__
        self.__dlpack_device__ = x.__dlpack_device__


def per_buffer(repeat: int, quick: bool) -> None:
    x = np.zeros(8, np.float32)
    a = tack.zeros(8, dtype=tack.f32, device="cpu")
    wrapped = DLPackOnly(x)
    n = 1_000 if quick else 100_000
    rows = [
        ("MPI.buffer(numpy)  [buffer protocol]", looped(lambda: MPI.buffer(x))),
        ("MPI.buffer(numpy)  [DLPack route]", looped(lambda: MPI.buffer(wrapped))),
        ("MPI.buffer(tack)   [DLPack route]", looped(lambda: MPI.buffer(a))),
        ("numpy __dlpack_device__ + __dlpack__",
         looped(lambda: (x.__dlpack_device__(), x.__dlpack__(max_version=(1, 0),
                                                              copy=False)))),
        ("tack  __dlpack_device__ + __dlpack__",
         looped(lambda: (a.__dlpack_device__(), a.__dlpack__(max_version=(1, 0),
                                                              copy=False)))),
    ]
    times = [float("inf")] * len(rows)
    for _ in range(repeat):  # interleaved, so drift hits every row alike
        for i, (_, run) in enumerate(rows):
            times[i] = min(times[i], best_ns(run, n, 1, sync=False))
    if rank != 0:
        return
    for (name, _), t in zip(rows, times, strict=True):
        REPORT.add(PER_BUFFER, name, "ns/call", t, "ns")
        REPORT.add(PER_BUFFER, name, "vs the buffer protocol", t / times[0], "x")
    REPORT.add(PER_BUFFER, "Tack's hooks / NumPy's hooks", "vs the buffer protocol",
               None, "x")
    REPORT.add(PER_BUFFER, "Tack's hooks / NumPy's hooks", "ratio",
               times[4] / times[3], "x")


class Workload:
    """One operation and message size: its calls over each kind of buffer."""

    def __init__(self, op: str, nelem: int, device: str, staged: bool):
        self.op, self.nelem = op, nelem
        self.peer = 1 - rank if comm.size == 2 else rank
        src = np.arange(nelem, dtype=np.float32) + rank
        self.np_src, self.np_dst = src.copy(), np.zeros(nelem, np.float32)
        self.t_src = tack.array(src, device=device)
        self.t_dst = tack.zeros(nelem, dtype=tack.f32, device=device)
        host = tack.device("cpu")
        if staged:
            self.h_src = tack.zeros(nelem, dtype=tack.f32, device=host)
            self.h_dst = tack.zeros(nelem, dtype=tack.f32, device=host)
        self.staged = staged
        self.requests: list[MPI.Prequest] = []

    def call(self, src, dst) -> Callable[[], object]:
        if self.op == "Sendrecv":
            return lambda: comm.Sendrecv(src, self.peer, 0, dst, self.peer, 0)
        if self.op == "Bcast":
            return lambda: comm.Bcast(src if rank == 0 else dst, root=0)
        return lambda: comm.Allreduce(src, dst, op=MPI.SUM)

    def persistent(self, src, dst) -> Callable[[], object]:
        if self.op == "Sendrecv":
            reqs = [comm.Recv_init(dst, self.peer, 0), comm.Send_init(src, self.peer, 0)]
        elif self.op == "Bcast":
            reqs = [comm.Bcast_init(src if rank == 0 else dst, root=0)]
        else:
            reqs = [comm.Allreduce_init(src, dst, op=MPI.SUM)]
        self.requests += reqs

        def run() -> None:
            MPI.Prequest.Startall(reqs)
            MPI.Request.Waitall(reqs)

        return run

    def staged_call(self) -> Callable[[], object]:
        inner = self.call(self.h_src, self.h_dst)

        def run() -> None:
            tack.copyto(self.h_src, self.t_src)
            inner()
            tack.copyto(self.t_dst, self.h_dst)

        return run

    def variants(self) -> list[tuple[str, Callable[[], object]]]:
        out = [("NumPy", self.call(self.np_src, self.np_dst))]
        if self.staged:
            out.append(("Tack, staged through host", self.staged_call()))
            return out
        out.append(("Tack", self.call(self.t_src, self.t_dst)))
        if self.t_src.device.backend == "cpu":  # NumPy views exist for host memory only
            out.append(("Tack, NumPy views made once",
                        self.call(np.from_dlpack(self.t_src), np.from_dlpack(self.t_dst))))
        out += [
            ("NumPy, persistent", self.persistent(self.np_src, self.np_dst)),
            ("Tack, persistent", self.persistent(self.t_src, self.t_dst)),
        ]
        return out

    def check(self) -> None:
        """The Tack lines move the same values as the NumPy ones."""
        if self.op != "Bcast" or rank != 0:
            np.testing.assert_array_equal(self.t_dst.numpy(), self.np_dst)

    def free(self) -> None:
        for req in self.requests:
            req.Free()


def messages(repeat: int, device: str, quick: bool) -> None:
    staged = device != "cpu" and not gpu_aware(device)
    if rank == 0:
        how = "staged through host arrays" if staged else "passed as they are"
        REPORT.note(f"{comm.size} ranks, {MPI.Get_library_version().splitlines()[0]}; "
                    f"Tack arrays on {device}, {how}; TACK_NUM_THREADS="
                    f"{os.environ.get('TACK_NUM_THREADS', 'unset')}")
    sizes = [(8, 20_000), (1024, 10_000), (1 << 20, 40)]
    if quick:
        sizes = [(8, 2_000), (1024, 1_000), (1 << 20, 5)]
    for op in ("Sendrecv", "Bcast", "Allreduce"):
        for nelem, n in sizes:
            w = Workload(op, nelem, device, staged)
            variants = w.variants()
            for _, call in variants:
                call()  # warm up: first-touch pages, MPI's connection setup
            w.check()
            best = {name: float("inf") for name, _ in variants}
            for _ in range(repeat):  # interleaved, so drift hits every variant alike
                for name, call in variants:
                    best[name] = min(best[name], best_ns(looped(call), n, 1, sync=True))
            if rank == 0:
                base = best["NumPy"]
                row = f"{op}, {nelem} elements"
                REPORT.add(MESSAGES, row, "NumPy", base, "ns")
                for name, _ in variants[1:]:
                    REPORT.add(MESSAGES, row, name, best[name] / base, "x")
            w.free()


def main() -> None:
    parser = arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    args = parser.parse_args()
    if args.smoke:
        args.quick, args.repeat = True, 1
    if comm.size != 2 and rank == 0:
        REPORT.note(f"{comm.size} rank(s); the figures assume mpiexec -n 2")
    per_buffer(args.repeat, args.quick)  # on every rank: none spins in a barrier
    comm.Barrier()
    messages(args.repeat, args.device, args.quick)
    if rank == 0:
        finish(REPORT, args)


if __name__ == "__main__":
    main()
