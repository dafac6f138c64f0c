"""Copies in and out of Tack arrays beside NumPy's own, in one process, as ratios.

    .venv/bin/python benchmarks/bench_arrays.py [--n 10000000] [--repeat 7] [--smoke]

Each line is the best of --repeat runs, the result released inside the timing; the
ratio is Tack's time over NumPy's for the same work (below 1: Tack is faster).
"""

from __future__ import annotations

import argparse

import numpy as np
from _harness import Report, arguments, best_s, finish

import tack

TABLE = "Copies in and out"


def main() -> None:
    parser = arguments(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if args.smoke:
        args.n, args.repeat = 1000, 1
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
    report = Report("bench_arrays.py")
    for name, tk, npf in cases:
        t_tack = best_s(tk, args.repeat) * 1e3
        t_np = best_s(npf, args.repeat) * 1e3
        report.add(TABLE, name, "Tack", t_tack, "ms")
        report.add(TABLE, name, "NumPy", t_np, "ms")
        report.add(TABLE, name, "Tack / NumPy", t_tack / t_np, "x")
    finish(report, args)


if __name__ == "__main__":
    main()
