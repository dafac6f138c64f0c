"""Running Tack against the real Level Zero loader and the strict stand-in driver
(tests/standin/level_zero).

The loader reads its environment once per process, so every test runs its code in a
fresh interpreter, with ZE_ENABLE_ALT_DRIVERS naming the stand-in, which is built here
with the system C compiler and the loader's own headers (Debian's libze-dev). Each run
goes through the real libze_loader.so.1 in one of the loader's modes (MODES), and fails
on any complaint of the stand-in ("standin-ze: ...") the test did not expect.

The child gets ``foreign_context()``: the handles of a context another library makes
through the same loader, as the dict external_context takes, and ``ON_STANDIN``.

With TACK_LEVEL_ZERO_INSTALLED_DRIVER=1 (scripts/level_zero_check.sh) the children
run instead on whatever driver the loader finds in this environment (an Intel GPU's,
ZE_ENABLE_ALT_DRIVERS unset), and the tests marked standin_ze are left out: their
checks need the stand-in's strictness or its settings. A test that asks run() for the
stand-in there (its two-driver mode, its settings, its complaints) fails, so that no
such test can go unmarked.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from pathlib import Path

import opencl_cpu_runtime
import pytest

ROOT = Path(__file__).resolve().parents[2]
STANDIN_SOURCES = sorted((ROOT / "tests" / "standin" / "level_zero").glob("standin_*.c"))

# The loader's modes every Level Zero test runs in: plain, through the loader's
# intercept layer, under the validation layer, both, and with two drivers (the
# stand-in under two names, which forces the loader's multi-driver path).
MODES = {
    "plain": {},
    "intercept": {"ZE_ENABLE_LOADER_INTERCEPT": "1"},
    "validation": {"ZE_ENABLE_VALIDATION_LAYER": "1", "ZE_ENABLE_PARAMETER_VALIDATION": "1"},
    "validation+intercept": {"ZE_ENABLE_LOADER_INTERCEPT": "1",
                             "ZE_ENABLE_VALIDATION_LAYER": "1",
                             "ZE_ENABLE_PARAMETER_VALIDATION": "1"},
    "two-drivers": {},
}

# Set by scripts/level_zero_check.sh: the driver the loader finds, not the stand-in.
INSTALLED_DRIVER = os.environ.get("TACK_LEVEL_ZERO_INSTALLED_DRIVER") == "1"
# A test whose check only the strict stand-in can make (a real driver is lenient
# there, or the test sets the stand-in's devices or reads its complaints).
standin_only = pytest.mark.standin_ze


def modes(*names: str) -> list:
    """The modes to parametrize a test with (all of MODES by default); the two-driver
    mode is the stand-in's alone."""
    return [pytest.param(n, marks=standin_only) if n == "two-drivers" else n
            for n in names or MODES]


_library: Path | None = None

_PRELUDE = """
import ctypes, os, sys
import numpy as np
import tack

_ze = ctypes.CDLL("libze_loader.so.1")
# The stand-in is the driver (always, but under scripts/level_zero_check.sh's real run).
ON_STANDIN = bool(os.environ.get("ZE_ENABLE_ALT_DRIVERS"))

def foreign_context(driver_index=0, device_index=0):
    # What another library does: zeInit, a driver, a device, zeContextCreate.
    assert _ze.zeInit(0) == 0
    n = ctypes.c_uint32(0)
    assert _ze.zeDriverGet(ctypes.byref(n), None) == 0
    drivers = (ctypes.c_void_p * n.value)()
    assert _ze.zeDriverGet(ctypes.byref(n), drivers) == 0
    drv = drivers[driver_index]
    m = ctypes.c_uint32(0)
    assert _ze.zeDeviceGet(ctypes.c_void_p(drv), ctypes.byref(m), None) == 0
    devices = (ctypes.c_void_p * m.value)()
    assert _ze.zeDeviceGet(ctypes.c_void_p(drv), ctypes.byref(m), devices) == 0
    desc = (ctypes.c_uint32 * 6)(0xd, 0, 0, 0, 0, 0)  # ze_context_desc_t, stype 0xd
    ctx = ctypes.c_void_p()
    assert _ze.zeContextCreate(ctypes.c_void_p(drv), desc, ctypes.byref(ctx)) == 0
    return {"driver": drv, "device": devices[device_index], "context": ctx.value}

def destroy_context(handles):
    return _ze.zeContextDestroy(ctypes.c_void_p(handles["context"]))
"""


