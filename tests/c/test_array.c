/* test_array.c: buffers and arrays: shapes, views, fill, copies, owner kinds. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "internal.h"

static tack_device *
cpu(void)
{
    tack_device *d;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &d));
    return d;
}

TACK_TEST(shape_size_refuses_negative_and_overflowing_shapes)
{
    size_t n;
    int64_t ok[] = {3, 4};
    CHECK_OK(tack_shape_size(2, ok, 4, &n));
    CHECK_EQ_INT(n, 12);
    int64_t neg[] = {3, -1};
    CHECK_STATUS(tack_shape_size(2, neg, 4, &n), TACK_ERR_BAD_SHAPE);
    int64_t huge[] = {INT64_MAX, INT64_MAX};
    CHECK_STATUS(tack_shape_size(2, huge, 4, &n), TACK_ERR_SIZE_OVERFLOW);
    int64_t bytes[] = {INT64_MAX / 2};
    CHECK_STATUS(tack_shape_size(1, bytes, 8, &n), TACK_ERR_SIZE_OVERFLOW);
    int64_t zero[] = {0, INT64_MAX, INT64_MAX};
    CHECK_STATUS(tack_shape_size(3, zero, 4, &n), TACK_ERR_SIZE_OVERFLOW);
    int64_t zero_ok[] = {0, 5};
    CHECK_OK(tack_shape_size(2, zero_ok, 4, &n));
    CHECK_EQ_INT(n, 0);
    CHECK_STATUS(tack_shape_size(TACK_MAX_NDIM + 1, ok, 4, &n), TACK_ERR_BAD_SHAPE);
    CHECK_OK(tack_shape_size(0, NULL, 4, &n));
    CHECK_EQ_INT(n, 1);
}

TACK_TEST(arrays_of_many_dimensions_are_supported)
{
    int64_t shape[TACK_MAX_NDIM];
    for (int k = 0; k < TACK_MAX_NDIM; k++) {
        shape[k] = 1;
    }
    shape[0] = 3;
    tack_array *a;
    CHECK_OK(tack_array_zeros(cpu(), TACK_INT8, TACK_MAX_NDIM, shape,
                              TACK_BUFFER_WRITABLE, &a));
    CHECK_EQ_INT(tack_array_ndim(a), TACK_MAX_NDIM);
    CHECK_EQ_INT(tack_array_nelem(a), 3);
    tack_array_release(a);
}

TACK_TEST(zeros_fill_and_copy_out_with_conversion)
{
    int64_t shape[] = {2, 3};
    tack_array *a;
    CHECK_OK(tack_array_zeros(cpu(), TACK_FLOAT32, 2, shape, TACK_BUFFER_WRITABLE, &a));
    CHECK_EQ_INT(tack_array_nbytes(a), 24);
    CHECK_EQ_DBL(((float *)tack_array_data(a))[5], 0.0);
    double v = 2.75;
    CHECK_OK(tack_array_fill(a, &v, TACK_FLOAT64));
    int32_t out[6];
    CHECK_OK(tack_array_copy_to_host(a, out, TACK_INT32));
    for (int k = 0; k < 6; k++) {
        CHECK_EQ_INT(out[k], 2);
    }
    tack_array_release(a);
}

/* A fill stores its pattern into every element for every element size: one byte
 * with memset, 2 to 8 bytes element by element, vec3 and vec4 (12 and 16 bytes) in
 * 48-byte units of whole patterns and a tail, so counts around the units are
 * covered. 3.0 is no repeated byte in any of them but int8. */
