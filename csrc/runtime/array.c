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

/* adopt: the array takes over the caller's reference to buf (on success only)
 * instead of taking one of its own, which saves an atomic increment on paths that
 * make a buffer for one array. */
static tack_status
array_make(tack_buffer *buf, tack_dtype dtype, int32_t ndim, const int64_t *shape,
           size_t nelem, bool writable, bool adopt, tack_array **out)
{
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
tack_array_empty(tack_device *dev, tack_dtype dtype, int32_t ndim, const int64_t *shape,
                 unsigned flags, tack_array **out)
{
    tack_status st = check_dtype(dtype);
    size_t nelem = 0;
    if (st == TACK_OK) {
        st = tack_shape_size(ndim, shape, tack_dtype_get(dtype)->itemsize, &nelem);
    }
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
    tack_status st = check_dtype(dtype);
    size_t nelem = 0;
    if (st == TACK_OK) {
        st = tack_shape_size(ndim, shape, tack_dtype_get(dtype)->itemsize, &nelem);
    }
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
    atomic_fetch_add_explicit(&arr->refcount, 1, memory_order_relaxed);
}

void
tack_array_release(tack_array *arr)
{
    if (!arr) {
        return;
    }
    if (atomic_fetch_sub_explicit(&arr->refcount, 1, memory_order_acq_rel) == 1) {
        tack_buffer *buf = arr->buffer;
        tack__free(arr);
        tack_buffer_release(buf);
    }
}

void *
tack_array_data(const tack_array *arr)
{
    return arr->buffer->data;
}

tack_dtype
tack_array_dtype(const tack_array *arr)
{
    return arr->dtype;
}

int32_t
tack_array_ndim(const tack_array *arr)
{
    return arr->ndim;
}

const int64_t *
tack_array_shape(const tack_array *arr)
{
    return arr->shape;
}

size_t
tack_array_nelem(const tack_array *arr)
{
    return arr->nelem;
}

size_t
tack_array_nbytes(const tack_array *arr)
{
    return arr->nbytes;
}

bool
tack_array_writable(const tack_array *arr)
{
    return arr->writable;
}

tack_buffer *
tack_array_buffer(const tack_array *arr)
{
    return arr->buffer;
}

tack_device *
tack_array_device(const tack_array *arr)
{
    return arr->buffer->device;
}

tack_status
tack_array_reshape(const tack_array *arr, int32_t ndim, const int64_t *shape,
                   tack_array **out)
{
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
    return array_make(arr->buffer, arr->dtype, arr->ndim, arr->shape, arr->nelem, false,
                      false, out);
}

static tack_status
check_writable(const tack_array *arr, const char *what)
{
    if (!arr->writable) {
        return tack__fail(
            TACK_ERR_READ_ONLY,
            "%s: the array is read-only (a read-only import or view); copy "
            "it with tack.array(...) to get a writable array",
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
    tack_status st = check_writable(arr, "fill");
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
    return arr->buffer->device->backend->dlpack_device_type == 1;
}

tack_status
tack_array_copy_from_host(tack_array *dst, const void *src, tack_dtype src_dtype,
                          size_t nscalars)
{
    tack_status st = check_writable(dst, "copy");
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
    size_t nscalars = src->nelem * ncomponents(src->dtype);
    if (src->nbytes == 0) {
        return TACK_OK;
    }
    tack_device *dev = src->buffer->device;
    tack_status st = tack_device_synchronize(dev);
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
    tack_status st = check_writable(dst, "copyto");
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
tack__array_new(tack_buffer *buf, tack_dtype dtype, int32_t ndim, const int64_t *shape,
                size_t nelem, bool writable, tack_array **out)
{
    return array_make(buf, dtype, ndim, shape, nelem, writable, true, out);
}

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
    if (!arr || !out) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT, "export_memory needs an array");
    }
    tack_buffer *buf = arr->buffer;
    tack_device *dev = buf->device;
    if (!dev->backend->export_memory) {
        return tack__fail(TACK_ERR_UNSUPPORTED,
                          "backend '%s' does not support memory export: only CUDA "
                          "arrays export an OS handle; share this array with DLPack "
                          "instead",
                          dev->backend->name);
    }
    tack_buffer *target = buf;
    tack_status st;
    if (tack_buffer_flags(buf) & TACK_BUFFER_EXPORTABLE) {
        st = tack_buffer_share(buf); /* exported in place, as DLPack does */
    }
    else {
        st = export_copy(buf, &target);
    }
    if (st != TACK_OK) {
        return st;
    }
    return dev->backend->export_memory(dev->state, target->data, arr->nbytes, out);
}
