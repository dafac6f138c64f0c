/*
 * test_dlpack.c: DLPack export and import in C. Foreign tensors come from a small
 * producer below (malloc, not Tack's allocator, so Tack's live-allocation count stays
 * exact) whose deleter counts its calls: every import path, failures included, must
 * call it exactly once.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "harness.h"
#include "internal.h"

/* ---- a counting producer -----------------------------------------------------------
 */

static int deleted_versioned, deleted_legacy;

typedef struct {
    DLManagedTensorVersioned v;
    DLManagedTensor l;
    int64_t shape[TACK_MAX_NDIM + 2];
    int64_t strides[TACK_MAX_NDIM + 2];
    _Alignas(64) unsigned char data[4096];
} producer;

static void
producer_delete_versioned(DLManagedTensorVersioned *self)
{
    deleted_versioned++;
    free(self->manager_ctx);
}

static void
producer_delete_legacy(DLManagedTensor *self)
{
    deleted_legacy++;
    free(self->manager_ctx);
}

/* A float32 tensor of shape {n} over p->data with values 0..n-1, C-contiguous. */
static producer *
producer_new(int64_t n)
{
    producer *p = calloc(1, sizeof *p);
    CHECK(p != NULL);
    float *f = (float *)(void *)p->data;
    for (int64_t k = 0; k < n && k < 1024; k++) {
        f[k] = (float)k;
    }
    DLTensor t = {0};
    t.data = p->data;
    t.device.device_type = kDLCPU;
    t.ndim = 1;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = p->shape;
    t.strides = p->strides;
    p->shape[0] = n;
    p->strides[0] = 1;
    p->v.version.major = 1;
    p->v.version.minor = 3;
    p->v.manager_ctx = p;
    p->v.deleter = producer_delete_versioned;
    p->v.dl_tensor = t;
    p->l.manager_ctx = p;
    p->l.deleter = producer_delete_legacy;
    p->l.dl_tensor = t;
    return p;
}

static tack_device *
cpu(void)
{
    tack_device *dev;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &dev));
    return dev;
}

/* Imports p's versioned tensor expecting want; checks the deleter ran once when it
 * should have (failure or copy) and returns the array on success. */
static tack_array *
import_v(producer *p, tack_dlpack_copy copy, tack_status want)
{
    int before = deleted_versioned;
    tack_dlpack_import_options opts = {NULL, copy, false};
    tack_array *arr = NULL;
    CHECK_STATUS(tack_dlpack_import_versioned(&p->v, &opts, &arr), want);
    if (want != TACK_OK) {
        CHECK(arr == NULL);
        CHECK_EQ_INT(deleted_versioned, before + 1);
    }
    return arr;
}

/* ---- export
 * -------------------------------------------------------------------------- */

TACK_TEST(dlpack_export_versioned_layout)
{
    tack_device *dev = cpu();
    int64_t shape[] = {2, 3, 4};
    tack_array *arr;
    tack_test_counting_allocator(0);
    CHECK_OK(tack_array_zeros(dev, TACK_INT16, 3, shape, TACK_BUFFER_WRITABLE, &arr));
    long before = tack_test_live_allocations();
    DLManagedTensorVersioned *mt;
    CHECK_OK(tack_dlpack_export_versioned(arr, NULL, &mt));
    CHECK_EQ_INT(mt->version.major, 1);
    CHECK_EQ_INT(mt->version.minor, 3);
    CHECK_EQ_INT(mt->flags, 0);
    const DLTensor *t = &mt->dl_tensor;
    CHECK(t->data == tack_array_data(arr));
    CHECK_EQ_INT(t->device.device_type, kDLCPU);
    CHECK_EQ_INT(t->device.device_id, 0);
    CHECK_EQ_INT(t->ndim, 3);
    CHECK_EQ_INT(t->dtype.code, kDLInt);
    CHECK_EQ_INT(t->dtype.bits, 16);
    CHECK_EQ_INT(t->dtype.lanes, 1);
    CHECK_EQ_INT(t->byte_offset, 0);
    CHECK(t->strides != NULL);
    int64_t want_strides[] = {12, 4, 1};
    for (int k = 0; k < 3; k++) {
        CHECK_EQ_INT(t->shape[k], shape[k]);
        CHECK_EQ_INT(t->strides[k], want_strides[k]);
    }
    /* shape and strides live in the struct's own allocation */
    CHECK_EQ_INT(tack_test_live_allocations(), before + 1);
    CHECK(tack_buffer_flags(tack_array_buffer(arr)) & TACK_BUFFER_SHARED);
    tack_array_release(arr); /* the export keeps the memory alive */
    CHECK_EQ_INT(((int16_t *)t->data)[23], 0);
    mt->deleter(mt);
    CHECK_EQ_INT(tack_test_live_allocations(), 0); /* the export took the array along */
}

TACK_TEST(dlpack_export_vec_and_zero_d)
{
    tack_device *dev = cpu();
    int64_t shape[] = {5};
    tack_array *arr;
    CHECK_OK(tack_array_zeros(dev, TACK_VEC3F, 1, shape, TACK_BUFFER_WRITABLE, &arr));
    DLManagedTensor *mt;
    CHECK_OK(tack_dlpack_export_legacy(arr, NULL, &mt));
    CHECK_EQ_INT(mt->dl_tensor.ndim, 2);
    CHECK_EQ_INT(mt->dl_tensor.shape[0], 5);
    CHECK_EQ_INT(mt->dl_tensor.shape[1], 3);
    CHECK_EQ_INT(mt->dl_tensor.strides[0], 3);
    CHECK_EQ_INT(mt->dl_tensor.strides[1], 1);
    CHECK_EQ_INT(mt->dl_tensor.dtype.code, kDLFloat);
    CHECK_EQ_INT(mt->dl_tensor.dtype.bits, 32);
    mt->deleter(mt);
    tack_array_release(arr);

    tack_array *scalar;
    CHECK_OK(
        tack_array_zeros(dev, TACK_FLOAT64, 0, NULL, TACK_BUFFER_WRITABLE, &scalar));
    DLManagedTensorVersioned *v;
    CHECK_OK(tack_dlpack_export_versioned(scalar, NULL, &v));
    CHECK_EQ_INT(v->dl_tensor.ndim, 0);
    CHECK(v->dl_tensor.shape != NULL && v->dl_tensor.strides != NULL);
    v->deleter(v);
    tack_array_release(scalar);
}

