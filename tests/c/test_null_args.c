/*
 * test_null_args.c: every public entry point given NULL handles answers
 * TACK_ERR_INVALID_ARGUMENT (or, for accessors and releases, a neutral value) and
 * never dereferences them. Each test runs in its own process, so a crash fails only
 * the test of the function that crashed.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>

#include "harness.h"
#include "kernel_test_util.h"
#include "rtc.h"

#ifndef TACK_TEST_SOURCE_ROOT
#error "TACK_TEST_SOURCE_ROOT must name the source tree"
#endif

static tack_device *
cpu(void)
{
    tack_device *dev = NULL;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &dev));
    return dev;
}

static tack_array *
small_array(void)
{
    tack_array *arr = NULL;
    int64_t shape[1] = {4};
    CHECK_OK(
        tack_array_zeros(cpu(), TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &arr));
    return arr;
}

#define CHECK_INVALID(expr)                               \
    do {                                                  \
        tack_clear_error();                               \
        CHECK_STATUS(expr, TACK_ERR_INVALID_ARGUMENT);    \
        CHECK(strstr(tack_last_error(), "NULL") != NULL); \
    } while (0)

static int released;
static void
count_release(void *ctx)
{
    (void)ctx;
    released++;
}

TACK_TEST(null_args_buffers)
{
    tack_buffer *buf = NULL;
    CHECK_INVALID(tack_buffer_new(NULL, 8, 0, &buf));
    CHECK_INVALID(tack_buffer_new(cpu(), 8, 0, NULL));
    static float data[4];
    released = 0;
    CHECK_INVALID(tack_buffer_wrap(NULL, data, 16, 0, count_release, NULL, &buf));
    CHECK_EQ_INT(released, 1); /* the release obligation is consumed on failure too */
    CHECK_INVALID(tack_buffer_wrap(cpu(), data, 16, 0, count_release, NULL, NULL));
    CHECK_EQ_INT(released, 2);
    CHECK(buf == NULL);
    tack_buffer_retain(NULL);
    tack_buffer_release(NULL);
    CHECK(tack_buffer_data(NULL) == NULL);
    CHECK_EQ_INT(tack_buffer_nbytes(NULL), 0);
    CHECK_EQ_INT(tack_buffer_flags(NULL), 0);
    CHECK_EQ_INT(tack_buffer_owner(NULL), TACK_OWNER_WRAPPED);
    CHECK(tack_buffer_device(NULL) == NULL);
    CHECK_INVALID(tack_buffer_share(NULL));
}

TACK_TEST(null_args_array_creation)
{
    int64_t shape[1] = {4};
    size_t nelem = 0;
    tack_array *arr = NULL;
    CHECK_INVALID(tack_shape_size(1, NULL, 4, &nelem));
    CHECK_INVALID(tack_shape_size(1, shape, 4, NULL));
    CHECK_OK(tack_shape_size(0, NULL, 4, &nelem)); /* 0-d needs no extents */
    CHECK_INVALID(tack_array_empty(NULL, TACK_FLOAT32, 1, shape, 0, &arr));
    CHECK_INVALID(tack_array_empty(cpu(), TACK_FLOAT32, 1, NULL, 0, &arr));
    CHECK_INVALID(tack_array_empty(cpu(), TACK_FLOAT32, 1, shape, 0, NULL));
    CHECK_INVALID(tack_array_zeros(NULL, TACK_FLOAT32, 1, shape, 0, &arr));
    CHECK_INVALID(tack_array_zeros(cpu(), TACK_FLOAT32, 1, shape, 0, NULL));
    CHECK_INVALID(tack_array_from_buffer(NULL, TACK_FLOAT32, 1, shape, true, &arr));
    tack_buffer *buf = NULL;
    CHECK_OK(tack_buffer_new(cpu(), 16, TACK_BUFFER_WRITABLE, &buf));
    CHECK_INVALID(tack_array_from_buffer(buf, TACK_FLOAT32, 1, shape, true, NULL));
    CHECK_INVALID(tack_array_wrap_memory(NULL, buf, TACK_FLOAT32, 1, shape, false, NULL,
                                         NULL, &arr));
    released = 0;
    CHECK_INVALID(tack_array_wrap_memory(cpu(), tack_buffer_data(buf), TACK_FLOAT32, 1,
                                         shape, false, count_release, NULL, NULL));
    CHECK_EQ_INT(released, 1);
    CHECK(arr == NULL);
    tack_buffer_release(buf);
}

