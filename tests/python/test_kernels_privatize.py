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


# ---- binning: a private copy updated by the trip's last statement alone ------------


@tack.kernel
def natural_hist(h, values):
    for i in range(values.shape[0]):
        tack.atomic_add(h, int(values[i] * h.shape[0]), 1)


@tack.kernel
def guarded_hist(h, values):
    for i in range(values.shape[0]):
        if values[i] >= 0.0:
            tack.atomic_add(h, int(values[i] * h.shape[0]), 1)


@tack.kernel
def hist_then_more(h, values, out):
    for i in range(values.shape[0]):
        tack.atomic_add(h, int(values[i] * h.shape[0]), 1)
        out[i] = 2.0 * values[i]


@tack.func
def bin_of(x, n):
    return int(x * n)


@tack.kernel
def hist_through_a_func(h, values):
    for i in range(values.shape[0]):
        tack.atomic_add(h, bin_of(values[i], h.shape[0]), 1)


def test_the_natural_histogram_is_binned_and_other_loops_are_not():
    one = (("array", "int64", 1), ("array", "float64", 1))
    src = function_text(generate_source(natural_hist, one, debug=False),
                        "tack_kernel_body")
    # the index pass converts with selects; the update pass has no conversion left
    assert "tk_bin[tk_bj] = tk_f2i64_sel(" in src
    assert "(void)tk_plain_add_int64(&tk_pv_p_h[tk_bin[tk_bj]]" in src
    assert "tk_f2i64(" in src  # the atomic form, for arrays too large to copy
    serial = function_text(generate_source(natural_hist, one, debug=False),
                           "tack_kernel_body_serial")
    assert "(void)tk_plain_add_int64(&p_h[tk_bin[tk_bj]]" in serial  # one thread
    for kernel, sig in [(guarded_hist, one), (hist_through_a_func, one),
                        (hist_then_more, one + (("array", "float64", 1),))]:
        assert "tk_bin" not in generate_source(kernel, sig, debug=False), kernel
    # debug mode checks each index where it is computed: never binned
    assert "tk_bin" not in generate_source(natural_hist, one, debug=True)


BINNED = '''
    import json, math

    @tack.kernel
    def edge_hist(h, values):
        for i in range(values.shape[0]):
            tack.atomic_add(h, int(values[i]) % h.shape[0], 1)

    @tack.kernel
    def weighted(h, values, w):
        for i in range(values.shape[0]):
            tack.atomic_add(h, int(values[i] * h.shape[0]), w[i])

    def py_int(x):
        """int() as a kernel computes it: truncated, saturated, NaN 0."""
        if math.isnan(x):
            return 0
        if x >= 2.0**63:
            return 2**63 - 1
        if x < -2.0**63:
            return -2**63
        return int(x)

    EDGES = [math.nan, -math.nan, math.inf, -math.inf, 2.0**63, -2.0**63, 2.0**62,
             -2.0**62, 9223372036854774784.0, -9223372036854774784.0, 1e300, -1e300,
             0.0, -0.0, 0.5, -0.5, 5e-324, 96.9, -96.9, 12345.678, -12345.678, 1e18]
    out = {}
    for dtype in ("float64", "float32"):
        for n in (1, 255, 256, 257, 511, 513, 4099, 100003, 262147):
            rng = np.random.default_rng(n)
            # mostly ordinary values, with every edge value at random places
            v = (rng.random(n) * 4000 - 2000).astype(dtype)
            at = rng.integers(0, n, min(n, 400))
            v[at] = np.array(EDGES, dtype=np.float64)[np.arange(len(at)) % len(EDGES)]
            want = [0] * 97
            for x in v.tolist():
                want[py_int(float(np.dtype(dtype).type(x))) % 97] += 1
            h = tack.zeros(97, dtype=tack.i64)
            before = stats()["privatized_launches"]
            edge_hist(h, tack.array(v))
            out[f"edges {dtype} {n}"] = [h.numpy().tolist() == want,
                                         stats()["privatized_launches"] - before]
    for n in (300, 4099, 100003, 262147):
        rng = np.random.default_rng(n)
        v = rng.random(n)
        v[rng.integers(0, n, 10)] = math.nan  # bin 0
        w = rng.integers(-5, 6, n)
        want = np.zeros(64, np.int64)
        np.add.at(want, np.nan_to_num(v * 64, nan=0.0).astype(np.int64), w)
        h = tack.zeros(64, dtype=tack.i64)
        before = stats()["privatized_launches"]
        weighted(h, tack.array(v), tack.array(w))
        out[f"weighted {n}"] = [h.numpy().tolist() == want.tolist(),
                                stats()["privatized_launches"] - before]
    print(json.dumps(out))
'''


@pytest.mark.parametrize("threads", ["2", "1"])
def test_binned_histograms_count_as_the_kernel_reads_int_at_every_block_edge(
        tmp_path, threads):
    """Trip counts around the binning block (256) and the chunking, every edge of
    int() (NaN, infinities, 2**63 either side, -0.0, subnormals) through the index
    pass's selects, float32 as well as float64, and a value that is not a literal:
    the counts are exactly those of int() as docs/kernels.md defines it, in private
    copies (2 threads) and in the plain updates of a launch on one thread."""
    out = run_script(tmp_path, BINNED, threads)
    for name, (same, privatized) in out.items():
        assert same, name
        n = int(name.split()[-1])
        if n >= 100003:
            # large enough to run in parallel chunks, on private copies
            assert privatized == (threads == "2"), name
