/*
 * kernel.h: compiled kernels on the CPU.
 *
 * The Python front end turns a @tack.kernel function into C source for one
 * specialization (argument dtypes, ndims, scalar kinds). The runtime compiles that
 * source with the system C compiler into a shared object, keeps it in a disk cache,
 * loads it with dlopen and launches it over a persistent thread pool.
 *
 * The generated-code ABI (version TACK_KERNEL_ABI). Each shared object exports:
 *
 *   const int tack_kernel_abi;             equal to TACK_KERNEL_ABI
 *   int64_t tack_kernel_trips(const tack_kernel_arg *args, tack_kernel_ctx *ctx);
 *       the trip count of the parallel outer loop, or -1 for a serial kernel
 *   void tack_kernel_body(int64_t begin, int64_t end, const tack_kernel_arg *args,
 *                         tack_kernel_ctx *ctx);
 *       runs outer-loop iterations [begin, end); a serial kernel runs all of itself
 *       once when called with [0, 1)
 *
 * The body may run on several threads at once, each with its own [begin, end).
 * The generated code includes no Tack header: it declares the two structs below
 * itself, so their layout is part of the ABI and only grows at the end.
 */
#ifndef TACK_KERNEL_H
#define TACK_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tack/array.h"
#include "tack/export.h"
#include "tack/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TACK_KERNEL_ABI 1
/* The most parameters a kernel may have. */
#define TACK_KERNEL_MAX_PARAMS 64

/* One launch argument. Arrays fill data and shape (Borrowed: valid for the launch);
 * int and bool scalars fill i, float scalars fill f. */
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
};

/* A loaded specialization. Kernels are never unloaded: a pointer stays valid for the
 * life of the process, so launches on other threads never race an unload. */
typedef struct tack_kernel tack_kernel;

/*
 * Builds (or finds in the memory table or the disk cache) the shared object for
 * source and loads it. name and filename are used in messages (the kernel's Python
 * name and file). Thread-safe; compiles run one at a time per process.
 *
 * When the compiler ran and failed (TACK_ERR_COMPILE), *log receives its command
 * line and output (release with tack_kernel_log_free()); otherwise *log is NULL and
 * tack_last_error() says what was wrong (no compiler, an unloadable object). A
 * failed build is never cached and nothing of it is ever loaded.
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
 * Checks the arrays of one launch before anything runs: each must live on a CPU
 * device and all in one memory domain (TACK_ERR_DEVICE_MISMATCH); an array bound to
 * a parameter the kernel may store to must be writable (TACK_ERR_INVALID_ARGUMENT,
 * naming the kernel and the parameter). arrays[k] is NULL for a scalar parameter.
 */
TACK_API tack_status tack_kernel_check_arrays(const char *kernel_name, int nparams,
                                              const tack_array *const *arrays,
                                              const char *const *param_names,
                                              const bool *stored);

/*
 * Runs a kernel: the trip count of its parallel loop is split over the thread pool,
 * a small one (or a serial kernel) runs on the calling thread. Returns when every
 * iteration has finished. Errors (debug mode): TACK_ERR_INDEX, TACK_ERR_ZERO_DIVISION
 * with the array, index, file and line in the message.
 */
TACK_API tack_status tack_kernel_launch(tack_kernel *k, const tack_kernel_arg *args);

/* Counters for tests and benchmarks (process-wide, since start). */
typedef struct tack_kernel_stats {
    uint64_t compiles;    /* runs of the C compiler */
    uint64_t disk_hits;   /* shared objects loaded from the disk cache */
    uint64_t memory_hits; /* builds answered by the in-process table */
    uint64_t rebuilds;    /* cache entries ignored as corrupt or foreign */
    uint64_t failures;    /* failed compiles */
    uint64_t parallel_launches;
    uint64_t serial_launches;
} tack_kernel_stats;
TACK_API void tack_kernel_get_stats(tack_kernel_stats *out);

/* The thread count of the pool: TACK_NUM_THREADS when set (>= 1), else the CPUs this
 * process may run on. Read once, at the first parallel launch. */
TACK_API int tack_kernel_num_threads(void);

#ifdef __cplusplus
}
#endif

#endif /* TACK_KERNEL_H */