TACK_TEST(null_args_array_accessors)
{
    tack_array_retain(NULL);
    tack_array_release(NULL);
    CHECK(tack_array_data(NULL) == NULL);
    CHECK_EQ_INT(tack_array_dtype(NULL), TACK_DTYPE_COUNT);
    CHECK_EQ_INT(tack_array_ndim(NULL), 0);
    CHECK(tack_array_shape(NULL) == NULL);
    CHECK_EQ_INT(tack_array_nelem(NULL), 0);
    CHECK_EQ_INT(tack_array_nbytes(NULL), 0);
    CHECK(!tack_array_writable(NULL));
    CHECK(tack_array_buffer(NULL) == NULL);
    CHECK(tack_array_device(NULL) == NULL);
}

TACK_TEST(null_args_array_operations)
{
    tack_array *arr = small_array(), *out = NULL;
    int64_t shape[2] = {2, 2};
    float host[4] = {0};
    CHECK_INVALID(tack_array_reshape(NULL, 2, shape, &out));
    CHECK_INVALID(tack_array_reshape(arr, 2, NULL, &out));
    CHECK_INVALID(tack_array_reshape(arr, 2, shape, NULL));
    CHECK_INVALID(tack_array_readonly_view(NULL, &out));
    CHECK_INVALID(tack_array_readonly_view(arr, NULL));
    CHECK_INVALID(tack_array_fill(NULL, host, TACK_FLOAT32));
    CHECK_INVALID(tack_array_fill(arr, NULL, TACK_FLOAT32));
    CHECK_INVALID(tack_array_copy_from_host(NULL, host, TACK_FLOAT32, 4));
    CHECK_INVALID(tack_array_copy_from_host(arr, NULL, TACK_FLOAT32, 4));
    CHECK_INVALID(tack_array_copy_to_host(NULL, host, TACK_FLOAT32));
    CHECK_INVALID(tack_array_copy_to_host(arr, NULL, TACK_FLOAT32));
    CHECK_INVALID(tack_array_copyto(NULL, arr));
    CHECK_INVALID(tack_array_copyto(arr, NULL));
    CHECK_INVALID(tack_array_to_device(NULL, cpu(), &out));
    CHECK_INVALID(tack_array_to_device(arr, NULL, &out));
    CHECK_INVALID(tack_array_to_device(arr, cpu(), NULL));
    CHECK_INVALID(tack_array_to_device_on_stream(NULL, cpu(), -1, &out));
    CHECK_INVALID(tack_array_to_device_on_stream(arr, NULL, -1, &out));
    CHECK_INVALID(tack_array_to_device_on_stream(arr, cpu(), -1, NULL));
    CHECK(out == NULL);
    tack_array_release(arr);
}

TACK_TEST(null_args_errors)
{
    /* A NULL message is the status's generic one, not a failure of its own. */
    CHECK_STATUS(tack_set_error(TACK_ERR_BAD_TYPE, NULL), TACK_ERR_BAD_TYPE);
    CHECK(strcmp(tack_last_error(), tack_status_message(TACK_ERR_BAD_TYPE)) == 0);
}

