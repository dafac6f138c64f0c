"""Every kernel of the fixed set (kernel_suite_sources.py), compiled to SPIR-V by
tack.kernel.spirv, builds on a real SPIR-V consumer: Intel's OpenCL CPU runtime
(opencl_cpu_runtime.py), through clCreateProgramWithIL, and has Tack's entry point.
spirv-val (test_level_zero_spirv.py) checks the modules' form; this checks that a
driver's compiler takes them. The runtime's device must offer what the Level Zero
stand-in will execute these modules with: SPIR-V programs (cl_khr_il_program) and
unified shared memory (cl_intel_unified_shared_memory).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import kernel_suite_sources as suite
import opencl_cpu_runtime as ocl
import pytest

from tack.kernel import spirv
from tack.kernel.emit_opencl import emit_opencl
from tack.kernel.lower import OPENCL

pytestmark = pytest.mark.skipif(
    ocl.library_dir() is None,
    reason="Intel's OpenCL CPU runtime (intel-opencl-rt) is not installed: make setup "
    "installs it; without it no SPIR-V module is executed")


def write_modules(folder: Path, items: list[tuple[str, str]]) -> int:
    def one(k: int) -> None:
        (folder / f"{k:04d}.spv").write_bytes(spirv.compile_opencl(items[k][1]))

    with ThreadPoolExecutor(2) as pool:  # two cores
        list(pool.map(one, range(len(items))))
    return len(items)


# Once in make test, not again under the sanitizers: the time is clang's and Intel's
# compiler's, in child processes; Tack's part is the emitter, in Python.
@pytest.mark.slow
def test_every_kernel_of_the_fixed_set_builds_on_intels_opencl_runtime(tmp_path: Path):
    items = list(suite.sources(emit_opencl, OPENCL, list(suite.plans())))
    n = write_modules(tmp_path, items)
    assert n > 2 * len(suite.SEEDS)
    r = ocl.build_modules(tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    failed = [line for line in r.stdout.splitlines() if line.startswith("FAILED")]
    labels = {f"{k:04d}": label for k, (label, _) in enumerate(items)}
    assert not failed, "\n".join(
        f"{labels[line.split()[1].rstrip(':')]}: {line}" for line in failed[:10])
    assert f"built: {n}, failed: 0" in r.stdout
    extensions = r.stdout.splitlines()[0].split()
    assert "cl_khr_il_program" in extensions
    assert "cl_intel_unified_shared_memory" in extensions


def test_a_broken_module_fails_to_build(tmp_path: Path):
    label, text = next(iter(suite.sources(emit_opencl, OPENCL, list(suite.plans()))))
    module = spirv.compile_opencl(text)
    (tmp_path / "whole.spv").write_bytes(module)
    # a module that is not SPIR-V (its magic number swapped): the runtime refuses it
    # with an error; a truncated one would end the process (its SPIR-V reader exits)
    (tmp_path / "unread.spv").write_bytes(module[:4][::-1] + module[4:])
    r = ocl.build_modules(tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "FAILED unread:" in r.stdout
    assert "FAILED whole" not in r.stdout
    assert "built: 1, failed: 1" in r.stdout
