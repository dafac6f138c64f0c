"""Kernels and funcs whose source Python keeps no text of (exec, python -c, an
embedding host's PyRun_SimpleString): the KernelError says how to pass the text, and
source= compiles from the text given."""

from __future__ import annotations

import linecache
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kernel_helpers import check_both

import tack
from tack.kernel import Kernel, generate_source


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kc"))


SAXPY = textwrap.dedent("""
    import math

    def saxpy(out, x, y, a):
        for i in range(out.shape[0]):
            out[i] = a * x[i] + y[i] + math.sqrt(float(i))
""")


def saxpy(out, x, y, a):  # the file-defined twin of SAXPY's function
    for i in range(out.shape[0]):
        out[i] = a * x[i] + y[i] + math.sqrt(float(i))



def defined(text: str, name: str) -> object:
    """The function that exec of text defines under name (Python keeps no text)."""
    ns: dict = {}
    exec(text, ns)
    return ns[name]


def test_exec_without_source_says_how_to_pass_it():
    fn = defined(SAXPY, "saxpy")
    with pytest.raises(tack.KernelError) as info:
        tack.kernel(fn)
    msg = str(info.value)
    assert "cannot read the source of kernel 'saxpy'" in msg
    assert "<string>" in msg  # where Python says it was defined
    assert "tack.kernel(saxpy, source=text)" in msg
    assert "@tack.kernel(source=text)" in msg


def test_exec_func_without_source_says_how_to_pass_it():
    text = textwrap.dedent("""
        def twice(v):
            return v * 2.0
    """)
    helper = tack.func(defined(text, "twice"))
    assert helper(1.5) == 3.0  # from Python it is its function, text or not

    def uses(out):
        for i in range(out.shape[0]):
            out[i] = helper(out[i])

    with pytest.raises(tack.KernelError) as info:
        tack.kernel(uses)
    msg = str(info.value)
    assert "cannot read the source of tack.func 'twice'" in msg
    assert "tack.func(twice, source=text)" in msg


def test_exec_with_source_computes_as_python_and_the_file_twin():
    fn = defined(SAXPY, "saxpy")
    k = tack.kernel(fn, source=SAXPY)
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(1000), rng.standard_normal(1000)
    out = np.zeros(1000)
    check_both(k, out, x, y, 0.5)  # against its own Python function
    got = tack.zeros(1000, dtype=tack.f64)
    k(got, tack.array(x), tack.array(y), 0.5)
    twin = tack.zeros(1000, dtype=tack.f64)
    tack.kernel(saxpy)(twin, tack.array(x), tack.array(y), 0.5)
    np.testing.assert_array_equal(got.numpy(), twin.numpy())
    assert k.__wrapped__ is fn and k.__name__ == "saxpy"


def test_decorator_form_takes_source():
    text = "@tack.kernel(source=TEXT)\ndef fill(a, v):\n    for i in range(a.shape[0]):\n" \
           "        a[i] = v + i\n"
    ns: dict = {"tack": tack, "TEXT": text}
    exec(text, ns)  # the text's own decorator is the one that reads it
    a = np.zeros(5)
    check_both(ns["fill"], a, 2)
    assert isinstance(ns["fill"], Kernel)


def test_source_text_may_be_indented_and_name_one_of_several_defs():
    text = """
        def other(a):
            pass

        def neg(a):
            for i in range(a.shape[0]):
                a[i] = -a[i]
    """
    ns: dict = {}
    exec(textwrap.dedent(text), ns)
    k = tack.kernel(ns["neg"], source=text)
    check_both(k, np.arange(6.0))


def test_funcs_called_from_a_source_kernel():
    text = textwrap.dedent("""
        import math

        def hyp(p, q):
            return math.sqrt(p * p + q * q)

        def norms(x, y, out):
            for i in range(out.shape[0]):
                out[i] = hyp(x[i], y[i])
    """)
    ns: dict = {}
    exec(text, ns)
    ns["hyp"] = tack.func(ns["hyp"], source=text)  # before the kernel reads it
    k = tack.kernel(ns["norms"], source=text)
    rng = np.random.default_rng(3)
    check_both(k, rng.standard_normal(64), rng.standard_normal(64), np.zeros(64))


def test_func_decorator_form_takes_source():
    text = textwrap.dedent("""
        @tack.func(source=TEXT)
        def inc(v):
            return v + 1

        def bump(a):
            for i in range(a.shape[0]):
                a[i] = inc(a[i])
    """)
    ns: dict = {"tack": tack, "TEXT": text}
    exec(text, ns)
    check_both(tack.kernel(ns["bump"], source=text), np.arange(4, dtype=np.int32))


def test_closures_of_a_source_kernel_are_the_functions():
    text = textwrap.dedent("""
        def make(scale):
            def mul(a):
                for i in range(a.shape[0]):
                    a[i] = a[i] * scale
            return mul
    """)
    inner = textwrap.dedent("""
        def mul(a):
            for i in range(a.shape[0]):
                a[i] = a[i] * scale
    """)
    k = tack.kernel(defined(text, "make")(3.0), source=inner)
    check_both(k, np.arange(5.0))