TACK_TEST(null_args_devices)
{
    char name[16];
    int ordinal = 0;
    tack_device *dev = NULL;
    CHECK_STATUS(tack_device_parse(NULL, name, sizeof name, &ordinal),
                 TACK_ERR_UNKNOWN_DEVICE);
    CHECK_INVALID(tack_device_parse("cpu", NULL, sizeof name, &ordinal));
    CHECK_INVALID(tack_device_parse("cpu", name, sizeof name, NULL));
    CHECK(!tack_device_accepts_option(NULL, "external_context"));
    CHECK(!tack_device_accepts_option("level_zero", NULL));
    CHECK_STATUS(tack_device_open(NULL, 0, NULL, &dev), TACK_ERR_UNKNOWN_DEVICE);
    CHECK_INVALID(tack_device_open("cpu", 0, NULL, NULL));
    tack_device_retain(NULL);
    tack_device_release(NULL);
    CHECK(strcmp(tack_device_backend_name(NULL), "") == 0);
    CHECK_EQ_INT(tack_device_ordinal(NULL), -1);
    CHECK_EQ_INT(tack_device_dlpack_type(NULL), 0);
    CHECK_EQ_INT(tack_device_memory_domain(NULL), 0);
    CHECK(!tack_device_has_external_context(NULL));
    tack_external_context ext_out = {0, 0, 0, 0};
    CHECK(!tack_device_external_context(NULL, &ext_out));
    CHECK(tack_device_backend(NULL) == NULL);
    CHECK_INVALID(tack_device_synchronize(NULL));
    CHECK_EQ_INT(tack_device_stream(NULL), 0);
    CHECK(tack_device_driver_path(NULL) == NULL);
    CHECK_INVALID(tack_device_wait_for_stream(NULL, 1));
    CHECK_INVALID(tack_device_follow_stream(NULL, -1));
    CHECK_INVALID(tack_default_device(NULL));
    /* NULL restores the CPU as the default. */
    tack_set_default_device(NULL);
    CHECK_OK(tack_default_device(&dev));
    CHECK(strcmp(tack_device_backend_name(dev), "cpu") == 0);
    tack_device_release(dev);
}

TACK_TEST(null_args_dlpack)
{
    tack_array *arr = small_array(), *out = NULL;
    DLManagedTensorVersioned *v = NULL;
    DLManagedTensor *l = NULL;
    CHECK_INVALID(tack_dlpack_export_versioned(NULL, NULL, &v));
    CHECK_INVALID(tack_dlpack_export_versioned(arr, NULL, NULL));
    CHECK_INVALID(tack_dlpack_export_own(NULL, 1, 3, &v));
    CHECK_INVALID(tack_dlpack_export_own(arr, 1, 3, NULL));
    CHECK_INVALID(tack_dlpack_export_legacy(NULL, NULL, &l));
    CHECK_INVALID(tack_dlpack_export_legacy(arr, NULL, NULL));
    DLTensor t;
    memset(&t, 0xff, sizeof t);
    tack_dlpack_describe(NULL, &t);
    CHECK(t.data == NULL && t.ndim == 0);
    tack_dlpack_describe(arr, NULL);
    CHECK_INVALID(tack_dlpack_allocate(NULL, &v));
    tack_dlpack_describe(arr, &t);
    CHECK_INVALID(tack_dlpack_allocate(&t, NULL));
    CHECK_INVALID(tack_dlpack_import_versioned(NULL, NULL, &out));
    CHECK_INVALID(tack_dlpack_import_legacy(NULL, NULL, &out));
    /* A NULL out still consumes the tensor: its deleter runs exactly once. */
    CHECK_OK(tack_dlpack_export_versioned(arr, NULL, &v));
    CHECK_OK(tack_dlpack_export_legacy(arr, NULL, &l));
    CHECK_INVALID(tack_dlpack_import_versioned(v, NULL, NULL));
    CHECK_INVALID(tack_dlpack_import_legacy(l, NULL, NULL));
    /* A described import needs a release; given one, it is called even when t or
     * out is NULL. */
    CHECK_INVALID(tack_dlpack_import_described(&t, true, NULL, NULL, NULL, &out));
    int before = released;
    CHECK_INVALID(
        tack_dlpack_import_described(NULL, true, count_release, NULL, NULL, &out));
    CHECK_INVALID(
        tack_dlpack_import_described(&t, true, count_release, NULL, NULL, NULL));
    CHECK_EQ_INT(released, before + 2);
    tack_dlpack_export_request req = {0};
    tack_dlpack_export_options opts;
    bool versioned = false;
    CHECK_INVALID(tack_dlpack_export_prepare(NULL, &req, &versioned, &opts));
    CHECK_INVALID(tack_dlpack_export_prepare(arr, NULL, &versioned, &opts));
    CHECK_INVALID(tack_dlpack_export_prepare(arr, &req, NULL, &opts));
    CHECK_INVALID(tack_dlpack_export_prepare(arr, &req, &versioned, NULL));
    CHECK_INVALID(tack_dlpack_exchange_api_find(0, NULL));
    /* The stream rules take no pointer but the exchange API's pair: none, no wait. */
    CHECK(tack_dlpack_backend_name(-1) == NULL);
    CHECK(tack_dlpack_stream_device(kDLCPU, 0) == NULL);
    CHECK_EQ_INT(tack_dlpack_consumer_stream(kDLCPU, 0), 0);
    DLPackExchangeAPI api;
    memset(&api, 0, sizeof api);
    DLManagedTensorVersioned mt;
    memset(&mt, 0, sizeof mt);
    mt.version.major = 1;
    mt.dl_tensor.device.device_type = kDLCUDA;
    CHECK(!tack_dlpack_exchange_pending_work(NULL, &mt));
    CHECK(!tack_dlpack_exchange_pending_work(&api, NULL));
    CHECK(out == NULL);
    tack_array_release(arr);
}

