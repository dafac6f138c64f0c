/*
 * standin.h: the name-neutral core of the strict stand-in drivers, shared by its files
 * and by each layer of exported entry points over it (tests/standin/cuda for
 * libtack_standin_cuda.so). Results are the layer's (standin_layer.h, found on the
 * layer's include path); objects, addresses and flags are the core's own. docs/cuda.md
 * describes what it models and why; in short:
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
#ifndef TACK_STANDIN_H
#define TACK_STANDIN_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "standin_layer.h" /* the layer's result numbers (tests/standin/<layer>/) */
#include "standin_twin.h"  /* the CPU twin ABI, beside the layer's header */

/* A device address, as every layer's entry points hand it out. */
typedef unsigned long long standin_addr;

#define STANDIN_MAX_DEVICES 8
#define STANDIN_ALLOC_ALIGN 256u              /* the documented allocation alignment */
#define STANDIN_GRANULARITY ((size_t)2 << 20) /* VMM minimum and recommended */
#define STANDIN_DEFAULT_MEMORY ((size_t)8 << 30) /* pool bytes per process */
#define STANDIN_VMM_VA ((size_t)16 << 30)        /* VMM address space per process */
#define STANDIN_FILL 0xA5                        /* contents of new memory */
/* Dynamic shared memory per block, without opt-in (standin_device's). */
#define STANDIN_MAX_SHARED 49152u

/* What every device of the stand-in is (standin_core.c); a layer answers its attribute
 * queries from these. */
typedef struct standin_device_facts {
    int max_threads_per_block;
    int max_block_x, max_block_y, max_block_z;
    int max_grid_x, max_grid_y, max_grid_z;
    int max_shared_per_block, max_shared_optin, constant_memory;
    int warp_size, max_registers_per_block, clock_khz;
    int multiprocessors, max_threads_per_sm;
    int arch_major, arch_minor; /* the architecture: 9.0, sm_90 */
    int integrated, can_map_host_memory, unified_addressing, async_engines;
    int pci_domain, pci_bus, pci_device; /* the bus is pci_bus plus the ordinal */
    int l2_cache_bytes;
    int managed_memory, concurrent_managed_access;
    int vmm, fd_export, memory_pools; /* supported: 1 */
} standin_device_facts;
extern const standin_device_facts standin_device;

/* ---- contexts, queues, events ---------------------------------------------------- */

struct standin_op;

/* ---- ordering across streams (standin_order.c) ---------------------------------- */

/* For each stream, the newest sequence number of its work certain to run first. */
typedef struct standin_clock {
    struct standin_tick {
        struct standin_queue *stream;
        uint64_t seq;
    } * ticks;
    size_t n, cap;
    bool everything; /* out of memory while growing: ordered after everything */
} standin_clock;

/* Where a queued operation stands: its stream, its sequence number, and what it is
 * ordered after on other streams. */
typedef struct standin_stamp {
    struct standin_queue *stream;
    uint64_t seq;
    standin_clock after;
} standin_stamp;

uint64_t standin_clock_get(const standin_clock *c, const struct standin_queue *s);
/* Raises c's entry for s to at least seq. */
void standin_clock_tick(standin_clock *c, struct standin_queue *s, uint64_t seq);
void standin_clock_merge(standin_clock *into, const standin_clock *from);
void standin_clock_copy(standin_clock *to, const standin_clock *from);
void standin_clock_free(standin_clock *c);
/* Whether the operation stamped `use` is certain to run after s's work up to seq. */
bool standin_ordered_after(const standin_stamp *use, const struct standin_queue *s,
                           uint64_t seq);

struct standin_context {
    int device;
    bool primary;
    bool alive;
    standin_rc sticky; /* 0, or the error every later call on this context returns */
    struct standin_queue *legacy; /* the legacy queue (CUDA's NULL stream) */
    /* Every context ever made, so handles stay recognisable. */
    struct standin_context *next;
};

struct standin_queue {
    struct standin_context *ctx;
    bool non_blocking; /* takes no part in the legacy queue's implicit waits */
    bool alive;
    bool legacy;     /* the context's legacy queue */
    bool per_thread; /* a per-thread default queue, owned by `owner` */
    pthread_t owner;
    struct standin_op *head, *tail; /* pending work, oldest first */
    uint64_t last_seq;              /* sequence number of the newest queued operation */
    int queries;                    /* queries that found this queue pending */
    standin_clock clock; /* what the next operation queued here is ordered after */
    struct standin_queue *next;
};