TACK_TEST(dlpack_export_read_only)
{
    tack_device *dev = cpu();
    int64_t shape[] = {4};
    tack_array *arr, *ro;
    CHECK_OK(tack_array_zeros(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &arr));
    CHECK_OK(tack_array_readonly_view(arr, &ro));
    DLManagedTensorVersioned *v;
    CHECK_OK(tack_dlpack_export_versioned(ro, NULL, &v));
    CHECK_EQ_INT(v->flags, DLPACK_FLAG_BITMASK_READ_ONLY);
    v->deleter(v);
    DLManagedTensor *l = NULL;
    CHECK_STATUS(tack_dlpack_export_legacy(ro, NULL, &l), TACK_ERR_EXPORT_REFUSED);
    CHECK(l == NULL);
    /* The remedy in C terms; a binding words it for its own users. */
    CHECK_EQ_INT(tack_last_error_remedy(), TACK_REMEDY_VERSIONED);
    CHECK(strstr(tack_last_error(), "tack_dlpack_export_versioned") != NULL);
    CHECK(strstr(tack_last_error_problem(), "read-only") != NULL);
    CHECK(strstr(tack_last_error(), "max_version") == NULL);
    CHECK(strstr(tack_last_error(), "copy=True") == NULL);
    tack_dlpack_export_options copy = {true, NULL, false, 0, false, 0};
    CHECK_OK(tack_dlpack_export_legacy(ro, &copy, &l));
    CHECK(l->dl_tensor.data != tack_array_data(arr));
    l->deleter(l);
    tack_array_release(ro);
    tack_array_release(arr);
}

TACK_TEST(dlpack_export_copy_is_private)
{
    tack_device *dev = cpu();
    int64_t shape[] = {3};
    tack_array *arr;
    float seven = 7.0f;
    CHECK_OK(tack_array_empty(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &arr));
    CHECK_OK(tack_array_fill(arr, &seven, TACK_FLOAT32));
    tack_dlpack_export_options copy = {true, dev, false, 0, false, 0};
    DLManagedTensorVersioned *v;
    CHECK_OK(tack_dlpack_export_versioned(arr, &copy, &v));
    CHECK_EQ_INT(v->flags, DLPACK_FLAG_BITMASK_IS_COPIED);
    CHECK(v->dl_tensor.data != tack_array_data(arr));
    CHECK_EQ_DBL(((float *)v->dl_tensor.data)[2], 7.0);
    ((float *)v->dl_tensor.data)[0] = 1.0f;
    CHECK_EQ_DBL(((float *)tack_array_data(arr))[0], 7.0);
    v->deleter(v);
    tack_array_release(arr);
}

static void *
delete_on_thread(void *mt)
{
    DLManagedTensorVersioned *v = mt;
    v->deleter(v);
    return NULL;
}

TACK_TEST(dlpack_export_deleter_on_another_thread)
{
    tack_device *dev = cpu();
    tack_test_counting_allocator(0);
    int64_t shape[] = {1000};
    tack_array *arr;
    CHECK_OK(tack_array_zeros(dev, TACK_UINT8, 1, shape, TACK_BUFFER_WRITABLE, &arr));
    DLManagedTensorVersioned *v;
    CHECK_OK(tack_dlpack_export_versioned(arr, NULL, &v));
    tack_array_release(arr);
    pthread_t th;
    CHECK_EQ_INT(pthread_create(&th, NULL, delete_on_thread, v), 0);
    CHECK_EQ_INT(pthread_join(th, NULL), 0);
    CHECK_EQ_INT(tack_test_live_allocations(), 0);
}

/* What prepare and export_versioned make of __dlpack__(max_version=(major, minor)),
 * field by field against what tack_dlpack_export_own makes in one call. */
static void
check_own_matches_general(tack_array *arr, int64_t major, int64_t minor)
{
    tack_dlpack_export_request req = {0};
    req.has_max_version = true;
    req.max_major = major;
    req.max_minor = minor;
    bool versioned = false;
    tack_dlpack_export_options opts;
    CHECK_OK(tack_dlpack_export_prepare(arr, &req, &versioned, &opts));
    CHECK(versioned);
    DLManagedTensorVersioned *general, *own;
    CHECK_OK(tack_dlpack_export_versioned(arr, &opts, &general));
    CHECK_OK(tack_dlpack_export_own(arr, major, minor, &own));
    CHECK(own != general);
    CHECK_EQ_INT(own->version.major, general->version.major);
    CHECK_EQ_INT(own->version.minor, general->version.minor);
    CHECK_EQ_INT(own->flags, general->flags);
    CHECK(own->manager_ctx == general->manager_ctx);
    const DLTensor *a = &own->dl_tensor, *b = &general->dl_tensor;
    CHECK(a->data == b->data && a->data == tack_array_data(arr));
    CHECK_EQ_INT(a->device.device_type, b->device.device_type);
    CHECK_EQ_INT(a->device.device_id, b->device.device_id);
    CHECK_EQ_INT(a->ndim, b->ndim);
    CHECK_EQ_INT(a->dtype.code, b->dtype.code);
    CHECK_EQ_INT(a->dtype.bits, b->dtype.bits);
    CHECK_EQ_INT(a->dtype.lanes, b->dtype.lanes);
    CHECK_EQ_INT(a->byte_offset, b->byte_offset);
    CHECK(a->shape != b->shape && a->strides != NULL);
    for (int k = 0; k < a->ndim; k++) {
        CHECK_EQ_INT(a->shape[k], b->shape[k]);
        CHECK_EQ_INT(a->strides[k], b->strides[k]);
    }
    own->deleter(own);
    general->deleter(general);
}

TACK_TEST(dlpack_export_own_is_the_general_export_of_a_version_request)
{
    tack_device *dev = cpu();
    int64_t shape[] = {2, 3, 4};
    tack_array *arr, *ro, *vec;
    CHECK_OK(tack_array_zeros(dev, TACK_INT16, 3, shape, TACK_BUFFER_WRITABLE, &arr));
    CHECK_OK(tack_array_readonly_view(arr, &ro));
    CHECK_OK(tack_array_zeros(dev, TACK_VEC3F, 2, shape, TACK_BUFFER_WRITABLE, &vec));
    const int64_t versions[][2] = {{1, 0}, {1, 1}, {1, -3}, {1, 99}, {2, 0}, {9, 9}};
    for (size_t k = 0; k < sizeof versions / sizeof versions[0]; k++) {
        check_own_matches_general(arr, versions[k][0], versions[k][1]);
        check_own_matches_general(ro, versions[k][0], versions[k][1]);
        check_own_matches_general(vec, versions[k][0], versions[k][1]);
    }
    /* The reported minors themselves, and the read-only flag. */
    DLManagedTensorVersioned *mt;
    CHECK_OK(tack_dlpack_export_own(arr, 1, 0, &mt));
    CHECK_EQ_INT(mt->version.minor, 0);
    mt->deleter(mt);
    CHECK_OK(tack_dlpack_export_own(ro, 2, 0, &mt));
    CHECK_EQ_INT(mt->version.major, 1);
    CHECK_EQ_INT(mt->version.minor, TACK_DLPACK_MINOR);
    CHECK_EQ_INT(mt->flags, DLPACK_FLAG_BITMASK_READ_ONLY);
    mt->deleter(mt);
    /* A legacy consumer is prepare's to decide; nothing is exported or retained. */
    tack_test_counting_allocator(0);
    mt = NULL;
    CHECK_STATUS(tack_dlpack_export_own(arr, 0, 5, &mt), TACK_ERR_INVALID_ARGUMENT);
    CHECK(mt == NULL);
    CHECK(strstr(tack_last_error(), "tack_dlpack_export_prepare") != NULL);
    CHECK_EQ_INT(tack_test_allocation_count(), 0);
    tack_set_allocator(NULL);
    tack_array_release(vec);
    tack_array_release(ro);
    tack_array_release(arr);
}

