"""NumPy and JAX read a Tack array's element type through __numpy_dtype__.

NumPy 2.4 no longer follows a .dtype attribute that is not itself a numpy.dtype, so
a Tack array (whose .dtype is a tack.dtype) answers __numpy_dtype__, which
np.dtype(), np.result_type, np.can_cast and JAX's dtype lookup read first.
"""

from __future__ import annotations

import numpy as np
import pytest

import tack

jax = pytest.importorskip("jax")  # the GPU check's environment has no JAX
jnp = pytest.importorskip("jax.numpy")

SCALARS = [
    (tack.bool, np.bool_),
    (tack.int8, np.int8),
    (tack.uint16, np.uint16),
    (tack.int32, np.int32),
    (tack.uint64, np.uint64),
    (tack.float16, np.float16),
    (tack.float32, np.float32),
    (tack.float64, np.float64),
]


@pytest.mark.parametrize(("td", "nd"), SCALARS)
def test_dtypes_and_arrays_convert_to_the_numpy_dtype(td, nd):
    t = tack.zeros(3, dtype=td)
    assert np.dtype(td) == nd and np.dtype(t) == nd
    assert td.__numpy_dtype__ == nd and t.__numpy_dtype__ == nd
    assert np.result_type(t) == nd and np.result_type(td) == nd


def test_numpy_promotes_and_casts_tack_arrays():
    t = tack.zeros(3, dtype=tack.int16)
    assert np.result_type(t, np.float32) == np.float32
    assert np.result_type(t, tack.zeros(1, dtype=tack.uint16)) == np.int32
    assert np.can_cast(t, np.int32) and not np.can_cast(t, np.int8)
    assert np.can_cast(np.int8, t) and not np.can_cast(np.float64, t)


def test_vec_dtypes_are_subarrays_and_vec_arrays_are_float32():
    # As NumPy itself: a subarray dtype becomes a trailing dimension of an array.
    assert np.dtype(tack.vec3) == np.dtype((np.float32, (3,)))
    t = tack.zeros(2, dtype=tack.vec3)
    assert np.dtype(t) == np.float32 == np.asarray(t).dtype
    assert jnp.asarray(t).shape == (2, 3)


def test_jax_builds_arrays_from_tack_arrays():
    t = tack.array(np.arange(6, dtype=np.int32).reshape(2, 3))
    for make in (jnp.asarray, jnp.array):
        j = make(t)
        assert j.dtype == jnp.int32 and j.shape == (2, 3)
        assert (np.asarray(j) == np.arange(6).reshape(2, 3)).all()
    assert jnp.asarray(tack.zeros(2, dtype=tack.float16)).dtype == jnp.float16


def test_jax_transformations_take_the_array_jnp_from_dlpack_gives():
    # jax.jit and jax.device_put accept only JAX's own types; from_dlpack shares.
    t = tack.array(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match="not a valid JAX type"):
        jax.jit(lambda x: x * 2)(t)
    doubled = jax.jit(lambda x: x * 2)(jnp.from_dlpack(t))
    assert (np.asarray(doubled) == np.arange(4) * 2).all()
    assert (np.asarray(jax.device_put(jnp.from_dlpack(t))) == np.arange(4)).all()
