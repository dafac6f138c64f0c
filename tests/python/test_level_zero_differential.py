"""The fixed kernel set's fuzzer kernels (kernel_suite_sources.SEEDS) on Level Zero
arrays against the CPU, through the real loader on the strict stand-in driver, by the
stand-in's execution mode: `twin` computes the launches with the CPU twins (so
equality checks the machinery around the kernel: module, arguments, groups, record,
read-back); `spirv` runs the modules' SPIR-V, where the stand-in can."""

from pathlib import Path

import opencl_cpu_runtime
import pytest
from level_zero_helpers import STANDIN_SOURCES, run, standin_only

HERE = Path(__file__).resolve().parent

CODE = """
sys.path.insert(0, {here!r})
from pathlib import Path
import kernel_fuzz, kernel_fuzz_gen as gen
from kernel_suite_sources import SEEDS
dev = tack.device("level_zero")
work = Path({work!r})

def outcome(k, args, device):
    tk = [tack.array(a.copy(), device=device) if isinstance(a, np.ndarray) else a
          for a in args]
    try:
        result = k(*tk)
    except Exception as exc:  # the same error on both, message included
        return type(exc).__name__, str(exc)
    return [a.numpy() for a in tk if isinstance(a, tack.Array)], result

ran = 0
for seed in SEEDS:
    case = gen.generate(seed)
    mod, _ = kernel_fuzz.load(case, work)
    want = outcome(mod.fuzz_kernel, case.args, tack.device("cpu"))
    got = outcome(mod.fuzz_kernel, case.args, dev)
    if isinstance(want[0], str):
        assert got == want, (seed, want, got)
        continue
    assert len(got[0]) == len(want[0]), seed
    for w, g in zip(want[0], got[0]):
        assert w.dtype == g.dtype and np.array_equal(w, g, equal_nan=w.dtype.kind in "fc"), seed
    assert (want[1] == got[1]) or (want[1] != want[1] and got[1] != got[1]), (seed, want[1], got[1])
    ran += 1
assert ran >= len(SEEDS) // 2, ran
print("ran", ran)
"""


def _standin_executes_spirv() -> bool:
    return any("TACK_STANDIN_ZE_EXECUTE" in p.read_text() for p in STANDIN_SOURCES)


def _runtime_installed() -> bool:
    return opencl_cpu_runtime.library_dir() is not None


@standin_only
@pytest.mark.parametrize("execute", ["twin", "spirv"])
def test_the_fixed_set_on_level_zero_matches_the_cpu(execute, tmp_path, request):
    if execute == "spirv" and not (_standin_executes_spirv() and _runtime_installed()):
        pytest.skip("SPIR-V execution is not available: Intel's OpenCL CPU runtime "
                    "is not installed, so the stand-in computes launches with CPU twins")
    if execute == "spirv" and _runtime_installed():
        # The first run of the suite's SPIR-V on a real OpenCL device: seed 165 (asin,
        # erfc, log1p, sinh, **) differs from the CPU in the last bits of one float64
        # element. The comparison is still exact here; OpenCL's math functions are
        # bounded in ulps, not correctly rounded, so this case waits for the comparison
        # rules of cuda_compare.py with OpenCL's bounds. Strict: it fails once it passes.
        request.applymarker(pytest.mark.xfail(
            strict=True, reason="seed 165 differs in the last bits of a float64 "
            "element on OpenCL's math functions; exact comparison"))
    r = run(CODE.format(here=str(HERE), work=str(tmp_path)), "plain",
            TACK_STANDIN_ZE_EXECUTE=execute, TACK_CACHE_DIR=str(tmp_path / "cache"))
    assert "ran" in r.stdout, r.stdout
