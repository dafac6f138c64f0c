"""Typed IR -> the lowered plan (lir.py) that every emitter spells.

Everything a second target would otherwise have to decide again is decided here:
the value conversions (float -> int saturates through a helper, uint64 elements read
exactly where they meet a float or a comparison), Python's floor division and
modulo, truth tests, and/or that yield an operand, the bounds checks of debug mode,
loop trip counts, which locals live where, and the mangled C-family names. An
emitter only spells nodes (see emit_c.py, and the note there on what a CUDA emitter
adds).

Names: a Python name becomes ``v_<mangled>`` (scalars) or ``p_<mangled>`` (array
data); an array's extents are ``p_<mangled>_n<axis>`` and its element count
``p_<mangled>_size``; the lowering's own names start with ``tk_``. ``mangle``
doubles every '_' of a Python name, so no Python name can collide with another,
with a generated suffix or with C.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from tack.kernel import builtins, ir, lir
from tack.kernel.ir import BOOL, F32, F64, INT, ScalarType
from tack.kernel.types import TypedKernel

SUFFIX = {BOOL: "b", INT: "i", F32: "f", F64: "d"}
# Interleaved partials of an inner loop's float reduction: one AVX-512 vector of
# float32, two of float64.
PARTIALS = 8
# The float reductions kept as interleaved partials: + and *, which the docs allow
# to be reassociated. Never min and max: their answer is Python's, the first of
# equal values (min(0.0, -0.0) is 0.0), and interleaved lanes lose the trip order.
SPLIT_OPS = ("+", "*")
CTX = lir.Ref("tk_ctx")
ZERO = lir.Lit(0, INT)


def mangle(name: str) -> str:
    """A Python identifier as an ASCII identifier fragment that no other identifier
    maps to and that never ends like a generated suffix: '_' is doubled and any
    non-ASCII character is written _x<hex>_, so a single '_' followed by a letter
    or digit marks a suffix the lowering added (p_a_n0 is the extent of axis 0 of
    a; the parameter a_n0 is p_a__n0)."""
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
    """The generated name of a scalar parameter or local."""
    return "v_" + mangle(name)


def arr_name(name: str) -> str:
    """The generated name of an array parameter's data."""
    return "p_" + mangle(name)


def func_name(tf: TypedKernel) -> str:
    """The generated name of a func instance."""
    return f"{tf.cname}_{mangle(tf.ir.name)}"


def ext_name(name: str, axis: int) -> str:
    return f"{arr_name(name)}_n{axis}"


def size_name(name: str) -> str:
    return f"{arr_name(name)}_size"


# A debug-mode failure's line word: the line, and above FILE_SHIFT the 1-based index
# of its file in Plan.files when the code is a func's from another file (0: the
# kernel's own file). kernel.h's TACK_KERNEL_LINE_FILE_SHIFT.
FILE_SHIFT = 24
MAX_FILES = 127  # kernel.h's TACK_KERNEL_MAX_FILES


