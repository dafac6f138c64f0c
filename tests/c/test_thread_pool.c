/*
 * test_thread_pool.c: the persistent pool that runs a kernel's parallel loop.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "harness.h"
#include "internal.h"

enum { N = 100003 };

typedef struct {
    atomic_int hits[N];
    atomic_int nested_refused;
} visit_ctx;

static void
visit(void *ctx, int64_t begin, int64_t end)
{
    visit_ctx *v = ctx;
    for (int64_t i = begin; i < end; i++) {
        atomic_fetch_add(&v->hits[i], 1);
    }
}

TACK_TEST(pool_size_follows_tack_num_threads)
{
    setenv("TACK_NUM_THREADS", "3", 1);
    CHECK_EQ_INT(tack_kernel_num_threads(), 3);
}

TACK_TEST(pool_runs_every_trip_exactly_once)
{
    setenv("TACK_NUM_THREADS", "4", 1);
    visit_ctx *v = calloc(1, sizeof *v);
    CHECK(v != NULL);
    for (int round = 0; round < 20; round++) {
        int64_t mine = -1;
        uint64_t ns = 0;
        CHECK(tack__pool_run(N, 1 + round * 97, visit, v, &mine, &ns));
        CHECK(mine >= 0 && mine <= N);
    }
    for (int64_t i = 0; i < N; i++) {
        CHECK_EQ_INT(atomic_load(&v->hits[i]), 20);
    }
    free(v);
}

static void
nested(void *ctx, int64_t begin, int64_t end)
{
    visit_ctx *v = ctx;
    int64_t mine;
    uint64_t ns;
    /* The pool is busy with this very job: a nested run must refuse, not wait. */
    if (!tack__pool_run(4, 1, visit, v, &mine, &ns)) {
        atomic_fetch_add(&v->nested_refused, 1);
    }
    (void)begin;
    (void)end;
}

TACK_TEST(pool_refuses_a_nested_run_instead_of_deadlocking)
{
    setenv("TACK_NUM_THREADS", "2", 1);
    visit_ctx *v = calloc(1, sizeof *v);
    CHECK(v != NULL);
    int64_t mine;
    uint64_t ns;
    CHECK(tack__pool_run(8, 1, nested, v, &mine, &ns));
    CHECK_EQ_INT(atomic_load(&v->nested_refused), 8);
    free(v);
}

TACK_TEST(single_thread_pool_leaves_the_work_to_the_caller)
{
    setenv("TACK_NUM_THREADS", "1", 1);
    int64_t mine;
    uint64_t ns;
    CHECK(!tack__pool_run(100, 1, visit, NULL, &mine, &ns));
    CHECK_EQ_INT(tack__pool_threads(), 1);
}

typedef struct {
    atomic_int_fast64_t calls, trips;
} count_ctx;

static void
count(void *ctx, int64_t begin, int64_t end)
{
    count_ctx *c = ctx;
    atomic_fetch_add(&c->calls, 1);
    atomic_fetch_add(&c->trips, end - begin);
}

TACK_TEST(pool_hands_out_a_range_ending_at_int64_max_once)
{
    /* The last chunks of such a range end at INT64_MAX: handing out the next one
     * must not overflow the shared counter into a negative start (which would hand
     * the range out again, forever). The callback does no per-trip work. */
    setenv("TACK_NUM_THREADS", "2", 1);
    const int64_t n = INT64_MAX, chunk = INT64_MAX / 5;
    count_ctx c;
    atomic_init(&c.calls, 0);
    atomic_init(&c.trips, 0);
    int64_t mine = -1;
    uint64_t ns = 0;
    CHECK(tack__pool_run(n, chunk, count, &c, &mine, &ns));
    CHECK_EQ_INT(atomic_load(&c.calls), 6); /* 5 whole chunks and a remainder */
    CHECK_EQ_INT(atomic_load(&c.trips), n);
    CHECK(mine >= 0 && mine <= n);
}

enum { ORDER_TRIPS = 64, ORDER_MAX_CALLS = ORDER_TRIPS + 1 };

typedef struct {
    pthread_t caller;
    atomic_int_fast64_t caller_trips;
    int64_t caller_begin[ORDER_MAX_CALLS], caller_end[ORDER_MAX_CALLS];
    int caller_calls;                 /* only the calling thread writes these */
    atomic_int_fast64_t worker_begin; /* the one chunk the worker ran, or -1 */
    atomic_int worker_calls;
} order_ctx;

