"""tack.local_array(shape, dtype): a constant-shape, zero-filled array private to
each iteration of the parallel loop (and usable in serial kernels and funcs)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_helpers import check_both, private_kernel_cache  # noqa: F401

import tack


@tack.kernel
def sort3(a, out):
    for i in range(a.shape[0]):
        t = tack.local_array((3,), tack.f32)
        for k in range(3):
            t[k] = a[i, k]
        for j in range(2):  # bubble sort, per row
            for k in range(2 - j):
                if t[k] > t[k + 1]:
                    x = t[k]
                    t[k] = t[k + 1]
                    t[k + 1] = x
        for k in range(len(t)):
            out[i, k] = t[k]


def test_private_per_iteration_and_parallel():
    a = np.random.default_rng(0).random((50_000, 3)).astype(np.float32)
    out = tack.zeros((50_000, 3), dtype=tack.f32)
    sort3(tack.array(a), out)
    np.testing.assert_array_equal(out.numpy(), np.sort(a, axis=1))


@tack.kernel
def counts(a, out):
    for i in range(a.shape[0]):
        c = tack.local_array((2, 4), tack.i64)
        for k in range(a.shape[1]):
            c[k % 2, a[i, k] % 4] += 1
        for r in range(c.shape[0]):
            for k in range(c.shape[1]):
                out[i, r * 4 + k] = c[r, k] * (r + 1)


def test_zero_filled_every_iteration_two_dimensions():
    a = np.random.default_rng(1).integers(0, 10, (40, 7)).astype(np.int64)
    check_both(counts, a, np.zeros((40, 8), dtype=np.int64))


@tack.func
def dot3(u, v):
    s = 0.0
    for k in range(3):
        s += u[k] * v[k]
    return s


def test_passed_to_a_func_and_in_a_serial_kernel():
    @tack.kernel
    def serial(out):
        u = tack.local_array((3,), tack.f64)
        v = tack.local_array((3,), tack.f64)
        for k in range(3):
            u[k] = k + 1.0
            v[k] = 2.0
        out[0] = dot3(u, v)
        for i in range(1, out.shape[0]):  # serial: the statement above stores
            out[i] = out[i - 1] + u.size

    check_both(serial, np.zeros(5))


def test_shared_local_array_makes_the_kernel_serial():
    @tack.kernel
    def shared(out):
        t = tack.local_array((1,), tack.i64)
        for i in range(out.shape[0]):
            t[0] += i
            out[i] = t[0]

    check_both(shared, np.zeros(1000, dtype=np.int64))


def test_errors():
    def not_constant(out, n):
        t = tack.local_array((n,), tack.f32)
        out[0] = t[0]

    with pytest.raises(tack.KernelError, match="constant"):
        tack.kernel(not_constant)

    def vec(out):
        t = tack.local_array((2,), tack.vec3)
        out[0] = t[0][0]

    with pytest.raises(tack.KernelError, match="scalar"):
        tack.kernel(vec)

    def rebound(out):
        t = tack.local_array((2,), tack.f32)
        t = 1.0
        out[0] = t

    with pytest.raises(tack.KernelError, match="local array"):
        tack.kernel(rebound)
