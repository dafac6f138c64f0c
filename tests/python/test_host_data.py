"""Host data in and out of arrays: shapes of scalars, byte orders, dtypes NumPy has
and Tack has not, broadcasting copies, and rounding of conversions."""

import numpy as np
import pytest

import tack


@pytest.mark.parametrize("value", [3.0, 7, False, np.float64(2.5)])
def test_scalars_make_zero_dim_arrays(value):
    a = tack.array(value)
    assert a.shape == () and a.ndim == 0 and a.size == 1
    assert a.numpy() == np.asarray(value)
    assert tack.array(value, dtype=tack.i32).shape == ()


def test_other_byte_orders_arrive_as_their_values():
    big = np.arange(5, dtype=">i4")
    np.testing.assert_array_equal(tack.array(big).numpy(), np.arange(5, dtype=np.int32))
    np.testing.assert_array_equal(
        tack.array(np.array([1.5, -2.0], dtype=">f8")).numpy(), [1.5, -2.0]
    )


@pytest.mark.parametrize(
    "data", [np.zeros(2, "M8[s]"), np.array(["a", "b"]), np.array([1 + 2j]), [object()]]
)
def test_data_without_a_tack_dtype_is_a_type_error(data):
    with pytest.raises(tack.TackTypeError):
        tack.array(data)


def test_python_ints_beyond_int64_fit_float_dtypes():
    assert tack.full(1, 2**64, tack.f64)[0] == float(2**64)
    assert np.isinf(tack.full(1, 10**40, tack.f32)[0])
    a = tack.zeros(1, dtype=tack.f64)
    a[0] = 2**70
    assert a[0] == float(2**70)
    with pytest.raises(OverflowError):
        a.fill(10**400)  # beyond float64, as float(10**400) is


def test_copyto_broadcasts_like_numpy():
    dst = tack.zeros((2, 3), tack.i32)
    tack.copyto(dst, np.int32(8))
    np.testing.assert_array_equal(dst.numpy(), np.full((2, 3), 8))
    tack.copyto(dst, np.array(7))
    np.testing.assert_array_equal(dst.numpy(), np.full((2, 3), 7))
    tack.copyto(dst, np.array([1, 2, 3]))
    np.testing.assert_array_equal(dst.numpy(), [[1, 2, 3], [1, 2, 3]])
    tack.copyto(dst, [[4], [5]])
    np.testing.assert_array_equal(dst.numpy(), [[4, 4, 4], [5, 5, 5]])
    with pytest.raises(ValueError):
        tack.copyto(dst, np.array([1, 2]))
    np.testing.assert_array_equal(dst.numpy(), [[4, 4, 4], [5, 5, 5]])
    v = tack.zeros(2, tack.vec3)
    tack.copyto(v, np.array([1.0, 2.0, 3.0], np.float32))  # one vec3 for every element
    np.testing.assert_array_equal(v.numpy(), [[1, 2, 3], [1, 2, 3]])


def test_conversions_round_once_as_numpy_does():
    rng = np.random.default_rng(7)
    doubles = np.concatenate([rng.standard_normal(50_000) * 1e3, [1.0 + 2**-11 + 2**-40]])
    np.testing.assert_array_equal(
        tack.array(doubles, dtype=tack.f16).numpy(), doubles.astype(np.float16)
    )
    ints = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 50_000), [2**60 + 2**36 + 1]])
    np.testing.assert_array_equal(
        tack.array(ints, dtype=tack.f32).numpy(), ints.astype(np.float32)
    )
    uints = rng.integers(0, 2**64 - 1, 10_000, dtype=np.uint64)
    np.testing.assert_array_equal(
        tack.array(uints, dtype=tack.f32).numpy(), uints.astype(np.float32)
    )


def test_array_from_ptr_refusals_are_tack_value_errors():
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(tack.TackValueError):
        tack.array_from_ptr(ro, 4, tack.f32, writable=True)
    with pytest.raises(tack.TackValueError):
        tack.array_from_ptr(np.zeros(8, np.float32)[::2], 4, tack.f32)


def test_array_from_ptr_refuses_fortran_order():
    f = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(tack.TackValueError):
        tack.array_from_ptr(f, (2, 3), tack.f32)
    c = np.ascontiguousarray(f)
    np.testing.assert_array_equal(tack.array_from_ptr(c, (2, 3), tack.f32).numpy(), f)
