"""The Python reference of the kernel fuzzer (kernel_fuzz.py): a kernel module's own
Python source, run as Python with the documented differences of docs/kernels.md
("Types", "Where kernels differ from Python") modelled, and nothing else.

The module's source is parsed and its arithmetic operators are rewritten into calls
of `binop` and `unop` (and `x op= y` into `x = binop(op, x, y)`); the decorators are
dropped; the result runs in a namespace where `int`, `float`, `abs`, `round`,
`range`, `math` and `tack` are the kernel's. Values keep the kernel's types at run
time: int64 is a Python int kept in range, bool a Python bool, float32 a
numpy.float32, float64 a numpy.float64 (IEEE division by zero, as the kernel), and
arrays are wrapped so that a read gives the element's value type and a store
converts by the store rule. Math functions call the C library (`libm`), which is
the documented meaning of a math function in a kernel.

The fuzzer only writes programs whose meaning this models: operands of one type (or
a literal next to a value), reductions of terms of one sign, no uint64 element read
where its unsigned value would matter.
"""

from __future__ import annotations

import ast
import ctypes
import ctypes.util
import math as _math
import operator
import sys
from typing import Any

import numpy as np

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


class Model:
    """What one reference run saw: whether int64 arithmetic wrapped, and whether the
    sign of a NaN was read (`math.copysign` from a NaN, whose sign arithmetic leaves
    unspecified: docs/kernels.md, "Where kernels differ from Python").

    With nudge -1 or +1 and a device's bounds (cuda_compare.Rules.bounds: name ->
    (float32 ulp, float64 ulp)), the run models that device's math library one unit
    in the last place off libm: each finite, nonzero result of a function the device
    may round differently (a bound above 0 at its precision) moves one ulp toward
    -inf or +inf. A device result that matches such a run where it differs from the
    CPU is a rounding of the device's math, amplified by what follows it (a `%`, a
    comparison, `int()`), not a fault (level_zero_fuzz.check_case)."""

    def __init__(self, nudge: int = 0,
                 bounds: dict[str, tuple[float, float]] | None = None) -> None:
        self.wrapped = False
        self.nan_sign_read = False
        self.nudge = nudge
        self.bounds = bounds or {}

    def device_rounding(self, name: str, value: Any) -> Any:
        """value as the nudged device's library may return it (see the class)."""
        if not self.nudge or not isinstance(value, (np.float32, np.float64)):
            return value
        worst = max(self.bounds.values(), default=(0.0, 0.0))
        ulp = self.bounds.get(name, worst)[0 if isinstance(value, np.float32) else 1]
        if ulp <= 0 or value == 0 or not np.isfinite(value):
            return value
        t = type(value)
        return t(np.nextafter(value, t(self.nudge * np.inf)))

    def wrap(self, v: int) -> int:
        if I64_MIN <= v <= I64_MAX:
            return v
        self.wrapped = True
        return ((v + 2**63) % 2**64) - 2**63


def wrap_bits(v: int, bits: int, signed: bool) -> int:
    """v modulo 2**bits, as a signed or unsigned integer of that width."""
    v %= 2**bits
    return v - 2**bits if signed and v >= 2 ** (bits - 1) else v


def _is_int(v: Any) -> bool:
    return isinstance(v, (bool, int)) and not isinstance(v, np.generic)


def f2int(x: Any, lo: int = I64_MIN, hi: int = I64_MAX) -> int:
    """Float to int: truncate toward zero, saturate at [lo, hi], NaN gives 0."""
    x = float(x)
    if x != x:
        return 0
    if x >= hi:
        return hi
    if x <= lo:
        return lo
    return int(x)


def store(dtype: np.dtype, v: Any) -> Any:
    """The element a store of the value v to a `dtype` array writes (tack.copyto's
    rule): float to int truncates and saturates (NaN is 0), int to a narrower int
    wraps, to bool is "nonzero", to a float rounds to nearest once."""
    if dtype.kind == "b":
        return bool(v != 0)
    if _is_int(v):
        v = int(v)
        if dtype.kind in "iu":
            return wrap_bits(v, 8 * dtype.itemsize, dtype.kind == "i")
        return np.array(v, np.int64).astype(dtype)[()]
    if dtype.kind == "f":
        return dtype.type(v)
    info = np.iinfo(dtype)
    return f2int(v, int(info.min), int(info.max))


