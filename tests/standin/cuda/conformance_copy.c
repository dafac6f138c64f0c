/*
 * conformance_copy.c: the cases of the copies between contexts (cuMemcpyPeerAsync) and
 * of 2-D regions (cuMemcpy2DAsync), which Tack uses for copies between two GPUs and
 * for strided device copies (docs/cuda.md).
 */
#include <string.h>

#include "conformance.h"

/* A peer copy between two contexts, and within one (the driver documents both). */
CASE(peer_copies_between_contexts, 0)
{
    tcu_context c0 = primary_current();
    tcu_stream s0 = NULL;
    OK(cu.cuStreamCreate(&s0, TCU_STREAM_NON_BLOCKING));
    uint32_t in[256], out[256];
    for (uint32_t k = 0; k < 256; k++) {
        in[k] = k * 2654435761u;
    }
    tcu_deviceptr a = alloc(sizeof in), b = alloc(sizeof in);
    OK(cu.cuMemcpyHtoDAsync(a, in, sizeof in, s0));
    OK(cu.cuMemcpyPeerAsync(b, c0, a, c0, sizeof in, s0));
    OK(cu.cuMemcpyDtoHAsync(out, b, sizeof out, s0));
    OK(cu.cuStreamSynchronize(s0));
    EXPECT(memcmp(in, out, sizeof in) == 0);
    OK(cu.cuMemcpyPeerAsync(b, c0, a, c0, 0, s0)); /* nothing to copy */
    int count = 0;
    OK(cu.cuDeviceGetCount(&count));
    if (count >= 2) {
        /* Into device 1's memory, queued on a stream of device 1's context. */
        tcu_device d1 = 0;
        tcu_context c1 = NULL;
        OK(cu.cuDeviceGet(&d1, 1));
        OK(cu.cuDevicePrimaryCtxRetain(&c1, d1));
        OK(cu.cuCtxSetCurrent(c1));
        tcu_stream s1 = NULL;
        OK(cu.cuStreamCreate(&s1, TCU_STREAM_NON_BLOCKING));
        tcu_deviceptr x = alloc(sizeof in);
        memset(out, 0, sizeof out);
        OK(cu.cuMemcpyPeerAsync(x, c1, a, c0, sizeof in, s1));
        OK(cu.cuMemcpyDtoHAsync(out, x, sizeof out, s1));
        OK(cu.cuStreamSynchronize(s1));
        EXPECT(memcmp(in, out, sizeof in) == 0);
        OK(cu.cuMemFree(x));
        OK(cu.cuStreamDestroy(s1));
        OK(cu.cuCtxSetCurrent(c0));
        OK(cu.cuDevicePrimaryCtxRelease(d1));
    }
    OK(cu.cuMemFree(a));
    OK(cu.cuMemFree(b));
    OK(cu.cuStreamDestroy(s0));
}

/* Runs the 2-D copy c on s, then brings its destination's first n bytes to out. */
static void
copy_2d_to_host(const tcu_memcpy2d *c, tcu_stream s, void *out, size_t n)
{
    OK(cu.cuMemcpy2DAsync(c, s));
    OK(cu.cuMemcpyDtoHAsync(out, c->dstDevice, n, s));
    OK(cu.cuStreamSynchronize(s));
}

/* A 2-D copy gathers every third 4-byte element of 64 (a column of a row-major
 * matrix) into contiguous memory, and one of rows with gaps between them. */
CASE(copy_2d_gathers_strided_elements, 0)
{
    primary_current();
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    uint32_t in[192], out[64];
    for (uint32_t k = 0; k < 192; k++) {
        in[k] = k;
    }
    tcu_deviceptr a = alloc(sizeof in), b = alloc(sizeof out);
    OK(cu.cuMemcpyHtoDAsync(a, in, sizeof in, s));
    tcu_memcpy2d c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = TCU_MEMORYTYPE_DEVICE;
    c.srcDevice = a;
    c.srcXInBytes = 4; /* column 1 */
    c.srcPitch = 12;
    c.dstMemoryType = TCU_MEMORYTYPE_DEVICE;
    c.dstDevice = b;
    c.dstPitch = 4;
    c.WidthInBytes = 4;
    c.Height = 64;
    copy_2d_to_host(&c, s, out, sizeof out);
    for (uint32_t k = 0; k < 64; k++) {
        EXPECT_EQ(out[k], 3 * k + 1);
    }
    /* Rows of 8 bytes, 12 apart: 32 rows. */
    c.srcXInBytes = 0;
    c.dstPitch = 8;
    c.WidthInBytes = 8;
    c.Height = 32;
    copy_2d_to_host(&c, s, out, sizeof out);
    for (size_t k = 0; k < 32; k++) {
        EXPECT_EQ(out[2 * k], 3 * k);
        EXPECT_EQ(out[2 * k + 1], 3 * k + 1);
    }
    OK(cu.cuMemFree(a));
    OK(cu.cuMemFree(b));
    OK(cu.cuStreamDestroy(s));
}

/* A pitch narrower than a row, and rows past the allocation, are refused. */
CASE(copy_2d_rules, UNVERIFIED)
{
    primary_current();
    tcu_deviceptr a = alloc(256), b = alloc(256);
    tcu_memcpy2d c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = c.dstMemoryType = TCU_MEMORYTYPE_DEVICE;
    c.srcDevice = a;
    c.dstDevice = b;
    c.srcPitch = 4;
    c.dstPitch = 8;
    c.WidthInBytes = 8;
    c.Height = 4;
    EXPECT_RC(cu.cuMemcpy2DAsync(&c, NULL), TCU_ERROR_INVALID_VALUE);
    c.srcPitch = 64;
    c.Height = 5; /* the fifth row starts at byte 256 */
    EXPECT_RC(cu.cuMemcpy2DAsync(&c, NULL), TCU_ERROR_INVALID_VALUE);
    c.Height = 4;
    OK(cu.cuMemcpy2DAsync(&c, NULL));
    OK(cu.cuCtxSynchronize());
    OK(cu.cuMemFree(a));
    OK(cu.cuMemFree(b));
}
