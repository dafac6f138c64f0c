"""scripts/gpu_check.sh: without a visible CUDA device it fails at once, and says so.

The script's real work (build, conformance on the real driver, pytest -m cuda, the
sanitizer, the benchmarks) needs a GPU; what can be checked anywhere is that it never
passes, or skips its way to a pass, where there is no device.
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_check.sh"


def _run(tmp_path: Path, path_prefix: str | None = None) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        OUT=str(tmp_path / "out"),
        GPU_CHECK_BUILD=str(tmp_path / "build"),
        PYTHON=sys.executable,
    )
    if path_prefix:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env['PATH']}"
    return subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120
    )


def _check_failed_at_device(tmp_path: Path, result: subprocess.CompletedProcess) -> None:
    assert result.returncode != 0
    assert "no CUDA device" in result.stdout
    report = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert report["ok"] is False
    assert [s["name"] for s in report["steps"]] == ["device"]
    assert report["steps"][0]["status"] == "fail"
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"gpu_check.json", "logs.tgz"}
    with tarfile.open(tmp_path / "out" / "logs.tgz") as tar:
        log = tar.extractfile("logs/gpu_check.log").read().decode()
    assert "no CUDA device" in log
    assert not (tmp_path / "build").exists()  # nothing was built


def _fake_nvidia_smi(tmp_path: Path, says: str, status: int) -> str:
    """A folder holding an nvidia-smi that prints `says` and exits with `status`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\necho '{says}'\nexit {status}\n")
    fake.chmod(0o755)
    return str(bin_dir)


def test_fails_when_nvidia_smi_lists_no_gpu(tmp_path):
    # What nvidia-smi prints on a machine whose driver sees no GPU.
    _check_failed_at_device(tmp_path,
                            _run(tmp_path, _fake_nvidia_smi(tmp_path, "No devices were found", 6)))


@pytest.mark.skipif(
    shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi"
)
def test_fails_on_a_machine_without_nvidia_tools(tmp_path):
    _check_failed_at_device(tmp_path, _run(tmp_path))


# A CUDA test, run by pytest in a child process with this directory's conftest.
CUDA_TEST = """
import pytest

@pytest.mark.cuda
def test_needs_a_gpu():
    pass
"""


def _pytest_cuda(tmp_path: Path, require: bool) -> subprocess.CompletedProcess:
    test = tmp_path / "test_marked.py"
    test.write_text(CUDA_TEST)
    # This directory first (for the conftest), then whatever made tack importable here
    # (the sanitized run stages the package on PYTHONPATH).
    paths = [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    # A driver path that cannot load: no CUDA device, on any machine.
    env["TACK_CUDA_DRIVER"] = str(tmp_path / "no-such-driver.so")
    env.pop("TACK_REQUIRE_CUDA", None)
    if require:
        env["TACK_REQUIRE_CUDA"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), str(test)],
        env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )


def test_cuda_tests_skip_without_a_device(tmp_path):
    result = _pytest_cuda(tmp_path, require=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout


def test_cuda_tests_fail_without_a_device_when_required(tmp_path):
    # What gpu_check.sh sets: a CUDA test that cannot run is an error, never a skip.
    result = _pytest_cuda(tmp_path, require=True)
    assert result.returncode != 0
    assert "TACK_REQUIRE_CUDA=1" in result.stdout + result.stderr
    assert "skipped" not in result.stdout


def test_fails_when_nvidia_smi_lists_a_gpu_the_driver_cannot_open(tmp_path):
    # nvidia-smi is not the proof: the driver library must load and count a device.
    if _libcuda_counts_a_device():
        pytest.skip("this machine's libcuda.so.1 sees a GPU")
    fake = _fake_nvidia_smi(tmp_path, "GPU 0: NVIDIA H200 (UUID: GPU-0)", 0)
    _check_failed_at_device(tmp_path, _run(tmp_path, fake))


def _libcuda_counts_a_device() -> bool:
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 \
        and count.value > 0


def test_the_racecheck_reduction_runs_through_the_standin(tmp_path):
    # the script racecheck watches: the sum exact on the device
    from cuda_helpers import standin_for_kernels

    script = SCRIPT.parents[1] / "tests" / "python" / "cuda_reduce_once.py"
    env = dict(os.environ, TACK_CUDA_DRIVER=standin_for_kernels(),
               TACK_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cuda_reduce_once: sum ok on cuda:0" in done.stdout
    missing = dict(env, TACK_CUDA_DRIVER=str(tmp_path / "no-libcuda.so"))
    done = subprocess.run([sys.executable, str(script)], env=missing, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and "no CUDA device" in done.stderr


# ---- Tack's own tests: what memcheck runs ---------------------------------------------

PEER_NAMES = ("torch", "cupy", "jax")


def _own_tests_expression() -> str:
    line = next(x for x in SCRIPT.read_text().splitlines() if x.startswith("OWN_TESTS="))
    return line.split("=", 1)[1].strip('"')


def _uses_a_peer(path: Path, function: str) -> list[str]:
    """The peers a test function imports or takes as a fixture."""
    import ast

    tree = ast.parse(path.read_text())
    node = next(n for n in ast.walk(tree)
                if isinstance(n, ast.FunctionDef) and n.name == function)
    used = {a.arg for a in node.args.args} & set(PEER_NAMES)
    for inner in ast.walk(node):
        if isinstance(inner, ast.Import):
            used |= {a.name.split(".")[0] for a in inner.names} & set(PEER_NAMES)
        elif isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            used |= {inner.value.split(".")[0]} & set(PEER_NAMES)
    return sorted(used)


def test_tacks_own_cuda_tests_use_no_peer():
    # gpu_check.sh runs these under memcheck, which must watch Tack's processes only:
    # a test that imports torch, CuPy or JAX carries that peer's marker instead.
    here = Path(__file__).parent
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
         "-m", _own_tests_expression(), "--ignore", str(here / "test_mpi_buffers.py"),
         str(here)], capture_output=True, text=True, timeout=300, cwd=here.parents[1],
        check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ids = [x for x in done.stdout.splitlines() if "::" in x]
    assert any("test_cuda_differential.py" in x for x in ids), ids
    offenders = {}
    for node_id in ids:
        file, function = node_id.split("::")[:2]
        peers = _uses_a_peer(here.parents[1] / file, function.split("[")[0])
        if peers:
            offenders[node_id] = peers
    assert offenders == {}
