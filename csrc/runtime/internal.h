/*
 * internal.h: what the runtime's files share with each other and nothing else.
 * Names here are tack__*: not exported, not for the extension, free to change.
 */
#ifndef TACK_INTERNAL_H
#define TACK_INTERNAL_H

#include <assert.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tack/alloc.h"
#include "tack/array.h"
#include "tack/device.h"
#include "tack/dlpack_abi.h"
#include "tack/dtype.h"
#include "tack/status.h"

#include "backend.h"

#if defined(__GNUC__)
#define TACK__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
/* Failure paths: kept out of line, so checks cost a branch on the hot paths. */
#define TACK__COLD __attribute__((cold, noinline))
#define TACK__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TACK__PRINTF(fmt, args)
#define TACK__COLD
#define TACK__UNLIKELY(x) (x)
#endif

/* ---- errors (status.c) ------------------------------------------------------- */

/* Records a message for tack_last_error() and returns st, so a failure reads
 * `return tack__fail(TACK_ERR_BAD_SHAPE, "...", ...);`. tack__fail_remedy also
 * records what the caller can do (status.h, TACK_REMEDY_LIST), which bindings word
 * in their own language. Debug builds record the file and line of the failure and
 * show them in the message. */
tack_status tack__fail_at(const char *file, int line, tack_status st,
                          tack_remedy remedy, const char *fmt, ...)
    TACK__PRINTF(5, 6) TACK__COLD;
/* The failure of a public function given a NULL pointer argument. */
tack_status tack__null_argument(const char *file, int line, const char *function,
                                const char *argument) TACK__COLD;
#ifdef NDEBUG
#define TACK__ORIGIN NULL, 0
#else
#define TACK__ORIGIN __FILE__, __LINE__
#endif
/* The status of a failure as a value the static analyzer can see (it cannot look
 * into status.c), so out-parameters are not reported as unset on success paths. */
static inline tack_status
tack__failed(tack_status st, tack_status recorded)
{
    (void)recorded;
    return st;
}
/* st is evaluated twice: pass a constant or a plain variable. */
#define tack__fail(st, ...) \
    tack__failed((st), tack__fail_at(TACK__ORIGIN, (st), TACK_REMEDY_NONE, __VA_ARGS__))
#define tack__fail_remedy(st, remedy, ...) \
    tack__failed((st), tack__fail_at(TACK__ORIGIN, (st), (remedy), __VA_ARGS__))

/* A public entry point's check of a pointer argument: a NULL handle is the caller's
 * mistake, reported as TACK_ERR_INVALID_ARGUMENT, never dereferenced. */
