"""Reductions: a kernel may return a scalar; a name assigned before the parallel loop
and only updated with += *= |= &= ^= or min/max inside it is reduced from
per-chunk partials combined in a fixed order (exact for ints, deterministic for
floats whatever the thread count). s = s + x keeps Python's serial order."""

from __future__ import annotations

import inspect
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kernel_helpers import private_kernel_cache  # noqa: F401  (autouse)

import tack

REDUCE_CHUNKS = 256  # launch.c: a reduction's trips are cut into at most this many


@tack.kernel
def total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def chunked_sum(values, init, dtype=np.float64):
    """The documented association of a parallel loop's float sum (chunked)."""
    return chunked(np.asarray(values, dtype), init, np.add)


def chunked(values, init, op):
    """The documented association of a parallel loop's float sum (op np.add) or
    product (np.multiply) over values: chunks of ceil(n / 256) trips, each reduced
    as 8 interleaved partials (interleaved), then folded into init in chunk order,
    in the values' dtype."""
    n = len(values)
    chunk = -(-n // REDUCE_CHUNKS)
    acc = values.dtype.type(init)
    for c in range(0, n, chunk):
        acc = op(acc, interleaved(values[c:c + chunk], op))
    return float(acc)


def test_float_sum_follows_the_chunked_order():
    x = np.random.default_rng(3).standard_normal(100_003)
    got = total(tack.array(x))
    assert isinstance(got, float)
    assert got == chunked_sum(x.tolist(), 0.0)
    assert got == total(tack.array(x))  # and again, whatever the scheduling
    assert math.isclose(got, math.fsum(x.tolist()), rel_tol=1e-9, abs_tol=1e-9)


@tack.kernel
def sum_from(x, init):
    s = init
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def product_from(x, init):
    s = init
    for i in range(x.shape[0]):
        s *= x[i]
    return s


# sizes below one chunk per trip, around 256 chunks and 8 partials, and large
# enough for a parallel launch on any pool
REPRO_SIZES = (1, 7, 255, 257, 1000, 2049, 100_003, (1 << 20) + 5)


def repro_cases():
    """(kernel, values, init, op) for float32 and float64 sums and products: the
    init's type is the accumulator's (np.float32: a float32 reduction)."""
    rng = np.random.default_rng(19)
    for n in REPRO_SIZES:
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal(n).astype(dtype)
            yield sum_from, x, dtype(0.5), np.add
            # factors near 1 keep a long product finite and its rounding visible
            yield product_from, (1 + 1e-3 * x).astype(dtype), dtype(1.5), np.multiply


REPRO_SCRIPT = '''
import sys
import tack
sys.path.insert(0, {here!r})
from test_kernels_reductions import float_bits, repro_cases
for k, x, init, _ in repro_cases():
    print(float_bits(k(tack.array(x), init)))
stats = tack._tack._kernel_stats()
print(stats["num_threads"], stats["parallel_launches"] > 0)
'''


def test_float_sums_and_products_are_the_same_on_any_thread_count(tmp_path):
    # The chunks follow the trip count alone, so every pool size and every run gives
    # the bits of the documented association.
    want = [float_bits(chunked(x, init, op)) for _, x, init, op in repro_cases()]
    in_order = [float_bits(float(op.accumulate(np.concatenate([[init], x]))[-1]))
                for _, x, init, op in repro_cases()]
    assert want != in_order  # the association is not the serial one: bits can tell
    script = tmp_path / "repro.py"
    script.write_text(REPRO_SCRIPT.format(here=os.path.dirname(__file__)))
    for threads in ("1", "2", "3", "7"):
        for run in range(2):
            env = dict(os.environ, TACK_NUM_THREADS=threads)
            r = subprocess.run([sys.executable, str(script)], env=env,
                               capture_output=True, text=True, timeout=300, check=False)
            assert r.returncode == 0, r.stderr[-3000:]
            *got, pool = r.stdout.splitlines()
            assert pool == f"{threads} {threads != '1'}"  # the pool really ran
            bad = [(k.__name__, x.dtype.name, len(x)) for (k, x, _, _), g, w in
                   zip(repro_cases(), got, want, strict=True) if g != w]
            assert not bad, (threads, run, bad)


@tack.kernel
def many(a):
    s = 0
    p = 1
    lo = a[0]
    hi = a[0]
    bits_or = 0
    bits_and = -1
    bits_xor = 0
    for i in range(a.shape[0]):
        s += a[i]
        p *= 1 + (a[i] % 97 == 0)
        lo = min(lo, a[i])
        hi = max(hi, a[i], 0)
        bits_or |= a[i]
        bits_and &= a[i] | 1
        bits_xor ^= a[i]
    return s + p + lo * 3 + hi * 5 + bits_or * 7 + bits_and * 11 + bits_xor * 13


def test_integer_reductions_are_exact():
    a = np.random.default_rng(4).integers(-1000, 1000, 200_001).astype(np.int64)
    got = many(tack.array(a))
    want = many.__wrapped__(a.astype(object))  # Python ints: no wrapping
    assert got == (want + 2**63) % 2**64 - 2**63  # int64 wraps, as documented


def test_reduction_of_int32_elements_into_an_int_counter():
    @tack.kernel
    def count_positive(a):
        n = 0
        for i in range(a.shape[0]):
            if a[i] > 0:
                n += 1
        return n

    a = np.random.default_rng(5).integers(-5, 5, 77_777).astype(np.int32)
    assert count_positive(tack.array(a)) == int((a > 0).sum())


def test_returns_of_every_kind():
    @tack.kernel
    def any_nan(x):
        found = False
        for i in range(x.shape[0]):
            found |= math.isnan(x[i])
        return found

    @tack.kernel
    def mean32(x):
        s = tack.f32(0.0)
        for i in range(x.shape[0]):
            s += x[i]
        return s / x.shape[0]

    @tack.kernel
    def first_above(x, t):
        k = -1
        for i in range(x.shape[0]):  # break: serial, Python's answer
            if x[i] > t:
                k = i
                break
        return k

    @tack.kernel
    def no_loop(n):
        return n * 2 + 1

    x = np.arange(10, dtype=np.float32)
    assert any_nan(tack.array(x)) is False
    x[7] = np.nan
    assert any_nan(tack.array(x)) is True
    y = np.ones(1000, dtype=np.float32) * np.float32(0.1)
    # a float32 sum; / by the int64 extent computes in float64 (NumPy 2's rule)
    want = chunked_sum(y, 0.0, np.float32) / 1000
    assert mean32(tack.array(y)) == want
    assert first_above(tack.array(np.arange(100.0)), 41.5) == 42
    assert no_loop(20) == 41


def test_serial_update_form_keeps_pythons_order():
    @tack.kernel
    def ordered(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + x[i]  # not +=: the loop stays serial, in Python's order
        return s

    x = [1e16, 1.0, -1e16, 1.0] * 1000 + [0.5] * 3
    arr = tack.array(np.array(x))
    assert ordered(arr) == ordered.__wrapped__(np.array(x))


def test_empty_loop_returns_the_initial_value():
    assert sum_from(tack.zeros(0, dtype=tack.f64), 2.5) == 2.5
    assert sum_from(tack.array(np.array([1.0, 2.0])), 2.5) == 5.5


def test_value_read_after_the_loop_runs_serially():
    @tack.kernel
    def last(x):
        v = 0.0
        for i in range(x.shape[0]):
            v = x[i]
        return v + i

    assert last(tack.array(np.array([1.0, 2.0, 3.0]))) == 5.0


def test_return_errors():
    def two_values(x):
        return x[0], x[1]

    with pytest.raises(tack.KernelError, match="one scalar"):
        tack.kernel(two_values)

    def early(x):
        for i in range(x.shape[0]):
            if x[i] > 0:
                return i
        x[0] = 1

    with pytest.raises(tack.KernelError, match="last statement"):
        tack.kernel(early)


def interleaved_sum(values, init, dtype=np.float64):
    """The documented association of an inner loop's float sum (interleaved),
    folded into init."""
    return float(dtype(dtype(init) + interleaved(np.asarray(values, dtype), np.add)))


def reduce_identity(op, dtype):
    """Where a float sum's (np.add) or product's (np.multiply) partials start."""
    return np.dtype(dtype).type(-0.0 if op is np.add else 1.0)


def interleaved(values, op, partials=8):
    """values reduced with op (np.add or np.multiply) as the documented interleaved
    partials: trip k of the whole blocks of 8 goes to partial k % 8, the remainder
    to partial 0, and the partials fold pairwise ((p0+p1)+(p2+p3))+((p4+p5)+(p6+p7)).
    Each partial starts at op's identity, which leaves its first value's bits as
    they are, so accumulate (strictly in order) gives it from its first value."""
    identity = reduce_identity(op, values.dtype)
    whole = len(values) // partials * partials
    p = list(op.accumulate(values[:whole].reshape(-1, partials), axis=0)[-1]
             if whole else [identity] * partials)
    for v in values[whole:]:
        p[0] = op(p[0], v)
    while len(p) > 1:
        p = [op(p[k], p[k + 1]) for k in range(0, len(p), 2)]
    return p[0]


@tack.kernel
def row_sums(a, out):
    for r in range(a.shape[0]):
        s = 0.0
        for c in range(a.shape[1]):
            s += a[r, c]
        out[r] = s


@tack.kernel
def row_sums32(a, out):
    for r in range(a.shape[0]):
        s = tack.f32(1.0)
        for c in range(a.shape[1]):
            s += a[r, c] * 2.0
        out[r] = s


@pytest.mark.parametrize("cols", [0, 1, 7, 8, 9, 64, 1001])
def test_inner_loop_sum_uses_interleaved_partials(cols):
    a = np.random.default_rng(cols).standard_normal((5, cols)).astype(np.float32)
    out = tack.zeros(5, dtype=tack.f64)
    row_sums(tack.array(a), out)
    for r in range(5):
        assert out.numpy()[r] == interleaved_sum(a[r].astype(np.float64), 0.0)
    out32 = tack.zeros(5, dtype=tack.f32)
    row_sums32(tack.array(a), out32)
    for r in range(5):
        assert out32.numpy()[r] == np.float32(interleaved_sum(
            a[r] * np.float32(2.0), 1.0, np.float32))


def test_inner_loop_min_max_and_exact_forms():
    @tack.kernel
    def stats(a, out):
        for r in range(a.shape[0]):
            lo = math.inf
            hi = -math.inf
            exact = 0.0
            for c in range(a.shape[1]):
                lo = min(lo, a[r, c])
                hi = max(hi, a[r, c])
                exact = exact + a[r, c]  # not +=: Python's order
            out[r, 0] = lo
            out[r, 1] = hi
            out[r, 2] = exact

    a = np.random.default_rng(9).standard_normal((4, 37)) * 1e8
    a[:, ::3] += 1e-8
    out = tack.zeros((4, 3), dtype=tack.f64)
    stats(tack.array(a), out)
    want = np.zeros((4, 3))
    stats.__wrapped__(a, want)
    np.testing.assert_array_equal(out.numpy(), want)


def test_inner_loop_with_break_keeps_pythons_order():
    @tack.kernel
    def until_negative(a, out):
        for r in range(a.shape[0]):
            s = 0.0
            for c in range(a.shape[1]):
                if a[r, c] < -2.0:
                    break
                s += a[r, c]
            out[r] = s

    a = np.random.default_rng(2).standard_normal((6, 50)) * 1e6
    out = tack.zeros(6, dtype=tack.f64)
    until_negative(tack.array(a), out)
    want = np.zeros(6)
    until_negative.__wrapped__(a, want)
    np.testing.assert_array_equal(out.numpy(), want)


@tack.kernel(debug=True)
def sum_first(x, n):
    s = 0.0
    for i in range(n):
        s += x[i]
    return s


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_reduction_over_a_trip_count_near_int64_max(tmp_path, threads):
    # cutting such a count into chunks must not overflow: the debug build stops at
    # x[4] (IndexError), whichever thread gets there, on one thread or the pool
    script = tmp_path / "near_max.py"
    script.write_text("import numpy as np\nimport tack\n\n"
                      + inspect.getsource(sum_first.__wrapped__) + textwrap.dedent('''
        x = tack.array(np.arange(4.0))
        for n in (4, 2**63 - 1):
            try:
                print(sum_first(x, n))
            except IndexError as e:
                print("IndexError", e)
    '''))
    env = dict(os.environ, TACK_NUM_THREADS=threads)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "6.0", lines
    assert lines[1].startswith("IndexError index ") and "'x' with size 4" in lines[1], lines


@tack.kernel
def lowest(x, start):
    lo = start
    for i in range(x.shape[0]):
        lo = min(lo, x[i])
    return lo


@tack.kernel
def highest32(x):
    hi = x[0]
    for i in range(x.shape[0]):
        if x[i] > 1e30:  # a continue of the parallel loop
            continue
        hi = max(hi, x[i], x[i] * 0.5)
    return hi


@tack.kernel
def row_lowest(a, out):
    for r in range(a.shape[0]):
        lo = math.inf
        for c in range(a.shape[1]):
            lo = min(lo, a[r, c])
        out[r] = lo


def min_max_cases() -> list[tuple[np.ndarray, float]]:
    """Arrays (and starting values) whose answer depends on the order of equal
    values (0.0 and -0.0) and on NaN: zeros in different interleaved lanes of one
    chunk (trips 2 and 9), in different chunks, and on GPU threads that come
    before the first one's in a grid of 12 or 64 threads (trip 193), NaN elements
    (never taken) and a NaN start (kept)."""
    rng = np.random.default_rng(21)
    out = []
    for first, later in ((0.0, -0.0), (-0.0, 0.0)):
        x = rng.uniform(1.0, 2.0, 4099)
        x[2], x[5], x[4000] = first, np.nan, np.nan
        x[[9, 193, 700]] = later
        out.append((x, math.inf))
        out.append((x, later))  # the start is the first of the equal values
    nan = np.frombuffer(bytes.fromhex("fff8000000000123")[::-1]).item()  # a payload
    out.append((out[0][0], nan))
    return out


def min_max_inputs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The arguments of highest32 and row_lowest made from one case's array."""
    x32 = -x.astype(np.float32)
    x32[0], x32[11] = -3.0, np.inf  # the start, and a trip that continues
    return x32, np.stack([x[:40], x[1:41], x[5:45]])


def float_bits(v: float) -> str:
    return np.float64(v).tobytes().hex()


MIN_MAX_SCRIPT = '''
import sys
import tack
sys.path.insert(0, {here!r})
from test_kernels_reductions import (float_bits, highest32, lowest, min_max_cases,
                                     min_max_inputs, row_lowest)
for x, start in min_max_cases():
    x32, rows = min_max_inputs(x)
    print(float_bits(lowest(tack.array(x), start)), end=" ")
    print(float_bits(highest32(tack.array(x32))), end=" ")
    out = tack.zeros(3, dtype=tack.f64)
    row_lowest(tack.array(rows), out)
    print(" ".join(float_bits(v) for v in out.numpy()))
'''


def test_float_min_and_max_give_pythons_answer_on_any_thread_count(tmp_path):
    # min(0.0, -0.0) is 0.0 and max(-0.0, 0.0) is -0.0: the first of equal values,
    # in trip order; a NaN element never replaces a number, a NaN start stays.
    want = []
    for x, start in min_max_cases():
        x32, rows = min_max_inputs(x)
        row_out = np.zeros(3)
        row_lowest.__wrapped__(rows, row_out)
        want.append(" ".join([float_bits(lowest.__wrapped__(x, start)),
                              float_bits(highest32.__wrapped__(x32))]
                             + [float_bits(v) for v in row_out]))
    assert want[0].split()[0] == float_bits(0.0)
    assert want[2].split()[0] == float_bits(-0.0)
    script = tmp_path / "min_max.py"
    script.write_text(MIN_MAX_SCRIPT.format(here=os.path.dirname(__file__)))
    for threads in ("1", "2", "3"):
        env = dict(os.environ, TACK_NUM_THREADS=threads)
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, timeout=300, check=False)
        assert r.returncode == 0, r.stderr[-3000:]
        assert r.stdout.splitlines() == want, threads
