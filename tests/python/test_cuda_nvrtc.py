"""Every kernel of the kernel test suite, compiled for the GPU without a GPU.

The suite (tests/python/test_kernels_*.py) runs once in a subprocess with the
cuda_sources plugin, which records the CUDA source of every specialization it builds
(both debug modes). Each source then goes through the real NVRTC to PTX for sm_90,
and the PTX through the toolkit's ptxas, so a code generation error shows here and
never waits for a GPU. Kernels that do not call the math library must have no fma
instruction: float + - * / round exactly as on the CPU.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import tack
from tack import _tack

HERE = Path(__file__).resolve().parent


def _toolkit_bin() -> Path | None:
    """The CUDA toolkit's bin folder, found through nvcc."""
    nvcc = shutil.which("nvcc")
    for candidate in (nvcc, os.path.join(os.environ.get("CUDA_HOME", ""), "bin/nvcc"),
                      "/usr/local/cuda/bin/nvcc"):
        if candidate and os.path.exists(candidate):
            return Path(candidate).resolve().parent
    return None


BIN = _toolkit_bin()
needs_toolkit = pytest.mark.skipif(BIN is None, reason="no CUDA toolkit (nvcc)")


def _ptxas(ptx: bytes, workdir: str) -> str:
    """ptxas's complaints about ptx for sm_90 ('' when it assembles)."""
    assert BIN is not None
    fd, path = tempfile.mkstemp(suffix=".ptx", dir=workdir)
    with os.fdopen(fd, "wb") as f:
        f.write(ptx.rstrip(b"\0"))
    try:
        r = subprocess.run([str(BIN / "ptxas"), "-arch=sm_90", path, "-o", os.devnull],
                           capture_output=True, text=True, check=False)
    finally:
        os.unlink(path)
    return "" if r.returncode == 0 else r.stderr or f"ptxas exit {r.returncode}"


def _check(path: str) -> tuple[str, str, bool, bool]:
    """(path, error, has fma, calls libm) for one recorded source."""
    text = Path(path).read_text("utf-8")
    libm = "libm=1" in text.splitlines()[0]
    try:
        ptx = _tack._nvrtc_compile(text, 90, ptx=True, name=Path(path).name)
    except tack.CompileError as exc:
        return path, f"NVRTC: {exc}", False, libm
    err = _ptxas(ptx, os.path.dirname(path))
    fma = re.search(rb"\bfma\.", ptx) is not None
    return path, err and f"ptxas: {err}", fma, libm


@pytest.fixture(scope="module")
def suite_sources(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    out = tmp_path_factory.mktemp("cuda_sources")
    env = dict(os.environ, TACK_CUDA_SOURCES_DIR=str(out),
               PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    env.pop("TACK_DEBUG", None)
    tests = sorted(str(p) for p in HERE.glob("test_kernels_*.py"))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "cuda_sources",
                        "-p", "no:cacheprovider", *tests],
                       env=env, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return sorted(str(p) for p in out.glob("*.cu"))


# Once in make test, not again under the sanitizers: the time is the kernel suite run
# a second time (sanitize-py runs it already) and NVRTC's and ptxas's; Tack's NVRTC
# binding is under the sanitizers through the other tests of this file.
@pytest.mark.slow
@needs_toolkit
def test_every_kernel_of_the_suite_compiles_to_ptx_that_ptxas_accepts(
        suite_sources: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A fresh cache: every source really goes through NVRTC.
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path / "cache"))
    # Dozens of files per test module at least: the recording did run.
    assert len(suite_sources) > 150
    with ProcessPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_check, suite_sources, chunksize=8))
    errors = [f"{p}:\n{e}" for p, e, _, _ in results if e]
    assert not errors, "\n\n".join(errors[:5])
    contracted = [p for p, _, fma, libm in results if fma and not libm]
    assert not contracted, f"fma in kernels without math calls: {contracted[:5]}"
    # Kernels without math calls are most of the suite, so the check above means
    # something; the math library's own fma is allowed (docs/kernels.md).
    assert sum(1 for r in results if not r[3]) > len(results) // 2


def _in_child(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                          capture_output=True, text=True, check=False)


def test_missing_nvrtc_is_device_unavailable_naming_the_path():
    r = _in_child(
        "import tack\n"
        "try:\n"
        "    tack._tack._nvrtc_compile('extern \"C\" __global__ void k() {}', 90)\n"
        "except tack.DeviceUnavailableError as e:\n"
        "    print('refused:', e)\n",
        TACK_NVRTC="/nonexistent/libnvrtc.so.13")
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout and "/nonexistent/libnvrtc.so.13" in r.stdout


@needs_toolkit
def test_a_second_process_reads_the_image_from_the_disk_cache(tmp_path: Path):
    code = ("import tack\n"
            "img = tack._tack._nvrtc_compile("
            "'extern \"C\" __global__ void k(float *a) { a[0] = 2.0f; }', 90)\n"
            "s = tack._tack._nvrtc_stats()\n"
            "print(img[:4] == b'\\x7fELF', s['compiles'], s['disk_hits'])\n")
    first = _in_child(code, TACK_CACHE_DIR=str(tmp_path))
    second = _in_child(code, TACK_CACHE_DIR=str(tmp_path))
    assert first.stdout.split() == ["True", "1", "0"], first.stderr
    assert second.stdout.split() == ["True", "0", "1"], second.stderr
