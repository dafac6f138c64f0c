"""The lowered kernel: what lower.py makes and every emitter spells.

Lowering has already decided everything a target would otherwise decide again:
every conversion is an explicit Cast, Python's // and % and every other operation
without a one-operator spelling is a call of a helper from prelude.h, bounds checks
are guards, loops are counted, and names are the mangled ones. An emitter maps
these nodes to its language (C, CUDA, ...) one node at a time: type names, literal
syntax, math function names, the entry points and how arguments arrive.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields, is_dataclass

from tack.kernel.ir import BOOL, F32, F64, INT, DtypeFacts, ScalarType

# ---- expressions ------------------------------------------------------------------


class Expr:
    pass


@dataclass
class Lit(Expr):
    """A literal of a value type (a float may be inf or nan)."""

    value: bool | int | float
    ty: ScalarType


@dataclass
class Ref(Expr):
    """A name of the generated code: a mangled local or parameter, or tk_*."""

    name: str


@dataclass
class Arg(Expr):
    """Field of launch argument k: "data", "shape" (a pointer to the extents), "i"
    (int and bool scalars) or "f" (float scalars)."""

    k: int
    field: str


@dataclass
class Str(Expr):
    """A string constant (names in messages); any text, escaped by the emitter."""

    text: str


@dataclass
class Cast(Expr):
    """A conversion C's cast gets right: to a value type, or to an element type
    (which wraps integers and rounds floats). Lowering never casts a float to an
    integer this way (that goes through a saturating helper)."""

    to: ScalarType | DtypeFacts
    x: Expr


@dataclass
class Bin(Expr):
    """a op b with C's meaning of op: + - * / & | ^ < <= > >= == != && ||."""

    op: str
    a: Expr
    b: Expr


@dataclass
class Un(Expr):
    """op x: - ~ !"""

    op: str
    x: Expr


@dataclass
class Cond(Expr):
    test: Expr
    a: Expr
    b: Expr


@dataclass
class Helper(Expr):
    """A call of prelude.h's tk_<name>."""

    name: str
    args: list[Expr]


@dataclass
class Math(Expr):
    """A C99 <math.h> function at float type ty (sqrt at float32 is sqrtf in C);
    generic: a type-generic classification macro (isnan), spelled as is."""

    name: str
    ty: ScalarType
    args: list[Expr]
    generic: bool = False


@dataclass
class Call(Expr):
    """A call of a generated function (a @tack.func instance)."""

    name: str
    args: list[Expr]


@dataclass
class Index(Expr):
    """base[index]: an element of an array or of an argument's extents."""

    base: Expr
    index: Expr


@dataclass
class Addr(Expr):
    """The address of an element (what an atomic helper updates)."""

    of: Index


@dataclass
class Let(Expr):
    """A value computed once and named for body: evaluates value, binds it to
    name (of type ty), then gives body."""

    name: str
    ty: ScalarType
    value: Expr
    body: Expr


@dataclass
class Bind(Expr):
    """A Let for a target without expression blocks (lower.Target): a Decl before
    the statement declares name, and this assigns value to it, then gives body."""

    name: str
    value: Expr
    body: Expr


# ---- statements -------------------------------------------------------------------


class Stmt:
    pass


@dataclass
class Line(Stmt):
    """What follows comes from this line of the kernel's Python file."""

    n: int


@dataclass
class Decl(Stmt):
    """A scalar local; init None: zero."""

    ty: ScalarType
    name: str
    init: Expr | None = None
    const: bool = False


@dataclass
class ArrayLocal(Stmt):
    """A local array of n scalars of type ty, each set to init."""

    ty: ScalarType
    name: str
    n: int
    init: Expr


@dataclass
class LocalBuffer(Stmt):
    """A local array of n elements of elem, zeros from its declaration (so a path
    that reads it without running its tack.local_array reads zeros, never stack
    garbage), and filled with zeros again wherever tack.local_array runs."""

    elem: DtypeFacts
    name: str
    n: int


@dataclass
class ArrayDecl(Stmt):
    """An array parameter's data pointer; const: the kernel never stores to it."""

    name: str
    elem: DtypeFacts
    init: Expr
    const: bool = False


@dataclass
class Assign(Stmt):
    name: str
    value: Expr


@dataclass
class Store(Stmt):
    """base[index] = value, only when guard (a bounds check) holds."""

    base: str
    index: Expr
    value: Expr
    guard: Expr | None = None


@dataclass
class Eval(Stmt):
    """An expression run for its effect (an atomic helper's update)."""

    value: Expr


@dataclass
class If(Stmt):
    test: Expr
    body: list[Stmt]
    orelse: list[Stmt] = field(default_factory=list)


