/*
 * kernel.h: compiled kernels, on any backend that runs them.
 *
 * The Python front end turns a @tack.kernel function into source for one
 * specialization (argument dtypes, ndims, scalar kinds, debug mode, backend). A
 * kernel belongs to the backend that built it: building dispatches on the backend
 * (tack_kernel_build_for), and so does launching (tack_kernel_launch_on), through
 * the backend table's kernel slots. The runtime packs every launch's parameter
 * block itself, whatever the backend. A backend without kernel slots runs no
 * kernels (TACK_ERR_UNSUPPORTED).
 *
 * The CPU backend compiles C source with the system C compiler into a shared
 * object, keeps it in a disk cache, loads it with dlopen and launches it over a
 * persistent thread pool. The rest of this comment is the CPU's object ABI.
 *
 * The generated-code ABI (version TACK_KERNEL_ABI). Every entry point takes the
 * launch's parameter block (tack_kernel_params_pack: the same by-value block a GPU
 * launch passes), which the runtime packs from the tack_kernel_args of a launch
 * using the kernel's own key words. Each shared object exports:
 *
 *   const int tack_kernel_abi;             equal to TACK_KERNEL_ABI
 *   const int tack_kernel_nparams;         its parameter count
 *   const uint32_t tack_kernel_param_key[];  the key word of each parameter
 *       (TACK_KERNEL_KEY_*), which fixes the block's layout
 *   int64_t tack_kernel_trips(const void *params, tack_kernel_ctx *ctx);
 *       the trip count of the parallel outer loop, or -1 for a serial kernel
 *   void tack_kernel_body(int64_t begin, int64_t end, const void *params,
 *                         tack_kernel_ctx *ctx);
 *       runs outer-loop iterations [begin, end); a serial kernel runs all of itself
 *       once when called with [0, 1)
 *
 * and may export
 *
 *   const unsigned char tack_kernel_param_stored[];  per parameter, 1 where the
 *       kernel may store to it (absent: it may store to every array parameter);
 *       tack_kernel_check_build compares it with a dispatcher's stored flags
 *   const int tack_kernel_result_kind;     a TACK_KERNEL_RESULT_* (absent: none); a
 *       serial kernel's body stores its returned value in ctx->result_i/result_f
 *   const int64_t tack_kernel_partial_size;  bytes of one chunk's reduction partials
 *       (absent or 0: none; at most TACK_KERNEL_MAX_PARTIAL_SIZE). The launch
 *       then cuts [0, trips) into fixed chunks of ctx->chunk trips (a function of
 *       the trip count alone, so results never depend on the thread count) and
 *       calls the body once per chunk; the body writes its partials to slot
 *       begin / chunk of ctx->partials
 *   void tack_kernel_finish(const void *params, tack_kernel_ctx *ctx,
 *                           int64_t nchunks);
 *       after the body: combines the partials in chunk order and stores the
 *       returned value (a parallel kernel with a return or a reduction)
 *
 *   void tack_kernel_body_serial(...);   the same signature and effect as
 *       tack_kernel_body, for a launch that runs every trip on one thread: its
 *       atomic updates are plain ones
 *
 *   void tack_kernel_body_restrict(...);   the same signature and effect as
 *       tack_kernel_body, compiled on the promise that no array the kernel stores
 *       to overlaps another array argument (its pointers are restrict); the launch
 *       calls it only when TACK_KERNEL_NOALIAS says the arguments keep that promise
 *
 * The body may run on several threads at once, each with its own [begin, end).
 * The generated code includes no Tack header: it declares the context struct below
 * and its parameter block itself, so their layouts are part of the ABI (the
 * context only grows at the end). ABI 2 added the context's last four fields, ABI 3
 * the parameter block. The context's privatized field came later without a new
 * version: a kernel that does not declare it never writes it.
 */
