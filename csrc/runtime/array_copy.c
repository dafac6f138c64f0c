/*
 * array_copy.c: moving elements into, out of and between arrays: fill, the host
 * copies, copyto, to_device and its stream-ordered form.
 *
 * Every host write checks the array is live and writable before touching memory, so
 * a refused write leaves every byte unchanged. Host data is converted on the host:
 * straight into a CPU array's memory, else through a staging block that one backend
 * copy moves. Between arrays the cheapest route is taken: one conversion pass when
 * both are on the host, one device copy on one device and dtype, a peer copy between
 * two devices of one backend, otherwise a round trip through the host. A fill, or a
 * copy on the device side, that touched a shared buffer completes before the call
 * returns (finish_shared).
 */
#include <string.h>

#include "internal.h"

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
    st = tack__check_dtype(value_dtype);
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

/* The checks of a host copy before any other: the array is live, the host data's
 * dtype is a Tack dtype. */
static tack_status
check_live_and_dtype(const tack_array *arr, const char *what, tack_dtype dtype)
{
    tack_status st = tack__check_live(arr, what);
    return st == TACK_OK ? tack__check_dtype(dtype) : st;
}

/* A host block of nbytes for a copy to pass through. Out: *out only on success;
 * release it with tack__free. */
static tack_status
staging_alloc(size_t nbytes, void **out)
{
    void *staging = tack__alloc(nbytes, 0);
    if (!staging) {
        return tack__fail(TACK_ERR_NO_MEMORY, "out of memory staging %zu bytes",
                          nbytes);
    }
    *out = staging;
    return TACK_OK;
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
    tack_status st = check_live_and_dtype(dst, "copy from the host", src_dtype);
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
    void *staging = NULL;
    st = staging_alloc(dst->nbytes, &staging);
    if (st != TACK_OK) {
        return st;
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
    tack_status st = check_live_and_dtype(src, "copy to the host", dst_dtype);
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
    void *staging = NULL;
    st = staging_alloc(src->nbytes, &staging);
    if (st != TACK_OK) {
        return st;
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
    void *staging = NULL;
    st = staging_alloc(staging_bytes, &staging);
    if (st != TACK_OK) {
        return st;
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