TACK_TEST(dlpack_export_own_reuses_one_block_and_frees_it_with_the_array)
{
    tack_device *dev = cpu();
    tack_device_release(cpu()); /* the registry device lives forever: make it first */
    tack_test_counting_allocator(0);
    int64_t shape[] = {6, 7};
    tack_array *arr;
    CHECK_OK(tack_array_zeros(dev, TACK_FLOAT32, 2, shape, TACK_BUFFER_WRITABLE, &arr));
    long live = tack_test_live_allocations();
    DLManagedTensorVersioned *first, *again, *second;
    CHECK_OK(tack_dlpack_export_own(arr, 1, 3, &first));
    CHECK_EQ_INT(tack_test_live_allocations(), live + 1);
    /* A consumer scribbling on its copy of the layout reaches nothing of the array. */
    first->dl_tensor.shape[0] = 99;
    first->dl_tensor.strides[1] = 99;
    first->deleter(first);
    CHECK_EQ_INT(tack_test_live_allocations(), live + 1); /* kept for the next */
    long made = tack_test_allocation_count();
    CHECK_OK(tack_dlpack_export_own(arr, 1, 3, &again));
    CHECK(again == first);
    CHECK_EQ_INT(tack_test_allocation_count(), made);
    CHECK_EQ_INT(again->dl_tensor.shape[0], 6);
    CHECK_EQ_INT(again->dl_tensor.strides[1], 1);
    CHECK_EQ_INT(again->dl_tensor.strides[0], 7);
    CHECK(again->dl_tensor.shape == (int64_t *)(void *)(again + 1));
    /* Two at once: the second gets a block of its own; one block is kept. */
    CHECK_OK(tack_dlpack_export_own(arr, 1, 3, &second));
    CHECK(second != again);
    CHECK_EQ_INT(tack_test_live_allocations(), live + 2);
    again->deleter(again);
    second->deleter(second);
    CHECK_EQ_INT(tack_test_live_allocations(), live + 1);
    /* The general path without a copy takes the kept block too. */
    DLManagedTensorVersioned *general;
    CHECK_OK(tack_dlpack_export_versioned(arr, NULL, &general));
    CHECK(general == first || general == second);
    /* The export holds the array; the last release frees the array and its block. */
    tack_array_release(arr);
    CHECK(tack_test_live_allocations() > 0);
    general->deleter(general);
    CHECK_EQ_INT(tack_test_live_allocations(), 0);
    tack_set_allocator(NULL);
}

enum { OWN_ROUNDS = 2000, OWN_AT_ONCE = 4 };

static void *
delete_all_on_thread(void *tensors)
{
    DLManagedTensorVersioned **v = tensors;
    for (int k = 0; k < OWN_AT_ONCE / 2; k++) {
        v[k]->deleter(v[k]);
    }
    return NULL;
}

TACK_TEST(dlpack_export_own_deleters_racing_on_two_threads_keep_one_block)
{
    tack_device *dev = cpu();
    tack_device_release(cpu());
    tack_test_counting_allocator(0);
    int64_t shape[] = {3};
    tack_array *arr;
    CHECK_OK(tack_array_zeros(dev, TACK_UINT8, 1, shape, TACK_BUFFER_WRITABLE, &arr));
    long live = tack_test_live_allocations();
    for (int round = 0; round < OWN_ROUNDS; round++) {
        DLManagedTensorVersioned *v[OWN_AT_ONCE];
        for (int k = 0; k < OWN_AT_ONCE; k++) {
            CHECK_OK(tack_dlpack_export_own(arr, 1, 3, &v[k]));
        }
        pthread_t a, b;
        CHECK_EQ_INT(pthread_create(&a, NULL, delete_all_on_thread, v), 0);
        CHECK_EQ_INT(
            pthread_create(&b, NULL, delete_all_on_thread, v + OWN_AT_ONCE / 2), 0);
        CHECK_EQ_INT(pthread_join(a, NULL), 0);
        CHECK_EQ_INT(pthread_join(b, NULL), 0);
        CHECK_EQ_INT(tack_test_live_allocations(), live + 1);
    }
    tack_array_release(arr);
    CHECK_EQ_INT(tack_test_live_allocations(), 0);
    tack_set_allocator(NULL);
}

TACK_TEST(dlpack_describe_points_into_the_array)
{
    tack_device *dev = cpu();
    int64_t shape[] = {2, 5};
    tack_array *arr;
    CHECK_OK(tack_array_zeros(dev, TACK_VEC2F, 2, shape, TACK_BUFFER_WRITABLE, &arr));
    tack_test_counting_allocator(0);
    DLTensor t;
    tack_dlpack_describe(arr, &t);
    CHECK_EQ_INT(tack_test_allocation_count(), 0);
    CHECK_EQ_INT(t.ndim, 3);
    CHECK_EQ_INT(t.shape[2], 2);
    CHECK_EQ_INT(t.strides[0], 10);
    CHECK_EQ_INT(t.strides[1], 2);
    CHECK_EQ_INT(t.strides[2], 1);
    tack_set_allocator(NULL);
    tack_array_release(arr);
}

/* ---- import: sharing, lifetime ------------------------------------------------------
 */

TACK_TEST(dlpack_import_shares_and_views_hold_the_tensor)
{
    producer *p = producer_new(12);
    tack_array *arr = import_v(p, TACK_DLPACK_COPY_NEVER, TACK_OK);
    CHECK(tack_array_data(arr) == p->data);
    CHECK(tack_array_writable(arr));
    CHECK_EQ_INT(tack_buffer_owner(tack_array_buffer(arr)), TACK_OWNER_IMPORTED);
    CHECK(tack_buffer_flags(tack_array_buffer(arr)) & TACK_BUFFER_SHARED);
    int64_t shape[] = {3, 4};
    tack_array *view;
    CHECK_OK(tack_array_reshape(arr, 2, shape, &view));
    tack_array_release(arr);
    CHECK_EQ_INT(deleted_versioned, 0);
    CHECK_EQ_DBL(((float *)tack_array_data(view))[11], 11.0);
    tack_array_release(view);
    CHECK_EQ_INT(deleted_versioned, 1);
}

