"""The kernel IR: what parse.py makes from Python and types.py annotates.

Expressions are pure (no side effects), so the lowering may evaluate one more than
once. Every node carries the line of the kernel's Python source it came from. After
typing, every expression's ``ty`` is set; lower.py turns the typed tree into a
target-neutral plan that each emitter (emit_c.py today) only spells.

Also here: the facts about value types and dtypes every stage shares (the dtype
facts come from the C runtime's dtype table), and the walkers over statements.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tack._tack import _DTYPE_FACTS


@dataclass(frozen=True)
class ScalarType:
    """A value type inside a kernel: bool, int64, float32 or float64."""

    name: str
    rank: int  # bool 0 < int 1 < float32 2 < float64 3

    @property
    def is_float(self) -> bool:
        return self.rank >= 2

    def __repr__(self) -> str:
        return self.name


BOOL = ScalarType("bool", 0)
INT = ScalarType("int64", 1)
F32 = ScalarType("float32", 2)
F64 = ScalarType("float64", 3)


def is_weak(e: Expr) -> bool:
    """A Python literal or global number: it adapts to the float32 it meets."""
    if isinstance(e, Const):
        return e.weak
    if isinstance(e, Global):
        return not isinstance(getattr(e, "value", True), bool)
    return False


def promote(ta: ScalarType, tb: ScalarType, wa: bool, wb: bool) -> ScalarType:
    """The type two operands meet in (NumPy 2 rules with weak Python scalars)."""
    if ta.is_float and tb.is_float:
        if ta == tb:
            return ta
        if (ta == F32 and wb) or (tb == F32 and wa):
            return F32
        return F64
    if ta.is_float:
        return ta if (ta == F64 or wb or tb == BOOL) else F64
    if tb.is_float:
        return tb if (tb == F64 or wa or ta == BOOL) else F64
    return INT if INT in (ta, tb) else BOOL


def meet_all(values: list[Expr]) -> ScalarType:
    """The type typed values all meet in, left to right (min, max, and/or)."""
    assert values[0].ty is not None
    r, w = values[0].ty, is_weak(values[0])
    for v in values[1:]:
        assert v.ty is not None
        r = promote(r, v.ty, w, is_weak(v))
        w = w and is_weak(v)
    return r


@dataclass(frozen=True)
class DtypeFacts:
    """One row of the C runtime's dtype table (TACK_DTYPE_LIST)."""

    name: str
    alias: str  # "f32": tack.f32
    ctype: str  # the C type of one scalar: "float", "uint16_t" for float16
    itemsize: int
    components: int  # 2..4 for the vec types
    kind: str  # "b" bool, "i" signed, "u" unsigned, "f" float
    bits: int  # of the scalar

    @property
    def int_range(self) -> tuple[int, int]:
        if self.kind == "u":
            return 0, 2**self.bits - 1
        return -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1


DTYPES: dict[str, DtypeFacts] = {row[0]: DtypeFacts(*row) for row in _DTYPE_FACTS}


@dataclass(frozen=True)
class ArrayType:
    """An array parameter of one specialization: element dtype and ndim."""

    dtype: str  # "float32", "vec3", ...
    ndim: int

    @property
    def facts(self) -> DtypeFacts:
        return DTYPES[self.dtype]

    @property
    def components(self) -> int:
        return self.facts.components

    @property
    def load_type(self) -> ScalarType:
        """The type of a value read from an element (or a vec component)."""
        f = self.facts
        if f.kind == "b":
            return BOOL
        if f.kind == "f":
            return F64 if f.bits == 64 else F32
        return INT


# ---- expressions --------------------------------------------------------------


@dataclass
class Expr:
    line: int
    ty: ScalarType | None = field(default=None, init=False, compare=False)


@dataclass
class Const(Expr):
    value: bool | int | float

    @property
    def weak(self) -> bool:
        """A literal adapts to the float32 it meets (NumPy's rule for scalars)."""
        return not isinstance(self.value, bool)


@dataclass
class Name(Expr):
    id: str


@dataclass
class Global(Expr):
    """A name from the kernel's module, read (as a number) when a specialization is
    compiled."""

    id: str


@dataclass
class Element(Expr):
    """a[i, j, ...] (all ndim indices), optionally one vec component."""

    array: str
    indices: list[Expr]
    component: Expr | None = None


@dataclass
class Shape(Expr):
    """a.shape[axis], len(a) (axis 0), a.ndim (axis -1) or a.size (axis -2).

    from_end: a.shape[-k], axis = -k; specialization turns it into axis ndim - k.
    """

    array: str
    axis: int
    from_end: bool = False


@dataclass
class BinOp(Expr):
    op: str  # + - * / // % ** & | ^ << >>
    left: Expr
    right: Expr


@dataclass
class UnaryOp(Expr):
    op: str  # - + ~ not
    operand: Expr


@dataclass
class Compare(Expr):
    ops: list[str]  # < <= > >= == !=
    operands: list[Expr]
    # set by the typer: the type each pair (operands[k], operands[k + 1]) meets in
    meet: list[ScalarType] = field(default_factory=list, compare=False)


