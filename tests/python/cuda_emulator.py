"""Runs a generated CUDA module on the CPU, for tests without a GPU.

The module's source is compiled as host C++ (g++ -std=c++20) after
tests/standin/cuda/cuda_emulation.hpp, which spells CUDA's built-ins for one process
(every block of the grid in turn, its threads as real threads, __syncthreads a
barrier, atomics GCC's __atomic built-ins, one dynamic shared buffer); the stand-in
driver runs modules the same way under TACK_STANDIN_EXEC=emulate. The
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

ROOT = Path(__file__).resolve().parents[2]
# CUDA's built-ins for the host, shared with the stand-in driver's emulated launches
SHIM = (ROOT / "tests" / "standin" / "cuda" / "cuda_emulation.hpp").read_text(encoding="utf-8")

ENTRIES = ("tack_kernel_body", "tack_kernel_body_restrict", "tack_kernel_trips",
           "tack_kernel_finish")


class EmuLaunch(ctypes.Structure):
    """cuda_emulation.hpp's tk_emu_launch."""

    _fields_ = [("params", ctypes.c_void_p), ("params_nbytes", ctypes.c_size_t),
                ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_size_t)]


_BUILT: dict[str, ctypes.CDLL] = {}


# How the module is compiled for the host: optimised, and never with -fwrapv, so a
# signed overflow the module does not spell as wrapping arithmetic is undefined here
# as it is under NVRTC (g++ folds (x + s) <= x to s <= 0 just as NVRTC does).
FLAGS = ("-O1",)
# The same, with every signed overflow reported on stderr ("runtime error: signed
# integer overflow"); the launch goes on with the wrapped value.
CHECKED = ("-O2", "-fsanitize=signed-integer-overflow")

# One thread (t of block b) of a grid too large to run whole, on the calling
# thread: for kernels without reductions (no barrier, nothing waits for the others).
ONE_THREAD = r"""
template <class... A>
static int tk_emu_one(void (*f)(A...), const tk_emu_launch *l, unsigned b, unsigned t) {
    size_t end = 0;
    tk_emu_call<A...> call{f, (const unsigned char *)l->params,
                           {tk_emu_offset<typename tk_emu_plain<A>::type>(end)..., 0}};
    if (end != l->params_nbytes) return TK_EMU_BAD_PARAMS;
    gridDim = {l->grid[0], 1, 1};
    blockDim = {l->block[0], 1, 1};
    blockIdx = {b, 0, 0};
    threadIdx = {t, 0, 0};
    tk_emu_call<A...>::run(&call);
    return TK_EMU_OK;
}
extern "C" __attribute__((visibility("default"))) int
tk_emu_one_thread(const tk_emu_launch *l, unsigned b, unsigned t) {
    return tk_emu_one(tack_kernel_body, l, b, t);
}
"""


def build(ck: CudaKernel, workdir: Path, flags: tuple[str, ...] = FLAGS) -> ctypes.CDLL:
    """The module compiled for the host with flags, as a loaded library with one
    tk_emu_entry_<name> per entry point (cuda_emulation.hpp's TK_EMU_ENTRY), and
    tk_emu_one_thread for a parallel kernel."""
    src = SHIM + ck.source
    if ck.params_size:
        src += f"static_assert(sizeof(tk_params) == {ck.params_size});\n"
    src += "".join(f"TK_EMU_ENTRY({e})\n" for e in ENTRIES
                   if f'void {e}(' in ck.source)
    if ck.parallel:
        src += ONE_THREAD
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


def call(lib: ctypes.CDLL, entry: str, params: bytes, grid: int = 1, block: int = 1,
         shared: int = 0) -> None:
    """Launches entry with the packed parameters, as cuLaunchKernel would."""
    buf = ctypes.create_string_buffer(params, len(params))
    launch = EmuLaunch(ctypes.cast(buf, ctypes.c_void_p), len(params), (grid, 1, 1),
                       (block, 1, 1), shared)
    rc = getattr(lib, f"tk_emu_entry_{entry}")(ctypes.byref(launch))
    assert rc == 0, f"{entry}: the emulated launch did not run ({rc})"


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

    def head(self) -> bytes:
        """Every entry's first two parameters: the block, then the record's address."""
        ctx = self.ctx.ctypes.data if self.ck.needs_ctx else 0
        return self.params + struct.pack("Q", ctx)

    def run(self, lib: ctypes.CDLL, restrict: bool = False) -> Record:
        if not self.ck.parallel:
            call(lib, "tack_kernel_body", self.head())
        else:
            body = "tack_kernel_body_restrict" if restrict else "tack_kernel_body"
            call(lib, body, self.head(), self.grid, self.block,
                 self.block * self.ck.partial_size)
            if hasattr(lib, "tk_emu_entry_tack_kernel_finish"):
                nblocks = self.grid if self.ck.partial_size else 0
                call(lib, "tack_kernel_finish", self.head() + struct.pack("q", nblocks))
        return self.record()

    def trips(self, lib: ctypes.CDLL) -> int:
        """The module's one-thread tack_kernel_trips: the count it writes."""
        out = np.full(1, -7, np.int64)
        call(lib, "tack_kernel_trips", self.head() + struct.pack("Q", out.ctypes.data))
        return int(out[0])

    def one_thread(self, lib: ctypes.CDLL, b: int, t: int) -> Record:
        """Thread t of block b alone, in this launch's grid (a kernel without
        reductions: nothing waits for the other threads)."""
        buf = ctypes.create_string_buffer(self.head(), len(self.head()))
        launch = EmuLaunch(ctypes.cast(buf, ctypes.c_void_p), len(buf.raw),
                           (self.grid, 1, 1), (self.block, 1, 1), 0)
        rc = lib.tk_emu_one_thread(ctypes.byref(launch), ctypes.c_uint(b),
                                   ctypes.c_uint(t))
        assert rc == 0, f"tack_kernel_body: the emulated thread did not run ({rc})"
        return self.record()

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
