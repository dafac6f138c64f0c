/*
 * conformance.c: one table of CUDA driver call sequences and the results the driver
 * documents, run against any driver library: the stand-in (every `make test`) or the
 * real libcuda.so.1 (scripts/gpu_check.sh on a GPU machine). A case that fails on the
 * real driver is a bug in the stand-in's model of it, found before it misleads Tack's
 * tests.
 *
 *   tack_cuda_conformance [--no-device-faults] [driver-path] [case-name]
 *
 * The driver is the argument, else $TACK_CUDA_DRIVER, else libcuda.so.1. It is opened
 * with dlopen and every entry point is resolved through cuGetProcAddress_v2 at the ABI
 * version cuda_abi.h pins, exactly as Tack's backend does. Each case runs in its own
 * process (the parent never touches the driver), so one crash fails one case.
 *
 * Marks:
 *   UNVERIFIED   the result the documentation implies, not yet confirmed on hardware;
 *                the output names these cases, so the first GPU run pins them.
 *   STANDIN      a test of the stand-in's own strictness (faults on host access, stale
 *                bytes without synchronization, fault injection, the call log): not run
 *                against a real driver, and counted apart.
 *   DEVICE_FAULT a case that makes the device fault on purpose; --no-device-faults
 *                leaves these out (for runs under compute-sanitizer, which reports
 * them).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../../csrc/backends/cuda/cuda_abi.h"
#include "standin_twin.h"

/* Under valgrind, the deliberate host accesses of device memory below are the point of
 * the test: they are kept out of its error count (valgrind still delivers the fault).
 */
#ifdef TACK_HAVE_VALGRIND_H /* set by tests/standin/meson.build */
#include <valgrind/valgrind.h>
#define TACK_EXPECTED_FAULT_BEGIN() VALGRIND_DISABLE_ERROR_REPORTING
#define TACK_EXPECTED_FAULT_END() VALGRIND_ENABLE_ERROR_REPORTING
#else
#define TACK_EXPECTED_FAULT_BEGIN() ((void)0)
#define TACK_EXPECTED_FAULT_END() ((void)0)
#endif

/* ---- the driver, resolved as the backend resolves it ----------------------------- */

static struct driver {
    void *lib;
    bool standin; /* exports the stand-in's twin registry */
    int (*register_twin)(const char *, tack_standin_twin_fn, void *);
// NOLINTNEXTLINE(bugprone-macro-parentheses): a declarator cannot take them
#define FIELD(name, symbol, version) tcu_fn_##name *name;
    TCU_ENTRY_POINTS(FIELD)
#undef FIELD
} cu;

static const char *driver_path;

static const char *
result_name(tcu_result rc)
{
    switch (rc) {
#define NAME_CASE(name, value) \
    case (value): return #name;
        TCU_RESULT_LIST(NAME_CASE)
#undef NAME_CASE
    default: return "?";
    }
}

__attribute__((noreturn, format(printf, 3, 4))) static void
fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    _exit(1);
}

#define EXPECT_RC(expr, want)                                                      \
    do {                                                                           \
        tcu_result got_ = (expr);                                                  \
        if (got_ != (want)) {                                                      \
            fail(__FILE__, __LINE__, "%s -> %d %s, want %d %s", #expr, got_,       \
                 result_name(got_), (int)(want), result_name((tcu_result)(want))); \
        }                                                                          \
    } while (0)
#define OK(expr) EXPECT_RC(expr, TCU_SUCCESS)
#define EXPECT(cond)                                        \
    do {                                                    \
        if (!(cond)) {                                      \
            fail(__FILE__, __LINE__, "expected %s", #cond); \
        }                                                   \
    } while (0)
#define EXPECT_EQ(a, b)                                                         \
    do {                                                                        \
        long long a_ = (long long)(a), b_ = (long long)(b);                     \
        if (a_ != b_) {                                                         \
            fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); \
        }                                                                       \
    } while (0)

/* Opens the driver and resolves every entry point. In the child: the parent never
 * loads the driver, so each case starts from an uninitialized one. */
static void
driver_open(void)
{
    cu.lib = dlopen(driver_path, RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        fail(__FILE__, __LINE__, "dlopen(%s): %s", driver_path, dlerror());
    }
    void *get = dlsym(cu.lib, "cuGetProcAddress_v2");
    if (!get) {
        fail(__FILE__, __LINE__, "%s has no cuGetProcAddress_v2", driver_path);
    }
    memcpy(&cu.cuGetProcAddress, &get, sizeof get);
    void *reg = dlsym(cu.lib, "tack_standin_cuda_register_twin");
    cu.standin = reg != NULL;
    memcpy(&cu.register_twin, &reg, sizeof reg);
#define RESOLVE(name, symbol, version)                                               \
    do {                                                                             \
        void *pfn = NULL;                                                            \
        tcu_proc_address_query_result status = -1;                                   \
        tcu_result rc = cu.cuGetProcAddress(                                         \
            #name, &pfn, version, TCU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);      \
        if (rc != TCU_SUCCESS || status != TCU_GET_PROC_ADDRESS_SUCCESS || !pfn) {   \
            fail(__FILE__, __LINE__, "cuGetProcAddress(%s, %d) -> %d %s, status %d", \
                 #name, version, rc, result_name(rc), status);                       \
        }                                                                            \
        memcpy(&cu.name, &pfn, sizeof pfn);                                          \
    } while (0);
    TCU_ENTRY_POINTS(RESOLVE)
#undef RESOLVE
}

/* cuInit, then the primary context of device 0 made current. */
static tcu_context
primary_current(void)
{
    tcu_context ctx = NULL;
    OK(cu.cuInit(0));
    OK(cu.cuDevicePrimaryCtxRetain(&ctx, 0));
    OK(cu.cuCtxSetCurrent(ctx));
    return ctx;
}

static tcu_deviceptr
alloc(size_t nbytes)
{
    tcu_deviceptr p = 0;
    OK(cu.cuMemAlloc(&p, nbytes));
    return p;
}

/* ---- cases ----------------------------------------------------------------------- */

enum { UNVERIFIED = 1, STANDIN = 2, DEVICE_FAULT = 4 };

typedef void (*case_fn)(void);
static struct {
    const char *name;
    case_fn fn;
    int marks;
    const char *env; /* "NAME=value;..." set before the driver's first call */
} cases[128];
static int ncases;

/* The stand-in reads its environment once, at its first call: a case that needs a
 * variable names it here, and the runner sets it before opening the driver. The value
 * @tempfile stands for a new temporary file, whose path is in case_tempfile. */
#define CASE_ENV(id, how, vars)                                  \
    static void case_##id(void);                                 \
    __attribute__((constructor)) static void register_##id(void) \
    {                                                            \
        if (ncases < (int)(sizeof cases / sizeof cases[0])) {    \
            cases[ncases].name = #id;                            \
            cases[ncases].fn = case_##id;                        \
            cases[ncases].env = (vars);                          \
            cases[ncases++].marks = (how);                       \
        }                                                        \
    }                                                            \
    static void case_##id(void)
#define CASE(id, how) CASE_ENV(id, how, NULL)

static char case_tempfile[64];

static void
set_case_env(const char *vars)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", vars);
    for (char *save = NULL, *item = strtok_r(buf, ";", &save); item;
         item = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            continue;
        }
        *eq = '\0';
        const char *value = eq + 1;
        if (strcmp(value, "@tempfile") == 0) {
            snprintf(case_tempfile, sizeof case_tempfile, "/tmp/tack-standin-XXXXXX");
            int fd = mkstemp(case_tempfile);
            EXPECT(fd >= 0);
            close(fd);
            value = case_tempfile;
        }
        setenv(item, value, 1);
    }
}

