/*
 * gpu_internal.h: one implementation of a device for every CUDA-like driver, and the
 * driver table it is written against (docs/architecture.md, "GPU backends").
 *
 * The files of csrc/backends/gpu/ call a driver only through tack__gpu_api, whose
 * entries speak Tack's terms: a struct of device facts instead of attribute ids, a
 * classification of result codes instead of numeric ranges, named special streams. A
 * vendor's folder fills the table (csrc/backends/cuda/cuda_driver.c and cuda_table.c
 * for CUDA), describes itself in a tack__gpu_vendor (cuda_vendor.c) and names its
 * backend; every difference between vendors lives there.
 *
 * gpu_error.c    result codes as Tack statuses; sticky errors
 * gpu_context.c  open/close: adopt or retain a context; the per-call context guard
 * gpu_memory.c   alloc, free, copy, fill on Tack's stream
 * gpu_stream.c   synchronization, ordering against foreign streams
 * gpu_vmm.c      exportable (VMM) allocations and their POSIX fd
 * gpu_pointer.c  where a pointer lives
 */
#ifndef TACK_GPU_INTERNAL_H
#define TACK_GPU_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "../../runtime/internal.h"
#include "../../runtime/rtc.h"
#include "gpu_twin.h"

/* ---- the driver table -------------------------------------------------------------
 */

/* A driver's own result code. 0 is success on every CUDA-like driver; anything else
 * is read through the table's classify. */
typedef int tack__gpu_result;
#define TACK__GPU_SUCCESS 0

/* What a failing result code means for Tack. */
typedef enum tack__gpu_class {
    TACK__GPU_OK,       /* success */
    TACK__GPU_OOM,      /* the device is out of memory */
    TACK__GPU_STICKY,   /* the context is unusable for the rest of the process */
    TACK__GPU_SHUTDOWN, /* the driver is shutting down (process exit) */
    /* module_load refused an image in a format the driver has and a version newer
     * than it reads (the vendor's image_too_new says what to do) */
    TACK__GPU_IMAGE_TOO_NEW,
    TACK__GPU_OTHER,
} tack__gpu_class;

/* Driver handles, opaque here: the filler converts them to its own types. */
typedef int tack__gpu_device;
typedef uint64_t tack__gpu_ptr;        /* a device address */
typedef uint64_t tack__gpu_mem_handle; /* a physical (VMM) allocation */
typedef struct tack__gpu_context_st *tack__gpu_context;
typedef struct tack__gpu_stream_st *tack__gpu_stream;
typedef struct tack__gpu_event_st *tack__gpu_event;
typedef struct tack__gpu_module_st *tack__gpu_module;
typedef struct tack__gpu_function_st *tack__gpu_function;

/* The facts open keeps about a device. */
typedef struct tack__gpu_device_info {
    bool pools;         /* stream-ordered allocation (mem_alloc_async) */
    bool vmm;           /* exportable memory: VMM with POSIX-fd handles */
    size_t granularity; /* VMM recommended granularity; set when vmm */
    uint8_t uuid[16];
} tack__gpu_device_info;

/* The numbers a launch asks of a device when it first needs them. */
typedef enum tack__gpu_attribute {
    TACK__GPU_ATTRIBUTE_MULTIPROCESSORS,
    TACK__GPU_ATTRIBUTE_THREADS_PER_MULTIPROCESSOR,
} tack__gpu_attribute;

/* What the driver knows of an address. */
typedef enum tack__gpu_pointer_kind {
    TACK__GPU_POINTER_UNKNOWN, /* not the driver's: ordinary host memory */
    TACK__GPU_POINTER_HOST,    /* page-locked host memory */
    TACK__GPU_POINTER_DEVICE,  /* device memory of `ordinal` */
    TACK__GPU_POINTER_MANAGED, /* managed memory, reachable from every device */
} tack__gpu_pointer_kind;

typedef struct tack__gpu_pointer_info {
    tack__gpu_pointer_kind kind;
    int ordinal; /* for TACK__GPU_POINTER_DEVICE */
} tack__gpu_pointer_info;

