"""CUDA arrays with real peers on a real GPU (marked `cuda`; scripts/gpu_check.sh runs
them on a lent machine): DLPack both ways with PyTorch, CuPy and JAX for every stream
value, a producer still writing on its own stream, __cuda_array_interface__ with CuPy
and Numba, export_memory's descriptor imported by another process, and many round
trips with flat device memory. The stand-in tests (test_cuda_*.py) prove Tack's side
of each contract without a GPU; these prove the peers agree."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.cuda

N = 1 << 20


def _peer(name: str):
    """The peer library; on a GPU check (TACK_REQUIRE_CUDA=1) a missing one fails."""
    if os.environ.get("TACK_REQUIRE_CUDA") == "1":
        return importlib.import_module(name)
    return pytest.importorskip(name)


@pytest.fixture
def torch():
    torch = _peer("torch")
    assert torch.cuda.is_available(), "a CUDA device is visible to Tack but not to torch"
    return torch


def _tack_values(n=N, dtype=tack.f32):
    a = tack.empty((n,), dtype=dtype, device="cuda")
    tack.copyto(a, tack.array(np.arange(n) % 1000, dtype=dtype))
    return a


@pytest.mark.torch
@pytest.mark.parametrize("stream", [None, 1, 2, "torch", -1])
def test_tack_to_torch_every_stream_value(torch, stream):
    a = _tack_values()
    side = torch.cuda.Stream()  # a stream handle of torch's own (never 0)
    s = side.cuda_stream if stream == "torch" else stream
    a.fill(3.0)  # queued on Tack's stream: the consumer's stream must wait for it
    t = torch.utils.dlpack.from_dlpack(a.__dlpack__(stream=s))
    assert t.data_ptr() == a.ptr
    if stream == 2:
        torch.cuda.synchronize()  # torch itself reads on the legacy stream
    if stream == "torch":
        with torch.cuda.stream(side):  # read on the stream that was ordered
            assert bool((t == 3.0).all())
    else:
        assert bool((t == 3.0).all())


@pytest.mark.torch
def test_torch_from_dlpack_of_a_tack_array(torch):
    a = _tack_values()
    a.fill(5.0)
    t = torch.from_dlpack(a)  # torch passes its own stream
    assert t.device.type == "cuda" and t.data_ptr() == a.ptr
    assert bool((t == 5.0).all())
    t.add_(1.0)  # writes through torch are Tack's memory
    torch.cuda.synchronize()
    assert (a.numpy() == 6.0).all()


@pytest.mark.torch
def test_tack_from_torch_shares_memory_both_ways(torch):
    t = torch.arange(N, dtype=torch.float32, device="cuda")
    a = tack.from_dlpack(t)
    assert a.ptr == t.data_ptr() and a.device.name == "cuda"
    assert (a.numpy() == np.arange(N, dtype=np.float32)).all()
    a.fill(2.0)  # shared from birth: complete when fill returns
    assert bool((t == 2.0).all())


@pytest.mark.torch
def test_a_producer_still_writing_on_its_own_stream_is_waited_for(torch):
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.zeros(64 << 20, dtype=torch.float32, device="cuda")
        torch.cuda._sleep(200_000_000)  # keep the stream busy for a while
        x.fill_(7.0)
        a = tack.from_dlpack(x)  # Tack's stream is ordered after `side`
        host = a.numpy()
    assert (host == 7.0).all()


@pytest.mark.torch
def test_tack_work_still_queued_is_waited_for_by_torch(torch):
    a = tack.empty((256 << 20,), dtype=tack.f32, device="cuda")
    a.fill(0.0)
    a.fill(9.0)  # a large memset still running when torch takes the array
    t = torch.from_dlpack(a)
    assert bool((t == 9.0).all())


@pytest.mark.torch
def test_torch_pointers_through_array_from_ptr(torch):
    t = torch.ones(16, device="cuda")
    tack.set_default_device("cuda")
    w = tack.array_from_ptr(t.data_ptr(), (16,), tack.f32)
    assert (w.numpy() == 1).all()
    pinned = torch.ones(16).pin_memory()
    with pytest.raises(ValueError):
        tack.array_from_ptr(pinned.data_ptr(), (16,), tack.f32)
    # pinned host memory exported by torch (kDLCUDAHost) is a CPU array
    cpu = tack.from_dlpack(pinned)
    assert cpu.device.name == "cpu"


@pytest.mark.cupy
@pytest.mark.parametrize("stream", [None, 1, 2, -1])
def test_cupy_both_ways(stream):
    cupy = _peer("cupy")
    a = _tack_values()
    a.fill(4.0)
    c = cupy.from_dlpack(a)
    assert int(c.data.ptr) == a.ptr and bool((c == 4.0).all())
    cap = a.__dlpack__(stream=stream)
    if stream == 2:
        cupy.cuda.runtime.deviceSynchronize()
    assert bool((cupy.from_dlpack(cap) == 4.0).all())
    x = cupy.arange(N, dtype=cupy.float32)
    b = tack.from_dlpack(x)
    assert b.ptr == int(x.data.ptr) and (b.numpy() == np.arange(N)).all()


@pytest.mark.cupy
def test_cuda_array_interface_with_cupy_and_numba():
    cupy = _peer("cupy")
    a = _tack_values()
    a.fill(8.0)
    c = cupy.asarray(a)  # through __cuda_array_interface__
    assert int(c.data.ptr) == a.ptr and bool((c == 8.0).all())
    numba_cuda = _peer("numba.cuda")
    d = numba_cuda.as_cuda_array(a)
    assert (d.copy_to_host() == 8.0).all()

    class OnlyInterface:
        def __init__(self, obj):
            self.__cuda_array_interface__ = obj.__cuda_array_interface__

    x = cupy.full(N, 6.0, dtype=cupy.float32)
    b = tack.from_dlpack(OnlyInterface(x))  # CuPy's stream key is honoured
    assert b.ptr == int(x.data.ptr) and (b.numpy() == 6.0).all()


@pytest.mark.jax
def test_jax_both_ways():
    jax = _peer("jax")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.fail("JAX sees no GPU on a machine where Tack sees one")
    a = _tack_values()
    j = jax.dlpack.from_dlpack(a)
    assert (np.asarray(j) == a.numpy()).all()
    x = jax.device_put(jax.numpy.arange(1000, dtype=jax.numpy.float32), gpus[0])
    b = tack.from_dlpack(x)
    assert (b.numpy() == np.arange(1000)).all()


_IMPORT_FD = """
import ctypes, sys
fd, size, nbytes = (int(v) for v in sys.argv[1:4])
cu = ctypes.CDLL("libcuda.so.1")
def ok(rc, what):
    assert rc == 0, f"{what} -> {rc}"
