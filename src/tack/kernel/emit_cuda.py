"""The lowered plan -> CUDA C++ source for NVRTC (one module per specialization).

Like emit_c.py, this file only spells what lower.py decided; it reuses the C
emitter's spelling of every node and changes only what CUDA spells differently
(types without <stdint.h>, literals, the launch arguments, the failure record) and
the entry points. The source includes no header at all, so NVRTC needs no include
path; prelude.h is pasted with TK_INLINE as ``__device__ __forceinline__``, and
with its C++ section: NVRTC has no -fwrapv, so integer + - * and unary minus are
spelled as its wrapping overloads (``WRAPPING``).

What the launch side does with a module (the contract; see docs/kernels.md):

- Every entry point takes the runtime's by-value parameter block (kernel.h's
  tack_kernel_params_pack: per parameter in order, an array's data pointer then its
  extents, or a scalar's 8 bytes; ``CudaKernel.params_size`` bytes), then a device
  pointer to the 64-byte ``tk_ctx`` below (NULL allowed when
  ``CudaKernel.needs_ctx`` is false).
- ``tack_kernel_body``: a parallel kernel runs trip k on the threads
  k, k + G, k + 2G, ... of a grid of G threads (a 64-bit grid-stride loop), so any
  grid is correct; every thread computes the trip count itself. When
  ``CudaKernel.host_trips`` is true the trip count depends only on extents and
  scalars and the CPU twin's ``tack_kernel_trips`` gives it on the host (to size
  the grid); otherwise the launch fills the device (the module's one-thread
  ``tack_kernel_trips(params, ctx, int64_t *out)`` can write the count on the
  device, but reading it back would cost a synchronization the idle threads of a
  full grid do not). A serial kernel is launched as one thread
  (``<<<1, 1>>>``) and runs in Python's order.
- A kernel with reductions needs ``blockDim.x * partial_size`` bytes of dynamic
  shared memory and ``ctx->partials``, a device buffer of ``gridDim.x *
  partial_size`` bytes: each block combines its threads' partials in a fixed tree
  order and stores them in slot blockIdx.x; then ``tack_kernel_finish(params, ctx,
  nblocks)`` on one thread folds the slots in block order and stores the returned
  value in ``ctx->result_i`` / ``result_f``. Results depend only on the launch
  shape (grid and block size), never on timing; a float min or max does not
  depend on it either (its partial carries its value's trip: ``_partial_fields``).
- Debug mode: the first failing thread claims ``ctx->claimed`` with atomicCAS,
  fills why (kernel.h's tack_kernel_failure), line, axis, index, extent and name (an
  index into ``CudaKernel.names``), then sets ``failed``; every thread stops at
  its next check. After the launch completes the host reads the record and raises
  exactly what the CPU launch raises.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass

from tack._tack import _KERNEL_ABI
from tack.kernel import lir
from tack.kernel.emit_c import KEY_ARRAY, CEmitter, emit_c, header
from tack.kernel.ir import BOOL, F32, F64, INT, DtypeFacts, ScalarType

CTYPE = {BOOL: "bool", INT: "int64_t", F32: "float", F64: "double"}
CTX_SIZE = 64
# prelude.h helpers that call the math library (fmod)
LIBM_HELPERS = {"fmod", "fmodf", "ffloordiv", "ffloordivf"}

ABI = f"""typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_C(c) c##LL
#define INT64_MAX 9223372036854775807LL
#define INT64_MIN (-INT64_MAX - 1)
#define UINT64_MAX 18446744073709551615ULL
#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)
#define NAN __longlong_as_double(0x7ff8000000000000LL)
#define TK_INLINE __device__ __forceinline__
typedef bool tk_bool;
typedef int tk_name;
/* The launch's record in device memory: the first failure and the result. */
struct tk_ctx {{
    int failed, claimed, why, line, axis, name;
    int64_t index, extent;
    char *partials;
    int64_t result_i;
    double result_f;
    __device__ void fail(tk_ctx *c, int w, int ln, int ax, int64_t i, int64_t n,
                         tk_name nm) {{
        if (atomicCAS(&c->claimed, 0, 1) == 0) {{
            c->why = w; c->line = ln; c->axis = ax; c->index = i; c->extent = n;
            c->name = nm;
            __threadfence();
            atomicExch(&c->failed, 1);
        }}
    }}
}};
static_assert(sizeof(tk_ctx) == {CTX_SIZE}, "tk_ctx layout");
#define TK_FAILED (*(volatile int *)&tk_ctx->failed)
#define TK_EXPORT extern "C" __device__
TK_EXPORT const int tack_kernel_abi = {_KERNEL_ABI};
"""


@dataclass
class CudaKernel:
    """One specialization's CUDA source and what its launch needs to know."""

    source: str
    names: list[str]  # tk_name n in a failure record is names[n]
    params_size: int  # bytes of the parameter block (tack_kernel_params_size)
    parallel: bool
    host_trips: bool  # the trip count needs no array element (see the module doc)
    partial_size: int  # bytes of one block's reduction partials; 0: none
    result_kind: int
    needs_ctx: bool
    # the module also has tack_kernel_body_restrict (parallel kernels with two or more
    # arrays, one stored to): the same entry compiled on the promise that no stored
    # array overlaps another argument (tack_kernel_args_disjoint), for launches that
    # keep it
    restrict: bool
    # calls CUDA's math library (libdevice, whose own code uses fma): the kernel's
    # arithmetic outside those calls is never contracted
    libm: bool


