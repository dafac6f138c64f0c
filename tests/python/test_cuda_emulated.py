"""The CUDA modules' meaning, without a GPU: each kernel's CUDA source runs on the CPU
under cuda_emulator.py (blocks in turn, threads as real threads, barriers, atomics)
with its parameter block packed as docs/kernels.md says, and must give what the
same kernel gives on Tack's CPU path: the grid-stride loop covers every trip once on
any grid, the serial rule holds, reductions fold block partials, atomics count every
update, and debug mode fills the failure record the CPU launch reports.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cuda_emulator import Launch, build, emulate, gxx_available
from test_kernels_reductions import (
    float_bits,
    highest32,
    lowest,
    min_max_cases,
    min_max_inputs,
    product_from,
    reduce_identity,
    sum_from,
)

import tack
from tack.kernel import generate_cuda

pytestmark = pytest.mark.skipif(not gxx_available(), reason="no g++")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cuda_emulated")


def sig(*args: object) -> tuple[object, ...]:
    out: list[object] = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(("array", a.dtype.name, a.ndim))
        elif isinstance(a, np.float32):
            out.append("float32")
        elif isinstance(a, float):
            out.append("float")
        elif isinstance(a, bool):
            out.append("bool")
        else:
            out.append("int")
    return tuple(out)


def on_cpu(k: tack.Kernel, args: list[object]) -> tuple[list[np.ndarray], object]:
    """The kernel on Tack's CPU path: the arrays afterwards and the returned value."""
    tk = [tack.array(a) if isinstance(a, np.ndarray) else a for a in args]
    result = k(*tk)
    return [a.numpy() for a in tk if isinstance(a, tack.Array)], result


def both(k: tack.Kernel, args: list[object], work: Path, debug: bool = False,
         grid: int = 3, block: int = 4):
    want, result = on_cpu(k, [a.copy() if isinstance(a, np.ndarray) else a
                              for a in args])
    ck = generate_cuda(k, sig(*args), debug=debug)
    rec = emulate(ck, args, work, grid, block)
    got = [a for a in args if isinstance(a, np.ndarray)]
    return got, want, result, rec, ck


@tack.kernel
def affine(out, x, a, b):
    for i in range(1, out.shape[0], 2):
        out[i] = a * x[i] + b


@pytest.mark.parametrize("grid,block", [(1, 1), (3, 4), (2, 32)])
def test_grid_stride_loop_runs_every_trip_once_on_any_grid(work, grid, block):
    x = np.linspace(-3, 5, 101, dtype=np.float32)
    args = [np.zeros(101, np.float32), x, np.float32(1.25), np.float32(-0.5)]
    got, want, _, rec, _ = both(affine, args, work, grid=grid, block=block)
    np.testing.assert_array_equal(got[0], want[0])  # bit for bit: no contraction
    assert rec.failed == 0


@tack.kernel
def blur_rows(out, img, w):
    for r in range(img.shape[0]):
        for c in range(1, img.shape[1] - 1):
            out[r, c] = (img[r, c - 1] + img[r, c] * w + img[r, c + 1]) / (2.0 + w)


def test_extents_of_several_arrays_come_from_the_block(work):
    img = np.arange(7 * 9, dtype=np.float64).reshape(7, 9) ** 1.5
    args = [np.zeros((7, 9)), img, 3.0]
    got, want, *_ = both(blur_rows, args, work)
    np.testing.assert_array_equal(got[0], want[0])


def test_restrict_entry_computes_the_same(work):
    img = np.arange(7 * 9, dtype=np.float64).reshape(7, 9) ** 1.5
    args = [np.zeros((7, 9)), img, 3.0]
    ck = generate_cuda(blur_rows, sig(*args), debug=False)
    assert ck.restrict
    emulate(ck, args, work, restrict=True)
    want, _ = on_cpu(blur_rows, [np.zeros((7, 9)), img, 3.0])
    np.testing.assert_array_equal(args[0], want[0])


@tack.kernel
def running_total(a):
    s = 0
    for i in range(a.shape[0]):
        s = s + a[i]
        a[i] = s


def test_a_serial_kernel_runs_on_one_thread_in_order(work):
    args = [np.arange(50, dtype=np.int64)]
    got, want, _, _, ck = both(running_total, args, work)
    assert not ck.parallel
    np.testing.assert_array_equal(got[0], want[0])


