"""Kernel errors: KernelError at the Python line, CompileError with the compiler's
log (raised again on every call), debug-mode IndexError and ZeroDivisionError,
argument errors, read-only refusal."""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path

import numpy as np
import pytest

import tack

HERE = Path(__file__).read_text().splitlines()


def line_of(tag: str) -> int:
    """The line of this file that ends with the comment '# marker: <tag>'."""
    hits = [n for n, text in enumerate(HERE, 1) if text.endswith("marker: " + tag)]
    assert len(hits) == 1, hits
    return hits[0]


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kc"))


def kernel_error(fn) -> tack.KernelError:
    with pytest.raises(tack.KernelError) as info:
        tack.kernel(fn)
    assert isinstance(info.value, SyntaxError)
    assert info.value.filename == __file__
    return info.value


def test_unsupported_constructs_point_at_their_line():
    def lists(out):
        for i in range(3):
            x = [1, 2]  # marker: list
            out[i] = x

    def returns(out):
        if out[0] > 0:
            return 1  # marker: return
        out[0] = 1

    def tries(out):
        try:  # marker: try
            out[0] = 1
        except Exception:
            pass

    def calls(out):
        out[0] = print(1)  # marker: call

    def tuples(out):
        a, b = 1, 2  # marker: tuple
        out[0] = a + b

    def strings(out):
        out[0] = "text"  # marker: string

    def slices(out):
        out[0] = out[1:2]  # marker: slice

    cases = [(lists, "list"), (returns, "return"), (tries, "try"), (calls, "call"),
             (tuples, "tuple"), (strings, "string"), (slices, "slice")]
    for fn, marker in cases:
        err = kernel_error(fn)
        assert err.lineno == line_of(marker), (fn.__name__, err.lineno)


def test_specialization_errors_point_at_their_line():
    @tack.kernel
    def wrong_rank(out):
        for i in range(out.shape[0]):
            out[i] = 1.0  # marker: rank

    with pytest.raises(tack.KernelError) as info:
        wrong_rank(tack.zeros((2, 2)))
    assert info.value.lineno == line_of("rank")
    wrong_rank(tack.zeros(2))  # the 1-D specialization is fine

    @tack.kernel
    def unknown_global(out):
        out[0] = NOT_DEFINED_ANYWHERE  # noqa: F821  marker: global

    with pytest.raises(tack.KernelError) as info:
        unknown_global(tack.zeros(1))
    assert info.value.lineno == line_of("global")

    @tack.kernel
    def float_index(out):
        out[0.5] = 1.0  # marker: float index

    with pytest.raises(tack.KernelError) as info:
        float_index(tack.zeros(1))
    assert info.value.lineno == line_of("float index")


def test_argument_errors():
    @tack.kernel
    def k(out, n):
        out[0] = n

    with pytest.raises(TypeError):
        k(tack.zeros(1))
    with pytest.raises(TypeError):
        k(tack.zeros(1), 1, 2)
    with pytest.raises(TypeError):
        k(tack.zeros(1), "x")
    with pytest.raises(TypeError):
        k(np.zeros(1), 1)  # NumPy arrays are copied in with tack.array, not passed
    with pytest.raises(TypeError):
        k(1, 1)  # out is used as an array
    with pytest.raises(OverflowError):
        k(tack.zeros(1), 2**64)
    k(out=tack.zeros(1), n=2)


