"""scripts/gpu_check.sh rehearsed end to end without a GPU.

The strict stand-in driver is installed as libcuda.so.1 on the library path, a fake
nvidia-smi lists one GPU, and the script runs with a Python environment like the GPU
machine's: NumPy and pytest only (no VTK, JAX, mpi4py, meson-python or MPI launcher;
torch and CuPy are not installed here either), meson and ninja on PATH as commands.
Every step that needs only the driver must pass; the steps that need a peer or a real
GPU tool (compute-sanitizer) are absent, never failed.

Marked slow: it builds Tack once more and runs its CUDA tests (about a minute), and
it has no place under the sanitized run's LD_PRELOAD.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"
RESULTS = {"gpu_check.json", "differential.json", "bench_cuda.json", "logs.tgz"}
PASS = ["device", "probe", "build", "c-tests", "conformance", "pytest-cuda", "examples",
        "benchmarks"]
ABSENT = ["torch", "cupy", "jax", "vtk-example", "sanitizer", "racecheck", "mpi"]
# What the environment sees of this one: NumPy, pytest and what pytest imports.
SHARED = ["numpy", "pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments",
          "py"]
# Variables of this run that would change what the script's children do.
DROPPED = ["TACK_CUDA_DRIVER", "TACK_REQUIRE_CUDA", "TACK_REQUIRE_DPCTL_PEER",
           "TACK_OPENCL_RUNTIME_DIR", "TACK_DIFFERENTIAL_SUITE", "TACK_DIFFERENTIAL_REPORT",
           "TACK_DEBUG", "PYTHONPATH",
           "PYTHONHOME", "VIRTUAL_ENV", "LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "OUT",
           "GPU_CHECK_BUILD", "GPU_CHECK_REUSE", "GPU_CHECK_BUDGET", "GPU_CHECK_SMOKE"]

# One worker runs the module (make test-py: --dist loadgroup), so the rehearsal
# machine below is set up once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpu_check_rehearsal")]


def _shared_packages(into: Path) -> None:
    """Links the SHARED packages of this interpreter (and NumPy's vendored libraries)."""
    into.mkdir()
    for name in SHARED:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin, name
        where = Path(spec.origin)
        source = where.parent if spec.submodule_search_locations else where
        (into / source.name).symlink_to(source)
        libs = source.with_name(source.name + ".libs")
        if libs.is_dir():
            (into / libs.name).symlink_to(libs)


def _python_like_the_gpu_machines(tmp: Path) -> Path:
    """A venv of this Python with only the SHARED packages on its path."""
    _shared_packages(tmp / "shared")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True)
    python = tmp / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "shared.pth").write_text(f"{tmp / 'shared'}\n")
    for missing in ("vtkmodules", "jax", "mpi4py", "mesonpy", "torch", "cupy"):
        found = subprocess.run([str(python), "-c", f"import {missing}"],
                               capture_output=True, check=False)
        assert found.returncode != 0, f"{missing} is importable in the rehearsal"
    return python


