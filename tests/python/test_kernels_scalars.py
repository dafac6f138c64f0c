"""Scalars that keep their type: a NumPy float32 argument computes in float32 (as in
NumPy 2), and tack.f32(x), tack.i8(x), ... convert inside a kernel by the rules of a
store (tack.copyto's)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_helpers import private_kernel_cache  # noqa: F401  (autouse)

import tack
from tack.kernel import generate_source


@tack.kernel
def saxpy(a, x, y, out):
    for i in range(out.shape[0]):
        out[i] = a * x[i] + y[i]


@tack.kernel
def scale64(a, x, out):
    for i in range(out.shape[0]):
        out[i] = a * x[i]


def test_numpy_float32_scalar_computes_in_float32():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    a = np.float32(1.1)
    out = tack.zeros(1000, dtype=tack.f32)
    saxpy(a, tack.array(x), tack.array(y), out)
    np.testing.assert_array_equal(out.numpy(), a * x + y)  # NumPy 2: float32
    src = generate_source(saxpy, ("float32", ("array", "float32", 1),
                                  ("array", "float32", 1), ("array", "float32", 1)))
    assert "double" not in src.split("tack_kernel_body")[1].split("tk_body")[0] \
        .replace("tk_args", "")


def test_float32_scalar_meets_float64_in_float64():
    x = np.array([1.0 / 3.0, 2.0 / 3.0], dtype=np.float64)
    out = tack.zeros(2, dtype=tack.f64)
    scale64(np.float32(0.1), tack.array(x), out)
    np.testing.assert_array_equal(out.numpy(), np.float32(0.1) * x)
    # a Python float is float64, and is a separate specialization
    scale64(0.1, tack.array(x), out)
    np.testing.assert_array_equal(out.numpy(), 0.1 * x)
    assert scale64._nspecializations == 2


def test_float16_scalar_computes_in_float32():
    out = tack.zeros(1, dtype=tack.f32)
    x = tack.array(np.array([3.0], dtype=np.float32))
    scale64(np.float16(0.1), x, out)
    assert out.numpy()[0] == np.float32(np.float16(0.1)) * np.float32(3.0)


@tack.kernel
def conversions(v, out):
    out[0] = tack.f32(v)
    out[1] = tack.i8(v)
    out[2] = tack.u8(v)
    out[3] = tack.int32(v)
    out[4] = tack.f16(v)
    out[5] = tack.f64(tack.f32(v))
    out[6] = tack.bool(v)
    out[7] = tack.uint16(v)


@pytest.mark.parametrize("v", [300, -1, 1e10, -1e10, 2.5, -2.5, 0.1, 70000.0,
                               float("nan"), 65519.0, True])
def test_dtype_conversions_follow_numpy_casts(v):
    out = tack.zeros(8, dtype=tack.f64)
    conversions(v, out)
    got = out.numpy()
    names = ["float32", "int8", "uint8", "int32", "float16", "float32", "bool",
             "uint16"]
    src = tack.array(np.array([v], dtype=np.float64 if isinstance(v, float)
                              else np.int64))
    for k, name in enumerate(names):
        dst = tack.zeros(1, dtype=getattr(tack, name))
        tack.copyto(dst, src)  # the store rule, as the runtime converts
        want = dst.numpy().astype(np.float64)[0]
        if np.isnan(want):
            assert np.isnan(got[k]), (name, got[k])
        else:
            assert got[k] == want, (name, v, got[k], want)


def test_conversions_by_imported_name():
    from tack import f32, i16

    @tack.kernel
    def k(out, v):
        out[0] = f32(v) + i16(v)

    out = tack.zeros(1, dtype=tack.f64)
    k(out, 40000)
    assert out.numpy()[0] == 40000.0 + (40000 - 65536)


def test_float32_conversion_keeps_float32_arithmetic():
    @tack.kernel
    def third(out):
        out[0] = tack.f32(1.0) / 3.0

    out = tack.zeros(1, dtype=tack.f64)
    third(out)
    assert out.numpy()[0] == float(np.float32(1.0) / np.float32(3.0))
