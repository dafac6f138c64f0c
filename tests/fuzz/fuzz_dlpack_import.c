/*
 * fuzz_dlpack_import.c: libFuzzer harness over the DLPack importer.
 *
 * Each input becomes one foreign managed tensor (legacy or versioned) with every
 * field taken from the input: version, flags, device, ndim, dtype, shape, strides,
 * byte_offset, NULL data/shape/strides/deleter. The data pointer is either NULL or
 * inside a buffer the harness owns. The importer must never crash, overflow or leak,
 * and must call the deleter exactly once whatever it decides. Memory is read only
 * through a copy or by reading the imported array, and the harness allows either
 * only when tack__dlpack_check's span says every byte lies inside its buffer, since a
 * real consumer cannot check foreign extents either.
 *
 *   make fuzz                       # builds with clang and runs for FUZZ_SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tack/dlpack.h"

#define ARENA 4096

static _Alignas(64) unsigned char arena[ARENA];
static int deleted;

typedef struct {
    const uint8_t *p;
    size_t n;
} reader;

static uint64_t
take(reader *r, size_t nbytes)
{
    uint64_t v = 0;
    for (size_t k = 0; k < nbytes; k++) {
        v = (v << 8) | (r->n ? (r->n--, *r->p++) : 0u);
    }
    return v;
}

/* Mostly small values (the interesting, valid range), sometimes anything. */
static int64_t
take_extent(reader *r)
{
    uint8_t sel = (uint8_t)take(r, 1);
    if (sel < 200) {
        return sel % 9;
    }
    if (sel < 230) {
        return -(int64_t)(sel % 5) - 1;
    }
    return (int64_t)take(r, 8);
}

static void
delete_versioned(DLManagedTensorVersioned *self)
{
    (void)self;
    deleted++;
}

static void
delete_legacy(DLManagedTensor *self)
{
    (void)self;
    deleted++;
}

static bool
inside_arena(const tack__dlpack_layout *lay)
{
    if (lay->nelem == 0) {
        return true;
    }
    uintptr_t lo = (uintptr_t)arena, hi = lo + ARENA;
    int64_t first = (int64_t)(lay->address - lo);
    if (lay->address < lo || lay->address >= hi) {
        return false;
    }
    /* Written so that huge spans cannot overflow: first is in [0, ARENA). */
    return lay->span_lo >= -first && lay->span_hi <= (int64_t)ARENA - first;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tack_device *cpu;
    if (!cpu && tack_device_open("cpu", 0, NULL, &cpu) != TACK_OK) {
        abort();
    }
    reader r = {data, size};
    uint8_t mode = (uint8_t)take(&r, 1);
    bool versioned = mode & 1, null_data = (mode & 2) && (mode & 4);
    bool null_shape = (mode & 0x18) == 0x18, null_strides = mode & 0x20;
    bool null_deleter = (mode & 0xC0) == 0xC0;

    static int64_t shape[TACK_MAX_NDIM + 8], strides[TACK_MAX_NDIM + 8];
    DLTensor t;
    memset(&t, 0, sizeof t);
    static const int32_t device_types[] = {kDLCPU,  kDLCPU,   kDLCUDAHost, kDLROCMHost,
                                           kDLCUDA, kDLMetal, kDLOneAPI,   kDLROCM};
    uint8_t dev = (uint8_t)take(&r, 1);
    t.device.device_type =
        (DLDeviceType)(dev < 240 ? device_types[dev % 8] : (int32_t)take(&r, 4));
    t.device.device_id = (int32_t)(take(&r, 1) % 3);
    uint8_t nd = (uint8_t)take(&r, 1);
    t.ndim = nd < 250 ? nd % 6 : (int32_t)take(&r, 4);
    t.dtype.code = (uint8_t)(take(&r, 1) % 20);
    uint8_t bits = (uint8_t)take(&r, 1);
    static const uint8_t bit_choices[] = {8, 16, 32, 64};
    t.dtype.bits = bits < 240 ? bit_choices[bits % 4] : bits;
    t.dtype.lanes = (uint16_t)(take(&r, 1) < 245 ? 1 : take(&r, 2));
    int nfill = t.ndim >= 0 && t.ndim <= TACK_MAX_NDIM ? t.ndim : 4;
    for (int k = 0; k < nfill; k++) {
        shape[k] = take_extent(&r);
        strides[k] = take_extent(&r);
    }
    t.shape = null_shape ? NULL : shape;
    t.strides = null_strides ? NULL : strides;
    uint8_t off = (uint8_t)take(&r, 1);
    t.byte_offset = off < 240 ? (uint64_t)(off % 64) : take(&r, 8);
    t.data = null_data ? NULL : arena + (take(&r, 1) % 8) * 8;
    uint8_t copy_sel = (uint8_t)take(&r, 1);
    uint64_t flags = take(&r, 1) & 3;
    uint32_t major = (uint32_t)(take(&r, 1) < 240 ? 1 : take(&r, 1));

    tack__dlpack_layout lay;
    bool valid = tack__dlpack_check(&t, &lay) == TACK_OK;
    /* Zero strides make a tiny span hold many elements: bound the copy's size. */
    bool readable = valid && lay.host_readable && inside_arena(&lay) &&
                    lay.nelem <= (1u << 20) / lay.itemsize;
    tack_dlpack_import_options opts = {NULL, TACK_DLPACK_COPY_NEVER, false};
    if (readable) {
        opts.copy = (tack_dlpack_copy)(copy_sel % 3);
    }
    if (copy_sel & 0x80) {
        opts.device = cpu; /* an explicit device instead of the default rules */
    }

    DLManagedTensorVersioned v;
    DLManagedTensor l;
    tack_array *arr = NULL;
    tack_status st;
    deleted = 0;
    if (versioned) {
        memset(&v, 0, sizeof v);
        v.version.major = major;
        v.version.minor = 3;
        v.flags = flags;
        v.deleter = null_deleter ? NULL : delete_versioned;
        v.dl_tensor = t;
        st = tack_dlpack_import_versioned(&v, &opts, &arr);
    }
    else {
        memset(&l, 0, sizeof l);
        l.deleter = null_deleter ? NULL : delete_legacy;
        l.dl_tensor = t;
        st = tack_dlpack_import_legacy(&l, &opts, &arr);
    }
    if ((st == TACK_OK) != (arr != NULL)) {
        abort();
    }
    if (st == TACK_OK) {
        /* What was imported must describe what the tensor said. */
        if (tack_array_nelem(arr) != lay.nelem || tack_array_ndim(arr) != t.ndim) {
            abort();
        }
        if (readable && tack_array_nbytes(arr) <= ARENA) {
            static unsigned char sink[ARENA];
            if (tack_array_copy_to_host(arr, sink, tack_array_dtype(arr)) != TACK_OK) {
                abort();
            }
        }
        tack_array_release(arr);
    }
    if (deleted != (null_deleter ? 0 : 1)) {
        fprintf(stderr, "deleter called %d times (status %s)\n", deleted,
                tack_status_name(st));
        abort();
    }
    return 0;
}
