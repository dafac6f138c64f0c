"""Several kernels and signatures loaded from the disk cache in one process each run
their own code (each loaded object is a distinct library)."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import tack

    @tack.kernel
    def fill_one(out):
        for i in range(out.shape[0]):
            out[i] = 1.0

    @tack.kernel
    def fill_two(out):
        for i in range(out.shape[0]):
            out[i] = 2.0

    @tack.kernel
    def fill_indices(out):
        for i in range(out.shape[0]):
            out[i] = float(i)

    a = tack.zeros(4)
    fill_one(a)
    b = tack.zeros(4)
    fill_two(b)
    c = tack.zeros(4, dtype=tack.f32)
    fill_indices(c)
    d = tack.zeros(4, dtype=tack.f64)
    fill_indices(d)
    np.testing.assert_array_equal(a.numpy(), [1, 1, 1, 1])
    np.testing.assert_array_equal(b.numpy(), [2, 2, 2, 2])
    np.testing.assert_array_equal(c.numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(d.numpy(), [0, 1, 2, 3])
    stats = tack._tack._kernel_stats()
    print(stats["compiles"], stats["disk_hits"])
    """
)


def test_kernels_from_the_disk_cache_run_their_own_code(tmp_path: Path):
    script = tmp_path / "kernels_two.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"))
    counts = []
    for _ in range(2):
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                             text=True, timeout=120, check=False)
        assert out.returncode == 0, out.stderr
        counts.append(tuple(int(x) for x in out.stdout.split()))
    assert counts[0] == (4, 0)  # the first process compiles all four
    assert counts[1] == (0, 4)  # the second loads all four from disk