def _tools(tmp: Path) -> Path:
    """nvidia-smi listing one GPU, and meson and ninja, alone in one folder."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text('#!/bin/sh\n'
                   'if [ "$1" = -L ]; then echo "GPU 0: Tack stand-in (UUID: GPU-0)"\n'
                   'else echo "Tack stand-in, 13.0, 8192 MiB"; fi\n')
    smi.chmod(0o755)
    here = Path(sys.executable).parent
    for tool in ("meson", "ninja"):
        found = shutil.which(tool) or shutil.which(tool, path=str(here))
        assert found, f"{tool} is needed to build Tack"
        (bin_dir / tool).symlink_to(found)
    return bin_dir


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> dict[str, Any]:
    """The rehearsal machine: its environment, and one full run of the script."""
    from cuda_helpers import standin_library

    tmp = tmp_path_factory.mktemp("gpu-machine")
    drivers = tmp / "drivers"
    drivers.mkdir()
    shutil.copy(standin_library(), drivers / "libcuda.so.1")
    python = _python_like_the_gpu_machines(tmp)
    # This environment's bin folder (its python, pip, mpiexec) is not on the machine.
    ours = {str(Path(sys.executable).parent), str(Path(sys.prefix) / "bin")}
    path = [str(_tools(tmp))] + [p for p in os.environ["PATH"].split(os.pathsep)
                                 if p and p not in ours]
    env = {k: v for k, v in os.environ.items() if k not in DROPPED
           and not k.startswith("TACK_STANDIN")}
    env.update(PATH=os.pathsep.join(path), LD_LIBRARY_PATH=str(drivers),
               PYTHON=str(python), GPU_CHECK_SMOKE="1",
               TACK_CACHE_DIR=str(tmp / "kernel-cache"), TMPDIR=str(tmp))
    machine = {"tmp": tmp, "env": env, "build": tmp / "build"}
    machine["full"] = _run(machine, "full")
    return machine


def _run(machine: dict[str, Any], name: str, **env: str) -> dict[str, Any]:
    out = machine["tmp"] / name
    child = dict(machine["env"], OUT=str(out), **env)
    child.setdefault("GPU_CHECK_BUILD", str(machine["build"]))
    t0 = time.monotonic()
    done = subprocess.run(["bash", str(SCRIPT)], env=child, capture_output=True,
                          text=True, timeout=600, cwd=ROOT, check=False)
    seconds = time.monotonic() - t0
    report = json.loads((out / "gpu_check.json").read_text())
    with tarfile.open(out / "logs.tgz") as tar:
        logs = {Path(m.name).name: tar.extractfile(m).read().decode()
                for m in tar.getmembers() if m.isfile()}
    return {"rc": done.returncode, "stdout": done.stdout + done.stderr, "out": out,
            "report": report, "steps": {s["name"]: s for s in report["steps"]},
            "logs": logs, "seconds": seconds}


def _statuses(run: dict[str, Any]) -> dict[str, str]:
    return {name: s["status"] for name, s in run["steps"].items()}


def _failures(run: dict[str, Any]) -> str:
    """Each step that failed or timed out, with the end of its log: what a failed
    assertion about the statuses must show (a CI log is all there is to read)."""
    told = []
    for name, step in run["steps"].items():
        if step["status"] in ("fail", "timeout"):
            log = run["logs"].get(f"{name}.log", "(no log)")
            failing = [line for line in log.splitlines()
                       if line.startswith("FAIL") or ".c:" in line]
            told.append(f"--- {name}: {step['status']} after {step['seconds']} s\n"
                        + "\n".join(failing[:20]) + "\n...\n" + log[-3000:])
    return "\n".join(told) or "no step failed"


def test_the_check_passes_on_the_standin(machine):
    run = machine["full"]
    assert run["rc"] == 0, run["stdout"][-6000:]
    assert run["report"]["ok"] is True and run["report"]["complete"] is True
    statuses = _statuses(run)
    assert list(statuses) == PASS[:6] + ABSENT[:3] + ["examples", "vtk-example",
                                                       "sanitizer", "racecheck",
                                                       "benchmarks", "mpi"]
    assert {n: statuses[n] for n in PASS} == dict.fromkeys(PASS, "pass"), \
        f"{statuses}\n{_failures(run)}"
    assert {n: statuses[n] for n in ABSENT} == dict.fromkeys(ABSENT, "absent"), statuses
    assert "compute-sanitizer is not installed" in run["steps"]["sanitizer"]["reason"]


def test_the_check_writes_four_files_and_its_logs_in_one_archive(machine):
    run = machine["full"]
    assert {p.name for p in run["out"].iterdir()} == RESULTS
    assert {f"{n}.log" for n in PASS} <= set(run["logs"])
    assert "GPU check passed" in run["logs"]["gpu_check.log"]
    differential = json.loads((run["out"] / "differential.json").read_text())
    assert differential["mismatches"] == [] and differential["compared"] > 0
    bench = json.loads((run["out"] / "bench_cuda.json").read_text())
    assert bench["smoke"] is True and bench["rows"]


def test_the_c_tests_and_the_conformance_suite_run_on_the_installed_driver(machine):
    logs = machine["full"]["logs"]
    assert "0 failed" in logs["c-tests.log"]
    assert "libcuda.so.1" in logs["conformance.log"]
    # Tack's CUDA tests ran on the driver found as libcuda.so.1, none skipped
    assert "driver API 13000, 1 device(s)" in logs["device.log"]
    assert " passed" in logs["pytest-cuda.log"] and " failed" not in logs["pytest-cuda.log"]
    assert "Python headers: present" in logs["probe.log"]


def test_a_reused_build_is_not_built_again_and_the_budget_holds(machine):
    # 30 s, 15 of them kept for the report: the cheap steps run, the rest are out of time
    run = _run(machine, "reuse", GPU_CHECK_REUSE="1", GPU_CHECK_BUDGET="30")
    assert run["seconds"] < 30, run["stdout"][-4000:]
    assert run["rc"] == 1
    assert run["report"]["complete"] is True and run["report"]["ok"] is False
    assert "reusing the build" in run["logs"]["build.log"]
    assert "ninja: no work to do" in run["logs"]["build.log"]
    assert run["steps"]["build"]["status"] == "pass"
    late = [s for s in run["report"]["steps"] if s["status"] == "not-run"]
    assert late and all(s["reason"].startswith("out of time") for s in late), late
    assert run["steps"]["benchmarks"]["status"] == "not-run"
    assert {p.name for p in run["out"].iterdir()} <= RESULTS


def test_without_python_headers_the_c_side_is_still_checked(machine, tmp_path):
    # An interpreter whose include folder has no Python.h, as on an image without
    # python3-dev: sysconfig is told so before anything asks it.
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sysconfig\n"
        "_paths = sysconfig.get_paths\n"
        "def get_paths(*a, **k):\n"
        "    return dict(_paths(*a, **k), include='/nonexistent/include')\n"
        "sysconfig.get_paths = get_paths\n")
    run = _run(machine, "c-only", PYTHONPATH=str(hide),
               GPU_CHECK_BUILD=str(tmp_path / "build"))
    assert run["rc"] == 1, run["stdout"][-4000:]
    assert "Python headers: missing" in run["logs"]["probe.log"]
    assert not list((tmp_path / "build").glob("_tack*.so"))
    statuses = _statuses(run)
    assert [statuses[n] for n in ("device", "probe", "build", "c-tests", "conformance")] \
        == ["pass"] * 5, f"{statuses}\n{_failures(run)}"
    for name in ("pytest-cuda", "examples", "benchmarks"):
        assert statuses[name] == "not-run"
        assert "no Python headers" in run["steps"][name]["reason"]
    assert run["report"]["ok"] is False