TACK_TEST(null_args_dtypes_and_status)
{
    tack_dtype dt;
    CHECK_INVALID(tack_dtype_from_name("float32", NULL));
    CHECK_STATUS(tack_dtype_from_name(NULL, &dt), TACK_ERR_BAD_DTYPE);
    CHECK_INVALID(tack_dtype_from_dlpack(2, 32, NULL));
    CHECK(tack_dtype_get((tack_dtype)-1) == NULL);
    float f = 1.0f;
    tack_convert(NULL, TACK_FLOAT32, &f, TACK_FLOAT32, 1);
    tack_convert(&f, TACK_FLOAT32, NULL, TACK_FLOAT32, 1);
    tack_convert(&f, TACK_DTYPE_COUNT, &f, TACK_FLOAT32, 1);
    CHECK_EQ_DBL(f, 1.0);
    tack_set_allocator(NULL); /* restores the default allocator */
    CHECK(tack_status_name((tack_status)-1) != NULL);
    CHECK(strcmp(tack_status_message((tack_status)-1), "unknown status") == 0);
    CHECK_EQ_INT(tack_status_kind((tack_status)-1), TACK_KIND_RUNTIME);
    /* The parts of a NULL-argument failure: the problem names the argument. */
    CHECK_INVALID(tack_default_device(NULL));
    CHECK(strstr(tack_last_error_problem(), "NULL") != NULL);
    CHECK(tack_last_error_remedy() < TACK_REMEDY_COUNT);
    CHECK(tack_last_error_origin() != NULL);
}

