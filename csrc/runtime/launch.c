/*
 * launch.c: the CPU backend's kernel_launch slot (kernel.c dispatches to it, after
 * kernel_args.c's checks and with its parameter block), and the runs of a GPU
 * kernel's C twin that its backend asks for (tack__cpu_kernel_trips, _run).
 *
 * A CPU launch asks the kernel for the trip count of its parallel loop, then either
 * runs the whole range on the calling thread or splits it over the thread pool.
 * Waking workers costs microseconds, so the choice uses the kernel's measured cost
 * per trip: a launch predicted to take less than PARALLEL_MIN_NS of serial work
 * stays on the calling thread (this keeps a 16-element launch well under a
 * microsecond). The estimate is refreshed on every launch, from the calling
 * thread's own share of the work when running in parallel, so worker wake-up time
 * never inflates it; a caller that was descheduled during its share (it did less
 * than half of it) gives no sample, and the estimate rises slowly and falls fast
 * (update_estimate), so a tiny launch returns to the calling thread within a few
 * launches whatever the machine's load did to one measurement. A serial launch
 * predicted at under a sixteenth of the threshold is timed only once in TIME_EVERY
 * (two clock reads are a tenth of a 16-element launch), which still lets a kernel
 * whose trips grew dearer reach the pool; with one thread nothing is timed. The
 * trip counts those choices compare against are divided out once, when an estimate
 * is stored (set_estimate), not at every launch.
 */
#include <string.h>

#include "internal.h"

/* Below this much predicted serial work a launch stays on the calling thread. */
#define PARALLEL_MIN_NS 20000u
/* Chunks per thread: enough to balance uneven trips, few enough to keep each chunk
 * long and contiguous for the vectoriser. */
#define CHUNKS_PER_THREAD 32
/* Of the serial launches far below PARALLEL_MIN_NS, one in this many is timed. */
#define TIME_EVERY 64u
/* A reduction cuts its trips into at most this many chunks, whatever the thread
 * count, and combines their partials in order: the same association on any number of
 * threads, serial launches included. */
#define REDUCE_CHUNKS 256

_Atomic uint64_t tack__stat_parallel, tack__stat_serial, tack__stat_restrict,
    tack__stat_plain_atomic, tack__stat_privatized;

/* ---- failures from generated code ------------------------------------------- */

typedef struct launch {
    tack_kernel_ctx pub; /* first: generated code sees only this */
    atomic_int claimed;
    tack__kernel_failure failure; /* the first failure, once claimed */
    tack__cpu_kernel *kernel;
    tack__body_fn body; /* the kernel's body or its restrict body */
    const void *params; /* the parameter block */
} launch;

static void
record_failure(tack_kernel_ctx *ctx, int why, int line, int axis, int64_t index,
               int64_t extent, const char *name)
{
    launch *l = (launch *)ctx;
    if (atomic_exchange(&l->claimed, 1) == 0) {
        l->failure = (tack__kernel_failure){.failed = 1,
                                            .why = why,
                                            .line = line,
                                            .axis = axis,
                                            .index = index,
                                            .extent = extent,
                                            .name = name};
        __atomic_store_n(&ctx->failed, 1, __ATOMIC_RELEASE);
    }
}

/* A launch record over kernel's parameter block, ready to run. */
static void
launch_init(launch *l, tack__cpu_kernel *k, const void *params)
{
    memset(l, 0, sizeof *l);
    l->pub.fail = record_failure;
    atomic_init(&l->claimed, 0);
    l->kernel = k;
    l->body = k->body;
    l->params = params;
}

/* ---- launch --------------------------------------------------------------------- */

static void
run_range(void *ctx, int64_t begin, int64_t end)
{
    launch *l = ctx;
    if (!__atomic_load_n(&l->pub.failed, __ATOMIC_RELAXED)) {
        l->body(begin, end, l->params, &l->pub);
    }
}

/* Stores an estimate of ns per trip (times 256; 0: unknown) with the trip counts
 * that the launch's choices compare against, each threshold / estimate rounded down
 * as the choices' own divisions were. The thresholds go first and the estimate
 * publishes them (release; readers acquire it): a launch that sees an estimate sees
 * its thresholds or a later estimate's, never none. */
