/*
 * conformance_standin.c: tests of the stand-in's own strictness, run only against it
 * (marked STANDIN): host access to device memory faults, a missing synchronization
 * reads stale bytes, freed memory stays recognisable, fault injection and the call log.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance.h"

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

/* Managed memory is host memory to the host, but queued work on it still runs only at
 * a synchronization point, and once freed it faults like device memory. */
CASE(standin_managed_memory_stale_until_sync_and_faults_after_free, STANDIN)
{
    primary_current();
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    tcu_deviceptr p = 0;
    OK(cu.cuMemAllocManaged(&p, 4096, TCU_MEM_ATTACH_GLOBAL));
    volatile unsigned char *h = (volatile unsigned char *)(uintptr_t)p;
    EXPECT_EQ(fault_probe(p, 4096, true), 0); /* the host may write it */
    OK(cu.cuMemsetD8Async(p, 0x5A, 4096, s));
    EXPECT_EQ(h[0], 0xA5); /* nothing ran yet: new memory's fill */
    OK(cu.cuStreamSynchronize(s));
    EXPECT_EQ(h[4095], 0x5A);
    OK(cu.cuMemFree(p));
    EXPECT_EQ(fault_probe(p, 1, false), 42);
    tcu_deviceptr q = 0;
    OK(cu.cuMemAllocManaged(&q, 4096, TCU_MEM_ATTACH_GLOBAL));
    EXPECT(q != p); /* never reused */
    OK(cu.cuMemFree(q));
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
    /* Freed, and not yet reused: still recognised. */
    EXPECT_RC(cu.cuMemcpyDtoH(buf, p, sizeof buf), TCU_ERROR_INVALID_VALUE);
    EXPECT_RC(cu.cuMemFree(p), TCU_ERROR_INVALID_VALUE);
}

/* As the driver's pools do, a freed block's address comes back from a later
 * allocation of a fitting size (the smallest freed block that holds it without being
 * twice as large, lowest address first), as new memory: a stale pointer then reads
 * and writes the new allocation, so a use after free shows in results. */
/* Two non-blocking streams: nothing orders one after the other. */
static void
two_streams(tcu_stream *a, tcu_stream *b)
{
    OK(cu.cuStreamCreate(a, TCU_STREAM_NON_BLOCKING));
    OK(cu.cuStreamCreate(b, TCU_STREAM_NON_BLOCKING));
}

CASE(standin_freed_addresses_are_reused, STANDIN)
{
    primary_current();
    tcu_deviceptr p = alloc(1000), big = alloc(4000);
    OK(cu.cuMemFree(p));
    OK(cu.cuMemFree(big));
    EXPECT(alloc(100) != p);     /* 1000 bytes is more than twice as large */
    EXPECT_EQ(alloc(800), p);    /* fits */
    EXPECT(alloc(1000) != p);    /* taken */
    EXPECT_EQ(alloc(4096), big); /* the block is the 256-byte multiple above 4000 */
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    tcu_deviceptr q = 0, r = 0;
    OK(cu.cuMemAllocAsync(&q, 512, s));
    OK(cu.cuMemFreeAsync(q, s));
    OK(cu.cuStreamSynchronize(s)); /* reused once the free has run */
    OK(cu.cuMemAllocAsync(&r, 512, s));
    EXPECT_EQ(r, q);
    unsigned char buf[512];
    OK(cu.cuMemcpyDtoHAsync(buf, q, sizeof buf, s)); /* the stale pointer */
    OK(cu.cuStreamSynchronize(s));
    EXPECT_EQ(buf[511], 0xA5); /* new memory */
}

/* Work queued for an allocation that was freed (racing, on another stream) and
 * whose address was then reused still faults: it named the old allocation. */
CASE(standin_queued_work_on_a_reused_address_faults, STANDIN | DEVICE_FAULT)
{
    primary_current();
    tcu_stream a = NULL, b = NULL;
    two_streams(&a, &b);
    tcu_deviceptr p = alloc(256);
    OK(cu.cuMemsetD8Async(p, 1, 256, a));
    OK(cu.cuMemFreeAsync(p, b));
    OK(cu.cuStreamSynchronize(b));
    EXPECT_EQ(alloc(256), p);
    EXPECT_RC(cu.cuStreamSynchronize(a), TCU_ERROR_ILLEGAL_ADDRESS);
}

