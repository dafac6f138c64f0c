"""array_from_ptr with CUDA memory (docs/cuda.md, DLPack): one cuPointerGetAttributes
call decides; device memory of the device or managed memory is accepted, host memory
and another device's memory are ValueError, and the CPU never wraps device memory."""

from __future__ import annotations

from cuda_helpers import run


def test_own_device_memory_is_wrapped_without_a_copy(tmp_path):
    run(
        """
        tack.set_default_device("cuda")
        a = tack.array(np.arange(8, dtype=np.int32))
        calls()
        w = tack.array_from_ptr(a.ptr, (8,), tack.i32)
        cs = [c for c in calls() if c[0].startswith("cuPointer")]
        assert [c[0] for c in cs] == ["cuPointerGetAttributes"], cs
        assert w.ptr == a.ptr and not w.writable
        assert (w.numpy() == np.arange(8)).all()
        """,
        tmp_path,
    )


def test_host_memory_on_a_cuda_device_is_value_error(tmp_path):
    run(
        """
        tack.set_default_device("cuda")
        host = np.zeros(8, dtype=np.float32)
        try:
            tack.array_from_ptr(host.ctypes.data, (8,), tack.f32)
        except ValueError as e:
            assert "cuda:0" in str(e), str(e)
        else:
            raise AssertionError("a host pointer was wrapped as device memory")
        """,
        tmp_path,
    )


def test_another_devices_memory_is_value_error(tmp_path):
    run(
        """
        other = tack.zeros(8, device="cuda:1")
        tack.set_default_device("cuda:0")
        try:
            tack.array_from_ptr(other.ptr, (8,), tack.f32)
        except ValueError as e:
            assert "cuda:0" in str(e), str(e)
        else:
            raise AssertionError("cuda:1 memory was wrapped on cuda:0")
        tack.set_default_device("cuda:1")
        assert tack.array_from_ptr(other.ptr, (8,), tack.f32).numpy().sum() == 0
        """,
        tmp_path,
        TACK_STANDIN_DEVICES="2",
    )


def test_the_cpu_never_wraps_device_memory(tmp_path):
    run(
        """
        a = tack.zeros(8, device="cuda")
        try:
            tack.array_from_ptr(a.ptr, (8,), tack.f32, writable=True)  # on the cpu
        except ValueError as e:
            assert "cpu:0" in str(e), str(e)
        else:
            raise AssertionError("the CPU wrapped device memory")
        """,
        tmp_path,
    )


def test_dlpack_import_checks_the_pointer_not_only_device_id(tmp_path):
    run(
        f"""
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
        from producer import load
        prod = load()
        # kDLCUDA, device_id 0, but the data is host memory
        cap = prod.make((4,), device_type=2, device_id=0)
        try:
            tack.from_dlpack(cap)
        except ValueError as e:
            assert "cuda:0" in str(e), str(e)
        else:
            raise AssertionError("host memory imported as a CUDA tensor")
        assert prod.counts()[0] == prod.counts()[1]   # the deleter still ran
        # kDLCUDAHost (pinned host memory) imports as a CPU array
        pinned = tack.from_dlpack(prod.make((4,), device_type=3, device_id=0))
        assert pinned.device.name == "cpu" and pinned.__dlpack_device__() == (1, 0)
        """,
        tmp_path,
    )


def test_pinned_host_memory_is_host_memory(tmp_path):
    # Page-locked memory from the driver (cuMemHostAlloc, as torch.pin_memory makes
    # it) and host memory registered with it (cuMemHostRegister): the driver calls
    # both host memory, so the CPU wraps them without a copy and a CUDA device
    # refuses them, whether they come as pointers or as DLPack tensors.
    run(
        f"""
        import ctypes
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
        from producer import load
        mp = load("managed_producer")
        drv = ctypes.CDLL(os.environ["TACK_CUDA_DRIVER"])
        tack.device("cuda")

        def refused_on_cuda(p, n):
            tack.set_default_device("cuda")
            try:
                tack.array_from_ptr(p, (n,), tack.f32)
            except ValueError as e:
                assert "cuda:0" in str(e), str(e)
            else:
                raise AssertionError("host memory was wrapped as device memory")
            finally:
                tack.set_default_device("cpu")

        ptr = mp.alloc(32, pinned=True)
        host = np.ctypeslib.as_array((ctypes.c_float * 8).from_address(ptr))
        host[:] = np.arange(8)
        calls()
        w = tack.array_from_ptr(ptr, (8,), tack.f32, writable=True)   # on the cpu
        assert "cuPointerGetAttributes" in names(calls())
        assert w.device.name == "cpu" and w.ptr == ptr
        assert (np.asarray(w) == np.arange(8)).all()
        d = tack.array(w, device="cuda")             # copied up from pinned memory
        d.fill(3)
        tack.copyto(w, d)                            # and down into it
        assert (host == 3).all(), host
        refused_on_cuda(ptr, 8)
        # kDLCUDAHost: a CPU array over the same memory; kDLCUDA over it: refused
        a = tack.from_dlpack(mp.capsule(ptr, (8,), device_type=3, pinned=True))
        assert a.device.name == "cpu" and a.ptr == ptr
        assert (np.asarray(a) == 3).all()
        other = mp.alloc(32, pinned=True)
        try:
            tack.from_dlpack(mp.capsule(other, (8,), device_type=2, pinned=True))
        except ValueError as e:
            assert "cuda:0" in str(e), str(e)
        else:
            raise AssertionError("pinned host memory imported as a CUDA tensor")
        del w, a
        assert mp.counts() == (2, 2), mp.counts()
        frees = [c for c in calls() if c[0] == "cuMemFreeHost"]
        assert [c[2] for c in frees] == [0, 0], frees
        # registered host memory
        buf = np.zeros(1024, dtype=np.float32)
        assert drv.cuMemHostRegister_v2(ctypes.c_void_p(buf.ctypes.data),
                                        ctypes.c_size_t(buf.nbytes), 0) == 0
        r = tack.array_from_ptr(buf.ctypes.data, (1024,), tack.f32, writable=True)
        tack.copyto(r, tack.full(1024, 5.0, dtype=tack.f32, device="cuda"))
        assert (buf == 5).all()
        refused_on_cuda(buf.ctypes.data, 1024)
        del r
        assert drv.cuMemHostUnregister(ctypes.c_void_p(buf.ctypes.data)) == 0
        """,
        tmp_path,
    )
