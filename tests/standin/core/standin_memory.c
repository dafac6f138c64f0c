/*
 * standin_memory.c: device memory of the stand-in: the two views of one memfd, the
 * pool allocator (bump, and reuse of freed blocks), range checks, copies, memsets and
 * what pointer queries see.
 *
 * Layout of the device address space (reserved once, at initialization):
 *
 *   view .............................. view + pool ................ + STANDIN_VMM_VA
 *   | pool: the memfd, PROT_NONE       | VMM ranges: anonymous PROT_NONE until mapped |
 *
 * The pool's bytes are read and written only through `alias`, a second, read-write
 * mapping of the same memfd at an unrelated address. Nothing ever changes the device
 * view's protection, so a host access through a device pointer faults on every thread,
 * at any time, with no race against the stand-in's own accesses.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "standin.h"

static unsigned char *view;  /* device addresses start here */
static unsigned char *alias; /* the pool's bytes, as the stand-in sees them */
static size_t pool_nbytes;
static size_t pool_cursor; /* next unused offset: never moves back */
static int pool_fd = -1;
static size_t vmm_cursor; /* next free offset in the VMM range */

/* Every pool block in address order (the bump allocator appends in order), each with
 * its newest allocation (older ones hang off it, `older`), and every allocation
 * outside the pool, VMM mappings, managed and pinned memory (few; searched linearly).
 * Both keep freed entries: a freed block waits there for a fitting allocation. */
static standin_alloc **allocs;
static size_t nallocs, allocs_cap;
static standin_alloc **mappings;
static size_t nmappings, mappings_cap;

static size_t
page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096u;
}

static size_t
align_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

