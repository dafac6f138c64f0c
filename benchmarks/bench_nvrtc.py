"""GPU kernel build latency without a GPU: Tack's CUDA source through NVRTC, beside
the CPU build of the same kernels, in one run.

    python benchmarks/bench_nvrtc.py [--repeat N] [--arch 90] [--smoke] [--json PATH]

For each workload (SAXPY with a np.float32 scalar, radius_squared, the 7-point
stencil, a float sum reduction): the time to generate the CUDA source, a cold NVRTC
build to PTX (compute_XY) and to a CUBIN (sm_XY) with an empty cache, a warm build
(the disk cache's hit: verify and read the image), and the CPU path's cold build of
the same specialization (generated C, cc, dlopen) and its warm hit. Ratios are to the
CPU cold build (below 1: faster). Loading NVRTC itself (dlopen of a ~100 MB library)
is measured once, in a new process. Best of --repeat rounds, each with a fresh cache
directory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from _harness import Report, arguments, finish
from bench_kernels import radius_squared, stencil7  # the CPU benchmark's, same folder

import tack
from tack import _tack
from tack.kernel import generate_cuda, generate_source


@tack.kernel
def saxpy(y, x, a):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel
def total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


F32 = ("array", "float32", 1)
WORKLOADS = [
    ("saxpy (float32 scalar)", saxpy, (F32, F32, "float32")),
    ("radius_squared", radius_squared, (F32, "int", "int")),
    ("7-point stencil", stencil7, (("array", "float32", 3), ("array", "float32", 3))),
    ("float sum (reduction)", total, (F32,)),
]


def best(fn: Callable[[], object], repeat: int, fresh: bool) -> float:
    """Best wall time in ms of fn, each round in a fresh cache directory if asked."""
    times = []
    with tempfile.TemporaryDirectory() as root:
        for r in range(repeat):
            if fresh:
                os.environ["TACK_CACHE_DIR"] = os.path.join(root, f"c{r}")
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return min(times)


def nvrtc_load_ms(runs: int) -> float:
    code = ("import time, tack._tack as t; t0 = time.perf_counter(); "
            "t._nvrtc_version(); print((time.perf_counter() - t0) * 1e3)")
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                 text=True, check=True).stdout) for _ in range(runs)]
    return statistics.median(runs)


TABLE = "GPU kernel builds (NVRTC, no GPU), ms"


def main() -> None:
    ap = arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--arch", type=int, default=90)
    args = ap.parse_args()
    workloads = WORKLOADS[:1] if args.smoke else WORKLOADS
    if args.smoke:
        args.repeat = 1
    report = Report("bench_nvrtc.py")
    major, minor = _tack._nvrtc_version()
    report.note(f"NVRTC {major}.{minor}, sm_{args.arch}; times in ms, best of "
                f"{args.repeat}; ratios to the CPU cold build")
    report.add("Loading NVRTC (dlopen, new process)", "median of 3", "ms",
               nvrtc_load_ms(1 if args.smoke else 3), "ms")
    for label, k, sig in workloads:
        name, file = k.__name__, k.__wrapped__.__code__.co_filename
        gen = best(lambda k=k, sig=sig: generate_cuda(k, sig, debug=False), args.repeat,
                   False)
        src = generate_cuda(k, sig, debug=False).source
        csrc = generate_source(k, sig, debug=False)
        ptx = best(lambda src=src: _tack._nvrtc_compile(src, args.arch, ptx=True),
                   args.repeat, True)
        cubin = best(lambda src=src: _tack._nvrtc_compile(src, args.arch), args.repeat,
                     True)

        def cubin_twice(src: str = src) -> None:
            _tack._nvrtc_compile(src, args.arch)

        with tempfile.TemporaryDirectory() as d:
            os.environ["TACK_CACHE_DIR"] = d
            cubin_twice()
            warm = best(cubin_twice, args.repeat, False)
        # The CPU build: each cold round in a new process (the runtime keeps built
        # kernels in memory for the life of a process).
        code = ("import sys, time, tack._tack as t; src = sys.stdin.read(); "
                "t0 = time.perf_counter(); t._kernel_build(sys.argv[1], sys.argv[2], src);"
                " print((time.perf_counter() - t0) * 1e3)")
        c_cold, c_warm = [], []
        with tempfile.TemporaryDirectory() as root:
            for r in range(args.repeat):
                env = dict(os.environ, TACK_CACHE_DIR=os.path.join(root, f"c{r}"))
                for out in (c_cold, c_warm):
                    run = subprocess.run([sys.executable, "-c", code, name, file],
                                         input=csrc, env=env, capture_output=True,
                                         text=True, check=True)
                    out.append(float(run.stdout))
        cc, cw = min(c_cold), min(c_warm)
        for column, value, unit in (
                ("generate CUDA", gen, "ms"), ("PTX cold", ptx, "ms"),
                ("PTX cold / C cold", ptx / cc, "x"), ("CUBIN cold", cubin, "ms"),
                ("CUBIN cold / C cold", cubin / cc, "x"),
                ("CUBIN warm (cache hit)", warm, "ms"), ("C cold", cc, "ms"),
                ("C warm", cw, "ms")):
            report.add(TABLE, label, column, value, unit)
    finish(report, args)


if __name__ == "__main__":
    main()