TACK_TEST(dlpack_import_legacy_is_writable_and_read_only_flag_honoured)
{
    producer *p = producer_new(4);
    tack_array *arr;
    CHECK_OK(tack_dlpack_import_legacy(&p->l, NULL, &arr));
    CHECK(tack_array_writable(arr));
    tack_array_release(arr);
    CHECK_EQ_INT(deleted_legacy, 1);

    p = producer_new(4);
    p->v.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    arr = import_v(p, TACK_DLPACK_COPY_NEVER, TACK_OK);
    CHECK(!tack_array_writable(arr));
    float one = 1.0f;
    CHECK_STATUS(tack_array_fill(arr, &one, TACK_FLOAT32), TACK_ERR_READ_ONLY);
    tack_array_release(arr);
}

TACK_TEST(dlpack_import_read_only_option_applies_to_shared_memory_only)
{
    tack_dlpack_import_options opts = {NULL, TACK_DLPACK_COPY_NEVER, true};
    producer *p = producer_new(4);
    tack_array *arr;
    CHECK_OK(tack_dlpack_import_legacy(&p->l, &opts, &arr));
    CHECK(!tack_array_writable(arr));
    float one = 1.0f;
    CHECK_STATUS(tack_array_fill(arr, &one, TACK_FLOAT32), TACK_ERR_READ_ONLY);
    tack_array_release(arr);
    CHECK_EQ_INT(deleted_legacy, 1);

    p = producer_new(4);
    CHECK_OK(tack_dlpack_import_versioned(&p->v, &opts, &arr));
    CHECK(!tack_array_writable(arr));
    tack_array_release(arr);

    opts.copy = TACK_DLPACK_COPY_ALWAYS; /* a copy is Tack's own memory */
    p = producer_new(4);
    CHECK_OK(tack_dlpack_import_legacy(&p->l, &opts, &arr));
    CHECK(tack_array_writable(arr));
    tack_array_release(arr);
}

static void
count_described_release(void *ctx)
{
    ++*(int *)ctx;
}

/* A tensor described without a managed tensor (NumPy's fields): shared, writable as
 * asked, its release run once with the last view, at once after a copy, and before
 * a refusal returns. */
TACK_TEST(dlpack_import_described_releases_once)
{
    float data[6] = {0, 1, 2, 3, 4, 5};
    int64_t shape[2] = {2, 3};
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLCPU;
    t.ndim = 2;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = shape;
    int released = 0;
    tack_array *arr = NULL;
    CHECK_OK(tack_dlpack_import_described(&t, false, count_described_release, &released,
                                          NULL, &arr));
    CHECK(tack_array_data(arr) == data);
    CHECK(!tack_array_writable(arr));
    tack_array *view;
    int64_t flat[1] = {6};
    CHECK_OK(tack_array_reshape(arr, 1, flat, &view));
    tack_array_release(arr);
    CHECK_EQ_INT(released, 0);
    tack_array_release(view);
    CHECK_EQ_INT(released, 1);

    tack_dlpack_import_options opts = {NULL, TACK_DLPACK_COPY_ALWAYS, false};
    CHECK_OK(tack_dlpack_import_described(&t, false, count_described_release, &released,
                                          &opts, &arr));
    CHECK_EQ_INT(released, 2); /* copied: the described memory is let go at once */
    CHECK(tack_array_data(arr) != data && tack_array_writable(arr));
    CHECK_EQ_DBL(((float *)tack_array_data(arr))[5], 5.0);
    tack_array_release(arr);

    t.dtype.lanes = 2;
    CHECK_STATUS(tack_dlpack_import_described(&t, true, count_described_release,
                                              &released, NULL, &arr),
                 TACK_ERR_DLPACK_DTYPE);
    CHECK_EQ_INT(released, 3);
}

TACK_TEST(dlpack_import_null_deleter_is_accepted)
{
    producer *p = producer_new(4);
    p->v.deleter = NULL;
    tack_array *arr = import_v(p, TACK_DLPACK_COPY_NEVER, TACK_OK);
    tack_array_release(arr);
    p->v.dl_tensor.ndim = -1; /* a failure path with no deleter either */
    tack_dlpack_import_options opts = {NULL, TACK_DLPACK_COPY_NEVER, false};
    CHECK_STATUS(tack_dlpack_import_versioned(&p->v, &opts, &arr),
                 TACK_ERR_DLPACK_INVALID);
    CHECK_EQ_INT(deleted_versioned, 0);
    free(p);
}

TACK_TEST(dlpack_import_byte_offset_and_null_strides)
{
    producer *p = producer_new(16);
    p->v.dl_tensor.byte_offset = 8;
    p->v.dl_tensor.shape[0] = 14;
    p->v.dl_tensor.strides = NULL;
    tack_array *arr = import_v(p, TACK_DLPACK_COPY_NEVER, TACK_OK);
    CHECK_EQ_DBL(((float *)tack_array_data(arr))[0], 2.0);
    CHECK_EQ_INT(tack_array_nelem(arr), 14);
    tack_array_release(arr);
}

TACK_TEST(dlpack_import_size_one_and_zero_size_strides)
{
    /* size-1 dimensions may carry any stride */
    producer *p = producer_new(8);
    DLTensor *t = &p->v.dl_tensor;
    t->ndim = 3;
    int64_t shape[] = {1, 8, 1}, strides[] = {99, 1, -7};
    memcpy(t->shape, shape, sizeof shape);
    memcpy(t->strides, strides, sizeof strides);
    tack_array *arr = import_v(p, TACK_DLPACK_COPY_NEVER, TACK_OK);
    CHECK(tack_array_data(arr) == p->data);
    tack_array_release(arr);
    /* zero-size tensors have no layout, and may have NULL data */
    p = producer_new(0);
    t = &p->v.dl_tensor;
    t->ndim = 2;
    t->shape[0] = 0;
    t->shape[1] = 5;
    t->strides[0] = 3;
    t->strides[1] = 1000;
    t->data = NULL;
    arr = import_v(p, TACK_DLPACK_COPY_NEVER, TACK_OK);
    CHECK_EQ_INT(tack_array_nelem(arr), 0);
    CHECK_EQ_INT(tack_array_ndim(arr), 2);
    tack_array_release(arr);
    CHECK_EQ_INT(deleted_versioned, 2);
}

TACK_TEST(dlpack_import_pinned_host_is_cpu)
{
    producer *p = producer_new(4);
    p->v.dl_tensor.device.device_type = kDLCUDAHost;
    p->v.dl_tensor.device.device_id = 3; /* meaningless for host memory */
    tack_array *arr = import_v(p, TACK_DLPACK_COPY_NEVER, TACK_OK);
    CHECK_EQ_INT(tack_device_dlpack_type(tack_array_device(arr)), kDLCPU);
    tack_array_release(arr);
}

/* ---- import: refusals, each calling the deleter exactly once ------------------------
 */

