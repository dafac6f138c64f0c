"""Typed IR -> C11 source for the CPU (the generated-code ABI of tack/kernel.h).

The output includes only <stdint.h> and <math.h> and declares the ABI structs
itself, so it compiles in tens of milliseconds. Python names become ``v_<name>``
(scalars) and ``p_<name>`` (array data), mangled (see ``mangle``) so no Python
name can collide with a generated one or with C.
``#line`` directives map compiler messages back to the kernel's Python lines.
"""

from __future__ import annotations

import math

from tack.kernel import ir
from tack.kernel.ir import BOOL, F32, F64, INT, ScalarType
from tack.kernel.types import TypedKernel, is_weak, promote

CTYPE = {BOOL: "_Bool", INT: "int64_t", F32: "float", F64: "double"}
ELEM_C = {
    "bool": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
    "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t",
    "uint32": "uint32_t", "uint64": "uint64_t", "float16": "uint16_t",
    "float32": "float", "float64": "double", "vec2": "float", "vec3": "float",
    "vec4": "float",
}
INT_RANGE = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1), "uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
MATH_C = {"gamma": "tgamma"}
SUFFIX = {BOOL: "b", INT: "i", F32: "f", F64: "d"}

PRELUDE = r"""#include <stdint.h>
#include <math.h>
#define TK_EXPORT __attribute__((visibility("default")))
#define TK_INLINE static inline __attribute__((always_inline))
typedef struct { void *data; const int64_t *shape; int64_t i; double f; } tk_arg;
typedef struct tk_ctx {
    int failed;
    void (*fail)(struct tk_ctx *, int, int, int, int64_t, int64_t, const char *);
} tk_ctx;
#define TK_FAILED __atomic_load_n(&tk_ctx->failed, __ATOMIC_RELAXED)
TK_EXPORT const int tack_kernel_abi = 1;

/* Python's // and % on int64: floor, never UB. x // 0 and x % 0 give 0 (debug
 * builds raise ZeroDivisionError instead); INT64_MIN // -1 wraps. */
/* Both operands in [0, 2^31) (indices, the usual case): a 32-bit unsigned divide,
 * several times faster than a 64-bit one on x86, and floor == truncation there. */
#define TK_SMALL(a, b) (((uint64_t)(a) | (uint64_t)(b)) >> 31 == 0)
TK_INLINE int64_t tk_floordiv(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (TK_SMALL(a, b)) return (int64_t)((uint32_t)a / (uint32_t)b);
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
TK_INLINE int64_t tk_mod(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (TK_SMALL(a, b)) return (int64_t)((uint32_t)a % (uint32_t)b);
    if (b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
TK_INLINE int64_t tk_floordiv_d(tk_ctx *c, int64_t a, int64_t b, int line) {
    if (b == 0) { c->fail(c, 2, line, 0, 0, 0, 0); return 0; }
    return tk_floordiv(a, b);
}
TK_INLINE int64_t tk_mod_d(tk_ctx *c, int64_t a, int64_t b, int line) {
    if (b == 0) { c->fail(c, 2, line, 0, 0, 0, 0); return 0; }
    return tk_mod(a, b);
}
/* Python's float // and % (CPython's float_divmod); // by zero is a / b (inf or nan),
 * as NumPy's floor_divide. */
#define TK_FLOATDIV(T, S)                                                   \
TK_INLINE T tk_fmod##S(T a, T b) {                                          \
    T m = fmod##S(a, b);                                                    \
    if (m != 0) { if ((b < 0) != (m < 0)) m += b; }                         \
    else m = copysign##S((T)0, b);                                          \
    return m;                                                               \
}                                                                           \
TK_INLINE T tk_ffloordiv##S(T a, T b) {                                     \
    if (b == 0) return a / b;                                               \
    T m = fmod##S(a, b);                                                    \
    T d = (a - m) / b;                                                      \
    if (m != 0 && ((b < 0) != (m < 0))) d -= 1;                             \
    if (d != 0) { T f = floor##S(d); if (d - f > (T)0.5) f += 1; return f; } \
    return copysign##S((T)0, a / b);                                        \
}
TK_FLOATDIV(double, )
TK_FLOATDIV(float, f)
TK_INLINE int64_t tk_ipow(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)a;
    while (b) { if (b & 1) r *= x; x *= x; b >>= 1; }
    return (int64_t)r;
}
TK_INLINE int64_t tk_shl(int64_t a, int64_t b) {
    return (b < 0 || b >= 64) ? 0 : (int64_t)((uint64_t)a << b);
}
TK_INLINE int64_t tk_shr(int64_t a, int64_t b) {
    return b < 0 ? 0 : b >= 64 ? (a < 0 ? -1 : 0) : (a >> b);
}
/* math.isqrt (a negative argument gives 0) and math.ldexp's exponent. */
TK_INLINE int64_t tk_isqrt(int64_t n) {
    if (n <= 0) return 0;
    uint64_t r = (uint64_t)sqrt((double)n);
    while (r * r > (uint64_t)n) r--;
    while ((r + 1) * (r + 1) <= (uint64_t)n) r++;
    return (int64_t)r;
}
TK_INLINE int tk_ldexp_exp(int64_t e) {
    return e < -100000 ? -100000 : e > 100000 ? 100000 : (int)e;
}
/* A uint64 element against an int64 value: the sign of a - b, exactly. */
TK_INLINE int tk_ucmp(uint64_t a, int64_t b) {
    if (b < 0 || a > (uint64_t)b) return 1;
    return a == (uint64_t)b ? 0 : -1;
}
TK_INLINE int64_t tk_iabs(int64_t a) { return a < 0 ? (int64_t)(0 - (uint64_t)a) : a; }
/* float -> int: truncate, saturate, NaN -> 0 (as tack_convert). */
TK_INLINE int64_t tk_f2i64(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775807.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}
TK_INLINE uint64_t tk_f2u64(double x) {
    if (!(x > 0)) return 0;
    if (x >= 18446744073709551615.0) return UINT64_MAX;
    return (uint64_t)x;
}
TK_INLINE int64_t tk_f2sat(double x, double lo, double hi) {
    if (x != x) return 0;
    return x <= lo ? (int64_t)lo : x >= hi ? (int64_t)hi : (int64_t)x;
}
TK_INLINE int64_t tk_trips(int64_t a, int64_t b, int64_t s) {
    if (s > 0 && a < b) return (int64_t)(((uint64_t)b - (uint64_t)a - 1) / (uint64_t)s + 1);
    if (s < 0 && a > b) return (int64_t)(((uint64_t)a - (uint64_t)b - 1) / (0 - (uint64_t)s) + 1);
    return 0;
}
TK_INLINE int tk_ok(tk_ctx *c, int64_t i, int64_t n, int axis, const char *name, int line) {
    if ((uint64_t)i < (uint64_t)n) return 1;
    c->fail(c, 1, line, axis, i, n, name);
    return 0;
}
/* min and max as Python's: the first argument unless the other compares past it. */
#define TK_MINMAX(T, S) \
TK_INLINE T tk_min_##S(T a, T b) { return b < a ? b : a; } \
TK_INLINE T tk_max_##S(T a, T b) { return b > a ? b : a; }
TK_MINMAX(_Bool, b)
TK_MINMAX(int64_t, i)
TK_MINMAX(float, f)
TK_MINMAX(double, d)
"""

