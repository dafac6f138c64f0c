"""The kernel compiler's targets, without a device: the CUDA source of a fixed set of
kernels (kernel_suite_sources.py) is exactly what it was, and the OpenCL C target
spells every kernel of that set as clang accepts it.

Why the digest: the CUDA source of a kernel is a contract that runs only where a
GPU is lent, and refactoring the emitters (the grid algorithm shared by the GPU
targets, the spelling hooks) must not change a byte of it. A change that means to
change it regenerates the digest (``kernel_suite_sources.py --write``) in the same
commit, which then says why.
"""

from __future__ import annotations

import runpy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kernel_suite_sources as suite
import pytest

import tack
from tack.kernel.emit_c import CEmitter
from tack.kernel.emit_opencl import OpenCLEmitter, emit_opencl
from tack.kernel.lower import CUDA, OPENCL


@pytest.fixture(scope="module")
def plans() -> list[tuple[str, Any]]:
    return list(suite.plans())


def test_the_cuda_source_of_the_fixed_set_is_unchanged(plans: list[tuple[str, Any]]):
    value, count = suite.digest(suite.sources(suite.cuda_source, CUDA, plans))
    want = suite.DIGEST_FILE.read_text(encoding="utf-8").split()
    assert count > 2 * len(suite.SEEDS)  # the fuzzer's seeds, both debug modes, and more
    assert [value, str(count)] == want, (
        "the CUDA emitter's output changed for the fixed set of kernels; if that is "
        "meant, regenerate the digest with `.venv/bin/python "
        "tests/python/kernel_suite_sources.py --write` and say why in the commit")


CLANG = shutil.which("clang-14") or shutil.which("clang")
needs_clang = pytest.mark.skipif(
    CLANG is None, reason="clang (14 or later) is not installed: scripts/ensure_tools.sh "
    "installs it")
# OpenCL C 3.0 for a SPIR-V device without the optional generic address space, as
# Level Zero's SPIR-V is built; a deep expression (a return of 512 reductions
# or'ed together) nests past clang's default bracket depth.
CLANG_ARGS = ["-x", "cl", "-cl-std=CL3.0", "--target=spir64", "-fsyntax-only", "-w",
              "-fbracket-depth=4096", "-Xclang", "-cl-ext=-__opencl_c_generic_address_space,"
              "-__opencl_c_pipes,-__opencl_c_device_enqueue"]


def opencl_source(k: Any, sig: tuple[Any, ...], debug: bool) -> str:
    return k.compile.spell(emit_opencl, sig, debug, OPENCL)


def clang_errors(sources: list[tuple[str, str]], folder: Path) -> list[str]:
    """clang's errors for each source that fails, in two batches (two cores)."""
    paths = []
    for n, (label, text) in enumerate(sources):
        path = folder / f"k{n:04d}.cl"
        path.write_text(f"// {label}\n{text}", encoding="utf-8")
        paths.append(str(path))
    assert CLANG is not None
    half = (len(paths) + 1) // 2
    runs = [subprocess.Popen([CLANG, *CLANG_ARGS, *batch], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
            for batch in (paths[:half], paths[half:]) if batch]
    out = []
    for r in runs:
        text, _ = r.communicate()
        if r.returncode != 0:
            out.append(text[-6000:])
    return out


@needs_clang
def test_every_kernel_of_the_fixed_set_is_opencl_c_that_clang_accepts(
        tmp_path: Path, plans: list[tuple[str, Any]]):
    sources = list(suite.sources(emit_opencl, OPENCL, plans))
    assert len(sources) > 2 * len(suite.SEEDS)
    errors = clang_errors(sources, tmp_path)
    assert not errors, "\n".join(errors)


@needs_clang
def test_the_opencl_check_fails_without_address_spaces(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch):
    # The check can fail: spelled with C's pointers (no __global), a kernel whose
    # func takes an array is not OpenCL C.
    monkeypatch.setattr(OpenCLEmitter, "pointer", CEmitter.pointer)
    k = next(k for label, k, sig, debug in suite.specializations(())
             if label.startswith("restricted"))
    sig = suite.EXTRA_SIGNATURES["restricted"][0]
    assert clang_errors([("restricted", opencl_source(k, sig, False))], tmp_path)


def test_a_local_array_passed_to_a_func_is_a_kernel_error_on_opencl(tmp_path: Path):
    path = tmp_path / "local_to_func.py"
    path.write_text(LOCAL_TO_FUNC, encoding="utf-8")
    ns = runpy.run_path(str(path))
    sig = (("array", "float64", 1),)
    assert "tk_" in ns["uses_local"].compile.cuda(sig, False).source  # CUDA spells it
    with pytest.raises(tack.KernelError, match="OpenCL C target has no generic address "
                       "space.*tack.local_array to a func"):
        opencl_source(ns["uses_local"], sig, False)


LOCAL_TO_FUNC = '''
import tack

@tack.func
def first(t):
    return t[0]

@tack.kernel
def uses_local(out):
    for i in range(out.shape[0]):
        t = tack.local_array((2,), tack.f64)
        t[0] = 1.0
        out[i] = first(t)
'''
