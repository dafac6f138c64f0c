"""The kernel IR: what parse.py makes from Python and types.py annotates.

Expressions are pure (no side effects), so a code generator may evaluate one more
than once. Every node carries the line of the kernel's Python source it came from.
After typing, every expression's ``ty`` is set, and each code generator (C today,
CUDA next) walks the same typed tree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


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


@dataclass(frozen=True)
class ArrayType:
    """An array parameter of one specialization: element dtype and ndim."""

    dtype: str  # "float32", "vec3", ...
    ndim: int

    @property
    def components(self) -> int:
        return {"vec2": 2, "vec3": 3, "vec4": 4}.get(self.dtype, 1)

    @property
    def load_type(self) -> ScalarType:
        """The type of a value read from an element (or a vec component)."""
        if self.dtype == "bool":
            return BOOL
        if self.dtype in ("float32", "float16") or self.components > 1:
            return F32
        if self.dtype == "float64":
            return F64
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


# ---- statements ----------------------------------------------------------------


@dataclass
class Stmt:
    line: int


@dataclass
class Assign(Stmt):
    target: Name | Element
    value: Expr


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
    in parallel (see parse.parallel_plan for the rule).
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
