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
                         capture_output=True, text=True, timeout=120, check=False)
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
        except BaseException as exc:
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
    assert main_thread_ticks_during(lambda: spin(out, n)) > 100


def test_a_long_parallel_launch_after_short_ones_releases_the_gil(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Short CPU launches keep the GIL (their cost estimate says so); the first long
    one after them still drops it while its trips run."""
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path / "cache"))

    @tack.kernel
    def churn(out, reps):
        for i in range(out.shape[0]):
            v = 0.0
            for r in range(reps):
                v = v * 0.5 + math_free(r)
            out[i] = v

    small = tack.zeros(16, dtype=tack.f64)
    for _ in range(50):
        churn(small, 1)  # short: the estimate learns it
    out = tack.zeros(1 << 16, dtype=tack.f64)
    reps = 1
    t0 = time.perf_counter()
    churn(out, reps)
    while time.perf_counter() - t0 < 0.05 and reps < 1 << 30:  # find ~0.3 s of work
        reps *= 4
        t0 = time.perf_counter()
        churn(out, reps)
    reps *= 4
    for _ in range(50):
        churn(small, 1)  # short again: the next launch starts with the GIL held
    assert main_thread_ticks_during(lambda: churn(out, reps)) > 100


def main_thread_ticks_during(launch) -> int:
    """How often this thread ran while launch() ran on another: the launch holds
    the GIL throughout when this is near 0."""
    ticks = 0
    done = threading.Event()

    def run() -> None:
        launch()
        done.set()

    worker = threading.Thread(target=run)
    worker.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0)
    worker.join()
    return ticks


math_free = float  # a global the kernel calls: float(i)


def run_to_the_end(tmp_path: Path, source: str, *flags: str) -> subprocess.CompletedProcess:
    """Runs source in a new interpreter, which must exit 0 after printing "done"."""
    script = tmp_path / "script.py"
    script.write_text(source)
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("TACK_DEBUG", None)
    out = subprocess.run([sys.executable, *flags, str(script)], env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "done" in out.stdout
    return out


# A kernel and an array, made by the scripts below.
FILL = r'''
import tack

@tack.kernel
def fill(out, v):
    for i in range(out.shape[0]):
        out[i] = v

a = tack.zeros(4)
'''

OUTLIVE_SCRIPT = FILL + r'''
import gc, sys
import numpy as np

host = np.zeros(4)
host.flags.writeable = False
ro = tack.from_dlpack(host)
fill(a, 1.0)
Error = tack.TackError

# The module goes away from everywhere Python can name it; the kernel stays.
for name in [m for m in sys.modules if m == "tack" or m.startswith("tack.")]:
    del sys.modules[name]
del tack
gc.collect()

fill(a, 2.0)  # a known specialization
fill(a, 3)  # a new one: compiled through the front end
assert (np.from_dlpack(a) == 3.0).all()
try:
    fill(ro, 1.0)
except Error as exc:  # refused cleanly, with the binding's advice
    assert "read-only" in str(exc), exc
else:
    raise AssertionError("a read-only array was accepted")


class Holder:
    """Calls the kernel from its finalizer, which runs while the interpreter shuts
    down (the holder sits in a reference cycle)."""

    def __init__(self, kernel, arr, bad):
        self.me = self
        self.kernel, self.arr, self.bad = kernel, arr, bad

    def __del__(self):
        self.kernel(self.arr, 4.0)
        try:
            self.kernel(self.bad, 1.0)
        except Exception as exc:
            sys.stdout.write("finalizer: " + type(exc).__name__ + "\n")


Holder(fill, a, ro)
del fill, a, ro
print("done", flush=True)
'''


def test_a_kernel_outlives_its_module(tmp_path: Path):
    """A kernel keeps the extension's state alive through its type: after the module
    is gone from sys.modules and collected, and during interpreter shutdown, calls
    still work or fail with a Python exception, never a crash."""
    out = run_to_the_end(tmp_path, OUTLIVE_SCRIPT, "-X", "dev")
    assert "Fatal" not in out.stderr and "Segmentation" not in out.stderr, out.stderr


CLEARED_SCRIPT = FILL + r'''
import ctypes
from tack import _tack

fill(a, 1.0)


class ModuleDef(ctypes.Structure):  # PyModuleDef, up to m_clear
    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p),
                ("m_init", ctypes.c_void_p), ("m_index", ctypes.c_ssize_t),
                ("m_copy", ctypes.c_void_p), ("m_name", ctypes.c_char_p),
                ("m_doc", ctypes.c_char_p), ("m_size", ctypes.c_ssize_t),
                ("m_methods", ctypes.c_void_p), ("m_slots", ctypes.c_void_p),
                ("m_traverse", ctypes.c_void_p), ("m_clear", ctypes.c_void_p)]


get_def = ctypes.pythonapi.PyModule_GetDef
get_def.restype = ctypes.POINTER(ModuleDef)
get_def.argtypes = [ctypes.py_object]
m_clear = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object)(get_def(_tack)[0].m_clear)
m_clear(_tack)  # what the garbage collector does to the module in a dead cycle
for args in ((a, 2.0), (a, 3)):
    try:
        fill(*args)
    except RuntimeError as exc:
        assert "'fill'" in str(exc) and "cleared" in str(exc), exc
    else:
        raise AssertionError("a kernel ran on a cleared module")
print("done", flush=True)
'''


def test_a_kernel_of_a_cleared_module_fails_cleanly(tmp_path: Path):
    """When the garbage collector has cleared the extension's state (a module in a
    dead cycle, at shutdown), a kernel call raises RuntimeError saying so."""
    run_to_the_end(tmp_path, CLEARED_SCRIPT)