@dataclass
class BoolOp(Expr):
    op: str  # and, or
    values: list[Expr]


@dataclass
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@dataclass
class Call(Expr):
    """A builtin or math function: "float", "abs", "math.sqrt", ..."""

    func: str
    args: list[Expr]


@dataclass
class FuncCall(Expr):
    """A call of a @tack.func: args are expressions for scalar parameters and
    Names of arrays for array parameters. key (set by the typer) names the typed
    instance it calls."""

    func: Any  # tack.kernel.func.Func
    args: list[Expr]
    key: tuple[Any, ...] | None = field(default=None, compare=False)


# ---- statements ----------------------------------------------------------------


@dataclass
class Stmt:
    line: int


@dataclass
class Assign(Stmt):
    target: Name | Element
    value: Expr
    aug: bool = False  # written x op= v (the parser desugars it to x = x op v)


@dataclass
class Atomic(Stmt):
    """tack.atomic_<op>(a, i, ..., v) as one atomic read-modify-write of the
    element; result, when set, is the local that receives the old value."""

    op: str  # add sub min max
    element: Element
    value: Expr
    result: Name | None = None


@dataclass
class LocalArray(Stmt):
    """name = tack.local_array(shape, dtype): (re)creates a zero-filled array."""

    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class CallStmt(Stmt):
    """A func called for its effect (its value, if any, is dropped)."""

    call: FuncCall


@dataclass
class Return(Stmt):
    """return [value] inside a func (a kernel's final return is KernelIR.result)."""

    value: Expr | None


@dataclass
class If(Stmt):
    test: Expr
    body: list[Stmt]
    orelse: list[Stmt]


@dataclass
class While(Stmt):
    test: Expr
    body: list[Stmt]


@dataclass
class For(Stmt):
    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: list[Stmt]


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class KernelIR:
    """One kernel, before specialization.

    parallel: the body is ``prelude; for ...`` and the for loop's iterations may run
    in parallel (see parse.parallel_plan for the rule). A final ``return v`` is not
    in body: it is ``result``.
    """

    name: str
    filename: str
    params: list[str]
    body: list[Stmt]
    array_params: set[str]  # used as arrays (indexed, .shape, len)
    stored: set[str]  # arrays the kernel may store to
    parallel: bool
    first_use: dict[str, int]  # parameter -> line of its first use, for messages
    lookup: Callable[[str], Any]  # a global or closure value, by name
    file_lines: list[str] = field(default_factory=list)  # the file, for messages
    result: Expr | None = None  # the value of a final ``return``
    # names the parallel loop reduces, with their operator (+ * | & ^ min max)
    reductions: dict[str, str] = field(default_factory=dict)
    # tack.local_array names: (shape, dtype)
    local_arrays: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)
    # array parameters a parallel kernel reads before its loop (parse.read_before_loop)
    read_first: set[str] = field(default_factory=set)


# ---- walkers ---------------------------------------------------------------------


def children(s: Stmt) -> list[Stmt]:
    """The statements directly nested in s."""
    if isinstance(s, If):
        return s.body + s.orelse
    if isinstance(s, (While, For)):
        return s.body
    return []


def walk(body: list[Stmt]) -> Iterator[Stmt]:
    """Every statement of body, nested ones included, in source order."""
    for s in body:
        yield s
        yield from walk(children(s))


def stores(s: Stmt) -> bool:
    """Whether s (or a statement inside it) stores to an array element, itself or
    through a func it calls."""
    for t in walk([s]):
        if (isinstance(t, Assign) and isinstance(t.target, Element)) \
                or isinstance(t, Atomic):
            return True
        if any(isinstance(x, FuncCall) and x.func.parsed.stored
               for e in stmt_exprs(t) for x in subexprs(e)):
            return True
    return False


def assigned(s: Stmt) -> set[str]:
    """The local names s (or a statement inside it) assigns, loop variables too."""
    out: set[str] = set()
    for t in walk([s]):
        if isinstance(t, Assign) and isinstance(t.target, Name):
            out.add(t.target.id)
        elif isinstance(t, Atomic) and t.result is not None:
            out.add(t.result.id)
        elif isinstance(t, LocalArray):
            out.add(t.name)
        elif isinstance(t, For):
            out.add(t.var)
    return out


def breaks_out(body: list[Stmt]) -> bool:
    """A break in body that leaves the loop owning body (not a nested one)."""
    for s in body:
        if isinstance(s, Break):
            return True
        if isinstance(s, If) and breaks_out(s.body + s.orelse):
            return True
    return False


def subexprs(e: Expr) -> Iterator[Expr]:
    """e and every expression inside it."""
    yield e
    kids: list[Expr] = []
    if isinstance(e, Element):
        kids = list(e.indices) + ([e.component] if e.component is not None else [])
    elif isinstance(e, BinOp):
        kids = [e.left, e.right]
    elif isinstance(e, UnaryOp):
        kids = [e.operand]
    elif isinstance(e, (Compare, BoolOp)):
        kids = list(e.operands if isinstance(e, Compare) else e.values)
    elif isinstance(e, IfExp):
        kids = [e.test, e.body, e.orelse]
    elif isinstance(e, (Call, FuncCall)):
        kids = list(e.args)
    for k in kids:
        yield from subexprs(k)


