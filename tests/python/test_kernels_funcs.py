"""@tack.func: helpers called from kernels and other funcs, positionally, with
scalars and arrays, typed per call signature and inlined; they may return a value
and store to arrays; recursion is a KernelError naming the cycle."""

from __future__ import annotations

import importlib
import math
import os
import shlex
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kernel_helpers import check_both, private_kernel_cache, read_only  # noqa: F401

import tack
from tack.kernel import generate_cuda, generate_source


@tack.func
def sq(x):
    return x * x


@tack.func
def norm(p, i):
    return math.sqrt(sq(p[i, 0]) + sq(p[i, 1]))


@tack.func
def put(out, i, v):
    out[i] = v


@tack.func
def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@tack.kernel
def norms(p, out):
    for i in range(out.shape[0]):
        put(out, i, norm(p, i) + sq(2))


def test_funcs_call_funcs_with_arrays_and_scalars():
    p = np.random.default_rng(0).random((100, 2))
    check_both(norms, p, np.zeros(100))


def test_typed_per_call_signature():
    @tack.kernel
    def both(a, out):
        for i in range(out.shape[0]):
            out[i, 0] = sq(i)          # int64 instance: int arithmetic
            out[i, 1] = sq(a[i])       # float32 instance
            out[i, 2] = clamp(a[i], 0.25, 0.75)
            out[i, 3] = clamp(i, 2, 5)

    a = np.linspace(0, 1, 9, dtype=np.float32)
    check_both(both, a, np.zeros((9, 4)))
    src = generate_source(both, (("array", "float32", 1), ("array", "float64", 2)))
    assert "TK_INLINE int64_t" in src and "TK_INLINE float" in src


def test_func_python_call_still_works():
    assert sq(3) == 9
    assert clamp(5, 0, 2) == 2
    assert norm.__name__ == "norm"


def test_stored_arrays_through_funcs_are_checked_and_never_restrict_const():
    ro = read_only(4, np.float64)

    @tack.kernel
    def fill(out):
        for i in range(out.shape[0]):
            put(out, i, 1.0)

    with pytest.raises(ValueError, match="'out'"):
        fill(ro)
    out = tack.zeros(4, dtype=tack.f64)
    fill(out)
    assert out.numpy().tolist() == [1.0] * 4


def test_recursion_is_a_kernel_error_naming_the_cycle():
    @tack.func
    def ping(n):
        return pong(n - 1) if n > 0 else 0

    @tack.func
    def pong(n):
        return ping(n - 1) if n > 0 else 1

    def k(out):
        out[0] = ping(3)

    with pytest.raises(tack.KernelError, match="ping -> pong -> ping"):
        tack.kernel(k)

    @tack.func
    def fact(n):
        return n * fact(n - 1) if n > 1 else 1

    def k2(out):
        out[0] = fact(3)

    with pytest.raises(tack.KernelError, match="fact -> fact"):
        tack.kernel(k2)


def test_misuse_is_a_kernel_error():
    def twice(out):
        out[0] = put(out, 0, 1.0) + 1

    with pytest.raises(tack.KernelError, match="stores to an array"):
        tack.kernel(twice)

    @tack.func
    def nothing(x):
        x = x + 1

    @tack.kernel
    def uses_value(out):
        out[0] = nothing(1)

    with pytest.raises(tack.KernelError, match="returns no value"):
        uses_value(tack.zeros(1))

    def wrong_count(out):
        out[0] = sq(1, 2)

    with pytest.raises(tack.KernelError, match="takes 1 arguments"):
        tack.kernel(wrong_count)

    with pytest.raises(TypeError):
        tack.func(3)


def test_func_in_a_reduction_and_debug_mode():
    @tack.kernel
    def energy(x):
        e = 0.0
        for i in range(x.shape[0]):
            e += sq(x[i])
        return e

    x = np.arange(10.0)
    assert energy(tack.array(x)) == float((x * x).sum())

    @tack.func
    def at(a, i):
        return a[i]

    @tack.kernel(debug=True)
    def past(a, n):
        s = 0.0
        for i in range(n):
            s += at(a, i)
        return s

    assert past(tack.array(x), 10) == 45.0
    with pytest.raises(IndexError):
        past(tack.array(x), 11)


FUNCS_FILE = '''
import tack


@tack.func
def doubled(a, i):
    x = a[i] * 2.0
    return x


@tack.func
def broken(a, i):
    return a[i] + not_a_number


@tack.func
def past_the_end(a, i):
    return a[i + 1]


@tack.func
def ratio(a, i):
    return int(a[i]) // (i - 2)
'''

CALLER_FILE = '''
import tack
from {funcs} import broken, doubled, past_the_end, ratio


@tack.kernel
def twice(a, out):
    for i in range(out.shape[0]):
        out[i] = doubled(a, i)


@tack.kernel
def uses_broken(a, out):
    for i in range(out.shape[0]):
        out[i] = broken(a, i)


@tack.kernel(debug=True)
def reads_past(a, out):
    for i in range(out.shape[0]):
        out[i] = past_the_end(a, i)


@tack.kernel(debug=True)
def divides(a, out):
    for i in range(out.shape[0]):
        out[i] = float(ratio(a, i))
'''