TACK_TEST(fill_writes_every_element_of_every_dtype_whatever_the_count)
{
    tack_device *dev = cpu();
    const tack_dtype dtypes[] = {TACK_INT8,    TACK_UINT16, TACK_INT32,   TACK_FLOAT32,
                                 TACK_FLOAT64, TACK_INT64,  TACK_FLOAT16, TACK_VEC2F,
                                 TACK_VEC3F,   TACK_VEC4F};
    const int64_t counts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 255, 256, 257, 100003};
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            tack_array *a;
            int64_t shape[] = {counts[c]};
            CHECK_OK(
                tack_array_empty(dev, dtypes[t], 1, shape, TACK_BUFFER_WRITABLE, &a));
            double value = 3.0;
            CHECK_OK(tack_array_fill(a, &value, TACK_FLOAT64));
            const tack_dtype_info *info = tack_dtype_get(dtypes[t]);
            size_t ncomponents =
                (size_t)counts[c] * (size_t)info->ncomponents; /* scalars */
            double *out = malloc(ncomponents * sizeof *out);
            CHECK(out != NULL);
            CHECK_OK(tack_array_copy_to_host(a, out, TACK_FLOAT64));
            for (size_t k = 0; k < ncomponents; k++) {
                CHECK_EQ_DBL(out[k], 3.0);
            }
            free(out);
            tack_array_release(a);
        }
    }
    tack_device_release(dev);
}

TACK_TEST(vec_arrays_fill_every_component_and_copy_as_scalars)
{
    int64_t shape[] = {4};
    tack_array *a;
    CHECK_OK(tack_array_empty(cpu(), TACK_VEC3F, 1, shape, TACK_BUFFER_WRITABLE, &a));
    CHECK_EQ_INT(tack_array_nbytes(a), 48);
    float one = 1.5f;
    CHECK_OK(tack_array_fill(a, &one, TACK_FLOAT32));
    float host[12];
    CHECK_OK(tack_array_copy_to_host(a, host, TACK_FLOAT32));
    for (int k = 0; k < 12; k++) {
        CHECK_EQ_DBL(host[k], 1.5);
    }
    double src[12];
    for (int k = 0; k < 12; k++) {
        src[k] = k;
    }
    CHECK_OK(tack_array_copy_from_host(a, src, TACK_FLOAT64, 12));
    CHECK_EQ_DBL(((float *)tack_array_data(a))[11], 11.0);
    CHECK_STATUS(tack_array_copy_from_host(a, src, TACK_FLOAT64, 4),
                 TACK_ERR_BAD_SHAPE);
    tack_array_release(a);
}

TACK_TEST(reshape_is_a_view_and_checks_the_count)
{
    int64_t shape[] = {12};
    tack_array *a, *b;
    CHECK_OK(tack_array_zeros(cpu(), TACK_INT16, 1, shape, TACK_BUFFER_WRITABLE, &a));
    int64_t s2[] = {3, -1};
    CHECK_OK(tack_array_reshape(a, 2, s2, &b));
    CHECK_EQ_INT(tack_array_shape(b)[1], 4);
    CHECK(tack_array_data(a) == tack_array_data(b));
    CHECK(tack_array_buffer(a) == tack_array_buffer(b));
    int64_t bad[] = {5, 2};
    tack_array *c = NULL;
    CHECK_STATUS(tack_array_reshape(a, 2, bad, &c), TACK_ERR_BAD_SHAPE);
    CHECK(c == NULL);
    int64_t two_infer[] = {-1, -1};
    CHECK_STATUS(tack_array_reshape(a, 2, two_infer, &c), TACK_ERR_BAD_SHAPE);
    int64_t not_div[] = {5, -1};
    CHECK_STATUS(tack_array_reshape(a, 2, not_div, &c), TACK_ERR_BAD_SHAPE);
    tack_array_release(a);
    /* The view keeps the buffer alive on its own. */
    ((int16_t *)tack_array_data(b))[11] = 7;
    CHECK_EQ_INT(((int16_t *)tack_array_data(b))[11], 7);
    tack_array_release(b);
}