class Lowering:
    def __init__(self, tk: TypedKernel, files: list[str] | None = None) -> None:
        self.tk = tk
        # the other files of the kernel's funcs, shared by the kernel and its funcs
        self.files: list[str] = [] if files is None else files
        self.debug = tk.debug
        self.counter = 0
        self.uses_half = False
        # inside a split inner loop: reduction name -> its partial (tk_r[u])
        self.partial: dict[str, lir.Index] = {}
        # how atomics are spelled: "atomic" (tk_atomic_*), "plain" (one thread:
        # tk_plain_*) or "private" (the arrays in self.private update their chunk's
        # private copy, named here, with tk_plain_*)
        self.mode = "atomic"
        self.private: dict[str, str] = {}
        self.split_parts: dict[str, str] = {}  # split reduction -> its partials

    def half(self, name: str, args: list[lir.Expr]) -> lir.Expr:
        """A float16 helper (prelude.h compiles them only for kernels that use
        them)."""
        self.uses_half = True
        return lir.Helper(name, args)

    def line_word(self, line: int) -> lir.Lit:
        """The line of a failure as the launch reads it back (FILE_SHIFT)."""
        filename = self.tk.ir.filename
        if self.kernel_file is None or filename == self.kernel_file:
            return lir.Lit(line, INT)
        if filename not in self.files:
            if len(self.files) == MAX_FILES:
                return lir.Lit(line, INT)  # named by the kernel's file, as before
            self.files.append(filename)
        return lir.Lit(line + (self.files.index(filename) + 1 << FILE_SHIFT), INT)

    kernel_file: str | None = None  # set on a func's lowering: the kernel's file

    def fresh(self, stem: str) -> str:
        n = self.counter
        self.counter += 1
        return f"tk_{stem}{n}"

    # ---- conversions ---------------------------------------------------------------

    def suffix(self, t: ScalarType) -> str:
        return SUFFIX[t]

    def float_to_int(self, code: lir.Expr, src: ScalarType = F64) -> lir.Expr:
        """Truncate, saturate at the int64 range, NaN -> 0 (as tack_convert)."""
        return lir.Helper("f2i64f" if src == F32 else "f2i64", [code])

    def conv(self, code: lir.Expr, src: ScalarType, dst: ScalarType) -> lir.Expr:
        if src == dst:
            return code
        if dst == BOOL:
            return lir.Bin("!=", code, ZERO)
        if dst == INT and src.is_float:
            return self.float_to_int(code, src)
        return lir.Cast(dst, code)

    def is_u64(self, e: ir.Expr) -> bool:
        """A uint64 element read: an int64 value, except where it is converted to a
        float or compared, which use its unsigned value."""
        return isinstance(e, ir.Element) and self.tk.arrays[e.array].dtype == "uint64"

    def ex(self, e: ir.Expr, want: ScalarType | None = None) -> lir.Expr:
        assert e.ty is not None, e
        if want is not None and want.is_float and self.is_u64(e):
            assert isinstance(e, ir.Element)
            return lir.Cast(want, self.load(e, raw=True))
        code = self._ex(e)
        return self.conv(code, e.ty, want) if want is not None else code

    def truth(self, e: ir.Expr) -> lir.Expr:
        if isinstance(e, ir.BoolOp):  # only its truth matters: plain && / ||
            op = "&&" if e.op == "and" else "||"
            parts = [self.truth(v) for v in e.values]
            code = parts[0]
            for p in parts[1:]:
                code = lir.Bin(op, code, p)
            return code
        return self.ex(e, BOOL)

    def fail_check(self) -> list[lir.Stmt]:
        return [lir.FailCheck()] if self.debug else []

    # ---- arrays ---------------------------------------------------------------------

    def flat_index(self, e: ir.Element) -> lir.Expr:
        arr = self.tk.arrays[e.array]
        flat: lir.Expr = ZERO
        for axis, i in enumerate(e.indices):
            idx = self.ex(i, INT)
            flat = idx if axis == 0 else lir.Bin(
                "+", lir.Bin("*", flat, lir.Ref(ext_name(e.array, axis))), idx)
        if e.component is not None:
            flat = lir.Bin("+", lir.Bin("*", flat, lir.Lit(arr.components, INT)),
                           self.ex(e.component, INT))
        return flat

    def checks(self, e: ir.Element) -> lir.Expr:
        arr = self.tk.arrays[e.array]
        name = lir.Str(e.array)
        line = self.line_word(e.line)
        parts: list[lir.Expr] = [
            lir.Helper("ok", [CTX, self.ex(i, INT), lir.Ref(ext_name(e.array, axis)),
                              lir.Lit(axis, INT), name, line])
            for axis, i in enumerate(e.indices)
        ]
        if e.component is not None:
            parts.append(lir.Helper("ok", [
                CTX, self.ex(e.component, INT), lir.Lit(arr.components, INT),
                lir.Lit(arr.ndim, INT), name, line]))
        if not parts:
            return lir.Lit(True, BOOL)
        code = parts[0]
        for p in parts[1:]:
            code = lir.Bin("&&", code, p)
        return code

    def load(self, e: ir.Element, raw: bool = False) -> lir.Expr:
        """The element's value: its load type, or (raw) its element type."""
        arr = self.tk.arrays[e.array]
        ref = lir.Index(lir.Ref(arr_name(e.array)), self.flat_index(e))
        if raw:
            if self.debug:
                return lir.Cond(self.checks(e), ref, lir.Cast(arr.facts, ZERO))
            return ref
        value: lir.Expr
        if arr.dtype == "bool":
            value = lir.Bin("!=", ref, ZERO)
        elif arr.dtype == "float16":
            value = self.half("h2f", [ref])
        elif arr.load_type == INT:
            value = lir.Cast(INT, ref)
        else:
            value = ref
        if self.debug:
            return lir.Cond(self.checks(e), value, lir.Cast(arr.load_type, ZERO))
        return value

    def store_value(self, arr: ir.ArrayType | ir.DtypeFacts, v: ir.Expr) -> lir.Expr:
        """v converted to an element type, by tack_convert's rules."""
        assert v.ty is not None
        if isinstance(arr, ir.DtypeFacts):
            arr = ir.ArrayType(arr.name, 0)
        dt = arr.dtype
        if dt == "bool":
            return lir.Cast(arr.facts, self.truth(v))
        if dt == "float16":
            if v.ty == F32:
                return self.half("f2h", [self.ex(v)])
            return self.half("d2h", [self.ex(v, F64)])
        if dt == "float64":
            return self.ex(v, F64)
        if arr.load_type == F32:
            return self.ex(v, F32)
        if not v.ty.is_float:
            return lir.Cast(arr.facts, self.ex(v, INT))
        if dt == "int64":
            return self.float_to_int(self.ex(v), v.ty)
        if dt == "uint64":
            return lir.Helper("f2u64", [self.ex(v)])
        lo, hi = arr.facts.int_range
        return lir.Cast(arr.facts, lir.Helper("f2sat", [
            self.ex(v), lir.Lit(float(lo), F64), lir.Lit(float(hi), F64)]))

    def convert(self, facts: ir.DtypeFacts, v: ir.Expr) -> lir.Expr:
        """tack.f32(v), tack.i8(v), ...: v stored to an element of that dtype and
        read back (so tack.i8(300) wraps to 44 and tack.f16(x) rounds to half)."""
        arr = ir.ArrayType(facts.name, 0)
        value = self.store_value(arr, v)
        if facts.kind == "b":
            return lir.Bin("!=", value, ZERO)
        if facts.name == "float16":
            return self.half("h2f", [value])
        if arr.load_type == INT:
            return lir.Cast(INT, value)
        return value

    # ---- expressions ----------------------------------------------------------------

    def _ex(self, e: ir.Expr) -> lir.Expr:
        t = e.ty
        assert t is not None
        if isinstance(e, (ir.Const, ir.Global)):
            v = e.value  # type: ignore[union-attr]
            return lir.Lit(v, BOOL if isinstance(v, bool) else t)
        if isinstance(e, ir.Name):
            return self.partial.get(e.id) or lir.Ref(var_name(e.id))
        if isinstance(e, ir.Element):
            return self.load(e)
        if isinstance(e, ir.Shape):
            if e.axis == -1:
                return lir.Lit(self.tk.arrays[e.array].ndim, INT)
            if e.axis == -2:
                return lir.Ref(size_name(e.array))
            return lir.Ref(ext_name(e.array, e.axis))
        if isinstance(e, ir.BinOp):
            return self.binop(e)
        if isinstance(e, ir.UnaryOp):
            if e.op == "not":
                return lir.Un("!", self.truth(e.operand))
            x = self.ex(e.operand, t)
            return x if e.op == "+" else lir.Un(e.op, x)
        if isinstance(e, ir.Compare):
            code: lir.Expr | None = None
            for op, a, b, ct in zip(e.ops, e.operands, e.operands[1:], e.meet,
                                    strict=False):
                part = self.compare(op, a, b, ct)
                code = part if code is None else lir.Bin("&&", code, part)
            assert code is not None
            return code
        if isinstance(e, ir.BoolOp):
            return self.boolop(e)
        if isinstance(e, ir.IfExp):
            return lir.Cond(self.truth(e.test), self.ex(e.body, t),
                            self.ex(e.orelse, t))
        if isinstance(e, ir.Call):
            return builtins.REGISTRY[e.func].lower(self, e)
        if isinstance(e, ir.FuncCall):
            return self.func_call(e)
        raise AssertionError(type(e))

    def func_call(self, e: ir.FuncCall) -> lir.Expr:
        """The call of a func instance: the context, then per parameter its data
        pointer and extents (arrays) or its value in the callee's type."""
        assert e.key is not None
        tf = self.tk.funcs[e.key]
        args: list[lir.Expr] = [CTX]
        for p, a in zip(tf.ir.params, e.args, strict=True):
            if p in tf.arrays:
                assert isinstance(a, ir.Name)
                args.append(lir.Ref(arr_name(a.id)))
                args += [lir.Ref(ext_name(a.id, k)) for k in range(tf.arrays[p].ndim)]
            else:
                args.append(self.ex(a, tf.locals[p]))
        return lir.Call(func_name(tf), args)

    def compare(self, op: str, a: ir.Expr, b: ir.Expr, ct: ScalarType) -> lir.Expr:
        ua, ub = ct == INT and self.is_u64(a), ct == INT and self.is_u64(b)
        if ua and ub:
            assert isinstance(a, ir.Element) and isinstance(b, ir.Element)
            return lir.Bin(op, self.load(a, raw=True), self.load(b, raw=True))
        if ua:
            assert isinstance(a, ir.Element)
            return lir.Bin(op, lir.Helper("ucmp", [self.load(a, raw=True),
                                                   self.ex(b, INT)]), ZERO)
        if ub:
            assert isinstance(b, ir.Element)
            return lir.Bin(op, ZERO, lir.Helper("ucmp", [self.load(b, raw=True),
                                                         self.ex(a, INT)]))
        return lir.Bin(op, self.ex(a, ct), self.ex(b, ct))

    def boolop(self, e: ir.BoolOp) -> lir.Expr:
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
            tmp = self.fresh("t")
            decides = lir.Bin("==" if e.op == "and" else "!=", lir.Ref(tmp), ZERO)
            code = lir.Let(tmp, v.ty, self.ex(v), lir.Cond(
                decides, self.conv(lir.Ref(tmp), v.ty, t), code))
        return code

    def binop(self, e: ir.BinOp) -> lir.Expr:
        t = e.ty
        assert t is not None
        op = e.op
        if op in ("<<", ">>"):
            return lir.Helper("shl" if op == "<<" else "shr",
                              [self.ex(e.left, INT), self.ex(e.right, INT)])
        a, b = self.ex(e.left, t), self.ex(e.right, t)
        if op in ("+", "-", "*", "/", "&", "|", "^"):
            return lir.Bin(op, a, b)
        if op in ("//", "%"):
            if t == INT:
                fn = "floordiv" if op == "//" else "mod"
                if self.debug:
                    return lir.Helper(fn + "_d", [CTX, a, b, self.line_word(e.line)])
                return lir.Helper(fn, [a, b])
            fn = "ffloordiv" if op == "//" else "fmod"
            return lir.Helper(fn + ("f" if t == F32 else ""), [a, b])
        if op == "**":
            if t == INT:
                return lir.Helper("ipow", [a, b])
            return lir.Math("pow", t, [a, b])
        raise AssertionError(op)

    # ---- statements -------------------------------------------------------------------

    def block(self, body: list[ir.Stmt]) -> list[lir.Stmt]:
        out: list[lir.Stmt] = []
        for s in body:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: ir.Stmt) -> list[lir.Stmt]:
        out: list[lir.Stmt] = [lir.Line(s.line)]
        if isinstance(s, ir.Assign):
            if isinstance(s.target, ir.Name):
                ty = self.tk.locals[s.target.id]
                part = self.partial.get(s.target.id)
                if part is not None:  # an inner loop's split reduction
                    out.append(lir.Store(part.base.name, part.index,  # type: ignore
                                         self.ex(s.value, ty)))
                else:
                    out.append(lir.Assign(var_name(s.target.id),
                                          self.ex(s.value, ty)))
            else:
                el = s.target
                arr = self.tk.arrays[el.array]
                out.append(lir.Store(arr_name(el.array), self.flat_index(el),
                                     self.store_value(arr, s.value),
                                     self.checks(el) if self.debug else None))
            out += self.fail_check()
        elif isinstance(s, ir.Atomic):
            out.append(self.atomic(s))
            out += self.fail_check()
        elif isinstance(s, ir.CallStmt):
            out.append(lir.Eval(self.func_call(s.call)))
            out += self.fail_check()
        elif isinstance(s, ir.LocalArray):
            k = self.fresh("z")
            zero = lir.Cast(ir.DTYPES[s.dtype], ZERO)
            out.append(lir.Loop(k, ZERO, lir.Lit(math.prod(s.shape), INT), [
                lir.Store(arr_name(s.name), lir.Ref(k), zero)]))
        elif isinstance(s, ir.Return):
            r = self.tk.returns
            out.append(lir.Return(None if s.value is None or r is None
                                  else self.ex(s.value, r)))
        elif isinstance(s, ir.If):
            out.append(lir.If(self.truth(s.test), self.block(s.body),
                              self.block(s.orelse)))
            out += self.fail_check()
        elif isinstance(s, ir.While):
            out.append(lir.While(self.truth(s.test),
                                 self.fail_check() + self.block(s.body)))
            out += self.fail_check()
        elif isinstance(s, ir.For):
            out += self.for_loop(s)
        elif isinstance(s, ir.Break):
            out.append(lir.Jump("break"))
        elif isinstance(s, ir.Continue):
            out.append(lir.Jump("continue"))
        else:
            raise TypeError(f"internal: unknown statement {type(s).__name__}")
        return out

    def atomic(self, s: ir.Atomic) -> lir.Stmt:
        """tk_atomic_<op>_<dtype>(&a[i], v): v converted by the store rule, the old
        element read back as a load; in debug mode only when the index is in
        bounds."""
        el = s.element
        arr = self.tk.arrays[el.array]
        base = arr_name(el.array)
        kind = "plain" if self.mode == "plain" else "atomic"
        if self.mode == "private" and el.array in self.private:
            base, kind = self.private[el.array], "plain"  # the old value is unused
        ref = lir.Index(lir.Ref(base), self.flat_index(el))
        old = lir.Helper(f"{kind}_{s.op}_{arr.dtype}",
                         [lir.Addr(ref), self.store_value(arr, s.value)])
        stmt: lir.Stmt
        if s.result is None:
            stmt = lir.Eval(old)
        else:
            value = old if arr.load_type != INT else lir.Cast(INT, old)
            stmt = lir.Assign(var_name(s.result.id), self.conv(
                value, arr.load_type, self.tk.locals[s.result.id]))
        return lir.If(self.checks(el), [stmt]) if self.debug else stmt

    def inner_reductions(self, s: ir.For) -> dict[str, str]:
        """The float reductions of an inner loop that may be split into PARTIALS
        interleaved partials (SPLIT_OPS): the loop neither breaks nor continues,
        and each name is only updated as a reduction (ir.reduction_op)."""
        if self.debug or self.partial or _jumps(s.body):
            return {}
        out = {}
        for name in sorted({n for st in s.body for n in ir.assigned(st)}):
            op = ir.reduction_op(s.body, name)
            if op in SPLIT_OPS and name != s.var \
                    and self.tk.locals[name].is_float:
                out[name] = op
        return out

    def split_loop(self, s: ir.For, red: dict[str, str]) -> list[lir.Stmt]:
        """An inner loop whose float reductions run as PARTIALS interleaved partials
        (trip k updates partial k % PARTIALS within whole blocks; the remainder
        updates partial 0), folded into the name by a fixed pairwise tree. The
        association is fixed, so the result is deterministic; unrolled over the
        partials, the compiler can vectorise the loop."""
        a, b, st, nt = (self.fresh(x) for x in "absn")
        kb, u, kr = self.fresh("kb"), self.fresh("u"), self.fresh("kr")
        out: list[lir.Stmt] = [
            lir.Decl(INT, a, self.ex(s.start, INT), const=True),
            lir.Decl(INT, b, self.ex(s.stop, INT), const=True),
            lir.Decl(INT, st, self.ex(s.step, INT), const=True),
            lir.Decl(INT, nt, lir.Helper("trips", [lir.Ref(a), lir.Ref(b),
                                                   lir.Ref(st)]), const=True)]
        parts = {}
        for name, op in red.items():
            t = self.tk.locals[name]
            parts[name] = self.fresh("r")
            out.append(lir.ArrayLocal(t, parts[name], PARTIALS, self.identity(op, t)))
        var_ty = self.tk.locals[s.var]

        def trip(k: lir.Expr, slot: lir.Expr) -> list[lir.Stmt]:
            value = lir.Bin("+", lir.Ref(a), lir.Bin("*", k, lir.Ref(st)))
            self.partial = {n: lir.Index(lir.Ref(p), slot) for n, p in parts.items()}
            body: list[lir.Stmt] = [lir.Assign(var_name(s.var),
                                               self.conv(value, INT, var_ty))]
            body += self.block(s.body)
            self.partial = {}
            return body

        width = lir.Lit(PARTIALS, INT)
        whole = lir.Bin("*", lir.Bin("/", lir.Ref(nt), width), width)
        out.append(lir.Loop(kb, ZERO, lir.Bin("/", lir.Ref(nt), width), [
            lir.Loop(u, ZERO, width, trip(lir.Bin("+", lir.Bin("*", lir.Ref(kb), width),
                                                  lir.Ref(u)), lir.Ref(u)))]))
        out.append(lir.Loop(kr, whole, lir.Ref(nt), trip(lir.Ref(kr), ZERO)))
        out += [self.fold(name, op, parts[name]) for name, op in red.items()]
        return [lir.Scope(out)]

    def fold(self, name: str, op: str, part: str) -> lir.Stmt:
        """name = name op (((p0 op p1) op (p2 op p3)) op ((p4 op p5) op (p6 op p7)))
        for the PARTIALS partials in the local array part: a fixed pairwise tree."""
        t = self.tk.locals[name]
        level: list[lir.Expr] = [lir.Index(lir.Ref(part), lir.Lit(k, INT))
                                 for k in range(PARTIALS)]
        while len(level) > 1:
            level = [self.combine(op, t, level[k], level[k + 1])
                     for k in range(0, len(level), 2)]
        return lir.Assign(var_name(name), self.combine(op, t, lir.Ref(var_name(name)),
                                                       level[0]))

    def for_loop(self, s: ir.For) -> list[lir.Stmt]:
        red = self.inner_reductions(s)
        if red:
            return self.split_loop(s, red)
        a, b, k = self.fresh("a"), self.fresh("b"), self.fresh("k")
        var_ty = self.tk.locals[s.var]
        inner: list[lir.Stmt] = [lir.Decl(INT, a, self.ex(s.start, INT), const=True),
                                 lir.Decl(INT, b, self.ex(s.stop, INT), const=True)]
        if isinstance(s.step, ir.Const) and s.step.value == 1:
            value: lir.Expr = lir.Ref(k)
            begin: lir.Expr = lir.Ref(a)
            end: lir.Expr = lir.Ref(b)
        else:
            st, nt = self.fresh("s"), self.fresh("n")
            inner += [lir.Decl(INT, st, self.ex(s.step, INT), const=True),
                      lir.Decl(INT, nt, lir.Helper("trips", [lir.Ref(a), lir.Ref(b),
                                                             lir.Ref(st)]), const=True)]
            value = lir.Bin("+", lir.Ref(a), lir.Bin("*", lir.Ref(k), lir.Ref(st)))
            begin, end = ZERO, lir.Ref(nt)
        body: list[lir.Stmt] = [lir.Assign(var_name(s.var), self.conv(value, INT, var_ty))]
        body += self.fail_check() + self.block(s.body)
        inner.append(lir.Loop(k, begin, end, body))
        return [lir.Scope(inner)] + self.fail_check()

    # ---- the kernel -------------------------------------------------------------------

    def arrays(self) -> list[lir.ArrayDecl]:
        """The array parameters' data pointers: const where never stored to."""
        return [lir.ArrayDecl(arr_name(p), self.tk.arrays[p].facts, lir.Arg(k, "data"),
                              const=p not in self.tk.ir.stored)
                for k, p in enumerate(self.tk.ir.params) if p in self.tk.arrays]

    def params(self) -> list[lir.Stmt]:
        """Extents, sizes and scalar parameters (the data pointers: arrays())."""
        out: list[lir.Stmt] = []
        for k, p in enumerate(self.tk.ir.params):
            if p in self.tk.arrays:
                arr = self.tk.arrays[p]
                size: lir.Expr | None = None
                for axis in range(arr.ndim):
                    n = ext_name(p, axis)
                    out.append(lir.Decl(INT, n, lir.Index(lir.Arg(k, "shape"),
                                                          lir.Lit(axis, INT)), True))
                    size = lir.Ref(n) if size is None else lir.Bin("*", size,
                                                                   lir.Ref(n))
                out.append(lir.Decl(INT, size_name(p), size or lir.Lit(1, INT), True))
                out.append(lir.Unused([arr_name(p), size_name(p)]))
            else:
                kind = self.tk.scalars[p]
                src: lir.Expr = lir.Arg(k, "f" if kind.is_float else "i")
                if kind == BOOL:
                    src = lir.Bin("!=", src, ZERO)
                elif kind == F32:  # travels as a double, exactly
                    src = lir.Cast(F32, src)
                ty = self.tk.locals.get(p, kind)
                out.append(lir.Decl(ty, var_name(p), self.conv(src, kind, ty)))
                out.append(lir.Unused([var_name(p)]))
        return out

    def declare(self, names: list[str] | set[str]) -> list[lir.Stmt]:
        """Declarations of locals, and of the local arrays among names (storage,
        extents and size)."""
        out: list[lir.Stmt] = []
        for n in sorted(names):
            if n in self.tk.ir.local_arrays:
                shape, dt = self.tk.ir.local_arrays[n]
                out.append(lir.LocalBuffer(ir.DTYPES[dt], arr_name(n), math.prod(shape)))
                out += [lir.Decl(INT, ext_name(n, axis), lir.Lit(d, INT), True)
                        for axis, d in enumerate(shape)]
                out += [lir.Decl(INT, size_name(n), lir.Lit(math.prod(shape), INT), True),
                        lir.Unused([size_name(n)])]
            else:
                out.append(lir.Decl(self.tk.locals[n], var_name(n)))
        return out

    def identity(self, op: str, t: ScalarType) -> lir.Expr:
        """The value a reduction's partial starts from: op(identity, x) == x."""
        if op == "+":
            return lir.Lit(-0.0, t) if t.is_float else lir.Cast(t, ZERO)
        if op == "*":
            return lir.Cast(t, lir.Lit(1, INT))
        if op in ("|", "^"):
            return lir.Cast(t, ZERO)
        if op == "&":
            return lir.Lit(True, BOOL) if t == BOOL else lir.Lit(-1, INT)
        big = op == "min"
        if t.is_float:
            return lir.Cast(t, lir.Lit(math.inf if big else -math.inf, F64))
        if t == BOOL:
            return lir.Lit(big, BOOL)
        return lir.Lit(2**63 - 1 if big else -(2**63), INT)

    def combine(self, op: str, t: ScalarType, acc: lir.Expr,
                part: lir.Expr) -> lir.Expr:
        """acc op part, as the update s op= part (or s = min(s, part)) computes it."""
        if op in ("min", "max"):
            return lir.Helper(f"{op}_{self.suffix(t)}", [acc, part])
        r = lir.Bin(op, acc, part)
        return r if t != BOOL or op in ("|", "&", "^") else self.conv(r, INT, BOOL)

    def reductions(self) -> list[lir.Reduction]:
        out = []
        for name, op in sorted(self.tk.ir.reductions.items()):
            t = self.tk.locals[name]
            v = var_name(name)
            out.append(lir.Reduction(v, t, self.identity(op, t), self.combine(
                op, t, lir.Ref(v), lir.Ref(lir.PART)), replaces={
                    "min": "<", "max": ">"}.get(op, "") if t.is_float else ""))
        return out

    def result(self) -> tuple[lir.SetResult | None, int]:
        e = self.tk.result
        if e is None:
            return None, 0
        assert e.ty is not None
        if e.ty == F32:
            return lir.SetResult("f", self.ex(e), f32=True), 2
        if e.ty.is_float:
            return lir.SetResult("f", self.ex(e, F64)), 2
        if e.ty == BOOL:
            return lir.SetResult("i", lir.Cast(INT, self.ex(e))), 3
        return lir.SetResult("i", self.ex(e)), 1

    def function(self) -> lir.Function:
        """This func instance as a generated function."""
        tk = self.tk
        params = []
        body: list[lir.Stmt] = []
        for p in tk.ir.params:
            if p in tk.arrays:
                arr = tk.arrays[p]
                params.append(lir.Param(arr_name(p), elem=arr.facts, ndim=arr.ndim,
                                        const=p not in tk.ir.stored))
                size: lir.Expr = lir.Lit(1, INT)
                for axis in range(arr.ndim):
                    n = lir.Ref(ext_name(p, axis))
                    size = n if axis == 0 else lir.Bin("*", size, n)
                body += [lir.Decl(INT, size_name(p), size, True),
                         lir.Unused([arr_name(p), size_name(p)])]
            else:
                params.append(lir.Param(var_name(p), ty=tk.locals[p]))
        body += self.declare([n for n in tk.locals if n not in tk.scalars]
                             + list(tk.ir.local_arrays))
        body += self.block(tk.body)
        if tk.returns is not None:  # a path that falls off the end gives 0
            body.append(lir.Return(lir.Cast(tk.returns, ZERO)))
        return lir.Function(func_name(tk), tk.returns, params, body, tk.ir.filename)

    def param_key(self) -> list[int]:
        """The key words of the parameters, as the dispatcher builds them."""
        dtypes = list(ir.DTYPES)
        kinds = {INT: 1, F64: 2, BOOL: 3, F32: 4}  # TACK_KERNEL_KEY_*
        out = []
        for p in self.tk.ir.params:
            if p in self.tk.arrays:
                arr = self.tk.arrays[p]
                out.append(0x10000 | dtypes.index(arr.dtype) << 8 | arr.ndim)
            else:
                out.append(kinds[self.tk.scalars[p]])
        return out

    def plan(self) -> lir.Plan:
        plan = self._plan()
        plan.param_key = self.param_key()
        plan.param_stored = [p in self.tk.ir.stored for p in self.tk.ir.params]
        for tf in self.tk.funcs.values():
            sub = Lowering(tf, self.files)
            sub.kernel_file = self.tk.ir.filename
            plan.functions.append(sub.function())
            self.uses_half |= sub.uses_half
        plan.result, plan.result_kind = self.result()
        plan.reductions = self.reductions() if plan.parallel else []
        plan.uses_half = self.uses_half
        plan.files = self.files
        plan.uses_atomics = any(isinstance(s, ir.Atomic) for tk in [self.tk, *(
            self.tk.funcs.values())] for s in ir.walk(tk.body))
        if any(isinstance(s, ir.Atomic) for s in ir.walk(self.tk.body)) and not any(
                isinstance(s, ir.Atomic) for f in self.tk.funcs.values()
                for s in ir.walk(f.body)):
            # (a func's atomics are inlined into every path: they stay atomic, and
            # so do the kernel's). Last: the other parts' names stay as they were.
            self.atomic_variants(plan)
        return plan

    def atomic_variants(self, plan: lir.Plan) -> None:
        """The kernel's statements again with plain updates (for a launch on one
        thread) and, for the arrays privatizable() names, with updates of a
        chunk's private copy."""
        self.mode = "plain"
        if not plan.parallel:
            plan.serial_plain = self.block(self.tk.body)
            self.mode = "atomic"
            return
        plan.plain = self.iterations()
        ops = privatizable(self.tk)
        if ops and not self.debug:
            self.mode = "private"
            self.private = {a: f"tk_pv_{arr_name(a)}" for a in sorted(ops)}
            for a, name in self.private.items():
                arr = self.tk.arrays[a]
                merge = "add" if ops[a] == "sub" else ops[a]
                plan.private.append(lir.Private(
                    name, arr_name(a), size_name(a), arr.facts,
                    private_identity(ops[a], arr.facts), f"atomic_{merge}_{arr.dtype}"))
            plan.private_iterations = self.iterations()
        self.mode, self.private = "atomic", {}

    def iterations(self) -> lir.Iterations:
        """The parallel loop's trip, as _plan lowered it, in the current mode."""
        loop = self.tk.body[-1]
        assert isinstance(loop, ir.For)
        head = self.loop_head(loop)
        out = lir.Iterations(head + self.fail_check() + self.block(loop.body), [], [])
        if self.split_parts:
            out.split, out.rest = self.split_trips(head, loop)
        return out

    def loop_head(self, loop: ir.For) -> list[lir.Stmt]:
        """A trip's start: the loop's own locals declared, its variable set from
        the trip number."""
        tk = self.tk
        scalars = set(tk.scalars)
        before = {n for s in tk.body[:-1] for n in ir.assigned(s)} - scalars
        inside = [n for n in [*tk.locals, *tk.ir.local_arrays]
                  if n not in scalars and n not in before]
        step_one = isinstance(loop.step, ir.Const) and loop.step.value == 1
        k = lir.Ref(lir.Plan.index)
        start = lir.Bin("+", lir.Ref("tk_start"),
                        k if step_one else lir.Bin("*", k, lir.Ref("tk_step")))
        return self.declare(inside) + [
            lir.Assign(var_name(loop.var), self.conv(start, INT, tk.locals[loop.var]))]

    def split_trips(self, head: list[lir.Stmt], loop: ir.For) -> tuple[
            list[lir.Stmt], list[lir.Stmt]]:
        """A trip updating partial lane of each split reduction, and one updating
        partial 0."""
        out = []
        for slot in (lir.Ref(lir.Plan.lane), ZERO):
            self.partial = {n: lir.Index(lir.Ref(p), slot)
                            for n, p in self.split_parts.items()}
            out.append(head + self.block(loop.body))
        self.partial = {}
        return out[0], out[1]

    def _plan(self) -> lir.Plan:
        tk = self.tk
        scalars = set(tk.scalars)
        all_locals = [n for n in tk.locals if n not in scalars]
        arrays = self.arrays()
        plan = lir.Plan(name=tk.ir.name, filename=tk.ir.filename, debug=self.debug,
                        arrays=arrays, setup=self.params(), parallel=tk.ir.parallel,
                        restrict=len(arrays) >= 2 and any(not a.const for a in arrays))
        if not tk.ir.parallel:
            plan.setup += self.declare(all_locals + list(tk.ir.local_arrays))
            plan.serial = self.block(tk.body)
            return plan
        prelude, loop = tk.body[:-1], tk.body[-1]
        assert isinstance(loop, ir.For)
        before = sorted({n for s in prelude for n in ir.assigned(s)} - scalars)
        plan.setup += self.declare(before) + self.block(prelude)
        plan.setup += [lir.Line(loop.line),
                       lir.Decl(INT, "tk_start", self.ex(loop.start, INT), True),
                       lir.Decl(INT, "tk_step", self.ex(loop.step, INT), True),
                       lir.Unused(["tk_start", "tk_step"])]
        plan.trips = lir.Helper("trips", [lir.Ref("tk_start"), self.ex(loop.stop, INT),
                                          lir.Ref("tk_step")])
        head = self.loop_head(loop)
        plan.iteration = head + self.fail_check() + self.block(loop.body)
        split = {} if self.debug else {
            n: op for n, op in tk.ir.reductions.items()
            if op in SPLIT_OPS and tk.locals[n].is_float}
        if split:
            # The chunk's float reductions as interleaved partials, like an inner
            # loop's (split_loop): trip begin + k updates partial k % PARTIALS.
            self.split_parts = {n: self.fresh("r") for n in sorted(split)}
            plan.width = PARTIALS
            for n, part in self.split_parts.items():
                t = tk.locals[n]
                plan.split.append(lir.Split(part, t, self.identity(split[n], t),
                                            self.fold(n, split[n], part)))
            plan.iteration_split, plan.iteration_rest = self.split_trips(head, loop)
        return plan


