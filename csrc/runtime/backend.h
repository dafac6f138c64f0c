/*
 * backend.h: the backend table, internal to the runtime (not part of the public
 * headers). Each backend (csrc/backends/<name>/) fills one tack_backend with function
 * pointers. The runtime never calls a driver directly; GPU backends open their driver
 * with dlopen on first use, so Tack builds, imports and runs its CPU tests with no
 * GPU and no GPU toolkit.
 *
 * The table is append-only and carries its own size: later capabilities add slots at
 * the end, a backend sets .size = sizeof(tack_backend) as it was compiled, and the
 * runtime reads a slot only through TACK__BACKEND_SLOT, which treats a slot beyond
 * the table's size, or NULL, as absent (the runtime then reports
 * TACK_ERR_UNSUPPORTED). A table built before a slot existed stays valid.
 */
#ifndef TACK_BACKEND_H
#define TACK_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tack/array.h"
#include "tack/device.h"
#include "tack/kernel.h"
#include "tack/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a pointer lives, as far as a backend can tell. */
typedef enum tack_memory_space {
    TACK_MEMORY_HOST = 0, /* ordinary host memory */
    TACK_MEMORY_DEVICE,   /* memory of this backend's device */
    TACK_MEMORY_PINNED,   /* page-locked host memory of this backend */
    TACK_MEMORY_MANAGED,  /* unified memory reachable from host and device */
    TACK_MEMORY_UNKNOWN   /* not an allocation this backend knows */
} tack_memory_space;

/* Direction of a copy, from the device's point of view. */
typedef enum tack_copy_kind {
    TACK_COPY_HOST_TO_DEVICE,
    TACK_COPY_DEVICE_TO_HOST,
    TACK_COPY_DEVICE_TO_DEVICE
} tack_copy_kind;

struct tack_backend {
    size_t size;            /* sizeof(tack_backend) when the backend was compiled */
    const char *name;       /* "cpu" */
    int dlpack_device_type; /* kDLCPU = 1, kDLCUDA = 2, kDLROCM = 10, kDLOneAPI = 14 */
    /* Options the backend's devices accept, NULL-terminated. tack.device() refuses
     * any other keyword before anything is constructed. */
    const char *const *option_names;

    /* What the backend's own code needs to know about itself, static (the GPU
     * backends: their driver libraries, a tack__driver_stub); may be NULL. */
    const void *impl;

    /* Prepares the backend state of a device: loads the driver, checks the ordinal,
     * adopts an external context. self is this table. Out: *state only on success. */
    tack_status (*open)(const tack_backend *self, int ordinal,
                        const tack_device_options *options, void **state);
    /* Frees what open made; may be NULL. Never called at process exit. */
    void (*close)(void *state);

    /* Allocates nbytes (may be 0) of device memory. exportable asks for memory that
     * export_memory can hand out as an OS handle. Out: *ptr only on success. */
    tack_status (*alloc)(void *state, size_t nbytes, bool exportable, void **ptr);
    void (*free)(void *state, void *ptr);
    tack_status (*copy)(void *state, void *dst, const void *src, size_t nbytes,
                        tack_copy_kind kind);
    /* Writes count copies of the pattern_nbytes-long pattern at dst. */
    tack_status (*fill)(void *state, void *dst, const void *pattern,
                        size_t pattern_nbytes, size_t count);
    tack_status (*memory_space)(void *state, const void *ptr, tack_memory_space *out);
    tack_status (*synchronize)(void *state);
    /* The memory domain of a device of this backend (see device.h). */
    uint64_t (*memory_domain)(void *state, int ordinal);

    /* ---- appended slots: read them through TACK__BACKEND_SLOT ---- */

