"""examples/kernels.py runs as a test."""

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kernels.py"


def test_kernels_example_runs(tmp_path: Path):
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True,
                         text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "Kernels: check passed" in out.stdout
