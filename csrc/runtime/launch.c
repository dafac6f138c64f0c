/*
 * launch.c: the checks before a launch and the launch itself.
 *
 * A launch asks the kernel for the trip count of its parallel loop, then either
 * runs the whole range on the calling thread or splits it over the thread pool.
 * Waking workers costs microseconds, so the choice uses the kernel's measured cost
 * per trip: a launch predicted to take less than PARALLEL_MIN_NS of serial work
 * stays on the calling thread (this keeps a 16-element launch well under a
 * microsecond). The estimate is refreshed on every launch, from the calling
 * thread's own share of the work when running in parallel, so worker wake-up time
 * never inflates it.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Below this much predicted serial work a launch stays on the calling thread. */
#define PARALLEL_MIN_NS 20000u
/* Chunks per thread: enough to balance uneven trips, few enough to keep each chunk
 * long and contiguous for the vectoriser. */
#define CHUNKS_PER_THREAD 32

_Atomic uint64_t tack__stat_parallel, tack__stat_serial, tack__stat_restrict;

/* ---- checks --------------------------------------------------------------------- */

tack_status
tack_kernel_check_arrays(const char *kernel_name, int nparams,
                         const tack_array *const *arrays,
                         const char *const *param_names, const bool *stored)
{
    const tack_device *first = NULL;
    int first_k = -1;
    for (int k = 0; k < nparams; k++) {
        const tack_array *a = arrays[k];
        if (!a) {
            continue;
        }
        const tack_device *dev = a->buffer->device;
        if (strcmp(dev->backend->name, "cpu") != 0) {
            return tack__fail(TACK_ERR_DEVICE_MISMATCH,
                              "kernel '%s': parameter '%s' is an array on %s:%d, but "
                              "kernels run on the CPU here; copy it with "
                              "a.to_device('cpu')",
                              kernel_name, param_names[k], dev->backend->name,
                              dev->ordinal);
        }
        if (!first) {
            first = dev;
            first_k = k;
        }
        else if (dev->memory_domain != first->memory_domain) {
            return tack__fail(TACK_ERR_DEVICE_MISMATCH,
                              "kernel '%s': parameters '%s' and '%s' are arrays of "
                              "different memory domains; copy one to the other's "
                              "device first",
                              kernel_name, param_names[first_k], param_names[k]);
        }
        if (stored[k] && !a->writable) {
            return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                              "kernel '%s' may store to parameter '%s', but the array "
                              "passed for it is read-only; pass a writable array "
                              "(tack.array(x) makes a writable copy)",
                              kernel_name, param_names[k]);
        }
    }
    return TACK_OK;
}

static bool
overlap(const tack_array *a, const tack_array *b)
{
    size_t na = tack_array_nbytes(a), nb = tack_array_nbytes(b);
    if (na == 0 || nb == 0) {
        return false;
    }
    uintptr_t pa = (uintptr_t)tack_array_data(a), pb = (uintptr_t)tack_array_data(b);
    return pa < pb + nb && pb < pa + na;
}

bool
tack_kernel_args_disjoint(int nparams, const tack_array *const *arrays,
                          const bool *stored)
{
    for (int k = 0; k < nparams; k++) {
        if (!arrays[k] || !stored[k]) {
            continue;
        }
        for (int j = 0; j < nparams; j++) {
            if (j != k && arrays[j] && overlap(arrays[k], arrays[j])) {
                return false;
            }
        }
    }
    return true;
}

/* ---- failures from generated code ------------------------------------------- */

typedef struct launch {
    tack_kernel_ctx pub; /* first: generated code sees only this */
    atomic_int claimed;
    int why, line, axis;
    int64_t index, extent;
    const char *name;
    tack_kernel *kernel;
    tack__body_fn body; /* the kernel's body or its restrict body */
    const tack_kernel_arg *args;
} launch;

static void
record_failure(tack_kernel_ctx *ctx, int why, int line, int axis, int64_t index,
               int64_t extent, const char *name)
{
    launch *l = (launch *)ctx;
    if (atomic_exchange(&l->claimed, 1) == 0) {
        l->why = why;
        l->line = line;
        l->axis = axis;
        l->index = index;
        l->extent = extent;
        l->name = name;
        __atomic_store_n(&ctx->failed, 1, __ATOMIC_RELEASE);
    }
}

