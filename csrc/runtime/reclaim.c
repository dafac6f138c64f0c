/*
 * reclaim.c: memory a host lent (wrapped and handed to Python or a DLPack consumer)
 * taken back. tack_array_reclaim succeeds only when the caller's reference is the
 * last one anywhere, so a host that frees its field after a successful reclaim can
 * never pull memory from under a view. A refused reclaim names the array; in debug
 * mode it also cuts the other holders off, so that their next access through Tack
 * fails naming the array instead of reading memory the host may reuse.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* "float32 array (256, 256) at 0x7f... on cpu:0": what names an array in messages
 * (arrays carry no names of their own; the address is what the host wrapped). */
static void
describe(const tack_array *arr, char *text, size_t size)
{
    size_t n =
        (size_t)snprintf(text, size, "%s array (", tack_dtype_get(arr->dtype)->name);
    for (int32_t k = 0; k < arr->ndim && n < size; k++) {
        n += (size_t)snprintf(text + n, size - n, "%s%" PRId64, k ? ", " : "",
                              arr->shape[k]);
    }
    if (n < size) {
        const tack_device *dev = arr->buffer->device;
        (void)snprintf(text + n, size - n, "%s) at %p on %s:%d",
                       arr->ndim == 1 ? "," : "", arr->buffer->data, dev->backend->name,
                       dev->ordinal);
    }
}

tack_status
tack__array_reclaimed(const tack_array *arr, const char *what)
{
    char name[256];
    describe(arr, name, sizeof name);
    return tack__fail(TACK_ERR_RECLAIMED,
                      "%s: the memory of the %s was reclaimed by its owner "
                      "(tack_array_reclaim, in debug mode) while this view of it was "
                      "alive, and may be freed or reused: drop every view of memory a "
                      "host lends before the host takes it back",
                      what, name);
}

tack_status
tack_array_reclaim(tack_array *arr)
{
    TACK__CHECK_ARG(arr);
    tack_buffer *buf = arr->buffer;
    /* Acquire: each holder that let go did so with a release (acq_rel) decrement, so
     * its last use of the memory happens before the caller frees it. When both counts
     * are 1, the caller's reference is the only path to the buffer, and nobody else
     * can take a new one between these loads and the release below. */
    size_t arrays = atomic_load_explicit(&arr->refcount, memory_order_acquire);
    size_t buffers = atomic_load_explicit(&buf->refcount, memory_order_acquire);
    if (arrays == 1 && buffers == 1) {
        tack_array_release(arr); /* runs the release callback of an import, here */
        return TACK_OK;
    }
    bool cut_off = tack_kernel_debug_default();
    if (cut_off) {
        atomic_store_explicit(&buf->reclaimed, true, memory_order_relaxed);
    }
    char name[256];
    describe(arr, name, sizeof name);
    return tack__fail(TACK_ERR_IN_USE,
                      "tack_array_reclaim(): the %s is still in use: %zu other "
                      "reference(s) hold it (tack.Array objects in Python, reshaped "
                      "views, DLPack consumers such as NumPy arrays made by "
                      "np.from_dlpack): drop them (del them in Python) before freeing "
                      "or reusing the memory, which must stay valid until then; the "
                      "caller keeps its reference%s",
                      name, (arrays - 1) + (buffers - 1),
                      cut_off ? "; TACK_DEBUG is set: Tack refuses every later access "
                                "to this memory"
                              : "");
}