/*
 * X(name, params): the driver calls, each returning a tack__gpu_result. Where the
 * CUDA-like drivers agree the shape is theirs (cuStreamSynchronize is
 * hipStreamSynchronize); where they differ it is Tack's (device_info, pointer_info,
 * the vmm_* calls with their fixed properties, device_arch: the device's own
 * architecture as the vendor's runtime compiler spells it, NUL-terminated, written
 * only on success). Streams are non-blocking and events keep no timing: the only
 * kinds Tack makes.
 */
#define TACK__GPU_CALLS(X)                                                             \
    X(device_count, (int *count))                                                      \
    X(device_get, (tack__gpu_device * device, int ordinal))                            \
    X(device_info, (tack__gpu_device device, tack__gpu_device_info * info))            \
    X(device_attribute, (int *value, tack__gpu_attribute which, tack__gpu_device dev)) \
    X(device_arch, (tack__gpu_device device, char arch[TACK_RTC_ARCH_CAP]))            \
    X(primary_context_retain, (tack__gpu_context * ctx, tack__gpu_device device))      \
    X(primary_context_release, (tack__gpu_device device))                              \
    X(context_get_current, (tack__gpu_context * ctx))                                  \
    X(context_set_current, (tack__gpu_context ctx))                                    \
    X(context_push, (tack__gpu_context ctx))                                           \
    X(context_pop, (tack__gpu_context * ctx))                                          \
    X(context_get_device, (tack__gpu_device * device))                                 \
    X(stream_create, (tack__gpu_stream * stream))                                      \
    X(stream_destroy, (tack__gpu_stream stream))                                       \
    X(stream_synchronize, (tack__gpu_stream stream))                                   \
    X(stream_wait_event, (tack__gpu_stream stream, tack__gpu_event event))             \
    X(event_create, (tack__gpu_event * event))                                         \
    X(event_destroy, (tack__gpu_event event))                                          \
    X(event_record, (tack__gpu_event event, tack__gpu_stream stream))                  \
    X(mem_alloc, (tack__gpu_ptr * ptr, size_t nbytes))                                 \
    X(mem_free, (tack__gpu_ptr ptr))                                                   \
    X(mem_alloc_async, (tack__gpu_ptr * ptr, size_t nbytes, tack__gpu_stream stream))  \
    X(mem_free_async, (tack__gpu_ptr ptr, tack__gpu_stream stream))                    \
    X(copy_htod_async,                                                                 \
      (tack__gpu_ptr dst, const void *src, size_t nbytes, tack__gpu_stream stream))    \
    X(copy_dtoh_async,                                                                 \
      (void *dst, tack__gpu_ptr src, size_t nbytes, tack__gpu_stream stream))          \
    X(copy_dtod_async,                                                                 \
      (tack__gpu_ptr dst, tack__gpu_ptr src, size_t nbytes, tack__gpu_stream stream))  \
    X(copy_peer_async,                                                                 \
      (tack__gpu_ptr dst, tack__gpu_context dst_ctx, tack__gpu_ptr src,                \
       tack__gpu_context src_ctx, size_t nbytes, tack__gpu_stream stream))             \
    X(copy_2d_async,                                                                   \
      (tack__gpu_ptr dst, size_t dst_pitch, tack__gpu_ptr src, size_t src_pitch,       \
       size_t width, size_t height, tack__gpu_stream stream))                          \
    X(memset_async, (tack__gpu_ptr dst, uint32_t word, size_t word_size, size_t n,     \
                     tack__gpu_stream stream))                                         \
    X(pointer_info, (tack__gpu_ptr ptr, tack__gpu_pointer_info * info))                \
    X(vmm_create,                                                                      \
      (tack__gpu_mem_handle * handle, size_t size, tack__gpu_device device))           \
    X(vmm_release, (tack__gpu_mem_handle handle))                                      \
    X(vmm_reserve, (tack__gpu_ptr * ptr, size_t size, size_t alignment))               \
    X(vmm_address_free, (tack__gpu_ptr ptr, size_t size))                              \
    X(vmm_map, (tack__gpu_ptr ptr, size_t size, tack__gpu_mem_handle handle))          \
    X(vmm_unmap, (tack__gpu_ptr ptr, size_t size))                                     \
    X(vmm_set_access, (tack__gpu_ptr ptr, size_t size, tack__gpu_device device))       \
    X(vmm_export_fd, (int *fd, tack__gpu_mem_handle handle))                           \
    X(module_load, (tack__gpu_module * module, const void *image))                     \
    X(module_unload, (tack__gpu_module module))                                        \
    X(module_get_function,                                                             \
      (tack__gpu_function * fn, tack__gpu_module module, const char *name))            \
    X(launch_kernel,                                                                   \
      (tack__gpu_function fn, unsigned grid_x, unsigned grid_y, unsigned grid_z,       \
       unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_nbytes,   \
       tack__gpu_stream stream, void **params, void **extra))                          \
    X(occupancy_max_block_size,                                                        \
      (int *min_grid, int *block, tack__gpu_function fn,                               \
       size_t (*block_shared_nbytes)(int block), size_t shared_nbytes, int limit))

