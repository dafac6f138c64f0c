/*
 * array.h: buffers and arrays.
 *
 * A buffer is a refcounted block of memory on one device. Its owner kind says who
 * frees the memory:
 *   own       Tack allocated it and frees it with the backend when the last
 *             reference goes;
 *   wrapped   a raw pointer whose lifetime is the caller's (array_from_ptr);
 *   imported  memory held for someone else: the release callback runs exactly once,
 *             when the last reference goes (a DLPack import calls the producer's
 *             deleter there).
 * Reference counts are C11 atomics: a buffer may be released from any thread.
 *
 * An array is a buffer plus dtype and shape. Arrays are always C-contiguous from the
 * start of their buffer; reshape makes a new array over the same buffer. An array is
 * immutable apart from its elements, so it is shared between threads by reference
 * counting alone.
 */
#ifndef TACK_ARRAY_H
#define TACK_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tack/device.h"
#include "tack/dtype.h"
#include "tack/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enough for every array NumPy can make (NPY_MAXDIMS is 64). */
#define TACK_MAX_NDIM 64

typedef struct tack_buffer tack_buffer;
typedef struct tack_array tack_array;

typedef enum tack_owner_kind {
    TACK_OWNER_OWN = 0,
    TACK_OWNER_WRAPPED,
    TACK_OWNER_IMPORTED
} tack_owner_kind;

enum tack_buffer_flags {
    TACK_BUFFER_WRITABLE = 1u << 0,  /* host and kernel writes allowed */
    TACK_BUFFER_SHARED = 1u << 1,    /* every launch using it completes before return */
    TACK_BUFFER_EXPORTABLE = 1u << 2 /* exportable as an OS handle (CUDA VMM) */
};

/* Called once, from whichever thread drops the last reference. */
typedef void (*tack_release_fn)(void *ctx);

/* ---- buffers ---------------------------------------------------------------- */

/*
 * Allocates nbytes on dev (owner kind own). flags: TACK_BUFFER_WRITABLE and
 * TACK_BUFFER_EXPORTABLE, nothing else. Returns: new reference in *out, release with
 * tack_buffer_release(). Out: set only on success. Errors: TACK_ERR_INVALID_ARGUMENT
 * (any other flag bit, TACK_BUFFER_SHARED included: sharing sets it).
 */
TACK_API tack_status tack_buffer_new(tack_device *dev, size_t nbytes, unsigned flags,
                                     tack_buffer **out);

/*
 * Wraps memory Tack does not own. With release == NULL the buffer is wrapped (the
 * caller keeps the memory alive); otherwise it is imported and release(ctx) runs
 * exactly once when the last reference goes. The buffer is shared from birth.
 * Consumes the release obligation, even on failure: if this fails, release(ctx) has
 * already been called. Returns: new reference in *out. Out: set only on success.
 */
TACK_API tack_status tack_buffer_wrap(tack_device *dev, void *data, size_t nbytes,
                                      unsigned flags, tack_release_fn release,
                                      void *ctx, tack_buffer **out);

TACK_API void tack_buffer_retain(tack_buffer *buf);
/* Drops a reference; the last one frees the memory (own) or runs release (imported).
 * Safe from any thread and without any interpreter lock. NULL is ignored. */
TACK_API void tack_buffer_release(tack_buffer *buf);

TACK_API void *tack_buffer_data(const tack_buffer *buf);
TACK_API size_t tack_buffer_nbytes(const tack_buffer *buf);
TACK_API unsigned tack_buffer_flags(const tack_buffer *buf);
TACK_API tack_owner_kind tack_buffer_owner(const tack_buffer *buf);
/* Borrowed: valid while buf lives. */
TACK_API tack_device *tack_buffer_device(const tack_buffer *buf);
/* Waits for the launches queued so far that use the buffer, then marks it shared:
 * every later launch that uses it completes before it returns. */
TACK_API tack_status tack_buffer_share(tack_buffer *buf);

/* ---- arrays ----------------------------------------------------------------- */

