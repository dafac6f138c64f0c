"""tack.from_dlpack: the seven import steps of docs/dlpack.md, against NumPy, JAX and the counting
producer (which makes every malformed tensor the issue lists and counts deleter
calls: each must be called exactly once, on success and on every refusal)."""

import inspect

import numpy as np
import pytest

import tack

KDLCPU, KDLCUDA, KDLCUDAHOST, KDLOPENCL, KDLMETAL = 1, 2, 3, 4, 8
KDLROCM, KDLROCMHOST, KDLCUDAMANAGED, KDLONEAPI = 10, 11, 13, 14
READ_ONLY = 1


class Balance:
    """Asserts that every tensor the producer made meanwhile was deleted once."""

    def __init__(self, cp):
        self.cp = cp

    def __enter__(self):
        self.made0, self.deleted0 = self.cp.counts()
        return self

    def __exit__(self, *exc):
        made, deleted = self.cp.counts()
        assert made - self.made0 == deleted - self.deleted0, "deleter count"
        return False


def test_signature():
    sig = inspect.signature(tack.from_dlpack)
    assert list(sig.parameters) == ["x", "device", "copy"]
    assert sig.parameters["x"].kind is inspect.Parameter.POSITIONAL_ONLY
    assert sig.parameters["device"].kind is inspect.Parameter.KEYWORD_ONLY
    assert sig.parameters["copy"].default is False
    with pytest.raises(TypeError):
        tack.from_dlpack(np.zeros(2), "cpu")
    with pytest.raises(TypeError):
        tack.from_dlpack(np.zeros(2), copy="yes")


def test_numpy_zero_copy_and_writes_cross():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = tack.from_dlpack(x)
    assert a.shape == (3, 4) and a.dtype == tack.f32 and a.writable
    assert a.ptr == x.ctypes.data
    x[2, 3] = -1
    assert a[2, 3] == -1.0
    a.fill(3.0)
    assert (x == 3.0).all()


def test_numpy_read_only_is_honoured():
    # requires the versioned request: NumPy refuses read-only over legacy
    x = np.arange(4.0)
    x.flags.writeable = False
    a = tack.from_dlpack(x)
    assert not a.writable
    with pytest.raises(RuntimeError):
        a.fill(1.0)
    with pytest.raises(RuntimeError):
        a[0] = 1.0
    with pytest.raises(RuntimeError):
        tack.copyto(a, np.zeros(4))
    assert (x == np.arange(4.0)).all()


def test_views_hold_the_producer(cp):
    with Balance(cp):
        a = tack.from_dlpack(cp.make((12,)))
        v = a.reshape(3, 4)
        made, deleted = cp.counts()
        del a
        assert cp.counts()[1] == deleted  # the view still holds it
        assert v[2, 3] == 11.0
        del v
        assert cp.counts()[1] == deleted + 1


def test_source_may_be_dropped_at_once():
    x = np.arange(1000, dtype=np.int64)
    a = tack.from_dlpack(x)
    del x
    np.testing.assert_array_equal(a.numpy(), np.arange(1000))


def test_bare_capsules_and_consumed_capsules(cp):
    with Balance(cp):
        c = cp.make((4,))
        a = tack.from_dlpack(c)
        assert "used_dltensor_versioned" in repr(c)
        with pytest.raises(ValueError) as e:
            tack.from_dlpack(c)
        assert isinstance(e.value, BufferError)
        del a, c
        c = cp.make((4,), versioned=False)
        a = tack.from_dlpack(c)
        assert "used_dltensor" in repr(c)
        with pytest.raises(tack.DLPackError):
            tack.from_dlpack(c)
        del a, c
    for name in ["used_dltensor", "used_dltensor_versioned"]:
        # a capsule someone already adopted: refused, and Tack calls no deleter
        deleted = cp.counts()[1]
        with pytest.raises(tack.DLPackError):
            tack.from_dlpack(cp.make((4,), name=name))
        assert cp.counts()[1] == deleted
    with pytest.raises(tack.DLPackError):
        tack.from_dlpack(cp.make((4,), name="something_else"))


def test_legacy_imports_writable(cp):
    with Balance(cp):
        a = tack.from_dlpack(cp.make((4,), versioned=False))
        assert a.writable
        a[0] = 5.0
        del a


def test_versioned_read_only_flag(cp):
    with Balance(cp):
        a = tack.from_dlpack(cp.make((4,), flags=READ_ONLY))
        assert not a.writable
        assert a.reshape(2, 2).writable is False
        del a


