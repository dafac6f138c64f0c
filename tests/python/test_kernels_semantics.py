"""Kernel semantics that follow Python or NumPy: float floor division by zero,
negative shape axes, value-returning and/or, math functions, uint64 elements,
TACK_DEBUG read at call time, Tack's own error for NumPy arguments, error positions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tack
from tack.kernel import generate_source


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kc"))


def same(got: float, want: float) -> bool:
    """Equal, with the same sign of zero, or both nan."""
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1, got) == math.copysign(1, want)


@tack.kernel
def floordiv(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] // b[i]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float_floor_division_by_zero_is_ieee_like_numpy(dtype):
    a = np.array([1.0, -1.0, 5.5, 0.0, -2.0, math.inf, math.nan, 7.5], dtype=dtype)
    b = np.array([0.0, 0.0, -0.0, 0.0, -0.0, 0.0, 0.0, 2.0], dtype=dtype)
    out = tack.zeros(a.size, dtype=tack.f64 if dtype == np.float64 else tack.f32)
    floordiv(tack.array(a), tack.array(b), out)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.floor_divide(a, b)
    got = out.numpy()
    assert got[0] == math.inf and got[1] == -math.inf and got[2] == -math.inf
    for g, w in zip(got.tolist(), want.tolist(), strict=True):
        assert same(g, w), (got, want)


@tack.kernel
def read_next(src, out):
    for i in range(out.shape[0]):
        out[i] = src[i + 1]


def test_tack_debug_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TACK_DEBUG", raising=False)
    src, out = tack.zeros(5), tack.zeros(4)
    read_next(src, out)  # in bounds: compiles the unchecked variant
    monkeypatch.setenv("TACK_DEBUG", "1")
    with pytest.raises(IndexError, match="'src'"):
        read_next(src, tack.zeros(5))
    assert read_next._nspecializations == 2
    monkeypatch.setenv("TACK_DEBUG", "0")
    read_next(src, out)  # back to the unchecked variant, no new build
    assert read_next._nspecializations == 2
    monkeypatch.setenv("TACK_DEBUG", "1")
    read_next(src, out)
    assert read_next._nspecializations == 2
    unchecked = tack.kernel(read_next.__wrapped__, debug=False)
    unchecked(src, out)  # an explicit debug=False ignores TACK_DEBUG
    sig = (("array", "float64", 1), ("array", "float64", 1))
    assert "tk_ok(tk_ctx, " not in generate_source(unchecked, sig)
    assert "tk_ok(tk_ctx, " in generate_source(read_next, sig)  # TACK_DEBUG=1 now


def test_negative_shape_axes_count_from_the_end():
    @tack.kernel
    def last_axes(a, out):
        for i in range(a.shape[-2]):
            out[i] = float(a.shape[-1] * 10 + a.shape[-2])

    a, out = tack.zeros((3, 4)), tack.zeros(3)
    last_axes(a, out)
    assert out.numpy().tolist() == [43.0] * 3
    with pytest.raises(tack.KernelError, match=r"shape\[-2\]"):
        last_axes(tack.zeros(3), out)