/*
 * Computes the element count of a shape, refusing negative extents, ndim outside
 * [0, TACK_MAX_NDIM] and products (also in bytes of itemsize) that overflow.
 * Out: *nelem only on success. Errors: TACK_ERR_BAD_SHAPE, TACK_ERR_SIZE_OVERFLOW.
 */
TACK_API tack_status tack_shape_size(int32_t ndim, const int64_t *shape,
                                     size_t itemsize, size_t *nelem);

/*
 * The shape of an array of dtype holding host data of scalar_shape (scalar_ndim
 * extents of scalars, as NumPy gives them): the same, except that a vec dtype takes
 * the trailing dimension, which must equal its component count. Out: *ndim and
 * shape[0..*ndim) only on success. Errors: TACK_ERR_BAD_SHAPE.
 */
TACK_API tack_status tack_array_shape_of_scalars(tack_dtype dtype, int32_t scalar_ndim,
                                                 const int64_t *scalar_shape,
                                                 int32_t *ndim, int64_t *shape);

/*
 * A new array with uninitialized elements on dev. flags as for tack_buffer_new
 * (other bits are refused with TACK_ERR_INVALID_ARGUMENT).
 * Returns: new reference in *out, release with tack_array_release().
 */
TACK_API tack_status tack_array_empty(tack_device *dev, tack_dtype dtype, int32_t ndim,
                                      const int64_t *shape, unsigned flags,
                                      tack_array **out);

/* As tack_array_empty, with every byte zero. */
TACK_API tack_status tack_array_zeros(tack_device *dev, tack_dtype dtype, int32_t ndim,
                                      const int64_t *shape, unsigned flags,
                                      tack_array **out);

/*
 * An array over buf from its first byte. buf is borrowed (the array takes its own
 * reference). writable is and-ed with the buffer's writable flag. Errors:
 * TACK_ERR_BAD_SHAPE when the array would not fit in the buffer.
 */
TACK_API tack_status tack_array_from_buffer(tack_buffer *buf, tack_dtype dtype,
                                            int32_t ndim, const int64_t *shape,
                                            bool writable, tack_array **out);

TACK_API void tack_array_retain(tack_array *arr);
/* Safe from any thread and without any interpreter lock. NULL is ignored. */
TACK_API void tack_array_release(tack_array *arr);

/* Accessors. Borrowed results are valid while arr lives. */
TACK_API void *tack_array_data(const tack_array *arr);
TACK_API tack_dtype tack_array_dtype(const tack_array *arr);
TACK_API int32_t tack_array_ndim(const tack_array *arr);
TACK_API const int64_t *tack_array_shape(const tack_array *arr);
TACK_API size_t tack_array_nelem(const tack_array *arr);
TACK_API size_t tack_array_nbytes(const tack_array *arr);
TACK_API bool tack_array_writable(const tack_array *arr);
TACK_API tack_buffer *tack_array_buffer(const tack_array *arr);
TACK_API tack_device *tack_array_device(const tack_array *arr);

/*
 * A view with another shape over the same buffer; one extent may be -1 (inferred).
 * Errors: TACK_ERR_BAD_SHAPE when the element counts differ.
 */
TACK_API tack_status tack_array_reshape(const tack_array *arr, int32_t ndim,
                                        const int64_t *shape, tack_array **out);

/* A view of the same memory that refuses writes. */
TACK_API tack_status tack_array_readonly_view(const tack_array *arr, tack_array **out);

/*
 * Sets every element to the value at value: one element of the array's own dtype
 * (all components), or one scalar of another dtype, converted and, for vec arrays,
 * put in every component.
 * Errors: TACK_ERR_READ_ONLY (memory unchanged).
 */
TACK_API tack_status tack_array_fill(tack_array *arr, const void *value,
                                     tack_dtype value_dtype);

