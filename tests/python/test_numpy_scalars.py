"""NumPy scalars keep their kind: numpy.bool is a bool, NumPy integers and floats keep
their dtype, and complex scalars are refused as Python's complex is (Tack has no
complex dtype, and dropping the imaginary part would be silent corruption)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from kernel_helpers import private_kernel_cache  # noqa: F401  (autouse)

import tack

COMPLEX = [1 + 2j, np.complex64(1 + 2j), np.complex128(1 + 2j), np.clongdouble(1 + 2j)]


@tack.kernel
def store(out, v):
    out[0] = v


@tack.kernel
def store_flag(out, v):
    out[0] = v


@tack.kernel
def store_number(out, v):
    out[0] = v


def test_numpy_bool_is_a_bool_kernel_argument():
    out = tack.zeros(1, dtype=tack.int32)
    store_flag(out, True)
    store_flag(out, np.bool_(False))  # the same specialization as a Python bool
    assert store_flag._nspecializations == 1
    assert out[0] == 0
    store_flag(out, np.bool_(True))
    assert out[0] == 1


def test_numpy_integers_and_floats_keep_their_dtype():
    out = tack.zeros(1, dtype=tack.float64)
    store_number(out, np.int16(3))
    store_number(out, 4)  # NumPy integers are int64 arguments, as Python ints
    assert store_number._nspecializations == 1
    store_number(out, np.float32(0.1))
    assert out[0] == float(np.float32(0.1))
    assert store_number._nspecializations == 2


@pytest.mark.parametrize("z", COMPLEX, ids=lambda z: type(z).__name__)
def test_complex_scalars_are_refused_everywhere(z):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning on the way to a TypeError
        with pytest.raises(TypeError, match=type(z).__name__):
            store(tack.zeros(1, dtype=tack.float64), z)
        with pytest.raises(TypeError, match="complex"):
            tack.full(2, z)
        a = tack.zeros(2, dtype=tack.float32)
        with pytest.raises(TypeError, match="complex"):
            a[0] = z
        with pytest.raises(TypeError, match="complex"):
            a.fill(z)
        with pytest.raises(TypeError, match="complex"):
            tack.zeros(1, dtype=tack.vec2)[0] = (z, 1.0)
    assert a.numpy().tolist() == [0.0, 0.0]


def test_numpy_bool_elements_store_as_bools():
    a = tack.zeros(2, dtype=tack.bool)
    a[1] = np.bool_(True)
    assert a.numpy().tolist() == [False, True]
    assert tack.full(2, np.bool_(True), dtype=tack.int8).numpy().tolist() == [1, 1]
