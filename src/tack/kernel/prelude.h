/*
 * prelude.h: the helpers generated kernel code calls (lowered as lir.Helper
 * "name" -> tk_name). Not a header of the C library: the kernel emitter pastes it
 * into every generated source, after defining
 *
 *   TK_INLINE   how a helper is declared: static inline (always_inline) for the
 *               CPU, __device__ __forceinline__ for a GPU
 *   tk_ctx      the launch context of kernel.h (debug-mode failures)
 *   TK_FAIL(c, why, line, axis, index, extent, name)
 *               records a failure in c's record, as the target does it (a call
 *               through the CPU's function pointer, the first claim of a GPU's
 *               record); why is TK_FAIL_INDEX or TK_FAIL_ZERO_DIVISION, kernel.h's
 *               tack_kernel_failure (the emitters take the numbers from _tack)
 *   tk_bool     the boolean type (_Bool in C, bool in C++)
 *   tk_name     how an array's name reaches TK_FAIL (lir.Str): a C string on the
 *               CPU, a number into the kernel's table of names on a GPU
 *   TK_HALF     when the kernel touches float16 elements (the conversions below)
 *
 * and including <stdint.h> and <math.h> (or the target's equivalents). Everything
 * here is plain C99 that C++ (CUDA, HIP) and OpenCL C also accept, except the
 * overloads section, which only targets with overloaded functions get (C++, and
 * OpenCL C, whose TK_INLINE makes every helper overloadable; emit_c.header). It is
 * part of every kernel's source, so it is part of every cache key: an edit
 * rebuilds kernels.
 */
/* The helpers keep this file's compact layout (a guard and its return on one
 * line): the emitter pastes the file into every kernel source. */
/* clang-format off */
/* Python's // and % on int64: floor, never UB. x // 0 and x % 0 give 0 (debug
 * builds raise ZeroDivisionError instead); INT64_MIN // -1 wraps. */
/* Both operands in [0, 2^31) (indices, the usual case): a 32-bit unsigned divide,
 * several times faster than a 64-bit one on x86, and floor == truncation there. */
