/*
 * standin.h: the internals shared by the files of the strict stand-in CUDA driver
 * (libtack_standin_cuda.so). docs/cuda.md describes what it models and why; in short:
 *
 * - Device memory is one memfd mapped twice: the device view, whose addresses are
 * handed out, is PROT_NONE for the life of the process, so a host dereference of a
 * device pointer faults at once; the alias is read-write and only the stand-in touches
 * it.
 * - Pool addresses are reused once freed (as the driver's pools reuse them), and each
 *   allocation is a record of its own, so work queued for the old one still faults.
 *   Other addresses come from bump allocators. New memory is filled with 0xA5.
 * - Asynchronous work (copies, memsets, launches, frees) is queued per stream and only
 *   runs at a synchronization point, so a missing synchronization reads stale bytes.
 *   Which work is ordered before which is tracked across streams (standin_order.c),
 *   so memory used on a stream not ordered after its stream-ordered allocation, or
 *   racing its stream-ordered free, faults.
 * - Every call is checked as the driver documents it, and where the documentation
 *   leaves room the stand-in takes the stricter reading (marked "stricter" in
 * comments).
 *
 * Locking: one process-wide mutex (standin_lock) serialises every entry point; the
 * functions declared here expect it held unless they say otherwise.
 */
#ifndef TACK_STANDIN_CUDA_H
#define TACK_STANDIN_CUDA_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../../csrc/backends/cuda/cuda_abi.h"
#include "standin_twin.h"

/* The exported entry points carry cuda.h's names; hidden everything else. */
#define STANDIN_EXPORT __attribute__((visibility("default")))

#define STANDIN_DRIVER_VERSION 13000 /* cuDriverGetVersion */
#define STANDIN_MAX_DEVICES 8
#define STANDIN_ALLOC_ALIGN 256u                 /* cuMemAlloc's documented alignment */
#define STANDIN_GRANULARITY ((size_t)2 << 20)    /* VMM minimum and recommended */
#define STANDIN_DEFAULT_MEMORY ((size_t)8 << 30) /* pool bytes per process */
#define STANDIN_VMM_VA ((size_t)16 << 30)        /* VMM address space per process */
#define STANDIN_FILL 0xA5                        /* contents of new memory */

/* Every entry point the stand-in exports, declared from cuda_abi.h's list, so the
 * compiler checks each definition against the ABI Tack pins. */
#define STANDIN_DECLARE(name, symbol, version) STANDIN_EXPORT tcu_fn_##name symbol;
TCU_ENTRY_POINTS(STANDIN_DECLARE)
TCU_TEST_ENTRY_POINTS(STANDIN_DECLARE)
#undef STANDIN_DECLARE
STANDIN_EXPORT int tack_standin_cuda_register_twin(const char *entry,
                                                   tack_standin_twin_fn fn, void *user);
STANDIN_EXPORT int tack_standin_cuda_module_source(struct CUmod_st *module,
                                                   const char *cuda_source);
/* Tears the driver down now, as it is at process exit (docs/cuda.md): every later
 * call returns CUDA_ERROR_DEINITIALIZED. A test hook: not part of the CUDA API. */
STANDIN_EXPORT void tack_standin_cuda_teardown(void);

/* ---- contexts, streams, events --------------------------------------------------- */

struct standin_op;

/* ---- ordering across streams (standin_order.c) ---------------------------------- */

/* For each stream, the newest sequence number of its work certain to run first. */
typedef struct standin_clock {
    struct standin_tick {
        struct CUstream_st *stream;
        uint64_t seq;
    } * ticks;
    size_t n, cap;
    bool everything; /* out of memory while growing: ordered after everything */
} standin_clock;

/* Where a queued operation stands: its stream, its sequence number, and what it is
 * ordered after on other streams. */
typedef struct standin_stamp {
    struct CUstream_st *stream;
    uint64_t seq;
    standin_clock after;
} standin_stamp;

