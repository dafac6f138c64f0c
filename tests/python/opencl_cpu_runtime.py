"""Intel's OpenCL CPU runtime from PyPI (intel-opencl-rt, intel-cmplr-lib-rt; `make
setup` installs them into .venv, never into the repository): where it is, and a
program that builds SPIR-V modules on it with clCreateProgramWithIL.

The wheels put the runtime (libintelocl.so), an OpenCL ICD loader (libOpenCL.so.1) and
the compiler libraries it links (libsvml.so and friends) into the environment's lib/.
Two traps, both met on Debian 12: the shipped .icd file names a placeholder path, so
the loader is told the runtime with OCL_ICD_FILENAMES; and the ICD loader finds the
compiler libraries only through LD_LIBRARY_PATH. Both must be set before a process
loads OpenCL, so the builds run in a child process (`python -m opencl_cpu_runtime
DIR`), which also keeps the runtime's threads out of the test process.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

RUNTIME = "libintelocl.so"
ICD_LOADER = "libOpenCL.so.1"
# The entry point every Tack kernel's module has (emit_opencl.py).
ENTRY = b"tack_kernel_body"

CL_DEVICE_TYPE_CPU = 1 << 1
CL_DEVICE_EXTENSIONS = 0x1030
CL_PROGRAM_BUILD_LOG = 0x1183


def library_dir() -> Path | None:
    """The lib/ folder that holds the runtime, or None: $TACK_OPENCL_RUNTIME_DIR (the
    sanitizers' Python has no runtime of its own and names .venv's), else this
    environment's."""
    lib = Path(os.environ.get("TACK_OPENCL_RUNTIME_DIR") or Path(sys.prefix) / "lib")
    return lib if (lib / RUNTIME).exists() and (lib / ICD_LOADER).exists() else None


def child_env(lib: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["OCL_ICD_FILENAMES"] = str(lib / RUNTIME)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(lib), env.get("LD_LIBRARY_PATH", "")) if p)
    return env


def build_modules(folder: Path) -> subprocess.CompletedProcess[str]:
    """Builds every *.spv of folder on the runtime's CPU device, in a child process;
    its stdout has one line per module that failed, and what the device reports."""
    lib = library_dir()
    assert lib is not None, "Intel's OpenCL CPU runtime is not installed (make setup)"
    return subprocess.run([sys.executable, __file__, str(lib), str(folder)],
                          capture_output=True, text=True, env=child_env(lib),
                          timeout=1200)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise RuntimeError(f"{what} returned OpenCL error {rc}")


def _device(cl: ctypes.CDLL) -> ctypes.c_void_p:
    platform = ctypes.c_void_p()
    _check(cl.clGetPlatformIDs(1, ctypes.byref(platform), None), "clGetPlatformIDs")
    device = ctypes.c_void_p()
    _check(cl.clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, ctypes.byref(device),
                             None), "clGetDeviceIDs")
    return device


def _extensions(cl: ctypes.CDLL, device: ctypes.c_void_p) -> str:
    text = ctypes.create_string_buffer(1 << 16)
    _check(cl.clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, len(text), text, None),
           "clGetDeviceInfo")
    return text.value.decode()


def _build(cl: ctypes.CDLL, ctx: ctypes.c_void_p, device: ctypes.c_void_p,
           module: bytes) -> str | None:
    """None when module builds and has ENTRY; else what went wrong."""
    rc = ctypes.c_int()
    program = cl.clCreateProgramWithIL(ctx, module, ctypes.c_size_t(len(module)),
                                       ctypes.byref(rc))
    if rc.value != 0:
        return f"clCreateProgramWithIL: error {rc.value}"
    try:
        built = cl.clBuildProgram(program, 1, ctypes.byref(device), b"", None, None)
        if built != 0:
            log = ctypes.create_string_buffer(1 << 14)
            cl.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, len(log),
                                     log, None)
            return f"clBuildProgram: error {built}: {log.value.decode()[-800:]}"
        kernel = cl.clCreateKernel(program, ENTRY, ctypes.byref(rc))
        if rc.value != 0:
            return f"clCreateKernel({ENTRY.decode()}): error {rc.value}"
        cl.clReleaseKernel(kernel)
        return None
    finally:
        cl.clReleaseProgram(program)


def main(lib: str, folder: str) -> int:
    cl = ctypes.CDLL(str(Path(lib) / ICD_LOADER))
    for name in ("clCreateContext", "clCreateProgramWithIL", "clCreateKernel"):
        getattr(cl, name).restype = ctypes.c_void_p
    cl.clCreateProgramWithIL.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                         ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]
    cl.clCreateKernel.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                  ctypes.POINTER(ctypes.c_int)]
    cl.clReleaseProgram.argtypes = cl.clReleaseKernel.argtypes = [ctypes.c_void_p]
    cl.clBuildProgram.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p,
                                  ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]
    cl.clGetDeviceIDs.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint,
                                  ctypes.c_void_p, ctypes.c_void_p]
    cl.clGetDeviceInfo.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t,
                                   ctypes.c_void_p, ctypes.c_void_p]
    cl.clGetProgramBuildInfo.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_uint, ctypes.c_size_t,
                                         ctypes.c_void_p, ctypes.c_void_p]
    device = _device(cl)
    print("extensions:", _extensions(cl, device))
    rc = ctypes.c_int()
    ctx = ctypes.c_void_p(cl.clCreateContext(None, 1, ctypes.byref(device), None, None,
                                             ctypes.byref(rc)))
    _check(rc.value, "clCreateContext")
    failed = 0
    for path in sorted(Path(folder).glob("*.spv")):
        why = _build(cl, ctx, device, path.read_bytes())
        if why is not None:
            failed += 1
            print(f"FAILED {path.stem}: {why}")
    print(f"built: {len(list(Path(folder).glob('*.spv'))) - failed}, failed: {failed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
