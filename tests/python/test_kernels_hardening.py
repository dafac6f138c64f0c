"""Kernel front-end hardening: hostile file paths never reach generated C
unescaped, generated names never collide with user names, deep expressions and
edge literals compile, float64 -> float16 stores round once, and misuse of the
decorator or of globals gets a clear error."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from kernel_helpers import private_kernel_cache  # noqa: F401  (autouse)

import tack
from tack.kernel import generate_source

GLOBAL_TOO_BIG = 2**64


KERNEL_FILE = '''
import tack

@tack.kernel
def fill(out, v):
    for i in range(out.shape[0]):
        out[i] = v + 1.0
'''

HOSTILE_DIRS = [
    "end*/comment",
    "new\nline",
    'quo"te',
    "back\\slash",
    'x" \n#error injected\n/* */ int injected = 1; //',
    "*/ int injected(void) { return 1; } /*",
    "tri??/graph",
]


def load_module(path: Path, source: str):
    """Writes source to path and imports it as a fresh module."""
    path.write_text(source)
    name = f"kernel_mod_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("dirname", HOSTILE_DIRS)
def test_hostile_kernel_path_compiles_and_runs(tmp_path: Path, dirname: str):
    d = tmp_path / dirname
    d.mkdir(parents=True)
    mod = load_module(d / "hostile_kernel.py", KERNEL_FILE)
    out = tack.zeros(4)
    mod.fill(out, 2.0)
    assert out.numpy().tolist() == [3.0] * 4
    src = generate_source(mod.fill, (("array", "float32", 1), "float"))
    # The path reaches the source only as an escaped string literal of a #line
    # directive: one line each, nothing of it outside the quotes.
    for line in src.splitlines():
        if "hostile_kernel" in line or "injected" in line:
            assert line.startswith("#line ") and line.endswith('hostile_kernel.py"')
    directives = [ln for ln in src.splitlines() if ln.startswith("#line ")]
    assert directives
    assert src.count('hostile_kernel.py"') == len(directives)


def test_user_names_never_collide_with_generated_names():
    @tack.kernel
    def k(a, a_n0, a_size, a_n1, out):
        for i in range(out.shape[0]):
            out[i] = a[i] + a_n0[i] + a_size + a_n1

    out = tack.zeros(3, dtype=tack.f64)
    a = tack.array(np.arange(3.0))
    b = tack.array(np.full(5, 10.0))
    k(a, b, 100.0, 1000.0, out)
    assert out.numpy().tolist() == [1110.0, 1111.0, 1112.0]

    @tack.kernel
    def locals_(p, out):
        for i in range(out.shape[0]):
            tk_k = i * 2
            v_p = tk_k + 1
            tk_start = v_p
            out[i] = tk_start + p[i]

    out = tack.zeros(3, dtype=tack.f64)
    locals_(tack.array(np.arange(3.0)), out)
    assert out.numpy().tolist() == [1.0, 4.0, 7.0]


def test_long_expression_compiles(tmp_path: Path):
    terms = " + ".join(["x"] * 250)
    mod = load_module(tmp_path / "deep_kernel.py",
                      "import tack\n\n@tack.kernel\ndef deep(out, x):\n"
                      "    for i in range(out.shape[0]):\n"
                      f"        out[i] = {terms}\n")
    out = tack.zeros(2, dtype=tack.i64)
    mod.deep(out, 3)
    assert out.numpy().tolist() == [750, 750]


def test_int64_min_literal():
    @tack.kernel
    def k(out):
        out[0] = -9223372036854775808
        out[1] = -9223372036854775807 - 1

    out = tack.zeros(2, dtype=tack.i64)
    k(out)
    assert out.numpy().tolist() == [-(2**63), -(2**63)]


def test_float64_to_float16_store_rounds_once():
    values = np.array([1 + 2**-11 + 2**-40, -(1 + 2**-11 + 2**-40), 65519.99,
                       2**-24 * 0.5 + 2**-60, 2**-25, 1e-8, 70000.0, -np.inf, 0.1,
                       1 + 3 * 2**-12, 2049.0000001],
                      dtype=np.float64)

    @tack.kernel
    def store(src, out):
        for i in range(out.shape[0]):
            out[i] = src[i]

    out = tack.zeros(values.size, dtype=tack.f16)
    store(tack.array(values), out)
    with np.errstate(over="ignore"):  # 70000 and -inf: inf, as in the kernel
        want = values.astype(np.float16)
    np.testing.assert_array_equal(out.numpy(), want)
    assert out.numpy()[0] == np.float16(1.0009765625)


def test_float64_to_float16_nan():
    @tack.kernel
    def store(out, v):
        out[0] = v

    out = tack.zeros(1, dtype=tack.f16)
    store(out, float("nan"))
    assert np.isnan(out.numpy()[0])


def test_kernel_of_a_non_function_is_a_type_error():
    with pytest.raises(TypeError, match="function"):
        tack.kernel(42)
    with pytest.raises(TypeError, match="function"):
        tack.kernel("def f(): pass")


def test_global_int_outside_int64_says_what_to_do():
    @tack.kernel
    def k(out):
        out[0] = GLOBAL_TOO_BIG

    with pytest.raises(tack.KernelError) as info:
        k(tack.zeros(1))
    msg = str(info.value)
    assert "GLOBAL_TOO_BIG" in msg
    assert "is an int" in msg and "is a int" not in msg
    assert "int64" in msg


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_int_of_float_truncates_and_saturates(dtype):
    edges = [0.0, -0.0, 2.9, -2.9, 0.5, -0.5, 1e30, -1e30, np.inf, -np.inf, np.nan,
             2.0**63, -(2.0**63), 2.0**62, -(2.0**62), 2.0**63 * (1 - 2**-24),
             123456789.75, -(2.0**31)]
    x = np.array(edges, dtype=dtype)

    @tack.kernel
    def ints(src, out, stored):
        for i in range(out.shape[0]):
            out[i] = int(src[i])
            stored[i] = src[i]

    out = tack.zeros(x.size, dtype=tack.i64)
    stored = tack.zeros(x.size, dtype=tack.i64)
    ints(tack.array(x), out, stored)
    want = []
    for v in x.tolist():
        if v != v:
            want.append(0)
        elif abs(v) == float("inf"):
            want.append(2**63 - 1 if v > 0 else -(2**63))
        else:
            want.append(max(-(2**63), min(2**63 - 1, int(v))))
    assert out.numpy().tolist() == want
    assert stored.numpy().tolist() == want


GLOBALS_FILE = '''
import producer

import tack

SCALE = 2.0
big = tack.from_dlpack(producer.load().make((1 << 16,)))  # a global no kernel reads


@tack.func
def scaled(x):
    return x * SCALE


@tack.kernel
def fill(out):
    for i in range(out.shape[0]):
        out[i] = SCALE * i


@tack.kernel
def fill_by_func(out):
    for i in range(out.shape[0]):
        out[i] = scaled(i)
'''


def test_kernels_and_funcs_keep_no_module_global_alive(tmp_path: Path):
    import gc

    import producer

    cp = producer.load()
    made, deleted = cp.counts()
    mod = load_module(tmp_path / "globals_kernel.py", GLOBALS_FILE)
    assert cp.counts() == (made + 1, deleted)
    out = tack.zeros(3, dtype=tack.f64)
    mod.fill(out)
    mod.fill_by_func(out)
    del mod.big
    gc.collect()
    assert cp.counts() == (made + 1, deleted + 1)  # the producer's deleter ran
    # Globals are still read when a specialization compiles, not before.
    mod.SCALE = 3.0
    out32 = tack.zeros(3, dtype=tack.f32)
    mod.fill(out32)
    mod.fill_by_func(out)
    assert out32.numpy().tolist() == [0.0, 3.0, 6.0]
    assert out.numpy().tolist() == [0.0, 2.0, 4.0]  # a known specialization