#define TK_SMALL(a, b) (((uint64_t)(a) | (uint64_t)(b)) >> 31 == 0)
TK_INLINE int64_t tk_floordiv(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (TK_SMALL(a, b)) return (int64_t)((uint32_t)a / (uint32_t)b);
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
TK_INLINE int64_t tk_mod(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (TK_SMALL(a, b)) return (int64_t)((uint32_t)a % (uint32_t)b);
    if (b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
TK_INLINE int64_t tk_floordiv_d(tk_ctx *c, int64_t a, int64_t b, int line) {
    if (b == 0) { TK_FAIL(c, TK_FAIL_ZERO_DIVISION, line, 0, 0, 0, 0); return 0; }
    return tk_floordiv(a, b);
}
TK_INLINE int64_t tk_mod_d(tk_ctx *c, int64_t a, int64_t b, int line) {
    if (b == 0) { TK_FAIL(c, TK_FAIL_ZERO_DIVISION, line, 0, 0, 0, 0); return 0; }
    return tk_mod(a, b);
}
/* Python's float // and % (CPython's float_divmod); // by zero is a / b (inf or nan),
 * as NumPy's floor_divide. */
#define TK_FLOATDIV(T, S)                                                   \
TK_INLINE T tk_fmod##S(T a, T b) {                                          \
    T m = fmod##S(a, b);                                                    \
    if (m != 0) { if ((b < 0) != (m < 0)) m += b; }                         \
    else m = copysign##S((T)0, b);                                          \
    return m;                                                               \
}                                                                           \
TK_INLINE T tk_ffloordiv##S(T a, T b) {                                     \
    if (b == 0) return a / b;                                               \
    T m = fmod##S(a, b);                                                    \
    T d = (a - m) / b;                                                      \
    if (m != 0 && ((b < 0) != (m < 0))) d -= 1;                             \
    if (d != 0) { T f = floor##S(d); if (d - f > (T)0.5) f += 1; return f; } \
    return copysign##S((T)0, a / b);                                        \
}
TK_FLOATDIV(double, )
TK_FLOATDIV(float, f)
TK_INLINE int64_t tk_ipow(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)a;
    while (b) { if (b & 1) r *= x; x *= x; b >>= 1; }
    return (int64_t)r;
}
TK_INLINE int64_t tk_shl(int64_t a, int64_t b) {
    return (b < 0 || b >= 64) ? 0 : (int64_t)((uint64_t)a << b);
}
TK_INLINE int64_t tk_shr(int64_t a, int64_t b) {
    return b < 0 ? 0 : b >= 64 ? (a < 0 ? -1 : 0) : (a >> b);
}
/* math.isqrt (a negative argument gives 0) and math.ldexp's exponent. */
TK_INLINE int64_t tk_isqrt(int64_t n) {
    if (n <= 0) return 0;
    uint64_t r = (uint64_t)sqrt((double)n);
    while (r * r > (uint64_t)n) r--;
    while ((r + 1) * (r + 1) <= (uint64_t)n) r++;
    return (int64_t)r;
}
TK_INLINE int tk_ldexp_exp(int64_t e) {
    return e < -100000 ? -100000 : e > 100000 ? 100000 : (int)e;
}
/* A uint64 element against an int64 value: the sign of a - b, exactly. */
TK_INLINE int tk_ucmp(uint64_t a, int64_t b) {
    if (b < 0 || a > (uint64_t)b) return 1;
    return a == (uint64_t)b ? 0 : -1;
}
TK_INLINE int64_t tk_iabs(int64_t a) { return a < 0 ? (int64_t)(0 - (uint64_t)a) : a; }
/* float -> int: truncate, saturate, NaN -> 0 (as tack_convert). The usual case costs
 * one range check that is never taken (false for NaN and for anything outside
 * (-2^63, 2^63)) and one truncating conversion; the edge cases go out of line. */
TK_INLINE int64_t tk_f2i64_edge(double x) {
    return x != x ? 0 : x > 0 ? INT64_MAX : INT64_MIN;
}
/* The same for a float, in float: a float32 kernel's module then needs no float64
 * (a Level Zero device may have none). */
TK_INLINE int64_t tk_f2i64f_edge(float x) {
    return x != x ? 0 : x > 0 ? INT64_MAX : INT64_MIN;
}
#if defined(__x86_64__) && defined(__SSE2__) && !defined(__CUDACC__) && \
    !defined(__OPENCL_VERSION__)
/* On x86-64 the truncating conversion itself reports the edge: cvttsd2si and
 * cvttss2si give INT64_MIN for NaN and for anything outside (-2^63, 2^63), so the
 * usual case is the conversion and one compare (a histogram's index, x * bins, runs
 * about a fifth faster than behind the range check). -2^63 converts exactly to
 * INT64_MIN and takes the edge path, which gives the same value. */
typedef double tk_v2df __attribute__((vector_size(16)));
typedef float tk_v4sf __attribute__((vector_size(16)));
TK_INLINE int64_t tk_f2i64(double x) {
    const int64_t r = __builtin_ia32_cvttsd2si64((tk_v2df){x, 0.0});
    if (__builtin_expect(r == INT64_MIN, 0)) return tk_f2i64_edge(x);
    return r;
}
TK_INLINE int64_t tk_f2i64f(float x) {
    const int64_t r = __builtin_ia32_cvttss2si64((tk_v4sf){x, 0.0f, 0.0f, 0.0f});
    if (__builtin_expect(r == INT64_MIN, 0)) return tk_f2i64f_edge(x);
    return r;
}
#else
TK_INLINE int64_t tk_f2i64(double x) {
    if (__builtin_expect(!(fabs(x) < 9223372036854775808.0), 0)) return tk_f2i64_edge(x);
    return (int64_t)x;
}
TK_INLINE int64_t tk_f2i64f(float x) {
    if (__builtin_expect(!(fabsf(x) < 9223372036854775808.0f), 0)) {
        return tk_f2i64f_edge(x);
    }
    return (int64_t)x;
}
#endif
/* The same conversion as selects GCC vectorises (a histogram's binning pass,
 * emit_c.CEmitter.binned_trips), with tk_f2i64's results: clamped below, NaN and
 * the top sent to 0 (NaN compares false) so the cast is in range, then the top put
 * back (fewer mask
 * operations than a select per case; benchmarks/RESULTS.md, histogram). */
TK_INLINE int64_t tk_f2i64_sel(double x) {
    double c = x < -9223372036854775808.0 ? -9223372036854775808.0 : x;
    c = c < 9223372036854775808.0 ? c : 0.0;
    const int64_t r = (int64_t)c;
    return x >= 9223372036854775808.0 ? INT64_MAX : r;
}
TK_INLINE int64_t tk_f2i64f_sel(float x) {
    float c = x < -9223372036854775808.0f ? -9223372036854775808.0f : x;
    c = c < 9223372036854775808.0f ? c : 0.0f;
    const int64_t r = (int64_t)c;
    return x >= 9223372036854775808.0f ? INT64_MAX : r;
}
TK_INLINE uint64_t tk_f2u64(double x) {
    if (!(x > 0)) return 0;
    if (x >= 18446744073709551615.0) return UINT64_MAX;
    return (uint64_t)x;
}
TK_INLINE int64_t tk_f2sat(double x, double lo, double hi) {
    if (x != x) return 0;
    return x <= lo ? (int64_t)lo : x >= hi ? (int64_t)hi : (int64_t)x;
}
/* The trip count of range(a, b, s), at most INT64_MAX: a range of more trips
 * (range(-2**63, 2**63 - 1) has 2**64 - 1) runs its first INT64_MAX, which no
 * program outlives; a negative count would mean "no trips" or "serial" to the
 * caller. */
TK_INLINE int64_t tk_trips(int64_t a, int64_t b, int64_t s) {
    uint64_t n = 0;
    if (s > 0 && a < b) n = ((uint64_t)b - (uint64_t)a - 1) / (uint64_t)s + 1;
    if (s < 0 && a > b) n = ((uint64_t)a - (uint64_t)b - 1) / (0 - (uint64_t)s) + 1;
    return n > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)n;
}
TK_INLINE int tk_ok(tk_ctx *c, int64_t i, int64_t n, int axis, tk_name name, int line) {
    if ((uint64_t)i < (uint64_t)n) return 1;
    TK_FAIL(c, TK_FAIL_INDEX, line, axis, i, n, name);
    return 0;
}
#ifdef TK_OVERLOADS
/* Integer + - * and unary minus wrap modulo 2^64, as -fwrapv makes them in the CPU
 * build. A GPU target has no such flag (NVRTC really folds (x + s) <= x to s <= 0),
 * so its emitter spells these operators as the calls below (CEmitter.WRAPPING);
 * the float overloads are the plain operators, so one spelling serves every
 * operand type the lowering makes. */