TACK_TEST(dlpack_import_refuses_malformed_tensors)
{
    int n = 0;
#define CASE(want_, body)                               \
    do {                                                \
        producer *p = producer_new(8);                  \
        DLTensor *t = &p->v.dl_tensor;                  \
        (void)t;                                        \
        body;                                           \
        import_v(p, TACK_DLPACK_COPY_IF_NEEDED, want_); \
        n++;                                            \
    } while (0)
    CASE(TACK_ERR_DLPACK_INVALID, t->data = NULL);
    CASE(TACK_ERR_DLPACK_DTYPE, t->dtype.code = kDLComplex; t->dtype.bits = 64);
    CASE(TACK_ERR_DLPACK_DTYPE, t->dtype.code = kDLBfloat; t->dtype.bits = 16);
    CASE(TACK_ERR_DLPACK_DTYPE, t->dtype.bits = 24);
    CASE(TACK_ERR_DLPACK_DTYPE, t->dtype.lanes = 4);
    CASE(TACK_ERR_DLPACK_DTYPE, t->dtype.lanes = 0);
    CASE(TACK_ERR_DLPACK_INVALID, t->ndim = -1);
    CASE(TACK_ERR_DLPACK_INVALID, t->ndim = TACK_MAX_NDIM + 1);
    CASE(TACK_ERR_DLPACK_INVALID, t->shape = NULL);
    CASE(TACK_ERR_DLPACK_INVALID, t->shape[0] = -3);
    CASE(TACK_ERR_DLPACK_INVALID, t->ndim = 2; t->shape[0] = INT64_MAX; t->shape[1] = 4;
         t->strides[0] = 4; t->strides[1] = 1);
    CASE(TACK_ERR_DLPACK_INVALID, t->byte_offset = UINT64_MAX - 2);
    CASE(TACK_ERR_DLPACK_INVALID, p->v.version.major = 2);
    CASE(TACK_ERR_DLPACK_INVALID, p->v.version.major = 0);
    CASE(TACK_ERR_DLPACK_INVALID, t->device.device_type = kDLMetal);
    CASE(TACK_ERR_DLPACK_INVALID, t->device.device_type = (DLDeviceType)99);
    CASE(TACK_ERR_DLPACK_INVALID, t->device.device_type = kDLVulkan);
    CASE(TACK_ERR_DLPACK_INVALID, t->ndim = 2; t->shape[0] = 2; t->shape[1] = 4;
         t->strides[0] = INT64_MAX; t->strides[1] = 1);
#undef CASE
    CHECK_EQ_INT(deleted_versioned, n);
    CHECK(strstr(tack_last_error(), "address space") != NULL);
}

TACK_TEST(dlpack_import_metal_message_says_copy)
{
    producer *p = producer_new(8);
    p->v.dl_tensor.device.device_type = kDLMetal;
    import_v(p, TACK_DLPACK_COPY_ALWAYS, TACK_ERR_DLPACK_INVALID);
    CHECK(strstr(tack_last_error(), "host memory") != NULL);
    CHECK(strstr(tack_last_error(), "copy") != NULL);
    CHECK(strstr(tack_last_error(), "copy=True") == NULL);
}

TACK_TEST(dlpack_import_non_contiguous)
{
    producer *p = producer_new(12);
    DLTensor *t = &p->v.dl_tensor;
    t->ndim = 2;
    int64_t shape[] = {3, 4}, strides[] = {1, 3}; /* Fortran order */
    memcpy(t->shape, shape, sizeof shape);
    memcpy(t->strides, strides, sizeof strides);
    import_v(p, TACK_DLPACK_COPY_NEVER, TACK_ERR_DLPACK_INVALID);
    CHECK_EQ_INT(tack_last_error_remedy(), TACK_REMEDY_COPY);
    CHECK(strstr(tack_last_error(), "TACK_DLPACK_COPY_ALWAYS") != NULL);
    CHECK(strstr(tack_last_error(), "copy=True") == NULL);

    p = producer_new(12);
    t = &p->v.dl_tensor;
    t->ndim = 2;
    memcpy(t->shape, shape, sizeof shape);
    memcpy(t->strides, strides, sizeof strides);
    int before = deleted_versioned;
    tack_array *arr = import_v(p, TACK_DLPACK_COPY_IF_NEEDED, TACK_OK);
    CHECK_EQ_INT(deleted_versioned, before + 1); /* copied: released at once */
    const float *f = tack_array_data(arr);
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 4; j++) {
            CHECK_EQ_DBL(f[i * 4 + j], (double)(i + 3 * j));
        }
    }
    CHECK(tack_array_writable(arr));
    tack_array_release(arr);
}

TACK_TEST(dlpack_import_negative_strides_copy)
{
    producer *p = producer_new(6);
    DLTensor *t = &p->v.dl_tensor;
    t->byte_offset = 5 * sizeof(float); /* the last element comes first */
    t->strides[0] = -1;
    t->shape[0] = 6;
    tack_array *arr = import_v(p, TACK_DLPACK_COPY_ALWAYS, TACK_OK);
    const float *f = tack_array_data(arr);
    for (int k = 0; k < 6; k++) {
        CHECK_EQ_DBL(f[k], (double)(5 - k));
    }
    tack_array_release(arr);
}

TACK_TEST(dlpack_import_copy_always_is_independent)
{
    producer *p = producer_new(4);
    p->v.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    unsigned char *data = p->data;
    tack_array *arr = import_v(p, TACK_DLPACK_COPY_ALWAYS, TACK_OK);
    CHECK(tack_array_data(arr) != data);
    CHECK(tack_array_writable(arr));
    CHECK_EQ_INT(deleted_versioned, 1);
    CHECK_EQ_DBL(((float *)tack_array_data(arr))[3], 3.0);
    tack_array_release(arr);
}

TACK_TEST(dlpack_import_misaligned)
{
    producer *p = producer_new(8);
    p->v.dl_tensor.byte_offset = 2;
    p->v.dl_tensor.shape[0] = 4;
    import_v(p, TACK_DLPACK_COPY_NEVER, TACK_ERR_DLPACK_INVALID);
    p = producer_new(8);
    p->v.dl_tensor.byte_offset = 2;
    p->v.dl_tensor.shape[0] = 4;
    tack_array *arr = import_v(p, TACK_DLPACK_COPY_IF_NEEDED, TACK_OK);
    CHECK_EQ_INT((uintptr_t)tack_array_data(arr) % 4, 0);
    tack_array_release(arr);
}

