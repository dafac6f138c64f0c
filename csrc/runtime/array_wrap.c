/*
 * array_wrap.c: array memory across an API boundary: Tack's memory handed to another
 * API as an OS handle (export_memory), and memory Tack does not own wrapped as an
 * array (tack_array_wrap_memory, _region; the DLPack import's wrap underneath).
 *
 * A foreign pointer is untrusted: it is checked for NULL, for reaching past the end of
 * the address space, for the alignment of its scalars and, where the backend can
 * tell, for belonging to the wrapping device's memory space, before a buffer is made
 * over it. Every wrap consumes its release obligation, on failure too.
 */
#include <string.h>

#include "internal.h"

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
    const tack_dtype_info *info = tack__dtype(dtype);
    tack_status st = TACK_OK;
    if (nelem > 0) {
        st = check_pointer(dev, data, nelem * info->itemsize,
                           tack__dtype(info->scalar)->itemsize);
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
        st = tack__dtype_shape_size(dtype, ndim, shape, &nelem);
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
