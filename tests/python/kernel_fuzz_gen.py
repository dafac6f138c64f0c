"""The program generator of the kernel fuzzer (kernel_fuzz.py): from a seed, a random
well-typed kernel module (Python source) and its arguments.

Every value has one of the kernel's four types, tracked as the program is built:
"b" (bool), "i" (int64), "f32", "f64". Operands of an operator have one type, or
are a literal next to a value, or mix in the ways where NumPy 2's promotion and the
kernel's agree (bool with int, int or float32 with float64), so the program means
the same in Python (kernel_fuzz_ref.py) and in the kernel. Stores go to row `i` of
the output arrays (iterations never race); atomics go to small arrays that many
iterations share; float reductions and float atomic adds sum terms of one sign, the
case the regrouping bound of cuda_compare.py is exact for.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Feature switches (docs/kernels.md, "The fuzzer"), every one on by default. Of the
# last ten, eight each make a construct that once gave a wrong answer or a crash;
# binned_update makes the loop the CPU compiles in two passes (emit_c.binning), and
# streamed_rows inner loops that write whole rows, which the CPU may write with
# streaming stores (tack/kernel/stream.py).
FEATURES = (
    "math", "loops", "while", "branches", "break_continue", "funcs", "local_arrays",
    "atomics", "reductions", "float_reductions", "prelude", "serial", "globals",
    "nonfinite", "prelude_reads_stored", "func_stores", "carried_local",
    "local_array_maybe_unset", "float_minmax_reduction", "cuda_int_overflow",
    "huge_range", "many_reductions", "binned_update", "streamed_rows",
)
# Switches whose construct has a known fault: off in the fixed sweep until it is fixed
# (each named in docs/kernels.md, "The fuzzer"). None today.
KNOWN_BROKEN: dict[str, str] = {}
DEFAULT_FEATURES = frozenset(f for f in FEATURES if f not in KNOWN_BROKEN)

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_DTYPES = ("float16", "float32", "float64")
DTYPES = ("bool", *INT_DTYPES, *FLOAT_DTYPES)
ATOMIC_DTYPES = ("int32", "int64", "uint32", "uint64", "float32", "float64")
SHORT = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
         "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
         "float16": "f16", "float32": "f32", "float64": "f64"}

INT_LITS = ("0", "1", "2", "3", "5", "7", "8", "31", "32", "63", "64", "100", "127",
            "128", "255", "256", "1000003", "2147483647", "2147483648", "4294967296",
            "9007199254740993", "4611686018427387904", "9223372036854775807",
            "(-1)", "(-2)", "(-7)", "(-128)", "(-9223372036854775807 - 1)")
FLOAT_LITS = ("0.0", "(-0.0)", "1.0", "(-1.0)", "0.5", "2.0", "3.0", "(-2.5)", "0.1",
              "0.001", "1e10", "1e-30", "1e30", "65504.0", "1e-45", "(-7.75)")
F64_LITS = (*FLOAT_LITS, "1e300", "5e-324", "1.7976931348623157e308", "math.pi",
            "math.e", "math.tau")
WEAK_INTS = ("0", "1", "2", "3", "(-1)", "7", "100", "16777217", "(-3)")

MATH_UNARY = ("sqrt cbrt exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos "
              "atan sinh cosh tanh asinh acosh atanh fabs erf erfc gamma lgamma "
              "degrees radians").split()
MATH_BINARY = "pow atan2 hypot copysign fmod remainder nextafter log".split()


def load_type(dtype: str) -> str:
    """The type an element of dtype reads as."""
    if dtype == "bool":
        return "b"
    if dtype in INT_DTYPES:
        return "i"
    return "f64" if dtype == "float64" else "f32"


@dataclass
class Case:
    """One generated kernel module and its arguments. `body` is the parallel loop's
    statements as blocks (each a list of lines, indented from the loop's level), so
    a reproducer can be made smaller by dropping blocks."""

    seed: int
    features: frozenset[str]
    header: list[str] = field(default_factory=list)
    params: list[str] = field(default_factory=list)
    prelude: list[list[str]] = field(default_factory=list)
    loop: str = ""
    body: list[list[str]] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)
    emulate: bool = False

    def source(self) -> str:
        lines = ["import math", "", "import tack", "", *self.header,
                 "@tack.kernel", f"def fuzz_kernel({', '.join(self.params)}):"]
        for block in self.prelude:
            lines += ["    " + ln for ln in block]
        lines.append("    " + self.loop)
        for block in self.body:
            lines += ["        " + ln for ln in block]
        if not self.body:
            lines.append("        pass")
        lines += ["    " + ln for ln in self.tail]
        return "\n".join(lines) + "\n"

    def arguments_text(self) -> str:
        out = []
        for name, a in zip(self.params, self.args, strict=True):
            if isinstance(a, np.ndarray):
                out.append(f"{name} = np.array({a.tolist()!r}, dtype=np.{a.dtype})")
            elif isinstance(a, np.float32):
                out.append(f"{name} = np.float32({float(a)!r})")
            else:
                out.append(f"{name} = {a!r}")
        return "\n".join(out)


def _values(rng: random.Random, dtype: str, n: int, nonfinite: bool) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([rng.random() < 0.5 for _ in range(n)], dtype=dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = int(info.min), int(info.max)
        edges = [lo, hi, 0, 1, lo + 1, hi - 1, 2, 7, 100] + ([-1, -2] if lo < 0 else [])
        vals = [rng.choice(edges) if rng.random() < 0.4 else rng.randint(lo, hi)
                for _ in range(n)]
        return np.array(vals, dtype=dt)
    finfo = np.finfo(dt)
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, float(finfo.max), float(finfo.tiny),
             float(finfo.smallest_subnormal), -2.5, 1e5]
    if nonfinite:
        edges += [float("inf"), float("-inf"), float("nan")]
    vals = [rng.choice(edges) if rng.random() < 0.35 else
            rng.gauss(0.0, 1.0) * 10.0 ** rng.randint(-3, 4) for _ in range(n)]
    with np.errstate(over="ignore"):
        return np.array(vals, dtype=dt)


class Scope:
    """The names a statement may read, with their types, and the arrays it may index:
    (name, dtype, length expression) for inputs, local arrays."""

    def __init__(self, names: dict[str, str], inputs: list[tuple[str, str]],
                 locals_: list[tuple[str, str, int]] | None = None) -> None:
        self.names = dict(names)
        self.inputs = list(inputs)
        self.local_arrays = list(locals_ or [])
        self.loop_vars: list[tuple[str, int]] = []  # inner loop var, its bound

    def child(self) -> Scope:
        s = Scope(self.names, self.inputs, self.local_arrays)
        s.loop_vars = list(self.loop_vars)
        return s

    def of_type(self, ty: str) -> list[str]:
        return [n for n, t in self.names.items() if t == ty]


class ExprGen:
    """Random expressions of a given type over a scope."""

    def __init__(self, rng: random.Random, features: frozenset[str]) -> None:
        self.rng = rng
        self.features = features
        self.funcs: list[tuple[str, list[str], str]] = []  # name, arg types, result

    def pick(self, seq: Any) -> Any:
        return self.rng.choice(seq)

    def lit(self, ty: str) -> str:
        r = self.rng
        if ty == "b":
            return self.pick(("True", "False"))
        if ty == "i":
            return self.pick(INT_LITS)
        if ty == "f64":
            extra = ("math.inf", "(-math.inf)", "math.nan") if "nonfinite" in self.features \
                else ()
            return self.pick(F64_LITS + extra)
        return f"tack.f32({self.pick(FLOAT_LITS)})" if r.random() < 0.8 else \
            f"tack.f32({self.pick(WEAK_INTS)})"

    def weak(self, ty: str) -> str:
        """A literal that may stand next to a value of type ty."""
        if ty == "f32":
            return self.pick(FLOAT_LITS + WEAK_INTS)
        if ty == "f64":
            return self.pick(F64_LITS + WEAK_INTS)
        return self.pick(INT_LITS) if ty == "i" else self.pick(("True", "False"))

    def index(self, scope: Scope, length: str, depth: int, long: bool = False) -> str:
        """An index into an array of `length` elements; long: an input, at least as
        long as the loop's trip count."""
        r = self.rng.random()
        if r < 0.35 and "i" in scope.names and long:
            return "i"
        if r < 0.5:
            return self.pick(("0", f"({length} - 1)"))
        if r < 0.8:
            return f"({self.expr('i', scope, depth + 1)} % {length})"
        return f"min(max({self.expr('i', scope, depth + 1)}, 0), {length} - 1)"

    def read(self, scope: Scope, ty: str, depth: int) -> str | None:
        """An element read of type ty, or None when no array fits."""
        arrays = [(n, d, f"len({n})") for n, d in scope.inputs if load_type(d) == ty]
        long = {n for n, _, _ in arrays if n != "p"}
        arrays += [(n, d, str(k)) for n, d, k in scope.local_arrays if load_type(d) == ty]
        if not arrays:
            return None
        name, dtype, length = self.pick(arrays)
        if length.isdigit() and scope.loop_vars and self.rng.random() < 0.5:
            var, bound = self.pick(scope.loop_vars)
            idx = var if bound <= int(length) else f"({var} % {length})"
        else:
            idx = self.index(scope, length, depth, name in long)
        text = f"{name}[{idx}]"
        return f"int({text})" if dtype == "uint64" else text

    def leaf(self, ty: str, scope: Scope, depth: int) -> str:
        r = self.rng.random()
        names = scope.of_type(ty)
        if r < 0.4 and names:
            return self.pick(names)
        if r < 0.75:
            got = self.read(scope, ty, depth)
            if got is not None:
                return got
        if ty == "i" and r < 0.85 and scope.inputs:
            name = self.pick(scope.inputs)[0]
            return self.pick((f"len({name})", f"{name}.shape[0]", f"{name}.shape[-1]",
                              f"{name}.size", f"{name}.ndim"))
        return self.lit(ty)

    def expr(self, ty: str, scope: Scope, depth: int = 0) -> str:
        if depth >= 4 or self.rng.random() < 0.2 + 0.15 * depth:
            return self.leaf(ty, scope, depth)
        return {"b": self.bool_expr, "i": self.int_expr, "f32": self.float_expr,
                "f64": self.float_expr}[ty](ty, scope, depth + 1)

    def common(self, ty: str, scope: Scope, d: int) -> str | None:
        """The forms every type has: a choice, and/or, min/max, a func call.

        The first three give one of their operands, which in Python may be a weak
        float (a literal's) where the kernel's type is float64; next to a float32
        Python would then compute in float32 and the kernel in float64 (seed 529).
        Of type f64 they are spelled inside tack.f64(...), a float64 in both."""
        r = self.rng.random()
        e = self.expr
        strong = "tack.f64({})" if ty == "f64" else "{}"
        if r < 0.06:
            return strong.format(
                f"({e(ty, scope, d)} if {e('b', scope, d)} else {e(ty, scope, d)})")
        if r < 0.1:
            return strong.format(
                f"({e(ty, scope, d)} {self.pick(('and', 'or'))} {e(ty, scope, d)})")
        if r < 0.15:
            args = ", ".join(e(ty, scope, d) for _ in range(self.rng.randint(2, 3)))
            return strong.format(f"{self.pick(('min', 'max'))}({args})")
        funcs = [f for f in self.funcs if f[2] == ty and (
            scope.inputs and scope.inputs[0][0] != "p" or not any(
                t.startswith("@") for t in f[1]))]  # a func body names no kernel array
        if r < 0.2 and funcs and "funcs" in self.features:
            name, arg_types, _ = self.pick(funcs)
            args = [t[1:] if t.startswith("@") else e(t, scope, d) for t in arg_types]
            return f"{name}({', '.join(args)})"
        return None

    def bool_expr(self, ty: str, scope: Scope, d: int) -> str:
        got = self.common(ty, scope, d)
        if got is not None:
            return got
        r = self.rng.random()
        e = self.expr
        if r < 0.45:
            t = self.pick(("i", "i", "f32", "f64", "b"))
            ops = ("<", "<=", ">", ">=", "==", "!=")
            text = f"{e(t, scope, d)} {self.pick(ops)} {e(t, scope, d)}"
            if self.rng.random() < 0.2:
                text += f" {self.pick(ops)} {e(t, scope, d)}"
            return f"({text})"
        if r < 0.55:
            return f"(not {e(self.pick(('b', 'i', 'f32', 'f64')), scope, d)})"
        if r < 0.65:
            return f"({e('b', scope, d)} {self.pick(('&', '|', '^'))} {e('b', scope, d)})"
        if r < 0.8:
            src = self.pick(("i", "f32", "f64"))
            return f"{self.pick(('bool', 'tack.bool'))}({e(src, scope, d)})"
        if "math" in self.features:
            t = self.pick(("f32", "f64"))
            return f"math.{self.pick(('isnan', 'isinf', 'isfinite'))}({e(t, scope, d)})"
        return self.leaf("b", scope, d)

    def int_expr(self, ty: str, scope: Scope, d: int) -> str:
        got = self.common(ty, scope, d)
        if got is not None:
            return got
        r = self.rng.random()
        e = self.expr
        if r < 0.45:
            op = self.pick(("+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "**",
                            "+", "-", "*", "//", "%"))
            a = e(self.pick(("i", "i", "i", "b")), scope, d)
            b = e("i", scope, d) if self.rng.random() < 0.7 else self.weak("i")
            return f"({a} {op} {b})"
        if r < 0.55:
            return f"({self.pick(('-', '~', '+'))}{e('i', scope, d)})"
        if r < 0.6:
            return f"abs({e('i', scope, d)})"
        if r < 0.75:
            src = self.pick(("f32", "f64", "b", "i"))
            fn = self.pick(("int", "int", "round")) if src[0] == "f" else "int"
            return f"{fn}({e(src, scope, d)})"
        if r < 0.88:
            dt = self.pick(INT_DTYPES)
            return f"tack.{self.pick((SHORT[dt], dt))}" \
                   f"({e(self.pick(('i', 'f32', 'f64', 'b')), scope, d)})"
        if "math" in self.features:
            if self.rng.random() < 0.25:
                return f"math.isqrt({e('i', scope, d)})"
            fn = self.pick(("floor", "ceil", "trunc"))
            return f"math.{fn}({e(self.pick(('f32', 'f64', 'i')), scope, d)})"
        return self.leaf("i", scope, d)

    def float_expr(self, ty: str, scope: Scope, d: int) -> str:
        got = self.common(ty, scope, d)
        if got is not None:
            return got
        r = self.rng.random()
        e = self.expr
        if r < 0.4:
            op = self.pick(("+", "-", "*", "/", "//", "%", "**", "+", "-", "*", "/"))
            a = e(ty, scope, d)
            promoted = ty == "f64" and self.rng.random() < 0.3
            if promoted:
                a = e(self.pick(("i", "b", "f32")), scope, d)  # promotes to float64
            b = e(ty, scope, d) if self.rng.random() < 0.7 else self.weak(ty)
            if promoted and b in WEAK_INTS:
                # beside a promoted operand the literal is a float: `100 * flag` is
                # an int in Python, where a kernel's choice between it and a float
                # is a float (seed 2020)
                b = f"{b[:-1]}.0)" if b.endswith(")") else f"{b}.0"
            return f"({b} {op} {a})" if self.rng.random() < 0.3 else f"({a} {op} {b})"
        if r < 0.45:
            return f"({self.pick(('-', '+'))}{e(ty, scope, d)})"
        if r < 0.5:
            return f"abs({e(ty, scope, d)})"
        if r < 0.62:
            src = e(self.pick(("i", "f32", "f64", "b")), scope, d)
            if ty == "f64":
                return f"{self.pick(('float', 'tack.f64', 'tack.float64'))}({src})"
            return f"{self.pick(('tack.f32', 'tack.f16', 'tack.float32'))}({src})"
        if r < 0.66 and ty == "f64":
            return f"({e('i', scope, d)} / {e('i', scope, d)})"
        if "math" not in self.features:
            return self.leaf(ty, scope, d)
        arg = "i" if ty == "f64" and self.rng.random() < 0.15 else ty
        if r < 0.85:
            return f"math.{self.pick(MATH_UNARY)}({e(arg, scope, d)})"
        if r < 0.92:
            return f"math.ldexp({e(ty, scope, d)}, {e('i', scope, d)})"
        return f"math.{self.pick(MATH_BINARY)}({e(arg, scope, d)}, {e(arg, scope, d)})"


class KernelGen:
    """One random kernel module: inputs, outputs, atomics, scalars, funcs, a prelude,
    the loop and its reductions."""

    def __init__(self, seed: int, features: frozenset[str] = DEFAULT_FEATURES) -> None:
        self.rng = random.Random(seed)
        self.f = features
        self.case = Case(seed, features)
        self.ex = ExprGen(self.rng, features)
        self.n = self.rng.choice((1, 3, 8, 17, 40))
        self.counter = 0

    def on(self, feature: str, p: float = 1.0) -> bool:
        return feature in self.f and self.rng.random() < p

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def arrays(self) -> None:
        rng, c = self.rng, self.case
        nonfinite = "nonfinite" in self.f
        self.outputs: list[tuple[str, str, int]] = []
        for k in range(rng.randint(1, 3)):
            dt, cols = rng.choice(DTYPES), rng.randint(2, 6)
            self.outputs.append((f"o{k}", dt, cols))
            c.params.append(f"o{k}")
            c.args.append(_values(rng, dt, self.n * cols, nonfinite).reshape(self.n, cols))
        self.inputs: list[tuple[str, str]] = []
        for k in range(rng.randint(2, 5)):
            dt = rng.choice(DTYPES)
            self.inputs.append((f"x{k}", dt))
            c.params.append(f"x{k}")
            c.args.append(_values(rng, dt, self.n + rng.randint(0, 3), nonfinite))
        self.atomics: list[tuple[str, str, str]] = []
        if self.on("atomics", 0.5):
            for k in range(rng.randint(1, 2)):
                dt = rng.choice(ATOMIC_DTYPES)
                op = rng.choice(("add", "sub", "min", "max"))
                if dt.startswith("float") and op == "sub":
                    op = "add"
                self.atomics.append((f"h{k}", dt, op))
                c.params.append(f"h{k}")
                init = _values(rng, dt, rng.randint(1, 4), False)
                if dt.startswith("float"):  # no signed zero to race on, no NaN to keep
                    init = np.where(init == 0, 1, init).astype(dt)
                c.args.append(init)

    def scalars(self) -> dict[str, str]:
        names: dict[str, str] = {}
        for k in range(self.rng.randint(0, 3)):
            ty = self.rng.choice(("i", "f64", "f32", "b"))
            name = f"s{k}"
            names[name] = ty
            self.case.params.append(name)
            if ty == "i":
                v: Any = self.rng.choice((0, 1, -1, 3, 2**63 - 1, -(2**63), 255, 1 << 40))
            elif ty == "b":
                v = self.rng.random() < 0.5
            else:
                v = self.rng.choice((0.0, -0.0, 1.5, -3.25, 1e30, 1e-30, 7.0) + (
                    (float("inf"), float("nan")) if "nonfinite" in self.f else ()))
                v = np.float32(v) if ty == "f32" else v
            self.case.args.append(v)
        return names

    def globals_(self) -> dict[str, str]:
        if not self.on("globals", 0.5):
            return {}
        self.case.header += ["G_INT = 1099511627779", "G_FLOAT = -0.375", "G_FLAG = True",
                             ""]
        return {"G_INT": "i", "G_FLOAT": "f64", "G_FLAG": "b"}

    def funcs(self, base: Scope) -> None:
        if not self.on("funcs", 0.6):
            return
        for k in range(self.rng.randint(1, 2)):
            name = f"fz{k}"
            arg_types = [self.rng.choice(("i", "f32", "f64", "b"))
                         for _ in range(self.rng.randint(1, 3))]
            result = self.rng.choice(("i", "f32", "f64", "b"))
            params = [f"a{j}" for j in range(len(arg_types))]
            scope = Scope(dict(zip(params, arg_types, strict=True)), [])
            if base.inputs and self.rng.random() < 0.4:
                arr, dt = self.rng.choice(base.inputs)
                params.append("p")
                arg_types.append("@" + arr)
                scope.inputs = [("p", dt)]
            e = self.ex.expr
            tmp = self.rng.choice(("i", "f32", "f64", "b"))
            first = e(tmp, scope)
            if scope.inputs:  # a func's array parameter is one it indexes
                tmp = load_type(scope.inputs[0][1])
                first = self.ex.read(scope, tmp, 1) or first
            lines = ["@tack.func", f"def {name}({', '.join(params)}):",
                     f"    c = {first}"]
            scope.names["c"] = tmp
            lines += [f"    if {e('b', scope)}:", f"        return {e(result, scope)}",
                      f"    return {e(result, scope)}", ""]
            self.case.header += lines
            self.ex.funcs.append((name, arg_types, result))

    def build(self) -> Case:
        self.arrays()
        names = {**self.scalars(), **self.globals_()}
        base = Scope(names, self.inputs)
        self.funcs(base)
        serial = self.on("serial", 0.3)
        self.prelude(base, serial)
        loop_scope = base.child()
        c = self.case
        start = self.rng.choice(("", "", "", "1, ", "0, "))
        step = self.rng.choice(("", "", "", ", 2", ", 3")) if start else ""
        c.loop = f"for i in range({start}o0.shape[0]{step}):"
        loop_scope.names["i"] = "i"
        self.body(loop_scope, serial)
        self.reductions(loop_scope, serial)
        if not self.binned_update(base, serial):
            self.streamed_rows(base)
        return c

    # The seeds the tests pin (the fixed set of kernel_suite_sources.SEEDS and the
    # named regression tests) are never binned_update cases, so that their kernels
    # stay what they were (test_kernel_fuzz.py checks it); BINNED_SALT was chosen so.
    BINNED_SALT = "binned update 8"
    BINNED_SHARE = 0.2

    def binned_update(self, base: Scope, serial: bool) -> bool:
        """binned_update: for a share of the seeds with atomics, the parallel loop
        is rebuilt as a histogram's (a few locals, then one atomic update as its
        last statement, no reductions), which the CPU compiles as a binned loop.
        Drawn from a random stream of its own, so that every other seed's kernel is
        the one it was before the feature."""
        side = random.Random(f"{self.BINNED_SALT} {self.case.seed}")
        if (side.random() >= self.BINNED_SHARE or "binned_update" not in self.f
                or serial or not self.atomics):
            return False
        rng, ex = self.rng, self.ex
        # no funcs: a call before the update keeps the one-pass loop
        self.rng, self.ex = side, ExprGen(side, self.f)
        try:
            c = self.case
            scope = base.child()
            scope.names["i"] = "i"
            c.body, c.tail = [], []
            for _ in range(side.randint(0, 3)):
                ty = side.choice(("i", "f32", "f64", "b"))
                name = self.fresh("v")
                c.body.append([f"{name} = {self.ex.expr(ty, scope)}"])
                scope.names[name] = ty
            c.body.append(self.atomic(scope, False))
        finally:
            self.rng, self.ex = rng, ex
        return True

    # As binned_update: a stream of its own, a salt that leaves the pinned seeds alone.
    ROWS_SALT = "streamed rows 68757"
    ROWS_SHARE = 0.3
    # row lengths in units of 8 bytes (scaled to w0's element size, then moved by one
    # element either way at times), around the boundaries of a streamed loop's
    # parts: a line is 64 bytes, a strip 1024 (tack/kernel/stream.py)
    ROW_WIDTHS = (0, 1, 7, 8, 9, 16, 17, 33, 64, 65, 127, 128, 129, 257, 300, 513)
    ROW_INPUTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                  "float32", "float64")
    ROW_ELEMENTS = 2048  # the rows a case writes hold about this many elements

    def streamed_rows(self, base: Scope) -> None:
        """streamed_rows: for a share of the seeds, one more block at the end of the
        loop body, an inner loop over a row of a wide output w0 (n x width) that
        stores w0[i, j] from neighbours in a row of the input r0 (n x width + 1),
        sometimes with an expression of the scope. Without a helper in its
        expressions, the CPU compiles it as a streamed loop (stream.py), which the
        fuzzer forces for even seeds (kernel_fuzz.check)."""
        side = random.Random(f"{self.ROWS_SALT} {self.case.seed}")
        if side.random() >= self.ROWS_SHARE or "streamed_rows" not in self.f:
            return
        rng, ex = self.rng, self.ex
        self.rng, self.ex = side, ExprGen(side, self.f)
        try:
            c = self.case
            dt, rdt = side.choice(DTYPES), side.choice(self.ROW_INPUTS)
            width = max(0, side.choice(self.ROW_WIDTHS) * (8 // np.dtype(dt).itemsize)
                        + side.choice((-1, 0, 0, 1)))
            nonfinite = "nonfinite" in self.f
            c.params += ["w0", "r0"]
            c.args += [_values(side, dt, self.n * width, nonfinite).reshape(self.n, width),
                       _values(side, rdt, self.n * (width + 1), nonfinite).reshape(
                           self.n, width + 1)]
            scope = base.child()
            scope.names["i"] = "i"
            j, lo = self.fresh("j"), side.choice((0, 1))
            scope.names[j] = "i"
            rt = load_type(rdt)
            loads = [f"r0[i, {j}]", f"r0[i, {j} + 1]"] + ([f"r0[i, {j} - 1]"] if lo else [])
            lines = [f"for {j} in range({lo}, w0.shape[1]):"]
            if side.random() < 0.4:
                v, ty = self.fresh("v"), side.choice(("i", "f32", "f64", "b"))
                lines.append(f"    {v} = {self.ex.expr(ty, scope)}")
                scope.names[v] = ty
            ops = ("+", "-", "*", "&", "^") if rt == "i" else ("+", "-", "*")
            value = side.choice(loads)
            for _ in range(side.randint(0, 3)):
                value = f"({value} {side.choice(ops)} {side.choice(loads)})"
            if side.random() < 0.25:
                value = f"({value} {side.choice(ops)} {self.ex.expr(rt, scope)})"
            lines.append(f"    w0[i, {j}] = {value}")
            rows = max(1, self.ROW_ELEMENTS // max(width, 1))
            if rows < self.n:  # the Python reference runs every trip
                lines = [f"if i < {rows}:", *("    " + ln for ln in lines)]
            c.body.append(lines)
        finally:
            self.rng, self.ex = rng, ex

    def is_binned_update(self) -> bool:
        """Whether binned_update rebuilt this seed's loop (its side stream's draw)."""
        return random.Random(f"{self.BINNED_SALT} {self.case.seed}").random() < \
            self.BINNED_SHARE

    def prelude(self, base: Scope, serial: bool) -> None:
        self.carried: list[str] = []
        if not self.on("prelude", 0.7):
            return
        for _ in range(self.rng.randint(1, 3)):
            ty = self.rng.choice(("i", "f32", "f64", "b"))
            name = self.fresh("p")
            self.case.prelude.append([f"{name} = {self.ex.expr(ty, base)}"])
            base.names[name] = ty
            if serial and self.rng.random() < 0.5:
                self.carried.append(name)
        if self.on("func_stores", 0.5):  # a store before the loop, made by a func
            self.case.header += ["@tack.func", "def fz_store(q, k, v):", "    q[k, 0] = v",
                                 ""]
            ty = self.rng.choice(("i", "f32", "f64", "b"))
            self.case.prelude.append([f"fz_store(o0, 0, {self.ex.expr(ty, base)})"])
        if self.on("prelude_reads_stored", 0.5):
            o, dt, _ = self.outputs[0]
            name = self.fresh("p")
            self.case.prelude.append([f"{name} = {o}[0, 0]"])
            base.names[name] = load_type(dt)

    # ---- the loop body ---------------------------------------------------------

    def body(self, scope: Scope, serial: bool) -> None:
        c, e = self.case, self.ex.expr
        if self.on("local_arrays", 0.5):
            for _ in range(self.rng.randint(1, 2)):
                name, dt, k = self.fresh("t"), self.rng.choice(DTYPES), self.rng.randint(1, 6)
                if dt == "uint64":
                    dt = "int64"
                line = f"{name} = tack.local_array(({k},), tack.{SHORT[dt]})"
                if self.on("local_array_maybe_unset", 0.5):
                    c.body.append([f"if {e('b', scope)}:", "    " + line])
                else:
                    c.body.append([line])
                scope.local_arrays.append((name, dt, k))
        for _ in range(self.rng.randint(1, 4)):
            ty = self.rng.choice(("i", "f32", "f64", "b"))
            name = self.fresh("v")
            c.body.append([f"{name} = {e(ty, scope)}"])
            scope.names[name] = ty
        if self.on("carried_local", 0.5) and not serial:
            o, dt, cols = self.outputs[0]
            name = self.fresh("prev")
            c.body.append([f"{o}[i, {self.rng.randrange(cols)}] = {name}",
                           f"{name} = {e(load_type(dt), scope)}"])
        for _ in range(self.rng.randint(3, 9)):
            c.body.append(self.statement(scope, 0, serial, top=True))
        if "fz_store" in "".join(c.header) and self.rng.random() < 0.5:
            c.body.append([f"fz_store(o0, i, {e(self.rng.choice(('i', 'f64')), scope)})"])
        for o, _, cols in self.outputs:
            for col in range(cols):
                if self.rng.random() < 0.6:
                    ty = self.rng.choice(("i", "f32", "f64", "b"))
                    c.body.append([f"{o}[i, {col}] = {e(ty, scope)}"])

    def store(self, scope: Scope) -> list[str]:
        e = self.ex.expr
        if scope.local_arrays and self.rng.random() < 0.3:
            name, _, k = self.rng.choice(scope.local_arrays)
            if scope.loop_vars and self.rng.random() < 0.5:
                var, bound = self.rng.choice(scope.loop_vars)
                idx = var if bound <= k else f"({var} % {k})"
            else:
                idx = self.ex.index(scope, str(k), 2)
            ty = self.rng.choice(("i", "f32", "f64", "b"))
            return [f"{name}[{idx}] = {e(ty, scope)}"]
        o, dt, cols = self.rng.choice(self.outputs)
        col = self.rng.randrange(cols)
        lt = load_type(dt)
        if self.rng.random() < 0.25:
            ops = {"b": ("|", "&", "^"), "i": ("+", "-", "*", "//", "%", "&", "|", "^"),
                   "f32": ("+", "-", "*", "/"), "f64": ("+", "-", "*", "/")}[lt]
            if dt == "uint64":
                ops = ("+", "-", "*", "&", "|", "^")
            return [f"{o}[i, {col}] {self.rng.choice(ops)}= {e(lt, scope)}"]
        return [f"{o}[i, {col}] = {e(self.rng.choice(('i', 'f32', 'f64', 'b')), scope)}"]

    def assign(self, scope: Scope, serial: bool) -> list[str]:
        names = [n for n in scope.names if n.startswith("v")]
        if serial:
            names += self.carried
        if not names:
            return self.store(scope)
        name = self.rng.choice(names)
        ty = scope.names[name]
        if self.rng.random() < 0.3 and ty != "b":
            ops = ("+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>") if ty == "i" \
                else ("+", "-", "*", "/")
            return [f"{name} {self.rng.choice(ops)}= {self.ex.expr(ty, scope)}"]
        return [f"{name} = {self.ex.expr(ty, scope)}"]

    def atomic(self, scope: Scope, serial: bool) -> list[str]:
        name, dt, op = self.rng.choice(self.atomics)
        idx = self.ex.index(scope, f"len({name})", 2)
        lt = load_type(dt)
        v = self.ex.expr(lt, scope)
        if lt != "i":
            v = f"abs({v})" if op == "add" else f"(abs({v}) + 1.0)"
        call = f"tack.atomic_{op}({name}, {idx}, {v})"
        if serial and self.rng.random() < 0.5:
            o, _, cols = self.rng.choice(self.outputs)
            return [f"{o}[i, {self.rng.randrange(cols)}] = {call}"]
        return [call]

    def block(self, scope: Scope, depth: int, serial: bool) -> list[str]:
        n = self.rng.randint(1, 3)
        lines: list[str] = []
        for _ in range(n):
            lines += self.statement(scope, depth, serial)
        return ["    " + ln for ln in lines]

    def statement(self, scope: Scope, depth: int, serial: bool,
                  top: bool = False) -> list[str]:
        r, e = self.rng.random(), self.ex.expr
        if depth < 2 and r < 0.15 and "branches" in self.f:
            lines = [f"if {e('b', scope)}:", *self.block(scope, depth + 1, serial)]
            while self.rng.random() < 0.3:
                lines += [f"elif {e('b', scope)}:", *self.block(scope, depth + 1, serial)]
            if self.rng.random() < 0.5:
                lines += ["else:", *self.block(scope, depth + 1, serial)]
            return lines
        if depth < 2 and r < 0.27 and "loops" in self.f:
            return self.inner_loop(scope, depth, serial)
        if r < 0.32 and self.atomics:
            return self.atomic(scope, serial)
        if r < 0.37 and "break_continue" in self.f and (self.in_loop or top):
            return [f"if {e('b', scope)}:", f"    {self.rng.choice(('break', 'continue'))}"]
        if r < 0.6:
            return self.assign(scope, serial)
        return self.store(scope)

    in_loop = False

    def inner_loop(self, scope: Scope, depth: int, serial: bool) -> list[str]:
        inner, e = scope.child(), self.ex.expr
        var = self.fresh("j")
        saved, self.in_loop = self.in_loop, True
        try:
            if self.on("while", 0.3):
                bound = self.rng.randint(0, 5)
                inner.names[var] = "i"
                body = self.block(inner, depth + 1, serial)
                return [f"{var} = 0", f"while {var} < {bound}:", f"    {var} += 1", *body]
            if self.on("huge_range", 0.2):
                inner.names[var] = "i"
                body = self.block(inner, depth + 1, serial)
                return [f"for {var} in range(-9223372036854775807, 9223372036854775807, "
                        "4611686018427387904):", *body]
            form = self.rng.random()
            if form < 0.6:
                bound = self.rng.randint(0, 6)
                inner.loop_vars.append((var, bound))
                head = f"for {var} in range({bound}):"
            elif form < 0.8:
                lo, hi = self.rng.randint(-3, 2), self.rng.randint(-1, 6)
                head = f"for {var} in range({lo}, {hi}, {self.rng.choice((1, 2, -1, 3))}):"
            else:
                head = (f"for {var} in range(0, max(min({e('i', scope, 2)}, 5), -5), "
                        f"({e('i', scope, 2)} % 3) - 1):")
            inner.names[var] = "i"
            return [head, *self.block(inner, depth + 1, serial)]
        finally:
            self.in_loop = saved

    # ---- reductions and the returned value ----------------------------------------

    def reductions(self, scope: Scope, serial: bool) -> None:
        c, e = self.case, self.ex.expr
        if serial:
            if not self.carried:
                name = self.fresh("p")
                c.prelude.append([f"{name} = 0"])
                scope.names[name] = "i"
                self.carried.append(name)
            name = self.rng.choice(self.carried)
            c.body.append([f"{name} = {e(scope.names[name], scope)}"])
            c.tail = [f"return {self.rng.choice(self.carried)}"]
            return
        ints: list[str] = []
        count = self.rng.randint(1, 3)
        if self.on("many_reductions", 0.04):
            count = 512  # int64 partials: exactly the 4096 bytes a chunk may hold
        for _ in range(count if self.on("reductions", 0.6) else 0):
            name = self.fresh("r")
            op = self.rng.choice(("+=", "*=", "|=", "&=", "^=", "min", "max"))
            c.prelude.append([f"{name} = {self.ex.lit('i')}"])
            term = e("i", scope, 1)
            update = f"{name} = {op}({name}, {term})" if op in ("min", "max") else \
                f"{name} {op} {term}"
            c.body.append(self.maybe_guarded(update, scope))
            ints.append(name)
        if ints and self.rng.random() < 0.7:
            ops = ("+", "^", "-", "|")
            c.tail = [f"return {f' {self.rng.choice(ops)} '.join(ints)}"]
        if self.on("float_reductions", 0.5) and not c.tail:
            ty = self.rng.choice(("f32", "f64"))
            name = self.fresh("rf")
            zero, one = ("tack.f32(0.0)", "tack.f32(1.0)") if ty == "f32" else ("0.0", "1.0")
            term = e(ty, scope, 1)
            kinds = ["sum", "product"] + (["min", "max"] if self.on(
                "float_minmax_reduction") else [])
            kind = self.rng.choice(kinds)
            if kind == "sum":
                c.prelude.append([f"{name} = {zero}"])
                update = f"{name} += abs({term})"
            elif kind == "product":
                c.prelude.append([f"{name} = {one}"])
                update = f"{name} *= 1.0 + abs({term}) / (1.0 + abs({term}))"
            else:
                c.prelude.append([f"{name} = {one}"])
                update = f"{name} = {kind}({name}, {term})"
            c.body.append(self.maybe_guarded(update, scope))
            c.tail = [f"return {name}"]
        if not c.tail and self.rng.random() < 0.3:
            names = [n for n in scope.names if n.startswith(("p", "s"))]
            if names:
                c.tail = [f"return {self.rng.choice(names)}"]

    def maybe_guarded(self, line: str, scope: Scope) -> list[str]:
        if self.rng.random() < 0.3:
            return [f"if {self.ex.expr('b', scope)}:", "    " + line]
        return [line]


def generate(seed: int, features: frozenset[str] = DEFAULT_FEATURES) -> Case:
    """The kernel module and arguments of one seed."""
    return KernelGen(seed, features).build()