TACK_TEST(dlpack_import_device_rules)
{
    /* A CUDA tensor with the CPU as default imports on cuda:0, which cannot open
     * here (a driver path that loads nothing, on any host, GPU or not): a DLPack
     * device refusal carrying the driver's explanation, and the deleter still runs
     * once. */
    setenv("TACK_CUDA_DRIVER", "/nonexistent/libtack-no-cuda.so.1", 1);
    producer *p = producer_new(8);
    p->v.dl_tensor.device.device_type = kDLCUDA;
    import_v(p, TACK_DLPACK_COPY_NEVER, TACK_ERR_DLPACK_DEVICE);
    /* device=cpu cannot wrap CUDA memory: the error names where to import it. */
    p = producer_new(8);
    p->v.dl_tensor.device.device_type = kDLCUDA;
    p->v.dl_tensor.device.device_id = 1;
    tack_dlpack_import_options opts = {cpu(), TACK_DLPACK_COPY_NEVER, false};
    tack_array *arr = NULL;
    CHECK_STATUS(tack_dlpack_import_versioned(&p->v, &opts, &arr),
                 TACK_ERR_DLPACK_DEVICE);
    CHECK(strstr(tack_last_error(), "device 'cuda' ordinal 1") != NULL);
    CHECK_EQ_INT(tack_last_error_remedy(), TACK_REMEDY_COPY);
    CHECK_EQ_INT(deleted_versioned, 2);
    p = producer_new(8);
    p->v.dl_tensor.device.device_type = kDLROCM;
    import_v(p, TACK_DLPACK_COPY_NEVER, TACK_ERR_DLPACK_DEVICE);
    p = producer_new(8);
    p->v.dl_tensor.device.device_type = kDLOneAPI;
    import_v(p, TACK_DLPACK_COPY_NEVER, TACK_ERR_DLPACK_DEVICE);
}

/* ---- raw pointers
 * ----------------------------------------------------------------------- */

static int released;
static void
count_release(void *ctx)
{
    (void)ctx;
    released++;
}

TACK_TEST(wrap_memory_checks_and_consumes)
{
    tack_device *dev = cpu();
    _Alignas(8) double mem[4] = {1, 2, 3, 4};
    int64_t shape[] = {4};
    tack_array *arr = NULL;
    CHECK_STATUS(tack_array_wrap_memory(dev, NULL, TACK_FLOAT64, 1, shape, true,
                                        count_release, NULL, &arr),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tack_array_wrap_memory(dev, (char *)mem + 1, TACK_FLOAT64, 1, shape,
                                        true, count_release, NULL, &arr),
                 TACK_ERR_INVALID_ARGUMENT);
    int64_t bad[] = {-1};
    CHECK_STATUS(tack_array_wrap_memory(dev, mem, TACK_FLOAT64, 1, bad, true,
                                        count_release, NULL, &arr),
                 TACK_ERR_BAD_SHAPE);
    CHECK(arr == NULL);
    CHECK_EQ_INT(released, 3);
    CHECK_OK(tack_array_wrap_memory(dev, mem, TACK_FLOAT64, 1, shape, false,
                                    count_release, NULL, &arr));
    CHECK_EQ_INT(tack_buffer_owner(tack_array_buffer(arr)), TACK_OWNER_IMPORTED);
    CHECK(!tack_array_writable(arr));
    tack_array_release(arr);
    CHECK_EQ_INT(released, 4);
    CHECK_OK(tack_array_wrap_memory(dev, mem, TACK_FLOAT64, 1, shape, true, NULL, NULL,
                                    &arr));
    CHECK_EQ_INT(tack_buffer_owner(tack_array_buffer(arr)), TACK_OWNER_WRAPPED);
    CHECK(tack_buffer_flags(tack_array_buffer(arr)) & TACK_BUFFER_SHARED);
    tack_array_release(arr);
}

TACK_TEST(dlpack_allocate)
{
    int64_t shape[] = {3, 2};
    DLTensor proto = {0};
    proto.device.device_type = kDLCPU;
    proto.ndim = 2;
    proto.shape = shape;
    proto.dtype.code = kDLUInt;
    proto.dtype.bits = 16;
    proto.dtype.lanes = 1;
    tack_device_release(cpu()); /* the registry device lives forever: make it first */
    tack_test_counting_allocator(0);
    DLManagedTensorVersioned *mt;
    CHECK_OK(tack_dlpack_allocate(&proto, &mt));
    CHECK_EQ_INT(mt->flags, 0);
    CHECK_EQ_INT(mt->dl_tensor.shape[0], 3);
    ((uint16_t *)mt->dl_tensor.data)[5] = 9;
    mt->deleter(mt);
    CHECK_EQ_INT(tack_test_live_allocations(), 0);
    proto.dtype.code = kDLComplex;
    CHECK_STATUS(tack_dlpack_allocate(&proto, &mt), TACK_ERR_DLPACK_DTYPE);
}

/* ---- allocation failures
 * ---------------------------------------------------------------- */

typedef tack_status (*sweep_fn)(tack_device *dev, int *deleted);

/* Fails the k-th allocation for every k until the call succeeds: each failure is
 * TACK_ERR_NO_MEMORY with zero Tack allocations left and the foreign tensor's
 * deleter (if any) called exactly once. */
static void
sweep(sweep_fn run)
{
    tack_device *dev = cpu();
    for (long k = 1;; k++) {
        tack_test_counting_allocator(k);
        int deleted = 0;
        tack_status st = run(dev, &deleted);
        CHECK_EQ_INT(tack_test_live_allocations(), 0);
        CHECK(deleted <= 1);
        if (st == TACK_OK) {
            CHECK(k > 1);
            break;
        }
        CHECK_EQ_INT(st, TACK_ERR_NO_MEMORY);
        CHECK(k < 100);
    }
    tack_set_allocator(NULL);
}

/* How run_export exports: the general versioned or legacy call, or the one-call
 * export of a version request. */
typedef enum { EXPORT_VERSIONED, EXPORT_LEGACY, EXPORT_OWN } export_call;

static tack_status
run_export(tack_device *dev, int *deleted, export_call call, bool copy)
{
    (void)deleted;
    int64_t shape[] = {4, 4};
    tack_array *arr;
    tack_status st =
        tack_array_empty(dev, TACK_VEC4F, 2, shape, TACK_BUFFER_WRITABLE, &arr);
    if (st != TACK_OK) {
        return st;
    }
    tack_dlpack_export_options opts = {copy, NULL, false, 0, false, 0};
    if (call != EXPORT_LEGACY) {
        DLManagedTensorVersioned *mt = NULL;
        st = call == EXPORT_OWN ? tack_dlpack_export_own(arr, 1, 3, &mt)
                                : tack_dlpack_export_versioned(arr, &opts, &mt);
        CHECK((st == TACK_OK) == (mt != NULL));
        if (mt) {
            mt->deleter(mt);
        }
    }
    else {
        DLManagedTensor *mt = NULL;
        st = tack_dlpack_export_legacy(arr, &opts, &mt);
        CHECK((st == TACK_OK) == (mt != NULL));
        if (mt) {
            mt->deleter(mt);
        }
    }
    tack_array_release(arr);
    return st;
}