/* The calling thread records its ranges in order. The worker holds on to its first
 * chunk until the calling thread has run every other trip (or 10 s have passed, so
 * that a broken pool fails the checks instead of hanging), as a worker the OS keeps
 * off a core would. */
static void
record_order(void *ctx, int64_t begin, int64_t end)
{
    order_ctx *o = ctx;
    if (pthread_equal(pthread_self(), o->caller)) {
        if (o->caller_calls < ORDER_MAX_CALLS) {
            o->caller_begin[o->caller_calls] = begin;
            o->caller_end[o->caller_calls] = end;
        }
        o->caller_calls++;
        atomic_fetch_add(&o->caller_trips, end - begin);
        return;
    }
    if (atomic_fetch_add(&o->worker_calls, 1) == 0) {
        atomic_store(&o->worker_begin, begin);
        uint64_t t0 = tack__now_ns();
        while (atomic_load(&o->caller_trips) < ORDER_TRIPS - (end - begin) &&
               tack__now_ns() - t0 < 10000000000u) {
            sched_yield();
        }
    }
}

TACK_TEST(pool_runs_each_threads_block_in_order_and_takes_a_held_up_ones)
{
    /* Two threads, chunks of one trip: the calling thread's block is [0, 32), the
     * worker's [32, 64). The calling thread runs its block in order, then every
     * chunk of the worker's that the held-up worker has not taken, in order. */
    setenv("TACK_NUM_THREADS", "2", 1);
    CHECK_EQ_INT(tack__pool_threads(), 2);
    order_ctx *o = calloc(1, sizeof *o);
    CHECK(o != NULL);
    o->caller = pthread_self();
    atomic_init(&o->caller_trips, 0);
    atomic_init(&o->worker_begin, -1);
    atomic_init(&o->worker_calls, 0);
    int64_t mine = -1;
    uint64_t ns = 0;
    CHECK(tack__pool_run(ORDER_TRIPS, 1, record_order, o, &mine, &ns));
    int64_t held = atomic_load(&o->worker_begin);
    CHECK(atomic_load(&o->worker_calls) <= 1);
    CHECK(held == -1 || held >= ORDER_TRIPS / 2); /* the worker's own block first */
    CHECK_EQ_INT(mine, ORDER_TRIPS - (held == -1 ? 0 : 1));
    CHECK_EQ_INT(o->caller_calls, mine);
    int64_t next = 0;
    for (int c = 0; c < o->caller_calls && c < ORDER_MAX_CALLS; c++) {
        if (next == held) {
            next++;
        }
        CHECK_EQ_INT(o->caller_begin[c], next);
        CHECK_EQ_INT(o->caller_end[c], next + 1);
        next++;
    }
    free(o);
}

typedef struct {
    int64_t n, chunk;
    atomic_int hits[64];
    atomic_int misaligned;
} aligned_ctx;

static void
visit_aligned(void *ctx, int64_t begin, int64_t end)
{
    aligned_ctx *a = ctx;
    /* exactly one chunk, the one at a multiple of the chunk size (short at n) */
    if (begin % a->chunk != 0 ||
        end != (a->n - begin < a->chunk ? a->n : begin + a->chunk)) {
        atomic_fetch_add(&a->misaligned, 1);
    }
    for (int64_t i = begin; i < end; i++) {
        atomic_fetch_add(&a->hits[i], 1);
    }
}

TACK_TEST(pool_blocks_cover_short_jobs_with_more_threads_than_chunks)
{
    /* Seven threads over jobs of 1 to 64 trips: some blocks are empty, the last
     * chunk may be short, and every range still starts at a multiple of the chunk. */
    setenv("TACK_NUM_THREADS", "7", 1);
    CHECK_EQ_INT(tack__pool_threads(), 7);
    for (int64_t n = 1; n <= 64; n += 3) {
        for (int64_t chunk = 1; chunk <= 5; chunk++) {
            aligned_ctx *a = calloc(1, sizeof *a);
            CHECK(a != NULL);
            a->n = n;
            a->chunk = chunk;
            int64_t mine = -1;
            uint64_t ns = 0;
            CHECK(tack__pool_run(n, chunk, visit_aligned, a, &mine, &ns));
            CHECK(mine >= 0 && mine <= n);
            CHECK_EQ_INT(atomic_load(&a->misaligned), 0);
            for (int64_t i = 0; i < 64; i++) {
                CHECK_EQ_INT(atomic_load(&a->hits[i]), i < n ? 1 : 0);
            }
            free(a);
        }
    }
}
