"""The test-only DLPack producers: C extensions, each built once per test run.

``load()`` compiles ``counting_producer.c`` (host memory, counting deleters) and
``load("managed_producer")`` compiles ``managed_producer.c`` (CUDA managed memory
through the driver) with the system C compiler and the interpreter's include flags
into a temporary directory and imports it. It needs no build system and works from a
clean clone.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

_HERE = Path(__file__).resolve().parent
_modules: dict[str, ModuleType] = {}


def load(name: str = "counting_producer") -> ModuleType:
    """Build (first call only) and import the producer `name`."""
    if name in _modules:
        return _modules[name]
    out_dir = Path(tempfile.mkdtemp(prefix=f"tack-{name.replace('_', '-')}-"))
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = out_dir / f"{name}{suffix}"
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    cmd = [
        *cc,
        "-shared",
        "-fPIC",
        "-O1",
        "-g",
        "-std=c11",
        "-Wall",
        "-Werror",
        f"-I{sysconfig.get_paths()['include']}",
        str(_HERE / f"{name}.c"),
        "-o",
        str(target),
        "-pthread",
        "-ldl",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(
            f"building {name} failed:\n{' '.join(cmd)}\n{result.stderr}"
        )
    spec = importlib.util.spec_from_file_location(name, target)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _modules[name] = module
    return module


def build_dir() -> Path:
    """Where the built extension lives (for subprocess tests)."""
    return Path(load().__file__).parent


def check_alive_at_exit(script: str) -> None:
    """Runs script (a program that may use {build_dir} for this module's folder) in a
    new interpreter that exits with Tack arrays and exports alive, some adopted by
    the counting producer to be deleted after finalization, and checks that it
    printed "ready", exited cleanly and crashed on nothing at exit."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", script.format(build_dir=str(build_dir()))],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ready" in out.stdout
    assert "deleters ran after finalization" in out.stderr
    assert "Fatal" not in out.stderr and "Error" not in out.stderr, out.stderr
