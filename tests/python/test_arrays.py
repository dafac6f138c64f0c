"""Arrays on the CPU: creation, attributes, copies in and out, views, writes."""

import gc
import sys

import numpy as np
import pytest

import tack

ALL_SCALAR = [
    (tack.bool, np.bool_),
    (tack.int8, np.int8),
    (tack.int16, np.int16),
    (tack.int32, np.int32),
    (tack.int64, np.int64),
    (tack.uint8, np.uint8),
    (tack.uint16, np.uint16),
    (tack.uint32, np.uint32),
    (tack.uint64, np.uint64),
    (tack.float16, np.float16),
    (tack.float32, np.float32),
    (tack.float64, np.float64),
]


def test_guide_numpy_independent_array():
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    data = tack.array(host)
    host[:] = -1
    np.testing.assert_array_equal(data.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    tack.copyto(data, host)
    np.testing.assert_array_equal(np.asarray(data), host)


@pytest.mark.parametrize("tdt,ndt", ALL_SCALAR)
def test_round_trip_every_scalar_dtype(tdt, ndt):
    host = (np.arange(24) % 7).astype(ndt).reshape(2, 3, 4)
    a = tack.array(host)
    assert a.dtype == tdt
    assert a.shape == (2, 3, 4) and a.ndim == 3 and a.size == 24
    assert a.nbytes == host.nbytes
    out = a.numpy()
    assert out.dtype == ndt
    np.testing.assert_array_equal(out, host)


def test_attributes_and_repr():
    a = tack.empty((2, 5), dtype=tack.f64)
    assert a.shape == (2, 5)
    assert a.dtype is tack.float64 and tack.f64 is tack.float64
    assert a.device == tack.device("cpu")
    assert a.writable is True
    assert "float64" in repr(a) and "(2, 5)" in repr(a)
    assert len(a) == 2


def test_default_dtype_is_float32():
    assert tack.empty(3).dtype is tack.float32
    assert tack.zeros(3).dtype is tack.float32
    assert tack.full(3, 1).dtype is tack.float32


def test_zeros_and_full():
    zeros = tack.zeros((2, 2), dtype=tack.i32)
    np.testing.assert_array_equal(zeros.numpy(), np.zeros((2, 2), np.int32))
    np.testing.assert_array_equal(tack.full(4, 2.5, dtype=tack.f64).numpy(), np.full(4, 2.5))
    np.testing.assert_array_equal(tack.full((2,), 7, tack.u8).numpy(), np.array([7, 7], np.uint8))


def test_zero_size_and_zero_dim_arrays():
    z = tack.zeros((0, 3))
    assert z.size == 0 and z.numpy().shape == (0, 3)
    s = tack.full((), 4.0)
    assert s.shape == () and s.size == 1
    assert s.numpy() == 4.0
    assert s[()] == 4.0


def test_dtype_arguments_accept_names_and_numpy_types():
    assert tack.empty(1, dtype="float64").dtype is tack.float64
    assert tack.empty(1, dtype="i16").dtype is tack.int16
    assert tack.empty(1, dtype=np.uint32).dtype is tack.uint32
    assert tack.empty(1, dtype=np.dtype("f2")).dtype is tack.float16
    assert tack.empty(1, dtype=float).dtype is tack.float64
    assert tack.float32 == "float32" and tack.float32 != "float64"


def test_array_converts_dtype_on_copy():
    a = tack.array([1.7, -2.2, 300.0], dtype=tack.int16)
    np.testing.assert_array_equal(a.numpy(), np.array([1, -2, 300], np.int16))
    b = tack.array(a, dtype=tack.f32)
    np.testing.assert_array_equal(b.numpy(), np.array([1, -2, 300], np.float32))


def test_array_from_python_lists_and_non_contiguous_numpy():
    a = tack.array([[1, 2], [3, 4]])
    assert a.dtype is tack.int64 and a.shape == (2, 2)
    host = np.arange(12.0).reshape(3, 4)[:, ::2]
    b = tack.array(host)
    np.testing.assert_array_equal(b.numpy(), host)


def test_numpy_and_asarray_are_independent_copies():
    a = tack.array(np.arange(4, dtype=np.float32))
    n = a.numpy()
    n[:] = 9
    np.testing.assert_array_equal(a.numpy(), np.arange(4, dtype=np.float32))
    m = np.asarray(a)
    m[:] = 9
    np.testing.assert_array_equal(a.numpy(), np.arange(4, dtype=np.float32))
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError):
        np.asarray(a, copy=False)


def test_reshape_is_a_view_and_checks_counts():
    a = tack.zeros(12, dtype=tack.i32)
    b = a.reshape(3, 4)
    c = a.reshape((2, -1))
    assert b.shape == (3, 4) and c.shape == (2, 6)
    b.fill(5)
    np.testing.assert_array_equal(a.numpy(), np.full(12, 5, np.int32))
    assert b.ptr == a.ptr
    with pytest.raises(ValueError):
        a.reshape(5, 2)
    with pytest.raises(ValueError):
        a.reshape(-1, -1)
    np.testing.assert_array_equal(a.numpy(), np.full(12, 5, np.int32))


