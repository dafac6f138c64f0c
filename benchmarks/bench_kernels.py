"""Kernel benchmarks: each workload beside its peers in one run, printed as ratios.

    python benchmarks/bench_kernels.py [--quick] [--threads N] [--only radius,...]
        [--smoke] [--json PATH]

Workloads: radius_squared over 2**26 float32 (elementwise), a 3-D 7-point stencil
(256**3 float32), a 2-D 5-point Jacobi sweep (4096**2 float64), an escape-time
fractal with a while loop (1024 x 1024, 256 iterations), a histogram with atomics
(2**24 values, 256 bins), a row sum (4096 x 4096 float32, one output per row) and a
full sum (2**26 float32) as reductions, SAXPY with a np.float32 scalar (2**24
float32); launch overhead of a 16-element kernel; compile latency cold (empty cache,
new process) and warm (cache hit, new process).

Peers: NumPy, Numba (parallel=True, prange), Warp (CPU) and a hand-written C loop
compiled with -O3 -march=native -fopenmp on the same thread count (and
-funroll-loops -ffp-contract=off: Tack's own flags, so it rounds like Python and Tack
do). A peer that is
not installed is skipped with a note; --smoke (tiny sizes, one round) leaves out
Numba, whose just-in-time compiles alone take seconds. Ratios are peer time / Tack time: above 1
means Tack is faster. Times are the best of several runs (these machines are
shared and noisy; absolute numbers mean little).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shlex
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _harness import Report, arguments, finish

import tack

REPORT = Report("bench_kernels.py")
KERNELS = "Kernels: Tack's time, peers' time / Tack's (above 1: Tack is faster)"
LAUNCH = "Launch overhead"
COMPILE = "Compile latency (first call in a new process)"

# ---- Tack kernels --------------------------------------------------------------


@tack.kernel
def radius_squared(values, nx, ny):
    for i in range(values.shape[0]):
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i // nx) % ny) - float(ny - 1) * 0.5
        z = float(i // (nx * ny)) - 2.0
        values[i] = x * x + y * y + z * z


@tack.kernel
def stencil7(u, out):
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            for k in range(1, u.shape[2] - 1):
                out[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k]
                                + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1]
                                - 6.0 * u[i, j, k])


@tack.kernel
def jacobi(u, out):
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


@tack.kernel
def escape_time(out, w, h, maxit):
    for p in range(out.shape[0]):
        cx = -2.0 + 3.0 * (p % w) / w
        cy = -1.5 + 3.0 * (p // w) / h
        x = 0.0
        y = 0.0
        k = 0
        while k < maxit and x * x + y * y <= 4.0:
            xt = x * x - y * y + cx
            y = 2.0 * x * y + cy
            x = xt
            k += 1
        out[p] = k


@tack.kernel
def histogram(values, h):
    for i in range(values.shape[0]):
        tack.atomic_add(h, int(values[i] * h.shape[0]), 1)


@tack.kernel
def row_sum(a, out):
    for r in range(a.shape[0]):
        s = tack.f32(0.0)
        for c in range(a.shape[1]):
            s += a[r, c]
        out[r] = s


@tack.kernel
def full_sum(x):
    s = tack.f32(0.0)
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def saxpy(a, x, y, out):
    for i in range(out.shape[0]):
        out[i] = a * x[i] + y[i]


@tack.kernel
def fill16(out):
    for i in range(out.shape[0]):
        out[i] = float(i)


# ---- hand-written C --------------------------------------------------------------

HAND_C = r"""
#include <stdint.h>
#include <omp.h>
void radius(float *v, int64_t n, int64_t nx, int64_t ny, int threads) {
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double x = (double)(i % nx) - (double)(nx - 1) * 0.5;
        double y = (double)((i / nx) % ny) - (double)(ny - 1) * 0.5;
        double z = (double)(i / (nx * ny)) - 2.0;
        v[i] = (float)(x * x + y * y + z * z);
    }
}
void stencil(const float *u, float *o, int64_t n0, int64_t n1, int64_t n2, int threads) {
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 1; i < n0 - 1; i++)
        for (int64_t j = 1; j < n1 - 1; j++)
            for (int64_t k = 1; k < n2 - 1; k++) {
                int64_t c = (i * n1 + j) * n2 + k;
                o[c] = u[c - n1 * n2] + u[c + n1 * n2] + u[c - n2] + u[c + n2]
                       + u[c - 1] + u[c + 1] - 6.0f * u[c];
            }
}
void jacobi(const double *u, double *o, int64_t n0, int64_t n1, int threads) {
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 1; i < n0 - 1; i++)
        for (int64_t j = 1; j < n1 - 1; j++) {
            int64_t c = i * n1 + j;
            o[c] = 0.25 * (u[c - n1] + u[c + n1] + u[c - 1] + u[c + 1]);
        }
}
void mandel(int32_t *out, int64_t w, int64_t h, int64_t maxit, int threads) {
    #pragma omp parallel for num_threads(threads) schedule(dynamic, 1024)
    for (int64_t p = 0; p < w * h; p++) {
        double cx = -2.0 + 3.0 * (double)(p % w) / (double)w;
        double cy = -1.5 + 3.0 * (double)(p / w) / (double)h;
        double x = 0, y = 0;
        int64_t k = 0;
        while (k < maxit && x * x + y * y <= 4.0) {
            double xt = x * x - y * y + cx;
            y = 2.0 * x * y + cy;
            x = xt;
            k++;
        }
        out[p] = (int32_t)k;
    }
}
void histogram(const double *v, int64_t *h, int64_t n, int64_t bins, int threads) {
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; i++)
        __atomic_fetch_add(&h[(int64_t)(v[i] * (double)bins)], 1, __ATOMIC_RELAXED);
}
void histogram_private(const double *v, int64_t *h, int64_t n, int64_t bins,
                       int threads) {
    #pragma omp parallel num_threads(threads)
    {
        int64_t local[bins];
        for (int64_t b = 0; b < bins; b++) local[b] = 0;
        #pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++) local[(int64_t)(v[i] * (double)bins)]++;
        for (int64_t b = 0; b < bins; b++)
            if (local[b]) __atomic_fetch_add(&h[b], local[b], __ATOMIC_RELAXED);
    }
}
void row_sum(const float *a, float *out, int64_t rows, int64_t cols, int threads) {
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        float s = 0.0f;
        for (int64_t c = 0; c < cols; c++) s += a[r * cols + c];
        out[r] = s;
    }
}
float full_sum(const float *x, int64_t n, int threads) {
    float s = 0.0f;
    #pragma omp parallel for num_threads(threads) schedule(static) reduction(+:s)
    for (int64_t i = 0; i < n; i++) s += x[i];
    return s;
}
void saxpy(float a, const float *x, const float *y, float *o, int64_t n, int threads) {
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; i++) o[i] = a * x[i] + y[i];
}
"""


def build_hand_c() -> Any | None:
    cc = os.environ.get("CC", "cc")
    d = tempfile.mkdtemp(prefix="tack-bench-")
    src, lib = os.path.join(d, "hand.c"), os.path.join(d, "hand.so")
    with open(src, "w") as f:
        f.write(HAND_C)
    # Tack's flags; -ffp-contract=off: no fused multiply-add, Python's rounding.
    flags = ["-O3", "-march=native", "-funroll-loops", "-ffp-contract=off", "-fopenmp"]
    r = subprocess.run(
        [*shlex.split(cc), *flags, "-fPIC", "-shared", src, "-o", lib],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        REPORT.note(f"hand-written C skipped ({cc} -fopenmp failed: {r.stderr.strip()})")
        return None
    h = ctypes.CDLL(lib)
    i64, i32, vp = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p
    h.radius.argtypes = [vp, i64, i64, i64, i32]
    h.stencil.argtypes = [vp, vp, i64, i64, i64, i32]
    h.jacobi.argtypes = [vp, vp, i64, i64, i32]
    h.mandel.argtypes = [vp, i64, i64, i64, i32]
    h.histogram.argtypes = [vp, vp, i64, i64, i32]
    h.histogram_private.argtypes = [vp, vp, i64, i64, i32]
    h.row_sum.argtypes = [vp, vp, i64, i64, i32]
    h.full_sum.argtypes = [vp, i64, i32]
    h.full_sum.restype = ctypes.c_float
    h.saxpy.argtypes = [ctypes.c_float, vp, vp, vp, i64, i32]
    return h


# ---- peers --------------------------------------------------------------------------


def load_numba(threads: int) -> Any | None:
    try:
        import numba
    except ImportError:
        REPORT.note("Numba not installed (pip install numba): skipped")
        return None
    numba.set_num_threads(threads)
    prange = numba.prange

    @numba.njit(parallel=True, fastmath=False)
    def radius(values, nx, ny):
        for i in prange(values.shape[0]):
            x = float(i % nx) - float(nx - 1) * 0.5
            y = float((i // nx) % ny) - float(ny - 1) * 0.5
            z = float(i // (nx * ny)) - 2.0
            values[i] = x * x + y * y + z * z

    @numba.njit(parallel=True)
    def stencil(u, out):
        for i in prange(1, u.shape[0] - 1):
            for j in range(1, u.shape[1] - 1):
                for k in range(1, u.shape[2] - 1):
                    out[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k]
                                    + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1]
                                    - np.float32(6.0) * u[i, j, k])

    @numba.njit(parallel=True)
    def jacobi(u, out):
        for i in prange(1, u.shape[0] - 1):
            for j in range(1, u.shape[1] - 1):
                out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])

    @numba.njit(parallel=True)
    def mandel(out, w, h, maxit):
        for p in prange(out.shape[0]):
            cx = -2.0 + 3.0 * (p % w) / w
            cy = -1.5 + 3.0 * (p // w) / h
            x = 0.0
            y = 0.0
            k = 0
            while k < maxit and x * x + y * y <= 4.0:
                xt = x * x - y * y + cx
                y = 2.0 * x * y + cy
                x = xt
                k += 1
            out[p] = k

    @numba.njit
    def fill(out):
        for i in range(out.shape[0]):
            out[i] = float(i)

    @numba.njit  # Numba has no atomics on the CPU: a serial loop
    def histogram(values, h):
        for i in range(values.shape[0]):
            h[int(values[i] * h.shape[0])] += 1

    @numba.njit(parallel=True)
    def row_sum(a, out):
        for r in prange(a.shape[0]):
            s = np.float32(0.0)
            for c in range(a.shape[1]):
                s += a[r, c]
            out[r] = s

    @numba.njit(parallel=True)
    def full_sum(x):
        s = np.float32(0.0)
        for i in prange(x.shape[0]):
            s += x[i]
        return s

    @numba.njit(parallel=True)
    def saxpy(a, x, y, out):
        for i in prange(out.shape[0]):
            out[i] = a * x[i] + y[i]

    return {"radius": radius, "stencil": stencil, "jacobi": jacobi, "mandel": mandel, "fill": fill,
            "histogram": histogram, "row_sum": row_sum, "full_sum": full_sum,
            "saxpy": saxpy}


def load_warp() -> Any | None:
    try:
        import warp as wp
    except ImportError:
        REPORT.note("Warp not installed (pip install warp-lang): skipped")
        return None
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def radius(values: wp.array(dtype=wp.float32), nx: int, ny: int):
        i = wp.tid()
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i // nx) % ny) - float(ny - 1) * 0.5
        z = float(i // (nx * ny)) - 2.0
        values[i] = x * x + y * y + z * z

    @wp.kernel
    def stencil(u: wp.array3d(dtype=wp.float32), out: wp.array3d(dtype=wp.float32)):
        i, j, k = wp.tid()
        i += 1
        j += 1
        k += 1
        out[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k]
                        + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1]
                        - 6.0 * u[i, j, k])

    @wp.kernel
    def mandel(out: wp.array(dtype=wp.int32), w: int, h: int, maxit: int):
        p = wp.tid()
        cx = -2.0 + 3.0 * float(p % w) / float(w)
        cy = -1.5 + 3.0 * float(p // w) / float(h)
        x = float(0.0)
        y = float(0.0)
        k = int(0)
        while k < maxit and x * x + y * y <= 4.0:
            xt = x * x - y * y + cx
            y = 2.0 * x * y + cy
            x = xt
            k += 1
        out[p] = k

    @wp.kernel
    def fill(out: wp.array(dtype=wp.float32)):
        i = wp.tid()
        out[i] = float(i)

    @wp.kernel
    def histogram(values: wp.array(dtype=wp.float64), h: wp.array(dtype=wp.int32)):
        i = wp.tid()
        wp.atomic_add(h, int(values[i] * wp.float64(256.0)), 1)

    @wp.kernel
    def row_sum(a: wp.array2d(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
        r = wp.tid()
        s = float(0.0)
        for c in range(a.shape[1]):
            s += a[r, c]
        out[r] = s

    @wp.kernel
    def saxpy(a: wp.float32, x: wp.array(dtype=wp.float32),
              y: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
        i = wp.tid()
        out[i] = a * x[i] + y[i]

    return {"wp": wp, "radius": radius, "stencil": stencil, "mandel": mandel,
            "fill": fill, "histogram": histogram, "row_sum": row_sum, "saxpy": saxpy}


# ---- measuring -----------------------------------------------------------------------


Entry = tuple[str, Callable[[], Any], Callable[[], None], int]
"""(name, run, check after the first run, most timed runs)"""


def peer_column(name: str) -> str:
    """The table's column of a peer: its first word names it (the variant, such as
    "NumPy bincount" or "Numba (serial)", is the workload's; benchmarks/RESULTS.md
    names it)."""
    for prefix, column in (("hand C private", "hand C (private copies)"),
                           ("hand C", "hand C (OpenMP)"), ("Numba", "Numba"),
                           ("Warp", "Warp CPU"), ("NumPy", "NumPy")):
        if name.startswith(prefix):
            return column
    return name


# Waiting for the process to go idle before a timed run: a window, the CPU time
# in it that counts as idle, and the longest wait.
SETTLE_WINDOW_S = 0.002
SETTLE_IDLE_S = 0.0002
SETTLE_MAX_S = 0.25


def settle() -> None:
    """Returns once this process has used (almost) no CPU over a short window.

    OpenMP's threads (the hand-written C, and Numba's omp layer) spin for several
    milliseconds after a parallel loop ends before they sleep (about 10 ms of CPU
    here, GOMP_SPINCOUNT). On a machine with few cores the entry timed next would
    share its cores with them, and in the interleaved rounds that is always the
    entry after an OpenMP peer, whichever it is. Each timed run therefore starts
    once the previous one's threads are idle: no peer's timing includes another's
    leftovers. Tack's own workers sleep as soon as a launch ends."""
    deadline = time.perf_counter() + SETTLE_MAX_S
    while time.perf_counter() < deadline:
        used = time.process_time()
        time.sleep(SETTLE_WINDOW_S)
        if time.process_time() - used < SETTLE_IDLE_S:
            return


