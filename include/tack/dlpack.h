/*
 * dlpack.h: DLPack exchange in C.
 *
 * Export: an array becomes a managed tensor (legacy or versioned) that holds a
 * reference to the array until the consumer calls the deleter. The deleter is pure
 * C: it needs no interpreter lock, runs on any thread and after Python has gone.
 *
 * Import: a producer's managed tensor is validated and wrapped (tack_array_wrap_memory,
 * array.h) as an array over the producer's memory (zero copy), or copied. The import
 * functions consume the managed tensor: on every failure its deleter has been called,
 * exactly once, before they return; on success it is called when the last array over
 * the memory (reshape views included) is released.
 *
 * Device rules of an import (docs/dlpack.md, import step 5): the DLPack device
 * type names the backend that can wrap the memory (kDLCPU, kDLCUDAHost, kDLROCMHost:
 * cpu; kDLCUDA, kDLCUDAManaged: cuda; kDLROCM: hip; kDLOneAPI: level_zero). kDLMetal
 * is refused up front (its data is a handle, not an address). Without a device, the
 * default device imports when it can wrap the tensor, otherwise the tensor's own
 * device does; a given device that cannot wrap it is an error unless a copy is
 * allowed.
 */
#ifndef TACK_DLPACK_H
#define TACK_DLPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "tack/array.h"
#include "tack/dlpack_abi.h"
#include "tack/export.h"
#include "tack/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- export -------------------------------------------------------------------- */

typedef struct tack_dlpack_export_options {
    /* Export a private copy (flag IS_COPIED) instead of the array's memory. */
    bool copy;
    /* Borrowed, may be NULL: the device the consumer wants the tensor on. NULL or
     * the array's own device shares; another device needs copy (else refused). */
    tack_device *device;
    /* With limit_minor, the highest 1.x minor version the consumer understands: a
     * versioned export then reports min(max_minor, TACK_DLPACK_MINOR). The layout
     * is the same for every 1.x, and a consumer that asked for 1.0 is told 1.0
     * (docs/dlpack.md, export). Without it, TACK_DLPACK_MINOR. */
    bool limit_minor;
    uint32_t max_minor;
    /* With has_stream, the consumer's stream (a driver handle, or CUDA's 1 for the
     * legacy and 2 for the per-thread default stream): it is made to wait for the
     * work queued on the array, and the host does not wait. Without it the export
     * waits for that work (share). tack_dlpack_export_prepare fills both. */
    bool has_stream;
    uintptr_t stream;
} tack_dlpack_export_options;

/*
 * What a consumer asked of an export: the keywords of the DLPack Python protocol's
 * __dlpack__(stream=, max_version=, dl_device=, copy=), each with a flag saying
 * whether it was given (an unset member is Python's None).
 */
typedef struct tack_dlpack_export_request {
    bool has_stream;
    int64_t stream; /* the consumer's stream, in the Array API's numbering */
    bool has_max_version;
    int64_t max_major, max_minor; /* the newest DLPack version the consumer reads */
    bool has_dl_device;
    int32_t device_type, device_id; /* the DLPack device the consumer wants */
    bool has_copy;
    bool copy; /* true: a private copy; false: share or fail */
} tack_dlpack_export_request;

/*
 * Decides an export of arr from a consumer's request, by the DLPack and Array API
 * rules, before anything is exported: the ABI (versioned when max_version's major is
 * 1 or more, legacy otherwise), the version to report, the device, and whether the
 * stream is one this device has (the CPU has none: only -1, "do not synchronize";
 * CUDA refuses 0; ROCm refuses 1 and 2; below -1 is never a stream). A dl_device
 * other than the array's own is refused unless it is the host (kDLCPU, 0) and a copy
 * was asked for. Out, only on success: *versioned and *opts for
 * tack_dlpack_export_versioned/_legacy; opts->device is a new reference or NULL,
 * release it with tack_device_release(). Errors: TACK_ERR_DLPACK_INVALID (a stream
 * the device has not got), TACK_ERR_EXPORT_REFUSED (another device).
 */
TACK_API tack_status tack_dlpack_export_prepare(const tack_array *arr,
                                                const tack_dlpack_export_request *req,
                                                bool *versioned,
                                                tack_dlpack_export_options *opts);

