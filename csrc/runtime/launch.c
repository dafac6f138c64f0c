/*
 * launch.c: the checks before a launch, the specialization key, the parameter
 * block, and the CPU backend's kernel_launch slot (kernel.c dispatches to it).
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
 * whose trips grew dearer reach the pool; with one thread nothing is timed.
 */
#include <dlfcn.h>
#include <stdio.h>
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
/* Partial sizes beyond this are not a kernel's (a corrupt constant). */

_Atomic uint64_t tack__stat_parallel, tack__stat_serial, tack__stat_restrict,
    tack__stat_plain_atomic, tack__stat_privatized;

/* ---- checks --------------------------------------------------------------------- */

tack_status
tack_kernel_check_arrays(const char *kernel_name, int nparams,
                         const tack_array *const *arrays,
                         const char *const *param_names, const bool *stored)
{
    TACK__CHECK_ARG(kernel_name);
    if (nparams < 0 || nparams > TACK_KERNEL_MAX_PARAMS) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': %d parameters; a kernel has 0 to %d",
                          kernel_name, nparams, TACK_KERNEL_MAX_PARAMS);
    }
    if (nparams > 0) {
        TACK__CHECK_ARG(arrays);
        TACK__CHECK_ARG(param_names);
        TACK__CHECK_ARG(stored);
    }
    const tack_device *first = NULL;
    int first_k = -1;
    for (int k = 0; k < nparams; k++) {
        const tack_array *a = arrays[k];
        if (!a) {
            continue;
        }
        if (TACK__UNLIKELY(
                atomic_load_explicit(&a->buffer->reclaimed, memory_order_relaxed))) {
            char what[128];
            (void)snprintf(what, sizeof what, "kernel '%.60s', parameter '%.40s'",
                           kernel_name, param_names[k]);
            return tack__array_reclaimed(a, what);
        }
        const tack_device *dev = a->buffer->device;
        if (!TACK__BACKEND_SLOT(dev->backend, kernel_build) ||
            !TACK__BACKEND_SLOT(dev->backend, kernel_launch)) {
            return tack__fail_remedy(TACK_ERR_DEVICE_MISMATCH, TACK_REMEDY_TO_CPU,
                                     "kernel '%s': parameter '%s' is an array on "
                                     "%s:%d, but this build of Tack runs no kernels "
                                     "on the %s backend",
                                     kernel_name, param_names[k], dev->backend->name,
                                     dev->ordinal, dev->backend->name);
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
            return tack__fail_remedy(TACK_ERR_INVALID_ARGUMENT,
                                     TACK_REMEDY_WRITABLE_COPY,
                                     "kernel '%s' may store to parameter '%s', but the "
                                     "array passed for it is read-only",
                                     kernel_name, param_names[k]);
        }
    }
    return TACK_OK;
}

/* ---- the specialization key --------------------------------------------------- */

uint32_t
tack_kernel_key_array(const tack_array *array)
{
    if (!array) {
        return 0; /* the word of no argument */
    }
    return TACK_KERNEL_KEY_ARRAY | (uint32_t)array->dtype << 8 | (uint32_t)array->ndim;
}

void
tack_kernel_key_tail(int nparams, const tack_array *const *arrays, bool debug,
                     uint32_t tail[2])
{
    if (!tail) {
        return;
    }
    int backend = kDLCPU;
    for (int k = 0; arrays && k < nparams; k++) {
        if (arrays[k]) {
            backend = arrays[k]->buffer->device->backend->dlpack_device_type;
            break;
        }
    }
    tail[0] = debug;
    tail[1] = (uint32_t)backend;
}

/* ---- the parameter block -------------------------------------------------------- */

size_t
tack_kernel_params_size(int nparams, const uint32_t *key)
{
    size_t n = 0;
    for (int k = 0; key && k < nparams; k++) {
        n += 1 + ((key[k] & TACK_KERNEL_KEY_ARRAY) ? (key[k] & 0xffu) : 0);
    }
    return n * 8;
}

