"""tack.from_dlpack of a NumPy ndarray reads the array's own fields instead of calling
its __dlpack__ (csrc/python/numpy_direct.c). The result must be exactly what the
capsule NumPy exports would have given, for every dtype, layout and flag; anything
but the common case must still go through __dlpack__; the array is held, and let go
from any thread and at exit."""

import gc
import sys
import weakref

import numpy as np
import producer
import pytest

import tack


def direct_count():
    return tack._tack._dlpack_stats()["numpy_direct"]


def outcome(make, x):
    """What an import of x gives: the array's description (whether it shares x's
    memory, not its address, which a copy makes anew), or the refusal's type and
    text."""
    try:
        a = make()
    except Exception as e:
        return ("refused", type(e), str(e))
    return ("array", a.shape, a.dtype, a.writable, a.ptr == x.ctypes.data,
            str(a.device), a.numpy().tobytes())


def read_only(x):
    x = x.copy()
    x.flags.writeable = False
    return x


def misaligned():
    raw = np.zeros(8 * 9 + 1, dtype=np.uint8)
    return raw[1:].view(np.float64)


def as_strided_size_one():
    x = np.arange(6.0).reshape(1, 6)
    return np.lib.stride_tricks.as_strided(x, shape=(1, 6), strides=(9999 * 8, 8))


CASES = {
    "float64 2-d": lambda: np.arange(12.0).reshape(3, 4),
    "float32": lambda: np.arange(5, dtype=np.float32),
    "float16": lambda: np.arange(5, dtype=np.float16),
    "bool": lambda: np.array([True, False, True]),
    "int8": lambda: np.arange(-3, 3, dtype=np.int8),
    "uint8": lambda: np.arange(6, dtype=np.uint8),
    "int16": lambda: np.arange(6, dtype=np.int16),
    "uint16": lambda: np.arange(6, dtype=np.uint16),
    "intc": lambda: np.arange(6, dtype=np.intc),
    "uintc": lambda: np.arange(6, dtype=np.uintc),
    "long": lambda: np.arange(6, dtype=np.int_),
    "ulong": lambda: np.arange(6, dtype=np.uint),
    "longlong": lambda: np.arange(6, dtype=np.longlong),
    "ulonglong": lambda: np.arange(6, dtype=np.ulonglong),
    "complex64": lambda: np.arange(4, dtype=np.complex64),
    "complex128": lambda: np.arange(4, dtype=np.complex128),
    "0-d": lambda: np.array(2.5),
    "zero size": lambda: np.zeros((3, 0, 2)),
    "size one extents": lambda: np.arange(4.0).reshape(1, 4, 1),
    "odd stride on an extent of one": as_strided_size_one,
    "read-only": lambda: read_only(np.arange(4.0)),
    "read-only bool": lambda: read_only(np.ones(3, dtype=bool)),
    "a view of a larger array": lambda: np.arange(20.0)[5:9],
    # the cases read through __dlpack__, whose answer is the rule
    "strided": lambda: np.arange(10.0)[::2],
    "Fortran order": lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3)),
    "misaligned": misaligned,
    "long double": lambda: np.arange(3, dtype=np.longdouble),
    "complex long double": lambda: np.arange(3, dtype=np.clongdouble),
    "datetime64": lambda: np.zeros(3, dtype="datetime64[s]"),
    "structured": lambda: np.zeros(3, dtype=[("a", "f8"), ("b", "i4")]),
    "object": lambda: np.array([1, "a"], dtype=object),
    "bytes": lambda: np.array([b"ab", b"c"]),
}
DIRECT = {"float64 2-d", "float32", "float16", "bool", "int8", "uint8", "int16", "uint16",
          "intc", "uintc", "long", "ulong", "longlong", "ulonglong", "complex64",
          "complex128", "0-d", "zero size", "size one extents",
          "odd stride on an extent of one", "read-only", "read-only bool",
          "a view of a larger array"}