ok(cu.cuInit(0), "cuInit")
dev = ctypes.c_int()
ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
h = ctypes.c_ulonglong()
ok(cu.cuMemImportFromShareableHandle(ctypes.byref(h), ctypes.c_void_p(fd), 1), "import")
ptr = ctypes.c_ulonglong()
ok(cu.cuMemAddressReserve(ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                          ctypes.c_ulonglong(0), ctypes.c_ulonglong(0)), "reserve")
ok(cu.cuMemMap(ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), h, ctypes.c_ulonglong(0)),
   "map")
class Desc(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int), ("flags", ctypes.c_int)]
desc = Desc(1, dev.value, 3)
ok(cu.cuMemSetAccess(ptr, ctypes.c_size_t(size), ctypes.byref(desc), ctypes.c_size_t(1)),
   "access")
buf = (ctypes.c_float * (nbytes // 4))()
ok(cu.cuMemcpyDtoH_v2(buf, ptr, ctypes.c_size_t(nbytes)), "copy")
print(sum(buf))
"""


@pytest.mark.parametrize("exportable", [True, False])
def test_export_memory_fd_is_imported_by_another_process(exportable):
    n = 4096
    a = tack.empty((n,), dtype=tack.f32, device="cuda", exportable=exportable)
    a.fill(0.5)
    m = a.export_memory()
    assert m.handle_type == "posix_fd" and m.allocation_size >= m.size == 4 * n
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_IMPORT_FD), str(m.handle),
         str(m.allocation_size), str(m.size)],
        pass_fds=(m.handle,), capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == 0.5 * n


@pytest.mark.torch
def test_many_round_trips_keep_device_memory_flat(torch):
    a = _tack_values(1 << 16)
    free0 = torch.cuda.mem_get_info()[0]
    # Under compute-sanitizer (which injects itself through CUDA_INJECTION64_PATH)
    # every driver call is intercepted: fewer rounds keep the check in its time box.
    rounds = 2_000 if "CUDA_INJECTION64_PATH" in os.environ else 100_000
    for _ in range(rounds):
        t = torch.from_dlpack(a)
        b = tack.from_dlpack(t)
        del t, b
    torch.cuda.synchronize()
    free1 = torch.cuda.mem_get_info()[0]
    assert abs(free0 - free1) < (64 << 20), (free0, free1)


@pytest.mark.torch
def test_arrays_and_exports_alive_at_interpreter_exit(torch):
    code = textwrap.dedent(
        """
        import sys, tack, torch
        a = tack.zeros(1 << 20, device="cuda")
        t = torch.from_dlpack(a)                  # torch holds Tack memory at exit
        b = tack.from_dlpack(torch.ones(16, device="cuda"))   # and the reverse
        e = tack.empty(16, device="cuda", exportable=True)
        e.export_memory()
        sys.keep = (a, t, b, e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Error" not in out.stderr, out.stderr