TACK_TEST(read_only_arrays_refuse_host_writes_and_stay_unchanged)
{
    int64_t shape[] = {4};
    tack_array *a, *ro;
    CHECK_OK(tack_array_zeros(cpu(), TACK_INT32, 1, shape, TACK_BUFFER_WRITABLE, &a));
    CHECK_OK(tack_array_readonly_view(a, &ro));
    CHECK(!tack_array_writable(ro));
    int32_t v = 5;
    CHECK_STATUS(tack_array_fill(ro, &v, TACK_INT32), TACK_ERR_READ_ONLY);
    int32_t src[4] = {1, 2, 3, 4};
    CHECK_STATUS(tack_array_copy_from_host(ro, src, TACK_INT32, 4), TACK_ERR_READ_ONLY);
    CHECK_STATUS(tack_array_copyto(ro, a), TACK_ERR_READ_ONLY);
    for (int k = 0; k < 4; k++) {
        CHECK_EQ_INT(((int32_t *)tack_array_data(a))[k], 0);
    }
    /* Reshaping a read-only array keeps it read-only. */
    tack_array *view;
    CHECK_OK(tack_array_reshape(ro, 1, shape, &view));
    CHECK(!tack_array_writable(view));
    tack_array_release(view);
    tack_array_release(ro);
    tack_array_release(a);
}

TACK_TEST(copyto_converts_and_checks_shapes)
{
    int64_t shape[] = {3};
    tack_array *f, *i;
    CHECK_OK(tack_array_empty(cpu(), TACK_FLOAT64, 1, shape, TACK_BUFFER_WRITABLE, &f));
    CHECK_OK(tack_array_zeros(cpu(), TACK_UINT8, 1, shape, TACK_BUFFER_WRITABLE, &i));
    double src[] = {1.9, 255.0, -4.0};
    CHECK_OK(tack_array_copy_from_host(f, src, TACK_FLOAT64, 3));
    CHECK_OK(tack_array_copyto(i, f));
    CHECK_EQ_INT(((uint8_t *)tack_array_data(i))[0], 1);
    CHECK_EQ_INT(((uint8_t *)tack_array_data(i))[1], 255);
    CHECK_EQ_INT(((uint8_t *)tack_array_data(i))[2], 0);
    int64_t other[] = {4};
    tack_array *g;
    CHECK_OK(tack_array_zeros(cpu(), TACK_FLOAT64, 1, other, TACK_BUFFER_WRITABLE, &g));
    CHECK_STATUS(tack_array_copyto(g, f), TACK_ERR_BAD_SHAPE);
    CHECK_EQ_DBL(((double *)tack_array_data(g))[0], 0.0);
    /* vec3[2] and float32[2, 3] have the same scalar shape. */
    int64_t v2[] = {2}, s23[] = {2, 3};
    tack_array *vec, *flat;
    CHECK_OK(tack_array_zeros(cpu(), TACK_VEC3F, 1, v2, TACK_BUFFER_WRITABLE, &vec));
    CHECK_OK(
        tack_array_empty(cpu(), TACK_FLOAT32, 2, s23, TACK_BUFFER_WRITABLE, &flat));
    float one = 1.0f;
    CHECK_OK(tack_array_fill(flat, &one, TACK_FLOAT32));
    CHECK_OK(tack_array_copyto(vec, flat));
    CHECK_EQ_DBL(((float *)tack_array_data(vec))[5], 1.0);
    tack_array_release(vec);
    tack_array_release(flat);
    tack_array_release(f);
    tack_array_release(i);
    tack_array_release(g);
}

static int release_calls;
static void
count_release(void *ctx)
{
    CHECK(ctx == &release_calls);
    release_calls++;
}

