/*
 * test_nvrtc.c: NVRTC loaded with dlopen: the library path and its refusals, a
 * CUBIN and a PTX for one architecture, compile errors with NVRTC's log at the
 * source's #line, and the disk cache (reuse, corrupt entries rebuilt, private
 * files). Needs the CUDA toolkit's NVRTC (found as rtc.h says), not a GPU.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "internal.h"
#include "kernel_test_util.h"
#include "rtc.h"

static const char *const saxpy =
    "extern \"C\" __global__ void saxpy(float *y, const float *x, float a, long long n)"
    " {\n"
    "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

static tack_rtc_stats
stats(void)
{
    tack_rtc_stats s;
    tack_rtc_get_stats(TACK_RTC_NVRTC, &s);
    return s;
}

TACK_TEST(nvrtc_arguments_are_checked)
{
    void *image;
    size_t n;
    char *log;
    CHECK_STATUS(
        tack_rtc_compile(TACK_RTC_NVRTC, NULL, "k", "compute_90", &image, &n, &log),
        TACK_ERR_INVALID_ARGUMENT);
    /* architectures NVRTC does not spell, or no runtime compiler Tack knows */
    static const char *const unspelled[] = {
        "sm_9", "sm_", "gfx90a", "sm_90a", "compute_-90", "sm_99999", ""};
    for (size_t i = 0; i < sizeof unspelled / sizeof unspelled[0]; i++) {
        CHECK_STATUS(tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "k", unspelled[i], &image,
                                      &n, &log),
                     TACK_ERR_INVALID_ARGUMENT);
        CHECK(strstr(tack_last_error(), "not an architecture NVRTC spells") != NULL);
    }
    CHECK_STATUS(tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "k", NULL, &image, &n, &log),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(
        tack_rtc_compile(TACK_RTC_COUNT, saxpy, "k", "sm_90", &image, &n, &log),
        TACK_ERR_INVALID_ARGUMENT);
    CHECK(strstr(tack_last_error(), "unknown runtime compiler") != NULL);
    CHECK_STATUS(tack_rtc_version(TACK_RTC_NVRTC, NULL, NULL),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK(!tack_rtc_is_portable(TACK_RTC_NVRTC, "sm_90"));
    CHECK(tack_rtc_is_portable(TACK_RTC_NVRTC, "compute_90"));
    CHECK(!tack_rtc_is_portable(TACK_RTC_NVRTC, "gfx90a"));
    CHECK(!tack_rtc_is_portable(TACK_RTC_COUNT, "compute_90"));
}

TACK_TEST(nvrtc_path_from_env_that_does_not_load_is_device_unavailable)
{
    setenv("TACK_NVRTC", "/nonexistent/libnvrtc.so.99", 1);
    int major, minor;
    CHECK_STATUS(tack_rtc_version(TACK_RTC_NVRTC, &major, &minor),
                 TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(tack_last_error(), "/nonexistent/libnvrtc.so.99") != NULL);
    void *image;
    size_t n;
    char *log;
    CHECK_STATUS(
        tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "k", "compute_90", &image, &n, &log),
        TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(log == NULL);
}

TACK_TEST(nvrtc_path_to_another_library_is_refused)
{
    setenv("TACK_NVRTC", "libm.so.6", 1);
    int major, minor;
    CHECK_STATUS(tack_rtc_version(TACK_RTC_NVRTC, &major, &minor),
                 TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(tack_last_error(), "has no nvrtc") != NULL);
}

