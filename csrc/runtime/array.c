/*
 * array.c: the array object: creation over a buffer, views (reshape, read-only),
 * the accessors and the release. Copies are in array_copy.c, exports and wraps of
 * foreign memory in array_wrap.c.
 *
 * Every array is C-contiguous from the first byte of its buffer. Shape arithmetic is
 * checked once, in tack_shape_size, so nelem and nbytes of a live array never
 * overflow.
 */
#include <string.h>

#include "internal.h"

tack_status
tack_shape_size(int32_t ndim, const int64_t *shape, size_t itemsize, size_t *nelem)
{
    TACK__CHECK_ARG(nelem);
    if (ndim > 0) {
        TACK__CHECK_ARG(shape);
    }
    if (ndim < 0 || ndim > TACK_MAX_NDIM) {
        return tack__fail(TACK_ERR_BAD_SHAPE,
                          "an array has 0 to %d dimensions, not %d: reshape the data",
                          TACK_MAX_NDIM, (int)ndim);
    }
    size_t n = 1;
    bool zero = false;
    for (int32_t k = 0; k < ndim; k++) {
        if (shape[k] < 0) {
            return tack__fail(
                TACK_ERR_BAD_SHAPE,
                "dimension %d has negative extent %lld: extents must be >= 0", (int)k,
                (long long)shape[k]);
        }
        if (shape[k] == 0) {
            zero = true;
        }
    }
    /* Even a shape with a zero extent must not overflow in its other extents, so that
     * a later reshape of the same data is well defined. */
    for (int32_t k = 0; k < ndim; k++) {
        uint64_t e = (uint64_t)shape[k];
        if (e != 0 && n > SIZE_MAX / e) {
            return tack__fail(
                TACK_ERR_SIZE_OVERFLOW,
                "the shape's element count overflows at dimension %d: use "
                "a smaller shape",
                (int)k);
        }
        if (e != 0) {
            n *= (size_t)e;
        }
    }
    if (zero) {
        n = 0;
    }
    /* Byte counts must also fit, and stay within PTRDIFF_MAX so pointer arithmetic
     * over the whole array is defined. */
    if (itemsize && n > (size_t)PTRDIFF_MAX / itemsize) {
        return tack__fail(
            TACK_ERR_SIZE_OVERFLOW,
            "the array would need more than %td bytes: use a smaller shape",
            PTRDIFF_MAX);
    }
    *nelem = n;
    return TACK_OK;
}

tack_status
tack__check_dtype(tack_dtype dtype)
{
    if (!tack_dtype_get(dtype)) {
        return tack__fail(TACK_ERR_BAD_DTYPE, "dtype value %d is not a Tack dtype",
                          (int)dtype);
    }
    return TACK_OK;
}

tack_status
tack_array_shape_of_scalars(tack_dtype dtype, int32_t scalar_ndim,
                            const int64_t *scalar_shape, int32_t *ndim, int64_t *shape)
{
    const tack_dtype_info *info = tack_dtype_get(dtype);
    TACK__CHECK_ARG(ndim);
    TACK__CHECK_ARG(shape);
    if (scalar_ndim > 0) {
        TACK__CHECK_ARG(scalar_shape);
    }
    tack_status st = tack__check_dtype(dtype);
    if (st != TACK_OK) {
        return st;
    }
    if (scalar_ndim < 0 || scalar_ndim > TACK_MAX_NDIM) {
        return tack__fail(TACK_ERR_BAD_SHAPE, "data has %d dimensions: 0 to %d work",
                          (int)scalar_ndim, TACK_MAX_NDIM);
    }
    int32_t n = scalar_ndim;
    if (info->ncomponents > 1) {
        if (n == 0 || scalar_shape[n - 1] != info->ncomponents) {
            return tack__fail(TACK_ERR_BAD_SHAPE,
                              "data for a %s array needs a last dimension of %d, the "
                              "component count",
                              info->name, (int)info->ncomponents);
        }
        n--;
    }
    if (n > 0) {
        memcpy(shape, scalar_shape, (size_t)n * sizeof(int64_t));
    }
    *ndim = n;
    return TACK_OK;
}

/* adopt: the array takes over the caller's reference to buf (on success only)
 * instead of taking one of its own, which saves an atomic increment on paths that
 * make a buffer for one array. */
