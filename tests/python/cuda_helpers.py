"""Running Tack against the strict stand-in CUDA driver (tests/standin/cuda).

The driver is opened once per process, so every stand-in test runs its code in a
fresh interpreter with TACK_CUDA_DRIVER pointing at the stand-in, which is built
here with the system C compiler (no build system needed, as for the counting
producer). The child gets a ``calls()`` helper that returns the driver calls logged
since its previous call, as (name, arguments, result) tuples, so a test asserts on
the order of driver calls, not only on results.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The stand-in is its name-neutral core and its CUDA layer (tests/standin/meson.build).
STANDIN_DIR = ROOT / "tests" / "standin"
STANDIN_SOURCES = sorted((STANDIN_DIR / "core").glob("standin_*.c")) + sorted(
    (STANDIN_DIR / "cuda").glob("cuda_*.c"))

_library: Path | None = None

# Prepended to every child's code.
_PRELUDE = """
import os, re, sys
import numpy as np
import tack

_log = os.environ.get("TACK_STANDIN_LOG")
_seen = 0

def calls():
    global _seen
    with open(_log) as f:
        lines = f.read().splitlines()
    new, _seen = lines[_seen:], len(lines)
    out = []
    for line in new:
        m = re.match(r"(\\w+)\\((.*)\\) -> (-?\\d+)$", line)
        if m:
            out.append((m.group(1), m.group(2), int(m.group(3))))
    return out

def names(cs):
    return [c[0] for c in cs if not c[0].startswith("cuCtx")]

def tack_stream():
    # Tack's stream, as the stand-in logged it when Tack made it.
    with open(_log) as f:
        m = re.search(r"cuStreamCreate\\(flags=1, stream=(0x[0-9a-f]+)\\) -> 0", f.read())
    return int(m.group(1), 16)

def assert_between_streams(cs, s, op):
    # The calls cs queued op on Tack's stream between foreign stream s's work:
    # Tack's stream waited for s, op was queued, then s waited for Tack's stream;
    # events only, the host never waited.
    ns = names(cs)
    assert "cuStreamSynchronize" not in ns, ns
    rec = [c for c in cs if c[0] == "cuEventRecord"]
    wait = [c for c in cs if c[0] == "cuStreamWaitEvent"]
    assert len(rec) == 2 and len(wait) == 2, cs
    assert f"stream={s:#x}" in rec[0][1], cs
    assert f"stream={tack_stream():#x}" in wait[0][1], cs
    assert f"stream={tack_stream():#x}" in rec[1][1], cs
    assert f"stream={s:#x}" in wait[1][1], cs
    k = ns.index(op)
    assert ns.index("cuStreamWaitEvent") < k < len(ns) - ns[::-1].index("cuEventRecord")
    assert all(c[2] == 0 for c in cs), cs
"""


# Child code (indented as test bodies are) for another library's stream: one made
# with the stand-in's own cuStreamCreate, and a 32-bit fill still queued on a stream.
FOREIGN_STREAM = """
        import ctypes
        _drv = ctypes.CDLL(os.environ["TACK_CUDA_DRIVER"])
        def foreign_stream():
            s = ctypes.c_void_p()
            assert _drv.cuStreamCreate(ctypes.byref(s), 0) == 0
            return s.value
        def pending_fill(ptr, n, bits, stream):
            assert _drv.cuMemsetD32Async(ctypes.c_ulonglong(ptr), ctypes.c_uint(bits),
                                         ctypes.c_size_t(n), ctypes.c_void_p(stream)) == 0
"""


def standin_library() -> Path:
    """Builds (first call only) libtack_standin_cuda.so and returns its path."""
    global _library
    if _library is not None:
        return _library
    out_dir = Path(tempfile.mkdtemp(prefix="tack-standin-cuda-"))
    target = out_dir / "libtack_standin_cuda.so"
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    header = ROOT / "tests" / "standin" / "cuda" / "cuda_emulation.hpp"
    cmd = [*cc, "-shared", "-fPIC", "-O1", "-g", "-std=c11", "-pthread",
           f'-DTACK_STANDIN_EMULATION_HEADER="{header}"',
           f"-I{STANDIN_DIR / 'cuda'}", f"-I{STANDIN_DIR / 'core'}",
           *map(str, STANDIN_SOURCES), "-o", str(target), "-ldl"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"building the stand-in failed:\n{result.stderr}")
    _library = target
    return target


def standin_for_kernels() -> str:
    """The stand-in's path, for a test that launches kernels on CUDA arrays: those
    build with NVRTC, so without it the test is skipped."""
    import pytest

    import tack

    try:
        tack._tack._nvrtc_version()
    except tack.TackError as e:
        pytest.skip(f"NVRTC is not available: {e}")
    return str(standin_library())


def stub_driver() -> Path | None:
    """NVIDIA's stub libcuda.so from the CUDA toolkit, where one is installed."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    stub = Path(nvcc).resolve().parent.parent / "lib64" / "stubs" / "libcuda.so"
    return stub if stub.exists() else None


def run(code: str, tmp_path: Path, *, driver: str | None = None, check: bool = True,
        **env: str) -> subprocess.CompletedProcess[str]:
    """Runs code in a child interpreter on the stand-in (or on `driver`); extra
    keyword arguments become environment variables (TACK_STANDIN_FAIL=...)."""
    log = tmp_path / "driver.log"
    log.write_text("")
    child_env = dict(os.environ)
    child_env.pop("TACK_STANDIN_FAIL", None)
    child_env.update(
        TACK_CUDA_DRIVER=driver if driver is not None else str(standin_library()),
        TACK_STANDIN_LOG=str(log),
        PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
        **env,
    )
    result = subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(code)],
        capture_output=True, text=True, env=child_env, timeout=120,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"child failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result
