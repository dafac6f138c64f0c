/*
 * test_cuda_kernel.c: kernels on the CUDA backend through the public C API, on the
 * strict stand-in driver (tests/standin/cuda): a reduction's value and its identity
 * over no trip, a debug-mode failure worded as on the CPU, a failed scratch
 * allocation, the refusals of malformed build requests, and which NVRTC versions a
 * driver takes. The requests are tack.kernel's, generated once into tests/c/data
 * (make_cuda_requests.py there); launching one compiles its CUDA source with NVRTC,
 * so these tests need the toolkit's NVRTC (as test_nvrtc.c does), not a GPU.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../csrc/backends/cuda/cuda_internal.h"
#include "../../csrc/backends/gpu/gpu_kernel.h"
#include "cuda_test_util.h"
#include "data/cuda_requests.h"
#include "harness.h"
#include "kernel_test_util.h"
#include "tack/dlpack.h"

#ifndef TACK_TEST_DATA
#error "TACK_TEST_DATA must name tests/c/data"
#endif

/* Kernels live for the process: kept reachable so leak checkers see no loss. */
static tack_kernel *kept[4];
static char *data_text[4];

/* The stand-in with a private kernel cache. */
static tack_device *
open_standin_cached(const char *fail)
{
    fresh_cache_dir();
    return open_standin(fail);
}

/* The text of the kernel's file with extension ext in tests/c/data (kept in
 * data_text[slot]). */
static char *
read_data(const char *kernel, const char *ext, int slot)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/cuda_%s.%s", TACK_TEST_DATA, kernel, ext);
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
    free(data_text[slot]);
    data_text[slot] = text;
    return text;
}

enum { TOTAL = 0, GATHER = 1 };

/* The build request of kernel TOTAL or GATHER: the facts of cuda_requests.h, the
 * CUDA source and the C twin read from tests/c/data. */
static tack_kernel_request
request(int which)
{
    static const tack_kernel_request facts[2] = {{CUDA_TOTAL_FACTS},
                                                 {CUDA_GATHER_FACTS}};
    static const char *const kernels[2] = {"total", "gather"};
    tack_kernel_request r = facts[which];
    r.source = read_data(kernels[which], "cu", 2 * which);
    r.twin_source = read_data(kernels[which], "c", 2 * which + 1);
    return r;
}

static tack_kernel *
build(const char *name, int which)
{
    char *log = NULL;
    tack_kernel_request r = request(which);
    CHECK_OK(tack_kernel_build_request(kDLCUDA, name, "make_cuda_requests.py", &r,
                                       &kept[which], &log));
    CHECK(log == NULL);
    return kept[which];
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
    tack_kernel *k = build("total", TOTAL);
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

TACK_TEST(cuda_kernel_launched_without_a_device_names_its_platform)
{
    tack_device *dev = open_standin_cached(NULL);
    tack_kernel *k = build("total", TOTAL);
    double x[4] = {1.0, 2.0, 3.0, 4.0};
    int64_t shape[1] = {4};
    tack_kernel_arg arg = {.data = x, .shape = shape};
    tack_kernel_value v = {TACK_KERNEL_RESULT_NONE, 0, 0.0};
    CHECK_STATUS(tack_kernel_launch_on(NULL, k, &arg, 0, &v),
                 TACK_ERR_INVALID_ARGUMENT);
    /* the message, then (in debug builds) where it was raised */
    const char *want =
        "kernel 'total' runs on CUDA: launch it on a CUDA device "
        "(tack_kernel_launch_on)";
    CHECK(strncmp(tack_last_error(), want, strlen(want)) == 0);
    CHECK_EQ_INT(v.kind, TACK_KERNEL_RESULT_NONE);
    tack_device_release(dev);
}

TACK_TEST(cuda_kernel_failed_scratch_allocation_is_no_memory_and_leaves_nothing)
{
    /* the 2nd cuMemAllocAsync is the first launch's scratch (the array is the 1st) */
    tack_device *dev = open_standin_cached("cuMemAllocAsync:2");
    tack_kernel *k = build("total", TOTAL);
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
    tack_kernel *k = build("gather", GATHER);
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
                 "'gather' (make_cuda_requests.py, line 26)") == tack_last_error());
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

TACK_TEST(cuda_kernel_malformed_requests_are_refused)
{
    tack_device *dev = open_standin_cached(NULL);
    static const char *const null_name[] = {"idx", NULL, "out"};
    static const char *const empty_name[] = {"idx", "", "out"};
    const tack_kernel_request gather = request(GATHER);
    const tack_kernel_request total = request(TOTAL);
    tack_kernel_request bad[14];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bad[i] = i < 12 ? gather : total;
    }
    bad[0].twin_source = NULL; /* a source alone */
    bad[1].names = null_name;  /* a NULL name, an empty one */
    bad[2].names = empty_name;
    bad[3].nnames = -1; /* a count out of range, or names missing */
    bad[4].nnames = TACK_KERNEL_MAX_NAMES + 1;
    bad[5].names = NULL;
    bad[6].partial_size = 5000; /* facts out of range */
    bad[7].partial_size = -8;
    bad[8].result_kind = 9;
    bad[9].parallel = 2;
    bad[10].host_trips = -1;
    /* a result kind the twin does not have */
    bad[11].result_kind = TACK_KERNEL_RESULT_FLOAT;
    /* a reduction's partials without the record, or without a grid */
    bad[12].needs_ctx = 0;
    bad[13].parallel = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tack_kernel *k = NULL;
        char *log = NULL;
        const char *name = i < 12 ? "gather" : "total";
        tack_status st = tack_kernel_build_request(
            kDLCUDA, name, "make_cuda_requests.py", &bad[i], &k, &log);
        if (st != TACK_ERR_INVALID_ARGUMENT) {
            tack_test_fail(__FILE__, __LINE__, "request %zu: status %s (%s)", i,
                           tack_status_name(st), tack_last_error());
        }
        CHECK(k == NULL && log == NULL);
        CHECK(strstr(tack_last_error(), name) != NULL);
        CHECK(strstr(tack_last_error(), "cuda") != NULL);
    }
    tack_device_release(dev);
}