static tack_status
run_export_own(tack_device *dev, int *deleted)
{
    return run_export(dev, deleted, EXPORT_OWN, false);
}
static tack_status
run_export_versioned(tack_device *dev, int *deleted)
{
    return run_export(dev, deleted, EXPORT_VERSIONED, false);
}
static tack_status
run_export_legacy(tack_device *dev, int *deleted)
{
    return run_export(dev, deleted, EXPORT_LEGACY, false);
}
static tack_status
run_export_copy(tack_device *dev, int *deleted)
{
    return run_export(dev, deleted, EXPORT_VERSIONED, true);
}

static tack_status
run_import(tack_device *dev, int *deleted, tack_dlpack_copy copy, bool strided)
{
    (void)dev;
    producer *p = producer_new(12);
    if (strided) {
        DLTensor *t = &p->v.dl_tensor;
        t->ndim = 2;
        t->shape[0] = 3;
        t->shape[1] = 4;
        t->strides[0] = 1;
        t->strides[1] = 3;
    }
    int before = deleted_versioned;
    tack_dlpack_import_options opts = {NULL, copy, false};
    tack_array *arr = NULL;
    tack_status st = tack_dlpack_import_versioned(&p->v, &opts, &arr);
    CHECK((st == TACK_OK) == (arr != NULL));
    if (st != TACK_OK || copy != TACK_DLPACK_COPY_NEVER) {
        CHECK_EQ_INT(deleted_versioned, before + 1);
    }
    tack_array_release(arr);
    CHECK_EQ_INT(deleted_versioned, before + 1);
    *deleted = 1;
    return st;
}

static tack_status
run_import_share(tack_device *dev, int *deleted)
{
    return run_import(dev, deleted, TACK_DLPACK_COPY_NEVER, false);
}
static tack_status
run_import_copy(tack_device *dev, int *deleted)
{
    return run_import(dev, deleted, TACK_DLPACK_COPY_ALWAYS, false);
}
static tack_status
run_import_strided_copy(tack_device *dev, int *deleted)
{
    return run_import(dev, deleted, TACK_DLPACK_COPY_IF_NEEDED, true);
}

static tack_status
run_allocate(tack_device *dev, int *deleted)
{
    (void)dev;
    (void)deleted;
    int64_t shape[] = {7};
    DLTensor proto = {0};
    proto.device.device_type = kDLCPU;
    proto.ndim = 1;
    proto.shape = shape;
    proto.dtype.code = kDLFloat;
    proto.dtype.bits = 64;
    proto.dtype.lanes = 1;
    DLManagedTensorVersioned *mt = NULL;
    tack_status st = tack_dlpack_allocate(&proto, &mt);
    if (mt) {
        mt->deleter(mt);
    }
    return st;
}

static tack_status
run_wrap_memory(tack_device *dev, int *deleted)
{
    released = 0;
    static double mem[8];
    int64_t shape[] = {8};
    tack_array *arr = NULL;
    tack_status st = tack_array_wrap_memory(dev, mem, TACK_FLOAT64, 1, shape, true,
                                            count_release, NULL, &arr);
    CHECK_EQ_INT(released, st == TACK_OK ? 0 : 1);
    tack_array_release(arr);
    CHECK_EQ_INT(released, 1);
    *deleted = 1;
    return st;
}

TACK_TEST(dlpack_alloc_failure_export_versioned)
{
    sweep(run_export_versioned);
}
TACK_TEST(dlpack_alloc_failure_export_own)
{
    sweep(run_export_own);
}
TACK_TEST(dlpack_alloc_failure_export_legacy)
{
    sweep(run_export_legacy);
}
TACK_TEST(dlpack_alloc_failure_export_copy)
{
    sweep(run_export_copy);
}
TACK_TEST(dlpack_alloc_failure_import_share)
{
    sweep(run_import_share);
}
TACK_TEST(dlpack_alloc_failure_import_copy)
{
    sweep(run_import_copy);
}
TACK_TEST(dlpack_alloc_failure_import_strided_copy)
{
    sweep(run_import_strided_copy);
}
TACK_TEST(dlpack_alloc_failure_allocate)
{
    sweep(run_allocate);
}
TACK_TEST(dlpack_alloc_failure_wrap_memory)
{
    sweep(run_wrap_memory);
}

TACK_TEST(dlpack_export_reports_the_consumers_minor_version)
{
    tack_device *dev;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &dev));
    int64_t shape[1] = {2};
    tack_array *a;
    CHECK_OK(tack_array_zeros(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &a));
    DLManagedTensorVersioned *mt;
    tack_dlpack_export_options asked_1_0 = {false, NULL, true, 0, false, 0};
    CHECK_OK(tack_dlpack_export_versioned(a, &asked_1_0, &mt));
    CHECK_EQ_INT(mt->version.major, 1);
    CHECK_EQ_INT(mt->version.minor, 0);
    mt->deleter(mt);
    tack_dlpack_export_options asked_1_9 = {false, NULL, true, 9, false, 0};
    CHECK_OK(tack_dlpack_export_versioned(a, &asked_1_9, &mt));
    CHECK_EQ_INT(mt->version.minor, TACK_DLPACK_MINOR);
    mt->deleter(mt);
    CHECK_OK(tack_dlpack_export_versioned(a, NULL, &mt));
    CHECK_EQ_INT(mt->version.minor, TACK_DLPACK_MINOR);
    mt->deleter(mt);
    tack_array_release(a);
}

/* ---- the exchange table of another library --------------------------------------- */

static int
no_from_py(void *py_object, DLManagedTensorVersioned **out)
{
    (void)py_object;
    (void)out;
    return -1;
}

TACK_TEST(exchange_table_addresses_that_cannot_be_tables_are_refused)
{
    const DLPackExchangeAPI *api = NULL;
    static const uintptr_t forged[] = {0,    1,    (uintptr_t)-1,     8,
                                       4095, 4097, (uintptr_t)1 << 62};
    for (size_t k = 0; k < sizeof forged / sizeof forged[0]; k++) {
        CHECK_STATUS(tack_dlpack_exchange_api_find(forged[k], &api),
                     TACK_ERR_DLPACK_INVALID);
    }
    CHECK(api == NULL);
    CHECK_STATUS(tack_dlpack_exchange_api_find(4096, NULL), TACK_ERR_INVALID_ARGUMENT);
}

TACK_TEST(exchange_table_versions_are_checked_and_chains_followed)
{
    static DLPackExchangeAPI v1 = {.header = {{1, 2}, NULL},
                                   .managed_tensor_from_py_object_no_sync = no_from_py};
    static DLPackExchangeAPI v2 = {.header = {{2, 0}, &v1.header}};
    static DLPackExchangeAPI v9 = {.header = {{9, 0}, NULL}};
    static DLPackExchangeAPI empty = {.header = {{1, 3}, NULL}};
    static DLPackExchangeAPI bad_link = {
        .header = {{2, 0}, (DLPackExchangeAPIHeader *)8}};
    const DLPackExchangeAPI *api = NULL;
    CHECK_OK(tack_dlpack_exchange_api_find((uintptr_t)&v1, &api));
    CHECK(api == &v1);
    api = NULL;
    CHECK_OK(tack_dlpack_exchange_api_find((uintptr_t)&v2, &api));
    CHECK(api == &v1);
    CHECK_STATUS(tack_dlpack_exchange_api_find((uintptr_t)&v9, &api),
                 TACK_ERR_DLPACK_INVALID);
    CHECK_STATUS(tack_dlpack_exchange_api_find((uintptr_t)&empty, &api),
                 TACK_ERR_DLPACK_INVALID);
    CHECK_STATUS(tack_dlpack_exchange_api_find((uintptr_t)&bad_link, &api),
                 TACK_ERR_DLPACK_INVALID);
}

