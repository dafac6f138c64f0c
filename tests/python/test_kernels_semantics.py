"""Kernel semantics that follow Python or NumPy: float floor division by zero,
negative shape axes, value-returning and/or, math functions, uint64 elements,
TACK_DEBUG read at call time, Tack's own error for NumPy arguments, error positions."""

from __future__ import annotations

import math
import re

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


@tack.kernel
def and_or(a, b, out):
    for i in range(a.shape[0]):
        x = a[i]
        out[i, 0] = x or -1.0
        out[i, 1] = x and b[i]
        out[i, 2] = x or b[i] or 7.0
        out[i, 3] = (x > 1.0) or b[i]
        out[i, 4] = 1.0 if (x and b[i]) else 0.0
        out[i, 5] = (x > 0.0 and b[i] > 0.0) + 2.0


def test_and_or_return_an_operand_like_python():
    a = np.array([0.0, 2.5, -0.0, math.nan, 3.0, 0.0], dtype=np.float64)
    b = np.array([4.0, 0.0, 1.5, 2.0, -1.0, 0.0], dtype=np.float64)
    out = tack.zeros((a.size, 6), dtype=tack.f64)
    and_or(tack.array(a), tack.array(b), out)
    want = np.zeros((a.size, 6))
    and_or.__wrapped__(a, b, want)
    for g, w in zip(out.numpy().ravel().tolist(), want.ravel().tolist(), strict=True):
        assert same(g, w), (out.numpy(), want)
    assert out.numpy()[0, 0] == -1.0 and out.numpy()[1, 0] == 2.5


def test_and_or_short_circuit_keeps_an_index_unread():
    @tack.kernel(debug=True)
    def guarded(a, n, out):
        for i in range(out.shape[0]):
            out[i] = (i < n and a[i]) or -1

    out = tack.zeros(4, dtype=tack.i64)
    guarded(tack.array(np.array([5, 0], dtype=np.int64)), 2, out)
    assert out.numpy().tolist() == [5, -1, -1, -1]


def test_and_or_of_bools_stay_bool():
    @tack.kernel
    def flags(a, out):
        for i in range(a.shape[0]):
            out[i] = (a[i] > 0 or a[i] < -5) and not a[i] == 3

    a = np.array([1, -6, -1, 3], dtype=np.int64)
    out = tack.zeros(4, dtype=tack.bool)
    flags(tack.array(a), out)
    assert out.numpy().tolist() == [True, True, False, False]
    src = generate_source(flags, (("array", "int64", 1), ("array", "bool", 1)))
    assert not re.search(r"\btk_t\d", src)  # plain && and ||, no operand temporaries


HERE = __file__


def file_line(lineno: int) -> str:
    with open(HERE) as f:
        return f.read().splitlines()[lineno - 1]


def test_error_offset_of_an_indented_kernel_is_the_files_column():
    def lists(out):
        for i in range(3):
            out[i] = [1, 2][0]

    class Holder:
        def method_like(out):
            out[0] = out[1:2]

    for fn, what in ((lists, "[1, 2]"), (Holder.method_like, "out[1:2]")):
        with pytest.raises(tack.KernelError) as info:
            tack.kernel(fn)
        err = info.value
        assert err.filename == __file__
        text = file_line(err.lineno)
        assert err.offset == text.index(what) + 1, (err.offset, text)


def test_loop_else_errors_point_at_the_else_line():
    def for_else(out):
        for i in range(3):
            out[i] = 1.0
        else:
            out[0] = 2.0

    def while_else(out, n):
        while n > 0:
            n -= 1

        else: out[0] = 2.0  # noqa: E701  (the block on the else line)

    for fn in (for_else, while_else):
        with pytest.raises(tack.KernelError) as info:
            tack.kernel(fn)
        err = info.value
        text = file_line(err.lineno)
        assert text.strip().startswith("else:"), (fn.__name__, err.lineno, text)
        assert err.offset == text.index("else") + 1


@tack.kernel
def store_scalar(x, out):
    out[0] = x


def test_numpy_array_arguments_get_tacks_type_error():
    out = tack.zeros(1)
    for value in (np.zeros(3), np.array(2.5), np.array(3), np.zeros((2, 2), np.int64)):
        with pytest.raises(TypeError, match=r"'x'.*tack\.array\(x\).*tack\.from_dlpack"):
            store_scalar(value, out)
        with pytest.raises(TypeError, match=r"'out'.*tack\.array"):
            store_scalar(1.0, value)
    store_scalar(np.float32(1.5), out)  # NumPy scalars are still numbers
    store_scalar(np.int64(4), out)
    assert out.numpy().tolist() == [4.0]


