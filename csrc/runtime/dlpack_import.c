/*
 * dlpack_import.c: a producer's DLPack managed tensor as a Tack array, and the
 * raw-pointer wrap underneath it.
 *
 * Everything in a foreign DLTensor is untrusted: ndim, shape, strides, byte_offset
 * and dtype are checked (with overflow checks) before anything is computed from
 * them, and the memory itself is never touched unless a copy is made. The managed
 * tensor is consumed on every path: a failure calls its deleter before returning;
 * a zero-copy import hands it to the buffer, whose release callback calls the
 * deleter when the last array over the memory goes; a copy calls it once the copy
 * is made. The Python binding renames the capsule to its used_ name before it
 * calls in here, so no one else ever calls the deleter too.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "tack/dlpack.h"

/* ---- the device table ------------------------------------------------------------ */

typedef struct {
    const char *backend;
    int32_t type;
    bool host_readable; /* the CPU may read the memory (a copy needs no driver) */
    bool host_memory;   /* the memory is host memory: the device id means nothing */
} device_row;

/* Import step 5 of docs/dlpack.md. kDLMetal is deliberately absent. */
static const device_row device_table[] = {
    {"cpu", kDLCPU, true, true},
    {"cpu", kDLCUDAHost, true, true},
    {"cpu", kDLROCMHost, true, true},
    {"cuda", kDLCUDA, false, false},
    {"cuda", kDLCUDAManaged, true, false},
    {"hip", kDLROCM, false, false},
    {"level_zero", kDLOneAPI, false, false},
};

static const device_row *
find_device(int32_t type)
{
    for (size_t k = 0; k < sizeof device_table / sizeof device_table[0]; k++) {
        if (device_table[k].type == type) {
            return &device_table[k];
        }
    }
    return NULL;
}

bool
tack__dlpack_device_row(int32_t device_type, const char **backend, bool *host_memory)
{
    const device_row *row = find_device(device_type);
    if (!row) {
        return false;
    }
    *backend = row->backend;
    *host_memory = row->host_memory;
    return true;
}

static tack_status
check_device_type(int32_t type, const device_row **row)
{
    if (type == kDLMetal) {
        /* data is an id<MTLBuffer> handle, not an address, and byte_offset locates
         * the tensor inside that buffer: nothing Tack could wrap. */
        return tack__fail_remedy(
            TACK_ERR_DLPACK_INVALID, TACK_REMEDY_HOST_COPY,
            "a kDLMetal tensor holds a Metal buffer handle, not an "
            "address, and cannot be imported as it is");
    }
    *row = find_device(type);
    if (!*row) {
        return tack__fail(TACK_ERR_DLPACK_INVALID,
                          "DLPack device type %d has no Tack backend: Tack imports "
                          "CPU, pinned host, CUDA, ROCm and oneAPI memory; move the "
                          "tensor to one of those first",
                          (int)type);
    }
    return TACK_OK;
}

/* ---- validation ------------------------------------------------------------------ */

/* |a| * b in int64, or false on overflow; b >= 0. */
static bool
mul_i64(int64_t a, int64_t b, int64_t *out)
{
    if (a == 0 || b == 0) {
        *out = 0;
        return true;
    }
    uint64_t ua = a < 0 ? (uint64_t)0 - (uint64_t)a : (uint64_t)a;
    if (ua > (uint64_t)INT64_MAX / (uint64_t)b) {
        return false;
    }
    *out = (int64_t)(ua * (uint64_t)b);
    return true;
}

/* a * b, or true on overflow (*out is then unspecified). */
static bool
mul_size(size_t a, size_t b, size_t *out)
{
#if defined(__GNUC__)
    return __builtin_mul_overflow(a, b, out);
#else
    if (b != 0 && a > SIZE_MAX / b) {
        return true;
    }
    *out = a * b;
    return false;
#endif
}

