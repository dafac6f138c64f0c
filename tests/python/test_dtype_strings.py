"""Dtype strings: one rule, in the runtime, for Python and C hosts alike. A string
NumPy understands means what NumPy means (checked here against NumPy itself) or is
refused; Tack's own names and the short aliases NumPy has no meaning for stay."""

import warnings

import numpy as np
import pytest

import tack

TACK_SCALARS = {
    np.dtype(t).str: getattr(tack, t)
    for t in ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "float16", "float32", "float64"]
}

NUMPY_STRINGS = sorted(
    set(np.sctypeDict)
    | {f"{order}{kind}{size}" for order in ("", "<", ">", "=", "|")
       for kind in "biufc" for size in (1, 2, 4, 8, 12, 16)}
    | set("?bBhHiIlLqQpPefdgFDGOSUVaMm")
    | {"<f", "=d", "|b", ">i1"}
)


def numpy_reading(s):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return np.dtype(s).str
        except TypeError:
            return None


@pytest.mark.parametrize("s", NUMPY_STRINGS)
def test_a_string_means_what_numpy_means_or_is_refused(s):
    want = TACK_SCALARS.get(numpy_reading(s))
    if want is None:
        if numpy_reading(s) is not None:  # NumPy has it, Tack does not
            with pytest.raises(TypeError):
                tack.empty(1, dtype=s)
        return
    assert tack.empty(1, dtype=s).dtype is want


@pytest.mark.parametrize("s,want", [
    ("i8", tack.int64), ("u8", tack.uint64), ("i4", tack.int32), ("u1", tack.uint8),
    ("float", tack.float64), ("int", tack.int64), ("bool", tack.bool),
    ("f4", tack.float32), ("f2", tack.float16), ("<f8", tack.float64),
    ("double", tack.float64), ("uintp", tack.uint64),
])
def test_numpy_spellings_people_write(s, want):
    assert tack.empty(1, dtype=s).dtype is want
    assert tack.array([1], dtype=s).dtype is want


@pytest.mark.parametrize("s", ["f16", "float128", "longdouble", "c8", "complex",
                               ">f8", "object", "S", "not a dtype", "", "i16x"])
def test_strings_tack_cannot_honour_are_refused(s):
    with pytest.raises(TypeError) as e:
        tack.empty(1, dtype=s)
    assert isinstance(e.value, tack.TackError)
    with pytest.raises(TypeError):
        tack.array_from_ptr(0, (0,), s)


@pytest.mark.parametrize("s,want", [
    ("float32", tack.float32), ("f32", tack.float32), ("f64", tack.float64),
    ("i16", tack.int16), ("i32", tack.int32), ("i64", tack.int64),
    ("u16", tack.uint16), ("u32", tack.uint32), ("u64", tack.uint64),
    ("vec3", tack.vec3), ("b1", tack.bool),
])
def test_tack_names_and_aliases_stay(s, want):
    assert tack.empty(1, dtype=s).dtype is want


def test_dtype_objects_and_numpy_types_follow_the_same_rule():
    assert tack.empty(1, dtype=tack.f32).dtype is tack.float32
    assert tack.empty(1, dtype=np.float64).dtype is tack.float64
    assert tack.empty(1, dtype=float).dtype is tack.float64
    assert tack.empty(1, dtype=int).dtype is tack.int64
    assert tack.empty(1, dtype=np.dtype("u8")).dtype is tack.uint64
    with pytest.raises(TypeError):
        tack.empty(1, dtype=np.longdouble)
    with pytest.raises(TypeError):
        tack.empty(1, dtype=np.dtype(">f8"))
