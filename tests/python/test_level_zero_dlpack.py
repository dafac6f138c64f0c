"""DLPack kDLOneAPI both ways and array_from_ptr on Level Zero devices, through the real
loader on the strict stand-in driver in every loader mode (level_zero_helpers.MODES).

Producers: Tack itself (the round trip), capsules built with ctypes over USM that
another library allocates through the same loader (zeMemAllocDevice, zeMemAllocShared,
zeMemAllocHost), for what Tack must accept and refuse, and, where it is installed,
dpctl on Intel's OpenCL CPU device, a real kDLOneAPI peer whose memory is in no
context Tack holds."""

import os
import textwrap

import dpctl_peer
import pytest
from level_zero_helpers import modes, run, standin_only

# Code every child runs first (after level_zero_helpers' prelude): USM of another
# library's context, and a versioned kDLOneAPI capsule over any address.
_PRODUCER = """
from dlpack_ctypes import CAPSULE_DESTRUCTOR, DELETER, DLManagedTensorVersioned, capsule_new

deleted = []
_deleter = DELETER(lambda address: deleted.append(address))
_keep = []

def capsule(data, n, device_id=0, device_type=14):
    # n float32 elements at data, as a kDLOneAPI producer hands them out.
    mt = DLManagedTensorVersioned()
    mt.major, mt.minor, mt.deleter = 1, 3, _deleter
    shape = (ctypes.c_int64 * 1)(n)
    t = mt.dl_tensor
    t.data, t.ndim, t.shape = data, 1, shape
    t.device.device_type, t.device.device_id = device_type, device_id
    t.dtype.code, t.dtype.bits, t.dtype.lanes = 2, 32, 1
    _keep.extend([mt, shape])
    return capsule_new(ctypes.addressof(mt), b"dltensor_versioned",
                       CAPSULE_DESTRUCTOR())  # NULL: Tack consumes every one

class Producer:
    # A kDLOneAPI producer object that records the arguments __dlpack__ gets.
    def __init__(self, make, device_id=0):
        self.make, self.device_id, self.calls = make, device_id, []
    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        return self.make()
    def __dlpack_device__(self):
        return (14, self.device_id)

def usm(kind, h, nbytes=64):
    # kind is "device", "shared" or "host": USM of h's context, as another library
    # allocates it (for h's device; shared memory for none when that is None).
    ddesc = (ctypes.c_uint32 * 6)(0x15, 0, 0, 0, 0, 0)  # ze_device_mem_alloc_desc_t
    hdesc = (ctypes.c_uint32 * 6)(0x16, 0, 0, 0, 0, 0)  # ze_host_mem_alloc_desc_t
    ptr = ctypes.c_void_p()
    ctx, dev = ctypes.c_void_p(h["context"]), ctypes.c_void_p(h["device"])
    if kind == "device":
        rc = _ze.zeMemAllocDevice(ctx, ddesc, ctypes.c_size_t(nbytes),
                                  ctypes.c_size_t(64), dev, ctypes.byref(ptr))
    elif kind == "shared":
        rc = _ze.zeMemAllocShared(ctx, ddesc, hdesc, ctypes.c_size_t(nbytes),
                                  ctypes.c_size_t(64), dev, ctypes.byref(ptr))
    else:
        rc = _ze.zeMemAllocHost(ctx, hdesc, ctypes.c_size_t(nbytes),
                                ctypes.c_size_t(64), ctypes.byref(ptr))
    assert rc == 0, hex(rc)
    return ptr.value

def usm_free(h, ptr):
    assert _ze.zeMemFree(ctypes.c_void_p(h["context"]), ctypes.c_void_p(ptr)) == 0

def refused(call, exc=ValueError, words="memory space"):
    try:
        call()
    except exc as e:
        assert words in str(e), str(e)
    else:
        raise AssertionError("accepted")
"""


def run_dlpack(code, mode="plain", **kwargs):
    # The test's code dedented on its own, so that none of it joins the prelude's
    # last function; the final line proves it ran to the end.
    result = run(_PRODUCER + textwrap.dedent(code) + "\nprint('ran to the end')\n",
                 mode, **kwargs)
    assert result.stdout.endswith("ran to the end\n"), result.stdout
    return result


@pytest.mark.parametrize("mode", modes())
def test_a_level_zero_array_exports_and_imports_as_kdloneapi(mode):
    run_dlpack("""
        dev = tack.device("level_zero")
        a = tack.array(np.arange(6, dtype=np.float32), device=dev)
        assert a.__dlpack_device__() == (14, 0)
        b = tack.from_dlpack(a)  # through __dlpack__: no copy
        assert b.device == dev and b.ptr == a.ptr
        c = tack.from_dlpack(a.__dlpack__())  # a bare capsule
        assert c.device == dev and c.ptr == a.ptr
        tack.copyto(c, tack.full(6, 3.0, dtype="float32", device=dev))
        assert (a.numpy() == 3.0).all()  # one memory
        try:
            a.export_memory()
        except RuntimeError:
            pass
        else:
            raise AssertionError("exported")
    """, mode)


