"""The kernel fuzzer (kernel_fuzz.py, docs/kernels.md "The fuzzer"): a fixed-seed
sweep where Tack's CPU path, the kernel's Python source and (for some seeds) the
host emulation of its CUDA module and its SPIR-V executed on Level Zero arrays must
agree; proof that the comparison can fail;
and the faults the fuzzer found, each as a named test.
"""

from __future__ import annotations

import math
from pathlib import Path

import kernel_fuzz
import kernel_fuzz_gen as gen
import kernel_fuzz_ref as ref
import level_zero_fuzz
import numpy as np
import pytest
from cuda_emulator import gxx_available
from kernel_helpers import private_kernel_cache  # noqa: F401  (autouse fixture)

import tack

DOCS = Path(__file__).resolve().parents[2] / "docs" / "kernels.md"

# The fixed sweep: SEEDS kernels, every EMULATE_EVERY-th also run as its CUDA module
# under the host emulation (whose g++ compile costs about ten C compiles), every
# LEVEL_ZERO_EVERY-th on Level Zero arrays, as SPIR-V on Intel's OpenCL CPU runtime
# (one child process per chunk).
SEEDS = 80
CHUNK = 20
EMULATE_EVERY = 8
LEVEL_ZERO_EVERY = 8


@pytest.mark.parametrize("first", range(0, SEEDS, CHUNK))
def test_fixed_seed_sweep_agrees_three_ways(tmp_path: Path, first: int,
                                            capsys: pytest.CaptureFixture[str]):
    before = dict(kernel_fuzz.STATS)
    failures = kernel_fuzz.sweep(first, CHUNK, gen.DEFAULT_FEATURES,
                                 EMULATE_EVERY if gxx_available() else 0, tmp_path,
                                 level_zero_every=LEVEL_ZERO_EVERY)
    assert not failures, "\n".join(kernel_fuzz.report(c, m) for c, m in failures)
    assert kernel_fuzz.STATS["kernels"] - before.get("kernels", 0) == CHUNK
    if gxx_available():  # some of them as CUDA modules
        assert kernel_fuzz.STATS["emulated"] > before.get("emulated", 0)
    ran = kernel_fuzz.STATS["level zero"] - before.get("level zero", 0)
    if level_zero_fuzz.unavailable():  # the sweep says why it ran none
        assert ran == 0 and "no Level Zero cases:" in capsys.readouterr().out
    else:
        assert ran == len(range(-first % LEVEL_ZERO_EVERY, CHUNK, LEVEL_ZERO_EVERY))


def test_the_sweep_generates_every_construct():
    sources = [gen.generate(s).source() for s in range(SEEDS)]
    text = "\n".join(sources)
    for construct in ("//", "%", "<<", ">>", "**", " < ", "==", "tack.i8(", "tack.u64(",
                      "tack.f16(", "float(", "int(", "round(", "min(", "max(", "abs(",
                      "math.", "math.isnan(", "math.floor(", "for j", "while ", "if ",
                      "else:", "break", "continue", "@tack.func", "tack.local_array(",
                      "tack.atomic_", "return ", " += ", " *= ", " = min(", "G_INT",
                      " and ", " or ", "not ", " if "):
        assert construct in text, construct
    dtypes = {a.dtype.name for s in range(SEEDS) for a in gen.generate(s).args
              if isinstance(a, np.ndarray)}
    assert dtypes == set(gen.DTYPES)
    # a kernel with as many reductions as one chunk's partials hold
    assert any(src.count(" = ") > 512 for src in sources)


def test_sweep_includes_parallel_serial_and_reducing_kernels(tmp_path: Path):
    kinds = set()
    for s in range(SEEDS):
        case = gen.generate(s)
        mod, _ = kernel_fuzz.load(case, tmp_path)
        plan = mod.fuzz_kernel.compile.spell(lambda p: p, kernel_fuzz.signature(case.args),
                                             False)
        kinds.add("parallel" if plan.parallel else "serial")
        if plan.reductions:
            kinds.add("float reduction" if any(r.ty.is_float for r in plan.reductions)
                      else "int reduction")
    assert kinds == {"parallel", "serial", "int reduction", "float reduction"}


def test_same_seed_same_kernel_and_arguments():
    a, b = gen.generate(1234), gen.generate(1234)
    assert a.source() == b.source()
    assert a.arguments_text() == b.arguments_text()
    assert gen.generate(1235).source() != a.source()


# ---- the comparison can fail ---------------------------------------------------------