TACK_TEST(null_args_nvrtc)
{
    /* Arguments are checked before NVRTC is looked for: no toolkit is needed. */
    int major = 0, minor = 0, yes = 0;
    char target[TACK_RTC_ARCH_CAP] = "";
    void *image = NULL;
    size_t nbytes = 0;
    char *log = (char *)"untouched";
    CHECK_INVALID(tack_rtc_version(TACK_RTC_NVRTC, NULL, &minor));
    CHECK_INVALID(tack_rtc_version(TACK_RTC_NVRTC, &major, NULL));
    CHECK_INVALID(tack_rtc_supports(TACK_RTC_NVRTC, "sm_90", NULL));
    CHECK_INVALID(tack_rtc_supports(TACK_RTC_NVRTC, NULL, &yes));
    CHECK_INVALID(tack_rtc_choose(TACK_RTC_NVRTC, "sm_90", NULL, sizeof target));
    CHECK_INVALID(tack_rtc_choose(TACK_RTC_NVRTC, NULL, target, sizeof target));
    CHECK_INVALID(tack_rtc_compile(TACK_RTC_NVRTC, NULL, "k.cu", "compute_90", &image,
                                   &nbytes, &log));
    CHECK(log == NULL);
    CHECK_INVALID(tack_rtc_compile(TACK_RTC_NVRTC, "", NULL, "compute_90", &image,
                                   &nbytes, &log));
    CHECK_INVALID(tack_rtc_compile(TACK_RTC_NVRTC, "", "k.cu", "compute_90", NULL,
                                   &nbytes, &log));
    CHECK_INVALID(
        tack_rtc_compile(TACK_RTC_NVRTC, "", "k.cu", "compute_90", &image, NULL, &log));
    CHECK_INVALID(tack_rtc_compile(TACK_RTC_NVRTC, "", "k.cu", "compute_90", &image,
                                   &nbytes, NULL));
    CHECK(image == NULL && nbytes == 0 && major == 0 && yes == 0 && target[0] == 0);
    tack_rtc_free(NULL);
    tack_rtc_get_stats(TACK_RTC_NVRTC, NULL);
}

TACK_TEST(null_args_elements_and_regions)
{
    tack_array *arr = small_array(), *out = NULL;
    int64_t index[1] = {0}, shape[1] = {4};
    size_t offset = 0;
    float value = 1.0f;
    CHECK_INVALID(tack_array_element_offset(NULL, 1, index, &offset));
    CHECK_INVALID(tack_array_element_offset(arr, 1, NULL, &offset));
    CHECK_INVALID(tack_array_element_offset(arr, 1, index, NULL));
    CHECK_INVALID(tack_array_get_element(NULL, 0, &value));
    CHECK_INVALID(tack_array_get_element(arr, 0, NULL));
    CHECK_INVALID(tack_array_set_element(NULL, 0, &value));
    CHECK_INVALID(tack_array_set_element(arr, 0, NULL));
    tack_scalar scalar;
    CHECK_INVALID(tack_element_to_scalar(NULL, TACK_FLOAT32, 0, &scalar));
    CHECK_INVALID(tack_element_to_scalar(&value, TACK_FLOAT32, 0, NULL));
    CHECK_INVALID(tack_scalar_to_element(NULL, TACK_FLOAT32, &value));
    CHECK_OK(tack_element_to_scalar(&value, TACK_FLOAT32, 0, &scalar));
    CHECK_INVALID(tack_scalar_to_element(&scalar, TACK_FLOAT32, NULL));
    int32_t ndim = 0;
    int64_t full[4];
    CHECK_INVALID(tack_array_shape_of_scalars(TACK_FLOAT32, 1, shape, NULL, full));
    CHECK_INVALID(tack_array_shape_of_scalars(TACK_FLOAT32, 1, shape, &ndim, NULL));
    CHECK_INVALID(tack_array_shape_of_scalars(TACK_FLOAT32, 1, NULL, &ndim, full));
    tack_exported_memory mem;
    CHECK_INVALID(tack_array_export_memory(NULL, &mem));
    CHECK_INVALID(tack_array_export_memory(arr, NULL));
    CHECK_INVALID(tack_array_reclaim(NULL));
    static float data[4];
    released = 0;
    CHECK_INVALID(tack_array_wrap_region(NULL, data, sizeof data, TACK_FLOAT32, 1,
                                         shape, false, count_release, NULL, &out));
    CHECK_INVALID(tack_array_wrap_region(cpu(), data, sizeof data, TACK_FLOAT32, 1,
                                         shape, false, count_release, NULL, NULL));
    CHECK_EQ_INT(released, 2);
    CHECK(out == NULL);
    tack_array_release(arr);
}

