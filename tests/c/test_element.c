/*
 * test_element.c: the rules a binding used to hold, reached through the C API alone:
 * scalar range checks and conversions, element get/set, the size check of a wrapped
 * region, export_memory, and the backend table's size.
 */
#include <math.h>

#include "harness.h"
#include "internal.h"

static tack_device *
cpu(void)
{
    tack_device *d = NULL;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &d));
    return d;
}

static tack_scalar
int_scalar(int64_t v)
{
    tack_scalar s = {TACK_SCALAR_INT, {.i = v}};
    return s;
}

TACK_TEST(scalar_integers_are_range_checked_as_numpy_does)
{
    unsigned char out[16];
    tack_scalar s = int_scalar(127);
    CHECK_OK(tack_scalar_to_element(&s, TACK_INT8, out));
    CHECK_EQ_INT(*(int8_t *)out, 127);
    s = int_scalar(128);
    memset(out, 0x5a, sizeof out);
    CHECK_STATUS(tack_scalar_to_element(&s, TACK_INT8, out), TACK_ERR_VALUE_OVERFLOW);
    CHECK_EQ_INT(out[0], 0x5a); /* out untouched on failure */
    CHECK(strstr(tack_last_error(), "int8") != NULL);
    s = int_scalar(-1);
    CHECK_STATUS(tack_scalar_to_element(&s, TACK_UINT32, out), TACK_ERR_VALUE_OVERFLOW);
    s = int_scalar(INT64_MIN);
    CHECK_OK(tack_scalar_to_element(&s, TACK_INT64, out));
    CHECK_EQ_INT(*(int64_t *)out, INT64_MIN);
    tack_scalar u = {TACK_SCALAR_UINT, {.u = UINT64_MAX}};
    CHECK_OK(tack_scalar_to_element(&u, TACK_UINT64, out));
    CHECK(*(uint64_t *)out == UINT64_MAX);
    CHECK_STATUS(tack_scalar_to_element(&u, TACK_INT64, out), TACK_ERR_VALUE_OVERFLOW);
    /* Into bool: nonzero; into floats: rounded, never range-refused. */
    s = int_scalar(300);
    CHECK_OK(tack_scalar_to_element(&s, TACK_BOOL, out));
    CHECK_EQ_INT(out[0], 1);
    CHECK_OK(tack_scalar_to_element(&u, TACK_FLOAT32, out));
    CHECK_EQ_DBL(*(float *)out, 18446744073709551616.0);
}

TACK_TEST(scalar_floats_bools_and_vec_components)
{
    unsigned char out[16];
    tack_scalar f = {TACK_SCALAR_FLOAT, {.f = -3.9}};
    CHECK_OK(tack_scalar_to_element(&f, TACK_INT16, out));
    CHECK_EQ_INT(*(int16_t *)out, -3);
    f.v.f = NAN;
    CHECK_OK(tack_scalar_to_element(&f, TACK_UINT8, out));
    CHECK_EQ_INT(out[0], 0);
    tack_scalar b = {TACK_SCALAR_BOOL, {.b = true}};
    CHECK_OK(tack_scalar_to_element(&b, TACK_FLOAT64, out));
    CHECK_EQ_DBL(*(double *)out, 1.0);
    f.v.f = 2.5;
    CHECK_OK(tack_scalar_to_element(&f, TACK_VEC3F, out));
    for (int k = 0; k < 3; k++) {
        CHECK_EQ_DBL(((float *)(void *)out)[k], 2.5);
    }
    tack_scalar back;
    CHECK_OK(tack_element_to_scalar(out, TACK_VEC3F, 2, &back));
    CHECK_EQ_INT(back.kind, TACK_SCALAR_FLOAT);
    CHECK_EQ_DBL(back.v.f, 2.5);
    CHECK_STATUS(tack_element_to_scalar(out, TACK_VEC3F, 3, &back),
                 TACK_ERR_INVALID_ARGUMENT);
    uint64_t big = UINT64_MAX;
    CHECK_OK(tack_element_to_scalar(&big, TACK_UINT64, 0, &back));
    CHECK(back.kind == TACK_SCALAR_UINT && back.v.u == UINT64_MAX);
    int8_t neg = -5;
    CHECK_OK(tack_element_to_scalar(&neg, TACK_INT8, 0, &back));
    CHECK(back.kind == TACK_SCALAR_INT && back.v.i == -5);
    uint8_t yes = 1;
    CHECK_OK(tack_element_to_scalar(&yes, TACK_BOOL, 0, &back));
    CHECK(back.kind == TACK_SCALAR_BOOL && back.v.b);
    tack_scalar bad = {(tack_scalar_kind)99, {.i = 0}};
    CHECK_STATUS(tack_scalar_to_element(&bad, TACK_INT8, out),
                 TACK_ERR_INVALID_ARGUMENT);
}

