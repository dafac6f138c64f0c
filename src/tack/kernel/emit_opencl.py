"""The lowered plan -> OpenCL C 3.0 source (for SPIR-V and Level Zero; no backend
builds it yet).

The grid algorithm is emit_grid.py's, as for CUDA; this file spells OpenCL C:

- address spaces: array data, the launch record and the partials are ``__global``
  (``pointer``), the block's partials ``__local``; nothing relies on the generic
  address space (optional in OpenCL C 3.0, and off for Level Zero's SPIR-V), so a
  ``tack.local_array`` cannot be passed to a func or updated atomically (a
  KernelError names it);
- the parameter block is a by-value struct whose array fields are 64-bit addresses
  (a kernel's struct argument may hold no pointer), turned into ``__global``
  pointers where the arrays are declared;
- no expression blocks (lower.OPENCL): a Let arrives as a Bind, ``(t = value,
  body)``, its temporary declared before the statement;
- math functions are overloaded (``sqrt`` at float32 too), and so are prelude.h's
  helpers (``TK_INLINE`` is ``overloadable``), which gives its wrapping integer
  operators (``WRAPPING``);
- a reduction's entry point takes the block's shared memory as its last argument,
  ``__local double *tk_shm`` (``partial_size`` times the block size bytes, set as a
  local-memory argument by the launch);
- ``TK_FAIL`` claims the record with ``atomic_cmpxchg``, fills it, fences and then
  sets ``failed``, as CUDA's does; program-scope facts are ``__constant``.

The entry points and their arguments are otherwise CUDA's (emit_cuda.py's opening
comment).
"""

from __future__ import annotations

import math

from tack._tack import _KERNEL_ABI, KernelError
from tack.kernel import lir
from tack.kernel.emit_c import FAIL_CODES
from tack.kernel.emit_grid import GridEmitter, GridNames
from tack.kernel.ir import BOOL, F32, F64, INT

CTYPE = {BOOL: "bool", INT: "int64_t", F32: "float", F64: "double"}

ABI = f"""#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
typedef char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef uchar uint8_t;
typedef ushort uint16_t;
typedef uint uint32_t;
typedef ulong uint64_t;
#define INT64_C(c) c##L
#define INT64_MAX 9223372036854775807L
#define INT64_MIN (-INT64_MAX - 1)
#define UINT64_MAX 18446744073709551615UL
#define fabsf fabs
#define floorf floor
#define fmodf fmod
#define copysignf copysign
#define TK_INLINE static inline __attribute__((overloadable, always_inline))
#define TK_OVERLOADS 1
typedef bool tk_bool;
typedef int tk_name;
/* The launch's record in device memory: the first failure and the result. */
struct tk_ctx {{
    int failed, claimed, why, line, axis, name;
    int64_t index, extent;
    __global char *partials;
    int64_t result_i;
    double result_f;
}};
typedef __global struct tk_ctx tk_ctx;
_Static_assert(sizeof(struct tk_ctx) == 64, "tk_ctx layout");
TK_INLINE void tk_fail(tk_ctx *c, int w, int ln, int ax, int64_t i, int64_t n, tk_name nm) {{
    if (atomic_cmpxchg((volatile __global int *)&c->claimed, 0, 1) == 0) {{
        c->why = w; c->line = ln; c->axis = ax; c->index = i; c->extent = n;
        c->name = nm;
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        atomic_xchg((volatile __global int *)&c->failed, 1);
    }}
}}
#define TK_FAIL(c, why, line, axis, index, extent, name) \\
    tk_fail(c, why, line, axis, index, extent, name)
#define TK_FAILED (*(volatile __global int *)&tk_ctx->failed)
#define TK_EXPORT __constant
{FAIL_CODES}TK_EXPORT const int tack_kernel_abi = {_KERNEL_ABI};
"""


class OpenCLEmitter(GridEmitter):
    VTYPE = CTYPE
    NAMES = GridNames(block="get_group_id(0)", thread="get_local_id(0)",
                      block_size="get_local_size(0)", grid_size="get_num_groups(0)",
                      barrier="barrier(CLK_LOCAL_MEM_FENCE)")
    KERNEL = "__kernel void"
    ADDRESS = "uint64_t "
    SHARED_PARAM = ", __local double *tk_shm"
    LOCAL = "__local "
    STATIC_ASSERT = "_Static_assert"
    ATOMICS = "atomics_opencl.h"
    COMMENT = "/* A tack kernel for OpenCL C; generated. */"

    def abi(self) -> str:
        return ABI

    def pointer(self, t: str, const: bool = False, restrict: bool = False) -> str:
        return "__global " + super().pointer(t, const, restrict)

    def math_name(self, e: lir.Math) -> str:
        return e.name  # overloaded for float and double

    def ex(self, e: lir.Expr) -> str:
        if isinstance(e, lir.Lit) and isinstance(e.value, float) and math.isnan(e.value):
            # OpenCL C's NAN is a float, as C's: a double here, with its sign
            nan = "((double)NAN)"
            return nan if math.copysign(1.0, e.value) > 0 else f"(-{nan})"
        if isinstance(e, lir.Bind):
            return f"({e.name} = {self.ex(e.value)}, {self.ex(e.body)})"
        return super().ex(e)

    def generate(self) -> str:
        _check_address_spaces(self.plan)
        return super().generate()


def _check_address_spaces(plan: lir.Plan) -> None:
    """A KernelError where a tack.local_array (private memory) would reach a pointer
    of global memory: a func's array parameter, an atomic update."""
    bodies: list[object] = [[plan.setup, plan.iteration, plan.serial]]
    bodies += [f.body for f in plan.functions]
    for body in bodies:
        local = {n.name for n in lir.walk(body) if isinstance(n, lir.LocalBuffer)}
        for n in lir.walk(body):
            args = n.args if isinstance(n, (lir.Call, lir.Helper)) else []
            for a in args:
                if isinstance(a, lir.Addr) and isinstance(a.of.base, lir.Ref):
                    a = a.of.base
                if isinstance(a, lir.Ref) and a.name in local:
                    raise KernelError(
                        f"kernel '{plan.name}': the OpenCL C target has no generic "
                        "address space, so it cannot pass a tack.local_array to a "
                        "func or update one atomically; use an array argument "
                        "there instead")


def emit_opencl(plan: lir.Plan) -> str:
    """The OpenCL C source of one specialization lowered for lower.OPENCL."""
    return OpenCLEmitter(plan).generate()