/*
 * Exports arr as a versioned managed tensor: version 1.3 (or the consumer's
 * max_minor), flag READ_ONLY for a
 * non-writable array, IS_COPIED for a copy. shape and strides (elements, non-NULL,
 * C-contiguous) live in the same allocation as the struct; byte_offset is 0; a vec
 * dtype is a trailing dimension of float32. The buffer is shared (tack_buffer_share)
 * first. opts may be NULL. Returns: *out, owned by the caller until it calls
 * (*out)->deleter(*out), which releases the array's reference. Out: set only on
 * success. Errors: TACK_ERR_EXPORT_REFUSED, TACK_ERR_NO_MEMORY.
 */
TACK_API tack_status
tack_dlpack_export_versioned(tack_array *arr, const tack_dlpack_export_options *opts,
                             DLManagedTensorVersioned **out);

/*
 * The export for a consumer that asks for a versioned tensor and nothing else
 * (__dlpack__(max_version=(max_major, max_minor)) with stream, dl_device and copy
 * None, as NumPy's and PyTorch's from_dlpack ask): arr's own memory on its own
 * device, the host waiting for work queued on it, version 1.min(max_minor,
 * TACK_DLPACK_MINOR) (1.TACK_DLPACK_MINOR for a major above 1). The same tensor as
 * tack_dlpack_export_prepare and tack_dlpack_export_versioned make of that request,
 * in one call. Out: *out only on success, as tack_dlpack_export_versioned. Errors:
 * TACK_ERR_INVALID_ARGUMENT for max_major < 1 (a legacy consumer: use prepare);
 * TACK_ERR_RECLAIMED; TACK_ERR_NO_MEMORY; a failed wait.
 */
TACK_API tack_status tack_dlpack_export_own(tack_array *arr, int64_t max_major,
                                            int64_t max_minor,
                                            DLManagedTensorVersioned **out);

/*
 * As tack_dlpack_export_versioned, as a legacy DLManagedTensor. The legacy ABI
 * cannot say "read-only", so a non-writable array is refused (TACK_ERR_EXPORT_REFUSED
 * naming the fix: a versioned export or a copy) rather than handed out writable.
 */
TACK_API tack_status tack_dlpack_export_legacy(tack_array *arr,
                                               const tack_dlpack_export_options *opts,
                                               DLManagedTensor **out);

/*
 * Describes arr in *out without allocating: shape and strides point into arr and
 * stay valid while arr lives (the exchange API's dltensor_from_py_object_no_sync).
 */
TACK_API void tack_dlpack_describe(const tack_array *arr, DLTensor *out);

/*
 * A new writable array shaped like prototype (its device, dtype, ndim and shape;
 * nothing else is read), exported as a versioned managed tensor (the exchange API's
 * allocator). Out: *out only on success. Errors: as the import's validation, and
 * TACK_ERR_NO_MEMORY.
 */
TACK_API tack_status tack_dlpack_allocate(const DLTensor *prototype,
                                          DLManagedTensorVersioned **out);

/* ---- import -------------------------------------------------------------------- */

typedef enum tack_dlpack_copy {
    TACK_DLPACK_COPY_NEVER = 0, /* share or fail */
    TACK_DLPACK_COPY_ALWAYS,    /* an independent C-contiguous copy */
    TACK_DLPACK_COPY_IF_NEEDED  /* share when possible, copy otherwise */
} tack_dlpack_copy;

typedef struct tack_dlpack_import_options {
    /* Borrowed, may be NULL: the importing device; NULL applies the default rules. */
    tack_device *device;
    tack_dlpack_copy copy;
    /* The producer's arrays are immutable by contract (JAX), whatever its tensor
     * says: memory shared with it is non-writable. A copy is Tack's and writable. */
    bool read_only;
} tack_dlpack_import_options;

/*
 * Imports a versioned managed tensor. Consumes mt, even on failure. A major version
 * other than 1 is refused without reading any field past flags. READ_ONLY gives a
 * non-writable array. opts may be NULL (default device rules, never copy).
 * Returns: new reference in *out. Out: set only on success.
 * Errors: TACK_ERR_DLPACK_INVALID (bad version, NULL data with elements, bad ndim or
 * shape, non-contiguous or misaligned without a copy, Metal or unknown device type),
 * TACK_ERR_DLPACK_DTYPE (no Tack dtype, lanes != 1), TACK_ERR_DLPACK_DEVICE (the
 * given device cannot wrap it), TACK_ERR_DEVICE_UNAVAILABLE (the tensor's own device
 * cannot be opened), TACK_ERR_NO_MEMORY.
 */
