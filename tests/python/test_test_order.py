"""conftest.py's order: the tests marked slow or long are collected first, in the order
they were found, so that pytest-xdist starts them before the short ones (make test-py
hands tests out in collection order: --dist loadgroup)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# A module with slow and soak tests among plain ones, and one with a long test.
FILES = ["test_cuda_differential.py", "test_kernel_fuzz.py"]


def _collected() -> list[str]:
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                        "-p", "no:cacheprovider", *(str(HERE / f) for f in FILES)],
                       capture_output=True, text=True, cwd=HERE.parents[1], check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return [line for line in r.stdout.splitlines() if "::" in line]


def test_slow_and_long_tests_are_collected_before_the_others():
    ids = _collected()
    first = [
        "test_cuda_differential.py::test_the_kernel_suite_gives_the_same_results_through_the_standin",
        "test_cuda_differential.py::test_the_kernel_suite_gives_the_same_results_running_the_cuda_code",
        "test_kernel_fuzz.py::test_seed_2104_512_reductions_fit_a_level_zero_group",
    ]
    assert [i.split("/")[-1] for i in ids[:3]] == first, ids[:5]
    # the rest keep the order of their files
    rest = [i.split("/")[-1] for i in ids[3:]]
    files = [i.split("::")[0] for i in rest]
    assert files == sorted(files) and len(rest) > 20
