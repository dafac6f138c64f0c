"""Copies in and out of Tack arrays beside NumPy's own, in one process, as ratios.

    .venv/bin/python benchmarks/bench_arrays.py [--n 10000000] [--repeat 7]

Each line is the best of --repeat runs, the result released inside the timing; the
ratio is Tack's time over NumPy's for the same work (below 1: Tack is faster).
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np

import tack


def best_ms(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.disable()
        t0 = time.perf_counter()
        r = fn()
        del r
        t1 = time.perf_counter()
        gc.enable()
        best = min(best, t1 - t0)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    f64 = rng.random(args.n)
    i32 = (f64 * 1000).astype(np.int32)
    t64 = tack.array(f64)
    dst = tack.zeros(args.n, dtype=tack.f64)
    ndst = np.zeros_like(f64)  # both destinations exist and are touched already
    cases = [
        ("copy in, float64", lambda: tack.array(f64), lambda: np.array(f64)),
        ("copy in, float64 -> float32", lambda: tack.array(f64, dtype=tack.f32),
         lambda: f64.astype(np.float32)),
        ("copy in, int32 -> float64", lambda: tack.array(i32, dtype=tack.f64),
         lambda: i32.astype(np.float64)),
        ("copy out, numpy()", lambda: t64.numpy(), lambda: f64.copy()),
        ("copyto an existing array", lambda: tack.copyto(dst, f64),
         lambda: np.copyto(ndst, f64)),
        ("fill", lambda: dst.fill(1.5), lambda: ndst.fill(1.5)),
    ]
    print(f"{'operation':32s} {'tack ms':>9s} {'numpy ms':>9s} {'ratio':>7s}")
    for name, tk, npf in cases:
        t_tack = best_ms(tk, args.repeat)
        t_np = best_ms(npf, args.repeat)
        print(f"{name:32s} {t_tack:9.2f} {t_np:9.2f} {t_tack / t_np:6.2f}x")


if __name__ == "__main__":
    main()
