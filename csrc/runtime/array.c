/*
 * array.c: arrays over buffers: creation, views, fill and host copies.
 *
 * Every array is C-contiguous from the first byte of its buffer. Shape arithmetic is
 * checked once, in tack_shape_size, so nelem and nbytes of a live array never
 * overflow. Host writes check writable before touching memory, so a refused write
 * leaves every byte unchanged.
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

/* A dtype from a caller is an int: anything outside the enumeration is refused
 * before it indexes a table. */
static tack_status
check_dtype(tack_dtype dtype)
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
    tack_status st = check_dtype(dtype);
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
    assert(nelem * tack_dtype_get(dtype)->itemsize <= buf->nbytes);
    tack_array *arr;
    /* shape, then the DLPack layout (see internal.h) */
    size_t nextents = (size_t)ndim + 2 * (size_t)tack__dl_ndim(dtype, ndim);
    tack_status st = tack__new(sizeof *arr + nextents * sizeof(int64_t), (void **)&arr);
    if (st != TACK_OK) {
        return st;
    }
    atomic_init(&arr->refcount, 1);
    if (!adopt) {
        tack_buffer_retain(buf);
    }
    arr->buffer = buf;
    arr->dtype = dtype;
    arr->ndim = ndim;
    arr->nelem = nelem;
    arr->nbytes = nelem * tack_dtype_get(dtype)->itemsize;
    arr->writable = writable && (tack_buffer_flags(buf) & TACK_BUFFER_WRITABLE);
    if (ndim) {
        memcpy(arr->shape, shape, (size_t)ndim * sizeof(int64_t));
    }
    tack__array_fill_dl_layout(arr);
    *out = arr;
    return TACK_OK;
}

/* The element count of a shape of dtype, the dtype checked first. Out: *nelem only
 * on success. */