#ifndef TACK_KERNEL_H
#define TACK_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tack/array.h"
#include "tack/device.h"
#include "tack/export.h"
#include "tack/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TACK_KERNEL_ABI 3
/* The most parameters a kernel may have. */
#define TACK_KERNEL_MAX_PARAMS 64
/* The most bytes of one chunk's (or one GPU thread's) reduction partials, every
 * backend alike: the kernel compiler refuses a kernel whose reductions need more
 * (KernelError), and a loaded kernel that declares more is refused. */
#define TACK_KERNEL_MAX_PARTIAL_SIZE 4096
/* A failure's line (tack_kernel_ctx's fail, a CUDA failure record): the source line
 * in the low bits and, from this bit up, the 1-based index of the file in the
 * kernel's file table when the failing code is a func's from another module (0: the
 * kernel's own file). The CPU's table is `const char *const tack_kernel_files[]`
 * (NULL-terminated, optional); a CUDA module's is the first entries of its names. */
#define TACK_KERNEL_LINE_FILE_SHIFT 24
#define TACK_KERNEL_MAX_FILES 127

/* One launch argument, as a C host or the dispatcher gives it (the runtime packs
 * them into the kernel's parameter block). Arrays fill data and shape (Borrowed:
 * valid for the launch); int and bool scalars fill i, float scalars fill f. */
typedef struct tack_kernel_arg {
    void *data;
    const int64_t *shape;
    int64_t i;
    double f;
} tack_kernel_arg;

/* Why a debug-mode kernel stopped. */
typedef enum tack_kernel_failure {
    TACK_KERNEL_FAIL_INDEX = 1,        /* an index outside its axis */
    TACK_KERNEL_FAIL_ZERO_DIVISION = 2 /* integer // or % by zero */
} tack_kernel_failure;

/*
 * What generated code sees of a launch. failed becomes non-zero (read it with a
 * relaxed atomic load) once any thread called fail; a debug-mode body checks it
 * after every statement and returns. fail records the first failure only; name is
 * the array's parameter name (static storage in the shared object).
 */
typedef struct tack_kernel_ctx tack_kernel_ctx;
struct tack_kernel_ctx {
    int failed;
    void (*fail)(tack_kernel_ctx *ctx, int why, int line, int axis, int64_t index,
                 int64_t extent, const char *name);
    char *partials;   /* reduction partials, nchunks slots (see the ABI above) */
    int64_t chunk;    /* trips per chunk of a reduction kernel */
    int64_t result_i; /* a returned int or bool */
    double result_f;  /* a returned float */
    int privatized;   /* set by a chunk that updated private copies of arrays */
};

/* What a kernel returns. */
typedef enum tack_kernel_result_kind {
    TACK_KERNEL_RESULT_NONE = 0,
    TACK_KERNEL_RESULT_INT = 1,
    TACK_KERNEL_RESULT_FLOAT = 2,
    TACK_KERNEL_RESULT_BOOL = 3
} tack_kernel_result_kind;

typedef struct tack_kernel_value {
    tack_kernel_result_kind kind;
    int64_t i; /* INT and BOOL */
    double f;  /* FLOAT */
} tack_kernel_value;

/* A built specialization, of one backend. The CPU's are never unloaded: a pointer
 * stays valid for the life of the process, so launches on other threads never race
 * an unload. */
typedef struct tack_kernel tack_kernel;

/*
 * What a backend builds one specialization from: the kernel compiler's build
 * request (tack.kernel's emitters make it). The CPU reads source alone, C whose
 * object states its own launch facts, and refuses a twin. A GPU backend needs all of
 * it, and checks it once, when it builds: facts out of range or contradicting each
 * other, a names list that is not nnames non-empty strings, or a twin that returns
 * another kind of value are TACK_ERR_INVALID_ARGUMENT. Every pointer is Borrowed for
 * the call: the build copies what it keeps.
 */
