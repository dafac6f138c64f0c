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