/* The strided span of the tensor in bytes, relative to its first element. */
static tack_status
strided_span(const DLTensor *t, size_t itemsize, int64_t *lo, int64_t *hi)
{
    int64_t low = 0, high = (int64_t)itemsize;
    for (int32_t k = 0; k < t->ndim; k++) {
        int64_t reach;
        if (t->shape[k] <= 1) {
            continue;
        }
        if (!mul_i64(t->strides[k], t->shape[k] - 1, &reach) ||
            !mul_i64(reach, (int64_t)itemsize, &reach)) {
            goto overflow;
        }
        if (t->strides[k] < 0) {
            if (low < INT64_MIN + reach) {
                goto overflow;
            }
            low -= reach;
        }
        else {
            if (high > INT64_MAX - reach) {
                goto overflow;
            }
            high += reach;
        }
    }
    *lo = low;
    *hi = high;
    return TACK_OK;
overflow:
    return tack__fail(TACK_ERR_DLPACK_INVALID,
                      "the DLPack tensor's strides reach beyond the address space: "
                      "the producer sent an invalid tensor");
}

/* ndim in Tack's range, and a shape to read when there are dimensions. */
static tack_status
check_rank(const DLTensor *t)
{
    if (t->ndim < 0 || t->ndim > TACK_MAX_NDIM) {
        return tack__fail(TACK_ERR_DLPACK_INVALID,
                          "a DLPack tensor with %d dimensions cannot be imported: Tack "
                          "arrays have 0 to %d",
                          (int)t->ndim, TACK_MAX_NDIM);
    }
    if (t->ndim > 0 && !t->shape) {
        return tack__fail(TACK_ERR_DLPACK_INVALID,
                          "the DLPack tensor has %d dimensions but no shape: the "
                          "producer sent an invalid tensor",
                          (int)t->ndim);
    }
    return TACK_OK;
}

/* The Tack dtype of t's DLPack dtype: one lane, a (code, bits) Tack has. */
static tack_status
check_dtype(const DLTensor *t, tack_dtype *dtype)
{
    if (t->dtype.lanes != 1) {
        return tack__fail(TACK_ERR_DLPACK_DTYPE,
                          "DLPack dtype (code %u, bits %u) with %u lanes has no Tack "
                          "equivalent: export vectors as a trailing dimension instead",
                          (unsigned)t->dtype.code, (unsigned)t->dtype.bits,
                          (unsigned)t->dtype.lanes);
    }
    return tack_dtype_from_dlpack(t->dtype.code, t->dtype.bits, dtype);
}

/* The element count of t's shape (check_rank passed): no negative extent, and a
 * byte count within PTRDIFF_MAX, so pointer arithmetic over the whole tensor is
 * defined. An extent of 0 anywhere makes the count 0 whatever the others are. */
static tack_status
check_shape(const DLTensor *t, size_t itemsize, size_t *count)
{
    size_t nelem = 1;
    bool zero = false;
    for (int32_t k = 0; k < t->ndim; k++) {
        if (t->shape[k] < 0) {
            return tack__fail(TACK_ERR_DLPACK_INVALID,
                              "the DLPack tensor has a negative extent %lld in "
                              "dimension %d: the producer sent an invalid tensor",
                              (long long)t->shape[k], (int)k);
        }
        zero = zero || t->shape[k] == 0;
    }
    /* No division at all: this is a hot path. An imported dtype is a scalar one
     * (check_dtype), whose itemsize is a power of 2, so a shift divides. */
    assert(itemsize > 0 && (itemsize & (itemsize - 1)) == 0);
    const size_t max_nelem = (size_t)PTRDIFF_MAX >> __builtin_ctzll(itemsize);
    for (int32_t k = 0; k < t->ndim && !zero; k++) {
        size_t e = (size_t)t->shape[k];
        if (mul_size(nelem, e, &nelem) || nelem > max_nelem) {
            return tack__fail(TACK_ERR_DLPACK_INVALID,
                              "the DLPack tensor's size overflows at dimension %d: "
                              "the producer sent an invalid tensor",
                              (int)k);
        }
    }
    *count = zero ? 0 : nelem;
    return TACK_OK;
}

/* Where t's nelem elements lie: the first element's address (data + byte_offset,
 * without wrapping), whether the strides are C-contiguous, and the bytes they reach
 * around it, all inside the address space. Fills lay's address, contiguous and span
 * only on success. */