@tack.kernel
def summary(x, flags):
    s = 0.0
    n = 0
    lo = 1e300
    hi = -1e300
    bits = 0
    for i in range(x.shape[0]):
        s += x[i]
        n += flags[i] > 0
        lo = min(lo, x[i])
        hi = max(hi, x[i])
        bits |= flags[i]
    return s * 1000000.0 + n * 1000.0 + lo + hi * 10.0 + bits


@pytest.mark.parametrize("grid,block", [(1, 1), (3, 4), (4, 7)])
def test_reductions_fold_block_partials(work, grid, block):
    rng = np.random.default_rng(5)
    # small integers as floats: every order of summation gives the same bits
    x = rng.integers(-40, 40, 333).astype(np.float64)
    flags = rng.integers(-3, 4, 333).astype(np.int32)
    _, _, result, rec, ck = both(summary, [x, flags], work, grid=grid, block=block)
    assert ck.partial_size > 0 and ck.result_kind == 2
    assert rec.result_f == result


@tack.kernel
def count_below(x, t):
    n = 0
    for i in range(x.shape[0]):
        if x[i] < t:
            n += 1
    return n


def test_integer_reduction_returns_an_int(work):
    x = np.arange(1000, dtype=np.float32)
    _, _, result, rec, ck = both(count_below, [x, 250.5], work)
    assert ck.result_kind == 1 and rec.result_i == result == 251


@tack.kernel
def histogram(h, v, lo_hi):
    for i in range(v.shape[0]):
        b = int(v[i]) % h.shape[0]
        tack.atomic_add(h, b, 1)
        tack.atomic_min(lo_hi, 0, v[i])
        tack.atomic_max(lo_hi, 1, v[i])
        tack.atomic_sub(lo_hi, 2, v[i])


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64", "float32",
                                   "float64"])
def test_atomics_count_every_update(work, dtype):
    rng = np.random.default_rng(1)
    v = rng.integers(0, 50, 500).astype(dtype)
    lo_hi = np.array([60, 0, 10**6], dtype=dtype)
    args = [np.zeros(8, dtype), v, lo_hi]
    got, want, *_ = both(histogram, args, work, grid=4, block=8)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[2], want[2])


@tack.kernel
def halves(h, out):
    for i in range(h.shape[0]):
        out[i] = h[i] * 3.0
        h[i] = h[i] * 0.5


def test_float16_round_trips_as_on_the_cpu(work):
    h = np.array([1.0, -2.5, 65504.0, 6e-8, np.inf, 0.1], dtype=np.float16)
    got, want, *_ = both(halves, [h, np.zeros(6, np.float32)], work)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@tack.kernel
def first_n(out, counts):
    n = counts[0]
    for i in range(n):
        out[i] = i * 2


def test_trip_count_read_from_an_element_is_computed_on_the_device(work):
    # counts is never stored: the prelude may read it and the loop stays parallel
    args = [np.zeros(20, np.int64), np.array([13], np.int64)]
    ck = generate_cuda(first_n, sig(*args), debug=False)
    assert ck.parallel and not ck.host_trips
    assert Launch(ck, args, 2, 2).trips(build(ck, work)) == 13
    got, want, *_ = both(first_n, args, work, grid=2, block=2)
    np.testing.assert_array_equal(got[0], want[0])


@tack.kernel
def shifted(out, src):
    for i in range(out.shape[0]):
        out[i] = src[i + 3]


@tack.kernel
def ratio(out, a, d):
    for i in range(out.shape[0]):
        out[i] = a[i] // (d - i)


def test_debug_out_of_bounds_fills_the_record_the_cpu_reports(work):
    args = [np.zeros(10, np.int64), np.arange(12, dtype=np.int64)]
    ck = generate_cuda(shifted, sig(*args), debug=True)
    rec = emulate(ck, args, work)
    with pytest.raises(IndexError) as info:
        tack.kernel(shifted.__wrapped__, debug=True)(
            *[tack.array(a.copy()) for a in args])
    assert rec.failed == 1 and rec.why == 1
    assert ck.names[rec.name] == "src"
    text = (f"index {rec.index} is out of bounds for axis {rec.axis} of 'src' with "
            f"size {rec.extent}")
    assert text in str(info.value)
    assert f"line {rec.line})" in str(info.value)


