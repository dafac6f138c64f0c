"""The DLPack C exchange API: Tack's table, driven from C by the counting producer,
and Tack as a consumer of other types' tables (the counting producer's Exchanger,
and PyTorch where installed)."""

import ctypes

import numpy as np
import pytest

import tack

READ_ONLY = 1


def capsule_pointer(capsule, name):
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get(capsule, name)


def test_both_attributes_name_one_static_table():
    capsule = tack.Array.__dlpack_c_exchange_api__
    assert type(capsule).__name__ == "PyCapsule"
    assert '"dlpack_exchange_api"' in repr(capsule)
    address = tack.Array.__c_dlpack_exchange_api__
    assert isinstance(address, int)
    assert capsule_pointer(capsule, b"dlpack_exchange_api") == address
    a = tack.zeros(2)
    assert type(a).__dlpack_c_exchange_api__ is capsule
    # major 1, minor 3, no older table chained
    major, minor = (ctypes.c_uint32 * 2).from_address(address)
    assert (major, minor) == (1, 3)
    assert ctypes.c_void_p.from_address(address + 8).value is None


def test_from_py_object_exports_an_owning_versioned_tensor(cp):
    a = tack.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    info = cp.exchange_export(a)
    assert info["version"] == (1, 3)
    assert info["data"] == a.ptr
    assert info["shape"] == (2, 3) and info["strides"] == (3, 1)
    assert info["flags"] == 0
    ro = tack.from_dlpack(_read_only(np.arange(3.0)))
    assert cp.exchange_export(ro)["flags"] == READ_ONLY


def _read_only(x):
    x.flags.writeable = False
    return x


def test_dltensor_from_py_object_borrows(cp):
    a = tack.zeros((4, 2), dtype=tack.vec3)
    info = cp.exchange_view(a)
    assert info["data"] == a.ptr
    assert info["shape"] == (4, 2, 3)
    assert info["strides"] == (6, 3, 1)
    assert info["dtype"] == (2, 32, 1)


def test_to_py_object_wraps_as_a_tack_array(cp):
    a = tack.array(np.arange(5, dtype=np.int64))
    b = cp.exchange_roundtrip(a)
    assert isinstance(b, tack.Array)
    assert b.ptr == a.ptr and b.numpy().tolist() == [0, 1, 2, 3, 4]
    made, deleted = cp.counts()
    c = cp.exchange_to_py(a, cp.make((4,)))
    assert isinstance(c, tack.Array) and c.numpy().tolist() == [0, 1, 2, 3]
    del c
    assert cp.counts() == (made + 1, deleted + 1)
    # a tensor Tack refuses is still released (ownership was stolen)
    with pytest.raises(tack.DLPackTypeError):
        cp.exchange_to_py(a, cp.make((4,), code=5, bits=64))
    assert cp.counts() == (made + 2, deleted + 2)


def test_allocator(cp):
    a = tack.zeros(1)
    info = cp.exchange_allocate(a, (3, 2), 0, 16, 1)
    assert info["shape"] == (3, 2) and info["dtype"] == (0, 16, 1)
    assert info["strides"] == (2, 1) and info["flags"] == 0
    assert cp.exchange_allocate(a, (3,), 5, 64, 1).startswith("TypeError:")
    assert cp.exchange_allocate(a, (3,), 2, 32, 8).startswith("ValueError:")
    assert cp.exchange_allocate(a, (3,), 2, 32, 2).startswith("RuntimeError:")


def test_current_work_stream_is_null_on_the_cpu(cp):
    assert cp.exchange_stream(tack.zeros(1)) == 0


def test_tack_consumes_its_own_table():
    a = tack.array(np.arange(4, dtype=np.float32))
    b = tack.from_dlpack(a)
    assert b.ptr == a.ptr and b.writable
    ro = tack.from_dlpack(_read_only(np.arange(3.0)))
    assert not tack.from_dlpack(ro).writable
    c = tack.from_dlpack(a, copy=True)
    assert c.ptr != a.ptr
    a[0] = 9
    assert b[0] == 9 and c[0] == 0


@pytest.mark.parametrize("mode,via_table", [
    ("v13", True), ("chain", True), ("int12", True), ("v9", False), ("none", False),
])
def test_tack_uses_a_producer_table_when_it_can(cp, mode, via_table):
    cp.set_exchange_mode(mode)
    try:
        made, deleted = cp.counts()
        table0, dunder0 = cp.exchanger_calls()
        for _ in range(3):  # the per-type cache must follow mode changes
            a = tack.from_dlpack(cp.Exchanger(6))
            assert a.numpy().tolist() == [0, 1, 2, 3, 4, 5]
            del a
        table, dunder = cp.exchanger_calls()
        assert (table - table0, dunder - dunder0) == ((3, 0) if via_table else (0, 3))
        assert cp.counts() == (made + 3, deleted + 3)
    finally:
        cp.set_exchange_mode("none")


def test_torch_both_directions():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32)
    a = tack.from_dlpack(t)
    assert a.numpy().tolist() == list(range(6))
    a[0] = 42
    assert t[0].item() == 42
    back = torch.from_dlpack(tack.array(np.arange(3, dtype=np.int32)))
    assert back.tolist() == [0, 1, 2]


def test_array_type_is_immutable_with_its_exchange_attributes():
    # The attributes were set before the type was frozen, never written into an
    # immutable type's dict; afterwards nobody can change them.
    with pytest.raises(TypeError):
        tack.Array.__c_dlpack_exchange_api__ = 1
    with pytest.raises(TypeError):
        tack.Array.__dlpack_c_exchange_api__ = None
    assert isinstance(tack.Array.__c_dlpack_exchange_api__, int)
