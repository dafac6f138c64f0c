"""Kernels in the child of fork() (multiprocessing's fork start method): a child
forked while another thread compiles must compile and run parallel launches of its
own. A regression hangs the child, so everything runs in a subprocess with a
deadline, in its own session so a hung grandchild is killed with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import multiprocessing
    import os
    import sys
    import threading
    import time
    import warnings

    import numpy as np

    import tack

    warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads
    marker, slow_cc, real_cc = sys.argv[1:4]
    N = 1 << 20

    @tack.kernel
    def fill(out, v):
        for i in range(out.shape[0]):
            out[i] = v

    a = tack.zeros(N)
    fill(a, 1.0)  # the pool runs in the parent before the fork
    assert tack._tack._kernel_stats()["parallel_launches"] >= 1

    os.environ["CC"] = slow_cc

    @tack.kernel
    def slow(out):
        for i in range(out.shape[0]):
            out[i] = 3.0

    t = threading.Thread(target=slow, args=(tack.zeros(8),))
    t.start()
    deadline = time.monotonic() + 60
    while not os.path.exists(marker):  # the compiler runs: the build holds its lock
        assert time.monotonic() < deadline, "the slow compiler never started"
        time.sleep(0.01)

    def child():
        os.environ["CC"] = real_cc

        @tack.kernel
        def twice(out):
            for i in range(out.shape[0]):
                out[i] = float(i) * 2.0

        before = tack._tack._kernel_stats()["parallel_launches"]
        b = tack.zeros(N)  # allocates
        twice(b)  # compiles, then a parallel launch
        fill(a, 5.0)  # the parent's kernel, also in parallel
        np.testing.assert_array_equal(b.numpy(), np.arange(N) * 2.0)
        np.testing.assert_array_equal(a.numpy(), np.full(N, 5.0))
        assert tack._tack._kernel_stats()["parallel_launches"] >= before + 2

    ctx = multiprocessing.get_context("fork")
    p = ctx.Process(target=child)
    p.start()
    p.join()
    t.join()
    np.testing.assert_array_equal(a.numpy(), np.full(N, 1.0))  # the child's own copy
    sys.exit(p.exitcode)
    """
)


def run_with_deadline(args: list[str], env: dict[str, str], seconds: float):
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"hung (killed after {seconds} s):\n{err}") from None
    return proc.returncode, out, err


def test_child_forked_during_a_compile_compiles_and_launches(tmp_path: Path):
    marker = tmp_path / "started"
    slow_cc = tmp_path / "slow-cc"
    real_cc = os.environ.get("CC") or "cc"
    slow_cc.write_text(f"#!/bin/sh\ntouch '{marker}'\nsleep 3\nexec {real_cc} \"$@\"\n")
    slow_cc.chmod(0o755)
    script = tmp_path / "fork_compile.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"), TACK_NUM_THREADS="4")
    rc, _, err = run_with_deadline(
        [sys.executable, str(script), str(marker), str(slow_cc), real_cc], env, 60)
    assert rc == 0, err
