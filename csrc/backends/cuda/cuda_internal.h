/*
 * cuda_internal.h: what the files of the CUDA backend share (docs/cuda.md).
 *
 * cuda_driver.c   loading libcuda.so.1 (or $TACK_CUDA_DRIVER), entry points, errors
 * cuda_context.c  open/close: adopt or retain a context; the per-call context guard
 * cuda_memory.c   alloc, free, copy, fill on Tack's stream
 * cuda_stream.c   synchronization, sticky errors, ordering against foreign streams
 * cuda_vmm.c      exportable (VMM) allocations and their POSIX fd
 * cuda_pointer.c  where a pointer lives (one cuPointerGetAttributes call)
 * (kernels: ../gpu/gpu_kernel.h)
 * cuda_backend.c  the backend table
 */
#ifndef TACK_CUDA_INTERNAL_H
#define TACK_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "../../runtime/internal.h"
#include "cuda_abi.h"

/* ---- the driver (cuda_driver.c) ---------------------------------------------------
 */

/* One pointer per entry point of cuda_abi.h, resolved at its pinned ABI version. */
typedef struct tack__cuda_api {
#define TACK__CUDA_FIELD(name, symbol, version) tcu_fn_##name *name;
    TCU_ENTRY_POINTS(TACK__CUDA_FIELD)
#undef TACK__CUDA_FIELD
} tack__cuda_api;

/* The process's driver: loaded and initialised once, never unloaded. */
typedef struct tack__cuda_driver {
    tack__cuda_api api;
    char path[1024]; /* the library actually loaded (dladdr), for messages and repr */
    int version;     /* cuDriverGetVersion */
} tack__cuda_driver;

/* Loads and initialises the driver on first use (thread-safe). Borrowed: lives until
 * the process ends. Errors: TACK_ERR_DEVICE_UNAVAILABLE naming the library and why
 * (missing, NVIDIA's stub, too old, no device). */
tack_status tack__cuda_driver_get(const tack__cuda_driver **out);

/* A driver error as a Tack status with a message naming the call: no memory,
 * TACK_ERR_DEVICE_UNAVAILABLE for a deinitialised driver, TACK_ERR_BACKEND
 * otherwise. (Sticky errors go through tack__cuda_check, which knows the device.) */
tack_status tack__cuda_error(const tack__cuda_driver *drv, tcu_result rc,
                             const char *call);

/* ---- a device (cuda_context.c) ----------------------------------------------------
 */

typedef struct tack__cuda_vmm tack__cuda_vmm;

typedef struct tack__cuda_state {
    const tack__cuda_driver *drv; /* Borrowed: the process's driver */
    int ordinal;
    tcu_device device;
    tcu_context ctx;   /* retained primary context, or the adopted current one */
    bool primary;      /* ctx is the primary context (retained, never released) */
    tcu_stream stream; /* Tack's non-blocking stream; destroyed by close */
    /* The event of stream handoffs (record on one stream, wait on another), reused:
     * a wait captures the record before it, so the next record cannot disturb it.
     * handoff_lock keeps each record-and-wait pair together. */
    tcu_event handoff;
    pthread_mutex_t handoff_lock;
    bool pools;         /* cuMemAllocAsync is available */
    bool vmm;           /* VMM and POSIX-fd handles are supported */
    size_t granularity; /* VMM recommended granularity */
    uint8_t uuid[16];   /* cuDeviceGetUuid */
    _Atomic tcu_result
        sticky; /* 0, or the sticky error that made the context unusable */
    pthread_mutex_t vmm_lock; /* guards vmm */
    tack__cuda_vmm *vmm_list; /* exportable allocations, newest first */
} tack__cuda_state;

/* Every entry point brackets its driver calls with these: enter fails at once when
 * the context carries a sticky error, and makes the device's context current on the
 * calling thread (pushing it when another one is current, so the caller's own
 * context is restored by leave). Buffers are released from any thread, and a thread
 * with no current context would get CUDA_ERROR_INVALID_CONTEXT. */
typedef struct tack__cuda_guard {
    bool pushed;
} tack__cuda_guard;
tack_status tack__cuda_enter(tack__cuda_state *s, tack__cuda_guard *g);
void tack__cuda_leave(tack__cuda_state *s, tack__cuda_guard *g);

