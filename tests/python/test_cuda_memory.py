"""CUDA arrays on the strict stand-in driver (docs/cuda.md, Memory): creation, fills of
every width, copies in every direction, and the driver calls they make. The stand-in
runs queued work only at synchronization points and faults on any host access to
device memory, so a missing wait reads stale bytes and a host dereference crashes."""

from __future__ import annotations

import pytest
from cuda_helpers import FOREIGN_STREAM, run

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "float16", "float32", "float64", "vec2", "vec3", "vec4"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_create_fill_and_read_back_every_dtype(tmp_path, dtype):
    run(
        f"""
        dt = getattr(tack, {dtype!r})
        comps = {{"vec2": 2, "vec3": 3, "vec4": 4}}.get({dtype!r}, 1)
        npdt = np.dtype(dt.dtype).base
        for n in (1, 7, 1000):
            shape = (n, comps) if comps > 1 else (n,)
            z = tack.zeros((n,), dtype=dt, device="cuda")
            assert z.device.name == "cuda"
            assert (z.numpy() == 0).all()
            host = (np.arange(n * comps) % 5 + 1).astype(npdt).reshape(shape)
            a = tack.array(host, dtype=dt, device="cuda")
            assert (a.numpy() == host).all()
            # a value that is no repeated 4-byte word in 8-, 12-, 16-byte elements
            v = True if {dtype!r} == "bool" else 3
            if npdt.kind == "f":
                v = 1.5
            a.fill(v)
            assert (a.numpy() == np.full(shape, v, dtype=npdt)).all(), a.numpy()
            f = tack.full((n,), 2, dtype=dt, device="cuda")
            assert (f.numpy() == np.full(shape, 2, dtype=npdt)).all()
        """,
        tmp_path,
    )


def test_fill_uses_memset_for_repeated_words_and_doubling_otherwise(tmp_path):
    run(
        """
        a = tack.empty((1000,), dtype=tack.f64, device="cuda")
        calls()
        a.fill(0.0)                      # eight zero bytes: one 32-bit memset
        cs = names(calls())
        assert cs == ["cuMemsetD32Async"], cs
        a.fill(1.5)                      # one element from the host, then doubling
        cs = names(calls())
        assert cs[0] == "cuMemcpyHtoDAsync", cs
        assert cs.count("cuMemcpyDtoDAsync") == 10, cs   # 1 -> 1000 in 10 steps
        assert "cuMemcpyDtoH" not in " ".join(cs)
        assert (a.numpy() == 1.5).all()
        """,
        tmp_path,
    )


def test_queued_fill_is_waited_for_by_host_reads(tmp_path):
    run(
        """
        a = tack.zeros(64, dtype=tack.i32, device="cuda")
        calls()
        a.fill(9)
        assert names(calls()) == ["cuMemsetD32Async"]   # queued, the host did not wait
        assert (a.numpy() == 9).all()
        cs = names(calls())
        assert cs.index("cuStreamSynchronize") < cs.index("cuMemcpyDtoHAsync"), cs
        """,
        tmp_path,
    )


def test_copies_in_every_direction(tmp_path):
    run(
        """
        src = np.arange(12, dtype=np.float32).reshape(3, 4)
        c = tack.array(src)                               # cpu
        g = tack.empty((3, 4), dtype=tack.f32, device="cuda")
        tack.copyto(g, c)                                 # host -> device
        assert (g.numpy() == src).all()
        h = tack.zeros((3, 4), dtype=tack.f64)
        tack.copyto(h, g)                                 # device -> host, converting
        assert (h.numpy() == src).all()
        g2 = tack.zeros((3, 4), dtype=tack.f32, device="cuda")
        calls()
        tack.copyto(g2, g)                                # device -> device, one dtype
        cs = names(calls())
        assert cs == ["cuMemcpyDtoDAsync"], cs            # never through the host
        assert (g2.numpy() == src).all()
        g3 = tack.zeros((3, 4), dtype=tack.i64, device="cuda")
        tack.copyto(g3, g)                                # device -> device, converting
        assert (g3.numpy() == src).all()
        t = g.to_device(tack.device("cuda"))
        assert t.ptr != g.ptr and (t.numpy() == src).all()
        assert (g.to_device("cpu").numpy() == src).all()
        assert (c.to_device("cuda").numpy() == src).all()
        """,
        tmp_path,
    )


def test_memory_is_allocated_and_freed_on_tacks_stream(tmp_path):
    run(
        """
        a = tack.zeros(100, device="cuda")
        s = tack_stream()
        allocs = [c for c in calls() if c[0] == "cuMemAllocAsync"]
        assert len(allocs) == 1 and f"stream={s:#x}" in allocs[0][1], allocs
        del a
        frees = [c for c in calls() if c[0] == "cuMemFreeAsync"]
        assert len(frees) == 1 and f"stream={s:#x}" in frees[0][1] and frees[0][2] == 0
        z = tack.zeros(0, device="cuda")     # no bytes: no allocation at all
        assert z.numpy().shape == (0,)
        assert "cuMemAllocAsync" not in names(calls())
        """,
        tmp_path,
    )


