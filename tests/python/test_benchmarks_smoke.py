"""Each benchmark in benchmarks/ runs at its smoke size (tiny sizes, one round) and
prints and writes its tables; `make bench`'s runner summarises several runs as
median (min-max). No timing is asserted: these prove the scripts, not the speed.
bench_cuda.py has its own smoke test through the stand-in driver
(test_bench_cuda.py)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))
import _harness  # noqa: E402  (the benchmarks' folder is not a package)

TABLES = {
    "arrays": ["Copies in and out"],
    "dlpack": ["DLPack, ns per call"],
    "kernels": [
        "Kernels: Tack's time, peers' time / Tack's (above 1: Tack is faster)",
        "Launch overhead",
        "Compile latency (first call in a new process)",
    ],
    "nvrtc": ["Loading NVRTC (dlopen, new process)",
              "GPU kernel builds (NVRTC, no GPU), ms"],
    "mpi": ["MPI: per buffer (rank 0), ns per call",
            "MPI: messages, the slower rank's time per call"],
}


def run_smoke(name: str, tmp_path: Path) -> tuple[str, dict]:
    script, prefix, missing = _harness.BENCHMARKS[name]
    why = missing()
    if why:
        pytest.skip(f"{script} cannot run here: {why}")
    out = tmp_path / "report.json"
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"),
               OPENBLAS_NUM_THREADS="1")
    done = subprocess.run(_harness.command(script, prefix, "--smoke", "--json", str(out)),
                          env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, json.loads(out.read_text())


@pytest.mark.parametrize("name", sorted(TABLES))
def test_each_benchmark_prints_its_tables_at_smoke_size(name: str, tmp_path: Path):
    stdout, report = run_smoke(name, tmp_path)
    titles = [t["title"] for t in report["tables"]]
    assert titles == TABLES[name]
    for t in report["tables"]:
        assert f"### {t['title']}" in stdout
        assert t["rows"], t["title"]
        for row, cells in t["rows"].items():
            assert row in stdout
            values = [v for v in cells.values() if v is not None]
            assert values, (t["title"], row)
            assert all(math.isfinite(v) and v >= 0 for v in values), (row, cells)


def test_the_runner_summarises_runs_as_median_and_range(tmp_path: Path):
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(BENCH / "_harness.py"), "--only",
                           "arrays,cuda", "--smoke", "--runs", "2"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert out.startswith("machine: ") and " cores; load average" in out
    assert "command: " in out and "runs: 2" in out
    assert "### Copies in and out" in out
    row = next(line for line in out.splitlines() if line.startswith("| fill "))
    assert row.count(" - ") == 3, row  # Tack, NumPy and the ratio: each a range
    cuda = out.split("## cuda: benchmarks/bench_cuda.py\n")[1].splitlines()[0]
    if _harness.cuda_missing():
        assert cuda.startswith("skipped: no CUDA device")


def test_a_cell_is_the_median_and_the_range_of_its_runs():
    assert _harness.cell_text([3.0, 1.0, 2.0], "ms") == "2.00 ms (1.00 ms - 3.00 ms)"
    assert _harness.cell_text([0.5, None, 0.7], "x") == "0.60x (0.50x - 0.70x)"
    assert _harness.cell_text([None], "x") == "n/a"
    assert _harness.cell_text([12_345.0], "ns") == "12.35 us"
