"""The lowered plan -> C11 source for the CPU (the generated-code ABI of
tack/kernel.h).

This file only spells: every decision was made by lower.py. The output includes
only <stdint.h> and <math.h>, declares the ABI structs itself and pastes prelude.h,
so it compiles in tens of milliseconds. ``#line`` directives map compiler messages
back to the kernel's Python lines; every string that reaches the source (the file
path, array names) goes through ``c_string``.

emit_cuda.py is the CUDA emitter: a subclass that overrides only spellings (value
types, literals, how arguments and names arrive: ``VTYPE``, ``ex``, ``prologue``,
``FINISH``) and the entry points; the walk over statements, the functions and the
reductions' fold are this file's.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, TypeVar, cast

from tack._tack import _KERNEL_ABI, _KERNEL_FAIL_INDEX, _KERNEL_FAIL_ZERO_DIVISION
from tack.kernel import lir, stream
from tack.kernel.ir import BOOL, F32, F64, INT, DtypeFacts, ScalarType

CTYPE = {BOOL: "_Bool", INT: "int64_t", F32: "float", F64: "double"}
KEY_ARRAY = 0x10000  # kernel.h's TACK_KERNEL_KEY_ARRAY
FLOAT_KEYS = (2, 4)  # TACK_KERNEL_KEY_FLOAT, TACK_KERNEL_KEY_FLOAT32: a double field
# A chunk updates private copies of its privatizable arrays (lir.Private) when they
# hold at most this many bytes together (they live on the chunk's stack) and at most
# as many elements as the chunk has trips (zeroing and merging them costs no more
# than the trips). docs/kernels.md states the bound.
PRIVATE_MAX_NBYTES = 65536
# An array or private copy updated by the trip's last statement alone (the natural
# histogram) is binned: a pass computes this many trips' elements and values, then a
# second pass updates them in trip order (CEmitter.binned_trips).
BIN_BLOCK = 256

# The failure codes prelude.h's TK_FAIL records (kernel.h's tack_kernel_failure):
# part of every target's ABI head.
FAIL_CODES = f"""#define TK_FAIL_INDEX {_KERNEL_FAIL_INDEX}
#define TK_FAIL_ZERO_DIVISION {_KERNEL_FAIL_ZERO_DIVISION}
"""

ABI = f"""#include <stdint.h>
#include <math.h>
#define TK_EXPORT __attribute__((visibility("default")))
#define TK_INLINE static inline __attribute__((always_inline))
typedef _Bool tk_bool;
typedef const char *tk_name;
typedef struct tk_ctx {{
    int failed;
    void (*fail)(struct tk_ctx *, int, int, int, int64_t, int64_t, const char *);
    char *partials;
    int64_t chunk, result_i;
    double result_f;
    int privatized;
}} tk_ctx;
#define TK_FAILED __atomic_load_n(&tk_ctx->failed, __ATOMIC_RELAXED)
#define TK_FAIL(c, why, line, axis, index, extent, name) \\
    (c)->fail(c, why, line, axis, index, extent, name)
{FAIL_CODES}TK_EXPORT const int tack_kernel_abi = {_KERNEL_ABI};
"""


_headers: dict[tuple[str, bool, bool], str] = {}


def header(name: str, half: bool = True, overloads: bool = False) -> str:
    """A helper header installed with the package (prelude.h, atomics_cpu.h), as it
    is pasted into a source: without its comments (they are for readers of the
    file), without its float16 section unless half (smaller sources compile
    sooner, and fit a nearly full cache folder), and without its overloads section
    unless overloads (the target overloads functions: C++, OpenCL C). Read once."""
    text = _headers.get((name, half, overloads))
    if text is None:
        # a plain read beside this file (the headers are installed with the package):
        # a warm call in a new process emits the source to find its cached build, so
        # this runs there, and importlib.resources alone would cost it milliseconds
        with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as f:
            text = _cut(f.read(), "/*", "*/")
        if not half:
            text = _cut(text, "#ifdef TK_HALF\n", "#endif")
        if not overloads:
            text = _cut(text, "#ifdef TK_OVERLOADS\n", "#endif")
        _headers[(name, half, overloads)] = text
    return text


def _cut(text: str, start: str, end: str) -> str:
    """text without each span from start to the first end after it, and the newline
    right after that end (string search: compiling patterns would cost a new process
    more than reading the header)."""
    out = []
    pos = 0
    while (i := text.find(start, pos)) >= 0:
        j = text.find(end, i + len(start))
        if j < 0:
            break
        out.append(text[pos:i])
        pos = j + len(end)
        if text.startswith("\n", pos):
            pos += 1
    out.append(text[pos:])
    return "".join(out)


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


def c_float(v: float) -> str:
    if math.isnan(v):
        # a NaN keeps the sign it was given (`-math.nan`): docs/kernels.md
        return "NAN" if math.copysign(1.0, v) > 0 else "(-NAN)"
    if math.isinf(v):
        return "HUGE_VAL" if v > 0 else "(-HUGE_VAL)"
    # a negative literal in parentheses: `-` before it must not spell `--`
    text = repr(float(v))
    return f"({text})" if text.startswith("-") else text


def c_int(v: int) -> str:
    if v == -(2**63):
        return "INT64_MIN"
    return f"INT64_C({v})"


@dataclasses.dataclass
class Binning:
    """A parallel loop's trips split in two passes (CEmitter.binned_trips): the
    trip's statements before its update (prefix), the element it updates (index
    into the array or private copy ``target``, of C type ``ctype``), the value, and
    the plain helper that updates."""

    prefix: list[lir.Stmt]
    index: lir.Expr
    value: lir.Expr
    target: str
    ctype: str
    helper: str


def binning(plan: lir.Plan, its: lir.Iterations | None,
            targets: dict[str, str], unread: set[str]) -> Binning | None:
    """The binned form of the trips its, where it is the same computation: the
    trip's last statement is a plain update of one of targets (name: C element
    type), and nothing before it but declarations and assignments of locals that
    read none of unread (the target, its array), call no func and update nothing
    (so a block of trips may run them before any of the block's updates, which keep
    their order). Not in debug mode, and not beside reductions."""
    if plan.debug or its is None or plan.split or plan.reductions:
        return None
    body = its.iteration
    work = [n for n, s in enumerate(body) if not isinstance(s, lir.Line)]
    if not work:
        return None
    last = body[work[-1]]
    if not (isinstance(last, lir.Eval) and isinstance(last.value, lir.Helper)
            and last.value.name.startswith("plain_") and len(last.value.args) == 2):
        return None
    addr, value = last.value.args
    if not (isinstance(addr, lir.Addr) and isinstance(addr.of.base, lir.Ref)
            and addr.of.base.name in targets):
        return None
    target = addr.of.base.name
    prefix = body[:work[-1]]
    if not all(isinstance(s, (lir.Line, lir.Decl, lir.Assign)) for s in prefix):
        return None
    for n in lir.walk([prefix, addr.of.index, value]):
        if isinstance(n, (lir.Call, lir.Bind)):
            return None
        if isinstance(n, lir.Helper) and n.name.startswith(("atomic_", "plain_")):
            return None
        if isinstance(n, lir.Ref) and n.name in unread | {target}:
            return None
    return Binning(prefix, addr.of.index, value, target, targets[target],
                   last.value.name)


SELECTS = {"f2i64": "f2i64_sel", "f2i64f": "f2i64f_sel"}
_Node = TypeVar("_Node")


def selects(node: _Node) -> _Node:
    """node with each int() conversion (tk_f2i64, tk_f2i64f) spelled as selects
    (prelude.h's tk_f2i64_sel): the same values, in a form GCC vectorises."""
    n: Any = node
    if isinstance(n, list):
        return cast(_Node, [selects(x) for x in n])
    if (dataclasses.is_dataclass(n) and not isinstance(n, type)
            and not isinstance(n, (ScalarType, DtypeFacts))):
        n = dataclasses.replace(n, **{f.name: selects(getattr(n, f.name))
                                      for f in dataclasses.fields(n) if f.init})
        if isinstance(n, lir.Helper) and n.name in SELECTS:
            n = dataclasses.replace(n, name=SELECTS[n.name])
    return cast(_Node, n)


class CEmitter:
    # the spelling of the value types (a target with another bool overrides it)
    VTYPE = CTYPE
    # how a field of the parameter block is reached (the CPU's entry points get a
    # pointer to it)
    PARAMS = "tk_p->"
    # Integer + - * and unary - ("u-") wrap modulo 2**64 on every target. The CPU
    # build compiles with -fwrapv, so they stay plain operators; a target without
    # that flag maps each to prelude.h's overloaded wrapping function (tk_add, ...).
    WRAPPING: dict[str, str] = {}
    # A serial kernel's atomics are plain updates (Plan.serial_plain): the CPU runs
    # it on one thread.
    PLAIN_SERIAL = True
    # The restrict body writes large arrays with streaming stores (stream.py).
    STREAMS = True

    def __init__(self, plan: lir.Plan) -> None:
        self.plan = plan
        self.file = c_string(plan.filename)
        self.lines: list[str] = []
        self.ret = ""  # what "return" needs in the current function
        # the loops that may stream, by id (found once, in generate), and while
        # spelling the restrict body, the streaming-store threshold in bytes (None:
        # no loop streams)
        self.streams: dict[int, stream.Streamed] = {}
        self.stream_min: int | None = None

    def ctype(self, t: ScalarType | DtypeFacts) -> str:
        return t.ctype if isinstance(t, DtypeFacts) else self.VTYPE[t]

    # ---- what a target spells differently (emit_grid.py, emit_opencl.py) ------------

    def scalar_field(self, word: int) -> str:
        """The parameter block's field type of a scalar of key word."""
        return "double" if word in FLOAT_KEYS else "int64_t"

    def result_value(self, s: lir.SetResult) -> str:
        """What the record's result field is set to (a float32 result converted to
        the double field)."""
        return self.ex(lir.Cast(F64, s.value) if s.f32 else s.value)

    RESTRICT = "restrict"
    ADDRESS = "void *"  # the parameter block's field of an array's data address

    def pointer(self, t: str, const: bool = False, restrict: bool = False) -> str:
        """The type of a pointer to t in the memory that array data and the launch
        record live in, ready for a name after it (a target with address spaces
        adds its qualifier)."""
        return f"{'const ' if const else ''}{t} *{self.RESTRICT + ' ' if restrict else ''}"

    def math_name(self, e: lir.Math) -> str:
        """The function a Math node calls: C99's float variant ends in f (sqrtf);
        the classification macros (generic) are type-generic."""
        return e.name if e.generic or e.ty != F32 else e.name + "f"

    # ---- expressions ------------------------------------------------------------------

    def ex(self, e: lir.Expr) -> str:
        if isinstance(e, lir.Lit):
            v = e.value
            if isinstance(v, bool):
                return "((_Bool)1)" if v else "((_Bool)0)"
            return c_int(v) if isinstance(v, int) else c_float(v)
        if isinstance(e, lir.Ref):
            return e.name
        if isinstance(e, lir.Arg):
            return f"{self.PARAMS}a{e.k}{'_n' if e.field == 'shape' else ''}"
        if isinstance(e, lir.Str):
            return c_string(e.text)
        if isinstance(e, lir.Cast):
            return f"(({self.ctype(e.to)})({self.ex(e.x)}))"
        if isinstance(e, lir.Bin):
            fn = self.WRAPPING.get(e.op)
            if fn is not None:
                return f"{fn}({self.ex(e.a)}, {self.ex(e.b)})"
            return f"({self.ex(e.a)} {e.op} {self.ex(e.b)})"
        if isinstance(e, lir.Un):
            fn = self.WRAPPING.get("u" + e.op)
            if fn is not None:
                return f"{fn}({self.ex(e.x)})"
            return f"({e.op}{self.ex(e.x)})"
        if isinstance(e, lir.Cond):
            return f"({self.ex(e.test)} ? {self.ex(e.a)} : {self.ex(e.b)})"
        if isinstance(e, lir.Helper):
            return f"tk_{e.name}({', '.join(self.ex(a) for a in e.args)})"
        if isinstance(e, lir.Math):
            return f"{self.math_name(e)}({', '.join(self.ex(a) for a in e.args)})"
        if isinstance(e, lir.Call):
            return f"{e.name}({', '.join(self.ex(a) for a in e.args)})"
        if isinstance(e, lir.Index):
            return f"{self.ex(e.base)}[{self.ex(e.index)}]"
        if isinstance(e, lir.Addr):
            return f"&{self.ex(e.of)}"
        if isinstance(e, lir.Let):  # a GNU statement expression (GCC, Clang)
            return (f"({{ const {self.VTYPE[e.ty]} {e.name} = {self.ex(e.value)}; "
                    f"{self.ex(e.body)}; }})")
        raise AssertionError(type(e))

    # ---- statements -------------------------------------------------------------------

    def emit(self, text: str, depth: int) -> None:
        self.lines.append("    " * depth + text)

    def block(self, body: list[lir.Stmt], depth: int) -> None:
        for s in body:
            self.stmt(s, depth)

    def stmt(self, s: lir.Stmt, depth: int) -> None:
        if isinstance(s, lir.Line):
            self.lines.append(f"#line {s.n} {self.file}")
        elif isinstance(s, lir.Decl):
            const = "const " if s.const else ""
            init = self.ex(s.init) if s.init is not None else "0"
            self.emit(f"{const}{self.VTYPE[s.ty]} {s.name} = {init};", depth)
        elif isinstance(s, lir.ArrayLocal):
            init = self.ex(s.init)
            self.emit(f"{self.VTYPE[s.ty]} {s.name}[{s.n}] = {{{', '.join([init] * s.n)}}};",
                      depth)
        elif isinstance(s, lir.LocalBuffer):
            self.emit(f"{s.elem.ctype} {s.name}[{s.n}] = {{0}};", depth)
        elif isinstance(s, lir.ArrayDecl):
            t = self.pointer(s.elem.ctype)
            self.emit(f"{t}const {s.name} = ({t}){self.ex(s.init)};", depth)
        elif isinstance(s, lir.Assign):
            self.emit(f"{s.name} = {self.ex(s.value)};", depth)
        elif isinstance(s, lir.Eval):
            self.emit(f"(void){self.ex(s.value)};", depth)
        elif isinstance(s, lir.Store):
            store = f"{s.base}[{self.ex(s.index)}] = {self.ex(s.value)};"
            if s.guard is not None:
                store = f"if ({self.ex(s.guard)}) {store}"
            self.emit(store, depth)
        elif isinstance(s, lir.If):
            self.emit(f"if ({self.ex(s.test)}) {{", depth)
            self.block(s.body, depth + 1)
            if s.orelse:
                self.emit("} else {", depth)
                self.block(s.orelse, depth + 1)
            self.emit("}", depth)
        elif isinstance(s, lir.While):
            self.emit(f"while ({self.ex(s.test)}) {{", depth)
            self.block(s.body, depth + 1)
            self.emit("}", depth)
        elif isinstance(s, lir.Loop):
            st = self.streams.get(id(s)) if self.stream_min is not None else None
            if st is not None:
                self.streamed(st, depth)
                return
            k = s.var
            self.emit(f"for (int64_t {k} = {self.ex(s.begin)}; {k} < {self.ex(s.end)}; "
                      f"{k}++) {{", depth)
            self.block(s.body, depth + 1)
            self.emit("}", depth)
        elif isinstance(s, lir.Scope):
            self.emit("{", depth)
            self.block(s.body, depth + 1)
            self.emit("}", depth)
        elif isinstance(s, lir.Jump):
            self.emit(f"{s.kind};", depth)
        elif isinstance(s, lir.SetResult):
            self.emit(f"tk_ctx->result_{s.field} = {self.result_value(s)};", depth)
        elif isinstance(s, lir.Return):
            value = "" if s.value is None else f" {self.ex(s.value)}"
            self.emit(f"return{value};", depth)
        elif isinstance(s, lir.FailCheck):
            self.emit(f"if (TK_FAILED) return{self.ret};", depth)
        elif isinstance(s, lir.Unused):
            self.emit(" ".join(f"(void){n};" for n in s.names), depth)
        else:
            raise TypeError(f"internal: unknown statement {type(s).__name__}")

    # ---- the kernel -------------------------------------------------------------------

    def params_block(self) -> None:
        """The parameter block's struct (kernel.h: 8-byte fields, no padding), the
        key words that give the runtime its layout and the parameters the kernel
        stores to (the dispatcher checks both against the call)."""
        p = self.plan
        fields = []
        for k, word in enumerate(p.param_key):
            if word & KEY_ARRAY:
                fields.append(f"{self.ADDRESS}a{k};")
                if word & 0xFF:
                    fields.append(f"int64_t a{k}_n[{word & 0xFF}];")
            else:
                fields.append(f"{self.scalar_field(word)} a{k};")
        self.lines.append(f"typedef struct {{ {' '.join(fields) or 'char tk_none;'} }} "
                          "tk_params;")
        self.lines.append(f"TK_EXPORT const int tack_kernel_nparams = {len(p.param_key)};")
        words = ", ".join(f"{w}u" for w in p.param_key) or "0u"
        self.lines.append(f"TK_EXPORT const uint32_t tack_kernel_param_key[] = {{{words}}};")
        flags = ", ".join("1" if s else "0" for s in p.param_stored) or "0"
        self.lines.append(f"TK_EXPORT const unsigned char tack_kernel_param_stored[] = "
                          f"{{{flags}}};")

    def unpack(self, depth: int = 1) -> None:
        self.emit("const tk_params *tk_p = (const tk_params *)tk_pv; (void)tk_p;",
                  depth)

    def arrays(self, depth: int) -> None:
        self.unpack(depth)
        for a in self.plan.arrays:
            t = self.pointer(a.elem.ctype)
            self.emit(f"{t}const {a.name} = ({t}){self.ex(a.init)};", depth)

    def body(self, plain: bool = False) -> None:
        """The body function's statements, after its array pointers. A reduction
        starts each chunk at its identity and leaves the chunk's partial in slot
        begin / chunk. plain: the trips with plain updates (Plan.plain), for a
        launch on one thread."""
        p = self.plan
        self.block(p.setup, 1)
        if not p.parallel:
            self.block(p.serial_plain if self.PLAIN_SERIAL and p.serial_plain
                       else p.serial, 1)
            if p.result is not None:
                self.stmt(p.result, 1)
            return
        for r in p.reductions:
            self.emit(f"{r.name} = {self.ex(r.identity)};", 1)
        its = lir.Iterations(p.iteration, p.iteration_split, p.iteration_rest)
        binned = None
        if plain and p.plain is not None:
            its = p.plain
            binned = binning(p, its, {a.name: a.elem.ctype for a in p.arrays}, set())
        if p.private and p.private_iterations is not None and not plain:
            self.private_trips(p.private_iterations, its)
        elif binned is not None:
            self.binned_trips(binned, 1)
        else:
            self.trips_loop(its, 1)
        if p.reductions:
            self.emit("tk_red *tk_slot = (tk_red *)tk_ctx->partials + "
                      "tk_begin / tk_ctx->chunk;", 1)
            for r in p.reductions:
                self.emit(f"tk_slot->{r.name} = {r.name};", 1)

    def trips_loop(self, its: lir.Iterations, depth: int) -> None:
        """Trips [tk_begin, tk_end) of the parallel loop, spelled its."""
        p = self.plan
        if p.split:
            self.split_loop(its, depth)
            return
        self.emit(f"for (int64_t {p.index} = tk_begin; {p.index} < tk_end; "
                  f"{p.index}++) {{", depth)
        self.block(its.iteration, depth + 1)
        self.emit("}", depth)

    def find_streams(self) -> None:
        """self.streams: the plan's loops that may stream (stream.streamable), in
        the parts the restrict body spells; none outside it or in debug mode."""
        p = self.plan
        if not (self.STREAMS and p.restrict and not p.debug):
            return
        arrays = {a.name: a for a in p.arrays}
        declared = {s.name for s in p.setup if isinstance(s, lir.Decl)}
        for n in lir.walk([p.iteration, p.serial, p.serial_plain, p.iteration_split,
                           p.iteration_rest, p.private_iterations]):
            if isinstance(n, lir.Loop):
                st = stream.streamable(n, arrays, declared)
                if st is not None:
                    self.streams[id(n)] = st

    def streamed(self, st: stream.Streamed, depth: int) -> None:
        """The loop st.loop with streaming stores (stream.py) when its array holds
        at least self.stream_min bytes: plain trips until the store's address is
        on a line boundary; then blocks of trips (strips of stream.STRIP bytes,
        then single lines), each computing its values into an aligned local
        buffer in trip order and writing it with streaming stores; then plain
        trips for the rest. The same trips in the same order as the plain loop;
        only when each element reaches memory differs."""
        loop, store = st.loop, st.store
        k, end, w = loop.var, self.ex(loop.end), st.width
        ct = st.elem.ctype
        self.emit("{", depth)
        d = depth + 1
        self.emit(f"int64_t {k} = {self.ex(loop.begin)};", d)
        self.emit(f"if (TK_STREAMS && (uint64_t){st.size} * sizeof({ct}) >= "
                  f"UINT64_C({self.stream_min})) {{", d)
        self.emit(f"{self.pointer(ct)}tk_nt_dst = 0;", d + 1)
        self.emit(f"for (; {k} < {end}; {k}++) {{", d + 1)
        self.block(st.before, d + 2)
        self.emit(f"tk_nt_dst = &{store.base}[{self.ex(store.index)}];", d + 2)
        self.emit(f"if (((uintptr_t)tk_nt_dst & {stream.LINE - 1}) == 0) break;", d + 2)
        self.emit(f"*tk_nt_dst = {self.ex(store.value)};", d + 2)
        self.emit("}", d + 1)
        # strips of several lines first (the compute loop vectorises as the plain
        # loop does, into a buffer that stays in L1), then single lines
        for n in (st.strip, w):
            self.emit(f"for (; {end} - {k} >= {n}; {k} += {n}, tk_nt_dst += {n}) {{", d + 1)
            self.emit(f"{ct} tk_nt_buf[{n}] __attribute__((aligned({stream.LINE})));", d + 2)
            self.emit(f"const int64_t tk_nt_at = {k};", d + 2)
            self.emit(f"for (int64_t tk_nt_l = 0; tk_nt_l < {n}; tk_nt_l++) {{", d + 2)
            self.emit(f"const int64_t {k} = tk_nt_at + tk_nt_l;", d + 3)
            self.block(st.before, d + 3)
            self.emit(f"tk_nt_buf[tk_nt_l] = {self.ex(store.value)};", d + 3)
            self.emit("}", d + 2)
            self.emit(f"for (int64_t tk_nt_l = 0; tk_nt_l < {n}; tk_nt_l += {w}) "
                      "tk_stream_line(tk_nt_dst + tk_nt_l, tk_nt_buf + tk_nt_l);", d + 2)
            self.emit("}", d + 1)
        self.emit("}", d)
        self.emit(f"for (; {k} < {end}; {k}++) {{", d)
        self.block(loop.body, d + 1)
        self.emit("}", d)
        self.emit("}", depth)

    def private_trips(self, private: lir.Iterations, atomic: lir.Iterations) -> None:
        """The chunk's trips on private copies of the privatizable arrays when they
        are small enough (PRIVATE_MAX_NBYTES, no more elements than trips), each
        copy then merged into its array with one atomic update per element that
        moved; otherwise the atomic trips."""
        p = self.plan
        nbytes = " + ".join(f"{v.size} * {v.elem.itemsize}" for v in p.private)
        count = " + ".join(v.size for v in p.private)
        self.emit(f"if ({nbytes} <= {PRIVATE_MAX_NBYTES} && "
                  f"{count} <= tk_end - tk_begin) {{", 1)
        for v in p.private:
            t = v.elem.ctype
            self.emit(f"{t} *const {v.name} = ({t} *)__builtin_alloca("
                      f"(uint64_t){v.size} * sizeof({t}) + 1);", 2)
            self.emit(f"for (int64_t tk_j = 0; tk_j < {v.size}; tk_j++) "
                      f"{v.name}[tk_j] = {self.ex(v.identity)};", 2)
        v = p.private[0]
        binned = (binning(p, private, {v.name: v.elem.ctype}, {v.array})
                  if len(p.private) == 1 else None)
        if binned is not None:
            self.binned_trips(binned, 2)
        else:
            self.trips_loop(private, 2)
        for v in p.private:
            idle = self.ex(v.identity)
            self.emit(f"for (int64_t tk_j = 0; tk_j < {v.size}; tk_j++) "
                      f"if ({v.name}[tk_j] != {idle}) "
                      f"(void)tk_{v.merge}(&{v.array}[tk_j], {v.name}[tk_j]);", 2)
        self.emit("__atomic_store_n(&tk_ctx->privatized, 1, __ATOMIC_RELAXED);", 2)
        self.emit("} else {", 1)
        self.trips_loop(atomic, 2)
        self.emit("}", 1)

    def binned_trips(self, b: Binning, depth: int) -> None:
        """The chunk's trips in blocks of BIN_BLOCK: a first pass runs each trip's
        statements and keeps the element it updates (and the value, unless it is
        a literal), with int() spelled as selects so that GCC vectorises the pass;
        a second pass updates the private copy in trip order, so the result is the
        one-pass loop's to the bit. The pass that updates has no conversion checks
        left in it, which is what makes a histogram's loop as short as hand-written
        C's."""
        p = self.plan
        k = p.index
        literal = not any(isinstance(n, (lir.Ref, lir.Arg, lir.Index, lir.Call,
                                         lir.Helper, lir.Math, lir.Let, lir.Bind))
                          for n in lir.walk(b.value))
        self.emit(f"int64_t tk_bin[{BIN_BLOCK}];", depth)
        if not literal:
            # the helper's value parameter is the element's type (atomics_cpu.h)
            self.emit(f"{b.ctype} tk_bin_v[{BIN_BLOCK}];", depth)
        self.emit(f"for (int64_t tk_b0 = tk_begin; tk_b0 < tk_end; tk_b0 += {BIN_BLOCK}) {{",
                  depth)
        self.emit(f"const int64_t tk_bn = tk_end - tk_b0 < {BIN_BLOCK} ? tk_end - tk_b0 "
                  f": {BIN_BLOCK};", depth + 1)
        self.emit("for (int64_t tk_bj = 0; tk_bj < tk_bn; tk_bj++) {", depth + 1)
        self.emit(f"const int64_t {k} = tk_b0 + tk_bj;", depth + 2)
        self.block(selects(b.prefix), depth + 2)
        self.emit(f"tk_bin[tk_bj] = {self.ex(selects(b.index))};", depth + 2)
        if not literal:
            self.emit(f"tk_bin_v[tk_bj] = {self.ex(selects(b.value))};", depth + 2)
        self.emit("}", depth + 1)
        value = self.ex(b.value) if literal else "tk_bin_v[tk_bj]"
        self.emit(f"for (int64_t tk_bj = 0; tk_bj < tk_bn; tk_bj++) "
                  f"(void)tk_{b.helper}(&{b.target}[tk_bin[tk_bj]], {value});", depth + 1)
        self.emit("}", depth)

    def split_loop(self, its: lir.Iterations, depth: int) -> None:
        """The chunk's trips with its float reductions in interleaved partials."""
        p = self.plan
        k, u, w = p.index, p.lane, p.width
        for sp in p.split:
            self.stmt(lir.ArrayLocal(sp.ty, sp.array, w, sp.identity), depth)
        # A counted block loop: GCC vectorises it (a "kb + w <= end" test under
        # -fwrapv it cannot count, and it does not).
        self.emit(f"const int64_t tk_nb = (tk_end - tk_begin) / {w};", depth)
        self.emit("for (int64_t tk_b = 0; tk_b < tk_nb; tk_b++) {", depth)
        self.emit(f"for (int64_t {u} = 0; {u} < {w}; {u}++) {{", depth + 1)
        self.emit(f"const int64_t {k} = tk_begin + tk_b * {w} + {u};", depth + 2)
        self.block(its.split, depth + 2)
        self.emit("}", depth + 1)
        self.emit("}", depth)
        self.emit(f"for (int64_t {k} = tk_begin + tk_nb * {w}; {k} < tk_end; {k}++) {{",
                  depth)
        self.block(its.rest, depth + 1)
        self.emit("}", depth)
        for sp in p.split:
            self.stmt(sp.fold, depth)

    FINISH = ("TK_EXPORT void tack_kernel_finish(const void *tk_pv, tk_ctx *tk_ctx, "
              "int64_t tk_nchunks) {")

    def prologue(self, depth: int) -> None:
        """What every entry point starts with: the array pointers."""
        self.arrays(depth)

    def finish(self, count: str = "tk_nchunks") -> None:
        """tack_kernel_finish (self.FINISH): the setup again, the count partials
        folded in slot order, then the returned value."""
        p = self.plan
        self.lines.append(self.FINISH)
        self.emit(f"(void){count};", 1)
        self.prologue(1)
        self.block(p.setup, 1)
        if p.reductions:
            self.fold_partials(count)
        if p.result is not None:
            self.stmt(p.result, 1)
        self.lines.append("}")

    def fold_partials(self, count: str) -> None:
        """The count partials folded into the reductions' values, in slot order."""
        self.emit(f"for (int64_t tk_c = 0; tk_c < {count}; tk_c++) {{", 1)
        t = self.pointer("tk_red", const=True)
        self.emit(f"{t}tk_slot = ({t})tk_ctx->partials + tk_c;", 2)
        self.fold_slot(2)
        self.emit("}", 1)

    def fold_slot(self, depth: int) -> None:
        """Each reduction's value = combine(value, tk_slot's partial)."""
        for r in self.plan.reductions:
            self.emit(f"{{ const {self.VTYPE[r.ty]} {lir.PART} = tk_slot->{r.name}; "
                      f"{r.name} = {self.ex(r.combine)}; }}", depth)

    def restrict_body(self, head: str, call: str) -> None:
        """tack_kernel_body_restrict: the body in a function whose array pointers
        are restrict parameters (GCC ignores restrict on block-scope pointers),
        kept out of line so the promise is not lost to inlining."""
        out = self.lines
        ptrs = [f"{'const ' if a.const else ''}{a.elem.ctype} *restrict {a.name}"
                for a in self.plan.arrays]
        out.append("__attribute__((noinline)) static void tk_body_restrict("
                   f"{head[1:-1]}, {', '.join(ptrs)}) {{")
        self.unpack()
        if self.streams:
            self.stream_min = stream.stream_min_bytes()
        self.body()
        if self.streams:
            self.emit("tk_stream_fence();", 1)
        self.stream_min = None
        out.append("}")
        args = [f"({'const ' if a.const else ''}{a.elem.ctype} *){self.ex(a.init)}"
                for a in self.plan.arrays]
        out.append(f"TK_EXPORT void tack_kernel_body_restrict{head} {{")
        self.unpack()
        self.emit(f"tk_body_restrict({call}, {', '.join(args)});", 1)
        out.append("}")

    def signature(self, f: lir.Function) -> str:
        params = ["tk_ctx *tk_ctx"]
        for p in f.params:
            if p.elem is not None:
                params.append(f"{self.pointer(p.elem.ctype, p.const)}{p.name}")
                params += [f"int64_t {p.name}_n{axis}" for axis in range(p.ndim)]
            else:
                assert p.ty is not None
                params.append(f"{self.VTYPE[p.ty]} {p.name}")
        ret = self.VTYPE[f.returns] if f.returns is not None else "void"
        return f"TK_INLINE {ret} {f.name}({', '.join(params)})"

    def functions(self) -> None:
        """The @tack.func instances: prototypes, then definitions (always inlined)."""
        fs = self.plan.functions
        for f in fs:
            self.lines.append(self.signature(f) + ";")
        for f in fs:
            self.lines.append(self.signature(f) + " {")
            self.ret = " 0" if f.returns is not None else ""
            # a func may live in another file than the kernel: its #line names its own
            self.file = c_string(f.filename or self.plan.filename)
            self.emit("(void)tk_ctx;", 1)
            self.block(f.body, 1)
            self.lines.append("}")
        self.ret = ""
        self.file = c_string(self.plan.filename)

    def generate(self) -> str:
        p = self.plan
        out = self.lines
        out.append("/* A tack kernel; generated. */")
        out.append(ABI)
        if p.uses_half:
            out.append("#define TK_HALF 1")
        out.append(header("prelude.h", p.uses_half))
        if p.uses_atomics:
            out.append(header("atomics_cpu.h"))
        self.find_streams()
        if self.streams:
            out.append(header("stream_cpu.h"))
        if p.serial_plain or p.plain is not None:  # a launch counts its plain form
            out.append("TK_EXPORT const int tack_kernel_atomics = 1;")
        if p.result_kind:
            out.append(f"TK_EXPORT const int tack_kernel_result_kind = {p.result_kind};")
        if p.files:  # the files a failure's line word names (lower.FILE_SHIFT)
            names = ", ".join(c_string(f) for f in p.files)
            out.append(f"TK_EXPORT const char *const tack_kernel_files[] = {{{names}, 0}};")
        if p.reductions:
            fields = " ".join(f"{self.VTYPE[r.ty]} {r.name};" for r in p.reductions)
            out.append(f"typedef struct {{ {fields} }} tk_red;")
            out.append("TK_EXPORT const int64_t tack_kernel_partial_size = "
                       "sizeof(tk_red);")
        self.params_block()
        self.functions()
        head = "(const void *tk_pv, tk_ctx *tk_ctx)"
        body_head = "(int64_t tk_begin, int64_t tk_end, const void *tk_pv, tk_ctx *tk_ctx)"
        # trips: the setup, then the parallel loop's trip count (-1: serial).
        out.append(f"TK_EXPORT int64_t tack_kernel_trips{head} {{")
        if p.parallel:
            assert p.trips is not None
            self.ret = " 0"
            self.arrays(1)
            self.block(p.setup, 1)
            self.emit(f"return {self.ex(p.trips)};", 1)
            self.ret = ""
        else:
            self.emit("(void)tk_pv; (void)tk_ctx; return -1;", 1)
        out.append("}")
        # body: the setup again (it stores nothing), then trips [begin, end).
        out.append(f"TK_EXPORT void tack_kernel_body{body_head} {{")
        self.emit("(void)tk_begin; (void)tk_end;", 1)
        self.arrays(1)
        self.body()
        out.append("}")
        if p.restrict:
            self.restrict_body(body_head, "tk_begin, tk_end, tk_pv, tk_ctx")
        if p.plain is not None:
            # body_serial: the trips with plain updates, for a launch on one thread
            out.append(f"TK_EXPORT void tack_kernel_body_serial{body_head} {{")
            self.arrays(1)
            self.body(plain=True)
            out.append("}")
        if p.parallel and (p.reductions or p.result is not None):
            self.finish()
        return "\n".join(out) + "\n"


def emit_c(plan: lir.Plan) -> str:
    """The C source of one lowered specialization."""
    return CEmitter(plan).generate()
