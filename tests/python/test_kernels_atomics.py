"""Atomics: tack.atomic_add/sub/min/max(a, i, [j, ...], v) update one element as a
single atomic operation and return the old value, so a parallel scatter counts
every update."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_helpers import check_both, private_kernel_cache, read_only  # noqa: F401

import tack


@tack.kernel
def histogram(values, h):
    for i in range(values.shape[0]):
        b = int(values[i] * h.shape[0])
        tack.atomic_add(h, b, 1)


@pytest.mark.parametrize("dtype", [tack.i32, tack.i64, tack.u32, tack.u64, tack.f32,
                                   tack.f64])
def test_parallel_histogram_counts_every_update(dtype):
    rng = np.random.default_rng(5)
    n = 1 << 20
    values = rng.random(n)
    h = tack.zeros(16, dtype=dtype)
    before = tack._tack._kernel_stats()["parallel_launches"]
    histogram(tack.array(values), h)
    assert tack._tack._kernel_stats()["parallel_launches"] >= before  # may be serial
    want = np.bincount((values * 16).astype(np.int64), minlength=16)
    np.testing.assert_array_equal(h.numpy().astype(np.int64), want)
    assert int(h.numpy().astype(np.int64).sum()) == n


@tack.kernel
def minmax(values, lo, hi, total, olds):
    for i in range(values.shape[0]):
        tack.atomic_min(lo, 0, values[i])
        tack.atomic_max(hi, 0, values[i])
        tack.atomic_sub(total, 0, values[i])
        old = tack.atomic_add(olds, i % 2, 1)
        old = old + 0


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_min_max_sub_and_old_values(dtype):
    rng = np.random.default_rng(7)
    values = (rng.standard_normal(100_000) * 1000).astype(dtype)
    lo = tack.array(np.array([values[0]], dtype=dtype))
    hi = tack.array(np.array([values[0]], dtype=dtype))
    total = tack.zeros(1, dtype=tack.f64 if dtype in (np.float32, np.float64)
                       else tack.i64)
    olds = tack.zeros(2, dtype=tack.i64)
    minmax(tack.array(values), lo, hi, total, olds)
    assert lo.numpy()[0] == values.min()
    assert hi.numpy()[0] == values.max()
    np.testing.assert_allclose(total.numpy()[0], -values.astype(np.float64).sum(),
                               rtol=1e-9)
    assert olds.numpy().tolist() == [50_000, 50_000]


@tack.kernel
def old_values(a, out):
    for i in range(out.shape[0]):
        out[i] = tack.atomic_add(a, i, 1.5)


def test_returns_the_old_value_and_matches_python():
    a = np.arange(6, dtype=np.float32).reshape(6)
    out = np.zeros(6, dtype=np.float64)
    check_both(old_values, a, out)


@tack.kernel
def two_d(h, n):
    for i in range(n):
        tack.atomic_add(h, i % 3, i % 2, 2)


def test_one_index_per_axis():
    h = np.zeros((3, 2), dtype=np.int64)
    check_both(two_d, h, 60)


def test_wrong_dtype_or_use_is_a_kernel_error():
    @tack.kernel
    def on_int8(h):
        for i in range(h.shape[0]):
            tack.atomic_add(h, i, 1)

    with pytest.raises(tack.KernelError, match="int32"):
        on_int8(tack.zeros(4, dtype=tack.i8))

    def inside_expression(h, out):
        for i in range(h.shape[0]):
            out[i] = tack.atomic_add(h, i, 1) + 1

    with pytest.raises(tack.KernelError, match="statement"):
        tack.kernel(inside_expression)

    @tack.kernel
    def wrong_rank(h):
        tack.atomic_add(h, 0, 1)

    with pytest.raises(tack.KernelError, match="indexed with 1"):
        wrong_rank(tack.zeros((2, 2), dtype=tack.i32))


def test_atomics_on_a_read_only_array_are_refused():
    ro = read_only(4, np.int32)

    @tack.kernel
    def bump(h):
        for i in range(h.shape[0]):
            tack.atomic_add(h, i, 1)

    with pytest.raises(ValueError, match="'h'"):
        bump(ro)


def test_debug_mode_checks_atomic_indices():
    @tack.kernel(debug=True)
    def past_end(h, n):
        for i in range(n):
            tack.atomic_add(h, i, 1)

    h = tack.zeros(4, dtype=tack.i32)
    with pytest.raises(IndexError):
        past_end(h, 5)