def privatizable(tk: TypedKernel) -> dict[str, str]:
    """The arrays of a parallel kernel whose every use is an atomic update in the
    parallel loop with the old value unused, all add/sub (-> "add", or "sub" when
    all are sub), all min or all max: name -> that op. A chunk may then update a
    private copy and merge it once (the copy starts at private_identity)."""
    loop = tk.body[-1]
    inside = {id(s) for s in ir.walk([loop])}
    ops: dict[str, set[str]] = {}
    spoiled: set[str] = set()
    for s in ir.walk(tk.body):
        exprs = ir.stmt_exprs(s)
        if isinstance(s, ir.Atomic):
            a = s.element.array
            ops.setdefault(a, set()).add(s.op)
            if s.result is not None or id(s) not in inside:
                spoiled.add(a)
            exprs = [*s.element.indices, s.value]
            if s.element.component is not None:
                exprs.append(s.element.component)
        for e in exprs:
            for x in ir.subexprs(e):
                if isinstance(x, ir.Element):
                    spoiled.add(x.array)  # read, or the target of a plain store
                elif isinstance(x, ir.Name):
                    spoiled.add(x.id)  # passed on to a func
    out = {}
    for a, kinds in ops.items():
        if a in spoiled:
            continue
        if kinds <= {"add", "sub"}:
            out[a] = "add" if "add" in kinds else "sub"
        elif len(kinds) == 1:
            out[a] = next(iter(kinds))
    return out


