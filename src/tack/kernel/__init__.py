"""The kernel front end: @tack.kernel.

``kernel(fn)`` parses fn at once (unsupported Python raises tack.KernelError here)
and returns a tack.Kernel, a C object whose call does the dispatch. The first call
with a new argument signature (or debug mode, or backend) comes back to
``_Compiler.__call__``, which types the IR for that signature, lowers it, has the
backend's emitter (EMITTERS) spell it and the runtime build it (from the disk cache
when it can). A failed build is remembered: every later call
with the same signature and debug mode raises the same CompileError without
compiling again. The debug mode is the decorator's ``debug=`` or, when that is None,
TACK_DEBUG as the dispatcher reads it at each call.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, overload

from tack._tack import (
    CompileError,
    Kernel,
    KernelError,
    _kernel_build,
    _kernel_debug,
    kDLCPU,
    kDLCUDA,
    kDLOneAPI,
)
from tack.kernel.emit_c import emit_c
from tack.kernel.emit_cuda import CudaKernel, emit_cuda, emit_cuda_request
from tack.kernel.lir import Plan
from tack.kernel.lower import CPU, CUDA, Target, lower
from tack.kernel.parse import parse_kernel
from tack.kernel.request import BuildRequest
from tack.kernel.source import check_source
from tack.kernel.spirv import spirv_request
from tack.kernel.types import specialize

__all__ = ["Kernel", "generate_cuda", "generate_source", "kernel"]


def _debug_from_env() -> bool:
    """The mode a call without debug= uses now (TACK_DEBUG, as the runtime reads it)."""
    return _kernel_debug()


# The compiler walks expressions recursively, a few frames per nesting level; a
# long chain such as x + x + ... + x (which CPython itself compiles) nests once
# per operator. Python's default limit (1000) would stop at ~250 terms.
_DEPTH_LIMIT = 20000
_depth_lock = threading.Lock()
_depth_users = 0
_depth_saved = 0


@contextlib.contextmanager
def _deep_recursion(name: str) -> Iterator[None]:
    """Runs a front-end stage with room for deep expressions; if even that is not
    enough, a KernelError instead of a RecursionError."""
    global _depth_users, _depth_saved
    with _depth_lock:
        if _depth_users == 0:
            _depth_saved = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_depth_saved, _DEPTH_LIMIT))
        _depth_users += 1
    try:
        yield
    except RecursionError:
        raise KernelError(
            f"kernel '{name}': an expression is nested too deeply to compile; split "
            "it into several assignments to locals") from None
    finally:
        with _depth_lock:
            _depth_users -= 1
            if _depth_users == 0:
                sys.setrecursionlimit(_depth_saved)


# The emitter for each backend (DLPack device type): the plan lowered for the CPU
# (which has every form; lower.for_target gives another target's) -> what the
# runtime builds for that backend (the CPU's: C source; a GPU's: a BuildRequest).
EMITTERS: dict[int, Callable[[Plan], str | BuildRequest]] = {
    kDLCPU: emit_c, kDLCUDA: emit_cuda_request, kDLOneAPI: spirv_request}


_Spelled = TypeVar("_Spelled")


class _Compiler:
    """Called by a tack.Kernel on a signature it has not seen."""

    def __init__(self, fn: Callable[..., Any], debug: bool | None,
                 source: str | None = None) -> None:
        with _deep_recursion(fn.__name__):
            self.ir = parse_kernel(fn, source)
        self.debug = debug  # None: TACK_DEBUG, read by the dispatcher at each call
        self.failed: dict[tuple[Any, ...], CompileError] = {}
        self.lock = threading.Lock()

    def source(self, signature: tuple[Any, ...], debug: bool | None = None,
               backend: int = kDLCPU) -> str | BuildRequest:
        emit = EMITTERS.get(backend)
        if emit is None:
            raise CompileError(f"kernel '{self.ir.name}': Tack has no kernel code "
                               f"generator for DLPack device type {backend} yet; "
                               "run it on CPU arrays")
        return self.spell(emit, signature, debug)

    def cuda(self, signature: tuple[Any, ...], debug: bool | None = None) -> CudaKernel:
        """The CUDA source of a specialization and its launch facts."""
        return self.spell(emit_cuda, signature, debug, CUDA)

    def spell(self, emit: Callable[[Plan], _Spelled], signature: tuple[Any, ...],
              debug: bool | None, target: Target = CPU) -> _Spelled:
        """emit over the plan of a specialization lowered for target (debug None:
        the mode a call would use now)."""
        if debug is None:
            debug = _debug_from_env() if self.debug is None else self.debug
        with _deep_recursion(self.ir.name):
            return emit(lower(specialize(self.ir, signature, debug), target))

    def __call__(self, signature: tuple[Any, ...], debug: bool,
                 backend: int = kDLCPU) -> Any:
        key = (signature, debug, backend)
        with self.lock:
            failed = self.failed.get(key)
        if failed is not None:
            raise CompileError(*failed.args)
        src = self.source(signature, debug, backend)
        try:
            return _kernel_build(self.ir.name, self.ir.filename, src, backend)
        except CompileError as exc:
            with self.lock:
                self.failed[key] = exc
            raise


@overload
def kernel(fn: Callable[..., Any], *, debug: bool | None = None,
           source: str | None = None) -> Kernel: ...
@overload
def kernel(fn: None = None, *, debug: bool | None = None,
           source: str | None = None) -> Callable[[Callable[..., Any]], Kernel]: ...


def kernel(fn: Callable[..., Any] | None = None, *, debug: bool | None = None,
           source: str | None = None) -> Any:
    """Compile fn, a subset of Python, into a native kernel (see docs/kernels.md).

    debug=True adds bounds checks that raise IndexError and turns integer division
    by zero into ZeroDivisionError. debug=None (the default) follows TACK_DEBUG
    (set and not "0"), read at each call: changing it builds the other variant.

    source: the text of fn's definition, compiled instead of fn's file, for a
    function whose file Python keeps no text of (exec, python -c, an embedding
    host's PyRun_SimpleString); fn still gives the globals and closure.
    """
    check_source(source, "kernel")
    if fn is None:
        return lambda f: kernel(f, debug=debug, source=source)
    if not inspect.isfunction(fn):
        raise TypeError(f"tack.kernel decorates a Python function (def), not "
                        f"{type(fn).__name__}; write @tack.kernel above a def")
    comp = _Compiler(fn, debug, source)
    k = Kernel(comp.ir.name, tuple(comp.ir.params),
               tuple(p in comp.ir.stored for p in comp.ir.params), comp,
               None if debug is None else bool(debug), parallel=comp.ir.parallel,
               read_first=tuple(p in comp.ir.read_first for p in comp.ir.params))
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(k, attr, getattr(fn, attr, None))
    k.__wrapped__ = fn
    k.__dict__.update(getattr(fn, "__dict__", {}))
    return k


def generate_source(k: Kernel, signature: tuple[Any, ...],
                    debug: bool | None = None) -> str:
    """The C source a kernel compiles to for a signature (for inspection and
    tests): e.g. (("array", "float32", 1), "int"). debug=None: the mode a call
    would use now."""
    compiler: _Compiler = k.compile
    return compiler.spell(emit_c, signature, debug)


def generate_cuda(k: Kernel, signature: tuple[Any, ...],
                  debug: bool | None = None) -> CudaKernel:
    """The CUDA source a kernel compiles to for a signature, with what its launch
    needs (parameter block layout, names of the failure record, partial size; see
    emit_cuda.py). debug=None: the mode a call would use now."""
    compiler: _Compiler = k.compile
    return compiler.cuda(signature, debug)