TACK_TEST(nvrtc_makes_a_cubin_and_ptx_for_one_architecture)
{
    const char *dir = fresh_cache_dir();
    int major = 0, minor = 0, yes = 0;
    CHECK_OK(tack_rtc_version(TACK_RTC_NVRTC, &major, &minor));
    CHECK(major >= 12);
    CHECK_OK(tack_rtc_supports(TACK_RTC_NVRTC, "sm_90", &yes));
    CHECK_EQ_INT(yes, 1);
    CHECK_OK(tack_rtc_supports(TACK_RTC_NVRTC, "sm_11", &yes));
    CHECK_EQ_INT(yes, 0);
    void *image;
    size_t n;
    char *log;
    CHECK_OK(
        tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "saxpy", "sm_90", &image, &n, &log));
    CHECK(n > 4 && memcmp(image, "\177ELF", 4) == 0);
    tack_rtc_free(image);
    CHECK_OK(tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "saxpy", "compute_90", &image, &n,
                              &log));
    const char *ptx = image;
    CHECK(ptx[n - 1] == '\0');
    CHECK(strstr(ptx, ".target sm_90") != NULL);
    /* --fmad=false: a * x + y stays a multiply and an add. */
    CHECK(strstr(ptx, "mul.rn.f32") != NULL);
    CHECK(strstr(ptx, "fma.") == NULL);
    tack_rtc_free(image);
    CHECK_EQ_INT(stats().compiles, 2);
    remove_cache_dir(dir);
}

TACK_TEST(nvrtc_chooses_a_cubin_or_falls_back_to_older_ptx)
{
    char target[TACK_RTC_ARCH_CAP];
    CHECK_OK(tack_rtc_choose(TACK_RTC_NVRTC, "sm_90", target, sizeof target));
    CHECK(strcmp(target, "sm_90") == 0);
    /* A compute capability this NVRTC does not know (a GPU newer than it): PTX for
     * the highest one below, which the driver can finish. */
    CHECK_OK(tack_rtc_choose(TACK_RTC_NVRTC, "sm_91", target, sizeof target));
    CHECK(strcmp(target, "compute_90") == 0);
    CHECK_OK(tack_rtc_choose(TACK_RTC_NVRTC, "sm_9999", target, sizeof target));
    CHECK(tack_rtc_is_portable(TACK_RTC_NVRTC, target));
    int yes = 0;
    CHECK_OK(tack_rtc_supports(TACK_RTC_NVRTC, target, &yes));
    CHECK_EQ_INT(yes, 1);
    /* Older than anything it supports: refused, naming both. */
    CHECK_STATUS(tack_rtc_choose(TACK_RTC_NVRTC, "sm_30", target, sizeof target),
                 TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(tack_last_error(), "3.0") != NULL);
    /* A device's own architecture is a binary's, never portable code. */
    CHECK_STATUS(tack_rtc_choose(TACK_RTC_NVRTC, "compute_90", target, sizeof target),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tack_rtc_choose(TACK_RTC_NVRTC, "sm_90", NULL, 0),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tack_rtc_choose(TACK_RTC_NVRTC, "sm_90", target, 4),
                 TACK_ERR_INVALID_ARGUMENT);
}

TACK_TEST(nvrtc_compile_error_carries_the_log_at_the_source_line)
{
    const char *dir = fresh_cache_dir();
    const char *bad =
        "#line 41 \"/home/me/model.py\"\n"
        "extern \"C\" __global__ void k(float *a) { a[0] = undeclared; }\n";
    void *image = NULL;
    size_t n = 0;
    char *log = NULL;
    CHECK_STATUS(tack_rtc_compile(TACK_RTC_NVRTC, bad, "k", "sm_90", &image, &n, &log),
                 TACK_ERR_COMPILE);
    CHECK(log != NULL);
    CHECK(strstr(log, "/home/me/model.py(41)") != NULL);
    CHECK(strstr(log, "undeclared") != NULL);
    CHECK(strstr(tack_last_error(), "'k'") != NULL);
    tack_rtc_free(log);
    /* Failures are never cached: the directory holds no entry. */
    CHECK_EQ_INT(stats().failures, 1);
    DIR *d = opendir(dir);
    int files = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        files += e->d_name[0] != '.';
    }
    if (d) {
        closedir(d);
    }
    CHECK_EQ_INT(files, 0);
    remove_cache_dir(dir);
}

