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
