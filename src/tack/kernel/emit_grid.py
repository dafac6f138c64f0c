"""The grid algorithm of a GPU kernel, for every GPU target's emitter.

A GPU target (emit_cuda.py, emit_opencl.py) is a subclass that names its built-ins
(``GridNames``: block and thread numbers, sizes, the block barrier), spells its
entry points' heads, its ABI head (value types, the launch record ``tk_ctx``,
``TK_FAIL``, ``TK_FAILED``, ``TK_EXPORT``) and whatever the C emitter's hooks
(``pointer``, ``math_name``, ``ex``) spell differently. What this file decides is
the same on every GPU:

- ``tack_kernel_body``: a parallel kernel runs trip k on the threads k, k + G,
  k + 2G, ... of a grid of G threads (a 64-bit grid-stride loop); a serial kernel
  runs on thread 0 of block 0 only.
- reductions: each thread's partial goes to the block's shared memory, the block
  combines them in a fixed tree order and thread 0 stores the block's partial in
  slot ``block`` of ``tk_ctx->partials``; ``tack_kernel_finish`` folds the slots in
  block order and stores the returned value. A float min or max partial carries
  the trip its value came from, so ties go to the earlier trip (Python's first of
  equal values) in any launch shape.
- ``tack_kernel_trips``: the trip count on one thread.

docs/kernels.md ("The kernel compiler", the CUDA sections) states the contract with
the launch side; emit_cuda.py's opening comment spells it for CUDA.
"""

from __future__ import annotations

from dataclasses import dataclass

from tack.kernel import lir
from tack.kernel.emit_c import KEY_ARRAY, CEmitter, header


@dataclass(frozen=True)
class GridNames:
    """How a GPU language spells the built-ins the grid algorithm uses."""

    block: str  # this thread's block (work-group) number
    thread: str  # this thread's number within its block
    block_size: str  # threads per block
    grid_size: str  # blocks in the grid
    barrier: str  # a statement: every thread of the block waits, and sees shared memory


