"""Kernels belong to a backend: the runtime builds a specialization with the build
slot of the backend its key names (the DLPack device type of the arrays' device),
and refuses a backend that runs no kernels."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

import tack
from tack._tack import _kernel_build, kDLCPU, kDLCUDA
from tack.kernel.request import BuildRequest

SOURCE = r'''
#include <stdint.h>
typedef struct tk_ctx tk_ctx;
typedef struct { void *a0; int64_t a0_n[1]; } P;
#define E __attribute__((visibility("default")))
E const int tack_kernel_abi = 3;
E const int tack_kernel_nparams = 1;
E const uint32_t tack_kernel_param_key[] = {0x10b01u};
E int64_t tack_kernel_trips(const void *v, tk_ctx *c) { (void)c; return -1; }
E void tack_kernel_body(int64_t b, int64_t e, const void *v, tk_ctx *c) {
    (void)b; (void)e; (void)v; (void)c;
}
'''


def test_build_for_the_cpu_backend_by_its_dlpack_type(tmp_path, monkeypatch):
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path / "cache"))
    default = _kernel_build("k", "t.py", SOURCE)
    assert _kernel_build("k", "t.py", SOURCE, 1) is not None
    assert _kernel_build("k", "t.py", SOURCE, backend=1) is not None
    assert default is not None


@pytest.mark.parametrize("backend", [77, 0])
def test_build_for_a_backend_tack_lacks_is_refused(tmp_path, monkeypatch, backend):
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(RuntimeError, match=f"DLPack device type {backend}"):
        _kernel_build("k", "t.py", SOURCE, backend)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


@pytest.mark.parametrize("bad", [-1, 2**40, "1", 1.0])
def test_backend_must_be_a_dlpack_device_type(bad):
    with pytest.raises((TypeError, OverflowError)):
        _kernel_build("k", "t.py", SOURCE, bad)


def test_the_dispatcher_builds_for_the_backend_of_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path / "cache"))
    front = sys.modules["tack.kernel"]

    calls = []

    def spy(name, filename, source, backend):
        calls.append(backend)
        return _kernel_build(name, filename, source, backend)

    monkeypatch.setattr(front, "_kernel_build", spy)

    @tack.kernel
    def double(out):
        for i in range(out.shape[0]):
            out[i] = 2.0 * i

    @tack.kernel
    def total(n):
        s = 0
        for i in range(n):
            s += i
        return s

    out = tack.zeros(5, dtype=tack.f64)
    double(out)
    np.testing.assert_array_equal(out.numpy(), 2.0 * np.arange(5))
    assert total(5) == 10  # no array: the key says the CPU
    assert calls == [1, 1]


def test_arrays_of_two_devices_are_refused_and_cuda_arrays_run_on_cuda(tmp_path):
    # CUDA arrays on the stand-in driver: a CPU array beside a CUDA one is two memory
    # domains, ValueError before anything compiles; CUDA arrays alone build for the
    # CUDA backend (its C twin is one CPU compile) and run there.
    from cuda_helpers import run

    (tmp_path / "kmod.py").write_text(
        "import tack\n\n\n@tack.kernel\ndef add(out, x):\n"
        "    for i in range(out.shape[0]):\n        out[i] += x[i]\n")
    run(
        f"""
        sys.path.insert(0, {str(tmp_path)!r})
        from kmod import add
        from tack._tack import _kernel_stats

        g = tack.array(np.arange(8, dtype=np.float32), device="cuda")
        c = tack.zeros(8, dtype=tack.f32)
        before = _kernel_stats()["compiles"]
        for args in ((c, g), (g, c)):
            try:
                add(*args)
            except ValueError as e:
                assert ("'out' (on cpu:0) and 'x' (on cuda:0)" in str(e)
                        or "'out' (on cuda:0) and 'x' (on cpu:0)" in str(e)), e
                assert "memory domains" in str(e), e
            else:
                raise AssertionError("launched")
        assert _kernel_stats()["compiles"] == before
        add(g, g)
        assert _kernel_stats()["compiles"] == before + 1
        assert (g.numpy() == 2 * np.arange(8, dtype=np.float32)).all(), g.numpy()
        add(c, c)
        # the CPU specialization is the CUDA build's C twin: no second compile
        assert _kernel_stats()["compiles"] == before + 1
        """,
        tmp_path,
        TACK_CACHE_DIR=str(tmp_path / "cache"),
    )


@tack.kernel
def _scaled(out, x, k):
    for i in range(out.shape[0]):
        out[i] = k * x[i]


def _cuda_request() -> BuildRequest:
    req = _scaled.compile.source((("array", "float64", 1), ("array", "float64", 1),
                                  "float"), False, kDLCUDA)
    assert isinstance(req, BuildRequest)
    return req


def test_a_gpu_build_request_crosses_the_binding_field_by_field(tmp_path, monkeypatch):
    # The CUDA build reads the request and builds its twin on the CPU; no device is
    # needed until a launch.
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path / "cache"))
    req = _cuda_request()
    assert req.parallel and req.host_trips and not req.needs_ctx
    assert "tack_kernel_body" in req.source and "tack_kernel_trips" in req.twin_source
    assert _kernel_build("_scaled", "t.py", req, kDLCUDA) is not None
    # what the runtime checks: facts, names, the twin's result kind, the CPU's refusal
    for bad, words in ((dict(partial_size=-1), "contradict"),
                       (dict(parallel=2), "contradict"),
                       (dict(result_kind=2), "contradict"),
                       (dict(names=("",)), "non-empty strings"),
                       (dict(needs_ctx=True, result_kind=1), "twin's")):
        with pytest.raises(ValueError, match=words) as info:
            _kernel_build("_scaled", "t.py", dataclasses.replace(req, **bad), kDLCUDA)
        assert "_scaled" in str(info.value)
    with pytest.raises(ValueError, match="twin"):
        _kernel_build("_scaled", "t.py", req, kDLCPU)


@pytest.mark.parametrize(("bad", "exc", "words"), [
    (dict(names=("x", 1)), TypeError, "names must be str, not int"),
    (dict(names=None), TypeError, "not iterable"),
    (dict(parallel="yes"), TypeError, "parallel must be an int, not str"),
    (dict(twin_source=b"c"), TypeError, "twin_source must be a str, not bytes"),
    (dict(partial_size=2**40), ValueError, "partial_size is out of range"),
    (dict(names=("x",) * 5000), ValueError, "5000 names"),
])
def test_the_binding_refuses_a_request_it_cannot_convert(bad, exc, words):
    with pytest.raises(exc, match=words):
        _kernel_build("_scaled", "t.py", dataclasses.replace(_cuda_request(), **bad),
                      kDLCUDA)


def test_a_source_that_is_neither_str_nor_request_is_a_type_error():
    with pytest.raises(TypeError, match="BuildRequest, not object"):
        _kernel_build("k", "t.py", object(), kDLCUDA)