def load(dtype: np.dtype, v: Any) -> Any:
    """An element's value in a kernel: ints are int64 (uint64 keeps its bits), float16
    reads as float32."""
    if dtype.kind == "b":
        return bool(v)
    if dtype.kind in "iu":
        return wrap_bits(int(v), 64, True)
    if dtype.itemsize <= 4:
        return np.float32(v)
    return np.float64(v)


class RefArray:
    """A NumPy array as a kernel sees it: reads by `load`, stores by `store`; an index
    out of bounds is an error of the fuzzer, never wrapped."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a
        self.shape, self.ndim, self.size = a.shape, a.ndim, a.size

    def __len__(self) -> int:
        return len(self.a)

    def _key(self, idx: Any) -> tuple[int, ...]:
        key = idx if isinstance(idx, tuple) else (idx,)
        for k, n in zip(key, self.shape, strict=True):
            if not 0 <= k < n:
                raise IndexError(f"reference index {key} out of bounds of {self.shape}")
        return tuple(int(k) for k in key)

    def __getitem__(self, idx: Any) -> Any:
        return load(self.a.dtype, self.a[self._key(idx)])

    def __setitem__(self, idx: Any, v: Any) -> None:
        self.a[self._key(idx)] = store(self.a.dtype, v)


_INT_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul,
            "&": operator.and_, "|": operator.or_, "^": operator.xor}
_FLOAT_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul,
              "/": operator.truediv, "//": operator.floordiv, "%": operator.mod,
              "**": operator.pow}


def _ipow(m: Model, a: int, b: int) -> int:
    if b < 0:
        return 1 if a == 1 else (-1 if b & 1 else 1) if a == -1 else 0
    return m.wrap(wrap_bits(pow(a, b, 2**64), 64, True))


def _int_binop(m: Model, op: str, a: int, b: int) -> Any:
    if op in ("&", "|", "^") and isinstance(a, bool) and isinstance(b, bool):
        return _INT_OPS[op](a, b)
    a, b = int(a), int(b)
    if op in _INT_OPS:
        return m.wrap(_INT_OPS[op](a, b))
    if op == "//":
        return 0 if b == 0 else m.wrap(a // b)
    if op == "%":
        return 0 if b == 0 else a % b
    if op == "**":
        return _ipow(m, a, b)
    if op == "<<":
        return 0 if b < 0 or b >= 64 else wrap_bits(a << b, 64, True)
    if op == ">>":
        return 0 if b < 0 else (-1 if a < 0 else 0) if b >= 64 else a >> b
    if op == "/":
        # as the kernel divides: both ints rounded to float64 first (Python rounds the
        # exact quotient once; the two differ for ints beyond 2**53)
        return np.float64(a) / np.float64(b)
    raise AssertionError(op)


def _float(v: Any) -> Any:
    """A Python number next to a float64 (or another Python number) computes as
    float64; next to a float32 it stays a weak literal, as in NumPy 2."""
    return v if isinstance(v, np.floating) else np.float64(v)


def make_ops(m: Model) -> dict[str, Any]:
    def binop(op: str, a: Any, b: Any) -> Any:
        if _is_int(a) and _is_int(b):
            return _int_binop(m, op, a, b)
        if not (isinstance(a, np.float32) or isinstance(b, np.float32)):
            a, b = _float(a), _float(b)
        with np.errstate(all="ignore"):
            return _FLOAT_OPS[op](a, b)

    def unop(op: str, a: Any) -> Any:
        if _is_int(a):
            return m.wrap(-int(a)) if op == "-" else ~int(a) if op == "~" else int(a)
        return -a if op == "-" else a

    return {"binop": binop, "unop": unop}


# ---- builtins --------------------------------------------------------------------


def make_builtins(m: Model) -> dict[str, Any]:
    def k_int(v: Any) -> int:
        return int(v) if _is_int(v) else f2int(v)

    def k_abs(v: Any) -> Any:
        return m.wrap(abs(int(v))) if _is_int(v) else abs(v)

    def k_round(v: Any) -> int:
        return int(v) if _is_int(v) else f2int(libm.call("rint", v))

    def k_range(*args: int) -> range:
        if len(args) == 3 and args[2] == 0:
            return range(0)
        return range(*args)

    return {"int": k_int, "float": np.float64, "abs": k_abs, "round": k_round,
            "range": k_range}


class LibM:
    """The C library's math functions, by name, at the precision of the argument:
    `sinf` for a float32, `sin` for a float64 or an int."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        self.fns: dict[tuple[str, bool], Any] = {}

    def fn(self, name: str, single: bool, nargs: int, int_last: bool = False) -> Any:
        key = (name, single)
        if key not in self.fns:
            f = getattr(self.lib, name + ("f" if single else ""))
            t = ctypes.c_float if single else ctypes.c_double
            f.argtypes = [t] * (nargs - int_last) + [ctypes.c_int] * int_last
            f.restype = t
            self.fns[key] = f
        return self.fns[key]

    def call(self, name: str, *args: Any) -> Any:
        single = all(isinstance(a, np.float32) for a in args)
        f = self.fn(name, single, len(args))
        return (np.float32 if single else np.float64)(f(*[float(a) for a in args]))


