/*
 * buffer.c: refcounted device memory with an owner kind (see array.h).
 *
 * The release order matters: the last reference frees the memory (own) or runs the
 * release callback (imported) before the buffer drops its device, so a backend is
 * alive whenever its free runs.
 */
#include "internal.h"

static tack_status
buffer_alloc_struct(tack_device *dev, tack_buffer **out)
{
    tack_buffer *buf;
    tack_status st = tack__new(sizeof *buf, (void **)&buf);
    if (st != TACK_OK) {
        return st;
    }
    atomic_init(&buf->refcount, 1);
    atomic_init(&buf->flags, 0u);
    atomic_init(&buf->export_copy, NULL);
    tack_device_retain(dev);
    buf->device = dev;
    *out = buf;
    return TACK_OK;
}

tack_status
tack_buffer_new(tack_device *dev, size_t nbytes, unsigned flags, tack_buffer **out)
{
    tack_buffer *buf;
    tack_status st = buffer_alloc_struct(dev, &buf);
    if (st != TACK_OK) {
        return st;
    }
    bool exportable = (flags & TACK_BUFFER_EXPORTABLE) != 0;
    st = dev->backend->alloc(dev->state, nbytes, exportable, &buf->data);
    if (st != TACK_OK) {
        tack_device_release(dev);
        tack__free(buf);
        return st;
    }
    buf->nbytes = nbytes;
    buf->owner = TACK_OWNER_OWN;
    atomic_store(&buf->flags, flags & (TACK_BUFFER_WRITABLE | TACK_BUFFER_EXPORTABLE));
    *out = buf;
    return TACK_OK;
}

tack_status
tack_buffer_wrap(tack_device *dev, void *data, size_t nbytes, unsigned flags,
                 tack_release_fn release, void *ctx, tack_buffer **out)
{
    tack_buffer *buf;
    tack_status st = buffer_alloc_struct(dev, &buf);
    if (st != TACK_OK) {
        /* The release obligation is consumed even on failure. */
        if (release) {
            release(ctx);
        }
        return st;
    }
    buf->data = data;
    buf->nbytes = nbytes;
    buf->owner = release ? TACK_OWNER_IMPORTED : TACK_OWNER_WRAPPED;
    buf->release = release;
    buf->release_ctx = ctx;
    /* Foreign memory may be touched by its owner between any two Tack calls. */
    atomic_store(&buf->flags, (flags & TACK_BUFFER_WRITABLE) | TACK_BUFFER_SHARED);
    *out = buf;
    return TACK_OK;
}

void
tack_buffer_retain(tack_buffer *buf)
{
    atomic_fetch_add_explicit(&buf->refcount, 1, memory_order_relaxed);
}

void
tack_buffer_release(tack_buffer *buf)
{
    if (!buf) {
        return;
    }
    if (atomic_fetch_sub_explicit(&buf->refcount, 1, memory_order_acq_rel) != 1) {
        return;
    }
    tack_device *dev = buf->device;
    tack_buffer_release(atomic_load_explicit(&buf->export_copy, memory_order_acquire));
    switch (buf->owner) {
    case TACK_OWNER_OWN:
        /* The last reference to an exported buffer may be a consumer's deleter, run
         * when its tensor goes, not when the kernels it queued on it finish (PyTorch
         * does this). Tack's stream first waits for the device's default stream, so
         * the stream-ordered free cannot hand the memory to a new allocation while
         * such a kernel still reads it. Errors here only lose the ordering. */
        if ((atomic_load_explicit(&buf->flags, memory_order_acquire) &
             TACK_BUFFER_SHARED) &&
            dev->backend->order_tack_after_foreign && buf->data) {
            (void)dev->backend->order_tack_after_foreign(dev->state, 0);
        }
        dev->backend->free(dev->state, buf->data);
        break;
    case TACK_OWNER_IMPORTED: buf->release(buf->release_ctx); break;
    case TACK_OWNER_WRAPPED: break;
    }
    tack__free(buf);
    tack_device_release(dev);
}

void *
tack_buffer_data(const tack_buffer *buf)
{
    return buf->data;
}

size_t
tack_buffer_nbytes(const tack_buffer *buf)
{
    return buf->nbytes;
}

unsigned
tack_buffer_flags(const tack_buffer *buf)
{
    return atomic_load_explicit(&((tack_buffer *)buf)->flags, memory_order_acquire);
}

tack_owner_kind
tack_buffer_owner(const tack_buffer *buf)
{
    return buf->owner;
}

tack_device *
tack_buffer_device(const tack_buffer *buf)
{
    return buf->device;
}

tack_status
tack_buffer_share(tack_buffer *buf)
{
    tack_status st = tack_device_synchronize(buf->device);
    if (st == TACK_OK) {
        atomic_fetch_or_explicit(&buf->flags, TACK_BUFFER_SHARED, memory_order_acq_rel);
    }
    return st;
}
