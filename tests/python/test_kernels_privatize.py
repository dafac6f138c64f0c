"""Atomics to small arrays: a parallel launch updates a private copy per chunk and
merges it once (when the old value is unused); a launch on one thread, or a serial
kernel, uses plain updates. The results are the atomic form's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kernel_helpers import private_kernel_cache  # noqa: F401

import tack
from tack.kernel import generate_source

DTYPES = ["int32", "int64", "uint32", "uint64", "float32", "float64"]
OPS = ["add", "sub", "min", "max"]

# Kernels of every op in two forms: p_<op> with the old value unused (privatizable)
# and a_<op> with it used (the atomic form), and the reference NumPy gives.
FORMS = {"p": "tack.atomic_{op}(h, keys[i], v[i])",
         "a": "old = tack.atomic_{op}(h, keys[i], v[i])"}
KERNELS = "import numpy as np\nimport tack\n" + "".join(f"""
@tack.kernel
def {form}_{op}(h, keys, v):
    for i in range(keys.shape[0]):
        {update.format(op=op)}
""" for form, update in FORMS.items() for op in OPS) + textwrap.dedent('''
    @tack.kernel
    def with_olds(h, olds, keys):
        for i in range(keys.shape[0]):
            tack.atomic_add(h, keys[i], 1)
            old = tack.atomic_add(olds, i % 2, 1)

    @tack.kernel
    def sum_and_count(h, keys, v):
        s = 0.0
        for i in range(keys.shape[0]):
            tack.atomic_add(h, keys[i], 1)
            s += v[i]
        return s

    UFUNC = {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum}

    def stats():
        return tack._tack._kernel_stats()

    def case(form, op, dtype, bins, n=1 << 18):
        """Runs one kernel; (counts as a list, its reference, stats deltas)."""
        rng = np.random.default_rng(7)
        keys = rng.integers(0, bins, n)
        v = rng.integers(1, 4 if op in ("add", "sub") else 1000, n).astype(dtype)
        start = np.full(bins, 500, dtype)
        want = start.copy()
        UFUNC[op].at(want, keys, v)
        h = tack.array(start)
        before = stats()
        globals()[form + "_" + op](h, tack.array(keys), tack.array(v))
        after = stats()
        delta = {k: after[k] - before[k] for k in (
            "privatized_launches", "plain_atomic_launches", "parallel_launches")}
        return h.numpy().tolist(), want.tolist(), delta
''')


def run_script(tmp_path, body: str, threads: str) -> object:
    script = tmp_path / f"privatize_{threads}.py"
    script.write_text(KERNELS + textwrap.dedent(body))
    env = dict(os.environ, TACK_NUM_THREADS=threads)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


EVERY_CASE = '''
    import json
    out = {}
    for op in ("add", "sub", "min", "max"):
        for dtype in ("int32", "int64", "uint32", "uint64", "float32", "float64"):
            for form in ("p", "a"):
                out[f"{form} {op} {dtype}"] = case(form, op, dtype, 256)
    print(json.dumps(out))
'''


@pytest.mark.parametrize("threads", ["2", "1"])
def test_private_and_atomic_forms_count_the_same(tmp_path, threads):
    # the values are small integers, so float sums are exact in any order
    out = run_script(tmp_path, EVERY_CASE, threads)
    assert len(out) == 2 * len(OPS) * len(DTYPES)
    for name, (got, want, delta) in out.items():
        assert got == want, name
        form = name.split()[0]
        if threads == "2":
            assert delta["parallel_launches"] == 1, name
            assert delta["plain_atomic_launches"] == 0, name
            # privatized exactly where the old value is unused
            assert delta["privatized_launches"] == (form == "p"), name
        else:
            assert delta["privatized_launches"] == 0, name
            assert delta["plain_atomic_launches"] == 1, name


def test_large_arrays_keep_the_atomic_form(tmp_path):
    # 32768 int32 bins (128 KiB) are over the 64 KiB bound; 8192 int64 bins are at it
    out = run_script(tmp_path, '''
        import json
        print(json.dumps([case("p", "add", "int32", 1 << 15, 1 << 20),
                          case("p", "add", "int64", 1 << 13, 1 << 20)]))
    ''', "2")
    (got, want, delta), (got64, want64, delta64) = out
    assert got == want and got64 == want64
    assert delta["parallel_launches"] == 1 and delta["privatized_launches"] == 0
    assert delta64["privatized_launches"] == 1


def test_private_copies_beside_atomics_and_split_reductions(tmp_path):
    out = run_script(tmp_path, '''
        import json
        keys = np.random.default_rng(2).integers(0, 16, 1 << 20)
        want = np.bincount(keys, minlength=16).tolist()
        h, olds = tack.zeros(16, dtype=tack.i64), tack.zeros(2, dtype=tack.i32)
        before = stats()["privatized_launches"]
        with_olds(h, olds, tack.array(keys))
        out = [h.numpy().tolist() == want, olds.numpy().tolist()]
        h = tack.zeros(16, dtype=tack.i64)
        s = sum_and_count(h, tack.array(keys), tack.array(np.ones(1 << 20)))
        out += [h.numpy().tolist() == want, s, stats()["privatized_launches"] - before]
        print(json.dumps(out))
    ''', "2")
    # the array whose old value is used stays atomic: every update counted
    assert out == [True, [1 << 19, 1 << 19], True, float(1 << 20), 2]


@tack.kernel
def hist(h, keys, v):
    for i in range(keys.shape[0]):
        tack.atomic_add(h, keys[i], v[i])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_sums_differ_only_by_reassociation(dtype):
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 64, 1 << 20)
    v = rng.standard_normal(1 << 20).astype(dtype)
    want = np.zeros(64)
    np.add.at(want, keys, v.astype(np.float64))
    h = tack.zeros(64, dtype=dtype)
    hist(h, tack.array(keys), tack.array(v))
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-3 if dtype == np.float32
                               else 1e-11, atol=1e-2 if dtype == np.float32 else 1e-9)


def function_text(src: str, name: str) -> str:
    """The text of one generated function, up to its closing brace."""
    m = re.search(rf"\n[^\n]* {name}\(.*?\n}}\n", src, flags=re.S)
    assert m, name
    return m.group(0)


SIG = (("array", "int32", 1), ("array", "int64", 1), ("array", "int32", 1))


def test_a_launch_on_one_thread_runs_no_atomic_instruction():
    src = generate_source(hist, SIG, debug=False)
    serial = function_text(src, "tack_kernel_body_serial")
    assert "tk_plain_add_int32(&p_h[" in serial
    assert "atomic" not in serial
    body = function_text(src, "tack_kernel_body")
    assert "tk_plain_add_int32(&tk_pv_p_h[" in body  # the private copy
    assert "tk_atomic_add_int32(&p_h[" in body  # its merge, and the large-array form


@tack.kernel
def serial_hist(h, keys, v):
    for i in range(keys.shape[0]):
        tack.atomic_add(h, keys[i], v[i])
    tack.atomic_max(h, 0, 0)  # a statement after the loop: a serial kernel


def test_a_serial_kernel_uses_plain_updates():
    assert "(serial)" in repr(serial_hist)
    body = function_text(generate_source(serial_hist, SIG, debug=False),
                         "tack_kernel_body")
    assert "tk_plain_add_int32(" in body and "tk_plain_max_int32(" in body
    assert "atomic" not in body
    h = tack.zeros(4, dtype=tack.i32)
    before = tack._tack._kernel_stats()["plain_atomic_launches"]
    serial_hist(h, tack.array(np.array([1, 3, 3, 0])), tack.array(np.array([2, 1, 1, 5])))
    assert h.numpy().tolist() == [5, 2, 0, 2]
    # (at least: a differential run launches the kernel's twin beside it)
    assert tack._tack._kernel_stats()["plain_atomic_launches"] > before


@tack.kernel
def reads_too(h, keys, out):
    for i in range(keys.shape[0]):
        tack.atomic_add(h, keys[i], 1)
        out[i] = h[0]


@tack.kernel
def mixed_ops(h, keys):
    for i in range(keys.shape[0]):
        tack.atomic_add(h, keys[i], 2)
        tack.atomic_min(h, keys[i], 1)


@tack.kernel
def add_and_sub(h, keys):
    for i in range(keys.shape[0]):
        tack.atomic_add(h, keys[i], 2)
        tack.atomic_sub(h, keys[i], 1)


def test_only_arrays_updated_by_one_kind_of_atomic_are_privatized():
    two = (("array", "int32", 1), ("array", "int64", 1))
    assert "tk_pv_" not in generate_source(reads_too, SIG, debug=False)
    assert "tk_pv_" not in generate_source(mixed_ops, two, debug=False)
    src = generate_source(add_and_sub, two, debug=False)
    assert "tk_plain_sub_int32(&tk_pv_p_h[" in src  # merged by adding the copy
    assert "(void)tk_atomic_add_int32(&p_h[tk_j], tk_pv_p_h[tk_j])" in src
    h = tack.zeros(8, dtype=tack.i32)
    keys = np.random.default_rng(1).integers(0, 8, 1 << 16)
    add_and_sub(h, tack.array(keys))
    assert h.numpy().tolist() == np.bincount(keys, minlength=8).tolist()
