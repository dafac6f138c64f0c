/*
 * cuda_emulation.hpp: CUDA's built-ins spelled for the host, so that a generated CUDA
 * module compiles as ordinary C++ (g++ -std=c++20) and runs on the CPU.
 *
 * Pasted before the module's source by the stand-in driver's emulated launches
 * (standin_emulate.c, TACK_STANDIN_EXEC=emulate) and by tests/python/cuda_emulator.py.
 * What it models:
 *
 * - The grid: the blocks run one after another, in order (x fastest); each block's
 *   threads are real threads (pthreads), created once per launch and reused for every
 *   block, so threadIdx, blockIdx, blockDim and gridDim are what CUDA gives.
 * - __syncthreads: a barrier of the block's threads. A thread that returns from the
 *   entry point leaves the barrier (as an exited thread no longer counts on a GPU), so
 *   a block whose threads stop early still finishes; a barrier that the other threads
 *   never reach (divergent __syncthreads) waits forever, and the caller's time limit
 *   turns that into a fault.
 * - Dynamic shared memory (`extern __shared__ double tk_shm[]`, the one name Tack's
 *   emitter uses): one page-aligned buffer of the launch's dynamic size, filled with
 *   0xA5; every page past that size is inaccessible during the launch, so an access
 *   beyond the size the launch asked for faults (page granularity). Static __shared__
 *   variables are not modelled (the stand-in refuses modules that declare one).
 * - Atomics: GCC's __atomic built-ins, sequentially consistent; __threadfence a full
 *   fence.
 *
 * Everything here is static or hidden, so several modules can be loaded in one process.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <utility>
#undef NAN
#undef HUGE_VAL
#undef INT64_C
#undef INT64_MAX
#undef INT64_MIN
#undef UINT64_MAX
/* the module declares its own fixed-width types: keep them apart from libc's */
#define int8_t tk_int8
#define int16_t tk_int16
#define int32_t tk_int32
#define int64_t tk_int64
#define uint8_t tk_uint8
#define uint16_t tk_uint16
#define uint32_t tk_uint32
#define uint64_t tk_uint64
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__

#define TK_EMU_SHARED_MAX 49152 /* dynamic shared memory a block may use (48 KiB) */
#define TK_EMU_PAGE 4096

struct tk_dim3 {
    unsigned x, y, z;
};
static tk_dim3 gridDim, blockDim;
static thread_local tk_dim3 blockIdx, threadIdx;

/* The dynamic shared memory, with one page to spare that is never accessible (the
 * module's block-scope `extern __shared__ double tk_shm[]` names this array). */
static __attribute__((aligned(
    TK_EMU_PAGE))) double tk_shm[(TK_EMU_SHARED_MAX + TK_EMU_PAGE) / sizeof(double)];

/* ---- barriers ------------------------------------------------------------------- */

/* A barrier that threads may leave (drop); the last thread to arrive runs `last`. */
struct tk_emu_barrier {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    unsigned expected = 0, arrived = 0, generation = 0;
};
static tk_emu_barrier tk_emu_sync;   /* __syncthreads of the running block */
static tk_emu_barrier tk_emu_blocks; /* the end of a block: every thread is done */
static unsigned tk_emu_nthreads;

static void
tk_emu_release(tk_emu_barrier *b)
{
    b->arrived = 0;
    b->generation++;
    pthread_cond_broadcast(&b->c);
}

static void
tk_emu_wait(tk_emu_barrier *b, void (*last)(void))
{
    pthread_mutex_lock(&b->m);
    unsigned g = b->generation;
    if (++b->arrived >= b->expected) {
        if (last) {
            last();
        }
        tk_emu_release(b);
    }
    else {
        while (g == b->generation) {
            pthread_cond_wait(&b->c, &b->m);
        }
    }
    pthread_mutex_unlock(&b->m);
}

static void
tk_emu_drop(tk_emu_barrier *b)
{
    pthread_mutex_lock(&b->m);
    b->expected--;
    if (b->arrived > 0 && b->arrived >= b->expected) {
        tk_emu_release(b);
    }
    pthread_mutex_unlock(&b->m);
}

/* Run by the last thread to finish a block: the next block's threads all count. */
static void
tk_emu_next_block(void)
{
    pthread_mutex_lock(&tk_emu_sync.m);
    tk_emu_sync.expected = tk_emu_nthreads;
    tk_emu_sync.arrived = 0;
    pthread_mutex_unlock(&tk_emu_sync.m);
}