void
tack_kernel_params_pack(int nparams, const uint32_t *key, const tack_kernel_arg *args,
                        void *block)
{
    if (!key || !args || !block) {
        return;
    }
    unsigned char *out = block;
    for (int k = 0; k < nparams; k++) {
        if (key[k] & TACK_KERNEL_KEY_ARRAY) {
            uint64_t ptr = (uint64_t)(uintptr_t)args[k].data;
            memcpy(out, &ptr, 8);
            out += 8;
            size_t ndim = key[k] & 0xffu;
            memcpy(out, args[k].shape, ndim * 8);
            out += ndim * 8;
        }
        else if (key[k] == TACK_KERNEL_KEY_FLOAT || key[k] == TACK_KERNEL_KEY_FLOAT32) {
            memcpy(out, &args[k].f, 8);
            out += 8;
        }
        else {
            memcpy(out, &args[k].i, 8);
            out += 8;
        }
    }
}

bool
tack_kernel_args_shared(int nparams, const tack_array *const *arrays)
{
    for (int k = 0; arrays && k < nparams; k++) {
        if (arrays[k] && (tack_buffer_flags(arrays[k]->buffer) & TACK_BUFFER_SHARED)) {
            return true;
        }
    }
    return false;
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
    if (nparams > 0 && (!arrays || !stored)) {
        return false; /* nothing to check: no promise */
    }
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

tack_status
tack_kernel_check_read_first(const char *kernel_name, int nparams,
                             const tack_array *const *arrays,
                             const char *const *param_names, const bool *read_first,
                             const bool *stored)
{
    TACK__CHECK_ARG(kernel_name);
    if (nparams < 0 || nparams > TACK_KERNEL_MAX_PARAMS) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': %d parameters; a kernel has 0 to %d",
                          kernel_name, nparams, TACK_KERNEL_MAX_PARAMS);
    }
    if (nparams > 0) {
        TACK__CHECK_ARG(arrays);
        TACK__CHECK_ARG(param_names);
        TACK__CHECK_ARG(read_first);
        TACK__CHECK_ARG(stored);
    }
    for (int k = 0; k < nparams; k++) {
        if (!arrays[k] || !read_first[k]) {
            continue;
        }
        for (int j = 0; j < nparams; j++) {
            if (j != k && arrays[j] && stored[j] && overlap(arrays[k], arrays[j])) {
                return tack__fail(
                    TACK_ERR_INVALID_ARGUMENT,
                    "kernel '%s' reads '%s' before its parallel loop, and '%s' "
                    "overlaps it but is stored to by the loop: every chunk of the "
                    "loop reads '%s' again and could see those stores; pass "
                    "arrays that do not overlap (a copy of '%s')",
                    kernel_name, param_names[k] ? param_names[k] : "?",
                    param_names[j] ? param_names[j] : "?",
                    param_names[k] ? param_names[k] : "?",
                    param_names[k] ? param_names[k] : "?");
            }
        }
    }
    return TACK_OK;
}

/* ---- optional entry points ------------------------------------------------------ */

void
tack__kernel_optional(tack__cpu_kernel *k, void *handle)
{
    /* POSIX guarantees that a data pointer from dlsym converts to a function. */
    void *restricted = dlsym(handle, "tack_kernel_body_restrict");
    void *finish = dlsym(handle, "tack_kernel_finish");
    void *serial = dlsym(handle, "tack_kernel_body_serial");
    memcpy(&k->body_restrict, &restricted, sizeof restricted);
    memcpy(&k->body_serial, &serial, sizeof serial);
    k->atomics = dlsym(handle, "tack_kernel_atomics") != NULL;
    memcpy(&k->finish, &finish, sizeof finish);
    k->pub.nparams = *(const int *)dlsym(handle, "tack_kernel_nparams");
    k->pub.param_key = dlsym(handle, "tack_kernel_param_key");
    k->pub.files = dlsym(handle, "tack_kernel_files");
    for (k->pub.nfiles = 0; k->pub.files && k->pub.files[k->pub.nfiles] &&
                            k->pub.nfiles < TACK_KERNEL_MAX_FILES;
         k->pub.nfiles++) {
    }
    k->pub.param_stored = dlsym(handle, "tack_kernel_param_stored");
    const int64_t *partial = dlsym(handle, "tack_kernel_partial_size");
    const int *kind = dlsym(handle, "tack_kernel_result_kind");
    k->partial_size = partial && *partial > 0 ? *partial : 0; /* bounded by jit.c */
    k->pub.result_kind =
        kind && *kind >= TACK_KERNEL_RESULT_NONE && *kind <= TACK_KERNEL_RESULT_BOOL
            ? *kind
            : TACK_KERNEL_RESULT_NONE;
}

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

