"""tack.from_dlpack of a JAX array in host memory reads the array's buffer (PEP 3118)
instead of calling its __dlpack_device__ and __dlpack__, both Python code
(csrc/python/buffer_direct.c). The result must be what JAX's capsule gives, imported
read-only as every JAX tensor is; anything JAX exports no buffer for must still go
through __dlpack__; JAX's memory is held, and let go from any thread and at exit."""

import gc
import os
import subprocess
import sys
import weakref

import numpy as np
import producer
import pytest

import tack

# JAX is a peer make setup installs; a machine without it (the GPU check's) skips.
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
ml_dtypes = pytest.importorskip("ml_dtypes")


def buffer_count():
    return tack._tack._dlpack_stats()["buffer_direct"]


def outcome(make, x):
    """What an import of x gives: the array's description (whether it shares x's
    memory) or the refusal's type."""
    try:
        a = make()
    except Exception as e:
        return ("refused", type(e))
    shares = a.ptr == x.unsafe_buffer_pointer() if a.size else None
    return ("array", a.shape, a.dtype, a.writable, shares, str(a.device),
            a.numpy().tobytes())


def through_capsule(x, copy):
    """The import of JAX's own capsule: a bare capsule does not say that its producer
    is immutable, so the memory it shares (host memory is shared unless copy=True)
    is marked read-only here, as tack.from_dlpack marks every JAX tensor's
    (docs/dlpack.md)."""
    got = outcome(lambda: tack.from_dlpack(x.__dlpack__(max_version=(1, 3)), copy=copy),
                  x)
    if got[0] == "array" and copy is not True:
        got = got[:3] + (False,) + got[4:]
    return got


DTYPES = {
    "bool": jnp.bool_, "int8": jnp.int8, "uint8": jnp.uint8, "int16": jnp.int16,
    "uint16": jnp.uint16, "int32": jnp.int32, "uint32": jnp.uint32,
    "int64": jnp.int64, "uint64": jnp.uint64, "float16": jnp.float16,
    "float32": jnp.float32, "float64": jnp.float64, "complex64": jnp.complex64,
    "complex128": jnp.complex128,
    # no struct format: asked through __dlpack__, which has no Tack dtype for it
    "bfloat16": ml_dtypes.bfloat16,
}
SHAPES = {"0-d": (), "1-d": (7,), "3-d": (2, 3, 4), "zero size": (3, 0, 2),
          "extents of one": (1, 5, 1)}


@pytest.mark.parametrize("copy", [False, None, True],
                         ids=["copy=False", "copy=None", "copy=True"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_a_jax_array_read_through_its_buffer_imports_as_its_capsule_would(
        dtype, shape, copy):
    with jax.enable_x64(True):
        n = int(np.prod(SHAPES[shape]))
        x = (jnp.arange(n) % 5).astype(DTYPES[dtype]).reshape(SHAPES[shape])
        before = buffer_count()
        direct = outcome(lambda: tack.from_dlpack(x, copy=copy), x)
        read = buffer_count() - before
        assert direct == through_capsule(x, copy)
    assert read == (0 if dtype == "bfloat16" else 1)
    if direct[0] == "array" and copy is not True:
        assert direct[3] is False  # JAX's memory is never writable through Tack


def test_the_result_of_a_computation_is_read_once_it_is_done():
    """JAX runs a jitted function asynchronously; the buffer waits for it."""
    big = jnp.arange(1 << 22, dtype=jnp.float32)
    y = jax.jit(lambda v: jnp.sin(v) * 2.0 + v)(big)
    a = tack.from_dlpack(y)
    np.testing.assert_array_equal(a.numpy(), np.asarray(y))


def test_the_memory_is_held_while_a_tack_array_reads_it():
    x = jnp.arange(16.0) * 3.0
    alive = weakref.ref(x)
    a = tack.from_dlpack(x)
    v = a.reshape(4, 4)
    x.delete()  # JAX keeps the memory for the buffer Tack holds
    expected = (np.arange(16.0) * 3.0).tolist()
    assert a.numpy().tolist() == expected
    del x
    gc.collect()
    assert alive() is not None
    del a
    gc.collect()
    assert alive() is not None
    assert v.numpy().ravel().tolist() == expected
    del v
    gc.collect()
    assert alive() is None


def test_the_array_is_let_go_from_a_thread_without_the_gil(cp):
    x = jnp.arange(100.0)
    alive = weakref.ref(x)
    before = buffer_count()
    a = tack.from_dlpack(x)
    assert buffer_count() == before + 1
    handle = cp.adopt(a.__dlpack__(max_version=(1, 0)))
    del x, a
    gc.collect()
    assert alive() is not None
    cp.delete_in_thread(handle)
    gc.collect()
    assert alive() is None


def test_a_device_given_goes_through_the_same_rules():
    x = jnp.arange(4.0)
    direct = outcome(lambda: tack.from_dlpack(x, device="cpu"), x)
    capsule = outcome(lambda: tack.from_dlpack(x.__dlpack__(max_version=(1, 3)),
                                               device=tack.device("cpu")), x)
    assert direct[:3] == capsule[:3] and direct[4:] == capsule[4:]
    assert direct[4] is True and direct[3] is False


def test_other_buffer_exporters_are_not_read_this_way():
    """Only a type immutable by contract (JAX's) is read through its buffer: for
    another producer a buffer and its DLPack tensor may disagree."""
    before = buffer_count()
    with pytest.raises(AttributeError):
        tack.from_dlpack(bytearray(b"abcd"))
    y = np.arange(4.0)
    y.flags.writeable = False
    assert not tack.from_dlpack(y).writable
    w = tack.from_dlpack(np.arange(4.0).view(type("Sub", (np.ndarray,), {})))
    assert w.writable
    assert buffer_count() == before


SHARDED_SCRIPT = """
import jax, jax.numpy as jnp, numpy as np, tack
from jax.sharding import Mesh, NamedSharding, PartitionSpec
mesh = Mesh(np.array(jax.devices()), ("d",))
x = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, PartitionSpec("d")))
before = tack._tack._dlpack_stats()["buffer_direct"]
try:
    tack.from_dlpack(x)
except BufferError:
    print("refused", tack._tack._dlpack_stats()["buffer_direct"] - before)
"""


def test_a_sharded_array_is_asked_through_its_dlpack_and_refused():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", SHARDED_SCRIPT], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["refused", "0"]


EXIT_SCRIPT = """
import sys
sys.path.insert(0, {build_dir!r})
import jax.numpy as jnp
import counting_producer as cp
import tack

keep = [tack.from_dlpack(jnp.arange(64.0))]
cp.delete_at_exit(cp.adopt(tack.from_dlpack(jnp.arange(8.0)).__dlpack__(max_version=(1, 0))))
assert tack._tack._dlpack_stats()["buffer_direct"] == 2
print("ready", flush=True)
"""


def test_arrays_read_through_a_buffer_alive_at_interpreter_exit(cp):
    producer.check_alive_at_exit(EXIT_SCRIPT)
