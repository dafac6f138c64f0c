"""CUDA managed memory from another library (docs/cuda.md, DLPack): a kDLCUDAManaged
tensor imports as a CUDA array without a copy, its pointer checked through the
driver, its deleter run once; array_from_ptr and __cuda_array_interface__ take
managed memory too. The memory comes from a producer that allocates it through the
driver (tests/python/producer/managed_producer.c): on the strict stand-in, and (tests
marked `cuda`) on a real GPU with the real driver and with CuPy."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from cuda_helpers import run

# Prepended to each child: the managed producer, and a DLPack producer object over one
# of its allocations that orders the consumer's stream after its own, as PyTorch does.
_PRODUCER = f"""
import ctypes
tack.device("cuda")  # opened first, so tack_stream() finds Tack's stream
sys.path.insert(0, {str(Path(__file__).parent)!r})
from producer import load
mp = load("managed_producer")

def host_view(ptr, n):
    return np.ctypeslib.as_array((ctypes.c_float * n).from_address(ptr))

def managed(n, ordinal=0):
    # n float32 values 0..n-1 in managed memory, written by the host.
    ptr = mp.alloc(4 * n, ordinal)
    host_view(ptr, n)[:] = np.arange(n)
    return ptr

class Producer:
    def __init__(self, ptr, n, *, ordinal=0, device_id=None, device_type=13,
                 shape=None, strides=None):
        self.ptr, self.n, self.ordinal = ptr, n, ordinal
        self.shape, self.strides = shape or (n,), strides
        self.device = (device_type, ordinal if device_id is None else device_id)
        self.streams = []
    def __dlpack_device__(self):
        return self.device
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.streams.append(stream)
        if stream is not None and stream != -1:
            mp.order(stream, self.ordinal)
        return mp.capsule(self.ptr, self.shape, strides=self.strides,
                          device_type=self.device[0],
                          device_id=self.device[1], ordinal=self.ordinal,
                          versioned=max_version is not None and max_version[0] >= 1)

