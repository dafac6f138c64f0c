"""Streaming stores (tack/kernel/stream.py, docs/kernels.md "Streaming stores"): an
inner loop that writes a row of a large array, one element per trip, runs in the
restrict body as plain trips up to a line boundary, strips and lines computed into
a buffer and written with non-temporal stores, and plain trips for the rest. Every
result is compared with the plain loop's (streaming off) and with NumPy or Python,
with the path forced on small arrays by TACK_STREAM_MIN_BYTES=0."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kernel_helpers import private_kernel_cache  # noqa: F401  (autouse fixture)

import tack
from tack.kernel import generate_cuda, generate_source, stream

STREAMED = "tk_stream_line(tk_nt_dst"  # the block loops' store, in a source
ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "float16", "float32", "float64"]
# row lengths across the parts of a streamed loop: under one line, one line and
# either side, a strip (1024 bytes) and either side, several strips and a tail
WIDTHS = [1, 7, 8, 9, 15, 17, 63, 64, 65, 127, 129, 255, 256, 257, 300, 1030, 2049]

KERNELS = '''
import tack


@tack.kernel
def neighbours(x, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = x[i, j] + x[i, j + 1]


@tack.kernel
def neighbours_bool(x, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = x[i, j] ^ x[i, j + 1]


@tack.kernel
def jacobi(u, out):
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


@tack.kernel
def with_locals(x, out, scale):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            c = i * x.shape[1] + j
            t = x[i, j] * scale
            out[i, j] = t - x[i, j + 1] + c


@tack.kernel
def one_row(x, out):
    for i in range(1):
        for j in range(out.shape[0]):
            out[j] = x[j] * 0.5 + x[j + 1]


@tack.kernel
def reads_what_it_stores(x, out):
    for i in range(out.shape[0]):
        for j in range(1, out.shape[1]):
            out[i, j] = out[i, j - 1] + x[i, j]


@tack.kernel
def every_other(x, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1] // 2):
            out[i, 2 * j] = x[i, j]


@tack.kernel
def down_a_column(x, out):
    for i in range(out.shape[1]):
        for j in range(out.shape[0]):
            out[j, i] = x[j, i] + 1.0


@tack.kernel
def with_helpers(x, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = int(x[i, j] // 3.0) % 1000


@tack.func
def twice(v):
    return 2.0 * v


@tack.kernel
def with_a_call(x, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = twice(x[i, j])


@tack.kernel
def with_a_branch(x, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            if x[i, j] > 0.0:
                out[i, j] = x[i, j]


@tack.kernel
def two_stores(x, out, other):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            other[i, j] = x[i, j]
            out[i, j] = x[i, j] + 1.0


@tack.kernel
def carried_index(x, out):
    for i in range(out.shape[0]):
        k = 0
        for j in range(out.shape[1]):
            out[i, k] = x[i, j]
            k = j + 1
'''


_loaded = 0


def load_kernels(folder: Path) -> Any:
    """The kernels above as new objects, from a file of their own (the front end
    reads source): their specializations compile anew, so the streaming threshold
    in the environment now reaches their source."""
    global _loaded
    _loaded += 1
    path = folder / f"streaming_kernels_{_loaded}.py"
    path.write_text(KERNELS, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"streaming_kernels_{_loaded}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return load_kernels(tmp_path_factory.mktemp("streaming"))


def restrict_part(src: str) -> str:
    return src[src.index("static void tk_body_restrict("):]


def values(dtype: str, shape: tuple[int, ...], seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(int(info.min), int(info.max), shape, dtype=dt, endpoint=True)
    return (rng.standard_normal(shape) * 1000).astype(dt)


def run(k: Any, *arrays: np.ndarray, scalars: tuple[Any, ...] = ()) -> list[np.ndarray]:
    """k on copies of arrays (Tack's own memory); the arrays after the call."""
    tk = [tack.array(a.copy()) for a in arrays]
    k(*tk, *scalars)
    return [a.numpy() for a in tk]


def source_of(k: Any, args: tuple[Any, ...]) -> str:
    return generate_source(k, args, debug=False)


def signature(arrays: list[np.ndarray], scalars: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    return (*(("array", a.dtype.name, a.ndim) for a in arrays),
            *("float" for _ in scalars))


class Builds:
    """Kernel name built twice, from new objects: with streaming off (a threshold no
    array reaches, so the plain trips alone run) and forced on. The threshold is read
    when a specialization compiles, at its first call, so each build's first call
    runs under its own setting; later calls reuse the builds."""

    LIMITS = (str(2**64 - 1), "0")

    def __init__(self, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch,
                 streams: bool = True) -> None:
        self.kernels = [getattr(load_kernels(tmp_path), name) for _ in self.LIMITS]
        self.monkeypatch, self.streams, self.checked = monkeypatch, streams, False

    def run(self, arrays: list[np.ndarray], scalars: tuple[Any, ...] = ()) -> tuple[
            list[np.ndarray], list[np.ndarray]]:
        """The arrays after each build's call: (plain, streamed). The first call
        checks that the source has the streamed loop under each threshold (or has
        none, streams=False)."""
        out = []
        for limit, k in zip(self.LIMITS, self.kernels, strict=True):
            self.monkeypatch.setenv(stream.ENV, limit)
            if not self.checked:
                src = restrict_part(source_of(k, signature(arrays, scalars)))
                assert (STREAMED in src and f"UINT64_C({limit}))" in src) == self.streams
            out.append(run(k, *arrays, scalars=scalars))
        self.checked = True
        return out[0], out[1]


def plain_and_streamed(tmp_path: Path, name: str, arrays: list[np.ndarray],
                       monkeypatch: pytest.MonkeyPatch, scalars: tuple[Any, ...] = ()
                       ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """One call of kernel name's two builds (Builds)."""
    return Builds(tmp_path, name, monkeypatch).run(arrays, scalars)


ARR2 = ("array", "float64", 2)


# ---- which loops stream -----------------------------------------------------------


def test_the_restrict_body_streams_from_the_cache_size(kernels: Any,
                                                       monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(stream.ENV, raising=False)
    src = source_of(kernels.jacobi, (ARR2, ARR2))
    body, restricted = src.split("static void tk_body_restrict(")
    assert STREAMED not in body  # the ordinary body (overlapping arguments) is plain
    assert STREAMED in restricted and "tk_stream_fence();" in restricted
    limit = stream.last_level_cache_bytes()
    assert limit > 0 and f"UINT64_C({limit})" in restricted
    monkeypatch.setenv(stream.ENV, "0")
    assert "UINT64_C(0)" in restrict_part(source_of(kernels.jacobi, (ARR2, ARR2)))
    monkeypatch.setenv(stream.ENV, "4096")
    assert "UINT64_C(4096)" in restrict_part(source_of(kernels.jacobi, (ARR2, ARR2)))
    monkeypatch.setenv(stream.ENV, str(10**30))  # more than a uint64: never
    assert f"UINT64_C({2**64 - 1})" in restrict_part(source_of(kernels.jacobi, (ARR2, ARR2)))


@pytest.mark.parametrize("value", ["lots", "-1", "1.5", "0x10"])
def test_a_threshold_that_is_not_a_count_is_refused(kernels: Any, value: str,
                                                    monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(stream.ENV, value)
    with pytest.raises(ValueError, match="TACK_STREAM_MIN_BYTES.*count of bytes"):
        source_of(kernels.jacobi, (ARR2, ARR2))


@pytest.mark.parametrize("name", ["neighbours", "jacobi", "with_locals", "one_row",
                                  "with_helpers"])
def test_unit_stride_row_loops_stream(kernels: Any, name: str,
                                      monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(stream.ENV, "0")
    k = getattr(kernels, name)
    args: tuple[Any, ...] = (ARR2, ARR2)
    if name == "with_locals":
        args = (ARR2, ARR2, "float")
    elif name == "one_row":
        args = (("array", "float64", 1),) * 2
    assert STREAMED in source_of(k, args)


@pytest.mark.parametrize("name", ["reads_what_it_stores", "every_other", "down_a_column",
                                  "with_a_call", "with_a_branch",
                                  "two_stores", "carried_index"])
def test_loops_that_would_not_be_the_same_computation_stay_plain(
        kernels: Any, name: str, monkeypatch: pytest.MonkeyPatch):
    """A loop streams only where computing a line's values before storing them
    changes nothing: not where it reads what it stores, stores with another stride,
    calls a func, branches, stores twice, or indexes with a value the last trip
    left (stream.py)."""
    monkeypatch.setenv(stream.ENV, "0")
    k = getattr(kernels, name)
    args: tuple[Any, ...] = (ARR2, ARR2, ARR2) if name == "two_stores" else (ARR2, ARR2)
    assert STREAMED not in source_of(k, args)


def test_debug_mode_and_gpu_sources_do_not_stream(kernels: Any,
                                                  monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(stream.ENV, "0")
    assert STREAMED not in generate_source(kernels.jacobi, (ARR2, ARR2), debug=True)
    assert "tk_stream" not in generate_cuda(kernels.jacobi, (ARR2, ARR2), False).source


# ---- what streamed loops compute -------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_streams_the_plain_loops_result(tmp_path: Path, dtype: str,
                                                    monkeypatch: pytest.MonkeyPatch):
    """Rows of every length across the parts of a streamed loop, in one array whose
    rows start at every offset from a line boundary (odd widths)."""
    builds = Builds(tmp_path, "neighbours_bool" if dtype == "bool" else "neighbours",
                    monkeypatch)
    for width in WIDTHS:
        rows = max(2, 4096 // width)
        x, out = values(dtype, (rows, width + 1)), values(dtype, (rows, width), seed=4)
        plain, streamed = builds.run([x, out])
        np.testing.assert_array_equal(streamed[1], plain[1], err_msg=f"width {width}")
        np.testing.assert_array_equal(streamed[0], x)
        if dtype == "bool":
            want = x[:, :-1] ^ x[:, 1:]
        elif dtype == "float16":  # read as float32, the sum stored rounded (one rounding)
            want = (x[:, :-1].astype(np.float32) + x[:, 1:]).astype(np.float16)
        elif dtype.startswith("float"):
            want = x[:, :-1] + x[:, 1:]
        else:  # int64 arithmetic, stored wrapping to the element type
            want = (x[:, :-1].astype(np.int64) + x[:, 1:].astype(np.int64)).astype(dtype)
        np.testing.assert_array_equal(streamed[1], want, err_msg=f"width {width}")


@pytest.mark.parametrize("shape", [(3, 3), (5, 17), (64, 64), (33, 1031), (9, 4099)])
def test_jacobi_streams_numpys_result(tmp_path: Path, shape: tuple[int, int],
                                      monkeypatch: pytest.MonkeyPatch):
    u, out = values("float64", shape), values("float64", shape, seed=9)
    plain, streamed = plain_and_streamed(tmp_path, "jacobi", [u, out], monkeypatch)
    want = out.copy()
    want[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    np.testing.assert_array_equal(streamed[1], want)
    np.testing.assert_array_equal(plain[1], want)


def test_locals_assigned_in_the_row_stream_their_values(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch):
    x, out = values("float32", (7, 301)), values("float32", (7, 300), seed=5)
    plain, streamed = plain_and_streamed(tmp_path, "with_locals", [x, out], monkeypatch,
                                         scalars=(1.5,))
    np.testing.assert_array_equal(streamed[1], plain[1])
    c = np.arange(7)[:, None] * 301 + np.arange(300)[None, :]
    x64 = x.astype(np.float64)  # a float32 element times a float scalar is a float64
    want = ((x64[:, :-1] * 1.5 - x64[:, 1:]) + c).astype(np.float32)
    np.testing.assert_array_equal(streamed[1], want)


def test_pure_helpers_in_a_row_stream_their_values(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch):
    """Float floor division, int() and an int % (prelude.h's helpers) in a streamed
    loop: the values Python gives."""
    x, out = values("float64", (7, 300)), values("int32", (7, 300), seed=6)
    plain, streamed = plain_and_streamed(tmp_path, "with_helpers", [x, out],
                                         monkeypatch)
    np.testing.assert_array_equal(streamed[1], plain[1])
    want = np.array([[int(float(v) // 3.0) % 1000 for v in row] for row in x], np.int32)
    np.testing.assert_array_equal(streamed[1], want)


def test_overlapping_arguments_run_the_plain_body_in_order(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch):
    """out is x moved by one element: each trip reads what the trip before stored.
    The runtime sees the overlap and runs the ordinary body, which never streams,
    so the result is the one Python gives, trip after trip."""
    monkeypatch.setenv(stream.ENV, "0")
    k = load_kernels(tmp_path).one_row
    assert STREAMED in source_of(k, (("array", "float64", 1),) * 2)
    a = values("float64", (2000,))
    want = a.copy()
    for j in range(len(a) - 1):
        want[j + 1] = want[j] * 0.5 + want[j + 1]
    shared = a.copy()
    before = tack._tack._kernel_stats()["restrict_launches"]
    k(tack.from_dlpack(shared[:-1]), tack.from_dlpack(shared[1:]))
    assert tack._tack._kernel_stats()["restrict_launches"] == before
    np.testing.assert_array_equal(shared, want)
    # and disjoint arguments take the restrict body
    x, out = tack.array(a.copy()), tack.array(np.zeros(len(a) - 1))
    k(x, out)
    assert tack._tack._kernel_stats()["restrict_launches"] == before + 1
    np.testing.assert_array_equal(out.numpy(), a[:-1] * 0.5 + a[1:])


def test_rows_that_start_off_a_line_boundary(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch):
    """Views whose first element is 8 .. 56 bytes past a line: the plain trips
    before the first line differ in number, the result does not."""
    monkeypatch.setenv(stream.ENV, "0")
    k = load_kernels(tmp_path).one_row
    a = values("float64", (3000,))
    base = np.zeros(2000 + 16)
    first = next(s for s in range(8) if (base.ctypes.data + 8 * s) % 64 == 0)
    offsets = set()
    for skip in range(first, first + 8):
        base[:] = 0.0
        offsets.add((base.ctypes.data + 8 * skip) % 64)
        k(tack.array(a[:2001].copy()), tack.from_dlpack(base[skip:skip + 2000]))
        np.testing.assert_array_equal(base[skip:skip + 2000], a[:2000] * 0.5 + a[1:2001])
        assert not base[:skip].any() and not base[skip + 2000:].any()
    assert offsets == set(range(0, 64, 8))


STREAMED_THREADS = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tack

    @tack.kernel
    def jacobi(u, out):
        for i in range(1, u.shape[0] - 1):
            for j in range(1, u.shape[1] - 1):
                out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])

    u = np.random.default_rng(1).standard_normal((257, 1031))
    out = np.full_like(u, 7.0)
    jacobi(tack.from_dlpack(u), tack.from_dlpack(out))
    want = np.full_like(u, 7.0)
    want[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    print(json.dumps({"same": bool(np.array_equal(out, want)),
                      "restrict": tack._tack._kernel_stats()["restrict_launches"]}))
""")


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_streamed_chunks_on_any_thread_count(tmp_path: Path, threads: int):
    """A chunk's streamed stores are all in memory when the launch returns,
    whichever thread ran it (each chunk ends with a fence)."""
    script = tmp_path / "threads.py"
    script.write_text(STREAMED_THREADS, encoding="utf-8")
    env = {**os.environ, stream.ENV: "0", "TACK_NUM_THREADS": str(threads),
           "TACK_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"same": True, "restrict": 1}
