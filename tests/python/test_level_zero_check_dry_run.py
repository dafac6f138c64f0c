"""scripts/level_zero_check.sh: its real run fails at once without an Intel GPU, and
its dry run, the same steps on the strict stand-in, passes end to end.

The dry run uses test_gpu_check_dry_run's rehearsal machine: a Python environment with
NumPy and pytest only (so the VTK step is absent), meson and ninja on PATH, and here
ZE_ENABLE_ALT_DRIVERS naming the stand-in that level_zero_helpers builds. It is marked
slow: it builds Tack once more and runs the Level Zero tests (a few minutes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import level_zero_helpers
import pytest
from test_gpu_check_dry_run import DROPPED, _python_like_the_gpu_machines, _tools

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "level_zero_check.sh"
STEPS = ["device", "probe", "build", "c-tests", "pytest-level-zero", "vtk"]


def _check(env: dict[str, str], out: Path, *args: str, timeout: int = 600) -> dict[str, Any]:
    """Runs the script with env and returns its exit status, output, report and logs."""
    done = subprocess.run(["bash", str(SCRIPT), *args], env=dict(env, OUT=str(out)),
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          check=False)
    run: dict[str, Any] = {"rc": done.returncode, "stdout": done.stdout + done.stderr}
    if (out / "level_zero_check.json").exists():
        run["report"] = json.loads((out / "level_zero_check.json").read_text())
        run["steps"] = {s["name"]: s for s in run["report"]["steps"]}
        with tarfile.open(out / "logs.tgz") as tar:
            run["logs"] = {Path(m.name).name: tar.extractfile(m).read().decode()
                           for m in tar.getmembers() if m.isfile()}
    return run


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED
           and not k.startswith(("ZE_", "TACK_STANDIN", "TACK_LEVEL_ZERO"))}
    env.update({"PYTHON": sys.executable, **extra})
    return env


def test_the_real_run_fails_at_once_without_an_intel_gpu(tmp_path):
    # The stand-in named as the loader's driver is dropped: the real run never uses an
    # alternative driver, so on this machine the loader finds no GPU.
    env = _environment(ZE_ENABLE_ALT_DRIVERS=str(level_zero_helpers.standin_library()),
                       TMPDIR=str(tmp_path))
    run = _check(env, tmp_path / "out", timeout=120)
    assert run["rc"] == 1, run["stdout"]
    assert run["report"]["complete"] is True and run["report"]["ok"] is False
    assert [(s["name"], s["status"]) for s in run["report"]["steps"]] == [("device", "fail")]
    assert "ZE_ENABLE_ALT_DRIVERS unset" in run["logs"]["device.log"]
    assert "no Level Zero GPU" in run["logs"]["device.log"]
    assert "it never skips" in run["logs"]["level_zero_check.log"]


@pytest.mark.parametrize("args, env, says", [
    (["--dry-run"], {}, "set it"),
    (["--fast"], {}, "usage:"),
])
def test_a_dry_run_needs_a_driver_named_and_other_arguments_are_refused(
        tmp_path, args, env, says):
    run = _check(_environment(**env), tmp_path / "out", *args, timeout=60)
    assert run["rc"] == 2 and says in run["stdout"], run["stdout"]
    assert "report" not in run


@pytest.mark.parametrize("mode, env, expect", [
    ("two-drivers", {}, ()),
    ("plain", {"TACK_STANDIN_ZE_DEVICES": "2"}, ()),
    ("plain", {"ZE_ENABLE_ALT_DRIVERS": "/nonexistent.so"}, ()),
    ("plain", {}, ("was destroyed",)),
])
def test_on_the_installed_driver_a_test_asking_for_the_standin_fails(
        monkeypatch, mode, env, expect):
    monkeypatch.setattr(level_zero_helpers, "INSTALLED_DRIVER", True)
    with pytest.raises(AssertionError, match="mark it standin_ze"):
        level_zero_helpers.run("pass", mode, expect=expect, **env)


@pytest.mark.slow
def test_the_dry_run_passes_on_the_standin_and_names_what_it_leaves_out(tmp_path):
    python = _python_like_the_gpu_machines(tmp_path)
    ours = {str(Path(sys.executable).parent), str(Path(sys.prefix) / "bin")}
    path = [str(_tools(tmp_path))] + [p for p in os.environ["PATH"].split(os.pathsep)
                                      if p and p not in ours]
    env = _environment(PATH=os.pathsep.join(path), PYTHON=str(python),
                       ZE_ENABLE_ALT_DRIVERS=str(level_zero_helpers.standin_library()),
                       LEVEL_ZERO_CHECK_BUILD=str(tmp_path / "build"),
                       LEVEL_ZERO_CHECK_BUDGET="580",
                       TACK_CACHE_DIR=str(tmp_path / "kernel-cache"), TMPDIR=str(tmp_path))
    run = _check(env, tmp_path / "out", "--dry-run")
    assert run["rc"] == 0, run["stdout"][-6000:]
    assert run["report"]["ok"] is True and run["report"]["complete"] is True
    statuses = {name: s["status"] for name, s in run["steps"].items()}
    assert statuses == dict(dict.fromkeys(STEPS[:-1], "pass"), vtk="absent"), statuses
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"level_zero_check.json",
                                                              "logs.tgz"}
    logs = run["logs"]
    assert "dry run: the driver is" in logs["device.log"]
    assert "Tack stand-in Level Zero GPU 0 (vendor 0x8086, type 1)" in logs["device.log"]
    assert "FAIL" not in logs["c-tests.log"]
    assert logs["c-tests.log"].count("1 passed, 0 failed") >= 10
    pytest_log = logs["pytest-level-zero.log"]
    left_out = [line.strip() for line in pytest_log.splitlines() if line.startswith("  ")]
    assert "test_level_zero_memory.py::test_no_device_and_no_driver_are_runtime_errors" \
        in " ".join(left_out)
    assert all("standin_ze" not in line for line in left_out)
    assert f"left out on the installed driver: {len(left_out)} tests" in pytest_log
    assert f"{len(left_out)} deselected" in pytest_log and " failed" not in pytest_log
