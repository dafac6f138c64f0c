"""The Level Zero emitter (tack.kernel.EMITTERS[kDLOneAPI]): its build request holds
the OpenCL C source, the SPIR-V module made from it as the image, the C twin and the
launch facts CUDA's request has for the same plan; modules come from the disk cache,
so a warm process runs neither clang nor llvm-spirv."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

import tack
from tack._tack import _kernel_build, _rtc_cache_get, _rtc_cache_put, kDLCUDA, kDLOneAPI
from tack.kernel import EMITTERS, spirv
from tack.kernel.emit_c import emit_c
from tack.kernel.emit_cuda import emit_cuda_request
from tack.kernel.lower import CPU
from tack.kernel.request import BuildRequest

SPIRV_MAGIC = b"\x03\x02\x23\x07"

pytestmark = pytest.mark.skipif(
    not (shutil.which(spirv.CLANG) and shutil.which(spirv.LLVM_SPIRV)),
    reason="clang-15 and llvm-spirv-15 are not installed (scripts/ensure_tools.sh)")


@tack.kernel
def total(a, out):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
        out[i] = a[i] * 2.0
    return s


SIGNATURE = (("array", "float64", 1), ("array", "float64", 1))


def plan(debug: bool = False):
    return total.compile.spell(lambda p: p, SIGNATURE, debug, CPU)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TACK_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def tool_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The programs spirv runs from now on, by name (they still run)."""
    runs: list[str] = []
    real = subprocess.run

    def counting(cmd, *args, **kwargs):
        runs.append(Path(cmd[0]).name)
        return real(cmd, *args, **kwargs)

    monkeypatch.setattr(spirv.subprocess, "run", counting)
    return runs


@pytest.mark.parametrize("debug", [False, True])
def test_the_request_holds_opencl_source_its_spirv_and_cuda_s_facts(cache, debug):
    p = plan(debug)
    req = EMITTERS[kDLOneAPI](p)
    assert isinstance(req, BuildRequest)
    assert "__kernel void tack_kernel_body" in req.source
    assert req.image[:4] == SPIRV_MAGIC and len(req.image) % 4 == 0
    assert req.image == spirv.compile_opencl(req.source)
    assert req.twin_source == emit_c(p)
    cuda = emit_cuda_request(p)
    facts = ("names", "parallel", "host_trips", "needs_ctx", "restrict_body",
             "partial_size", "result_kind")
    assert {f: getattr(req, f) for f in facts} == {f: getattr(cuda, f) for f in facts}
    assert req.needs_ctx and req.partial_size > 0 and req.parallel
    assert cuda.image == b""


def test_a_warm_cache_runs_no_tool(cache, tool_runs):
    first = spirv.spirv_request(plan())
    assert tool_runs == [Path(spirv.tools()[0]).name, Path(spirv.tools()[1]).name]
    assert list(cache.rglob("*.spv"))
    tool_runs.clear()
    assert spirv.spirv_request(plan()) == first
    assert tool_runs == []


def test_a_warm_process_runs_no_tool(cache):
    spirv.spirv_request(plan())
    child = f"""
import subprocess, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import test_level_zero_kernels_request as t
from tack.kernel import spirv
def refuse(*a, **k):
    raise AssertionError("a tool ran: " + repr(a))
subprocess.run = refuse
req = spirv.spirv_request(t.plan())
assert req.image[:4] == t.SPIRV_MAGIC
print("ok")
"""
    env = dict(os.environ, TACK_CACHE_DIR=str(cache))
    r = subprocess.run([os.sys.executable, "-c", child], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_a_corrupt_entry_is_compiled_again(cache, tool_runs):
    first = spirv.spirv_request(plan())
    (entry,) = cache.rglob("*.spv")
    entry.chmod(stat.S_IRUSR | stat.S_IWUSR)
    entry.write_bytes(b"\x00" * len(first.image))
    tool_runs.clear()
    assert spirv.spirv_request(plan()).image == first.image
    assert len(tool_runs) == 2


def test_another_tool_is_another_entry(cache, tool_runs, tmp_path, monkeypatch):
    wrapper = tmp_path / "clang-wrapper"
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which(spirv.CLANG)} "$@"\n')
    wrapper.chmod(0o700)
    monkeypatch.setenv("TACK_OPENCL_CLANG", str(wrapper))
    spirv.spirv_request(plan())
    tool_runs.clear()
    spirv.spirv_request(plan())
    assert tool_runs == []
    st = wrapper.stat()
    os.utime(wrapper, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    spirv.spirv_request(plan())
    assert tool_runs == ["clang-wrapper", Path(spirv.tools()[1]).name]


def test_the_cache_takes_only_plain_file_endings(cache):
    for ext in ("spv", ".", "./x", ".a/b", "." + "a" * 16):
        _rtc_cache_put(ext, "text", b"abcd")
        assert _rtc_cache_get(ext, "text") is None
    assert not cache.exists() or not any(cache.rglob("*"))
    _rtc_cache_put(".spv", "text", b"abcd")
    assert _rtc_cache_get(".spv", "text") == b"abcd"
    assert _rtc_cache_get(".spv", "other text") is None
    with pytest.raises(TypeError, match="_rtc_cache_put"):
        _rtc_cache_put(".spv", "text", "not bytes")


def test_a_request_s_image_must_be_bytes(cache):
    req = emit_cuda_request(plan())
    bad = BuildRequest(**{**req.__dict__, "image": "SPIR-V as text"})
    with pytest.raises(TypeError, match="image must be bytes, not str"):
        _kernel_build("total", "f.py", bad, kDLCUDA)