def test_wrong_name_is_refused():
    fn = defined(SAXPY, "saxpy")
    with pytest.raises(tack.KernelError) as info:
        tack.kernel(fn, source="def scale(a):\n    pass\n")
    msg = str(info.value)
    assert "'saxpy'" in msg and "scale" in msg
    with pytest.raises(tack.KernelError, match="defines no function"):
        tack.func(fn, source="x = 1\n")


def test_stale_parameters_are_refused():
    fn = defined("def f(a, n):\n    pass\n", "f")
    with pytest.raises(tack.KernelError, match=r"f\(a, b\).*f\(a, n\)"):
        tack.kernel(fn, source="def f(a, b):\n    pass\n")


def test_two_definitions_of_the_name_are_refused():
    fn = defined("def f(a):\n    pass\n", "f")
    with pytest.raises(tack.KernelError, match="defines 'f' 2 times"):
        tack.kernel(fn, source="def f(a):\n    pass\ndef f(a):\n    pass\n")


def test_source_must_be_a_string():
    fn = defined("def f(a):\n    pass\n", "f")
    with pytest.raises(TypeError, match="source= is the text"):
        tack.kernel(fn, source=b"def f(a):\n    pass\n")
    with pytest.raises(TypeError, match="source= is the text"):
        tack.func(source=fn)


def test_syntax_error_in_the_text_points_into_it():
    fn = defined("def f(a):\n    pass\n", "f")
    with pytest.raises(tack.KernelError) as info:
        tack.kernel(fn, source="def f(a):\n    a[0] = (\n")
    assert info.value.filename == "<source of f>"
    assert info.value.lineno == 2


def test_unsupported_construct_points_at_the_line_of_the_text():
    text = "\n    def f(a):\n        for i in range(3):\n            a[i] = [i]\n"
    fn = defined(textwrap.dedent(text), "f")
    with pytest.raises(tack.KernelError) as info:
        tack.kernel(fn, source=text)
    err = info.value
    assert (err.filename, err.lineno) == ("<source of f>", 4)
    assert err.text is not None and err.text.strip() == "a[i] = [i]"
    assert err.offset == 20  # the column in the text as given, indent included


def test_debug_errors_name_the_line_of_the_text(monkeypatch: pytest.MonkeyPatch):
    text = "def over(a):\n    for i in range(a.shape[0] + 1):\n        a[i] = 1.0\n"
    k = tack.kernel(defined(text, "over"), source=text, debug=True)
    with pytest.raises(IndexError, match=r"<source of over>, line 3"):
        k(tack.zeros(4, dtype=tack.f64))


def test_the_text_keys_the_build():
    # Two kernels of one name from texts that differ only in a constant: each
    # computes its own (the build is keyed by what the text compiles to).
    one, two = ("def k(a):\n    for i in range(a.shape[0]):\n        a[i] = %s\n" % v
                for v in ("1.0", "2.0"))
    k1 = tack.kernel(defined(one, "k"), source=one)
    k2 = tack.kernel(defined(two, "k"), source=two)
    sig = (("array", "float64", 1),)
    assert generate_source(k1, sig) != generate_source(k2, sig)
    a, b = tack.zeros(3, dtype=tack.f64), tack.zeros(3, dtype=tack.f64)
    k1(a)
    k2(b)
    assert a.numpy().tolist() == [1.0] * 3 and b.numpy().tolist() == [2.0] * 3


def test_text_a_host_registered_in_linecache_is_read_without_source():
    # IPython and Jupyter keep each cell's text in linecache under the cell's
    # file name; inspect reads it there, so such kernels need no source=.
    text = "def cell(a):\n    for i in range(a.shape[0]):\n        a[i] = i * 2\n"
    name = "<tack-test-cell-1>"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    try:
        ns: dict = {}
        exec(compile(text, name, "exec"), ns)
        check_both(tack.kernel(ns["cell"]), np.zeros(4, dtype=np.int64))
    finally:
        del linecache.cache[name]


SCRIPT = textwrap.dedent('''
    import numpy as np, tack
    TEXT = """
    def ramp(a, s):
        for i in range(a.shape[0]):
            a[i] = s * i
    """
    exec(TEXT)
    try:
        tack.kernel(ramp)
    except tack.KernelError as exc:
        print("refused:", exc)
    ramp = tack.kernel(ramp, source=TEXT)
    a = tack.zeros(5, dtype=tack.f64)
    ramp(a, 1.5)
    print("values:", a.numpy().tolist())
''')


def test_python_dash_c(tmp_path):
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("refused: cannot read the source of kernel 'ramp'")
    assert "source=text" in lines[0]
    assert lines[1] == "values: " + str([1.5 * i for i in range(5)])