TACK_TEST(element_get_set_index_rules)
{
    int64_t shape[2] = {2, 3};
    tack_array *a = NULL;
    CHECK_OK(tack_array_zeros(cpu(), TACK_INT32, 2, shape, TACK_BUFFER_WRITABLE, &a));
    size_t off = 99;
    int64_t idx[2] = {1, -1};
    CHECK_OK(tack_array_element_offset(a, 2, idx, &off));
    CHECK_EQ_INT(off, 5);
    int64_t bad[2] = {2, 0};
    CHECK_STATUS(tack_array_element_offset(a, 2, bad, &off), TACK_ERR_INDEX);
    int64_t neg[2] = {0, -4};
    CHECK_STATUS(tack_array_element_offset(a, 2, neg, &off), TACK_ERR_INDEX);
    CHECK_STATUS(tack_array_element_offset(a, 1, idx, &off), TACK_ERR_INDEX);
    CHECK_EQ_INT(off, 5);
    int32_t v = 42, got = 0;
    CHECK_OK(tack_array_set_element(a, 5, &v));
    CHECK_EQ_INT(((int32_t *)tack_array_data(a))[5], 42);
    CHECK_OK(tack_array_get_element(a, 5, &got));
    CHECK_EQ_INT(got, 42);
    CHECK_STATUS(tack_array_get_element(a, 6, &got), TACK_ERR_INDEX);
    CHECK_STATUS(tack_array_set_element(a, 6, &v), TACK_ERR_INDEX);
    tack_array *ro = NULL;
    CHECK_OK(tack_array_readonly_view(a, &ro));
    v = 7;
    CHECK_STATUS(tack_array_set_element(ro, 0, &v), TACK_ERR_READ_ONLY);
    CHECK_EQ_INT(((int32_t *)tack_array_data(a))[0], 0);
    tack_array_release(ro);
    tack_array_release(a);
}

TACK_TEST(wrap_region_checks_the_size_it_needs)
{
    static double mem[4];
    int64_t four[1] = {4}, five[1] = {5};
    tack_array *a = NULL;
    CHECK_OK(tack_array_wrap_region(cpu(), mem, sizeof mem, TACK_FLOAT64, 1, four, true,
                                    NULL, NULL, &a));
    CHECK(tack_array_data(a) == mem);
    tack_array_release(a);
    a = NULL;
    CHECK_STATUS(tack_array_wrap_region(cpu(), mem, sizeof mem, TACK_FLOAT64, 1, five,
                                        true, NULL, NULL, &a),
                 TACK_ERR_BAD_SHAPE);
    CHECK(strstr(tack_last_error(), "40 bytes") != NULL);
    CHECK(a == NULL);
    CHECK_STATUS(tack_array_wrap_region(cpu(), (char *)mem + 1, sizeof mem - 1,
                                        TACK_FLOAT32, 1, four, true, NULL, NULL, &a),
                 TACK_ERR_INVALID_ARGUMENT); /* misaligned */
}

