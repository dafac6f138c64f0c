/*
 * gpu_kernel.h: what the kernel files of the GPU layer share (docs/kernels.md,
 * "Kernels on CUDA"). Every CUDA-like backend builds and launches its kernels with
 * them; only the driver table they call is the backend's.
 *
 * gpu_build_request.c  the build: the front end's request (tack_kernel_request)
 *                      checked once, its twin built by the CPU backend
 * gpu_twin.c           the stand-in driver's CPU twins (gpu_twin.h is their ABI)
 * gpu_module_cache.c   per context: the runtime compiler's image, loaded, with its
 *                      entry points and the launch shape that fills the device
 * gpu_kernel_launch.c  a launch, with and without a record
 *
 * A kernel's target part is compiled at its first launch on a context (a binary for
 * the device's own architecture, or portable code for the highest one the compiler
 * knows below it: tack_rtc_choose), loaded and kept per context for the life of the
 * process. Its C part, built with the kernel, serves twice: its tack_kernel_trips
 * sizes the grid on the host when the trip count needs only extents and scalars, and
 * under the stand-in driver it is the twin that computes the launch. What differs by
 * vendor (the compiler, the architecture's spelling, which images a driver loads, the
 * words of messages) is the driver's table and its tack__gpu_vendor.
 */
#ifndef TACK_GPU_KERNEL_H
#define TACK_GPU_KERNEL_H

#include <pthread.h>

#include "gpu_internal.h"

/* Body launches of one kernel whose finish the stand-in's twin awaits. */
#define TACK__GPU_TWIN_SLOTS 64

/* The launch record in device memory: emit_cuda.py's tk_ctx, field for field. */
typedef struct tack__gpu_record {
    int32_t failed, claimed, why, line, axis, name;
    int64_t index, extent;
    uint64_t partials; /* device address of grid * partial_size bytes, or 0 */
    int64_t result_i;
    double result_f;
} tack__gpu_record;
_Static_assert(sizeof(tack__gpu_record) == 64, "emit_cuda.py's CTX_SIZE");
_Static_assert(offsetof(tack__gpu_record, index) == 24 &&
                   offsetof(tack__gpu_record, partials) == 40 &&
                   offsetof(tack__gpu_record, result_f) == 56,
               "emit_cuda.py's tk_ctx layout");

/* An entry point of a loaded module and its launch shape. */
typedef struct tack__gpu_entry {
    tack__gpu_function fn; /* NULL when the kernel has no such entry */
    unsigned block;        /* threads per block: the occupancy API's, or a fixed 256 */
    unsigned grid;         /* blocks of that size that fill the device */
} tack__gpu_entry;

/* One context's loaded module of a kernel. */
typedef struct tack__gpu_context_module {
    tack__gpu_context ctx;
    const void *device; /* Level Zero: the device it was made for (a context may hold
                           several); NULL for CUDA, whose context is one device's */
    tack__gpu_module mod;
    tack__gpu_entry body, body_restrict;
    tack__gpu_function
        finish; /* NULL unless the kernel reduces or returns in parallel */
    struct tack__gpu_context_module *next;
} tack__gpu_context_module;

/* A kernel of a GPU backend. Every field but modules and the twins' is set by the
 * build and never changes. */
typedef struct tack__gpu_kernel {
    tack_kernel pub;      /* impl points back here */
    tack_kernel *cpu;     /* Borrowed: the CPU build of the same plan (kept for life) */
    char *source;         /* Owned: the target's source (CUDA C++ for CUDA) */
    unsigned char *image; /* Owned: the request's binary image (Level Zero's SPIR-V),
                             or NULL where the backend compiles source */
    size_t image_nbytes;
    int parallel, host_trips, needs_ctx, restrict_body;
    int partial_size; /* bytes of one block's reduction partials; 0: none */
    int nnames;
    char **names;         /* Owned: UTF-8; a record's name is an index into them */
    pthread_mutex_t lock; /* guards modules */
    tack__gpu_context_module
        *modules; /* Owned: never unloaded (kernels live for the process) */
    /* The stand-in's twins (run one at a time, under its lock): the records of
     * body launches whose finish has not run yet, with the nblocks it must pass.
     * Every launch with a record waits for it before returning, so at most one
     * per launching thread is pending; the oldest slot is reused. */
    struct {
        uint64_t record; /* 0: free */
        int64_t nblocks;
    } twin_pending[TACK__GPU_TWIN_SLOTS];
    unsigned twin_next;
} tack__gpu_kernel;

/* The nblocks of a launch's tack_kernel_finish: the body's grid when it left
 * partials; 0 when it ran no block or the kernel returns without reducing. */
static inline int64_t
tack__gpu_finish_blocks(const tack__gpu_kernel *k, int64_t trips, unsigned grid)
{
    return k->partial_size > 0 && trips != 0 ? (int64_t)grid : 0;
}