typedef struct tack_kernel_request {
    const char *source;      /* the target's source, one translation unit (C for the
                                CPU, CUDA C++ for CUDA, OpenCL C for Level Zero) */
    const char *twin_source; /* GPU: the C source of the same specialization, built
                                by the CPU backend: it sizes grids on the host and is
                                the stand-in driver's twin. NULL for the CPU */
    int parallel;            /* 1: the outer loop runs on a grid; 0: on one thread */
    int host_trips;          /* 1: the trip count needs only extents and scalars */
    int needs_ctx;     /* 1: launches pass a record (reductions, returns, debug) */
    int restrict_body; /* 1: the source has tack_kernel_body_restrict */
    int partial_size;  /* bytes of one thread's reduction partials; 0: none */
    int result_kind;   /* a tack_kernel_result_kind */
    int nnames;        /* at most TACK_KERNEL_MAX_NAMES */
    const char *const *names; /* UTF-8: name n of a failure record is names[n]; the
                                 first are the kernel's file table */
    const void *image;        /* the target's binary image made from source, where the
                                 front end makes it (Level Zero: the SPIR-V module); NULL
                                 where the backend compiles source itself (CUDA, the CPU) */
    size_t image_nbytes;      /* bytes at image; 0 with a NULL image */
} tack_kernel_request;

/* The most names a build request may carry: more than a kernel's arrays could have. */
#define TACK_KERNEL_MAX_NAMES 4096

/*
 * Builds the specialization of request, generated for the backend of DLPack device
 * type dlpack_device_type (kDLCPU = 1, kDLCUDA = 2, ...), with that backend's
 * kernel_build slot. A type no backend of this build has, or a backend that runs no
 * kernels, is TACK_ERR_UNSUPPORTED naming it. Otherwise as tack_kernel_build, the
 * CPU's; a NULL request or source is TACK_ERR_INVALID_ARGUMENT.
 */
TACK_API tack_status tack_kernel_build_request(int dlpack_device_type, const char *name,
                                               const char *filename,
                                               const tack_kernel_request *request,
                                               tack_kernel **out, char **log);
/* tack_kernel_build_request with a request of source alone: enough for the CPU. */
TACK_API tack_status tack_kernel_build_for(int dlpack_device_type, const char *name,
                                           const char *filename, const char *source,
                                           tack_kernel **out, char **log);
/*
 * tack_kernel_build_for(kDLCPU, ...): builds (or finds in the memory table or the
 * disk cache) the shared object for C source and loads it. name and filename are used
 * in messages (the kernel's Python name and file). Thread-safe; compiles run one at a
 * time per process.
 *
 * When the compiler ran and failed (TACK_ERR_COMPILE), *log receives its command
 * line and output (release with tack_kernel_log_free()); otherwise *log is NULL and
 * tack_last_error() says what was wrong (no compiler, an unloadable object). A
 * failed build is never cached and nothing of it is ever loaded. Every pointer is
 * required: a NULL one is TACK_ERR_INVALID_ARGUMENT (*log is set to NULL first when
 * log itself is not NULL).
 * Out: *out (Borrowed: valid for the life of the process) only on success.
 */
TACK_API tack_status tack_kernel_build(const char *name, const char *filename,
                                       const char *source, tack_kernel **out,
                                       char **log);
TACK_API void tack_kernel_log_free(char *log);

/*
 * What the user should know about the kernel cache, once per process: set when the
 * cache folder cannot be used (not writable, full, not private to the user) and
 * kernels are compiled in a private temporary folder instead, so nothing is kept.
 * The first call after that happened returns the message; every other call returns
 * NULL. A binding checks it after tack_kernel_build and shows it as a warning.
 * Thread-safe. Borrowed: static storage, valid for the life of the process.
 */
TACK_API const char *tack_kernel_cache_notice(void);