def standin_library() -> Path:
    """Builds (first call only) libtack_standin_ze.so and returns its path."""
    global _library
    if _library is not None:
        return _library
    out_dir = Path(tempfile.mkdtemp(prefix="tack-standin-ze-"))
    target = out_dir / "libtack_standin_ze.so"
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    flags = subprocess.run(["pkg-config", "--cflags", "level-zero"], capture_output=True,
                           text=True)
    if flags.returncode != 0:
        raise RuntimeError("the Level Zero headers are missing: install libze-dev "
                           "(scripts/ensure_tools.sh test does)")
    cmd = [*cc, "-shared", "-fPIC", "-O1", "-g", "-std=c11", "-pthread",
           "-fvisibility=hidden", *shlex.split(flags.stdout),
           *map(str, STANDIN_SOURCES), "-o", str(target)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"building the stand-in failed:\n{result.stderr}")
    shutil.copy(target, out_dir / "libtack_standin_ze_second.so")
    _library = target
    return target


def _alt_drivers(mode: str) -> str:
    lib = standin_library()
    if mode == "two-drivers":
        return f"{lib},{lib.with_name('libtack_standin_ze_second.so')}"
    return str(lib)


def run(code: str, mode: str = "plain", *, expect: tuple[str, ...] = (),
        check: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
    """Runs code in a child interpreter through the real loader in mode, on the
    stand-in; extra keyword arguments become environment variables. Fails on a
    stand-in complaint that contains none of expect."""
    child_env = {k: v for k, v in os.environ.items()
                 if not k.startswith(("ZE_", "TACK_STANDIN_ZE", "TACK_LEVEL_ZERO"))}
    if INSTALLED_DRIVER:
        # the execution mode only chooses how the stand-in computes a launch: a real
        # driver runs the module, so a test that names it means the same there
        asks = [k for k in env if k.startswith(("ZE_", "TACK_STANDIN_ZE"))
                and k != "TACK_STANDIN_ZE_EXECUTE"]
        if mode == "two-drivers" or expect or asks:
            raise AssertionError(
                f"this test needs the stand-in (mode {mode}, expect={expect}, "
                f"settings {asks}) but runs on the installed driver: mark it "
                "standin_ze (level_zero_helpers.standin_only)")
        if "ZE_ENABLE_ALT_DRIVERS" in os.environ:
            child_env["ZE_ENABLE_ALT_DRIVERS"] = os.environ["ZE_ENABLE_ALT_DRIVERS"]
    else:
        child_env["ZE_ENABLE_ALT_DRIVERS"] = _alt_drivers(mode)
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    # Intel's OpenCL CPU runtime, where installed: the stand-in's launches then
    # execute the module's SPIR-V (its standin_ze_opencl.c); else CPU twins.
    lib = opencl_cpu_runtime.library_dir()
    if lib is not None:
        child_env.update({k: v for k, v in opencl_cpu_runtime.child_env(lib).items()
                          if k in ("OCL_ICD_FILENAMES", "LD_LIBRARY_PATH")})
    child_env.update(MODES[mode])
    child_env.update(env)
    argv = [sys.executable, "-c", _PRELUDE + textwrap.dedent(code)]
    if os.environ.get("TACK_TEST_VALGRIND") == "1":
        # make valgrind: the child (Tack, the loader, the stand-in and Intel's OpenCL
        # runtime) under memcheck; any error is the child's failure
        argv = ["valgrind", "-q", "--error-exitcode=9",
                f"--suppressions={Path(__file__).with_name('ld_rpath.supp')}", *argv]
    result = subprocess.run(
        argv, capture_output=True, text=True, env=child_env,
        timeout=1200 if argv[0] == "valgrind" else 120,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"child failed ({result.returncode}) in mode {mode}:\n{result.stdout}\n"
            f"{result.stderr}"
        )
    unexpected = [line for line in result.stderr.splitlines()
                  if line.startswith("standin-ze:")
                  and not line.startswith("standin-ze: note:")
                  and not any(e in line for e in expect)]
    assert not unexpected, f"the stand-in complained in mode {mode}: {unexpected}"
    return result
