"""tack.array_from_ptr: raw addresses (the caller keeps the memory alive) and objects
exposing their memory (Tack holds their buffer while any array over it lives)."""

import gc
import weakref

import numpy as np
import pytest

import tack


def test_int_address_is_borrowed_and_read_only_by_default():
    x = np.arange(8, dtype=np.float32)
    a = tack.array_from_ptr(x.ctypes.data, (8,), tack.f32)
    assert a.ptr == x.ctypes.data and not a.writable
    x[3] = -1
    assert a[3] == -1.0
    with pytest.raises(RuntimeError):
        a.fill(0)
    w = tack.array_from_ptr(x.ctypes.data, (2, 4), tack.f32, writable=True)
    w[1, 3] = 5
    assert x[7] == 5


@pytest.mark.parametrize("call", [
    lambda p: tack.array_from_ptr(p, (2, 3), tack.f64),
    lambda p: tack.array_from_ptr(p, tack.f64, (2, 3)),
    lambda p: tack.array_from_ptr(p, "float64", [2, 3]),
    lambda p: tack.array_from_ptr(p, np.float64, (2, 3)),
    lambda p: tack.array_from_ptr(p, np.dtype("f8"), (2, 3), False),
    lambda p: tack.array_from_ptr(p, shape=(2, 3), dtype=tack.f64),
    lambda p: tack.array_from_ptr(ptr=p, dtype="f8", shape=(2, 3)),
    lambda p: tack.array_from_ptr(p, tack.f64, shape=(2, 3)),
    lambda p: tack.array_from_ptr(p, (2, 3), dtype=tack.f64),
])
def test_shape_and_dtype_in_either_order(call):
    x = np.arange(6, dtype=np.float64)
    a = call(x.ctypes.data)
    assert a.shape == (2, 3) and a.dtype == tack.f64
    assert a.numpy().ravel().tolist() == list(range(6))


def test_argument_errors():
    x = np.zeros(4)
    with pytest.raises(TypeError):
        tack.array_from_ptr(x.ctypes.data, (4,))
    with pytest.raises(TypeError):
        tack.array_from_ptr(x.ctypes.data, (4,), tack.f64, dtype=tack.f64)
    with pytest.raises(TypeError):
        tack.array_from_ptr("address", (4,), tack.f64)
    with pytest.raises(ValueError):
        tack.array_from_ptr(-8, (4,), tack.f64)
    with pytest.raises(ValueError):
        tack.array_from_ptr(0, (4,), tack.f64)  # NULL with elements
    assert tack.array_from_ptr(0, (0,), tack.f64).size == 0
    with pytest.raises(ValueError):
        tack.array_from_ptr(x.ctypes.data + 1, (2,), tack.f64)  # misaligned
    with pytest.raises(ValueError):
        tack.array_from_ptr(x.ctypes.data, (-1,), tack.f64)


def test_numpy_object_is_held_while_arrays_live():
    x = np.arange(10, dtype=np.int32)
    alive = weakref.ref(x)
    a = tack.array_from_ptr(x, (10,), tack.i32, writable=True)
    assert a.ptr == x.ctypes.data and a.writable
    a[0] = 77
    assert x[0] == 77
    v = a.reshape(2, 5)
    del x, a
    gc.collect()
    assert alive() is not None  # the view holds the buffer
    assert v[1, 4] == 9
    del v
    gc.collect()
    assert alive() is None


def test_object_size_and_read_only_are_checked():
    x = np.zeros(4, dtype=np.float32)
    with pytest.raises(ValueError):
        tack.array_from_ptr(x, (5,), tack.f32)  # 20 bytes > 16
    assert tack.array_from_ptr(x, (2,), tack.f64).shape == (2,)  # reinterpretation
    x.flags.writeable = False
    assert not tack.array_from_ptr(x, (4,), tack.f32).writable
    with pytest.raises(ValueError):
        tack.array_from_ptr(x, (4,), tack.f32, writable=True)
    with pytest.raises(ValueError):
        tack.array_from_ptr(b"\x00" * 16, (4,), tack.f32, writable=True)
    with pytest.raises(ValueError):
        tack.array_from_ptr(np.zeros((4, 4))[:, ::2], (8,), tack.f64)  # not contiguous


def test_any_buffer_exporter():
    ba = bytearray(16)
    a = tack.array_from_ptr(ba, (4,), tack.u32, writable=True)
    a.fill(0x01020304)
    assert ba[:4] == bytes([4, 3, 2, 1])
    m = memoryview(bytearray(8))
    b = tack.array_from_ptr(m, (8,), tack.u8, writable=True)
    b[7] = 255
    assert m[7] == 255
    ro = tack.array_from_ptr(b"abcd", (4,), tack.u8)
    assert ro.numpy().tobytes() == b"abcd"


def test_vtk_array():
    vtk = pytest.importorskip("vtkmodules.vtkCommonCore")
    arr = vtk.vtkFloatArray()
    arr.SetNumberOfComponents(3)
    arr.SetNumberOfTuples(4)
    arr.Fill(2.0)
    a = tack.array_from_ptr(arr, (4,), tack.vec3, writable=True)
    assert a.shape == (4,)
    a[1] = (1.0, 2.0, 3.0)
    assert arr.GetTuple3(1) == (1.0, 2.0, 3.0)
    view = tack.array_from_ptr(arr, (12,), tack.f32)
    assert view.numpy().tolist()[:3] == [2.0, 2.0, 2.0]


def test_dlpack_export_of_a_wrapped_pointer():
    x = np.arange(4, dtype=np.float64)
    a = tack.array_from_ptr(x, (4,), tack.f64, writable=True)
    n = np.from_dlpack(a)
    n[2] = 100
    assert x[2] == 100
    ro = tack.array_from_ptr(x, (4,), tack.f64)
    with pytest.raises(BufferError):
        ro.__dlpack__()