TACK_TEST(null_args_kernel_build)
{
    fresh_cache_dir();
    tack_kernel *k = NULL;
    char *log = (char *)"untouched";
    CHECK_INVALID(tack_kernel_build(NULL, "t.py", double_kernel_source, &k, &log));
    CHECK(log == NULL); /* a failed build leaves *log set, even for a bad argument */
    CHECK_INVALID(tack_kernel_build("double", NULL, double_kernel_source, &k, &log));
    CHECK_INVALID(tack_kernel_build("double", "t.py", NULL, &k, &log));
    CHECK_INVALID(
        tack_kernel_build("double", "t.py", double_kernel_source, NULL, &log));
    CHECK_INVALID(tack_kernel_build("double", "t.py", double_kernel_source, &k, NULL));
    CHECK(k == NULL);
    tack_kernel_log_free(NULL);
    tack_kernel_get_stats(NULL);
}

TACK_TEST(null_args_kernel_launch)
{
    fresh_cache_dir();
    tack_kernel *k = NULL;
    char *log = NULL;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    double out[4];
    int64_t shape[1] = {4};
    tack_kernel_arg args[2] = {{out, shape, 0, 0}, {NULL, NULL, -1, 0}};
    tack_kernel_value result;
    CHECK_INVALID(tack_kernel_launch(NULL, args));
    CHECK_INVALID(tack_kernel_launch(k, NULL));
    CHECK_INVALID(tack_kernel_launch_ex(NULL, args, 0, &result));
    CHECK_INVALID(tack_kernel_launch_ex(k, NULL, 0, &result));
    CHECK_OK(tack_kernel_launch_ex(k, args, 0, NULL)); /* the result is optional */
    CHECK_EQ_DBL(out[3], 6.0);
    CHECK_INVALID(tack_kernel_launch_on(NULL, NULL, args, 0, &result));
    CHECK_INVALID(tack_kernel_launch_on(NULL, k, NULL, 0, &result));
    out[3] = 0;
    CHECK_OK(tack_kernel_launch_on(NULL, k, args, 0, NULL)); /* no device: fine */
    CHECK_EQ_DBL(out[3], 6.0);
    tack_kernel_set_caller_lock(NULL); /* NULL is "no lock": nothing to refuse */
    CHECK_INVALID(tack_kernel_launch_on_stream(NULL, NULL, args, 0, -1, &result));
    CHECK_INVALID(tack_kernel_launch_on_stream(NULL, k, NULL, 0, -1, &result));
    out[3] = 0;
    /* The host has no streams: only -1, and a refused stream runs nothing. */
    CHECK_STATUS(tack_kernel_launch_on_stream(NULL, k, args, 0, 1, NULL),
                 TACK_ERR_DLPACK_INVALID);
    CHECK_EQ_DBL(out[3], 0.0);
    CHECK_OK(tack_kernel_launch_on_stream(NULL, k, args, 0, -1, NULL));
    CHECK_EQ_DBL(out[3], 6.0);
    tack_kernel_release(NULL);
    CHECK_EQ_INT(tack_kernel_dlpack_type(NULL), 0);
}

TACK_TEST(null_args_kernel_check_build)
{
    fresh_cache_dir();
    tack_kernel *k = NULL;
    char *log = NULL;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    const char *names[2] = {"out", "fail_at"};
    const uint32_t key[4] = {0x10b01u, 1u, 0u, kDLCPU};
    const bool stored[2] = {true, false};
    CHECK_OK(tack_kernel_check_build(k, "double", 2, names, key, stored));
    CHECK_INVALID(tack_kernel_check_build(NULL, "double", 2, names, key, stored));
    CHECK_INVALID(tack_kernel_check_build(k, NULL, 2, names, key, stored));
    CHECK_INVALID(tack_kernel_check_build(k, "double", 2, NULL, key, stored));
    CHECK_INVALID(tack_kernel_check_build(k, "double", 2, names, NULL, stored));
    CHECK_INVALID(tack_kernel_check_build(k, "double", 2, names, key, NULL));
    tack_kernel_release(k);
}