def divide_case(divisor: str = "0") -> gen.Case:
    x = np.array([7, -7, 3, 0], np.int64)
    return gen.Case(seed=-1, features=gen.DEFAULT_FEATURES, params=["o0", "x0"],
                    loop="for i in range(o0.shape[0]):",
                    body=[["o0[i, 0] = x0[i] + 1"], [f"o0[i, 1] = x0[i] // {divisor}"],
                          ["o0[i, 2] = x0[i] * 3"]],
                    args=[np.zeros((4, 3), np.int64), x])


def test_a_mutated_result_is_caught(tmp_path: Path):
    case = gen.generate(3)
    assert kernel_fuzz.check(case, tmp_path) == []
    msgs = kernel_fuzz.check(case, tmp_path, perturb=True)
    assert msgs and "differ" in msgs[0] and "Python" in msgs[0]


def test_a_wrong_reference_rule_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    assert kernel_fuzz.check(divide_case(), tmp_path) == []
    real = ref._int_binop

    def wrong(m: ref.Model, op: str, a: int, b: int):
        return 1 if op == "//" and b == 0 else real(m, op, a, b)
    monkeypatch.setattr(ref, "_int_binop", wrong)
    msgs = kernel_fuzz.check(divide_case(), tmp_path)
    assert msgs and "argument 'o0'" in msgs[0], msgs


@pytest.mark.skipif(not gxx_available(), reason="no g++")
def test_a_wrong_cuda_result_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    case = divide_case("(x0[i] - 3)")
    case.emulate = True
    assert kernel_fuzz.check(case, tmp_path) == []
    real = kernel_fuzz.on_emulator

    def off_by_one(*args):
        arrays, result = real(*args)
        arrays[0][2, 2] += 1
        return arrays, result
    monkeypatch.setattr(kernel_fuzz, "on_emulator", off_by_one)
    msgs = kernel_fuzz.check(case, tmp_path)
    assert len(msgs) == 1 and "the CUDA emulation" in msgs[0], msgs


def test_a_wrong_level_zero_result_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]):
    if level_zero_fuzz.unavailable():
        pytest.skip(level_zero_fuzz.unavailable())
    # seed 8 agrees on Level Zero (the fixed sweep runs it there); here the Level Zero
    # side's first element is one unit in the last place away
    monkeypatch.setenv("TACK_FUZZ_LEVEL_ZERO_PERTURB", "1")
    failures = kernel_fuzz.sweep(8, 1, gen.DEFAULT_FEATURES, 0, tmp_path,
                                 level_zero_every=1)
    assert [c.seed for c, _ in failures] == [8], failures
    assert "Level Zero" in failures[0][1][0] and "=== seed 8" in capsys.readouterr().out