/* ---- address ranges past the end of the address space ------------------------------
 */

TACK_TEST(wrapped_ranges_past_the_address_space_are_refused)
{
    tack_device *dev = NULL;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &dev));
    tack_array *arr = NULL;
    int64_t four[1] = {4}, two[1] = {2};
    CHECK_STATUS(tack_array_wrap_memory(dev, (void *)(UINTPTR_MAX - 7), TACK_FLOAT32, 1,
                                        four, false, NULL, NULL, &arr),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK(strstr(tack_last_error(), "address space") != NULL);
    /* A range whose last byte is the last address is fine. */
    CHECK_OK(tack_array_wrap_memory(dev, (void *)(UINTPTR_MAX - 15), TACK_FLOAT64, 1,
                                    two, false, NULL, NULL, &arr));
    tack_array_release(arr);

    producer *p = producer_new(4);
    p->v.dl_tensor.data = (void *)(UINTPTR_MAX - 7);
    deleted_versioned = 0;
    CHECK_STATUS(tack_dlpack_import_versioned(&p->v, NULL, &arr),
                 TACK_ERR_DLPACK_INVALID);
    CHECK(strstr(tack_last_error(), "address space") != NULL);
    CHECK_EQ_INT(deleted_versioned, 1);
}

/* ---- what a consumer asks of an export ----------------------------------------------
 */

TACK_TEST(export_request_rules)
{
    tack_array *arr = NULL;
    int64_t shape[1] = {4};
    CHECK_OK(
        tack_array_zeros(cpu(), TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &arr));
    tack_dlpack_export_request req;
    memset(&req, 0, sizeof req);
    bool versioned = true;
    tack_dlpack_export_options opts;
    CHECK_OK(tack_dlpack_export_prepare(arr, &req, &versioned, &opts));
    CHECK(!versioned && !opts.copy && opts.device == NULL);
    /* max_version: 1.x is versioned and reports at most the consumer's minor. */
    req.has_max_version = true;
    req.max_major = 1;
    req.max_minor = 0;
    CHECK_OK(tack_dlpack_export_prepare(arr, &req, &versioned, &opts));
    CHECK(versioned && opts.limit_minor && opts.max_minor == 0);
    req.max_minor = 99;
    CHECK_OK(tack_dlpack_export_prepare(arr, &req, &versioned, &opts));
    CHECK_EQ_INT(opts.max_minor, TACK_DLPACK_MINOR);
    req.max_major = 0;
    CHECK_OK(tack_dlpack_export_prepare(arr, &req, &versioned, &opts));
    CHECK(!versioned);
    req.max_major = 2; /* a newer major: versioned, Tack's own minor */
    CHECK_OK(tack_dlpack_export_prepare(arr, &req, &versioned, &opts));
    CHECK(versioned && !opts.limit_minor);
    /* stream: the CPU has none, only -1 ("do not synchronize") */
    req.has_stream = true;
    req.stream = -1;
    CHECK_OK(tack_dlpack_export_prepare(arr, &req, &versioned, &opts));
    req.stream = 1;
    versioned = false;
    CHECK_STATUS(tack_dlpack_export_prepare(arr, &req, &versioned, &opts),
                 TACK_ERR_DLPACK_INVALID);
    CHECK(!versioned); /* out untouched on failure */
    CHECK_EQ_INT(tack_last_error_remedy(), TACK_REMEDY_NO_STREAM);
    req.has_stream = false;
    /* dl_device: the array's own, or the host with a copy */
    req.has_dl_device = true;
    req.device_type = kDLCPU;
    req.device_id = 0;
    CHECK_OK(tack_dlpack_export_prepare(arr, &req, &versioned, &opts));
    CHECK(opts.device == NULL);
    req.device_type = kDLCUDA;
    CHECK_STATUS(tack_dlpack_export_prepare(arr, &req, &versioned, &opts),
                 TACK_ERR_EXPORT_REFUSED);
    CHECK_EQ_INT(tack_last_error_remedy(), TACK_REMEDY_OWN_DEVICE);
    req.has_copy = true;
    req.copy = true;
    CHECK_STATUS(tack_dlpack_export_prepare(arr, &req, &versioned, &opts),
                 TACK_ERR_EXPORT_REFUSED);
    req.device_type = kDLCPU;
    req.device_id = 1;
    CHECK_STATUS(tack_dlpack_export_prepare(arr, &req, &versioned, &opts),
                 TACK_ERR_EXPORT_REFUSED);
    tack_array_release(arr);
}

TACK_TEST(stream_rules_per_device_type)
{
    CHECK_OK(tack__dlpack_stream_check(kDLCPU, -1));
    CHECK_STATUS(tack__dlpack_stream_check(kDLCPU, 0), TACK_ERR_DLPACK_INVALID);
    CHECK_STATUS(tack__dlpack_stream_check(kDLCUDA, 0), TACK_ERR_DLPACK_INVALID);
    CHECK_OK(tack__dlpack_stream_check(kDLCUDA, 1));
    CHECK_OK(tack__dlpack_stream_check(kDLCUDA, 2));
    CHECK_OK(tack__dlpack_stream_check(kDLCUDA, 0x7f0000001000));
    CHECK_OK(tack__dlpack_stream_check(kDLCUDA, -1));
    CHECK_STATUS(tack__dlpack_stream_check(kDLCUDA, -2), TACK_ERR_DLPACK_INVALID);
    CHECK_OK(tack__dlpack_stream_check(kDLROCM, 0));
    CHECK_STATUS(tack__dlpack_stream_check(kDLROCM, 1), TACK_ERR_DLPACK_INVALID);
    CHECK_STATUS(tack__dlpack_stream_check(kDLROCM, 2), TACK_ERR_DLPACK_INVALID);
    CHECK_OK(tack__dlpack_stream_check(kDLOneAPI, -1));
    for (int64_t s = 0; s < 3; s++) {
        CHECK_STATUS(tack__dlpack_stream_check(kDLOneAPI, s), TACK_ERR_DLPACK_INVALID);
    }
    CHECK_STATUS(tack__dlpack_stream_check(kDLOneAPI, 0x7f0000001000),
                 TACK_ERR_DLPACK_INVALID);
}
