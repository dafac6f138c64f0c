"""The counting DLPack producer: a test-only C extension, built once per test run.

``load()`` compiles ``counting_producer.c`` with the system C compiler and the
interpreter's include flags into a temporary directory and imports it. It needs no
build system and works from a clean clone.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

_HERE = Path(__file__).resolve().parent
_module: ModuleType | None = None


def load() -> ModuleType:
    """Build (first call only) and import the counting producer."""
    global _module
    if _module is not None:
        return _module
    out_dir = Path(tempfile.mkdtemp(prefix="tack-counting-producer-"))
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = out_dir / f"counting_producer{suffix}"
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
        str(_HERE / "counting_producer.c"),
        "-o",
        str(target),
        "-pthread",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(
            f"building the counting producer failed:\n{' '.join(cmd)}\n{result.stderr}"
        )
    spec = importlib.util.spec_from_file_location("counting_producer", target)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _module = module
    return module


def build_dir() -> Path:
    """Where the built extension lives (for subprocess tests)."""
    return Path(load().__file__).parent