MALFORMED = [
    # (make kwargs, exception class)
    (dict(shape=(8,), null_data=True), tack.DLPackError),
    (dict(shape=(8,), code=5, bits=64), tack.DLPackTypeError),  # complex64
    (dict(shape=(8,), code=4, bits=16), tack.DLPackTypeError),  # bfloat16
    (dict(shape=(8,), code=2, bits=24), tack.DLPackTypeError),
    (dict(shape=(8,), code=17, bits=4), tack.DLPackTypeError),  # fp4
    (dict(shape=(8,), lanes=4), tack.DLPackTypeError),
    (dict(shape=(8,), ndim=-1), tack.DLPackError),
    (dict(shape=(1,) * 65), tack.DLPackError),
    (dict(shape=(8,), null_shape=True), tack.DLPackError),
    (dict(shape=(4, -2)), tack.DLPackError),
    (dict(shape=(2**62, 2**62)), tack.DLPackError),
    (dict(shape=(2**62, 8), strides=(8, 1)), tack.DLPackError),
    (dict(shape=(8,), byte_offset=2**64 - 4), tack.DLPackError),
    (dict(shape=(8,), major=2), tack.DLPackError),
    (dict(shape=(8,), major=0), tack.DLPackError),
    (dict(shape=(8,), device_type=KDLOPENCL), tack.DLPackError),
    (dict(shape=(8,), device_type=99), tack.DLPackError),
    (dict(shape=(2, 4), strides=(1, 2)), tack.DLPackError),  # non-contiguous
    (dict(shape=(2, 4), strides=(2**62, 1)), tack.DLPackError),  # beyond memory
]


@pytest.mark.parametrize(
    "kwargs,exc,versioned",
    [(k, e, v) for k, e in MALFORMED for v in (True, False) if v or "major" not in k],
)
def test_malformed_tensors_are_refused_and_released_once(cp, kwargs, exc, versioned):
    with Balance(cp):
        with pytest.raises(exc) as e:
            tack.from_dlpack(cp.make(versioned=versioned, **kwargs))
        assert isinstance(e.value, BufferError)  # Array API consumers catch this
        assert isinstance(e.value, tack.TackError)


def test_null_deleter_is_accepted(cp):
    a = tack.from_dlpack(cp.make((4,), null_deleter=True))
    assert a.numpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(tack.DLPackError):
        tack.from_dlpack(cp.make((4,), null_deleter=True, null_data=True))


def test_null_data_with_zero_elements(cp):
    with Balance(cp):
        a = tack.from_dlpack(cp.make((0, 3), null_data=True))
        assert a.shape == (0, 3) and a.size == 0
        assert np.from_dlpack(a).shape == (0, 3)
        del a


def test_null_strides_mean_c_contiguous(cp):
    with Balance(cp):
        a = tack.from_dlpack(cp.make((2, 3), strides=None))
        assert a.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
        del a


def test_size_one_and_zero_size_dimensions(cp):
    with Balance(cp):
        a = tack.from_dlpack(cp.make((1, 4, 1), strides=(123, 1, -9)))
        assert a.numpy().ravel().tolist() == [0, 1, 2, 3]
        b = tack.from_dlpack(cp.make((3, 0, 2), strides=(7, 11, 13)))
        assert b.shape == (3, 0, 2)
        del a, b
    x = np.zeros((5, 1), dtype=np.float32)[:, :]
    assert tack.from_dlpack(x).shape == (5, 1)
    y = np.zeros((4, 3))[::2, :0]  # zero-size view with odd strides
    assert tack.from_dlpack(y).shape == (2, 0)


def test_byte_offset_is_honoured(cp):
    with Balance(cp):
        a = tack.from_dlpack(cp.make((4,), byte_offset=12))
        assert a.numpy().tolist() == [3, 4, 5, 6]
        del a


def test_misaligned_data_copies_only_when_allowed(cp):
    with Balance(cp):
        with pytest.raises(tack.DLPackError):
            tack.from_dlpack(cp.make((4,), byte_offset=2, code=0, bits=32))
        a = tack.from_dlpack(cp.make((4,), byte_offset=4, code=0, bits=64), copy=None)
        assert a.ptr % 8 == 0
        del a


def test_non_contiguous_numpy():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    for view in [x.T, x[:, ::2], x[::-1], x[1:, 1:]]:
        with pytest.raises(tack.DLPackError) as e:
            tack.from_dlpack(view)
        assert isinstance(e.value, ValueError) and isinstance(e.value, BufferError)
        for copy in [True, None]:
            a = tack.from_dlpack(view, copy=copy)
            np.testing.assert_array_equal(a.numpy(), view)
            assert a.writable
            a.fill(0)
            assert x[1, 1] == 5.0  # a copy, independent