@pytest.fixture()
def failing_cc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    counter = tmp_path / "runs"
    script = tmp_path / "fakecc"
    script.write_text(f"#!/bin/sh\necho run >> {counter}\n"
                      "echo 'fake.c:1: error: boom from the compiler' >&2\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.setenv("CC", str(script))
    return counter


def test_compile_error_carries_the_log_and_repeats_without_recompiling(failing_cc):
    @tack.kernel
    def k(out):
        out[0] = 1.0

    for _ in range(3):
        with pytest.raises(tack.CompileError, match="boom from the compiler") as info:
            k(tack.zeros(1))
        assert isinstance(info.value, RuntimeError)
    assert failing_cc.read_text().count("run") == 1  # compiled once, failed thrice
    with pytest.raises(tack.CompileError):  # a new specialization compiles (and fails)
        k(tack.zeros(1, dtype=tack.f64))
    assert failing_cc.read_text().count("run") == 2


@tack.kernel(debug=True)
def out_of_bounds(out, n):
    for i in range(n):
        out[i] = 1.0  # marker: bounds


def test_debug_mode_bounds_check_raises_index_error():
    out = tack.zeros(8)
    out_of_bounds(out, 8)
    with pytest.raises(IndexError, match=r"index 8 .*'out'") as info:
        out_of_bounds(out, 100)
    assert f"line {line_of('bounds')}" in str(info.value)
    assert isinstance(info.value, tack.TackError)


def test_tack_debug_environment_variable(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TACK_DEBUG", "1")

    @tack.kernel
    def read_past(src, out):
        for i in range(out.shape[0]):
            out[i] = src[i, i + 1]

    with pytest.raises(IndexError, match=r"axis 1 of 'src'"):
        read_past(tack.zeros((4, 4)), tack.zeros(4))
    monkeypatch.setenv("TACK_DEBUG", "0")

    @tack.kernel
    def divide(a, b, out):
        for i in range(a.shape[0]):
            out[i] = a[i] // b[i]

    a = tack.array(np.array([4, 5], dtype=np.int64))
    b = tack.array(np.array([2, 0], dtype=np.int64))
    out = tack.zeros(2, dtype=tack.i64)
    divide(a, b, out)
    assert out.numpy().tolist() == [2, 0]
    checked = tack.kernel(divide.__wrapped__, debug=True)
    with pytest.raises(ZeroDivisionError):
        checked(a, b, out)


def test_debug_mode_vec_component_and_negative_index():
    @tack.kernel(debug=True)
    def comp(p, c):
        p[0][c] = 1.0

    comp(tack.zeros(2, dtype=tack.vec3), 2)
    with pytest.raises(IndexError):
        comp(tack.zeros(2, dtype=tack.vec3), 3)

    @tack.kernel(debug=True)
    def negative(out):
        out[-1] = 1.0

    with pytest.raises(IndexError, match="-1"):
        negative(tack.zeros(3))


@pytest.mark.skipif(not hasattr(tack, "from_dlpack"),
                    reason="needs a read-only array (DLPack import); the dispatch check "
                           "itself is tested in tests/c/test_kernel_launch.c")
def test_read_only_array_refused_before_anything_runs():
    host = np.zeros(4, dtype=np.float32)
    host.flags.writeable = False
    ro = tack.from_dlpack(host)
    assert not ro.writable

    @tack.kernel
    def writes(src, out):
        for i in range(out.shape[0]):
            out[i] = src[i] + 1.0

    writes(ro, tack.zeros(4))  # reading a read-only array is fine
    with pytest.raises(ValueError, match="'writes'.*'out'") as info:
        writes(tack.zeros(4), ro)
    # The advice is Python's (the binding words the runtime's remedy), not C's.
    assert "tack.array(a)" in str(info.value)
    assert "tack_array" not in str(info.value)


def test_cache_dir_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cache = tmp_path / "deep" / "cache"
    monkeypatch.setenv("TACK_CACHE_DIR", str(cache))

    @tack.kernel
    def k(out):
        out[0] = 7.0

    k(tack.zeros(1))
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    entries = sorted(p.suffix for p in cache.iterdir())
    assert entries == [".meta", ".so"]


@pytest.mark.parametrize("value", [
    np.timedelta64(5, "s"), np.datetime64("2020-01-01"), np.complex64(1 + 2j),
    np.clongdouble(1 + 2j),
], ids=lambda v: type(v).__name__)
def test_numpy_scalars_that_are_not_real_numbers_get_the_kernels_message(value):
    @tack.kernel
    def fill(out, v):
        for i in range(out.shape[0]):
            out[i] = v

    out = tack.zeros(2, dtype=tack.f64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning: nothing is converted
        with pytest.raises(TypeError) as info:
            fill(out, value)
    msg = str(info.value)
    assert msg.startswith("kernel 'fill': argument 'v' must be a tack.Array, an int, "
                          "a float or a bool, not numpy.")
    assert type(value).__name__ in msg
    assert out.numpy().tolist() == [0.0, 0.0]


@pytest.mark.parametrize("value", [[1.0, 2.0], (1, 2)], ids=["list", "tuple"])
def test_a_list_argument_says_to_wrap_it_with_tack_array(value):
    @tack.kernel
    def head(x, out):
        out[0] = x[0]

    kind = type(value).__name__
    out = tack.zeros(1, dtype=tack.f64)
    with pytest.raises(TypeError, match=rf"kernel 'head': argument 'x' is a {kind}; "
                       r"wrap it with tack\.array\(x\)"):
        head(value, out)
    head(tack.array(value, dtype=tack.f64), out)
    assert out.numpy().tolist() == [1.0]


def test_print_in_a_kernel_says_printing_is_not_supported():
    def statement(out):
        print(out[0])  # marker: print statement

    def value(out):
        out[0] = print(1)  # marker: print value

    for fn, marker in [(statement, "print statement"), (value, "print value")]:
        err = kernel_error(fn)
        assert err.lineno == line_of(marker)
        assert "printing is not supported in kernels" in str(err)


def test_a_kernel_annotated_none_is_accepted():
    @tack.kernel
    def fill(out: tack.Array) -> None:  # parameter annotations are ignored
        for i in range(out.shape[0]):
            out[i] = 2.0

    out = tack.zeros(2)
    fill(out)
    assert out.numpy().tolist() == [2.0, 2.0]

    @tack.func
    def store(out, i) -> None:
        out[i] = 3.0

    @tack.kernel
    def by_func(out) -> None:
        for i in range(out.shape[0]):
            store(out, i)

    by_func(out)
    assert out.numpy().tolist() == [3.0, 3.0]


def test_other_return_annotations_are_refused():
    def returns_none_but_a_value(x) -> None:
        return x  # marker: none but value

    err = kernel_error(returns_none_but_a_value)
    assert err.lineno == line_of("none but value")
    assert "-> None" in str(err)

    def annotated_float(x) -> float:  # marker: float annotation
        return x

    err = kernel_error(annotated_float)
    assert err.lineno == line_of("float annotation")
    assert "drop the return annotation" in str(err)