# Two root devices, which the stand-in is told to offer.
@standin_only
@pytest.mark.parametrize("mode", modes())
def test_device_id_is_the_root_device_index_over_all_drivers(mode):
    # Two root devices: one driver with two, or two drivers with one each.
    run_dlpack("""
        second = tack.device("level_zero:1")
        a = tack.array(np.arange(4, dtype=np.float32), device=second)
        assert a.__dlpack_device__() == (14, 1)
        b = tack.from_dlpack(a.__dlpack__())
        assert b.device == second and b.ptr == a.ptr
        # The same memory said to be device 0's is not device 0's.
        refused(lambda: tack.from_dlpack(capsule(a.ptr, 4, device_id=0)))
        # A device id past the root devices names no device; a negative one is none.
        refused(lambda: tack.from_dlpack(capsule(a.ptr, 4, device_id=2)),
                RuntimeError, "no Level Zero device 2")
        refused(lambda: tack.from_dlpack(capsule(a.ptr, 4, device_id=-1)),
                ValueError, "ordinal -1")
        assert len(deleted) == 3  # each refused capsule's deleter ran
    """, mode, TACK_STANDIN_ZE_DEVICES="1" if mode == "two-drivers" else "2")


@pytest.mark.parametrize("mode", modes())
def test_usm_of_the_adopted_context_imports_device_and_shared_not_host(mode):
    run_dlpack("""
        h = foreign_context()
        shared = tack.set_default_device("level_zero", external_context=h)
        for kind in ("device", "shared"):
            p = usm(kind, h)
            x = tack.from_dlpack(capsule(p, 16))
            assert x.device == shared and x.ptr == p
            tack.copyto(x, tack.full(16, 2.0, dtype="float32", device=shared))
            assert (x.numpy() == 2.0).all()
            y = tack.array_from_ptr(p, (16,), "float32", writable=True)
            assert y.device == shared and y.ptr == p
            del x, y
            shared.synchronize()
            usm_free(h, p)
        host = usm("host", h)
        refused(lambda: tack.from_dlpack(capsule(host, 16)))
        refused(lambda: tack.array_from_ptr(host, (16,), "float32"))
        usm_free(h, host)
        assert len(deleted) == 3  # every producer's deleter ran once
    """, mode)


# A real driver vouches for another context's pointer: the stand-in does not.
@standin_only
@pytest.mark.parametrize("mode", modes())
def test_memory_outside_the_devices_context_is_refused(mode):
    run_dlpack("""
        h = foreign_context()
        dev = tack.device("level_zero")
        tack.set_default_device(dev)
        other = usm("device", h)  # device memory of another context
        refused(lambda: tack.from_dlpack(capsule(other, 16)))
        refused(lambda: tack.array_from_ptr(other, (16,), "float32"))
        host = np.zeros(16, dtype=np.float32)  # ordinary host memory
        refused(lambda: tack.from_dlpack(capsule(host.ctypes.data, 16)))
        refused(lambda: tack.array_from_ptr(host.ctypes.data, (16,), "float32"))
        # An address no allocation holds, and the end of a freed one.
        refused(lambda: tack.array_from_ptr(0x10000, (4,), "float32"))
        usm_free(h, other)
        refused(lambda: tack.array_from_ptr(other, (16,), "float32"))
        # Tack's own array wraps.
        a = tack.zeros(16, dtype="float32", device=dev)
        w = tack.array_from_ptr(a.ptr, (16,), "float32")
        assert w.device == dev and w.ptr == a.ptr
        assert len(deleted) == 2
    """, mode)


# Two root devices, which the stand-in is told to offer.
@standin_only
@pytest.mark.parametrize("mode", modes())
def test_shared_usm_counts_for_its_own_device_or_for_any(mode):
    run_dlpack("""
        h = foreign_context(device_index=0)
        second = foreign_context(device_index=1)["device"]  # same driver and loader
        tack.set_default_device("level_zero", external_context=h)
        mine = usm("shared", h)
        anyone = usm("shared", dict(h, device=None))  # made for no device
        theirs = usm("shared", dict(h, device=second))
        for p in (mine, anyone):
            assert tack.array_from_ptr(p, (16,), "float32").ptr == p
        refused(lambda: tack.array_from_ptr(theirs, (16,), "float32"))
        refused(lambda: tack.from_dlpack(capsule(theirs, 16)))
        for p in (mine, anyone, theirs):
            usm_free(h, p)
    """, mode, TACK_STANDIN_ZE_DEVICES="2")


