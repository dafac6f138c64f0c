"""Strided CUDA memory imported with copy=None or copy=True (docs/cuda.md, DLPack):
a C-contiguous copy made on the device with 2-D copies, after the producer's pending
writes, never through the host, from device memory and from managed memory alike.
The producer is tests/python/producer/managed_producer.c on the strict stand-in."""

from __future__ import annotations

import pytest
from test_cuda_managed import run_managed

# A strided tensor over memory the producer owns, as a PyTorch tensor would be.
_CASES = """
        def device_values(n, managed):
            # n float32 values 0..n-1 in the producer's device (or managed) memory
            ptr = mp.alloc(4 * n, 0, managed=managed)
            a = tack.array(np.arange(n, dtype=np.float32), device="cuda")
            assert _drv.cuMemcpyDtoD_v2(ctypes.c_ulonglong(ptr),
                                        ctypes.c_ulonglong(a.ptr),
                                        ctypes.c_size_t(4 * n)) == 0
            assert _drv.cuCtxSynchronize() == 0
            return ptr

        _drv = ctypes.CDLL(os.environ["TACK_CUDA_DRIVER"])
        base = np.arange(24, dtype=np.float32)
        # (shape, element strides, element offset): a transpose, a column slice,
        # rows with gaps, a reversed axis, a permuted 3-D block, a broadcast axis.
        layouts = [((4, 6), (1, 4), 0), ((6,), (4,), 1), ((3, 2), (8, 1), 2),
                   ((2, 5), (12, -1), 5), ((2, 3, 4), (1, 8, 2), 0),
                   ((3, 4), (0, 1), 4)]
        def expect(shape, strides, offset):
            return np.lib.stride_tricks.as_strided(
                base[offset:], shape, [4 * s for s in strides])
"""


@pytest.mark.parametrize("managed", [False, True], ids=["device", "managed"])
@pytest.mark.parametrize("copy", ["None", "True"])
def test_strided_cuda_tensor_copies_on_the_device(tmp_path, managed, copy):
    run_managed(
        _CASES
        + f"""
        device_type = 13 if {managed} else 2
        for shape, strides, offset in layouts:
            ptr = device_values(24, {managed})
            p = Producer(ptr + 4 * offset, 24, shape=shape, strides=strides,
                         device_type=device_type)
            mp.write_async(ptr + 4 * 23, 1, 0x41C00000)  # 24.0f, still queued
            calls()
            a = tack.from_dlpack(p, copy={copy})
            ns = names(calls())
            assert p.streams == [tack_stream()], p.streams
            assert "cuMemcpy2DAsync" in ns, ns
            assert not [n for n in ns if "HtoD" in n or "DtoH" in n], ns  # no host
            assert a.device == tack.device("cuda") and a.shape == shape
            want = expect(shape, strides, offset).copy()
            want[want == 23] = 24  # the pending write came first
            assert (a.numpy() == want).all(), (shape, strides, a.numpy(), want)
        assert mp.counts()[0] == mp.counts()[1]  # every producer tensor released
        """,
        tmp_path,
    )


def test_strided_cuda_tensor_copy_false_is_refused_and_host_copy_works(tmp_path):
    run_managed(
        _CASES
        + """
        shape, strides, offset = layouts[0]
        ptr = device_values(24, False)
        try:
            tack.from_dlpack(mp.capsule(ptr, shape, strides=strides, device_type=2))
        except ValueError as e:
            assert "not C-contiguous" in str(e), e
        else:
            raise AssertionError("a strided tensor imported without a copy")
        ptr = device_values(24, False)
        h = tack.from_dlpack(mp.capsule(ptr, shape, strides=strides, device_type=2),
                             device="cpu", copy=True)
        assert h.device == tack.device("cpu")
        assert (np.asarray(h) == expect(shape, strides, offset)).all()
        """,
        tmp_path,
    )


@pytest.mark.parametrize("managed", [False, True], ids=["device", "managed"])
def test_strided_cuda_array_interface_copies_on_the_device(tmp_path, managed):
    run_managed(
        _CASES
        + f"""
        import sys
        class Interface:
            pass
        for shape, strides, offset in layouts:
            ptr = device_values(24, {managed})
            obj = Interface()
            obj.__cuda_array_interface__ = {{
                "shape": shape, "typestr": "<f4", "data": (ptr + 4 * offset, True),
                "strides": tuple(4 * s for s in strides), "version": 3,
                "stream": mp.stream(0)}}
            mp.write_async(ptr + 4 * 23, 1, 0x41C00000)  # 24.0f, still queued
            want = expect(shape, strides, offset).copy()
            want[want == 23] = 24
            for copy in (None, True):
                calls()
                refs = sys.getrefcount(obj)
                a = tack.from_dlpack(obj, copy=copy)
                ns = names(calls())
                assert "cuMemcpy2DAsync" in ns, ns
                assert not [n for n in ns if "HtoD" in n or "DtoH" in n], ns
                assert a.device == tack.device("cuda") and a.shape == shape
                assert a.writable  # a copy is Tack's own
                assert (a.numpy() == want).all(), (shape, strides, a.numpy())
                assert sys.getrefcount(obj) == refs  # nothing keeps the object
            h = tack.from_dlpack(obj, device="cpu", copy=True)
            assert (np.asarray(h) == want).all()
            try:
                tack.from_dlpack(obj)
            except ValueError as e:
                assert "copy=None or copy=True" in str(e), e
            else:
                raise AssertionError("strided memory wrapped without a copy")
        """,
        tmp_path,
    )


def test_a_failed_2d_copy_releases_everything(tmp_path):
    run_managed(
        _CASES
        + """
        shape, strides, offset = layouts[4]  # several 2-D copies
        ptr = device_values(24, False)
        try:
            tack.from_dlpack(mp.capsule(ptr, shape, strides=strides, device_type=2),
                             copy=True)
        except tack.TackError as e:
            assert "cuMemcpy2DAsync" in str(e), e
        else:
            raise AssertionError("the injected failure was not reported")
        assert mp.counts() == (1, 1)  # the producer's tensor was released once
        a = tack.from_dlpack(mp.capsule(device_values(24, False), shape,
                                        strides=strides, device_type=2), copy=True)
        assert (a.numpy() == expect(shape, strides, offset)).all()
        """,
        tmp_path,
        TACK_STANDIN_FAIL="cuMemcpy2DAsync:2",
    )
