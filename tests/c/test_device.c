/* test_device.c: device names, the registry, options and missing drivers. */
#include "../backends/gpu_driver.h"
#include "harness.h"

TACK_TEST(device_parse_reads_name_and_ordinal)
{
    char name[32];
    int ord = 0;
    CHECK_OK(tack_device_parse("cuda:1", name, sizeof name, &ord));
    CHECK(strcmp(name, "cuda") == 0);
    CHECK_EQ_INT(ord, 1);
    ord = 3;
    CHECK_OK(tack_device_parse("cpu", name, sizeof name, &ord));
    CHECK_EQ_INT(ord, 3);
    CHECK_STATUS(tack_device_parse("cuda:", name, sizeof name, &ord),
                 TACK_ERR_UNKNOWN_DEVICE);
    CHECK_STATUS(tack_device_parse("cuda:x", name, sizeof name, &ord),
                 TACK_ERR_UNKNOWN_DEVICE);
    CHECK_STATUS(tack_device_parse("", name, sizeof name, &ord),
                 TACK_ERR_UNKNOWN_DEVICE);
}

TACK_TEST(registry_gives_the_same_cpu_device)
{
    tack_device *a, *b;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &a));
    CHECK_OK(tack_device_open("cpu", 0, NULL, &b));
    CHECK(a == b);
    CHECK(strcmp(tack_device_backend_name(a), "cpu") == 0);
    CHECK_EQ_INT(tack_device_dlpack_type(a), 1);
    CHECK_STATUS(tack_device_open("cpu", 1, NULL, &b), TACK_ERR_UNKNOWN_DEVICE);
    tack_device_release(a);
    tack_device_release(a);
}

TACK_TEST(unknown_devices_and_metal_are_refused)
{
    tack_device *d;
    CHECK_STATUS(tack_device_open("tpu", 0, NULL, &d), TACK_ERR_UNKNOWN_DEVICE);
    CHECK_STATUS(tack_device_open("metal", 0, NULL, &d), TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(tack_last_error(), "macOS") != NULL);
}

/* Whether a host has ROCm or Level Zero installed must not decide these tests: the
 * missing library and the present one are each made, not found. */
TACK_TEST(missing_gpu_driver_names_the_library)
{
    static const char *const absent[] = {"/nonexistent/libtack-no-driver.so.6",
                                         "/nonexistent/libtack-no-driver.so", NULL};
    void *handle = &handle;
    CHECK_STATUS(tack__driver_load("hip", absent, "the ROCm HIP runtime", &handle),
                 TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(handle == &handle); /* written only on success */
    CHECK(strstr(tack_last_error(),
                 "/nonexistent/libtack-no-driver.so.6, "
                 "/nonexistent/libtack-no-driver.so") != NULL);
    CHECK(strstr(tack_last_error(), "install the ROCm HIP runtime") != NULL);
    CHECK_EQ_INT(tack_last_error_remedy(), TACK_REMEDY_CPU);
}

TACK_TEST(present_gpu_driver_without_device_support_says_so)
{
    /* The hip backend's table with a library every host has as its driver. */
    static const char *const present[] = {"libc.so.6", NULL};
    const tack__driver_stub libc_driver = {present, "the C library"};
    tack_backend hip = tack__backend_hip;
    hip.impl = &libc_driver;
    void *state = NULL;
    CHECK_STATUS(hip.open(&hip, 0, NULL, &state), TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(state == NULL);
    CHECK(strstr(tack_last_error(), "this build of Tack has no 'hip' array support") !=
          NULL);
}

TACK_TEST(hip_device_is_unavailable_with_or_without_rocm)
{
    /* Which of the two reasons depends on the host; the refusal does not. */
    tack_device *d = NULL;
    CHECK_STATUS(tack_device_open("hip", 0, NULL, &d), TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(d == NULL);
    CHECK(strstr(tack_last_error(), "libamdhip64") != NULL ||
          strstr(tack_last_error(), "no 'hip' array support") != NULL);
}

TACK_TEST(options_are_declared_per_backend)
{
    CHECK(tack_device_accepts_option("level_zero", "external_context"));
    CHECK(!tack_device_accepts_option("cpu", "external_context"));
    CHECK(!tack_device_accepts_option("cuda", "externl_context"));
    CHECK(!tack_device_accepts_option("nonsense", "external_context"));
}

TACK_TEST(external_context_names_missing_handles_before_loading_a_driver)
{
    tack_external_context ctx = {0x10, 0, 0, 0x1 | 0x2};
    tack_device_options opts = {&ctx};
    tack_device *d;
    CHECK_STATUS(tack_device_open("level_zero", 0, &opts, &d),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK(strstr(tack_last_error(), "for: device, context;") != NULL);
}

TACK_TEST(default_device_is_cpu_until_set)
{
    tack_device *d;
    CHECK_OK(tack_default_device(&d));
    CHECK(strcmp(tack_device_backend_name(d), "cpu") == 0);
    tack_set_default_device(d);
    tack_device *e;
    CHECK_OK(tack_default_device(&e));
    CHECK(d == e);
    tack_device_release(d);
    tack_device_release(e);
}