static tack_status
check_span(const DLTensor *t, size_t itemsize, size_t nelem, tack__dlpack_layout *lay)
{
    if (!t->data && nelem > 0) {
        return tack__fail(TACK_ERR_DLPACK_INVALID,
                          "the DLPack tensor has %zu elements but a NULL data "
                          "pointer: the producer sent an invalid tensor",
                          nelem);
    }
    uintptr_t address = (uintptr_t)t->data;
    if (nelem > 0) {
        if (t->byte_offset > (uint64_t)(UINTPTR_MAX - address)) {
            return tack__fail(TACK_ERR_DLPACK_INVALID,
                              "the DLPack tensor's byte_offset %llu overflows its "
                              "data pointer: the producer sent an invalid tensor",
                              (unsigned long long)t->byte_offset);
        }
        address += (uintptr_t)t->byte_offset;
    }
    /* Relaxed C-contiguity: any stride is fine on an extent of 1, and a tensor
     * without elements has no layout at all. NULL strides mean C-contiguous. */
    bool contiguous = true;
    int64_t lo = 0, hi = (int64_t)(nelem * itemsize);
    if (!tack__range_fits(address, nelem * itemsize)) {
        return tack__fail(TACK_ERR_DLPACK_INVALID,
                          "the DLPack tensor's %zu bytes from %p reach past the end of "
                          "the address space: the producer sent an invalid tensor",
                          nelem * itemsize, (void *)address);
    }
    if (t->strides && nelem > 0) {
        int64_t expect = 1;
        for (int32_t k = t->ndim - 1; k >= 0; k--) {
            if (t->shape[k] != 1 && t->strides[k] != expect) {
                contiguous = false;
            }
            expect *= t->shape[k]; /* bounded by nelem, no overflow */
        }
        if (!contiguous) {
            tack_status st = strided_span(t, itemsize, &lo, &hi);
            if (st != TACK_OK) {
                return st;
            }
            /* 0 - (uint64_t)lo is |lo| even for INT64_MIN. */
            if ((lo < 0 && (uint64_t)0 - (uint64_t)lo > address) ||
                (hi > 0 && (uint64_t)hi > UINTPTR_MAX - address)) {
                return tack__fail(TACK_ERR_DLPACK_INVALID,
                                  "the DLPack tensor's strides reach outside the "
                                  "address space: the producer sent an invalid tensor");
            }
        }
    }
    lay->address = address;
    lay->contiguous = contiguous;
    lay->span_lo = lo;
    lay->span_hi = nelem == 0 ? 0 : hi;
    return TACK_OK;
}

/* The checks run in this order, so a tensor wrong in several ways is refused for the
 * first: device type, rank, dtype, shape, span. */
tack_status
tack__dlpack_check(const DLTensor *t, tack__dlpack_layout *out)
{
    const device_row *row = NULL;
    tack_status st = check_device_type((int32_t)t->device.device_type, &row);
    if (st == TACK_OK) {
        st = check_rank(t);
    }
    tack_dtype dtype = TACK_FLOAT32;
    if (st == TACK_OK) {
        st = check_dtype(t, &dtype);
    }
    if (st != TACK_OK) {
        return st;
    }
    size_t itemsize = tack__dtype(dtype)->itemsize;
    size_t nelem = 0;
    tack__dlpack_layout lay;
    st = check_shape(t, itemsize, &nelem);
    if (st == TACK_OK) {
        st = check_span(t, itemsize, nelem, &lay);
    }
    if (st != TACK_OK) {
        return st;
    }
    lay.dtype = dtype;
    lay.nelem = nelem;
    lay.itemsize = itemsize;
    lay.aligned = (lay.address & (itemsize - 1)) == 0; /* itemsize is a power of 2 */
    lay.host_readable = row->host_readable;
    lay.backend = row->backend;
    *out = lay;
    return TACK_OK;
}

/* ---- import ------------------------------------------------------------------------
 */

static void
release_versioned(void *ctx)
{
    DLManagedTensorVersioned *mt = ctx;
    if (mt->deleter) {
        mt->deleter(mt);
    }
}

static void
release_legacy(void *ctx)
{
    DLManagedTensor *mt = ctx;
    if (mt->deleter) {
        mt->deleter(mt);
    }
}

/* Whether dev can wrap memory of the tensor's device. */
static bool
can_wrap(const tack_device *dev, const DLTensor *t, const tack__dlpack_layout *lay)
{
    /* The names are usually one merged string literal: no strcmp on the hot path. */
    if (dev->backend->name != lay->backend &&
        strcmp(dev->backend->name, lay->backend) != 0) {
        return false;
    }
    const device_row *row = find_device((int32_t)t->device.device_type);
    return row->host_memory || dev->ordinal == t->device.device_id;
}

