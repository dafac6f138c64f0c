"""Smaller parts of the API contract: iteration, pickling and copying of dtypes and
devices, contradictory device arguments, keywords, dtype comparisons."""

import copy
import pickle

import numpy as np
import pytest

import tack


def test_one_dimensional_arrays_iterate_over_their_elements():
    assert list(tack.array([1.5, 2.5, -1.0])) == [1.5, 2.5, -1.0]
    assert [p for p in tack.full(2, 1.0, tack.vec2)] == [(1.0, 1.0), (1.0, 1.0)]
    assert list(tack.zeros(0)) == []
    with pytest.raises(TypeError):
        list(tack.zeros((2, 2)))


@pytest.mark.parametrize("dt", [tack.float32, tack.int8, tack.vec3, tack.bool])
def test_dtypes_pickle_and_copy_to_the_same_singleton(dt):
    assert pickle.loads(pickle.dumps(dt)) is dt
    assert copy.copy(dt) is dt and copy.deepcopy(dt) is dt


def test_devices_pickle_and_copy():
    d = tack.device("cpu")
    assert pickle.loads(pickle.dumps(d)) == d
    assert copy.deepcopy(d) == d


def test_contradictory_device_arguments_are_refused():
    with pytest.raises(ValueError):
        tack.device("cpu:0", 1)
    with pytest.raises(ValueError):
        tack.device(tack.device("cpu"), 1)
    assert tack.device("cpu:0", 0) == tack.device("cpu")
    assert tack.device(tack.device("cpu"), 0) == tack.device("cpu")


def test_to_device_takes_keywords_and_reshape_needs_a_shape():
    a = tack.array(np.arange(3.0))
    b = a.to_device(device="cpu")
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    with pytest.raises(ValueError):
        a.to_device("cpu", stream=1)
    with pytest.raises(TypeError):
        a.reshape()


def test_dtype_string_comparisons_agree_with_dtype_arguments():
    assert tack.float32 == "float32" and tack.float32 == "f32" and tack.float32 == "f4"
    assert tack.empty(1, dtype="f4").dtype == "f4"
    assert tack.float32 != "float64" and tack.float32 != "not a dtype"
    # A string NumPy understands means what NumPy means: "i8" is 8 bytes.
    assert tack.int64 == "i8" and tack.empty(1, dtype="i8").dtype is tack.int64