/* A copy or memset queued on one stream, naming memory whose stream-ordered free is
 * then queued on another stream not ordered after it, faults when it runs, as a
 * launch does (on the driver the free may come first). */
CASE(standin_copy_racing_a_free_on_another_stream_faults, STANDIN | DEVICE_FAULT)
{
    primary_current();
    tcu_stream a = NULL, b = NULL;
    two_streams(&a, &b);
    unsigned char buf[64] = {0};
    tcu_deviceptr p = alloc(sizeof buf);
    OK(cu.cuMemcpyDtoHAsync(buf, p, sizeof buf, a));
    OK(cu.cuMemFreeAsync(p, b));
    EXPECT_RC(cu.cuStreamSynchronize(a), TCU_ERROR_ILLEGAL_ADDRESS);
}

CASE(standin_memset_racing_a_free_on_another_stream_faults, STANDIN | DEVICE_FAULT)
{
    primary_current();
    tcu_stream a = NULL, b = NULL;
    two_streams(&a, &b);
    tcu_deviceptr p = alloc(64);
    OK(cu.cuMemsetD32Async(p, 7, 16, a));
    OK(cu.cuMemFreeAsync(p, b));
    /* Running b first frees the memory under the queued memset. */
    OK(cu.cuStreamSynchronize(b));
    EXPECT_RC(cu.cuStreamSynchronize(a), TCU_ERROR_ILLEGAL_ADDRESS);
}

/* The correct client: the free's stream waits for the work (an event), so the free
 * comes after it, whichever stream is synchronized first. */
CASE(standin_free_ordered_after_work_by_an_event_is_no_race, STANDIN)
{
    primary_current();
    tcu_function f = load_fill();
    tcu_stream a = NULL, b = NULL;
    two_streams(&a, &b);
    tcu_event e = NULL;
    OK(cu.cuEventCreate(&e, TCU_EVENT_DISABLE_TIMING));
    uint32_t n = 64;
    tcu_deviceptr out = alloc((size_t)n * 4);
    unsigned char buf[256] = {0};
    void *params[] = {&out, &n};
    OK(cu.cuMemsetD32Async(out, 9, n, a));
    OK(cu.cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, a, params, NULL));
    OK(cu.cuMemcpyDtoHAsync(buf, out, sizeof buf, a));
    OK(cu.cuEventRecord(e, a));
    OK(cu.cuStreamWaitEvent(b, e, 0));
    OK(cu.cuMemFreeAsync(out, b));
    OK(cu.cuStreamSynchronize(b));
    OK(cu.cuStreamSynchronize(a));
    uint32_t last = 0;
    memcpy(&last, buf + 252, sizeof last);
    EXPECT_EQ(last, 3 * 63 + 1);
}

/* Memory from cuMemAllocAsync is usable in stream order: used on another stream
 * before anything orders that stream after the allocation, the work faults when it
 * runs (on the driver the memory may not be there yet). */
CASE(standin_async_memory_used_on_an_unordered_stream_faults, STANDIN | DEVICE_FAULT)
{
    primary_current();
    tcu_stream a = NULL, b = NULL;
    two_streams(&a, &b);
    tcu_deviceptr p = 0;
    OK(cu.cuMemAllocAsync(&p, 64, a));
    OK(cu.cuMemsetD8Async(p, 1, 64, b));
    EXPECT_RC(cu.cuStreamSynchronize(b), TCU_ERROR_ILLEGAL_ADDRESS);
}

CASE(standin_launch_on_async_memory_of_an_unordered_stream_faults,
     STANDIN | DEVICE_FAULT)
{
    primary_current();
    tcu_function f = load_fill();
    tcu_stream a = NULL, b = NULL;
    two_streams(&a, &b);
    uint32_t n = 64;
    tcu_deviceptr out = 0;
    OK(cu.cuMemAllocAsync(&out, (size_t)n * 4, a));
    void *params[] = {&out, &n};
    OK(cu.cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, b, params, NULL));
    OK(cu.cuStreamSynchronize(a)); /* too late: the launch was queued before */
    EXPECT_RC(cu.cuStreamSynchronize(b), TCU_ERROR_ILLEGAL_ADDRESS);
}