static inline void
__syncthreads()
{
    tk_emu_wait(&tk_emu_sync, nullptr);
}

static inline void
__threadfence()
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* ---- atomics and bit casts ------------------------------------------------------ */

template <class T>
static inline T
tk_emu_cas(T *p, T want, T v)
{
    __atomic_compare_exchange_n(p, &want, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return want;
}
static inline int
atomicCAS(int *p, int c, int v)
{
    return tk_emu_cas(p, c, v);
}
static inline unsigned
atomicCAS(unsigned *p, unsigned c, unsigned v)
{
    return tk_emu_cas(p, c, v);
}
static inline unsigned long long
atomicCAS(unsigned long long *p, unsigned long long c, unsigned long long v)
{
    return tk_emu_cas(p, c, v);
}
static inline int
atomicExch(int *p, int v)
{
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
template <class T>
static inline T
atomicAdd(T *p, T v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
template <class T>
static inline T
tk_emu_float_add(T *p, T v)
{
    T old = *p, next;
    do {
        next = old + v;
    } while (!__atomic_compare_exchange(p, &old, &next, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST));
    return old;
}
static inline float
atomicAdd(float *p, float v)
{
    return tk_emu_float_add(p, v);
}
static inline double
atomicAdd(double *p, double v)
{
    return tk_emu_float_add(p, v);
}
template <class T>
static inline T
atomicMin(T *p, T v)
{
    T old = *p;
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST)) {
    }
    return old;
}
template <class T>
static inline T
atomicMax(T *p, T v)
{
    T old = *p;
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST)) {
    }
    return old;
}
template <class To, class From>
static inline To
tk_emu_bits(From f)
{
    To t;
    memcpy(&t, &f, sizeof t);
    return t;
}
static inline unsigned
__float_as_uint(float f)
{
    return tk_emu_bits<unsigned>(f);
}
static inline float
__uint_as_float(unsigned u)
{
    return tk_emu_bits<float>(u);
}
static inline long long
__double_as_longlong(double d)
{
    return tk_emu_bits<long long>(d);
}
static inline double
__longlong_as_double(long long u)
{
    return tk_emu_bits<double>(u);
}

/* ---- the grid ------------------------------------------------------------------- */

/* One launch as the caller gives it: the entry's parameters packed as cuLaunchKernel
 * packs them (each at its natural alignment), the geometry, the dynamic shared size. */
struct tk_emu_launch {
    const void *params;
    size_t params_nbytes;
    unsigned grid[3], block[3];
    size_t shared;
};

/* Why a launch did not run (the stand-in's child exits with it). */
enum {
    TK_EMU_OK = 0,
    TK_EMU_BAD_PARAMS = 3,   /* the bytes are not the entry's parameter list */
    TK_EMU_BAD_GEOMETRY = 4, /* beyond the device's limits */
    TK_EMU_NO_THREADS = 5,   /* the host could not start the block's threads */
};

struct tk_emu_grid_state {
    void (*run)(void *);
    void *arg;
    unsigned long long nblocks;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    int start; /* 0: wait, 1: run, -1: give up (a thread could not be created) */
};

struct tk_emu_thread_arg {
    tk_emu_grid_state *g;
    unsigned t;
};

static void *
tk_emu_thread(void *p)
{
    const tk_emu_thread_arg *a = (const tk_emu_thread_arg *)p;
    tk_emu_grid_state *g = a->g;
    pthread_mutex_lock(&g->m);
    while (g->start == 0) {
        pthread_cond_wait(&g->c, &g->m);
    }
    int go = g->start > 0;
    pthread_mutex_unlock(&g->m);
    const unsigned bx = blockDim.x, by = blockDim.y;
    threadIdx = {a->t % bx, a->t / bx % by, a->t / (bx * by)};
    for (unsigned long long b = 0; go && b < g->nblocks; b++) {
        const unsigned long long gx = gridDim.x, gy = gridDim.y;
        blockIdx = {(unsigned)(b % gx), (unsigned)(b / gx % gy),
                    (unsigned)(b / (gx * gy))};
        g->run(g->arg);
        tk_emu_drop(&tk_emu_sync);
        tk_emu_wait(&tk_emu_blocks, tk_emu_next_block);
    }
    return nullptr;
}

/* Makes the pages of tk_shm past `shared` bytes inaccessible (prot 0) or accessible
 * again, and fills the launch's bytes with 0xA5 (uninitialized shared memory). */
