"""@tack.kernel on CUDA arrays.

Under the stand-in driver (cuda_helpers.run: a child interpreter per case) a launch is
compiled by NVRTC, loaded with cuModuleLoadData and queued with cuLaunchKernel like on
a GPU; the stand-in then runs the kernel's CPU twin (the C build of the same plan) on
the translated parameter block. These tests prove the results equal the CPU's, the
launch geometry, the stream order, the waits for shared buffers and the parameter
packing, from the driver's call log. The tests marked `cuda` repeat the results on a
real GPU (scripts/gpu_check.sh).
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

import tack

# radius_squared and the 3-D stencil are the language tests' own; the
# reduction is the reductions tests'.
KERNELS = '''
import math

import tack
from test_kernels_language import radius_squared, stencil as stencil7
from test_kernels_reductions import many, total


@tack.kernel
def saxpy(out, a, x, y):
    for i in range(out.shape[0]):
        out[i] = a * x[i] + y[i]


@tack.kernel
def prefix(out, x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i]
        out[i] = acc


@tack.kernel
def upto(out, n):
    for i in range(n[0]):
        out[i] = float(i) * 2.0


@tack.kernel
def mixed(out, x, k, scale, flip):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            v = x[i, j] * scale + float(k)
            if flip:
                v = -v
            out[i, j] = v


@tack.kernel
def count_in(x, lo, hi):
    n = 0
    for i in range(x.shape[0]):
        if x[i] >= lo and x[i] < hi:
            n += 1
    return n


@tack.kernel
def lowest(x):
    m = x[0]
    for i in range(x.shape[0]):
        m = min(m, x[i])
    return m


@tack.kernel
def sum_upto(x, n):
    s = 0.0
    for i in range(n[0]):
        s += x[i]
    return s


@tack.kernel
def last_of(x):
    k = -1
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            k = i
            break
    return k


@tack.kernel
def scaled_from(x, init, k):
    s = init
    for i in range(x.shape[0]):
        s += x[i]
    return s * k


@tack.kernel
def fill_and_count(out, v):
    for i in range(out.shape[0]):
        out[i] = v
    return out.shape[0] * 2


@tack.kernel(debug=True)
def gather(out, x, idx):
    for i in range(out.shape[0]):
        out[i] = x[idx[i]]


@tack.kernel(debug=True)
def divide(out, a, b):
    for i in range(out.shape[0]):
        out[i] = a[i] // b[i]


@tack.kernel(debug=True)
def first_n(out, n):
    for i in range(n):
        out[i] = 1.0


@tack.func
def lgamma_of_first(p):
    return math.lgamma(p[0])  # lgamma sets signgam: no compiler drops the call


@tack.kernel
def offset_by_first(x, out):
    base = lgamma_of_first(x)
    for i in range(out.shape[0]):
        out[i] = x[i] - base


@tack.kernel(debug=True)
def per_block(out, n, parts):
    step = n // parts
    for i in range(out.shape[0]):
        out[i] = float(i * step)
'''


def _run(code: str, tmp_path, **env):
    from cuda_helpers import run

    (tmp_path / "kmod.py").write_text(KERNELS)
    return run(f"sys.path.insert(0, {str(tmp_path)!r})\nfrom kmod import *\n"
               + textwrap.dedent(code), tmp_path,
               TACK_CACHE_DIR=str(tmp_path / "cache"), **env)


def _nvrtc_or_skip():
    try:
        tack._tack._nvrtc_version()
    except tack.TackError as e:  # no NVRTC on this machine: nothing can build
        pytest.skip(f"NVRTC is not available: {e}")


@pytest.fixture(autouse=True)
def _needs_nvrtc(request):
    if "cuda" not in request.keywords:
        _nvrtc_or_skip()


def test_kernels_on_cuda_arrays_give_the_cpus_results(tmp_path):
    _run(
        """
        def both(kernel, *args):
            # the same call on CPU copies and on CUDA copies of the arrays
            cpu = [tack.array(a) if isinstance(a, np.ndarray) else a for a in args]
            gpu = [tack.array(a, device="cuda") if isinstance(a, np.ndarray) else a
                   for a in args]
            kernel(*cpu)
            kernel(*gpu)
            for c, g in zip(cpu, gpu, strict=True):
                if isinstance(c, tack.Array):
                    assert g.device.backend == "cuda"
                    assert np.array_equal(c.numpy(), g.numpy(), equal_nan=True), (
                        kernel.__name__, c.numpy(), g.numpy())
            return gpu

        nx, ny = 5, 4
        for dt in (np.float32, np.float64):
            (v,) = both(radius_squared, np.zeros(nx * ny * 6, dt), nx, ny)[:1]
            assert v.numpy()[0] == 2.0**2 + 1.5**2 + 4.0  # not the 0 it started as
        rng = np.random.default_rng(1)
        x = rng.standard_normal(1000).astype(np.float32)
        y = rng.standard_normal(1000).astype(np.float32)
        out = both(saxpy, np.zeros(1000, np.float32), np.float32(0.7), x, y)[0]
        ref = np.float32(0.7) * x + y  # float32 arithmetic, no contraction
        assert np.array_equal(out.numpy(), ref)
        u = rng.standard_normal((6, 7, 8)).astype(np.float32)
        out = both(stencil7, u, np.zeros((6, 7, 8), np.float32))[1]
        c = u[1:-1, 1:-1, 1:-1]
        assert np.allclose(out.numpy()[1:-1, 1:-1, 1:-1],
                           u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1]
                           + u[1:-1, 2:, 1:-1] + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:]
                           - 6 * c, atol=1e-5)
        """,
        tmp_path,
    )


@pytest.mark.parametrize("stream", ["1", "2", "foreign_stream()"])
def test_a_launch_on_a_given_stream_follows_it_and_is_followed_by_it(tmp_path, stream):
    from cuda_helpers import FOREIGN_STREAM

    _run(
        FOREIGN_STREAM
        + f"""
        import ctypes
        n = 1000
        x = tack.zeros(n, device="cuda")
        out = tack.zeros(n, device="cuda")
        x.device.synchronize()                      # the zeros are written
        s = {stream}
        pending_fill(x.ptr, n, 0x40E00000, s)       # 7.0f, queued on s
        calls()
        saxpy(out, np.float32(2.0), x, x, stream=s)
        cs = calls()
        # Tack's stream waits for s, the launch is queued; then s waits for it.
        assert_between_streams(cs, s, "cuLaunchKernel")
        launch = [c for c in cs if c[0] == "cuLaunchKernel"][0]
        assert f"stream={{tack_stream():#x}}" in launch[1], launch
        # Work queued on s after the launch sees what it wrote.
        host = (ctypes.c_float * n)()
        assert _drv.cuMemcpyDtoHAsync_v2(host, ctypes.c_ulonglong(out.ptr),
                                         ctypes.c_size_t(4 * n),
                                         ctypes.c_void_p(s)) == 0
        assert _drv.cuStreamSynchronize(ctypes.c_void_p(s)) == 0
        assert set(host) == {{21.0}}, set(host)
        assert (out.numpy() == 21).all()
        """,
        tmp_path,
    )


def test_a_launch_refuses_the_streams_to_device_refuses(tmp_path):
    _run(
        """
        x = tack.full(8, 1.0, device="cuda")
        out = tack.zeros(8, device="cuda")
        for bad in (0, -2, 3, "1", 1.0):
            calls()
            try:
                saxpy(out, 1.0, x, x, stream=bad)
            except ValueError as e:
                assert isinstance(e, BufferError), type(e)
            else:
                raise AssertionError(f"stream={bad!r} was accepted")
            assert "cuLaunchKernel" not in names(calls())
        for s in (None, -1):
            calls()
            saxpy(out, 1.0, x, x, stream=s)
            ns = names(calls())
            assert "cuStreamWaitEvent" not in ns and "cuEventRecord" not in ns, ns
        assert (out.numpy() == 2).all()
        """,
        tmp_path,
    )


def test_a_launch_is_queued_on_tacks_stream_and_a_host_read_waits_for_it(tmp_path):
    _run(
        """
        x = tack.array(np.arange(1000, dtype=np.float32), device="cuda")
        out = tack.zeros(1000, dtype=tack.f32, device="cuda")
        calls()
        saxpy(out, np.float32(2), x, x)
        first = names(calls())
        # the first launch on a context compiles and loads the module, then queues
        assert first[-1] == "cuLaunchKernel", first
        assert "cuModuleLoadData" in first and "cuStreamSynchronize" not in first
        assert "cuOccupancyMaxPotentialBlockSize" in first
        saxpy(out, np.float32(3), x, x)
        cs = [c for c in calls() if not c[0].startswith("cuCtx")]
        # the module is cached per context: the second launch only queues
        assert [c[0] for c in cs] == ["cuLaunchKernel"], cs
        assert f"stream={tack_stream():#x}," in cs[0][1], cs
        # the occupancy API's block (the stand-in answers 1024 threads), as many
        # blocks as the trips need
        assert "grid=1x1x1, block=1024x1x1" in cs[0][1], cs
        got = out.numpy()
        assert names(calls()) == ["cuStreamSynchronize", "cuMemcpyDtoHAsync",
                                  "cuStreamSynchronize"]
        assert np.array_equal(got, 4 * np.arange(1000, dtype=np.float32))
        """,
        tmp_path,
    )


def test_a_launch_with_a_shared_argument_completes_before_returning(tmp_path):
    _run(
        """
        a = tack.array(np.arange(64, dtype=np.float32), device="cuda")
        out = tack.zeros(64, dtype=tack.f32, device="cuda")
        b = tack.zeros(64, dtype=tack.f32, device="cuda")
        c = tack.zeros(64, dtype=tack.f32, device="cuda")
        tack.set_default_device("cuda")  # array_from_ptr wraps on the default device
        wrapped = tack.array_from_ptr(b.ptr, (64,), tack.f32, writable=True)
        imported = tack.from_dlpack(c)  # exporting shares c's buffer too
        saxpy(out, np.float32(1), a, a)  # builds; nothing shared
        calls()
        saxpy(out, np.float32(1), a, a)
        assert names(calls()) == ["cuLaunchKernel"]
        for args in ((wrapped, np.float32(2), a, a), (out, np.float32(2), a, imported),
                     (c, np.float32(2), a, a)):
            saxpy(*args)
            assert names(calls()) == ["cuLaunchKernel", "cuStreamSynchronize"], args
        for got, times in ((out, 2), (b, 3), (c, 3)):
            assert np.array_equal(got.numpy(), times * a.numpy()), got.numpy()
        """,
        tmp_path,
    )


def test_parameter_packing_and_trip_counts(tmp_path):
    _run(
        """
        import struct
        def launched():
            (c,) = [c for c in calls() if c[0] == "cuLaunchKernel"]
            return c[1]

        rng = np.random.default_rng(2)
        for shape in ((1, 1), (3, 300), (1025, 2), (0, 5), (4, 0)):
            x = rng.standard_normal(shape)
            gx = tack.array(x, device="cuda")
            go = tack.zeros(shape, dtype=tack.f64, device="cuda")
            calls()
            mixed(go, gx, -3, 0.25, True)
            if shape[0] == 0:
                # no trip of the parallel (outer) loop: no launch at all
                assert "cuLaunchKernel" not in names(calls())
                continue
            line = launched()
            # the block: out's pointer and 2 extents, x's, then 8 bytes per scalar,
            # then the context pointer (the log shows the first 48 bytes; the
            # scalars show in the results)
            hexed = re.search(r"params=(\\d+) bytes ([0-9a-f]+)", line)
            assert int(hexed.group(1)) == 8 * (3 + 3 + 3) + 8, line
            words = struct.unpack("<QqqQqq", bytes.fromhex(hexed.group(2))[:48])
            assert words == (go.ptr, *shape, gx.ptr, *shape), words
            blocks = -(-shape[0] // 1024)  # the outer loop is the parallel one
            assert f"grid={blocks}x1x1, block=1024x1x1" in line, line
            assert np.array_equal(go.numpy(), -(x * 0.25 - 3.0))

        # a big trip count: the grid is capped to fill the device (the stand-in's
        # occupancy answer: 132 SMs of 2048 threads, 264 blocks of 1024), the
        # grid-stride loop does the rest
        n = 264 * 1024 + 1000
        v = tack.zeros(n, dtype=tack.f32, device="cuda")
        calls()
        radius_squared(v, 64, 64)
        assert "grid=264x1x1, block=1024x1x1" in launched()
        c = tack.zeros(n, dtype=tack.f32)
        radius_squared(c, 64, 64)
        assert np.array_equal(v.numpy(), c.numpy())

        # a serial kernel runs as one thread, in Python's order
        x = tack.array(np.arange(300, dtype=np.float32), device="cuda")
        o = tack.zeros(300, dtype=tack.f32, device="cuda")
        calls()
        prefix(o, x)
        assert "grid=1x1x1, block=1x1x1" in launched()
        assert np.array_equal(o.numpy(), np.cumsum(np.arange(300, dtype=np.float32)))
        """,
        tmp_path,
    )


def test_a_trip_count_read_from_an_array_fills_the_device(tmp_path):
    # The host cannot read n[0] (device memory): every thread computes the trip
    # count itself, and the grid is the one that fills the device.
    _run(
        """
        from tack.kernel import generate_cuda
        sig = (("array", "float32", 1), ("array", "int64", 1))
        assert not generate_cuda(upto, sig).host_trips
        o = tack.zeros(1000, dtype=tack.f32, device="cuda")
        n = tack.array(np.array([700]), device="cuda")
        calls()
        upto(o, n)
        (line,) = [c[1] for c in calls() if c[0] == "cuLaunchKernel"]
        assert "grid=264x1x1, block=1024x1x1" in line, line
        want = np.zeros(1000, dtype=np.float32)
        want[:700] = 2.0 * np.arange(700)
        assert np.array_equal(o.numpy(), want)
        """,
        tmp_path,
    )


def test_a_trip_count_near_int64_max_fills_the_device(tmp_path):
    # rounding such a count up to whole blocks must not overflow: the grid is the
    # one that fills the device, as for any count above it (the debug build stops
    # at out[4], on the CPU twin and on a GPU alike; the twin runs on one thread,
    # since the CPU pool's chunk counter itself overflows past such a count)
    _run(
        """
        out = tack.zeros(4, dtype=tack.f64, device="cuda")
        for n in (10**6, 2**63 - 1):
            calls()
            try:
                first_n(out, n)
            except IndexError:
                pass
            else:
                raise AssertionError("no error")
            (line,) = [c[1] for c in calls() if c[0] == "cuLaunchKernel"]
            assert "grid=264x1x1, block=1024x1x1" in line, (n, line)
        """,
        tmp_path,
        TACK_NUM_THREADS="1",
    )


def test_without_the_occupancy_api_blocks_are_256_threads_filling_the_device(tmp_path):
    # The 65th entry point resolved is cuOccupancyMaxPotentialBlockSize (the last of
    # cuda_abi.h's list): a driver that lacks it leaves launches on a fixed block.
    _run(
        """
        n = 132 * 8 * 256 + 1000
        v = tack.zeros(n, dtype=tack.f32, device="cuda")
        with open(os.environ["TACK_STANDIN_LOG"]) as f:
            procs = re.findall(r"cuGetProcAddress\\((\\w+),", f.read())
        assert procs[64] == "cuOccupancyMaxPotentialBlockSize", procs
        calls()
        radius_squared(v, 64, 64)
        cs = calls()
        assert "cuOccupancyMaxPotentialBlockSize" not in names(cs)
        (line,) = [c[1] for c in cs if c[0] == "cuLaunchKernel"]
        assert "grid=1056x1x1, block=256x1x1" in line, line  # 132 SMs * 2048 / 256
        c = tack.zeros(n, dtype=tack.f32)
        radius_squared(c, 64, 64)
        assert np.array_equal(v.numpy(), c.numpy())
        """,
        tmp_path,
        TACK_STANDIN_FAIL="cuGetProcAddress:65:500",
    )


def test_mixing_cpu_and_cuda_arrays_is_value_error(tmp_path):
    _run(
        """
        g = tack.zeros(8, dtype=tack.f32, device="cuda")
        c = tack.zeros(8, dtype=tack.f32)
        for args in ((g, np.float32(1), c, g), (c, np.float32(1), g, c)):
            try:
                saxpy(*args)
            except ValueError as e:
                assert "memory domains" in str(e), e
            else:
                raise AssertionError("launched")
        assert "cuLaunchKernel" not in names(calls())
        """,
        tmp_path,
    )


def test_reductions_give_the_cpus_results(tmp_path):
    # the stand-in computes a launch with the CPU build of the same plan, so even a
    # float sum equals the CPU's to the bit here (a GPU's tree differs; see the
    # GPU test below)
    _run(
        """
        rng = np.random.default_rng(7)
        x = rng.standard_normal(100_003)
        a = rng.integers(-1000, 1000, 200_001).astype(np.int64)
        cx, gx = tack.array(x), tack.array(x, device="cuda")
        ca, ga = tack.array(a), tack.array(a, device="cuda")
        for kernel, cargs, gargs in (
                (total, (cx,), (gx,)), (lowest, (cx,), (gx,)),
                (count_in, (cx, -0.5, 0.5), (gx, -0.5, 0.5)),
                (many, (ca,), (ga,)), (scaled_from, (cx, 0.5, 3), (gx, 0.5, 3))):
            want = kernel(*cargs)
            got = kernel(*gargs)
            assert type(got) is type(want) and got == want, (kernel.__name__, got, want)
        # many: int sum, product, min, max and bit reductions in one kernel
        want = many.__wrapped__(a.astype(object))  # Python ints: no wrapping
        assert many(ga) == (want + 2**63) % 2**64 - 2**63
        assert count_in(gx, -0.5, 0.5) == int(((x >= -0.5) & (x < 0.5)).sum())
        assert lowest(gx) == x.min()
        f32 = tack.array(x.astype(np.float32), device="cuda")
        assert total(f32) == total(tack.array(x.astype(np.float32)))
        """,
        tmp_path,
    )


def test_returned_values_of_serial_and_parallel_kernels(tmp_path):
    _run(
        """
        x = np.zeros(500)
        x[321] = 1.0
        g = tack.array(x, device="cuda")
        calls()
        assert last_of(g) == 321  # serial: the body stores the value in the record
        cs = calls()
        (line,) = [c[1] for c in cs if c[0] == "cuLaunchKernel"]
        assert "fn=tack_kernel_body," in line and "grid=1x1x1, block=1x1x1" in line
        assert last_of(tack.array(np.zeros(4), device="cuda")) == -1
        assert scaled_from(g, 0.0, 5) == 5.0  # parallel: the finish stores it
        # parallel, returning without a reduction: the finish folds no partial
        o = tack.zeros(3000, dtype=tack.f64, device="cuda")
        calls()
        assert fill_and_count(o, 1.5) == 6000
        body, finish = [c[1] for c in calls() if c[0] == "cuLaunchKernel"]
        assert "fn=tack_kernel_body" in body and "shared=0," in body, body
        assert "fn=tack_kernel_finish," in finish and finish.endswith("0" * 16), finish
        assert np.array_equal(o.numpy(), np.full(3000, 1.5))
        """,
        tmp_path,
    )


def test_a_trip_count_of_zero_returns_the_identity(tmp_path):
    _run(
        """
        e = tack.zeros(0, dtype=tack.f64, device="cuda")
        calls()
        got = [total(e), count_in(e, 0.0, 1.0), scaled_from(e, 2.5, 2)]
        assert got == [0.0, 0, 5.0], got
        assert [type(v) for v in got] == [float, int, float], got
        cs = [c for c in calls() if c[0] == "cuLaunchKernel"]
        # only the finish, over no block (nblocks, the last 8 bytes, is 0)
        assert len(cs) == 3, cs
        for c in cs:
            assert "fn=tack_kernel_finish," in c[1], c
            assert c[1].endswith("0" * 16), c
        """,
        tmp_path,
    )


def test_a_reduction_whose_trip_count_the_host_cannot_compute(tmp_path):
    _run(
        """
        from tack.kernel import generate_cuda
        sig = (("array", "float64", 1), ("array", "int64", 1))
        assert not generate_cuda(sum_upto, sig).host_trips
        x = np.arange(5000, dtype=np.float64)
        gx = tack.array(x, device="cuda")
        for n in (0, 1, 4321):
            gn = tack.array(np.array([n]), device="cuda")
            want = sum_upto(tack.array(x), tack.array(np.array([n])))
            calls()
            assert sum_upto(gx, gn) == want == float(x[:n].sum())
            (body,) = [c[1] for c in calls()
                       if c[0] == "cuLaunchKernel" and "tack_kernel_body" in c[1]]
            assert "grid=" in body and "grid=1x1x1" not in body, body
        """,
        tmp_path,
    )


def test_a_reduction_launch_in_the_call_log(tmp_path):
    _run(
        """
        x = tack.array(np.arange(3000, dtype=np.float64), device="cuda")
        total(x)  # builds and loads
        calls()
        assert total(x) == 4498500.0
        cs = calls()
        seq = [c for c in names(cs) if c != "cuOccupancyMaxPotentialBlockSize"]
        assert seq == ["cuMemAllocAsync", "cuMemcpyHtoDAsync", "cuLaunchKernel",
                       "cuLaunchKernel", "cuMemcpyDtoHAsync", "cuStreamSynchronize",
                       "cuMemFreeAsync"], seq
        body, finish = [c[1] for c in cs if c[0] == "cuLaunchKernel"]
        grid = int(re.search(r"grid=(\\d+)x1x1", body).group(1))
        block = int(re.search(r"block=(\\d+)x1x1", body).group(1))
        assert grid == -(-3000 // block) and block % 32 == 0, body
        # one 8-byte partial per thread in shared memory
        assert f"shared={8 * block}," in body, body
        assert "fn=tack_kernel_finish, grid=1x1x1, block=1x1x1, shared=0," in finish
        # the finish's parameters: the block, the record, then nblocks == grid
        hexed = re.search(r"params=(\\d+) bytes ([0-9a-f]+)", finish)
        assert int(hexed.group(1)) == 8 * 2 + 8 + 8, finish
        raw = bytes.fromhex(hexed.group(2))
        rec = int.from_bytes(raw[16:24], "little")
        assert int.from_bytes(raw[24:32], "little") == grid
        (alloc,) = [c[1] for c in cs if c[0] == "cuMemAllocAsync"]
        assert f"ptr={rec:#x}" in alloc and f"bytes={64 + 8 * grid}," in alloc, alloc
        (h2d,) = [c[1] for c in cs if c[0] == "cuMemcpyHtoDAsync"]
        (d2h,) = [c[1] for c in cs if c[0] == "cuMemcpyDtoHAsync"]
        assert f"dst={rec:#x}," in h2d and "n=64," in h2d, h2d
        assert f"src={rec:#x}," in d2h and "n=64," in d2h, d2h
        (free,) = [c[1] for c in cs if c[0] == "cuMemFreeAsync"]
        assert f"ptr={rec:#x}," in free, free
        """,
        tmp_path,
    )


def test_reductions_from_several_threads_at_once(tmp_path):
    # launches of one kernel from several threads interleave on Tack's stream
    _run(
        """
        import threading
        xs = [tack.array(np.arange(n, dtype=np.float64), device="cuda")
              for n in (10, 3000, 70_000, 1)]
        total(xs[0])  # built once
        bad = []
        def work(x, want):
            for _ in range(100):
                got = total(x)
                if got != want:
                    bad.append((got, want))
        ts = [threading.Thread(target=work, args=(x, float(x.numpy().sum())))
              for x in xs]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not bad, bad[:3]
        """,
        tmp_path,
    )


def test_a_reduction_over_a_shared_array(tmp_path):
    _run(
        """
        c = tack.array(np.arange(100, dtype=np.float64), device="cuda")
        imported = tack.from_dlpack(c)  # exporting shares c's buffer
        assert total(imported) == 4950.0
        tack.set_default_device("cuda")
        w = tack.array_from_ptr(c.ptr, (100,), tack.f64)
        calls()
        assert total(w) == 4950.0
        seq = names(calls())
        # the result is read back, so the launch completed before returning
        assert seq[-2:] == ["cuStreamSynchronize", "cuMemFreeAsync"], seq
        """,
        tmp_path,
    )


def test_debug_mode_raises_the_cpus_errors(tmp_path):
    _run(
        """
        def err(call):
            try:
                call()
            except (IndexError, ZeroDivisionError) as e:
                return type(e), str(e)
            raise AssertionError("no error")

        def both(kernel, *arrays):
            cpu = [tack.array(a) for a in arrays]
            gpu = [tack.array(a, device="cuda") for a in arrays]
            want = err(lambda: kernel(*cpu))
            calls()
            got = err(lambda: kernel(*gpu))
            return want, got, calls()

        idx = np.arange(50)
        idx[37] = 80
        want, got, cs = both(gather, np.zeros(50), np.arange(60.0), idx)
        assert issubclass(want[0], IndexError) and got == want, (got, want)
        assert "80" in got[1] and "'x'" in got[1] and "kmod.py" in got[1], got
        assert "cuMemcpyDtoHAsync" in names(cs)
        b = np.ones(40, dtype=np.int64)
        b[13] = 0
        want, got, _ = both(divide, np.zeros(40, dtype=np.int64),
                            np.arange(40, dtype=np.int64), b)
        assert issubclass(want[0], ZeroDivisionError) and got == want, (got, want)
        # no failure: no error, the results written
        out = tack.zeros(50, dtype=tack.f64, device="cuda")
        gather(out, tack.array(np.arange(60.0), device="cuda"),
               tack.array(np.arange(50), device="cuda"))
        assert np.array_equal(out.numpy(), np.arange(50.0))
        """,
        tmp_path,
    )


def test_debug_mode_names_a_non_ascii_array(tmp_path):
    (tmp_path / "kuni.py").write_text(
        "import tack\n\n\n@tack.kernel(debug=True)\n"
        "def pick(out, \u00e9l\u00e9ments, k):\n"
        "    for i in range(out.shape[0]):\n"
        "        out[i] = \u00e9l\u00e9ments[i + k]\n")
    _run(
        """
        from kuni import pick
        msgs = []
        for dev in (None, "cuda"):
            out = tack.zeros(4, dtype=tack.f32, device=dev)
            x = tack.zeros(4, dtype=tack.f32, device=dev)
            try:
                pick(out, x, 2)
            except IndexError as e:
                msgs.append(str(e))
        assert len(msgs) == 2 and msgs[0] == msgs[1], msgs
        assert "\u00e9l\u00e9ments" in msgs[1], msgs
        """,
        tmp_path,
    )


def test_debug_mode_failure_in_the_host_trip_count(tmp_path):
    _run(
        """
        from tack.kernel import generate_cuda
        sig = (("array", "float64", 1), "int", "int")
        assert generate_cuda(per_block, sig).host_trips
        def err(dev):
            out = tack.zeros(8, dtype=tack.f64, device=dev)
            try:
                per_block(out, 10, 0)
            except ZeroDivisionError as e:
                return str(e)
            raise AssertionError("no error")
        want = err(None)
        calls()
        assert err("cuda") == want, want
        assert "cuLaunchKernel" not in names(calls())
        out = tack.zeros(8, dtype=tack.f64, device="cuda")
        per_block(out, 10, 5)
        assert np.array_equal(out.numpy(), 2.0 * np.arange(8))
        """,
        tmp_path,
    )


def _alloc_free_balance(log_text):
    """Addresses allocated by cuMemAllocAsync and not freed afterwards."""
    live = set()
    for line in log_text.splitlines():
        m = re.match(r"cuMemAllocAsync\(.*ptr=(0x[0-9a-f]+).*\) -> 0$", line)
        if m:
            live.add(m.group(1))
        m = re.match(r"cuMemFreeAsync\(.*ptr=(0x[0-9a-f]+).*\) -> 0$", line)
        if m:
            live.discard(m.group(1))
    return live


@pytest.mark.parametrize("fault", ["alloc", "finish"])
def test_a_failed_step_of_a_reduction_launch_is_a_clean_error(tmp_path, fault):
    # two arrays are allocated first, so the 3rd cuMemAllocAsync is the first
    # launch's scratch; the first launch runs two kernels (body, finish), so the
    # 2nd cuLaunchKernel is its finish
    fail = {"alloc": "cuMemAllocAsync:3:2", "finish": "cuLaunchKernel:2:1"}[fault]
    _run(
        """
        x = tack.array(np.arange(1000, dtype=np.float64), device="cuda")
        y = tack.zeros(1, dtype=tack.f64, device="cuda")
        try:
            total(x)
        except (MemoryError, tack.TackError) as e:
            msg = str(e)
        else:
            raise AssertionError("no error")
        assert CALL in msg, msg
        # nothing was left behind: the next launch works
        assert total(x) == 499500.0
        del x, y
        """.replace("CALL", repr({"alloc": "cuMemAllocAsync",
                                  "finish": "cuLaunchKernel"}[fault])),
        tmp_path,
        TACK_STANDIN_FAIL=fail,
    )
    live = _alloc_free_balance((tmp_path / "driver.log").read_text())
    assert not live, live


@pytest.mark.parametrize("fault", ["cuModuleGetFunction:1:500",
                                   "cuOccupancyMaxPotentialBlockSize:1:1"])
def test_a_module_whose_entry_lookup_failed_is_unloaded(tmp_path, fault):
    # the failed launch loaded a module it cannot use: it goes, and the next launch
    # loads the kernel afresh
    _run(
        """
        x = tack.array(np.arange(10, dtype=np.float32), device="cuda")
        try:
            saxpy(x, np.float32(1), x, x)
        except tack.TackError:
            pass
        else:
            raise AssertionError("ran")
        saxpy(x, np.float32(1), x, x)
        assert np.array_equal(x.numpy(), 2 * np.arange(10, dtype=np.float32))
        cs = names(calls())
        assert cs.count("cuModuleLoadData") == 2, cs
        assert cs.count("cuModuleUnload") == 1, cs
        first_unload = cs.index("cuModuleUnload")
        assert first_unload < cs.index("cuModuleLoadData", cs.index("cuModuleLoadData") + 1)
        """,
        tmp_path,
        TACK_STANDIN_FAIL=fault,
    )


def _refused_launch(tmp_path, **env) -> str:
    """The RuntimeError message of a first launch under env's stand-in."""
    r = _run(
        """
        x = tack.array(np.arange(10, dtype=np.float32), device="cuda")
        calls()
        try:
            saxpy(x, np.float32(1), x, x)
        except RuntimeError as e:
            print(e)
        else:
            raise AssertionError("ran")
        print(names(calls()))
        """,
        tmp_path,
        **env,
    )
    return r.stdout


def test_an_nvrtc_newer_than_the_driver_is_refused_with_the_remedy(tmp_path):
    major, minor = tack._tack._nvrtc_version()
    if major < 13:
        pytest.skip("the oldest driver Tack takes (12.0) is no older than this NVRTC")
    # a driver of an older major version than NVRTC's
    msg = _refused_launch(tmp_path, TACK_STANDIN_DRIVER_VERSION="12080")
    assert f"NVRTC {major}.{minor} is newer than the CUDA driver (12.8)" in msg, msg
    assert "TACK_NVRTC" in msg and "newer NVIDIA driver" in msg, msg
    assert "cuModuleLoadData" not in msg  # refused before compiling


def test_a_ptx_the_driver_cannot_read_is_refused_with_the_remedy(tmp_path):
    # the driver's answer to a PTX ISA newer than it reads (222,
    # CUDA_ERROR_UNSUPPORTED_PTX_VERSION), injected into the module load
    major, minor = tack._tack._nvrtc_version()
    msg = _refused_launch(tmp_path, TACK_STANDIN_FAIL="cuModuleLoadData:1:222")
    assert f"cannot read the PTX of NVRTC {major}.{minor}" in msg, msg
    assert "CUDA driver (13.0)" in msg and "TACK_NVRTC" in msg, msg


# ---- on a real GPU (scripts/gpu_check.sh) ----------------------------------------

_GPU_KERNELS: dict[str, object] = {}


def _gpu_kernels(tmp_path_factory):
    if not _GPU_KERNELS:
        d = tmp_path_factory.mktemp("kmod")
        (d / "kmod_gpu.py").write_text(KERNELS)
        import importlib.util

        spec = importlib.util.spec_from_file_location("kmod_gpu", d / "kmod_gpu.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _GPU_KERNELS.update(vars(mod))
    return _GPU_KERNELS


@pytest.mark.cuda
def test_gpu_kernels_give_the_cpus_results(tmp_path_factory):
    k = _gpu_kernels(tmp_path_factory)
    rng = np.random.default_rng(3)
    n = 1 << 22
    for name, args in (
        ("radius_squared", (np.zeros(n, np.float32), 257, 129)),
        ("saxpy", (np.zeros(n, np.float32), np.float32(0.7),
                   rng.standard_normal(n).astype(np.float32),
                   rng.standard_normal(n).astype(np.float32))),
        ("stencil7", (rng.standard_normal((64, 65, 66)).astype(np.float32),
                      np.zeros((64, 65, 66), np.float32))),
        ("prefix", (np.zeros(1000, np.float32), np.arange(1000, dtype=np.float32))),
        ("mixed", (np.zeros((300, 301)), rng.standard_normal((300, 301)), 5, 0.5,
                   False)),
    ):
        cpu = [tack.array(a) if isinstance(a, np.ndarray) else a for a in args]
        gpu = [tack.array(a, device="cuda") if isinstance(a, np.ndarray) else a
               for a in args]
        k[name](*cpu)
        k[name](*gpu)
        for c, g in zip(cpu, gpu, strict=True):
            if isinstance(c, tack.Array):
                # + - * / round alike on both (no contraction): bit for bit
                assert np.array_equal(c.numpy(), g.numpy()), name


@pytest.mark.torch
@pytest.mark.cuda
def test_gpu_launch_on_a_torch_tensor_completes_before_returning(tmp_path_factory):
    torch = pytest.importorskip("torch")
    k = _gpu_kernels(tmp_path_factory)
    t = torch.zeros(1 << 20, device="cuda", dtype=torch.float32)
    x = tack.array(np.arange(1 << 20, dtype=np.float32), device="cuda")
    out = tack.from_dlpack(t)  # shared with torch
    k["saxpy"](out, np.float32(2), x, x)
    # no synchronize: the shared launch has completed, so torch reads the result
    assert bool((t == 4 * torch.arange(1 << 20, device="cuda", dtype=torch.float32))
                .all())



@pytest.mark.cuda
def test_gpu_reductions_returns_and_debug_mode(tmp_path_factory):
    k = _gpu_kernels(tmp_path_factory)
    rng = np.random.default_rng(4)
    n = 1 << 22
    x = rng.standard_normal(n)
    a = rng.integers(-1000, 1000, n).astype(np.int64)
    cx, gx = tack.array(x), tack.array(x, device="cuda")
    ca, ga = tack.array(a), tack.array(a, device="cuda")
    # integer reductions and min / max are exact on both
    assert k["many"](ga) == k["many"](ca)
    assert k["count_in"](gx, -0.5, 0.5) == k["count_in"](cx, -0.5, 0.5)
    assert k["lowest"](gx) == x.min()
    # a float sum is reassociated by the grid, and the same for the same launch
    got = k["total"](gx)
    assert got == k["total"](gx)
    assert abs(got - k["total"](cx)) <= 1e-9 * np.abs(x).sum()
    assert k["total"](tack.zeros(0, dtype=tack.f64, device="cuda")) == 0.0
    assert k["scaled_from"](gx, 1.0, 2) == pytest.approx(2 * (1.0 + x.sum()))
    xs = np.zeros(500)
    xs[321] = 1.0
    assert k["last_of"](tack.array(xs, device="cuda")) == 321
    idx = np.arange(1000)
    idx[777] = 5000
    msgs = []
    for dev in (None, "cuda"):
        out = tack.zeros(1000, dtype=tack.f64, device=dev)
        with pytest.raises(IndexError) as e:
            k["gather"](out, tack.array(np.arange(1000.0), device=dev),
                        tack.array(idx, device=dev))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "5000" in msgs[1], msgs


def test_seed_34172_a_prelude_reading_an_array_through_a_func_runs_on_the_device(tmp_path):
    # the trip count needs no element, but the prelude reads one through a func: the
    # host must not run it (it read device memory, and the stand-in's fault killed it)
    _run("""
        host = np.arange(10.0) + 3.0
        x, o = tack.array(host, device="cuda"), tack.zeros(10, device="cuda")
        xc, oc = tack.array(host), tack.zeros(10)
        offset_by_first(x, o)
        offset_by_first(xc, oc)
        assert np.array_equal(o.numpy(), oc.numpy())
        assert np.isclose(o.numpy()[1], 4.0 - np.log(2.0))  # lgamma(3) = log(2!)
    """, tmp_path)