TACK_TEST(null_args_kernel_check_read_first)
{
    const tack_array *arrays[1] = {NULL};
    const char *names[1] = {"x"};
    const bool first[1] = {true}, stored[1] = {false};
    CHECK_OK(tack_kernel_check_read_first("k", 1, arrays, names, first, stored));
    CHECK_OK(tack_kernel_check_read_first("k", 0, NULL, NULL, NULL, NULL));
    CHECK_INVALID(tack_kernel_check_read_first(NULL, 1, arrays, names, first, stored));
    CHECK_INVALID(tack_kernel_check_read_first("k", 1, NULL, names, first, stored));
    CHECK_INVALID(tack_kernel_check_read_first("k", 1, arrays, NULL, first, stored));
    CHECK_INVALID(tack_kernel_check_read_first("k", 1, arrays, names, NULL, stored));
    CHECK_INVALID(tack_kernel_check_read_first("k", 1, arrays, names, first, NULL));
}

TACK_TEST(null_args_kernel_build_for)
{
    tack_kernel *k = NULL;
    char *log = NULL;
    CHECK_INVALID(tack_kernel_build_for(kDLCPU, NULL, "t.py", "s", &k, &log));
    CHECK_INVALID(tack_kernel_build_for(kDLCPU, "k", NULL, "s", &k, &log));
    CHECK_INVALID(tack_kernel_build_for(kDLCPU, "k", "t.py", NULL, &k, &log));
    CHECK_INVALID(tack_kernel_build_for(kDLCPU, "k", "t.py", "s", NULL, &log));
    CHECK_INVALID(tack_kernel_build_for(kDLCPU, "k", "t.py", "s", &k, NULL));
    const tack_kernel_request req = {.source = "s"};
    CHECK_INVALID(tack__kernel_build_with(NULL, "k", "t.py", &req, &k, &log));
    CHECK_INVALID(tack_kernel_build_request(kDLCPU, "k", "t.py", NULL, &k, &log));
    CHECK_INVALID(tack_kernel_build_request(kDLCPU, "k", "t.py",
                                            &(tack_kernel_request){0}, &k, &log));
    CHECK(k == NULL && log == NULL);
}

TACK_TEST(null_args_kernel_checks_and_keys)
{
    tack_array *arr = small_array();
    const tack_array *arrays[1] = {arr};
    const char *names[1] = {"out"};
    bool stored[1] = {true};
    CHECK_INVALID(tack_kernel_check_arrays(NULL, 1, arrays, names, stored));
    CHECK_INVALID(tack_kernel_check_arrays("k", 1, NULL, names, stored));
    CHECK_INVALID(tack_kernel_check_arrays("k", 1, arrays, NULL, stored));
    CHECK_INVALID(tack_kernel_check_arrays("k", 1, arrays, names, NULL));
    CHECK_OK(tack_kernel_check_arrays("k", 0, NULL, NULL, NULL)); /* nothing to check */
    CHECK_EQ_INT(tack_kernel_key_array(NULL), 0); /* no argument's key word is 0 */
    uint32_t tail[2] = {7, 7};
    tack_kernel_key_tail(1, NULL, true, tail); /* no arrays: the CPU */
    CHECK_EQ_INT(tail[0], 1);
    CHECK_EQ_INT(tail[1], kDLCPU);
    tack_kernel_key_tail(1, arrays, false, NULL);
    uint32_t key[1] = {tack_kernel_key_array(arr)};
    CHECK_EQ_INT(tack_kernel_params_size(1, NULL), 0);
    CHECK_EQ_INT(tack_kernel_params_size(1, key), 16);
    uint64_t block[2] = {0, 0};
    tack_kernel_arg arg = {tack_array_data(arr), tack_array_shape(arr), 0, 0};
    tack_kernel_params_pack(1, NULL, &arg, block);
    tack_kernel_params_pack(1, key, NULL, block);
    tack_kernel_params_pack(1, key, &arg, NULL);
    CHECK(block[0] == 0 && block[1] == 0);
    /* Without the arrays or their flags nothing is promised. */
    CHECK(!tack_kernel_args_shared(1, NULL));
    CHECK(!tack_kernel_args_disjoint(1, NULL, stored));
    CHECK(!tack_kernel_args_disjoint(1, arrays, NULL));
    CHECK(tack_kernel_args_disjoint(1, arrays, stored));
    tack_array_release(arr);
}