/*
 * Replaces the elements of dst with host data: nscalars scalars of src_dtype at src,
 * converted to dst's dtype. nscalars must equal the element count of dst times its
 * component count. Errors: TACK_ERR_BAD_DTYPE (src_dtype is not a tack_dtype),
 * TACK_ERR_READ_ONLY, TACK_ERR_BAD_SHAPE (memory unchanged).
 */
TACK_API tack_status tack_array_copy_from_host(tack_array *dst, const void *src,
                                               tack_dtype src_dtype, size_t nscalars);

/* Writes the elements of src to host memory at dst as nelem*components scalars of
 * dst_dtype (a scalar dtype, or src's own dtype). Errors: TACK_ERR_BAD_DTYPE
 * (dst_dtype is not a tack_dtype; dst unchanged). */
TACK_API tack_status tack_array_copy_to_host(const tack_array *src, void *dst,
                                             tack_dtype dst_dtype);

/*
 * Replaces the elements of dst with those of src, converting dtype. The shapes must be
 * equal (vec arrays compare as their scalar shape). Errors: TACK_ERR_READ_ONLY,
 * TACK_ERR_BAD_SHAPE, TACK_ERR_DEVICE_MISMATCH is never raised: copies between
 * devices go through the host.
 */
TACK_API tack_status tack_array_copyto(tack_array *dst, const tack_array *src);

/* ---- single elements ------------------------------------------------------ */

/*
 * The flat element offset of an index with one entry per dimension; negative entries
 * count from the end, as in Python. Out: *offset only on success. Errors:
 * TACK_ERR_INDEX (another number of entries than ndim, or an entry out of range).
 */
TACK_API tack_status tack_array_element_offset(const tack_array *arr, int32_t nindex,
                                               const int64_t *index, size_t *offset);

/*
 * Copies the element at a flat offset (itemsize bytes, every component) to out, host
 * memory, wherever the array lives; launches that wrote the array finish first.
 * Errors: TACK_ERR_INDEX, a backend's copy error.
 */
TACK_API tack_status tack_array_get_element(const tack_array *arr, size_t offset,
                                            void *out);

/*
 * Stores one element of the array's own dtype (itemsize bytes at value, host memory)
 * at a flat offset. Errors: TACK_ERR_READ_ONLY (memory unchanged), TACK_ERR_INDEX.
 */
TACK_API tack_status tack_array_set_element(tack_array *arr, size_t offset,
                                            const void *value);

/* A copy of src on dev (same dtype and shape). Returns: new reference. */
TACK_API tack_status tack_array_to_device(const tack_array *src, tack_device *dev,
                                          tack_array **out);

/*
 * A copy of src on dev ordered against another library's stream (the Array API's
 * to_device(device, stream=...)). `stream` takes DLPack's values for the device with
 * streams that the copy involves (src's device, else dev): -1 orders nothing; on CUDA
 * 1 is the legacy default stream, 2 the per-thread default stream and a larger value
 * a CUstream of that device's context; 0 and values below -1 are refused. The copy is
 * queued on Tack's stream after the work queued on `stream` so far, and when the
 * result lives on that device, `stream`'s later work follows the copy (an event
 * recorded and waited for each way: the host does not block). Between devices without
 * streams only -1 is accepted. Errors: TACK_ERR_DLPACK_INVALID for a value that is not
 * a stream there; those of tack_array_to_device. Returns: new reference.
 */
TACK_API tack_status tack_array_to_device_on_stream(const tack_array *src,
                                                    tack_device *dev, int64_t stream,
                                                    tack_array **out);

/* ---- memory for other APIs ------------------------------------------------- */

/* An allocation exported as an OS handle another graphics or compute API imports. */
typedef struct tack_exported_memory {
    const char *backend;     /* Borrowed, static: the exporting backend, "cuda" */
    const char *handle_type; /* Borrowed, static: "posix_fd", "win32_kmt", ... */
    uint64_t handle;         /* the handle; a POSIX fd is closed with the buffer */
    size_t size;             /* bytes of the array */
    size_t allocation_size;  /* bytes behind the handle (rounded to a granularity) */
    uint8_t device_uuid[16]; /* to match the device across APIs */
} tack_exported_memory;

