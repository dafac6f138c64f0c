"""Every kernel of the fixed set (kernel_suite_sources.py), spelled by the OpenCL C
emitter and compiled to SPIR-V by tack.kernel.spirv, is a module spirv-val accepts.

spirv-val checks each module as SPIR-V 1.2 (``spv1.2``), and also against OpenCL 2.2's
profile when the module does not use 64-bit atomics: that profile allows Int64Atomics
only with an extension a device reports, which spirv-val cannot be told of.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import kernel_suite_sources as suite
import pytest

import tack
from tack.kernel import spirv
from tack.kernel.emit_opencl import emit_opencl
from tack.kernel.lower import OPENCL

SPIRV_VAL = shutil.which("spirv-val")
INT64_ATOMICS = 12  # the Int64Atomics capability, as OpCapability writes it
CAPABILITY_OPCODE = 17


def capabilities(module: bytes) -> set[int]:
    """The OpCapability operands of a SPIR-V module (words after the 5-word header)."""
    words = [int.from_bytes(module[k:k + 4], "little") for k in range(0, len(module), 4)]
    assert words[0] == 0x07230203, "not a SPIR-V module"
    found, k = set(), 5
    while k < len(words):
        count, opcode = words[k] >> 16, words[k] & 0xFFFF
        if opcode == CAPABILITY_OPCODE:
            found.add(words[k + 1])
        k += max(count, 1)
    return found


def validation_errors(label: str, module: bytes, folder: Path) -> list[str]:
    assert SPIRV_VAL is not None, "spirv-val is missing: scripts/ensure_tools.sh installs it"
    path = folder / f"{abs(hash(label))}.spv"
    path.write_bytes(module)
    envs = ["spv1.2"] if INT64_ATOMICS in capabilities(module) else ["spv1.2", "opencl2.2"]
    errors = []
    for env in envs:
        r = subprocess.run([SPIRV_VAL, "--target-env", env, str(path)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            errors.append(f"{label} ({env}): {(r.stdout + r.stderr)[-1500:]}")
    return errors


def test_every_kernel_of_the_fixed_set_is_valid_spirv(tmp_path: Path):
    sources = list(suite.sources(emit_opencl, OPENCL, list(suite.plans())))
    assert len(sources) > 2 * len(suite.SEEDS)

    def check(item: tuple[str, str]) -> list[str]:
        label, text = item
        try:
            module = spirv.compile_opencl(text)
        except tack.CompileError as e:
            return [f"{label}: {e}"]
        return validation_errors(label, module, tmp_path)

    with ThreadPoolExecutor(2) as pool:  # two cores
        errors = [e for found in pool.map(check, sources) for e in found]
    assert not errors, "\n".join(errors[:10])


def test_the_validation_can_fail(tmp_path: Path):
    label, text = next(iter(suite.sources(emit_opencl, OPENCL, list(suite.plans()))))
    module = spirv.compile_opencl(text)
    assert not validation_errors(label, module, tmp_path)
    assert validation_errors(label, module[: len(module) // 2], tmp_path)


def test_a_missing_tool_is_a_compile_error_naming_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TACK_LLVM_SPIRV", "/nonexistent/llvm-spirv-15")
    with pytest.raises(tack.CompileError, match="/nonexistent/llvm-spirv-15"):
        spirv.compile_opencl("__kernel void k(void) {}")
    monkeypatch.delenv("TACK_LLVM_SPIRV")
    monkeypatch.setenv("TACK_OPENCL_CLANG", "clang-none")
    with pytest.raises(tack.CompileError, match="clang-none"):
        spirv.tools()


def test_a_source_clang_refuses_is_a_compile_error_with_its_output():
    with pytest.raises(tack.CompileError, match="compiling OpenCL C") as e:
        spirv.compile_opencl("__kernel void k(__global float *x) { x[0] = y; }")
    assert "y" in str(e.value)




@tack.kernel
def multiply_add(out, a, b, c):
    for i in range(out.shape[0]):
        out[i] = a[i] * b[i] + c[i]


def _fused(module: bytes, folder: Path) -> list[str]:
    """The OpenCL mad and fma instructions of a module, as spirv-dis writes them."""
    spirv_dis = shutil.which("spirv-dis")
    assert spirv_dis is not None, "spirv-dis is missing: scripts/ensure_tools.sh installs it"
    path = folder / "module.spv"
    path.write_bytes(module)
    text = subprocess.run([spirv_dis, str(path)], capture_output=True, text=True,
                          check=True).stdout
    assert "OpFMul" in text and "OpFAdd" in text, text
    return [ln for ln in text.splitlines()
            if "OpExtInst" in ln and (" mad " in ln or " fma " in ln)]


def test_a_multiply_and_an_add_stay_two_roundings(tmp_path: Path):
    # OpenCL C contracts a * b + c by default, into OpenCL's mad, which a device may
    # fuse; the CPU (-ffp-contract=off) and CUDA (--fmad=false) round twice
    raw = "__kernel void k(__global double *x) { x[0] = x[1] * x[2] + x[3]; }"
    assert _fused(spirv.compile_opencl(raw), tmp_path) == []
    f64 = ("array", "float64", 1)
    source = multiply_add.compile.spell(emit_opencl, (f64,) * 4, False, OPENCL)
    assert _fused(spirv.compile_opencl(source), tmp_path) == []
