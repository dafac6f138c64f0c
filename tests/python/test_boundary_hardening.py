"""The boundary between Python and the runtime under hostile or unusual input:
forged exchange-table attributes, address objects that are not ints, address ranges
that wrap past 2**64, and producers whose capsule destructors run Python."""

import ctypes
import gc

import numpy as np
import pytest
from dlpack_ctypes import CAPSULE_DESTRUCTOR, DELETER, DLManagedTensorVersioned, capsule_new

import tack

# ---- a DLPack producer written in Python with ctypes (as ctypes/cffi producers are)


class CtypesProducer:
    """Makes versioned capsules whose deleter and capsule destructor are Python
    functions; counts how often each runs."""

    def __init__(self):
        self.deleted = 0
        self.destructed = 0
        self._keep = []
        self.deleter = DELETER(self._delete)
        self.destructor = CAPSULE_DESTRUCTOR(self._destruct)

    def _delete(self, address):
        self.deleted += 1

    def _destruct(self, capsule):
        # Runs Python (attribute lookups, calls, an int), as real ctypes and cffi
        # producers do in their destructors.
        self.destructed += int(str(len([capsule])))

    def capsule(self, *, data, shape, code=2, bits=32):
        n = len(shape)
        extents = (ctypes.c_int64 * max(n, 1))(*shape)
        mt = DLManagedTensorVersioned()
        mt.major, mt.minor = 1, 3
        mt.deleter = self.deleter
        t = mt.dl_tensor
        t.data = data
        t.device.device_type, t.device.device_id = 1, 0
        t.ndim = n
        t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, 1
        t.shape = extents
        self._keep += [mt, extents]
        return capsule_new(ctypes.addressof(mt), b"dltensor_versioned",
                            self.destructor)


class Wrapper:
    """An object whose __dlpack__ hands out one prepared capsule."""

    def __init__(self, make):
        self.make = make

    def __dlpack__(self, **kwargs):
        return self.make()

    def __dlpack_device__(self):
        return (1, 0)


# ---- forged __c_dlpack_exchange_api__ values never crash -------------------------

FORGED = [0, 1, -1, 8, 4095, 4097, 2**47 + 3, 2**62, 2**63, 2**64 - 8, 2**64,
          2**200, True]


@pytest.mark.parametrize("value", FORGED)
def test_forged_int_exchange_table_falls_back_to_dlpack(value):
    x = np.arange(5, dtype=np.float32)

    class Forged:
        __c_dlpack_exchange_api__ = value

        def __dlpack__(self, **kwargs):
            return x.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return (1, 0)

    a = tack.from_dlpack(Forged())
    assert a.ptr == x.ctypes.data and a.numpy().tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("value", [0, 1, -1, 8])
def test_forged_int_exchange_table_without_dlpack_is_a_clear_error(value):
    class Forged:
        __c_dlpack_exchange_api__ = value

    with pytest.raises(AttributeError, match="__dlpack__"):
        tack.from_dlpack(Forged())


def test_capsule_exchange_table_of_another_name_is_ignored():
    x = np.arange(3.0)
    bogus = ctypes.pythonapi.PyCapsule_New
    bogus.restype = ctypes.py_object
    bogus.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule = bogus(8, b"not_an_exchange_api", None)

    class Other:
        __dlpack_c_exchange_api__ = capsule

        def __dlpack__(self, **kwargs):
            return x.__dlpack__(**kwargs)

    assert tack.from_dlpack(Other()).numpy().tolist() == [0.0, 1.0, 2.0]


# ---- array_from_ptr: anything with __index__ is an address -----------------------


class Address:
    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


@pytest.mark.parametrize("wrap", [np.uintp, np.int64, np.uint64, Address])
def test_index_objects_are_addresses(wrap):
    x = np.arange(4, dtype=np.float32)
    a = tack.array_from_ptr(wrap(x.ctypes.data), (4,), tack.f32)
    assert a.ptr == x.ctypes.data
    assert a.numpy().tolist() == [0, 1, 2, 3]


def test_buffer_objects_without_index_still_wrap_their_memory():
    x = np.arange(4, dtype=np.float32)
    a = tack.array_from_ptr(x, (4,), tack.f32)
    assert a.ptr == x.ctypes.data
    m = memoryview(bytearray(16))
    assert tack.array_from_ptr(m, (4,), tack.f32).size == 4


# ---- address ranges that wrap past 2**64 are refused -----------------------------


@pytest.mark.parametrize("address,shape", [
    (2**64 - 8, (4,)),          # 16 bytes from 8 below the top
    (2**64 - 64, (9, 1)),       # one element past the end
    (2**64 - 2**61, (2**59,)),  # 2**62 bytes from 2**61 below the top
])
def test_array_from_ptr_refuses_ranges_past_the_address_space(address, shape):
    with pytest.raises(ValueError, match="address space"):
        tack.array_from_ptr(address, shape, tack.f64)


def test_array_from_ptr_accepts_a_range_ending_at_the_top():
    a = tack.array_from_ptr(2**64 - 16, (2,), tack.f64)
    assert a.ptr == 2**64 - 16 and a.nbytes == 16


def test_contiguous_dlpack_import_refuses_ranges_past_the_address_space():
    p = CtypesProducer()
    capsule = p.capsule(data=2**64 - 8, shape=(4,))
    with pytest.raises(tack.DLPackError, match="address space"):
        tack.from_dlpack(capsule)
    assert p.deleted == 1
    del capsule


# ---- a refusal survives a capsule destructor that runs Python --------------------


def test_refusal_survives_a_python_capsule_destructor():
    p = CtypesProducer()
    x = np.zeros(4, dtype=np.complex64)
    source = Wrapper(lambda: p.capsule(data=x.ctypes.data, shape=(4,), code=5, bits=64))
    with pytest.raises(tack.DLPackTypeError):
        tack.from_dlpack(source)
    gc.collect()
    assert p.deleted == 1 and p.destructed == 1


def test_success_with_a_python_capsule_destructor():
    p = CtypesProducer()
    x = np.arange(4, dtype=np.float32)
    source = Wrapper(lambda: p.capsule(data=x.ctypes.data, shape=(4,)))
    a = tack.from_dlpack(source)
    assert a.numpy().tolist() == [0, 1, 2, 3] and p.destructed == 1
    del a
    gc.collect()
    assert p.deleted == 1


# ---- a released memoryview is named for what it is --------------------------------


def test_released_memoryview_is_not_called_non_contiguous():
    m = memoryview(bytearray(16))
    m.release()
    with pytest.raises(ValueError, match="released") as e:
        tack.array_from_ptr(m, (4,), tack.f32)
    assert "C-contiguous" not in str(e.value)
    strided = memoryview(bytearray(32))[::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        tack.array_from_ptr(strided, (4,), tack.f32)
