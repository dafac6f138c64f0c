"""@tack.func: helpers that kernels (and other funcs) call.

A Func wraps a plain function. Called from Python it is that function. Called from
a kernel, the compiler parses it once (the first time a kernel that calls it is
decorated), types it once per call signature and compiles each typed instance into
the kernel's source as an always-inlined C function, so a call costs nothing at run
time. Recursion, direct or through other funcs, is a KernelError naming the cycle.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, overload

from tack._tack import KernelError
from tack.kernel import ir
from tack.kernel.source import Source, check_source, read_source

_parsing = threading.local()  # the funcs being parsed on this thread, outermost first


class Func:
    """What @tack.func returns."""

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

    def ir(self) -> ir.KernelIR:
        """The parsed body (parsed once); KernelError on unsupported Python or on
        recursion."""
        if self._ir is not None:
            return self._ir
        stack: list[Func] = getattr(_parsing, "stack", [])
        if self in stack:
            cycle = stack[stack.index(self):] + [self]
            names = " -> ".join(f.fn.__name__ for f in cycle)
            raise KernelError(f"tack.func '{self.fn.__name__}' calls itself ({names}); "
                              "kernels and funcs cannot recurse: write a loop")
        from tack.kernel.parse import parse_func

        _parsing.stack = [*stack, self]
        try:
            parsed = parse_func(self.fn, self._source)
        finally:
            _parsing.stack = stack
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