/*
 * Whether a kernel that was given no debug mode of its own runs checked (bounds,
 * division by zero, casts; docs/kernels.md): the environment variable TACK_DEBUG
 * set to anything but "" or "0", read at each call so that a change takes effect
 * at the next launch. The one place the variable is read: tack_array_reclaim's
 * debug mode (docs/in_situ.md) asks it too.
 */
TACK_API bool tack_kernel_debug_default(void);

/*
 * Checks the arrays of one launch before anything runs: each must live on a device
 * whose backend runs kernels (has the kernel slots) and all in one memory domain
 * (TACK_ERR_DEVICE_MISMATCH); an array bound to
 * a parameter the kernel may store to must be writable (TACK_ERR_INVALID_ARGUMENT,
 * naming the kernel and the parameter). arrays[k] is NULL for a scalar parameter.
 * NULL kernel_name, or NULL arrays, param_names or stored when nparams > 0, and
 * nparams outside 0..TACK_KERNEL_MAX_PARAMS are TACK_ERR_INVALID_ARGUMENT.
 */
TACK_API tack_status tack_kernel_check_arrays(const char *kernel_name, int nparams,
                                              const tack_array *const *arrays,
                                              const char *const *param_names,
                                              const bool *stored);

/*
 * The specialization key: one word per argument, then the debug mode, then the
 * backend of the launch (the DLPack device type of its arrays' device: kDLCPU = 1
 * when there is no array). A dispatcher keeps one compiled kernel per key; two
 * launches with equal keys may share it, whatever their values and extents.
 */
enum {
    TACK_KERNEL_KEY_INT = 1,     /* a Python int (int64) */
    TACK_KERNEL_KEY_FLOAT = 2,   /* a Python float (float64) */
    TACK_KERNEL_KEY_BOOL = 3,    /* a bool */
    TACK_KERNEL_KEY_FLOAT32 = 4, /* a float32 scalar (kept as float32 in the kernel) */
    TACK_KERNEL_KEY_ARRAY = 0x10000 /* | dtype << 8 | ndim */
};
/* The key word of an array argument (0, the word of no argument, for NULL). */
TACK_API uint32_t tack_kernel_key_array(const tack_array *array);
/* Writes the two words after the arguments' words: tail[0] the debug mode, tail[1]
 * the backend of the first array (arrays[k] NULL for scalars; arrays NULL: no
 * arrays). A NULL tail writes nothing. */
TACK_API void tack_kernel_key_tail(int nparams, const tack_array *const *arrays,
                                   bool debug, uint32_t tail[2]);

/*
 * The by-value parameter block of one launch: what a GPU launch passes as its
 * kernel's only argument. For each parameter in order: an array's data pointer (8
 * bytes) and then its ndim extents (int64 each); a scalar's 8 bytes (an int64 for
 * int and bool keys, a double for float keys). Every field is 8 bytes, so the block
 * has no padding and its layout follows from the key alone (a generated kernel
 * declares the same struct). key: the nparams argument words of the key; a NULL
 * key has size 0, and pack with any NULL pointer writes nothing.
 */
TACK_API size_t tack_kernel_params_size(int nparams, const uint32_t *key);
/* Packs args into block (tack_kernel_params_size(nparams, key) bytes, 8-aligned). */
TACK_API void tack_kernel_params_pack(int nparams, const uint32_t *key,
                                      const tack_kernel_arg *args, void *block);

/*
 * Checks, before a dispatcher keeps or launches k for a call, that k is the build of
 * that call: key holds the call's nparams argument words and then the two words of
 * tack_kernel_key_tail. k must take nparams parameters with the same key words and
 * belong to the backend key names (a build of another signature or backend would
 * read and write past its arguments: TACK_ERR_BAD_TYPE); and stored[k], the flags
 * the dispatcher's read-only and restrict checks used, must say exactly which
 * parameters k may store to (TACK_ERR_INVALID_ARGUMENT: a hidden store would write
 * to a read-only array). The debug word is not a fact of the build and is not
 * compared. The messages name the kernel and the parameter. NULL k, kernel_name or
 * key, NULL param_names or stored with nparams > 0, and nparams outside
 * 0..TACK_KERNEL_MAX_PARAMS are TACK_ERR_INVALID_ARGUMENT.
 */