static tack_status
dtype_shape_size(tack_dtype dtype, int32_t ndim, const int64_t *shape, size_t *nelem)
{
    tack_status st = check_dtype(dtype);
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
    tack_status st = dtype_shape_size(dtype, ndim, shape, &nelem);
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
    tack_status st = dtype_shape_size(dtype, ndim, shape, &nelem);
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
    size_t before = atomic_fetch_sub_explicit(&arr->refcount, 1, memory_order_acq_rel);
    assert(before > 0 && "tack_array_release of an array already released");
    if (before == 1) {
        tack_buffer *buf = arr->buffer;
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

static tack_status
check_writable(const tack_array *arr, const char *what)
{
    if (!arr->writable) {
        return tack__fail_remedy(TACK_ERR_READ_ONLY, TACK_REMEDY_WRITABLE_COPY,
                                 "%s: the array is read-only (a read-only import or "
                                 "view)",
                                 what);
    }
    return TACK_OK;
}

static size_t
ncomponents(tack_dtype dt)
{
    return tack_dtype_get(dt)->ncomponents;
}

/* A fill or copy that used a shared buffer completes before the call returns: the
 * memory's owner, or the consumer of an export, may read it at once on a stream Tack
 * does not know (docs/cuda.md, Synchronization). b may be NULL. */
static tack_status
finish_shared(tack_status st, const tack_buffer *a, const tack_buffer *b)
{
    unsigned flags = tack_buffer_flags(a) | (b ? tack_buffer_flags(b) : 0u);
    if (st == TACK_OK && (flags & TACK_BUFFER_SHARED)) {
        st = tack_device_synchronize(a->device);
    }
    return st;
}

tack_status
tack_array_fill(tack_array *arr, const void *value, tack_dtype value_dtype)
{
    TACK__CHECK_ARG(arr);
    tack_status st = tack__check_live(arr, "fill");
    if (st == TACK_OK) {
        st = check_writable(arr, "fill");
    }
    if (st != TACK_OK) {
        return st;
    }
    TACK__CHECK_ARG(value);
    st = check_dtype(value_dtype);
    if (st != TACK_OK) {
        return st;
    }
    const tack_dtype_info *info = tack_dtype_get(arr->dtype);
    /* One element's bytes: the scalar converted, repeated in every component. */
    unsigned char pattern[16];
    if (value_dtype == arr->dtype) {
        /* A whole element, every component given. */
        memcpy(pattern, value, info->itemsize);
    }
    else {
        size_t scalar_size = tack_dtype_get(info->scalar)->itemsize;
        tack_convert(pattern, info->scalar, value, value_dtype, 1);
        for (size_t c = 1; c < info->ncomponents; c++) {
            memcpy(pattern + c * scalar_size, pattern, scalar_size);
        }
    }
    if (arr->nelem == 0) {
        return TACK_OK;
    }
    tack_device *dev = arr->buffer->device;
    st = dev->backend->fill(dev->state, arr->buffer->data, pattern, info->itemsize,
                            arr->nelem);
    return finish_shared(st, arr->buffer, NULL);
}

/* Host-side staging for a device array, or the array's own memory on the CPU. */
static bool
on_host(const tack_array *arr)
{
    return tack__device_is_host(arr->buffer->device);
}

tack_status
tack_array_copy_from_host(tack_array *dst, const void *src, tack_dtype src_dtype,
                          size_t nscalars)
{
    TACK__CHECK_ARG(dst);
    if (nscalars > 0) {
        TACK__CHECK_ARG(src);
    }
    tack_status st = tack__check_live(dst, "copy from the host");
    if (st == TACK_OK) {
        st = check_dtype(src_dtype);
    }
    if (st != TACK_OK) {
        return st;
    }
    st = check_writable(dst, "copy");
    if (st != TACK_OK) {
        return st;
    }
    size_t want = dst->nelem * ncomponents(dst->dtype);
    if (nscalars != want) {
        return tack__fail(
            TACK_ERR_BAD_SHAPE,
            "the source has %zu values but the array holds %zu: give data "
            "of the array's shape",
            nscalars, want);
    }
    if (dst->nbytes == 0) {
        return TACK_OK;
    }
    tack_device *dev = dst->buffer->device;
    const tack_dtype_info *dinfo = tack_dtype_get(dst->dtype);
    if (on_host(dst)) {
        tack_convert(dst->buffer->data, dinfo->scalar, src, src_dtype, nscalars);
        return TACK_OK;
    }
    void *staging = tack__alloc(dst->nbytes, 0);
    if (!staging) {
        return tack__fail(TACK_ERR_NO_MEMORY, "out of memory staging %zu bytes",
                          dst->nbytes);
    }
    tack_convert(staging, dinfo->scalar, src, src_dtype, nscalars);
    st = dev->backend->copy(dev->state, dst->buffer->data, staging, dst->nbytes,
                            TACK_COPY_HOST_TO_DEVICE);
    tack__free(staging);
    return st;
}

tack_status
tack_array_copy_to_host(const tack_array *src, void *dst, tack_dtype dst_dtype)
{
    TACK__CHECK_ARG(src);
    if (src->nbytes > 0) {
        TACK__CHECK_ARG(dst);
    }
    tack_status st = tack__check_live(src, "copy to the host");
    if (st == TACK_OK) {
        st = check_dtype(dst_dtype);
    }
    if (st != TACK_OK) {
        return st;
    }
    size_t nscalars = src->nelem * ncomponents(src->dtype);
    if (src->nbytes == 0) {
        return TACK_OK;
    }
    tack_device *dev = src->buffer->device;
    st = tack_device_synchronize(dev);
    if (st != TACK_OK) {
        return st;
    }
    const tack_dtype_info *sinfo = tack_dtype_get(src->dtype);
    if (on_host(src)) {
        tack_convert(dst, dst_dtype, src->buffer->data, sinfo->scalar, nscalars);
        return TACK_OK;
    }
    void *staging = tack__alloc(src->nbytes, 0);
    if (!staging) {
        return tack__fail(TACK_ERR_NO_MEMORY, "out of memory staging %zu bytes",
                          src->nbytes);
    }
    st = dev->backend->copy(dev->state, staging, src->buffer->data, src->nbytes,
                            TACK_COPY_DEVICE_TO_HOST);
    if (st == TACK_OK) {
        tack_convert(dst, dst_dtype, staging, sinfo->scalar, nscalars);
    }
    tack__free(staging);
    return st;
}

/* The scalar shape: vec arrays gain a trailing dimension of their component count. */
static bool
same_scalar_shape(const tack_array *a, const tack_array *b)
{
    size_t ca = ncomponents(a->dtype), cb = ncomponents(b->dtype);
    int32_t na = a->ndim + (ca > 1), nb = b->ndim + (cb > 1);
    if (na != nb) {
        return false;
    }
    for (int32_t k = 0; k < a->ndim && k < b->ndim; k++) {
        if (a->shape[k] != b->shape[k]) {
            return false;
        }
    }
    if (ca > 1 && b->ndim > a->ndim) {
        return (size_t)b->shape[a->ndim] == ca;
    }
    if (cb > 1 && a->ndim > b->ndim) {
        return (size_t)a->shape[b->ndim] == cb;
    }
    return ca == cb;
}

tack_status
tack_array_copyto(tack_array *dst, const tack_array *src)
{
    TACK__CHECK_ARG(dst);
    TACK__CHECK_ARG(src);
    tack_status st = tack__check_live(dst, "copyto");
    if (st == TACK_OK) {
        st = tack__check_live(src, "copyto");
    }
    if (st == TACK_OK) {
        st = check_writable(dst, "copyto");
    }
    if (st != TACK_OK) {
        return st;
    }
    if (!same_scalar_shape(dst, src)) {
        return tack__fail(
            TACK_ERR_BAD_SHAPE,
            "copyto needs equal shapes (destination %d-d with %zu elements, "
            "source %d-d with %zu): reshape one of them",
            (int)dst->ndim, dst->nelem, (int)src->ndim, src->nelem);
    }
    if (dst->nbytes == 0) {
        return TACK_OK;
    }
    /* Same memory, same dtype: nothing to do (and a memcpy onto itself is UB). */
    if (dst->buffer == src->buffer && dst->dtype == src->dtype) {
        return TACK_OK;
    }
    const tack_dtype_info *sinfo = tack_dtype_get(src->dtype);
    size_t nscalars = src->nelem * sinfo->ncomponents;
    if (on_host(dst) && on_host(src) && dst->buffer != src->buffer) {
        /* Both on the host in distinct memory: convert in one pass. */
        tack_convert(dst->buffer->data, tack_dtype_get(dst->dtype)->scalar,
                     src->buffer->data, sinfo->scalar, nscalars);
        return TACK_OK;
    }
    if (!on_host(dst) && dst->buffer->device == src->buffer->device &&
        dst->dtype == src->dtype) {
        /* One device, one dtype: a device-to-device copy on the device's stream,
         * never through the host. */
        tack_device *dev = dst->buffer->device;
        st = dev->backend->copy(dev->state, dst->buffer->data, src->buffer->data,
                                dst->nbytes, TACK_COPY_DEVICE_TO_DEVICE);
        return finish_shared(st, dst->buffer, src->buffer);
    }
    tack_device *dd = dst->buffer->device, *sd = src->buffer->device;
    tack_status (*peer)(void *, void *, void *, const void *, size_t) =
        dd->backend == sd->backend && dst->dtype == src->dtype && !on_host(dst)
            ? TACK__BACKEND_SLOT(dd->backend, copy_peer)
            : NULL;
    if (peer) {
        /* Two devices of one backend (two GPUs): peer to peer, never through the
         * host. */
        st = peer(dd->state, dst->buffer->data, sd->state, src->buffer->data,
                  dst->nbytes);
        return finish_shared(st, dst->buffer, src->buffer);
    }
    size_t staging_bytes = nscalars * tack_dtype_get(sinfo->scalar)->itemsize;
    void *staging = tack__alloc(staging_bytes, 0);
    if (!staging) {
        return tack__fail(TACK_ERR_NO_MEMORY, "out of memory staging %zu bytes",
                          staging_bytes);
    }
    st = tack_array_copy_to_host(src, staging, sinfo->scalar);
    if (st == TACK_OK) {
        st = tack_array_copy_from_host(dst, staging, sinfo->scalar, nscalars);
    }
    tack__free(staging);
    return st;
}

tack_status
tack_array_to_device(const tack_array *src, tack_device *dev, tack_array **out)
{
    TACK__CHECK_ARG(src);
    TACK__CHECK_ARG(dev);
    TACK__CHECK_ARG(out);
    tack_status live = tack__check_live(src, "to_device");
    if (live != TACK_OK) {
        return live;
    }
    tack_array *dst;
    tack_status st = tack_array_empty(dev, src->dtype, src->ndim, src->shape,
                                      TACK_BUFFER_WRITABLE, &dst);
    if (st != TACK_OK) {
        return st;
    }
    st = tack_array_copyto(dst, src);
    if (st != TACK_OK) {
        tack_array_release(dst);
        return st;
    }
    *out = dst;
    return TACK_OK;
}

tack_status
tack_array_to_device_on_stream(const tack_array *src, tack_device *dev, int64_t stream,
                               tack_array **out)
{
    TACK__CHECK_ARG(src);
    TACK__CHECK_ARG(dev);
    TACK__CHECK_ARG(out);
    tack_status live = tack__check_live(src, "to_device");
    if (live != TACK_OK) {
        return live;
    }
    /* The stream belongs to the device with streams: the source's, else the
     * destination's (a host-to-device copy). */
    tack_device *owner = src->buffer->device;
    if (!TACK__BACKEND_SLOT(owner->backend, order_tack_after_foreign) &&
        TACK__BACKEND_SLOT(dev->backend, order_tack_after_foreign)) {
        owner = dev;
    }
    tack_status st = tack__stream_follow(owner, stream);
    tack_array *dst = NULL;
    if (st == TACK_OK) {
        st = tack_array_to_device(src, dev, &dst);
    }
    if (st == TACK_OK && dst->buffer->device == owner) {
        st = tack__stream_lead(owner, stream);
    }
    if (st != TACK_OK) {
        tack_array_release(dst);
        return st;
    }
    *out = dst;
    return TACK_OK;
}

/* ---- memory for other APIs ---------------------------------------------------- */

/* The exportable copy of buf for export_memory, made once. Borrowed: lives as long
 * as buf. */
static tack_status
export_copy(tack_buffer *buf, tack_buffer **out)
{
    tack_buffer *copy = atomic_load_explicit(&buf->export_copy, memory_order_acquire);
    if (copy) {
        *out = copy;
        return TACK_OK;
    }
    tack_device *dev = buf->device;
    tack_status st = tack_buffer_new(
        dev, buf->nbytes, TACK_BUFFER_WRITABLE | TACK_BUFFER_EXPORTABLE, &copy);
    if (st != TACK_OK) {
        return st;
    }
    /* Queued on the device's stream after the launches that wrote buf; waited for,
     * so the memory is complete when another API imports the handle. */
    st = dev->backend->copy(dev->state, copy->data, buf->data, buf->nbytes,
                            TACK_COPY_DEVICE_TO_DEVICE);
    if (st == TACK_OK) {
        st = tack_device_synchronize(dev);
    }
    if (st != TACK_OK) {
        tack_buffer_release(copy);
        return st;
    }
    tack_buffer *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&buf->export_copy, &none, copy,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire)) {
        tack_buffer_release(copy); /* another thread made it first */
        copy = none;
    }
    *out = copy;
    return TACK_OK;
}

