"""@tack.func: helpers that kernels (and other funcs) call.

A Func wraps a plain function. Called from Python it is that function. Called from
a kernel, the compiler parses it once (the first time a kernel that calls it is
decorated; tack.kernel.parse.func_ir, which also refuses recursion, direct or
through other funcs, with a KernelError naming the cycle), types it once per call
signature and compiles each typed instance into the kernel's source as an
always-inlined C function, so a call costs nothing at run time.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, overload

from tack.kernel import ir
from tack.kernel.source import Source, check_source, read_source


class Func:
    """What @tack.func returns: the function, the text of its definition when one was
    given, and its body's IR once parse.func_ir has parsed it."""

    def __init__(self, fn: Callable[..., Any], source: str | None = None) -> None:
        self.fn = fn
        # The definition given as text, read now so a wrong text fails here.
        self._source: Source | None = None if source is None else read_source(
            fn, source, "tack.func")
        self._ir: ir.KernelIR | None = None
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)

    def __deepcopy__(self, memo: dict[int, Any]) -> Func:
        return self  # the IR refers to the one Func; typing copies the IR, not it

    def __repr__(self) -> str:
        return f"<tack.func {self.fn.__qualname__}>"

    def definition(self) -> Source:
        """The text of the definition: the one given to the decorator, else fn's own,
        read from its file now."""
        if self._source is not None:
            return self._source
        return read_source(self.fn, None, "tack.func")

    @property
    def parsed(self) -> ir.KernelIR:
        """The body's IR. parse.func_ir parses a func before the parser makes any call
        to it, so every ir.FuncCall finds its func's IR here."""
        assert self._ir is not None, f"tack.func '{self.fn.__name__}' is not parsed yet"
        return self._ir

    def is_parsed(self) -> bool:
        return self._ir is not None

    def keep(self, parsed: ir.KernelIR) -> ir.KernelIR:
        """Keeps the first IR that one of the threads parsing this func at once made,
        and returns the one kept."""
        with self._lock:
            if self._ir is None:
                self._ir = parsed
            return self._ir


@overload
def func(fn: Callable[..., Any], *, source: str | None = None) -> Func: ...
@overload
def func(fn: None = None, *, source: str | None = None) -> Callable[
    [Callable[..., Any]], Func]: ...


def func(fn: Callable[..., Any] | None = None, *, source: str | None = None) -> Any:
    """Marks fn as a helper that kernels and other funcs may call (see
    docs/kernels.md, Functions). source: the text of fn's definition, for a
    function whose file Python keeps no text of (exec, python -c, an embedding
    host)."""
    import inspect

    check_source(source, "func")
    if fn is None:
        return lambda f: func(f, source=source)
    if not inspect.isfunction(fn):
        raise TypeError(f"tack.func decorates a Python function (def), not "
                        f"{type(fn).__name__}")
    return Func(fn, source)