def test_copy_true_is_independent_and_contiguous():
    x = np.arange(6, dtype=np.int32)
    a = tack.from_dlpack(x, copy=True)
    assert a.ptr != x.ctypes.data
    x[0] = 100
    assert a[0] == 0
    ro = np.arange(3.0)
    ro.flags.writeable = False
    b = tack.from_dlpack(ro, copy=True)
    assert b.writable


def test_copy_none_shares_when_it_can():
    x = np.arange(6, dtype=np.int32)
    a = tack.from_dlpack(x, copy=None)
    assert a.ptr == x.ctypes.data


def test_copy_true_from_a_legacy_only_producer_is_not_dropped(cp):
    class OldProducer:
        """A pre-1.0 producer: __dlpack__ takes stream only."""

        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, stream=None):
            return self.arr.__dlpack__()

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    x = np.arange(5, dtype=np.float32)
    a = tack.from_dlpack(OldProducer(x), copy=True)
    assert a.ptr != x.ctypes.data
    b = tack.from_dlpack(OldProducer(x))
    assert b.ptr == x.ctypes.data


def test_versioned_request_comes_first():
    seen = []

    class Spy:
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, **kwargs):
            seen.append(kwargs)
            return self.arr.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return (KDLCPU, 0)

    tack.from_dlpack(Spy(np.zeros(3)))
    assert seen[0]["max_version"][0] == 1


def test_objects_without_dlpack():
    with pytest.raises(AttributeError):
        tack.from_dlpack([1, 2, 3])

    class Broken:
        def __dlpack__(self, **kw):
            return 42

    with pytest.raises(TypeError):
        tack.from_dlpack(Broken())


def test_producer_errors_propagate():
    class Refuses:
        def __dlpack__(self, **kw):
            raise BufferError("no")

    with pytest.raises(BufferError, match="no"):
        tack.from_dlpack(Refuses())


DEVICE_TABLE = [
    (KDLCPU, "cpu"),
    (KDLCUDAHOST, "cpu"),
    (KDLROCMHOST, "cpu"),
]


@pytest.mark.parametrize("device_type,backend", DEVICE_TABLE)
def test_host_device_types_import_on_the_cpu(cp, device_type, backend):
    with Balance(cp):
        a = tack.from_dlpack(cp.make((4,), device_type=device_type, device_id=2))
        assert a.device == tack.device(backend)
        assert a.__dlpack_device__() == (KDLCPU, 0)
        del a


@pytest.mark.parametrize("device_type,backend", [
    (KDLCUDA, "cuda"), (KDLCUDAMANAGED, "cuda"), (KDLROCM, "hip"), (KDLONEAPI, "level_zero"),
])
def test_device_memory_imports_on_its_own_device(cp, device_type, backend):
    try:
        tack.device(backend)
        pytest.skip(f"{backend} is available here")
    except tack.DeviceUnavailableError:
        pass
    with Balance(cp):
        # the default (CPU) cannot wrap it, so the tensor's own device is tried:
        # without a driver that is a DLPack refusal (RuntimeError and BufferError)
        # carrying the driver's explanation
        with pytest.raises(tack.DLPackDeviceError) as e:
            tack.from_dlpack(cp.make((4,), device_type=device_type))
        assert isinstance(e.value, RuntimeError) and isinstance(e.value, BufferError)
        assert "driver" in str(e.value)
        # an explicit device that cannot wrap it: RuntimeError naming where to import
        with pytest.raises(tack.DLPackDeviceError) as e:
            tack.from_dlpack(cp.make((4,), device_type=device_type, device_id=1),
                             device="cpu")
        assert isinstance(e.value, RuntimeError) and isinstance(e.value, BufferError)
        assert f"device '{backend}' ordinal 1" in str(e.value)


def test_metal_is_refused_up_front(cp):
    for copy in [False, True, None]:
        with Balance(cp):
            with pytest.raises(tack.DLPackError) as e:
                tack.from_dlpack(cp.make((4,), device_type=KDLMETAL), copy=copy)
            assert isinstance(e.value, ValueError)
            assert "host memory" in str(e.value) and "copy=True" in str(e.value)


