"""The functions a kernel may call: one registry for the parser, the typer and the
lowering.

Each Builtin names the Python objects that resolve to it (so ``from math import
sqrt`` works), how many arguments it takes, its typing rule and its lowering. A
new builtin is one ``register`` call here; no other stage lists builtins.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tack import _tack
from tack.kernel import intrinsics, ir, lir
from tack.kernel.ir import BOOL, F32, F64, INT, ScalarType

if TYPE_CHECKING:
    from tack.kernel.lower import Lowering

MANY = 99  # "or more" arguments


@dataclass(frozen=True)
class Builtin:
    """name: as written in kernels and messages ("float", "math.sqrt").
    typing(args) -> result type, args already typed. check(args) -> a message when
    the (final) argument types are wrong, else None. lower(lw, call) -> lir.Expr."""

    name: str
    objs: tuple[Any, ...]
    arity: tuple[int, int]
    typing: Callable[[list[ir.Expr]], ScalarType]
    lower: Callable[[Lowering, ir.Call], lir.Expr]
    check: Callable[[list[ir.Expr]], str | None] | None = None
    kind: str = "expr"  # or "atomic": a statement of its own (ir.Atomic)


REGISTRY: dict[str, Builtin] = {}
BY_OBJECT: dict[int, Builtin] = {}  # id() of each Python object -> its builtin


def register(b: Builtin) -> None:
    REGISTRY[b.name] = b
    for obj in b.objs:
        BY_OBJECT[id(obj)] = b


def lookup(obj: Any) -> Builtin | None:
    """The builtin a resolved Python object is, or None."""
    b = BY_OBJECT.get(id(obj))
    return b if b is not None and any(o is obj for o in b.objs) else None


def arity_text(b: Builtin) -> str:
    lo, hi = b.arity
    return f"{lo}" if lo == hi else f"{lo} or more" if hi == MANY else f"{lo}-{hi}"


# ---- typing rules ---------------------------------------------------------------


def _ty(e: ir.Expr) -> ScalarType:
    assert e.ty is not None
    return e.ty


def _float_like(args: list[ir.Expr]) -> ScalarType:
    """float32 stays float32; ints and float64 compute in float64."""
    return F32 if _ty(args[0]) == F32 else F64


def _float_meet(args: list[ir.Expr]) -> ScalarType:
    r = ir.meet_all(args)
    return r if r.is_float else F64


def _int_arg(what: str) -> Callable[[list[ir.Expr]], str | None]:
    def check(args: list[ir.Expr]) -> str | None:
        if _ty(args[-1]).is_float:
            return f"{what} must be an integer, as in Python; convert with int(x)"
        return None
    return check


# ---- lowering rules ---------------------------------------------------------------


def _sfx(t: ScalarType) -> ScalarType:
    return F32 if t == F32 else F64


def _lower_round_like(name: str) -> Callable[[Lowering, ir.Call], lir.Expr]:
    """floor, ceil, trunc, round: an int, through the float of the argument."""
    def lower(lw: Lowering, e: ir.Call) -> lir.Expr:
        a0 = e.args[0]
        if not _ty(a0).is_float:
            return lw.ex(a0, INT)
        return lw.float_to_int(lir.Math(name, _ty(a0), [lw.ex(a0)]), _ty(a0))
    return lower


def _lower_minmax(lw: Lowering, e: ir.Call) -> lir.Expr:
    t = _ty(e)
    code = lw.ex(e.args[0], t)
    for a in e.args[1:]:
        code = lir.Helper(f"{e.func}_{lw.suffix(t)}", [code, lw.ex(a, t)])
    return code


def _lower_abs(lw: Lowering, e: ir.Call) -> lir.Expr:
    t = _ty(e)
    if t == INT:
        return lir.Helper("iabs", [lw.ex(e.args[0], INT)])
    return lir.Math("fabs", t, [lw.ex(e.args[0])])


def _lower_isx(name: str) -> Callable[[Lowering, ir.Call], lir.Expr]:
    def lower(lw: Lowering, e: ir.Call) -> lir.Expr:
        a0 = e.args[0]
        if not _ty(a0).is_float:
            return lir.Lit(name == "isfinite", BOOL)
        test = lir.Math(name, _ty(a0), [lw.ex(a0)], generic=True)
        return lir.Bin("!=", test, lir.Lit(0, INT))
    return lower


def _lower_math(cname: str) -> Callable[[Lowering, ir.Call], lir.Expr]:
    def lower(lw: Lowering, e: ir.Call) -> lir.Expr:
        t = _ty(e)
        return lir.Math(cname, t, [lw.ex(a, t) for a in e.args])
    return lower


def _lower_log(lw: Lowering, e: ir.Call) -> lir.Expr:
    t = _ty(e)
    if len(e.args) == 2:
        return lir.Bin("/", lir.Math("log", t, [lw.ex(e.args[0], t)]),
                       lir.Math("log", t, [lw.ex(e.args[1], t)]))
    return lir.Math("log", t, [lw.ex(e.args[0], t)])


def _lower_scale(factor: float) -> Callable[[Lowering, ir.Call], lir.Expr]:
    def lower(lw: Lowering, e: ir.Call) -> lir.Expr:
        t = _ty(e)
        return lir.Bin("*", lw.ex(e.args[0], t), lir.Cast(t, lir.Lit(factor, F64)))
    return lower


def _lower_ldexp(lw: Lowering, e: ir.Call) -> lir.Expr:
    t = _ty(e)
    return lir.Math("ldexp", t, [lw.ex(e.args[0], t),
                                 lir.Helper("ldexp_exp", [lw.ex(e.args[1], INT)])])


# ---- the registry -------------------------------------------------------------------


def _conv(to: ScalarType) -> Callable[[Lowering, ir.Call], lir.Expr]:
    def lower(lw: Lowering, e: ir.Call) -> lir.Expr:
        return lw.ex(e.args[0], to) if to != BOOL else lw.truth(e.args[0])
    return lower


register(Builtin("float", (builtins.float,), (1, 1), lambda a: F64, _conv(F64)))
register(Builtin("int", (builtins.int,), (1, 1), lambda a: INT, _conv(INT)))
register(Builtin("bool", (builtins.bool,), (1, 1), lambda a: BOOL, _conv(BOOL)))
register(Builtin("abs", (builtins.abs,), (1, 1),
                 lambda a: INT if _ty(a[0]) == BOOL else _ty(a[0]), _lower_abs))
for _f in ("min", "max"):
    register(Builtin(_f, (getattr(builtins, _f),), (2, MANY), ir.meet_all,
                     _lower_minmax))
register(Builtin("round", (builtins.round,), (1, 1), lambda a: INT,
                 _lower_round_like("rint")))

# tack.f32(x), tack.int8(x), ...: a conversion to a dtype, by the rules of a store.
# The dtype objects live in the extension; each is reached by its name and alias.
def _dtype_builtin(facts: ir.DtypeFacts) -> None:
    objs = tuple({id(o): o for o in (getattr(_tack, facts.name, None),
                                     getattr(_tack, facts.alias, None))
                  if o is not None}.values())
    load = ir.ArrayType(facts.name, 0).load_type
    register(Builtin("tack." + facts.name, objs, (1, 1), lambda a: load,
                     lambda lw, e: lw.convert(facts, e.args[0])))


for _facts in ir.DTYPES.values():
    if _facts.components == 1:
        _dtype_builtin(_facts)

_FLOAT_UNARY = (
    "sqrt cbrt exp exp2 expm1 log2 log10 log1p sin cos tan asin acos atan sinh cosh "
    "tanh asinh acosh atanh fabs erf erfc lgamma").split()
_FLOAT_BINARY = "pow atan2 hypot copysign fmod remainder nextafter".split()


def _math(name: str, arity: tuple[int, int],
          typing: Callable[[list[ir.Expr]], ScalarType],
          lower: Callable[[Lowering, ir.Call], lir.Expr],
          check: Callable[[list[ir.Expr]], str | None] | None = None) -> None:
    obj = getattr(math, name, None)
    if obj is not None:  # cbrt and exp2 are new in Python 3.11
        register(Builtin("math." + name, (obj,), arity, typing, lower, check))


for _f in _FLOAT_UNARY:
    _math(_f, (1, 1), _float_like, _lower_math(_f))
_math("gamma", (1, 1), _float_like, _lower_math("tgamma"))
_math("log", (1, 2), _float_meet, _lower_log)
for _f in _FLOAT_BINARY:
    _math(_f, (2, 2), _float_meet, _lower_math(_f))
for _f in ("floor", "ceil", "trunc"):
    _math(_f, (1, 1), lambda a: INT, _lower_round_like(_f))
for _f in ("isnan", "isinf", "isfinite"):
    _math(_f, (1, 1), lambda a: BOOL, _lower_isx(_f))
_math("isqrt", (1, 1), lambda a: INT,
      lambda lw, e: lir.Helper("isqrt", [lw.ex(e.args[0], INT)]),
      _int_arg("the argument of math.isqrt"))
_math("ldexp", (2, 2), _float_like, _lower_ldexp, _int_arg("i in math.ldexp(x, i)"))
_math("degrees", (1, 1), _float_like, _lower_scale(180.0 / 3.141592653589793))
_math("radians", (1, 1), _float_like, _lower_scale(3.141592653589793 / 180.0))

# Atomics: statements (or the value of an assignment), never inside an expression,
# so each runs exactly once. Their typing and lowering live with the statement
# (types.Typer.atomic, lower.Lowering.atomic); the registry names them.
ATOMIC_DTYPES = ("int32", "int64", "uint32", "uint64", "float32", "float64")


def _not_an_expression(*_: Any) -> Any:
    raise AssertionError("atomics are statements")


for _op in ("add", "sub", "min", "max"):
    register(Builtin(f"tack.atomic_{_op}", (getattr(intrinsics, f"atomic_{_op}"),),
                     (3, MANY), _not_an_expression, _not_an_expression,
                     kind="atomic"))

MATH_CONSTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf,
               "nan": math.nan}
