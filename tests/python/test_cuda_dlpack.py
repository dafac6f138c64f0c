"""DLPack with kDLCUDA both ways (docs/cuda.md, DLPack) on the strict stand-in: the
Array API's stream= values as a producer, Tack's stream passed as a consumer, the
exchange API's streams, and the copy rules. Real peers are in test_cuda_peers.py."""

from __future__ import annotations

import pytest
from cuda_helpers import FOREIGN_STREAM, run


@pytest.mark.parametrize("stream", ["1", "2", "foreign_stream()"])
def test_export_orders_the_consumer_stream_without_blocking(tmp_path, stream):
    run(
        FOREIGN_STREAM
        + f"""
        a = tack.zeros(32, dtype=tack.f32, device="cuda")
        a.fill(4)                                     # queued
        s = want = {stream}
        calls()
        for versioned in (None, (1, 0)):
            cap = a.__dlpack__(stream=s, max_version=versioned)
            cs = calls()
            ns = names(cs)
            assert "cuStreamSynchronize" not in ns, ns
            rec = [c for c in cs if c[0] == "cuEventRecord"]
            wait = [c for c in cs if c[0] == "cuStreamWaitEvent"]
            assert len(rec) == 1 and f"stream={{tack_stream():#x}}" in rec[0][1], cs
            assert len(wait) == 1 and f"stream={{want:#x}}" in wait[0][1], cs
            assert all(c[2] == 0 for c in cs), cs
        calls()
        a.fill(1)                                     # shared now
        assert names(calls())[-1] == "cuStreamSynchronize"
        """,
        tmp_path,
    )


@pytest.mark.parametrize("ordered", [True, False])
def test_new_memory_reaches_the_consumers_stream_in_stream_order(tmp_path, ordered):
    # Tack allocates in stream order on its own stream; a consumer writing on its
    # stream is ordered after the allocation by __dlpack__(stream=s). A consumer that
    # took the bare pointer without it races the allocation: the stand-in faults.
    result = run(
        FOREIGN_STREAM
        + f"""
        a = tack.empty(8, dtype=tack.f32, device="cuda")   # queued on Tack's stream
        s = foreign_stream()
        if {ordered}:
            cap = a.__dlpack__(stream=s)
        pending_fill(a.ptr, 8, 0x40E00000, s)            # 7.0f, on the consumer's
        assert _drv.cuStreamSynchronize(ctypes.c_void_p(s)) == 0
        assert (a.numpy() == 7).all()
        """,
        tmp_path,
        check=ordered,
    )
    if not ordered:
        assert result.returncode != 0
        assert "AssertionError" in result.stderr, result.stderr
        log = (tmp_path / "driver.log").read_text()
        assert "cuStreamSynchronize(stream=0x" in log and ") -> 700" in log, log[-500:]


@pytest.mark.parametrize("stream", ["-1", "None"])
def test_stream_none_and_minus_one_wait_on_the_host(tmp_path, stream):
    # None is what a consumer passes when it did not think about streams: the host
    # waits for the launches queued so far (share()), so any stream may read.
    run(
        f"""
        a = tack.zeros(8, device="cuda")
        for versioned in (None, (1, 0)):
            a.fill(3)                                 # queued
            calls()
            a.__dlpack__(stream={stream}, max_version=versioned)
            ns = names(calls())
            assert ns == ["cuStreamSynchronize"], ns
        calls()
        a.__dlpack__()                                # no keyword is None
        assert names(calls()) == ["cuStreamSynchronize"]
        """,
        tmp_path,
    )


@pytest.mark.parametrize("bad", ["0", "-2", "'1'", "1.0"])
def test_refused_stream_values(tmp_path, bad):
    run(
        f"""
        a = tack.zeros(8, device="cuda")
        # __dlpack__ and to_device (either way) take the same stream values.
        for call in (lambda: a.__dlpack__(stream={bad}),
                     lambda: a.to_device("cuda", stream={bad}),
                     lambda: a.to_device("cpu", stream={bad})):
            try:
                call()
            except BufferError as e:
                assert isinstance(e, ValueError)
            else:
                raise AssertionError("stream={bad} was accepted")
        """,
        tmp_path,
    )