standin_rc
standin_memory_init(void)
{
    if (view) {
        return STANDIN_OK;
    }
    const char *env = getenv("TACK_STANDIN_MEMORY");
    pool_nbytes = env ? (size_t)strtoull(env, NULL, 10) : STANDIN_DEFAULT_MEMORY;
    pool_nbytes = align_up(pool_nbytes ? pool_nbytes : STANDIN_DEFAULT_MEMORY,
                           STANDIN_GRANULARITY);
    /* Reserved with one granule to spare, so the view can start on a granule: VMM
     * addresses must be multiples of the granularity. */
    size_t total = pool_nbytes + STANDIN_VMM_VA + STANDIN_GRANULARITY;
    void *reserved = mmap(NULL, total, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    unsigned char *v =
        (unsigned char *)align_up((uintptr_t)reserved, STANDIN_GRANULARITY);
    pool_fd = memfd_create("tack-standin-device", MFD_CLOEXEC);
    if (pool_fd < 0 || ftruncate(pool_fd, (off_t)pool_nbytes) != 0) {
        goto fail;
    }
    if (mmap(v, pool_nbytes, PROT_NONE, MAP_SHARED | MAP_FIXED, pool_fd, 0) ==
        MAP_FAILED) {
        goto fail;
    }
    void *a = mmap(NULL, pool_nbytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_NORESERVE, pool_fd, 0);
    if (a == MAP_FAILED) {
        goto fail;
    }
    view = v;
    alias = a;
    /* Offset 0 is never handed out, so no device pointer equals the view's start. */
    pool_cursor = STANDIN_ALLOC_ALIGN;
    return STANDIN_OK;
fail:
    if (pool_fd >= 0) {
        close(pool_fd);
        pool_fd = -1;
    }
    munmap(reserved, total);
    return STANDIN_ERR_OUT_OF_MEMORY;
}

size_t
standin_memory_total(void)
{
    return pool_nbytes;
}

uintptr_t
standin_vmm_base(void)
{
    return (uintptr_t)view + pool_nbytes;
}

bool
standin_in_device_view(const void *p, size_t nbytes)
{
    uintptr_t lo = (uintptr_t)view, hi = lo + pool_nbytes + STANDIN_VMM_VA;
    uintptr_t a = (uintptr_t)p;
    return view && a < hi && a + (nbytes ? nbytes : 1) > lo;
}

/* ---- the allocation table -------------------------------------------------------- */

static bool
grow(standin_alloc ***array, size_t *cap, size_t n)
{
    if (n < *cap) {
        return true;
    }
    size_t next = *cap ? *cap * 2 : 256;
    standin_alloc **bigger = realloc(*array, next * sizeof(standin_alloc *));
    if (!bigger) {
        return false;
    }
    *array = bigger;
    *cap = next;
    return true;
}

standin_alloc *
standin_alloc_add(uintptr_t base, size_t nbytes, unsigned char *where,
                  struct standin_context *ctx, enum standin_alloc_kind kind)
{
    bool vmm = kind != ALLOC_PLAIN && kind != ALLOC_ASYNC; /* outside the pool */
    if (!(vmm ? grow(&mappings, &mappings_cap, nmappings)
              : grow(&allocs, &allocs_cap, nallocs))) {
        return NULL;
    }
    standin_alloc *a = calloc(1, sizeof *a);
    if (!a) {
        return NULL;
    }
    a->base = base;
    a->nbytes = nbytes;
    a->alias = where;
    a->ctx = ctx;
    a->device = ctx ? ctx->device : 0;
    a->kind = kind;
    a->capacity = nbytes;
    a->born = standin.next_seq;
    a->buffer_id = ++standin.next_buffer_id;
    if (vmm) {
        mappings[nmappings++] = a;
    }
    else {
        allocs[nallocs++] = a;
    }
    return a;
}

standin_alloc *
standin_alloc_find(uintptr_t addr)
{
    size_t lo = 0, hi = nallocs;
    while (lo < hi) { /* the last allocation whose base is <= addr */
        size_t mid = lo + (hi - lo) / 2;
        if (allocs[mid]->base <= addr) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    if (lo > 0) {
        standin_alloc *a = allocs[lo - 1];
        if (addr - a->base < a->nbytes) {
            return a;
        }
    }
    standin_alloc *found = NULL;
    for (size_t k = 0; k < nmappings; k++) {
        standin_alloc *m = mappings[k];
        if (addr - m->base < m->nbytes) {
            found = m; /* the newest mapping of this address wins */
        }
    }
    return found;
}

const standin_alloc *
standin_host_overlapping(const void *p, size_t nbytes)
{
    uintptr_t lo = (uintptr_t)p;
    for (size_t k = 0; k < nmappings; k++) {
        const standin_alloc *m = mappings[k];
        bool host = m->kind == ALLOC_PINNED || m->kind == ALLOC_MANAGED;
        if (host && !m->freed && m->base < lo + nbytes && lo < m->base + m->nbytes) {
            return m;
        }
    }
    return NULL;
}

void
standin_alloc_release(standin_alloc *a)
{
    a->freed = true;
    a->free_pending = false;
    a->free_stamp = NULL;
    if (a->kind == ALLOC_VMM) {
        return; /* the VMM code unmaps */
    }
    if (a->kind == ALLOC_PINNED && !a->host_owned) {
        return; /* registered memory is the caller's */
    }
    if (a->kind == ALLOC_MANAGED || a->kind == ALLOC_PINNED) {
        /* Stricter: the pages are given back but the range stays reserved and becomes
         * inaccessible, so the address is never reused and a host access after the
         * free faults at once. */
        size_t len = align_up(a->nbytes, page_size());
        (void)madvise(a->alias, len, MADV_REMOVE);
        (void)mprotect(a->alias, len, PROT_NONE);
        return;
    }
    /* Give the whole pages inside the allocation back to the system. */
    size_t off = (size_t)(a->alias - alias);
    size_t page = page_size();
    size_t lo = align_up(off, page), hi = (off + a->nbytes) / page * page;
    if (hi > lo) {
        (void)fallocate(pool_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)lo,
                        (off_t)(hi - lo));
    }
}

/* Whether a is memory ctx's device may use. */
static bool
device_memory_of(const standin_alloc *a, const struct standin_context *ctx)
{
    if (a->kind == ALLOC_PINNED) {
        return false; /* host memory (standin_host.c) */
    }
    /* Stricter than the driver, which with unified addressing copies from another
     * device's memory too: Tack must never hand one device's pointer to another.
     * Managed memory is valid on every device, as the driver documents. */
    return a->kind == ALLOC_MANAGED || a->device == ctx->device;
}

/* Whether new work of ctx may name a: live, with no stream-ordered free queued. */
static bool
alloc_usable(const standin_alloc *a, const struct standin_context *ctx)
{
    if (a->freed || a->free_pending) {
        return false;
    }
    if (a->ctx && !a->ctx->alive) {
        return false; /* a destroyed context takes its allocations with it */
    }
    return device_memory_of(a, ctx);
}

/* Queued work may still use memory whose stream-ordered free was queued after it on
 * its own stream, or on a stream ordered after it (the free runs after it). A free
 * that can run first is a race on the driver; so is work on memory from a
 * stream-ordered allocation that is not ordered after it: on its stream, on a stream
 * that waited for it, or queued once the host had waited for it. */
bool
standin_use_ok(const standin_alloc *a, const standin_stamp *use)
{
    if (a->freed || (a->ctx && !a->ctx->alive)) {
        return false;
    }
    if (a->born >= use->seq) {
        return false; /* made after the work was queued: it named an older one */
    }
    if (a->alloc_stream && !(a->ready_at && a->ready_at < use->seq) &&
        !standin_ordered_after(use, a->alloc_stream, a->alloc_seq)) {
        return false;
    }
    if (a->free_pending) {
        const standin_stamp *f = a->free_stamp;
        return f && (f->stream == use->stream ||
                     standin_clock_get(&f->after, use->stream) >= use->seq);
    }
    return true;
}

/* use: the stamp of queued work that runs now, or NULL for new work. */
static standin_rc
range_of(struct standin_context *ctx, standin_addr ptr, size_t nbytes, bool write,
         const standin_stamp *use, standin_range *out)
{
    standin_alloc *a = standin_alloc_find((uintptr_t)ptr);
    if (!a || !(use ? standin_use_ok(a, use) && device_memory_of(a, ctx)
                    : alloc_usable(a, ctx))) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    size_t offset = (size_t)((uintptr_t)ptr - a->base);
    if (nbytes > a->nbytes - offset) {
        return STANDIN_ERR_INVALID_VALUE; /* runs past the end of the allocation */
    }
    out->alloc = a;
    out->alias = a->alias + offset;
    out->faults = false;
    if (a->kind == ALLOC_VMM) {
        unsigned need = write ? STANDIN_ACCESS_READWRITE : STANDIN_ACCESS_READ;
        /* Mapped but not made accessible: the device faults when the work runs. */
        out->faults = (a->access[ctx->device] & need) != need;
    }
    return STANDIN_OK;
}

standin_rc
standin_device_range(struct standin_context *ctx, standin_addr ptr, size_t nbytes,
                     bool write, standin_range *out)
{
    return range_of(ctx, ptr, nbytes, write, NULL, out);
}

/* Runs when a launch executes: an argument released right after the call (its
 * stream-ordered free queued behind the launch on that queue) is still the launch's
 * memory. */
void *
standin_queued_translate(struct standin_context *ctx, const standin_stamp *use,
                         uint64_t device_address, size_t nbytes)
{
    standin_range r;
    if (range_of(ctx, (standin_addr)device_address, nbytes, true, use, &r) !=
            STANDIN_OK ||
        r.faults) {
        return NULL;
    }
    return r.alias;
}

/* Opens the device pages of a to what it allows, in the child of an emulated launch
 * (which may then touch them; the parent's view never changes). */
static bool
expose(const standin_alloc *a, const struct standin_context *ctx)
{
    int prot = PROT_READ | PROT_WRITE;
    if (a->kind == ALLOC_MANAGED) {
        return true; /* host memory at its own address, shared with the parent */
    }
    if (a->kind == ALLOC_VMM) {
        unsigned access = a->access[ctx->device];
        prot = (access & STANDIN_ACCESS_READWRITE) == STANDIN_ACCESS_READWRITE
                   ? PROT_READ | PROT_WRITE
               : access & STANDIN_ACCESS_READ ? PROT_READ
                                              : PROT_NONE;
    }
    size_t page = page_size();
    uintptr_t lo = a->base / page * page, hi = align_up(a->base + a->nbytes, page);
    return prot == PROT_NONE || mprotect((void *)lo, hi - lo, prot) == 0;
}

bool
standin_expose_launch_memory(struct standin_context *ctx, const standin_stamp *use)
{
    bool ok = true;
    for (size_t k = 0; k < nallocs && ok; k++) {
        if (standin_use_ok(allocs[k], use) && device_memory_of(allocs[k], ctx)) {
            ok = expose(allocs[k], ctx);
        }
    }
    for (size_t k = 0; k < nmappings && ok; k++) {
        if (standin_use_ok(mappings[k], use) && device_memory_of(mappings[k], ctx)) {
            ok = expose(mappings[k], ctx);
        }
    }
    return ok;
}

/* ---- allocation ------------------------------------------------------------------ */

/* The freed pool block a new allocation of nbytes reuses, or NULL: the smallest whose
 * capacity fits it without being twice as large, the lowest address among equals, so
 * a test may rely on which address comes back. Its index in allocs is *at. */
static standin_alloc *
reusable_block(size_t nbytes, size_t *at)
{
    size_t need = align_up(nbytes, STANDIN_ALLOC_ALIGN);
    standin_alloc *best = NULL;
    for (size_t k = 0; k < nallocs; k++) {
        standin_alloc *b = allocs[k];
        if (b->freed && b->capacity >= need && b->capacity / 2 < need &&
            (!best || b->capacity < best->capacity)) {
            best = b;
            *at = k;
        }
    }
    return best;
}

static standin_rc
pool_alloc(struct standin_context *ctx, size_t nbytes, enum standin_alloc_kind kind,
           standin_alloc **out)
{
    if (nbytes == 0) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    size_t k = 0;
    standin_alloc *old = reusable_block(nbytes, &k);
    standin_alloc *a = NULL;
    if (old) {
        /* A new record at the old address: work still queued for the old allocation
         * holds the old record, which stays freed. */
        if (!(a = calloc(1, sizeof *a))) {
            return STANDIN_ERR_OUT_OF_MEMORY;
        }
        *a = (standin_alloc){.base = old->base,
                             .nbytes = nbytes,
                             .capacity = old->capacity,
                             .older = old,
                             .born = standin.next_seq,
                             .alias = old->alias,
                             .ctx = ctx,
                             .device = ctx->device,
                             .kind = kind,
                             .buffer_id = ++standin.next_buffer_id};
        allocs[k] = a;
    }
    else {
        size_t off = align_up(pool_cursor, STANDIN_ALLOC_ALIGN);
        if (off > pool_nbytes || nbytes > pool_nbytes - off) {
            return STANDIN_ERR_OUT_OF_MEMORY;
        }
        a = standin_alloc_add((uintptr_t)(view + off), nbytes, alias + off, ctx, kind);
        if (!a) {
            return STANDIN_ERR_OUT_OF_MEMORY;
        }
        a->capacity = align_up(nbytes, STANDIN_ALLOC_ALIGN);
        /* A gap of one alignment unit after each block: an overrun never lands in
         * the next allocation. */
        pool_cursor = off + a->capacity + STANDIN_ALLOC_ALIGN;
    }
    memset(a->alias, STANDIN_FILL, nbytes);
    *out = a;
    return STANDIN_OK;
}

standin_rc
standin_mem_alloc(struct standin_context *ctx, size_t nbytes, standin_addr *out)
{
    standin_alloc *a = NULL;
    standin_rc rc = pool_alloc(ctx, nbytes, ALLOC_PLAIN, &a);
    if (rc == STANDIN_OK) {
        *out = (standin_addr)a->base;
    }
    return rc;
}

standin_rc
standin_mem_alloc_async(struct standin_context *ctx, struct standin_queue *s,
                        size_t nbytes, standin_addr *out)
{
    standin_alloc *a = NULL;
    standin_op *op = standin_op_new(OP_ALLOC);
    if (!op) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    standin_rc rc = pool_alloc(ctx, nbytes, ALLOC_ASYNC, &a);
    if (rc != STANDIN_OK) {
        free(op);
        return rc;
    }
    /* Usable in stream order: after this operation of s, on s or on a queue ordered
     * after it, or anywhere once the host waited for it. */
    op->alloc = a;
    standin_enqueue(s, op);
    a->alloc_stream = s;
    a->alloc_seq = op->seq;
    *out = (standin_addr)a->base;
    return STANDIN_OK;
}

/* Managed memory: host memory mapped read-write at the address handed out, so the
 * host may touch it as on the real driver, while the device side reads and writes it
 * through the same address when queued work runs (a host read before the
 * synchronization still sees stale bytes). */
standin_rc
standin_mem_alloc_managed(struct standin_context *ctx, size_t nbytes, standin_addr *out)
{
    size_t len = align_up(nbytes, page_size());
    /* Shared, so that an emulated launch's child writes the parent's bytes. */
    void *m =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    standin_alloc *a = standin_alloc_add((uintptr_t)m, nbytes, m, ctx, ALLOC_MANAGED);
    if (!a) {
        munmap(m, len);
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    memset(m, STANDIN_FILL, nbytes);
    *out = (standin_addr)a->base;
    return STANDIN_OK;
}

/* The allocation a free names: its exact start, live, not a VMM mapping. */
static standin_rc
freeable(struct standin_context *ctx, standin_addr dptr, standin_alloc **out)
{
    standin_alloc *a = standin_alloc_find((uintptr_t)dptr);
    if (!a || a->base != (uintptr_t)dptr || a->kind == ALLOC_VMM ||
        !alloc_usable(a, ctx)) {
        return STANDIN_ERR_INVALID_VALUE; /* host, interior, freed or foreign pointer */
    }
    *out = a;
    return STANDIN_OK;
}

standin_rc
standin_mem_free(struct standin_context *ctx, standin_addr ptr)
{
    standin_alloc *a = NULL;
    standin_rc rc = freeable(ctx, ptr, &a);
    if (rc == STANDIN_OK) {
        /* A synchronous free waits for the context's work, as the driver's does. */
        rc = standin_run_context(ctx);
    }
    if (rc == STANDIN_OK) {
        standin_alloc_release(a);
    }
    return rc;
}

standin_rc
standin_mem_free_async(struct standin_context *ctx, struct standin_queue *s,
                       standin_addr ptr)
{
    standin_alloc *a = NULL;
    standin_op *op = NULL;
    standin_rc rc = freeable(ctx, ptr, &a);
    if (rc == STANDIN_OK && !(op = standin_op_new(OP_FREE))) {
        rc = STANDIN_ERR_OUT_OF_MEMORY;
    }
    if (rc == STANDIN_OK) {
        /* From now on no new work may name it; queued work still may. */
        a->free_pending = true;
        a->free_stream = s;
        op->alloc = a;
        standin_enqueue(s, op);
        a->free_stamp = &op->stamp; /* what the free is ordered after */
    }
    return rc;
}

void
standin_mem_info(size_t *free_bytes, size_t *total)
{
    *total = pool_nbytes;
    *free_bytes = pool_cursor < pool_nbytes ? pool_nbytes - pool_cursor : 0;
}

/* ---- copies and memsets ---------------------------------------------------------- */

static standin_rc
host_side_ok(const void *p, size_t nbytes)
{
    /* Stricter: with unified addressing the driver would accept a device pointer where
     * host memory is expected and copy device to device; Tack must say what it means.
     */
    return p && !standin_in_device_view(p, nbytes) ? STANDIN_OK
                                                   : STANDIN_ERR_INVALID_VALUE;
}

standin_rc
standin_transfer_queue(struct standin_context *ctx, const standin_transfer *t)
{
    struct standin_queue *s = t->sync ? ctx->legacy : t->queue;
    standin_rc rc = STANDIN_OK;
    size_t nbytes = t->width ? t->nbytes * t->width : t->nbytes;
    if (nbytes == 0) {
        return STANDIN_OK; /* nothing to move is a success, as in the driver */
    }
    standin_range dst = {0}, src = {0};
    const unsigned char *from = t->src_host;
    unsigned char *to = t->dst_host;
    if (t->dst_dev) {
        rc = standin_device_range(ctx, t->dst_dev, nbytes, true, &dst);
        to = dst.alias;
    }
    else {
        rc = host_side_ok(t->dst_host, nbytes);
    }
    if (rc == STANDIN_OK && !t->width) {
        if (t->src_dev) {
            rc = standin_device_range(ctx, t->src_dev, nbytes, false, &src);
            from = src.alias;
        }
        else {
            rc = host_side_ok(t->src_host, nbytes);
        }
    }
    if (rc != STANDIN_OK) {
        return rc;
    }
    standin_op *op = standin_op_new(dst.faults || src.faults ? OP_FAULT
                                    : t->width               ? OP_MEMSET
                                                             : OP_COPY);
    if (!op) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    op->dst = to;
    op->src = from;
    op->dst_alloc = dst.alloc; /* checked again when the work runs */
    op->src_alloc = src.alloc;
    op->nbytes = nbytes;
    op->pattern = t->pattern;
    op->width = t->width;
    op->count = t->nbytes;
    standin_enqueue(s, op);
    /* A synchronous copy returns once the legacy stream has run up to it; host memory
     * given to an asynchronous one is read or written only when its stream runs. */
    return t->sync ? standin_run_until(s, s->last_seq) : STANDIN_OK;
}

/* ---- pointer attributes ---------------------------------------------------------- */

bool
standin_alloc_host_reachable(const standin_alloc *a)
{
    return a->kind == ALLOC_MANAGED || a->kind == ALLOC_PINNED;
}

const standin_alloc *
standin_pointer_target(standin_addr ptr)
{
    const standin_alloc *a = standin_alloc_find((uintptr_t)ptr);
    if (!a || a->freed || (a->ctx && !a->ctx->alive)) {
        return NULL;
    }
    return a;
}

/* ---- the VMM address range ------------------------------------------------------- */

standin_rc
standin_vmm_reserve(size_t size, size_t alignment, uintptr_t *out)
{
    size_t a = alignment ? alignment : STANDIN_GRANULARITY;
    size_t off = align_up(vmm_cursor, a);
    if (off > STANDIN_VMM_VA || size > STANDIN_VMM_VA - off) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    /* Addresses are never reused; a guard granule separates reservations. */
    vmm_cursor = off + size + STANDIN_GRANULARITY;
    *out = standin_vmm_base() + off;
    return STANDIN_OK;
}