def test_device_argument(cp):
    x = np.arange(3.0)
    assert tack.from_dlpack(x, device="cpu").ptr == x.ctypes.data
    assert tack.from_dlpack(x, device=tack.device("cpu")).ptr == x.ctypes.data
    with pytest.raises(tack.DeviceUnavailableError):
        tack.from_dlpack(x, device="cuda")
    with pytest.raises(ValueError):
        tack.from_dlpack(x, device="nonsense")
    # a bad device consumes nothing
    with Balance(cp):
        c = cp.make((4,))
        with pytest.raises(ValueError):
            tack.from_dlpack(c, device="nonsense")
        assert '"dltensor_versioned"' in repr(c)
        del c


def test_jax_arrays_import_zero_copy():
    jnp = pytest.importorskip("jax.numpy")
    j = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    a = tack.from_dlpack(j)
    np.testing.assert_array_equal(a.numpy(), np.asarray(j))
    assert a.shape == (3, 4)
    for dt in [jnp.int32, jnp.uint8, jnp.bool_, jnp.float16]:
        b = tack.from_dlpack(jnp.ones(4, dtype=dt))
        assert b.numpy().tolist() == [1, 1, 1, 1]


def test_jax_round_trip_shares_memory():
    jnp = pytest.importorskip("jax.numpy")
    a = tack.array(np.arange(8, dtype=np.float32))
    j = jnp.from_dlpack(a)
    b = tack.from_dlpack(j)
    assert b.ptr == a.ptr
    a[3] = 42.0
    assert b[3] == 42.0


def test_jax_arrays_import_read_only():
    # JAX arrays are immutable by contract and JAX exports legacy capsules, which
    # cannot say read-only: Tack knows the producer and imports them read-only.
    jnp = pytest.importorskip("jax.numpy")
    j = jnp.arange(4, dtype=jnp.float32)
    a = tack.from_dlpack(j)
    assert not a.writable and a.ptr == j.unsafe_buffer_pointer()
    with pytest.raises(tack.ReadOnlyError):
        a[0] = 5.0
    with pytest.raises(tack.ReadOnlyError):
        a.fill(1.0)

    @tack.kernel
    def bump(out):
        for i in range(out.shape[0]):
            out[i] = out[i] + 1.0

    with pytest.raises(ValueError, match="'bump'.*'out'"):
        bump(a)
    assert np.asarray(j).tolist() == [0.0, 1.0, 2.0, 3.0]
    # A copy is Tack's own memory, and a view of a read-only import stays read-only.
    c = tack.from_dlpack(j, copy=True)
    assert c.writable and c.ptr != a.ptr
    assert not a.reshape(2, 2).writable
    # Wrapping a JAX array's buffer is read-only too: JAX exports it so.
    assert not tack.array_from_ptr(j, 4, tack.f32).writable
    with pytest.raises(ValueError, match="read-only"):
        tack.array_from_ptr(j, 4, tack.f32, writable=True)


def test_other_legacy_producers_stay_writable():
    # Only producers immutable by contract are read-only: a legacy capsule from any
    # other producer shares memory both ways.
    host = np.zeros(3, dtype=np.float32)
    a = tack.from_dlpack(host.__dlpack__())
    assert a.writable
    a[1] = 2.0
    assert host[1] == 2.0


def test_a_producer_type_that_changes_its_module_is_asked_again():
    # Whether a producer is immutable by contract is remembered per type; a type
    # whose __module__ changes is a new answer, not the remembered one.
    host = np.zeros(3, dtype=np.float32)

    class Array:  # a JAX-like name; only its module says whether it is JAX's
        def __dlpack__(self, **kw):
            return host.__dlpack__(**kw)

        def __dlpack_device__(self):
            return host.__dlpack_device__()

    Array.__module__ = "jax.fake"
    for _ in range(3):
        assert not tack.from_dlpack(Array()).writable
    Array.__module__ = "elsewhere"
    for _ in range(3):
        assert tack.from_dlpack(Array()).writable
    Array.__module__ = "jaxlib"
    assert not tack.from_dlpack(Array()).writable


def test_only_numpy_ndarray_itself_is_taken_for_host_memory():
    """NumPy's ndarray is imported without asking its device (its arrays are host
    memory); a subclass may say otherwise, so it is asked at every import, after
    ndarray's answer was remembered for its type."""
    asked = []

    class Placed(np.ndarray):
        def __dlpack_device__(self):
            asked.append(1)
            return super().__dlpack_device__()

    x = np.arange(4.0)
    for _ in range(2):
        assert tack.from_dlpack(x).ptr == x.ctypes.data
    p = x.view(Placed)
    for _ in range(2):
        assert tack.from_dlpack(p).ptr == x.ctypes.data
    assert len(asked) == 2
