"""benchmarks/bench_cuda.py --smoke runs end to end through the stand-in driver (tiny
sizes: this proves the script and its JSON, not speed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cuda_helpers import standin_for_kernels

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cuda.py"


def test_the_smoke_run_writes_every_row(tmp_path: Path):
    out = tmp_path / "bench.json"
    env = dict(os.environ, TACK_CUDA_DRIVER=standin_for_kernels(),
               TACK_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(BENCH), "--smoke", "--json", str(out)],
                          env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    report = json.loads(out.read_text())
    assert report["errors"] == [], report["errors"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["smoke"] is True and report["log2n"] == 12
    rows = {(r["group"], r["name"].split(" ")[0]) for r in report["rows"]}
    for group, name in [("copies", "device"), ("export_memory", "export_memory,"),
                        ("kernels", "saxpy"), ("kernels", "radius_squared"),
                        ("kernels", "stencil7"), ("kernels", "launch,"),
                        ("kernels", "first")]:
        assert (group, name) in rows, (group, name, rows)
    assert ("kernels", "sum") in rows
    for r in report["rows"]:
        assert r["tack"] > 0, r
        # a peer is measured (a ratio) or named as missing (no value, no ratio)
        assert (r["peer_value"] is None) == (r["ratio"] is None) or r["peer"] == ""
    saxpy = next(r for r in report["rows"] if r["name"].startswith("saxpy"))
    assert saxpy["peer"] == "device-to-device copy" and saxpy["ratio"] > 0
    assert "% of the copy" in saxpy["note"]
    assert "device: tack.device('cuda', 0)" in done.stdout