def private_identity(op: str, facts: ir.DtypeFacts) -> lir.Expr:
    """The value a private copy's elements start from: op(identity, v) == v."""
    if op in ("add", "sub"):
        return lir.Cast(facts, ZERO)
    if facts.kind == "f":
        inf = lir.Ref("HUGE_VALF" if facts.bits == 32 else "HUGE_VAL")
        return inf if op == "min" else lir.Un("-", inf)
    if facts.kind == "u":
        return lir.Ref(f"UINT{facts.bits}_MAX") if op == "min" else lir.Cast(facts, ZERO)
    return lir.Ref(f"INT{facts.bits}_{'MAX' if op == 'min' else 'MIN'}")


def _jumps(body: list[ir.Stmt]) -> bool:
    """A break or continue that belongs to the loop owning body."""
    for s in body:
        if isinstance(s, (ir.Break, ir.Continue)):
            return True
        if isinstance(s, ir.If) and _jumps(s.body + s.orelse):
            return True
    return False


@dataclasses.dataclass(frozen=True)
class Target:
    """What a target's language and launch can take, where lowering offers more
    than one form.

    vector_partials: a chunk of the parallel loop keeps its float sums and products
    as PARTIALS interleaved partials (Plan.split; a CPU chunk is a loop the
    compiler vectorises; a GPU thread runs single trips). atomic_variants: the
    kernel again with plain and with chunk-private atomic updates (Plan.plain,
    serial_plain, private; a CPU launch on one thread or in chunks).
    expression_blocks: a value can be named inside an expression (a GNU statement
    expression, a C++ lambda: lir.Let); without, each Let becomes a Bind and a
    Decl of its name before its statement.
    """

    vector_partials: bool
    atomic_variants: bool
    expression_blocks: bool


