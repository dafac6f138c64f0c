/*
 * conformance_host.c: conformance cases for page-locked host memory (cuMemHostAlloc,
 * cuMemHostRegister, see conformance.c): the host reaches it at once, copies take it
 * as their host side, and one cuPointerGetAttributes call, as Tack's pointer check
 * makes it, says host memory. That is what a kDLCUDAHost producer hands to Tack.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "conformance.h"

/* The three attributes Tack's pointer check asks for (csrc/backends/cuda/
 * cuda_table.c, the table's pointer_info), and the host pointer. */
static void
expect_host_memory(const void *p)
{
    unsigned type = 0, managed = 1;
    int ordinal = -1;
    void *host = NULL;
    tcu_pointer_attribute attrs[4] = {
        TCU_POINTER_ATTRIBUTE_MEMORY_TYPE, TCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        TCU_POINTER_ATTRIBUTE_IS_MANAGED, TCU_POINTER_ATTRIBUTE_HOST_POINTER};
    void *data[4] = {&type, &ordinal, &managed, &host};
    OK(cu.cuPointerGetAttributes(4, attrs, data, (tcu_deviceptr)(uintptr_t)p));
    EXPECT_EQ(type, TCU_MEMORYTYPE_HOST);
    EXPECT_EQ(managed, 0);
    EXPECT(host == p);
}

CASE(host_alloc_is_host_memory_the_driver_knows, UNVERIFIED)
{
    primary_current();
    void *p = NULL;
    EXPECT_RC(cu.cuMemHostAlloc(&p, 0, 0), TCU_ERROR_INVALID_VALUE);
    EXPECT_RC(cu.cuMemHostAlloc(&p, 64, 0x80), TCU_ERROR_INVALID_VALUE); /* flags */
    OK(cu.cuMemHostAlloc(&p, 4096, TCU_MEMHOSTALLOC_PORTABLE));
    memset(p, 0x3C, 4096); /* the host writes it directly */
    expect_host_memory(p);
    expect_host_memory((unsigned char *)p + 100);
    /* A copy through the device and back, with pinned memory as both host sides. */
    tcu_deviceptr d = alloc(4096);
    void *back = NULL;
    OK(cu.cuMemHostAlloc(&back, 4096, 0));
    OK(cu.cuMemcpyHtoDAsync(d, p, 4096, NULL));
    OK(cu.cuMemcpyDtoHAsync(back, d, 4096, NULL));
    OK(cu.cuStreamSynchronize(NULL));
    EXPECT_EQ(((unsigned char *)back)[4095], 0x3C);
    EXPECT_RC(cu.cuMemFreeHost((unsigned char *)p + 8), TCU_ERROR_INVALID_VALUE);
    OK(cu.cuMemFreeHost(p));
    OK(cu.cuMemFreeHost(back));
    OK(cu.cuMemFree(d));
}

CASE(host_register_rules, UNVERIFIED)
{
    primary_current();
    size_t n = (size_t)4 << 12;
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(m != MAP_FAILED);
    EXPECT_RC(cu.cuMemHostUnregister(m), TCU_ERROR_HOST_MEMORY_NOT_REGISTERED);
    OK(cu.cuMemHostRegister(m, n, 0));
    expect_host_memory((unsigned char *)m + n - 1);
    EXPECT_RC(cu.cuMemHostRegister((unsigned char *)m + 4096, 4096, 0),
              TCU_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    EXPECT_RC(cu.cuMemHostUnregister((unsigned char *)m + 4096),
              TCU_ERROR_HOST_MEMORY_NOT_REGISTERED); /* not where it starts */
    OK(cu.cuMemHostUnregister(m));
    /* Unregistered: ordinary host memory, unknown to the driver, and still the
     * caller's to use. */
    unsigned type = 7;
    tcu_pointer_attribute attr = TCU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void *data[1] = {&type};
    OK(cu.cuPointerGetAttributes(1, &attr, data, (tcu_deviceptr)(uintptr_t)m));
    EXPECT_EQ(type, 0);
    memset(m, 1, n);
    OK(cu.cuMemHostRegister(m, n, TCU_MEMHOSTREGISTER_PORTABLE)); /* again */
    OK(cu.cuMemHostUnregister(m));
    munmap(m, n);
}

/* Stricter than unified addressing, which would let a device-to-device copy read
 * pinned memory through the same pointer: Tack treats it as host memory, so the
 * stand-in does too. */
CASE(standin_pinned_memory_is_not_device_memory, STANDIN)
{
    primary_current();
    void *p = NULL;
    OK(cu.cuMemHostAlloc(&p, 256, TCU_MEMHOSTALLOC_DEVICEMAP));
    tcu_deviceptr d = alloc(256);
    EXPECT_RC(cu.cuMemcpyDtoDAsync(d, (tcu_deviceptr)(uintptr_t)p, 256, NULL),
              TCU_ERROR_INVALID_VALUE);
    EXPECT_RC(cu.cuMemFree((tcu_deviceptr)(uintptr_t)p), TCU_ERROR_INVALID_VALUE);
    OK(cu.cuMemFreeHost(p));
    EXPECT_RC(cu.cuMemFreeHost(p), TCU_ERROR_INVALID_VALUE); /* twice */
}