HALF = r"""
TK_INLINE float tk_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t bits;
    if (e == 0) {
        if (m == 0) bits = sign;
        else { int k = -1; do { k++; m <<= 1; } while ((m & 0x400u) == 0);
               bits = sign | ((uint32_t)(127 - 15 - k) << 23) | ((m & 0x3ffu) << 13); }
    } else if (e == 0x1f) bits = sign | 0x7f800000u | (m << 13);
    else bits = sign | ((e + 127 - 15) << 23) | (m << 13);
    union { uint32_t u; float f; } v = {bits};
    return v.f;
}
TK_INLINE uint16_t tk_f2h(float f) {
    union { float f; uint32_t u; } v = {f};
    uint32_t x = v.u, exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), hm = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (hm & 1u))) hm++;
        return (uint16_t)(sign | hm);
    }
    uint32_t hm = mant >> 13, rem = mant & 0x1fffu;
    uint32_t out = ((uint32_t)e << 10) | hm;
    if (rem > 0x1000u || (rem == 0x1000u && (hm & 1u))) out++;
    return (uint16_t)(sign | out);
}
/* float64 -> float16 straight from the double's bits: one rounding (to nearest,
 * ties to even), as NumPy's astype and tack_convert; going through float32 would
 * round twice. */
TK_INLINE uint16_t tk_d2h(double d) {
    union { double d; uint64_t u; } v = {d};
    uint64_t x = v.u, mant = x & 0xfffffffffffffull;
    int32_t exp = (int32_t)((x >> 52) & 0x7ffu);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
    if (exp == 0x7ff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int32_t e = exp - 1023 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return sign;
        mant |= 1ull << 52;
        uint32_t shift = (uint32_t)(43 - e);
        uint64_t hm = mant >> shift, rem = mant & ((1ull << shift) - 1u);
        uint64_t half = 1ull << (shift - 1u);
        if (rem > half || (rem == half && (hm & 1u))) hm++;
        return (uint16_t)(sign | hm);
    }
    uint64_t hm = mant >> 42, rem = mant & ((1ull << 42) - 1u);
    uint64_t out = ((uint64_t)e << 10) | hm;
    if (rem > (1ull << 41) || (rem == (1ull << 41) && (hm & 1u))) out++;
    return (uint16_t)(sign | out);
}
"""


