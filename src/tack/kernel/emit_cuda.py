"""The lowered plan -> CUDA C++ source for NVRTC (one module per specialization).

Like emit_c.py, this file only spells what lower.py decided (the plan for
lower.CUDA). The grid algorithm (grid-stride loop, block tree, partial slots, the
entry points' bodies) is emit_grid.GridEmitter's, shared with every GPU target;
this file names CUDA's built-ins (``GridNames``), spells the entry points' heads,
the ABI head (types without <stdint.h>, the launch record ``tk_ctx`` and its
``TK_FAIL``) and a Let as a lambda. The source includes no header at all, so NVRTC
needs no include path; prelude.h is pasted with TK_INLINE as ``__device__
__forceinline__``, and with its C++ section: NVRTC has no -fwrapv, so integer + - *
and unary minus are spelled as its wrapping overloads (GridEmitter.WRAPPING).

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
  depend on it either (its partial carries its value's trip: lir.partial_fields).
- Debug mode: the first failing thread claims ``ctx->claimed`` with atomicCAS,
  fills why (kernel.h's tack_kernel_failure), line, axis, index, extent and name (an
  index into ``CudaKernel.names``), then sets ``failed``; every thread stops at
  its next check. After the launch completes the host reads the record and raises
  exactly what the CPU launch raises.
"""

from __future__ import annotations

from dataclasses import dataclass

from tack._tack import _KERNEL_ABI
from tack.kernel import lir
from tack.kernel.emit_c import FAIL_CODES, emit_c
from tack.kernel.emit_grid import GridEmitter, GridNames
from tack.kernel.ir import BOOL, F32, F64, INT
from tack.kernel.lower import CUDA, for_target
from tack.kernel.request import BuildRequest, request_of

CTYPE = {BOOL: "bool", INT: "int64_t", F32: "float", F64: "double"}
CTX_SIZE = 64

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
#define TK_FAIL(c, why, line, axis, index, extent, name) \\
    (c)->fail(c, why, line, axis, index, extent, name)
#define TK_OVERLOADS 1
#define TK_EXPORT extern "C" __device__
{FAIL_CODES}TK_EXPORT const int tack_kernel_abi = {_KERNEL_ABI};
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


class CudaEmitter(GridEmitter):
    VTYPE = CTYPE
    NAMES = GridNames(block="blockIdx.x", thread="threadIdx.x", block_size="blockDim.x",
                      grid_size="gridDim.x", barrier="__syncthreads()")
    KERNEL = 'extern "C" __global__ void'
    DEVICE = "__device__ "
    PARAMS_IN = "const tk_params &tk_p"
    RESTRICT = "__restrict__"
    SHARED = "extern __shared__ double tk_shm[];"
    ATOMICS = "atomics_cuda.h"
    COMMENT = "/* A tack kernel for CUDA; generated. */"

    def abi(self) -> str:
        return ABI

    def ex(self, e: lir.Expr) -> str:
        if isinstance(e, lir.Let):  # NVRTC has no statement expressions: a lambda
            return (f"([&]() {{ const {self.VTYPE[e.ty]} {e.name} = {self.ex(e.value)}; "
                    f"return {self.ex(e.body)}; }}())")
        return super().ex(e)


def emit_cuda(plan: lir.Plan) -> CudaKernel:
    """The CUDA source of one specialization lowered for lower.CUDA, with its launch
    facts."""
    em = CudaEmitter(plan)
    source = em.generate()
    return CudaKernel(
        source=source, names=list(em.names), params_size=em.params_size(),
        parallel=plan.parallel, host_trips=plan.host_trips(),
        partial_size=plan.partial_size(), result_kind=plan.result_kind,
        needs_ctx=plan.needs_ctx(), restrict=plan.parallel and plan.restrict,
        libm=plan.uses_libm())


def emit_cuda_request(plan: lir.Plan) -> BuildRequest:
    """What the CUDA backend's kernel build takes (csrc/backends/gpu/), from the plan
    of one specialization lowered for the CPU: the CUDA source and its launch facts,
    with the C source of the same plan as the twin."""
    target = for_target(plan, CUDA)
    k = emit_cuda(target)  # looked up at call time: the tests replace it to break modules
    return request_of(target, k.names, k.source, emit_c(plan))