/* The importing device (step 5). Returns: new reference in *out. */
/* Opens the device a tensor lives on. A backend that cannot be opened here (no
 * driver) is a DLPack refusal: DLPackDeviceError, a RuntimeError and a BufferError,
 * with the backend's own explanation. */
static tack_status
open_tensor_device(const char *backend, int ordinal, tack_device **out)
{
    tack_status st = tack_device_open(backend, ordinal, NULL, out);
    if (st == TACK_ERR_DEVICE_UNAVAILABLE) {
        char why[512];
        snprintf(why, sizeof why, "%s", tack_last_error_problem());
        return tack__fail_remedy(TACK_ERR_DLPACK_DEVICE, tack_last_error_remedy(),
                                 "the DLPack tensor lives on %s:%d, which this process "
                                 "cannot open: %s",
                                 backend, ordinal, why);
    }
    return st;
}

static tack_status
import_device(const DLTensor *t, const tack__dlpack_layout *lay,
              const tack_dlpack_import_options *opts, bool *wraps, tack_device **out)
{
    tack_device *dev = opts ? opts->device : NULL;
    if (dev) {
        tack_device_retain(dev);
        *wraps = can_wrap(dev, t, lay);
        *out = dev;
        return TACK_OK;
    }
    tack_status st = tack_default_device(&dev);
    if (st != TACK_OK) {
        return st;
    }
    *wraps = can_wrap(dev, t, lay);
    if (*wraps) {
        *out = dev;
        return TACK_OK;
    }
    /* The tensor stays where it is, as the Array API's from_dlpack keeps it; a copy
     * too (a copy of a CUDA tensor stays on its GPU, device to device). */
    tack_device_release(dev);
    const device_row *row = find_device((int32_t)t->device.device_type);
    st = open_tensor_device(lay->backend, row->host_memory ? 0 : t->device.device_id,
                            out);
    *wraps = st == TACK_OK;
    return st;
}

/* An independent C-contiguous copy of host-readable memory on dev. */
static tack_status
copy_host(const DLTensor *t, const tack__dlpack_layout *lay, tack_device *dev,
          tack_array **out)
{
    tack_array *arr = NULL;
    tack_status st = tack_array_empty(dev, lay->dtype, t->ndim, t->shape,
                                      TACK_BUFFER_WRITABLE, &arr);
    if (st != TACK_OK) {
        return st;
    }
    if (lay->nelem == 0) {
        *out = arr;
        return TACK_OK;
    }
    bool direct = tack__device_is_host(dev);
    unsigned char *dst = direct ? arr->buffer->data : tack__alloc(arr->nbytes, 0);
    if (!dst) {
        tack_array_release(arr);
        return tack__fail(TACK_ERR_NO_MEMORY, "out of memory staging %zu bytes",
                          arr->nbytes);
    }
    const unsigned char *src = (const unsigned char *)lay->address;
    if (lay->contiguous) {
        memcpy(dst, src, arr->nbytes);
    }
    else {
        /* An odometer over the index space, C order: the innermost index moves
         * fastest, so writes are sequential. */
        int64_t index[TACK_MAX_NDIM] = {0};
        int64_t offset = 0; /* in elements, from the first element */
        size_t isz = lay->itemsize;
        for (size_t n = 0; n < lay->nelem; n++) {
            memcpy(dst + n * isz, src + offset * (int64_t)isz, isz);
            for (int32_t k = t->ndim - 1; k >= 0; k--) {
                if (++index[k] < t->shape[k]) {
                    offset += t->strides[k];
                    break;
                }
                offset -= t->strides[k] * (t->shape[k] - 1);
                index[k] = 0;
            }
        }
    }
    if (!direct) {
        st = tack_array_copy_from_host(
            arr, dst, lay->dtype, lay->nelem * tack_dtype_get(lay->dtype)->ncomponents);
        tack__free(dst);
        if (st != TACK_OK) {
            tack_array_release(arr);
            return st;
        }
    }
    *out = arr;
    return TACK_OK;
}

/* A copy of device memory on dev, made on the memory's own device (device to device:
 * a contiguous tensor wrapped and copied, a strided one gathered) and moved to dev
 * from there. It is complete when this returns: the producer's memory goes next. */
