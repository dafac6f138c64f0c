"""Runs a generated CUDA module on the CPU, for tests without a GPU.

The module's source is compiled as host C++ (g++ -std=c++20) after a shim that
spells CUDA's built-ins for one process: every block of the grid runs in turn, each
of its threads on its own std::thread, __syncthreads is a std::barrier, the atomics
are GCC's __atomic built-ins, and dynamic shared memory is one static buffer. The
parameter block, the context record and the reduction partials are packed here
exactly as docs/kernels.md (*The CUDA module*) tells the launch side to pack them,
so these tests check that contract and the emitted code's meaning, not the GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tack.kernel.emit_cuda import CTX_SIZE, CudaKernel

SHIM = r"""
#include <atomic>
#include <barrier>
#include <cstring>
#include <math.h>
#include <stdint.h>
#include <thread>
#include <vector>
#undef NAN
#undef HUGE_VAL
#undef INT64_C
#undef INT64_MAX
#undef INT64_MIN
#undef UINT64_MAX
/* the module declares its own fixed-width types: keep them apart from libc's */
#define int8_t tk_int8
#define int16_t tk_int16
#define int32_t tk_int32
#define int64_t tk_int64
#define uint8_t tk_uint8
#define uint16_t tk_uint16
#define uint32_t tk_uint32
#define uint64_t tk_uint64
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__
struct tk_dim3 { unsigned x, y, z; };
static tk_dim3 blockIdx, gridDim, blockDim;
static thread_local tk_dim3 threadIdx;
static std::barrier<> *tk_emu_barrier;
static double tk_shm[1 << 16];
static inline void __syncthreads() { tk_emu_barrier->arrive_and_wait(); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
template <class T> static inline T tk_emu_cas(T *p, T want, T v) {
    __atomic_compare_exchange_n(p, &want, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return want;
}
static inline int atomicCAS(int *p, int c, int v) { return tk_emu_cas(p, c, v); }
static inline unsigned atomicCAS(unsigned *p, unsigned c, unsigned v) {
    return tk_emu_cas(p, c, v);
}
static inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long c,
                                           unsigned long long v) {
    return tk_emu_cas(p, c, v);
}
static inline int atomicExch(int *p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
template <class T> static inline T atomicAdd(T *p, T v) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline float atomicAdd(float *p, float v) {
    float old = *p, next;
    do { next = old + v; } while (!__atomic_compare_exchange(p, &old, &next, false,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
}
static inline double atomicAdd(double *p, double v) {
    double old = *p, next;
    do { next = old + v; } while (!__atomic_compare_exchange(p, &old, &next, false,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
}
template <class T> static inline T atomicMin(T *p, T v) {
    T old = *p;
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST)) {}
    return old;
}
template <class T> static inline T atomicMax(T *p, T v) {
    T old = *p;
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST)) {}
    return old;
}
template <class To, class From> static inline To tk_emu_bits(From f) {
    To t; std::memcpy(&t, &f, sizeof t); return t;
}
static inline unsigned __float_as_uint(float f) { return tk_emu_bits<unsigned>(f); }
static inline float __uint_as_float(unsigned u) { return tk_emu_bits<float>(u); }
static inline long long __double_as_longlong(double d) { return tk_emu_bits<long long>(d); }
static inline double __longlong_as_double(long long u) { return tk_emu_bits<double>(u); }
"""

LAUNCHER = r"""
template <class F> static void tk_emu_grid(int grid, int block, F run) {
    gridDim = {(unsigned)grid, 1, 1};
    blockDim = {(unsigned)block, 1, 1};
    for (int b = 0; b < grid; b++) {
        blockIdx = {(unsigned)b, 0, 0};
        std::barrier<> bar(block);
        tk_emu_barrier = &bar;
        std::vector<std::thread> threads;
        for (int t = 0; t < block; t++) {
            threads.emplace_back([t, &run] { threadIdx = {(unsigned)t, 0, 0}; run(); });
        }
        for (auto &th : threads) th.join();
    }
}
static_assert(sizeof(tk_params) == PARAMS_SIZE, "the packed parameter block");
extern "C" void tk_emu_body(const void *params, void *ctx, int grid, int block) {
    tk_params p; std::memcpy(&p, params, sizeof p);
    tk_emu_grid(grid, block, [&] { tack_kernel_body(p, (struct tk_ctx *)ctx); });
}
/* One thread (t of block b) of a grid too large to run whole; no barrier. */
extern "C" void tk_emu_one_thread(const void *params, void *ctx, unsigned grid,
                                  unsigned block, unsigned b, unsigned t) {
    tk_params p; std::memcpy(&p, params, sizeof p);
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    blockIdx = {b, 0, 0};
    threadIdx = {t, 0, 0};
    tack_kernel_body(p, (struct tk_ctx *)ctx);
}
"""
TRIPS = r"""
extern "C" long long tk_emu_trips(const void *params, void *ctx) {
    tk_params p; std::memcpy(&p, params, sizeof p);
    long long n = -7;
    tk_emu_grid(1, 1, [&] { tack_kernel_trips(p, (struct tk_ctx *)ctx, (tk_int64 *)&n); });
    return n;
}
"""
RESTRICT = r"""
extern "C" void tk_emu_body_restrict(const void *params, void *ctx, int grid, int block) {
    tk_params p; std::memcpy(&p, params, sizeof p);
    tk_emu_grid(grid, block, [&] { tack_kernel_body_restrict(p, (struct tk_ctx *)ctx); });
}
"""
FINISH = r"""
extern "C" void tk_emu_finish(const void *params, void *ctx, long long nblocks) {
    tk_params p; std::memcpy(&p, params, sizeof p);
    tk_emu_grid(1, 1, [&] { tack_kernel_finish(p, (struct tk_ctx *)ctx, nblocks); });
}
"""

_BUILT: dict[str, ctypes.CDLL] = {}


# How the module is compiled for the host: optimised, and never with -fwrapv, so a
# signed overflow the module does not spell as wrapping arithmetic is undefined here
# as it is under NVRTC (g++ folds (x + s) <= x to s <= 0 just as NVRTC does).
FLAGS = ("-O1",)
# The same, with every signed overflow reported on stderr ("runtime error: signed
# integer overflow"); the launch goes on with the wrapped value.
CHECKED = ("-O2", "-fsanitize=signed-integer-overflow")


def build(ck: CudaKernel, workdir: Path, flags: tuple[str, ...] = FLAGS) -> ctypes.CDLL:
    """The module compiled for the host with flags, as a loaded library."""
    src = SHIM + ck.source + LAUNCHER.replace("PARAMS_SIZE", str(ck.params_size))
    if "void tack_kernel_trips(" in ck.source:
        src += TRIPS
    if "void tack_kernel_finish(" in ck.source:
        src += FINISH
    if ck.restrict:
        src += RESTRICT
    key = hashlib.sha256("\0".join((src, *flags)).encode()).hexdigest()[:20]
    if key in _BUILT:
        return _BUILT[key]
    cpp, so = workdir / f"{key}.cpp", workdir / f"{key}.so"
    cpp.write_text(src, encoding="utf-8")
    r = subprocess.run(["g++", "-std=c++20", *flags, "-w", "-fPIC", "-shared", "-pthread",
                        "-ffp-contract=off", str(cpp), "-o", str(so)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-6000:]
    lib = ctypes.CDLL(str(so))
    _BUILT[key] = lib
    return lib


@dataclass
class Record:
    """The context record after a launch (tk_ctx)."""

    failed: int
    why: int
    line: int
    axis: int
    name: int
    index: int
    extent: int
    result_i: int
    result_f: float


class Launch:
    """One launch's memory: the parameter block, the context and the partials."""

    def __init__(self, ck: CudaKernel, args: list[Any], grid: int, block: int) -> None:
        self.ck, self.grid, self.block = ck, grid, block
        self.keep: list[Any] = []
        self.ctx = np.zeros(CTX_SIZE, np.uint8)
        self.partials = np.zeros(max(grid * ck.partial_size, 8), np.uint8)
        struct.pack_into("Q", self.ctx, 40, self.partials.ctypes.data)
        # The runtime's block (tack_kernel_params_pack): per parameter, an array's
        # data pointer and extents, or a scalar's 8 bytes (int64, or double).
        block = b""
        for a in args:
            if isinstance(a, np.ndarray):
                block += struct.pack(f"Q{a.ndim}q", a.ctypes.data, *a.shape)
            elif isinstance(a, (float, np.floating)):
                block += struct.pack("d", float(a))
            else:
                block += struct.pack("q", int(a))
        self.params = block or bytes(8)
        assert len(self.params) == ck.params_size

    def ctx_pointer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.ctx.ctypes.data if self.ck.needs_ctx else None)

    def run(self, lib: ctypes.CDLL, restrict: bool = False) -> Record:
        buf = ctypes.create_string_buffer(self.params, len(self.params))
        if not self.ck.parallel:
            lib.tk_emu_body(buf, self.ctx_pointer(), 1, 1)
        else:
            body = lib.tk_emu_body_restrict if restrict else lib.tk_emu_body
            body(buf, self.ctx_pointer(), self.grid, self.block)
            if hasattr(lib, "tk_emu_finish"):
                nblocks = self.grid if self.ck.partial_size else 0
                lib.tk_emu_finish(buf, self.ctx_pointer(), ctypes.c_longlong(nblocks))
        return self.record()

    def one_thread(self, lib: ctypes.CDLL, b: int, t: int) -> Record:
        """Thread t of block b alone, in this launch's grid (a kernel without
        reductions: nothing waits for the other threads)."""
        buf = ctypes.create_string_buffer(self.params, len(self.params))
        lib.tk_emu_one_thread(buf, self.ctx_pointer(), *(ctypes.c_uint(v) for v in (
            self.grid, self.block, b, t)))
        return self.record()

    def trips(self, lib: ctypes.CDLL) -> int:
        buf = ctypes.create_string_buffer(self.params, len(self.params))
        lib.tk_emu_trips.restype = ctypes.c_longlong
        return int(lib.tk_emu_trips(buf, self.ctx_pointer()))

    def record(self) -> Record:
        failed, _, why, line, axis, name = struct.unpack_from("6i", self.ctx, 0)
        index, extent = struct.unpack_from("qq", self.ctx, 24)
        (result_i,) = struct.unpack_from("q", self.ctx, 48)
        (result_f,) = struct.unpack_from("d", self.ctx, 56)
        return Record(failed, why, line, axis, name, index, extent, result_i, result_f)


def emulate(ck: CudaKernel, args: list[Any], workdir: Path, grid: int = 3,
            block: int = 4, restrict: bool = False,
            flags: tuple[str, ...] = FLAGS) -> Record:
    """Runs the module over args (NumPy arrays are updated in place); restrict: its
    tack_kernel_body_restrict entry; flags: how it is compiled (build)."""
    return Launch(ck, args, grid, block).run(build(ck, workdir, flags), restrict)


def gxx_available() -> bool:
    return any(os.access(os.path.join(d, "g++"), os.X_OK)
               for d in os.environ.get("PATH", "").split(os.pathsep))