def _walk(node: object):
    """Every lir node below node (node included)."""
    yield node
    if isinstance(node, list):
        for x in node:
            yield from _walk(x)
    elif is_dataclass(node) and not isinstance(node, (ScalarType, DtypeFacts)):
        for f in fields(node):
            yield from _walk(getattr(node, f.name))


def _partial_fields(reductions: list[lir.Reduction]) -> list[tuple[str, ScalarType]]:
    """The fields of one partial (tk_red): each reduction's value, and for a float
    min or max (Reduction.replaces) the trip its value first came from, as
    <name>_at (INT64_MAX: no trip yet)."""
    out = []
    for r in reductions:
        out.append((r.name, r.ty))
        if r.replaces:
            out.append((r.name + "_at", INT))
    return out


def _partial_size(reductions: list[lir.Reduction]) -> int:
    return lir.partial_nbytes([ty for _, ty in _partial_fields(reductions)])


class CudaEmitter(CEmitter):
    VTYPE = CTYPE
    PARAMS = "tk_p."
    WRAPPING = {"+": "tk_add", "-": "tk_sub", "*": "tk_mul", "u-": "tk_neg"}
    HEAD = "const tk_params tk_p, struct tk_ctx *tk_ctx"
    # a serial kernel keeps its atomics (atomics_cuda.h has no plain helpers)
    PLAIN_SERIAL = False
    FINISH = f'extern "C" __global__ void tack_kernel_finish({HEAD}, int64_t tk_nblocks) {{'

    def __init__(self, plan: lir.Plan) -> None:
        super().__init__(plan)
        # the files a failure's line word names come first: file k (1-based) is
        # names[k - 1], as tack_kernel_files[k - 1] is on the CPU
        self.names: list[str] = list(plan.files)

    # ---- spelling ---------------------------------------------------------------------

    def ex(self, e: lir.Expr) -> str:
        if isinstance(e, lir.Lit) and isinstance(e.value, bool):
            return "true" if e.value else "false"
        if isinstance(e, lir.Str):
            if e.text not in self.names:
                self.names.append(e.text)
            return str(self.names.index(e.text))
        if isinstance(e, lir.Let):  # NVRTC has no statement expressions: a lambda
            return (f"([&]() {{ const {self.VTYPE[e.ty]} {e.name} = {self.ex(e.value)}; "
                    f"return {self.ex(e.body)}; }}())")
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
        array pointers arrive as __restrict__ parameters (tk_thread_r). Returns the
        call an entry point makes, its last argument (tk_out) left open."""
        p = self.plan
        out = "tk_red *tk_out" if p.reductions else "void *tk_out"
        name, ptrs, args = "tk_thread", "", ""
        if restrict:
            name = "tk_thread_r"
            ptrs = "".join(f", {'const ' if a.const else ''}{a.elem.ctype} *__restrict__ "
                           f"{a.name}" for a in p.arrays)
            args = "".join(f", ({'const ' if a.const else ''}{a.elem.ctype} *)"
                           f"{self.ex(a.init)}" for a in p.arrays)
        self.lines.append(f"static __device__ void {name}(const tk_params &tk_p, "
                          f"struct tk_ctx *tk_ctx{ptrs}, {out}) {{")
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
        self.emit("const uint64_t tk_stride = (uint64_t)gridDim.x * blockDim.x;", 1)
        self.emit("for (uint64_t tk_g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; "
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
        for field, _ in _partial_fields(p.reductions):
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
        p = self.plan
        call = self.thread(restrict)
        self.lines.append(f'extern "C" __global__ void {entry}({self.HEAD}) {{')
        if not p.reductions:
            self.emit(f"{call}0);", 1)
            self.lines.append("}")
            return
        # Each thread's partial into shared memory, then a tree in a fixed order:
        # at width w, thread t (a multiple of 2w) takes in t + w, left before right.
        self.emit("extern __shared__ double tk_shm[];", 1)
        self.emit("tk_red *const tk_sh = (tk_red *)tk_shm;", 1)
        self.emit("const unsigned tk_t = threadIdx.x;", 1)
        self.emit("tk_red tk_mine;", 1)
        self.identity("tk_mine", 1)
        self.emit(f"{call}&tk_mine);", 1)
        self.emit("tk_sh[tk_t] = tk_mine;", 1)
        self.emit("__syncthreads();", 1)
        self.emit("for (unsigned tk_w = 1; tk_w < blockDim.x; tk_w *= 2) {", 1)
        self.emit("if (tk_t % (2 * tk_w) == 0 && tk_t + tk_w < blockDim.x) {", 2)
        self.combine("tk_sh[tk_t].", "tk_sh[tk_t + tk_w].", 3)
        self.emit("}", 2)
        self.emit("__syncthreads();", 2)
        self.emit("}", 1)
        self.emit("if (tk_t == 0) ((tk_red *)tk_ctx->partials)[blockIdx.x] = tk_sh[0];", 1)
        self.lines.append("}")

    def trips(self) -> None:
        """tack_kernel_trips: the trip count, on one thread, into *tk_trips_out
        (0 when the setup failed in debug mode)."""
        p = self.plan
        self.lines.append('extern "C" __global__ void tack_kernel_trips('
                          f"{self.HEAD}, int64_t *tk_trips_out) {{")
        self.emit("*tk_trips_out = 0;", 1)
        self.prologue(1)
        self.block(p.setup, 1)
        assert p.trips is not None
        self.emit(f"*tk_trips_out = {self.ex(p.trips)};", 1)
        self.lines.append("}")

    def host_trips(self) -> bool:
        """Whether the trip count needs only extents and scalars: the setup and
        the count read no array element and update nothing."""
        data = {a.name for a in self.plan.arrays}
        for n in _walk([self.plan.setup, self.plan.trips]):
            if isinstance(n, lir.Index) and isinstance(n.base, lir.Ref) \
                    and n.base.name in data:
                return False
            if isinstance(n, lir.Helper) and n.name.startswith("atomic_"):
                return False
        return True

    def generate(self) -> str:  # type: ignore[override]
        p = self.plan
        body: list[str] = []
        self.lines = body
        self.functions()
        if p.parallel:
            self.parallel_body("tack_kernel_body", False)
            if p.restrict:
                self.parallel_body("tack_kernel_body_restrict", True)
            self.trips()
            if p.reductions or p.result is not None:
                self.finish("tk_nblocks")
        else:
            self.lines.append(f'extern "C" __global__ void tack_kernel_body({self.HEAD}) {{')
            self.emit("if (blockIdx.x != 0 || threadIdx.x != 0) return;", 1)
            self.prologue(1)
            self.body()
            self.lines.append("}")
        out = ["/* A tack kernel for CUDA; generated. */", ABI]
        if p.uses_half:
            out.append("#define TK_HALF 1")
        out.append(header("prelude.h", p.uses_half, cxx=True))
        if p.uses_atomics:
            out.append(header("atomics_cuda.h"))
        self.lines = out
        self.params_block()
        if self.plan.param_key:
            out.append(f"static_assert(sizeof(tk_params) == {self.params_size()}, "
                       '"the runtime\'s parameter block");')
        if p.result_kind:
            out.append(f"TK_EXPORT const int tack_kernel_result_kind = {p.result_kind};")
        if p.reductions:
            fields_ = " ".join(f"{self.VTYPE[ty]} {name};"
                               for name, ty in _partial_fields(p.reductions))
            out.append(f"typedef struct {{ {fields_} }} tk_red;")
            size = _partial_size(p.reductions)
            out.append(f'static_assert(sizeof(tk_red) == {size}, "partial size");')
            out.append(f"TK_EXPORT const int64_t tack_kernel_partial_size = {size};")
        return "\n".join(out + body) + "\n"


def emit_cuda(plan: lir.Plan) -> CudaKernel:
    """The CUDA source of one lowered specialization, with its launch facts."""
    em = CudaEmitter(plan)
    source = em.generate()
    return CudaKernel(
        source=source, names=list(em.names), params_size=em.params_size(),
        parallel=plan.parallel, host_trips=plan.parallel and em.host_trips(),
        partial_size=_partial_size(plan.reductions), result_kind=plan.result_kind,
        needs_ctx=plan.debug or bool(plan.reductions) or plan.result is not None,
        restrict=plan.parallel and plan.restrict,
        libm=any(isinstance(n, lir.Math)
                 or isinstance(n, lir.Helper) and n.name in LIBM_HELPERS
                 for n in _walk([plan.setup, plan.iteration, plan.serial, plan.functions])))


def emit_cuda_bundle(plan: lir.Plan) -> str:
    """What the CUDA backend's kernel build takes (cuda_kernel.c): a header line with
    the launch facts, a line with the failure record's names (each name's UTF-8 in
    hex, since identifiers may be non-ASCII; name n of a record is the n-th), the
    CUDA source, a marker line, then the C source of the same plan (the CPU build
    that sizes grids on the host and is the stand-in's twin)."""
    k = emit_cuda(plan)
    header = (f"// tack-cuda-bundle parallel={int(k.parallel)} "
              f"host_trips={int(k.host_trips)} needs_ctx={int(k.needs_ctx)} "
              f"restrict={int(k.restrict)} partial_size={k.partial_size} "
              f"result_kind={k.result_kind}\n"
              "// tack-cuda-names"
              + "".join(f" {n.encode().hex()}" for n in k.names) + "\n")
    return header + k.source + "\n// tack-cuda-bundle-cpu\n" + emit_c(plan)