    /* Exports nbytes at ptr (an allocation of this backend) as an OS handle another
     * API can import (a CUDA VMM allocation as a POSIX fd). The handle stays owned by
     * the allocation. Out: *out only on success. Absent: the backend cannot export
     * (the CPU). */
    tack_status (*export_memory)(void *state, void *ptr, size_t nbytes,
                                 tack_exported_memory *out);
    /* Tack's own stream on this device, as the driver's integer handle (what a CUDA
     * consumer passes as `stream=`). Absent: work is synchronous. */
    uintptr_t (*stream)(void *state);
    /* Makes a foreign stream (a driver handle, or the driver's special values such as
     * CUDA's legacy 1 and per-thread 2) wait for the work queued on Tack's stream so
     * far, without blocking the host. */
    tack_status (*order_foreign_after_tack)(void *state, uintptr_t foreign);
    /* Makes Tack's stream wait for the work queued on a foreign stream so far; 0 is
     * the device's default stream (CUDA's legacy NULL stream). */
    tack_status (*order_tack_after_foreign)(void *state, uintptr_t foreign);
    /* The driver library the device was opened with, for the device's repr.
     * Borrowed: static. */
    const char *(*driver_path)(void *state);

    /* Kernels (kernel.h; docs/kernels.md). A kernel belongs to the backend that
     * built it; the runtime packs the launch's parameter block, whatever the
     * backend. Absent kernel_build or kernel_launch: the backend runs no kernels,
     * and building or launching one is TACK_ERR_UNSUPPORTED. */

    /* Builds the specialization of the request this backend's emitter made (the
     * CPU: C compiled into a shared object, from the disk cache, and dlopen; a GPU
     * backend: gpu_build_request.c). self is this table; kernel.c checked that req
     * and its source are not NULL. Every field of struct tack_kernel (internal.h) is
     * set before *out is returned, its backend to self. On a failed compile *log
     * receives the compiler's output (tack_kernel_log_free), else stays NULL. Out: *out
     * (Borrowed: valid until kernel_release, for the life of the process when that slot
     * is absent) only on success. */
    tack_status (*kernel_build)(const tack_backend *self, const char *name,
                                const char *filename, const tack_kernel_request *req,
                                tack_kernel **out, char **log);
    /* Runs one launch of k (a kernel of this backend) on the device whose state is
     * given (NULL: the launch named no device; a backend that needs one refuses).
     * params is the packed block (tack_kernel_params_pack, params_nbytes bytes,
     * 8-aligned, valid for the call); flags are tack_kernel_launch_ex's. Out:
     * *result (never NULL) only on success. */
    tack_status (*kernel_launch)(void *state, tack_kernel *k, const void *params,
                                 size_t params_nbytes, unsigned flags,
                                 tack_kernel_value *result);
    /* Frees what kernel_build made for k. Absent: the backend keeps its kernels for
     * the life of the process (the CPU: shared objects are never unloaded). */
    void (*kernel_release)(tack_kernel *k);

    /* Copies nbytes from src, memory of another device of this backend (src_state),
     * to dst on the device whose state is given, device to device without the host:
     * after the work queued on either device so far, and before the work queued on
     * either later (the source's release included). Absent: such copies go through
     * the host. */
    tack_status (*copy_peer)(void *state, void *dst, void *src_state, const void *src,
                             size_t nbytes);
    /* Copies height rows of width bytes, src_pitch bytes apart at src, to rows
     * dst_pitch apart at dst, both this device's memory, queued in order with the
     * device's other work (pitches at least width, at most 2**31 - 1). Absent: the
     * backend copies no strided device memory (tack__array_gather refuses). */
    tack_status (*copy_2d)(void *state, void *dst, size_t dst_pitch, const void *src,
                           size_t src_pitch, size_t width, size_t height);
};

/* The slot of backend b, or NULL when b's table predates it or leaves it empty. */
#define TACK__BACKEND_SLOT(b, slot) \
    ((b)->size >= offsetof(tack_backend, slot) + sizeof((b)->slot) ? (b)->slot : NULL)

/* The backend tables Tack was built with. Borrowed: static. */
extern const tack_backend tack__backend_cpu;
extern const tack_backend tack__backend_cuda;
extern const tack_backend tack__backend_hip;
extern const tack_backend tack__backend_level_zero;

#ifdef __cplusplus
}
#endif

#endif /* TACK_BACKEND_H */
