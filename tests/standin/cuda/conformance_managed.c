/*
 * conformance_managed.c: conformance cases for managed memory (cuMemAllocManaged, see
 * conformance.c): its allocation rules, what cuPointerGetAttributes says about it,
 * and that the host reaches it at the address the driver returned, which is what a
 * producer of kDLCUDAManaged tensors relies on and what Tack's import accepts.
 */
#include <stdint.h>
#include <string.h>

#include "conformance.h"

/* The device the suite models (an H200 on Linux) supports managed memory, and the
 * host and the device may use it at the same time. */
CASE(managed_memory_is_supported, UNVERIFIED)
{
    OK(cu.cuInit(0));
    int managed = 0, concurrent = 0;
    OK(cu.cuDeviceGetAttribute(&managed, TCU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0));
    OK(cu.cuDeviceGetAttribute(&concurrent,
                               TCU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0));
    EXPECT_EQ(managed, 1);
    EXPECT_EQ(concurrent, 1);
}

CASE(managed_alloc_rules, UNVERIFIED)
{
    primary_current();
    tcu_deviceptr p = 0;
    EXPECT_RC(cu.cuMemAllocManaged(&p, 0, TCU_MEM_ATTACH_GLOBAL),
              TCU_ERROR_INVALID_VALUE);
    /* flags: exactly one of CU_MEM_ATTACH_GLOBAL and CU_MEM_ATTACH_HOST */
    EXPECT_RC(cu.cuMemAllocManaged(&p, 64, 0), TCU_ERROR_INVALID_VALUE);
    EXPECT_RC(cu.cuMemAllocManaged(&p, 64, TCU_MEM_ATTACH_GLOBAL | TCU_MEM_ATTACH_HOST),
              TCU_ERROR_INVALID_VALUE);
    OK(cu.cuMemAllocManaged(&p, 1000, TCU_MEM_ATTACH_GLOBAL));
    EXPECT(p != 0 && p % 256 == 0);
    EXPECT_RC(cu.cuMemFree(p + 8), TCU_ERROR_INVALID_VALUE); /* interior */
    OK(cu.cuMemFree(p));
    EXPECT_RC(cu.cuMemFree(p), TCU_ERROR_INVALID_VALUE); /* twice */
    tcu_deviceptr q = 0;
    OK(cu.cuMemAllocManaged(&q, 64, TCU_MEM_ATTACH_HOST));
    OK(cu.cuMemFree(q));
}

/* One cuPointerGetAttributes call, as Tack's import makes it: IS_MANAGED says managed,
 * the ordinal is the device it was allocated against, and the host pointer is the
 * pointer itself. The memory type is DEVICE or HOST: the runtime documents that
 * managed memory may report either, so only IS_MANAGED tells. */
CASE(managed_pointer_attributes, UNVERIFIED)
{
    tcu_context ctx = primary_current();
    tcu_deviceptr p = 0;
    OK(cu.cuMemAllocManaged(&p, 4096, TCU_MEM_ATTACH_GLOBAL));
    unsigned type = 0, managed = 0;
    int ordinal = -1;
    tcu_context owner = NULL;
    void *host = NULL;
    tcu_deviceptr dev = 0;
    tcu_pointer_attribute attrs[6] = {
        TCU_POINTER_ATTRIBUTE_MEMORY_TYPE,  TCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        TCU_POINTER_ATTRIBUTE_IS_MANAGED,   TCU_POINTER_ATTRIBUTE_CONTEXT,
        TCU_POINTER_ATTRIBUTE_HOST_POINTER, TCU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    void *data[6] = {&type, &ordinal, &managed, &owner, &host, &dev};
    OK(cu.cuPointerGetAttributes(6, attrs, data, p + 100));
    EXPECT(type == TCU_MEMORYTYPE_DEVICE || type == TCU_MEMORYTYPE_HOST);
    EXPECT_EQ(ordinal, 0);
    EXPECT(managed != 0);
    EXPECT(owner == ctx);
    EXPECT(host == (void *)(uintptr_t)(p + 100));
    EXPECT_EQ(dev, p + 100);
    /* Ordinary device memory is not managed. */
    tcu_deviceptr d = alloc(64);
    managed = 1;
    OK(cu.cuPointerGetAttributes(1, &attrs[2], &data[2], d));
    EXPECT_EQ(managed, 0);
    OK(cu.cuMemFree(d));
    OK(cu.cuMemFree(p));
}

/* The host reads what queued device work wrote once the stream is synchronized, and
 * the device reads what the host wrote through the same address. */
CASE(managed_memory_is_host_accessible, UNVERIFIED)
{
    primary_current();
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    tcu_deviceptr p = 0;
    OK(cu.cuMemAllocManaged(&p, 1024, TCU_MEM_ATTACH_GLOBAL));
    OK(cu.cuMemsetD32Async(p, 0x01020304u, 256, s));
    OK(cu.cuStreamSynchronize(s));
    volatile uint32_t *h = (volatile uint32_t *)(uintptr_t)p;
    EXPECT_EQ(h[0], 0x01020304u);
    EXPECT_EQ(h[255], 0x01020304u);
    for (uint32_t k = 0; k < 256; k++) {
        h[k] = k * 3u;
    }
    uint32_t out[256];
    memset(out, 0, sizeof out);
    OK(cu.cuMemcpyDtoHAsync(out, p, sizeof out, s));
    OK(cu.cuStreamSynchronize(s));
    EXPECT_EQ(out[7], 21);
    EXPECT_EQ(out[255], 765);
    /* A managed pointer is also host memory to a copy. */
    tcu_deviceptr d = alloc(sizeof out);
    OK(cu.cuMemcpyHtoD(d, (const void *)(uintptr_t)p, sizeof out));
    memset(out, 0, sizeof out);
    OK(cu.cuMemcpyDtoH(out, d, sizeof out));
    EXPECT_EQ(out[100], 300);
    OK(cu.cuMemFree(d));
    OK(cu.cuMemFree(p));
    OK(cu.cuStreamDestroy(s));
}