libm = LibM()

_UNARY = ("sqrt cbrt exp exp2 expm1 log2 log10 log1p sin cos tan asin acos atan sinh "
          "cosh tanh asinh acosh atanh fabs erf erfc lgamma").split()
_BINARY = "pow atan2 hypot copysign fmod remainder nextafter".split()


class RefMath:
    """`math` as a kernel means it (docs/kernels.md, Language): the C library's
    results, nan or inf instead of exceptions, ints from floor/ceil/trunc by the
    saturating conversion."""

    pi, e, tau, inf, nan = _math.pi, _math.e, _math.tau, _math.inf, _math.nan

    def __init__(self, model: Model) -> None:
        self.model = model

    def copysign(self, x: Any, y: Any) -> Any:
        if not _is_int(y) and np.isnan(y):
            self.model.nan_sign_read = True
        return libm.call("copysign", x, y)

    def _call(self, name: str, *args: Any) -> Any:
        return self.model.device_rounding(name, libm.call(name, *args))

    def __getattr__(self, name: str) -> Any:
        if name in _UNARY or name in _BINARY:
            return lambda *a: self._call(name, *a)
        raise AttributeError(name)

    def gamma(self, x: Any) -> Any:
        return self.model.device_rounding("gamma", libm.call("tgamma", x))

    def log(self, x: Any, base: Any = None) -> Any:
        if base is None:
            return self._call("log", x)
        with np.errstate(all="ignore"):
            return self._call("log", x) / self._call("log", base)

    @staticmethod
    def _rounding(name: str, x: Any) -> int:
        return int(x) if _is_int(x) else f2int(libm.call(name, x))

    def floor(self, x: Any) -> int:
        return self._rounding("floor", x)

    def ceil(self, x: Any) -> int:
        return self._rounding("ceil", x)

    def trunc(self, x: Any) -> int:
        return self._rounding("trunc", x)

    @staticmethod
    def isqrt(n: int) -> int:
        return 0 if n <= 0 else _math.isqrt(n)

    @staticmethod
    def isnan(x: Any) -> bool:
        return not _is_int(x) and bool(np.isnan(x))

    @staticmethod
    def isinf(x: Any) -> bool:
        return not _is_int(x) and bool(np.isinf(x))

    @staticmethod
    def isfinite(x: Any) -> bool:
        return _is_int(x) or bool(np.isfinite(x))

    @staticmethod
    def ldexp(x: Any, i: int) -> Any:
        single = isinstance(x, np.float32)
        f = libm.fn("ldexp", single, 2, int_last=True)
        exp = max(-100000, min(100000, int(i)))
        return (np.float32 if single else np.float64)(f(float(x), exp))

    @staticmethod
    def _scaled(x: Any, factor: float) -> Any:
        t = np.float32 if isinstance(x, np.float32) else np.float64
        with np.errstate(all="ignore"):
            return t(x) * t(factor)

    def degrees(self, x: Any) -> Any:
        return self._scaled(x, 180.0 / 3.141592653589793)

    def radians(self, x: Any) -> Any:
        return self._scaled(x, 3.141592653589793 / 180.0)


class Conversion:
    """tack.f32, tack.i8, ...: the store rule to the dtype, read back as its value
    type; also the dtype argument of tack.local_array."""

    def __init__(self, name: str) -> None:
        self.dtype = np.dtype(name)

    def __call__(self, v: Any) -> Any:
        return load(self.dtype, store(self.dtype, v))


DTYPE_NAMES = {"bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32",
               "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32",
               "u64": "uint64", "f16": "float16", "f32": "float32", "f64": "float64"}