static tack_status
copy_device(const DLTensor *t, const tack__dlpack_layout *lay, tack_device *dev,
            tack_array **out)
{
    tack_device *own = NULL;
    const device_row *row = find_device((int32_t)t->device.device_type);
    tack_status st = open_tensor_device(
        lay->backend, row->host_memory ? 0 : t->device.device_id, &own);
    if (st != TACK_OK) {
        return st;
    }
    tack_array *view = NULL;
    st = lay->contiguous
             ? tack_array_wrap_memory(own, (void *)lay->address, lay->dtype, t->ndim,
                                      t->shape, false, NULL, NULL, &view)
             : tack__array_gather(own, lay->address, lay->dtype, t->ndim, t->shape,
                                  t->strides, lay->itemsize, &view);
    if (st == TACK_OK && !lay->contiguous) {
        st = tack_device_synchronize(own); /* a wrap's copy waits by itself */
    }
    tack_device_release(own);
    if (st != TACK_OK) {
        tack_array_release(view);
        return st;
    }
    if (!lay->contiguous && view->buffer->device == dev) {
        *out = view; /* already the copy */
        return TACK_OK;
    }
    st = tack_array_to_device(view, dev, out);
    tack_array_release(view);
    return st;
}

/*
 * A copy of the tensor on dev. Managed memory is host-readable, but the producer's
 * pending writes were ordered before the device's stream, not before the host: a
 * copy is made on that stream (device to device, gathered when strided), and only a
 * strided copy for the host is read by the host, once that stream has drained.
 */
static tack_status
copy_tensor(const DLTensor *t, const tack__dlpack_layout *lay, tack_device *dev,
            tack_array **out)
{
    const device_row *row = find_device((int32_t)t->device.device_type);
    if (!lay->host_readable ||
        (!row->host_memory && (lay->contiguous || !tack__device_is_host(dev)))) {
        return copy_device(t, lay, dev, out);
    }
    if (!row->host_memory) {
        tack_device *own = NULL;
        tack_status st = open_tensor_device(lay->backend, t->device.device_id, &own);
        if (st == TACK_OK) {
            st = tack_device_synchronize(own);
            tack_device_release(own);
        }
        if (st != TACK_OK) {
            return st;
        }
    }
    return copy_host(t, lay, dev, out);
}

static tack_status
import_tensor(const DLTensor *t, bool writable, tack_release_fn release, void *ctx,
              const tack_dlpack_import_options *opts, tack_array **out)
{
    assert(t && release && out);
    tack_dlpack_copy copy = opts ? opts->copy : TACK_DLPACK_COPY_NEVER;
    tack__dlpack_layout lay;
    memset(&lay, 0, sizeof lay);
    tack_device *dev = NULL;
    bool wraps = false;
    tack_status st = tack__dlpack_check(t, &lay);
    if (st == TACK_OK) {
        st = import_device(t, &lay, opts, &wraps, &dev);
    }
    if (st != TACK_OK) {
        release(ctx);
        return st;
    }
    bool share =
        copy != TACK_DLPACK_COPY_ALWAYS && wraps && lay.contiguous && lay.aligned;
    if (share) {
        writable = writable && !(opts && opts->read_only);
        st = tack__array_wrap_validated(dev, (void *)lay.address, lay.dtype, t->ndim,
                                        t->shape, lay.nelem, writable, release, ctx,
                                        out);
        tack_device_release(dev);
        return st;
    }
    if (copy == TACK_DLPACK_COPY_NEVER) {
        if (!wraps) {
            st = tack__fail_remedy(
                TACK_ERR_DLPACK_DEVICE, TACK_REMEDY_COPY,
                "a DLPack tensor on device type %d, id %d cannot be "
                "wrapped by %s:%d without a copy (its memory belongs to "
                "device '%s' ordinal %d, which can import it)",
                (int)t->device.device_type, (int)t->device.device_id,
                dev->backend->name, dev->ordinal, lay.backend,
                find_device((int32_t)t->device.device_type)->host_memory
                    ? 0
                    : (int)t->device.device_id);
        }
        else if (!lay.contiguous) {
            st = tack__fail_remedy(TACK_ERR_DLPACK_INVALID, TACK_REMEDY_COPY,
                                   "the DLPack tensor is not C-contiguous and Tack "
                                   "arrays always are (a copy is contiguous; so is a "
                                   "tensor made contiguous by its producer)");
        }
        else {
            st = tack__fail_remedy(
                TACK_ERR_DLPACK_INVALID, TACK_REMEDY_COPY,
                "the DLPack tensor's first element at %p is not aligned "
                "to its %zu-byte scalars (a copy is aligned)",
                (void *)lay.address, lay.itemsize);
        }
    }
    else {
        st = copy_tensor(t, &lay, dev, out);
    }
    tack_device_release(dev);
    release(ctx); /* copied or refused: the producer's memory is no longer needed */
    return st;
}