CASE(calls_before_init_fail, 0)
{
    int count = 0;
    tcu_deviceptr p = 0;
    EXPECT_RC(cu.cuDeviceGetCount(&count), TCU_ERROR_NOT_INITIALIZED);
    EXPECT_RC(cu.cuMemAlloc(&p, 64), TCU_ERROR_NOT_INITIALIZED);
    int version = 0;
    OK(cu.cuDriverGetVersion(&version)); /* the one call allowed before cuInit */
    EXPECT(version >= TCU_MIN_DRIVER_VERSION);
}

CASE(init_rejects_flags, 0)
{
    EXPECT_RC(cu.cuInit(1), TCU_ERROR_INVALID_VALUE);
    OK(cu.cuInit(0));
    OK(cu.cuInit(0)); /* idempotent */
}

CASE(proc_address_lookup_rules, 0)
{
    void *pfn = &pfn;
    tcu_proc_address_query_result status = -1;
    EXPECT_RC(cu.cuGetProcAddress("cuNoSuchEntryPoint", &pfn, 13000,
                                  TCU_GET_PROC_ADDRESS_LEGACY_STREAM, &status),
              TCU_ERROR_NOT_FOUND);
    EXPECT_EQ(status, TCU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    EXPECT(pfn == NULL);
    /* cuMemAllocAsync first appeared with CUDA 11.2. */
    EXPECT_RC(cu.cuGetProcAddress("cuMemAllocAsync", &pfn, 11000,
                                  TCU_GET_PROC_ADDRESS_LEGACY_STREAM, &status),
              TCU_ERROR_NOT_FOUND);
    EXPECT_EQ(status, TCU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT_RC(cu.cuGetProcAddress(NULL, &pfn, 13000, 0, &status),
              TCU_ERROR_INVALID_VALUE);
}

CASE(device_queries, 0)
{
    OK(cu.cuInit(0));
    int count = 0, value = 0;
    OK(cu.cuDeviceGetCount(&count));
    EXPECT(count >= 1);
    tcu_device dev = -1;
    OK(cu.cuDeviceGet(&dev, 0));
    EXPECT_EQ(dev, 0);
    EXPECT_RC(cu.cuDeviceGet(&dev, count), TCU_ERROR_INVALID_DEVICE);
    char name[256] = "";
    OK(cu.cuDeviceGetName(name, (int)sizeof name, 0));
    EXPECT(name[0] != '\0');
    OK(cu.cuDeviceGetAttribute(&value, TCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                               0));
    EXPECT(value >= 7);
    OK(cu.cuDeviceGetAttribute(&value, TCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    EXPECT(value >= 1);
    OK(cu.cuDeviceGetAttribute(&value, TCU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
    EXPECT_EQ(value, 32);
    OK(cu.cuDeviceGetAttribute(&value, TCU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
    EXPECT_EQ(value, 1);
    EXPECT_RC(cu.cuDeviceGetAttribute(&value, TCU_DEVICE_ATTRIBUTE_WARP_SIZE, count),
              TCU_ERROR_INVALID_DEVICE);
    tcu_uuid uuid;
    memset(&uuid, 0, sizeof uuid);
    OK(cu.cuDeviceGetUuid(&uuid, 0));
    static const tcu_uuid zero;
    EXPECT(memcmp(&uuid, &zero, sizeof uuid) != 0);
    size_t total = 0;
    OK(cu.cuDeviceTotalMem(&total, 0));
    EXPECT(total > 0);
}

/* The device the stand-in models is the one the GPU check runs on (an H200). */
CASE(device_is_an_sm90_with_vmm_export, 0)
{
    OK(cu.cuInit(0));
    int major = 0, minor = -1, vmm = 0, fd = 0, pools = 0;
    OK(cu.cuDeviceGetAttribute(&major, TCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                               0));
    OK(cu.cuDeviceGetAttribute(&minor, TCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                               0));
    OK(cu.cuDeviceGetAttribute(
        &vmm, TCU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    OK(cu.cuDeviceGetAttribute(
        &fd, TCU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0));
    OK(cu.cuDeviceGetAttribute(&pools, TCU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    EXPECT_EQ(major, 9);
    EXPECT_EQ(minor, 0);
    EXPECT_EQ(vmm, 1);
    EXPECT_EQ(fd, 1);
    EXPECT_EQ(pools, 1);
}

CASE(no_current_context, 0)
{
    OK(cu.cuInit(0));
    tcu_context ctx = (tcu_context)&ctx;
    OK(cu.cuCtxGetCurrent(&ctx));
    EXPECT(ctx == NULL);
    tcu_deviceptr p = 0;
    EXPECT_RC(cu.cuMemAlloc(&p, 64), TCU_ERROR_INVALID_CONTEXT);
    tcu_stream s = NULL;
    EXPECT_RC(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING),
              TCU_ERROR_INVALID_CONTEXT);
    EXPECT_RC(cu.cuCtxPopCurrent(&ctx), TCU_ERROR_INVALID_CONTEXT);
    EXPECT_RC(cu.cuCtxSynchronize(), TCU_ERROR_INVALID_CONTEXT);
}

CASE(primary_context_retain_release, UNVERIFIED)
{
    OK(cu.cuInit(0));
    tcu_context a = NULL, b = NULL;
    unsigned flags = 0;
    int active = -1;
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    EXPECT_EQ(active, 0);
    OK(cu.cuDevicePrimaryCtxRetain(&a, 0));
    OK(cu.cuDevicePrimaryCtxRetain(&b, 0));
    EXPECT(a != NULL && a == b);
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    EXPECT_EQ(active, 1);
    OK(cu.cuDevicePrimaryCtxRelease(0));
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    EXPECT_EQ(active, 1); /* one retain left */
    OK(cu.cuDevicePrimaryCtxRelease(0));
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    EXPECT_EQ(active, 0);
    /* A release without a retain (UNVERIFIED: the driver's code for it). */
    EXPECT_RC(cu.cuDevicePrimaryCtxRelease(0), TCU_ERROR_INVALID_CONTEXT);
}

CASE(context_stack, 0)
{
    tcu_context primary = primary_current();
    tcu_context other = NULL, got = NULL;
    OK(cu.cuCtxCreate(&other, NULL, 0, 0)); /* pushed */
    OK(cu.cuCtxGetCurrent(&got));
    EXPECT(got == other && other != primary);
    tcu_device dev = -1;
    OK(cu.cuCtxGetDevice(&dev));
    EXPECT_EQ(dev, 0);
    OK(cu.cuCtxPopCurrent(&got));
    EXPECT(got == other);
    OK(cu.cuCtxGetCurrent(&got));
    EXPECT(got == primary);
    OK(cu.cuCtxPushCurrent(other));
    OK(cu.cuCtxSetCurrent(primary)); /* replaces the top */
    OK(cu.cuCtxGetCurrent(&got));
    EXPECT(got == primary);
    OK(cu.cuCtxPopCurrent(&got));
    OK(cu.cuCtxGetCurrent(&got));
    EXPECT(got == primary);       /* the one below */
    OK(cu.cuCtxSetCurrent(NULL)); /* pops */
    OK(cu.cuCtxGetCurrent(&got));
    EXPECT(got == NULL);
    OK(cu.cuCtxDestroy(other));
}

/* A thread starts with no current context; buffers are released from such threads. */
static void *
thread_without_context(void *arg)
{
    tcu_deviceptr p = *(tcu_deviceptr *)arg;
    tcu_context got = (tcu_context)&got;
    if (cu.cuCtxGetCurrent(&got) != TCU_SUCCESS || got != NULL) {
        return "a new thread inherited a current context";
    }
    if (cu.cuMemFree(p) != TCU_ERROR_INVALID_CONTEXT) {
        return "cuMemFree without a current context did not fail with INVALID_CONTEXT";
    }
    return NULL;
}

static tcu_context thread_ctx;

static void *
thread_with_context(void *arg)
{
    tcu_deviceptr p = *(tcu_deviceptr *)arg;
    if (cu.cuCtxSetCurrent(thread_ctx) != TCU_SUCCESS) {
        return "cuCtxSetCurrent failed";
    }
    return cu.cuMemFree(p) == TCU_SUCCESS ? NULL
                                          : "cuMemFree from another thread failed";
}

CASE(current_context_is_per_thread, 0)
{
    thread_ctx = primary_current();
    tcu_deviceptr p = alloc(256);
    pthread_t t;
    void *err = NULL;
    EXPECT(pthread_create(&t, NULL, thread_without_context, &p) == 0);
    pthread_join(t, &err);
    if (err) {
        fail(__FILE__, __LINE__, "%s", (const char *)err);
    }
    EXPECT(pthread_create(&t, NULL, thread_with_context, &p) == 0);
    pthread_join(t, &err);
    if (err) {
        fail(__FILE__, __LINE__, "%s", (const char *)err);
    }
}

CASE(alloc_and_free_rules, UNVERIFIED)
{
    primary_current();
    tcu_deviceptr p = 0;
    EXPECT_RC(cu.cuMemAlloc(&p, 0), TCU_ERROR_INVALID_VALUE);
    p = alloc(1000);
    EXPECT(p != 0 && p % 256 == 0);
    EXPECT_RC(cu.cuMemFree(p + 8), TCU_ERROR_INVALID_VALUE); /* interior */
    int host = 0;
    EXPECT_RC(cu.cuMemFree((tcu_deviceptr)(uintptr_t)&host), TCU_ERROR_INVALID_VALUE);
    OK(cu.cuMemFree(p));
    EXPECT_RC(cu.cuMemFree(p), TCU_ERROR_INVALID_VALUE); /* twice */
}

CASE(sync_copies_round_trip, 0)
{
    primary_current();
    unsigned char in[1000], out[1000];
    for (int k = 0; k < 1000; k++) {
        in[k] = (unsigned char)(k * 7 + 3);
    }
    tcu_deviceptr a = alloc(sizeof in), b = alloc(sizeof in);
    OK(cu.cuMemcpyHtoD(a, in, sizeof in));
    OK(cu.cuMemcpyDtoD(b, a, sizeof in));
    OK(cu.cuMemcpyDtoH(out, b, sizeof out)); /* legacy stream: after the DtoD */
    EXPECT(memcmp(in, out, sizeof in) == 0);
    OK(cu.cuMemcpyDtoH(out, a + 10, 0)); /* nothing to copy */
    OK(cu.cuMemFree(a));
    OK(cu.cuMemFree(b));
}

CASE(copies_outside_allocations_fail, UNVERIFIED)
{
    primary_current();
    unsigned char buf[128] = {0};
    tcu_deviceptr a = alloc(64);
    EXPECT_RC(cu.cuMemcpyDtoH(buf, a, 128), TCU_ERROR_INVALID_VALUE); /* past the end */
    EXPECT_RC(cu.cuMemcpyHtoD(a + 32, buf, 64), TCU_ERROR_INVALID_VALUE);
    OK(cu.cuMemFree(a));
    EXPECT_RC(cu.cuMemcpyHtoD(a, buf, 16), TCU_ERROR_INVALID_VALUE); /* freed */
}

CASE(async_copies_and_memsets_on_a_stream, 0)
{
    primary_current();
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    uint32_t in[256], out[256];
    for (uint32_t k = 0; k < 256; k++) {
        in[k] = k * 2654435761u;
    }
    tcu_deviceptr a = alloc(sizeof in);
    OK(cu.cuMemcpyHtoDAsync(a, in, sizeof in, s));
    OK(cu.cuMemsetD32Async(a + 16, 0xDEADBEEFu, 4, s));
    OK(cu.cuMemsetD16Async(a + 64, 0x1234, 2, s));
    OK(cu.cuMemsetD8Async(a + 80, 0x7F, 3, s));
    OK(cu.cuMemcpyDtoHAsync(out, a, sizeof out, s));
    OK(cu.cuStreamSynchronize(s));
    for (int k = 4; k < 8; k++) {
        EXPECT_EQ(out[k], 0xDEADBEEFu);
    }
    EXPECT_EQ(out[16], 0x12341234u);
    EXPECT_EQ(out[20], (in[20] & 0xFF000000u) | 0x007F7F7Fu);
    EXPECT_EQ(out[0], in[0]);
    EXPECT_EQ(out[255], in[255]);
    OK(cu.cuStreamSynchronize(NULL));
    OK(cu.cuStreamDestroy(s));
    OK(cu.cuMemFree(a));
}

CASE(stream_handle_rules, UNVERIFIED)
{
    tcu_context primary = primary_current();
    tcu_stream s = NULL;
    EXPECT_RC(cu.cuStreamCreate(&s, 4), TCU_ERROR_INVALID_VALUE);
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    OK(cu.cuStreamQuery(s)); /* nothing queued */
    OK(cu.cuStreamSynchronize((tcu_stream)TCU_STREAM_LEGACY_HANDLE));
    OK(cu.cuStreamSynchronize((tcu_stream)TCU_STREAM_PER_THREAD_HANDLE));
    /* A stream of another context. */
    tcu_context other = NULL;
    OK(cu.cuCtxCreate(&other, NULL, 0, 0));
    EXPECT_RC(cu.cuStreamSynchronize(s), TCU_ERROR_INVALID_HANDLE);
    OK(cu.cuCtxPopCurrent(NULL));
    OK(cu.cuCtxDestroy(other));
    OK(cu.cuCtxSetCurrent(primary));
    OK(cu.cuStreamDestroy(s));
}

CASE(events_order_streams, 0)
{
    primary_current();
    tcu_stream a = NULL, b = NULL;
    tcu_event e = NULL, never = NULL;
    OK(cu.cuStreamCreate(&a, TCU_STREAM_NON_BLOCKING));
    OK(cu.cuStreamCreate(&b, TCU_STREAM_NON_BLOCKING));
    OK(cu.cuEventCreate(&e, TCU_EVENT_DISABLE_TIMING));
    OK(cu.cuEventCreate(&never, TCU_EVENT_DISABLE_TIMING));
    EXPECT_RC(cu.cuEventCreate(&e, TCU_EVENT_INTERPROCESS), TCU_ERROR_INVALID_VALUE);
    uint64_t in[512], out[512];
    for (uint64_t k = 0; k < 512; k++) {
        in[k] = k * 0x9E3779B97F4A7C15ull;
    }
    tcu_deviceptr x = alloc(sizeof in), y = alloc(sizeof in);
    OK(cu.cuMemcpyHtoDAsync(x, in, sizeof in, a));
    OK(cu.cuEventRecord(e, a));
    OK(cu.cuStreamWaitEvent(b, e, 0));
    OK(cu.cuStreamWaitEvent(b, never, 0)); /* never recorded: nothing to wait for */
    OK(cu.cuMemcpyDtoDAsync(y, x, sizeof in, b));
    OK(cu.cuMemcpyDtoHAsync(out, y, sizeof out, b));
    /* Only b is synchronized: its wait on e must have brought a's copy in first. */
    OK(cu.cuStreamSynchronize(b));
    EXPECT(memcmp(in, out, sizeof in) == 0);
    OK(cu.cuEventSynchronize(e));
    OK(cu.cuEventQuery(e));
    OK(cu.cuEventSynchronize(never));
    OK(cu.cuEventDestroy(e));
    OK(cu.cuEventDestroy(never));
    OK(cu.cuStreamDestroy(a));
    OK(cu.cuStreamDestroy(b));
    OK(cu.cuMemFree(x));
    OK(cu.cuMemFree(y));
}

CASE(pointer_attributes, 0)
{
    tcu_context ctx = primary_current();
    tcu_deviceptr p = alloc(4096);
    unsigned type = 0;
    int ordinal = -1;
    tcu_context owner = NULL;
    tcu_deviceptr start = 0;
    size_t size = 0;
    OK(cu.cuPointerGetAttribute(&type, TCU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 100));
    EXPECT_EQ(type, TCU_MEMORYTYPE_DEVICE);
    tcu_pointer_attribute attrs[5] = {
        TCU_POINTER_ATTRIBUTE_MEMORY_TYPE, TCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        TCU_POINTER_ATTRIBUTE_CONTEXT, TCU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        TCU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[5] = {&type, &ordinal, &owner, &start, &size};
    type = 0;
    OK(cu.cuPointerGetAttributes(5, attrs, data, p + 100));
    EXPECT_EQ(type, TCU_MEMORYTYPE_DEVICE);
    EXPECT_EQ(ordinal, 0);
    EXPECT(owner == ctx);
    EXPECT_EQ(start, p);
    EXPECT_EQ(size, 4096);
    /* A host pointer: an error from the single query, empty values from the batch. */
    int host = 0;
    EXPECT_RC(cu.cuPointerGetAttribute(&type, TCU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                       (tcu_deviceptr)(uintptr_t)&host),
              TCU_ERROR_INVALID_VALUE);
    type = 77;
    owner = ctx;
    OK(cu.cuPointerGetAttributes(3, attrs, data, (tcu_deviceptr)(uintptr_t)&host));
    EXPECT_EQ(type, 0);
    EXPECT(owner == NULL);
    OK(cu.cuMemFree(p));
}

/* UNVERIFIED: the ordinal the driver reports for memory it does not know. */
CASE(pointer_attributes_of_host_memory_ordinal, UNVERIFIED)
{
    primary_current();
    int host = 0, ordinal = 0;
    tcu_pointer_attribute attr = TCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
    void *data = &ordinal;
    OK(cu.cuPointerGetAttributes(1, &attr, &data, (tcu_deviceptr)(uintptr_t)&host));
    EXPECT_EQ(ordinal, -2);
}

static const tcu_mem_allocation_prop *
vmm_prop(bool exportable)
{
    static tcu_mem_allocation_prop prop;
    memset(&prop, 0, sizeof prop);
    prop.type = TCU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = TCU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = exportable ? TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                           : TCU_MEM_HANDLE_TYPE_NONE;
    return &prop;
}

static size_t
granularity(bool exportable)
{
    size_t g = 0;
    OK(cu.cuMemGetAllocationGranularity(&g, vmm_prop(exportable),
                                        TCU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT(g > 0);
    return g;
}

/* Reserves, maps and opens [size] bytes of handle h for device 0. */
static tcu_deviceptr
vmm_map(tcu_mem_handle h, size_t size)
{
    tcu_deviceptr va = 0;
    OK(cu.cuMemAddressReserve(&va, size, 0, 0, 0));
    OK(cu.cuMemMap(va, size, 0, h, 0));
    tcu_mem_access_desc access;
    memset(&access, 0, sizeof access);
    access.location.type = TCU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = TCU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    EXPECT_RC(cu.cuMemSetAccess(va, size, &access, 0), TCU_ERROR_INVALID_VALUE);
    OK(cu.cuMemSetAccess(va, size, &access, 1));
    return va;
}

static void
vmm_unmap(tcu_deviceptr va, size_t size)
{
    OK(cu.cuMemUnmap(va, size));
    OK(cu.cuMemAddressFree(va, size));
}

CASE(vmm_export_and_import_fd, 0)
{
    primary_current();
    size_t minimum = 0, g = 0;
    OK(cu.cuMemGetAllocationGranularity(&minimum, vmm_prop(true),
                                        TCU_MEM_ALLOC_GRANULARITY_MINIMUM));
    OK(cu.cuMemGetAllocationGranularity(&g, vmm_prop(true),
                                        TCU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    EXPECT(minimum > 0 && g >= minimum && g % minimum == 0);
    tcu_mem_handle h = 0;
    EXPECT_RC(cu.cuMemCreate(&h, g - 1, vmm_prop(true), 0), TCU_ERROR_INVALID_VALUE);
    OK(cu.cuMemCreate(&h, g, vmm_prop(true), 0));
    tcu_deviceptr va = 0;
    OK(cu.cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
    EXPECT_RC(cu.cuMemMap(va, g, g, h, 0), TCU_ERROR_INVALID_VALUE); /* past its end */
    EXPECT_RC(cu.cuMemMap(va, 2 * g, 0, h, 0), TCU_ERROR_INVALID_VALUE); /* too long */
    OK(cu.cuMemAddressFree(va, 2 * g));
    va = vmm_map(h, g);
    unsigned char in[4096], out[4096];
    for (int k = 0; k < 4096; k++) {
        in[k] = (unsigned char)(k ^ 0x5A);
    }
    OK(cu.cuMemcpyHtoD(va + 1000, in, sizeof in));
    int fd = -1;
    OK(cu.cuMemExportToShareableHandle(&fd, h,
                                       TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    struct stat st;
    EXPECT(fd >= 0 && fstat(fd, &st) == 0);
    /* The fd names the same memory: imported and mapped again, it reads the bytes. */
    tcu_mem_handle h2 = 0;
    OK(cu.cuMemImportFromShareableHandle(&h2, (void *)(intptr_t)fd,
                                         TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    EXPECT(close(fd) == 0); /* ours to close; the import keeps what it needs */
    tcu_deviceptr va2 = vmm_map(h2, g);
    OK(cu.cuMemcpyDtoH(out, va2 + 1000, sizeof out));
    EXPECT(memcmp(in, out, sizeof in) == 0);
    vmm_unmap(va2, g);
    OK(cu.cuMemRelease(h2));
    /* Released while mapped: the mapping keeps the memory until it is unmapped. */
    OK(cu.cuMemRelease(h));
    OK(cu.cuMemcpyDtoH(out, va + 1000, sizeof out));
    EXPECT(memcmp(in, out, sizeof in) == 0);
    vmm_unmap(va, g);
}

CASE(vmm_export_needs_requested_handle_type, UNVERIFIED)
{
    primary_current();
    size_t g = granularity(false);
    tcu_mem_handle h = 0;
    OK(cu.cuMemCreate(&h, g, vmm_prop(false), 0));
    int fd = -1;
    EXPECT_RC(cu.cuMemExportToShareableHandle(
                  &fd, h, TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              TCU_ERROR_INVALID_VALUE);
    OK(cu.cuMemRelease(h));
}

/* Mapped but never given access: the device faults when the copy runs, and the fault
 * is sticky. UNVERIFIED: the driver may refuse the copy up front instead. */
CASE(vmm_access_without_set_access_faults, UNVERIFIED | DEVICE_FAULT)
{
    primary_current();
    size_t g = granularity(false);
    tcu_mem_handle h = 0;
    tcu_deviceptr va = 0;
    OK(cu.cuMemCreate(&h, g, vmm_prop(false), 0));
    OK(cu.cuMemAddressReserve(&va, g, 0, 0, 0));
    OK(cu.cuMemMap(va, g, 0, h, 0));
    unsigned char buf[64] = {0};
    EXPECT_RC(cu.cuMemcpyHtoD(va, buf, sizeof buf), TCU_ERROR_ILLEGAL_ADDRESS);
    tcu_deviceptr p = 0;
    EXPECT_RC(cu.cuMemAlloc(&p, 64), TCU_ERROR_ILLEGAL_ADDRESS);
}

/* ---- modules and launches -------------------------------------------------------- */

/* tack_fill_index(out, n): out[i] = 3 * i + 1 for i < n (nvcc 13.0, compute_75). */
static const char fill_ptx[] =
    ".version 9.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\t// .globl\ttack_fill_index\n"
    ".visible .entry tack_fill_index(\n"
    "\t.param .u64 tack_fill_index_param_0,\n"
    "\t.param .u32 tack_fill_index_param_1\n"
    ")\n"
    "{\n"
    "\t.reg .pred \t%p<2>;\n"
    "\t.reg .b32 \t%r<7>;\n"
    "\t.reg .b64 \t%rd<5>;\n"
    "\tld.param.u64 \t%rd1, [tack_fill_index_param_0];\n"
    "\tld.param.u32 \t%r2, [tack_fill_index_param_1];\n"
    "\tmov.u32 \t%r3, %ctaid.x;\n"
    "\tmov.u32 \t%r4, %ntid.x;\n"
    "\tmov.u32 \t%r5, %tid.x;\n"
    "\tmad.lo.s32 \t%r1, %r3, %r4, %r5;\n"
    "\tsetp.ge.u32 \t%p1, %r1, %r2;\n"
    "\t@%p1 bra \t$L__BB0_2;\n"
    "\tcvta.to.global.u64 \t%rd2, %rd1;\n"
    "\tmad.lo.s32 \t%r6, %r1, 3, 1;\n"
    "\tmul.wide.u32 \t%rd3, %r1, 4;\n"
    "\tadd.s64 \t%rd4, %rd2, %rd3;\n"
    "\tst.global.u32 \t[%rd4], %r6;\n"
    "$L__BB0_2:\n"
    "\tret;\n"
    "}\n";

/* The CPU twin of tack_fill_index, for the stand-in. */
static int
fill_twin(const tack_standin_launch *l, void *user)
{
    (void)user;
    uint64_t out = 0;
    uint32_t n = 0;
    if (l->params_nbytes != 12) {
        return 1;
    }
    memcpy(&out, l->params, 8);
    memcpy(&n, (const unsigned char *)l->params + 8, 4);
    uint64_t threads = (uint64_t)l->grid[0] * l->block[0];
    uint64_t count = n < threads ? n : threads;
    if (count == 0) {
        return 0;
    }
    uint32_t *host = l->translate(l->translate_ctx, out, count * 4);
    if (!host) {
        return 1; /* the kernel would store out of bounds */
    }
    for (uint32_t i = 0; i < count; i++) {
        host[i] = 3 * i + 1;
    }
    return 0;
}

static tcu_function
load_fill(void)
{
    if (cu.standin) {
        EXPECT(cu.register_twin("tack_fill_index", fill_twin, NULL) == 0);
    }
    tcu_module m = NULL;
    tcu_function f = NULL;
    OK(cu.cuModuleLoadData(&m, fill_ptx));
    EXPECT_RC(cu.cuModuleGetFunction(&f, m, "tack_no_such_kernel"),
              TCU_ERROR_NOT_FOUND);
    OK(cu.cuModuleGetFunction(&f, m, "tack_fill_index"));
    return f;
}

CASE(launch_runs_the_kernel, 0)
{
    primary_current();
    tcu_function f = load_fill();
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    tcu_deviceptr out = alloc((size_t)256 * 4);
    OK(cu.cuMemsetD32Async(out, 0, 256, s));
    uint32_t n = 200;
    void *params[] = {&out, &n};
    OK(cu.cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, 0, s, params, NULL));
    uint32_t host[256];
    OK(cu.cuMemcpyDtoHAsync(host, out, sizeof host, s));
    OK(cu.cuStreamSynchronize(s));
    for (uint32_t i = 0; i < 256; i++) {
        EXPECT_EQ(host[i], i < n ? 3 * i + 1 : 0);
    }
    /* The same parameters through `extra`, as one packed buffer. */
    unsigned char packed[12];
    size_t packed_nbytes = sizeof packed;
    n = 10;
    OK(cu.cuMemsetD32Async(out, 0, 256, s));
    memcpy(packed, &out, 8);
    memcpy(packed + 8, &n, 4);
    void *extra[] = {(void *)TCU_LAUNCH_PARAM_BUFFER_POINTER_HANDLE, packed,
                     (void *)TCU_LAUNCH_PARAM_BUFFER_SIZE_HANDLE, &packed_nbytes,
                     (void *)TCU_LAUNCH_PARAM_END_HANDLE};
    OK(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, extra));
    OK(cu.cuMemcpyDtoHAsync(host, out, sizeof host, s));
    OK(cu.cuStreamSynchronize(s));
    EXPECT_EQ(host[9], 28);
    EXPECT_EQ(host[10], 0);
}

CASE(launch_geometry_rules, UNVERIFIED)
{
    primary_current();
    tcu_function f = load_fill();
    tcu_deviceptr out = alloc(64);
    uint32_t n = 16;
    void *params[] = {&out, &n};
    EXPECT_RC(cu.cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL),
              TCU_ERROR_INVALID_VALUE);
    EXPECT_RC(cu.cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, NULL, params, NULL),
              TCU_ERROR_INVALID_VALUE);
    EXPECT_RC(cu.cuLaunchKernel(f, 1, 1, 1, 32, 32, 2, 0, NULL, params, NULL),
              TCU_ERROR_INVALID_VALUE);
    OK(cu.cuCtxSynchronize());
}

CASE(module_image_checks, UNVERIFIED)
{
    primary_current();
    tcu_module m = NULL;
    char newer[sizeof fill_ptx + 8];
    /* A PTX ISA from the future: ".version 9.0" becomes ".version 99.0". */
    snprintf(newer, sizeof newer, ".version 99.0%s", fill_ptx + strlen(".version 9.0"));
    EXPECT_RC(cu.cuModuleLoadData(&m, newer), TCU_ERROR_UNSUPPORTED_PTX_VERSION);
    EXPECT_RC(cu.cuModuleLoadData(&m, "this is not a kernel image"),
              TCU_ERROR_INVALID_PTX);
}

/* A kernel that stores through a bad pointer: the fault surfaces at synchronization
 * and every later call on the context returns it (a sticky error). */
CASE(device_fault_is_sticky, DEVICE_FAULT)
{
    primary_current();
    tcu_function f = load_fill();
    tcu_deviceptr bad = 0;
    uint32_t n = 64;
    void *params[] = {&bad, &n};
    OK(cu.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
    EXPECT_RC(cu.cuCtxSynchronize(), TCU_ERROR_ILLEGAL_ADDRESS);
    tcu_deviceptr p = 0;
    EXPECT_RC(cu.cuMemAlloc(&p, 64), TCU_ERROR_ILLEGAL_ADDRESS);
}

/* ---- the stand-in's own strictness ----------------------------------------------- */

CASE(standin_launch_without_twin_is_not_supported, STANDIN)
{
    primary_current();
    tcu_module m = NULL;
    tcu_function f = NULL;
    OK(cu.cuModuleLoadData(&m, fill_ptx));
    OK(cu.cuModuleGetFunction(&f, m, "tack_fill_index"));
    tcu_deviceptr out = alloc(64);
    uint32_t n = 16;
    void *params[] = {&out, &n};
    EXPECT_RC(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL),
              TCU_ERROR_NOT_SUPPORTED);
}

static volatile sig_atomic_t fault_ok;
static volatile uintptr_t fault_lo, fault_hi;

static void
on_segv(int sig, siginfo_t *info, void *uc)
{
    (void)sig;
    (void)uc;
    uintptr_t at = (uintptr_t)info->si_addr;
    TACK_EXPECTED_FAULT_END();
    _exit(at >= fault_lo && at < fault_hi ? 42 : 43);
}

/* Runs `touch` on p in a child; returns its exit code (42: SIGSEGV at p). */
static int
fault_probe(tcu_deviceptr p, size_t nbytes, bool write)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
        fault_lo = (uintptr_t)p;
        fault_hi = (uintptr_t)p + nbytes;
        volatile unsigned char *q = (volatile unsigned char *)(uintptr_t)p;
        TACK_EXPECTED_FAULT_BEGIN();
        if (write) {
            q[nbytes - 1] = 1;
        }
        else {
            fault_ok = q[0];
        }
        _exit(0); /* the access did not fault */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

CASE(standin_host_access_to_device_memory_faults, STANDIN)
{
    primary_current();
    tcu_deviceptr p = alloc((size_t)1 << 20);
    EXPECT_EQ(fault_probe(p, 1, false), 42);
    EXPECT_EQ(fault_probe(p, (size_t)1 << 20, true), 42);
    /* VMM memory too, even with device access granted. */
    size_t g = granularity(true);
    tcu_mem_handle h = 0;
    OK(cu.cuMemCreate(&h, g, vmm_prop(true), 0));
    tcu_deviceptr va = vmm_map(h, g);
    EXPECT_EQ(fault_probe(va + 4096, 1, false), 42);
}

CASE(standin_missing_sync_reads_stale_bytes, STANDIN)
{
    primary_current();
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    unsigned char in[64], out[64];
    memset(in, 0x11, sizeof in);
    memset(out, 0, sizeof out);
    tcu_deviceptr p = alloc(sizeof in);
    OK(cu.cuMemcpyHtoDAsync(p, in, sizeof in, s));
    OK(cu.cuMemcpyDtoHAsync(out, p, sizeof out, s));
    EXPECT_EQ(out[0], 0); /* nothing ran: the host buffer is untouched */
    EXPECT_RC(cu.cuStreamQuery(s), TCU_ERROR_NOT_READY);
    EXPECT_EQ(out[0], 0); /* one query proves nothing */
    /* The synchronous copy runs on the legacy stream, which does not wait for a
     * non-blocking stream: it reads the fresh allocation's fill. */
    OK(cu.cuMemcpyDtoH(out, p, sizeof out));
    EXPECT_EQ(out[0], 0xA5);
    OK(cu.cuStreamSynchronize(s));
    EXPECT_EQ(out[63], 0x11);
}

CASE_ENV(standin_eager_mode_runs_work_at_once, STANDIN, "TACK_STANDIN_ASYNC=eager")
{
    primary_current();
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    unsigned char in[16], out[16] = {0};
    memset(in, 0x22, sizeof in);
    tcu_deviceptr p = alloc(sizeof in);
    OK(cu.cuMemcpyHtoDAsync(p, in, sizeof in, s));
    OK(cu.cuMemcpyDtoHAsync(out, p, sizeof out, s));
    EXPECT_EQ(out[15], 0x22);
}

CASE(standin_use_after_free_is_caught, STANDIN)
{
    primary_current();
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    unsigned char buf[32] = {0};
    tcu_deviceptr p = 0;
    OK(cu.cuMemAllocAsync(&p, sizeof buf, s));
    OK(cu.cuMemFreeAsync(p, s));
    /* Queued after the free: refused at once, though the free has not run yet. */
    EXPECT_RC(cu.cuMemcpyHtoDAsync(p, buf, sizeof buf, s), TCU_ERROR_INVALID_VALUE);
    EXPECT_RC(cu.cuMemFreeAsync(p, s), TCU_ERROR_INVALID_VALUE);
    OK(cu.cuStreamSynchronize(s));
    /* Addresses are never reused: a new allocation never lands on a stale pointer. */
    tcu_deviceptr q = alloc(sizeof buf);
    EXPECT(q != p);
    EXPECT_RC(cu.cuMemcpyDtoH(buf, p, sizeof buf), TCU_ERROR_INVALID_VALUE);
}

CASE_ENV(standin_fault_injection, STANDIN,
         "TACK_STANDIN_FAIL=cuMemAlloc:2,cuStreamSynchronize:1:700")
{
    primary_current();
    tcu_deviceptr p = 0;
    OK(cu.cuMemAlloc(&p, 64));
    EXPECT_RC(cu.cuMemAlloc(&p, 64), TCU_ERROR_OUT_OF_MEMORY); /* the 2nd call only */
    OK(cu.cuMemAlloc(&p, 64));
    EXPECT_RC(cu.cuStreamSynchronize(NULL), TCU_ERROR_ILLEGAL_ADDRESS);
    EXPECT_RC(cu.cuMemAlloc(&p, 64), TCU_ERROR_ILLEGAL_ADDRESS); /* now sticky */
}

CASE_ENV(standin_call_log, STANDIN, "TACK_STANDIN_LOG=@tempfile")
{
    primary_current();
    tcu_deviceptr p = alloc(64);
    tcu_function f = load_fill();
    uint32_t n = 16;
    void *params[] = {&p, &n};
    OK(cu.cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    OK(cu.cuStreamSynchronize(NULL));
    char log[8192] = {0};
    int fd = open(case_tempfile, O_RDONLY);
    EXPECT(fd >= 0);
    ssize_t got = read(fd, log, sizeof log - 1);
    close(fd);
    unlink(case_tempfile);
    EXPECT(got > 0);
    /* In order: init, the allocation, the launch (geometry and parameter bytes). */
    const char *init = strstr(log, "cuInit(0) -> 0\n");
    const char *allocation = strstr(log, "cuMemAlloc(bytes=64, ptr=0x");
    const char *launch = strstr(log,
                                "cuLaunchKernel(fn=tack_fill_index, grid=2x1x1, "
                                "block=32x1x1, shared=0, stream=(nil), params=12 "
                                "bytes ");
    const char *sync = strstr(log, "cuStreamSynchronize(stream=(nil)) -> 0\n");
    EXPECT(init && allocation && launch && sync);
    EXPECT(init < allocation && allocation < launch && launch < sync);
    EXPECT(strstr(launch, "10000000") != NULL); /* n = 16, little-endian */
}

/* ---- the runner ------------------------------------------------------------------ */

static int
run_case(int k)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 0;
    }
    if (pid == 0) {
        if (cases[k].env) {
            set_case_env(cases[k].env);
        }
        driver_open();
        cases[k].fn();
        fflush(NULL);
        exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) {
        perror("waitpid");
        return 0;
    }
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "    killed by signal %d\n", WTERMSIG(status));
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int
main(int argc, char **argv)
{
    bool device_faults = true;
    if (argc > 1 && strcmp(argv[1], "--no-device-faults") == 0) {
        device_faults = false;
        argv++;
        argc--;
    }
    driver_path = argc > 1 ? argv[1] : getenv("TACK_CUDA_DRIVER");
    if (!driver_path || !*driver_path) {
        driver_path = "libcuda.so.1";
    }
    const char *only = argc > 2 ? argv[2] : NULL;
    /* Whether the driver is the stand-in decides which cases run. */
    void *probe = dlopen(driver_path, RTLD_NOW | RTLD_LOCAL);
    if (!probe) {
        fprintf(stderr, "cannot open the CUDA driver %s: %s\n", driver_path, dlerror());
        return 2;
    }
    bool standin = dlsym(probe, "tack_standin_cuda_register_twin") != NULL;
    dlclose(probe);
    printf("driver: %s (%s)\n", driver_path, standin ? "Tack stand-in" : "real");
    int passed = 0, failed = 0, standin_only = 0, unverified_failed = 0;
    for (int k = 0; k < ncases; k++) {
        if ((only && strcmp(only, cases[k].name) != 0) ||
            (!device_faults && (cases[k].marks & DEVICE_FAULT))) {
            continue;
        }
        if ((cases[k].marks & STANDIN) && !standin) {
            standin_only++;
            continue;
        }
        const char *mark =
            cases[k].marks & UNVERIFIED ? " [unverified on hardware]" : "";
        if (run_case(k)) {
            passed++;
            printf("ok   %s%s\n", cases[k].name, mark);
        }
        else {
            failed++;
            unverified_failed += (cases[k].marks & UNVERIFIED) != 0;
            printf("FAIL %s%s\n", cases[k].name, mark);
        }
    }
    printf("%d passed, %d failed", passed, failed);
    if (unverified_failed) {
        printf(" (%d of them unverified: the stand-in's model differs here)",
               unverified_failed);
    }
    if (standin_only) {
        printf(", %d stand-in only (not run on a real driver)", standin_only);
    }
    printf("\n");
    return failed ? 1 : 0;
}
