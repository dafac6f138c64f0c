/* A tack kernel for CUDA; generated. */
typedef signed char int8_t;
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
struct tk_ctx {
    int failed, claimed, why, line, axis, name;
    int64_t index, extent;
    char *partials;
    int64_t result_i;
    double result_f;
    __device__ void fail(tk_ctx *c, int w, int ln, int ax, int64_t i, int64_t n,
                         tk_name nm) {
        if (atomicCAS(&c->claimed, 0, 1) == 0) {
            c->why = w; c->line = ln; c->axis = ax; c->index = i; c->extent = n;
            c->name = nm;
            __threadfence();
            atomicExch(&c->failed, 1);
        }
    }
};
static_assert(sizeof(tk_ctx) == 64, "tk_ctx layout");
#define TK_FAILED (*(volatile int *)&tk_ctx->failed)
#define TK_FAIL(c, why, line, axis, index, extent, name) \
    (c)->fail(c, why, line, axis, index, extent, name)
#define TK_OVERLOADS 1
#define TK_EXPORT extern "C" __device__
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
#ifdef TK_OVERLOADS
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
#define TK_MINMAX(T, S) \
TK_INLINE T tk_min_##S(T a, T b) { return b < a ? b : a; } \
TK_INLINE T tk_max_##S(T a, T b) { return b > a ? b : a; }
TK_MINMAX(tk_bool, b)
TK_MINMAX(int64_t, i)
TK_MINMAX(float, f)
TK_MINMAX(double, d)

 
typedef struct { void *a0; int64_t a0_n[1]; void *a1; int64_t a1_n[1]; void *a2; int64_t a2_n[1]; } tk_params;
TK_EXPORT const int tack_kernel_nparams = 3;
TK_EXPORT const uint32_t tack_kernel_param_key[] = {68353u, 68353u, 66561u};
TK_EXPORT const unsigned char tack_kernel_param_stored[] = {1, 0, 0};
static_assert(sizeof(tk_params) == 48, "the runtime's parameter block");
static __device__ void tk_thread(const tk_params &tk_p, struct tk_ctx *tk_ctx, void *tk_out) {
    (void)tk_out;
    (void)tk_ctx;
    double *const p_out = (double *)tk_p.a0;
    double *const p_x = (double *)tk_p.a1;
    int64_t *const p_idx = (int64_t *)tk_p.a2;
    const int64_t p_out_n0 = tk_p.a0_n[INT64_C(0)];
    const int64_t p_out_size = p_out_n0;
    (void)p_out; (void)p_out_size;
    const int64_t p_x_n0 = tk_p.a1_n[INT64_C(0)];
    const int64_t p_x_size = p_x_n0;
    (void)p_x; (void)p_x_size;
    const int64_t p_idx_n0 = tk_p.a2_n[INT64_C(0)];
    const int64_t p_idx_size = p_idx_n0;
    (void)p_idx; (void)p_idx_size;
#line 25 "make_cuda_requests.py"
    const int64_t tk_start = INT64_C(0);
    const int64_t tk_step = INT64_C(1);
    (void)tk_start; (void)tk_step;
    const int64_t tk_n = tk_trips(tk_start, p_out_n0, tk_step);
    const uint64_t tk_gn = (uint64_t)tk_n;
    const uint64_t tk_stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t tk_g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; tk_g < tk_gn; tk_g = tk_gn - tk_g > tk_stride ? tk_g + tk_stride : tk_gn) {
        const int64_t tk_k = (int64_t)tk_g;
        int64_t v_i = 0;
        v_i = tk_add(tk_start, tk_k);
        if (TK_FAILED) return;
#line 26 "make_cuda_requests.py"
        if (tk_ok(tk_ctx, v_i, p_out_n0, INT64_C(0), 2, INT64_C(26))) p_out[v_i] = (tk_ok(tk_ctx, (tk_ok(tk_ctx, v_i, p_idx_n0, INT64_C(0), 0, INT64_C(26)) ? ((int64_t)(p_idx[v_i])) : ((int64_t)(INT64_C(0)))), p_x_n0, INT64_C(0), 1, INT64_C(26)) ? p_x[(tk_ok(tk_ctx, v_i, p_idx_n0, INT64_C(0), 0, INT64_C(26)) ? ((int64_t)(p_idx[v_i])) : ((int64_t)(INT64_C(0))))] : ((double)(INT64_C(0))));
        if (TK_FAILED) return;
    }
}
extern "C" __global__ void tack_kernel_body(const tk_params tk_p, struct tk_ctx *tk_ctx) {
    tk_thread(tk_p, tk_ctx, 0);
}
static __device__ void tk_thread_r(const tk_params &tk_p, struct tk_ctx *tk_ctx, double *__restrict__ p_out, const double *__restrict__ p_x, const int64_t *__restrict__ p_idx, void *tk_out) {
    (void)tk_out;
    (void)tk_ctx;
    const int64_t p_out_n0 = tk_p.a0_n[INT64_C(0)];
    const int64_t p_out_size = p_out_n0;
    (void)p_out; (void)p_out_size;
    const int64_t p_x_n0 = tk_p.a1_n[INT64_C(0)];
    const int64_t p_x_size = p_x_n0;
    (void)p_x; (void)p_x_size;
    const int64_t p_idx_n0 = tk_p.a2_n[INT64_C(0)];
    const int64_t p_idx_size = p_idx_n0;
    (void)p_idx; (void)p_idx_size;
#line 25 "make_cuda_requests.py"
    const int64_t tk_start = INT64_C(0);
    const int64_t tk_step = INT64_C(1);
    (void)tk_start; (void)tk_step;
    const int64_t tk_n = tk_trips(tk_start, p_out_n0, tk_step);
    const uint64_t tk_gn = (uint64_t)tk_n;
    const uint64_t tk_stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t tk_g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; tk_g < tk_gn; tk_g = tk_gn - tk_g > tk_stride ? tk_g + tk_stride : tk_gn) {
        const int64_t tk_k = (int64_t)tk_g;
        int64_t v_i = 0;
        v_i = tk_add(tk_start, tk_k);
        if (TK_FAILED) return;
#line 26 "make_cuda_requests.py"
        if (tk_ok(tk_ctx, v_i, p_out_n0, INT64_C(0), 2, INT64_C(26))) p_out[v_i] = (tk_ok(tk_ctx, (tk_ok(tk_ctx, v_i, p_idx_n0, INT64_C(0), 0, INT64_C(26)) ? ((int64_t)(p_idx[v_i])) : ((int64_t)(INT64_C(0)))), p_x_n0, INT64_C(0), 1, INT64_C(26)) ? p_x[(tk_ok(tk_ctx, v_i, p_idx_n0, INT64_C(0), 0, INT64_C(26)) ? ((int64_t)(p_idx[v_i])) : ((int64_t)(INT64_C(0))))] : ((double)(INT64_C(0))));
        if (TK_FAILED) return;
    }
}
extern "C" __global__ void tack_kernel_body_restrict(const tk_params tk_p, struct tk_ctx *tk_ctx) {
    tk_thread_r(tk_p, tk_ctx, (double *)tk_p.a0, (const double *)tk_p.a1, (const int64_t *)tk_p.a2, 0);
}
extern "C" __global__ void tack_kernel_trips(const tk_params tk_p, struct tk_ctx *tk_ctx, int64_t *tk_trips_out) {
    *tk_trips_out = 0;
    (void)tk_ctx;
    double *const p_out = (double *)tk_p.a0;
    double *const p_x = (double *)tk_p.a1;
    int64_t *const p_idx = (int64_t *)tk_p.a2;
    const int64_t p_out_n0 = tk_p.a0_n[INT64_C(0)];
    const int64_t p_out_size = p_out_n0;
    (void)p_out; (void)p_out_size;
    const int64_t p_x_n0 = tk_p.a1_n[INT64_C(0)];
    const int64_t p_x_size = p_x_n0;
    (void)p_x; (void)p_x_size;
    const int64_t p_idx_n0 = tk_p.a2_n[INT64_C(0)];
    const int64_t p_idx_size = p_idx_n0;
    (void)p_idx; (void)p_idx_size;
#line 25 "make_cuda_requests.py"
    const int64_t tk_start = INT64_C(0);
    const int64_t tk_step = INT64_C(1);
    (void)tk_start; (void)tk_step;
    *tk_trips_out = tk_trips(tk_start, p_out_n0, tk_step);
}