#define TACK__CHECK_ARG(ptr)                                           \
    do {                                                               \
        if (TACK__UNLIKELY(!(ptr))) {                                  \
            return (tack__null_argument(TACK__ORIGIN, __func__, #ptr), \
                    TACK_ERR_INVALID_ARGUMENT);                        \
        }                                                              \
    } while (0)

/* Whether nbytes starting at address stay inside the address space (the last byte
 * is at most UINTPTR_MAX): a foreign range that wraps past 2**64 is refused. */
static inline bool
tack__range_fits(uintptr_t address, size_t nbytes)
{
    return nbytes == 0 || nbytes - 1 <= UINTPTR_MAX - address;
}

/* Whether a foreign value can be the address of an object aligned to align, checked
 * before anything is read through it: not NULL, not in the first page (never mapped
 * on the systems Tack runs on), aligned, and below 2**57, where user space ends on
 * every 64-bit system Tack targets (x86-64 with 5-level paging reaches 2**56,
 * AArch64 2**52). A value that passes can still be wrong: nothing in C can prove an
 * address valid; this stops the forgeries that are easy to make by mistake. */
static inline bool
tack__plausible_address(uintptr_t address, size_t align)
{
#if UINTPTR_MAX > 0xFFFFFFFFu
    const uintptr_t user_space_end = (uintptr_t)1 << 57;
#else
    const uintptr_t user_space_end = UINTPTR_MAX;
#endif
    return address >= 4096 && address < user_space_end && address % align == 0;
}

/* ---- allocation (alloc.c) ----------------------------------------------------- */

/* Through the hook of alloc.h. nbytes 0 is allowed and returns a unique pointer.
 * alignment 0 means 64 bytes (data, staging); a struct asks for
 * TACK__STRUCT_ALIGNMENT (max_align_t), which the default allocator serves with
 * plain malloc: tack__new and tack__calloc do. */
#define TACK__STRUCT_ALIGNMENT _Alignof(max_align_t)
void *tack__alloc(size_t nbytes, size_t alignment);
void *tack__calloc(size_t nbytes);
void tack__free(void *ptr);
/* The n bytes at s and a terminator, in a new buffer (release with tack__free());
 * NULL when allocation fails. */
char *tack__strndup(const char *s, size_t n);
/* tack__alloc for a struct: reports TACK_ERR_NO_MEMORY through tack__fail. */
tack_status tack__new(size_t nbytes, void **out);

/* ---- dtypes (dtype.c) ------------------------------------------------------------ */

/* The table behind tack_dtype_get. tack__dtype is its look-up for a dtype already
 * known to be valid (an array's, a validated tensor's): inlined, where the public
 * function is a call through the PLT on the hot paths of imports and exports. */
extern const tack_dtype_info tack__dtype_table[TACK_DTYPE_COUNT];
static inline const tack_dtype_info *
tack__dtype(tack_dtype dt)
{
    assert((unsigned)dt < (unsigned)TACK_DTYPE_COUNT);
    return &tack__dtype_table[dt];
}

/* ---- reference counts ------------------------------------------------------------ */

/* Drops the caller's reference from count; true when it was the last. The sole
 * reference is dropped without a locked instruction (a fifth of a DLPack import):
 * when the count reads 1, the caller's is the only reference, and another can only
 * be made from an existing one (every retain is by an owner), so no other thread can
 * change the count meanwhile. The acquire load pairs with the release half of the
 * decrements that brought it down to 1, as the fetch_sub's acquire does. */
static inline bool
tack__ref_drop(atomic_size_t *count)
{
    if (atomic_load_explicit(count, memory_order_acquire) == 1) {
        return true;
    }
    size_t before = atomic_fetch_sub_explicit(count, 1, memory_order_acq_rel);
    assert(before > 0 && "a reference released twice");
    return before == 1;
}

/* ---- devices (device.c) -------------------------------------------------------- */

struct tack_device {
    atomic_size_t refcount;
    const tack_backend *backend; /* Borrowed: static table */
    int ordinal;
    void *state;                    /* Owned: made by backend->open */
    bool external_context;          /* opened with options: not in the registry */
    tack_external_context external; /* the handles, when external_context */
    bool in_registry;               /* registry devices are never freed */
    uint64_t memory_domain;
};

/* What the devices of this process know of a pointer the CPU backend is asked to
 * wrap: TACK_MEMORY_DEVICE when the memory_space slot of the first registry device
 * opened of some non-host backend calls it device memory of any ordinal (which the
 * host cannot touch), TACK_MEMORY_HOST otherwise. No driver is loaded for this
 * question: only open devices are asked (device.c). */
tack_memory_space tack__device_foreign_space(const void *ptr);

/*
 * Work on dev's own stream bracketed by another library's stream (the Array API's
 * stream= values for dev's DLPack type; dev NULL is the host): before the work,
 * tack__stream_follow checks the value (TACK_ERR_DLPACK_INVALID for one that is no
 * stream there: on the host anything but -1) and makes Tack's stream wait for the
 * work queued on it so far; after the work, tack__stream_lead makes it wait for
 * Tack's stream. An event each way, no host wait; -1 orders nothing (device.c).
 */
tack_status tack__stream_follow(tack_device *dev, int64_t stream);
tack_status tack__stream_lead(tack_device *dev, int64_t stream);

/*
 * A new C-contiguous array on dev holding the strided region at address (dev's
 * memory: extents, strides in elements of itemsize bytes, validated by the caller),
 * copied on the device with the backend's copy_2d slot and queued on its stream
 * (gather.c). Errors: TACK_ERR_UNSUPPORTED without that slot; allocation and copy
 * errors. Out: *out only on success (a new reference).
 */
tack_status tack__array_gather(tack_device *dev, uintptr_t address, tack_dtype dtype,
                               int32_t ndim, const int64_t *shape,
                               const int64_t *strides, size_t itemsize,
                               tack_array **out);

/* Whether the device's memory is the CPU's own (host pointers, plain memcpy). */
static inline bool
tack__device_is_host(const tack_device *dev)
{
    return dev->backend->dlpack_device_type == kDLCPU;
}

/* ---- buffers and arrays (buffer.c, array*.c) --------------------------------- */

struct tack_buffer {
    atomic_size_t refcount;
    tack_device *device; /* Owned reference */
    void *data;          /* device address; NULL only when nbytes is 0 */
    size_t nbytes;
    tack_owner_kind owner;
    atomic_uint flags;       /* enum tack_buffer_flags */
    tack_release_fn release; /* imported only: runs once at the last release */
    void *release_ctx;
    /* Owned reference or NULL: the exportable copy export_memory made of a buffer
     * that was not allocated exportable (made once, released with this buffer). */
    _Atomic(struct tack_buffer *) export_copy;
    /* Set once, by a refused tack_array_reclaim in debug mode (reclaim.c): the owner
     * has taken the memory back, and every later access through Tack is refused. */
    atomic_bool reclaimed;
};

struct tack_array {
    atomic_size_t refcount;
    tack_buffer *buffer; /* Owned reference; the array starts at its first byte */
    tack_dtype dtype;
    bool writable; /* per array: a read-only view of a writable buffer */
    int32_t ndim;
    size_t nelem;  /* product of shape */
    size_t nbytes; /* nelem * itemsize, checked for overflow */
    /* Owned or NULL: the block of a DLPack export of this array's own memory, given
     * back by its deleter for the next such export to reuse (dlpack_export.c). Its
     * size fits the array's layout, which never changes. */
    _Atomic(void *) dlpack_spare;
    int64_t shape[]; /* ndim extents, row-major, then the DLPack layout below */
};

/* ---- memory taken back by its owner (reclaim.c) -----------------------------------
 */

/* TACK_ERR_RECLAIMED naming arr and what was refused. */
tack_status tack__array_reclaimed(const tack_array *arr, const char *what) TACK__COLD;

/* The check at every entry point that reads, writes or hands out an array's memory:
 * a relaxed load of a flag on a cache line the caller reads anyway, so it costs
 * nothing measurable in any build; only a debug-mode reclaim ever sets the flag. */
static inline tack_status
tack__check_live(const tack_array *arr, const char *what)
{
    if (TACK__UNLIKELY(
            atomic_load_explicit(&arr->buffer->reclaimed, memory_order_relaxed))) {
        return tack__array_reclaimed(arr, what);
    }
    return TACK_OK;
}

/* ---- DLPack (dlpack_export.c, dlpack_import.c) ------------------------------------
 */

/* Every array stores its DLPack layout after shape[ndim]: tack__dl_ndim extents (a
 * vec dtype adds a trailing dimension of its components), then as many element
 * strides (C-contiguous). It is filled once when the array is made, so exports copy
 * it and tack_dlpack_describe points into it without allocating. */
static inline int32_t
tack__dl_ndim(tack_dtype dtype, int32_t ndim)
{
    return ndim + (tack__dtype(dtype)->ncomponents > 1 ? 1 : 0);
}
static inline int64_t *
tack__array_dl_shape(const tack_array *arr)
{
    return (int64_t *)arr->shape + arr->ndim;
}
static inline int64_t *
tack__array_dl_strides(const tack_array *arr)
{
    return tack__array_dl_shape(arr) + tack__dl_ndim(arr->dtype, arr->ndim);
}
void tack__array_fill_dl_layout(tack_array *arr);
/* A dtype from a caller is an int: anything outside the enumeration is
 * TACK_ERR_BAD_DTYPE before it indexes a table (array.c). */
tack_status tack__check_dtype(tack_dtype dtype);
/* The element count of a shape of dtype, the dtype checked first (array.c). Out:
 * *nelem only on success. */
tack_status tack__dtype_shape_size(tack_dtype dtype, int32_t ndim, const int64_t *shape,
                                   size_t *nelem);
/* tack_array_wrap_memory after validation: dtype and shape are known good and nelem
 * is their element count (array_wrap.c). Consumes the release obligation. */
tack_status tack__array_wrap_validated(tack_device *dev, void *data, tack_dtype dtype,
                                       int32_t ndim, const int64_t *shape, size_t nelem,
                                       bool writable, tack_release_fn release,
                                       void *ctx, tack_array **out);
/* An array over buf from its first byte, for callers that already validated dtype
 * and shape and computed nelem (the DLPack import's hot path; array.c). Consumes the
 * caller's reference to buf on success; on failure the caller still holds it. */
tack_status tack__array_new(tack_buffer *buf, tack_dtype dtype, int32_t ndim,
                            const int64_t *shape, size_t nelem, bool writable,
                            tack_array **out);

/* Whether stream is one the consumer may pass for a DLPack device type (the Array
 * API's numbering; dlpack_stream.c). TACK_ERR_DLPACK_INVALID otherwise. */
tack_status tack__dlpack_stream_check(int32_t device_type, int64_t stream);

/* The row of dlpack_import.c's device table for a DLPack device type: the backend
 * that wraps its memory (borrowed: static) and whether that memory is host memory.
 * false, with the outputs untouched, for a type no backend imports. */
bool tack__dlpack_device_row(int32_t device_type, const char **backend,
                             bool *host_memory);

/* Whether tack_process_exiting was called (device.c). */
bool tack__process_exiting(void);

/* The backend table of that name, or NULL (device.c). Borrowed: static. */
const tack_backend *tack__backend_named(const char *name);

/* What the import learns from validating a foreign DLTensor (dlpack_import.c). */
typedef struct tack__dlpack_layout {
    tack_dtype dtype;
    size_t nelem;
    size_t itemsize;
    uintptr_t address;   /* data + byte_offset: the first element */
    bool contiguous;     /* C-contiguous by the relaxed rules (size-1, zero-size) */
    bool aligned;        /* address is a multiple of the scalar size */
    bool host_readable;  /* the CPU may read it (CPU, pinned and managed memory) */
    const char *backend; /* the backend that can wrap it: "cpu", "cuda", ... */
    /* Bytes reachable from address: [address + span_lo, address + span_hi), for a
     * copy that follows the strides; both 0 when nelem is 0. */
    int64_t span_lo, span_hi;
} tack__dlpack_layout;

/* Validates t (device type, ndim, shape, dtype, data, offset, strides) without
 * touching the memory it describes. Out: *out only on success. Errors: those of
 * tack_dlpack_import_versioned that do not concern the importing device. */
tack_status tack__dlpack_check(const DLTensor *t, tack__dlpack_layout *out);

/* ---- conversion (convert.c) ------------------------------------------------------ */

/* Element conversion is public: tack_convert() in dtype.h. */

float tack__half_to_float(uint16_t h);
uint16_t tack__float_to_half(float f);
/* Rounds to nearest even in one step (no double rounding through float). */
uint16_t tack__double_to_half(double d);

/* ---- kernels (kernel*.c, jit.c, hash.c, launch.c, thread_pool.c) ----------------- */

#include "tack/kernel.h"

/* The entry points take the launch's parameter block (kernel.h). */
typedef int64_t (*tack__trips_fn)(const void *params, tack_kernel_ctx *ctx);
typedef void (*tack__finish_fn)(const void *params, tack_kernel_ctx *ctx,
                                int64_t nchunks);
typedef void (*tack__body_fn)(int64_t begin, int64_t end, const void *params,
                              tack_kernel_ctx *ctx);

/* The device-neutral kernel object: what the runtime reads of any backend's kernel
 * (kernel.c). A backend's kernel_build makes it and fills every field; the object and
 * what it points to live until kernel_release (for the life of the process when the
 * backend has none). */
struct tack_kernel {
    const tack_backend *backend; /* Borrowed: the static table that built it */
    const char *name;          /* the kernel's Python name (Borrowed: the backend's) */
    const char *filename;      /* its Python file (Borrowed: the backend's) */
    int nparams;               /* parameters, and their key words (Borrowed: the */
    const uint32_t *param_key; /* backend's), which fix the parameter block */
    /* Borrowed: the backend's; nparams flags, non-zero where the kernel may store to
     * the parameter; NULL: it may store to every array parameter. */
    const unsigned char *param_stored;
    int result_kind; /* a tack_kernel_result_kind */
    void *impl;      /* the backend's own part (the CPU: tack__cpu_kernel) */
    /* Borrowed: the backend's; the files of funcs from other modules, which a
     * failure's line word names (TACK_KERNEL_LINE_FILE_SHIFT); nfiles may be 0. */
    const char *const *files;
    int nfiles;
};

/* The CPU backend's part of a kernel (jit.c builds it, launch.c runs it). */
typedef struct tack__cpu_kernel {
    tack_kernel pub; /* first: impl of pub points back here */
    char key[33];    /* hex of the 128-bit cache key */
    char *name;      /* Owned: the kernel's Python name */
    char *filename;  /* Owned: its Python file */
    char *source;    /* Owned: the generated C source */
    size_t source_len;
    void *handle; /* dlopen handle; never closed */
    tack__trips_fn trips;
    tack__body_fn body;
    tack__body_fn body_restrict; /* NULL when the kernel has none */
    tack__body_fn body_serial;   /* plain atomics for one thread; NULL: none */
    bool atomics;                /* the kernel (serial or not) has atomic updates */
    tack__finish_fn finish;      /* NULL when the kernel has none */
    int64_t partial_size;        /* bytes of reduction partials per chunk; 0: none */
    /* Estimated nanoseconds per outer-loop trip, times 256; 0 until measured. */
    _Atomic uint64_t trip_ns_q8;
    /* The trip counts at which a launch is worth the pool, worth timing when it runs
     * serially, and too long to keep the caller's lock: launch.c's thresholds
     * divided by trip_ns_q8, recomputed whenever launch.c stores an estimate, so
     * that a launch divides nothing. Read only while trip_ns_q8 is non-zero. */
    _Atomic uint64_t parallel_trips, timed_trips, short_trips;
    /* Serial launches far below the parallel threshold since the last timed one
     * (launch.c times only one in TIME_EVERY of them). */
    _Atomic uint32_t untimed;
    /* Whether the last launch was short enough to keep the caller's lock. */
    _Atomic bool last_short;
    struct tack__cpu_kernel *next; /* in jit.c's table */
} tack__cpu_kernel;

/* The CPU backend's kernel slots (backend.h): jit.c's build, launch.c's launch. */
tack_status tack__cpu_kernel_build_request(const tack_backend *self, const char *name,
                                           const char *filename,
                                           const tack_kernel_request *req,
                                           tack_kernel **out, char **log);
/* The CPU's build of C source (what its slot does with the request's source; a GPU
 * backend builds its twin with it). */
tack_status tack__cpu_kernel_build(const tack_backend *self, const char *name,
                                   const char *filename, const char *source,
                                   tack_kernel **out, char **log);
tack_status tack__cpu_kernel_launch(void *state, tack_kernel *k, const void *params,
                                    size_t params_nbytes, unsigned flags,
                                    tack_kernel_value *result);

/* The CPU launch's counters (launch.c counts, jit.c reports them in the stats). */
extern _Atomic uint64_t tack__stat_parallel, tack__stat_serial, tack__stat_restrict,
    tack__stat_plain_atomic, tack__stat_privatized;

/* A debug-mode kernel's first failure, as a launch recorded it (launch.c). */
typedef struct tack__kernel_failure {
    int failed;     /* 0: none, and the other fields are unset */
    int why;        /* a tack_kernel_failure */
    int line, axis; /* the kernel's source line; the axis of an index */
    int64_t index, extent;
    const char *name; /* the array's UTF-8 name (Borrowed: the kernel's), or NULL */
} tack__kernel_failure;

/* The error a failure raises: TACK_ERR_INDEX or TACK_ERR_ZERO_DIVISION with the
 * array, index, axis, extent, file and line, as every backend words it (kernel.c). */
tack_status tack__kernel_failure_status(const tack_kernel *k,
                                        const tack__kernel_failure *f);

/* Runs the CPU build kernel over a parameter block on this thread and the pool (the
 * CPU launch without its error): Out: *result on success; *failure always, with
 * failed set when the kernel stopped on a debug-mode check (still TACK_OK). Errors:
 * only the launch's own (no memory for the partials). */
/* The calling thread's lock (tack_kernel_set_caller_lock): release says whether it
 * was dropped, which reacquire is then given. */
bool tack__caller_lock_release(void);
void tack__caller_lock_reacquire(bool released);
tack_status tack__cpu_kernel_run(tack_kernel *kernel, const void *params,
                                 unsigned flags, tack_kernel_value *result,
                                 tack__kernel_failure *failure);

/* The trip count of the CPU build kernel's parallel loop over a parameter block
 * (only extents and scalars are read), with a context that records a debug-mode
 * failure of the setup: then the failure's status. Out: *trips only on success. */
tack_status tack__cpu_kernel_trips(tack_kernel *kernel, const void *params,
                                   int64_t *trips);

/* Builds with backend's kernel_build slot (kernel.c; tack_kernel_build_for looks the
 * backend up by its DLPack device type, tests pass their own tables). */
tack_status tack__kernel_build_with(const tack_backend *backend, const char *name,
                                    const char *filename,
                                    const tack_kernel_request *req, tack_kernel **out,
                                    char **log);

/* The backend table Tack was built with for a DLPack device type, or NULL (device.c).
 */
const tack_backend *tack__backend_for_dlpack_type(int dlpack_device_type);

/* Runs fn over [0, n) in chunks of chunk trips, on the pool's workers and the calling
 * thread together; returns when all have finished. Returns false, having run
 * nothing, when the pool is busy with another launch or has no workers: the caller
 * then runs the range itself. *caller_trips and *caller_ns say how much of the work
 * the calling thread did and how long it took (for the cost estimate). */
typedef void (*tack__pool_fn)(void *ctx, int64_t begin, int64_t end);
bool tack__pool_run(int64_t n, int64_t chunk, tack__pool_fn fn, void *ctx,
                    int64_t *caller_trips, uint64_t *caller_ns);
/* Threads a launch may use, the calling one included (>= 1). */
int tack__pool_threads(void);
/* Monotonic clock in nanoseconds. */
uint64_t tack__now_ns(void);

/* A 128-bit non-cryptographic hash (two FNV-1a lanes, finalised with a mixer;
 * hash.c).
 * Cache entries also store and compare the full source, so a collision can never
 * load the wrong kernel. */
typedef struct tack__hash {
    uint64_t a, b;
} tack__hash;
void tack__hash_init(tack__hash *h);
void tack__hash_update(tack__hash *h, const void *data, size_t nbytes);
void tack__hash_str(tack__hash *h, const char *s); /* includes the terminator */
/* Writes 32 hex digits and a terminator to out. */
void tack__hash_hex(const tack__hash *h, char out[33]);

/* The disk cache (kernel_cache.c). dir is the cache directory, made private. */
enum { TACK__PATH_CAP = 4096 };
/* snprintf into a path buffer; false (and an empty path) when it does not fit. */
bool tack__path(char *out, size_t cap, const char *fmt, ...) TACK__PRINTF(3, 4);
/* Finds or creates the cache directory ($TACK_CACHE_DIR, else $XDG_CACHE_HOME/tack,
 * else ~/.cache/tack): a directory Tack creates gets mode 0700; an existing one open
 * to others keeps its mode and the cache goes into a private tack-<uid> inside it.
 * Never changes the mode of a directory. Returns false when there is no usable one
 * (not ours, not private, cannot be created): compiles then go to a private
 * temporary directory and nothing persists; why (why_cap bytes) then says what was
 * wrong, or is empty when no location is configured at all (no HOME). */
bool tack__cache_dir(char *dir, size_t cap, char *why, size_t why_cap);
/* Removes the files in path, then path itself (a compile's temporary folder). */
void tack__remove_dir(const char *path);
/* Removes temporary entries (names containing ".tmp") of this user in dir that are
 * old enough to have been left by a killed process. */
void tack__cache_sweep(const char *dir);
typedef enum { TACK__ENTRY_MISSING, TACK__ENTRY_BAD, TACK__ENTRY_OK } tack__entry;
/* Checks dir/key.meta and dir/key.so: both regular files owned by this user and not
 * writable by others, the meta naming this exact source and the .so's size and hash.
 * On TACK__ENTRY_OK *fd is an open descriptor of the verified .so (close it after
 * loading). */
tack__entry tack__cache_lookup(const char *dir, const char *key, const char *source,
                               size_t source_len, int *fd);
/* Publishes a compiled object: writes dir/key.meta for source and so_path's bytes,
 * then renames so_path to dir/key.so and the meta into place (readers never see a
 * partial file). Returns 0, or the errno of the failure (a full or read-only disk),
 * which only loses the entry: the caller keeps its kernel, and no partial file is
 * left in dir. */
int tack__cache_commit(const char *dir, const char *key, const char *so_path,
                       const char *source, size_t source_len);
/* The same for an entry whose object file ends in ext (".cubin", ".ptx") instead of
 * ".so": the same meta file, trust rules and atomic publication. */
tack__entry tack__cache_lookup_ext(const char *dir, const char *key, const char *ext,
                                   const char *source, size_t source_len, int *fd);
int tack__cache_commit_ext(const char *dir, const char *key, const char *ext,
                           const char *so_path, const char *source, size_t source_len);
/* Reads size bytes of the open file fd into buf; false when the file is short. */
bool tack__cache_read(int fd, void *buf, size_t size);
/* Every word of the compile command except the source and object paths (the
 * compiler's words from $CC, the flags, the libraries), all of which key the cache.
 * Writes at most cap pointers to static or $CC-derived strings (valid until the next
 * call) and returns the count, or -1 when there is no compiler. For tests. */
int tack__jit_key_words(const char **words, int cap);

#endif /* TACK_INTERNAL_H */