static tack_status
array_make(tack_buffer *buf, tack_dtype dtype, int32_t ndim, const int64_t *shape,
           size_t nelem, bool writable, bool adopt, tack_array **out)
{
    assert(buf && out && ndim >= 0 && ndim <= TACK_MAX_NDIM);
    assert(nelem * tack__dtype(dtype)->itemsize <= buf->nbytes);
    tack_array *arr;
    /* shape, then the DLPack layout (see internal.h) */
    size_t nextents = (size_t)ndim + 2 * (size_t)tack__dl_ndim(dtype, ndim);
    tack_status st = tack__new(sizeof *arr + nextents * sizeof(int64_t), (void **)&arr);
    if (st != TACK_OK) {
        return st;
    }
    atomic_init(&arr->refcount, 1);
    atomic_init(&arr->dlpack_spare, NULL);
    if (!adopt) {
        tack_buffer_retain(buf);
    }
    arr->buffer = buf;
    arr->dtype = dtype;
    arr->ndim = ndim;
    arr->nelem = nelem;
    arr->nbytes = nelem * tack__dtype(dtype)->itemsize;
    arr->writable = writable && (tack_buffer_flags(buf) & TACK_BUFFER_WRITABLE);
    if (ndim) {
        memcpy(arr->shape, shape, (size_t)ndim * sizeof(int64_t));
    }
    tack__array_fill_dl_layout(arr);
    *out = arr;
    return TACK_OK;
}

tack_status
tack__dtype_shape_size(tack_dtype dtype, int32_t ndim, const int64_t *shape,
                       size_t *nelem)
{
    tack_status st = tack__check_dtype(dtype);
    if (st != TACK_OK) {
        return st;
    }
    return tack_shape_size(ndim, shape, tack_dtype_get(dtype)->itemsize, nelem);
}

tack_status
tack_array_empty(tack_device *dev, tack_dtype dtype, int32_t ndim, const int64_t *shape,
                 unsigned flags, tack_array **out)
{
    TACK__CHECK_ARG(dev);
    TACK__CHECK_ARG(out);
    size_t nelem = 0;
    tack_status st = tack__dtype_shape_size(dtype, ndim, shape, &nelem);
    if (st != TACK_OK) {
        return st;
    }
    tack_buffer *buf;
    st = tack_buffer_new(dev, nelem * tack_dtype_get(dtype)->itemsize, flags, &buf);
    if (st != TACK_OK) {
        return st;
    }
    st = array_make(buf, dtype, ndim, shape, nelem, true, true, out);
    if (st != TACK_OK) {
        tack_buffer_release(buf); /* the array did not adopt it */
    }
    return st;
}

tack_status
tack_array_zeros(tack_device *dev, tack_dtype dtype, int32_t ndim, const int64_t *shape,
                 unsigned flags, tack_array **out)
{
    TACK__CHECK_ARG(out);
    tack_array *arr;
    tack_status st = tack_array_empty(dev, dtype, ndim, shape, flags, &arr);
    if (st != TACK_OK) {
        return st;
    }
    static const unsigned char zero = 0;
    if (arr->nbytes) {
        const tack_backend *b = dev->backend;
        st = b->fill(dev->state, arr->buffer->data, &zero, 1, arr->nbytes);
    }
    if (st != TACK_OK) {
        tack_array_release(arr);
        return st;
    }
    *out = arr;
    return TACK_OK;
}

tack_status
tack_array_from_buffer(tack_buffer *buf, tack_dtype dtype, int32_t ndim,
                       const int64_t *shape, bool writable, tack_array **out)
{
    TACK__CHECK_ARG(buf);
    TACK__CHECK_ARG(out);
    size_t nelem = 0;
    tack_status st = tack__dtype_shape_size(dtype, ndim, shape, &nelem);
    if (st != TACK_OK) {
        return st;
    }
    size_t need = nelem * tack_dtype_get(dtype)->itemsize;
    if (need > buf->nbytes) {
        return tack__fail(TACK_ERR_BAD_SHAPE,
                          "the shape needs %zu bytes but the memory holds %zu: give a "
                          "shape and dtype that describe the memory",
                          need, buf->nbytes);
    }
    return array_make(buf, dtype, ndim, shape, nelem, writable, false, out);
}