tack_status
tack_dlpack_import_versioned(DLManagedTensorVersioned *mt,
                             const tack_dlpack_import_options *opts, tack_array **out)
{
    TACK__CHECK_ARG(mt);
    if (!out) {
        release_versioned(mt); /* consumed even on failure */
        TACK__CHECK_ARG(out);
    }
    if (mt->version.major != 1) {
        /* Only the fields up to flags are known in another major version. */
        uint32_t major = mt->version.major, minor = mt->version.minor;
        release_versioned(mt);
        return tack__fail_remedy(TACK_ERR_DLPACK_INVALID, TACK_REMEDY_DLPACK_1,
                                 "the DLPack tensor has version %u.%u and Tack reads "
                                 "major version 1 (up to 1.%d)",
                                 (unsigned)major, (unsigned)minor, TACK_DLPACK_MINOR);
    }
    bool writable = (mt->flags & DLPACK_FLAG_BITMASK_READ_ONLY) == 0;
    return import_tensor(&mt->dl_tensor, writable, release_versioned, mt, opts, out);
}

tack_status
tack_dlpack_import_legacy(DLManagedTensor *mt, const tack_dlpack_import_options *opts,
                          tack_array **out)
{
    TACK__CHECK_ARG(mt);
    if (!out) {
        release_legacy(mt); /* consumed even on failure */
        TACK__CHECK_ARG(out);
    }
    /* Legacy tensors import writable: DLPack shares memory both ways, and only a
     * versioned tensor can opt out with READ_ONLY (docs/dlpack.md). */
    return import_tensor(&mt->dl_tensor, true, release_legacy, mt, opts, out);
}

tack_status
tack_dlpack_import_described(const DLTensor *t, bool writable, tack_release_fn release,
                             void *ctx, const tack_dlpack_import_options *opts,
                             tack_array **out)
{
    TACK__CHECK_ARG(release);
    if (!t || !out) {
        release(ctx); /* consumed even on failure */
        TACK__CHECK_ARG(t);
        TACK__CHECK_ARG(out);
    }
    return import_tensor(t, writable, release, ctx, opts, out);
}

/* ---- the exchange API's allocator
 * ---------------------------------------------------- */

tack_status
tack_dlpack_allocate(const DLTensor *prototype, DLManagedTensorVersioned **out)
{
    TACK__CHECK_ARG(prototype);
    TACK__CHECK_ARG(out);
    const device_row *row = NULL;
    tack_status st = check_device_type((int32_t)prototype->device.device_type, &row);
    if (st != TACK_OK) {
        return st;
    }
    if (prototype->dtype.lanes != 1) {
        return tack__fail(TACK_ERR_DLPACK_DTYPE,
                          "cannot allocate %u-lane elements: Tack has scalar dtypes",
                          (unsigned)prototype->dtype.lanes);
    }
    tack_dtype dtype = TACK_FLOAT32;
    st = tack_dtype_from_dlpack(prototype->dtype.code, prototype->dtype.bits, &dtype);
    if (st != TACK_OK) {
        return st;
    }
    if (prototype->ndim < 0 || prototype->ndim > TACK_MAX_NDIM ||
        (prototype->ndim > 0 && !prototype->shape)) {
        return tack__fail(TACK_ERR_DLPACK_INVALID,
                          "cannot allocate a tensor of %d dimensions: Tack arrays "
                          "have 0 to %d",
                          (int)prototype->ndim, TACK_MAX_NDIM);
    }
    tack_device *dev = NULL;
    st = tack_device_open(
        row->backend, row->host_memory ? 0 : prototype->device.device_id, NULL, &dev);
    if (st != TACK_OK) {
        return st;
    }
    tack_array *arr = NULL;
    st = tack_array_empty(dev, dtype, prototype->ndim, prototype->shape,
                          TACK_BUFFER_WRITABLE, &arr);
    tack_device_release(dev);
    if (st != TACK_OK) {
        return st;
    }
    st = tack_dlpack_export_versioned(arr, NULL, out);
    tack_array_release(arr); /* the export holds its own reference */
    return st;
}