@pytest.mark.skipif(not hasattr(math, "cbrt"), reason="math.cbrt and exp2 are 3.11+")
def test_cbrt_and_exp2():
    @tack.kernel
    def roots(x, out):
        for i in range(x.shape[0]):
            out[i] = math.cbrt(x[i]) + math.exp2(x[i])

    x = np.array([-27.0, 0.0, 2.0, 3.5, 1e-3])
    out = tack.zeros(5, dtype=tack.f64)
    roots(tack.array(x), out)
    assert out.numpy().tolist() == [math.cbrt(v) + math.exp2(v) for v in x.tolist()]


def test_more_math_functions_match_python():
    @tack.kernel
    def more_math(x, n, out):
        for i in range(x.shape[0]):
            v = x[i]
            out[i, 0] = math.expm1(v) + math.log1p(v)
            out[i, 1] = math.remainder(v, 0.75)
            out[i, 2] = math.ldexp(v, int(n[i]))
            out[i, 3] = math.copysign(3.0, -v) + math.hypot(v, 2.0)
            out[i, 4] = float(math.isfinite(v)) + 2.0 * math.isinf(v) + 4.0 * math.isnan(v)
            out[i, 5] = float(math.trunc(v)) + math.tau
            out[i, 6] = math.nextafter(v, math.inf) - v
            out[i, 7] = float(math.isqrt(n[i] * n[i] + 1) + math.isqrt(abs(n[i])))
            out[i, 8] = math.pi + math.e + math.tau

    x = np.array([0.5, 1.0, 2.25, 3.5, 10.0, 0.375], dtype=np.float64)
    n = np.array([0, 3, -2, 7, 40, 1], dtype=np.int64)
    out = tack.zeros((x.size, 9), dtype=tack.f64)
    more_math(tack.array(x), tack.array(n), out)
    want = np.zeros((x.size, 9))
    more_math.__wrapped__(x, n, want)
    np.testing.assert_array_equal(out.numpy(), want)


def test_math_ldexp_and_isqrt_need_ints():
    @tack.kernel
    def bad(x, out):
        out[0] = math.ldexp(x[0], x[0])  # float exponent

    with pytest.raises(tack.KernelError, match="ldexp"):
        bad(tack.zeros(1), tack.zeros(1))

    @tack.kernel
    def isqrt_big(n, out):
        for i in range(n.shape[0]):
            out[i] = math.isqrt(n[i])

    vals = [0, 1, 15, 16, 2**62, 2**63 - 1, (2**31 - 1) ** 2 - 1, 10**18]
    out = tack.zeros(len(vals), dtype=tack.i64)
    isqrt_big(tack.array(np.array(vals, dtype=np.int64)), out)
    assert out.numpy().tolist() == [math.isqrt(v) for v in vals]

    def unsupported(out):
        out[0] = float(math.gcd(4, 6))

    with pytest.raises(tack.KernelError, match="math.gcd"):
        tack.kernel(unsupported)


U64 = [0, 1, 5, 2**63 - 1, 2**63, 2**63 + 2048, 2**64 - 1, 2**64 - 4096]


def test_uint64_elements_convert_to_float_and_compare_unsigned():
    @tack.kernel
    def u64(a, b, s, out_f64, out_f32, flags):
        for i in range(a.shape[0]):
            out_f64[i] = a[i]
            out_f32[i] = a[i]
            flags[i, 0] = a[i] > 5
            flags[i, 1] = a[i] > -1
            flags[i, 2] = s[i] < a[i]
            flags[i, 3] = a[i] == b[i]
            flags[i, 4] = a[i] < b[i]
            flags[i, 5] = float(a[i]) * 0.5 > 2.0**62
            flags[i, 6] = a[i] >= 2**63 - 1

    a = np.array(U64, dtype=np.uint64)
    b = np.array(U64[1:] + U64[:1], dtype=np.uint64)
    s = np.array([-1, 2, 9, -(2**63), 2**63 - 1, 0, -5, 7], dtype=np.int64)
    out_f64, out_f32 = tack.zeros(a.size, dtype=tack.f64), tack.zeros(a.size, dtype=tack.f32)
    flags = tack.zeros((a.size, 7), dtype=tack.bool)
    u64(tack.array(a), tack.array(b), tack.array(s), out_f64, out_f32, flags)
    assert out_f64.numpy().tolist() == a.astype(np.float64).tolist()
    assert out_f32.numpy().tolist() == a.astype(np.float32).tolist()
    x, y = U64, U64[1:] + U64[:1]
    want = [[x[i] > 5, x[i] > -1, int(s[i]) < x[i], x[i] == y[i], x[i] < y[i],
             float(x[i]) * 0.5 > 2.0**62, x[i] >= 2**63 - 1] for i in range(len(x))]
    assert flags.numpy().tolist() == want
    checked = tack.kernel(u64.__wrapped__, debug=True)  # the checked loads too
    flags2 = tack.zeros((a.size, 7), dtype=tack.bool)
    checked(tack.array(a), tack.array(b), tack.array(s), out_f64, out_f32, flags2)
    assert flags2.numpy().tolist() == want
