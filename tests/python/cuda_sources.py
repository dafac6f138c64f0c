"""A pytest plugin (``-p cuda_sources``) that records the CUDA source of every kernel
specialization the kernel test suite builds on the CPU, in both debug modes.

test_kernels_cuda_build.py runs the suite with it in a subprocess and then compiles
every recorded source with NVRTC. Sources go to $TACK_CUDA_SOURCES_DIR, one file
per distinct source (named by its hash), each with a first comment line naming the
kernel, its signature, its debug mode and whether it calls the math library. A
specialization the front end refuses (a KernelError the suite expects) has no
source and is not recorded. Nor is a source over MAX_SOURCE_BYTES: the kernels
with hundreds of reductions (the partials' bound) make sources of half a megabyte
that NVRTC takes minutes over, and their CUDA code is run by the differential test.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from typing import Any

from tack import KernelError

_front = importlib.import_module("tack.kernel")
_OUT = os.environ["TACK_CUDA_SOURCES_DIR"]
_original = _front._Compiler.__call__
MAX_SOURCE_BYTES = 200_000


def _record(self: Any, signature: tuple[Any, ...], debug: bool, *rest: Any) -> Any:
    for mode in (False, True):
        try:
            kernel = self.cuda(signature, mode)
        except KernelError:
            continue
        if len(kernel.source) > MAX_SOURCE_BYTES:
            continue
        text = (f"// {self.ir.name} {signature!r} debug={mode} libm={int(kernel.libm)}\n"
                f"{kernel.source}")
        name = hashlib.sha256(text.encode()).hexdigest()[:24] + ".cu"
        path = os.path.join(_OUT, name)
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.{id(text)}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
    return _original(self, signature, debug, *rest)


_front._Compiler.__call__ = _record
