/*
 * dlpack_export.c: a Tack array as a DLPack managed tensor.
 *
 * Ownership: the managed struct, its shape and its strides are one allocation (from
 * the allocation hook); manager_ctx holds a reference to the exported array. The
 * deleter frees the block and releases the array. It is pure C and touches no Python
 * object, so it is safe without the GIL, from any thread and after the interpreter
 * has finalized (docs/dlpack.md, "Lifetime").
 *
 * The export never describes anything but C-contiguous elements from byte 0:
 * byte_offset is 0 and strides are always present for ndim > 0 (DLPack 1.2 forbids
 * NULL strides there; older consumers read them just as well).
 */
#include <string.h>

#include "internal.h"
#include "tack/dlpack.h"

void
tack__array_fill_dl_layout(tack_array *arr)
{
    const tack_dtype_info *info = tack__dtype(arr->dtype);
    int32_t n = tack__dl_ndim(arr->dtype, arr->ndim);
    int64_t *shape = tack__array_dl_shape(arr);
    int64_t *strides = tack__array_dl_strides(arr);
    for (int32_t k = 0; k < arr->ndim; k++) {
        shape[k] = arr->shape[k];
    }
    if (n > arr->ndim) {
        shape[n - 1] = info->ncomponents;
    }
    /* A zero extent counts as 1, as NumPy does, so strides stay meaningful for
     * zero-size arrays. Unsigned arithmetic: tack_shape_size bounded the product. */
    uint64_t step = 1;
    for (int32_t k = n - 1; k >= 0; k--) {
        strides[k] = (int64_t)step;
        step *= shape[k] ? (uint64_t)shape[k] : 1u;
    }
}

/* tack_dlpack_describe for arguments known good: the export inlines it. */
static inline void
describe(const tack_array *arr, DLTensor *out)
{
    const tack_dtype_info *info = tack__dtype(arr->dtype);
    const tack_device *dev = arr->buffer->device;
    /* Every field named: the struct has no padding, and stores beat a memset on the
     * export's hot path. */
    *out = (DLTensor){
        .data = arr->buffer->data,
        .device = {(DLDeviceType)dev->backend->dlpack_device_type, dev->ordinal},
        .ndim = tack__dl_ndim(arr->dtype, arr->ndim),
        .dtype = {info->dlpack_code, info->dlpack_bits, 1},
        .shape = tack__array_dl_shape(arr),
        .strides = tack__array_dl_strides(arr),
        .byte_offset = 0,
    };
}

void
tack_dlpack_describe(const tack_array *arr, DLTensor *out)
{
    if (!out) {
        return;
    }
    if (!arr) {
        memset(out, 0, sizeof *out);
        return;
    }
    describe(arr, out);
}

/* Makes the buffer safe for a consumer that may read at once and keep reading: with
 * a consumer stream, that stream waits for the work queued so far (no host wait);
 * otherwise the host waits (share). Either way the buffer is shared from now on, so
 * every later launch that uses it completes before it returns. On a backend with
 * streams a shared buffer may still have work queued before a stream handoff, so the
 * wait is repeated; elsewhere a shared buffer has nothing pending. */
static tack_status
share_for_consumer(tack_buffer *buf, const tack_dlpack_export_options *opts)
{
    const tack_backend *b = buf->device->backend;
    tack_status (*order)(void *, uintptr_t) =
        TACK__BACKEND_SLOT(b, order_foreign_after_tack);
    if (opts && opts->has_stream && order) {
        tack_status st = order(buf->device->state, opts->stream);
        if (st == TACK_OK) {
            atomic_fetch_or_explicit(&buf->flags, TACK_BUFFER_SHARED,
                                     memory_order_acq_rel);
        }
        return st;
    }
    if (!(tack_buffer_flags(buf) & TACK_BUFFER_SHARED) ||
        TACK__BACKEND_SLOT(b, stream)) {
        return tack_buffer_share(buf);
    }
    return TACK_OK;
}

/* The array the export describes: arr itself, or a private copy on the requested
 * device. Returns: new reference in *out. */