@dataclass
class While(Stmt):
    test: Expr
    body: list[Stmt]


@dataclass
class Loop(Stmt):
    """for (int64 var = begin; var < end; var++) body"""

    var: str
    begin: Expr
    end: Expr
    body: list[Stmt]


@dataclass
class Scope(Stmt):
    body: list[Stmt]


@dataclass
class Jump(Stmt):
    kind: str  # "break" or "continue"


@dataclass
class SetResult(Stmt):
    """The kernel's returned value: field "i" (int, bool) or "f" (float). value is
    of the field's type (int64, float64), except with f32: a float32 value, which
    the record holds as the float64 it converts to exactly (a target without
    float64 makes that value's bits with integer operations)."""

    field: str
    value: Expr
    f32: bool = False


@dataclass
class Return(Stmt):
    """Leaves a generated function, with a value or none."""

    value: Expr | None = None


@dataclass
class FailCheck(Stmt):
    """Debug mode: stop this function once any thread has failed."""


@dataclass
class Unused(Stmt):
    """Names that may go unused (no warning)."""

    names: list[str]


# ---- the kernel -------------------------------------------------------------------


@dataclass
class Param:
    """A generated function's parameter: an array (its data pointer ``name`` and
    ``ndim`` extents ``name_n<axis>``) or a scalar of type ``ty``."""

    name: str
    ty: ScalarType | None = None
    elem: DtypeFacts | None = None
    ndim: int = 0
    const: bool = False  # an array the function never stores to


@dataclass
class Function:
    """A @tack.func instance: inlined into every caller. Its first parameter is the
    launch context (debug-mode failures)."""

    name: str
    returns: ScalarType | None
    params: list[Param]
    body: list[Stmt]
    filename: str = ""  # the func's own Python file: its Line statements are in it


@dataclass
class Reduction:
    """A local the parallel loop reduces: each chunk starts it at identity, and
    partials are folded in chunk order as name = combine, where combine reads the
    running value as Ref(name) and the chunk's partial as Ref(PART)."""

    name: str
    ty: ScalarType
    identity: Expr
    combine: Expr
    # Float min and max: the comparison ("<" or ">") by which a later value
    # replaces the running one. Python's answer is the first of equal values (0.0
    # and -0.0 compare equal), so partials combined out of trip order (a GPU
    # grid's) carry the trip of their value and break ties by it.
    replaces: str = ""


PART = "tk_part"
# prelude.h helpers that call the math library (fmod)
LIBM_HELPERS = {"fmod", "fmodf", "ffloordiv", "ffloordivf"}
# Size and alignment of a value type in a struct of C and of CUDA C++ alike.
VALUE_NBYTES = {BOOL: 1, INT: 8, F32: 4, F64: 8}


def partial_nbytes(types: list[ScalarType]) -> int:
    """sizeof the struct of one partial per reduction, fields in this order (the
    tk_red of every emitter): each field aligned to its size, the whole to the
    widest."""
    size, align = 0, 1
    for t in types:
        s = VALUE_NBYTES[t]
        size = (size + s - 1) // s * s + s
        align = max(align, s)
    return (size + align - 1) // align * align if types else 0


def walk(node: object) -> Iterator[object]:
    """Every lir node below node (node included; lists are walked)."""
    yield node
    if isinstance(node, list):
        for x in node:
            yield from walk(x)
    elif is_dataclass(node) and not isinstance(node, (ScalarType, DtypeFacts)):
        for f in fields(node):
            yield from walk(getattr(node, f.name))


def partial_fields(reductions: list[Reduction]) -> list[tuple[str, ScalarType]]:
    """The fields of one partial of a GPU block (tk_red): each reduction's value,
    and for a float min or max (Reduction.replaces) the trip its value first came
    from, as <name>_at (INT64_MAX: no trip yet)."""
    out = []
    for r in reductions:
        out.append((r.name, r.ty))
        if r.replaces:
            out.append((r.name + "_at", INT))
    return out


@dataclass
class Iterations:
    """One spelling of the parallel loop's trip: ``iteration``, or with split
    reductions ``split`` and ``rest`` (Plan.iteration_split, iteration_rest)."""

    iteration: list[Stmt]
    split: list[Stmt]
    rest: list[Stmt]


@dataclass
class Private:
    """An array whose updates in the parallel loop are all atomics of one kind
    with the old value unused: a chunk may update a private copy ``name`` of its
    ``size`` elements, each starting at ``identity``, and then merge each element
    that moved into the array with the atomic helper ``merge``."""

    name: str
    array: str
    size: str
    elem: DtypeFacts
    identity: Expr
    merge: str


