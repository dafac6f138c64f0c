"""examples/c/in_situ.c: a C heat simulation analysed in situ by embedded Python.

The program is built as docs/in_situ.md says (the package's flags and the
interpreter's embedding flags), run with its analysis script, and its numbers are
compared with its own C-only run (--no-python), which computes the same peak and
total in C. Also run on the stand-in CUDA driver, under valgrind and under ASan.
"""

from __future__ import annotations

import os
import shlex
import shutil
import struct
import subprocess
import sys
import sysconfig
import zlib
from pathlib import Path

import numpy as np
import pytest
from cuda_helpers import standin_for_kernels
from test_embed import _embed_flags, _tack_flags

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "examples" / "c" / "in_situ.c"
SCRIPT = ROOT / "examples" / "c" / "in_situ_analysis.py"
SUPPRESSIONS = Path(__file__).resolve().parent / "embed" / "python.supp"
SMALL = ["--size", "64", "--every", "5"]
_built: dict[str, Path] = {}


def build(tmp_path_factory: pytest.TempPathFactory, *extra: str) -> Path:
    key = " ".join(extra)
    if key not in _built:
        out = tmp_path_factory.mktemp("in-situ") / "in_situ"
        cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
        cmd = [*cc, "-std=c11", "-g", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
               *extra, str(SOURCE), "-o", str(out), *_tack_flags("--cflags"),
               *_tack_flags("--libs"), *_embed_flags(), "-lm",
               # A sanitized libtack (make sanitize-py) leaves its runtime to the preload.
               "-Wl,--allow-shlib-undefined"]
        result = subprocess.run(cmd, capture_output=True, text=True)
        assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stderr}"
        _built[key] = out
    return _built[key]


def run(program: Path | list[str], out: Path, *args: str, check: bool = True,
        **env: str) -> subprocess.CompletedProcess[str]:
    out.mkdir(exist_ok=True)
    child_env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
                     TACK_CACHE_DIR=str(out / "cache"), **env)
    cmd = [*(program if isinstance(program, list) else [str(program)]),
           "--python", sys.executable, "--script", str(SCRIPT), "--out", str(out), *args]
    result = subprocess.run(cmd, capture_output=True, text=True, env=child_env,
                            timeout=300)
    if check:
        assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return result


def numbers(result: subprocess.CompletedProcess[str]) -> list[dict[str, float]]:
    rows = []
    for line in result.stdout.splitlines():
        fields = dict(item.split("=") for item in line.split() if "=" in item)
        rows.append({k: float(v) for k, v in fields.items()})
    return rows


def assert_same_run(python: list[dict[str, float]], c_only: list[dict[str, float]]):
    assert len(python) == len(c_only) > 2
    for p, c in zip(python, c_only, strict=True):
        assert p["step"] == c["step"]
        assert p["peak"] == c["peak"]  # a max is exact, in any order
        if "total" in c:  # NumPy sums pairwise, the C loop in order
            assert p["total"] == pytest.approx(c["total"], rel=1e-12)
        if "norm" in c:  # the field itself, after the same steps
            assert p["norm"] == c["norm"]


def read_png(path: Path) -> np.ndarray:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, color = struct.unpack(">IIBB", data[16:26])
    assert (depth, color) == (8, 0)
    idat = data.index(b"IDAT")
    size = struct.unpack(">I", data[idat - 4:idat])[0]
    rows = np.frombuffer(zlib.decompress(data[idat + 4:idat + 4 + size]), np.uint8)
    rows = rows.reshape(height, width + 1)
    assert (rows[:, 0] == 0).all()  # filter type 0 on every row
    return rows[:, 1:]


def test_the_python_analysis_gives_the_c_reference_numbers(tmp_path_factory, tmp_path):
    program = build(tmp_path_factory)
    c_only = numbers(run(program, tmp_path / "c", *SMALL, "--no-python"))
    python = numbers(run(program, tmp_path / "py", *SMALL))
    assert_same_run(python, c_only)
    # The loop stopped on the value the script returned, below --stop (50).
    assert python[-2]["peak"] < 50.0 <= python[-3]["peak"]
    last = int(python[-1]["step"])
    picture = read_png(tmp_path / "py" / f"heat_{last:05d}.png")
    assert picture.shape == (64, 64)
    assert picture[0].max() == 0 and picture[32, 32] == picture.max() > 100
    assert len(list((tmp_path / "py").glob("heat_*.png"))) == len(python) - 1


def test_the_vtk_image_holds_the_field_as_point_data(tmp_path_factory, tmp_path):
    pytest.importorskip("vtkmodules")
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLImageDataReader

    python = numbers(run(build(tmp_path_factory), tmp_path, *SMALL))
    reader = vtkXMLImageDataReader()
    reader.SetFileName(str(tmp_path / f"heat_{int(python[0]['step']):05d}.vti"))
    reader.Update()
    image = reader.GetOutput()
    assert image.GetDimensions() == (64, 64, 1)
    temperature = vtk_to_numpy(image.GetPointData().GetArray("temperature"))
    assert temperature.max() == python[0]["peak"]
    assert temperature.sum() == pytest.approx(python[0]["total"], rel=1e-12)


def test_a_script_that_keeps_a_view_stops_the_host(tmp_path_factory, tmp_path):
    script = tmp_path / "keeps.py"
    script.write_text(SCRIPT.read_text() + "\n_kept = []\n_analyse = analyse\n\n\n"
                      "def analyse(field, step, outdir):\n"
                      "    _kept.append(np.from_dlpack(field))\n"
                      "    return _analyse(field, step, outdir)\n")
    out = tmp_path / "out"
    r = run(build(tmp_path_factory), out, *SMALL, "--script", str(script), check=False)
    assert r.returncode == 1
    assert "tack_array_reclaim(): the float64 array (64, 64) at 0x" in r.stderr, r.stderr
    assert "still in use: 1 other reference" in r.stderr


def test_a_cuda_field_on_the_stand_in_gives_the_same_numbers(tmp_path_factory, tmp_path):
    driver = standin_for_kernels()
    program = build(tmp_path_factory)
    c_only = numbers(run(program, tmp_path / "c", *SMALL, "--no-python"))
    python = numbers(run(program, tmp_path / "cuda", *SMALL, "--device", "cuda",
                         TACK_CUDA_DRIVER=driver))
    assert_same_run(python, c_only)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_under_valgrind(tmp_path_factory, tmp_path):
    # Small sizes keep it near half a minute; Python's own code and the loader are
    # suppressed, Tack and the host are not. Kernels are built without AVX-512,
    # which valgrind cannot run.
    vg = ["valgrind", "-q", "--error-exitcode=9", "--leak-check=no",
          f"--suppressions={SUPPRESSIONS}", str(build(tmp_path_factory))]
    small = ["--size", "16", "--every", "5", "--steps", "10", "--stop", "0"]
    c_only = numbers(run(vg, tmp_path / "c", *small, "--no-python"))
    cc = os.environ.get("CC") or "cc"
    python = numbers(run(vg, tmp_path / "py", *small, PYTHONMALLOC="malloc",
                         CC=f"{cc} -mno-avx512f"))
    assert_same_run(python, c_only)


def test_under_address_and_undefined_sanitizers(tmp_path_factory, tmp_path):
    program = build(tmp_path_factory, "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=undefined")
    c_only = numbers(run(program, tmp_path / "c", *SMALL, "--no-python"))
    # Python leaks by design at exit: leaks are not checked, every access is.
    python = numbers(run(program, tmp_path / "py", *SMALL,
                         ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"))
    assert_same_run(python, c_only)
