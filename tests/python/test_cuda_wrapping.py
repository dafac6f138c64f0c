"""Integer arithmetic of the CUDA modules wraps exactly as on the CPU.

The CPU build compiles with -fwrapv; NVRTC has no such flag and treats a signed
overflow as impossible, so the CUDA emitter spells integer + - * and unary minus in
unsigned arithmetic, and the grid-stride loop counts with an unsigned counter that
never steps past the trip count. These tests prove it three ways: NVRTC's PTX of a
comparison it would otherwise fold, the module run on the host (cuda_emulator.py)
compiled by g++ at -O2 without -fwrapv (where g++ folds the same comparison), and
the same run under -fsanitize=signed-integer-overflow, which reports any signed
overflow that is left.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cuda_emulator import CHECKED, emulate, gxx_available
from test_cuda_emulated import on_cpu, sig

import tack
from tack import _tack
from tack.kernel import generate_cuda

HERE = Path(__file__).resolve().parent
IMAX, IMIN = 2**63 - 1, -(2**63)

needs_gxx = pytest.mark.skipif(not gxx_available(), reason="no g++")

# A module built with CHECKED reports through the UBSan runtime of the process that
# loads it: under `make sanitize-py` that runtime is preloaded with halt_on_error=1, so
# the report these tests read would end the whole run. `make test-py` runs them.
in_process_ubsan = pytest.mark.skipif(
    "libubsan" in os.environ.get("LD_PRELOAD", ""),
    reason="a UBSan runtime with halt_on_error is preloaded (make sanitize-py)")


def _nvrtc() -> bool:
    try:
        _tack._nvrtc_compile('extern "C" __global__ void k() {}', 90, ptx=True)
    except tack.TackError:
        return False
    return True


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cuda_wrapping")


@tack.kernel
def wraps_past(a, s, out):
    for i in range(a.shape[0]):
        x = a[i]
        out[i] = (x + s) <= x


def test_nvrtc_keeps_a_comparison_of_a_wrapped_sum(tmp_path, monkeypatch):
    # (x + s) <= x folds to s <= 0 when x + s cannot overflow: then the PTX never
    # loads x. Wrapping arithmetic keeps the load and the sum.
    if not _nvrtc():
        pytest.skip("no NVRTC")
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path))
    ck = generate_cuda(wraps_past, (("array", "int64", 1), "int", ("array", "bool", 1)))
    ptx = _tack._nvrtc_compile(ck.source, 90, ptx=True).decode()
    assert re.search(r"\bld\.global(\.nc)?\.[us]64\b", ptx), ptx[-3000:]


@needs_gxx
def test_the_module_on_the_host_wraps_where_gxx_would_fold(work):
    a = np.array([IMAX, 5, -3, IMAX - 1], np.int64)
    args = [a, 1, np.zeros(4, np.bool_)]
    want, _ = on_cpu(wraps_past, [a, 1, np.zeros(4, np.bool_)])
    assert want[1].tolist() == [True, False, False, False]  # the CPU wraps
    emulate(generate_cuda(wraps_past, sig(*args)), args, work, flags=("-O2",))
    np.testing.assert_array_equal(args[2], want[1])


@tack.kernel
def counters(a, out, n):
    for i in range(a.shape[0]):
        t = a[i]
        for _j in range(n):
            t += 7_000_000_000_000_000_000
            t *= 3
            t -= a[i] * 5
        k = a[i]
        while k != a[i] + 3:  # a loop counter stepping past INT64_MAX
            k += 1
        out[i] = t - k


@tack.kernel
def negate_and_index(a, m, out):
    for i in range(a.shape[0]):
        out[(i + m) - m, 0] = -a[i]
        out[i, 1] = a[i] - m - 1
        out[i, 2] = a[i] * (m + 1) + i * m


@tack.kernel
def wrapped_total(a):
    s = 0
    p = 1
    for i in range(a.shape[0]):
        s += a[i]
        p *= a[i] | 1
    return s + p


def _wrap(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


@needs_gxx
@in_process_ubsan
@pytest.mark.parametrize("grid,block", [(1, 1), (3, 4)])
def test_no_signed_overflow_is_left_in_the_module(work, capfd, grid, block):
    big = np.array([IMAX - 1, IMIN, IMAX, -7, IMIN + 1], np.int64)
    cases = [(counters, [big, np.zeros(5, np.int64), 4]),
             (negate_and_index, [big, IMAX, np.zeros((5, 3), np.int64)]),
             (wrapped_total, [np.array([IMAX, IMAX, 5, IMIN, 3] * 40, np.int64)])]
    for k, args in cases:
        want, result = on_cpu(k, [a.copy() if isinstance(a, np.ndarray) else a
                                  for a in args])
        ck = generate_cuda(k, sig(*args))
        rec = emulate(ck, args, work, grid, block, flags=CHECKED)
        got = [a for a in args if isinstance(a, np.ndarray)]
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        if result is not None:
            assert rec.result_i == result
    # and the CPU's answer is Python's, wrapped to int64
    assert result == _wrap(wrapped_total.__wrapped__(args[0].astype(object)))
    err = capfd.readouterr().err
    assert "runtime error" not in err, err[-3000:]


@needs_gxx
@in_process_ubsan
def test_the_unfixed_spelling_is_reported_by_the_sanitizer(work, capfd):
    # The check above can fail: the same run with the module's wrapping helpers
    # replaced by plain operators reports the overflow.
    args = [np.array([IMAX, IMIN], np.int64), 1, np.zeros(2, np.bool_)]
    ck = generate_cuda(wraps_past, sig(*args))
    plain = re.sub(r"TK_INLINE int64_t tk_add\(int64_t a, int64_t b\) \{[^}]*\}",
                   "TK_INLINE int64_t tk_add(int64_t a, int64_t b) { return a + b; }",
                   ck.source)
    assert plain != ck.source
    ck.source = plain
    emulate(ck, args, work, flags=CHECKED)
    assert "signed integer overflow" in capfd.readouterr().err


@tack.kernel(debug=True)
def last_trips(out, n):
    for i in range(n):
        if i >= n - 4:
            out[i - (n - 4)] = i


GRID, BLOCK = 2**31 - 1, 1024  # the largest grid of 1024-thread blocks


@needs_gxx
def test_the_grid_stride_counter_stops_at_a_trip_count_near_int64_max(work):
    # Thread k0 of the largest grid runs trips k0, k0 + G, ... (G = GRID * BLOCK,
    # about 2**41): some four million of them, the last one n - 1, after which a
    # signed counter would step past INT64_MAX. A child process, since a counter
    # that wraps never ends.
    n = IMAX
    k0 = (n - 1) % (GRID * BLOCK)
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        import numpy as np
        from cuda_emulator import CHECKED, Launch, build
        from tack.kernel import generate_cuda
        import test_cuda_wrapping as t
        out = np.zeros(4, np.int64)
        ck = generate_cuda(t.last_trips, (("array", "int64", 1), "int"), debug=True)
        lib = build(ck, Path({str(work)!r}), CHECKED)
        rec = Launch(ck, [out, {n}], {GRID}, {BLOCK}).one_thread(
            lib, {k0 // BLOCK}, {k0 % BLOCK})
        print(rec.failed, out[3])
    """)
    r = subprocess.run([sys.executable, "-c", script], cwd=HERE, capture_output=True,
                       text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["0", str(n - 1)]
    assert "runtime error" not in r.stderr, r.stderr[-3000:]


def test_the_cpu_source_keeps_plain_operators():
    # -fwrapv makes them wrap on the CPU: its C stays as it was.
    from tack.kernel import generate_source
    src = generate_source(wraps_past, (("array", "int64", 1), "int", ("array", "bool", 1)))
    assert "tk_add(" not in src and "(v_x + v_s) <= v_x" in src
