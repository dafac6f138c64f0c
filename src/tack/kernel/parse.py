"""Python AST -> kernel IR.

Takes a kernel's definition as tack.kernel.source read it (from its file, or the
source= text), keeps the line numbers of that file, and turns the subset of Python
that kernels accept into ir nodes. Anything else raises tack.KernelError (a
SyntaxError subclass) whose filename and lineno point at the offending Python line.
This runs when @tack.kernel decorates a function, so unsupported Python is reported
before the first call.
"""

from __future__ import annotations

import ast
import builtins
import collections
import functools
import inspect
import math
import threading
import types
from collections.abc import Callable
from typing import Any

from tack import _tack
from tack._tack import KernelError
from tack.kernel import builtins as kbuiltins
from tack.kernel import intrinsics, ir
from tack.kernel.func import Func
from tack.kernel.source import Source, read_source

BINOPS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
    ast.LShift: "<<", ast.RShift: ">>",
}
CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
          ast.NotEq: "!="}
UNOPS = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}
COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
LOCAL_ARRAY_MAX = 1 << 16
# All the local arrays of one kernel together, the funcs' (inlined at every call)
# included: well inside the 8 MiB stack of the thread pool's workers
# (thread_pool.c) and of a main thread.
LOCAL_ARRAYS_MAX_BYTES = 1 << 20
_MISSING = object()
_parsing = threading.local()  # the funcs being parsed on this thread, outermost first


def kernel_error(msg: str, filename: str, lines: list[str], lineno: int,
                 col: int = 0) -> KernelError:
    text = lines[lineno - 1] if 0 < lineno <= len(lines) else None
    return KernelError(msg, (filename, lineno, col + 1, text))