TACK_API tack_status
tack_dlpack_import_versioned(DLManagedTensorVersioned *mt,
                             const tack_dlpack_import_options *opts, tack_array **out);

/* As tack_dlpack_import_versioned for a legacy tensor, which imports writable unless
 * opts->read_only. */
TACK_API tack_status tack_dlpack_import_legacy(DLManagedTensor *mt,
                                               const tack_dlpack_import_options *opts,
                                               tack_array **out);

/*
 * As tack_dlpack_import_versioned for a tensor the caller describes without a managed
 * tensor: a producer read through its own fields (NumPy's ndarray, csrc/python/
 * numpy_direct.c). t is borrowed for the call only. The memory stays valid until
 * release(ctx), which is called exactly once: before a failure returns, at once after
 * a copy, else when the last array over the memory goes (from any thread).
 * writable false gives a non-writable array. Errors: as tack_dlpack_import_versioned;
 * TACK_ERR_INVALID_ARGUMENT for a NULL t, release or out (release is still called
 * when it is given).
 */
TACK_API tack_status tack_dlpack_import_described(
    const DLTensor *t, bool writable, tack_release_fn release, void *ctx,
    const tack_dlpack_import_options *opts, tack_array **out);

/* ---- the C exchange API (consumer side) ------------------------------------------ */

/*
 * The table of major version 1 published at address by another library (the value
 * of its __c_dlpack_exchange_api__, or the pointer of its "dlpack_exchange_api"
 * capsule), following prev_api links to an older table when needed. Refuses,
 * without reading anything, an address that cannot be a table: NULL, the first
 * page, misaligned, or outside user memory. Out: *out only on success. Errors:
 * TACK_ERR_DLPACK_INVALID (no plausible table, or none of major version 1),
 * TACK_ERR_INVALID_ARGUMENT (out is NULL).
 */
TACK_API tack_status tack_dlpack_exchange_api_find(uintptr_t address,
                                                   const DLPackExchangeAPI **out);

/*
 * The stream rules of a consumer (dlpack_stream.c). Tack has a stream for memory of
 * a DLPack device type when that memory is device memory of a backend with streams
 * (CUDA's: kDLCUDA, kDLCUDAManaged); host and pinned memory never need ordering.
 */

/* The name of the backend that wraps memory of a DLPack device type (import step 5
 * above), or NULL for a type no backend imports. Borrowed: static. */
TACK_API const char *tack_dlpack_backend_name(int32_t device_type);

/*
 * The device whose stream orders Tack's work on memory of that device type and id,
 * or NULL where Tack has no stream for it (host memory, a backend without streams,
 * an id out of range, a device that does not open here; no error is recorded).
 * Returns: new reference, release with tack_device_release().
 */
TACK_API tack_device *tack_dlpack_stream_device(int32_t device_type, int64_t device_id);

/*
 * What Tack passes as stream= to a producer's __dlpack__ for a tensor on that device
 * (from its __dlpack_device__()), so that the producer orders its pending writes
 * before Tack's stream: Tack's stream there, 1 (CUDA's legacy default stream) when
 * that device has none of its own, or 0 where no stream= is to be passed.
 */
TACK_API uintptr_t tack_dlpack_consumer_stream(int32_t device_type, int64_t device_id);

/*
 * The exchange API hands a tensor over without a stream request: Tack's stream on
 * the tensor's device is made to wait (without blocking the host) for the producer's
 * current work stream there, which api->current_work_stream names (NULL: the legacy
 * default stream). Returns whether work may still be pending that Tack could not
 * order after: false for host memory and once the wait is queued; true when the API
 * cannot name its stream (no callback, or it fails; a Python producer's callback may
 * leave its error set for the caller to clear), when ordering fails, or when Tack has
 * no stream there and the producer's stream is not the default one. false for a NULL
 * api or mt or a tensor of another major version.
 */
TACK_API bool tack_dlpack_exchange_pending_work(const DLPackExchangeAPI *api,
                                                const DLManagedTensorVersioned *mt);

#ifdef __cplusplus
}
#endif

#endif /* TACK_DLPACK_H */
