"""Each construct and rule of the kernel language, against NumPy or Python itself
(the kernel's own function run on NumPy arrays)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from kernel_helpers import check_both, run_both

import tack

SCALE = 3  # a global number, read when a specialization compiles


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kc"))


@tack.kernel
def fill_indices(out):
    for i in range(out.shape[0]):
        out[i] = float(i)


@tack.kernel
def radius_squared(values, nx, ny):
    for i in range(values.shape[0]):
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i // nx) % ny) - float(ny - 1) * 0.5
        z = float(i // (nx * ny)) - 2.0
        values[i] = x * x + y * y + z * z


def test_guide_fill_indices():
    out = tack.zeros(8, dtype=tack.f32)
    fill_indices(out)
    np.testing.assert_array_equal(out.numpy(), np.arange(8, dtype=np.float32))


def test_guide_radius_squared():
    values = tack.zeros(9 * 7 * 5, dtype=tack.f32)
    radius_squared(values, 9, 7)
    z, y, x = np.mgrid[:5, :7, :9]
    expected = ((x - 4) ** 2 + (y - 3) ** 2 + (z - 2) ** 2).ravel().astype(np.float32)
    np.testing.assert_array_equal(values.numpy(), expected)


@tack.kernel
def int_divmod(a, b, q, r):
    for i in range(a.shape[0]):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


def test_floor_division_and_modulo_follow_python_for_negatives():
    vals = [-7, -6, -1, 0, 1, 6, 7, 2**62, -(2**63)]
    divs = [-3, -2, -1, 1, 2, 3, 7]
    a = np.array([x for x in vals for _ in divs], dtype=np.int64)
    b = np.array([d for _ in vals for d in divs], dtype=np.int64)
    q, r = tack.zeros(a.size, dtype=tack.i64), tack.zeros(a.size, dtype=tack.i64)
    int_divmod(tack.array(a), tack.array(b), q, r)
    want_q = [
        (x // d) if not (x == -(2**63) and d == -1) else x
        for x, d in zip(a.tolist(), b.tolist(), strict=False)
    ]
    want_r = [x % d for x, d in zip(a.tolist(), b.tolist(), strict=False)]
    assert q.numpy().tolist() == want_q  # INT64_MIN // -1 wraps to INT64_MIN
    assert r.numpy().tolist() == want_r


def test_integer_division_by_zero_gives_zero_outside_debug_mode():
    a = tack.array(np.array([5, -5, 0], dtype=np.int64))
    b = tack.array(np.zeros(3, dtype=np.int64))
    q, r = tack.full(3, 9, dtype=tack.i64), tack.full(3, 9, dtype=tack.i64)
    int_divmod(a, b, q, r)
    assert q.numpy().tolist() == [0, 0, 0]
    assert r.numpy().tolist() == [0, 0, 0]


@tack.kernel
def float_ops(a, b, out):
    for i in range(a.shape[0]):
        out[i, 0] = a[i] // b[i]
        out[i, 1] = a[i] % b[i]
        out[i, 2] = a[i] / b[i]
        out[i, 3] = a[i] ** 2 - b[i] ** 0.5 if b[i] > 0 else -1.0


def test_float_floor_division_modulo_and_true_division_follow_python():
    a = np.array([7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 1e30, 3.0], dtype=np.float64)
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 7.0, 0.1], dtype=np.float64)
    out = tack.zeros((a.size, 4), dtype=tack.f64)
    float_ops(tack.array(a), tack.array(b), out)
    got = out.numpy()
    for i, (x, y) in enumerate(zip(a.tolist(), b.tolist(), strict=False)):
        assert got[i, 0] == x // y and math.copysign(1, got[i, 0]) == math.copysign(1, x // y)
        assert got[i, 1] == x % y and math.copysign(1, got[i, 1]) == math.copysign(1, x % y)
        assert got[i, 2] == x / y
        assert got[i, 3] == (x**2 - y**0.5 if y > 0 else -1.0)


@tack.kernel
def true_div(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] / b[i]


def test_true_division_of_ints_is_float():
    a = np.array([1, -7, 10, 2**53 + 1], dtype=np.int64)
    b = np.array([2, 2, 4, 1], dtype=np.int64)
    out = tack.zeros(4, dtype=tack.f64)
    true_div(tack.array(a), tack.array(b), out)
    assert out.numpy().tolist() == [x / y for x, y in zip(a.tolist(), b.tolist(), strict=False)]


@tack.kernel
def store_all(src, i32, u8, b, f16, i64, u64):
    for i in range(src.shape[0]):
        i32[i] = src[i]
        u8[i] = src[i]
        b[i] = src[i]
        f16[i] = src[i]
        i64[i] = src[i]
        u64[i] = src[i]


def test_stores_convert_to_the_element_type():
    src = np.array([1.9, -1.9, 1e20, -1e20, np.nan, 300.0, 0.0, 65504.0, 1e-8],
                   dtype=np.float64)
    n = src.size
    outs = [tack.zeros(n, dtype=d) for d in
            (tack.i32, tack.u8, tack.bool, tack.f16, tack.i64, tack.u64)]
    store_all(tack.array(src), *outs)
    # Tack's conversion rule (tack.copyto): truncate toward zero, saturate, NaN -> 0.
    for out in outs:
        want = tack.zeros(n, dtype=out.dtype)
        tack.copyto(want, src)
        np.testing.assert_array_equal(out.numpy(), want.numpy())
    assert outs[0].numpy().tolist()[:5] == [1, -1, 2**31 - 1, -(2**31), 0]


@tack.kernel
def int_stores(src, i8, u16):
    for i in range(src.shape[0]):
        i8[i] = src[i] * 2
        u16[i] = src[i] - 1


def test_integer_stores_wrap():
    src = np.array([0, 1, 100, 200, -5, 70000], dtype=np.int64)
    i8, u16 = tack.zeros(6, dtype=tack.i8), tack.zeros(6, dtype=tack.u16)
    int_stores(tack.array(src), i8, u16)
    np.testing.assert_array_equal(i8.numpy(), (src * 2).astype(np.int8))  # modulo 2**8
    np.testing.assert_array_equal(u16.numpy(), (src - 1).astype(np.uint16))


@tack.kernel
def math_fns(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        out[i, 0] = math.sqrt(v)
        out[i, 1] = math.exp(v)
        out[i, 2] = math.log(v)
        out[i, 3] = math.sin(v) + math.cos(v) + math.tan(v)
        out[i, 4] = math.floor(v) * 10 + math.ceil(-v)
        out[i, 5] = math.pow(v, 1.5) + math.fabs(-v)
        out[i, 6] = math.atan2(v, 2.0) + math.hypot(v, 3.0)
        out[i, 7] = math.log(v, 2.0) + math.log2(v) + math.log10(v)
        out[i, 8] = math.copysign(v, -1.0) + math.fmod(v, 0.7)
        out[i, 9] = math.degrees(v) + math.radians(v) + math.pi + math.e
        out[i, 10] = 1.0 if math.isnan(v - v) or math.isinf(v) else 0.0
        out[i, 11] = math.tanh(v) + math.atan(v) + math.asinh(v) + math.erf(v)
        out[i, 12] = abs(-v) + min(v, 2.0) + max(v, 2.0, 0.5) + round(v)


def test_math_functions_match_python():
    x = np.array([0.5, 1.0, 2.25, 3.5, 10.0], dtype=np.float64)
    got, want = run_both(math_fns, x, np.zeros((5, 13)))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-14)


@tack.kernel
def math_f32(x, out):
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i]) * 0.5 + math.sin(x[i])


def test_math_on_float32_computes_in_float32():
    x = np.linspace(0.0, 5.0, 101, dtype=np.float32)
    out = tack.zeros(101, dtype=tack.f32)
    math_f32(tack.array(x), out)
    want = np.sqrt(x) * np.float32(0.5) + np.sin(x)
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-6)


@tack.kernel
def collatz(start, steps):
    for i in range(start.shape[0]):
        n = start[i]
        count = 0
        while n != 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            count += 1
            if count > 1000:
                break
        steps[i] = count


def test_while_and_break():
    check_both(collatz, np.arange(1, 200, dtype=np.int64), np.zeros(199, np.int32))


@tack.kernel
def skip_and_stop(a, out):
    for i in range(a.shape[0]):
        total = 0.0
        for j in range(a.shape[1]):
            if a[i, j] < 0:
                continue
            if a[i, j] > 8:
                break
            total += a[i, j]
        out[i] = total


def test_continue_break_in_nested_loops():
    rng = np.random.default_rng(1)
    a = rng.integers(-5, 10, size=(40, 30)).astype(np.float64)
    check_both(skip_and_stop, a, np.zeros(40))


@tack.kernel
def steps_and_ranges(out):
    k = 0
    for i in range(3, 20, 4):
        out[k] = i
        k += 1
    for i in range(10, -3, -3):
        out[k] = i
        k += 1
    for i in range(5, 5):  # noqa: B007 (an empty range, on purpose)
        out[k] = 99
    n = 0
    while n < 3:
        n += 1
    out[k] = i * 100 + n


def test_range_forms_and_serial_kernels():
    check_both(steps_and_ranges, np.zeros(16, np.int64))


@tack.kernel
def matmul(a, b, c):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            s = 0.0
            for k in range(a.shape[1]):
                s += a[i, k] * b[k, j]
            c[i, j] = s


def test_nested_loops_and_2d_indexing():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((17, 9)), rng.standard_normal((9, 13))
    c = tack.zeros((17, 13), dtype=tack.f64)
    matmul(tack.array(a), tack.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-12)


@tack.kernel
def stencil(u, out):
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            for k in range(1, u.shape[2] - 1):
                out[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k]
                                + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1]
                                - 6.0 * u[i, j, k])


def test_3d_indexing_stencil():
    rng = np.random.default_rng(3)
    u = rng.standard_normal((12, 10, 8)).astype(np.float32)
    out = tack.zeros(u.shape, dtype=tack.f32)
    stencil(tack.array(u), out)
    want = np.zeros_like(u)
    c = u[1:-1, 1:-1, 1:-1]
    want[1:-1, 1:-1, 1:-1] = (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1]
                              + u[1:-1, 2:, 1:-1] + u[1:-1, 1:-1, :-2]
                              + u[1:-1, 1:-1, 2:] - np.float32(6.0) * c)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)


@tack.kernel
def shapes(a, out):
    out[0] = a.shape[0]
    out[1] = a.shape[1]
    out[2] = a.shape[2]
    out[3] = len(a)
    out[4] = a.ndim
    out[5] = a.size
    out[6] = len(out)


def test_shape_len_ndim_size():
    out = tack.zeros(7, dtype=tack.i64)
    shapes(tack.zeros((4, 5, 6)), out)
    assert out.numpy().tolist() == [4, 5, 6, 4, 3, 120, 7]


@tack.kernel
def vec_ops(p, out, lengths):
    for i in range(p.shape[0]):
        lengths[i] = math.sqrt(p[i].x * p[i].x + p[i][1] * p[i][1] + p[i].z ** 2)
        out[i].x = p[i].y
        out[i][1] = p[i][0]
        for c in range(2, 3):
            out[i][c] = -p[i][c]


def test_vec_component_access():
    pts = np.arange(30, dtype=np.float32).reshape(10, 3)
    p = tack.array(pts, dtype=tack.vec3)
    out, lengths = tack.zeros(10, dtype=tack.vec3), tack.zeros(10, dtype=tack.f32)
    vec_ops(p, out, lengths)
    np.testing.assert_allclose(lengths.numpy(), np.linalg.norm(pts, axis=1), rtol=1e-6)
    o = out.numpy()
    np.testing.assert_array_equal(o[:, 0], pts[:, 1])
    np.testing.assert_array_equal(o[:, 1], pts[:, 0])
    np.testing.assert_array_equal(o[:, 2], -pts[:, 2])


@tack.kernel
def scalars(out, n, x, flag):
    for i in range(out.shape[0]):
        v = i * x + n
        if flag:
            v = -v
        out[i] = v


def test_scalar_kinds_make_specializations():
    out = tack.zeros(5, dtype=tack.f64)
    scalars(out, 2, 0.5, False)
    assert out.numpy().tolist() == [2.0, 2.5, 3.0, 3.5, 4.0]
    scalars(out, 2, 3, True)  # x is an int now: a new specialization
    assert out.numpy().tolist() == [-2.0, -5.0, -8.0, -11.0, -14.0]
    scalars(out, n=1, x=1.0, flag=True)  # keywords bind by name
    assert out.numpy().tolist() == [-1.0, -2.0, -3.0, -4.0, -5.0]
    scalars(out, np.int64(1), np.float64(2.0), False)  # NumPy scalars: int and float
    assert out.numpy().tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]
    assert scalars._nspecializations == 2
    scalars(out, np.int64(1), np.float32(2.0), False)  # float32 keeps its type
    assert out.numpy().tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]
    assert scalars._nspecializations == 3
    scalars(tack.zeros(5, dtype=tack.f32), 2, 0.5, False)  # new dtype
    scalars(tack.zeros((1,), dtype=tack.i32), 2, 0.5, False)
    assert scalars._nspecializations == 5


@tack.kernel
def logic(a, out):
    for i in range(a.shape[0]):
        x = a[i]
        out[i, 0] = 1 if 0 < x <= 5 else 0
        out[i, 1] = (x > 2 and x != 4) or x == -1
        out[i, 2] = not (x >= 3)
        out[i, 3] = -x if x < 0 else x * 2
        out[i, 4] = (x & 3) | (x ^ 5) << 1
        out[i, 5] = ~x >> 1
        out[i, 6] = x != x + 0.5
        out[i, 7] = x * 1.5 == 3.0


def test_comparisons_boolean_operators_and_conditional_expressions():
    check_both(logic, np.arange(-3, 9, dtype=np.int64), np.zeros((12, 8), np.int64))


@tack.kernel
def builtins_k(a, out):
    for i in range(a.shape[0]):
        x = a[i]
        out[i, 0] = abs(x)
        out[i, 1] = min(x, 1.5)
        out[i, 2] = max(x, -1.0, 0.25)
        out[i, 3] = int(x)
        out[i, 4] = float(int(x * 3.0))
        out[i, 5] = round(x)
        out[i, 6] = bool(x)
        out[i, 7] = int(-x) // 2 + SCALE


def test_builtins_abs_min_max_int_float_round():
    a = np.array([-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 3.7])
    check_both(builtins_k, a, np.zeros((8, 8)))


@tack.kernel
def augmented(a, out):
    for i in range(a.shape[0]):
        t = a[i]
        t += 1
        t *= 3
        t -= 2
        t //= 2
        t %= 7
        t **= 2
        out[i] += t
        out[i] -= 1
        out[i] *= 2


def test_augmented_assignment_to_locals_and_elements():
    check_both(augmented, np.arange(-10, 10, dtype=np.int64), np.ones(20, np.int64))


@tack.kernel
def wraps(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * 4 + 3


def test_int64_overflow_wraps():
    a = np.array([2**62, -(2**62) - 1, 2**63 - 1], dtype=np.int64)
    out = tack.zeros(3, dtype=tack.i64)
    wraps(tack.array(a), out)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out.numpy(), a * 4 + 3)


@tack.kernel
def total(a, out):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    out[0] = s


def test_loop_carried_local_makes_the_kernel_serial_and_exact():
    a = np.linspace(0, 1, 1001)
    out = tack.zeros(1, dtype=tack.f64)
    total(tack.array(a), out)
    assert out.numpy()[0] == sum(a.tolist())  # same order as Python: exact


@tack.kernel
def weak_literals(a, out32, out64):
    for i in range(a.shape[0]):
        out32[i] = a[i] * 0.1 + 1
        out64[i] = a[i] * float(0.1)


def test_literals_keep_float32_and_float_promotes():
    a = np.array([1.5, 3.25, 7.0], dtype=np.float32)
    o32, o64 = tack.zeros(3, dtype=tack.f32), tack.zeros(3, dtype=tack.f64)
    weak_literals(tack.array(a), o32, o64)
    np.testing.assert_array_equal(o32.numpy(), a * np.float32(0.1) + np.float32(1))
    np.testing.assert_array_equal(o64.numpy(), a.astype(np.float64) * 0.1)


@tack.kernel
def with_prelude(out, scale):
    n = out.shape[0] - 1
    half = scale * 0.5
    for i in range(1, n):
        out[i] = i * half


def test_prelude_before_the_parallel_loop():
    out = tack.zeros(10, dtype=tack.f64)
    with_prelude(out, 4.0)
    assert out.numpy().tolist() == [0.0] + [2.0 * i for i in range(1, 9)] + [0.0]


@tack.kernel
def reuses_parameter(out, n):
    for i in range(out.shape[0]):
        n = n + i
        out[i] = n


def test_assigning_a_parameter_in_the_loop_runs_serially_like_python():
    check_both(reuses_parameter, np.zeros(1000, np.int64), 5)
