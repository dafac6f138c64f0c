/*
 * atomics_opencl.h: tk_atomic_<op>_<dtype>(__global T *p, T v) -> the old value,
 * for the OpenCL C emitter (the same names as atomics_cpu.h). Relaxed, on global
 * memory: the launch's completion orders every update before the host reads. The
 * 64-bit ones need cl_khr_int64_base_atomics and cl_khr_int64_extended_atomics
 * (the emitter enables both), which every Level Zero device has.
 *
 * Integer add and sub wrap (two's complement): sub is an add of the negation, done
 * in unsigned arithmetic, which is the same bits. Integer min and max are the
 * built-ins. Float operations are compare-and-swap loops on the bits; a float min
 * or max keeps the old value when either side is NaN (as the CPU: v < old and
 * v > old are false against NaN).
 */
#define TK_ATOMIC_INT(T, N, U, ADD, MIN, MAX)                                       \
TK_INLINE T tk_atomic_add_##N(__global T *p, T v) {                                \
    return (T)ADD((volatile __global U *)p, (U)v);                                  \
}                                                                                   \
TK_INLINE T tk_atomic_sub_##N(__global T *p, T v) {                                \
    return (T)ADD((volatile __global U *)p, (U)0 - (U)v);                           \
}                                                                                   \
TK_INLINE T tk_atomic_min_##N(__global T *p, T v) {                                \
    return MIN((volatile __global T *)p, v);                                        \
}                                                                                   \
TK_INLINE T tk_atomic_max_##N(__global T *p, T v) {                                \
    return MAX((volatile __global T *)p, v);                                        \
}
TK_ATOMIC_INT(int32_t, int32, uint32_t, atomic_add, atomic_min, atomic_max)
TK_ATOMIC_INT(uint32_t, uint32, uint32_t, atomic_add, atomic_min, atomic_max)
TK_ATOMIC_INT(int64_t, int64, uint64_t, atom_add, atom_min, atom_max)
TK_ATOMIC_INT(uint64_t, uint64, uint64_t, atom_add, atom_min, atom_max)
/* One compare-and-swap loop per float operation: NEXT is the new value from old
 * and v, or KEEP (true) leaves the element as it is. */
#define TK_ATOMIC_FLOAT(T, N, U, CAS, OP, NEXT, KEEP)                               \
TK_INLINE T tk_atomic_##OP##_##N(__global T *p, T v) {                             \
    volatile __global U *q = (volatile __global U *)p;                              \
    U seen = *q, want;                                                              \
    do {                                                                            \
        want = seen;                                                                \
        T old = as_##T(want);                                                       \
        if (KEEP) return old;                                                       \
        seen = CAS(q, want, as_##U(NEXT));                                          \
    } while (seen != want);                                                         \
    return as_##T(want);                                                            \
}
#define TK_ATOMIC_FLOAT_ALL(T, N, U, CAS)                                           \
TK_ATOMIC_FLOAT(T, N, U, CAS, add, old + v, 0)                                      \
TK_ATOMIC_FLOAT(T, N, U, CAS, sub, old + -v, 0)                                     \
TK_ATOMIC_FLOAT(T, N, U, CAS, min, v, !(v < old))                                   \
TK_ATOMIC_FLOAT(T, N, U, CAS, max, v, !(v > old))
TK_ATOMIC_FLOAT_ALL(float, float32, uint, atomic_cmpxchg)
TK_ATOMIC_FLOAT_ALL(double, float64, ulong, atom_cmpxchg)
