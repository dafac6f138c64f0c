/* A tack kernel; generated. */
#include <stdint.h>
#include <math.h>
#define TK_EXPORT __attribute__((visibility("default")))
#define TK_INLINE static inline __attribute__((always_inline))
typedef _Bool tk_bool;
typedef const char *tk_name;
typedef struct tk_ctx {
    int failed;
    void (*fail)(struct tk_ctx *, int, int, int, int64_t, int64_t, const char *);
    char *partials;
    int64_t chunk, result_i;
    double result_f;
    int privatized;
} tk_ctx;
#define TK_FAILED __atomic_load_n(&tk_ctx->failed, __ATOMIC_RELAXED)
#define TK_FAIL(c, why, line, axis, index, extent, name) \
    (c)->fail(c, why, line, axis, index, extent, name)
#define TK_FAIL_INDEX 1
#define TK_FAIL_ZERO_DIVISION 2
TK_EXPORT const int tack_kernel_abi = 3;

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
TK_INLINE int tk_ucmp(uint64_t a, int64_t b) {
    if (b < 0 || a > (uint64_t)b) return 1;
    return a == (uint64_t)b ? 0 : -1;
}
TK_INLINE int64_t tk_iabs(int64_t a) { return a < 0 ? (int64_t)(0 - (uint64_t)a) : a; }
TK_INLINE int64_t tk_f2i64_edge(double x) {
    return x != x ? 0 : x > 0 ? INT64_MAX : INT64_MIN;
}
TK_INLINE int64_t tk_f2i64f_edge(float x) {
    return x != x ? 0 : x > 0 ? INT64_MAX : INT64_MIN;
}
#if defined(__x86_64__) && defined(__SSE2__) && !defined(__CUDACC__) && \
    !defined(__OPENCL_VERSION__)
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
TK_INLINE int64_t tk_f2i64_sel(double x) {
    return x != x ? 0 : x >= 9223372036854775808.0 ? INT64_MAX
         : x < -9223372036854775808.0 ? INT64_MIN : (int64_t)x;
}
TK_INLINE int64_t tk_f2i64f_sel(float x) {
    return x != x ? 0 : x >= 9223372036854775808.0f ? INT64_MAX
         : x < -9223372036854775808.0f ? INT64_MIN : (int64_t)x;
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
#define TK_MINMAX(T, S) \
TK_INLINE T tk_min_##S(T a, T b) { return b < a ? b : a; } \
TK_INLINE T tk_max_##S(T a, T b) { return b > a ? b : a; }
TK_MINMAX(tk_bool, b)
TK_MINMAX(int64_t, i)
TK_MINMAX(float, f)
TK_MINMAX(double, d)

 
TK_EXPORT const int tack_kernel_result_kind = 2;
typedef struct { double v_s; } tk_red;
TK_EXPORT const int64_t tack_kernel_partial_size = sizeof(tk_red);
typedef struct { void *a0; int64_t a0_n[1]; } tk_params;
TK_EXPORT const int tack_kernel_nparams = 1;
TK_EXPORT const uint32_t tack_kernel_param_key[] = {68353u};
TK_EXPORT const unsigned char tack_kernel_param_stored[] = {0};
TK_EXPORT int64_t tack_kernel_trips(const void *tk_pv, tk_ctx *tk_ctx) {
    const tk_params *tk_p = (const tk_params *)tk_pv; (void)tk_p;
    double *const p_x = (double *)tk_p->a0;
    const int64_t p_x_n0 = tk_p->a0_n[INT64_C(0)];
    const int64_t p_x_size = p_x_n0;
    (void)p_x; (void)p_x_size;
    double v_s = 0;
#line 26 "test_kernels_reductions.py"
    v_s = 0.0;
#line 27 "test_kernels_reductions.py"
    const int64_t tk_start = INT64_C(0);
    const int64_t tk_step = INT64_C(1);
    (void)tk_start; (void)tk_step;
    return tk_trips(tk_start, p_x_n0, tk_step);
}
TK_EXPORT void tack_kernel_body(int64_t tk_begin, int64_t tk_end, const void *tk_pv, tk_ctx *tk_ctx) {
    (void)tk_begin; (void)tk_end;
    const tk_params *tk_p = (const tk_params *)tk_pv; (void)tk_p;
    double *const p_x = (double *)tk_p->a0;
    const int64_t p_x_n0 = tk_p->a0_n[INT64_C(0)];
    const int64_t p_x_size = p_x_n0;
    (void)p_x; (void)p_x_size;
    double v_s = 0;
#line 26 "test_kernels_reductions.py"
    v_s = 0.0;
#line 27 "test_kernels_reductions.py"
    const int64_t tk_start = INT64_C(0);
    const int64_t tk_step = INT64_C(1);
    (void)tk_start; (void)tk_step;
    v_s = (-0.0);
    double tk_r0[8] = {(-0.0), (-0.0), (-0.0), (-0.0), (-0.0), (-0.0), (-0.0), (-0.0)};
    const int64_t tk_nb = (tk_end - tk_begin) / 8;
    for (int64_t tk_b = 0; tk_b < tk_nb; tk_b++) {
        for (int64_t tk_u = 0; tk_u < 8; tk_u++) {
            const int64_t tk_k = tk_begin + tk_b * 8 + tk_u;
            int64_t v_i = 0;
            v_i = (tk_start + tk_k);
#line 28 "test_kernels_reductions.py"
            tk_r0[tk_u] = (tk_r0[tk_u] + p_x[v_i]);
        }
    }
    for (int64_t tk_k = tk_begin + tk_nb * 8; tk_k < tk_end; tk_k++) {
        int64_t v_i = 0;
        v_i = (tk_start + tk_k);
#line 28 "test_kernels_reductions.py"
        tk_r0[INT64_C(0)] = (tk_r0[INT64_C(0)] + p_x[v_i]);
    }
    v_s = (v_s + (((tk_r0[INT64_C(0)] + tk_r0[INT64_C(1)]) + (tk_r0[INT64_C(2)] + tk_r0[INT64_C(3)])) + ((tk_r0[INT64_C(4)] + tk_r0[INT64_C(5)]) + (tk_r0[INT64_C(6)] + tk_r0[INT64_C(7)]))));
    tk_red *tk_slot = (tk_red *)tk_ctx->partials + tk_begin / tk_ctx->chunk;
    tk_slot->v_s = v_s;
}
TK_EXPORT void tack_kernel_finish(const void *tk_pv, tk_ctx *tk_ctx, int64_t tk_nchunks) {
    (void)tk_nchunks;
    const tk_params *tk_p = (const tk_params *)tk_pv; (void)tk_p;
    double *const p_x = (double *)tk_p->a0;
    const int64_t p_x_n0 = tk_p->a0_n[INT64_C(0)];
    const int64_t p_x_size = p_x_n0;
    (void)p_x; (void)p_x_size;
    double v_s = 0;
#line 26 "test_kernels_reductions.py"
    v_s = 0.0;
#line 27 "test_kernels_reductions.py"
    const int64_t tk_start = INT64_C(0);
    const int64_t tk_step = INT64_C(1);
    (void)tk_start; (void)tk_step;
    for (int64_t tk_c = 0; tk_c < tk_nchunks; tk_c++) {
        const tk_red *tk_slot = (const tk_red *)tk_ctx->partials + tk_c;
        { const double tk_part = tk_slot->v_s; v_s = (v_s + tk_part); }
    }
    tk_ctx->result_f = v_s;
}
