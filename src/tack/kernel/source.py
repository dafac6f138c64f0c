"""Where the Python text of a kernel or func comes from.

inspect reads a function's text from its file, or from linecache, where IPython and
Jupyter keep the text of each cell (so kernels defined in a notebook need nothing
more). Code run by exec, ``python -c``, the plain REPL or an embedding host's
PyRun_SimpleString keeps no text: such a kernel takes the text of its definition
as ``source=``. The function object still gives the globals and closure the body's
names refer to; the text must define a function of the same name and parameters,
so a text that went stale since the function was made is refused, not compiled.
Errors in a source= text name the file ``<source of NAME>`` and count its lines
from the text's first line.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tack._tack import KernelError


@dataclass
class Source:
    """A function's definition as parsed, with the lines its locations refer to."""

    filename: str
    fdef: ast.stmt  # the def (line numbers those of file_lines)
    file_lines: list[str]  # the file's lines, without line ends
    first: int  # the line of the def (or of its first decorator)
    indent: int  # the columns dedent took off the text (they are added back)


def check_source(source: Any, what: str) -> None:
    """TypeError unless source is None or a str."""
    if source is not None and not isinstance(source, str):
        raise TypeError(f"source= is the text of the {what}'s definition, a str "
                        f"('def name(...): ...'), not {type(source).__name__}")


def read_source(fn: Callable[..., Any], source: str | None, what: str) -> Source:
    """fn's definition: from source (the text given) when not None, else from fn's
    file. what names fn in messages: "kernel" or "tack.func"."""
    if source is not None:
        return _from_text(fn, source, what)
    try:
        filename = inspect.getsourcefile(fn) or "<unknown>"
        src_lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise KernelError(_unreadable(fn, what, exc)) from None
    src = textwrap.dedent("".join(src_lines))
    tree = ast.parse(src)
    ast.increment_lineno(tree, first - 1)
    file_lines = [ln.rstrip("\n") for ln in linecache.getlines(filename)]
    return Source(filename, tree.body[0], file_lines, first, _indent(src_lines, src))


def _unreadable(fn: Callable[..., Any], what: str, exc: Exception) -> str:
    name = fn.__name__
    deco = "tack.kernel" if what == "kernel" else what
    return (f"cannot read the source of {what} '{name}' (defined in "
            f"{fn.__code__.co_filename}: {exc}); code run by exec, python -c, the "
            "REPL or an embedding host keeps no text, so give Tack the text of the "
            f"definition: {name} = {deco}({name}, source=text) after exec(text), or "
            f"@{deco}(source=text) above the def; or define it in a file")


def _indent(original: list[str], dedented: str) -> int:
    """The columns textwrap.dedent took off: the file's column of a node is its
    column in the dedented text plus these."""
    kept = next((ln for ln in dedented.splitlines() if ln.strip()), "")
    orig = next((ln for ln in original if ln.strip()), "")
    return len(orig.rstrip("\r\n")) - len(kept)


def _from_text(fn: Callable[..., Any], source: str, what: str) -> Source:
    name = fn.__name__
    filename = f"<source of {name}>"
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    text = textwrap.dedent("\n".join(lines))
    indent = _indent(lines, text)

    def error(msg: str, lineno: int, col: int) -> KernelError:
        line = lines[lineno - 1] if 0 < lineno <= len(lines) else None
        return KernelError(f"{what} '{name}': {msg}", (filename, lineno, col, line))

    try:
        tree = ast.parse(text, filename)
    except SyntaxError as exc:
        raise error(f"its source= text is not valid Python: {exc.msg}",
                    exc.lineno or 1, (exc.offset or 1) + indent) from None
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    mine = [n for n in defs if n.name == name]
    if not mine:
        others = f" (it defines {', '.join(n.name for n in defs)})" if defs else ""
        raise error(f"its source= text defines no function '{name}'{others}; pass "
                    f"the text of 'def {name}(...)'", 1, 1)
    if len(mine) > 1:
        raise error(f"its source= text defines '{name}' {len(mine)} times; pass the "
                    "text of one definition", mine[1].lineno, mine[1].col_offset + 1)
    fdef = mine[0]
    given = [a.arg for a in fdef.args.posonlyargs + fdef.args.args]
    code = fn.__code__
    takes = list(code.co_varnames[:code.co_argcount])
    if given != takes:
        raise error(f"its source= text defines {name}({', '.join(given)}) but the "
                    f"function takes {name}({', '.join(takes)}); pass the text that "
                    "defined this function", fdef.lineno, fdef.col_offset + 1 + indent)
    first = min([fdef.lineno, *(d.lineno for d in fdef.decorator_list)])
    return Source(filename, fdef, lines, first, indent)
