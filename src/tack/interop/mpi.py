"""Tack arrays and MPI (through mpi4py): what the loaded MPI can take directly.

Tack arrays need no wrapper to travel through mpi4py: its upper-case methods take any
object with ``__dlpack__``, so ``comm.Send(a, ...)`` and ``comm.Recv(a, ...)`` pass the
array's own memory to MPI. A host (CPU) array always works. A device array works only
when the MPI library was built to read device memory ("CUDA-aware"); given a device
address, any other MPI reads it as a host address and crashes. ``gpu_aware`` asks the
MPI library that mpi4py loaded, so a program can pick the direct path or stage through a
host array. docs/mpi.md has the rules and the costs.
"""

from __future__ import annotations

import ctypes

import tack

__all__ = ["gpu_aware"]

# The query each MPI exports (MPICH and Open MPI extensions), by Tack backend.
_QUERIES = {
    "cuda": ("MPIX_Query_cuda_support",),
    "hip": ("MPIX_Query_hip_support", "MPIX_Query_rocm_support"),
    "level_zero": ("MPIX_Query_ze_support",),
}


def _loaded_mpi_libraries() -> list[str]:
    """Paths of the MPI libraries mapped into this process (after mpi4py.MPI loads)."""
    paths: list[str] = []
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = path.rsplit("/", 1)[-1]
            if name.startswith("libmpi") and path not in paths:
                paths.append(path)
    return paths


def gpu_aware(device: tack.Device | str | None = None) -> bool:
    """True if the MPI that mpi4py loaded can send and receive ``device``'s memory.

    ``device`` is a Tack device, a device name (``"cuda"``, ``"cuda:1"``; the device
    is not opened, so this can be asked before touching a GPU) or None for Tack's
    default device. The CPU is always supported. For a GPU backend the answer comes
    from the MPI library's own query (``MPIX_Query_cuda_support`` and its siblings),
    which needs MPI initialized, so ``mpi4py.MPI`` is imported here. An MPI without
    the query is taken as not GPU-aware.
    """
    if isinstance(device, str):
        backend = device.split(":", 1)[0]
        if backend not in _QUERIES and backend not in ("cpu", "metal"):
            raise tack.TackValueError(
                f"unknown device {device!r}: expected 'cpu', 'cuda', 'hip', "
                "'level_zero' or 'metal', optionally with ':ordinal'")
    else:
        backend = (device or tack.get_default_device()).backend
    if backend == "cpu":
        return True
    from mpi4py import MPI

    if not MPI.Is_initialized():
        MPI.Init()
    for path in _loaded_mpi_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in _QUERIES.get(backend, ()):
            query = getattr(lib, symbol, None)
            if query is not None:
                query.restype = ctypes.c_int
                return bool(query())
    return False
