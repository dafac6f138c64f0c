"""The compiler's structure: one builtin registry for every stage, dtype facts and
the kernel ABI version from the C runtime, the helper prelude read from its header
file, one lowering that an emitter only spells."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest
from kernel_helpers import private_kernel_cache  # noqa: F401  (autouse)

import tack
from tack.kernel import builtins, generate_source, ir, lir
from tack.kernel.emit_c import header as pasted_header
from tack.kernel.lower import mangle


def triple(x):  # a Python function registered as a builtin by the test below
    return 3 * x


def test_one_registry_feeds_parser_typer_and_lowering():
    b = builtins.Builtin(
        "triple", (triple,), (1, 1), lambda args: args[0].ty,
        lambda lw, e: lir.Bin("*", lw.ex(e.args[0]),
                              lir.Cast(e.ty, lir.Lit(3, ir.INT))))
    builtins.register(b)
    try:
        @tack.kernel
        def k(a, out):
            for i in range(out.shape[0]):
                out[i] = triple(a[i]) + triple(2)

        a = np.arange(4, dtype=np.float32)
        out = tack.zeros(4, dtype=tack.f32)
        k(tack.array(a), out)
        np.testing.assert_array_equal(out.numpy(), 3 * a + 6)
    finally:
        del builtins.REGISTRY["triple"]
        del builtins.BY_OBJECT[id(triple)]
    with pytest.raises(tack.KernelError, match="cannot be called"):
        tack.kernel(k.__wrapped__)


def test_registry_arity_is_the_parsers():
    def bad(out):
        out[0] = max(1.0)

    with pytest.raises(tack.KernelError, match=r"max\(\) takes 2 or more"):
        tack.kernel(bad)
    assert builtins.REGISTRY["math.log"].arity == (1, 2)


def test_dtype_facts_come_from_the_runtime_table():
    for name, facts in ir.DTYPES.items():
        dt = getattr(tack, name) if hasattr(tack, name) else tack.dtype(name)
        assert dt.itemsize == facts.itemsize, name
        assert dt.ncomponents == facts.components, name
    assert ir.DTYPES["int16"].int_range == (-(2**15), 2**15 - 1)
    assert ir.DTYPES["uint32"].int_range == (0, 2**32 - 1)
    assert ir.DTYPES["float16"].ctype == "uint16_t"


def test_source_carries_the_runtime_abi_and_the_prelude_header():
    @tack.kernel
    def k(out):
        for i in range(out.shape[0]):
            out[i] = i // 3

    src = generate_source(k, (("array", "int64", 1),))
    assert f"tack_kernel_abi = {tack._tack._KERNEL_ABI};" in src
    header = resources.files("tack.kernel").joinpath("prelude.h").read_text()
    assert "TK_INLINE int64_t tk_floordiv" in header
    assert pasted_header("prelude.h", half=False) in src  # pasted, less comments
    assert "tk_floordiv" in pasted_header("prelude.h", half=False)
    assert "#define TK_HALF" not in src and "tk_h2f" not in src
    half = generate_source(k, (("array", "float16", 1),))
    assert "#define TK_HALF 1" in half
    assert pasted_header("prelude.h", half=True) in half and "tk_h2f" in half


def test_mangled_names_are_distinct_and_ascii():
    names = ["a", "a_n0", "a_", "_a", "a__n0", "é", "_x65_", "size", "a_size"]
    mangled = [mangle(n) for n in names]
    assert len(set(mangled)) == len(names)
    assert all(m.isascii() and (m.replace("_", "").isalnum() or m == "") for m in
               mangled)
    # a generated suffix is '_' followed by a letter: never inside a mangled name
    for m in mangled:
        assert "_n" not in m.replace("__", "")

    @tack.kernel
    def unicode_names(données, out):
        for i in range(out.shape[0]):
            été = données[i] * 2.0
            out[i] = été

    out = tack.zeros(3, dtype=tack.f64)
    unicode_names(tack.array(np.arange(3.0)), out)
    assert out.numpy().tolist() == [0.0, 2.0, 4.0]


def test_backend_selects_the_emitter():
    @tack.kernel
    def k(out):
        for i in range(out.shape[0]):
            out[i] = 1.0

    sig = (("array", "float64", 1),)
    with pytest.raises(tack.CompileError, match="device type 10"):
        k.compile(sig, False, 10)  # kDLROCM: no emitter yet
    with pytest.raises(tack.CompileError, match="device type 10"):
        k.compile(sig, False, 10)  # and again
    out = tack.zeros(2, dtype=tack.f64)
    k(out)  # the CPU specialization is another key
    assert out.numpy().tolist() == [1.0, 1.0]


@tack.kernel
def last_extents(a, b, c, d, out):
    out[0] = a.shape[63] + b.shape[63] * 10 + c.shape[-1] * 100 + d.shape[63] * 1000


def test_parameter_block_beyond_the_stack_buffer():
    # four 64-D arrays: a parameter block of more than 2 KiB (kernel.h's layout)
    arrays = [tack.zeros((1,) * 63 + (k,), dtype=tack.u8) for k in (2, 3, 4, 5)]
    out = tack.zeros(1, dtype=tack.i64)
    last_extents(*arrays, out)
    assert out.numpy()[0] == 5432
    src = generate_source(last_extents, tuple(("array", "uint8", 64) for _ in range(4))
                          + (("array", "int64", 1),))
    assert "int64_t a3_n[64];" in src and "tack_kernel_param_key[]" in src