static void
set_estimate(tack__cpu_kernel *k, uint64_t q8)
{
    if (q8) {
        atomic_store_explicit(&k->parallel_trips, (uint64_t)PARALLEL_MIN_NS * 256u / q8,
                              memory_order_relaxed);
        atomic_store_explicit(&k->timed_trips, (uint64_t)PARALLEL_MIN_NS * 16u / q8,
                              memory_order_relaxed);
        atomic_store_explicit(&k->short_trips,
                              (uint64_t)TACK_KERNEL_SHORT_LAUNCH_NS * 256u / q8,
                              memory_order_relaxed);
    }
    atomic_store_explicit(&k->trip_ns_q8, q8, memory_order_release);
}

/* The estimate, and with it (when non-zero) its thresholds. */
static uint64_t
estimate(tack__cpu_kernel *k)
{
    return atomic_load_explicit(&k->trip_ns_q8, memory_order_acquire);
}

/*
 * Folds one measurement (ns for trips) into the kernel's cost per trip. Noise in a
 * measurement is one-sided: a thread the OS deschedules, or one that waits on a
 * cache line, only ever looks slower than the kernel is. So the estimate falls
 * quickly (three quarters of the way to a lower sample: a few tiny launches bring
 * an inflated estimate back to the truth) and rises slowly (a quarter of the way,
 * to at most twice the old value: one stalled launch cannot send tiny launches to
 * the pool). A measurement that may be disturbed (may_raise false) only ever
 * lowers the estimate.
 */
static void
update_estimate(tack__cpu_kernel *k, int64_t trips, uint64_t ns, bool may_raise)
{
    if (trips <= 0) {
        return;
    }
    uint64_t sample = ns * 256u / (uint64_t)trips;
    if (sample == 0) {
        sample = 1;
    }
    uint64_t old = atomic_load_explicit(&k->trip_ns_q8, memory_order_relaxed);
    uint64_t next;
    if (!may_raise && (!old || sample > old)) {
        return;
    }
    if (!old) {
        next = sample;
    }
    else if (sample <= old) {
        next = (old + 3 * sample) / 4;
    }
    else {
        next = (3 * old + (sample > 2 * old ? 2 * old : sample)) / 4;
    }
    set_estimate(k, next ? next : 1);
}

/* Whether n trips are worth waking the pool for (the kernel's measured cost). */
static bool
worth_parallel(tack__cpu_kernel *k, int64_t n, int threads)
{
    if (threads < 2 || n < 2) {
        return false;
    }
    if (estimate(k) == 0) {
        /* Unknown cost: a launch of a chunk or so per thread measures itself
         * serially; a big one is worth the pool whatever its cost. */
        return n >= (int64_t)threads * CHUNKS_PER_THREAD;
    }
    /* n * per_trip / 256 >= PARALLEL_MIN_NS, without overflow */
    return (uint64_t)n >=
           atomic_load_explicit(&k->parallel_trips, memory_order_relaxed);
}

/* Whether a serial launch of n trips measures itself: always while the cost is
 * unknown or the launch is within a sixteenth of the parallel threshold; one in
 * TIME_EVERY otherwise; never where the pool cannot help (one thread, one trip). */
static bool
worth_timing(tack__cpu_kernel *k, int64_t n, int threads)
{
    if (threads < 2 || n < 2) {
        return false;
    }
    /* n * per_trip / 256 >= PARALLEL_MIN_NS / 16, without overflow */
    if (estimate(k) == 0 ||
        (uint64_t)n >= atomic_load_explicit(&k->timed_trips, memory_order_relaxed)) {
        return true;
    }
    /* A load and a store, not a locked increment (a fifth of a tiny launch): two
     * threads launching at once may count one launch between them, which only
     * moves the next timed launch by one. */
    uint32_t seen = atomic_load_explicit(&k->untimed, memory_order_relaxed);
    atomic_store_explicit(&k->untimed, seen + 1, memory_order_relaxed);
    return seen % TIME_EVERY == TIME_EVERY - 1;
}

