"""One parallel float reduction on a CUDA device, checked against NumPy: the kernel
scripts/gpu_check.sh runs under compute-sanitizer --tool racecheck (each block
combines its threads' partials in shared memory, where a missing barrier is a race).

    python tests/python/cuda_reduce_once.py

Exit status: 0 when the sum is exact, 1 when it is wrong, 2 without a CUDA device.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import tack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_kernels_reductions import total


def main() -> int:
    try:
        device = tack.device("cuda")
    except tack.TackError as e:
        print(f"cuda_reduce_once: no CUDA device: {e}", file=sys.stderr)
        return 2
    # Whole numbers below 2**53 in float64: every grouping of the sum is exact, so
    # any difference is a lost or doubled partial, never rounding. 2**20 trips fill
    # many blocks of any launch shape.
    host = np.arange(1 << 20, dtype=np.float64) % 1000.0
    x = tack.array(host, device=device)
    got = total(x)
    want = float(host.sum())
    if got != want:
        print(f"cuda_reduce_once: sum {got!r} on {device}, NumPy {want!r}")
        return 1
    print(f"cuda_reduce_once: sum ok on {device} ({got!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