def test_without_the_opencl_runtime_the_sweep_says_so_and_runs_no_level_zero_case(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setattr(level_zero_fuzz.opencl_cpu_runtime, "library_dir", lambda: None)
    before = kernel_fuzz.STATS["level zero"]
    assert kernel_fuzz.main(["--seed", "1", "--count", "1", "--emulate-every", "0",
                             "--level-zero-every", "1"]) == 0
    out = capsys.readouterr().out
    assert "no Level Zero cases: Intel's OpenCL CPU runtime is not installed" in out
    assert kernel_fuzz.STATS["level zero"] == before and "'level zero': " in out


def test_a_mismatch_is_reported_with_a_smaller_reproducer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setattr(gen, "generate", lambda seed, features: divide_case())
    real = ref._int_binop
    monkeypatch.setattr(ref, "_int_binop", lambda m, op, a, b: 5 if op == "//" else
                        real(m, op, a, b))
    assert kernel_fuzz.main(["--seed", "9", "--count", "1", "--emulate-every", "0"]) == 1
    out = capsys.readouterr().out
    assert "=== seed -1" in out and "argument 'o0'" in out
    kernel = out.split("--- kernel module:")[1].split("--- arguments")[0]
    assert "x0[i] // 0" in kernel and "x0[i] * 3" not in kernel  # the rest dropped
    assert "x0 = np.array([7, -7, 3, 0], dtype=np.int64)" in out


def test_docs_list_every_switch():
    text = DOCS.read_text("utf-8")
    section = text[text.index("## The fuzzer"):]
    for name in gen.FEATURES:
        assert f"`{name}`" in section, name


# ---- faults the fuzzer found -----------------------------------------------------------

NEGATIVE_GLOBAL = -0.375


@tack.kernel
def negate_global(out):
    for i in range(out.shape[0]):
        out[i] = -NEGATIVE_GLOBAL


def test_negating_a_negative_float_global_compiles():
    # the global's literal was spelled -0.375 after a unary minus: `--0.375` in C
    out = tack.zeros(3, dtype=tack.f64)
    negate_global(out)
    assert out.numpy().tolist() == [0.375] * 3


@tack.kernel
def nan_signs(out, stored):
    for i in range(out.shape[0]):
        out[i, 0] = math.copysign(2.0, math.nan)
        out[i, 1] = math.copysign(2.0, -math.nan)
        out[i, 2] = math.copysign(2.0, stored[i])
        out[i, 3] = math.copysign(2.0, abs(stored[i]))


def test_a_nan_given_a_sign_keeps_it():
    # the signs docs/kernels.md promises: math.nan, its negation, stored elements, abs
    stored = np.array([np.nan, -np.nan, np.copysign(np.nan, -1.0)])
    out = tack.zeros((3, 4), dtype=tack.f64)
    nan_signs(out, tack.array(stored))
    want = [[2.0, -2.0, float(np.copysign(2.0, s)), 2.0] for s in stored]
    assert out.numpy().tolist() == want


def test_seed_32024_reading_the_sign_of_an_arithmetic_nan_is_left_out(tmp_path: Path):
    # `math.copysign(-128.0, p or (0.0 / 0.0))`: the C compiler folds 0.0 / 0.0 to a
    # positive NaN, x86 makes a negative one at run time; docs/kernels.md leaves that
    # sign unspecified, so a difference in a run that read it is no fault
    case = gen.generate(32024, gen.DEFAULT_FEATURES)
    assert "0.0 / 0.0" in case.source() and "math.copysign" in case.source()
    before = kernel_fuzz.STATS["left out: the sign of a NaN was read"]
    assert kernel_fuzz.check(case, tmp_path) == []
    assert kernel_fuzz.STATS["left out: the sign of a NaN was read"] == before + 1
    _, _, model = kernel_fuzz.on_python(case, kernel_fuzz.load(case, tmp_path)[1])
    assert model.nan_sign_read


def test_the_reference_marks_only_a_nan_sign_argument():
    m = ref.Model()
    rmath = ref.RefMath(m)
    assert rmath.copysign(np.float64(2.0), np.float64(-0.0)) == -2.0 and not m.nan_sign_read
    assert rmath.copysign(np.float64(2.0), 3) == 2.0 and not m.nan_sign_read
    rmath.copysign(np.float64(2.0), np.float64(np.nan))
    assert m.nan_sign_read


def test_seed_2328_a_nan_sign_that_differs_on_level_zero_is_no_fault(tmp_path: Path):
    # `math.copysign` from an arithmetic NaN: 64 on the CPU, -64 on executed SPIR-V
    if level_zero_fuzz.unavailable():
        pytest.skip(level_zero_fuzz.unavailable())
    case = gen.generate(2328, gen.DEFAULT_FEATURES)
    assert kernel_fuzz.reads_a_nan_sign(case, tmp_path)
    results, (by_spirv, _) = level_zero_fuzz.run_cases([2328], gen.DEFAULT_FEATURES,
                                                       tmp_path / "ze")
    assert results == {2328: []} and by_spirv > 0


# 80 to 110 s (a 512-reduction module built by gcc, clang and Intel's OpenCL
# compiler, then run): make soak runs it. make test proves the same fault quickly with
# test_level_zero_kernels.py::test_many_reductions_fit_the_groups_local_memory (160
# reductions, whose partials overflow a group of the driver's suggested size).
@pytest.mark.slow
@pytest.mark.soak
def test_seed_2104_512_reductions_fit_a_level_zero_group(tmp_path: Path):
    # 4 KiB of partials a work item: the driver's suggested 256 work items would ask
    # OpenCL for 1 MiB of local memory (CL_OUT_OF_RESOURCES)
    if level_zero_fuzz.unavailable():
        pytest.skip(level_zero_fuzz.unavailable())
    assert "r517" in gen.generate(2104, gen.DEFAULT_FEATURES).source()
    results, (by_spirv, _) = level_zero_fuzz.run_cases([2104], gen.DEFAULT_FEATURES,
                                                       tmp_path / "ze")
    assert results == {2104: []} and by_spirv > 0


def test_seed_2020_a_literal_beside_a_promoted_operand_is_a_float(tmp_path: Path):
    # `(100 * math.isinf(p1))` was an int in Python beside a float in the other arm of
    # `x if c else y`, where the kernel meets both at float64
    case = gen.generate(2020, gen.DEFAULT_FEATURES)
    assert "100.0 * math.isinf" in case.source() or "math.isinf(p1)) * 100.0" in \
        case.source()
    assert kernel_fuzz.check(case, tmp_path) == []


def test_seed_529_a_weak_float_chosen_by_max_is_a_float64(tmp_path: Path):
    # `max(0.1, 1e300, (4294967296 / i))` gave Python the literal 1e300, a weak
    # float, which beside a float32 made float32 (infinity); the kernel's max is a
    # float64 there. The generator now spells such forms inside tack.f64(...).
    case = gen.generate(529, gen.DEFAULT_FEATURES)
    assert "tack.f64(max(0.1, 1e300, (4294967296 / i)))" in case.source()
    assert kernel_fuzz.check(case, tmp_path) == []


def test_seed_34112_a_crash_of_intels_opencl_compiler_is_said_not_failed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    # Intel's OpenCL CPU runtime 2026.2.0 dies in its vectoriser building this seed's
    # module: the runtime's fault, reported and counted, not a mismatch of Tack
    if level_zero_fuzz.unavailable():
        pytest.skip(level_zero_fuzz.unavailable())
    results, _ = level_zero_fuzz.run_cases([34112], gen.DEFAULT_FEATURES, tmp_path / "r")
    assert [m.splitlines()[0][:len(level_zero_fuzz.COMPILER_CRASH)]
            for m in results[34112]] == [level_zero_fuzz.COMPILER_CRASH], results
    before = kernel_fuzz.STATS["level zero: the OpenCL compiler crashed"]
    assert kernel_fuzz.on_level_zero([34112], gen.DEFAULT_FEATURES, tmp_path) == []
    assert kernel_fuzz.STATS["level zero: the OpenCL compiler crashed"] == before + 1
    assert "seed 34112: Intel's OpenCL runtime crashed" in capsys.readouterr().out


# Found by a longer sweep (seeds 19019-19318): `o1[i, 0] = math.ldexp(v5, x3[-1])`
# with v5 = math.sinh(x0[-1]) % p1 (float32, p1 = 1.0 after the first trip). The true
# sinh(-15.084204) is -1778101.0724: Intel's OpenCL runtime returns the nearest
# float32, -1778101.125, and glibc's sinhf the one next to it, -1778101.0 (0.58 ulp
# off; both within their bounds). The remainder turns that ulp into 0.875 against 0,
# and ldexp(, 154) into inf against 0.0, for 39 of 40 rows.
def test_seed_19040_sinh_one_ulp_off_libm_explains_the_level_zero_result(
        tmp_path: Path):
    case = gen.generate(19040, gen.DEFAULT_FEATURES)
    assert "math.ldexp(v5, x3[(len(x3) - 1)])" in case.source()
    mod, path = kernel_fuzz.load(case, tmp_path)
    exact, _, _ = kernel_fuzz.on_python(case, path)
    o1 = exact[1]
    assert (o1[1:, 0] == 0.0).all()
    from cuda_compare import OPENCL
    for nudge in (-1, 1):
        off, _, _ = kernel_fuzz.on_python(case, path, ref.Model(nudge, OPENCL.bounds))
        assert np.isinf(off[1][1:, 0]).all()
        np.testing.assert_array_equal(off[1][:, 2], o1[:, 2])  # exact stores: as is


# Seed 200929: v6 = math.log(tack.f32(1e30) % math.gamma(tack.f32(3.0)), f16(0.0)) ** -1.
# gcc folds the constant tgammaf(3.0f) to 2.0, so 1e30 % 2 is 0, the log NaN and no
# branch on v6 is taken; glibc 2.36's tgammaf(3.0f) is 2.0000002 (an ulp up), so the
# reference's remainder is 1.948, v6 is -inf and it takes a branch with two atomics.
def test_seed_200929_a_folded_gamma_explains_the_cpu_result(tmp_path: Path):
    case = gen.generate(200929, gen.DEFAULT_FEATURES)
    assert "math.gamma(tack.f32(3.0))" in case.source()
    assert kernel_fuzz.check(case, tmp_path) == []
    if ref.libm.call("tgamma", np.float32(3.0)) == np.float32(2.0):
        return  # this C library rounds it correctly: nothing to explain
    mod, path = kernel_fuzz.load(case, tmp_path)
    cpu = kernel_fuzz.on_device(mod.fuzz_kernel, case.args)[0]
    exact = kernel_fuzz.on_python(case, path)[0]
    h0 = case.params.index("h0") - sum(1 for a in case.args[:case.params.index("h0")]
                                         if not isinstance(a, np.ndarray))
    assert not np.array_equal(cpu[h0], exact[h0])  # the plain reference differs
    down = kernel_fuzz.on_python(case, path, ref.Model(-1, kernel_fuzz.FOLDED_INEXACT))[0]
    np.testing.assert_array_equal(cpu[h0], down[h0])  # gamma an ulp down: the CPU's


def test_seed_19040_agrees_on_level_zero_as_opencls_math_may_round(tmp_path: Path):
    if level_zero_fuzz.unavailable():
        pytest.skip(level_zero_fuzz.unavailable())
    results, (by_spirv, _) = level_zero_fuzz.run_cases([19040], gen.DEFAULT_FEATURES,
                                                       tmp_path / "ze")
    assert by_spirv > 0
    assert results == {19040: []}, results


# The seeds the tests pin: the fixed set and every named regression seed.
PINNED_SEEDS = (0, 3, 7, 9, 12, 16, 23, 26, 42, 43, 54, 65, 86, 120, 125, 161, 165, 178,
                183, 196, 1234, 1235, 2020, 2026, 2104, 2328, 19040, 32024, 34112, 34172,
                200929)


def test_binned_update_leaves_the_pinned_seeds_alone():
    """binned_update draws from a stream of its own: the kernels the tests pin are
    the ones they were written against."""
    without = gen.DEFAULT_FEATURES - {"binned_update"}
    for seed in PINNED_SEEDS:
        assert gen.generate(seed).source() == gen.generate(seed, without).source(), seed


def test_streamed_rows_leaves_the_pinned_seeds_alone():
    """streamed_rows draws from a stream of its own, as binned_update does."""
    without = gen.DEFAULT_FEATURES - {"streamed_rows"}
    for seed in PINNED_SEEDS:
        assert gen.generate(seed).source() == gen.generate(seed, without).source(), seed


def test_the_sweep_runs_streamed_loops_of_every_part(tmp_path: Path):
    """Some of the fixed sweep's even seeds have a row loop that the CPU compiles
    as a streamed loop when kernel_fuzz.check forces streaming, with rows long
    enough for whole strips (1024 bytes), and check() finds them all agreeing."""
    from tack.kernel import generate_source, stream

    without = gen.DEFAULT_FEATURES - {"streamed_rows"}
    cases = [gen.generate(s) for s in range(0, SEEDS, 2)
             if gen.generate(s).source() != gen.generate(s, without).source()]
    streamed, strips = 0, 0
    for case in cases:
        mod, _ = kernel_fuzz.load(case, tmp_path)
        with kernel_fuzz.streaming_forced(case):
            assert stream.stream_min_bytes() == 0
            src = generate_source(mod.fuzz_kernel, kernel_fuzz.signature(case.args),
                                  debug=False)
        if "tk_stream_line(tk_nt_dst" in src:
            streamed += 1
            w0 = case.args[case.params.index("w0")]
            strips += w0.shape[1] * w0.itemsize >= 2 * stream.STRIP
    assert streamed >= 4 and strips >= 1
    before = kernel_fuzz.STATS["streamed"]
    assert all(kernel_fuzz.check(c, tmp_path) == [] for c in cases)
    assert kernel_fuzz.STATS["streamed"] - before == streamed


def test_binned_update_cases_compile_as_binned_loops(tmp_path: Path):
    """Some of the fixed sweep's seeds are histogram-shaped loops (locals, then one
    atomic update last), and the CPU compiles them in two passes (emit_c.binning);
    the sweep compares them with Python like every other case."""
    from tack.kernel import generate_source

    without = gen.DEFAULT_FEATURES - {"binned_update"}
    cases = [gen.generate(s) for s in range(SEEDS)
             if gen.generate(s).source() != gen.generate(s, without).source()]
    assert len(cases) >= 2
    binned = 0
    for case in cases:
        assert case.body[-1][0].startswith("tack.atomic_") and not case.tail
        mod, _ = kernel_fuzz.load(case, tmp_path)
        src = generate_source(mod.fuzz_kernel, kernel_fuzz.signature(case.args),
                              debug=False)
        binned += "tk_bin[tk_bj] = " in src
    assert binned >= 1