tack_status
tack_array_export_memory(tack_array *arr, tack_exported_memory *out)
{
    TACK__CHECK_ARG(arr);
    TACK__CHECK_ARG(out);
    tack_status live = tack__check_live(arr, "export_memory");
    if (live != TACK_OK) {
        return live;
    }
    const tack_device *dev = arr->buffer->device;
    tack_status (*export_memory)(void *, void *, size_t, tack_exported_memory *) =
        TACK__BACKEND_SLOT(dev->backend, export_memory);
    if (!export_memory) {
        return tack__fail(TACK_ERR_UNSUPPORTED,
                          "backend %s does not support memory export: only CUDA arrays "
                          "(and Metal on macOS) can be exported as OS handles; share "
                          "this array through DLPack instead",
                          dev->backend->name);
    }
    /* An exportable buffer is exported in place; the other API may read at once, so
     * the launches queued so far finish first (share). Any other buffer is exported
     * through its one-time copy, which waits for them. */
    tack_buffer *target = arr->buffer;
    tack_status st = (tack_buffer_flags(target) & TACK_BUFFER_EXPORTABLE)
                         ? tack_buffer_share(target)
                         : export_copy(arr->buffer, &target);
    if (st != TACK_OK) {
        return st;
    }
    tack_exported_memory m;
    memset(&m, 0, sizeof m);
    st = export_memory(dev->state, target->data, arr->nbytes, &m);
    if (st == TACK_OK) {
        m.backend = dev->backend->name;
        m.size = arr->nbytes;
        *out = m;
    }
    return st;
}

