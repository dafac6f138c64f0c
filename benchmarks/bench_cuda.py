"""CUDA exchange, copies and kernels beside PyTorch, CuPy and Numba, in one process.

    python benchmarks/bench_cuda.py [--mib 256] [--calls 20000] [--repeat 5]
                                    [--log2n 28] [--json PATH] [--smoke]

Each group puts Tack's figure beside a peer doing the same work (ratio = Tack's time /
the peer's, below 1: Tack is faster; for bandwidths the same ratio, peer GB/s over
Tack's). A missing peer is printed as missing, never an error.

- DLPack exchange, ns per call on a small array: torch.from_dlpack(tack_array) beside
  torch.from_dlpack(cupy_array), and tack.from_dlpack(tensor) beside
  cupy.from_dlpack(tensor);
- copy bandwidth for --mib MiB: host to device, device to host and device to device,
  beside the same copies in torch (pageable host memory on both sides);
- export_memory: an exportable array exported in place, and an ordinary array exported
  through its one-time copy (no peer has this; absolute microseconds);
- kernels (bench_cuda_kernels.py): SAXPY and radius_squared over 2**log2n float32 as
  a share of the device-to-device copy bandwidth measured in the same run, the
  7-point stencil beside CuPy and PyTorch, a float32 sum beside torch.sum, the launch
  overhead of a 1-element kernel beside CuPy, PyTorch and Numba-CUDA, and a kernel's
  cold NVRTC build beside its load from a warm cache.

--json PATH writes every row (and every error) as JSON; --smoke runs tiny sizes and
few calls, which proves the script end to end (under the stand-in driver too), not
speed. The first line names the device. Run by scripts/gpu_check.sh on a GPU machine;
without a CUDA device it says so and exits 1; a Tack case that raises is printed,
recorded, and makes the exit status 1 after the other cases ran.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tack

# Every printed row, for --json: group, name, tack, peer (value), unit, peer name,
# ratio (None without a peer).
ROWS: list[dict[str, Any]] = []
ERRORS: list[dict[str, str]] = []


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


def row(name: str, ours: float, theirs: float | None, unit: str, peer: str,
        group: str = "", ratio: float | None = None, note: str = "") -> None:
    """Prints and records one row; ratio defaults to ours / theirs (times)."""
    if theirs is not None and ratio is None:
        ratio = ours / theirs
    ROWS.append({"group": group, "name": name, "tack": ours, "peer": peer,
                 "peer_value": theirs, "unit": unit, "ratio": ratio, "note": note})
    if theirs is None:
        missing = f"(no {peer})" if peer and not note else ""
        print(f"{name:44s} {ours:12.1f} {'n/a' if peer else '':>12s} {unit:6s} "
              f"{missing}{note}")
    else:
        print(f"{name:44s} {ours:12.1f} {theirs:12.1f} {unit:6s} {ratio:6.2f}x {note}")


def error(group: str, name: str, exc: BaseException) -> None:
    ERRORS.append({"group": group, "name": name, "error": f"{type(exc).__name__}: {exc}"})
    print(f"{name:44s} FAILED: {type(exc).__name__}: {exc}")


def optional(module: str) -> Any:
    """A peer module, or None where it is not installed (or finds no GPU)."""
    try:
        return __import__(module)
    except Exception:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--log2n", type=int, default=28,
                        help="kernel sizes: 2**log2n float32 elements")
    parser.add_argument("--json", help="write every row as JSON to this path")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes and few calls: proves the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.mib, args.calls, args.repeat, args.log2n = 1, 20, 2, 12
    try:
        dev = tack.device("cuda")
    except tack.TackError as e:
        print(f"bench_cuda: no CUDA device: {e}", file=sys.stderr)
        return 1
    print(f"device: {dev!r}")
    torch = optional("torch")
    if torch is not None and not torch.cuda.is_available():
        torch = None
    cupy = optional("cupy")

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
    def copies() -> float:
        """The copy rows; returns Tack's device-to-device GB/s (bytes copied once).
        Its arrays are released on return, before the kernels allocate theirs."""
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
        d2d_gbs = 0.0
        for name, ours_fn, peer_fn in cases:
            ours = gbs(best_s(ours_fn, args.repeat, sync))
            theirs = gbs(best_s(peer_fn, args.repeat, sync)) if peer_fn else None
            # bandwidth: higher is better, so the ratio is peer GB/s over Tack's (a ratio of
            # times, as everywhere else)
            row(name, ours, theirs, "GB/s", "torch", group="copies",
                ratio=None if theirs is None else theirs / ours)
            if name.startswith("device to device"):
                d2d_gbs = ours  # what the kernels are measured against (bytes copied once)
        return d2d_gbs

    d2d_gbs = copies()

    # ---- export_memory -------------------------------------------------------------
    def export_exportable() -> None:
        a = tack.empty((1 << 18,), dtype=tack.f32, device="cuda", exportable=True)
        a.export_memory()

    def export_copy() -> None:
        a = tack.zeros((1 << 18,), dtype=tack.f32, device="cuda")
        a.export_memory()

    for name, fn in (("export_memory, exportable 1 MiB (alloc+export)", export_exportable),
                     ("export_memory, ordinary 1 MiB (alloc+copy)", export_copy)):
        us = per_call_ns(fn, 50 if not args.smoke else 2, args.repeat, sync) / 1e3
        row(name, us, None, "us", "", group="export_memory")

    # ---- kernels ---------------------------------------------------------------------
    from bench_cuda_kernels import run_kernels

    run_kernels(args, dev, sync, torch, cupy, d2d_gbs, row, error, best_s, per_call_ns)

    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"device": repr(dev), "smoke": args.smoke, "log2n": args.log2n,
                       "rows": ROWS, "errors": ERRORS}, f, indent=2)
    if ERRORS:
        print(f"bench_cuda: {len(ERRORS)} case(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
