/*
 * test_thread_pool.c: the persistent pool that runs a kernel's parallel loop.
 */
#define _GNU_SOURCE
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
