"""The kernel runtime seen from Python: the disk cache across processes (reuse,
corrupt and foreign entries), parallel results with 1 and several threads,
compiling from many threads, and the GIL released while a kernel runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import tack

SCRIPT = r'''
import json, sys
import numpy as np
import tack

@tack.kernel
def radius_squared(values, nx, ny):
    for i in range(values.shape[0]):
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i // nx) % ny) - float(ny - 1) * 0.5
        z = float(i // (nx * ny)) - 2.0
        values[i] = x * x + y * y + z * z

n = int(sys.argv[1])
nx, ny = 64, 64
v = tack.zeros(n, dtype=tack.f32)
radius_squared(v, nx, ny)
radius_squared(v, nx, ny)
i = np.arange(n)
want = ((i % nx - (nx - 1) * 0.5) ** 2 + ((i // nx) % ny - (ny - 1) * 0.5) ** 2
        + (i // (nx * ny) - 2.0) ** 2).astype(np.float32)
stats = tack._tack._kernel_stats()
stats["correct"] = bool(np.array_equal(v.numpy(), want))
print(json.dumps(stats))
'''


def run_script(tmp_path: Path, cache: Path, n: int = 4096, **env: str) -> dict:
    script = tmp_path / "kernel_script.py"
    script.write_text(SCRIPT)
    full_env = dict(os.environ, TACK_CACHE_DIR=str(cache), **env)
    full_env.pop("TACK_DEBUG", None)
    out = subprocess.run([sys.executable, str(script), str(n)], env=full_env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def entry(cache: Path, suffix: str) -> Path:
    (path,) = [p for p in cache.iterdir() if p.suffix == suffix]
    return path


def test_second_process_compiles_nothing(tmp_path: Path):
    cache = tmp_path / "cache"
    first = run_script(tmp_path, cache)
    assert first["correct"] and first["compiles"] == 1 and first["disk_hits"] == 0
    second = run_script(tmp_path, cache)
    assert second["correct"] and second["compiles"] == 0 and second["disk_hits"] == 1


def test_corrupt_entry_is_rebuilt(tmp_path: Path):
    cache = tmp_path / "cache"
    run_script(tmp_path, cache)
    so = entry(cache, ".so")
    data = bytearray(so.read_bytes())
    data[200:216] = b"\xff" * 16
    so.write_bytes(bytes(data))
    again = run_script(tmp_path, cache)
    assert again["correct"] and again["rebuilds"] == 1 and again["compiles"] == 1, again
    third = run_script(tmp_path, cache)  # the rebuilt entry is good again
    assert third["compiles"] == 0 and third["disk_hits"] == 1
    entry(cache, ".meta").write_text("not a cache entry")
    fourth = run_script(tmp_path, cache)
    assert fourth["correct"] and fourth["rebuilds"] == 1


def test_foreign_or_shared_entry_is_ignored_and_rebuilt(tmp_path: Path):
    cache = tmp_path / "cache"
    run_script(tmp_path, cache)
    so = entry(cache, ".so")
    if os.geteuid() == 0:
        os.chown(so, 12345, 12345)  # another user's file
    else:
        so.chmod(0o666)  # a file anyone could have replaced
    again = run_script(tmp_path, cache)
    assert again["correct"] and again["rebuilds"] == 1 and again["disk_hits"] == 0
    assert entry(cache, ".so").stat().st_uid == os.geteuid()


@pytest.mark.parametrize("threads", ["1", "4"])
def test_parallel_results_match_with_any_thread_count(tmp_path: Path, threads: str):
    stats = run_script(tmp_path, tmp_path / "cache", n=1 << 21, TACK_NUM_THREADS=threads)
    assert stats["correct"]
    assert stats["num_threads"] == int(threads)
    if threads == "1":
        assert stats["parallel_launches"] == 0
    else:
        assert stats["parallel_launches"] >= 1


def test_compiling_from_many_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path / "cache"))

    @tack.kernel
    def scaled(out, k):
        for i in range(out.shape[0]):
            out[i] = i * k

    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def work(t: int) -> None:
        try:
            barrier.wait()
            # Several threads miss on the same signature at once, others on new ones.
            dtype = [tack.f32, tack.f64, tack.i32, tack.i64][t % 4]
            out = tack.zeros(1000, dtype=dtype)
            for _ in range(20):
                scaled(out, 3)
            np.testing.assert_array_equal(out.numpy(), np.arange(1000) * 3)

            def own(o):
                for i in range(o.shape[0]):
                    o[i] = i + 1

            mine = tack.kernel(own)
            out2 = tack.zeros(50, dtype=tack.f64)
            mine(out2)
            np.testing.assert_array_equal(out2.numpy(), np.arange(1, 51))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert scaled._nspecializations == 4


def test_gil_is_released_while_a_kernel_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path / "cache"))

    @tack.kernel
    def spin(out, n):
        s = 0.0
        for i in range(n):
            s = s * 0.999999 + math_free(i)
        out[0] = s

    out = tack.zeros(1, dtype=tack.f64)
    spin(out, 10)  # compile first
    n = 1
    t0 = time.perf_counter()
    spin(out, n)
    while time.perf_counter() - t0 < 0.05 and n < 1 << 40:  # find ~0.3 s of work
        n *= 4
        t0 = time.perf_counter()
        spin(out, n)
    n *= 4
    ticks = 0
    done = threading.Event()

    def run() -> None:
        spin(out, n)
        done.set()

    worker = threading.Thread(target=run)
    worker.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0)
    worker.join()
    assert ticks > 100  # the main thread kept running during the launch


math_free = float  # a global the kernel calls: float(i)