@pytest.mark.parametrize("copy", [False, None, True], ids=["copy=False", "copy=None",
                                                          "copy=True"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_ndarray_read_directly_imports_as_its_capsule_would(name, copy):
    x = CASES[name]()
    before = direct_count()
    direct = outcome(lambda: tack.from_dlpack(x, copy=copy), x)
    read_directly = direct_count() - before
    via_capsule = outcome(lambda: tack.from_dlpack(x.__dlpack__(max_version=(1, 3)),
                                                   copy=copy), x)
    assert direct == via_capsule
    assert read_directly == (1 if name in DIRECT else 0)


@pytest.mark.parametrize("dtype", [">f8", ">i4", ">u2", ">f4", ">f2"])
def test_a_byte_swapped_array_is_copied_when_a_copy_is_allowed(dtype):
    """No DLPack tensor describes another byte order, so NumPy's __dlpack__ refuses
    it and a zero-copy import must too; with copy=True (or None) the array is
    copied as tack.array copies a NumPy array, its bytes swapped."""
    x = np.arange(6, dtype=dtype).reshape(2, 3)
    with pytest.raises(BufferError):
        tack.from_dlpack(x)
    for copy in (True, None):
        a = tack.from_dlpack(x, copy=copy)
        assert a.shape == (2, 3) and a.writable
        assert a.dtype == tack.array(x).dtype
        np.testing.assert_array_equal(a.numpy(), x)
        assert a.numpy().dtype.isnative
    on_cpu = tack.from_dlpack(x, copy=True, device="cpu")
    assert str(on_cpu.device) == "cpu:0"


def test_a_byte_swapped_array_without_a_tack_dtype_is_refused_as_tack_array_refuses():
    x = np.arange(3, dtype=">c16")
    with pytest.raises(TypeError, match="no Tack dtype"):
        tack.from_dlpack(x, copy=True)


def test_the_common_case_never_asks_for_a_capsule():
    """Read directly, the import takes one reference to the array and no capsule: the
    counter counts it, and the reference goes with the last view."""
    x = np.arange(8.0)
    refs = sys.getrefcount(x)
    before = direct_count()
    a = tack.from_dlpack(x)
    v = a.reshape(2, 4)
    assert direct_count() == before + 1
    assert sys.getrefcount(x) == refs + 1
    del a
    assert sys.getrefcount(x) == refs + 1
    del v
    assert sys.getrefcount(x) == refs


def test_a_subclass_is_asked_through_its_dlpack():
    asked = []

    class Tracked(np.ndarray):
        def __dlpack__(self, **kwargs):
            asked.append(kwargs)
            return super().__dlpack__(**kwargs)

    x = np.arange(4.0).view(Tracked)
    before = direct_count()
    a = tack.from_dlpack(x)
    assert direct_count() == before
    assert asked and asked[0]["max_version"][0] == 1
    assert a.ptr == x.ctypes.data


def test_writes_cross_and_read_only_is_kept():
    x = np.zeros(4, dtype=np.int32)
    a = tack.from_dlpack(x)
    a.fill(7)
    assert x.tolist() == [7] * 4
    x[1] = -1
    assert a[1] == -1
    y = read_only(np.arange(3.0))
    b = tack.from_dlpack(y)
    assert not b.writable
    with pytest.raises(RuntimeError):
        b.fill(1.0)
    assert y.tolist() == [0.0, 1.0, 2.0]


def test_a_device_given_goes_through_the_same_rules():
    x = np.arange(4.0)
    before = direct_count()
    direct = outcome(lambda: tack.from_dlpack(x, device="cpu"), x)
    capsule = outcome(lambda: tack.from_dlpack(x.__dlpack__(max_version=(1, 3)),
                                               device=tack.device("cpu")), x)
    assert direct == capsule and direct[4] is True
    assert direct_count() == before + 1


def test_the_array_is_let_go_from_a_thread_without_the_gil(cp):
    x = np.arange(100.0)
    alive = weakref.ref(x)
    a = tack.from_dlpack(x)
    handle = cp.adopt(a.__dlpack__(max_version=(1, 0)))
    del x, a
    gc.collect()
    assert alive() is not None
    cp.delete_in_thread(handle)
    gc.collect()
    assert alive() is None


EXIT_SCRIPT = """
import sys
sys.path.insert(0, {build_dir!r})
import numpy as np
import counting_producer as cp
import tack

x = np.arange(64.0)
keep = [tack.from_dlpack(x)]
cp.delete_at_exit(cp.adopt(tack.from_dlpack(np.arange(8.0)).__dlpack__(max_version=(1, 0))))
print("ready", flush=True)
"""


def test_arrays_read_directly_alive_at_interpreter_exit(cp):
    producer.check_alive_at_exit(EXIT_SCRIPT)