def import_pair(tmp_path, monkeypatch):
    """A module of funcs and a module of kernels calling them, in two files."""
    tag = abs(hash(str(tmp_path)))
    funcs_name, caller_name = f"funcs_{tag}", f"caller_{tag}"
    (tmp_path / f"{funcs_name}.py").write_text(FUNCS_FILE)
    (tmp_path / f"{caller_name}.py").write_text(CALLER_FILE.format(funcs=funcs_name))
    monkeypatch.syspath_prepend(str(tmp_path))
    caller = importlib.import_module(caller_name)
    for name in (funcs_name, caller_name):
        del sys.modules[name]
    return (caller, str(tmp_path / f"{funcs_name}.py"),
            str(tmp_path / f"{caller_name}.py"))


SIG = (("array", "float64", 1), ("array", "float64", 1))


def test_func_of_another_file_keeps_its_file_in_errors_and_line_directives(
        tmp_path, monkeypatch):
    caller, funcs_file, caller_file = import_pair(tmp_path, monkeypatch)
    with pytest.raises(tack.KernelError, match="not_a_number") as info:
        generate_source(caller.uses_broken, SIG)
    assert (info.value.filename, info.value.lineno) == (funcs_file, 13)
    src = generate_source(caller.twice, SIG)
    directives = [ln for ln in src.splitlines() if ln.startswith("#line ")]
    def lines_in(path):
        return {int(d.split(" ", 2)[1]) for d in directives if d.endswith(f'"{path}"')}

    assert lines_in(funcs_file) == {7, 8}  # x = a[i] * 2.0; return x
    assert 9 in lines_in(caller_file)  # out[i] = doubled(a, i)
    assert all(d.endswith((f'"{funcs_file}"', f'"{caller_file}"')) for d in directives)
    cuda = generate_cuda(caller.twice, SIG).source  # the same directives for NVRTC
    assert f'#line 7 "{funcs_file}"' in cuda.splitlines()
    out = tack.zeros(3, dtype=tack.f64)
    caller.twice(tack.array(np.arange(3.0)), out)
    assert out.numpy().tolist() == [0.0, 2.0, 4.0]


def test_debug_errors_inside_a_func_of_another_file_name_that_file(tmp_path,
                                                                  monkeypatch):
    caller, funcs_file, _ = import_pair(tmp_path, monkeypatch)
    a, out = tack.array(np.arange(4.0)), tack.zeros(4, dtype=tack.f64)
    with pytest.raises(IndexError) as info:
        caller.reads_past(a, out)
    assert f"({funcs_file}, line 18)" in str(info.value), info.value
    with pytest.raises(ZeroDivisionError) as info:
        caller.divides(a, out)
    assert f"({funcs_file}, line 23)" in str(info.value), info.value


def test_debug_errors_inside_a_func_of_another_file_on_cuda(tmp_path):
    from cuda_helpers import run, standin_for_kernels

    standin_for_kernels()
    (tmp_path / "funcs_cuda.py").write_text(FUNCS_FILE)
    (tmp_path / "caller_cuda.py").write_text(CALLER_FILE.format(funcs="funcs_cuda"))
    funcs_file = str(tmp_path / "funcs_cuda.py")
    run(textwrap.dedent(f"""
        sys.path.insert(0, {str(tmp_path)!r})
        from caller_cuda import divides, reads_past
        for kernel, error, line in ((reads_past, IndexError, 18),
                                    (divides, ZeroDivisionError, 23)):
            a = tack.array(np.arange(4.0), device="cuda")
            out = tack.zeros(4, dtype=tack.f64, device="cuda")
            try:
                kernel(a, out)
            except error as e:
                assert "({funcs_file}, line " + str(line) + ")" in str(e), e
            else:
                raise AssertionError("no error")
        """), tmp_path, TACK_CACHE_DIR=str(tmp_path / "cache"))


def test_compiler_messages_for_a_func_of_another_file_name_that_file(
        tmp_path, monkeypatch):
    caller, funcs_file, _ = import_pair(tmp_path, monkeypatch)
    src = generate_source(caller.twice, SIG)
    directive = f'#line 7 "{funcs_file}"'
    # A line the compiler complains about, just after the func body's directive.
    src = src.replace(directive, directive + "\n#warning from the func body", 1)
    c_file = tmp_path / "k.c"
    c_file.write_text(src)
    cc = shlex.split(os.environ.get("CC") or "cc")
    res = subprocess.run([*cc, "-fsyntax-only", "-std=c11", str(c_file)],
                         capture_output=True, text=True)
    assert f"{funcs_file}:7" in res.stderr, res.stderr
