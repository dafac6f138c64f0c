/*
 * conformance_driver.c: conformance cases for initialization, devices, contexts,
 * memory, copies, streams, events, pointer attributes and the VMM API (see
 * conformance.c).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance.h"

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

/* Several threads share one context, each making it current for itself: the driver
 * (and the stand-in's one lock) keep each thread's work apart. */
static void *
worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    if (cu.cuCtxSetCurrent(thread_ctx) != TCU_SUCCESS) {
        return "cuCtxSetCurrent failed";
    }
    for (unsigned round = 0; round < 50; round++) {
        unsigned char in[512], out[512];
        memset(in, (int)((seed * 31 + round) & 0xFF), sizeof in);
        tcu_deviceptr p = 0;
        if (cu.cuMemAlloc(&p, sizeof in) != TCU_SUCCESS ||
            cu.cuMemcpyHtoD(p, in, sizeof in) != TCU_SUCCESS ||
            cu.cuMemcpyDtoH(out, p, sizeof out) != TCU_SUCCESS ||
            cu.cuMemFree(p) != TCU_SUCCESS) {
            return "a driver call failed";
        }
        if (memcmp(in, out, sizeof in) != 0) {
            return "a thread read another thread's bytes";
        }
    }
    return NULL;
}

CASE(threads_share_a_context, 0)
{
    thread_ctx = primary_current();
    pthread_t t[4];
    for (uintptr_t k = 0; k < 4; k++) {
        EXPECT(pthread_create(&t[k], NULL, worker, (void *)(k + 1)) == 0);
    }
    for (int k = 0; k < 4; k++) {
        void *err = NULL;
        pthread_join(t[k], &err);
        if (err) {
            fail(__FILE__, __LINE__, "%s", (const char *)err);
        }
    }
}

/* CUDA is not fork-safe: a child forked after cuInit cannot use the driver. The child
 * gets 10 seconds, in case a real driver hangs instead of answering. */
CASE(forked_child_cannot_use_the_driver, UNVERIFIED)
{
    primary_current();
    tcu_deviceptr p = alloc(64);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10);
        tcu_deviceptr q = 0;
        tcu_result a = cu.cuMemAlloc(&q, 64);
        tcu_result b = cu.cuInit(0);
        _exit(a == TCU_ERROR_NOT_INITIALIZED && b == TCU_ERROR_NOT_INITIALIZED
                  ? 0
                  : 10 + a % 100);
    }
    int status = 0;
    EXPECT(waitpid(pid, &status, 0) == pid);
    EXPECT(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    OK(cu.cuMemFree(p)); /* the parent is unaffected */
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

/* Work on a blocking stream is finished before later work on the legacy stream (a
 * synchronous copy) starts; a non-blocking stream gets no such ordering. */
CASE(legacy_stream_waits_for_blocking_streams, 0)
{
    primary_current();
    tcu_stream blocking = NULL;
    OK(cu.cuStreamCreate(&blocking, TCU_STREAM_DEFAULT));
    unsigned char in[256], out[256] = {0};
    memset(in, 0x3C, sizeof in);
    tcu_deviceptr p = alloc(sizeof in);
    OK(cu.cuMemcpyHtoDAsync(p, in, sizeof in, blocking));
    OK(cu.cuMemcpyDtoH(out, p, sizeof out));
    EXPECT(memcmp(in, out, sizeof in) == 0);
    OK(cu.cuStreamDestroy(blocking));
}

CASE(stream_ordered_alloc_and_free, 0)
{
    primary_current();
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    tcu_deviceptr p = 0;
    OK(cu.cuMemAllocAsync(&p, 1000, s));
    EXPECT(p != 0);
    OK(cu.cuMemsetD8Async(p, 0x42, 1000, s));
    unsigned char out[1000] = {0};
    OK(cu.cuMemcpyDtoHAsync(out, p, sizeof out, s));
    OK(cu.cuMemFreeAsync(p, s));
    OK(cu.cuStreamSynchronize(s));
    EXPECT_EQ(out[0], 0x42);
    EXPECT_EQ(out[999], 0x42);
    OK(cu.cuStreamDestroy(s));
}

const tcu_mem_allocation_prop *
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

size_t
granularity(bool exportable)
{
    size_t g = 0;
    OK(cu.cuMemGetAllocationGranularity(&g, vmm_prop(exportable),
                                        TCU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT(g > 0);
    return g;
}

tcu_deviceptr
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

void
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
