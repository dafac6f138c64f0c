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
  ``__local int64_t *tk_shm`` (``partial_size`` times the block size bytes, set as a
  local-memory argument by the launch);
- nothing outside the kernel's own code is a double: the record's ``result_f`` holds
  the bits of the returned value's double (``as_ulong``, or ``tk_f32_as_f64_bits`` for
  a float32 result), a float32 scalar argument's field holds the bits of the double
  it travels as (``tk_f64_bits_as_f32``), the partials are of the reductions' own
  types and a float32 NaN literal is a float, so a module of a kernel that computes
  in float32 declares no ``Float64`` capability and runs on a device without fp64;
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
KEY_FLOAT32 = 4  # kernel.h's TACK_KERNEL_KEY_FLOAT32

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
#define UINT64_C(c) c##UL
#define fabsf fabs
#define floorf floor
#define fmodf fmod
#define copysignf copysign
#define TK_INLINE static inline __attribute__((overloadable, always_inline))
#define TK_OVERLOADS 1
typedef bool tk_bool;
typedef int tk_name;
/* The launch's record in device memory: the first failure and the result. The
 * returned float is stored as the bits of its double (the runtime reads a double
 * there), so that the record declares no double: a module uses float64 only where
 * the kernel computes in it, and a device without fp64 runs the others. */
struct tk_ctx {{
    int failed, claimed, why, line, axis, name;
    int64_t index, extent;
    __global char *partials;
    int64_t result_i;
    uint64_t result_f;
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
/* The bits of the double a float converts to (exactly), with integer operations
 * only: a float32 result reaches the record without float64. NaN keeps its sign
 * and payload; a subnormal float is a normal double. */
static inline uint64_t tk_f32_as_f64_bits(float f) {{
    const uint32_t u = as_uint(f);
    const uint64_t sign = (uint64_t)(u >> 31) << 63;
    const uint32_t e = (u >> 23) & 0xffu, m = u & 0x7fffffu;
    if (e == 0xffu) return sign | (UINT64_C(0x7ff) << 52) | ((uint64_t)m << 29);
    if (e != 0u) return sign | ((uint64_t)(e + 896u) << 52) | ((uint64_t)m << 29);
    if (m == 0u) return sign;
    const uint32_t top = 31u - clz(m); /* m is m' * 2**top, 1 <= m' < 2 */
    const uint64_t frac = ((uint64_t)m << (52u - top)) & ((UINT64_C(1) << 52) - 1u);
    return sign | ((uint64_t)(top + 874u) << 52) | frac;
}}
/* The float a float32 scalar argument is, from the bits of the double it travels
 * as (exactly, as the runtime packs it), with integer operations only. */
static inline float tk_f64_bits_as_f32(uint64_t b) {{
    const uint32_t sign = (uint32_t)(b >> 63) << 31;
    const uint32_t e = (uint32_t)(b >> 52) & 0x7ffu;
    const uint64_t m = b & ((UINT64_C(1) << 52) - 1u);
    uint32_t u = sign;
    if (e == 0x7ffu) {{
        u |= 0x7f800000u | (uint32_t)(m >> 29) | (m != 0 && (m >> 29) == 0 ? 0x400000u : 0u);
    }}
    else if (e > 896u && e < 1151u) {{
        u |= ((e - 896u) << 23) | (uint32_t)(m >> 29);
    }}
    else if (e >= 1151u) {{
        u |= 0x7f800000u;
    }}
    else if (e != 0u && 926u - e < 64u) {{ /* a subnormal float */
        u |= (uint32_t)(((UINT64_C(1) << 52) | m) >> (926u - e));
    }}
    return as_float(u);
}}
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
    SHARED_PARAM = ", __local int64_t *tk_shm"  # 8-byte aligned, and no double
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

    def scalar_field(self, word: int) -> str:
        # a float32 scalar's double as its bits: no double in the module
        return "uint64_t" if word == KEY_FLOAT32 else super().scalar_field(word)

    def result_value(self, s: lir.SetResult) -> str:
        if s.field != "f":
            return super().result_value(s)
        helper = "tk_f32_as_f64_bits" if s.f32 else "as_ulong"
        return f"{helper}({self.ex(s.value)})"

    def ex(self, e: lir.Expr) -> str:
        if isinstance(e, lir.Lit) and isinstance(e.value, float) and math.isnan(e.value):
            # OpenCL C's NAN is a float, as C's: a double at float64, with its sign
            nan = "NAN" if e.ty == F32 else "((double)NAN)"
            return nan if math.copysign(1.0, e.value) > 0 else f"(-{nan})"
        if isinstance(e, lir.Arg) and e.field == "f" and \
                self.plan.param_key[e.k] == KEY_FLOAT32:
            return f"tk_f64_bits_as_f32({super().ex(e)})"
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
