"""Tack arrays as MPI buffers through mpi4py, with real MPI jobs (mpiexec -n 2).

One job runs every case of mpi_ranks/buffers.py on both ranks; each case here checks
that rank 0 reported it passed everywhere (an assertion on either rank aborts the job,
so a missing `ok` line names the case that failed). The jobs run under a timeout: a
hung rank fails the test instead of stalling the run.
"""

from __future__ import annotations

import ast
import time
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from mpi_helpers import RANKS, Job, processes_of, run_mpi

import tack

SCRIPT = RANKS / "buffers.py"
# One worker runs the module (make test-py: --dist loadgroup), so each job runs
# once, not once per worker.
pytestmark = pytest.mark.xdist_group("mpi_buffers")


def case_names() -> list[str]:
    """The functions of the rank script decorated with @case, in order."""
    tree = ast.parse(SCRIPT.read_text())
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and any(isinstance(d, ast.Name) and d.id == "case" for d in node.decorator_list)]


@cache
def job(device: str, cache_dir: str) -> Job:
    return run_mpi(SCRIPT, 2, ["--device", device], timeout=240,
                   env={"TACK_CACHE_DIR": cache_dir})


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("tack-cache"))


def check_case(device: str, name: str, cache_dir: str) -> None:
    result = job(device, cache_dir)
    assert not result.timed_out, result.explain()
    assert f"ok {name}\n" in result.stdout, result.explain()
    assert result.returncode == 0, result.explain()


def test_the_rank_script_has_cases():
    assert len(case_names()) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("name", case_names())
def test_tack_arrays_are_mpi_buffers_on_the_cpu(name: str, cache_dir: str):
    check_case("cpu", name, cache_dir)


@pytest.mark.slow
@pytest.mark.cuda
@pytest.mark.parametrize("name", case_names())
def test_tack_arrays_are_mpi_buffers_on_cuda(name: str, cache_dir: str):
    """Device arrays handed to MPI need a CUDA-aware MPI as well as a GPU. With
    another MPI (the PyPI MPICH wheel is one) only the staged case runs, and the cases
    that pass device memory to MPI skip, as the rank script reports."""
    result = job("cuda", cache_dir)
    if f"skip {name}:" in result.stdout:
        pytest.skip("the MPI that mpi4py loaded is not CUDA-aware")
    check_case("cuda", name, cache_dir)


@pytest.mark.slow
def test_a_hung_rank_fails_at_the_timeout_and_leaves_no_process(tmp_path: Path):
    start = time.monotonic()
    result = run_mpi(RANKS / "hang.py", 2, timeout=8)
    assert result.timed_out
    assert time.monotonic() - start < 60
    assert "rank 0 started" in result.stdout  # it did start, then hung
    deadline = time.monotonic() + 10
    while processes_of(result.token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_of(result.token) == []


@pytest.mark.slow
def test_mpi4py_reaches_the_array_through_dlpack_not_the_buffer_protocol():
    """In process (MPI's singleton mode): mpi4py's buffer over a Tack array is the
    array's own memory, held by a DLPack capsule; Tack exports no buffer protocol, so
    np.asarray(a) stays a copy."""
    from mpi4py import MPI  # initializes MPI in this process: imported only here

    a = tack.array(np.arange(6, dtype=np.float32))
    with pytest.raises(TypeError):
        memoryview(a)
    buf = MPI.buffer(a)
    assert buf.address == np.from_dlpack(a).ctypes.data
    assert buf.nbytes == a.nbytes and not buf.readonly
    assert type(buf.obj).__name__ == "PyCapsule"
    ro = tack.array_from_ptr(np.zeros(4, np.float32), (4,), tack.f32)
    assert MPI.buffer(ro).readonly
    with pytest.raises(BufferError):
        MPI.buffer.frombuffer(ro, readonly=False)


@pytest.mark.slow
def test_gpu_aware_asks_the_mpi_that_mpi4py_loaded():
    from mpi4py import MPI  # initializes MPI in this process: imported only here

    from tack.interop.mpi import _loaded_mpi_libraries, gpu_aware

    assert gpu_aware() and gpu_aware("cpu") and gpu_aware(tack.device("cpu"))
    assert any("libmpi" in path for path in _loaded_mpi_libraries())
    if "pypi.org/p/mpich" in MPI.Get_library_version():
        # The MPICH wheel that `make setup` installs is built without GPU support.
        assert gpu_aware("cuda") is False and gpu_aware("hip:1") is False
    with pytest.raises(ValueError):
        gpu_aware("cude")