/* Runs trips [0, n), n > 0: on the pool when worth it, else on this thread. With
 * fixed_chunk > 0 (a reduction) every body call covers exactly one chunk. */
static void
run_trips(launch *l, int64_t n, int64_t fixed_chunk, int threads)
{
    tack__cpu_kernel *k = l->kernel;
    if (worth_parallel(k, n, threads)) {
        int64_t chunk =
            fixed_chunk ? fixed_chunk : n / ((int64_t)threads * CHUNKS_PER_THREAD);
        int64_t mine = 0;
        uint64_t mine_ns = 0;
        if (tack__pool_run(n, chunk, run_range, l, &mine, &mine_ns)) {
            /* The calling thread's own share, timed without the workers' wake-up.
             * A caller that did under half its fair share was held up (the workers
             * took its trips meanwhile): its time says more about the OS than
             * about the kernel. It may lower the estimate; otherwise the estimate
             * is forgotten, so that the next launch small enough to run on this
             * thread measures itself instead of trusting a disturbed sample (a
             * caller that got no trip at all could otherwise never correct it). */
            /* mine * 2 * threads >= n, without overflow for n near INT64_MAX */
            int64_t halves = 2 * (int64_t)threads;
            bool fair = mine >= n / halves + (n % halves != 0);
            uint64_t old = estimate(k);
            if (fair || (mine > 0 && mine_ns * 256u / (uint64_t)mine < old)) {
                update_estimate(k, mine, mine_ns, fair);
            }
            else {
                set_estimate(k, 0);
            }
            atomic_fetch_add_explicit(&tack__stat_parallel, 1, memory_order_relaxed);
            return;
        }
    }
    if (k->body_serial) {
        /* one thread: no other chunk updates the arrays, plain updates suffice */
        l->body = k->body_serial;
        atomic_fetch_add_explicit(&tack__stat_plain_atomic, 1, memory_order_relaxed);
    }
    bool timed = worth_timing(k, n, threads);
    uint64_t t0 = timed ? tack__now_ns() : 0;
    int64_t step = fixed_chunk ? fixed_chunk : n;
    for (int64_t begin = 0; begin < n;) {
        int64_t end = n - begin < step ? n : begin + step; /* never past n */
        run_range(l, begin, end);
        begin = end;
    }
    if (timed) {
        update_estimate(k, n, tack__now_ns() - t0, true);
    }
    atomic_fetch_add_explicit(&tack__stat_serial, 1, memory_order_relaxed);
}

/* Whether n trips are short enough to run with the caller's lock held: known cost,
 * serial (not worth the pool), under TACK_KERNEL_SHORT_LAUNCH_NS. A serial kernel
 * (n < 0) has no trip count to predict from. */
static bool
is_short(tack__cpu_kernel *k, int64_t n, int threads)
{
    if (n < 0 || estimate(k) == 0) {
        return false;
    }
    /* n * per_trip / 256 < TACK_KERNEL_SHORT_LAUNCH_NS, without overflow */
    return (uint64_t)n < atomic_load_explicit(&k->short_trips, memory_order_relaxed) &&
           !worth_parallel(k, n, threads);
}

/* The launch proper, over l's parameter block; the returned value is left in
 * l->pub, a debug-mode failure in l->failure (not an error here). *released says
 * whether the caller's lock is dropped; run drops it for a launch that is not
 * short, and the caller takes it back. */
