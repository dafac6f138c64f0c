"""The kernel front end: @tack.kernel.

``kernel(fn)`` parses fn at once (unsupported Python raises tack.KernelError here)
and returns a tack.Kernel, a C object whose call does the dispatch. The first call
with a new argument signature comes back to ``_Compiler.__call__``, which types the
IR for that signature, generates C and has the runtime build it (from the disk
cache when it can). A failed build is remembered: every later call with the same
signature raises the same CompileError without compiling again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, overload

from tack._tack import CompileError, Kernel, _kernel_build
from tack.kernel.codegen_c import generate_c
from tack.kernel.parse import parse_kernel
from tack.kernel.types import specialize

__all__ = ["kernel", "Kernel", "generate_source"]


def _debug_from_env() -> bool:
    return os.environ.get("TACK_DEBUG", "") not in ("", "0")


class _Compiler:
    """Called by a tack.Kernel on a signature it has not seen."""

    def __init__(self, fn: Callable[..., Any], debug: bool) -> None:
        self.ir = parse_kernel(fn)
        self.debug = debug
        self.failed: dict[tuple[Any, ...], CompileError] = {}
        self.lock = threading.Lock()

    def source(self, signature: tuple[Any, ...]) -> str:
        return generate_c(specialize(self.ir, signature, self.debug))

    def __call__(self, signature: tuple[Any, ...]) -> Any:
        with self.lock:
            failed = self.failed.get(signature)
        if failed is not None:
            raise CompileError(*failed.args)
        src = self.source(signature)
        try:
            return _kernel_build(self.ir.name, self.ir.filename, src)
        except CompileError as exc:
            with self.lock:
                self.failed[signature] = exc
            raise


@overload
def kernel(fn: Callable[..., Any], *, debug: bool | None = None) -> Kernel: ...
@overload
def kernel(fn: None = None, *, debug: bool | None = None) -> Callable[
    [Callable[..., Any]], Kernel]: ...


def kernel(fn: Callable[..., Any] | None = None, *,
           debug: bool | None = None) -> Any:
    """Compile fn, a subset of Python, into a native kernel (see docs/kernels.md).

    debug=True (or TACK_DEBUG=1 in the environment when debug is None) adds bounds
    checks that raise IndexError and turns integer division by zero into
    ZeroDivisionError.
    """
    if fn is None:
        return lambda f: kernel(f, debug=debug)
    comp = _Compiler(fn, _debug_from_env() if debug is None else debug)
    k = Kernel(comp.ir.name, tuple(comp.ir.params),
               tuple(p in comp.ir.stored for p in comp.ir.params), comp)
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(k, attr, getattr(fn, attr, None))
    k.__wrapped__ = fn
    k.__dict__.update(getattr(fn, "__dict__", {}))
    return k


def generate_source(k: Kernel, signature: tuple[Any, ...]) -> str:
    """The C source a kernel compiles to for a signature (for inspection and
    tests): e.g. (("array", "float32", 1), "int")."""
    return k.compile.source(signature)