def test_out_of_device_memory_is_memory_error(tmp_path):
    run(
        """
        try:
            tack.zeros(100, device="cuda")
        except MemoryError as e:
            assert "out of memory" in str(e)
        else:
            raise AssertionError("the injected failure was not reported")
        assert tack.zeros(3, device="cuda").numpy().tolist() == [0, 0, 0]
        """,
        tmp_path,
        TACK_STANDIN_FAIL="cuMemAllocAsync:1",
    )


def test_release_from_another_thread_sets_the_context_there(tmp_path):
    run(
        """
        import threading
        arrays = [tack.zeros(10, device="cuda") for _ in range(3)]
        calls()
        def drop():
            arrays.clear()
        t = threading.Thread(target=drop)
        t.start(); t.join()
        cs = calls()
        frees = [c for c in cs if c[0] == "cuMemFreeAsync"]
        assert len(frees) == 3 and all(c[2] == 0 for c in frees), cs
        assert "cuCtxSetCurrent" in [c[0] for c in cs], cs
        """,
        tmp_path,
    )


def test_arrays_alive_at_interpreter_exit_do_not_crash(tmp_path):
    result = run(
        """
        keep = [tack.zeros(10, device="cuda"), tack.empty(4, device="cuda",
                                                          exportable=True)]
        exported = keep[0].__dlpack__(stream=1)   # never consumed
        sys.keep = keep
        """,
        tmp_path,
    )
    assert result.returncode == 0
    log = (tmp_path / "driver.log").read_text().splitlines()
    # whatever was released at exit was released without a driver error
    assert not [line for line in log if line.startswith(("cuMemFree", "cuMemUnmap"))
                and not line.endswith("-> 0")], log[-20:]


def test_arrays_released_after_the_driver_is_torn_down(tmp_path):
    # The driver goes first (as it does when another library's exit handler or a
    # daemon thread releases an array late): every release meets
    # CUDA_ERROR_DEINITIALIZED and leaks the memory without a crash, a free, or a
    # message.
    result = run(
        """
        import atexit, ctypes
        keep = [tack.zeros(10, device="cuda"), tack.empty(4, device="cuda",
                                                          exportable=True)]
        exported = keep[0].__dlpack__(stream=1)   # never consumed
        view = keep[0].reshape((2, 5))
        handle = keep[1].export_memory().handle
        teardown = ctypes.CDLL(os.environ["TACK_CUDA_DRIVER"]).tack_standin_cuda_teardown
        atexit.register(teardown)                 # runs before the arrays go
        """,
        tmp_path,
    )
    assert result.returncode == 0 and not result.stderr, result.stderr
    log = (tmp_path / "driver.log").read_text().splitlines()
    torn = log.index("tack_standin_cuda_teardown() -> 0")
    after = [line for line in log[torn + 1:] if not line.startswith("cuGetError")]
    # at least one attempt per buffer (the plain one, the exportable one), each
    # stopped at its first call
    assert len(after) >= 2 and set(after) == {"cuCtxGetCurrent() -> 4"}, after


def test_freeing_an_exported_buffer_first_waits_for_the_default_stream(tmp_path):
    run(
        """
        a = tack.zeros(64, device="cuda")
        b = tack.zeros(64, device="cuda")
        a.__dlpack__(stream=1)                 # exported: a consumer may still read
        calls()
        del a
        ns = names(calls())
        assert ns == ["cuEventRecord", "cuStreamWaitEvent", "cuMemFreeAsync"], ns
        del b                                  # never exported: just the free
        assert names(calls()) == ["cuMemFreeAsync"]
        """,
        tmp_path,
    )


@pytest.mark.parametrize("stream", ["1", "2", "foreign_stream()"])
def test_to_device_copies_after_the_given_streams_work(tmp_path, stream):
    run(
        FOREIGN_STREAM
        + f"""
        a = tack.array(np.arange(8, dtype=np.float32), device="cuda")
        tack.synchronize()
        s = {stream}
        pending_fill(a.ptr, 8, 0x40E00000, s)  # 7.0f, queued on s
        calls()
        b = a.to_device("cuda", stream=s)
        # Tack's stream waits for s, then copies; then s waits for the copy.
        assert_between_streams(calls(), s, "cuMemcpyDtoDAsync")
        assert (b.numpy() == 7).all(), b.numpy()
        # To the host: the copy follows s as well.
        pending_fill(a.ptr, 8, 0x41000000, s)  # 8.0f
        h = a.to_device("cpu", stream=s)
        assert (np.asarray(h) == 8).all(), np.asarray(h)
        # From the host: the stream is the destination's.
        pending_fill(b.ptr, 8, 0x41100000, s)  # 9.0f, then overwritten by the copy
        c = tack.array(np.ones(8, dtype=np.float32)).to_device(b.device, stream=s)
        calls()
        tack.copyto(b, c)
        assert (b.numpy() == 1).all(), b.numpy()
        """,
        tmp_path,
    )


