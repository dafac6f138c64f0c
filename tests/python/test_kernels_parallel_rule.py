"""The parallel rule (docs/kernels.md, *The parallel rule*): a kernel runs its
outer loop in parallel only where that gives Python's answer. Each test is a kernel
that once ran in parallel and gave another answer, or broke the build or the stack."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from kernel_helpers import check_both, private_kernel_cache  # noqa: F401  (autouse)

import tack
from tack.kernel.parse import parse_kernel

# Enough trips that a launch is cut into chunks on the thread pool.
N = 200_000


def parallel(k) -> bool:
    return parse_kernel(k.__wrapped__).parallel


# ---- statements before the loop run once --------------------------------------------


@tack.kernel
def bump_from_first(a):
    t = a[0]
    for i in range(a.shape[0]):
        a[i] = t + 1.0


@tack.kernel
def bump_and_total(a):
    t = a[0]
    s = 0.0
    for i in range(a.shape[0]):
        a[i] = t + 1.0
        s += a[i]
    return s + t


@tack.kernel
def scaled_by_first(w, x, out):
    scale = w[0]
    for i in range(x.shape[0]):
        out[i] = x[i] * scale


@tack.kernel
def first_n(out, counts):
    n = counts[0]
    for i in range(n):
        out[i] = float(i)


@tack.kernel
def count_from_range(out, counts):
    for i in range(counts[0]):
        out[i] = float(counts[1])
        counts[1] = 5


@tack.kernel
def from_extents_only(x, out, k):
    n = x.shape[0]
    half = n // 2 + k
    for i in range(n):
        out[i] = x[i] + float(half)


def test_a_prelude_reading_what_the_loop_stores_sees_it_once():
    a = tack.zeros(N, dtype=tack.f64)
    bump_from_first(a)
    assert np.unique(a.numpy()).tolist() == [1.0]
    assert not parallel(bump_from_first)


def test_the_returned_value_sees_the_prelude_of_python():
    a = tack.zeros(N, dtype=tack.f64)
    assert bump_and_total(a) == float(N)
    assert not parallel(bump_and_total)


def test_a_prelude_reading_an_array_the_loop_never_stores_stays_parallel():
    assert parallel(scaled_by_first) and parallel(first_n)
    x = np.arange(N, dtype=np.float64)
    check_both(scaled_by_first, np.array([0.5]), x, np.zeros(N))
    check_both(first_n, np.zeros(N), np.array([N // 2]))


def test_a_prelude_reading_an_argument_that_overlaps_a_stored_one_is_refused():
    # w and out are the same memory: every chunk would read the loop's stores.
    buf = tack.array(np.full(N, 3.0))
    x = tack.array(np.full(N, 2.0))
    with pytest.raises(ValueError, match="reads 'w' before its parallel loop"):
        scaled_by_first(buf, x, buf)
    assert np.unique(buf.numpy()).tolist() == [3.0]  # nothing ran
    # x overlapping out is an ordinary in-place update: it runs
    scaled_by_first(tack.array(np.array([0.5])), buf, buf)
    assert np.unique(buf.numpy()).tolist() == [1.5]


def test_a_range_reading_what_the_loop_stores_runs_serially():
    assert not parallel(count_from_range)
    check_both(count_from_range, np.zeros(N), np.array([N, 7]))


def test_a_prelude_of_extents_and_scalars_stays_parallel():
    assert parallel(from_extents_only)
    x = np.arange(N, dtype=np.float64)
    check_both(from_extents_only, x, np.zeros(N), 3)


# ---- values carried from one iteration to the next -----------------------------------


@tack.kernel
def shift_right(x, out):
    for i in range(x.shape[0]):
        out[i] = prev  # noqa: F821  (0 on the first trip; the kernel's rule)
        prev = x[i]  # noqa: F841  (read by the next trip)


@tack.kernel
def last_positive(x, out):
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            t = x[i]
        out[i] = t


@tack.kernel
def both_branches(x, out):
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            t = x[i]
        else:
            t = -x[i]
        out[i] = t


@tack.kernel
def counts_in_a_nested_loop(x, out):
    for i in range(x.shape[0]):
        for j in range(3):
            out[i] += c  # noqa: F821
            c = x[i] + float(j)  # noqa: F841  (read by the next trip)


def test_a_local_carried_between_iterations_runs_serially():
    x = np.arange(1.0, N + 1.0)
    out = tack.zeros(N, dtype=tack.f64)
    shift_right(tack.array(x), out)
    np.testing.assert_array_equal(out.numpy(), np.concatenate([[0.0], x[:-1]]))
    assert not parallel(shift_right)


def test_a_local_assigned_on_some_paths_is_carried_too():
    x = np.where(np.arange(N) % 3 == 0, np.arange(N, dtype=np.float64) + 1.0, -1.0)
    out = tack.zeros(N, dtype=tack.f64)
    last_positive(tack.array(x), out)
    want = np.maximum.accumulate(np.where(x > 0, x, 0.0))
    np.testing.assert_array_equal(out.numpy(), want)
    assert not parallel(last_positive)


def test_a_local_assigned_on_every_path_first_stays_parallel():
    assert parallel(both_branches)
    check_both(both_branches, np.linspace(-1.0, 1.0, N), np.zeros(N))


def test_a_value_carried_by_a_nested_loop_runs_serially():
    assert not parallel(counts_in_a_nested_loop)
    x = np.arange(4.0)
    out = tack.zeros(4, dtype=tack.f64)
    counts_in_a_nested_loop(tack.array(x), out)
    want, c = np.zeros(4), 0.0
    for i in range(4):
        for j in range(3):
            want[i] += c
            c = x[i] + j
    np.testing.assert_array_equal(out.numpy(), want)


# ---- stores through funcs -----------------------------------------------------------


@tack.func
def accumulate(t, v):
    t[0] = t[0] + v


@tack.kernel
def running_count(out):
    t = tack.local_array((1,), tack.f64)
    for i in range(out.shape[0]):
        accumulate(t, 1.0)
        out[i] = t[0]


def test_a_local_array_from_before_the_loop_stored_through_a_func_runs_serially():
    assert not parallel(running_count)
    out = tack.zeros(N, dtype=tack.f64)
    running_count(out)
    np.testing.assert_array_equal(out.numpy(), np.arange(1.0, N + 1.0))


# ---- names read before the loop assigns them ----------------------------------------


def kernel_from(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text("import tack\n\n\n@tack.kernel\n" + textwrap.dedent(body))
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns[name], path


@pytest.mark.parametrize("body, line", [
    ("""\
     def early(out):
         out[0] = float(i)
         for i in range(out.shape[0]):
             out[i] = 1.0
     """, 6),
    ("""\
     def early(out):
         s = t * 2.0
         for i in range(out.shape[0]):
             t = 1.0
             out[i] = t + s
     """, 6),
    ("""\
     def early(out):
         for i in range(out.shape[0] + i):
             out[i] = 1.0
     """, 6),
])
def test_reading_a_loop_only_name_before_the_loop_is_a_kernel_error(tmp_path, body,
                                                                     line):
    with pytest.raises(tack.KernelError, match="before it is assigned") as exc:
        kernel_from(tmp_path, "early", body)
    assert exc.value.lineno == line
    assert exc.value.filename.endswith("early.py")


# ---- local arrays --------------------------------------------------------------------


@tack.kernel
def fill_scratch(out):
    t = tack.local_array((4096,), tack.f64)
    for k in range(4096):
        t[k] = 7.0
    out[0] = t[4095]


@tack.kernel
def maybe_created(out, flag):
    if flag:
        t = tack.local_array((4096,), tack.f64)
        t[0] = 1.0
    out[0] = t[4095]
    out[1] = t[17]


def test_a_local_array_read_where_its_creation_did_not_run_reads_zeros():
    out = tack.zeros(2, dtype=tack.f64)
    for _ in range(3):
        fill_scratch(out)  # leaves 7.0 on the stack the next kernel reuses
        maybe_created(out, False)
        assert out.numpy().tolist() == [0.0, 0.0]


@tack.kernel
def created_every_other_trip(out):
    for i in range(out.shape[0]):
        if i % 2 == 0:
            t = tack.local_array((2,), tack.f64)
            t[0] = float(i) + 1.0
        out[i] = t[0]


def test_a_local_array_created_on_some_trips_keeps_pythons_value():
    assert not parallel(created_every_other_trip)
    check_both(created_every_other_trip, np.zeros(N))


def test_local_arrays_are_capped_in_total(tmp_path):
    body = "def big(out):\n" + "".join(
        f"    t{k} = tack.local_array((65536,), tack.f64)\n" for k in range(20)) + \
        "    for i in range(out.shape[0]):\n" + "".join(
        f"        out[i] += t{k}[i % 65536]\n" for k in range(20))
    with pytest.raises(tack.KernelError, match="10485760 bytes") as exc:
        kernel_from(tmp_path, "big", body)
    assert exc.value.lineno == 5


def test_local_arrays_of_inlined_funcs_count_at_every_call(tmp_path):
    path = tmp_path / "calls.py"
    path.write_text(textwrap.dedent("""\
        import tack


        @tack.func
        def peak(x):
            t = tack.local_array((65536,), tack.f64)
            t[1] = x
            return t[1]


        @tack.kernel
        def calls(out):
            for i in range(out.shape[0]):
                out[i] = peak(1.0) + peak(2.0) + peak(3.0)
        """))
    with pytest.raises(tack.KernelError, match="1572864 bytes"):
        exec(compile(path.read_text(), str(path), "exec"), {})


@tack.kernel
def two_full_scratch(out):
    for i in range(out.shape[0]):
        a = tack.local_array((65536,), tack.f64)
        b = tack.local_array((65536,), tack.f64)
        a[65535] = float(i)
        b[65535] = 2.0
        out[i] = a[65535] * b[65535]


def test_local_arrays_at_the_cap_run_on_the_pool():
    n = 4096
    out = tack.zeros(n, dtype=tack.f64)
    two_full_scratch(out)
    np.testing.assert_array_equal(out.numpy(), 2.0 * np.arange(n))


# ---- reductions and trip counts -------------------------------------------------------


def many_reductions(tmp_path, n):
    names = [f"s{k}" for k in range(n)]
    body = "def many(x):\n" + "".join(f"    {s} = 0\n" for s in names)
    body += "    for i in range(x.shape[0]):\n"
    body += "".join(f"        {s} += x[i] + {k}\n" for k, s in enumerate(names))
    body += "    return " + " + ".join(names) + "\n"
    return kernel_from(tmp_path, "many", body)[0]


def test_as_many_reductions_as_the_partials_hold(tmp_path):
    k = many_reductions(tmp_path, 512)  # 512 int64 partials: 4096 bytes
    x = np.arange(1000, dtype=np.int64)
    assert k(tack.array(x)) == sum(int(x.sum()) + 1000 * j for j in range(512))


def test_float_min_reductions_count_the_trip_a_gpu_partial_carries(tmp_path):
    # A float min's partial on CUDA is its value and the trip it came from: 16
    # bytes, so 257 of them do not fit, on any backend.
    names = [f"m{k}" for k in range(257)]
    body = "def mins(x):\n" + "".join(f"    {s} = 1e300\n" for s in names)
    body += "    for i in range(x.shape[0]):\n"
    body += "".join(f"        {s} = min({s}, x[i] + {k}.0)\n" for k, s in enumerate(names))
    body += "    return " + " + ".join(names) + "\n"
    k = kernel_from(tmp_path, "mins", body)[0]
    with pytest.raises(tack.KernelError, match="4112 bytes"):
        k(tack.array(np.arange(10.0)))


def test_more_reductions_than_the_partials_hold_is_a_kernel_error(tmp_path):
    k = many_reductions(tmp_path, 513)
    with pytest.raises(tack.KernelError, match="4104 bytes") as exc:
        k(tack.array(np.arange(10, dtype=np.int64)))
    assert exc.value.lineno == 6 + 513  # the loop


@tack.kernel
def first_of_a_huge_range(out, lo, hi, step):
    n = 0
    for i in range(lo, hi, step):
        out[n] = i
        n += 1
        if n == out.shape[0]:
            break


@pytest.mark.parametrize("lo, hi, step", [
    (-(2**63), 2**63 - 1, 1),
    (-(2**63), 2**63 - 1, 2),
    (2**63 - 1, -(2**63), -1),
])
def test_a_range_of_more_than_int64_max_trips_runs(lo, hi, step):
    out = tack.zeros(5, dtype=tack.i64)
    first_of_a_huge_range(out, lo, hi, step)
    assert out.numpy().tolist() == [lo + k * step for k in range(5)]  # Python's range