static tack_status
export_source(tack_array *arr, const tack_dlpack_export_options *opts, bool *copied,
              tack_array **out)
{
    bool copy = opts && opts->copy;
    tack_device *want = opts && opts->device ? opts->device : arr->buffer->device;
    if (want != arr->buffer->device && !copy) {
        return tack__fail_remedy(
            TACK_ERR_EXPORT_REFUSED, TACK_REMEDY_COPY,
            "the array is on %s:%d and cannot be exported on %s:%d without a copy "
            "(only its own device shares its memory)",
            arr->buffer->device->backend->name, arr->buffer->device->ordinal,
            want->backend->name, want->ordinal);
    }
    tack_array *src = arr;
    if (copy) {
        tack_status st = tack_array_to_device(arr, want, &src);
        if (st != TACK_OK) {
            return st;
        }
    }
    else {
        tack_array_retain(arr);
    }
    tack_status st = share_for_consumer(src->buffer, opts);
    if (st != TACK_OK) {
        tack_array_release(src);
        return st;
    }
    *copied = copy;
    *out = src;
    return TACK_OK;
}

/* ---- what a consumer asked for ------------------------------------------------- */

/* The 1.x minor version told to a consumer that reads up to (major, minor), major
 * >= 1: its own minor when that is older than ours (the layout is the same for every
 * 1.x), ours otherwise (a newer major reads 1.x by its own rules). */
static uint32_t
reported_minor(int64_t major, int64_t minor)
{
    if (major != TACK_DLPACK_MAJOR || minor >= TACK_DLPACK_MINOR) {
        return TACK_DLPACK_MINOR;
    }
    return minor < 0 ? 0u : (uint32_t)minor;
}

tack_status
tack_dlpack_export_prepare(const tack_array *arr, const tack_dlpack_export_request *req,
                           bool *versioned, tack_dlpack_export_options *opts)
{
    TACK__CHECK_ARG(arr);
    TACK__CHECK_ARG(req);
    TACK__CHECK_ARG(versioned);
    TACK__CHECK_ARG(opts);
    const tack_device *own = arr->buffer->device;
    int32_t own_type = own->backend->dlpack_device_type;
    /* The answer is kept in scalars and written once at the end: a struct built
     * field by field on the stack and then copied whole is read back with wider
     * loads than its stores, which the CPU cannot forward (a stall of its own on
     * every export). */
    bool copy = req->has_copy && req->copy;
    bool has_stream = false;
    uintptr_t stream = 0;
    if (req->has_stream) {
        tack_status st = tack__dlpack_stream_check(own_type, req->stream);
        if (st != TACK_OK) {
            return st;
        }
    }
    /* On a device with streams a stream the consumer names is ordered after the
     * array's queued work instead of the host waiting. None (the consumer did not
     * think about streams) and -1 (no ordering asked) make the export wait on the
     * host (share): the consumer may then read on any stream. */
    if (TACK__BACKEND_SLOT(own->backend, order_foreign_after_tack) && req->has_stream &&
        req->stream != -1) {
        has_stream = true;
        stream = (uintptr_t)req->stream;
    }
    bool v = false;
    bool limit_minor = false;
    uint32_t max_minor = 0;
    if (req->has_max_version) {
        v = req->max_major >= 1;
        if (req->max_major == TACK_DLPACK_MAJOR) {
            limit_minor = true;
            max_minor = reported_minor(req->max_major, req->max_minor);
        }
    }
    tack_device *device = NULL;
    if (req->has_dl_device &&
        (req->device_type != own_type || req->device_id != own->ordinal)) {
        /* Another device: only the host, and only as a copy. */
        tack_status st = TACK_ERR_EXPORT_REFUSED;
        if (req->device_type == kDLCPU && req->device_id == 0 && copy) {
            st = tack_device_open("cpu", 0, NULL, &device);
        }
        if (st != TACK_OK) {
            return tack__fail_remedy(
                TACK_ERR_EXPORT_REFUSED, TACK_REMEDY_OWN_DEVICE,
                "DLPack device (%d, %d) was requested, but the array "
                "is on %s:%d (DLPack (%d, %d))",
                (int)req->device_type, (int)req->device_id, own->backend->name,
                own->ordinal, (int)own_type, own->ordinal);
        }
    }
    *versioned = v;
    *opts = (tack_dlpack_export_options){.copy = copy,
                                         .device = device,
                                         .limit_minor = limit_minor,
                                         .max_minor = max_minor,
                                         .has_stream = has_stream,
                                         .stream = stream};
    return TACK_OK;
}

