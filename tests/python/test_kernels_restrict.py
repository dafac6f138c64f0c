"""Restrict bodies: a kernel whose stored arrays overlap no other argument runs a
body compiled with restrict pointers; any overlap (the same array twice, a view of
the same memory) runs the ordinary body, with Python's results."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_helpers import private_kernel_cache, read_only  # noqa: F401

import tack
from tack.kernel import generate_source


def restrict_launches() -> int:
    return tack._tack._kernel_stats()["restrict_launches"]


@tack.kernel
def shift_add(src, out):
    for i in range(1, out.shape[0]):
        out[i] = src[i - 1] + 1.0


def test_source_has_a_restrict_body_with_const_inputs():
    src = generate_source(shift_add, (("array", "float64", 1),) * 2)
    assert "tack_kernel_body_restrict" in src
    assert "const double *restrict p_src" in src
    assert "double *restrict p_out" in src
    assert "const double *restrict p_out" not in src


def test_single_array_kernels_have_no_restrict_body():
    @tack.kernel
    def fill(out):
        for i in range(out.shape[0]):
            out[i] = 1.0

    assert "tack_kernel_body_restrict" not in generate_source(fill, (("array", "float64", 1),))


def test_disjoint_arrays_run_the_restrict_body():
    a = tack.array(np.arange(8.0))
    out = tack.zeros(8, dtype=tack.f64)
    before = restrict_launches()
    shift_add(a, out)
    assert restrict_launches() == before + 1
    np.testing.assert_array_equal(out.numpy()[1:], np.arange(7.0) + 1.0)


def test_overlapping_arrays_run_the_ordinary_body_with_python_results():
    host = np.arange(8.0)
    a = tack.array(host)
    before = restrict_launches()
    shift_add(a, a)  # serial order is not promised for a parallel loop, but
    assert restrict_launches() == before  # the restrict promise is never made
    b = tack.array(host)
    view = b.reshape((8,))
    shift_add(b, view)
    assert restrict_launches() == before

    @tack.kernel
    def serial_prefix(src, out):
        out[0] = src[0]
        for i in range(1, out.shape[0]):  # serial: the statement above stores
            out[i] = out[i - 1] + src[i]

    c = tack.array(np.ones(64))
    serial_prefix(c, c)
    expect = np.ones(64)
    serial_prefix.__wrapped__(expect, expect)
    np.testing.assert_array_equal(c.numpy(), expect)
    assert restrict_launches() == before


def test_read_only_arrays_may_overlap():
    @tack.kernel
    def add(x, y, out):
        for i in range(out.shape[0]):
            out[i] = x[i] + y[i]

    a = tack.array(np.arange(4.0))
    out = tack.zeros(4, dtype=tack.f64)
    before = restrict_launches()
    add(a, a, out)
    assert restrict_launches() == before + 1
    assert out.numpy().tolist() == [0.0, 2.0, 4.0, 6.0]


def test_dispatch_checks_run_before_any_compile():
    @tack.kernel
    def writes(out):
        for i in range(out.shape[0]):
            out[i] = 1.0

    before = tack._tack._kernel_stats()["compiles"]
    with pytest.raises(ValueError, match="'out'"):
        writes(read_only(4, np.float64))
    assert tack._tack._kernel_stats()["compiles"] == before
    assert writes._nspecializations == 0