TACK_TEST(nvrtc_cache_reuses_an_entry_and_keeps_it_private)
{
    const char *dir = fresh_cache_dir();
    void *a, *b;
    size_t na, nb;
    char *log;
    CHECK_OK(tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "saxpy", "sm_90", &a, &na, &log));
    CHECK_OK(tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "saxpy", "sm_90", &b, &nb, &log));
    CHECK_EQ_INT(stats().compiles, 1);
    CHECK_EQ_INT(stats().disk_hits, 1);
    CHECK(na == nb && memcmp(a, b, na) == 0);
    tack_rtc_free(a);
    tack_rtc_free(b);
    struct stat sb;
    CHECK(stat(dir, &sb) == 0 && (sb.st_mode & 0777) == 0700);
    char path[TACK__PATH_CAP];
    cache_entry_path(dir, ".cubin", path, sizeof path);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
    /* Another architecture or output kind is another entry. */
    CHECK_OK(tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "saxpy", "sm_80", &a, &na, &log));
    tack_rtc_free(a);
    CHECK_OK(
        tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "saxpy", "compute_90", &a, &na, &log));
    tack_rtc_free(a);
    CHECK_EQ_INT(stats().compiles, 3);
    remove_cache_dir(dir);
}

/* tack_rtc_compile with the k-th allocation (and every later one) failing, for
 * every k until it succeeds: each failure is TACK_ERR_NO_MEMORY, writes no image and
 * leaves no allocation behind. */
static void
sweep_compile(bool from_cache)
{
    const char *dir = fresh_cache_dir();
    void *image = NULL;
    size_t n = 0;
    char *log = NULL;
    if (from_cache) {
        CHECK_OK(tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "saxpy", "sm_90", &image, &n,
                                  &log));
        tack_rtc_free(image);
    }
    for (long k = 1;; k++) {
        if (!from_cache) {
            fresh_cache_dir();
        }
        tack_test_counting_allocator(k);
        image = NULL;
        tack_status st =
            tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "saxpy", "sm_90", &image, &n, &log);
        if (st == TACK_OK) {
            CHECK(image != NULL && n > 4);
            tack_rtc_free(image);
            CHECK_EQ_INT(tack_test_live_allocations(), 0);
            break;
        }
        CHECK_EQ_INT(st, TACK_ERR_NO_MEMORY);
        CHECK(image == NULL && log == NULL);
        CHECK_EQ_INT(tack_test_live_allocations(), 0);
        CHECK(k < 100);
    }
    tack_set_allocator(NULL);
    if (from_cache) {
        CHECK(stats().disk_hits >= 1);
    }
    remove_cache_dir(dir);
}

TACK_TEST(alloc_failure_nvrtc_compile)
{
    sweep_compile(false);
}

TACK_TEST(alloc_failure_nvrtc_compile_from_the_disk_cache)
{
    sweep_compile(true);
}

TACK_TEST(nvrtc_corrupt_cache_entry_is_rebuilt)
{
    const char *dir = fresh_cache_dir();
    void *a;
    size_t na;
    char *log;
    CHECK_OK(tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "saxpy", "sm_90", &a, &na, &log));
    char path[TACK__PATH_CAP];
    cache_entry_path(dir, ".cubin", path, sizeof path);
    /* Same size, different bytes: only the recorded hash can tell. */
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0);
    CHECK(pwrite(fd, "garbage!", 8, 16) == 8);
    close(fd);
    void *b;
    size_t nb;
    CHECK_OK(tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "saxpy", "sm_90", &b, &nb, &log));
    CHECK_EQ_INT(stats().rebuilds, 1);
    CHECK_EQ_INT(stats().compiles, 2);
    CHECK(na == nb && memcmp(a, b, na) == 0);
    tack_rtc_free(a);
    tack_rtc_free(b);
    /* The rebuilt entry is whole again. */
    CHECK_OK(tack_rtc_compile(TACK_RTC_NVRTC, saxpy, "saxpy", "sm_90", &a, &na, &log));
    CHECK_EQ_INT(stats().disk_hits, 1);
    tack_rtc_free(a);
    remove_cache_dir(dir);
}