static void
tk_emu_shared_pages(size_t shared, bool open)
{
    size_t keep = (shared + TK_EMU_PAGE - 1) / TK_EMU_PAGE * TK_EMU_PAGE;
    unsigned char *base = (unsigned char *)tk_shm;
    mprotect(base + keep, sizeof tk_shm - keep,
             open ? PROT_READ | PROT_WRITE : PROT_NONE);
    if (!open) {
        memset(base, 0xA5, shared);
    }
}

/* Runs run(arg) on every thread of every block of the launch's grid. */
static int
tk_emu_grid(const tk_emu_launch *l, void (*run)(void *), void *arg)
{
    unsigned long long nthreads = 1, nblocks = 1;
    for (int k = 0; k < 3; k++) {
        nthreads *= l->block[k];
        nblocks *= l->grid[k];
    }
    if (nthreads == 0 || nthreads > 1024 || nblocks == 0 ||
        l->shared > TK_EMU_SHARED_MAX) {
        return TK_EMU_BAD_GEOMETRY;
    }
    gridDim = {l->grid[0], l->grid[1], l->grid[2]};
    blockDim = {l->block[0], l->block[1], l->block[2]};
    tk_emu_nthreads = (unsigned)nthreads;
    tk_emu_sync.expected = tk_emu_nthreads;
    tk_emu_sync.arrived = 0;
    tk_emu_blocks.expected = tk_emu_nthreads;
    tk_emu_blocks.arrived = 0;
    tk_emu_shared_pages(l->shared, false);
    tk_emu_grid_state g;
    g.run = run;
    g.arg = arg;
    g.nblocks = nblocks;
    g.start = 0;
    static tk_emu_thread_arg args[1024];
    static pthread_t threads[1024];
    unsigned started = 0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)4 << 20); /* local arrays: up to 1 MiB */
    while (started < nthreads) {
        args[started] = {&g, started};
        if (pthread_create(&threads[started], &attr, tk_emu_thread, &args[started]) !=
            0) {
            break;
        }
        started++;
    }
    pthread_attr_destroy(&attr);
    pthread_mutex_lock(&g.m);
    g.start = started == nthreads ? 1 : -1;
    pthread_cond_broadcast(&g.c);
    pthread_mutex_unlock(&g.m);
    for (unsigned k = 0; k < started; k++) {
        pthread_join(threads[k], nullptr);
    }
    tk_emu_shared_pages(l->shared, true);
    return started == nthreads ? TK_EMU_OK : TK_EMU_NO_THREADS;
}

/* ---- entry points --------------------------------------------------------------- */

template <class T>
struct tk_emu_plain {
    typedef T type;
};
template <class T>
struct tk_emu_plain<const T> {
    typedef T type;
};

/* The offset of the next parameter of type T after `at` bytes, at its alignment. */
template <class T>
static size_t
tk_emu_offset(size_t &at)
{
    at = (at + alignof(T) - 1) / alignof(T) * alignof(T);
    size_t mine = at;
    at += sizeof(T);
    return mine;
}

template <class T>
static T
tk_emu_param(const unsigned char *p, size_t at)
{
    alignas(T) unsigned char bytes[sizeof(T)];
    memcpy(bytes, p + at, sizeof(T));
    return *(const T *)bytes;
}

template <class... A>
struct tk_emu_call {
    void (*f)(A...);
    const unsigned char *params;
    size_t at[sizeof...(A) + 1];

    template <size_t... I>
    void invoke(std::index_sequence<I...>)
    {
        f(tk_emu_param<typename tk_emu_plain<A>::type>(params, at[I])...);
    }
    static void run(void *self)
    {
        ((tk_emu_call *)self)->invoke(std::index_sequence_for<A...>{});
    }
};

/* Launches the entry point f: its parameters unpacked from the launch's bytes by f's
 * own parameter types (which must account for every byte), then the grid. */
template <class... A>
static int
tk_emu_run(void (*f)(A...), const tk_emu_launch *l)
{
    size_t end = 0;
    tk_emu_call<A...> call{f,
                           (const unsigned char *)l->params,
                           {tk_emu_offset<typename tk_emu_plain<A>::type>(end)..., 0}};
    if (end != l->params_nbytes) {
        return TK_EMU_BAD_PARAMS;
    }
    return tk_emu_grid(l, tk_emu_call<A...>::run, &call);
}

#define TK_EMU_ENTRY(name)                                                     \
    extern "C" __attribute__((visibility("default"))) int tk_emu_entry_##name( \
        const tk_emu_launch *l)                                                \
    {                                                                          \
        return tk_emu_run(name, l);                                            \
    }