/* ---- memory Tack does not own -------------------------------------------------- */

/* Whether a pointer the backend located can be wrapped by it. */
static bool
space_ok(const tack_device *dev, tack_memory_space space)
{
    if (tack__device_is_host(dev)) {
        return space != TACK_MEMORY_DEVICE;
    }
    return space == TACK_MEMORY_DEVICE || space == TACK_MEMORY_MANAGED;
}

/* Checks what a foreign pointer must satisfy that the shape does not say. */
static tack_status
check_pointer(tack_device *dev, const void *data, size_t nbytes, size_t align)
{
    if (!data) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "a NULL pointer cannot hold elements: pass the address of "
                          "the first element");
    }
    if (!tack__range_fits((uintptr_t)data, nbytes)) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "%zu bytes from address %p reach past the end of the "
                          "address space: pass the address of the first element",
                          nbytes, data);
    }
    if (((uintptr_t)data & (align - 1)) != 0) { /* align is a power of 2 */
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "address %p is not aligned to the %zu bytes its elements "
                          "need: pass an aligned address, or copy the data",
                          data, align);
    }
    if (dev->backend->memory_space) {
        tack_memory_space space = TACK_MEMORY_UNKNOWN;
        tack_status st = dev->backend->memory_space(dev->state, data, &space);
        if (st != TACK_OK) {
            return st;
        }
        if (!space_ok(dev, space)) {
            return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                              "address %p is not in the memory space of %s:%d: pass "
                              "a pointer that belongs to that device, or import on "
                              "the device that owns it",
                              data, dev->backend->name, dev->ordinal);
        }
    }
    return TACK_OK;
}

