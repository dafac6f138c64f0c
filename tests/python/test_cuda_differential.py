"""The kernel test suite as a differential test of the CUDA backend.

The suite (tests/python/test_kernels_*.py) runs in a subprocess with the
cuda_differential plugin, which repeats every launch on CUDA copies of its arrays
and compares (see the plugin's docstring for the rules). On a GPU (marked `cuda`,
run by scripts/gpu_check.sh) that compares the device's code with the CPU's; under
the stand-in driver, whose CUDA launch runs the CPU twin of the same
specialization, equality checks the machinery around the kernel: the copies, the
parameter packing, the trip counts and grid, the read-back.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import tack

HERE = Path(__file__).resolve().parent

# The launches the plugin may leave out, by design (anything else left out, such
# as a failed copy to the device, fails the check).
BY_DESIGN = (
    "the test counts builds or cache entries",
    "not a tack.Array or a scalar",
    "no array argument",
    "a read-only array bound to a parameter the kernel stores to",
    "in a forked child",
    "arguments overlap in memory without being one buffer",
    "arguments view one buffer as different dtypes",
)


def _suite(tmp_path: Path, tests: list[str], driver: str | None,
           **env: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    summary = tmp_path / "differential.json"
    child = dict(os.environ)
    for name in ("TACK_DEBUG", "TACK_CUDA_DRIVER", "TACK_STANDIN_EXEC"):
        child.pop(name, None)
    child.update(TACK_DIFFERENTIAL_JSON=str(summary), TACK_CACHE_DIR=str(tmp_path / "cache"),
                 PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
                 **env)
    if driver is not None:
        child["TACK_CUDA_DRIVER"] = driver
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "cuda_differential",
                        "-p", "no:cacheprovider", "--rootdir", str(tmp_path), *tests],
                       env=child, capture_output=True, text=True, check=False,
                       cwd=tmp_path, timeout=540)
    report = json.loads(summary.read_text()) if summary.exists() else {}
    return r, report


def _kernel_suite() -> tuple[list[str], int]:
    """The kernel test files (TACK_DIFFERENTIAL_SUITE: a space-separated subset of
    them, as gpu_check.sh runs under compute-sanitizer) and the fewest launches they
    must make."""
    subset = os.environ.get("TACK_DIFFERENTIAL_SUITE", "").split()
    if subset:
        return [str(HERE / name) for name in subset], 10 * len(subset)
    return sorted(str(p) for p in HERE.glob("test_kernels_*.py")), 300


def _check_report(r: subprocess.CompletedProcess[str], report: dict[str, Any],
                  fewest: int) -> None:
    assert report, r.stdout[-3000:] + r.stderr[-3000:]
    assert report["mismatches"] == [], json.dumps(report["mismatches"][:5], indent=1)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    # the suite's launches: hundreds, nearly all of them compared
    assert report["launches"] > fewest, report
    assert report["compared"] >= 0.8 * report["launches"], report
    odd = [s for s in report["skipped"] if not any(b in s["reason"] for b in BY_DESIGN)]
    assert not odd, odd


def _standin() -> str:
    from cuda_helpers import standin_for_kernels

    return standin_for_kernels()


@pytest.mark.cuda
def test_the_kernel_suite_gives_the_same_results_on_the_gpu(tmp_path):
    tests, fewest = _kernel_suite()
    r, report = _suite(tmp_path, tests, driver=None, TACK_REQUIRE_CUDA="1")
    keep = os.environ.get("TACK_DIFFERENTIAL_REPORT")  # gpu_check.sh: under $OUT
    if keep and report:
        Path(keep).write_text(json.dumps(report, indent=2))
    _check_report(r, report, fewest)


@pytest.mark.long
def test_the_kernel_suite_gives_the_same_results_through_the_standin(tmp_path):
    tests, fewest = _kernel_suite()
    r, report = _suite(tmp_path, tests, driver=_standin())
    _check_report(r, report, fewest)


@pytest.mark.slow  # once in make test: not again under the sanitizers
@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ to compile CUDA modules")
def test_the_kernel_suite_gives_the_same_results_running_the_cuda_code(tmp_path):
    # The stand-in runs each launch's generated CUDA module itself, compiled for the
    # host (TACK_STANDIN_EXEC=emulate): the device code is what is compared.
    tests, fewest = _kernel_suite()
    r, report = _suite(tmp_path, tests, driver=_standin(), TACK_STANDIN_EXEC="emulate")
    _check_report(r, report, fewest)


# A kernel test of its own, run with the plugin: two launches, one of each kind.
PROBE = '''
import numpy as np
import tack


@tack.kernel
def scale(out, x, a):
    for i in range(out.shape[0]):
        out[i] = a * x[i]


@tack.kernel
def count(out, x):
    for i in range(out.shape[0]):
        out[i] = x[i] // 3


def test_probe():
    x = tack.array(np.linspace(0.0, 1.0, 100))
    out = tack.zeros(100, dtype=tack.f64)
    scale(out, x, 3.0)
    scale(out, out, 0.5)  # one array twice: one buffer on the device too
    n = tack.zeros(10, dtype=tack.i32)
    count(n, tack.array(np.arange(10, dtype=np.int32)))
    assert n.numpy()[9] == 3
'''


@pytest.mark.parametrize("kernel", ["scale", "count"])
def test_a_difference_is_caught(tmp_path, kernel):
    (tmp_path / "test_probe.py").write_text(PROBE)
    r, report = _suite(tmp_path, ["test_probe.py"], driver=_standin(),
                       TACK_DIFFERENTIAL_PERTURB=kernel)
    assert r.returncode != 0, r.stdout
    assert "the CUDA launch differs from the CPU launch" in r.stdout
    mismatches = report["mismatches"]
    assert mismatches and {m["kernel"] for m in mismatches} == {kernel}
    assert report["compared"] + len(mismatches) == 3
    m = mismatches[0]
    # where the kernel is: its file, and the line of its decorator
    lines = PROBE.splitlines()
    assert m["file"].endswith("test_probe.py") and lines[m["line"] - 1] == "@tack.kernel"
    assert lines[m["line"]].startswith(f"def {kernel}(")
    assert "argument 'out'" in m["reason"] and "flat index 0" in m["reason"]


# The probe with its CUDA module broken on purpose: the grid-stride loop stops one trip
# early, so the last trip never runs on the device (the C twin never reads CUDA code).
BROKEN = '''
import importlib

emit_cuda = importlib.import_module("tack.kernel.emit_cuda")  # tack.kernel: the decorator

_emit = emit_cuda.emit_cuda


def _broken(plan):
    k = _emit(plan)
    assert "tk_g < tk_gn;" in k.source
    k.source = k.source.replace("tk_g < tk_gn;", "tk_g + 1 < tk_gn;")
    return k


emit_cuda.emit_cuda = _broken
''' + PROBE


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ to compile CUDA modules")
def test_a_broken_cuda_module_is_caught_only_when_its_code_runs(tmp_path):
    (tmp_path / "test_probe.py").write_text(BROKEN)
    r, report = _suite(tmp_path, ["test_probe.py"], driver=_standin())
    assert r.returncode == 0, r.stdout + r.stderr  # the twin computes: no difference
    assert report["compared"] == 3 and report["mismatches"] == []
    r, report = _suite(tmp_path, ["test_probe.py"], driver=_standin(),
                       TACK_STANDIN_EXEC="emulate")
    assert r.returncode != 0, r.stdout
    assert {m["kernel"] for m in report["mismatches"]} == {"scale", "count"}
    last = {"scale": "flat index 99:", "count": "flat index 9:"}  # the trip not run
    assert all(last[m["kernel"]] in m["reason"] for m in report["mismatches"]), report


RETURNS = '''
import numpy as np
import tack


@tack.kernel
def evens(x):
    n = 0
    for i in range(x.shape[0]):
        if x[i] % 2 == 0:
            n += 1
    return n


def test_returns():
    assert evens(tack.array(np.arange(1000, dtype=np.int64))) == 500
'''


def test_a_different_returned_value_is_caught(tmp_path):
    # a reduction's value read back from the device's launch record: a CUDA result
    # one off is a mismatch naming the returned value, not the arrays
    (tmp_path / "test_returns.py").write_text(RETURNS)
    r, report = _suite(tmp_path, ["test_returns.py"], driver=_standin())
    assert r.returncode == 0, r.stdout + r.stderr
    assert report["compared"] == 1 and report["mismatches"] == []
    r, report = _suite(tmp_path, ["test_returns.py"], driver=_standin(),
                       TACK_DIFFERENTIAL_PERTURB="evens")
    assert r.returncode != 0, r.stdout
    (m,) = report["mismatches"]
    assert m["kernel"] == "evens" and "returned" in m["reason"], m


def test_without_a_difference_the_probe_compares_every_launch(tmp_path):
    (tmp_path / "test_probe.py").write_text(PROBE)
    r, report = _suite(tmp_path, ["test_probe.py"], driver=_standin())
    assert r.returncode == 0, r.stdout + r.stderr
    assert report["compared"] == 3 and report["mismatches"] == []


def test_launches_that_cannot_run_on_cuda_are_counted_with_their_reason(tmp_path):
    (tmp_path / "test_probe.py").write_text(textwrap.dedent('''
        import numpy as np
        import pytest
        import tack


        @tack.kernel
        def fill(out, v):
            for i in range(out.shape[0]):
                out[i] = v


        @tack.kernel
        def square(n):
            return n * n


        @tack.kernel
        def add(out, x):
            for i in range(out.shape[0]):
                out[i] = out[i] + x[i]


        def test_probe():
            with pytest.raises(TypeError):
                fill(np.zeros(3), 1.0)
            assert square(4) == 16
            fill(tack.zeros(3), 2.0)
            host = np.zeros(8, np.float32)
            at = host.ctypes.data
            add(tack.array_from_ptr(at, (4,), tack.f32, writable=True),
                tack.array_from_ptr(at + 8, (4,), tack.f32))
            add(tack.array_from_ptr(at, (8,), tack.f32, writable=True),
                tack.array_from_ptr(at, (8,), tack.i32))
            x = tack.array(np.arange(6.0))
            add(x, x.reshape((6,)))  # views of one buffer: compared
        '''))
    r, report = _suite(tmp_path, ["test_probe.py"], driver=_standin())
    assert r.returncode == 0, r.stdout + r.stderr
    reasons = {s["reason"]: s["launches"] for s in report["skipped"]}
    assert report["launches"] == 6 and report["compared"] == 2, report
    assert reasons == {
        "argument 'out' is a ndarray, not a tack.Array or a scalar (the launch raises "
        "TypeError on any device)": 1,
        "no array argument (a kernel of scalars runs on the CPU)": 1,
        "arguments overlap in memory without being one buffer": 1,
        "arguments view one buffer as different dtypes": 1,
    }


# ---- the comparison rules themselves (cuda_compare.py) --------------------------------


def _facts(kernel: Any, signature: tuple[Any, ...]) -> Any:
    from cuda_compare import Facts

    return kernel.compile.spell(Facts, signature, False)


def test_the_math_bounds_are_the_tables_in_docs_kernels_md():
    from cuda_compare import BOUNDS

    assert BOUNDS["sqrt"] == (0, 0) and BOUNDS["floor"] == (0, 0)
    assert BOUNDS["sin"] == (3, 2)  # "2-3": the upper end
    assert BOUNDS["tgamma"] == BOUNDS["gamma"] == (5, 10)  # "`gamma` (tgamma)"
    assert BOUNDS["lgamma"] == (6, 4)  # the bound before its note


def test_floats_without_math_compare_bit_for_bit_and_nan_equals_nan():
    import numpy as np
    from cuda_compare import float_diff

    nan2 = np.frombuffer(np.uint32(0x7FC00001).tobytes(), np.float32)[0]  # another NaN
    c = np.array([1.5, np.nan, 1.0, -0.0, np.inf], np.float32)
    g = np.array([1.5, nan2, np.nextafter(np.float32(1), np.float32(2)), 0.0, np.inf],
                 np.float32)
    assert float_diff(c, g, 0, 24).tolist() == [False, False, True, True, False]


def test_a_kernel_calling_the_math_library_gets_twice_its_bound():
    import numpy as np
    from cuda_compare import float_diff

    @tack.kernel
    def sines(out, x):
        for i in range(out.shape[0]):
            out[i] = math.sin(x[i])

    @tack.kernel
    def plain(out, x):
        for i in range(out.shape[0]):
            out[i] = x[i] * 2.0

    f32 = ("array", "float32", 1)
    f64 = ("array", "float64", 1)
    assert _facts(sines, (f32, f32)).tolerance(24) == (6, 24)  # sin at float32: 3 ulp
    assert _facts(sines, (f64, f64)).tolerance(53) == (4, 53)  # at float64: 2 ulp
    # float32 math stored to a float64 array: ulps of float32
    assert _facts(sines, (f64, f32)).tolerance(53) == (6, 24)
    assert _facts(plain, (f32, f32)).tolerance(24) == (0, 24)
    one = np.ones(3, np.float32)
    off = [np.float32(1), one[0], one[0]]
    for _ in range(6):
        off[1] = np.nextafter(off[1], np.float32(2))
    off[2] = np.nextafter(off[1], np.float32(2))  # seven ulps
    assert float_diff(one, np.array(off, np.float32), 6, 24).tolist() == [
        False, False, True]


def test_a_float_reduction_may_regroup_within_the_derived_bound():
    from cuda_compare import compare_values, regrouping
    from test_kernels_reductions import total

    facts = _facts(total, (("array", "float64", 1),))
    assert facts.float_reduction == 53
    n = 1000
    bound = regrouping(n, 53)  # 2 * 999 * 2**-53 / (1 - 999 * 2**-53)
    assert abs(bound - 2 * 999 * 2.0**-53) < 1e-20
    assert compare_values(facts, 500.0, 500.0 * (1 + bound / 2), n) == ""
    assert "allowed difference" in compare_values(facts, 500.0, 500.0 * (1 + 2 * bound), n)
    assert "returned 3" in compare_values(facts, 3, 4, n)  # integers: exactly


def test_exceptions_agree_in_type_and_message_but_a_build_folder_name():
    from cuda_compare import same_exception

    a = tack.CompileError("cc failed in /cache/k.tmpAbC123/k.c")
    assert same_exception(a, tack.CompileError("cc failed in /cache/k.tmpXyZ789/k.c"))
    assert not same_exception(a, RuntimeError(str(a)))
    assert not same_exception(IndexError("index 4"), IndexError("index 5"))
    # a bounds failure: another failing trip may claim the record first on the GPU
    bounds = ("index {} is out of bounds for axis {} of 'out' with size 8 in kernel 'k' "
              "(f.py, line 3)")
    assert same_exception(tack.TackIndexError(bounds.format(8, 0)),
                          tack.TackIndexError(bounds.format(9, 0)))
    assert not same_exception(tack.TackIndexError(bounds.format(8, 0)),
                              tack.TackIndexError(bounds.format(8, 1)))
    assert not same_exception(tack.TackIndexError(bounds.format(8, 0)),
                              tack.TackIndexError(bounds.format(9, 0).replace("'out'", "'x'")))
    assert same_exception(None, None) and not same_exception(None, a)