struct standin_event {
    struct standin_context *ctx;
    bool alive;
    struct standin_queue *stream; /* where it was last recorded; NULL if never */
    uint64_t seq;                 /* complete once `stream` ran past this sequence */
    standin_clock clock; /* what a wait on it orders after, `stream` included */
    int queries;
    struct standin_event *next;
};

/* ---- memory ---------------------------------------------------------------------- */

/* What a device may do with a VMM mapping (the bits CUDA's access flags also use). */
enum { STANDIN_ACCESS_NONE = 0, STANDIN_ACCESS_READ = 1, STANDIN_ACCESS_READWRITE = 3 };

enum standin_alloc_kind {
    ALLOC_PLAIN,
    ALLOC_ASYNC,
    ALLOC_VMM,
    ALLOC_MANAGED,
    ALLOC_PINNED /* page-locked host memory (standin_host.c) */
};

/* One device allocation (synchronous or stream-ordered), one VMM mapping, or one
 * managed allocation (host memory the host may read and write, alias ==
 * base). Kept after it is freed, so a later use is recognised as a use after free,
 * and work queued for it still knows it when a new allocation reuses its address. */
typedef struct standin_alloc {
    uintptr_t base;
    size_t nbytes;
    size_t capacity;             /* pool blocks: the bytes reserved at base */
    struct standin_alloc *older; /* the previous allocation at this block */
    uint64_t born;               /* the newest sequence number when it was made */
    struct standin_queue *alloc_stream; /* stream-ordered: usable in its order */
    uint64_t alloc_seq;                 /* ... after this operation of alloc_stream */
    uint64_t ready_at;    /* 0, or the newest sequence number when alloc_seq ran */
    unsigned char *alias; /* where the stand-in reads and writes these bytes */
    struct standin_context *ctx;
    int device;
    enum standin_alloc_kind kind;
    bool freed;
    bool host_owned;   /* ALLOC_PINNED: the driver's block (else registered) */
    bool free_pending; /* a stream-ordered free is queued: no new use */
    struct standin_queue *free_stream; /* the stream that free is queued on */
    const standin_stamp *free_stamp;   /* the queued free's stamp; NULL once gone */
    uint64_t buffer_id;
    struct standin_vmm_handle *vmm; /* ALLOC_VMM: the physical allocation mapped */
    uintptr_t reservation;          /* ALLOC_VMM: start of the reserved range */
    size_t reservation_size;
    unsigned access[STANDIN_MAX_DEVICES]; /* ALLOC_VMM: STANDIN_ACCESS_* by device */
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
    OP_ALLOC /* a stream-ordered allocation: usable after it in queue order */
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
    struct standin_queue *wait_stream; /* OP_WAIT: run wait_stream up to wait_seq */
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
    pid_t init_pid; /* the process that initialized the driver */
    /* The driver has been torn down (process exit, or tack_standin_cuda_teardown):
     * every later call but the version and error-name queries is DEINITIALIZED. Set
     * without the lock at exit, so it is atomic. */
    _Atomic bool torn_down;
    int ndevices;
    int driver_version; /* TACK_STANDIN_DRIVER_VERSION, or STANDIN_LAYER_VERSION */
    bool eager;         /* TACK_STANDIN_ASYNC=eager: run work when queued */
    bool emulate;       /* TACK_STANDIN_EXEC=emulate: launches run the module's code */
    bool exec_unknown;  /* TACK_STANDIN_EXEC names no mode: init refuses */
    int log_fd;         /* TACK_STANDIN_LOG, or -1 */
    struct standin_context *primary[STANDIN_MAX_DEVICES];
    int primary_retains[STANDIN_MAX_DEVICES];
    struct standin_context *contexts;
    struct standin_queue *streams;
    struct standin_event *events;
    uint64_t next_seq;
    uint64_t next_buffer_id;
} standin_state;

extern standin_state standin;
extern pthread_mutex_t standin_lock;

/* ---- standin_core.c -------------------------------------------------------------- */