/* Whether a launch of k ends with tack_kernel_finish: a parallel kernel that
 * reduces or returns a value. */
static inline bool
tack__gpu_needs_finish(const tack__gpu_kernel *k)
{
    return k->parallel && (k->partial_size > 0 || k->pub.result_kind);
}

/* ---- the backend's kernel slots (backend.h) ------------------------------------ */

tack_status tack__gpu_kernel_build(const tack_backend *self, const char *name,
                                   const char *filename, const tack_kernel_request *req,
                                   tack_kernel **out, char **log);
tack_status tack__gpu_kernel_launch(void *state, tack_kernel *kernel,
                                    const void *params, size_t params_nbytes,
                                    unsigned flags, tack_kernel_value *result);

/* ---- the stand-in's twins (gpu_twin.c) ------------------------------------------ */

/* The twins of tack_kernel_body (and _restrict) and of tack_kernel_finish, with
 * user the tack__gpu_kernel. */
int tack__gpu_twin_body(const tack_standin_launch *l, void *user);
int tack__gpu_twin_finish(const tack_standin_launch *l, void *user);

/* What a launch's record says, read back: the returned value into *result, or the
 * failure it recorded as the CPU words it (checked: device memory the kernel wrote).
 * (gpu_kernel_launch.c) */
tack_status tack__gpu_read_record(const tack__gpu_kernel *k, const tack__gpu_record *r,
                                  tack_kernel_value *result);

/* A launch's trips as the host knows them (gpu_kernel_launch.c): -1 when the grid
 * must fill the device, else at least 0, with *nothing true when the launch has
 * nothing to run (no trip, and no finish to give a value: *result is then the
 * launch's, no value). A debug-mode setup may fail here. */
tack_status tack__gpu_launch_trips(const tack__gpu_kernel *k, const void *params,
                                   int64_t *trips, bool *nothing,
                                   tack_kernel_value *result);

/* The body entry a launch runs: the restrict one when flags say the arrays do not
 * alias and the module has it, else the plain one; *name is its entry point's name. */
const tack__gpu_entry *tack__gpu_body_entry(const tack__gpu_context_module *m,
                                            unsigned flags, const char **name);

/* The grid and block of a launch of entry e for trips (tack__gpu_launch_trips'):
 * one thread for a serial kernel; for a parallel one e's shape, fewer blocks when
 * the trips need fewer. */
void tack__gpu_launch_shape(const tack__gpu_kernel *k, const tack__gpu_entry *e,
                            int64_t trips, unsigned *grid, unsigned *block);

/* The most threads (work items) a block (group) of k may have on a device with
 * shared_nbytes of shared (local) memory per block and at most max_block threads:
 * max_block for a kernel without reductions; for one with, as many as hold their
 * partial_size bytes each, at most max_block, a multiple of 32 where that is at least
 * 32. A kernel one thread of which needs more than shared_nbytes is
 * TACK_ERR_UNSUPPORTED, naming the size and shared_name (the vendor's word for
 * shared_nbytes). Out: *out, at least 1, only on success. */
tack_status tack__gpu_block_limit(const tack__gpu_kernel *k, uint64_t shared_nbytes,
                                  unsigned max_block, const char *shared_name,
                                  unsigned *out);

/* tack__gpu_twin_begin with the stand-in's registry given: reg, or NULL on a real
 * driver (then nothing is taken and *held is false). */
tack_status tack__gpu_twin_register(tack_standin_register_twin_fn reg,
                                    const char *entry, tack_standin_twin_fn twin,
                                    tack__gpu_kernel *k, bool *held);

/* Before queuing entry on s: under the stand-in, takes the lock that keeps a twin's
 * registration and its launch together and registers twin for entry. *held says
 * whether the lock was taken (also when the registration failed, for want of
 * memory): release it with tack__gpu_twin_end once the launch is queued. */
tack_status tack__gpu_twin_begin(const tack__gpu_state *s, const char *entry,
                                 tack_standin_twin_fn twin, tack__gpu_kernel *k,
                                 bool *held);
void tack__gpu_twin_end(bool held);

/* Under the stand-in, hands it the target source of k's module mod, which its
 * emulated launches (TACK_STANDIN_EXEC=emulate) compile for the host and run; on
 * a real driver nothing. Inside a guard. */
tack_status tack__gpu_twin_give_source(tack__gpu_state *s, const tack__gpu_kernel *k,
                                       tack__gpu_module mod);

/* ---- modules (gpu_module_cache.c) ----------------------------------------------- */

/* The module of k on s's context, compiled and loaded at its first launch there.
 * Inside a guard. Out: *out (Borrowed: lives as long as k) only on success. */
tack_status tack__gpu_module_of(tack__gpu_kernel *k, tack__gpu_state *s,
                                const tack__gpu_context_module **out);

#endif /* TACK_GPU_KERNEL_H */
