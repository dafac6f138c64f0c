"""examples/mpi_heat.py under mpiexec: 2 ranks, and 4 oversubscribed on a small machine.

The example checks itself against its single-process run; here its .vti output is read
back with VTK's reader and compared with a NumPy implementation of the same scheme,
and the 2- and 4-rank fields must be the same bits.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from mpi_helpers import Job, run_mpi

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mpi_heat.py"
SHAPE = (30, 20, 24)  # z, y, x
STEPS = 12


@cache
def job(nranks: int, workdir: str) -> Job:
    nz, ny, nx = SHAPE
    return run_mpi(EXAMPLE, nranks,
                   ["--nz", str(nz), "--ny", str(ny), "--nx", str(nx),
                    "--steps", str(STEPS), "--output", f"heat{nranks}.vti"],
                   timeout=300, cwd=workdir,
                   env={"TACK_CACHE_DIR": str(Path(workdir) / "cache")})


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("mpi-heat"))


def read_vti(path: Path) -> np.ndarray:
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLImageDataReader

    reader = vtkXMLImageDataReader(file_name=str(path))
    reader.Update()
    image = reader.GetOutput()
    nx, ny, nz = image.GetDimensions()
    values = image.GetPointData().GetArray("temperature")
    assert values is not None and values.GetNumberOfComponents() == 1
    return vtk_to_numpy(values).reshape(nz, ny, nx)


def numpy_heat(shape: tuple[int, int, int], steps: int) -> np.ndarray:
    nz, ny, nx = shape
    z, y, x = np.mgrid[:nz, :ny, :nx]

    def middle(i, n):
        return (3 * i >= n) & (3 * i < 2 * n)

    hot = (z == 0) | (middle(z, nz) & middle(y, ny) & middle(x, nx))
    u = np.where(hot, 1.0, 0.0).astype(np.float32)
    for _ in range(steps):
        c = u[1:-1, 1:-1, 1:-1]
        lap = (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1]
               + u[1:-1, 2:, 1:-1] + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] - 6.0 * c)
        nxt = u.copy()
        nxt[1:-1, 1:-1, 1:-1] = c + 0.125 * lap
        u = nxt
    return u


@pytest.mark.slow
@pytest.mark.parametrize("nranks", [2, 4])
def test_the_example_equals_the_single_process_run_and_writes_vtk(nranks: int,
                                                                  workdir: str):
    result = job(nranks, workdir)
    assert not result.timed_out, result.explain()
    assert result.returncode == 0, result.explain()
    assert f"MPI heat: {nranks} rank(s)" in result.stdout
    assert "check passed (bit-for-bit equal to the single-process run)" in result.stdout
    field = read_vti(Path(workdir) / f"heat{nranks}.vti")
    assert field.shape == SHAPE
    expected = numpy_heat(SHAPE, STEPS)
    assert not np.array_equal(expected, numpy_heat(SHAPE, 0))  # heat did move
    np.testing.assert_allclose(field, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_two_and_four_ranks_give_the_same_bits(workdir: str):
    fields = []
    for nranks in (2, 4):
        result = job(nranks, workdir)
        assert result.returncode == 0, result.explain()
        fields.append(read_vti(Path(workdir) / f"heat{nranks}.vti"))
    assert np.array_equal(fields[0].view(np.uint32), fields[1].view(np.uint32))