static tack_status
report(const launch *l)
{
    const tack_kernel *k = l->kernel;
    if (l->why == TACK_KERNEL_FAIL_ZERO_DIVISION) {
        return tack__fail(TACK_ERR_ZERO_DIVISION,
                          "integer division or modulo by zero in kernel '%s' (%s, "
                          "line %d)",
                          k->name, k->filename, l->line);
    }
    return tack__fail(TACK_ERR_INDEX,
                      "index %lld is out of bounds for axis %d of '%s' with size %lld "
                      "in kernel '%s' (%s, line %d)",
                      (long long)l->index, l->axis, l->name ? l->name : "?",
                      (long long)l->extent, k->name, k->filename, l->line);
}

/* ---- launch --------------------------------------------------------------------- */

static void
run_range(void *ctx, int64_t begin, int64_t end)
{
    launch *l = ctx;
    if (!__atomic_load_n(&l->pub.failed, __ATOMIC_RELAXED)) {
        l->body(begin, end, l->args, &l->pub);
    }
}

static void
update_estimate(tack_kernel *k, int64_t trips, uint64_t ns)
{
    if (trips <= 0) {
        return;
    }
    uint64_t sample = ns * 256u / (uint64_t)trips;
    if (sample == 0) {
        sample = 1;
    }
    uint64_t old = atomic_load_explicit(&k->trip_ns_q8, memory_order_relaxed);
    /* A launch preempted by the OS looks thousands of times slower than it is; one
     * such sample may at most double-ish the estimate, so a stray spike never sends
     * tiny launches to the pool for long. */
    if (old && sample > 4 * old) {
        sample = 4 * old;
    }
    uint64_t next = old ? (old * 3 + sample) / 4 : sample;
    atomic_store_explicit(&k->trip_ns_q8, next ? next : 1, memory_order_relaxed);
}

tack_status
tack_kernel_launch(tack_kernel *k, const tack_kernel_arg *args)
{
    return tack_kernel_launch_flags(k, args, 0);
}

tack_status
tack_kernel_launch_flags(tack_kernel *k, const tack_kernel_arg *args, unsigned flags)
{
    launch l;
    memset(&l, 0, sizeof l);
    l.pub.fail = record_failure;
    atomic_init(&l.claimed, 0);
    l.kernel = k;
    l.body =
        (flags & TACK_KERNEL_NOALIAS) && k->body_restrict ? k->body_restrict : k->body;
    l.args = args;
    if (l.body != k->body) {
        atomic_fetch_add_explicit(&tack__stat_restrict, 1, memory_order_relaxed);
    }

    int64_t n = k->trips(args, &l.pub);
    if (__atomic_load_n(&l.pub.failed, __ATOMIC_ACQUIRE)) {
        return report(&l);
    }
    if (n < 0) {
        l.body(0, 1, args, &l.pub);
        atomic_fetch_add_explicit(&tack__stat_serial, 1, memory_order_relaxed);
    }
    else if (n > 0) {
        int threads = tack__pool_threads();
        uint64_t per_trip = atomic_load_explicit(&k->trip_ns_q8, memory_order_relaxed);
        bool parallel;
        if (threads < 2 || n < 2) {
            parallel = false;
        }
        else if (per_trip == 0) {
            parallel = n >= 2 * (int64_t)threads;
        }
        else {
            /* n * per_trip / 256 >= PARALLEL_MIN_NS, without overflow */
            parallel = (uint64_t)n >= (uint64_t)PARALLEL_MIN_NS * 256u / per_trip;
        }
        bool ran = false;
        if (parallel) {
            int64_t chunk = n / ((int64_t)threads * CHUNKS_PER_THREAD);
            int64_t mine = 0;
            uint64_t mine_ns = 0;
            ran = tack__pool_run(n, chunk, run_range, &l, &mine, &mine_ns);
            if (ran) {
                update_estimate(k, mine, mine_ns);
                atomic_fetch_add_explicit(&tack__stat_parallel, 1,
                                          memory_order_relaxed);
            }
        }
        if (!ran) {
            uint64_t t0 = tack__now_ns();
            l.body(0, n, args, &l.pub);
            update_estimate(k, n, tack__now_ns() - t0);
            atomic_fetch_add_explicit(&tack__stat_serial, 1, memory_order_relaxed);
        }
    }
    return __atomic_load_n(&l.pub.failed, __ATOMIC_ACQUIRE) ? report(&l) : TACK_OK;
}
