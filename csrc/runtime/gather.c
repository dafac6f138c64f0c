/*
 * gather.c: a strided region of a device's memory copied into a new C-contiguous
 * array on that device, device to device, never through the host (docs/cuda.md,
 * DLPack: a strided tensor imported with copy=None or copy=True).
 *
 * The region is described as DLPack does (extents, strides in elements, any sign).
 * It is first simplified: extent-1 axes go, and neighbours whose elements follow
 * each other merge, so a slice of rows is one axis of runs. What is left is copied
 * with the backend's 2-D copies (CUDA's cuMemcpy2DAsync): each copies `height` rows
 * of `width` bytes `pitch` bytes apart into consecutive bytes. The innermost axis
 * gives the rows' width (a run when its stride is 1, else one element), the next
 * suitable axis their count; every other axis is walked on the host, one 2-D copy per
 * index. A row axis needs a positive pitch that holds a row and stays within the
 * driver's limit; an axis that does not qualify (reversed, broadcast, too far apart)
 * is walked too, so the worst case, a reversed innermost axis, is one copy per
 * element.
 */
#include "internal.h"

/* Only CUDA's limit is known; a backend with a smaller one would say so here. */
#define GATHER_MAX_PITCH ((int64_t)2147483647)

typedef struct gather_axes {
    int32_t n;
    int64_t shape[TACK_MAX_NDIM];
    int64_t stride[TACK_MAX_NDIM]; /* elements */
} gather_axes;

/* The region with extent-1 axes dropped and contiguous neighbours merged. */
static void
simplify(int32_t ndim, const int64_t *shape, const int64_t *strides, gather_axes *g)
{
    g->n = 0;
    for (int32_t k = 0; k < ndim; k++) {
        if (shape[k] == 1) {
            continue;
        }
        int32_t last = g->n - 1;
        if (last >= 0 && g->stride[last] == strides[k] * shape[k]) {
            g->shape[last] *= shape[k]; /* axis last steps over whole runs of k */
            g->stride[last] = strides[k];
            continue;
        }
        g->shape[g->n] = shape[k];
        g->stride[g->n] = strides[k];
        g->n++;
    }
}

/* Whether axis k can be the rows of a 2-D copy of width-byte rows. */
static bool
row_axis(const gather_axes *g, int32_t k, size_t itemsize, size_t width)
{
    return k >= 0 && g->stride[k] > 0 &&
           g->stride[k] <= GATHER_MAX_PITCH / (int64_t)itemsize &&
           (size_t)g->stride[k] * itemsize >= width;
}

tack_status
tack__array_gather(tack_device *dev, uintptr_t address, tack_dtype dtype, int32_t ndim,
                   const int64_t *shape, const int64_t *strides, size_t itemsize,
                   tack_array **out)
{
    tack_status (*copy_2d)(void *, void *, size_t, const void *, size_t, size_t,
                           size_t) = TACK__BACKEND_SLOT(dev->backend, copy_2d);
    if (!copy_2d) {
        return tack__fail(
            TACK_ERR_UNSUPPORTED,
            "a strided tensor in %s memory cannot be copied on the device "
            "in this build of Tack: make it contiguous in the producer",
            dev->backend->name);
    }
    tack_array *arr = NULL;
    tack_status st =
        tack_array_empty(dev, dtype, ndim, shape, TACK_BUFFER_WRITABLE, &arr);
    if (st != TACK_OK || arr->nbytes == 0) {
        *out = arr;
        return st;
    }
    gather_axes g;
    simplify(ndim, shape, strides, &g);
    /* The rows: width bytes each, height of them, pitch apart; then the outer axes
     * [0, outer) walked one 2-D copy at a time. */
    int32_t inner = g.n - 1, outer = g.n;
    size_t width = itemsize, height = 1, pitch = itemsize;
    if (inner >= 0 && g.stride[inner] == 1) {
        width = (size_t)g.shape[inner] * itemsize;
        outer = inner--;
    }
    if (row_axis(&g, inner, itemsize, width)) {
        height = (size_t)g.shape[inner];
        pitch = (size_t)g.stride[inner] * itemsize;
        outer = inner;
    }
    else {
        pitch = width; /* one row: the pitch only has to hold it */
    }
    int64_t index[TACK_MAX_NDIM] = {0};
    int64_t offset = 0; /* elements from the first element, for this outer index */
    unsigned char *dst = arr->buffer->data;
    size_t block = width * height;
    for (size_t done = 0; st == TACK_OK && done < arr->nbytes; done += block) {
        st = copy_2d(dev->state, dst + done, width,
                     (const void *)(address + (uintptr_t)(offset * (int64_t)itemsize)),
                     pitch, width, height);
        for (int32_t k = outer - 1; k >= 0; k--) {
            if (++index[k] < g.shape[k]) {
                offset += g.stride[k];
                break;
            }
            offset -= g.stride[k] * (g.shape[k] - 1);
            index[k] = 0;
        }
    }
    if (st != TACK_OK) {
        tack_array_release(arr);
        return st;
    }
    *out = arr;
    return TACK_OK;
}