TACK_API tack_status tack_kernel_check_build(const tack_kernel *k,
                                             const char *kernel_name, int nparams,
                                             const char *const *param_names,
                                             const uint32_t *key, const bool *stored);

/*
 * Whether the arrays of one launch keep the promise of a restrict body: no array
 * bound to a parameter the kernel may store to shares a byte with another array
 * argument (the same array passed twice included). arrays[k] is NULL for a scalar;
 * empty arrays overlap nothing. Arrays that are only read may overlap freely.
 * NULL arrays or stored (with nparams > 0) promise nothing: false.
 */
TACK_API bool tack_kernel_args_disjoint(int nparams, const tack_array *const *arrays,
                                        const bool *stored);

/*
 * Checks that no array a parallel kernel reads before its loop (read_first[k]: in
 * the statements before the loop or in its range) shares a byte with another array
 * argument the kernel may store to (stored[j], j != k). Every chunk of the loop
 * (every GPU thread) reads those arrays again, so such an overlap would let it see
 * the loop's own stores, where Python reads them once: TACK_ERR_INVALID_ARGUMENT
 * naming the kernel and both parameters. Cheap when tack_kernel_args_disjoint is
 * true (nothing can overlap then). NULL kernel_name, or NULL arrays, param_names,
 * read_first or stored when nparams > 0, and nparams outside
 * 0..TACK_KERNEL_MAX_PARAMS are TACK_ERR_INVALID_ARGUMENT.
 */
TACK_API tack_status tack_kernel_check_read_first(const char *kernel_name, int nparams,
                                                  const tack_array *const *arrays,
                                                  const char *const *param_names,
                                                  const bool *read_first,
                                                  const bool *stored);

/* Launch flags. */
enum {
    /* the arguments keep the promise of tack_kernel_body_restrict (checked with
     * tack_kernel_args_disjoint): use that body when the kernel has one */
    TACK_KERNEL_NOALIAS = 1u << 0,
    /* an argument's buffer is shared with another library (TACK_BUFFER_SHARED,
     * tack_kernel_args_shared): a backend that queues launches completes this one
     * before returning */
    TACK_KERNEL_SHARED = 1u << 1
};

/* Whether any array of a launch has a shared buffer (NULL entries are scalars). */
TACK_API bool tack_kernel_args_shared(int nparams, const tack_array *const *arrays);

/*
 * Runs a kernel with its backend's kernel_launch slot, on no particular device (see
 * tack_kernel_launch_on). On the CPU the trip count of its parallel loop is split
 * over the thread pool, a small one (or a serial kernel) runs on the calling thread.
 * Returns when every iteration has finished. Errors (debug mode): TACK_ERR_INDEX,
 * TACK_ERR_ZERO_DIVISION with the array, index, file and line in the message. A NULL k,
 * or NULL args for a kernel with parameters, is TACK_ERR_INVALID_ARGUMENT.
 */
TACK_API tack_status tack_kernel_launch(tack_kernel *k, const tack_kernel_arg *args);
/* tack_kernel_launch with flags (TACK_KERNEL_NOALIAS) and the returned value.
 * Out: *result (may be NULL), set only on success. */
TACK_API tack_status tack_kernel_launch_ex(tack_kernel *k, const tack_kernel_arg *args,
                                           unsigned flags, tack_kernel_value *result);

/*
 * tack_kernel_launch_ex on a device: device NULL, or one of the kernel's backend
 * (another backend's device is TACK_ERR_DEVICE_MISMATCH). The backend's
 * kernel_launch slot runs it (absent: TACK_ERR_UNSUPPORTED); a GPU backend needs
 * the device, the CPU does not. A GPU backend queues the launch on its stream and
 * returns (host reads of the arrays wait for it), except with TACK_KERNEL_SHARED:
 * then the launch has completed when this returns. tack_kernel_launch_ex is this
 * with device NULL.
 */
