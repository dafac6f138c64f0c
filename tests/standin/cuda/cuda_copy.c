/*
 * cuda_copy.c: the CUDA layer's copies between two contexts (cuMemcpyPeerAsync) and of
 * 2-D regions (cuMemcpy2DAsync), over the core's (tests/standin/core/standin_copy.c).
 * A 2-D copy names device memory on both sides; host memory and CUDA arrays are not
 * modelled (CUDA_ERROR_INVALID_VALUE).
 */
#include "cuda_layer.h"

STANDIN_EXPORT tcu_result
cuMemcpyPeerAsync(tcu_deviceptr dstDevice, tcu_context dstContext,
                  tcu_deviceptr srcDevice, tcu_context srcContext, size_t ByteCount,
                  tcu_stream hStream)
{
    standin_rc rc = standin_enter("cuMemcpyPeerAsync");
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    if (rc == STANDIN_OK) {
        rc = cuda_current_stream(hStream, &ctx, &s);
    }
    if (rc == STANDIN_OK) {
        rc = standin_copy_peer(s, dstDevice, dstContext, srcDevice, srcContext,
                               ByteCount);
    }
    return standin_leave(rc, "cuMemcpyPeerAsync",
                         "dst=0x%llx, dst_ctx=%p, src=0x%llx, src_ctx=%p, n=%zu, "
                         "stream=%p",
                         dstDevice, (void *)dstContext, srcDevice, (void *)srcContext,
                         ByteCount, (void *)hStream);
}

STANDIN_EXPORT tcu_result
cuMemcpy2DAsync_v2(const tcu_memcpy2d *pCopy, tcu_stream hStream)
{
    standin_rc rc = standin_enter("cuMemcpy2DAsync");
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    if (rc == STANDIN_OK) {
        rc = cuda_current_stream(hStream, &ctx, &s);
    }
    if (rc == STANDIN_OK && (!pCopy || pCopy->srcMemoryType != TCU_MEMORYTYPE_DEVICE ||
                             pCopy->dstMemoryType != TCU_MEMORYTYPE_DEVICE)) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        standin_copy2d c = {.dst = pCopy->dstDevice,
                            .dst_x = pCopy->dstXInBytes,
                            .dst_y = pCopy->dstY,
                            .dst_pitch = pCopy->dstPitch,
                            .src = pCopy->srcDevice,
                            .src_x = pCopy->srcXInBytes,
                            .src_y = pCopy->srcY,
                            .src_pitch = pCopy->srcPitch,
                            .width = pCopy->WidthInBytes,
                            .height = pCopy->Height};
        rc = standin_copy_2d(ctx, s, &c);
    }
    if (!pCopy) {
        return standin_leave(rc, "cuMemcpy2DAsync", "copy=NULL, stream=%p",
                             (void *)hStream);
    }
    return standin_leave(rc, "cuMemcpy2DAsync",
                         "dst=0x%llx+%zu, dpitch=%zu, src=0x%llx+%zu, spitch=%zu, "
                         "width=%zu, height=%zu, stream=%p",
                         pCopy->dstDevice, pCopy->dstXInBytes, pCopy->dstPitch,
                         pCopy->srcDevice, pCopy->srcXInBytes, pCopy->srcPitch,
                         pCopy->WidthInBytes, pCopy->Height, (void *)hStream);
}
