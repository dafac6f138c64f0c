/*
 * standin_copy.c: the stand-in's copies between two contexts (cuMemcpyPeerAsync) and
 * of 2-D regions (cuMemcpy2DAsync), queued like every other copy: the bytes move
 * only when the stream runs.
 *
 * Stricter than the driver: the stream must belong to the calling thread's current
 * context; a 2-D copy moves device memory to device memory only (host memory and
 * CUDA arrays are not modelled: CUDA_ERROR_INVALID_VALUE), and a pitch must hold a
 * row and stay within TCU_MAX_PITCH, even where the driver would let a one-row copy
 * through.
 */
#include <stdlib.h>

#include "cuda_layer.h"

/* Queues one OP_COPY (OP_FAULT where a side faults) of n bytes on s. */
static standin_rc
queue_copy(struct standin_queue *s, const standin_range *dst, const standin_range *src,
           size_t offset_dst, size_t offset_src, size_t n)
{
    standin_op *op = standin_op_new(dst->faults || src->faults ? OP_FAULT : OP_COPY);
    if (!op) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    op->dst = dst->alias + offset_dst;
    op->src = src->alias + offset_src;
    op->nbytes = n;
    standin_enqueue(s, op);
    return STANDIN_OK;
}

/* The calling thread's current context and a stream of it. Out: *ctx, *s. */
static standin_rc
current_stream(tcu_stream stream, struct standin_context **ctx,
               struct standin_queue **s)
{
    standin_rc rc = standin_current(ctx);
    return rc == STANDIN_OK ? cuda_stream(*ctx, stream, s) : rc;
}

static standin_rc
peer_copy(standin_addr dst_ptr, tcu_context dst_handle, standin_addr src_ptr,
          tcu_context src_handle, size_t n, tcu_stream stream)
{
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    standin_rc rc = current_stream(stream, &ctx, &s);
    if (rc != STANDIN_OK) {
        return rc;
    }
    struct standin_context *dctx = standin_known_context(dst_handle);
    struct standin_context *sctx = standin_known_context(src_handle);
    if (!dctx || !sctx || !dctx->alive || !sctx->alive) {
        return STANDIN_ERR_INVALID_CONTEXT;
    }
    if (dctx->sticky != STANDIN_OK || sctx->sticky != STANDIN_OK) {
        return dctx->sticky != STANDIN_OK ? dctx->sticky : sctx->sticky;
    }
    if (n == 0) {
        return STANDIN_OK; /* nothing to move is a success, as in the driver */
    }
    /* Each pointer must be memory of its own context's device. */
    standin_range dst = {0}, src = {0};
    rc = standin_device_range(dctx, dst_ptr, n, true, &dst);
    if (rc == STANDIN_OK) {
        rc = standin_device_range(sctx, src_ptr, n, false, &src);
    }
    return rc == STANDIN_OK ? queue_copy(s, &dst, &src, 0, 0, n) : rc;
}

STANDIN_EXPORT tcu_result
cuMemcpyPeerAsync(standin_addr dstDevice, tcu_context dstContext,
                  standin_addr srcDevice, tcu_context srcContext, size_t ByteCount,
                  tcu_stream hStream)
{
    standin_rc rc = standin_enter("cuMemcpyPeerAsync");
    if (rc == STANDIN_OK) {
        rc =
            peer_copy(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream);
    }
    return standin_leave(rc, "cuMemcpyPeerAsync",
                         "dst=0x%llx, dst_ctx=%p, src=0x%llx, src_ctx=%p, n=%zu, "
                         "stream=%p",
                         dstDevice, (void *)dstContext, srcDevice, (void *)srcContext,
                         ByteCount, (void *)hStream);
}

/* The bytes [first, first + span) of one side of a 2-D copy, which must lie in one
 * allocation. False for a pitch that cannot hold a row or is past the limit, or an
 * extent past the address space. Out: *first, *span. */
static bool
side_span(size_t x, size_t y, size_t pitch, size_t width, size_t height, size_t *first,
          size_t *span)
{
    size_t start, rows;
    if (pitch < width || pitch > TCU_MAX_PITCH ||
        __builtin_mul_overflow(y, pitch, &start) ||
        __builtin_add_overflow(start, x, &start) ||
        __builtin_mul_overflow(height - 1, pitch, &rows) ||
        __builtin_add_overflow(rows, width, &rows) ||
        __builtin_add_overflow(start, rows, &(size_t){0})) {
        return false;
    }
    *first = start;
    *span = rows;
    return true;
}

static standin_rc
copy_2d(const tcu_memcpy2d *c, tcu_stream stream)
{
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    standin_rc rc = current_stream(stream, &ctx, &s);
    if (rc != STANDIN_OK) {
        return rc;
    }
    if (!c || c->srcMemoryType != TCU_MEMORYTYPE_DEVICE ||
        c->dstMemoryType != TCU_MEMORYTYPE_DEVICE) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    if (c->WidthInBytes == 0 || c->Height == 0) {
        return STANDIN_OK;
    }
    size_t soff, sspan, doff, dspan;
    if (!side_span(c->srcXInBytes, c->srcY, c->srcPitch, c->WidthInBytes, c->Height,
                   &soff, &sspan) ||
        !side_span(c->dstXInBytes, c->dstY, c->dstPitch, c->WidthInBytes, c->Height,
                   &doff, &dspan) ||
        c->srcDevice > UINT64_MAX - soff || c->dstDevice > UINT64_MAX - doff) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    standin_range dst = {0}, src = {0};
    rc = standin_device_range(ctx, c->dstDevice + doff, dspan, true, &dst);
    if (rc == STANDIN_OK) {
        rc = standin_device_range(ctx, c->srcDevice + soff, sspan, false, &src);
    }
    /* One queued copy per row, in row order. */
    for (size_t r = 0; rc == STANDIN_OK && r < c->Height; r++) {
        rc = queue_copy(s, &dst, &src, r * c->dstPitch, r * c->srcPitch,
                        c->WidthInBytes);
    }
    return rc;
}

STANDIN_EXPORT tcu_result
cuMemcpy2DAsync_v2(const tcu_memcpy2d *pCopy, tcu_stream hStream)
{
    standin_rc rc = standin_enter("cuMemcpy2DAsync");
    if (rc == STANDIN_OK) {
        rc = copy_2d(pCopy, hStream);
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
