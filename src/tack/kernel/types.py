"""Kernel IR + argument signature -> typed IR (one specialization).

Types: bool, int64, float32, float64. A value read from an array has the array's
element type (integers widen to int64, float16 to float32); literals are "weak" and
take the float type they meet (NumPy's rule for Python scalars, so ``x * 0.5``
stays float32 when x is); otherwise mixing float32 with int64 or float64 gives
float64. A local has one type for the whole kernel: the widest of the values
assigned to it (bool < int64 < float32 < float64).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from tack._tack import _KERNEL_MAX_PARTIAL_SIZE, KernelError
from tack.kernel import builtins, ir, lir
from tack.kernel.ir import (
    BOOL,
    F32,
    F64,
    INT,
    ArrayType,
    Expr,
    KernelIR,
    ScalarType,
    Stmt,
    is_weak,
    promote,
)


@dataclass
class TypedKernel:
    """One specialization: the typed body and everything a code generator needs."""

    # (the field ir hides the module here: the class names the IR's types directly)
    ir: KernelIR
    body: list[Stmt]
    arrays: dict[str, ArrayType]  # array parameters
    scalars: dict[str, ScalarType]  # scalar parameters: the kind passed
    locals: dict[str, ScalarType]  # every local name (scalar parameters included)
    debug: bool
    result: Expr | None = None  # the returned value, typed
    # the typed @tack.func instances this specialization calls (shared with them),
    # by FuncCall.key
    funcs: dict[tuple[Any, ...], TypedKernel] = field(default_factory=dict)
    returns: ScalarType | None = None  # a func instance: the type it returns
    cname: str = ""  # a func instance: its name in the generated source


def signature_types(kir: ir.KernelIR, signature: tuple[Any, ...]) -> tuple[
        dict[str, ir.ArrayType], dict[str, ScalarType]]:
    arrays: dict[str, ir.ArrayType] = {}
    scalars: dict[str, ScalarType] = {}
    kinds = {"int": INT, "float": F64, "bool": BOOL, "float32": F32}
    for name, sig in zip(kir.params, signature, strict=False):
        if isinstance(sig, tuple):
            arrays[name] = ir.ArrayType(sig[1], sig[2])
        else:
            if name in kir.array_params:
                raise TypeError(
                    f"kernel '{kir.name}': parameter '{name}' is used as an array "
                    f"(line {kir.first_use.get(name)}) but got a {sig}")
            scalars[name] = kinds[sig]
    return arrays, scalars


def join_local(a: ScalarType | None, b: ScalarType) -> ScalarType:
    return b if a is None or b.rank > a.rank else a


class Typer:
    def __init__(self, kir: ir.KernelIR, arrays: dict[str, ir.ArrayType],
                 scalars: dict[str, ScalarType], debug: bool = False,
                 funcs: dict[tuple[Any, ...], TypedKernel] | None = None) -> None:
        self.kir = kir
        self.arrays = arrays
        self.env: dict[str, ScalarType] = dict(scalars)
        self.final = False
        self.debug = debug
        self.funcs = {} if funcs is None else funcs
        self.returns: ScalarType | None = None  # a func: what its returns meet in
        self.bare_return = False

    def error(self, line: int, msg: str) -> KernelError:
        lines = self.kir.file_lines
        text = lines[line - 1] if 0 < line <= len(lines) else None
        return KernelError(msg, (self.kir.filename, line, 1, text))

    # ---- statements ------------------------------------------------------------

    def run(self, body: list[ir.Stmt], result: ir.Expr | None = None) -> None:
        for _ in range(64):
            before = dict(self.env)
            self.block(body)
            if self.env == before:
                break
        self.final = True
        self.block(body)
        if result is not None:
            self.expr(result)

    def block(self, body: list[ir.Stmt]) -> None:
        for s in body:
            self.stmt(s)

    def assign_name(self, name: str, t: ScalarType | None) -> None:
        if t is not None:
            self.env[name] = join_local(self.env.get(name), t)

    def stmt(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.CallStmt):
            self.func_call(s.call)
        elif isinstance(s, ir.Return):
            if s.value is None:
                self.bare_return = True
            else:
                t = self.expr(s.value)
                if t is not None:
                    self.returns = join_local(self.returns, t)
            if self.final and self.bare_return and self.returns is not None:
                raise self.error(s.line, f"tack.func '{self.kir.name}' returns a "
                                 "value on one path and none on another")
        elif isinstance(s, ir.Assign):
            t = self.expr(s.value)
            if isinstance(s.target, ir.Name):
                if s.target.id in self.arrays:
                    raise self.error(s.line, f"array parameter '{s.target.id}' cannot "
                                     "be reassigned")
                self.assign_name(s.target.id, t)
                if self.final:
                    s.target.ty = self.env[s.target.id]
            else:
                self.element(s.target, store=True)
        elif isinstance(s, ir.Atomic):
            self.atomic(s)
        elif isinstance(s, ir.If):
            self.expr(s.test)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ir.While):
            self.expr(s.test)
            self.block(s.body)
        elif isinstance(s, ir.For):
            for e in (s.start, s.stop, s.step):
                t = self.expr(e)
                if self.final and t is not None and t.is_float:
                    raise self.error(s.line, "range() arguments must be integers; "
                                     "convert with int(x)")
            self.assign_name(s.var, INT)
            self.block(s.body)

    def atomic(self, s: ir.Atomic) -> None:
        t = self.element(s.element, store=True)
        arr = self.arrays[s.element.array]
        if arr.dtype not in builtins.ATOMIC_DTYPES:
            raise self.error(s.line, f"tack.atomic_{s.op} needs an array of "
                             f"{', '.join(builtins.ATOMIC_DTYPES)} elements; "
                             f"'{s.element.array}' holds {arr.dtype}")
        self.expr(s.value)
        if s.result is not None:
            self.assign_name(s.result.id, t)
            if self.final:
                s.result.ty = self.env[s.result.id]

    # ---- expressions -----------------------------------------------------------

    def expr(self, e: ir.Expr) -> ScalarType | None:
        t = self._expr(e)
        if self.final and t is None:
            raise self.error(e.line, "a value here has no type: a local is read "
                             "before any assignment to it")
        e.ty = t  # provisional until the final pass; typing rules read it
        return t

    def _expr(self, e: ir.Expr) -> ScalarType | None:
        if isinstance(e, ir.Const):
            c = e.value
            return BOOL if isinstance(c, bool) else INT if isinstance(c, int) else F64
        if isinstance(e, ir.Global):
            return self.global_value(e)
        if isinstance(e, ir.Name):
            if e.id in self.arrays:
                raise self.error(e.line, f"array parameter '{e.id}' is not a value: "
                                 "index it (a[i]) or use a.shape[k] / len(a)")
            t = self.env.get(e.id)
            if t is None and self.final:
                raise self.error(e.line, f"local '{e.id}' is read before it is "
                                 "assigned")
            return t
        if isinstance(e, ir.Element):
            return self.element(e, store=False)
        if isinstance(e, ir.Shape):
            arr = self.array(e.array, e.line)
            if e.from_end:
                if e.axis + arr.ndim < 0:
                    raise self.error(e.line, f"'{e.array}' has {arr.ndim} "
                                     f"dimension(s); shape[{e.axis}] does not exist")
                e.axis, e.from_end = e.axis + arr.ndim, False
            if e.axis >= arr.ndim:
                raise self.error(e.line, f"'{e.array}' has {arr.ndim} dimension(s); "
                                 f"shape[{e.axis}] does not exist")
            if e.axis == 0 and arr.ndim == 0:
                raise self.error(e.line, f"len() of 0-d array '{e.array}'")
            return INT
        if isinstance(e, ir.BinOp):
            return self.binop(e)
        if isinstance(e, ir.UnaryOp):
            t = self.expr(e.operand)
            if t is None:
                return None
            if e.op == "not":
                return BOOL
            if e.op == "~":
                if t.is_float:
                    raise self.error(e.line, "~ needs an integer operand")
                return INT
            return INT if t == BOOL else t
        if isinstance(e, ir.Compare):
            ts = _all_typed([self.expr(o) for o in e.operands])
            if ts is None:
                return None
            e.meet = [promote(ta, tb, is_weak(a), is_weak(b)) for ta, tb, a, b in zip(
                ts, ts[1:], e.operands, e.operands[1:], strict=False)]
            return BOOL
        if isinstance(e, ir.BoolOp):
            # Python's and/or give one of their operands: the type all of them meet
            # in (bool when every operand is a bool).
            ts = _all_typed([self.expr(v) for v in e.values])
            if ts is None:
                return None
            r, w = ts[0], is_weak(e.values[0])
            for v, t in zip(e.values[1:], ts[1:], strict=False):
                r = promote(r, t, w, is_weak(v))
                w = w and is_weak(v)
            return r
        if isinstance(e, ir.IfExp):
            self.expr(e.test)
            a, b = self.expr(e.body), self.expr(e.orelse)
            if a is None or b is None:
                return a or b if not self.final else None
            return promote(a, b, is_weak(e.body), is_weak(e.orelse))
        if isinstance(e, ir.Call):
            return self.call(e)
        if isinstance(e, ir.FuncCall):
            t = self.func_call(e)
            if t is None and self.final:
                raise self.error(e.line, f"tack.func '{e.func.fn.__name__}' returns no "
                                 "value; call it as a statement")
            return t
        raise self.error(e.line, f"internal: unknown node {type(e).__name__}")

    def global_value(self, e: ir.Global) -> ScalarType:
        v = self.kir.lookup(e.id)
        if isinstance(v, (bool, int, float)) and not (
                isinstance(v, int) and not -(2**63) <= v < 2**63):
            e.value = v  # type: ignore[attr-defined]
            return BOOL if isinstance(v, bool) else INT if isinstance(v, int) else F64
        if isinstance(v, int):
            raise self.error(e.line, f"name '{e.id}' is an int that does not fit in "
                             "int64 (kernel integers are int64); use a value in "
                             "[-2**63, 2**63), or pass it as a float")
        tname = type(v).__name__
        what = "is not defined" if v is not None and tname == "object" \
            else f"is {'an' if tname[:1] in 'aeiouAEIOU' else 'a'} {tname}, not a number"
        raise self.error(e.line, f"name '{e.id}' {what}; a kernel reads parameters, "
                         "its own locals and global numbers (int, float, bool)")

    def array(self, name: str, line: int) -> ir.ArrayType:
        arr = self.arrays.get(name)
        if arr is None:
            raise self.error(line, f"'{name}' is used as an array but the argument "
                             "passed for it is a scalar")
        return arr

    def element(self, e: ir.Element, store: bool) -> ScalarType:
        arr = self.array(e.array, e.line)
        if len(e.indices) != arr.ndim:
            raise self.error(e.line, f"'{e.array}' has {arr.ndim} dimension(s) but is "
                             f"indexed with {len(e.indices)}; kernels index every axis "
                             "(a[i, j])")
        for i in e.indices:
            t = self.expr(i)
            if self.final and t is not None and t.is_float:
                raise self.error(e.line, "array indices must be integers; convert "
                                 "with int(x)")
        if e.component is not None:
            if arr.components == 1:
                raise self.error(e.line, f"'{e.array}' has scalar elements "
                                 f"({arr.dtype}); only vec arrays take a component")
            t = self.expr(e.component)
            if self.final and t is not None and t.is_float:
                raise self.error(e.line, "a vec component index must be an integer")
            if isinstance(e.component, ir.Const) and not (
                    0 <= int(e.component.value) < arr.components):
                raise self.error(e.line, f"component {e.component.value} does not "
                                 f"exist in {arr.dtype}")
        elif arr.components > 1:
            raise self.error(e.line, f"'{e.array}' holds {arr.dtype} elements: read "
                             "and write them by component, p[i][0] or p[i].x")
        if self.final:
            e.ty = arr.load_type
        return arr.load_type

    def binop(self, e: ir.BinOp) -> ScalarType | None:
        a, b = self.expr(e.left), self.expr(e.right)
        if a is None or b is None:
            return None
        wa, wb = is_weak(e.left), is_weak(e.right)
        if e.op in ("&", "|", "^", "<<", ">>"):
            if a.is_float or b.is_float:
                raise self.error(e.line, f"{e.op} needs integer operands")
            return BOOL if (a == b == BOOL and e.op in "&|^") else INT
        r = promote(a, b, wa, wb)
        if e.op == "/":
            return r if r.is_float else F64
        return INT if r == BOOL else r

    def func_call(self, e: ir.FuncCall) -> ScalarType | None:
        """Types the func instance e calls (once per argument types) and gives what it
        returns (None: no value, or argument types not known yet)."""
        fir = e.func.parsed
        arrays: dict[str, ir.ArrayType] = {}
        scalars: dict[str, ScalarType] = {}
        for p, a in zip(fir.params, e.args, strict=True):
            if p in fir.array_params:
                assert isinstance(a, ir.Name)
                arrays[p] = self.array(a.id, a.line)
            else:
                t = self.expr(a)
                if t is None:
                    return None
                scalars[p] = t
        key = _func_key(e, arrays, scalars)
        tf = self.funcs.get(key)
        if tf is None:
            body = copy.deepcopy(fir.body)
            arrays = {**arrays, **local_array_types(fir)}
            typer = Typer(fir, arrays, scalars, self.debug, self.funcs)
            typer.run(body)
            tf = TypedKernel(ir=fir, body=body, arrays=arrays, scalars=scalars,
                             locals=typer.env, debug=self.debug, funcs=self.funcs,
                             returns=typer.returns,
                             cname=f"tk_f{len(self.funcs)}")
            self.funcs[key] = tf
        e.key = key
        return tf.returns

    def call(self, e: ir.Call) -> ScalarType | None:
        ts = [self.expr(a) for a in e.args]
        if None in ts:
            return None
        b = builtins.REGISTRY[e.func]
        if self.final and b.check is not None:
            msg = b.check(e.args)
            if msg is not None:
                raise self.error(e.line, msg)
        return b.typing(e.args)


def _all_typed(ts: list[ScalarType | None]) -> list[ScalarType] | None:
    """ts when every one has a type; None when one has none yet."""
    known = [t for t in ts if t is not None]
    return known if len(known) == len(ts) else None


def local_array_types(kir: ir.KernelIR) -> dict[str, ir.ArrayType]:
    return {n: ir.ArrayType(dt, len(shape)) for n, (shape, dt) in
            kir.local_arrays.items()}


def _func_key(e: ir.FuncCall, arrays: dict[str, ir.ArrayType],
              scalars: dict[str, ScalarType]) -> tuple[Any, ...]:
    return (id(e.func), tuple(sorted(arrays.items())), tuple(scalars.items()))




def specialize(kir: ir.KernelIR, signature: tuple[Any, ...],
               debug: bool) -> TypedKernel:
    """The typed IR of kir for one signature (see tack._tack.Kernel)."""
    arrays, scalars = signature_types(kir, signature)
    arrays.update(local_array_types(kir))
    body = copy.deepcopy(kir.body)
    result = copy.deepcopy(kir.result)
    typer = Typer(kir, arrays, scalars, debug)
    typer.run(body, result)
    if kir.reductions:
        # the widest partial of any target: CUDA's carries, for a float min or max,
        # the trip its value came from (lir.partial_fields)
        fields = [t for n in sorted(kir.reductions) for t in (
            [typer.env[n], INT] if kir.reductions[n] in ("min", "max")
            and typer.env[n].is_float else [typer.env[n]])]
        nbytes = lir.partial_nbytes(fields)
        if nbytes > _KERNEL_MAX_PARTIAL_SIZE:
            raise typer.error(kir.body[-1].line, f"the loop's {len(kir.reductions)} "
                              f"reductions need {nbytes} bytes of partials per chunk; "
                              f"at most {_KERNEL_MAX_PARTIAL_SIZE} are supported: "
                              "reduce into an array with tack.atomic_add instead, or "
                              "split the kernel")
    return TypedKernel(ir=kir, body=body, arrays=arrays, scalars=scalars,
                       locals=typer.env, debug=debug, result=result,
                       funcs=typer.funcs)