/* rc as a Tack status; a sticky error (an illegal address in a kernel, a failed
 * launch) is recorded on s, so every later call says the device is unusable. */
tack_status tack__cuda_check(tack__cuda_state *s, tcu_result rc, const char *call);

tack_status tack__cuda_open(const tack_backend *self, int ordinal,
                            const tack_device_options *options, void **state);
void tack__cuda_close(void *state);
uint64_t tack__cuda_memory_domain(void *state, int ordinal);
const char *tack__cuda_driver_path(void *state);

/* ---- memory (cuda_memory.c) -------------------------------------------------------
 */

tack_status tack__cuda_alloc(void *state, size_t nbytes, bool exportable, void **ptr);
/* Inside a guard: nbytes (> 0) of device memory, stream-ordered on Tack's stream
 * when the driver has pools (cuMemAllocAsync), else cuMemAlloc. Out: *ptr only on
 * success. Release with tack__cuda_free_queued (ordered after the stream's work). */
tack_status tack__cuda_alloc_queued(tack__cuda_state *s, size_t nbytes,
                                    tcu_deviceptr *ptr);
void tack__cuda_free_queued(tack__cuda_state *s, tcu_deviceptr ptr);
void tack__cuda_free(void *state, void *ptr);
tack_status tack__cuda_copy(void *state, void *dst, const void *src, size_t nbytes,
                            tack_copy_kind kind);
tack_status tack__cuda_fill(void *state, void *dst, const void *pattern,
                            size_t pattern_nbytes, size_t count);
/* The backend's copy_peer: cuMemcpyPeerAsync on the destination's stream, between
 * stream handoffs each way (tack__cuda_handoff). */
tack_status tack__cuda_copy_peer(void *state, void *dst, void *src_state,
                                 const void *src, size_t nbytes);
/* The backend's copy_2d: cuMemcpy2DAsync on Tack's stream. */
tack_status tack__cuda_copy_2d(void *state, void *dst, size_t dst_pitch,
                               const void *src, size_t src_pitch, size_t width,
                               size_t height);

/* ---- streams (cuda_stream.c) ------------------------------------------------------
 */

tack_status tack__cuda_synchronize(void *state);
uintptr_t tack__cuda_stream(void *state);
tack_status tack__cuda_order_foreign_after_tack(void *state, uintptr_t foreign);
tack_status tack__cuda_order_tack_after_foreign(void *state, uintptr_t foreign);
/* Inside a guard: event record on `first`, wait on `then`. */
tack_status tack__cuda_order(tack__cuda_state *s, tcu_stream first, tcu_stream then);
/* Outside any guard: the stream of device `then` waits for the work queued so far on
 * the stream of device `first` (another device: an event of first's context
 * recorded there, waited for in then's context). */
tack_status tack__cuda_handoff(tack__cuda_state *first, tack__cuda_state *then);

/* ---- exportable memory (cuda_vmm.c) -----------------------------------------------
 */

/* The properties of an exportable allocation on device: pinned device memory with
 * the POSIX file descriptor handle type. */
void tack__cuda_vmm_prop(tcu_device device, tcu_mem_allocation_prop *prop);
/* Inside a guard. Out: *ptr only on success. */
tack_status tack__cuda_vmm_alloc(tack__cuda_state *s, size_t nbytes, void **ptr);
/* Frees ptr when it is an exportable allocation (closing its fd); false otherwise.
 * Inside a guard, or with the driver gone (then it only forgets the record). */
bool tack__cuda_vmm_free(tack__cuda_state *s, void *ptr, bool driver_ok);
tack_status tack__cuda_export_memory(void *state, void *ptr, size_t nbytes,
                                     tack_exported_memory *out);

/* ---- pointers (cuda_pointer.c) ----------------------------------------------------
 */

tack_status tack__cuda_memory_space(void *state, const void *ptr,
                                    tack_memory_space *out);
/* Remembers an opened device for tack__cuda_pointer_kind (internal.h). */
void tack__cuda_note_device(tack__cuda_state *s);

#endif /* TACK_CUDA_INTERNAL_H */