static tack_status
run(launch *l, bool *released)
{
    tack__cpu_kernel *k = l->kernel;
    int64_t n = k->trips(l->params, &l->pub);
    if (__atomic_load_n(&l->pub.failed, __ATOMIC_ACQUIRE)) {
        return TACK_OK;
    }
    int64_t nchunks = 0;
    if (n > 0 && k->partial_size > 0) {
        /* rounded up without n + divisor - 1, which overflows near INT64_MAX */
        l->pub.chunk = n / REDUCE_CHUNKS + (n % REDUCE_CHUNKS != 0);
        nchunks = n / l->pub.chunk + (n % l->pub.chunk != 0);
        /* nchunks <= REDUCE_CHUNKS and partial_size <= TACK_KERNEL_MAX_PARTIAL_SIZE: no
         * overflow */
        l->pub.partials = tack__calloc((size_t)nchunks * (size_t)k->partial_size);
        if (!l->pub.partials) {
            return tack__fail(TACK_ERR_NO_MEMORY,
                              "out of memory for the partials of kernel '%s'", k->name);
        }
    }
    /* Asked once per launch, and only where there are trips to share: the first
     * such launch starts the pool. */
    int threads = n > 0 ? tack__pool_threads() : 1;
    bool short_launch = is_short(k, n, threads);
    atomic_store_explicit(&k->last_short, short_launch, memory_order_relaxed);
    if (!short_launch && !*released) {
        *released = tack__caller_lock_release();
    }
    if (n < 0) {
        l->body(0, 1, l->params, &l->pub);
        atomic_fetch_add_explicit(&tack__stat_serial, 1, memory_order_relaxed);
        if (k->atomics) { /* a serial kernel's atomics are plain updates */
            atomic_fetch_add_explicit(&tack__stat_plain_atomic, 1,
                                      memory_order_relaxed);
        }
    }
    else if (n > 0) {
        run_trips(l, n, l->pub.chunk, threads);
    }
    if (__atomic_load_n(&l->pub.privatized, __ATOMIC_RELAXED)) {
        atomic_fetch_add_explicit(&tack__stat_privatized, 1, memory_order_relaxed);
    }
    if (k->finish && n >= 0 && !__atomic_load_n(&l->pub.failed, __ATOMIC_ACQUIRE)) {
        k->finish(l->params, &l->pub, nchunks);
    }
    tack__free(l->pub.partials);
    l->pub.partials = NULL;
    return TACK_OK;
}

tack_status
tack__cpu_kernel_run(tack_kernel *kernel, const void *params, unsigned flags,
                     tack_kernel_value *result, tack__kernel_failure *failure)
{
    tack__cpu_kernel *k = kernel->impl;
    launch l;
    launch_init(&l, k, params);
    if ((flags & TACK_KERNEL_NOALIAS) && k->body_restrict) {
        l.body = k->body_restrict;
        atomic_fetch_add_explicit(&tack__stat_restrict, 1, memory_order_relaxed);
    }
    /* The trip count's setup runs with the caller's lock held only when the last
     * launch was short (its cost, setup included, is in the estimate). */
    bool released = !atomic_load_explicit(&k->last_short, memory_order_relaxed) &&
                    tack__caller_lock_release();
    tack_status st = run(&l, &released);
    tack__caller_lock_reacquire(released);
    *failure = l.failure;
    if (st == TACK_OK) {
        result->kind = (tack_kernel_result_kind)kernel->result_kind;
        result->i = l.pub.result_i;
        result->f = l.pub.result_f;
    }
    return st;
}

tack_status
tack__cpu_kernel_trips(tack_kernel *kernel, const void *params, int64_t *trips)
{
    tack__cpu_kernel *k = kernel->impl;
    launch l;
    launch_init(&l, k, params);
    int64_t n = k->trips(params, &l.pub);
    if (__atomic_load_n(&l.pub.failed, __ATOMIC_ACQUIRE)) {
        return tack__kernel_failure_status(kernel, &l.failure);
    }
    *trips = n;
    return TACK_OK;
}

/* The CPU backend's kernel_launch slot (backend.h): kernel.c checked k and packed
 * the parameter block. */
tack_status
tack__cpu_kernel_launch(void *state, tack_kernel *kernel, const void *params,
                        size_t params_nbytes, unsigned flags, tack_kernel_value *result)
{
    (void)state; /* every CPU device runs kernels alike */
    (void)params_nbytes;
    tack__kernel_failure failure;
    tack_kernel_value value;
    tack_status st = tack__cpu_kernel_run(kernel, params, flags, &value, &failure);
    if (st == TACK_OK && failure.failed) {
        st = tack__kernel_failure_status(kernel, &failure);
    }
    if (st == TACK_OK) {
        *result = value;
    }
    return st;
}