/* ---- every public function is here ---------------------------------------------- */

/* The whole file at path, NUL-terminated; the caller frees it. */
static char *
read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        tack_test_fail(__FILE__, __LINE__, "cannot open %s", path);
    }
    char *text = NULL;
    size_t len = 0;
    char chunk[4096];
    for (size_t n; (n = fread(chunk, 1, sizeof chunk, f)) > 0; len += n) {
        text = realloc(text, len + n + 1);
        CHECK(text != NULL);
        memcpy(text + len, chunk, n);
    }
    fclose(f);
    if (!text) {
        text = calloc(1, 1);
        CHECK(text != NULL);
    }
    text[len] = '\0';
    return text;
}

static bool
ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Whether text calls name: the whole identifier, then '(' after any blanks. */
static bool
calls(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
        const char *q = p + n;
        while (isspace((unsigned char)*q)) {
            q++;
        }
        if ((p == text || !ident_char(p[-1])) && *q == '(') {
            return true;
        }
    }
    return false;
}

/*
 * Checks each function a header declares with TACK_API: its name is the identifier
 * before the first '(' after the marker. Functions of no parameter ("(void)") take
 * no handle and are let through; every other one must be called in test. Returns
 * how many declarations were seen.
 */
static int
check_header(const char *path, const char *test)
{
    char *text = read_text(path);
    int seen = 0;
    for (const char *p = strstr(text, "TACK_API"); p; p = strstr(p + 1, "TACK_API")) {
        const char *open = strchr(p, '(');
        const char *end = strpbrk(p, ";{");
        if (!open || (end && end < open)) {
            continue;
        }
        const char *stop = open;
        while (stop > p && isspace((unsigned char)stop[-1])) {
            stop--;
        }
        const char *start = stop;
        while (start > p && ident_char(start[-1])) {
            start--;
        }
        char name[128];
        size_t n = (size_t)(stop - start);
        if (n < 5 || n >= sizeof name || strncmp(start, "tack_", 5) != 0) {
            continue; /* the marker's own definition in export.h */
        }
        memcpy(name, start, n);
        name[n] = '\0';
        seen++;
        if (strncmp(open, "(void)", 6) == 0) {
            continue;
        }
        if (!calls(test, name)) {
            tack_test_fail(__FILE__, __LINE__,
                           "%s (%s) is not called in tests/c/test_null_args.c: add it "
                           "with each pointer argument NULL in turn",
                           name, path);
        }
    }
    free(text);
    return seen;
}

TACK_TEST(null_args_cover_every_public_function)
{
    char *test = read_text(TACK_TEST_SOURCE_ROOT "/tests/c/test_null_args.c");
    const char *dir_path = TACK_TEST_SOURCE_ROOT "/include/tack";
    DIR *dir = opendir(dir_path);
    if (!dir) {
        tack_test_fail(__FILE__, __LINE__, "cannot open %s", dir_path);
    }
    int seen = 0, headers = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        size_t n = strlen(e->d_name);
        bool header = (n > 2 && strcmp(e->d_name + n - 2, ".h") == 0) ||
                      (n > 5 && strcmp(e->d_name + n - 5, ".h.in") == 0);
        if (header) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir_path, e->d_name);
            seen += check_header(path, test);
            headers++;
        }
    }
    closedir(dir);
    free(test);
    /* A parse that finds nothing would pass vacuously. */
    CHECK(headers >= 10);
    CHECK(seen >= 100);
}