CPU = Target(vector_partials=True, atomic_variants=True, expression_blocks=True)
CUDA = Target(vector_partials=False, atomic_variants=False, expression_blocks=True)
OPENCL = Target(vector_partials=False, atomic_variants=False, expression_blocks=False)


def lower(tk: TypedKernel, target: Target = CPU) -> lir.Plan:
    """The lowered plan of one specialization, for target."""
    return for_target(Lowering(tk).plan(), target)


def for_target(plan: lir.Plan, target: Target) -> lir.Plan:
    """plan (lowered for the CPU, which takes every form) as target takes it; plan
    itself is left as it is. The forms a target does not take are dropped after
    lowering, not skipped during it, so the names of what stays are the same for
    every target."""
    if not target.vector_partials:
        plan = dataclasses.replace(plan, split=[], iteration_split=[], iteration_rest=[])
    if not target.atomic_variants:
        plan = dataclasses.replace(plan, serial_plain=[], plain=None, private=[],
                                   private_iterations=None)
    if not target.expression_blocks:
        plan = _without_lets(plan)
    return plan


def _without_lets(plan: lir.Plan) -> lir.Plan:
    """plan with every Let spelled as a Bind, its name declared just before the
    statement holding it (the trip count's and the result's at the end of the
    setup, which every entry point runs before them)."""
    tail: list[lir.Stmt] = []
    trips = None if plan.trips is None else _bind(plan.trips, tail)
    result = None
    if plan.result is not None:
        result = dataclasses.replace(plan.result, value=_bind(plan.result.value, tail))
    return dataclasses.replace(
        plan, setup=_bind_block(plan.setup) + _declared(tail, set()), trips=trips,
        result=result, iteration=_bind_block(plan.iteration),
        serial=_bind_block(plan.serial), functions=[dataclasses.replace(f, body=_bind_block(f.body))
                   for f in plan.functions])


