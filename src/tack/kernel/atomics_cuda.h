/*
 * atomics_cuda.h: tk_atomic_<op>_<dtype>(T *p, T v) -> the old value, for the CUDA
 * emitter (the same names as atomics_cpu.h). Device-scope, relaxed: the launch's
 * completion orders every update before the host reads.
 *
 * Integer add and sub wrap (two's complement): sub is an add of the negation, done
 * in unsigned arithmetic, which is the same bits. Float add is the hardware's
 * (float64 needs sm_60); float sub adds -v, which IEEE 754 defines to be the same
 * operation as old - v. Integer min and max are the hardware's; float min and max
 * are compare-and-swap loops on the bits, keeping the old value when either side is
 * NaN (as the CPU: v < old and v > old are false against NaN).
 */
#define TK_ATOMIC_INT(T, N, U)                                                      \
TK_INLINE T tk_atomic_add_##N(T *p, T v) { return (T)atomicAdd((U *)p, (U)v); }    \
TK_INLINE T tk_atomic_sub_##N(T *p, T v) {                                         \
    return (T)atomicAdd((U *)p, (U)0 - (U)v);                                       \
}
TK_ATOMIC_INT(int32_t, int32, unsigned int)
TK_ATOMIC_INT(uint32_t, uint32, unsigned int)
TK_ATOMIC_INT(int64_t, int64, unsigned long long)
TK_ATOMIC_INT(uint64_t, uint64, unsigned long long)
#define TK_ATOMIC_MINMAX(T, N, H)                                                   \
TK_INLINE T tk_atomic_min_##N(T *p, T v) { return (T)atomicMin((H *)p, (H)v); }    \
TK_INLINE T tk_atomic_max_##N(T *p, T v) { return (T)atomicMax((H *)p, (H)v); }
TK_ATOMIC_MINMAX(int32_t, int32, int)
TK_ATOMIC_MINMAX(uint32_t, uint32, unsigned int)
TK_ATOMIC_MINMAX(int64_t, int64, long long)
TK_ATOMIC_MINMAX(uint64_t, uint64, unsigned long long)
#define TK_ATOMIC_FLOAT(T, N, U, TOBITS, FROMBITS)                                  \
TK_INLINE T tk_atomic_add_##N(T *p, T v) { return atomicAdd(p, v); }               \
TK_INLINE T tk_atomic_sub_##N(T *p, T v) { return atomicAdd(p, -v); }              \
TK_INLINE T tk_atomic_min_##N(T *p, T v) {                                         \
    U *q = (U *)p, seen = *(volatile U *)q, want;                                   \
    do {                                                                            \
        want = seen;                                                                \
        T old = FROMBITS(want);                                                     \
        if (!(v < old)) return old;                                                 \
        seen = atomicCAS(q, want, TOBITS(v));                                       \
    } while (seen != want);                                                         \
    return FROMBITS(want);                                                          \
}                                                                                   \
TK_INLINE T tk_atomic_max_##N(T *p, T v) {                                         \
    U *q = (U *)p, seen = *(volatile U *)q, want;                                   \
    do {                                                                            \
        want = seen;                                                                \
        T old = FROMBITS(want);                                                     \
        if (!(v > old)) return old;                                                 \
        seen = atomicCAS(q, want, TOBITS(v));                                       \
    } while (seen != want);                                                         \
    return FROMBITS(want);                                                          \
}
#define TK_F2U(x) __float_as_uint(x)
#define TK_U2F(x) __uint_as_float(x)
#define TK_D2U(x) ((unsigned long long)__double_as_longlong(x))
#define TK_U2D(x) __longlong_as_double((long long)(x))
TK_ATOMIC_FLOAT(float, float32, unsigned int, TK_F2U, TK_U2F)
TK_ATOMIC_FLOAT(double, float64, unsigned long long, TK_D2U, TK_U2D)