TACK_TEST(export_memory_is_refused_on_the_cpu)
{
    int64_t shape[1] = {4};
    tack_array *a = NULL;
    CHECK_OK(tack_array_zeros(cpu(), TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &a));
    tack_exported_memory m;
    memset(&m, 0x5a, sizeof m);
    CHECK_STATUS(tack_array_export_memory(a, &m), TACK_ERR_UNSUPPORTED);
    CHECK(strstr(tack_last_error(), "cpu") != NULL);
    CHECK_EQ_INT(m.size, 0x5a5a5a5a5a5a5a5aULL); /* untouched */
    tack_array_release(a);
}

static tack_status
fake_export(void *state, void *ptr, size_t nbytes, tack_exported_memory *out)
{
    (void)state;
    (void)ptr;
    out->handle_type = "posix_fd";
    out->handle = 7;
    out->allocation_size = nbytes + 100;
    return TACK_OK;
}

TACK_TEST(backend_slots_beyond_the_table_size_are_absent)
{
    /* A backend compiled before export_memory existed: its table ends earlier. */
    tack_backend old = tack__backend_cpu;
    old.export_memory = fake_export;
    old.size = offsetof(tack_backend, export_memory);
    CHECK(TACK__BACKEND_SLOT(&old, export_memory) == NULL);
    old.size = sizeof(tack_backend);
    CHECK(TACK__BACKEND_SLOT(&old, export_memory) == fake_export);
    CHECK_EQ_INT(tack__backend_cpu.size, sizeof(tack_backend));
    CHECK(TACK__BACKEND_SLOT(&tack__backend_cpu, export_memory) == NULL);

    /* A device of a backend that exports: export_memory reaches its slot. */
    tack_device fake;
    memset(&fake, 0, sizeof fake);
    atomic_init(&fake.refcount, 1);
    fake.backend = &old;
    fake.in_registry = true;
    static float mem[4];
    int64_t shape[1] = {4};
    tack_array *a = NULL;
    CHECK_OK(tack_array_wrap_memory(&fake, mem, TACK_FLOAT32, 1, shape, true, NULL,
                                    NULL, &a));
    tack_exported_memory m;
    CHECK_OK(tack_array_export_memory(a, &m));
    CHECK(strcmp(m.backend, "cpu") == 0 && strcmp(m.handle_type, "posix_fd") == 0);
    CHECK_EQ_INT(m.handle, 7);
    CHECK_EQ_INT(m.size, 16);
    CHECK_EQ_INT(m.allocation_size, 116);
    tack_array_release(a);
}

TACK_TEST(array_shape_of_scalars_takes_the_component_axis_of_vec_dtypes)
{
    int64_t scalars[3] = {4, 2, 3}, shape[3] = {0, 0, 0};
    int32_t ndim = -1;
    CHECK_OK(tack_array_shape_of_scalars(TACK_VEC3F, 3, scalars, &ndim, shape));
    CHECK_EQ_INT(ndim, 2);
    CHECK(shape[0] == 4 && shape[1] == 2);
    CHECK_OK(tack_array_shape_of_scalars(TACK_FLOAT32, 3, scalars, &ndim, shape));
    CHECK_EQ_INT(ndim, 3);
    CHECK_EQ_INT(shape[2], 3);
    ndim = -1;
    CHECK_STATUS(tack_array_shape_of_scalars(TACK_VEC2F, 3, scalars, &ndim, shape),
                 TACK_ERR_BAD_SHAPE);
    CHECK_STATUS(tack_array_shape_of_scalars(TACK_VEC4F, 0, NULL, &ndim, shape),
                 TACK_ERR_BAD_SHAPE);
    CHECK_EQ_INT(ndim, -1); /* out untouched on failure */
    CHECK_OK(tack_array_shape_of_scalars(TACK_INT8, 0, NULL, &ndim, shape));
    CHECK_EQ_INT(ndim, 0);
    CHECK_STATUS(tack_array_shape_of_scalars(TACK_INT8, 1, NULL, &ndim, shape),
                 TACK_ERR_INVALID_ARGUMENT);
}