tack_status
tack__kernel_failure_status(const tack_kernel *k, const tack__kernel_failure *f)
{
    /* the line word: a func's file above the shift (kernel.h) */
    int line = (int)((unsigned)f->line & ((1u << TACK_KERNEL_LINE_FILE_SHIFT) - 1));
    int file = (int)((unsigned)f->line >> TACK_KERNEL_LINE_FILE_SHIFT);
    const char *filename = file > 0 && file <= k->nfiles && k->files[file - 1]
                               ? k->files[file - 1]
                               : k->filename;
    if (f->why == TACK_KERNEL_FAIL_ZERO_DIVISION) {
        return tack__fail(TACK_ERR_ZERO_DIVISION,
                          "integer division or modulo by zero in kernel '%s' (%s, "
                          "line %d)",
                          k->name, filename, line);
    }
    return tack__fail(TACK_ERR_INDEX,
                      "index %lld is out of bounds for axis %d of '%s' with size %lld "
                      "in kernel '%s' (%s, line %d)",
                      (long long)f->index, f->axis, f->name ? f->name : "?",
                      (long long)f->extent, k->name, filename, line);
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
    atomic_store_explicit(&k->trip_ns_q8, next ? next : 1, memory_order_relaxed);
}

/* Whether n trips are worth waking the pool for (the kernel's measured cost). */
static bool
worth_parallel(tack__cpu_kernel *k, int64_t n, int threads)
{
    uint64_t per_trip = atomic_load_explicit(&k->trip_ns_q8, memory_order_relaxed);
    if (threads < 2 || n < 2) {
        return false;
    }
    if (per_trip == 0) {
        /* Unknown cost: a launch of a chunk or so per thread measures itself
         * serially; a big one is worth the pool whatever its cost. */
        return n >= (int64_t)threads * CHUNKS_PER_THREAD;
    }
    /* n * per_trip / 256 >= PARALLEL_MIN_NS, without overflow */
    return (uint64_t)n >= (uint64_t)PARALLEL_MIN_NS * 256u / per_trip;
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
    uint64_t per_trip = atomic_load_explicit(&k->trip_ns_q8, memory_order_relaxed);
    /* n * per_trip / 256 >= PARALLEL_MIN_NS / 16, without overflow */
    if (per_trip == 0 || (uint64_t)n >= (uint64_t)PARALLEL_MIN_NS * 16u / per_trip) {
        return true;
    }
    uint32_t seen = atomic_fetch_add_explicit(&k->untimed, 1, memory_order_relaxed);
    return seen % TIME_EVERY == TIME_EVERY - 1;
}

/* Runs trips [0, n), n > 0: on the pool when worth it, else on this thread. With
 * fixed_chunk > 0 (a reduction) every body call covers exactly one chunk. */
static void
run_trips(launch *l, int64_t n, int64_t fixed_chunk)
{
    tack__cpu_kernel *k = l->kernel;
    int threads = tack__pool_threads();
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
            uint64_t old = atomic_load_explicit(&k->trip_ns_q8, memory_order_relaxed);
            if (fair || (mine > 0 && mine_ns * 256u / (uint64_t)mine < old)) {
                update_estimate(k, mine, mine_ns, fair);
            }
            else {
                atomic_store_explicit(&k->trip_ns_q8, 0, memory_order_relaxed);
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
is_short(tack__cpu_kernel *k, int64_t n)
{
    uint64_t per_trip = atomic_load_explicit(&k->trip_ns_q8, memory_order_relaxed);
    if (n < 0 || per_trip == 0) {
        return false;
    }
    /* n * per_trip / 256 < TACK_KERNEL_SHORT_LAUNCH_NS, without overflow */
    return (uint64_t)n < (uint64_t)TACK_KERNEL_SHORT_LAUNCH_NS * 256u / per_trip &&
           !worth_parallel(k, n, tack__pool_threads());
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
    bool short_launch = is_short(k, n);
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
        run_trips(l, n, l->pub.chunk);
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
