/*
 * test_cuda_kernel.c: kernels on the CUDA backend through the public C API, on the
 * strict stand-in driver (tests/standin/cuda): a reduction's value and its identity
 * over no trip, a debug-mode failure worded as on the CPU, a failed scratch
 * allocation, the refusals of malformed bundles, and which NVRTC versions a driver
 * takes. The bundles are tack.kernel's, generated once into tests/c/data
 * (make_cuda_bundles.py there); building one compiles its CUDA part with NVRTC, so
 * these tests need the toolkit's NVRTC (as test_nvrtc.c does), not a GPU.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../csrc/backends/gpu/gpu_kernel.h"
#include "cuda_test_util.h"
#include "harness.h"
#include "kernel_test_util.h"
#include "tack/dlpack.h"

#ifndef TACK_TEST_DATA
#error "TACK_TEST_DATA must name tests/c/data"
#endif

/* Kernels live for the process: kept reachable so leak checkers see no loss. */
static tack_kernel *kept[4];
static char *bundle_text[4];

/* The stand-in with a private kernel cache. */
static tack_device *
open_standin_cached(const char *fail)
{
    fresh_cache_dir();
    return open_standin(fail);
}

/* The text of tests/c/data/<name> (kept in bundle_text[slot]). */
static char *
read_bundle(const char *name, int slot)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TACK_TEST_DATA, name);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long n = ftell(f);
    CHECK(n > 0 && fseek(f, 0, SEEK_SET) == 0);
    char *text = malloc((size_t)n + 1);
    CHECK(text != NULL);
    CHECK(fread(text, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    text[n] = '\0';
    bundle_text[slot] = text;
    return text;
}

static tack_kernel *
build(const char *name, const char *source, int slot)
{
    char *log = NULL;
    CHECK_OK(tack_kernel_build_for(kDLCUDA, name, "make_cuda_bundles.py", source,
                                   &kept[slot], &log));
    CHECK(log == NULL);
    return kept[slot];
}

/* A float64 array of n values on dev. */
static tack_array *
f64_on(tack_device *dev, tack_dtype dtype, int64_t n, const void *values)
{
    tack_array *a = NULL;
    CHECK_OK(tack_array_empty(dev, dtype, 1, &n, TACK_BUFFER_WRITABLE, &a));
    if (n > 0) {
        CHECK_OK(tack_array_copy_from_host(a, values, dtype, (size_t)n));
    }
    return a;
}

/* total(x) (a float sum) launched over a. */
static tack_status
launch_total(tack_device *dev, tack_kernel *k, tack_array *a, tack_kernel_value *v)
{
    tack_kernel_arg arg = {.data = tack_array_data(a), .shape = tack_array_shape(a)};
    return tack_kernel_launch_on(dev, k, &arg, 0, v);
}

TACK_TEST(cuda_kernel_reduction_returns_the_sum_and_its_identity)
{
    tack_device *dev = open_standin_cached(NULL);
    tack_kernel *k = build("total", read_bundle("cuda_total.bundle", 0), 0);
    CHECK_EQ_INT(tack_kernel_dlpack_type(k), kDLCUDA);
    double x[3000];
    for (int i = 0; i < 3000; i++) {
        x[i] = (double)i;
    }
    tack_array *a = f64_on(dev, TACK_FLOAT64, 3000, x);
    tack_kernel_value v = {TACK_KERNEL_RESULT_NONE, 0, 0.0};
    CHECK_OK(launch_total(dev, k, a, &v));
    CHECK_EQ_INT(v.kind, TACK_KERNEL_RESULT_FLOAT);
    CHECK_EQ_DBL(v.f, 4498500.0);
    tack_array *e = f64_on(dev, TACK_FLOAT64, 0, NULL);
    v.f = -1.0;
    CHECK_OK(launch_total(dev, k, e, &v)); /* only the finish, over no block */
    CHECK_EQ_INT(v.kind, TACK_KERNEL_RESULT_FLOAT);
    CHECK_EQ_DBL(v.f, 0.0);
    tack_array_release(a);
    tack_array_release(e);
    tack_device_release(dev);
}

TACK_TEST(cuda_kernel_failed_scratch_allocation_is_no_memory_and_leaves_nothing)
{
    /* the 2nd cuMemAllocAsync is the first launch's scratch (the array is the 1st) */
    tack_device *dev = open_standin_cached("cuMemAllocAsync:2");
    tack_kernel *k = build("total", read_bundle("cuda_total.bundle", 0), 0);
    double x[4] = {1.0, 2.0, 3.0, 4.5};
    tack_array *a = f64_on(dev, TACK_FLOAT64, 4, x);
    tack_kernel_value v = {TACK_KERNEL_RESULT_NONE, 0, 0.0};
    CHECK_STATUS(launch_total(dev, k, a, &v), TACK_ERR_NO_MEMORY);
    CHECK(strstr(tack_last_error(), "cuMemAllocAsync") != NULL);
    CHECK_EQ_INT(v.kind, TACK_KERNEL_RESULT_NONE); /* untouched on failure */
    CHECK_OK(launch_total(dev, k, a, &v));
    CHECK_EQ_DBL(v.f, 10.5);
    tack_array_release(a);
    tack_device_release(dev);
}

TACK_TEST(cuda_kernel_debug_failure_is_the_cpus_index_error)
{
    tack_device *dev = open_standin_cached(NULL);
    tack_kernel *k = build("gather", read_bundle("cuda_gather.bundle", 1), 1);
    double x[6] = {0, 1, 2, 3, 4, 5};
    int64_t idx[4] = {5, 0, 9, 1};
    tack_array *out = f64_on(dev, TACK_FLOAT64, 4, x);
    tack_array *xs = f64_on(dev, TACK_FLOAT64, 6, x);
    tack_array *is = f64_on(dev, TACK_INT64, 4, idx);
    tack_kernel_arg args[3] = {
        {.data = tack_array_data(out), .shape = tack_array_shape(out)},
        {.data = tack_array_data(xs), .shape = tack_array_shape(xs)},
        {.data = tack_array_data(is), .shape = tack_array_shape(is)}};
    tack_kernel_value v;
    CHECK_STATUS(tack_kernel_launch_on(dev, k, args, 0, &v), TACK_ERR_INDEX);
    /* as the CPU words it (debug builds append where the error started) */
    CHECK(strstr(tack_last_error(),
                 "index 9 is out of bounds for axis 0 of 'x' with size 6 in kernel "
                 "'gather' (make_cuda_bundles.py, line 26)") == tack_last_error());
    idx[2] = 2;
    CHECK_OK(tack_array_copy_from_host(is, idx, TACK_INT64, 4));
    CHECK_OK(tack_kernel_launch_on(dev, k, args, 0, &v));
    CHECK_EQ_INT(v.kind, TACK_KERNEL_RESULT_NONE);
    double back[4];
    CHECK_OK(tack_array_copy_to_host(out, back, TACK_FLOAT64));
    CHECK_EQ_DBL(back[0], 5.0);
    CHECK_EQ_DBL(back[2], 2.0);
    tack_array_release(out);
    tack_array_release(xs);
    tack_array_release(is);
    tack_device_release(dev);
}

/* source with its first occurrence of `from` replaced by `to` (malloc'd). */
static char *
edited(const char *source, const char *from, const char *to)
{
    const char *at = strstr(source, from);
    CHECK(at != NULL);
    size_t head = (size_t)(at - source), n = strlen(source) + strlen(to) + 1;
    char *out = malloc(n);
    CHECK(out != NULL);
    memcpy(out, source, head);
    snprintf(out + head, n - head, "%s%s", to, at + strlen(from));
    return out;
}

TACK_TEST(cuda_kernel_malformed_bundles_are_refused)
{
    tack_device *dev = open_standin_cached(NULL);
    const char *good = read_bundle("cuda_gather.bundle", 1);
    static const char *const edits[][2] = {
        /* no names line */
        {"// tack-cuda-names 696478 78 6f7574\n", ""},
        /* a name of odd length, not hex, with a NUL byte, an empty one */
        {"names 696478 78 ", "names 69647 78 "},
        {"names 696478 78 ", "names 69zz78 78 "},
        {"names 696478 78 ", "names 690078 78 "},
        {"names 696478 78 ", "names 696478  78 "},
        /* facts out of range or contradicting each other */
        {"partial_size=0", "partial_size=5000"},
        {"partial_size=0", "partial_size=-8"},
        {"result_kind=0", "result_kind=9"},
        {"parallel=1", "parallel=x"},
        {"result_kind=0", "result_kind=1x"},
        /* a result kind the C part does not have */
        {"result_kind=0", "result_kind=2"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        char *bad = edited(good, edits[i][0], edits[i][1]);
        tack_kernel *k = NULL;
        char *log = NULL;
        tack_status st = tack_kernel_build_for(kDLCUDA, "gather",
                                               "make_cuda_bundles.py", bad, &k, &log);
        if (st != TACK_ERR_INVALID_ARGUMENT) {
            tack_test_fail(__FILE__, __LINE__, "edit %zu (%s -> %s): status %s (%s)", i,
                           edits[i][0], edits[i][1], tack_status_name(st),
                           tack_last_error());
        }
        CHECK(k == NULL && log == NULL);
        CHECK(strstr(tack_last_error(), "gather") != NULL);
        free(bad);
    }
    /* needs_ctx=0 with a reduction's partials: the record would be missing */
    const char *total = read_bundle("cuda_total.bundle", 0);
    char *bad = edited(total, "needs_ctx=1", "needs_ctx=0");
    tack_kernel *k = NULL;
    CHECK_STATUS(
        tack_kernel_build_for(kDLCUDA, "total", "make_cuda_bundles.py", bad, &k, NULL),
        TACK_ERR_INVALID_ARGUMENT);
    free(bad);
    tack_device_release(dev);
}

/* One build of a bundle (kept when it succeeds), for the allocation sweep. */
static tack_status
build_attempt(void *source)
{
    tack_kernel *made = NULL;
    char *log = NULL;
    tack_status st = tack_kernel_build_for(kDLCUDA, "gather", "make_cuda_bundles.py",
                                           source, &made, &log);
    CHECK(log == NULL && (made != NULL) == (st == TACK_OK));
    kept[2] = made;
    return st;
}

TACK_TEST(alloc_failure_cuda_kernel_build)
{
    tack_device *dev = open_standin_cached(NULL);
    char *source = read_bundle("cuda_gather.bundle", 1);
    build("gather", source, 1); /* the C part is then in the CPU's table */
    tack_test_alloc_sweep(build_attempt, source);
    tack_device_release(dev);
}

TACK_TEST(cuda_kernel_nvrtc_no_newer_than_the_driver)
{
    /* equal or older: anything loads */
    CHECK_OK(tack__cuda_nvrtc_fits("k", 13, 0, 13000, TACK_NVRTC_PTX));
    CHECK_OK(tack__cuda_nvrtc_fits("k", 12, 4, 13000, TACK_NVRTC_PTX));
    CHECK_OK(tack__cuda_nvrtc_fits("k", 12, 8, 12080, TACK_NVRTC_CUBIN));
    /* a newer minor: a CUBIN only */
    CHECK_OK(tack__cuda_nvrtc_fits("k", 12, 9, 12020, TACK_NVRTC_CUBIN));
    CHECK_STATUS(tack__cuda_nvrtc_fits("k", 12, 9, 12020, TACK_NVRTC_PTX),
                 TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(tack_last_error(),
                 "NVRTC 12.9 is newer than the CUDA driver (12.2)") != NULL);
    CHECK(strstr(tack_last_error(), "PTX") != NULL);
    /* a newer major: nothing */
    CHECK_STATUS(tack__cuda_nvrtc_fits("k", 13, 0, 12080, TACK_NVRTC_CUBIN),
                 TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(tack_last_error(),
                 "NVRTC 13.0 is newer than the CUDA driver (12.8)") != NULL);
    CHECK(strstr(tack_last_error(), "TACK_NVRTC") != NULL);
}
