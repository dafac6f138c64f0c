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
    atomic_init(&buf->reclaimed, false);
    tack_device_retain(dev);
    buf->device = dev;
    *out = buf;
    return TACK_OK;
}

tack_status
tack_buffer_new(tack_device *dev, size_t nbytes, unsigned flags, tack_buffer **out)
{
    TACK__CHECK_ARG(dev);
    TACK__CHECK_ARG(out);
    /* A bit Tack does not honour is refused rather than dropped: the caller asked for
     * something it would not get (TACK_BUFFER_SHARED is Tack's to set, by sharing). */
    const unsigned known = TACK_BUFFER_WRITABLE | TACK_BUFFER_EXPORTABLE;
    if (flags & ~known) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "buffer flags %#x include bits %#x that a new buffer cannot "
                          "have: pass TACK_BUFFER_WRITABLE and TACK_BUFFER_EXPORTABLE "
                          "only",
                          flags, flags & ~known);
    }
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
    /* Relaxed, as every store to a buffer not yet published: whatever hands the
     * buffer to another thread orders these (a sequentially consistent store would be
     * a locked exchange on x86). */
    atomic_store_explicit(&buf->flags, flags, memory_order_relaxed);
    *out = buf;
    return TACK_OK;
}

tack_status
tack_buffer_wrap(tack_device *dev, void *data, size_t nbytes, unsigned flags,
                 tack_release_fn release, void *ctx, tack_buffer **out)
{
    tack_buffer *buf = NULL;
    tack_status st = TACK_OK;
    if (!dev || !out) {
        st = tack__fail(
            TACK_ERR_INVALID_ARGUMENT,
            "tack_buffer_wrap(): argument '%s' is NULL: pass a valid pointer",
            dev ? "out" : "dev");
    }
    else {
        st = buffer_alloc_struct(dev, &buf);
    }
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
    atomic_store_explicit(&buf->flags,
                          (flags & TACK_BUFFER_WRITABLE) | TACK_BUFFER_SHARED,
                          memory_order_relaxed); /* unpublished: see tack_buffer_new */
    *out = buf;
    return TACK_OK;
}

void
tack_buffer_retain(tack_buffer *buf)
{
    if (!buf) {
        return;
    }
    atomic_fetch_add_explicit(&buf->refcount, 1, memory_order_relaxed);
}

void
tack_buffer_release(tack_buffer *buf)
{
    if (!buf) {
        return;
    }
    if (!tack__ref_drop(&buf->refcount)) {
        return;
    }
    /* Only an imported buffer has a release callback, and it always has one. */
    assert((buf->owner == TACK_OWNER_IMPORTED) == (buf->release != NULL));
    tack_device *dev = buf->device;
    tack_buffer_release(atomic_load_explicit(&buf->export_copy, memory_order_acquire));
    tack_status (*order)(void *, uintptr_t) =
        TACK__BACKEND_SLOT(dev->backend, order_tack_after_foreign);
    switch (buf->owner) {
    case TACK_OWNER_OWN:
        /* The last reference to an exported buffer may be a consumer's deleter, run
         * when its tensor goes, not when the kernels it queued on it finish (PyTorch
         * does this). Tack's stream first waits for the device's default stream, so
         * the stream-ordered free cannot hand the memory to a new allocation while
         * such a kernel still reads it. Errors here only lose the ordering. */
        if ((atomic_load_explicit(&buf->flags, memory_order_acquire) &
             TACK_BUFFER_SHARED) &&
            order && buf->data) {
            (void)order(dev->state, 0);
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
    return buf ? buf->data : NULL;
}

size_t
tack_buffer_nbytes(const tack_buffer *buf)
{
    return buf ? buf->nbytes : 0;
}

unsigned
tack_buffer_flags(const tack_buffer *buf)
{
    if (!buf) {
        return 0;
    }
    return atomic_load_explicit(&((tack_buffer *)buf)->flags, memory_order_acquire);
}

tack_owner_kind
tack_buffer_owner(const tack_buffer *buf)
{
    return buf ? buf->owner : TACK_OWNER_WRAPPED;
}

tack_device *
tack_buffer_device(const tack_buffer *buf)
{
    return buf ? buf->device : NULL;
}

tack_status
tack_buffer_share(tack_buffer *buf)
{
    TACK__CHECK_ARG(buf);
    tack_status st = tack_device_synchronize(buf->device);
    if (st == TACK_OK) {
        atomic_fetch_or_explicit(&buf->flags, TACK_BUFFER_SHARED, memory_order_acq_rel);
    }
    return st;
}