/* The driver's entry points in Tack's terms. occupancy_max_block_size may be NULL
 * (launches then use a fixed block size); every other entry is set. */
typedef struct tack__gpu_api {
#define TACK__GPU_FIELD(name, params) tack__gpu_result(*name) params;
    TACK__GPU_CALLS(TACK__GPU_FIELD)
#undef TACK__GPU_FIELD
    tack__gpu_class (*classify)(tack__gpu_result rc);
    /* Never NULL: the driver's name and description of rc, or a stand-in text. */
    const char *(*error_name)(tack__gpu_result rc);
    const char *(*error_text)(tack__gpu_result rc);
} tack__gpu_api;

/* The driver's own name of each call, for messages ("cuStreamSynchronize"). */
typedef struct tack__gpu_names {
#define TACK__GPU_FIELD(name, params) const char *name;
    TACK__GPU_CALLS(TACK__GPU_FIELD)
#undef TACK__GPU_FIELD
} tack__gpu_names;

/* The foreign stream values with a meaning of their own on this driver (the Array
 * API's stream= integers), 0 where it has none, and what a message tells a user who
 * passed a value that is no stream. */
typedef struct tack__gpu_streams {
    uintptr_t legacy;     /* the legacy default stream */
    uintptr_t per_thread; /* the per-thread default stream */
    const char *remedy;   /* "pass 1 (...), 2 (...) or ..." */
} tack__gpu_streams;

/*
 * What the GPU layer knows of a vendor without its driver, static: the table of a
 * backend with the GPU layer's slots points its impl here (a kernel's launch reads it
 * from the kernel's backend when no device is given), and so does the loaded driver.
 * The rules that depend on how the vendor numbers its driver and compiler versions
 * are its own, and so are their messages and remedies.
 */
typedef struct tack__gpu_vendor {
    const char *platform; /* as users know it ("CUDA"): messages */
    tack_rtc_kind rtc;    /* the runtime compiler of its kernels (rtc.h) */
    /* TACK_OK when an image that compiler, at rtc_major.rtc_minor, makes for target
     * (tack_rtc_choose's) loads on a driver of driver_version; otherwise
     * TACK_ERR_DEVICE_UNAVAILABLE naming kernel, both versions and the remedy. */
    tack_status (*image_fits)(const char *kernel, int rtc_major, int rtc_minor,
                              int driver_version, const char *target);
    /* The failure of kernel's module_load, whose result classify called
     * TACK__GPU_IMAGE_TOO_NEW, with the versions and the remedy. */
    tack_status (*image_too_new)(const char *kernel, int driver_version, int rtc_major,
                                 int rtc_minor);
} tack__gpu_vendor;

/* The stand-in driver's hooks (gpu_twin.h), found by the vendor's loader in the
 * library it loaded; NULL on a real driver, where no twin is ever registered. */
typedef struct tack__gpu_standin {
    tack_standin_register_twin_fn register_twin;
    /* hands the stand-in the source module was compiled from */
    tack__gpu_result (*module_source)(tack__gpu_module module, const char *source);
    const char *module_source_name; /* its symbol, for messages */
} tack__gpu_standin;