TK_INLINE int64_t tk_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
TK_INLINE int64_t tk_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
TK_INLINE int64_t tk_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
TK_INLINE int64_t tk_neg(int64_t a) { return (int64_t)(0 - (uint64_t)a); }
#define TK_FLOAT_ARITH(T)                                \
TK_INLINE T tk_add(T a, T b) { return a + b; }           \
TK_INLINE T tk_sub(T a, T b) { return a - b; }           \
TK_INLINE T tk_mul(T a, T b) { return a * b; }           \
TK_INLINE T tk_neg(T a) { return -a; }
TK_FLOAT_ARITH(float)
TK_FLOAT_ARITH(double)
#endif
/* min and max as Python's: the first argument unless the other compares past it. */
#define TK_MINMAX(T, S) \
TK_INLINE T tk_min_##S(T a, T b) { return b < a ? b : a; } \
TK_INLINE T tk_max_##S(T a, T b) { return b > a ? b : a; }
TK_MINMAX(tk_bool, b)
TK_MINMAX(int64_t, i)
TK_MINMAX(float, f)
TK_MINMAX(double, d)

#ifdef TK_HALF
/* float16 is stored as its bits (uint16_t); reads widen to float32. */
TK_INLINE float tk_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t bits;
    if (e == 0) {
        if (m == 0) bits = sign;
        else { int k = -1; do { k++; m <<= 1; } while ((m & 0x400u) == 0);
               bits = sign | ((uint32_t)(127 - 15 - k) << 23) | ((m & 0x3ffu) << 13); }
    } else if (e == 0x1f) bits = sign | 0x7f800000u | (m << 13);
    else bits = sign | ((e + 127 - 15) << 23) | (m << 13);
    union { uint32_t u; float f; } v = {bits};
    return v.f;
}
TK_INLINE uint16_t tk_f2h(float f) {
    union { float f; uint32_t u; } v = {f};
    uint32_t x = v.u, exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), hm = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u), tie = 1u << (shift - 1u);
        if (rem > tie || (rem == tie && (hm & 1u))) hm++;
        return (uint16_t)(sign | hm);
    }
    uint32_t hm = mant >> 13, rem = mant & 0x1fffu;
    uint32_t out = ((uint32_t)e << 10) | hm;
    if (rem > 0x1000u || (rem == 0x1000u && (hm & 1u))) out++;
    return (uint16_t)(sign | out);
}
/* float64 -> float16 straight from the double's bits: one rounding (to nearest,
 * ties to even), as NumPy's astype and tack_convert; going through float32 would
 * round twice. No ull literal: in OpenCL C unsigned long long is 128 bits wide,
 * which SPIR-V has no type for. */
TK_INLINE uint16_t tk_d2h(double d) {
    union { double d; uint64_t u; } v = {d};
    uint64_t x = v.u, mant = x & (uint64_t)0xfffffffffffff;
    int32_t exp = (int32_t)((x >> 52) & 0x7ffu);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
    if (exp == 0x7ff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int32_t e = exp - 1023 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return sign;
        mant |= (uint64_t)1 << 52;
        uint32_t shift = (uint32_t)(43 - e);
        uint64_t hm = mant >> shift, rem = mant & (((uint64_t)1 << shift) - 1u);
        uint64_t tie = (uint64_t)1 << (shift - 1u);
        if (rem > tie || (rem == tie && (hm & 1u))) hm++;
        return (uint16_t)(sign | hm);
    }
    uint64_t hm = mant >> 42, rem = mant & (((uint64_t)1 << 42) - 1u);
    uint64_t out = ((uint64_t)e << 10) | hm;
    if (rem > ((uint64_t)1 << 41) || (rem == ((uint64_t)1 << 41) && (hm & 1u))) out++;
    return (uint16_t)(sign | out);
}
#endif /* TK_HALF */
/* clang-format on */