@pytest.mark.parametrize("mode", modes())
def test_the_cpu_refuses_level_zero_device_memory(mode):
    # Device memory said to be host memory would fault at the first host access.
    run_dlpack("""
        a = tack.zeros(6, dtype="float32", device=tack.device("level_zero"))
        refused(lambda: tack.from_dlpack(capsule(a.ptr, 6, device_type=1)))
        refused(lambda: tack.array_from_ptr(a.ptr, (6,), "float32"))  # cpu default
    """, mode)


# Two root devices, which the stand-in is told to offer.
@standin_only
@pytest.mark.parametrize("mode", modes())
def test_memory_of_another_device_is_refused(mode):
    run_dlpack("""
        first = tack.device("level_zero:0")
        b = tack.zeros(8, dtype="float32", device=tack.device("level_zero:1"))
        tack.set_default_device(first)
        refused(lambda: tack.array_from_ptr(b.ptr, (8,), "float32"))
    """, mode, TACK_STANDIN_ZE_DEVICES="1" if mode == "two-drivers" else "2")


@pytest.mark.parametrize("mode", modes())
def test_streams_on_kdloneapi_are_not_ints(mode):
    run_dlpack("""
        dev = tack.device("level_zero")
        a = tack.zeros(4, dtype="float32", device=dev)
        # A consumer of a kDLOneAPI tensor passes no int stream: None and -1 only.
        for stream in (None, -1):
            tack.from_dlpack(a.__dlpack__(stream=stream))
        for stream in (0, 1, 2, 7):
            try:
                a.__dlpack__(stream=stream)
            except BufferError as e:
                assert "stream" in str(e) and "None" in str(e), str(e)
            else:
                raise AssertionError(f"stream={stream} accepted")
        # As a consumer Tack passes none to a kDLOneAPI producer.
        p = Producer(lambda: a.__dlpack__())
        x = tack.from_dlpack(p)
        assert x.ptr == a.ptr
        assert all(call.get("stream") is None for call in p.calls), p.calls
    """, mode)


# ---- dpctl, a real kDLOneAPI peer, on Intel's OpenCL CPU device ------------------
#
# dpctl's arrays are USM of a SYCL context over OpenCL, never of a Level Zero context
# Tack holds: what this proves is Tack's reading of a real producer's capsules (the
# device id, the refusal of memory outside the device's context, no int stream passed)
# and a real consumer's refusal of Tack's memory. It is no zero-copy sharing.


def _dpctl_peer_or_skip():
    # A skip where the peer did not install; under `make test`, which installs it
    # first (TACK_REQUIRE_DPCTL_PEER=1), its absence is a failure.
    why = dpctl_peer.missing()
    if why is not None:
        if os.environ.get("TACK_REQUIRE_DPCTL_PEER") == "1":
            pytest.fail(why)
        pytest.skip(why)


@pytest.mark.parametrize("mode", modes())
def test_dpctl_capsules_are_read_and_refused_outside_the_context(mode):
    _dpctl_peer_or_skip()
    run_dlpack("""
        import dpctl.tensor as dpt
        # The child runs the prefix's SYCL and OpenCL runtimes, not .venv's.
        x = dpt.arange(8, dtype="f4")  # device USM of opencl:cpu:0's default context
        maps = open("/proc/self/maps").read().split()
        ocl = {m for m in maps if m.endswith(("/libintelocl.so", "/libsycl.so.8"))}
        assert ocl == {os.environ["OCL_ICD_FILENAMES"],
                       os.path.join(os.path.dirname(os.environ["OCL_ICD_FILENAMES"]),
                                    "libsycl.so.8")}, ocl
        assert x.__dlpack_device__() == (14, 0)
        # dpctl takes a SyclQueue or None as stream: an int is a TypeError, so a
        # refusal below (a ValueError) also shows that Tack passed none.
        refused(lambda: x.__dlpack__(stream=0), TypeError, "dpctl.SyclQueue")
        p = Producer(x.__dlpack__)
        refused(lambda: tack.from_dlpack(p), ValueError, "memory space of level_zero:0")
        assert p.calls == [{"max_version": (1, 3)}], p.calls
        tack.set_default_device(tack.device("level_zero"))
        # Tack reads the capsule, lands on level_zero:0 and finds the memory is not
        # its context's.
        refused(lambda: tack.from_dlpack(x))
        refused(lambda: tack.from_dlpack(x.__dlpack__()))
        # dpctl as consumer: Tack's memory is not in its default context either.
        a = tack.zeros(4, dtype="float32")
        refused(lambda: dpt.from_dlpack(a), BufferError, "default sycl context")
    """, mode, **dpctl_peer.child_env())