/* The process's driver of one vendor: loaded and initialised once, never unloaded. */
typedef struct tack__gpu_driver {
    tack__gpu_api api;
    const tack__gpu_names *names;   /* Borrowed: static */
    const tack__gpu_vendor *vendor; /* Borrowed: static */
    const char *backend;            /* the backend's name ("cuda"): devices, exports */
    tack__gpu_streams streams;
    tack__gpu_standin standin;
    char path[1024]; /* the library actually loaded, for messages and repr */
    int version;     /* the driver's version, in its own encoding */
} tack__gpu_driver;

/* The driver's name of call `name`, for a message. */
#define TACK__GPU_NAME(s, name) ((s)->drv->names->name)
/* Calls entry `name` of s's driver and checks the result (tack__gpu_check). */
#define TACK__GPU_CHECKED(s, name, ...) \
    tack__gpu_check((s), (s)->drv->api.name(__VA_ARGS__), TACK__GPU_NAME(s, name))

/* A driver error as a Tack status with a message naming the call: no memory,
 * TACK_ERR_DEVICE_UNAVAILABLE for a driver shutting down, TACK_ERR_BACKEND
 * otherwise. (Sticky errors go through tack__gpu_check, which knows the device.) */
tack_status tack__gpu_error(const tack__gpu_driver *drv, tack__gpu_result rc,
                            const char *call);

/* ---- a device (gpu_context.c) -----------------------------------------------------
 */

typedef struct tack__gpu_vmm tack__gpu_vmm;

typedef struct tack__gpu_state {
    const tack__gpu_driver *drv; /* Borrowed: the process's driver */
    int ordinal;
    tack__gpu_device device;
    tack__gpu_context ctx;   /* retained primary context, or the adopted current one */
    bool primary;            /* ctx is the primary context (retained, never released) */
    tack__gpu_stream stream; /* Tack's non-blocking stream; destroyed by close */
    /* The event of stream handoffs (record on one stream, wait on another), reused:
     * a wait captures the record before it, so the next record cannot disturb it.
     * handoff_lock keeps each record-and-wait pair together. */
    tack__gpu_event handoff;
    pthread_mutex_t handoff_lock;
    tack__gpu_device_info info;
    /* 0, or the sticky error that made the context unusable */
    _Atomic tack__gpu_result sticky;
    pthread_mutex_t vmm_lock; /* guards vmm_list */
    tack__gpu_vmm *vmm_list;  /* exportable allocations, newest first */
} tack__gpu_state;

/* Every entry point brackets its driver calls with these: enter fails at once when
 * the context carries a sticky error, and makes the device's context current on the
 * calling thread (pushing it when another one is current, so the caller's own
 * context is restored by leave). Buffers are released from any thread, and a thread
 * with no current context would get the driver's invalid-context error. */
typedef struct tack__gpu_guard {
    bool pushed;
} tack__gpu_guard;
tack_status tack__gpu_enter(tack__gpu_state *s, tack__gpu_guard *g);
void tack__gpu_leave(tack__gpu_state *s, tack__gpu_guard *g);

/* rc as a Tack status; a sticky error (an illegal address in a kernel, a failed
 * launch) is recorded on s, so every later call says the device is unusable. */
tack_status tack__gpu_check(tack__gpu_state *s, tack__gpu_result rc, const char *call);
/* The failure of a device that carries the sticky error rc, seen in call. */
tack_status tack__gpu_sticky_failure(tack__gpu_state *s, tack__gpu_result rc,
                                     const char *call);

/* TACK_ERR_UNKNOWN_OPTION for options a CUDA-like backend does not take (an
 * external_context: such a context is adopted by making it current instead). */
tack_status tack__gpu_refuse_options(const tack_backend *self,
                                     const tack_device_options *options);
/* The backend's open slot over drv (the vendor's loaded driver): the backend's own
 * open checks its options and loads the driver, then calls this. */
tack_status tack__gpu_open(const tack__gpu_driver *drv, int ordinal, void **state);
void tack__gpu_close(void *state);
uint64_t tack__gpu_memory_domain(void *state, int ordinal);
const char *tack__gpu_driver_path(void *state);

/* ---- memory (gpu_memory.c) --------------------------------------------------------
 */

