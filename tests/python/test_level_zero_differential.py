"""The fixed kernel set's fuzzer kernels (kernel_suite_sources.SEEDS) on Level Zero
arrays against the CPU, through the real loader on the strict stand-in driver, by the
stand-in's execution mode: `twin` computes the launches with the CPU twins (so the
comparison checks the machinery around the kernel: module, arguments, groups,
record, read-back); `spirv` runs the modules' SPIR-V on Intel's OpenCL CPU runtime.
Both are compared by the differential test's rules with OpenCL's bounds
(cuda_compare.OPENCL; docs/kernels.md, "The differential test"): the twins in the
loader's five modes, the SPIR-V in three (RUNS); and the rules themselves.
"""

import math
from pathlib import Path

import kernel_fuzz
import level_zero_fuzz
import numpy as np
import pytest
from cuda_compare import CUDA, OPENCL, float_diff
from kernel_suite_sources import SEEDS
from level_zero_helpers import MODES, STANDIN_SOURCES, standin_only

import tack
from tack.kernel.lower import OPENCL as OPENCL_TARGET

HERE = Path(__file__).resolve().parent


def _standin_executes_spirv() -> bool:
    return any("TACK_STANDIN_ZE_EXECUTE" in p.read_text() for p in STANDIN_SOURCES)