class GridEmitter(CEmitter):
    NAMES: GridNames
    # what an entry point is declared as (before its name), and a device function
    KERNEL = ""
    DEVICE = ""
    # how tk_thread takes the parameter block (by value or by reference)
    PARAMS_IN = "const tk_params tk_p"
    PARAMS = "tk_p."
    # the block's shared memory for the partials: a declaration in the entry point
    # (empty: the entry takes it as a parameter, SHARED_PARAM), and its pointers
    SHARED = ""
    SHARED_PARAM = ""
    LOCAL = ""  # the qualifier of a pointer into shared memory
    STATIC_ASSERT = "static_assert"
    # no GPU compiler has -fwrapv: integer + - * wrap through prelude.h's overloads
    WRAPPING = {"+": "tk_add", "-": "tk_sub", "*": "tk_mul", "u-": "tk_neg"}
    ATOMICS = ""  # the header of this target's atomic helpers
    STREAMS = False  # streaming stores are the CPU's (stream.py)
    COMMENT = ""  # the source's first line

    def __init__(self, plan: lir.Plan) -> None:
        super().__init__(plan)
        # the files a failure's line word names come first: file k (1-based) is
        # names[k - 1], as tack_kernel_files[k - 1] is on the CPU
        self.names: list[str] = list(plan.files)
        self.FINISH = f"{self.KERNEL} tack_kernel_finish({self.head}, int64_t tk_nblocks) {{"

    @property
    def head(self) -> str:
        """An entry point's parameters: the parameter block by value, the record."""
        return f"const tk_params tk_p, {self.pointer('struct tk_ctx')}tk_ctx"

    def abi(self) -> str:
        """The ABI head: everything the prelude and the code need defined."""
        raise NotImplementedError

    # ---- spelling ---------------------------------------------------------------------

    def ex(self, e: lir.Expr) -> str:
        if isinstance(e, lir.Lit) and isinstance(e.value, bool):
            return "true" if e.value else "false"
        if isinstance(e, lir.Str):  # a name of the failure record: its number
            if e.text not in self.names:
                self.names.append(e.text)
            return str(self.names.index(e.text))
        return super().ex(e)

    # ---- the entry points -------------------------------------------------------------

    def prologue(self, depth: int) -> None:
        """The array pointers, as every entry point starts."""
        self.emit("(void)tk_ctx;", depth)
        self.arrays(depth)

    def unpack(self, depth: int = 1) -> None:
        """Nothing: the block arrives by value as tk_p."""

    def params_size(self) -> int:
        """kernel.h's tack_kernel_params_size for this kernel's key words."""
        return 8 * sum(1 + (w & 0xFF if w & KEY_ARRAY else 0) for w in self.plan.param_key)

    def thread(self, restrict: bool) -> str:
        """tk_thread: one thread's share of the parallel loop (trips index,
        index + stride, ...), its reductions' partials left in *tk_out. A function
        of its own, so a debug-mode stop (return) leaves only it. restrict: the
        array pointers arrive as restrict parameters (tk_thread_r). Returns the
        call an entry point makes, its last argument (tk_out) left open."""
        p, n = self.plan, self.NAMES
        out = "tk_red *tk_out" if p.reductions else "void *tk_out"
        name, ptrs, args = "tk_thread", "", ""
        if restrict:
            name = "tk_thread_r"
            ptrs = "".join(f", {self.pointer(a.elem.ctype, a.const, True)}{a.name}"
                           for a in p.arrays)
            args = "".join(f", ({self.pointer(a.elem.ctype, a.const)}){self.ex(a.init)}"
                           for a in p.arrays)
        self.lines.append(f"static {self.DEVICE}void {name}({self.PARAMS_IN}, "
                          f"{self.pointer('struct tk_ctx')}tk_ctx{ptrs}, {out}) {{")
        self.emit("(void)tk_out;", 1)
        if restrict:
            self.emit("(void)tk_ctx;", 1)
        else:
            self.prologue(1)
        self.block(p.setup, 1)
        assert p.trips is not None
        self.emit(f"const int64_t tk_n = {self.ex(p.trips)};", 1)
        tracked = [r for r in p.reductions if r.replaces]
        for r in p.reductions:
            self.emit(f"{r.name} = {self.ex(r.identity)};", 1)
        for r in tracked:
            self.emit(f"int64_t {r.name}_at = INT64_MAX;", 1)
        # The grid-stride counter is unsigned and never steps past the count, so
        # no trip count (up to 2**64 - 1) can overflow it.
        self.emit("const uint64_t tk_gn = (uint64_t)tk_n;", 1)
        self.emit(f"const uint64_t tk_stride = (uint64_t){n.grid_size} * {n.block_size};", 1)
        self.emit(f"for (uint64_t tk_g = (uint64_t){n.block} * {n.block_size} + {n.thread}; "
                  "tk_g < tk_gn; tk_g = tk_gn - tk_g > tk_stride ? tk_g + tk_stride "
                  ": tk_gn) {", 1)
        self.emit(f"const int64_t {p.index} = (int64_t)tk_g;", 2)
        if tracked:
            # A trip that replaced a min or max value is where it first came from.
            # The trip runs in do/while (0), so a continue of the parallel loop
            # ends it there and the check still runs.
            for r in tracked:
                self.emit(f"const {self.VTYPE[r.ty]} {r.name}_was = {r.name};", 2)
            self.emit("do {", 2)
            self.block(p.iteration, 3)
            self.emit("} while (0);", 2)
            for r in tracked:
                self.emit(f"if ({r.name} {r.replaces} {r.name}_was) "
                          f"{r.name}_at = {p.index};", 2)
        else:
            self.block(p.iteration, 2)
        self.emit("}", 1)
        for field, _ in lir.partial_fields(p.reductions):
            self.emit(f"tk_out->{field} = {field};", 1)
        self.lines.append("}")
        return f"{name}(tk_p, tk_ctx{args}, "

    def combine(self, into: str, other: str, depth: int) -> None:
        """into = combine(into, other), reduction by reduction, where into and
        other prefix the fields' names ("tk_sh[tk_t].", "tk_slot->"; "" for the
        running values). into holds the earlier trips, except for a float min or
        max, whose partials carry their trip: the value that replaces wins, and
        of equal values the one from the earlier trip (Python's first of equals;
        a NaN into stays, as no value replaces it)."""
        for r in self.plan.reductions:
            a, b = into + r.name, other + r.name
            if r.replaces:
                self.emit(f"if ({b} {r.replaces} {a} || ({b} == {a} && {b}_at < {a}_at)) "
                          f"{{ {a} = {b}; {a}_at = {b}_at; }}", depth)
                continue
            t = self.VTYPE[r.ty]
            acc = "" if not into else f"{t} {r.name} = {a}; "
            self.emit(f"{{ {acc}const {t} {lir.PART} = {b}; {a} = {self.ex(r.combine)}; }}",
                      depth)

    def identity(self, into: str, depth: int) -> None:
        for r in self.plan.reductions:
            self.emit(f"{into}.{r.name} = {self.ex(r.identity)};", depth)
            if r.replaces:
                self.emit(f"{into}.{r.name}_at = INT64_MAX;", depth)

    def fold_partials(self, count: str) -> None:
        """The blocks' partials in block order, which is not trip order: a float
        min or max starts with its value from before the loop as trip -1."""
        for r in self.plan.reductions:
            if r.replaces:
                self.emit(f"int64_t {r.name}_at = -1;", 1)
        super().fold_partials(count)

    def fold_slot(self, depth: int) -> None:
        self.combine("", "tk_slot->", depth)

    def parallel_body(self, entry: str, restrict: bool) -> None:
        p, n = self.plan, self.NAMES
        call = self.thread(restrict)
        if not p.reductions:
            self.lines.append(f"{self.KERNEL} {entry}({self.head}) {{")
            self.emit(f"{call}0);", 1)
            self.lines.append("}")
            return
        # Each thread's partial into shared memory, then a tree in a fixed order:
        # at width w, thread t (a multiple of 2w) takes in t + w, left before right.
        self.lines.append(f"{self.KERNEL} {entry}({self.head}{self.SHARED_PARAM}) {{")
        if self.SHARED:
            self.emit(self.SHARED, 1)
        self.emit(f"{self.LOCAL}tk_red *const tk_sh = ({self.LOCAL}tk_red *)tk_shm;", 1)
        self.emit(f"const unsigned tk_t = {n.thread};", 1)
        self.emit("tk_red tk_mine;", 1)
        self.identity("tk_mine", 1)
        self.emit(f"{call}&tk_mine);", 1)
        self.emit("tk_sh[tk_t] = tk_mine;", 1)
        self.emit(f"{n.barrier};", 1)
        self.emit(f"for (unsigned tk_w = 1; tk_w < {n.block_size}; tk_w *= 2) {{", 1)
        self.emit(f"if (tk_t % (2 * tk_w) == 0 && tk_t + tk_w < {n.block_size}) {{", 2)
        self.combine("tk_sh[tk_t].", "tk_sh[tk_t + tk_w].", 3)
        self.emit("}", 2)
        self.emit(f"{n.barrier};", 2)
        self.emit("}", 1)
        self.emit(f"if (tk_t == 0) (({self.pointer('tk_red')})tk_ctx->partials)"
                  f"[{n.block}] = tk_sh[0];", 1)
        self.lines.append("}")

    def trips(self) -> None:
        """tack_kernel_trips: the trip count, on one thread, into *tk_trips_out
        (0 when the setup failed in debug mode)."""
        p = self.plan
        self.lines.append(f"{self.KERNEL} tack_kernel_trips({self.head}, "
                          f"{self.pointer('int64_t')}tk_trips_out) {{")
        self.emit("*tk_trips_out = 0;", 1)
        self.prologue(1)
        self.block(p.setup, 1)
        assert p.trips is not None
        self.emit(f"*tk_trips_out = {self.ex(p.trips)};", 1)
        self.lines.append("}")

    def entries(self) -> None:
        """The functions and the entry points, into self.lines."""
        p, n = self.plan, self.NAMES
        self.functions()
        if p.parallel:
            self.parallel_body("tack_kernel_body", False)
            if p.restrict:
                self.parallel_body("tack_kernel_body_restrict", True)
            self.trips()
            if p.reductions or p.result is not None:
                self.finish("tk_nblocks")
        else:
            self.lines.append(f"{self.KERNEL} tack_kernel_body({self.head}) {{")
            self.emit(f"if ({n.block} != 0 || {n.thread} != 0) return;", 1)
            self.prologue(1)
            self.body()
            self.lines.append("}")

    def generate(self) -> str:
        p = self.plan
        body: list[str] = []
        self.lines = body
        self.entries()
        out = [self.COMMENT, self.abi()]
        if p.uses_half:
            out.append("#define TK_HALF 1")
        out.append(header("prelude.h", p.uses_half, overloads=True))
        if p.uses_atomics:
            out.append(header(self.ATOMICS))
        self.lines = out
        self.params_block()
        if self.plan.param_key:
            out.append(f"{self.STATIC_ASSERT}(sizeof(tk_params) == {self.params_size()}, "
                       '"the runtime\'s parameter block");')
        if p.result_kind:
            out.append(f"TK_EXPORT const int tack_kernel_result_kind = {p.result_kind};")
        if p.reductions:
            fields_ = " ".join(f"{self.VTYPE[ty]} {name};"
                               for name, ty in lir.partial_fields(p.reductions))
            out.append(f"typedef struct {{ {fields_} }} tk_red;")
            size = p.partial_size()
            out.append(f'{self.STATIC_ASSERT}(sizeof(tk_red) == {size}, "partial size");')
            out.append(f"TK_EXPORT const int64_t tack_kernel_partial_size = {size};")
        return "\n".join(out + body) + "\n"