/* Copies the shape and strides t points at (an array's DLPack layout) to into, a
 * block's own, and points t there: the consumer owns the copy, so nothing it does
 * to it reaches the array. */
static void
layout_into(DLTensor *t, unsigned char *into)
{
    /* The array keeps its strides right after its extents (tack__array_dl_shape):
     * one copy of 2n entries, a loop since n is a handful. */
    int32_t n = t->ndim;
    int64_t *shape = (int64_t *)(void *)into;
    for (int32_t k = 0; k < 2 * n; k++) {
        shape[k] = t->shape[k];
    }
    /* Non-NULL even for 0-d: a valid pointer to no entries is safe for everyone. */
    t->shape = shape;
    t->strides = shape + n;
}

/* One block: the struct (of size head), then dl_ndim extents and dl_ndim strides;
 * reuse, when not NULL, is such a block made for src before, else one is allocated.
 * The struct is left for the caller to write whole; *tensor is described, its shape
 * and strides pointing into the block. */
static tack_status
export_block(const tack_array *src, size_t head, void *reuse, void **block,
             DLTensor **tensor, size_t tensor_offset)
{
    unsigned char *p = reuse;
    if (!p) {
        int32_t n = tack__dl_ndim(src->dtype, src->ndim);
        size_t nbytes = head + 2 * (size_t)n * sizeof(int64_t);
        p = tack__alloc(nbytes, TACK__STRUCT_ALIGNMENT);
        if (!p) {
            return tack__fail(TACK_ERR_NO_MEMORY,
                              "out of memory allocating a DLPack tensor of %zu bytes",
                              nbytes);
        }
    }
    DLTensor *t = (DLTensor *)(void *)(p + tensor_offset);
    describe(src, t);
    layout_into(t, p + head);
    *block = p;
    *tensor = t;
    return TACK_OK;
}

static void
deleter_versioned(DLManagedTensorVersioned *self)
{
    tack_array *arr = self->manager_ctx;
    tack__free(self);
    tack_array_release(arr);
}

static void
deleter_legacy(DLManagedTensor *self)
{
    tack_array *arr = self->manager_ctx;
    tack__free(self);
    tack_array_release(arr);
}

/* What both ABIs share: the array to export (a private copy when asked) and the one
 * block holding the managed struct, shape and strides. Out: *src (a new reference,
 * owned by the block's deleter from now on) and *block, only on success. */
static tack_status
export_prepare(tack_array *arr, const tack_dlpack_export_options *opts,
               size_t struct_size, size_t tensor_offset, bool *copied, tack_array **src,
               void **block)
{
    tack_status st = tack__check_live(arr, "DLPack export");
    if (st == TACK_OK) {
        st = export_source(arr, opts, copied, src);
    }
    if (st != TACK_OK) {
        return st;
    }
    DLTensor *t = NULL;
    st = export_block(*src, struct_size, NULL, block, &t, tensor_offset);
    if (st != TACK_OK) {
        tack_array_release(*src);
        *src = NULL;
    }
    return st;
}

/* Every field of a versioned block but dl_tensor, which export_block described in
 * place; src is the reference the block now owns, deleter the one that frees it. */
static DLManagedTensorVersioned *
finish_versioned(void *block, tack_array *src, uint32_t minor, bool copied,
                 void (*deleter)(DLManagedTensorVersioned *))
{
    DLManagedTensorVersioned *mt = block;
    uint64_t flags = 0;
    if (!src->writable) {
        flags |= (uint64_t)DLPACK_FLAG_BITMASK_READ_ONLY;
    }
    if (copied) {
        flags |= (uint64_t)DLPACK_FLAG_BITMASK_IS_COPIED;
    }
    mt->version = (DLPackVersion){TACK_DLPACK_MAJOR, minor};
    mt->manager_ctx = src;
    mt->deleter = deleter;
    mt->flags = flags;
    return mt;
}

/* The deleter of an export of an array's own memory: the block goes back to the
 * array for its next export (one block kept: a second one returned while the first
 * waits is freed), then the export's reference is released, which frees the kept
 * block with the array when it was the last. Two atomic exchanges replace a malloc
 * and a free on every export after the first, most of an export's own cost. */