uint64_t standin_clock_get(const standin_clock *c, const struct CUstream_st *s);
/* Raises c's entry for s to at least seq. */
void standin_clock_tick(standin_clock *c, struct CUstream_st *s, uint64_t seq);
void standin_clock_merge(standin_clock *into, const standin_clock *from);
void standin_clock_copy(standin_clock *to, const standin_clock *from);
void standin_clock_free(standin_clock *c);
/* Whether the operation stamped `use` is certain to run after s's work up to seq. */
bool standin_ordered_after(const standin_stamp *use, const struct CUstream_st *s,
                           uint64_t seq);

struct CUctx_st {
    int device;
    bool primary;
    bool alive;
    tcu_result sticky; /* 0, or the error every later call on this context returns */
    struct CUstream_st *legacy; /* the NULL / CU_STREAM_LEGACY stream */
    struct CUctx_st *next; /* every context ever made (handles stay recognisable) */
};

struct CUstream_st {
    struct CUctx_st *ctx;
    unsigned flags; /* TCU_STREAM_DEFAULT (blocking) or TCU_STREAM_NON_BLOCKING */
    bool alive;
    bool legacy;     /* the context's NULL stream */
    bool per_thread; /* a CU_STREAM_PER_THREAD stream, owned by `owner` */
    pthread_t owner;
    struct standin_op *head, *tail; /* pending work, oldest first */
    uint64_t last_seq;              /* sequence number of the newest queued operation */
    int queries;         /* cuStreamQuery calls that found this queue pending */
    standin_clock clock; /* what the next operation queued here is ordered after */
    struct CUstream_st *next;
};

struct CUevent_st {
    struct CUctx_st *ctx;
    bool alive;
    struct CUstream_st *stream; /* where it was last recorded; NULL if never */
    uint64_t seq;               /* complete once `stream` ran past this sequence */
    standin_clock clock;        /* what a wait on it orders after, `stream` included */
    int queries;
    struct CUevent_st *next;
};

/* ---- memory ---------------------------------------------------------------------- */

enum standin_alloc_kind {
    ALLOC_PLAIN,
    ALLOC_ASYNC,
    ALLOC_VMM,
    ALLOC_MANAGED,
    ALLOC_PINNED /* page-locked host memory (standin_host.c) */
};

/* One device allocation (cuMemAlloc, cuMemAllocAsync), one VMM mapping, or one managed
 * allocation (cuMemAllocManaged: host memory the host may read and write, alias ==
 * base). Kept after it is freed, so a later use is recognised as a use after free,
 * and work queued for it still knows it when a new allocation reuses its address. */
typedef struct standin_alloc {
    uintptr_t base;
    size_t nbytes;
    size_t capacity;                  /* pool blocks: the bytes reserved at base */
    struct standin_alloc *older;      /* the previous allocation at this block */
    uint64_t born;                    /* the newest sequence number when it was made */
    struct CUstream_st *alloc_stream; /* cuMemAllocAsync: usable in its stream order */
    uint64_t alloc_seq;               /* ... after this operation of alloc_stream */
    uint64_t ready_at;    /* 0, or the newest sequence number when alloc_seq ran */
    unsigned char *alias; /* where the stand-in reads and writes these bytes */
    struct CUctx_st *ctx;
    int device;
    enum standin_alloc_kind kind;
    bool freed;
    bool host_owned;   /* ALLOC_PINNED: from cuMemHostAlloc (else registered) */
    bool free_pending; /* a cuMemFreeAsync is queued: no new work may use it */
    struct CUstream_st *free_stream; /* the stream that free is queued on */
    const standin_stamp *free_stamp; /* the queued free's stamp; NULL once gone */
    uint64_t buffer_id;
    struct standin_vmm_handle *vmm; /* ALLOC_VMM: the physical allocation mapped */
    uintptr_t reservation;          /* ALLOC_VMM: start of the reserved range */
    size_t reservation_size;
    unsigned
        access[STANDIN_MAX_DEVICES]; /* ALLOC_VMM: TCU_MEM_ACCESS_FLAGS_* by device */
} standin_alloc;

/* A device range checked for an operation: where its bytes live on the host side. */
typedef struct standin_range {
    standin_alloc *alloc;
    unsigned char *alias;
    bool faults; /* a VMM mapping without the needed access: the device faults */
} standin_range;