def compare(title: str, entries: list[Entry], repeats: int,
            clear: Callable[[], None] = lambda: None) -> None:
    """Times every entry in interleaved rounds (the load on a shared machine drifts;
    interleaving spreads it over all of them), each run started on an idle process
    (settle), and prints peer/Tack ratios. The first entry is Tack. clear empties an
    output the entries share before each one's checked first run, so that its check
    sees its own result."""
    for _, run, check, _ in entries:
        clear()
        run()  # warm up: compiles, page faults
        check()
    times = {name: float("inf") for name, _, _, _ in entries}
    for r in range(repeats):
        for name, run, _, most in entries:
            if r < most:
                settle()
                t0 = time.perf_counter()
                run()
                times[name] = min(times[name], time.perf_counter() - t0)
    t_tack = times[entries[0][0]]
    REPORT.add(KERNELS, title, "Tack", t_tack * 1e3, "ms")
    for column in ("hand C (OpenMP)", "hand C (private copies)", "Numba", "Warp CPU",
                   "NumPy"):
        REPORT.add(KERNELS, title, column, None, "x")
    for name, _, _, _ in entries[1:]:
        REPORT.add(KERNELS, title, peer_column(name), times[name] / t_tack, "x")


def nothing() -> None:
    pass


# The streaming workloads (radius, stencil, Jacobi, SAXPY) give every contender the
# same input and output arrays, NumPy's memory (Tack's through tack.from_dlpack,
# without a copy), written in turn. Where one large array lies relative to another
# moves a sweep's time by up to 10-20 % on some machines (the stencil's output a page
# past its input, modulo the 256 KiB plane: benchmarks/RESULTS.md, Stencil and
# Jacobi), and that placement changes with every allocation: arrays of their own would
# hand each contender a different one. Shared, they compare the code and the threads.


