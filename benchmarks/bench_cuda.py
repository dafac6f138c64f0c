"""CUDA exchange and copies beside PyTorch and CuPy, in one process, as ratios.

    python benchmarks/bench_cuda.py [--mib 256] [--calls 20000] [--repeat 5]

Three groups, each Tack's time beside a peer doing the same work (ratio = Tack / peer,
below 1: Tack is faster):

- DLPack exchange, ns per call on a small array: torch.from_dlpack(tack_array) beside
  torch.from_dlpack(cupy_array), and tack.from_dlpack(tensor) beside
  cupy.from_dlpack(tensor);
- copy bandwidth for --mib MiB: host to device, device to host and device to device,
  beside the same copies in torch (pageable host memory on both sides);
- export_memory: an exportable array exported in place, and an ordinary array exported
  through its one-time copy (no peer has this; absolute microseconds).

The first line names the driver library the device was opened with. Run by
scripts/gpu_check.sh on a GPU machine; without a CUDA device it says so and exits 1.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable

import numpy as np

import tack


def best_s(fn: Callable[[], object], repeat: int, sync: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.disable()
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
        gc.enable()
    return best


def per_call_ns(fn: Callable[[], object], calls: int, repeat: int,
                sync: Callable[[], None]) -> float:
    def loop() -> None:
        for _ in range(calls):
            fn()

    return best_s(loop, repeat, sync) / calls * 1e9


def row(name: str, ours: float, theirs: float | None, unit: str, peer: str) -> None:
    if theirs is None:
        print(f"{name:44s} {ours:12.1f} {'n/a':>12s} {unit:6s} (no {peer})")
    else:
        print(f"{name:44s} {ours:12.1f} {theirs:12.1f} {unit:6s} {ours / theirs:6.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    try:
        dev = tack.device("cuda")
    except tack.TackError as e:
        print(f"bench_cuda: no CUDA device: {e}", file=sys.stderr)
        return 1
    print(f"device: {dev!r}")
    try:
        import torch
    except ImportError:
        torch = None
    try:
        import cupy
    except ImportError:
        cupy = None

    def sync() -> None:
        dev.synchronize()
        if torch is not None:
            torch.cuda.synchronize()

    print(f"{'':44s} {'tack':>12s} {'peer':>12s}")
    # ---- DLPack exchange -------------------------------------------------------
    small = tack.zeros(16, device="cuda")
    if torch is not None:
        ours = per_call_ns(lambda: torch.from_dlpack(small), args.calls, args.repeat, sync)
        theirs = None
        if cupy is not None:
            c = cupy.zeros(16, dtype=cupy.float32)
            theirs = per_call_ns(lambda: torch.from_dlpack(c), args.calls, args.repeat,
                                 sync)
        row("torch.from_dlpack(tack) vs (cupy)", ours, theirs, "ns", "cupy")
        t = torch.zeros(16, device="cuda")
        ours = per_call_ns(lambda: tack.from_dlpack(t), args.calls, args.repeat, sync)
        theirs = None
        if cupy is not None:
            theirs = per_call_ns(lambda: cupy.from_dlpack(t), args.calls, args.repeat,
                                 sync)
        row("tack.from_dlpack(torch) vs cupy.from_dlpack", ours, theirs, "ns", "cupy")
    else:
        ours = per_call_ns(lambda: tack.from_dlpack(small), args.calls, args.repeat, sync)
        row("tack.from_dlpack(tack)", ours, None, "ns", "torch")

    # ---- copy bandwidth ----------------------------------------------------------
    n = args.mib * (1 << 20) // 4
    host = np.ones(n, dtype=np.float32)
    d1 = tack.array(host, device="cuda")
    d2 = tack.empty((n,), dtype=tack.f32, device="cuda")
    gbytes = n * 4 / 1e9

    def gbs(seconds: float) -> float:
        return gbytes / seconds

    cases: list[tuple[str, Callable[[], object], Callable[[], object] | None]] = [
        ("host to device GB/s", lambda: tack.copyto(d2, host), None),
        ("device to host GB/s", lambda: d1.numpy(), None),
        ("device to device GB/s", lambda: tack.copyto(d2, d1), None),
    ]
    if torch is not None:
        th = torch.from_numpy(host)
        t1 = torch.ones(n, device="cuda")
        t2 = torch.empty(n, device="cuda")
        cases = [
            (cases[0][0], cases[0][1], lambda: t2.copy_(th)),
            (cases[1][0], cases[1][1], lambda: t1.cpu()),
            (cases[2][0], cases[2][1], lambda: t2.copy_(t1)),
        ]
    for name, ours_fn, peer_fn in cases:
        ours = gbs(best_s(ours_fn, args.repeat, sync))
        theirs = gbs(best_s(peer_fn, args.repeat, sync)) if peer_fn else None
        # bandwidth: higher is better, so the ratio is peer time / Tack time
        if theirs is None:
            row(name, ours, None, "GB/s", "torch")
        else:
            print(f"{name:44s} {ours:12.1f} {theirs:12.1f} {'GB/s':6s} "
                  f"{theirs / ours:6.2f}x")

    # ---- export_memory -------------------------------------------------------------
    def export_exportable() -> None:
        a = tack.empty((1 << 18,), dtype=tack.f32, device="cuda", exportable=True)
        a.export_memory()

    def export_copy() -> None:
        a = tack.zeros((1 << 18,), dtype=tack.f32, device="cuda")
        a.export_memory()

    for name, fn in (("export_memory, exportable 1 MiB (alloc+export)", export_exportable),
                     ("export_memory, ordinary 1 MiB (alloc+copy)", export_copy)):
        us = per_call_ns(fn, 50, args.repeat, sync) / 1e3
        print(f"{name:44s} {us:12.1f} {'':>12s} {'us':6s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