def test_to_device_to_another_gpu_follows_the_sources_stream(tmp_path):
    run(
        FOREIGN_STREAM
        + """
        a = tack.array(np.arange(8, dtype=np.float32), device="cuda:0")
        tack.synchronize()
        s = foreign_stream()  # a stream of cuda:0, the source's device
        pending_fill(a.ptr, 8, 0x40E00000, s)  # 7.0f
        b = a.to_device("cuda:1", stream=s)
        assert b.device == tack.device("cuda", 1)
        assert (b.numpy() == 7).all(), b.numpy()
        """,
        tmp_path,
        TACK_STANDIN_DEVICES="2",
    )


def test_copies_between_two_gpus_go_peer_to_peer_never_through_the_host(tmp_path):
    run(
        """
        import re
        a = tack.array(np.arange(1000, dtype=np.float32), device="cuda:0")
        b = tack.zeros(1000, device="cuda:1")
        with open(_log) as f:
            s0, s1 = (int(m, 16) for m in
                      re.findall(r"cuStreamCreate\\(flags=1, stream=(0x[0-9a-f]+)\\)",
                                 f.read()))
        for copy in (lambda: a.to_device("cuda:1"), lambda: tack.copyto(b, a)):
            a.fill(5)                   # queued on cuda:0: the copy must follow it
            calls()
            c = copy()
            cs = [x for x in calls() if not x[0].startswith("cuCtx")]
            ns = [x[0] for x in cs]
            assert not [n for n in ns if "HtoD" in n or "DtoH" in n], ns  # no host
            assert "cuStreamSynchronize" not in ns, ns                     # queued
            i = ns.index("cuMemcpyPeerAsync")
            assert f"stream={s1:#x}" in cs[i][1] and "n=4000" in cs[i][1], cs[i]
            # cuda:1's stream waits for cuda:0's work before the copy, and cuda:0's
            # stream (where the source is written and freed) waits for the copy.
            before = [x for x in cs[:i] if x[0] in ("cuEventRecord", "cuStreamWaitEvent")]
            after = [x for x in cs[i:] if x[0] in ("cuEventRecord", "cuStreamWaitEvent")]
            assert [x[0] for x in before] == ["cuEventRecord", "cuStreamWaitEvent"], cs
            assert f"stream={s0:#x}" in before[0][1] and f"stream={s1:#x}" in before[1][1]
            assert [x[0] for x in after] == ["cuEventRecord", "cuStreamWaitEvent"], cs
            assert f"stream={s1:#x}" in after[0][1] and f"stream={s0:#x}" in after[1][1]
            assert all(x[2] == 0 for x in cs), cs
            a.fill(6)                   # after the copy on cuda:0's stream
            out = (c if c is not None else b).numpy()
            assert (out == 5).all(), out
        del a                           # freed on cuda:0's stream, after the copy
        assert (b.numpy() == 5).all()
        """,
        tmp_path,
        TACK_STANDIN_DEVICES="2",
    )


def test_to_device_stream_none_and_minus_one_order_nothing(tmp_path):
    run(
        FOREIGN_STREAM
        + """
        a = tack.zeros(8, device="cuda")
        for s in (None, -1):
            calls()
            b = a.to_device("cuda", stream=s)
            ns = names(calls())
            assert "cuStreamWaitEvent" not in ns and "cuEventRecord" not in ns, ns
            assert (b.numpy() == 0).all()
        """,
        tmp_path,
    )


def test_to_device_between_host_arrays_takes_no_stream(tmp_path):
    run(
        """
        h = tack.zeros(8)
        assert (h.to_device("cpu", stream=-1).numpy() == 0).all()
        try:
            h.to_device("cpu", stream=1)
        except ValueError as e:
            assert isinstance(e, BufferError), type(e)
        else:
            raise AssertionError("a stream for a copy between host arrays")
        """,
        tmp_path,
    )


@pytest.mark.torch
@pytest.mark.cuda
def test_to_device_follows_a_torch_stream_on_a_gpu():
    import os

    import numpy as np

    import tack

    if os.environ.get("TACK_REQUIRE_CUDA") == "1":  # a GPU check: no skipping
        import torch
    else:
        torch = pytest.importorskip("torch")
    n = 1 << 20
    a = tack.zeros(n, device="cuda")
    t = torch.from_dlpack(a)  # torch writes into Tack's memory ...
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)  # ... on a stream that is still busy
        t.fill_(3.0)
    b = a.to_device("cuda", stream=side.cuda_stream)
    assert (b.numpy() == 3).all()
    with torch.cuda.stream(side):
        t.fill_(4.0)
    h = a.to_device("cpu", stream=side.cuda_stream)
    assert (np.asarray(h) == 4).all()