TACK_TEST(imported_buffer_releases_exactly_once_after_the_last_view)
{
    static float memory[8];
    tack_buffer *buf;
    CHECK_OK(tack_buffer_wrap(cpu(), memory, sizeof memory, TACK_BUFFER_WRITABLE,
                              count_release, &release_calls, &buf));
    CHECK_EQ_INT(tack_buffer_owner(buf), TACK_OWNER_IMPORTED);
    CHECK(tack_buffer_flags(buf) & TACK_BUFFER_SHARED);
    int64_t s8[] = {8}, s24[] = {2, 4};
    tack_array *a, *b;
    CHECK_OK(tack_array_from_buffer(buf, TACK_FLOAT32, 1, s8, true, &a));
    tack_buffer_release(buf);
    CHECK_OK(tack_array_reshape(a, 2, s24, &b));
    tack_array_release(a);
    CHECK_EQ_INT(release_calls, 0);
    tack_array_release(b);
    CHECK_EQ_INT(release_calls, 1);
}

TACK_TEST(from_buffer_refuses_shapes_larger_than_the_memory)
{
    static int32_t memory[4];
    tack_buffer *buf;
    CHECK_OK(tack_buffer_wrap(cpu(), memory, sizeof memory, 0, NULL, NULL, &buf));
    CHECK_EQ_INT(tack_buffer_owner(buf), TACK_OWNER_WRAPPED);
    int64_t s5[] = {5};
    tack_array *a = NULL;
    CHECK_STATUS(tack_array_from_buffer(buf, TACK_INT32, 1, s5, false, &a),
                 TACK_ERR_BAD_SHAPE);
    int64_t s4[] = {4};
    CHECK_OK(tack_array_from_buffer(buf, TACK_INT32, 1, s4, true, &a));
    /* A buffer wrapped without the writable flag gives read-only arrays. */
    CHECK(!tack_array_writable(a));
    tack_array_release(a);
    tack_buffer_release(buf);
}

TACK_TEST(to_device_copies)
{
    int64_t s[] = {3};
    tack_array *a, *b;
    CHECK_OK(tack_array_zeros(cpu(), TACK_INT64, 1, s, TACK_BUFFER_WRITABLE, &a));
    CHECK_OK(tack_array_to_device(a, cpu(), &b));
    CHECK(tack_array_data(a) != tack_array_data(b));
    CHECK_EQ_INT(tack_array_nelem(b), 3);
    tack_array_release(a);
    tack_array_release(b);
}

/* Host arrays have no streams: only -1 ("order nothing") is a stream there. */
TACK_TEST(to_device_on_stream_between_host_arrays_takes_only_minus_one)
{
    int64_t s[] = {3};
    tack_array *a, *b = NULL;
    CHECK_OK(tack_array_zeros(cpu(), TACK_INT64, 1, s, TACK_BUFFER_WRITABLE, &a));
    CHECK_STATUS(tack_array_to_device_on_stream(a, cpu(), 1, &b),
                 TACK_ERR_DLPACK_INVALID);
    CHECK_STATUS(tack_array_to_device_on_stream(a, cpu(), 0, &b),
                 TACK_ERR_DLPACK_INVALID);
    CHECK(b == NULL);
    CHECK_OK(tack_array_to_device_on_stream(a, cpu(), -1, &b));
    CHECK(tack_array_data(a) != tack_array_data(b));
    CHECK_EQ_INT(tack_array_nelem(b), 3);
    tack_array_release(a);
    tack_array_release(b);
}