/* What an entry point needs before it may run. */
enum standin_entry {
    STANDIN_ENTRY_INITIALIZED, /* almost all: the driver initialized by this process */
    STANDIN_ENTRY_INIT,        /* the initialization call itself */
    STANDIN_ENTRY_ANYTIME      /* version and error-name queries: even after teardown */
};

/*
 * The prologue of every entry point: takes the lock, counts the call for fault
 * injection under `name` (the name the layer logs), and checks what `kind` needs.
 * Returns STANDIN_OK with the lock held, or the error to return (the lock is still
 * held: every path ends with standin_leave). standin_enter is
 * standin_enter_as(name, STANDIN_ENTRY_INITIALIZED).
 */
standin_rc standin_enter(const char *name);
standin_rc standin_enter_as(const char *name, enum standin_entry kind);
/* Logs the call (when TACK_STANDIN_LOG is set) as "name(arguments) -> rc", and releases
 * the lock. Returns rc. */
standin_rc standin_leave(standin_rc rc, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The calling thread's current context, checked alive and not poisoned. */
standin_rc standin_current(struct standin_context **out);
/* A context handle looked up among those ever made (an unknown pointer is never
 * dereferenced), or NULL. */
struct standin_context *standin_known_context(const void *handle);
/* Marks ctx unusable: every later call on it returns rc (a sticky error). */
void standin_poison(struct standin_context *ctx, standin_rc rc);
bool standin_device_ok(int dev);
/* OK, or INVALID_DEVICE for an ordinal the stand-in does not have. */
standin_rc standin_device_check(int dev);
/* A fixed, recognisable UUID per device ("tack-standin" and the ordinal). */
standin_rc standin_device_uuid(int dev, unsigned char uuid[16]);

/* Initializes the driver (devices, device memory); INVALID_VALUE when TACK_STANDIN_EXEC
 * names no mode, NO_DEVICE with TACK_STANDIN_DEVICES=0. */
standin_rc standin_init(void);
/* Tears the driver down now, as at process exit: no queued work runs any more, and
 * every later call but the STANDIN_ENTRY_ANYTIME ones is DEINITIALIZED. */
void standin_teardown(void);

/* Primary contexts: one per device, reference counted. */
standin_rc standin_primary_retain(int dev, struct standin_context **out);
/* INVALID_CONTEXT for a release without a retain; the last one kills the context. */
standin_rc standin_primary_release(int dev);
standin_rc standin_primary_active(int dev, bool *active);

/* The calling thread's stack of current contexts (a per-thread push/pop stack). */
/* Makes a context on dev and pushes it. */
standin_rc standin_context_create(int dev, struct standin_context **out);
/* INVALID_CONTEXT for an unknown, dead or primary context. */
standin_rc standin_context_destroy(const void *handle);
/* The top of the stack, or NULL. */
struct standin_context *standin_context_top(void);
/* Replaces the top (NULL pops); INVALID_CONTEXT for an unknown or dead handle. */
standin_rc standin_context_set(const void *handle);
standin_rc standin_context_push(const void *handle);
standin_rc standin_context_pop(struct standin_context **out);
int standin_context_depth(void);

/* ---- standin_memory.c ------------------------------------------------------------ */

/* Maps the device view and its alias on first use. */
standin_rc standin_memory_init(void);
/* The device memory of the process (TACK_STANDIN_MEMORY, rounded to the granularity).
 */
size_t standin_memory_total(void);
/* The live allocation containing [ptr, ptr + nbytes), usable from ctx for reading
 * (write false) or writing. INVALID_VALUE if there is none. */
standin_rc standin_device_range(struct standin_context *ctx, standin_addr ptr,
                                size_t nbytes, bool write, standin_range *out);
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
void *standin_queued_translate(struct standin_context *ctx, const standin_stamp *use,
                               uint64_t device_address, size_t nbytes);
/* Whether queued work stamped `use` may touch a (an allocation it named when queued)
 * now that it runs: not freed, not racing a free, ordered after its allocation. */
bool standin_use_ok(const standin_alloc *a, const standin_stamp *use);
/* Takes size bytes of the VMM address range, aligned; addresses are never reused. */
standin_rc standin_vmm_reserve(size_t size, size_t alignment, uintptr_t *out);
/* Adds an allocation (pool) or mapping (VMM) to the table. NULL when out of memory. */
standin_alloc *standin_alloc_add(uintptr_t base, size_t nbytes, unsigned char *alias,
                                 struct standin_context *ctx,
                                 enum standin_alloc_kind kind);
uintptr_t standin_vmm_base(void);

/* The operations behind the allocation entry points, in the current context ctx. */
standin_rc standin_mem_alloc(struct standin_context *ctx, size_t nbytes,
                             standin_addr *out);
/* Usable in stream order: on s after this point, on a queue ordered after it, or
 * anywhere once the host waited for s. */
standin_rc standin_mem_alloc_async(struct standin_context *ctx, struct standin_queue *s,
                                   size_t nbytes, standin_addr *out);
/* Host memory mapped read-write at the address handed out. */
standin_rc standin_mem_alloc_managed(struct standin_context *ctx, size_t nbytes,
                                     standin_addr *out);
/* Frees a live allocation of ctx named by its start (not a VMM mapping) once the
 * context's work ran; INVALID_VALUE for anything else. */
standin_rc standin_mem_free(struct standin_context *ctx, standin_addr ptr);
/* Queues the free on s: no new work may name the allocation, queued work still may. */
standin_rc standin_mem_free_async(struct standin_context *ctx, struct standin_queue *s,
                                  standin_addr ptr);
void standin_mem_info(size_t *free_bytes, size_t *total);

/* A copy or memset: a 0 device address means that side is host memory. */
typedef struct standin_transfer {
    standin_addr dst_dev, src_dev;
    void *dst_host;
    const void *src_host;
    size_t nbytes;    /* bytes of a copy; elements of a memset */
    uint32_t pattern; /* memset: value and width; width 0 for a copy */
    unsigned width;
    struct standin_queue *queue; /* ignored when sync */
    bool sync; /* a synchronous call: the legacy queue, run up to this operation */
} standin_transfer;
/* Checks both sides and queues the work (running it, when sync). */
standin_rc standin_transfer_queue(struct standin_context *ctx,
                                  const standin_transfer *t);

/* ---- standin_copy.c -------------------------------------------------------------- */

/* Queues a copy of n bytes on s from src_ptr, memory of the context src_ctx's device,
 * to dst_ptr, memory of dst_ctx's device (the handles are looked up, never followed).
 */
standin_rc standin_copy_peer(struct standin_queue *s, standin_addr dst_ptr,
                             const void *dst_ctx, standin_addr src_ptr,
                             const void *src_ctx, size_t n);
/* A 2-D copy between device memory of ctx: height rows of width bytes. */
typedef struct standin_copy2d {
    standin_addr dst, src;
    size_t dst_x, dst_y, dst_pitch; /* x in bytes */
    size_t src_x, src_y, src_pitch;
    size_t width, height;
} standin_copy2d;
/* Queues one copy per row on s; every row of a side lies in one allocation. */
standin_rc standin_copy_2d(struct standin_context *ctx, struct standin_queue *s,
                           const standin_copy2d *c);

/* The live allocation a pointer query about ptr sees, or NULL. */
const standin_alloc *standin_pointer_target(standin_addr ptr);
/* Managed and page-locked memory: the host reaches it at its own address. */
bool standin_alloc_host_reachable(const standin_alloc *a);

/* ---- standin_host.c -------------------------------------------------------------- */

/* A page-locked block the driver allocates, filled with STANDIN_FILL. */
standin_rc standin_host_alloc(struct standin_context *ctx, size_t nbytes, void **out);
/* Makes the caller's [p, p + nbytes) page-locked host memory the driver knows;
 * HOST_MEMORY_ALREADY_REGISTERED when it overlaps pinned memory. */
standin_rc standin_host_register(struct standin_context *ctx, void *p, size_t nbytes);
/* Frees a block (host_owned) or unregisters a range: p must be the start of such a
 * live range, else `missing` is returned. */
standin_rc standin_host_release(void *p, bool host_owned, standin_rc missing);

/* ---- standin_vmm.c --------------------------------------------------------------- */

typedef struct standin_vmm_handle standin_vmm_handle;
/* What one device may do with a mapping. */
typedef struct standin_access {
    int device;
    unsigned access; /* STANDIN_ACCESS_* */
} standin_access;

/* A physical allocation by its handle value (its address), not released, or NULL. */
standin_vmm_handle *standin_vmm_find(uint64_t handle);
/* A physical allocation of size bytes (a multiple of STANDIN_GRANULARITY) on device;
 * fd_export: exportable as a POSIX fd. Filled with STANDIN_FILL. */
standin_rc standin_vmm_create(int device, size_t size, bool fd_export,
                              standin_vmm_handle **out);
/* The memory lives on while a mapping uses it. */
standin_rc standin_vmm_release(uint64_t handle);
standin_rc standin_vmm_address_reserve(size_t size, size_t alignment,
                                       standin_addr *out);
/* A whole reservation with nothing mapped (stricter). */
standin_rc standin_vmm_address_free(standin_addr ptr, size_t size);
/* Maps a whole allocation at offset 0 into a reservation (stricter). */
standin_rc standin_vmm_map(standin_addr ptr, size_t size, size_t offset,
                           uint64_t handle);
/* Unmaps one whole mapping, after the work queued against it ran. */
standin_rc standin_vmm_unmap(standin_addr ptr, size_t size);
/* Sets the access of a run of whole, adjacent mappings (stricter). */
standin_rc standin_vmm_set_access(standin_addr ptr, size_t size,
                                  const standin_access *desc, size_t count);
/* A new file descriptor of an exportable allocation; the caller owns it. */
standin_rc standin_vmm_export_fd(uint64_t handle, int *out);
/* A new handle over a descriptor some standin_vmm_export_fd made (the fd stays the
 * caller's). */
standin_rc standin_vmm_import_fd(int fd, standin_vmm_handle **out);

/* ---- standin_queue.c ------------------------------------------------------------- */

struct standin_queue *standin_queue_new(struct standin_context *ctx, bool non_blocking);
/* The calling thread's own default queue in ctx (made on first use), or NULL. */
struct standin_queue *standin_queue_per_thread(struct standin_context *ctx);
/* A queue handle made by standin_queue_create, alive and of ctx; INVALID_HANDLE for
 * anything else (a destroyed queue, another context's, a built-in one, an unknown
 * pointer, which is never dereferenced). */
standin_rc standin_queue_find(struct standin_context *ctx, const void *handle,
                              struct standin_queue **out);
/* Queues op on s (with the implicit waits of the legacy queue). Takes ownership. */
void standin_enqueue(struct standin_queue *s, standin_op *op);
standin_op *standin_op_new(enum standin_op_kind kind);
/* Runs s's queued work up to sequence seq. Returns the context's sticky error, if the
 * work (or earlier work) poisoned it. */
standin_rc standin_run_until(struct standin_queue *s, uint64_t seq);
/* Runs every queue of ctx to its end. */
standin_rc standin_run_context(struct standin_context *ctx);
/* Drops all queued work of ctx (after a sticky error). */
void standin_discard_context(struct standin_context *ctx);

/* The operations behind the stream and event entry points, on resolved handles. */
standin_rc standin_queue_create(struct standin_context *ctx, bool non_blocking,
                                struct standin_queue **out);
void standin_queue_destroy(struct standin_queue *s);
/* Runs s to its end. */
standin_rc standin_queue_sync(struct standin_queue *s);
/* OK when s has nothing pending; the first query of pending work NOT_READY, the next
 * runs it. */
standin_rc standin_queue_query(struct standin_queue *s);
/* An event handle made by standin_event_create and not destroyed, or NULL. */
struct standin_event *standin_event_find(const void *handle);
standin_rc standin_queue_wait_event(struct standin_queue *s, struct standin_event *e);
standin_rc standin_event_create(struct standin_context *ctx,
                                struct standin_event **out);
void standin_event_destroy(struct standin_event *e);
/* INVALID_HANDLE when e and s belong to different contexts. */
standin_rc standin_event_record(struct standin_event *e, struct standin_queue *s);
standin_rc standin_event_sync(struct standin_event *e);
standin_rc standin_event_query(struct standin_event *e);

/* ---- standin_launch.c ------------------------------------------------------------ */

#define STANDIN_MAX_PARAMS 128

/* A loaded module: the image its layer checked (a private copy, `format` the layer's
 * tag for it), and the source it was compiled from, for emulated launches. */
struct standin_module {
    struct standin_context *ctx;
    bool alive;
    int format;
    unsigned char *image;
    size_t image_nbytes;
    char *source;
    struct standin_module *next;
};

/* An entry of a module, with the parameter layout its layer read from the image. */
struct standin_function {
    struct standin_module *mod;
    char *name;
    unsigned nparams;
    size_t offset[STANDIN_MAX_PARAMS], size[STANDIN_MAX_PARAMS];
    size_t params_nbytes;
    void *emulated; /* its host-compiled entry (emulated launches), once looked up */
    struct standin_function *next;
};

/* Registers fn as the twin of `entry` (standin_twin.h); takes the lock itself. */
int standin_twin_register(const char *entry, tack_standin_twin_fn fn, void *user);
/* Adds a module of ctx holding a copy of the nbytes of image. */
standin_rc standin_module_add(struct standin_context *ctx, const void *image,
                              size_t nbytes, int format, struct standin_module **out);
/* A live module of ctx by its handle (never dereferenced unless known), or NULL. */
struct standin_module *standin_module_find(const void *handle,
                                           const struct standin_context *ctx);
/* Launches already queued keep what they need. */
void standin_module_unload(struct standin_module *m);
/* The source of m (copied), for emulated launches; a later call replaces it. */
standin_rc standin_module_set_source(struct standin_module *m, const char *source);
/* A function of m named `name` (copied), for its layer to fill in its parameter
 * layout, then publish (handles become findable) or discard. NULL when out of memory.
 */
struct standin_function *standin_function_new(struct standin_module *m,
                                              const char *name);
void standin_function_publish(struct standin_function *f);
void standin_function_discard(struct standin_function *f);
/* A function of a live module by its handle, or NULL. */
struct standin_function *standin_function_find(const void *handle);

/* INVALID_HANDLE for a function of another context; INVALID_VALUE for geometry beyond
 * the device's limits. */
standin_rc standin_launch_check(struct standin_context *ctx,
                                const struct standin_function *f,
                                const unsigned grid[3], const unsigned block[3],
                                unsigned shared);
/* The parameter bytes of a launch of f, from one pointer per parameter (by_param) or
 * from one buffer of exactly f's size, never both. Out: a new buffer the caller owns.
 */
standin_rc standin_params_pack(const struct standin_function *f, void **by_param,
                               const void *buffer, size_t buffer_nbytes,
                               unsigned char **out);
/* The first bytes of params in hex (with "..." when cut), for the call log. */
void standin_params_hex(const unsigned char *params, size_t n, char *out,
                        size_t out_nbytes);
/* Queues a checked launch of f on s with its packed params (owned from here on, even on
 * failure). NOT_SUPPORTED when no twin (or no emulated entry) could compute it. */
standin_rc standin_launch_queue(struct standin_context *ctx, struct standin_queue *s,
                                struct standin_function *f, const unsigned grid[3],
                                const unsigned block[3], unsigned shared,
                                unsigned char *params);
/* Runs a queued launch (its CPU twin), stamped `use`. False when the twin reports a
 * device fault. */
bool standin_launch_run(struct standin_launch_op *launch, const standin_stamp *use);
void standin_launch_free(struct standin_launch_op *launch);
/* The occupancy the driver gives for a kernel of few registers: the largest block
 * (1024 threads, or the largest multiple of 32 under block_limit) and the blocks of
 * that size that fill every multiprocessor. INVALID_VALUE when the dynamic shared
 * memory (dynamic_of(block), or `dynamic`) is past the device's. */
standin_rc standin_occupancy(int block_limit, size_t (*dynamic_of)(int block),
                             size_t dynamic, int *block_out, int *grid_out);

/* ---- standin_emulate.c ---------------------------------------------------------- */

/* What an emulated launch runs with (a queued launch, as it reaches its turn). */
typedef struct standin_launch_args {
    const char *entry;
    struct standin_context *ctx;
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
bool standin_expose_launch_memory(struct standin_context *ctx,
                                  const standin_stamp *use);

#endif /* TACK_STANDIN_H */
