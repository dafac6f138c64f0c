"""The repository explains itself: its licence is present, and what its comments and
docs cite is in it.

A reader who meets a file path or a document name in a comment or a note must be able
to open it here. The third-party headers under tests/c/vendor/ are kept verbatim and
are not scanned.
"""

import re
from pathlib import Path

import pytest
from test_standin_layers import NOT_CODE, vendor_names

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ["csrc", "src", "include", "docs", "tests", "examples", "benchmarks"]
SUFFIXES = {".c", ".h", ".py", ".pyi", ".md", ".in", ".build"}
TOP_FILES = ["README.md", "meson.build", "Makefile", "pyproject.toml"]

# A path inside the repository, as prose writes it: `docs/kernels.md`, csrc/runtime/jit.c,
# or a glob such as tests/python/test_dlpack_*.py.
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:csrc|src|include|docs|tests|examples|benchmarks)/[\w./*-]*[\w*])"
)
# A bare document name (a word ending in .md): a file at the root or in docs/.
BARE_MD = re.compile(r"(?<![\w./-])([A-Za-z][\w-]*\.md)\b")
# Documents that exist only outside the repository, by the names they were cited with.
OUTSIDE = re.compile(
    r"\bthe spec\b|\bspec's\b|\bspec document\b|interoperability[ -]design|"
    r"sharing-arrays-guide|\buser guide\b|\bthe guide\b|Memory and Aliasing|"
    r"Backend Implementations|lang/array\.py",
    re.IGNORECASE,
)


def _files() -> list[Path]:
    files = [ROOT / name for name in TOP_FILES]
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if "vendor" in path.parts or "__pycache__" in path.parts:
                continue
            if path.is_file() and path.suffix in SUFFIXES:
                files.append(path)
    return files


FILES = _files()


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


def _exists(cited: str) -> bool:
    # A file, a folder, or a glob that matches something.
    return (ROOT / cited).exists() or any(ROOT.glob(cited))


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_cited_files_are_in_the_repository(path: Path):
    text = path.read_text(encoding="utf-8", errors="replace")
    missing = []
    for match in REPO_PATH.finditer(text):
        cited = match.group(1)
        if not _exists(cited):
            missing.append(cited)
    for match in BARE_MD.finditer(text):
        name = match.group(1)
        if not ((ROOT / name).exists() or (ROOT / "docs" / name).exists()):
            missing.append(name)
    assert not missing, f"{path.relative_to(ROOT)} cites files not in the repository: {missing}"


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_no_citations_of_documents_outside_the_repository(path: Path):
    text = path.read_text(encoding="utf-8", errors="replace")
    if path == Path(__file__):
        text = text.split("OUTSIDE = ", 1)[0]
    found = [m.group(0) for m in OUTSIDE.finditer(text)]
    assert not found, f"{path.relative_to(ROOT)} cites documents outside the repository: {found}"


def test_licence_is_the_bsd_3_clause_text_the_metadata_names():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("BSD 3-Clause License\n")
    assert "Copyright (c) 2026, the Tack authors" in text
    assert "3. Neither the name of the copyright holder" in text
    assert 'license = {text = "BSD-3-Clause"}' in (ROOT / "pyproject.toml").read_text()
    assert "license : 'BSD-3-Clause'" in (ROOT / "meson.build").read_text()


def test_every_public_header_is_installed():
    # include/tack/meson.build names the headers it copies and installs (into the
    # package's tack/include and a prefix): a header left out would be missing there.
    text = (ROOT / "include" / "tack" / "meson.build").read_text()
    listed = set(re.findall(r"'(\w+\.h)'", text)) - {"version.h"}  # generated
    present = {p.name for p in (ROOT / "include" / "tack").glob("*.h")}
    assert listed == present, (sorted(present - listed), sorted(listed - present))


C_FILES = [p for p in FILES if p.suffix in {".c", ".h"}]


def test_failures_are_recorded_with_one_spelling():
    # tack__fail / tack__fail_remedy (csrc/runtime/internal.h) are the only names of
    # the failure macros: no second, upper-case spelling comes back.
    old = re.compile(r"\bTACK__FAIL(?:_REMEDY)?\b")
    found = [str(p.relative_to(ROOT)) for p in C_FILES
             if old.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert not found, f"the old spelling TACK__FAIL is used in {found}"


def test_the_binding_names_no_backend():
    # Which backend serves a DLPack device type, and which stream Tack asks a
    # producer for, are the runtime's (csrc/runtime/dlpack_stream.c): the binding
    # opens no backend by name.
    found = [str(p.relative_to(ROOT)) for p in C_FILES
             if p.parent == ROOT / "csrc" / "python" and p.suffix == ".c"
             and re.search(r'"cuda[":]', p.read_text(encoding="utf-8"))]
    assert not found, f"a backend is named in {found}"


def test_tack_debug_is_read_in_one_place():
    readers = [str(p.relative_to(ROOT)) for p in FILES
               if p.suffix in {".c", ".py"} and p.parts[len(ROOT.parts)] in ("csrc", "src")
               and re.search(r'getenv\("TACK_DEBUG"\)|environ[^\n]*"TACK_DEBUG"',
                             p.read_text(encoding="utf-8"))]
    assert readers == ["csrc/runtime/kernel.c"], readers


# The GPU layer (csrc/backends/gpu/) serves every CUDA-like driver: what is CUDA's is
# the CUDA backend's (csrc/backends/cuda/), reached through the driver table and its
# tack__gpu_vendor. Its comments and literals may still say what CUDA documents.
GPU_LAYER = sorted((ROOT / "csrc" / "backends" / "gpu").glob("*.[ch]"))
# An #include's path counts as code: the layer includes no vendor's header.
QUOTED_INCLUDE = re.compile(r'^(\s*#\s*include\s*)"([^"\n]*)"', re.MULTILINE)
# What a message of the layer must take from the driver instead: a CUDA call's name,
# the words CUDA and NVRTC, an architecture spelled sm_XY.
CUDA_WORDS = re.compile(r"\bcu[A-Z]\w*|\bCUDA\b|\bNVRTC\b|\bsm_")


def gpu_layer_vendor_names(source: str) -> list[str]:
    return vendor_names(QUOTED_INCLUDE.sub(r"\1<\2>", source))


def gpu_layer_worded_literals(source: str) -> list[str]:
    return [m.group(0) for m in NOT_CODE.finditer(source)
            if m.group(0)[0] in "\"'" and CUDA_WORDS.search(m.group(0))]


def test_the_gpu_layer_has_files():
    assert {p.name for p in GPU_LAYER} >= {"gpu_internal.h", "gpu_kernel.h",
                                           "gpu_module_cache.c", "gpu_twin.c"}


@pytest.mark.parametrize("path", GPU_LAYER, ids=_ids(GPU_LAYER))
def test_the_gpu_layer_names_nothing_of_cuda(path: Path):
    source = path.read_text(encoding="utf-8")
    assert gpu_layer_vendor_names(source) == [], path.relative_to(ROOT)
    assert gpu_layer_worded_literals(source) == [], path.relative_to(ROOT)


def test_the_gpu_layer_check_sees_cuda_in_code_includes_and_messages():
    source = (
        '#include "../cuda/cuda_internal.h"\n'
        "if (rc == TCU_ERROR_UNSUPPORTED_PTX_VERSION) { CUresult r; }\n"
        "typedef tcu_result (*fn)(tcu_module, const char *); /* tcu_stream */\n"
        'st = tack__cuda_driver_get(&d); // cuInit\n'
        'check(s, rc, "cuModuleLoadData"); snprintf(a, n, "sm_%d", cc);\n'
        'fail("failed to compile for CUDA"); name = "tack_kernel_body";\n'
    )
    assert gpu_layer_vendor_names(source) == [
        "1: cuda_internal", "2: TCU_ERROR_UNSUPPORTED_PTX_VERSION", "2: CUresult",
        "3: tcu_result", "3: tcu_module", "4: tack__cuda_driver_get"]
    assert gpu_layer_worded_literals(source) == [
        '"cuModuleLoadData"', '"sm_%d"', '"failed to compile for CUDA"']
