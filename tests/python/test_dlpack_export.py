"""Array.__dlpack__ and __dlpack_device__: what Tack hands to consumers.

Consumers are real: NumPy 2.x, JAX (CPU) and the counting producer's C consumer,
which reads the managed tensor's fields as any DLPack library would.
"""

import gc
import inspect

import numpy as np
import pytest

import tack

KDLCPU = 1
READ_ONLY = 1
IS_COPIED = 2


def fields(cp, capsule):
    handle = cp.adopt(capsule)
    info = cp.inspect(handle)
    cp.delete_now(handle)
    return info


def test_signature_is_keyword_only():
    sig = inspect.signature(tack.Array.__dlpack__)
    params = list(sig.parameters.values())
    assert [p.name for p in params] == ["self", "stream", "max_version", "dl_device", "copy"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
    assert all(p.default is None for p in params[1:])
    a = tack.zeros(3)
    with pytest.raises(TypeError):
        a.__dlpack__(None)
    with pytest.raises(TypeError):
        a.__dlpack__(strem=None)
    # the array-api-tests fallback: every keyword passed explicitly
    a.__dlpack__(stream=None, max_version=None, dl_device=None, copy=None)


def test_legacy_or_versioned_by_max_version(cp):
    a = tack.zeros((2, 3))
    for mv, name in [
        (None, "dltensor"),
        ((0, 0), "dltensor"),
        ((0, 8), "dltensor"),
        ((1, 0), "dltensor_versioned"),
        ((1, 2), "dltensor_versioned"),
        ((1, 3), "dltensor_versioned"),
        ((1, 7), "dltensor_versioned"),
        ((2, 0), "dltensor_versioned"),
    ]:
        capsule = a.__dlpack__(max_version=mv)
        assert f'"{name}"' in repr(capsule)
        info = fields(cp, capsule)
        if name == "dltensor_versioned":
            # A 1.x consumer is told the version it asked for, up to Tack's own 1.3
            # (the layout is the same); a newer major gets 1.3.
            want = (1, min(mv[1], 3)) if mv[0] == 1 else (1, 3)
            assert info["version"] == want


@pytest.mark.parametrize("make", [
    lambda: tack.array(np.arange(24, dtype=np.int16).reshape(2, 3, 4)),
    lambda: tack.from_dlpack(_read_only_numpy()),
    lambda: tack.zeros((2, 5), dtype=tack.vec3),
    lambda: tack.full((), 1.5, dtype=tack.f64),
])
def test_a_version_alone_exports_what_the_general_request_exports(cp, make):
    # max_version alone (with None or copy=False beside it) takes one runtime call;
    # naming the array's own device takes the general path. Same tensor either way.
    a = make()
    own = a.__dlpack_device__()
    for mv in [(1, 0), (1, 2), (1, 3), (1, 99), (2, 0), (True, 0)]:
        general = fields(cp, a.__dlpack__(max_version=mv, dl_device=own))
        for capsule in [a.__dlpack__(max_version=mv),
                        a.__dlpack__(max_version=mv, copy=False),
                        a.__dlpack__(max_version=mv, copy=None, stream=None, dl_device=None)]:
            assert '"dltensor_versioned"' in repr(capsule)
            assert fields(cp, capsule) == general


def test_every_call_through_one_keyword_tuple_reads_its_own_values(cp):
    # Calls from one line pass the same keyword-names tuple, and whether a call takes
    # the one-call export depends on its values: each call is decided by its own.
    a = tack.array(np.arange(4, dtype=np.float32))
    for copy, flags in [(None, 0), (True, IS_COPIED), (False, 0), (True, IS_COPIED)]:
        info = fields(cp, a.__dlpack__(max_version=(1, 0), copy=copy))
        assert info["flags"] == flags
        assert (info["data"] == a.ptr) == (flags == 0)
        info = fields(cp, a.__dlpack__(copy=copy, max_version=(1, 1)))
        assert info["flags"] == flags and info["version"] == (1, 1)
    for mv in [(1, 0), None, (1, 2)]:
        capsule = a.__dlpack__(max_version=mv, copy=None)
        want = "dltensor" if mv is None else "dltensor_versioned"
        assert f'"{want}"' in repr(capsule)
    with pytest.raises(TypeError):
        a.__dlpack__(max_version=(1, 0), copy=1)
    # Names that are equal strings but not the interned ones still match.
    key = "".join(["max_", "version"])
    capsule = a.__dlpack__(**{key: (1, 0)})
    assert fields(cp, capsule)["version"] == (1, 0)


def test_exports_alive_at_once_each_have_their_own_tensor():
    # An export's block is kept by the array for the next one; exports alive at the
    # same time must not share it.
    a = tack.array(np.arange(6, dtype=np.float64).reshape(2, 3))
    views = [np.from_dlpack(a) for _ in range(4)]
    del views[1]
    views += [np.from_dlpack(a) for _ in range(3)]
    for v in views:
        assert v.shape == (2, 3) and v.strides == (24, 8)
        np.testing.assert_array_equal(v, np.arange(6.0).reshape(2, 3))
    views[0][1, 2] = 42.0
    assert all(v[1, 2] == 42.0 for v in views)
    del a
    gc.collect()
    assert views[-1][1, 2] == 42.0


@pytest.mark.parametrize("bad", [(1,), (1, 0, 0), [1, 0], "1.0", 1, (1.0, 0), (1, None)])
def test_max_version_must_be_a_pair_of_ints(bad):
    with pytest.raises(TypeError):
        tack.zeros(2).__dlpack__(max_version=bad)


def test_layout_of_an_export(cp):
    a = tack.array(np.arange(24, dtype=np.int16).reshape(2, 3, 4))
    info = fields(cp, a.__dlpack__(max_version=(1, 0)))
    assert info["data"] == a.ptr
    assert info["device"] == (KDLCPU, 0)
    assert info["dtype"] == (0, 16, 1)
    assert info["shape"] == (2, 3, 4)
    assert info["strides"] == (12, 4, 1)  # elements, never NULL for ndim > 0
    assert info["byte_offset"] == 0
    assert info["flags"] == 0


def test_vec_dtypes_are_a_trailing_float32_dimension(cp):
    a = tack.zeros(5, dtype=tack.vec3)
    info = fields(cp, a.__dlpack__(max_version=(1, 0)))
    assert info["shape"] == (5, 3)
    assert info["strides"] == (3, 1)
    assert info["dtype"] == (2, 32, 1)
    n = np.from_dlpack(a)
    assert n.shape == (5, 3) and n.dtype == np.float32


def test_zero_size_and_zero_d(cp):
    z = tack.zeros((0, 4))
    info = fields(cp, z.__dlpack__(max_version=(1, 0)))
    assert info["shape"] == (0, 4) and info["strides"] == (4, 1)
    assert np.from_dlpack(z).shape == (0, 4)
    s = tack.full((), 2.5, dtype=tack.f64)
    info = fields(cp, s.__dlpack__(max_version=(1, 0)))
    assert info["ndim"] == 0
    assert np.from_dlpack(s)[()] == 2.5


def test_read_only_array(cp):
    t = tack.from_dlpack(np.arange(4.0).__dlpack__(max_version=(1, 0)))
    ro = tack.from_dlpack(_read_only_numpy())
    assert t.writable and not ro.writable
    info = fields(cp, ro.__dlpack__(max_version=(1, 0)))
    assert info["flags"] == READ_ONLY
    # the legacy ABI cannot say read-only: refused, naming the fix
    with pytest.raises(BufferError) as e:
        ro.__dlpack__()
    assert "max_version" in str(e.value) and "copy=True" in str(e.value)
    assert isinstance(e.value, tack.DLPackExportError)
    # a copy is private and writable, so legacy may carry it
    info = fields(cp, ro.__dlpack__(copy=True))
    assert info["data"] != ro.ptr
    n = np.from_dlpack(ro)
    assert not n.flags.writeable


def _read_only_numpy():
    x = np.arange(6, dtype=np.float32)
    x.flags.writeable = False
    return x


def test_copy_true_exports_a_private_copy(cp):
    a = tack.array(np.arange(4, dtype=np.float32))
    capsule = a.__dlpack__(max_version=(1, 0), copy=True)
    handle = cp.adopt(capsule)
    info = cp.inspect(handle)
    assert info["flags"] == IS_COPIED
    assert info["data"] != a.ptr
    cp.delete_now(handle)
    n = np.from_dlpack(a, copy=True)
    n[0] = 99
    assert a[0] == 0.0
    assert a.__dlpack__(copy=False)  # sharing is fine
    with pytest.raises(TypeError):
        a.__dlpack__(copy=1)


def test_dl_device():
    a = tack.zeros(3)
    a.__dlpack__(dl_device=(KDLCPU, 0))
    a.__dlpack__(dl_device=(KDLCPU, 0), copy=False)
    a.__dlpack__(dl_device=(KDLCPU, 0), copy=True)
    for other in [(2, 0), (1, 1), (10, 0), (8, 0)]:
        with pytest.raises(BufferError):
            a.__dlpack__(dl_device=other)
        with pytest.raises(BufferError):
            a.__dlpack__(dl_device=other, copy=True)
    with pytest.raises(TypeError):
        a.__dlpack__(dl_device="cpu")
    np.from_dlpack(a, device="cpu")


def test_stream_on_the_cpu():
    a = tack.zeros(3)
    a.__dlpack__(stream=None)
    a.__dlpack__(stream=-1)
    for bad in [0, 1, 2, 12345, "default", 1.0]:
        with pytest.raises(BufferError) as e:
            a.__dlpack__(stream=bad)
        assert isinstance(e.value, ValueError)


def test_dlpack_device():
    a = tack.zeros(3)
    dev = a.__dlpack_device__()
    assert dev == (KDLCPU, 0)
    assert all(type(v) is int for v in dev)
    assert inspect.signature(tack.Array.__dlpack_device__)


def test_numpy_shares_tack_memory_both_ways():
    a = tack.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    n = np.from_dlpack(a)
    assert n.ctypes.data == a.ptr and n.flags.writeable
    n[1, 2] = -7
    assert a[1, 2] == -7.0
    a[0, 0] = 5
    assert n[0, 0] == 5.0


def test_numpy_keeps_the_array_alive_after_tack_drops_it():
    a = tack.array(np.arange(100000, dtype=np.float64))
    n = np.from_dlpack(a)
    del a
    gc.collect()
    _ = [tack.zeros(100000, dtype=tack.f64) for _ in range(5)]  # reuse freed memory
    np.testing.assert_array_equal(n, np.arange(100000, dtype=np.float64))


def test_jax_consumes_a_tack_array():
    jnp = pytest.importorskip("jax.numpy")
    a = tack.array(np.arange(8, dtype=np.float32))
    j = jnp.from_dlpack(a)
    np.testing.assert_array_equal(np.asarray(j), np.arange(8, dtype=np.float32))
    for dt in [tack.i32, tack.u8, tack.f64, tack.bool]:
        x = tack.zeros(5, dtype=dt)
        assert np.asarray(jnp.from_dlpack(x)).shape == (5,)


def test_every_dtype_round_trips_through_numpy():
    for name in ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                 "uint32", "uint64", "float16", "float32", "float64"]:
        src = (np.arange(6) % 2).astype(name)
        a = tack.array(src)
        n = np.from_dlpack(a)
        assert n.dtype == np.dtype(name)
        np.testing.assert_array_equal(n, src)