SEVEN = 0x40E00000  # 7.0f
"""


def run_managed(code: str, tmp_path, **env):
    return run(_PRODUCER + textwrap.dedent(code), tmp_path, **env)


@pytest.mark.parametrize("versioned", [False, True])
def test_managed_tensor_imports_as_cuda_without_a_copy(tmp_path, versioned):
    run_managed(
        f"""
        ptr = managed(16)
        tack.device("cuda")
        calls()
        a = tack.from_dlpack(mp.capsule(ptr, (16,), versioned={versioned}))
        cs = calls()
        assert a.device == tack.device("cuda") and a.ptr == ptr
        assert a.writable
        # no allocation, no copy: the driver is only asked what the pointer is
        moved = [c for c in names(cs) if c.startswith(("cuMemAlloc", "cuMemcpy"))]
        assert not moved, cs
        assert "cuPointerGetAttributes" in names(cs), cs
        assert (a.numpy() == np.arange(16)).all()
        assert a.__dlpack_device__() == (2, 0)
        view = a.reshape((4, 4))
        del a
        assert mp.counts() == (1, 0)
        del view
        assert mp.counts() == (1, 1)
        frees = [c for c in calls() if c[0] == "cuMemFree"]
        assert len(frees) == 1 and f"ptr={{ptr:#x}}" in frees[0][1], frees
        assert frees[0][2] == 0
        """,
        tmp_path,
    )


def test_managed_tensor_from_a_producer_object(tmp_path):
    run_managed(
        """
        p = Producer(managed(8), 8)
        a = tack.from_dlpack(p)
        assert a.device == tack.device("cuda") and a.ptr == p.ptr
        assert p.streams == [tack_stream()]  # Tack's own stream, for kDLCUDAManaged too
        assert (a.numpy() == np.arange(8)).all()
        del a
        assert mp.counts() == (1, 1)
        """,
        tmp_path,
    )


def test_managed_import_checks_the_pointer_through_the_driver(tmp_path):
    run_managed(
        f"""
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from producer import load
        host = load()
        # kDLCUDAManaged, but the data is ordinary host memory
        try:
            tack.from_dlpack(host.make((4,), device_type=13, device_id=0))
        except ValueError as e:
            assert "cuda:0" in str(e), str(e)
        else:
            raise AssertionError("host memory imported as managed memory")
        assert host.counts() == (1, 1)
        # kDLCUDAManaged with device_id 0, but the data is plain memory of cuda:1
        plain = mp.alloc(64, 1, False)
        try:
            tack.from_dlpack(mp.capsule(plain, (16,), device_id=0, ordinal=1))
        except ValueError as e:
            assert "cuda:0" in str(e), str(e)
        else:
            raise AssertionError("cuda:1 device memory imported on cuda:0")
        assert mp.counts() == (1, 1)
        # managed memory allocated against cuda:1 lands on cuda:1 ...
        ptr = managed(8, ordinal=1)
        calls()
        a = tack.from_dlpack(mp.capsule(ptr, (8,), device_id=1, ordinal=1))
        assert a.device == tack.device("cuda", 1) and a.ptr == ptr
        assert "cuPointerGetAttributes" in names(calls())
        assert (a.numpy() == np.arange(8)).all()
        del a
        # ... and, being reachable from every device, imports on cuda:0 as well
        ptr = managed(8, ordinal=1)
        b = tack.from_dlpack(mp.capsule(ptr, (8,), device_id=0, ordinal=1))
        assert b.device == tack.device("cuda", 0) and b.ptr == ptr
        assert (b.numpy() == np.arange(8)).all()
        del b
        assert mp.counts() == (3, 3)
        """,
        tmp_path,
        TACK_STANDIN_DEVICES="2",
    )


def test_array_from_ptr_accepts_managed_memory(tmp_path):
    run_managed(
        """
        ptr = managed(8)
        tack.set_default_device("cuda")
        calls()
        a = tack.array_from_ptr(ptr, (8,), tack.f32, writable=True)
        pointer_calls = [c for c in names(calls()) if c.startswith("cuPointer")]
        assert pointer_calls == ["cuPointerGetAttributes"], pointer_calls
        assert a.device == tack.device("cuda") and a.ptr == ptr
        assert (a.numpy() == np.arange(8)).all()
        a.fill(2.5)  # a shared buffer: the fill is done when the call returns
        assert (host_view(ptr, 8) == 2.5).all()
        # The host reaches managed memory, so the CPU wraps it too.
        tack.set_default_device("cpu")
        c = tack.array_from_ptr(ptr, (8,), tack.f32, writable=True)
        assert c.device == tack.device("cpu") and (np.asarray(c) == 2.5).all()
        """,
        tmp_path,
    )


def test_pending_producer_writes_are_ordered_before_every_read(tmp_path):
    run_managed(
        """
        # The producer's fill is still queued on its own stream when Tack imports.
        def pending():
            p = Producer(managed(8), 8)
            mp.write_async(p.ptr, 8, SEVEN)
            return p
        p = pending()
        a = tack.from_dlpack(p)
        assert p.streams == [tack_stream()]
        assert (a.numpy() == 7).all()
        # A copy on the device reads after the producer's writes too ...
        p = pending()
        b = tack.from_dlpack(p, copy=True)
        assert b.device == tack.device("cuda") and b.ptr != p.ptr
        assert (b.numpy() == 7).all(), b.numpy()
        # ... and so does a host copy.
        p = pending()
        c = tack.from_dlpack(p, device="cpu", copy=True)
        assert c.device == tack.device("cpu")
        assert (np.asarray(c) == 7).all(), np.asarray(c)
        del a
        assert mp.counts() == (3, 3)
        """,
        tmp_path,
    )


def test_strided_managed_tensor_is_copied_after_pending_writes(tmp_path):
    run_managed(
        """
        # A (4, 2) tensor in column-major order: strided, so only a copy imports it.
        # (Each capsule's deleter frees its memory: a new allocation for each.)
        want = np.arange(8, dtype=np.float32).reshape(2, 4).T
        for device in ("cuda", "cpu"):
            cap = mp.capsule(managed(8), (4, 2), strides=(1, 4))
            a = tack.from_dlpack(cap, device=device, copy=True)
            assert a.device == tack.device(device) and a.shape == (4, 2)
            assert (a.numpy() == want).all(), a.numpy()
        try:
            tack.from_dlpack(mp.capsule(managed(8), (4, 2), strides=(1, 4)))
        except ValueError:
            pass
        else:
            raise AssertionError("a strided tensor imported without a copy")
        # The copy waits for the producer's writes still queued on its stream.
        for device in ("cuda", "cpu"):
            p = Producer(managed(8), 8, shape=(4, 2), strides=(1, 4))
            mp.write_async(p.ptr, 8, SEVEN)
            a = tack.from_dlpack(p, device=device, copy=True)
            assert p.streams == [tack_stream()]
            assert (a.numpy() == 7).all(), a.numpy()
        assert mp.counts() == (5, 5)
        """,
        tmp_path,
    )


def test_managed_tensor_on_the_cpu_needs_copy_true(tmp_path):
    run_managed(
        """
        p = Producer(managed(4), 4)
        calls()
        try:
            tack.from_dlpack(p, device="cpu")
        except RuntimeError:
            pass
        else:
            raise AssertionError("a managed tensor imported on the CPU without copy")
        assert not [c for c in names(calls()) if c.startswith("cuMemcpy")]
        assert mp.counts() == (1, 1)
        """,
        tmp_path,
    )


def test_cuda_array_interface_import_of_managed_memory(tmp_path):
    run_managed(
        """
        ptr = managed(8)
        mp.write_async(ptr, 8, SEVEN)  # pending on the producer's stream
        class Interface:
            __cuda_array_interface__ = {
                "shape": (8,), "typestr": "<f4", "data": (ptr, False),
                "version": 3, "stream": mp.stream(0)}
        obj = Interface()
        a = tack.from_dlpack(obj)
        assert a.device == tack.device("cuda") and a.ptr == ptr and a.writable
        assert (a.numpy() == 7).all()  # Tack's stream waited for the interface's
        obj.__cuda_array_interface__ = dict(obj.__cuda_array_interface__,
                                            data=(ptr, True), stream=None)
        r = tack.from_dlpack(obj)
        assert r.ptr == ptr and not r.writable
        # Copies: the interface's memory is CUDA memory, as a DLPack tensor's is; a
        # copy waits for the interface's stream too.
        obj.__cuda_array_interface__["stream"] = mp.stream(0)
        mp.write_async(ptr, 8, 0x41000000)  # 8.0f, pending again
        d = tack.from_dlpack(obj, copy=True)
        assert d.device == tack.device("cuda") and d.ptr != ptr and d.writable
        mp.write_async(ptr, 8, 0x41100000)  # 9.0f
        c = tack.from_dlpack(obj, device="cpu", copy=True)
        assert c.device == tack.device("cpu") and (np.asarray(c) == 9).all()
        assert (d.numpy() == 8).all()
        try:
            tack.from_dlpack(obj, device="cpu")
        except RuntimeError:
            pass
        else:
            raise AssertionError("CUDA memory wrapped on the CPU without copy=True")
        """,
        tmp_path,
    )


# ---- on a real GPU (marked cuda; scripts/gpu_check.sh runs them) -------------------


def _producer_here() -> dict:
    """The child prelude above, run in this process: the managed producer on the real
    driver (libcuda.so.1, which Tack uses too)."""
    import sys

    import numpy as np

    import tack

    names = {"np": np, "sys": sys, "tack": tack}
    exec(_PRODUCER, names)
    return names


@pytest.mark.cuda
def test_managed_memory_of_the_real_driver():
    import numpy as np

    import tack

    p = _producer_here()
    n = 1 << 20
    ptr = p["managed"](n)
    a = tack.from_dlpack(p["mp"].capsule(ptr, (n,)))
    assert a.device == tack.device("cuda") and a.ptr == ptr
    assert (a.numpy() == np.arange(n)).all()
    # A fill still queued on the producer's own stream is ordered before Tack's reads,
    # for a view and for copies on the device and on the host.
    for kw in ({}, {"copy": True}, {"device": "cpu", "copy": True}):
        prod = p["Producer"](p["managed"](n), n)
        p["mp"].write_async(prod.ptr, n, p["SEVEN"])
        b = tack.from_dlpack(prod, **kw)
        assert (b.numpy() == 7).all(), kw
    # array_from_ptr takes managed memory on the GPU and, as the host reaches it, on
    # the CPU.
    tack.set_default_device("cuda")
    try:
        w = tack.array_from_ptr(ptr, (n,), tack.f32, writable=True)
        w.fill(2.5)
    finally:
        tack.set_default_device("cpu")
    assert (np.asarray(tack.array_from_ptr(ptr, (n,), tack.f32)) == 2.5).all()
    del a, w


@pytest.mark.cupy
@pytest.mark.cuda
def test_managed_memory_of_cupy():
    import numpy as np

    import tack

    # On a GPU check (TACK_REQUIRE_CUDA=1) a missing peer fails instead of skipping.
    if os.environ.get("TACK_REQUIRE_CUDA") == "1":
        import cupy
    else:
        cupy = pytest.importorskip("cupy")
    n = 1 << 20
    mem = cupy.cuda.malloc_managed(4 * n)
    x = cupy.ndarray((n,), cupy.float32, mem)
    x[...] = 5
    assert x.__dlpack_device__()[0] in (2, 13)  # CUDA or CUDA managed memory
    b = tack.from_dlpack(x)
    assert b.device == tack.device("cuda") and b.ptr == int(x.data.ptr)
    assert (b.numpy() == 5).all()
    c = tack.from_dlpack(x, device="cpu", copy=True)
    assert (np.asarray(c) == 5).all()