def c_float(v: float) -> str:
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "HUGE_VAL" if v > 0 else "(-HUGE_VAL)"
    return repr(float(v))


def c_int(v: int) -> str:
    if v == -(2**63):
        return "INT64_MIN"
    return f"INT64_C({v})"


def c_string(s: str) -> str:
    """s as a C string literal that holds exactly its UTF-8 bytes: every byte
    outside printable ASCII, and the quote, backslash and ? (trigraphs), is an
    octal escape, so no text (a hostile path or name) can end the literal, the
    line or a comment around it."""
    out = []
    for b in s.encode("utf-8", "surrogateescape"):
        ch = chr(b)
        out.append(ch if 0x20 <= b < 0x7F and ch not in '"\\?' else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def mangle(name: str) -> str:
    """A Python identifier as a C identifier fragment that no other identifier
    maps to and that never ends like a generated suffix: '_' is doubled and any
    non-ASCII character is written _x<hex>_, so a single '_' followed by a letter
    or digit marks a suffix the code generator added (p_a_n0 is the extent of
    axis 0 of a; the parameter a_n0 is p_a__n0)."""
    out = []
    for ch in name:
        if ch == "_":
            out.append("__")
        elif ch.isascii() and ch.isalnum():
            out.append(ch)
        else:
            out.append(f"_x{ord(ch):x}_")
    return "".join(out)


def var_name(name: str) -> str:
    """The C name of a scalar parameter or local."""
    return "v_" + mangle(name)


def arr_name(name: str) -> str:
    """The C name of an array parameter's data; its extents add _n<axis>, its
    element count _size."""
    return "p_" + mangle(name)


class CGen:
    def __init__(self, tk: TypedKernel) -> None:
        self.tk = tk
        self.debug = tk.debug
        self.lines: list[str] = []
        self.counter = 0
        self.ret = ""  # what "return" needs in the current function
        self.file = c_string(tk.ir.filename)

    # ---- helpers ---------------------------------------------------------------

    def emit(self, text: str, depth: int) -> None:
        self.lines.append("    " * depth + text)

    def line(self, n: int) -> None:
        self.lines.append(f"#line {n} {self.file}")

    def conv(self, code: str, src: ScalarType, dst: ScalarType) -> str:
        if src == dst:
            return code
        if dst == BOOL:
            return f"(({code}) != 0)"
        if dst == INT and src.is_float:
            return f"tk_f2i64({code})"
        return f"(({CTYPE[dst]})({code}))"

    def is_u64(self, e: ir.Expr) -> bool:
        """A uint64 element read: an int64 value, except where it is converted to a
        float or compared, which use its unsigned value."""
        return isinstance(e, ir.Element) and self.tk.arrays[e.array].dtype == "uint64"

    def ex(self, e: ir.Expr, want: ScalarType | None = None) -> str:
        assert e.ty is not None, e
        if want is not None and want.is_float and self.is_u64(e):
            assert isinstance(e, ir.Element)
            return f"(({CTYPE[want]}){self.load(e, raw=True)})"
        code = self._ex(e)
        return self.conv(code, e.ty, want) if want is not None else code

    def truth(self, e: ir.Expr) -> str:
        if isinstance(e, ir.BoolOp):  # only its truth matters: plain && / ||
            op = " && " if e.op == "and" else " || "
            return "(" + op.join(self.truth(v) for v in e.values) + ")"
        return self.ex(e, BOOL)

    def fail_check(self, depth: int) -> None:
        if self.debug:
            self.emit(f"if (TK_FAILED) return{self.ret};", depth)

    # ---- arrays ----------------------------------------------------------------

    def flat_index(self, e: ir.Element) -> str:
        arr = self.tk.arrays[e.array]
        idx = [self.ex(i, INT) for i in e.indices]
        flat = "0"
        for axis, i in enumerate(idx):
            flat = f"({i})" if axis == 0 else f"({flat} * {arr_name(e.array)}_n{axis} + ({i}))"
        if e.component is not None:
            flat = f"({flat} * {arr.components} + ({self.ex(e.component, INT)}))"
        return flat

    def checks(self, e: ir.Element) -> str:
        arr = self.tk.arrays[e.array]
        name = c_string(e.array)
        parts = [
            f"tk_ok(tk_ctx, {self.ex(i, INT)}, {arr_name(e.array)}_n{axis}, {axis}, {name}, "
            f"{e.line})"
            for axis, i in enumerate(e.indices)
        ]
        if e.component is not None:
            parts.append(f"tk_ok(tk_ctx, {self.ex(e.component, INT)}, "
                         f"{arr.components}, {arr.ndim}, {name}, {e.line})")
        return " && ".join(parts) if parts else "1"

    def load(self, e: ir.Element, raw: bool = False) -> str:
        """The element's value: its load type, or (raw) its C element type."""
        arr = self.tk.arrays[e.array]
        ref = f"{arr_name(e.array)}[{self.flat_index(e)}]"
        if raw:
            if self.debug:
                return f"(({self.checks(e)}) ? {ref} : ({ELEM_C[arr.dtype]})0)"
            return ref
        if arr.dtype == "bool":
            value = f"({ref} != 0)"
        elif arr.dtype == "float16":
            value = f"tk_h2f({ref})"
        elif arr.load_type == INT:
            value = f"((int64_t){ref})"
        else:
            value = ref
        if self.debug:
            return f"(({self.checks(e)}) ? {value} : ({CTYPE[arr.load_type]})0)"
        return value

    def store_value(self, arr: ir.ArrayType, v: ir.Expr) -> str:
        assert v.ty is not None
        dt = arr.dtype
        if dt == "bool":
            return f"(uint8_t)({self.truth(v)})"
        if dt == "float16":
            if v.ty == F32:
                return f"tk_f2h({self.ex(v)})"
            return f"tk_d2h({self.ex(v, F64)})"
        if dt == "float64":
            return self.ex(v, F64)
        if arr.load_type == F32:
            return self.ex(v, F32)
        ct = ELEM_C[dt]
        if not v.ty.is_float:
            return f"({ct})({self.ex(v, INT)})"
        if dt == "int64":
            return f"tk_f2i64({self.ex(v)})"
        if dt == "uint64":
            return f"tk_f2u64({self.ex(v)})"
        lo, hi = INT_RANGE[dt]
        return f"({ct})tk_f2sat({self.ex(v)}, {lo}.0, {hi}.0)"

    # ---- expressions -----------------------------------------------------------

    def _ex(self, e: ir.Expr) -> str:
        t = e.ty
        if isinstance(e, (ir.Const, ir.Global)):
            v = e.value  # type: ignore[union-attr]
            if isinstance(v, bool):
                return "((_Bool)1)" if v else "((_Bool)0)"
            return c_int(v) if isinstance(v, int) else c_float(v)
        if isinstance(e, ir.Name):
            return f"{var_name(e.id)}"
        if isinstance(e, ir.Element):
            return self.load(e)
        if isinstance(e, ir.Shape):
            if e.axis == -1:
                return c_int(self.tk.arrays[e.array].ndim)
            if e.axis == -2:
                return f"{arr_name(e.array)}_size"
            return f"{arr_name(e.array)}_n{e.axis}"
        if isinstance(e, ir.BinOp):
            return self.binop(e)
        if isinstance(e, ir.UnaryOp):
            if e.op == "not":
                return f"(!{self.truth(e.operand)})"
            x = self.ex(e.operand, t)
            return {"-": f"(-{x})", "+": x, "~": f"(~{x})"}[e.op]
        if isinstance(e, ir.Compare):
            parts = []
            for op, a, b in zip(e.ops, e.operands, e.operands[1:], strict=False):
                assert a.ty is not None and b.ty is not None
                ct = promote(a.ty, b.ty, is_weak(a), is_weak(b))
                parts.append(self.compare(op, a, b, ct))
            return "(" + " && ".join(parts) + ")"
        if isinstance(e, ir.BoolOp):
            return self.boolop(e)
        if isinstance(e, ir.IfExp):
            assert t is not None
            return (f"({self.truth(e.test)} ? {self.ex(e.body, t)} : "
                    f"{self.ex(e.orelse, t)})")
        if isinstance(e, ir.Call):
            return self.call(e)
        raise AssertionError(type(e))

    def compare(self, op: str, a: ir.Expr, b: ir.Expr, ct: ScalarType) -> str:
        ua, ub = ct == INT and self.is_u64(a), ct == INT and self.is_u64(b)
        if ua and ub:
            assert isinstance(a, ir.Element) and isinstance(b, ir.Element)
            return f"({self.load(a, raw=True)} {op} {self.load(b, raw=True)})"
        if ua:
            assert isinstance(a, ir.Element)
            return f"(tk_ucmp({self.load(a, raw=True)}, {self.ex(b, INT)}) {op} 0)"
        if ub:
            assert isinstance(b, ir.Element)
            return f"(0 {op} tk_ucmp({self.load(b, raw=True)}, {self.ex(a, INT)}))"
        return f"({self.ex(a, ct)} {op} {self.ex(b, ct)})"

    def boolop(self, e: ir.BoolOp) -> str:
        """Python's and/or: the first operand that decides (falsy for and, truthy
        for or), else the last one, in the type they all meet in; later operands
        are evaluated only when needed."""
        t = e.ty
        assert t is not None
        if t == BOOL:
            return self.truth(e)
        code = self.ex(e.values[-1], t)
        for v in reversed(e.values[:-1]):
            assert v.ty is not None
            tmp = f"tk_t{self.counter}"
            self.counter += 1
            decides = f"{tmp} == 0" if e.op == "and" else f"{tmp} != 0"
            code = (f"({{ const {CTYPE[v.ty]} {tmp} = {self.ex(v)}; "
                    f"{decides} ? {self.conv(tmp, v.ty, t)} : {code}; }})")
        return code

    def binop(self, e: ir.BinOp) -> str:
        t = e.ty
        assert t is not None
        op = e.op
        if op in ("<<", ">>"):
            fn = "tk_shl" if op == "<<" else "tk_shr"
            return f"{fn}({self.ex(e.left, INT)}, {self.ex(e.right, INT)})"
        a, b = self.ex(e.left, t), self.ex(e.right, t)
        if op in ("+", "-", "*", "/", "&", "|", "^"):
            return f"({a} {op} {b})"
        if op in ("//", "%"):
            if t == INT:
                fn = "tk_floordiv" if op == "//" else "tk_mod"
                if self.debug:
                    return f"{fn}_d(tk_ctx, {a}, {b}, {e.line})"
                return f"{fn}({a}, {b})"
            fn = "tk_ffloordiv" if op == "//" else "tk_fmod"
            return f"{fn}{'f' if t == F32 else ''}({a}, {b})"
        if op == "**":
            if t == INT:
                return f"tk_ipow({a}, {b})"
            return f"pow{'f' if t == F32 else ''}({a}, {b})"
        raise AssertionError(op)

    def call(self, e: ir.Call) -> str:
        t = e.ty
        assert t is not None
        f, args = e.func, e.args
        a0 = args[0]
        assert a0.ty is not None
        if f == "float":
            return self.ex(a0, F64)
        if f == "int":
            return self.ex(a0, INT)
        if f == "bool":
            return self.truth(a0)
        if f == "round":
            if not a0.ty.is_float:
                return self.ex(a0, INT)
            return f"tk_f2i64(rint{'f' if a0.ty == F32 else ''}({self.ex(a0)}))"
        if f == "abs":
            if t == INT:
                return f"tk_iabs({self.ex(a0, INT)})"
            return f"fabs{'f' if t == F32 else ''}({self.ex(a0)})"
        if f in ("min", "max"):
            code = self.ex(a0, t)
            for a in args[1:]:
                code = f"tk_{f}_{SUFFIX[t]}({code}, {self.ex(a, t)})"
            return code
        name = f[5:]  # math.<name>
        if name in ("floor", "ceil", "trunc"):
            if not a0.ty.is_float:
                return self.ex(a0, INT)
            return f"tk_f2i64({name}{'f' if a0.ty == F32 else ''}({self.ex(a0)}))"
        if name in ("isnan", "isinf", "isfinite"):
            if not a0.ty.is_float:
                return "((_Bool)1)" if name == "isfinite" else "((_Bool)0)"
            return f"({name}({self.ex(a0)}) != 0)"
        if name == "isqrt":
            return f"tk_isqrt({self.ex(a0, INT)})"
        sfx = "f" if t == F32 else ""
        if name == "ldexp":
            return f"ldexp{sfx}({self.ex(a0, t)}, tk_ldexp_exp({self.ex(args[1], INT)}))"
        if name == "degrees":
            return f"({self.ex(a0, t)} * ({CTYPE[t]})(180.0 / 3.141592653589793))"
        if name == "radians":
            return f"({self.ex(a0, t)} * ({CTYPE[t]})(3.141592653589793 / 180.0))"
        if name == "log" and len(args) == 2:
            return f"(log{sfx}({self.ex(a0, t)}) / log{sfx}({self.ex(args[1], t)}))"
        cname = MATH_C.get(name, name) + sfx
        return f"{cname}({', '.join(self.ex(a, t) for a in args)})"

    # ---- statements ------------------------------------------------------------

    def block(self, body: list[ir.Stmt], depth: int) -> None:
        for s in body:
            self.stmt(s, depth)

    def stmt(self, s: ir.Stmt, depth: int) -> None:
        self.line(s.line)
        if isinstance(s, ir.Assign):
            if isinstance(s.target, ir.Name):
                ty = self.tk.locals[s.target.id]
                self.emit(f"{var_name(s.target.id)} = {self.ex(s.value, ty)};", depth)
            else:
                el = s.target
                arr = self.tk.arrays[el.array]
                store = f"{arr_name(el.array)}[{self.flat_index(el)}] = " \
                        f"{self.store_value(arr, s.value)};"
                if self.debug:
                    self.emit(f"if ({self.checks(el)}) {store}", depth)
                else:
                    self.emit(store, depth)
            self.fail_check(depth)
        elif isinstance(s, ir.If):
            self.emit(f"if ({self.truth(s.test)}) {{", depth)
            self.block(s.body, depth + 1)
            if s.orelse:
                self.emit("} else {", depth)
                self.block(s.orelse, depth + 1)
            self.emit("}", depth)
            self.fail_check(depth)
        elif isinstance(s, ir.While):
            self.emit(f"while ({self.truth(s.test)}) {{", depth)
            self.fail_check(depth + 1)
            self.block(s.body, depth + 1)
            self.emit("}", depth)
            self.fail_check(depth)
        elif isinstance(s, ir.For):
            self.for_loop(s, depth)
        elif isinstance(s, ir.Break):
            self.emit("break;", depth)
        elif isinstance(s, ir.Continue):
            self.emit("continue;", depth)
        else:
            raise TypeError(f"internal: unknown statement {type(s).__name__}")

    def for_loop(self, s: ir.For, depth: int) -> None:
        n = self.counter
        self.counter += 1
        a, b, k = f"tk_a{n}", f"tk_b{n}", f"tk_k{n}"
        var_ty = self.tk.locals[s.var]
        self.emit(f"{{ const int64_t {a} = {self.ex(s.start, INT)}, "
                  f"{b} = {self.ex(s.stop, INT)};", depth)
        if isinstance(s.step, ir.Const) and s.step.value == 1:
            self.emit(f"for (int64_t {k} = {a}; {k} < {b}; {k}++) {{", depth)
            self.emit(f"{var_name(s.var)} = {self.conv(k, INT, var_ty)};", depth + 1)
        else:
            st, nt = f"tk_s{n}", f"tk_n{n}"
            self.emit(f"const int64_t {st} = {self.ex(s.step, INT)}, "
                      f"{nt} = tk_trips({a}, {b}, {st});", depth)
            self.emit(f"for (int64_t {k} = 0; {k} < {nt}; {k}++) {{", depth)
            self.emit(f"{var_name(s.var)} = {self.conv(f'{a} + {k} * {st}', INT, var_ty)};",
                      depth + 1)
        self.fail_check(depth + 1)
        self.block(s.body, depth + 1)
        self.emit("} }", depth)
        self.fail_check(depth)

    # ---- functions -------------------------------------------------------------

    def params(self, depth: int) -> None:
        for k, p in enumerate(self.tk.ir.params):
            if p in self.tk.arrays:
                arr = self.tk.arrays[p]
                self.emit(f"{ELEM_C[arr.dtype]} *const {arr_name(p)} = "
                          f"({ELEM_C[arr.dtype]} *)tk_args[{k}].data;", depth)
                size = []
                for axis in range(arr.ndim):
                    self.emit(f"const int64_t {arr_name(p)}_n{axis} = tk_args[{k}].shape[{axis}];",
                              depth)
                    size.append(f"{arr_name(p)}_n{axis}")
                self.emit(f"const int64_t {arr_name(p)}_size = {' * '.join(size) or '1'};",
                          depth)
                self.emit(f"(void){arr_name(p)}; (void){arr_name(p)}_size;", depth)
            else:
                kind = self.tk.scalars[p]
                field = "f" if kind == F64 else "i"
                src = f"tk_args[{k}].{field}"
                if kind == BOOL:
                    src = f"({src} != 0)"
                ty = self.tk.locals.get(p, kind)
                self.emit(f"{CTYPE[ty]} {var_name(p)} = {self.conv(src, kind, ty)};", depth)
                self.emit(f"(void){var_name(p)};", depth)

    def declare(self, names: list[str], depth: int) -> None:
        for name in sorted(names):
            self.emit(f"{CTYPE[self.tk.locals[name]]} {var_name(name)} = 0;", depth)

    def generate(self) -> str:
        tk = self.tk
        out = self.lines
        out.append("/* A tack kernel; generated (see #line for its Python source). */")
        out.append(PRELUDE)
        if any(a.dtype == "float16" for a in tk.arrays.values()):
            out.append(HALF)
        scalars = set(tk.scalars)
        all_locals = [n for n in tk.locals if n not in scalars]
        head = "(const tk_arg *tk_args, tk_ctx *tk_ctx)"
        body_head = ("(int64_t tk_begin, int64_t tk_end, const tk_arg *tk_args, "
                     "tk_ctx *tk_ctx)")
        if not tk.ir.parallel:
            out.append(f"TK_EXPORT int64_t tack_kernel_trips{head} {{")
            out.append("    (void)tk_args; (void)tk_ctx; return -1;\n}")
            out.append(f"TK_EXPORT void tack_kernel_body{body_head} {{")
            self.emit("(void)tk_begin; (void)tk_end;", 1)
            self.params(1)
            self.declare(all_locals, 1)
            self.block(tk.body, 1)
            out.append("}")
            return "\n".join(out) + "\n"
        prelude, loop = tk.body[:-1], tk.body[-1]
        assert isinstance(loop, ir.For)
        before = sorted({n for s in prelude for n in _assigned(s)} - scalars)
        inside = [n for n in all_locals if n not in before]
        # trips: the prelude, then the outer loop's trip count.
        out.append(f"TK_EXPORT int64_t tack_kernel_trips{head} {{")
        self.ret = " 0"
        self.params(1)
        self.declare(before, 1)
        self.block(prelude, 1)
        self.line(loop.line)
        self.emit(f"return tk_trips({self.ex(loop.start, INT)}, "
                  f"{self.ex(loop.stop, INT)}, {self.ex(loop.step, INT)});", 1)
        out.append("}")
        # body: the prelude again (it stores nothing), then trips [begin, end).
        self.ret = ""
        out.append(f"TK_EXPORT void tack_kernel_body{body_head} {{")
        self.params(1)
        self.declare(before, 1)
        self.block(prelude, 1)
        self.line(loop.line)
        self.emit(f"const int64_t tk_start = {self.ex(loop.start, INT)}, "
                  f"tk_step = {self.ex(loop.step, INT)};", 1)
        self.emit("for (int64_t tk_k = tk_begin; tk_k < tk_end; tk_k++) {", 1)
        self.declare(inside, 2)
        var_ty = tk.locals[loop.var]
        step_one = isinstance(loop.step, ir.Const) and loop.step.value == 1
        start = "tk_start + tk_k" if step_one else "tk_start + tk_k * tk_step"
        self.emit(f"{var_name(loop.var)} = {self.conv(start, INT, var_ty)};", 2)
        self.emit("(void)tk_step;", 2)
        self.fail_check(2)
        self.block(loop.body, 2)
        self.emit("}", 1)
        out.append("}")
        return "\n".join(out) + "\n"


def _assigned(s: ir.Stmt) -> set[str]:
    from tack.kernel.parse import _assigned as assigned

    return assigned(s)


def generate_c(tk: TypedKernel) -> str:
    """The C source of one specialization."""
    return CGen(tk).generate()
