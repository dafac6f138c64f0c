/*
 * standin_copy.c: copies between two contexts (peer copies) and of 2-D regions, queued
 * like every other copy: the bytes move only when the queue runs.
 *
 * Stricter than the driver: the queue must belong to the calling thread's current
 * context; a 2-D copy moves device memory to device memory only (host memory and
 * arrays are not modelled), and a pitch must hold a row and stay within
 * STANDIN_MAX_PITCH, even where the driver would let a one-row copy through.
 */
#include <stdlib.h>

#include "standin.h"

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

standin_rc
standin_copy_peer(struct standin_queue *s, standin_addr dst_ptr, const void *dst_ctx,
                  standin_addr src_ptr, const void *src_ctx, size_t n)
{
    struct standin_context *dctx = standin_known_context(dst_ctx);
    struct standin_context *sctx = standin_known_context(src_ctx);
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
    standin_rc rc = standin_device_range(dctx, dst_ptr, n, true, &dst);
    if (rc == STANDIN_OK) {
        rc = standin_device_range(sctx, src_ptr, n, false, &src);
    }
    return rc == STANDIN_OK ? queue_copy(s, &dst, &src, 0, 0, n) : rc;
}

/* The bytes [first, first + span) of one side of a 2-D copy, which must lie in one
 * allocation. False for a pitch that cannot hold a row or is past the limit, or an
 * extent past the address space. Out: *first, *span. */
static bool
side_span(size_t x, size_t y, size_t pitch, size_t width, size_t height, size_t *first,
          size_t *span)
{
    size_t start, rows;
    if (pitch < width || pitch > STANDIN_MAX_PITCH ||
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

standin_rc
standin_copy_2d(struct standin_context *ctx, struct standin_queue *s,
                const standin_copy2d *c)
{
    if (c->width == 0 || c->height == 0) {
        return STANDIN_OK;
    }
    size_t soff, sspan, doff, dspan;
    if (!side_span(c->src_x, c->src_y, c->src_pitch, c->width, c->height, &soff,
                   &sspan) ||
        !side_span(c->dst_x, c->dst_y, c->dst_pitch, c->width, c->height, &doff,
                   &dspan) ||
        c->src > UINT64_MAX - soff || c->dst > UINT64_MAX - doff) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    standin_range dst = {0}, src = {0};
    standin_rc rc = standin_device_range(ctx, c->dst + doff, dspan, true, &dst);
    if (rc == STANDIN_OK) {
        rc = standin_device_range(ctx, c->src + soff, sspan, false, &src);
    }
    /* One queued copy per row, in row order. */
    for (size_t r = 0; rc == STANDIN_OK && r < c->height; r++) {
        rc = queue_copy(s, &dst, &src, r * c->dst_pitch, r * c->src_pitch, c->width);
    }
    return rc;
}