def test_debug_division_by_zero_fills_the_record(work):
    args = [np.zeros(10, np.int64), np.arange(10, dtype=np.int64), 6]
    ck = generate_cuda(ratio, sig(*args), debug=True)
    rec = emulate(ck, args, work)
    with pytest.raises(ZeroDivisionError) as info:
        tack.kernel(ratio.__wrapped__, debug=True)(
            *[tack.array(a.copy()) if isinstance(a, np.ndarray) else a for a in args])
    assert rec.failed == 1 and rec.why == 2
    assert f"line {rec.line})" in str(info.value)
    # without debug mode, // by zero gives 0 on both
    got, want, *_ = both(ratio, [np.zeros(10, np.int64), np.arange(10, dtype=np.int64),
                                 6], work)
    np.testing.assert_array_equal(got[0], want[0])


@tack.func
def clamp(v, lo, hi):
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


@tack.kernel
def clamped_sums(out, p):
    for i in range(out.shape[0]):
        t = tack.local_array((3,), tack.f64)
        for j in range(3):
            t[j] = clamp(p[i, j], -1.0, 1.0)
        out[i] = t[0] + t[1] * 2.0 + t[2] * 4.0


def test_functions_and_local_arrays(work):
    p = np.random.default_rng(3).normal(size=(40, 3))
    got, want, *_ = both(clamped_sums, [np.zeros(40), p], work)
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("grid,block", [(1, 1), (3, 4), (2, 32)])
def test_float_min_and_max_give_pythons_answer_on_any_grid(work, grid, block):
    # Thread t runs trips t, t + G, ...: its partial is out of trip order, so the
    # blocks' tree and the finish break ties between 0.0 and -0.0 by the trip each
    # value came from, as the serial loop (and the CPU's chunks) do.
    for x, start in min_max_cases():
        x32, _ = min_max_inputs(x)
        for k, args, want in ((lowest, [x, start], lowest.__wrapped__(x, start)),
                              (highest32, [x32], highest32.__wrapped__(x32))):
            ck = generate_cuda(k, sig(*args))
            rec = emulate(ck, args, work, grid, block)
            assert float_bits(rec.result_f) == float_bits(want), (k.__name__, start)


def grid_reduce(values, init, op, grid, block):
    """The documented association of a float sum (op np.add) or product
    (np.multiply) on one launch shape: thread k of the grid's G = grid * block reduces
    trips k, k + G, ... in order from op's identity; each block folds its threads in
    the tree that joins thread t + w into thread t for w = 1, 2, 4, ...; the finish
    folds the blocks into init in block order."""
    g = grid * block
    mine = [op.accumulate(values[k::g])[-1] if k < len(values)
            else reduce_identity(op, values.dtype) for k in range(g)]
    acc = values.dtype.type(init)
    for b in range(grid):
        sh = mine[b * block:(b + 1) * block]
        w = 1
        while w < block:
            for t in range(0, block - w, 2 * w):
                sh[t] = op(sh[t], sh[t + w])
            w *= 2
        acc = op(acc, sh[0])
    return float(acc)


@pytest.mark.parametrize("grid,block", [(1, 1), (3, 4), (4, 7), (2, 32)])
def test_float_sums_and_products_follow_the_launch_shape(work, grid, block):
    # The same trip count and launch shape give the same bits on every run: the bits
    # of grid_reduce's association (not the CPU's chunks, so not always the CPU's).
    rng = np.random.default_rng(23)
    for n in (1, 5, 333, 1000):
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal(n).astype(dtype)
            for k, values, init, op in ((sum_from, x, dtype(0.5), np.add),
                                        (product_from, (1 + 0.1 * x).astype(dtype),
                                         dtype(1.5), np.multiply)):
                ck = generate_cuda(k, sig(values, init))
                runs = {float_bits(emulate(ck, [values, init], work, grid, block).result_f)
                        for _ in range(2)}
                want = float_bits(grid_reduce(values, init, op, grid, block))
                assert runs == {want}, (k.__name__, dtype.__name__, n)


def test_a_nan_given_a_sign_keeps_it_in_the_cuda_module(work):
    # `-math.nan` is a negative NaN on the GPU too (docs/kernels.md)
    from test_kernel_fuzz import nan_signs

    stored = np.array([np.nan, -np.nan, np.nan])
    got, want, _, _, _ = both(nan_signs, [np.zeros((3, 4)), stored], work)
    assert np.signbit(got[0]).tolist() == np.signbit(want[0]).tolist()
    assert got[0][:, 1].tolist() == [-2.0] * 3