class _Parser:
    def __init__(self, fn: Callable[..., Any], text: Source, func: bool = False) -> None:
        self.fn = fn
        self.func = func  # a @tack.func body: return anywhere, no parallel loop
        self.whole_value: ast.expr | None = None  # the call a statement is made of
        self.name = fn.__name__
        self.filename = text.filename
        self.first = text.first
        self.file_lines = text.file_lines
        self.indent = text.indent
        self.fdef = text.fdef
        # What the body's names refer to, innermost first. The module's globals are
        # its own dict, not a copy: the IR keeps only read_name(fn, ...), so a kernel
        # keeps no global alive (del frees it).
        self.scope = collections.ChainMap(_nonlocals(fn), fn.__globals__,
                                          builtins.__dict__)
        self.params: list[str] = []
        self.locals: set[str] = set()
        self.local_arrays: dict[str, tuple[tuple[int, ...], str]] = {}
        self.array_params: set[str] = set()
        self.stored: set[str] = set()
        self.first_use: dict[str, int] = {}
        self.loop_depth = 0

    def error(self, node: ast.AST, msg: str) -> KernelError:
        lineno = getattr(node, "lineno", self.first)
        col = getattr(node, "col_offset", 0) + self.indent
        return kernel_error(msg, self.filename, self.file_lines, lineno, col)

    def else_error(self, node: ast.For | ast.While, msg: str) -> KernelError:
        """An error at the 'else:' of a loop (the AST does not record its line: it is
        the last line from the end of the body to the else block's first statement
        that starts with 'else')."""
        first = node.orelse[0].lineno
        line, col = first - 1, self.indent
        for n in range(first, node.body[-1].end_lineno or node.lineno, -1):
            text = self.file_lines[n - 1] if 0 < n <= len(self.file_lines) else ""
            stripped = text.lstrip()
            if stripped.startswith("else") and stripped[4:].lstrip().startswith(":"):
                line, col = n, len(text) - len(stripped)
                break
        return kernel_error(msg, self.filename, self.file_lines, line, col)

    # ---- the function ----------------------------------------------------------

    def parse(self) -> ir.KernelIR:
        fdef = self.fdef
        if not isinstance(fdef, ast.FunctionDef):
            raise self.error(fdef, "a kernel must be a plain function (def)")
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise self.error(
                fdef, "kernel parameters are plain positional names: no defaults, "
                "*args, **kwargs, keyword-only or positional-only markers")
        annotated_none = isinstance(fdef.returns, ast.Constant) and \
            fdef.returns.value is None
        if fdef.returns is not None and not annotated_none:
            raise self.error(fdef, "kernel types are inferred: drop the return "
                             "annotation")
        if annotated_none:
            for node in ast.walk(fdef):
                if isinstance(node, ast.Return) and node.value is not None:
                    raise self.error(node, f"'{self.name}' is annotated -> None but "
                                     "returns a value; drop the annotation")
        self.params = [p.arg for p in a.args]
        if not self.func and "stream" in self.params:
            raise self.error(
                fdef, "the parameter name 'stream' is reserved: a call's stream= is "
                "the launch's stream (docs/kernels.md); rename the parameter")
        for stmt in ast.walk(fdef):
            if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        self.locals.add(t.id)
            elif isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
                self.locals.add(stmt.target.id)
        for stmt in ast.walk(fdef):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                spec = self.local_array_spec(stmt.value)
                if spec is not None:
                    self.declare_local_array(stmt, spec)
        body = fdef.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value,
                                                                ast.Constant):
            body = body[1:]  # the docstring
        result = None
        if not self.func and body and isinstance(body[-1], ast.Return):
            ret = body[-1]
            body = body[:-1]
            if ret.value is not None:
                if isinstance(ret.value, (ast.Tuple, ast.List)):
                    raise self.error(ret, "a kernel returns one scalar")
                result = self.expr(ret.value)
        stmts = self.block(body)
        for p in self.array_params:
            if p in self.locals:
                raise self.error(fdef, f"array parameter '{p}' cannot be reassigned")
        if not self.func:
            check_prelude_reads(stmts, self.params, lambda line, msg: kernel_error(
                msg, self.filename, self.file_lines, line))
        total = local_array_bytes(self.local_arrays, stmts)
        if total > LOCAL_ARRAYS_MAX_BYTES:
            raise self.error(fdef, f"the local arrays of '{self.name}' and of the "
                             f"funcs it calls take {total} bytes in all; at most "
                             f"{LOCAL_ARRAYS_MAX_BYTES} fit (they live on the stack of "
                             "the thread that runs each iteration): make them "
                             "smaller, or pass an array")
        parallel, reductions = (False, {}) if self.func else parallel_plan(
            stmts, self.params, result)
        return ir.KernelIR(
            name=self.name, filename=self.filename, params=self.params, body=stmts,
            array_params=set(self.array_params), stored=set(self.stored),
            parallel=parallel, first_use=dict(self.first_use),
            lookup=functools.partial(read_name, self.fn), file_lines=self.file_lines, result=result,
            reductions=reductions, local_arrays=dict(self.local_arrays),
            read_first=read_before_loop(stmts, self.params) if parallel else set())

    def local_array_spec(self, value: ast.expr) -> tuple[ast.Call, Any] | None:
        """(call, dtype object) when value is a tack.local_array(...) call."""
        if not (isinstance(value, ast.Call)
                and self.resolve(value.func) is intrinsics.local_array):
            return None
        if value.keywords or len(value.args) != 2:
            raise self.error(value, "tack.local_array(shape, dtype) takes a constant "
                             "shape and a dtype, positionally")
        dtype = self.resolve(value.args[1])
        if not isinstance(dtype, _tack.dtype) or dtype.ncomponents != 1:
            raise self.error(value.args[1], "the dtype of tack.local_array is a scalar "
                             "Tack dtype such as tack.f32 or tack.i64")
        return value, dtype

    def declare_local_array(self, stmt: ast.Assign, spec: tuple[ast.Call, Any]) -> None:
        call, dtype = spec
        target = stmt.targets[0]
        if not isinstance(target, ast.Name) or target.id in self.params:
            raise self.error(stmt, "tack.local_array(...) is assigned to a local name")
        dims = call.args[0].elts if isinstance(call.args[0], ast.Tuple) \
            else [call.args[0]]
        shape = tuple(d.value for d in dims if isinstance(d, ast.Constant)
                      and type(d.value) is int and d.value > 0)
        if not dims or len(shape) != len(dims):
            raise self.error(call, "the shape of tack.local_array is a tuple of "
                             "constant positive ints, such as (3,) or (4, 4)")
        if math.prod(shape) > LOCAL_ARRAY_MAX:
            raise self.error(call, f"tack.local_array holds at most "
                             f"{LOCAL_ARRAY_MAX} elements (it lives on the stack)")
        spec2 = (shape, dtype.name)
        if self.local_arrays.setdefault(target.id, spec2) != spec2:
            raise self.error(stmt, f"local array '{target.id}' is created with two "
                             "shapes or dtypes")
        self.locals.discard(target.id)

    # ---- statements ------------------------------------------------------------

    def block(self, nodes: list[ast.stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for node in nodes:
            s = self.stmt(node)
            if isinstance(s, list):
                out += s
            elif s is not None:
                out.append(s)
        return out

    def stmt(self, node: ast.stmt) -> ir.Stmt | list[ir.Stmt] | None:
        line = node.lineno
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                raise self.error(node, "chained assignment (a = b = c) is not supported "
                                 "in kernels; assign one name at a time")
            atomic = self.atomic(node.value, node.targets[0])
            if atomic is not None:
                return atomic
            if self.local_array_spec(node.value) is not None:
                name = node.targets[0]
                assert isinstance(name, ast.Name)
                shape, dtype = self.local_arrays[name.id]
                return ir.LocalArray(line, name.id, shape, dtype)
            target = self.target(node.targets[0])
            self.whole_value = node.value
            return ir.Assign(line, target, self.expr(node.value))
        if isinstance(node, ast.AugAssign):
            target = self.target(node.target)
            op = BINOPS.get(type(node.op))
            if op is None:
                raise self.error(node, "this operator is not supported in kernels")
            current = (ir.Name(line, target.id) if isinstance(target, ir.Name) else
                       ir.Element(line, target.array, target.indices, target.component))
            return ir.Assign(line, target, ir.BinOp(line, op, current,
                                                    self.expr(node.value)), aug=True)
        if isinstance(node, ast.AnnAssign):
            raise self.error(node, "annotated assignments are not supported in kernels; "
                             "types are inferred (use float(x) or int(x) to convert)")
        if isinstance(node, ast.If):
            return ir.If(line, self.expr(node.test), self.block(node.body),
                         self.block(node.orelse))
        if isinstance(node, ast.While):
            if node.orelse:
                raise self.else_error(node, "while ... else is not supported in "
                                      "kernels; use a flag set before break")
            self.loop_depth += 1
            body = self.block(node.body)
            self.loop_depth -= 1
            return ir.While(line, self.expr(node.test), body)
        if isinstance(node, ast.For):
            return self.for_loop(node)
        if isinstance(node, (ast.Break, ast.Continue)):
            if self.loop_depth == 0:
                raise self.error(node, "break/continue outside a loop")
            return ir.Break(line) if isinstance(node, ast.Break) else ir.Continue(line)
        if isinstance(node, ast.Pass):
            return None
        if isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value,
                                                                   str):
                return None  # a string used as a comment
            atomic = self.atomic(node.value, None)
            if atomic is not None:
                return atomic
            if isinstance(node.value, ast.Call) and isinstance(
                    self.resolve(node.value.func), Func):
                self.whole_value = node.value
                call = self.expr(node.value)
                assert isinstance(call, ir.FuncCall)
                return ir.CallStmt(line, call)
            if isinstance(node.value, ast.Call):
                self.expr(node.value)  # a call a kernel cannot make says why
            raise self.error(node, "an expression statement has no effect in a kernel; "
                             "assign its value to a local or an array element")
        if isinstance(node, ast.Return) and self.func:
            if isinstance(node.value, (ast.Tuple, ast.List)):
                raise self.error(node, "a func returns one scalar")
            return ir.Return(line, None if node.value is None else
                             self.expr(node.value))
        if isinstance(node, ast.Return):
            raise self.error(node, "a kernel returns once, as its last statement "
                             "(return total); to stop early use break or if/else")
        what = type(node).__name__
        raise self.error(node, f"'{what}' statements are not supported in kernels")

    def atomic(self, value: ast.expr,
               target: ast.expr | None) -> list[ir.Stmt] | None:
        """tack.atomic_<op>(a, i, ..., v) as a statement, or as the whole value of
        an assignment (old = ..., out[i] = ...); None when value is no atomic
        call. An element target gets the old value through a local of its own
        (named with a '.', which no Python name has)."""
        if not isinstance(value, ast.Call):
            return None
        b = kbuiltins.lookup(self.resolve(value.func))
        if b is None or b.kind != "atomic":
            return None
        if value.keywords or any(isinstance(a, ast.Starred) for a in value.args):
            raise self.error(value, f"{b.name}() takes positional arguments only")
        if len(value.args) < 3 or not isinstance(value.args[0], ast.Name):
            raise self.error(value, f"{b.name}(a, i, [j, ...], v) takes an array "
                             "parameter, one index per axis and a value")
        name = value.args[0].id
        self.use_array(name, value)
        if name not in self.local_arrays:
            self.stored.add(name)
        element = ir.Element(value.lineno, name,
                             [self.expr(i) for i in value.args[1:-1]])
        line = value.lineno
        op = b.name.removeprefix("tack.atomic_")
        if target is None:
            return [ir.Atomic(line, op, element, self.expr(value.args[-1]))]
        dest = self.target(target)
        if isinstance(dest, ir.Name):
            return [ir.Atomic(line, op, element, self.expr(value.args[-1]), dest)]
        old = f".old{line}.{value.col_offset}"
        return [ir.Atomic(line, op, element, self.expr(value.args[-1]),
                          ir.Name(line, old)),
                ir.Assign(line, dest, ir.Name(line, old))]

    def for_loop(self, node: ast.For) -> ir.For:
        if node.orelse:
            raise self.else_error(node, "for ... else is not supported in kernels; "
                                  "use a flag set before break")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "a kernel for loop takes one name: "
                             "for i in range(...)")
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and self.scope.get(it.func.id) is range and it.func.id not in self.locals
                and not it.keywords and 1 <= len(it.args) <= 3):
            raise self.error(it, "kernel for loops run over range(stop), "
                             "range(start, stop) or range(start, stop, step) only")
        args = [self.expr(a) for a in it.args]
        line = node.lineno
        start: ir.Expr
        stop: ir.Expr
        step: ir.Expr
        if len(args) == 1:
            start, stop, step = ir.Const(line, 0), args[0], ir.Const(line, 1)
        elif len(args) == 2:
            start, stop, step = args[0], args[1], ir.Const(line, 1)
        else:
            start, stop, step = args
        if isinstance(step, ir.Const) and step.value == 0:
            raise self.error(it, "range() step must not be zero")
        self.loop_depth += 1
        body = self.block(node.body)
        self.loop_depth -= 1
        if node.target.id in self.params:
            self.use_scalar(node.target.id, node)
        return ir.For(line, node.target.id, start, stop, step, body)

    def target(self, node: ast.expr) -> ir.Name | ir.Element:
        if isinstance(node, ast.Name):
            if node.id in self.local_arrays:
                raise self.error(node, f"local array '{node.id}' is assigned only by "
                                 "tack.local_array(...); store to its elements")
            if node.id in self.array_params:
                raise self.error(node, f"array parameter '{node.id}' cannot be "
                                 "reassigned")
            self.use_scalar(node.id, node) if node.id in self.params else None
            return ir.Name(node.lineno, node.id)
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            el = self.expr(node)
            if isinstance(el, ir.Element):
                if el.array not in self.local_arrays:
                    self.stored.add(el.array)
                return el
        if isinstance(node, (ast.Tuple, ast.List)):
            raise self.error(node, "tuple assignment is not supported in kernels; "
                             "assign one name at a time")
        raise self.error(node, "a kernel can assign to a local name or an array "
                         "element only")

    # ---- expressions -----------------------------------------------------------

    def use_array(self, name: str, node: ast.AST) -> None:
        if name in self.local_arrays:
            return
        if name not in self.params:
            raise self.error(node, f"'{name}' is not an array parameter of the kernel")
        if name in self.locals:
            raise self.error(node, f"array parameter '{name}' cannot be reassigned")
        self.array_params.add(name)
        self.first_use.setdefault(name, getattr(node, "lineno", self.first))

    def use_scalar(self, name: str, node: ast.AST) -> None:
        self.first_use.setdefault(name, getattr(node, "lineno", self.first))

    def const(self, node: ast.expr, value: Any) -> ir.Const:
        if isinstance(value, (bool, float)):
            return ir.Const(node.lineno, value)
        if isinstance(value, int):
            if not INT64_MIN <= value <= INT64_MAX:
                raise self.error(node, f"the integer {value} does not fit in int64")
            return ir.Const(node.lineno, value)
        raise self.error(node, f"constants of type {type(value).__name__} are not "
                         "supported in kernels (numbers and bools only)")

    def expr(self, node: ast.expr) -> ir.Expr:
        line = node.lineno
        if isinstance(node, ast.Constant):
            return self.const(node, node.value)
        if isinstance(node, ast.Name):
            if node.id in self.params:
                self.use_scalar(node.id, node)
                return ir.Name(line, node.id)
            if node.id in self.locals:
                return ir.Name(line, node.id)
            return ir.Global(line, node.id)
        if isinstance(node, ast.BinOp):
            op = BINOPS.get(type(node.op))
            if op is None:
                raise self.error(node, "the @ operator is not supported in kernels")
            return ir.BinOp(line, op, self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.UnaryOp):
            op = UNOPS[type(node.op)]
            lit = node.operand
            if op == "-" and isinstance(lit, ast.Constant) and type(lit.value) is int:
                return self.const(node, -lit.value)  # -9223372036854775808 fits
            operand = self.expr(node.operand)
            if op == "-" and isinstance(operand, ir.Const) and not isinstance(
                    operand.value, bool):
                return self.const(node, -operand.value)
            return ir.UnaryOp(line, op, operand)
        if isinstance(node, ast.BoolOp):
            return ir.BoolOp(line, "and" if isinstance(node.op, ast.And) else "or",
                             [self.expr(v) for v in node.values])
        if isinstance(node, ast.Compare):
            ops = []
            for o in node.ops:
                if type(o) not in CMPOPS:
                    raise self.error(node, "only < <= > >= == != comparisons are "
                                     "supported in kernels (not is / in)")
                ops.append(CMPOPS[type(o)])
            return ir.Compare(line, ops, [self.expr(node.left)] +
                              [self.expr(c) for c in node.comparators])
        if isinstance(node, ast.IfExp):
            return ir.IfExp(line, self.expr(node.test), self.expr(node.body),
                            self.expr(node.orelse))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        what = type(node).__name__
        hint = {
            "List": "lists", "Tuple": "tuples", "Dict": "dicts", "Set": "sets",
            "ListComp": "list comprehensions", "Lambda": "lambdas",
            "JoinedStr": "f-strings", "NamedExpr": "the := operator",
        }.get(what, f"'{what}' expressions")
        raise self.error(node, f"{hint} are not supported in kernels")

    def resolve(self, node: ast.expr) -> Any:
        """The object a function name or module.attr (math.sqrt, tack.f32) refers
        to, or None."""
        if isinstance(node, ast.Name) and node.id not in self.locals \
                and node.id not in self.params:
            return self.scope.get(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            mod = self.resolve(node.value)
            if isinstance(mod, types.ModuleType):
                return getattr(mod, node.attr, None)
        return None

    def call(self, node: ast.Call) -> ir.Expr:
        line = node.lineno
        if node.keywords:
            raise self.error(node, "keyword arguments are not supported in kernel calls")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.error(node, "*args is not supported in kernel calls")
        target = self.resolve(node.func)
        if target is len:
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
                raise self.error(node, "len() takes one array parameter")
            self.use_array(node.args[0].id, node)
            return ir.Shape(line, node.args[0].id, 0)
        if isinstance(target, Func):
            return self.func_call(node, target)
        if target is builtins.print:
            raise self.error(node, "printing is not supported in kernels: store the "
                             "value to an array (or return it) and print it in Python")
        b = kbuiltins.lookup(target) if target is not None else None
        if b is None:
            src = ast.unparse(node.func)
            raise self.error(node, f"'{src}' cannot be called in a kernel; kernels call "
                             "float, int, bool, abs, min, max, round, len, the "
                             "dtype conversions (tack.f32(x), tack.i32(x), ...) and "
                             "the math functions listed in docs/kernels.md")
        if b.kind == "atomic":
            raise self.error(node, f"{b.name}() is a statement of its own, or the "
                             f"value of an assignment: old = {b.name}(a, i, v)")
        args = [self.expr(a) for a in node.args]
        lo, hi = b.arity
        if not lo <= len(args) <= hi:
            raise self.error(node, f"{b.name}() takes {kbuiltins.arity_text(b)} "
                             f"arguments in a kernel, got {len(args)}")
        return ir.Call(line, b.name, args)

    def func_call(self, node: ast.Call, f: Func) -> ir.FuncCall:
        whole, self.whole_value = self.whole_value is node, None
        fir = func_ir(f)
        name = f.fn.__name__
        if len(node.args) != len(fir.params):
            raise self.error(node, f"tack.func '{name}' takes {len(fir.params)} "
                             f"arguments, got {len(node.args)}")
        if fir.stored and not whole:
            raise self.error(node, f"tack.func '{name}' stores to an array, so it is "
                             "called as a statement of its own or as the whole value "
                             "of an assignment (never twice by one expression)")
        args: list[ir.Expr] = []
        for p, a in zip(fir.params, node.args, strict=True):
            if p in fir.array_params:
                if not isinstance(a, ast.Name):
                    raise self.error(a, f"parameter '{p}' of tack.func '{name}' is an "
                                     "array: pass an array parameter by name")
                self.use_array(a.id, a)
                if p in fir.stored and a.id not in self.local_arrays:
                    self.stored.add(a.id)
                args.append(ir.Name(a.lineno, a.id))
            else:
                args.append(self.expr(a))
        return ir.FuncCall(node.lineno, f, args)

    def subscript(self, node: ast.Subscript) -> ir.Expr:
        line = node.lineno
        base = node.value
        if isinstance(base, ast.Attribute) and base.attr == "shape":
            if not isinstance(base.value, ast.Name):
                raise self.error(node, "shape belongs to an array parameter: a.shape[k]")
            self.use_array(base.value.id, node)
            axis, sign = node.slice, 1
            if isinstance(axis, ast.UnaryOp) and isinstance(axis.op, ast.USub):
                axis, sign = axis.operand, -1
            if not (isinstance(axis, ast.Constant) and type(axis.value) is int
                    and axis.value >= 0):
                raise self.error(node, "a.shape[k] needs a constant integer k "
                                 "(a.shape[0], a.shape[-1])")
            if sign < 0 and axis.value > 0:  # counts from the end, once ndim is known
                return ir.Shape(line, base.value.id, -axis.value, from_end=True)
            return ir.Shape(line, base.value.id, axis.value)
        if isinstance(node.slice, ast.Slice) or (
                isinstance(node.slice, ast.Tuple)
                and any(isinstance(e, ast.Slice) for e in node.slice.elts)):
            raise self.error(node, "slices are not supported in kernels; index single "
                             "elements (a[i, j])")
        if isinstance(base, ast.Name):
            self.use_array(base.id, node)
            idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return ir.Element(line, base.id, [self.expr(i) for i in idx])
        if isinstance(base, ast.Subscript):
            inner = self.expr(base)
            if isinstance(inner, ir.Element) and inner.component is None:
                if isinstance(node.slice, ast.Tuple):
                    raise self.error(node, "a vec element takes one component index")
                return ir.Element(line, inner.array, inner.indices,
                                  self.expr(node.slice))
        raise self.error(node, "kernels index array parameters only: a[i], a[i, j], "
                         "and a vec component as p[i][c] or p[i].x")

    def attribute(self, node: ast.Attribute) -> ir.Expr:
        line = node.lineno
        target = self.resolve(node)
        if isinstance(node.value, ast.Name) and self.resolve(node.value) is math:
            if node.attr in kbuiltins.MATH_CONSTS:
                return ir.Const(line, kbuiltins.MATH_CONSTS[node.attr])
            raise self.error(node, f"math.{node.attr} is not available in kernels "
                             "as a value")
        del target
        if isinstance(node.value, ast.Name) and node.attr in ("ndim", "size"):
            self.use_array(node.value.id, node)
            return ir.Shape(line, node.value.id, -1 if node.attr == "ndim" else -2)
        if isinstance(node.value, ast.Subscript) and node.attr in COMPONENTS:
            inner = self.expr(node.value)
            if isinstance(inner, ir.Element) and inner.component is None:
                return ir.Element(line, inner.array, inner.indices,
                                  ir.Const(line, COMPONENTS[node.attr]))
        if node.attr == "shape":
            raise self.error(node, "a.shape is used as a.shape[k] in kernels")
        raise self.error(node, f"attribute '.{node.attr}' is not supported in kernels")


def parallel_plan(body: list[ir.Stmt], params: list[str],
                  result: ir.Expr | None = None) -> tuple[bool, dict[str, str]]:
    """Whether the kernel's last top-level statement is a parallel loop, and the
    names that loop reduces (name -> operator).

    The rule: the body is zero or more statements that store to no array, then one
    ``for`` over range (then, optionally, ``return v``). Every chunk of the loop
    (every GPU thread, and the step that folds the partials) evaluates those
    statements and the range's arguments again, so they must give the same values
    every time: they may read no element of an array the loop stores to
    (read_before_loop; an argument overlapping such an array is refused at dispatch,
    see tack_kernel_args_read_first_overlap). Its iterations run in parallel unless
    the loop body breaks out of that loop, assigns a name that is also assigned before
    the loop or is a parameter (a value carried from one iteration to the next)
    *other than a reduction*, uses a name it assigns before this iteration has
    assigned it (a value the previous iteration left: ``out[i] = prev; prev =
    x[i]``), or stores (itself or through a func) to a local array created before
    the loop. A reduction is a name only updated with ``+=``, ``*=``, ``|=``,
    ``&=``, ``^=`` or ``s = min(s, ...)`` / ``max`` (one operator per name) and read
    nowhere else in the loop; each chunk keeps a partial of it. The returned value
    may read parameters, names assigned before the loop and reductions. Otherwise
    the whole kernel runs serially, in order, exactly as Python would.
    """
    serial: tuple[bool, dict[str, str]] = (False, {})
    if not body or not isinstance(body[-1], ir.For):
        return serial
    prelude, loop = body[:-1], body[-1]
    if any(ir.stores(s) for s in prelude) or ir.breaks_out(loop.body):
        return serial
    if read_before_loop(body, params) & ir.stored_names(loop.body):
        return serial  # the prelude reads memory the loop changes
    before = {n for s in prelude for n in ir.assigned(s)} | set(params)
    inside = {n for s in loop.body for n in ir.assigned(s)}
    if loop.var in before:
        return serial
    declared = {s.name for s in ir.walk(prelude) if isinstance(s, ir.LocalArray)}
    if declared & ir.stored_names(loop.body):
        return serial  # one local array shared by every iteration
    if ir.unassigned_uses(loop.body, inside - before - {loop.var}):
        return serial  # a value carried from the previous iteration
    reductions = {}
    for name in sorted(before & inside):
        op = ir.reduction_op(loop.body, name)
        if op is None:
            return serial
        reductions[name] = op
    if result is not None and any(
            isinstance(x, ir.Name) and (x.id in inside | {loop.var})
            and x.id not in reductions for x in ir.subexprs(result)):
        return serial  # the value depends on the last iteration: Python's order
    return True, reductions


def local_array_bytes(local_arrays: dict[str, tuple[tuple[int, ...], str]],
                      body: list[ir.Stmt]) -> int:
    """Bytes of the local arrays of a body's frame: its own, and those of every
    func call in it (each call inlines the func with its arrays)."""
    total = sum(math.prod(shape) * ir.DTYPES[dt].itemsize
                for shape, dt in local_arrays.values())
    for s in ir.walk(body):
        for e in ir.stmt_exprs(s):
            for x in ir.subexprs(e):
                if isinstance(x, ir.FuncCall):
                    fir = x.func.parsed
                    total += local_array_bytes(fir.local_arrays, fir.body)
    return total


def read_before_loop(body: list[ir.Stmt], params: list[str]) -> set[str]:
    """The array parameters whose elements the statements before the kernel's last
    loop, or that loop's range arguments, read (themselves or through a func they
    pass the array to)."""
    if not body or not isinstance(body[-1], ir.For):
        return set()
    loop = body[-1]
    exprs = [e for s in ir.walk(body[:-1]) for e in ir.stmt_exprs(s)]
    out: set[str] = set()
    for e in [*exprs, loop.start, loop.stop, loop.step]:
        for x in ir.subexprs(e):
            if isinstance(x, ir.Element) and x.array in params:
                out.add(x.array)
            elif isinstance(x, ir.FuncCall):
                out |= {a.id for a in x.args
                        if isinstance(a, ir.Name) and a.id in params}
    return out


def check_prelude_reads(body: list[ir.Stmt], params: list[str],
                        error: Callable[[int, str], KernelError]) -> None:
    """A kernel that ends with a for loop may not read, before that loop, a name
    only the loop assigns (its variable, or a local of its body): in Python that is
    an UnboundLocalError."""
    if not body or not isinstance(body[-1], ir.For):
        return
    prelude, loop = body[:-1], body[-1]
    early = {n for s in prelude for n in ir.assigned(s)} | set(params)
    late = ({n for s in loop.body for n in ir.assigned(s)} | {loop.var}) - early
    for s in [*ir.walk(prelude), loop]:
        exprs = [loop.start, loop.stop, loop.step] if s is loop else ir.stmt_exprs(s)
        for e in exprs:
            for x in ir.subexprs(e):
                if isinstance(x, ir.Name) and x.id in late:
                    raise error(s.line, f"'{x.id}' is read before it is assigned: only "
                                f"the loop at line {loop.line} assigns it (Python "
                                "raises UnboundLocalError here)")


def _nonlocals(fn: Callable[..., Any]) -> dict[str, Any]:
    return dict(inspect.getclosurevars(fn).nonlocals) if fn.__closure__ else {}


def read_name(fn: Callable[..., Any], name: str) -> Any:
    """What a global or closure name of fn refers to now (at specialization time),
    read from fn itself."""
    closure = _nonlocals(fn)
    if name in closure:
        return closure[name]
    if name in fn.__globals__:
        return fn.__globals__[name]
    return getattr(builtins, name, _MISSING)


def parse_kernel(fn: Callable[..., Any], source: str | None = None) -> ir.KernelIR:
    """The IR of fn (of the text source when not None: see tack.kernel.source);
    raises KernelError at the first unsupported construct."""
    return _Parser(fn, read_source(fn, source, "kernel")).parse()


def func_ir(f: Func) -> ir.KernelIR:
    """The IR of a @tack.func body (see tack.kernel.func), parsed once, from the text
    given to the decorator when there was one; KernelError on unsupported Python or
    on recursion, direct or through other funcs."""
    if f.is_parsed():
        return f.parsed
    stack: list[Func] = getattr(_parsing, "stack", [])
    if f in stack:
        cycle = stack[stack.index(f):] + [f]
        names = " -> ".join(g.fn.__name__ for g in cycle)
        raise KernelError(f"tack.func '{f.fn.__name__}' calls itself ({names}); "
                          "kernels and funcs cannot recurse: write a loop")
    _parsing.stack = [*stack, f]
    try:
        parsed = _Parser(f.fn, f.definition(), func=True).parse()
    finally:
        _parsing.stack = stack
    return f.keep(parsed)