static void
deleter_own(DLManagedTensorVersioned *self)
{
    tack_array *arr = self->manager_ctx;
    tack__free(atomic_exchange_explicit(&arr->dlpack_spare, (void *)self,
                                        memory_order_acq_rel));
    tack_array_release(arr);
}

/* arr's own memory on its own device, reporting minor: what every request without a
 * copy, another device or a consumer stream gets. Nothing is retained until nothing
 * can fail, so an error leaves nothing to undo. */
static tack_status
export_own_versioned(tack_array *arr, uint32_t minor, DLManagedTensorVersioned **out)
{
    tack_status st = tack__check_live(arr, "DLPack export");
    if (st == TACK_OK) {
        st = share_for_consumer(arr->buffer, NULL);
    }
    if (st != TACK_OK) {
        return st;
    }
    void *spare =
        atomic_exchange_explicit(&arr->dlpack_spare, NULL, memory_order_acquire);
    void *block = NULL;
    DLTensor *t = NULL;
    st = export_block(arr, sizeof(DLManagedTensorVersioned), spare, &block, &t,
                      offsetof(DLManagedTensorVersioned, dl_tensor));
    if (st != TACK_OK) {
        return st;
    }
    tack_array_retain(arr);
    *out = finish_versioned(block, arr, minor, false, deleter_own);
    return TACK_OK;
}

tack_status
tack_dlpack_export_own(tack_array *arr, int64_t max_major, int64_t max_minor,
                       DLManagedTensorVersioned **out)
{
    TACK__CHECK_ARG(arr);
    TACK__CHECK_ARG(out);
    if (max_major < 1) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "a consumer reading DLPack %lld.%lld wants a legacy tensor: "
                          "decide the export with tack_dlpack_export_prepare",
                          (long long)max_major, (long long)max_minor);
    }
    return export_own_versioned(arr, reported_minor(max_major, max_minor), out);
}

tack_status
tack_dlpack_export_versioned(tack_array *arr, const tack_dlpack_export_options *opts,
                             DLManagedTensorVersioned **out)
{
    TACK__CHECK_ARG(arr);
    TACK__CHECK_ARG(out);
    uint32_t minor = TACK_DLPACK_MINOR;
    if (opts && opts->limit_minor && opts->max_minor < TACK_DLPACK_MINOR) {
        minor = opts->max_minor;
    }
    if (!opts || (!opts->copy && !opts->has_stream &&
                  (!opts->device || opts->device == arr->buffer->device))) {
        return export_own_versioned(arr, minor, out);
    }
    tack_array *src = NULL;
    bool copied = false;
    void *block = NULL;
    tack_status st = export_prepare(arr, opts, sizeof(DLManagedTensorVersioned),
                                    offsetof(DLManagedTensorVersioned, dl_tensor),
                                    &copied, &src, &block);
    if (st != TACK_OK) {
        return st;
    }
    /* src: the reference export_source made */
    *out = finish_versioned(block, src, minor, copied, deleter_versioned);
    return TACK_OK;
}

tack_status
tack_dlpack_export_legacy(tack_array *arr, const tack_dlpack_export_options *opts,
                          DLManagedTensor **out)
{
    TACK__CHECK_ARG(arr);
    TACK__CHECK_ARG(out);
    if (!arr->writable && !(opts && opts->copy)) {
        /* The legacy ABI has no read-only flag; NumPy refuses the same way. */
        return tack__fail_remedy(
            TACK_ERR_EXPORT_REFUSED, TACK_REMEDY_VERSIONED,
            "a read-only array cannot be exported as a legacy DLPack tensor, which "
            "has no read-only flag and would hand out write access");
    }
    tack_array *src = NULL;
    bool copied = false;
    void *block = NULL;
    tack_status st =
        export_prepare(arr, opts, sizeof(DLManagedTensor),
                       offsetof(DLManagedTensor, dl_tensor), &copied, &src, &block);
    if (st != TACK_OK) {
        return st;
    }
    DLManagedTensor *mt = block;
    mt->manager_ctx = src;
    mt->deleter = deleter_legacy;
    *out = mt;
    return TACK_OK;
}