tack_status
tack__array_wrap_validated(tack_device *dev, void *data, tack_dtype dtype, int32_t ndim,
                           const int64_t *shape, size_t nelem, bool writable,
                           tack_release_fn release, void *ctx, tack_array **out)
{
    const tack_dtype_info *info = tack_dtype_get(dtype);
    tack_status st = TACK_OK;
    if (nelem > 0) {
        st = check_pointer(dev, data, nelem * info->itemsize,
                           tack_dtype_get(info->scalar)->itemsize);
    }
    if (st != TACK_OK) {
        if (release) {
            release(ctx);
        }
        return st;
    }
    size_t nbytes = nelem * info->itemsize;
    tack_buffer *buf = NULL;
    st = tack_buffer_wrap(dev, nbytes ? data : NULL, nbytes,
                          writable ? TACK_BUFFER_WRITABLE : 0u, release, ctx, &buf);
    if (st != TACK_OK) {
        return st; /* tack_buffer_wrap has called release */
    }
    st = tack__array_new(buf, dtype, ndim, shape, nelem, writable, out);
    if (st != TACK_OK) {
        tack_buffer_release(buf); /* not adopted: runs release */
    }
    return st;
}

/* tack_array_wrap_memory and _region: validates the arguments and the size against
 * the region's nbytes, then wraps. Consumes the release obligation. */
static tack_status
wrap_checked(const char *fname, tack_device *dev, void *data, size_t nbytes,
             tack_dtype dtype, int32_t ndim, const int64_t *shape, bool writable,
             tack_release_fn release, void *ctx, tack_array **out)
{
    const tack_dtype_info *info = tack_dtype_get(dtype);
    size_t nelem = 0;
    tack_status st = TACK_OK;
    if (!dev || !out) {
        st = tack__fail(TACK_ERR_INVALID_ARGUMENT,
                        "%s(): argument '%s' is NULL: pass a valid pointer", fname,
                        dev ? "out" : "dev");
    }
    else {
        st = dtype_shape_size(dtype, ndim, shape, &nelem);
    }
    if (st == TACK_OK && nelem * info->itemsize > nbytes) {
        st = tack__fail(TACK_ERR_BAD_SHAPE,
                        "the shape and dtype need %zu bytes but the memory holds %zu: "
                        "give a shape and dtype that describe the memory",
                        nelem * info->itemsize, nbytes);
    }
    if (st != TACK_OK) {
        if (release) {
            release(ctx);
        }
        return st;
    }
    return tack__array_wrap_validated(dev, data, dtype, ndim, shape, nelem, writable,
                                      release, ctx, out);
}

tack_status
tack_array_wrap_memory(tack_device *dev, void *data, tack_dtype dtype, int32_t ndim,
                       const int64_t *shape, bool writable, tack_release_fn release,
                       void *ctx, tack_array **out)
{
    return wrap_checked("tack_array_wrap_memory", dev, data, SIZE_MAX, dtype, ndim,
                        shape, writable, release, ctx, out);
}

tack_status
tack_array_wrap_region(tack_device *dev, void *data, size_t nbytes, tack_dtype dtype,
                       int32_t ndim, const int64_t *shape, bool writable,
                       tack_release_fn release, void *ctx, tack_array **out)
{
    return wrap_checked("tack_array_wrap_region", dev, data, nbytes, dtype, ndim, shape,
                        writable, release, ctx, out);
}

tack_status
tack__array_new(tack_buffer *buf, tack_dtype dtype, int32_t ndim, const int64_t *shape,
                size_t nelem, bool writable, tack_array **out)
{
    return array_make(buf, dtype, ndim, shape, nelem, writable, true, out);
}