/* The correct clients: the other stream waits for an event recorded after the
 * allocation (also through a third stream), the host waits for the allocating stream
 * before queueing the work, or the legacy stream's implicit ordering covers it. */
CASE(standin_async_memory_ordered_after_its_allocation_is_usable, STANDIN)
{
    primary_current();
    tcu_stream a = NULL, b = NULL, c = NULL, blocking = NULL;
    OK(cu.cuStreamCreate(&a, TCU_STREAM_NON_BLOCKING));
    OK(cu.cuStreamCreate(&b, TCU_STREAM_NON_BLOCKING));
    OK(cu.cuStreamCreate(&c, TCU_STREAM_NON_BLOCKING));
    OK(cu.cuStreamCreate(&blocking, TCU_STREAM_DEFAULT));
    tcu_event e = NULL, f = NULL;
    OK(cu.cuEventCreate(&e, TCU_EVENT_DISABLE_TIMING));
    OK(cu.cuEventCreate(&f, TCU_EVENT_DISABLE_TIMING));
    tcu_deviceptr p = 0, q = 0, r = 0, t = 0;
    OK(cu.cuMemAllocAsync(&p, 64, a));
    OK(cu.cuEventRecord(e, a));
    OK(cu.cuStreamWaitEvent(b, e, 0));
    OK(cu.cuMemsetD8Async(p, 1, 64, b)); /* b waited for the allocation */
    OK(cu.cuEventRecord(f, b));
    OK(cu.cuStreamWaitEvent(c, f, 0));
    OK(cu.cuMemsetD8Async(p, 2, 64, c)); /* c waited for b, which waited for a */
    OK(cu.cuMemAllocAsync(&q, 64, a));
    OK(cu.cuStreamSynchronize(a));
    OK(cu.cuMemsetD8Async(q, 3, 64, b)); /* the host waited for the allocation */
    OK(cu.cuMemAllocAsync(&r, 64, NULL));
    OK(cu.cuMemsetD8Async(r, 4, 64, blocking)); /* the legacy stream's ordering */
    OK(cu.cuMemAllocAsync(&t, 64, blocking));
    unsigned char out[64] = {0};
    OK(cu.cuMemcpyDtoH(out, t, sizeof out)); /* the legacy stream waits for blocking */
    OK(cu.cuCtxSynchronize());
    OK(cu.cuMemcpyDtoH(out, p, sizeof out));
    EXPECT_EQ(out[63], 2);
}

/* Stricter than the driver, where the outcome is a race: a launch queued on one stream
 * naming memory whose stream-ordered free is pending on another stream faults when it
 * runs (only a free queued behind it on its own stream is certain to come after it). */
CASE(standin_launch_racing_a_free_on_another_stream_faults, STANDIN | DEVICE_FAULT)
{
    primary_current();
    tcu_function f = load_fill();
    tcu_stream a = NULL, b = NULL;
    two_streams(&a, &b);
    tcu_deviceptr out = 0;
    OK(cu.cuMemAllocAsync(&out, (size_t)64 * 4, a));
    OK(cu.cuStreamSynchronize(a));
    uint32_t n = 64;
    void *params[] = {&out, &n};
    OK(cu.cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, a, params, NULL));
    OK(cu.cuMemFreeAsync(out, b));
    EXPECT_RC(cu.cuStreamSynchronize(a), TCU_ERROR_ILLEGAL_ADDRESS);
}

/* Stricter than the driver, which with unified addressing would take a device pointer
 * given as host memory for a device-to-device copy: Tack must say what it means. */
CASE(standin_device_pointer_as_host_memory_is_refused, STANDIN)
{
    primary_current();
    tcu_deviceptr a = alloc(64), b = alloc(64);
    EXPECT_RC(cu.cuMemcpyHtoD(a, (const void *)(uintptr_t)b, 64),
              TCU_ERROR_INVALID_VALUE);
    EXPECT_RC(cu.cuMemcpyDtoH((void *)(uintptr_t)b, a, 64), TCU_ERROR_INVALID_VALUE);
}

/* Two devices: memory of one is not usable from the other's context (stricter than
 * unified addressing), and its pointer attributes name its own ordinal. */
