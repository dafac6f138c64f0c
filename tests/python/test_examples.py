"""The examples run as tests (the VTK example has its own file)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    "script,banner",
    [("arrays.py", "Arrays: check passed"), ("kernels.py", "Kernels: check passed")],
)
def test_example_runs(tmp_path: Path, script: str, banner: str):
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert banner in out.stdout


@pytest.mark.parametrize(
    "args,banner",
    [
        (["docs/examples/vtk_interop.py", "--output", "{tmp}/radius.vti"],
         "VTK interop: check passed"),
        (["docs/examples/validate.py", "--arch", "cpu", "--vtk"], "all checks passed"),
    ],
)
def test_the_guides_example_paths_run(tmp_path: Path, args: list, banner: str):
    """The examples also run from docs/examples/."""
    root = EXAMPLES.parent
    argv = [a.format(tmp=tmp_path) for a in args]
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(root / argv[0]), *argv[1:]], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert banner in out.stdout


# ---- the CUDA paths, through the stand-in driver (tests/standin/cuda) ----------------


def _example(tmp_path: Path, driver: str, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"), TACK_CUDA_DRIVER=driver)
    return subprocess.run([sys.executable, *argv], env=env, cwd=EXAMPLES,
                          capture_output=True, text=True, timeout=300, check=False)


def _standin() -> str:
    from cuda_helpers import standin_for_kernels

    return standin_for_kernels()


def test_validate_runs_every_check_on_cuda(tmp_path: Path):
    out = _example(tmp_path, _standin(), "validate.py", "--arch", "cuda")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert [line for line in lines if line.startswith("ok")] == [
        "ok    copy in, copy out [cuda]",
        "ok    kernel: radius_squared [cuda]",
        "ok    kernel: saxpy, float32 and float64, bit for bit [cuda]",
        "ok    DLPack with NumPy, both ways [cuda]",
    ]
    assert lines[-1] == "validate: all checks passed"


def test_validate_without_a_cuda_device_exits_non_zero_saying_so(tmp_path: Path):
    out = _example(tmp_path, str(tmp_path / "no-libcuda.so"), "validate.py", "--arch",
                   "cuda")
    assert out.returncode == 2
    assert "validate: no usable cuda device" in out.stderr
    assert "nothing was checked" in out.stderr and "ok" not in out.stdout


def test_the_vtk_example_runs_its_kernel_on_cuda_too(tmp_path: Path):
    out = _example(tmp_path, _standin(), "vtk_interop.py", "--require-cuda")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "CUDA: radius_squared on cuda:0 matches NumPy" in out.stdout
    assert "VTK interop: check passed" in out.stdout


def test_the_vtk_example_says_when_cuda_is_not_there(tmp_path: Path):
    missing = str(tmp_path / "no-libcuda.so")
    out = _example(tmp_path, missing, "vtk_interop.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "CUDA: not available" in out.stdout and "ran on the CPU only" in out.stdout
    assert "VTK interop: check passed" in out.stdout
    required = _example(tmp_path, missing, "vtk_interop.py", "--require-cuda")
    assert required.returncode != 0
    assert "--require-cuda, but no CUDA device" in required.stderr