@pytest.fixture(scope="module")
def shared_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder (and kernel cache) for every mode: the first run builds the
    modules, the others load them."""
    return tmp_path_factory.mktemp("level-zero-differential")


# The twins and the SPIR-V in every loader mode.
RUNS = [(execute, m) for execute in ("twin", "spirv") for m in MODES]


@standin_only
@pytest.mark.parametrize(("execute", "mode"), RUNS)
def test_the_fixed_set_on_level_zero_matches_the_cpu(execute, mode, shared_work):
    if execute == "spirv":
        why = level_zero_fuzz.unavailable() or (
            "" if _standin_executes_spirv() else "the stand-in cannot execute SPIR-V")
        if why:
            pytest.skip(f"SPIR-V execution is not available: {why}; the stand-in "
                        "computes launches with CPU twins")
    results, (by_spirv, by_twin) = level_zero_fuzz.run_cases(
        list(SEEDS), kernel_fuzz.gen.DEFAULT_FEATURES, shared_work / execute, mode,
        execute)
    bad = {s: m for s, m in results.items() if m}
    assert not bad, bad
    if execute == "spirv":
        assert by_spirv > len(SEEDS) // 2 and by_twin == 0, (by_spirv, by_twin)
    else:
        assert by_twin > len(SEEDS) // 2 and by_spirv == 0, (by_spirv, by_twin)


@standin_only
def test_a_level_zero_result_one_ulp_off_is_caught(tmp_path):
    # seed 0's arrays, the first element of the Level Zero side one ulp away
    results, _ = level_zero_fuzz.run_cases(
        [0], kernel_fuzz.gen.DEFAULT_FEATURES, tmp_path, "plain", "twin",
        TACK_FUZZ_LEVEL_ZERO_PERTURB="1")
    assert len(results[0]) == 1 and "differ" in results[0][0], results
    assert "Level Zero" in results[0][0], results


# ---- the comparison rules with OpenCL's bounds (cuda_compare.OPENCL) --------------


@tack.kernel
def erfcs(out, x):
    for i in range(out.shape[0]):
        out[i] = math.erfc(x[i])


@tack.kernel
def halves(out, x):
    for i in range(out.shape[0]):
        out[i] = x[i] / 3.0


@tack.kernel
def doubled(out, x):
    for i in range(out.shape[0]):
        out[i] = x[i] * 2.0


F32, F64 = ("array", "float32", 1), ("array", "float64", 1)


def _facts(kernel, signature, rules):
    return kernel.compile.spell(rules.facts, signature, False, OPENCL_TARGET)


def test_the_opencl_bounds_are_the_table_in_docs_kernels_md():
    b = OPENCL.bounds
    assert b["erfc"] == b["pow"] == b["tgamma"] == (16, 16)
    assert b["sqrt"] == (3, 0) and b["/"] == (2.5, 0) and b["log1p"] == (2, 2)
    assert b["atan2"] == (6, 6) and b["fmod"] == b["nextafter"] == (0, 0)
    assert b["lgamma"] == (16, 16)  # no bound in the specification: the table's largest
    assert CUDA.bounds["erfc"] == (4, 5)  # each device its own table


def test_a_math_call_on_level_zero_gets_twice_the_opencl_bound():
    facts = _facts(erfcs, (F64, F64), OPENCL)
    assert facts.tolerance(53) == (32, 53)
    assert _facts(erfcs, (F64, F64), CUDA).tolerance(53) == (10, 53)
    one = np.ones(3)
    off = [1.0, 1.0, 1.0]
    for _ in range(32):
        off[1] = math.nextafter(off[1], 2)
    off[2] = math.nextafter(off[1], 2)  # 33 ulps: one beyond the bound
    assert float_diff(one, np.array(off), *facts.tolerance(53)).tolist() == [
        False, False, True]
    msgs = kernel_fuzz.compare(facts, ["out"], [one], None, [np.array(off)], None, 3,
                               "Level Zero")
    assert len(msgs) == 1 and "1 elements differ" in msgs[0] and "Level Zero" in msgs[0]


def test_a_result_the_device_may_give_is_no_difference_and_others_still_are():
    # The fuzzer's Level Zero check passes, as alternatives, the Python reference
    # with OpenCL's math one ulp off libm: an element matching one is explained.
    facts = _facts(erfcs, (F64, F64), OPENCL)
    cpu = np.array([0.0, 1.0, 2.0])
    dev = np.array([math.inf, 1.0, 7.0])
    alt = np.array([math.inf, 1.0, 2.0])
    msgs = kernel_fuzz.compare(facts, ["out"], [cpu], 0.5, [dev], 0.25, 3, "Level Zero")
    assert "2 elements differ" in msgs[0] and "returned 0.5" in msgs[1]
    msgs = kernel_fuzz.compare(facts, ["out"], [cpu], 0.5, [dev], 0.25, 3, "Level Zero",
                               alternatives=[([alt], 0.25)])
    assert msgs == ["argument 'out' (float64, shape (3,)): 1 elements differ, first at "
                    "flat index 2: CPU np.float64(2.0), Level Zero np.float64(7.0)"]
    assert kernel_fuzz.compare(facts, ["out"], [cpu], 0.5, [dev], 0.25, 3, "Level Zero",
                               alternatives=[([alt], 0.5),
                                             ([np.array([0.0, 1.0, 7.0])], 0.25)]) == []


def test_a_float32_division_on_level_zero_gets_the_opencl_bound():
    assert _facts(halves, (F32, F32), OPENCL).tolerance(24) == (5, 24)
    assert _facts(halves, (F64, F64), OPENCL).tolerance(53) == (0, 53)
    assert _facts(halves, (F32, F32), CUDA).tolerance(24) == (0, 24)


def test_a_level_zero_kernel_without_math_compares_bit_for_bit():
    facts = _facts(doubled, (F64, F64), OPENCL)
    assert facts.tolerance(53) == (0, 53)
    x = np.array([0.1, 2.0])
    y = x.copy()
    y[0] = math.nextafter(y[0], 1)
    msgs = kernel_fuzz.compare(facts, ["out"], [x], None, [y], None, 2, "Level Zero")
    assert len(msgs) == 1 and "first at flat index 0" in msgs[0], msgs
    assert kernel_fuzz.compare(facts, ["out"], [x], None, [x.copy()], None, 2,
                               "Level Zero") == []


@standin_only
def test_a_stand_in_complaint_is_a_mismatch_of_its_seed(tmp_path):
    # no OpenCL to be had while SPIR-V is asked for: every launch is refused
    results, _ = level_zero_fuzz.run_cases(
        [0, 3], kernel_fuzz.gen.DEFAULT_FEATURES, tmp_path, "plain", "spirv",
        TACK_STANDIN_ZE_OPENCL="/nonexistent/libOpenCL.so.1")
    for seed in (0, 3):
        assert any(m.startswith("the stand-in complained: standin-ze: ") and
                   "no OpenCL loader" in m for m in results[seed]), results


@standin_only
def test_a_child_that_dies_is_a_mismatch_of_its_seed_and_the_rest_run_again(tmp_path):
    # no device: each child ends before its first seed
    results, executed = level_zero_fuzz.run_cases(
        [0, 3], kernel_fuzz.gen.DEFAULT_FEATURES, tmp_path, "plain", "twin",
        TACK_STANDIN_ZE_DEVICES="0")
    assert executed == (0, 0)
    for seed in (0, 3):
        assert len(results[seed]) == 1, results
        assert results[seed][0].startswith("the Level Zero child ended (1) while running "
                                           "this seed"), results