CASE_ENV(standin_second_device, STANDIN, "TACK_STANDIN_DEVICES=2")
{
    OK(cu.cuInit(0));
    int count = 0;
    OK(cu.cuDeviceGetCount(&count));
    EXPECT_EQ(count, 2);
    tcu_context c0 = NULL, c1 = NULL;
    OK(cu.cuDevicePrimaryCtxRetain(&c0, 0));
    OK(cu.cuDevicePrimaryCtxRetain(&c1, 1));
    EXPECT(c0 != c1);
    OK(cu.cuCtxSetCurrent(c1));
    tcu_deviceptr p = alloc(64);
    OK(cu.cuCtxSetCurrent(c0));
    int ordinal = -1;
    OK(cu.cuPointerGetAttribute(&ordinal, TCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    EXPECT_EQ(ordinal, 1);
    unsigned char buf[64] = {0};
    EXPECT_RC(cu.cuMemcpyHtoD(p, buf, sizeof buf), TCU_ERROR_INVALID_VALUE);
    EXPECT_RC(cu.cuMemFree(p), TCU_ERROR_INVALID_VALUE);
    tcu_uuid u0, u1;
    OK(cu.cuDeviceGetUuid(&u0, 0));
    OK(cu.cuDeviceGetUuid(&u1, 1));
    EXPECT(memcmp(&u0, &u1, sizeof u0) != 0);
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

/* Every sticky code poisons the context when injected, as a real one would; others
 * (712 here) fail the one call. */
CASE_ENV(standin_injected_sticky_errors_poison, STANDIN,
         "TACK_STANDIN_FAIL=cuMemAlloc:1:712,cuMemAlloc:3:226")
{
    primary_current();
    tcu_deviceptr p = 0;
    EXPECT_RC(cu.cuMemAlloc(&p, 64), TCU_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    OK(cu.cuMemAlloc(&p, 64)); /* not sticky */
    EXPECT_RC(cu.cuMemAlloc(&p, 64), TCU_ERROR_CONTAINED);
    EXPECT_RC(cu.cuStreamSynchronize(NULL), TCU_ERROR_CONTAINED); /* now sticky */
    EXPECT(tcu_is_sticky(TCU_ERROR_LAUNCH_TIMEOUT) && tcu_is_sticky(TCU_ERROR_ASSERT));
}

/* After the driver's teardown every call but the version and error-name queries is
 * DEINITIALIZED, cuInit included; handles made before stay refused, never followed. */
CASE(standin_calls_after_teardown_are_deinitialized, STANDIN)
{
    primary_current();
    tcu_deviceptr p = alloc(64);
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    unsigned char buf[64] = {0};
    OK(cu.cuMemcpyHtoDAsync(p, buf, sizeof buf, s)); /* queued, never run */
    void (*teardown)(void) = NULL;
    void *sym = dlsym(cu.lib, "tack_standin_cuda_teardown");
    EXPECT(sym != NULL);
    memcpy(&teardown, &sym, sizeof sym);
    teardown();
    tcu_context ctx = NULL;
    EXPECT_RC(cu.cuCtxGetCurrent(&ctx), TCU_ERROR_DEINITIALIZED);
    EXPECT_RC(cu.cuStreamSynchronize(s), TCU_ERROR_DEINITIALIZED);
    EXPECT_RC(cu.cuMemFreeAsync(p, s), TCU_ERROR_DEINITIALIZED);
    EXPECT_RC(cu.cuMemFree(p), TCU_ERROR_DEINITIALIZED);
    EXPECT_RC(cu.cuInit(0), TCU_ERROR_DEINITIALIZED);
    int version = 0;
    OK(cu.cuDriverGetVersion(&version));
    const char *name = NULL;
    OK(cu.cuGetErrorName(TCU_ERROR_DEINITIALIZED, &name));
    EXPECT(name && strcmp(name, "CUDA_ERROR_DEINITIALIZED") == 0);
}

/* Registered before cuInit, so it runs after the driver's own exit handler. */
static void
after_driver_exit(void)
{
    tcu_deviceptr p = 0;
    _exit(cu.cuMemAlloc(&p, 64) == TCU_ERROR_DEINITIALIZED ? 0 : 7);
}

/* At exit the driver shuts down after the exit handlers registered before it ran:
 * one registered earlier (a library's cleanup) meets a dead driver. */
CASE(standin_driver_is_torn_down_at_exit, STANDIN)
{
    EXPECT(atexit(after_driver_exit) == 0);
    primary_current();
    (void)alloc(64);
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