/*
 * Exports the array's memory as an OS handle (Array.export_memory in Python). An
 * array allocated exportable is exported in place: its buffer is shared first, as for
 * a DLPack export. Any other array of a backend that can export waits for its queued
 * work and is copied once, device to device, into an exportable buffer that lives as
 * long as the array's buffer; later writes to the array are not reflected in it.
 * Out: *out only on success. Errors: TACK_ERR_UNSUPPORTED on a backend that cannot
 * export (the CPU, HIP, Level Zero), the backend's errors otherwise.
 */
TACK_API tack_status tack_array_export_memory(tack_array *arr,
                                              tack_exported_memory *out);

/* ---- memory Tack does not own ----------------------------------------------- */

/*
 * An array over memory Tack does not own: data (the first element) holding the
 * C-contiguous elements of shape. The backend checks that data is in dev's memory
 * space; data must be aligned to the scalar size and non-NULL when there are
 * elements. With release == NULL the caller keeps the memory alive (wrapped buffer);
 * otherwise release(ctx) runs exactly once, when the last array over the memory goes,
 * and this function consumes that obligation even on failure. The buffer is shared
 * from birth. Returns: new reference in *out. Out: set only on success.
 * Errors: TACK_ERR_INVALID_ARGUMENT (NULL, misaligned, wrong memory space),
 * TACK_ERR_BAD_SHAPE, TACK_ERR_SIZE_OVERFLOW, TACK_ERR_BAD_DTYPE, TACK_ERR_NO_MEMORY.
 */
TACK_API tack_status tack_array_wrap_memory(tack_device *dev, void *data,
                                            tack_dtype dtype, int32_t ndim,
                                            const int64_t *shape, bool writable,
                                            tack_release_fn release, void *ctx,
                                            tack_array **out);

/*
 * As tack_array_wrap_memory over a region of nbytes at data (the buffer another
 * library lent): refuses, with TACK_ERR_BAD_SHAPE, a shape and dtype that need more
 * bytes than the region has. Consumes the release obligation, even on failure.
 */
TACK_API tack_status tack_array_wrap_region(tack_device *dev, void *data, size_t nbytes,
                                            tack_dtype dtype, int32_t ndim,
                                            const int64_t *shape, bool writable,
                                            tack_release_fn release, void *ctx,
                                            tack_array **out);

/* ---- memory lent and taken back ---------------------------------------------- */

/*
 * Takes back memory the caller lent: an array it made over its own memory
 * (tack_array_wrap_memory) and handed to others (tack_py_from_array, a DLPack
 * export). Call it before freeing or overwriting that memory.
 *
 * When the caller's reference is the last one to arr and to its buffer (every
 * Python object, reshaped view and DLPack consumer has let go), releases it, which
 * runs a release callback now, on this thread, and returns TACK_OK: nothing can
 * reach the memory through Tack any more, and the caller may free it. Consumes the
 * reference on success only.
 * Otherwise returns TACK_ERR_IN_USE, with a message naming the array (dtype, shape,
 * address, device) and how many references remain; arr stays the caller's, and the
 * memory must stay valid until a later reclaim succeeds (or the release callback
 * runs). In debug mode (TACK_DEBUG set and not "0", as for kernels) a refused reclaim
 * also marks the memory as taken back: from then on every Tack access to it (element
 * reads and writes, fills, copies, kernel launches, new views and exports) fails with
 * TACK_ERR_RECLAIMED naming the array, a ValueError in Python, instead of reading
 * memory the host may free. Consumers that already hold the raw address (a NumPy
 * array made by np.from_dlpack) read it directly; Tack cannot stop them, but their
 * references keep the reclaim refused in every build.
 * Errors: TACK_ERR_INVALID_ARGUMENT (arr NULL), TACK_ERR_IN_USE.
 */
TACK_API tack_status tack_array_reclaim(tack_array *arr);

#ifdef __cplusplus
}
#endif

#endif /* TACK_ARRAY_H */