TACK_TEST(cpu_refuses_a_request_with_a_twin)
{
    fresh_cache_dir();
    tack_kernel_request r = request(TOTAL);
    r.source = r.twin_source; /* C, which the CPU builds, but with a twin */
    tack_kernel *k = NULL;
    char *log = NULL;
    CHECK_STATUS(tack_kernel_build_request(kDLCPU, "total", "make_cuda_requests.py", &r,
                                           &k, &log),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK(k == NULL && log == NULL);
    CHECK(strstr(tack_last_error(), "twin") != NULL);
    r.twin_source = NULL;
    CHECK_OK(tack_kernel_build_request(kDLCPU, "total", "make_cuda_requests.py", &r, &k,
                                       &log));
    CHECK(tack_kernel_dlpack_type(k) == kDLCPU);
}

/* One build of a request (kept when it succeeds), for the allocation sweep. */
static tack_status
build_attempt(void *request)
{
    tack_kernel *made = NULL;
    char *log = NULL;
    tack_status st = tack_kernel_build_request(
        kDLCUDA, "gather", "make_cuda_requests.py", request, &made, &log);
    CHECK(log == NULL && (made != NULL) == (st == TACK_OK));
    kept[2] = made;
    return st;
}

TACK_TEST(alloc_failure_cuda_kernel_build)
{
    tack_device *dev = open_standin_cached(NULL);
    build("gather", GATHER); /* the twin is then in the CPU's table */
    tack_kernel_request r = request(GATHER);
    tack_test_alloc_sweep(build_attempt, &r);
    tack_device_release(dev);
}

TACK_TEST(cuda_kernel_nvrtc_no_newer_than_the_driver)
{
    /* equal or older: anything loads */
    CHECK_OK(tack__cuda_nvrtc_fits("k", 13, 0, 13000, "compute_90"));
    CHECK_OK(tack__cuda_nvrtc_fits("k", 12, 4, 13000, "compute_90"));
    CHECK_OK(tack__cuda_nvrtc_fits("k", 12, 8, 12080, "sm_90"));
    /* a newer minor: a CUBIN only */
    CHECK_OK(tack__cuda_nvrtc_fits("k", 12, 9, 12020, "sm_90"));
    CHECK_STATUS(tack__cuda_nvrtc_fits("k", 12, 9, 12020, "compute_90"),
                 TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(tack_last_error(),
                 "NVRTC 12.9 is newer than the CUDA driver (12.2)") != NULL);
    CHECK(strstr(tack_last_error(), "PTX") != NULL);
    /* a newer major: nothing */
    CHECK_STATUS(tack__cuda_nvrtc_fits("k", 13, 0, 12080, "sm_90"),
                 TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(tack_last_error(),
                 "NVRTC 13.0 is newer than the CUDA driver (12.8)") != NULL);
    CHECK(strstr(tack_last_error(), "TACK_NVRTC") != NULL);
}

TACK_TEST(gpu_block_limit_keeps_a_groups_partials_in_its_shared_memory)
{
    tack__gpu_kernel k;
    memset(&k, 0, sizeof k);
    k.pub.name = "many";
    unsigned most = 0;
    CHECK_OK(tack__gpu_block_limit(&k, 49152, 1024, "shared memory", &most));
    CHECK_EQ_INT(most, 1024); /* no reduction: the device's own limit */
    k.partial_size = 8;
    CHECK_OK(tack__gpu_block_limit(&k, 49152, 1024, "shared memory", &most));
    CHECK_EQ_INT(most, 1024);
    k.partial_size = 1280; /* 51 fit: whole warps, 32 */
    CHECK_OK(tack__gpu_block_limit(&k, 65536, 1024, "shared memory", &most));
    CHECK_EQ_INT(most, 32);
    k.partial_size = 4096; /* 12 fit: fewer than a warp, all of them */
    CHECK_OK(tack__gpu_block_limit(&k, 49152, 1024, "shared memory", &most));
    CHECK_EQ_INT(most, 12);
    CHECK_OK(tack__gpu_block_limit(&k, 4096, 1024, "shared memory", &most));
    CHECK_EQ_INT(most, 1);
    most = 77;
    CHECK_STATUS(tack__gpu_block_limit(&k, 4095, 1024, "shared memory", &most),
                 TACK_ERR_UNSUPPORTED);
    CHECK_EQ_INT(most, 77); /* untouched on failure */
    const char *msg = tack_last_error();
    CHECK(strstr(msg, "'many'") && strstr(msg, "4096 bytes") &&
          strstr(msg, "512 reductions") && strstr(msg, "4095 bytes of shared memory"));
}
