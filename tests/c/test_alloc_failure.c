/*
 * test_alloc_failure.c: every allocating API, with the k-th allocation made to fail
 * for every k until the call succeeds: each failure must return TACK_ERR_NO_MEMORY,
 * write no out-parameter and leave zero allocations behind.
 */
#include "harness.h"

typedef tack_status (*alloc_case)(tack_device *dev, void **made);
typedef void (*free_case)(void *made);

typedef struct sweep_case {
    alloc_case run;
    free_case release;
    tack_device *dev;
} sweep_case;

static tack_status
attempt(void *ctx)
{
    const sweep_case *c = ctx;
    void *made = NULL;
    tack_status st = c->run(c->dev, &made);
    if (st == TACK_OK) {
        CHECK(made != NULL);
        c->release(made);
        CHECK_EQ_INT(tack_test_live_allocations(), 0);
    }
    else {
        CHECK(made == NULL);
    }
    return st;
}

static void
sweep(alloc_case run, free_case release)
{
    sweep_case c = {run, release, NULL};
    /* The registry device is made once and lives forever; make it before counting. */
    CHECK_OK(tack_device_open("cpu", 0, NULL, &c.dev));
    tack_test_alloc_sweep(attempt, &c);
}

static void
free_array(void *made)
{
    tack_array_release(made);
}

static void
free_buffer(void *made)
{
    tack_buffer_release(made);
}

static tack_status
run_empty(tack_device *dev, void **made)
{
    int64_t s[] = {16, 4};
    return tack_array_empty(dev, TACK_FLOAT32, 2, s, TACK_BUFFER_WRITABLE,
                            (tack_array **)made);
}

static tack_status
run_zeros(tack_device *dev, void **made)
{
    int64_t s[] = {8};
    return tack_array_zeros(dev, TACK_VEC3F, 1, s, TACK_BUFFER_WRITABLE,
                            (tack_array **)made);
}

static tack_status
run_buffer_new(tack_device *dev, void **made)
{
    return tack_buffer_new(dev, 100, TACK_BUFFER_WRITABLE, (tack_buffer **)made);
}

static int wrap_releases;
static void
wrap_release(void *ctx)
{
    (void)ctx;
    wrap_releases++;
}

static tack_status
run_buffer_wrap(tack_device *dev, void **made)
{
    static char memory[16];
    int before = wrap_releases;
    tack_status st = tack_buffer_wrap(dev, memory, sizeof memory, 0, wrap_release, NULL,
                                      (tack_buffer **)made);
    /* The release obligation is consumed on failure: it ran exactly once. */
    CHECK_EQ_INT(wrap_releases - before, st == TACK_OK ? 0 : 1);
    return st;
}

static tack_array *base_array;

static tack_status
run_reshape(tack_device *dev, void **made)
{
    (void)dev;
    int64_t s[] = {2, 2};
    return tack_array_reshape(base_array, 2, s, (tack_array **)made);
}

static tack_status
run_to_device(tack_device *dev, void **made)
{
    return tack_array_to_device(base_array, dev, (tack_array **)made);
}

static tack_status
run_to_device_on_stream(tack_device *dev, void **made)
{
    return tack_array_to_device_on_stream(base_array, dev, -1, (tack_array **)made);
}

static tack_status
run_copyto_between_dtypes(tack_device *dev, void **made)
{
    int64_t s[] = {4};
    tack_array *dst;
    tack_status st = tack_array_empty(dev, TACK_INT8, 1, s, TACK_BUFFER_WRITABLE, &dst);
    if (st != TACK_OK) {
        return st;
    }
    st = tack_array_copyto(dst, base_array);
    if (st != TACK_OK) {
        tack_array_release(dst);
        return st;
    }
    *made = dst;
    return TACK_OK;
}

TACK_TEST(alloc_failure_empty)
{
    sweep(run_empty, free_array);
}

TACK_TEST(alloc_failure_zeros)
{
    sweep(run_zeros, free_array);
}

TACK_TEST(alloc_failure_buffer_new)
{
    sweep(run_buffer_new, free_buffer);
}

TACK_TEST(alloc_failure_buffer_wrap_releases_once)
{
    sweep(run_buffer_wrap, free_buffer);
}

static void
with_base_array(alloc_case run)
{
    tack_device *dev;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &dev));
    int64_t s[] = {4};
    CHECK_OK(
        tack_array_zeros(dev, TACK_FLOAT32, 1, s, TACK_BUFFER_WRITABLE, &base_array));
    /* base_array was made with the default allocator; it is freed the same way. */
    tack_array *keep = base_array;
    sweep(run, free_array);
    tack_array_release(keep);
}

TACK_TEST(alloc_failure_reshape)
{
    with_base_array(run_reshape);
}

TACK_TEST(alloc_failure_to_device)
{
    with_base_array(run_to_device);
}

TACK_TEST(alloc_failure_to_device_on_stream)
{
    with_base_array(run_to_device_on_stream);
}

TACK_TEST(alloc_failure_copyto_cross_device_staging)
{
    with_base_array(run_copyto_between_dtypes);
}