def test_cpu_arrays_still_refuse_streams(tmp_path):
    run(
        """
        a = tack.zeros(8)
        a.__dlpack__(stream=None); a.__dlpack__(stream=-1)
        for s in (1, 2, 12345):
            try:
                a.__dlpack__(stream=s)
            except BufferError:
                pass
            else:
                raise AssertionError(s)
        """,
        tmp_path,
    )


def test_from_dlpack_passes_tacks_stream_and_max_version(tmp_path):
    run(
        """
        src = tack.array(np.arange(6, dtype=np.float32), device="cuda")
        seen = []
        class Producer:
            def __dlpack_device__(self):
                return src.__dlpack_device__()
            def __dlpack__(self, **kw):
                seen.append(kw)
                return src.__dlpack__(**kw)
        b = tack.from_dlpack(Producer())
        assert seen == [{"max_version": (1, 3), "stream": tack_stream()}], seen
        assert b.ptr == src.ptr and (b.numpy() == np.arange(6)).all()
        """,
        tmp_path,
    )


def test_cpu_producers_get_no_stream(tmp_path):
    run(
        """
        seen = []
        src = np.arange(3.0)
        class Producer:
            def __dlpack_device__(self):
                return (1, 0)
            def __dlpack__(self, **kw):
                seen.append(kw)
                return src.__dlpack__(**kw)
        tack.zeros(1, device="cuda")
        tack.from_dlpack(Producer())
        assert seen == [{"max_version": (1, 3)}], seen
        """,
        tmp_path,
    )


def test_exchange_api_reports_tacks_stream_and_orders_after_the_producer(tmp_path):
    run(
        """
        a = tack.array(np.arange(4, dtype=np.float32), device="cuda")
        calls()
        b = tack.from_dlpack(a)            # through the C exchange API
        assert b.ptr == a.ptr
        cs = calls()
        # the producer (Tack) reports its stream; ordering a stream after itself is
        # nothing to do, so no event and no host wait
        assert "cuStreamSynchronize" not in names(cs), cs
        assert "cuStreamWaitEvent" not in names(cs), cs
        assert (b.numpy() == np.arange(4)).all()
        """,
        tmp_path,
    )


def test_device_cpu_for_a_cuda_tensor_never_copies_unless_asked(tmp_path):
    run(
        """
        a = tack.array(np.arange(5, dtype=np.float64), device="cuda")
        calls()
        try:
            tack.from_dlpack(a, device="cpu")
        except RuntimeError as e:
            assert isinstance(e, BufferError)
        else:
            raise AssertionError("a CUDA tensor was imported on the CPU")
        assert "cuMemcpyDtoHAsync" not in names(calls())
        h = tack.from_dlpack(a, device="cpu", copy=True)
        assert h.device.name == "cpu" and (h.numpy() == np.arange(5)).all()
        calls()
        d = tack.from_dlpack(a, copy=True)       # same device: device to device
        ns = names(calls())
        assert "cuMemcpyDtoDAsync" in ns and "cuMemcpyDtoHAsync" not in ns, ns
        assert d.ptr != a.ptr and (d.numpy() == np.arange(5)).all()
        """,
        tmp_path,
    )


def test_dl_device_host_copy_of_a_cuda_array(tmp_path):
    run(
        """
        a = tack.array(np.arange(4, dtype=np.int64), device="cuda")
        cap = a.__dlpack__(dl_device=(1, 0), copy=True, max_version=(1, 0))
        h = np.from_dlpack(type("C", (), {
            "__dlpack__": lambda self, **kw: cap,
            "__dlpack_device__": lambda self: (1, 0)})())
        assert (h == np.arange(4)).all()
        try:
            a.__dlpack__(dl_device=(1, 0))
        except BufferError:
            pass
        else:
            raise AssertionError("a host export without copy=True")
        """,
        tmp_path,
    )


def test_consumer_deleter_from_another_thread_releases_exactly_once(tmp_path):
    run(
        f"""
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
        from producer import load
        prod = load()
        a = tack.zeros(16, device="cuda")
        ptr = a.ptr
        h = prod.adopt(a.__dlpack__(stream=1, max_version=(1, 0)))
        del a
        calls()
        prod.delete_in_thread(h)
        frees = [c for c in calls() if c[0] == "cuMemFreeAsync"]
        assert len(frees) == 1 and f"ptr={{ptr:#x}}" in frees[0][1], frees
        assert frees[0][2] == 0
        """,
        tmp_path,
    )