def workload_radius(n: int, threads: int, repeats: int, hand: Any, nb: Any,
                    wpk: Any) -> None:
    nx, ny = 512, 512
    out_np = np.zeros(n, np.float32)
    values = tack.from_dlpack(out_np)
    radius_squared(values, nx, ny)
    ref = out_np.copy()

    def same() -> None:
        np.testing.assert_array_equal(out_np, ref)

    entries: list[Entry] = [("Tack", lambda: radius_squared(values, nx, ny), same,
                             repeats)]
    if hand:
        entries.append(("hand C -O3 OpenMP",
                        lambda: hand.radius(out_np.ctypes.data, n, nx, ny, threads),
                        same, repeats))
    if nb:
        entries.append(("Numba parallel", lambda: nb["radius"](out_np, nx, ny), same,
                        repeats))
    if wpk:
        wp = wpk["wp"]
        o3 = wp.zeros(n, dtype=wp.float32, device="cpu")
        entries.append(("Warp CPU",
                        lambda: (wp.launch(wpk["radius"], dim=n, inputs=[o3, nx, ny],
                                           device="cpu"), wp.synchronize()),
                        lambda: np.testing.assert_allclose(o3.numpy(), ref), 2))

    def numpy_radius() -> None:  # chunked: whole-array temporaries need gigabytes
        step = 1 << 20
        for s in range(0, n, step):
            i = np.arange(s, min(n, s + step))
            x = (i % nx) - (nx - 1) * 0.5
            y = ((i // nx) % ny) - (ny - 1) * 0.5
            z = (i // (nx * ny)) - 2.0
            out_np[s:s + step] = x * x + y * y + z * z

    entries.append(("NumPy (chunked)", numpy_radius, same, 1))
    compare(f"radius_squared, {n} float32", entries, repeats,
            clear=lambda: out_np.fill(0))


def workload_stencil(m: int, repeats: int, threads: int, hand: Any, nb: Any,
                     wpk: Any) -> None:
    rng = np.random.default_rng(0)
    u_np = rng.standard_normal((m, m, m)).astype(np.float32)
    out_np = np.zeros_like(u_np)
    u, out = tack.from_dlpack(u_np), tack.from_dlpack(out_np)  # shared, see above
    stencil7(u, out)
    ref = out_np.copy()

    def same() -> None:
        np.testing.assert_array_equal(out_np, ref)

    def close() -> None:
        np.testing.assert_allclose(out_np, ref, atol=1e-5)

    entries: list[Entry] = [("Tack", lambda: stencil7(u, out), same, repeats)]
    if hand:
        entries.append(("hand C -O3 OpenMP",
                        lambda: hand.stencil(u_np.ctypes.data, out_np.ctypes.data, m, m,
                                             m, threads), same, repeats))
    if nb:
        entries.append(("Numba parallel", lambda: nb["stencil"](u_np, out_np), close,
                        repeats))
    if wpk:
        wp = wpk["wp"]
        uw = wp.array(u_np, dtype=wp.float32, device="cpu")
        o3 = wp.zeros((m, m, m), dtype=wp.float32, device="cpu")
        entries.append(("Warp CPU",
                        lambda: (wp.launch(wpk["stencil"], dim=(m - 2, m - 2, m - 2),
                                           inputs=[uw, o3], device="cpu"),
                                 wp.synchronize()),
                        lambda: np.testing.assert_allclose(o3.numpy(), ref, atol=1e-5),
                        3))

    def numpy_stencil() -> None:
        out_np[1:-1, 1:-1, 1:-1] = (u_np[:-2, 1:-1, 1:-1] + u_np[2:, 1:-1, 1:-1]
                                    + u_np[1:-1, :-2, 1:-1] + u_np[1:-1, 2:, 1:-1]
                                    + u_np[1:-1, 1:-1, :-2] + u_np[1:-1, 1:-1, 2:]
                                    - np.float32(6.0) * u_np[1:-1, 1:-1, 1:-1])

    entries.append(("NumPy", numpy_stencil, close, 3))
    compare(f"7-point stencil, {m}^3 float32", entries, repeats,
            clear=lambda: out_np.fill(0))


def workload_jacobi(m: int, repeats: int, threads: int, hand: Any, nb: Any) -> None:
    u_np = np.random.default_rng(5).standard_normal((m, m))
    out_np = np.zeros_like(u_np)
    u, out = tack.from_dlpack(u_np), tack.from_dlpack(out_np)  # shared, see above
    jacobi(u, out)
    ref = out_np.copy()

    def same() -> None:
        np.testing.assert_array_equal(out_np, ref)

    entries: list[Entry] = [("Tack", lambda: jacobi(u, out), same, repeats)]
    if hand:
        entries.append(("hand C -O3 OpenMP",
                        lambda: hand.jacobi(u_np.ctypes.data, out_np.ctypes.data, m, m,
                                            threads), same, repeats))
    if nb:
        entries.append(("Numba parallel", lambda: nb["jacobi"](u_np, out_np), same,
                        repeats))

    def numpy_jacobi() -> None:
        out_np[1:-1, 1:-1] = 0.25 * (u_np[:-2, 1:-1] + u_np[2:, 1:-1] + u_np[1:-1, :-2]
                                     + u_np[1:-1, 2:])

    entries.append(("NumPy", numpy_jacobi, same, 3))
    compare(f"Jacobi sweep (5-point), {m}^2 float64", entries, repeats,
            clear=lambda: out_np.fill(0))


def workload_fractal(w: int, h: int, maxit: int, repeats: int, threads: int, hand: Any,
                     nb: Any, wpk: Any) -> None:
    out = tack.zeros(w * h, dtype=tack.i32)
    escape_time(out, w, h, maxit)
    ref = out.numpy()
    entries: list[Entry] = [("Tack", lambda: escape_time(out, w, h, maxit), nothing,
                             repeats)]
    if hand:
        o1 = np.zeros(w * h, np.int32)
        entries.append(("hand C -O3 OpenMP",
                        lambda: hand.mandel(o1.ctypes.data, w, h, maxit, threads),
                        lambda: np.testing.assert_array_equal(o1, ref), repeats))
    if nb:
        o2 = np.zeros(w * h, np.int32)
        entries.append(("Numba parallel", lambda: nb["mandel"](o2, w, h, maxit),
                        lambda: np.testing.assert_array_equal(o2, ref), repeats))
    if wpk:
        wp = wpk["wp"]
        o3 = wp.zeros(w * h, dtype=wp.int32, device="cpu")

        def warp_check() -> None:
            # Warp computes this in float32 (its type for float literals): some
            # pixels near the set's edge escape at another step.
            assert (o3.numpy() != ref).mean() < 0.05

        entries.append(("Warp CPU",
                        lambda: (wp.launch(wpk["mandel"], dim=w * h,
                                           inputs=[o3, w, h, maxit], device="cpu"),
                                 wp.synchronize()), warp_check, 2))
    o4 = np.zeros(w * h, np.int32)

    def numpy_fractal() -> None:
        p = np.arange(w * h)
        c = (-2.0 + 3.0 * (p % w) / w) + 1j * (-1.5 + 3.0 * (p // w) / h)
        z = np.zeros_like(c)
        k = np.zeros(w * h, np.int32)
        alive = np.ones(w * h, bool)
        for _ in range(maxit):
            alive &= (z.real ** 2 + z.imag ** 2) <= 4.0
            if not alive.any():
                break
            z[alive] = z[alive] ** 2 + c[alive]
            k[alive] += 1
        o4[:] = k

    entries.append(("NumPy (masked)", numpy_fractal, nothing, 1))
    compare(f"escape-time fractal, {w}x{h}, {maxit} iterations", entries, repeats)


def warp_entry(wpk: Any, kernel: str, dim: Any, inputs: list[Any],
               check: Callable[[], None], rounds: int = 3) -> Entry:
    wp = wpk["wp"]
    return ("Warp CPU", lambda: (wp.launch(wpk[kernel], dim=dim, inputs=inputs,
                                           device="cpu"), wp.synchronize()),
            check, rounds)


def workload_histogram(n: int, repeats: int, threads: int, hand: Any, nb: Any,
                       wpk: Any) -> None:
    bins = 256
    v_np = np.random.default_rng(1).random(n)
    # the same input for every contender, as for the streaming workloads above
    v, h = tack.from_dlpack(v_np), tack.zeros(bins, dtype=tack.i64)
    ref = np.bincount((v_np * bins).astype(np.int64), minlength=bins)

    def run_tack() -> None:
        h.fill(0)
        histogram(v, h)

    entries: list[Entry] = [("Tack (atomic_add)", run_tack,
                             lambda: np.testing.assert_array_equal(h.numpy(), ref),
                             repeats)]
    if hand:
        h1 = np.zeros(bins, np.int64)
        entries.append(("hand C -O3 OpenMP",
                        lambda: (h1.fill(0), hand.histogram(v_np.ctypes.data,
                                                            h1.ctypes.data, n, bins,
                                                            threads)),
                        lambda: np.testing.assert_array_equal(h1, ref), repeats))
        h4 = np.zeros(bins, np.int64)
        entries.append(("hand C private histograms",
                        lambda: (h4.fill(0), hand.histogram_private(
                            v_np.ctypes.data, h4.ctypes.data, n, bins, threads)),
                        lambda: np.testing.assert_array_equal(h4, ref), repeats))
    if nb:
        h2 = np.zeros(bins, np.int64)
        entries.append(("Numba (serial)", lambda: (h2.fill(0), nb["histogram"](v_np, h2)),
                        lambda: np.testing.assert_array_equal(h2, ref), repeats))
    if wpk:
        wp = wpk["wp"]
        vw = wp.array(v_np, dtype=wp.float64, device="cpu")
        h3 = wp.zeros(bins, dtype=wp.int32, device="cpu")
        entries.append(warp_entry(wpk, "histogram", n, [vw, h3], lambda: None))
    entries.append(("NumPy bincount",
                    lambda: np.bincount((v_np * bins).astype(np.int64), minlength=bins),
                    nothing, 3))
    compare(f"histogram, {n} values, {bins} bins", entries, repeats)


def workload_row_sum(m: int, repeats: int, threads: int, hand: Any, nb: Any,
                     wpk: Any) -> None:
    a_np = np.random.default_rng(2).random((m, m), dtype=np.float32)
    a, out = tack.array(a_np), tack.zeros(m, dtype=tack.f32)
    ref = a_np.astype(np.float64).sum(axis=1)

    def close(x: Any) -> Callable[[], None]:
        return lambda: np.testing.assert_allclose(np.asarray(x()), ref, rtol=1e-4)

    entries: list[Entry] = [("Tack", lambda: row_sum(a, out), close(out.numpy),
                             repeats)]
    if hand:
        o1 = np.zeros(m, np.float32)
        entries.append(("hand C -O3 OpenMP",
                        lambda: hand.row_sum(a_np.ctypes.data, o1.ctypes.data, m, m,
                                             threads), close(lambda: o1), repeats))
    if nb:
        o2 = np.zeros(m, np.float32)
        entries.append(("Numba parallel", lambda: nb["row_sum"](a_np, o2),
                        close(lambda: o2), repeats))
    if wpk:
        wp = wpk["wp"]
        aw = wp.array(a_np, dtype=wp.float32, device="cpu")
        o3 = wp.zeros(m, dtype=wp.float32, device="cpu")
        entries.append(warp_entry(wpk, "row_sum", m, [aw, o3], close(o3.numpy)))
    entries.append(("NumPy sum(axis=1)", lambda: a_np.sum(axis=1), nothing, repeats))
    compare(f"row sum, {m}x{m} float32", entries, repeats)


def workload_full_sum(n: int, repeats: int, threads: int, hand: Any, nb: Any) -> None:
    x_np = np.random.default_rng(3).random(n, dtype=np.float32)
    x = tack.array(x_np)
    ref = float(x_np.astype(np.float64).sum())

    def close(f: Callable[[], Any]) -> Callable[[], None]:
        return lambda: np.testing.assert_allclose(float(f()), ref, rtol=1e-4)

    entries: list[Entry] = [("Tack", lambda: full_sum(x), close(lambda: full_sum(x)),
                             repeats)]
    if hand:
        entries.append(("hand C -O3 OpenMP",
                        lambda: hand.full_sum(x_np.ctypes.data, n, threads),
                        close(lambda: hand.full_sum(x_np.ctypes.data, n, threads)),
                        repeats))
    if nb:
        entries.append(("Numba parallel", lambda: nb["full_sum"](x_np),
                        close(lambda: nb["full_sum"](x_np)), repeats))
    entries.append(("NumPy sum", lambda: x_np.sum(), close(x_np.sum), repeats))
    compare(f"full sum, {n} float32", entries, repeats)


def workload_saxpy(n: int, repeats: int, threads: int, hand: Any, nb: Any,
                   wpk: Any) -> None:
    rng = np.random.default_rng(4)
    x_np, y_np = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    a = np.float32(1.5)
    out_np = np.zeros(n, np.float32)
    # shared, see above
    x, y, out = (tack.from_dlpack(v) for v in (x_np, y_np, out_np))
    ref = a * x_np + y_np

    def same() -> None:
        np.testing.assert_allclose(out_np, ref, rtol=1e-6)

    entries: list[Entry] = [("Tack", lambda: saxpy(a, x, y, out), same, repeats)]
    if hand:
        entries.append(("hand C -O3 OpenMP",
                        lambda: hand.saxpy(a, x_np.ctypes.data, y_np.ctypes.data,
                                           out_np.ctypes.data, n, threads),
                        same, repeats))
    if nb:
        entries.append(("Numba parallel", lambda: nb["saxpy"](a, x_np, y_np, out_np),
                        same, repeats))
    if wpk:
        wp = wpk["wp"]
        xw = wp.array(x_np, dtype=wp.float32, device="cpu")
        yw = wp.array(y_np, dtype=wp.float32, device="cpu")
        o3 = wp.zeros(n, dtype=wp.float32, device="cpu")
        entries.append(warp_entry(wpk, "saxpy", n, [a, xw, yw, o3],
                                  lambda: np.testing.assert_allclose(o3.numpy(), ref,
                                                                     rtol=1e-6)))
    entries.append(("NumPy a*x+y", lambda: np.add(np.multiply(a, x_np, out=out_np), y_np,
                                                   out=out_np), same, repeats))
    compare(f"SAXPY (np.float32 a), {n} float32", entries, repeats,
            clear=lambda: out_np.fill(0))


def launch_overhead(nb: Any, wpk: Any, smoke: bool) -> None:
    n = 200 if smoke else 200_000
    out = tack.zeros(16, dtype=tack.f32)
    fill16(out)

    def per_call(fn: Callable[[], Any], calls: int) -> float:
        fn()
        best_t = float("inf")
        for _ in range(1 if smoke else 5):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best_t = min(best_t, (time.perf_counter() - t0) / calls)
        return best_t

    t_tack = per_call(lambda: fill16(out), n)
    peers: dict[str, float] = {}
    if nb:
        o = np.zeros(16, np.float32)
        peers["Numba (njit)"] = per_call(lambda: nb["fill"](o), n)
    if wpk:
        wp = wpk["wp"]
        ow = wp.zeros(16, dtype=wp.float32, device="cpu")
        peers["Warp CPU wp.launch"] = per_call(
            lambda: wp.launch(wpk["fill"], dim=16, inputs=[ow], device="cpu"), n // 10)
    row = "launch overhead, 16-element kernel"
    REPORT.add(LAUNCH, row, "Tack", t_tack * 1e9, "ns")
    for name, t in peers.items():
        REPORT.add(LAUNCH, row, name, t * 1e9, "ns")
        REPORT.add(LAUNCH, row, f"{name} / Tack", t / t_tack, "x")


COMPILE_SCRIPT = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    import tack
    t1 = time.perf_counter()

    @tack.kernel
    def radius_squared(values, nx, ny):
        for i in range(values.shape[0]):
            x = float(i % nx) - float(nx - 1) * 0.5
            y = float((i // nx) % ny) - float(ny - 1) * 0.5
            z = float(i // (nx * ny)) - 2.0
            values[i] = x * x + y * y + z * z

    v = tack.zeros(16, dtype=tack.f32)
    t2 = time.perf_counter()
    radius_squared(v, 4, 2)
    t3 = time.perf_counter()
    print(t3 - t2, t3 - t0)
""")


def compile_latency(pairs: int) -> None:
    d = tempfile.mkdtemp(prefix="tack-bench-cache-")
    script = os.path.join(d, "compile_probe.py")
    with open(script, "w") as f:
        f.write(COMPILE_SCRIPT)

    def probe(cache: str) -> tuple[float, float]:
        env = dict(os.environ, TACK_CACHE_DIR=cache)
        r = subprocess.run([sys.executable, script], env=env, capture_output=True,
                           text=True, check=True)
        first, total = (float(x) for x in r.stdout.split())
        return first, total

    colds, warms = [], []
    for k in range(pairs):
        cache = os.path.join(d, f"cache{k}")
        colds.append(probe(cache))
        warms.append(probe(cache))
    cold = min(colds)
    warm = min(warms)
    for row, (first, total) in (("cold: empty cache", cold), ("warm: cache hit", warm)):
        REPORT.add(COMPILE, row, "first call", first * 1e3, "ms")
        REPORT.add(COMPILE, row, "whole process", total * 1e3, "ms")


def main() -> None:
    parser = arguments(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 rounds")
    parser.add_argument("--threads", type=int, default=None,
                        help="thread count for every peer (default: Tack's pool size)")
    parser.add_argument("--only", default="radius,stencil,jacobi,fractal,histogram,rowsum,"
                        "fullsum,saxpy,launch,compile",
                        help="comma-separated subset of the workloads")
    args = parser.parse_args()
    args.quick = args.quick or args.smoke
    only = set(args.only.split(","))
    if args.threads:
        os.environ["TACK_NUM_THREADS"] = str(args.threads)
    threads = tack._tack._kernel_stats()["num_threads"]
    REPORT.note(f"threads: {threads} (Tack pool; Numba and OpenMP set to the same)")
    hand = build_hand_c()
    nb = None if args.smoke else load_numba(threads)
    wpk = load_warp()
    repeats = 1 if args.smoke else 3 if args.quick else 7
    if "radius" in only:
        workload_radius(1 << (20 if args.quick else 26), threads, repeats, hand, nb, wpk)
    if "stencil" in only:
        workload_stencil(64 if args.quick else 256, repeats, threads, hand, nb, wpk)
    if "jacobi" in only:
        workload_jacobi(512 if args.quick else 4096, repeats, threads, hand, nb)
    if "fractal" in only:
        w, h, maxit = (256, 256, 64) if args.quick else (1024, 1024, 256)
        workload_fractal(w, h, maxit, repeats, threads, hand, nb, wpk)
    if "histogram" in only:
        workload_histogram(1 << (18 if args.quick else 24), repeats, threads, hand, nb,
                           wpk)
    if "rowsum" in only:
        workload_row_sum(512 if args.quick else 4096, repeats, threads, hand, nb, wpk)
    if "fullsum" in only:
        workload_full_sum(1 << (20 if args.quick else 26), repeats, threads, hand, nb)
    if "saxpy" in only:
        workload_saxpy(1 << (18 if args.quick else 24), repeats, threads, hand, nb, wpk)
    if "launch" in only:
        launch_overhead(nb, wpk, args.smoke)
    if "compile" in only:
        compile_latency(1 if args.smoke else 3)
    finish(REPORT, args)


if __name__ == "__main__":
    main()