class RefTack:
    """The names kernels use from tack, with a kernel's meaning."""

    def __init__(self) -> None:
        for short, name in DTYPE_NAMES.items():
            conv = Conversion(name)
            setattr(self, short, conv)
            setattr(self, name, conv)

    @staticmethod
    def local_array(shape: tuple[int, ...], dtype: Conversion) -> RefArray:
        return RefArray(np.zeros(shape, dtype.dtype))

    @staticmethod
    def _atomic(a: RefArray, args: tuple[Any, ...], update: Any) -> Any:
        *idx, v = args
        key = tuple(idx) if len(idx) > 1 else idx[0]
        old = a[key]
        v = load(a.a.dtype, store(a.a.dtype, v))
        if a.a.dtype == np.uint64:  # compared as unsigned, stored by its bits
            new = update(old % 2**64, v % 2**64)
        else:
            new = update(old, v)
        if new is not None:
            a[key] = new
        return old

    def atomic_add(self, a: RefArray, *args: Any) -> Any:
        return self._atomic(a, args, lambda o, v: o + v)

    def atomic_sub(self, a: RefArray, *args: Any) -> Any:
        return self._atomic(a, args, lambda o, v: o - v)

    def atomic_min(self, a: RefArray, *args: Any) -> Any:
        return self._atomic(a, args, lambda o, v: v if v < o else None)

    def atomic_max(self, a: RefArray, *args: Any) -> Any:
        return self._atomic(a, args, lambda o, v: v if v > o else None)


# ---- the source rewrite ----------------------------------------------------------

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
        ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>",
        ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
_UNOPS = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}


def _unset_locals(fn: ast.FunctionDef) -> list[ast.stmt]:
    """A kernel's local assigned only on some paths starts at 0 (a local array: at
    zeros): the same assignments, made first."""
    params = {a.arg for a in fn.args.args}
    first: dict[str, ast.stmt] = {}
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if not isinstance(t, ast.Name) or t.id in params or t.id in first:
                    continue
                value: ast.expr = ast.Constant(0)
                if isinstance(node, ast.Assign) and "local_array" in ast.unparse(node.value):
                    value = node.value
                first[t.id] = ast.Assign([ast.Name(t.id, ast.Store())], value)
    return list(first.values())


class _Rewrite(ast.NodeTransformer):
    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.decorator_list = []
        self.generic_visit(node)
        node.body = _unset_locals(node) + node.body
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        return ast.Call(ast.Name("binop", ast.Load()),
                        [ast.Constant(_OPS[type(node.op)]), node.left, node.right], [])

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        # NumPy scalars compare to numpy.bool_; a kernel's comparison is a bool
        self.generic_visit(node)
        return ast.Call(ast.Name("bool", ast.Load()), [node], [])

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return node
        return ast.Call(ast.Name("unop", ast.Load()),
                        [ast.Constant(_UNOPS[type(node.op)]), node.operand], [])

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        load = ast.parse(ast.unparse(node.target), mode="eval").body
        value = ast.Call(ast.Name("binop", ast.Load()),
                         [ast.Constant(_OPS[type(node.op)]), load, node.value], [])
        return ast.Assign([node.target], value)


def reference_module(source: str, filename: str, model: Model) -> dict[str, Any]:
    """The names of a kernel module, run as the reference: `import` lines are
    dropped (math and tack are the namespace's own)."""
    tree = ast.parse(source, filename)
    tree.body = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    # a long chain (the sum of 512 reductions) nests once per operator, as it does
    # for the kernel compiler (tack.kernel's _deep_recursion)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        tree = ast.fix_missing_locations(_Rewrite().visit(tree))
        code = compile(tree, filename, "exec")
    finally:
        sys.setrecursionlimit(limit)
    ns: dict[str, Any] = {"math": RefMath(model), "tack": RefTack(), **make_ops(model),
                          **make_builtins(model)}
    exec(code, ns)
    return ns


def ref_args(args: list[Any]) -> list[Any]:
    """The reference's arguments: arrays wrapped (sharing the given NumPy arrays),
    floats as float64."""
    out: list[Any] = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(RefArray(a))
        elif isinstance(a, float) and not isinstance(a, np.floating):
            out.append(np.float64(a))
        else:
            out.append(a)
    return out


def plain_result(v: Any) -> Any:
    """A returned value as a kernel call gives it: int, float or bool."""
    if v is None or isinstance(v, bool):
        return v
    if _is_int(v):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return float(v)