def test_view_keeps_memory_alive():
    a = tack.array(np.arange(6, dtype=np.float32))
    v = a.reshape(2, 3)
    del a
    gc.collect()
    np.testing.assert_array_equal(v.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_fill_converts_and_checks_range():
    a = tack.zeros(3, dtype=tack.i8)
    a.fill(-5)
    np.testing.assert_array_equal(a.numpy(), [-5, -5, -5])
    a.fill(2.9)
    np.testing.assert_array_equal(a.numpy(), [2, 2, 2])
    with pytest.raises(OverflowError):
        a.fill(300)
    with pytest.raises(OverflowError):
        tack.zeros(2, dtype=tack.u16).fill(-1)
    with pytest.raises(TypeError):
        a.fill("x")
    np.testing.assert_array_equal(a.numpy(), [2, 2, 2])
    big = tack.zeros(1, dtype=tack.u64)
    big.fill(2**64 - 1)
    assert big[0] == 2**64 - 1


def test_vec_dtypes():
    p = tack.zeros(4, dtype=tack.vec3)
    assert p.nbytes == 48 and p.dtype.itemsize == 12 and p.dtype.ncomponents == 3
    p.fill((1.0, 2.0, 3.0))
    np.testing.assert_array_equal(p.numpy(), np.tile([1.0, 2.0, 3.0], (4, 1)).astype(np.float32))
    p[2] = (7, 8, 9)
    assert p[2] == (7.0, 8.0, 9.0)
    q = tack.array(np.arange(8, dtype=np.float32).reshape(4, 2), dtype=tack.vec2)
    assert q.shape == (4,)
    np.testing.assert_array_equal(q.numpy(), np.arange(8, dtype=np.float32).reshape(4, 2))
    with pytest.raises(ValueError):
        tack.array(np.zeros((4, 3), np.float32), dtype=tack.vec2)
    with pytest.raises(ValueError):
        p[0] = (1.0, 2.0)


def test_element_access():
    a = tack.array(np.arange(12, dtype=np.int32).reshape(3, 4))
    assert a[1, 2] == 6 and a[-1, -1] == 11
    a[0, 0] = 42
    assert a.numpy()[0, 0] == 42
    with pytest.raises(IndexError):
        a[3, 0]
    with pytest.raises(IndexError):
        a[0]
    with pytest.raises(IndexError):
        a[0:2, 1]


def test_copyto_converts_checks_shapes_and_broadcasts_scalars():
    dst = tack.zeros((2, 3), dtype=tack.f32)
    tack.copyto(dst, np.arange(6, dtype=np.int64).reshape(2, 3))
    np.testing.assert_array_equal(dst.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    src = tack.array(np.ones((2, 3), dtype=np.float64))
    tack.copyto(dst, src)
    np.testing.assert_array_equal(dst.numpy(), np.ones((2, 3), np.float32))
    tack.copyto(dst, 3)
    np.testing.assert_array_equal(dst.numpy(), np.full((2, 3), 3, np.float32))
    before = dst.numpy()
    with pytest.raises(ValueError):
        tack.copyto(dst, np.zeros((3, 2)))
    with pytest.raises(ValueError):
        tack.copyto(dst, tack.zeros(6))
    with pytest.raises(TypeError):
        tack.copyto(np.zeros(3), dst)
    np.testing.assert_array_equal(dst.numpy(), before)


def test_to_device_copies():
    a = tack.array(np.arange(3.0))
    b = a.to_device("cpu")
    assert b.device == a.device and b.ptr != a.ptr
    np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_export_memory_refused_on_cpu():
    with pytest.raises(RuntimeError):
        tack.zeros(4).export_memory()
    # exportable is accepted for portable code; the export itself is what CPU refuses.
    e = tack.empty(4, exportable=True)
    with pytest.raises(RuntimeError):
        e.export_memory()


def test_bad_shapes():
    with pytest.raises(ValueError):
        tack.empty(-1)
    with pytest.raises(ValueError):
        tack.empty((3, -2))
    with pytest.raises(ValueError):
        tack.empty((2**62, 2**62))
    with pytest.raises(ValueError):
        tack.empty(2**70)
    with pytest.raises(ValueError):
        tack.empty((1,) * (tack.MAX_NDIM + 1))
    with pytest.raises(TypeError):
        tack.empty("abc")
    with pytest.raises(TypeError):
        tack.empty((2.5,))
    assert tack.empty((1,) * 32).ndim == 32


def test_unknown_dtypes():
    with pytest.raises(TypeError):
        tack.empty(3, dtype="complex64")
    with pytest.raises(TypeError):
        tack.empty(3, dtype=np.complex128)
    with pytest.raises(TypeError):
        tack.array(np.array(["a", "b"]))


def test_arguments_are_checked():
    with pytest.raises(TypeError):
        tack.empty()
    with pytest.raises(TypeError):
        tack.empty(3, bogus=1)
    with pytest.raises(TypeError):
        tack.empty(3, tack.f32, None, False, 1)


def test_no_reference_leak_in_creation():
    a = tack.zeros(10)
    before = sys.getrefcount(tack.float32)
    for _ in range(1000):
        _ = a.dtype
        tack.zeros(4)
    # A leak would add about a thousand references; allow for interpreter caches.
    assert sys.getrefcount(tack.float32) - before < 5


def test_weakref_and_text_signature():
    import inspect
    import weakref

    a = tack.zeros(2)
    r = weakref.ref(a)
    del a
    assert r() is None
    assert "shape" in str(inspect.signature(tack.empty))
    assert "device" in str(inspect.signature(tack.array))


def test_dtypes_interoperate_with_numpy_dtypes():
    assert np.dtype(tack.float32) == np.float32
    assert tack.float32 == np.dtype("float32") and tack.int8 == np.int8
    assert tack.float32 != np.float64
    assert np.zeros(2, dtype=tack.vec3).shape == (2, 3)
    assert tack.uint16 == "u16" and tack.uint16 != "int16"


def test_exported_memory_is_a_plain_record():
    m = tack.ExportedMemory("cuda", 16, 2 << 20, 7, "posix_fd", b"\0" * 16)
    assert m.size == 16 and m.allocation_size == 2 << 20 and m.handle_type == "posix_fd"
    with pytest.raises(AttributeError):
        m.size = 3
