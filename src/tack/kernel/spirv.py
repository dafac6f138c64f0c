"""OpenCL C (emit_opencl.py's output) -> a SPIR-V module, for Level Zero.

Two programs do it, found at run time as the C compiler is: ``clang-15 -target
spir64`` makes LLVM bitcode, ``llvm-spirv-15`` translates it. They are Debian 12's
matched pair (clang-16's bitcode does not read back into llvm-spirv-15, and Debian has
no llvm-spirv-16); ``$TACK_OPENCL_CLANG`` and ``$TACK_LLVM_SPIRV`` name others.

The flags, and why:

- OpenCL C 3.0 without the generic address space (and the features that need it), as
  emit_opencl.py writes it: atomics then act on CrossWorkgroup pointers, which Intel's
  runtimes link (a generic-pointer atomic is left unresolved);
- ``-O0``: llvm-spirv-15 cannot translate what clang-15's optimizer makes of these
  kernels (``freeze`` instructions, integers of odd widths from loop idioms, blocks
  out of dominance order); the driver compiles the SPIR-V with its own optimizer;
- ``-ffp-contract=off``: OpenCL C contracts ``a * b + c`` by default;
- ``--spirv-max-version=1.2``: a kernel with a local array would otherwise become a
  SPIR-V 1.4 module, which OpenCL 2.2 environments refuse;
- the float-atomics extension, which emit_opencl.py's atomics may need.

``spirv_request`` is the Level Zero emitter (tack.kernel.EMITTERS[kDLOneAPI]): the
OpenCL C source, its SPIR-V module as the request's image, and the C twin. Modules
go to Tack's disk cache (the runtime's, beside the CPU's shared objects and NVRTC's
images), keyed by the tools' identities (resolved path, size and modification time:
no program runs to ask their version), the flags and the source, so a warm process
runs neither tool.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tack._tack import CompileError, _rtc_cache_get, _rtc_cache_put
from tack.kernel import lir
from tack.kernel.emit_c import emit_c
from tack.kernel.emit_opencl import OpenCLEmitter
from tack.kernel.lower import OPENCL, for_target
from tack.kernel.request import BuildRequest, request_of

CLANG = "clang-15"
LLVM_SPIRV = "llvm-spirv-15"

CLANG_ARGS = [
    "-x", "cl", "-cl-std=CL3.0", "-target", "spir64", "-O0", "-emit-llvm", "-c", "-w",
    # no a * b + c as OpenCL's mad, which a device may fuse: every + - * rounds, as
    # on the CPU (-ffp-contract=off) and on CUDA (--fmad=false)
    "-ffp-contract=off",
    # a deep expression (a return of 512 reductions or'ed together) nests past
    # clang's default bracket depth
    "-fbracket-depth=4096",
    "-Xclang", "-cl-ext=-__opencl_c_generic_address_space,-__opencl_c_pipes,"
    "-__opencl_c_device_enqueue",
]
LLVM_SPIRV_ARGS = ["--spirv-max-version=1.2",
                   "--spirv-ext=+SPV_EXT_shader_atomic_float_add"]


def _tool(variable: str, default: str) -> str:
    """The program $variable names, else default on PATH; CompileError naming it when
    it is not there."""
    name = os.environ.get(variable) or default
    path = shutil.which(name)
    if path is None:
        raise CompileError(
            f"SPIR-V for Level Zero needs {name}, which is not installed (or not on "
            f"PATH): install Debian's clang-15 and llvm-spirv-15 (scripts/ensure_tools.sh "
            f"does), or name the program in ${variable}")
    return path


def tools() -> tuple[str, str]:
    """The clang and llvm-spirv that compile_opencl runs."""
    return _tool("TACK_OPENCL_CLANG", CLANG), _tool("TACK_LLVM_SPIRV", LLVM_SPIRV)


def _run(cmd: list[str], what: str) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise CompileError(f"{what} failed ({Path(cmd[0]).name}, exit {result.returncode}):"
                           f"\n{(result.stdout + result.stderr)[-4000:]}")


def compile_opencl(source: str) -> bytes:
    """The SPIR-V module of an OpenCL C source. CompileError with the tool's output
    when a step fails, or naming a tool that is missing."""
    clang, llvm_spirv = tools()
    with tempfile.TemporaryDirectory(prefix="tack-spirv-") as folder:
        cl, bc, spv = (Path(folder) / f"kernel.{ext}" for ext in ("cl", "bc", "spv"))
        cl.write_text(source, encoding="utf-8")
        _run([clang, *CLANG_ARGS, str(cl), "-o", str(bc)], "compiling OpenCL C")
        _run([llvm_spirv, *LLVM_SPIRV_ARGS, str(bc), "-o", str(spv)],
             "translating to SPIR-V")
        return spv.read_bytes()


def _identity(path: str) -> str:
    """A tool as its cache key sees it: the file it resolves to, its size and
    modification time (a reinstalled or upgraded tool is another key)."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return f"{real} {st.st_size} {st.st_mtime_ns}"


def cache_text(source: str) -> str:
    """Everything that makes the SPIR-V of source: the cache entry's text."""
    clang, llvm_spirv = tools()
    return "\n".join(["tack spirv 1", _identity(clang), " ".join(CLANG_ARGS),
                      _identity(llvm_spirv), " ".join(LLVM_SPIRV_ARGS), source])


def compile_opencl_cached(source: str) -> bytes:
    """compile_opencl's module, from the disk cache when an entry for the same tools,
    flags and source is there (then no tool runs); a new module is published."""
    text = cache_text(source)
    image = _rtc_cache_get(".spv", text)
    if image is None:
        image = compile_opencl(source)
        _rtc_cache_put(".spv", text, image)
    return image


def spirv_request(plan: lir.Plan) -> BuildRequest:
    """What the Level Zero backend's kernel build takes, from the plan of one
    specialization lowered for the CPU: the OpenCL C source, its SPIR-V module as the
    image and the launch facts, with the C source of the same plan as the twin."""
    target = for_target(plan, OPENCL)
    em = OpenCLEmitter(target)
    source = em.generate()
    return request_of(target, em.names, source, emit_c(plan),
                      compile_opencl_cached(source))
