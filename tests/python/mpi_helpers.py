"""Launching MPI jobs from tests: mpiexec as a subprocess, bounded in time.

A rank that hangs must fail the test run, not stall it. mpiexec starts in a new process
group, and every process of the job carries a token in its environment; on a timeout the
group is killed, then any rank still carrying the token (MPICH puts each rank in a
session of its own), and the test fails with what the ranks printed so far.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

RANKS = Path(__file__).resolve().parent / "mpi_ranks"


def mpiexec() -> str:
    """The mpiexec beside this interpreter (the one mpi4py loads), else the PATH's."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("no mpiexec: run `make setup`, which installs MPICH's wheel")
    return found


@dataclass
class Job:
    returncode: int | None  # None: killed after the timeout
    stdout: str
    stderr: str
    token: str  # TACK_MPI_JOB in the environment of each of its processes

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def explain(self) -> str:
        state = "timed out" if self.timed_out else f"exit {self.returncode}"
        return f"mpiexec {state}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def run_mpi(script: str | Path, nranks: int, args: list[str] | None = None, *,
            timeout: float, env: dict[str, str] | None = None,
            cwd: str | Path | None = None) -> Job:
    """Runs `mpiexec -n nranks python -m mpi4py script args...`.

    `python -m mpi4py` aborts the whole job when one rank raises, so a failed
    assertion on one rank does not leave the others waiting in a collective.
    """
    token = uuid.uuid4().hex
    cmd = [mpiexec(), "-n", str(nranks), sys.executable, "-m", "mpi4py", str(script),
           *(args or [])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {}), TACK_MPI_JOB=token), cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return Job(proc.returncode, out, err, token)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _kill_marked(token)
        out, err = proc.communicate()
        return Job(None, out, err, token)


def processes_of(token: str) -> list[int]:
    """The live processes whose environment holds TACK_MPI_JOB=token."""
    marker = f"TACK_MPI_JOB={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue  # gone already, or not ours to read
    return found


def _kill_marked(token: str) -> None:
    for pid in processes_of(token):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
