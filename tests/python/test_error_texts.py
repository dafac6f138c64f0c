"""Refusals that name what was given: values that do not fit, NULs in names, bytes
as shapes and objects of the wrong kind."""

from __future__ import annotations

import numpy as np
import pytest

import tack
from tack.interop.vtk import vtk_to_array


@pytest.mark.parametrize("name", ["f4\0junk", "float32\0", "\0f4"])
def test_a_nul_inside_a_dtype_string_is_refused(name):
    with pytest.raises(TypeError, match="NUL"):
        tack.zeros(2, dtype=name)
    with pytest.raises(TypeError, match="NUL"):
        tack.array_from_ptr(np.zeros(2, np.float32), 2, name)


def test_dl_device_beyond_32_bits_is_refused_with_the_values_given():
    with pytest.raises(BufferError, match=r"\(1, 1099511627776\)"):
        tack.zeros(3).__dlpack__(dl_device=(1, 2**40))
    # Past 64 bits an entry is no int a C consumer could pass: TypeError, as for
    # max_version.
    with pytest.raises(TypeError, match=str(2**70)):
        tack.zeros(3).__dlpack__(dl_device=(2**70, 0))


@pytest.mark.parametrize("mv", [(2**70, 0), (1, -(2**70))])
def test_max_version_beyond_64_bits_is_a_type_error_naming_it(mv):
    with pytest.raises(TypeError, match=str(abs(max(mv, key=abs)))):
        tack.zeros(3).__dlpack__(max_version=mv)


@pytest.mark.parametrize("shape", [b"ab", bytearray(b"ab"), "ab"])
def test_bytes_and_str_are_not_shapes(shape):
    with pytest.raises(TypeError, match=type(shape).__name__):
        tack.zeros(shape)
    with pytest.raises(TypeError, match=type(shape).__name__):
        tack.empty(shape, dtype=tack.u8)


def test_the_cai_shape_limit_in_the_message_is_the_code_s():
    class Producer:
        __cuda_array_interface__ = {
            "version": 3,
            "shape": (1,) * 65,
            "typestr": "<f4",
            "data": (4096, False),
        }

    with pytest.raises(ValueError, match="at most 64 ints"):
        tack.from_dlpack(Producer())


@pytest.mark.parametrize("obj", [np.zeros(3), [1.0, 2.0], 3])
def test_vtk_to_array_says_it_wants_a_vtk_array(obj):
    with pytest.raises(TypeError, match="VTK data array") as info:
        vtk_to_array(obj)
    assert "non-numeric" not in str(info.value)
    assert type(obj).__name__ in str(info.value)


def test_vtk_to_array_of_a_numpy_array_names_the_ways_in():
    with pytest.raises(TypeError, match=r"tack\.array\(x\).*tack\.from_dlpack\(x\)"):
        vtk_to_array(np.zeros(3))