TACK_API tack_status tack_kernel_launch_on(tack_device *device, tack_kernel *k,
                                           const tack_kernel_arg *args, unsigned flags,
                                           tack_kernel_value *result);

/*
 * A lock the calling thread holds while it launches and that other threads may wait
 * for (Python's GIL). Launches drop it (release, then reacquire before they return)
 * around any work that may take long: a GPU backend's launch, a CPU launch that uses
 * the thread pool, or one of unknown cost. A CPU launch its cost estimate puts under
 * TACK_KERNEL_SHORT_LAUNCH_NS of serial work runs with the lock held, which saves
 * the release and reacquire (a quarter of a 16-element launch from Python). The
 * lock is this thread's, for its launches until it is set again; NULL: none. The
 * struct is borrowed: it must outlive those launches.
 */
#define TACK_KERNEL_SHORT_LAUNCH_NS 5000
typedef struct tack_kernel_lock {
    void (*release)(void *ctx);
    void (*reacquire)(void *ctx);
    void *ctx;
} tack_kernel_lock;
TACK_API void tack_kernel_set_caller_lock(const tack_kernel_lock *lock);

/*
 * tack_kernel_launch_on ordered against another library's stream, which takes
 * DLPack's values for the device (tack_array_to_device_on_stream's): -1 orders
 * nothing; on CUDA 1 is the legacy default stream, 2 the per-thread default stream
 * and a larger value a CUstream of the device's context. Tack's stream waits for the
 * work queued on `stream` so far, the launch is queued, and `stream` waits for the
 * launch (an event each way: the host does not block). On the CPU (or device NULL)
 * only -1 is accepted. Errors: TACK_ERR_DLPACK_INVALID for a value that is no stream
 * of the device, before anything is queued; those of tack_kernel_launch_on.
 */
TACK_API tack_status tack_kernel_launch_on_stream(tack_device *device, tack_kernel *k,
                                                  const tack_kernel_arg *args,
                                                  unsigned flags, int64_t stream,
                                                  tack_kernel_value *result);

/* The DLPack device type of the backend a kernel belongs to (kDLCPU = 1 ...); 0 for
 * NULL. */
TACK_API int tack_kernel_dlpack_type(const tack_kernel *k);

/* Frees a kernel with its backend's kernel_release slot. Kernels of a backend
 * without one (the CPU) live for the life of the process: nothing happens. NULL
 * does nothing. The kernel must not be launched again. */
TACK_API void tack_kernel_release(tack_kernel *k);

/* Counters for tests and benchmarks (process-wide, since start). */
typedef struct tack_kernel_stats {
    uint64_t compiles;    /* runs of the C compiler */
    uint64_t disk_hits;   /* shared objects loaded from the disk cache */
    uint64_t memory_hits; /* builds answered by the in-process table */
    uint64_t rebuilds;    /* cache entries ignored as corrupt or foreign */
    uint64_t failures;    /* failed compiles */
    uint64_t parallel_launches;
    uint64_t serial_launches;
    uint64_t restrict_launches; /* launches that ran a restrict body */
    /* launches of a kernel with atomics that ran on one thread with plain updates */
    uint64_t plain_atomic_launches;
    /* parallel launches in which a chunk updated private copies of arrays */
    uint64_t privatized_launches;
} tack_kernel_stats;
/* A NULL out does nothing. */
TACK_API void tack_kernel_get_stats(tack_kernel_stats *out);

/* The thread count of the pool: TACK_NUM_THREADS when set (>= 1), else the CPUs this
 * process may run on. Read once, at the first parallel launch. */
TACK_API int tack_kernel_num_threads(void);

#ifdef __cplusplus
}
#endif

#endif /* TACK_KERNEL_H */