def _bind(e: lir.Expr, lets: list[lir.Stmt]) -> lir.Expr:
    """e with its Lets as Binds; a Decl for each is appended to lets."""
    if isinstance(e, lir.Let):
        lets.append(lir.Decl(e.ty, e.name))
        return lir.Bind(e.name, _bind(e.value, lets), _bind(e.body, lets))
    if not any(isinstance(n, lir.Let) for n in lir.walk(e)):
        return e
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(e):  # type: ignore[arg-type]
        v = getattr(e, f.name)
        if isinstance(v, lir.Expr):
            changes[f.name] = _bind(v, lets)
        elif isinstance(v, list):
            changes[f.name] = [_bind(x, lets) for x in v]
    return dataclasses.replace(e, **changes)  # type: ignore[type-var]


_BODIES = ("body", "orelse")


def _declared(lets: list[lir.Stmt], seen: set[str]) -> list[lir.Stmt]:
    """The Decls of lets whose names this block has not declared yet."""
    out: list[lir.Stmt] = []
    for d in lets:
        assert isinstance(d, lir.Decl)
        if d.name not in seen:
            seen.add(d.name)
            out.append(d)
    return out


def _bind_block(body: list[lir.Stmt]) -> list[lir.Stmt]:
    """body with the Lets of each statement's own expressions as Binds, declared
    before it, and the statements nested in it done the same way."""
    out: list[lir.Stmt] = []
    seen: set[str] = set()
    for s in body:
        lets: list[lir.Stmt] = []
        changes: dict[str, object] = {}
        for f in dataclasses.fields(s):  # type: ignore[arg-type]
            v = getattr(s, f.name)
            if f.name in _BODIES:
                changes[f.name] = _bind_block(v)
            elif isinstance(v, lir.Expr):
                changes[f.name] = _bind(v, lets)
        out += _declared(lets, seen)
        out.append(dataclasses.replace(s, **changes) if changes else s)  # type: ignore
    return out
