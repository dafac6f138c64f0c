"""The stand-in driver's core is name-neutral and its layers only spell it.

tests/standin/core is compiled under every layer (tests/standin/<layer>/), so its code
names no vendor's type, constant or entry point: those belong to the layer that exports
them. Comments and string literals may still say what the driver documents.
"""

import re
from pathlib import Path

import pytest

STANDIN = Path(__file__).resolve().parents[2] / "tests" / "standin"
CORE = sorted((STANDIN / "core").glob("*.[ch]"))

# CUDA's spellings: cuda_abi.h's tcu_/TCU_ names, the driver's cu* entry points and
# CU* types and handle structs, cuda.h's CUDA_/CU_ constants, the runtime's cuda*
# names, and the CUDA backend's own cuda_* files and tack__cuda_* functions.
VENDOR = re.compile(r"\b(?:tcu_\w+|TCU_\w+|cu[A-Z]\w*|CU[a-z]\w*|CU\w*_st|CUDA_\w+|CU_\w+"
                    r"|cuda_\w+|cuda[A-Z]\w*|tack__cuda_\w+)\b")
# Comments and string or character literals, which the check leaves alone.
NOT_CODE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                      re.DOTALL)


def vendor_names(source: str) -> list[str]:
    """The vendor spellings in the code of a C source (comments and literals blanked,
    lines kept, so each hit reports its line)."""
    code = NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)
    return [f"{code.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
            for m in VENDOR.finditer(code)]


def test_the_core_has_files():
    assert {p.name for p in CORE} >= {"standin.h", "standin_core.c", "standin_memory.c",
                                      "standin_queue.c", "standin_vmm.c"}


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.name)
def test_core_code_names_no_vendor(path):
    assert vendor_names(path.read_text()) == [], path


def test_the_check_sees_code_and_skips_comments():
    src = '/* cuMemAlloc */ x = TCU_SUCCESS; s = "CUDA_ERROR"; // cuInit\nstruct CUctx_st *c;'
    assert vendor_names(src) == ["1: TCU_SUCCESS", "2: CUctx_st"]


def test_every_exported_entry_point_is_the_layers():
    exported = re.compile(r"STANDIN_EXPORT\s+[\w ]+?\**\s*\b(\w+)\s*\(")
    for path in CORE:
        assert not exported.findall(path.read_text()), path
    layer = "".join(p.read_text() for p in sorted((STANDIN / "cuda").glob("cuda_*.c")))
    names = set(exported.findall(layer))
    assert {"cuInit", "cuMemAlloc_v2", "cuStreamCreate", "cuMemMap", "cuLaunchKernel",
            "tack_standin_cuda_register_twin"} <= names
