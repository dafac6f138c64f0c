"""Rank script: rank 1 never reaches the barrier (test_mpi_buffers.py checks that a hung
job is killed at its timeout and fails instead of stalling the test run)."""

import time

from mpi4py import MPI

print(f"rank {MPI.COMM_WORLD.rank} started", flush=True)
if MPI.COMM_WORLD.rank == 1:
    time.sleep(3600)
MPI.COMM_WORLD.Barrier()
