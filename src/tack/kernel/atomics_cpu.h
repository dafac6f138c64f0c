/*
 * atomics_cpu.h: tk_atomic_<op>_<dtype>(T *p, T v) -> the old value, for the CPU
 * emitter, with GCC's and Clang's __atomic builtins. Relaxed order: a launch's
 * completion (the thread pool's join) orders every update before the caller reads.
 * Integer add and sub wrap (two's complement); min, max and the float operations
 * are compare-and-swap loops. A float min or max keeps the old value when either
 * side is NaN (as Python's min(old, v) when old is NaN, and v never wins a NaN
 * comparison). A GPU emitter brings its own file with the same names.
 *
 * tk_plain_<op>_<dtype> is the same update without atomicity, for code that runs
 * on one thread (a serial launch) or on memory only it sees (a chunk's private copy
 * of an array): no lock prefix, no compare-and-swap loop.
 */
#define TK_ATOMIC_CAS(T, N, OP, NEXT)                                              \
TK_INLINE T tk_atomic_##OP##_##N(T *p, T v) {                                      \
    T old, next;                                                                    \
    __atomic_load(p, &old, __ATOMIC_RELAXED);                                       \
    do { next = (NEXT); } while (!__atomic_compare_exchange(                        \
        p, &old, &next, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));                    \
    return old;                                                                     \
}
#define TK_PLAIN(T, N, OP, NEXT)                                                  \
TK_INLINE T tk_plain_##OP##_##N(T *p, T v) {                                       \
    const T old = *p;                                                               \
    *p = (T)(NEXT);                                                                 \
    return old;                                                                     \
}
#define TK_PLAIN_ALL(T, N)                                                          \
TK_PLAIN(T, N, add, old + v)                                                        \
TK_PLAIN(T, N, sub, old - v)                                                        \
TK_PLAIN(T, N, min, v < old ? v : old)                                              \
TK_PLAIN(T, N, max, v > old ? v : old)
#define TK_ATOMIC_INT(T, N)                                                         \
TK_INLINE T tk_atomic_add_##N(T *p, T v) {                                         \
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);                              \
}                                                                                   \
TK_INLINE T tk_atomic_sub_##N(T *p, T v) {                                         \
    return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);                              \
}                                                                                   \
TK_ATOMIC_CAS(T, N, min, v < old ? v : old)                                         \
TK_ATOMIC_CAS(T, N, max, v > old ? v : old)                                         \
TK_PLAIN_ALL(T, N)
#define TK_ATOMIC_FLOAT(T, N)                                                       \
TK_ATOMIC_CAS(T, N, add, old + v)                                                   \
TK_ATOMIC_CAS(T, N, sub, old - v)                                                   \
TK_ATOMIC_CAS(T, N, min, v < old ? v : old)                                         \
TK_ATOMIC_CAS(T, N, max, v > old ? v : old)                                         \
TK_PLAIN_ALL(T, N)
TK_ATOMIC_INT(int32_t, int32)
TK_ATOMIC_INT(int64_t, int64)
TK_ATOMIC_INT(uint32_t, uint32)
TK_ATOMIC_INT(uint64_t, uint64)
TK_ATOMIC_FLOAT(float, float32)
TK_ATOMIC_FLOAT(double, float64)
