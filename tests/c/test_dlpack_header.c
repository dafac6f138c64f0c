/*
 * test_dlpack_header.c: a C host that includes the official dlpack.h beside
 * tack/tack.h. The build compiles this file four times: with the official 1.1 and
 * 1.3 headers (tests/c/vendor/), each included before and after Tack's
 * (TACK_TEST_OFFICIAL_FIRST). A header that cannot live beside the official one
 * fails the build; the tests check at run time that the types the host sees are the
 * ones Tack's functions fill in, and that whichever header came first defines the
 * shared macros.
 *
 * TACK_TEST_DLPACK_MINOR: the vendored header's minor version.
 * TACK_TEST_VARIANT: a suffix that keeps the four copies' test names apart.
 */
#if TACK_TEST_OFFICIAL_FIRST
#include <dlpack/dlpack.h>
#include "tack/tack.h"
#else
#include "tack/tack.h"
#include <dlpack/dlpack.h>
#endif

#include "harness.h"

#define HDR_TEST(name) HDR_TEST_(name, TACK_TEST_VARIANT)
#define HDR_TEST_(name, variant) HDR_TEST__(name, variant)
#define HDR_TEST__(name, variant) TACK_TEST(name##_##variant)

static int deleter_calls;

static void
count_delete(DLManagedTensorVersioned *self)
{
    (void)self;
    deleter_calls++;
}

/* The header that came first owns the version macros. */
HDR_TEST(dlpack_header_version_macros)
{
#if TACK_TEST_OFFICIAL_FIRST
    CHECK_EQ_INT(DLPACK_MINOR_VERSION, TACK_TEST_DLPACK_MINOR);
#else
    CHECK_EQ_INT(DLPACK_MINOR_VERSION, TACK_DLPACK_MINOR);
#endif
    CHECK_EQ_INT(DLPACK_MAJOR_VERSION, 1);
    /* The exchange API types exist whichever release the host has. */
    CHECK_EQ_INT(sizeof(DLPackExchangeAPI), 7 * sizeof(void *));
    CHECK_EQ_INT(offsetof(DLPackExchangeAPI, current_work_stream), 6 * sizeof(void *));
}

/* A read-only Tack array exported through the types of the host's header. */
HDR_TEST(dlpack_header_export)
{
    tack_device *dev;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &dev));
    int64_t shape[2] = {2, 3};
    tack_array *arr, *ro;
    CHECK_OK(tack_array_zeros(dev, TACK_FLOAT64, 2, shape, 0, &arr));
    CHECK_OK(tack_array_readonly_view(arr, &ro));
    DLManagedTensorVersioned *mt = NULL;
    CHECK_OK(tack_dlpack_export_versioned(ro, NULL, &mt));
    CHECK_EQ_INT(mt->version.major, DLPACK_MAJOR_VERSION);
    CHECK_EQ_INT(mt->version.minor, TACK_DLPACK_MINOR);
    CHECK((mt->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
    CHECK_EQ_INT(mt->dl_tensor.device.device_type, kDLCPU);
    CHECK_EQ_INT(mt->dl_tensor.dtype.code, kDLFloat);
    CHECK_EQ_INT(mt->dl_tensor.dtype.bits, 64);
    CHECK_EQ_INT(mt->dl_tensor.ndim, 2);
    CHECK_EQ_INT(mt->dl_tensor.shape[1], 3);
    CHECK_EQ_INT(mt->dl_tensor.strides[0], 3);
    CHECK(mt->dl_tensor.data == tack_array_data(arr));
    mt->deleter(mt);
    tack_array_release(ro);
    tack_array_release(arr);
    tack_device_release(dev);
}

/* A tensor the host builds with its header's types, imported without a copy. */
HDR_TEST(dlpack_header_import)
{
    static int32_t data[4] = {7, 8, 9, 10};
    int64_t shape[1] = {4};
    int64_t strides[1] = {1};
    DLManagedTensorVersioned mt;
    memset(&mt, 0, sizeof mt);
    mt.version.major = DLPACK_MAJOR_VERSION;
    mt.version.minor = DLPACK_MINOR_VERSION;
    mt.deleter = count_delete;
    mt.dl_tensor.data = data;
    mt.dl_tensor.device.device_type = kDLCPU;
    mt.dl_tensor.ndim = 1;
    mt.dl_tensor.dtype.code = kDLInt;
    mt.dl_tensor.dtype.bits = 32;
    mt.dl_tensor.dtype.lanes = 1;
    mt.dl_tensor.shape = shape;
    mt.dl_tensor.strides = strides;
    tack_array *arr = NULL;
    deleter_calls = 0;
    CHECK_OK(tack_dlpack_import_versioned(&mt, NULL, &arr));
    CHECK(tack_array_data(arr) == (void *)data);
    CHECK_EQ_INT(tack_array_dtype(arr), TACK_INT32);
    CHECK_EQ_INT(deleter_calls, 0);
    tack_array_release(arr);
    CHECK_EQ_INT(deleter_calls, 1);
}