/* ---- queued operations ----------------------------------------------------------- */

enum standin_op_kind {
    OP_COPY,
    OP_MEMSET,
    OP_WAIT,
    OP_FREE,
    OP_LAUNCH,
    OP_FAULT,
    OP_ALLOC /* a cuMemAllocAsync: the memory is usable after it in stream order */
};

typedef struct standin_op {
    enum standin_op_kind kind;
    uint64_t seq;
    unsigned char *dst;
    const unsigned char *src;
    size_t nbytes;
    uint32_t pattern; /* OP_MEMSET: value, `width` bytes wide, `count` times */
    unsigned width;
    size_t count;
    struct CUstream_st *wait_stream; /* OP_WAIT: run wait_stream up to wait_seq */
    uint64_t wait_seq;
    standin_alloc *alloc;     /* OP_FREE, OP_ALLOC */
    standin_alloc *dst_alloc; /* OP_COPY, OP_MEMSET: the device sides, or NULL */
    standin_alloc *src_alloc;
    struct standin_launch_op *launch; /* OP_LAUNCH, owned by the op */
    standin_stamp stamp;              /* set when queued, for work that uses memory */
    struct standin_op *next;
} standin_op;

/* ---- global state ---------------------------------------------------------------- */

typedef struct standin_state {
    bool initialized;
    pid_t init_pid; /* the process that called cuInit */
    /* The driver has been torn down (process exit, or tack_standin_cuda_teardown):
     * every later call but the version and error-name queries is DEINITIALIZED. Set
     * without the lock at exit, so it is atomic. */
    _Atomic bool torn_down;
    int ndevices;
    int driver_version; /* cuDriverGetVersion: TACK_STANDIN_DRIVER_VERSION, or 13000 */
    bool eager;         /* TACK_STANDIN_ASYNC=eager: run work when queued */
    bool emulate;       /* TACK_STANDIN_EXEC=emulate: launches run the module's code */
    bool exec_unknown;  /* TACK_STANDIN_EXEC names no mode: cuInit refuses */
    int log_fd;         /* TACK_STANDIN_LOG, or -1 */
    struct CUctx_st *primary[STANDIN_MAX_DEVICES];
    int primary_retains[STANDIN_MAX_DEVICES];
    struct CUctx_st *contexts;
    struct CUstream_st *streams;
    struct CUevent_st *events;
    uint64_t next_seq;
    uint64_t next_buffer_id;
} standin_state;

extern standin_state standin;
extern pthread_mutex_t standin_lock;

/* ---- standin_core.c -------------------------------------------------------------- */

/*
 * The prologue of every entry point: takes the lock, counts the call for fault
 * injection, and checks initialization. Returns TCU_SUCCESS with the lock held, or the
 * error to return (the lock is still held: every path ends with standin_leave).
 */