def stmt_exprs(s: Stmt) -> list[Expr]:
    """The expressions a statement itself evaluates (not those of nested
    statements); an element target's indices count."""
    if isinstance(s, Assign):
        return [s.value] + ([s.target] if isinstance(s.target, Element) else [])
    if isinstance(s, Atomic):
        return [s.element, s.value]
    if isinstance(s, (If, While)):
        return [s.test]
    if isinstance(s, For):
        return [s.start, s.stop, s.step]
    if isinstance(s, CallStmt):
        return [s.call]
    if isinstance(s, Return):
        return [s.value] if s.value is not None else []
    return []


def reads(body: list[Stmt], name: str) -> int:
    """How many times body (nested statements included) reads the local name."""
    return sum(1 for s in walk(body) for e in stmt_exprs(s) for x in subexprs(e)
               if isinstance(x, Name) and x.id == name)


REDUCE_OPS = ("+", "*", "|", "&", "^")


def update_op(s: Stmt, name: str) -> str | None:
    """The reduction operator when s updates name as a reduction (name op= v, or
    name = min(name, ...) / max(name, ...), with v not reading name), else None."""
    if not (isinstance(s, Assign) and isinstance(s.target, Name)
            and s.target.id == name):
        return None
    v = s.value
    if s.aug and isinstance(v, BinOp) and v.op in REDUCE_OPS \
            and isinstance(v.left, Name) and v.left.id == name:
        rest = [v.right]
        op = v.op
    elif not s.aug and isinstance(v, Call) and v.func in ("min", "max") \
            and isinstance(v.args[0], Name) and v.args[0].id == name:
        rest = v.args[1:]
        op = v.func
    else:
        return None
    if any(isinstance(x, Name) and x.id == name for r in rest for x in subexprs(r)):
        return None
    return op


def reduction_op(body: list[Stmt], name: str) -> str | None:
    """The operator when every assignment to name in body is a reduction update
    with one operator and body reads name nowhere else; otherwise None."""
    ops = set()
    updates = 0
    for s in walk(body):
        if isinstance(s, For) and s.var == name:
            return None
        if isinstance(s, Atomic) and s.result is not None and s.result.id == name:
            return None
        if isinstance(s, Assign) and isinstance(s.target, Name) \
                and s.target.id == name:
            op = update_op(s, name)
            if op is None:
                return None
            ops.add(op)
            updates += 1
    if len(ops) != 1 or reads(body, name) != updates:
        return None
    return ops.pop()


def stored_arrays(body: list[Stmt]) -> set[str]:
    """The arrays body stores to directly (element assignments and atomics)."""
    out = set()
    for s in walk(body):
        if isinstance(s, Assign) and isinstance(s.target, Element):
            out.add(s.target.array)
        elif isinstance(s, Atomic):
            out.add(s.element.array)
    return out


def names_used(s: Stmt) -> set[str]:
    """The names s itself reads: locals, and arrays it indexes, stores to or passes
    to a func (a local array used before its creation ran is a carried value too)."""
    out: set[str] = set()
    for e in stmt_exprs(s):
        for x in subexprs(e):
            if isinstance(x, Name):
                out.add(x.id)
            elif isinstance(x, Element):
                out.add(x.array)
    return out


def unassigned_uses(body: list[Stmt], names: set[str],
                    done: set[str] | None = None) -> list[tuple[str, int]]:
    """The uses (name, line) in body of a name of names at a point where this pass
    over body has not yet assigned it on every path: the value read is one left by
    an earlier pass (a loop's previous trip) or none. Conservative: a branch that
    ends in break or continue still counts as reaching the code after its if, and
    a nested loop's body as running zero times."""
    done = set() if done is None else done
    out: list[tuple[str, int]] = []
    for s in body:
        out += [(n, s.line) for n in sorted(names_used(s) & names - done)]
        if isinstance(s, If):
            a, b = set(done), set(done)
            out += unassigned_uses(s.body, names, a)
            out += unassigned_uses(s.orelse, names, b)
            done |= a & b
        elif isinstance(s, While):
            out += unassigned_uses(s.body, names, set(done))
        elif isinstance(s, For):
            out += unassigned_uses(s.body, names, done | {s.var})
        elif not children(s):
            done |= assigned(s)
    return out


def stored_names(body: list[Stmt]) -> set[str]:
    """The arrays (parameters and local arrays) body stores to, directly or through
    the funcs it calls (a func's stored parameter stores to the caller's array
    passed there)."""
    out = stored_arrays(body)
    for s in walk(body):
        for e in stmt_exprs(s):
            for x in subexprs(e):
                if isinstance(x, FuncCall):
                    fir = x.func.parsed
                    out |= {a.id for p, a in zip(fir.params, x.args, strict=True)
                            if p in fir.stored and isinstance(a, Name)}
    return out