TACK_TEST(host_copies_refuse_an_unknown_dtype_and_copy_nothing)
{
    int64_t shape[] = {3};
    tack_array *a, *empty;
    CHECK_OK(tack_array_zeros(cpu(), TACK_INT32, 1, shape, TACK_BUFFER_WRITABLE, &a));
    int64_t none[] = {0};
    CHECK_OK(
        tack_array_zeros(cpu(), TACK_INT32, 1, none, TACK_BUFFER_WRITABLE, &empty));
    int32_t host[3] = {7, 8, 9};
    tack_dtype bad[] = {TACK_DTYPE_COUNT, (tack_dtype)-1, (tack_dtype)1000};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tack_clear_error();
        CHECK_STATUS(tack_array_copy_from_host(a, host, bad[k], 3), TACK_ERR_BAD_DTYPE);
        CHECK(strstr(tack_last_error(), "not a Tack dtype") != NULL);
        CHECK_EQ_INT(((int32_t *)tack_array_data(a))[0], 0); /* nothing copied in */
        CHECK_STATUS(tack_array_copy_to_host(a, host, bad[k]), TACK_ERR_BAD_DTYPE);
        CHECK_EQ_INT(host[0], 7); /* nothing copied out */
        /* Refused before the size is looked at: an empty array too. */
        CHECK_STATUS(tack_array_copy_from_host(empty, NULL, bad[k], 0),
                     TACK_ERR_BAD_DTYPE);
        CHECK_STATUS(tack_array_copy_to_host(empty, NULL, bad[k]), TACK_ERR_BAD_DTYPE);
    }
    tack_array_release(a);
    tack_array_release(empty);
}

TACK_TEST(creation_refuses_flags_it_does_not_know)
{
    int64_t shape[] = {2};
    tack_array *a = NULL;
    tack_buffer *buf = NULL;
    unsigned bad[] = {1u << 3, 1u << 31, TACK_BUFFER_WRITABLE | (1u << 8),
                      TACK_BUFFER_SHARED};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tack_clear_error();
        CHECK_STATUS(tack_array_empty(cpu(), TACK_FLOAT32, 1, shape, bad[k], &a),
                     TACK_ERR_INVALID_ARGUMENT);
        CHECK(strstr(tack_last_error(), "flags") != NULL);
        CHECK_STATUS(tack_array_zeros(cpu(), TACK_FLOAT32, 1, shape, bad[k], &a),
                     TACK_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(tack_buffer_new(cpu(), 8, bad[k], &buf),
                     TACK_ERR_INVALID_ARGUMENT);
    }
    CHECK(a == NULL && buf == NULL);
    CHECK_OK(tack_array_empty(cpu(), TACK_FLOAT32, 1, shape,
                              TACK_BUFFER_WRITABLE | TACK_BUFFER_EXPORTABLE, &a));
    tack_array_release(a);
}

/* ---- references dropped on several threads at once ----------------------------- */

static atomic_int released_count;

static void
count_release_atomic(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&released_count, 1);
}

typedef struct {
    tack_array *arr;
    atomic_int *go;
} release_job;

static void *
release_at_go(void *p)
{
    release_job *job = p;
    while (!atomic_load(job->go)) {
    }
    tack_array_release(job->arr);
    return NULL;
}

/* An array with two references and a second array over its buffer, all three
 * references dropped at once on three threads: whichever drops the last, the buffer's
 * release callback runs exactly once, and only after all three. */
TACK_TEST(references_dropped_at_once_release_the_memory_once)
{
    tack_device *d = cpu();
    static double data[4];
    int64_t shape[] = {4};
    for (int round = 0; round < 2000; round++) {
        tack_array *a, *b;
        CHECK_OK(tack_array_wrap_memory(d, data, TACK_FLOAT64, 1, shape, true,
                                        count_release_atomic, NULL, &a));
        tack_array_retain(a);
        CHECK_OK(tack_array_from_buffer(tack_array_buffer(a), TACK_FLOAT64, 1, shape,
                                        true, &b));
        atomic_int go = 0;
        release_job jobs[3] = {{a, &go}, {a, &go}, {b, &go}};
        pthread_t th[3];
        for (int k = 0; k < 3; k++) {
            CHECK_EQ_INT(pthread_create(&th[k], NULL, release_at_go, &jobs[k]), 0);
        }
        CHECK_EQ_INT(atomic_load(&released_count), round);
        atomic_store(&go, 1);
        for (int k = 0; k < 3; k++) {
            CHECK_EQ_INT(pthread_join(th[k], NULL), 0);
        }
        CHECK_EQ_INT(atomic_load(&released_count), round + 1);
    }
    tack_device_release(d);
}