tcu_result standin_enter(const char *name);
/* Logs the call (when TACK_STANDIN_LOG is set) and releases the lock. Returns rc. */
tcu_result standin_leave(tcu_result rc, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The calling thread's current context, checked alive and not poisoned. */
tcu_result standin_current(struct CUctx_st **out);
/* A stream handle as the caller passed it (NULL, the special handles, or a stream)
 * resolved in ctx. INVALID_HANDLE for a stream of another context or a destroyed one.
 */
tcu_result standin_stream(struct CUctx_st *ctx, tcu_stream handle,
                          struct CUstream_st **out);
/* A context handle looked up among those ever made (an unknown pointer is never
 * dereferenced), or NULL. */
struct CUctx_st *standin_known_context(tcu_context handle);
/* Marks ctx unusable: every later call on it returns rc (a sticky error). */
void standin_poison(struct CUctx_st *ctx, tcu_result rc);
struct CUstream_st *standin_stream_new(struct CUctx_st *ctx, unsigned flags);
bool standin_device_ok(tcu_device dev);

/* ---- standin_memory.c ------------------------------------------------------------ */

/* Maps the device view and its alias on first use. */
tcu_result standin_memory_init(void);
/* The device memory of the process (TACK_STANDIN_MEMORY, rounded to the granularity).
 */
size_t standin_memory_total(void);
/* The live allocation containing [ptr, ptr + nbytes), usable from ctx for reading
 * (write false) or writing. INVALID_VALUE if there is none. */
tcu_result standin_device_range(struct CUctx_st *ctx, tcu_deviceptr ptr, size_t nbytes,
                                bool write, standin_range *out);
/* The allocation whose range contains addr (live or freed), or NULL. */
standin_alloc *standin_alloc_find(uintptr_t addr);
/* True when [p, p + nbytes) overlaps the device view (a device address used as host).
 */
bool standin_in_device_view(const void *p, size_t nbytes);
/* The newest live managed or page-locked range overlapping [p, p + nbytes), or NULL.
 */
const standin_alloc *standin_host_overlapping(const void *p, size_t nbytes);
/* Marks an allocation freed and gives its pages back. */
void standin_alloc_release(standin_alloc *a);
/* Host view of an address for the CPU twin of a launch stamped `use` (see
 * standin_twin.h), or NULL: not one live allocation the launch may use. */
void *standin_queued_translate(struct CUctx_st *ctx, const standin_stamp *use,
                               uint64_t device_address, size_t nbytes);
/* Whether queued work stamped `use` may touch a (an allocation it named when queued)
 * now that it runs: not freed, not racing a free, ordered after its allocation. */
bool standin_use_ok(const standin_alloc *a, const standin_stamp *use);
/* Takes size bytes of the VMM address range, aligned; addresses are never reused. */
tcu_result standin_vmm_reserve(size_t size, size_t alignment, uintptr_t *out);
/* Adds an allocation (pool) or mapping (VMM) to the table. NULL when out of memory. */
standin_alloc *standin_alloc_add(uintptr_t base, size_t nbytes, unsigned char *alias,
                                 struct CUctx_st *ctx, enum standin_alloc_kind kind);
uintptr_t standin_vmm_base(void);

/* ---- standin_stream.c ------------------------------------------------------------ */

/* Queues op on s (with the implicit waits of the legacy stream). Takes ownership. */
void standin_enqueue(struct CUstream_st *s, standin_op *op);
standin_op *standin_op_new(enum standin_op_kind kind);
/* Runs s's queued work up to sequence seq. Returns the context's sticky error, if the
 * work (or earlier work) poisoned it. */
tcu_result standin_run_until(struct CUstream_st *s, uint64_t seq);
/* Runs every stream of ctx to its end. */
tcu_result standin_run_context(struct CUctx_st *ctx);
/* Drops all queued work of ctx (after a sticky error). */
void standin_discard_context(struct CUctx_st *ctx);

/* ---- standin_module.c ------------------------------------------------------------ */

/* Runs a queued launch (its CPU twin), stamped `use`. False when the twin reports a
 * device fault. */
bool standin_launch_run(struct standin_launch_op *launch, const standin_stamp *use);
void standin_launch_free(struct standin_launch_op *launch);

/* ---- standin_emulate.c ---------------------------------------------------------- */

/* What an emulated launch runs with (a queued launch, as it reaches its turn). */
typedef struct standin_launch_args {
    const char *entry;
    struct CUctx_st *ctx;
    const standin_stamp *use; /* where the launch was queued (standin_use_ok) */
    unsigned grid[3], block[3];
    size_t shared; /* dynamic shared memory bytes */
    const void *params;
    size_t params_nbytes;
} standin_launch_args;

/* The host-compiled entry point `entry` of a module with CUDA source `source` (NULL
 * when the module has none), compiled and loaded on first use; NULL, with the reason
 * logged, when it cannot be had. */
void *standin_emulate_entry(const char *source, const char *entry);
/* Runs an entry of standin_emulate_entry over device memory. False for a device fault
 * (the reason logged). */
bool standin_emulate_run(void *fn, const standin_launch_args *args);
/* In the child of an emulated launch: makes the device pages of every allocation a
 * launch stamped `use` may use accessible at their device addresses
 * (standin_memory.c). */
bool standin_expose_launch_memory(struct CUctx_st *ctx, const standin_stamp *use);

#endif /* TACK_STANDIN_CUDA_H */