tack_status tack__gpu_alloc(void *state, size_t nbytes, bool exportable, void **ptr);
/* Inside a guard: nbytes (> 0) of device memory, stream-ordered on Tack's stream
 * when the driver has pools (mem_alloc_async), else mem_alloc. Out: *ptr only on
 * success. Release with tack__gpu_free_queued (ordered after the stream's work). */
tack_status tack__gpu_alloc_queued(tack__gpu_state *s, size_t nbytes,
                                   tack__gpu_ptr *ptr);
void tack__gpu_free_queued(tack__gpu_state *s, tack__gpu_ptr ptr);
void tack__gpu_free(void *state, void *ptr);
tack_status tack__gpu_copy(void *state, void *dst, const void *src, size_t nbytes,
                           tack_copy_kind kind);
tack_status tack__gpu_fill(void *state, void *dst, const void *pattern,
                           size_t pattern_nbytes, size_t count);
/* The backend's copy_peer: copy_peer_async on the destination's stream, between
 * stream handoffs each way (tack__gpu_handoff). */
tack_status tack__gpu_copy_peer(void *state, void *dst, void *src_state,
                                const void *src, size_t nbytes);
/* The backend's copy_2d: copy_2d_async on Tack's stream. */
tack_status tack__gpu_copy_2d(void *state, void *dst, size_t dst_pitch, const void *src,
                              size_t src_pitch, size_t width, size_t height);

/* ---- streams (gpu_stream.c) -------------------------------------------------------
 */

tack_status tack__gpu_synchronize(void *state);
uintptr_t tack__gpu_own_stream(void *state);
tack_status tack__gpu_order_foreign_after_tack(void *state, uintptr_t foreign);
tack_status tack__gpu_order_tack_after_foreign(void *state, uintptr_t foreign);
/* Inside a guard: event record on `first`, wait on `then`. */
tack_status tack__gpu_order(tack__gpu_state *s, tack__gpu_stream first,
                            tack__gpu_stream then);
/* Outside any guard: the stream of device `then` waits for the work queued so far on
 * the stream of device `first` (another device: an event of first's context
 * recorded there, waited for in then's context). */
tack_status tack__gpu_handoff(tack__gpu_state *first, tack__gpu_state *then);

/* ---- exportable memory (gpu_vmm.c) ------------------------------------------------
 */

/* Inside a guard. Out: *ptr only on success. */
tack_status tack__gpu_vmm_alloc(tack__gpu_state *s, size_t nbytes, void **ptr);
/* Frees ptr when it is an exportable allocation (closing its fd); false otherwise.
 * Inside a guard, or with the driver gone (then it only forgets the record). */
bool tack__gpu_vmm_free(tack__gpu_state *s, void *ptr, bool driver_ok);
tack_status tack__gpu_export_memory(void *state, void *ptr, size_t nbytes,
                                    tack_exported_memory *out);

/* ---- pointers (gpu_pointer.c) -----------------------------------------------------
 */

tack_status tack__gpu_memory_space(void *state, const void *ptr,
                                   tack_memory_space *out);

/* The table slots every CUDA-like backend shares, for its initializer (all but open,
 * the vendor's, impl, its tack__gpu_vendor, and the kernel slots). */
#define TACK__GPU_SLOTS                                                           \
    .close = tack__gpu_close, .alloc = tack__gpu_alloc, .free = tack__gpu_free,   \
    .copy = tack__gpu_copy, .fill = tack__gpu_fill,                               \
    .memory_space = tack__gpu_memory_space, .synchronize = tack__gpu_synchronize, \
    .memory_domain = tack__gpu_memory_domain,                                     \
    .export_memory = tack__gpu_export_memory, .stream = tack__gpu_own_stream,     \
    .order_foreign_after_tack = tack__gpu_order_foreign_after_tack,               \
    .order_tack_after_foreign = tack__gpu_order_tack_after_foreign,               \
    .driver_path = tack__gpu_driver_path, .copy_peer = tack__gpu_copy_peer,       \
    .copy_2d = tack__gpu_copy_2d

#endif /* TACK_GPU_INTERNAL_H */