@dataclass
class Split:
    """A float sum or product of the parallel loop kept, within a chunk, as
    PARTIALS interleaved partials in the local array ``array`` (each starting at
    identity): whole blocks of trips run ``iteration_split`` with trip
    begin + PARTIALS * b + lane updating partial lane, the rest run
    ``iteration_rest`` (partial 0), then ``fold`` adds the partials to the
    reduction in a fixed order."""

    array: str
    ty: ScalarType
    identity: Expr
    fold: Stmt


@dataclass
class Plan:
    """One specialization, lowered.

    ``arrays`` are the array parameters' data pointers; every part of the kernel
    needs them. Both parts then start with ``setup`` (the rest of the argument
    unpacking and the statements before the parallel loop; they store nothing, so
    every thread may run them). A parallel kernel then has a trip count and one
    ``iteration``, which reads its number from the name ``index`` (0 .. trips-1);
    a serial kernel has ``serial``, run once.

    restrict: a second body whose data pointers are restrict is worth having (two
    or more arrays, one stored to); the runtime calls it when no stored array
    overlaps another argument.
    """

    name: str
    filename: str
    debug: bool
    arrays: list[ArrayDecl]
    setup: list[Stmt]
    parallel: bool
    restrict: bool = False
    trips: Expr | None = None
    index: str = "tk_k"
    iteration: list[Stmt] = field(default_factory=list)
    serial: list[Stmt] = field(default_factory=list)
    uses_half: bool = False
    uses_atomics: bool = False
    functions: list[Function] = field(default_factory=list)  # callees first
    # the key word of each parameter (kernel.h's TACK_KERNEL_KEY_*): the layout of
    # the parameter block
    param_key: list[int] = field(default_factory=list)
    # whether the kernel may store to each parameter: what the dispatcher's
    # read-only and restrict checks rely on, so the build declares it
    param_stored: list[bool] = field(default_factory=list)
    reductions: list[Reduction] = field(default_factory=list)
    split: list[Split] = field(default_factory=list)
    lane: str = "tk_u"
    width: int = 8
    iteration_split: list[Stmt] = field(default_factory=list)
    iteration_rest: list[Stmt] = field(default_factory=list)
    # A kernel with atomics (CPU only; the CUDA emitter reads none of these): the
    # serial kernel's statements, or the parallel loop's trips for a launch on one
    # thread, with plain updates (atomics.h's tk_plain_*); the arrays a chunk may
    # privatize and the trips that update their private copies.
    serial_plain: list[Stmt] = field(default_factory=list)
    plain: Iterations | None = None
    private: list[Private] = field(default_factory=list)
    private_iterations: Iterations | None = None
    # the returned value (serial kernels store it at the end of serial; parallel
    # ones after folding the partials): its kind (kernel.h's TACK_KERNEL_RESULT_*)
    result: SetResult | None = None
    result_kind: int = 0
    # the files of funcs from other modules, which a debug-mode failure's line word
    # names by 1-based index (lower.FILE_SHIFT)
    files: list[str] = field(default_factory=list)

    # ---- facts a launch needs, read off the plan ----------------------------------

    def host_trips(self) -> bool:
        """Whether the parallel loop's trip count needs only extents and scalars:
        the setup and the count read no array element and update nothing (a GPU
        launch can then size its grid on the host, where device memory must not be
        touched). A func called with an array may read it: such a call counts as a
        read."""
        if not self.parallel:
            return False
        data = {a.name for a in self.arrays}
        for n in walk([self.setup, self.trips]):
            if isinstance(n, Index) and isinstance(n.base, Ref) and n.base.name in data:
                return False
            if isinstance(n, Call) and any(isinstance(a, Ref) and a.name in data
                                           for a in n.args):
                return False
            if isinstance(n, Helper) and n.name.startswith("atomic_"):
                return False
        return True

    def needs_ctx(self) -> bool:
        """Whether a launch must pass the launch record: debug-mode failures,
        reductions' partials or a returned value."""
        return self.debug or bool(self.reductions) or self.result is not None

    def uses_libm(self) -> bool:
        """Whether the kernel calls the math library (a Math node, or a helper
        that calls one)."""
        return any(isinstance(n, Math) or isinstance(n, Helper) and n.name in LIBM_HELPERS
                   for n in walk([self.setup, self.iteration, self.serial,
                                  self.functions]))

    def partial_size(self) -> int:
        """Bytes of one GPU block's partials (partial_fields); 0: no reductions."""
        return partial_nbytes([ty for _, ty in partial_fields(self.reductions)])