void
tack_array_retain(tack_array *arr)
{
    if (!arr) {
        return;
    }
    atomic_fetch_add_explicit(&arr->refcount, 1, memory_order_relaxed);
}

void
tack_array_release(tack_array *arr)
{
    if (!arr) {
        return;
    }
    if (tack__ref_drop(&arr->refcount)) {
        tack_buffer *buf = arr->buffer;
        tack__free(atomic_load_explicit(&arr->dlpack_spare, memory_order_acquire));
        tack__free(arr);
        tack_buffer_release(buf);
    }
}

void *
tack_array_data(const tack_array *arr)
{
    return arr ? arr->buffer->data : NULL;
}

tack_dtype
tack_array_dtype(const tack_array *arr)
{
    return arr ? arr->dtype : TACK_DTYPE_COUNT;
}

int32_t
tack_array_ndim(const tack_array *arr)
{
    return arr ? arr->ndim : 0;
}

const int64_t *
tack_array_shape(const tack_array *arr)
{
    return arr ? arr->shape : NULL;
}

size_t
tack_array_nelem(const tack_array *arr)
{
    return arr ? arr->nelem : 0;
}

size_t
tack_array_nbytes(const tack_array *arr)
{
    return arr ? arr->nbytes : 0;
}

bool
tack_array_writable(const tack_array *arr)
{
    return arr && arr->writable;
}

tack_buffer *
tack_array_buffer(const tack_array *arr)
{
    return arr ? arr->buffer : NULL;
}

tack_device *
tack_array_device(const tack_array *arr)
{
    return arr ? arr->buffer->device : NULL;
}

tack_status
tack_array_reshape(const tack_array *arr, int32_t ndim, const int64_t *shape,
                   tack_array **out)
{
    TACK__CHECK_ARG(arr);
    TACK__CHECK_ARG(out);
    if (ndim > 0) {
        TACK__CHECK_ARG(shape);
    }
    tack_status live = tack__check_live(arr, "reshape");
    if (live != TACK_OK) {
        return live;
    }
    if (ndim < 0 || ndim > TACK_MAX_NDIM) {
        return tack__fail(TACK_ERR_BAD_SHAPE, "an array has 0 to %d dimensions, not %d",
                          TACK_MAX_NDIM, (int)ndim);
    }
    int64_t resolved[TACK_MAX_NDIM];
    int infer = -1;
    for (int32_t k = 0; k < ndim; k++) {
        resolved[k] = shape[k];
        if (shape[k] == -1) {
            if (infer >= 0) {
                return tack__fail(TACK_ERR_BAD_SHAPE,
                                  "only one dimension of a reshape may be -1");
            }
            infer = (int)k;
            resolved[k] = 1;
        }
    }
    size_t nelem;
    tack_status st =
        tack_shape_size(ndim, resolved, tack_dtype_get(arr->dtype)->itemsize, &nelem);
    if (st != TACK_OK) {
        return st;
    }
    if (infer >= 0) {
        if (nelem == 0 || arr->nelem % nelem != 0) {
            return tack__fail(TACK_ERR_BAD_SHAPE,
                              "cannot infer the -1 extent: %zu elements do not divide "
                              "into the other extents",
                              arr->nelem);
        }
        resolved[infer] = (int64_t)(arr->nelem / nelem);
        nelem = arr->nelem;
    }
    if (nelem != arr->nelem) {
        return tack__fail(TACK_ERR_BAD_SHAPE,
                          "cannot reshape an array of %zu elements into a shape of %zu "
                          "elements: the element counts must match",
                          arr->nelem, nelem);
    }
    return array_make(arr->buffer, arr->dtype, ndim, resolved, nelem, arr->writable,
                      false, out);
}

tack_status
tack_array_readonly_view(const tack_array *arr, tack_array **out)
{
    TACK__CHECK_ARG(arr);
    TACK__CHECK_ARG(out);
    tack_status live = tack__check_live(arr, "read-only view");
    if (live != TACK_OK) {
        return live;
    }
    return array_make(arr->buffer, arr->dtype, arr->ndim, arr->shape, arr->nelem, false,
                      false, out);
}

tack_status
tack__array_new(tack_buffer *buf, tack_dtype dtype, int32_t ndim, const int64_t *shape,
                size_t nelem, bool writable, tack_array **out)
{
    return array_make(buf, dtype, ndim, shape, nelem, writable, true, out);
}
