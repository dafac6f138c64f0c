/*
 * standin_memory.c: device memory of the stand-in driver: the two views of one memfd,
 * the pool allocator (bump, and reuse of freed blocks), range checks, copies, memsets
 * and pointer attributes.
 *
 * Layout of the device address space (reserved once, at cuInit):
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

tcu_result
standin_memory_init(void)
{
    if (view) {
        return TCU_SUCCESS;
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
        return TCU_ERROR_OUT_OF_MEMORY;
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
    return TCU_SUCCESS;
fail:
    if (pool_fd >= 0) {
        close(pool_fd);
        pool_fd = -1;
    }
    munmap(reserved, total);
    return TCU_ERROR_OUT_OF_MEMORY;
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
                  struct CUctx_st *ctx, enum standin_alloc_kind kind)
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
device_memory_of(const standin_alloc *a, const struct CUctx_st *ctx)
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
alloc_usable(const standin_alloc *a, const struct CUctx_st *ctx)
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
 * that can run first is a race on the driver; so is work on memory from
 * cuMemAllocAsync that is not ordered after the allocation: on its stream, on a
 * stream that waited for it, or queued once the host had waited for it. */
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
static tcu_result
range_of(struct CUctx_st *ctx, tcu_deviceptr ptr, size_t nbytes, bool write,
         const standin_stamp *use, standin_range *out)
{
    standin_alloc *a = standin_alloc_find((uintptr_t)ptr);
    if (!a || !(use ? standin_use_ok(a, use) && device_memory_of(a, ctx)
                    : alloc_usable(a, ctx))) {
        return TCU_ERROR_INVALID_VALUE;
    }
    size_t offset = (size_t)((uintptr_t)ptr - a->base);
    if (nbytes > a->nbytes - offset) {
        return TCU_ERROR_INVALID_VALUE; /* runs past the end of the allocation */
    }
    out->alloc = a;
    out->alias = a->alias + offset;
    out->faults = false;
    if (a->kind == ALLOC_VMM) {
        unsigned need = write ? TCU_MEM_ACCESS_FLAGS_PROT_READWRITE
                              : TCU_MEM_ACCESS_FLAGS_PROT_READ;
        /* Mapped but not made accessible: the device faults when the work runs. */
        out->faults = (a->access[ctx->device] & need) != need;
    }
    return TCU_SUCCESS;
}

tcu_result
standin_device_range(struct CUctx_st *ctx, tcu_deviceptr ptr, size_t nbytes, bool write,
                     standin_range *out)
{
    return range_of(ctx, ptr, nbytes, write, NULL, out);
}

/* Runs when a launch executes: an argument released right after the call (its
 * cuMemFreeAsync queued behind the launch on that stream) is still the launch's
 * memory. */
void *
standin_queued_translate(struct CUctx_st *ctx, const standin_stamp *use,
                         uint64_t device_address, size_t nbytes)
{
    standin_range r;
    if (range_of(ctx, (tcu_deviceptr)device_address, nbytes, true, use, &r) !=
            TCU_SUCCESS ||
        r.faults) {
        return NULL;
    }
    return r.alias;
}

/* Opens the device pages of a to what it allows, in the child of an emulated launch
 * (which may then touch them; the parent's view never changes). */
static bool
expose(const standin_alloc *a, const struct CUctx_st *ctx)
{
    int prot = PROT_READ | PROT_WRITE;
    if (a->kind == ALLOC_MANAGED) {
        return true; /* host memory at its own address, shared with the parent */
    }
    if (a->kind == ALLOC_VMM) {
        unsigned access = a->access[ctx->device];
        prot = (access & TCU_MEM_ACCESS_FLAGS_PROT_READWRITE) ==
                       TCU_MEM_ACCESS_FLAGS_PROT_READWRITE
                   ? PROT_READ | PROT_WRITE
               : access & TCU_MEM_ACCESS_FLAGS_PROT_READ ? PROT_READ
                                                         : PROT_NONE;
    }
    size_t page = page_size();
    uintptr_t lo = a->base / page * page, hi = align_up(a->base + a->nbytes, page);
    return prot == PROT_NONE || mprotect((void *)lo, hi - lo, prot) == 0;
}

bool
standin_expose_launch_memory(struct CUctx_st *ctx, const standin_stamp *use)
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

static tcu_result
pool_alloc(struct CUctx_st *ctx, size_t nbytes, enum standin_alloc_kind kind,
           standin_alloc **out)
{
    if (nbytes == 0) {
        return TCU_ERROR_INVALID_VALUE;
    }
    size_t k = 0;
    standin_alloc *old = reusable_block(nbytes, &k);
    standin_alloc *a = NULL;
    if (old) {
        /* A new record at the old address: work still queued for the old allocation
         * holds the old record, which stays freed. */
        if (!(a = calloc(1, sizeof *a))) {
            return TCU_ERROR_OUT_OF_MEMORY;
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
            return TCU_ERROR_OUT_OF_MEMORY;
        }
        a = standin_alloc_add((uintptr_t)(view + off), nbytes, alias + off, ctx, kind);
        if (!a) {
            return TCU_ERROR_OUT_OF_MEMORY;
        }
        a->capacity = align_up(nbytes, STANDIN_ALLOC_ALIGN);
        /* A gap of one alignment unit after each block: an overrun never lands in
         * the next allocation. */
        pool_cursor = off + a->capacity + STANDIN_ALLOC_ALIGN;
    }
    memset(a->alias, STANDIN_FILL, nbytes);
    *out = a;
    return TCU_SUCCESS;
}

STANDIN_EXPORT tcu_result
cuMemAlloc_v2(tcu_deviceptr *dptr, size_t bytesize)
{
    tcu_result rc = standin_enter("cuMemAlloc");
    struct CUctx_st *ctx = NULL;
    tcu_deviceptr p = 0;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    standin_alloc *a = NULL;
    if (rc == TCU_SUCCESS) {
        rc =
            dptr ? pool_alloc(ctx, bytesize, ALLOC_PLAIN, &a) : TCU_ERROR_INVALID_VALUE;
    }
    if (rc == TCU_SUCCESS) {
        p = (tcu_deviceptr)a->base;
        *dptr = p;
    }
    return standin_leave(rc, "cuMemAlloc", "bytes=%zu, ptr=0x%llx", bytesize, p);
}

STANDIN_EXPORT tcu_result
cuMemAllocAsync(tcu_deviceptr *dptr, size_t bytesize, tcu_stream hStream)
{
    tcu_result rc = standin_enter("cuMemAllocAsync");
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    tcu_deviceptr p = 0;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        rc = standin_stream(ctx, hStream, &s);
    }
    standin_alloc *a = NULL;
    standin_op *op = NULL;
    if (rc == TCU_SUCCESS && !(op = standin_op_new(OP_ALLOC))) {
        rc = TCU_ERROR_OUT_OF_MEMORY;
    }
    if (rc == TCU_SUCCESS) {
        rc =
            dptr ? pool_alloc(ctx, bytesize, ALLOC_ASYNC, &a) : TCU_ERROR_INVALID_VALUE;
    }
    if (rc == TCU_SUCCESS) {
        /* Usable in stream order: after this operation of s, on s or on a stream
         * ordered after it, or anywhere once the host waited for it. */
        op->alloc = a;
        standin_enqueue(s, op);
        a->alloc_stream = s;
        a->alloc_seq = op->seq;
        p = (tcu_deviceptr)a->base;
        *dptr = p;
    }
    else {
        free(op);
    }
    return standin_leave(rc, "cuMemAllocAsync", "bytes=%zu, stream=%p, ptr=0x%llx",
                         bytesize, (void *)hStream, p);
}

/* Managed memory: host memory mapped read-write at the address handed out, so the
 * host may touch it as on the real driver, while the device side reads and writes it
 * through the same address when queued work runs (a host read before the
 * synchronization still sees stale bytes). */
static tcu_result
managed_alloc(struct CUctx_st *ctx, size_t nbytes, tcu_deviceptr *out)
{
    size_t len = align_up(nbytes, page_size());
    /* Shared, so that an emulated launch's child writes the parent's bytes. */
    void *m =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        return TCU_ERROR_OUT_OF_MEMORY;
    }
    standin_alloc *a = standin_alloc_add((uintptr_t)m, nbytes, m, ctx, ALLOC_MANAGED);
    if (!a) {
        munmap(m, len);
        return TCU_ERROR_OUT_OF_MEMORY;
    }
    memset(m, STANDIN_FILL, nbytes);
    *out = (tcu_deviceptr)a->base;
    return TCU_SUCCESS;
}

STANDIN_EXPORT tcu_result
cuMemAllocManaged(tcu_deviceptr *dptr, size_t bytesize, unsigned int flags)
{
    tcu_result rc = standin_enter("cuMemAllocManaged");
    struct CUctx_st *ctx = NULL;
    tcu_deviceptr p = 0;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        /* flags: exactly one of CU_MEM_ATTACH_GLOBAL and CU_MEM_ATTACH_HOST. */
        bool flags_ok = flags == TCU_MEM_ATTACH_GLOBAL || flags == TCU_MEM_ATTACH_HOST;
        rc = dptr && bytesize > 0 && flags_ok ? managed_alloc(ctx, bytesize, &p)
                                              : TCU_ERROR_INVALID_VALUE;
    }
    if (rc == TCU_SUCCESS) {
        *dptr = p;
    }
    return standin_leave(rc, "cuMemAllocManaged", "bytes=%zu, flags=%u, ptr=0x%llx",
                         bytesize, flags, p);
}

/* The allocation a free names: its exact start, live, not a VMM mapping. */
static tcu_result
freeable(struct CUctx_st *ctx, tcu_deviceptr dptr, standin_alloc **out)
{
    standin_alloc *a = standin_alloc_find((uintptr_t)dptr);
    if (!a || a->base != (uintptr_t)dptr || a->kind == ALLOC_VMM ||
        !alloc_usable(a, ctx)) {
        return TCU_ERROR_INVALID_VALUE; /* host, interior, freed or foreign pointer */
    }
    *out = a;
    return TCU_SUCCESS;
}

STANDIN_EXPORT tcu_result
cuMemFree_v2(tcu_deviceptr dptr)
{
    tcu_result rc = standin_enter("cuMemFree");
    struct CUctx_st *ctx = NULL;
    standin_alloc *a = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        rc = freeable(ctx, dptr, &a);
    }
    if (rc == TCU_SUCCESS) {
        /* cuMemFree waits for the context's work, as the driver's free does. */
        rc = standin_run_context(ctx);
    }
    if (rc == TCU_SUCCESS) {
        standin_alloc_release(a);
    }
    return standin_leave(rc, "cuMemFree", "ptr=0x%llx", dptr);
}

STANDIN_EXPORT tcu_result
cuMemFreeAsync(tcu_deviceptr dptr, tcu_stream hStream)
{
    tcu_result rc = standin_enter("cuMemFreeAsync");
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    standin_alloc *a = NULL;
    standin_op *op = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        rc = standin_stream(ctx, hStream, &s);
    }
    if (rc == TCU_SUCCESS) {
        rc = freeable(ctx, dptr, &a);
    }
    if (rc == TCU_SUCCESS && !(op = standin_op_new(OP_FREE))) {
        rc = TCU_ERROR_OUT_OF_MEMORY;
    }
    if (rc == TCU_SUCCESS) {
        /* From now on no new work may name it; queued work still may. */
        a->free_pending = true;
        a->free_stream = s;
        op->alloc = a;
        standin_enqueue(s, op);
        a->free_stamp = &op->stamp; /* what the free is ordered after */
    }
    return standin_leave(rc, "cuMemFreeAsync", "ptr=0x%llx, stream=%p", dptr,
                         (void *)hStream);
}

STANDIN_EXPORT tcu_result
cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    tcu_result rc = standin_enter("cuMemGetInfo");
    struct CUctx_st *ctx = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        if (!free_bytes || !total) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else {
            *total = pool_nbytes;
            *free_bytes = pool_cursor < pool_nbytes ? pool_nbytes - pool_cursor : 0;
        }
    }
    return standin_leave(rc, "cuMemGetInfo", "%s", "");
}

/* ---- copies and memsets ---------------------------------------------------------- */

/* One description of a copy or memset: a NULL device address means "host side". */
typedef struct transfer {
    const char *name;
    tcu_deviceptr dst_dev, src_dev;
    void *dst_host;
    const void *src_host;
    size_t nbytes;
    uint32_t pattern; /* memset: value and width; width 0 for a copy */
    unsigned width;
    tcu_stream stream;
    bool sync; /* a synchronous call: the legacy stream, run to this operation */
} transfer;

static tcu_result
host_side_ok(const void *p, size_t nbytes)
{
    /* Stricter: with unified addressing the driver would accept a device pointer where
     * host memory is expected and copy device to device; Tack must say what it means.
     */
    return p && !standin_in_device_view(p, nbytes) ? TCU_SUCCESS
                                                   : TCU_ERROR_INVALID_VALUE;
}

static tcu_result
queue_transfer(struct CUctx_st *ctx, const transfer *t)
{
    struct CUstream_st *s = ctx->legacy;
    tcu_result rc = t->sync ? TCU_SUCCESS : standin_stream(ctx, t->stream, &s);
    size_t nbytes = t->width ? t->nbytes * t->width : t->nbytes;
    if (rc != TCU_SUCCESS || nbytes == 0) {
        return rc; /* nothing to move is a success, as in the driver */
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
    if (rc == TCU_SUCCESS && !t->width) {
        if (t->src_dev) {
            rc = standin_device_range(ctx, t->src_dev, nbytes, false, &src);
            from = src.alias;
        }
        else {
            rc = host_side_ok(t->src_host, nbytes);
        }
    }
    if (rc != TCU_SUCCESS) {
        return rc;
    }
    standin_op *op = standin_op_new(dst.faults || src.faults ? OP_FAULT
                                    : t->width               ? OP_MEMSET
                                                             : OP_COPY);
    if (!op) {
        return TCU_ERROR_OUT_OF_MEMORY;
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
    return t->sync ? standin_run_until(s, s->last_seq) : TCU_SUCCESS;
}

static tcu_result
transfer_call(const transfer *t)
{
    tcu_result rc = standin_enter(t->name);
    struct CUctx_st *ctx = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        rc = queue_transfer(ctx, t);
    }
    /* A host address is logged as such; a device one as the 0x... it was given. */
    return standin_leave(
        rc, t->name, "dst=%s0x%llx, src=%s0x%llx, n=%zu, stream=%p",
        t->dst_dev ? "" : "host:",
        t->dst_dev ? t->dst_dev : (unsigned long long)(uintptr_t)t->dst_host,
        t->width     ? "value:"
        : t->src_dev ? ""
                     : "host:",
        t->width     ? t->pattern
        : t->src_dev ? t->src_dev
                     : (unsigned long long)(uintptr_t)t->src_host,
        t->nbytes, (void *)t->stream);
}

STANDIN_EXPORT tcu_result
cuMemcpyHtoD_v2(tcu_deviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    transfer t = {.name = "cuMemcpyHtoD",
                  .dst_dev = dstDevice,
                  .src_host = srcHost,
                  .nbytes = ByteCount,
                  .sync = true};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemcpyDtoH_v2(void *dstHost, tcu_deviceptr srcDevice, size_t ByteCount)
{
    transfer t = {.name = "cuMemcpyDtoH",
                  .dst_host = dstHost,
                  .src_dev = srcDevice,
                  .nbytes = ByteCount,
                  .sync = true};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemcpyDtoD_v2(tcu_deviceptr dstDevice, tcu_deviceptr srcDevice, size_t ByteCount)
{
    /* The driver documents device-to-device cuMemcpy as asynchronous with respect to
     * the host; the stand-in queues it on the legacy stream without running it. */
    transfer t = {.name = "cuMemcpyDtoD",
                  .dst_dev = dstDevice,
                  .src_dev = srcDevice,
                  .nbytes = ByteCount,
                  .stream = NULL};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemcpyHtoDAsync_v2(tcu_deviceptr dstDevice, const void *srcHost, size_t ByteCount,
                     tcu_stream hStream)
{
    transfer t = {.name = "cuMemcpyHtoDAsync",
                  .dst_dev = dstDevice,
                  .src_host = srcHost,
                  .nbytes = ByteCount,
                  .stream = hStream};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemcpyDtoHAsync_v2(void *dstHost, tcu_deviceptr srcDevice, size_t ByteCount,
                     tcu_stream hStream)
{
    transfer t = {.name = "cuMemcpyDtoHAsync",
                  .dst_host = dstHost,
                  .src_dev = srcDevice,
                  .nbytes = ByteCount,
                  .stream = hStream};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemcpyDtoDAsync_v2(tcu_deviceptr dstDevice, tcu_deviceptr srcDevice, size_t ByteCount,
                     tcu_stream hStream)
{
    transfer t = {.name = "cuMemcpyDtoDAsync",
                  .dst_dev = dstDevice,
                  .src_dev = srcDevice,
                  .nbytes = ByteCount,
                  .stream = hStream};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemsetD8Async(tcu_deviceptr dstDevice, unsigned char uc, size_t N, tcu_stream hStream)
{
    transfer t = {.name = "cuMemsetD8Async",
                  .dst_dev = dstDevice,
                  .nbytes = N,
                  .pattern = uc,
                  .width = 1,
                  .stream = hStream};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemsetD16Async(tcu_deviceptr dstDevice, unsigned short us, size_t N,
                 tcu_stream hStream)
{
    transfer t = {.name = "cuMemsetD16Async",
                  .dst_dev = dstDevice,
                  .nbytes = N,
                  .pattern = us,
                  .width = 2,
                  .stream = hStream};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemsetD32Async(tcu_deviceptr dstDevice, unsigned int ui, size_t N, tcu_stream hStream)
{
    transfer t = {.name = "cuMemsetD32Async",
                  .dst_dev = dstDevice,
                  .nbytes = N,
                  .pattern = ui,
                  .width = 4,
                  .stream = hStream};
    return transfer_call(&t);
}

/* ---- pointer attributes ---------------------------------------------------------- */

static bool
host_reachable(const standin_alloc *a)
{
    return a->kind == ALLOC_MANAGED || a->kind == ALLOC_PINNED;
}

/* Writes one attribute of a (possibly NULL: not a CUDA pointer) allocation. The value
 * types are those the driver documents: CUcontext, unsigned int, CUdeviceptr, void *,
 * unsigned long long, bool, int. */
static tcu_result
write_attribute(tcu_pointer_attribute attr, const standin_alloc *a, tcu_deviceptr ptr,
                void *data)
{
    switch (attr) {
    case TCU_POINTER_ATTRIBUTE_CONTEXT: {
        tcu_context c = a ? a->ctx : NULL;
        memcpy(data, &c, sizeof(tcu_context));
        return TCU_SUCCESS;
    }
    case TCU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
        /* Managed memory reads as device memory, as on Linux (the runtime documents
         * that either DEVICE or HOST may come back; IS_MANAGED is what tells). */
        unsigned v = !a                        ? 0
                     : a->kind == ALLOC_PINNED ? TCU_MEMORYTYPE_HOST
                                               : TCU_MEMORYTYPE_DEVICE;
        memcpy(data, &v, sizeof v);
        return TCU_SUCCESS;
    }
    case TCU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
        tcu_deviceptr v = a ? ptr : 0;
        memcpy(data, &v, sizeof v);
        return TCU_SUCCESS;
    }
    case TCU_POINTER_ATTRIBUTE_HOST_POINTER: {
        /* Managed and pinned memory are reached from the host at the same address;
         * device memory has no host address. */
        bool host = a && host_reachable(a);
        void *v = host ? (void *)(uintptr_t)ptr : NULL;
        memcpy(data, &v, sizeof v);
        return a && !host ? TCU_ERROR_INVALID_VALUE : TCU_SUCCESS;
    }
    case TCU_POINTER_ATTRIBUTE_BUFFER_ID: {
        unsigned long long v = a ? a->buffer_id : 0;
        memcpy(data, &v, sizeof v);
        return TCU_SUCCESS;
    }
    case TCU_POINTER_ATTRIBUTE_IS_MANAGED: {
        bool v = a && a->kind == ALLOC_MANAGED;
        memcpy(data, &v, sizeof v);
        return TCU_SUCCESS;
    }
    case TCU_POINTER_ATTRIBUTE_MAPPED: {
        bool v = a != NULL;
        memcpy(data, &v, sizeof v);
        return TCU_SUCCESS;
    }
    case TCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
        /* -2 for a pointer CUDA does not know (as documented, unverified on hardware).
         */
        int v = a ? a->device : -2;
        memcpy(data, &v, sizeof v);
        return TCU_SUCCESS;
    }
    case TCU_POINTER_ATTRIBUTE_RANGE_START_ADDR: {
        tcu_deviceptr v = !a ? 0 : a->kind == ALLOC_VMM ? a->reservation : a->base;
        memcpy(data, &v, sizeof v);
        return TCU_SUCCESS;
    }
    case TCU_POINTER_ATTRIBUTE_RANGE_SIZE: {
        size_t v = !a ? 0 : a->kind == ALLOC_VMM ? a->reservation_size : a->nbytes;
        memcpy(data, &v, sizeof v);
        return TCU_SUCCESS;
    }
    case TCU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: {
        unsigned long long v =
            a && a->kind == ALLOC_VMM ? TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0;
        memcpy(data, &v, sizeof v);
        return TCU_SUCCESS;
    }
    default: return TCU_ERROR_INVALID_VALUE;
    }
}

/* The allocation ptr points into, as pointer queries see it: live, or NULL. */
static const standin_alloc *
query_target(tcu_deviceptr ptr)
{
    const standin_alloc *a = standin_alloc_find((uintptr_t)ptr);
    if (!a || a->freed || (a->ctx && !a->ctx->alive)) {
        return NULL;
    }
    return a;
}

STANDIN_EXPORT tcu_result
cuPointerGetAttribute(void *data, tcu_pointer_attribute attribute, tcu_deviceptr ptr)
{
    tcu_result rc = standin_enter("cuPointerGetAttribute");
    if (rc == TCU_SUCCESS) {
        const standin_alloc *a = query_target(ptr);
        if (!data || !a) {
            rc = TCU_ERROR_INVALID_VALUE; /* not a CUDA pointer */
        }
        else {
            rc = write_attribute(attribute, a, ptr, data);
        }
    }
    return standin_leave(rc, "cuPointerGetAttribute", "attribute=%d, ptr=0x%llx",
                         attribute, ptr);
}

STANDIN_EXPORT tcu_result
cuPointerGetAttributes(unsigned int numAttributes, tcu_pointer_attribute *attributes,
                       void **data, tcu_deviceptr ptr)
{
    tcu_result rc = standin_enter("cuPointerGetAttributes");
    if (rc == TCU_SUCCESS) {
        if (numAttributes == 0 || !attributes || !data) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else {
            /* Unlike cuPointerGetAttribute, a pointer CUDA does not know is a success
             * with every attribute at its empty value. */
            const standin_alloc *a = query_target(ptr);
            for (unsigned k = 0; k < numAttributes && rc == TCU_SUCCESS; k++) {
                if (!data[k]) {
                    rc = TCU_ERROR_INVALID_VALUE;
                }
                else if (attributes[k] == TCU_POINTER_ATTRIBUTE_HOST_POINTER &&
                         !(a && host_reachable(a))) {
                    void *none = NULL;
                    memcpy(data[k], &none, sizeof(void *));
                }
                else {
                    rc = write_attribute(attributes[k], a, ptr, data[k]);
                }
            }
        }
    }
    return standin_leave(rc, "cuPointerGetAttributes", "n=%u, ptr=0x%llx",
                         numAttributes, ptr);
}

/* ---- the VMM address range ------------------------------------------------------- */

tcu_result
standin_vmm_reserve(size_t size, size_t alignment, uintptr_t *out)
{
    size_t a = alignment ? alignment : STANDIN_GRANULARITY;
    size_t off = align_up(vmm_cursor, a);
    if (off > STANDIN_VMM_VA || size > STANDIN_VMM_VA - off) {
        return TCU_ERROR_OUT_OF_MEMORY;
    }
    /* Addresses are never reused; a guard granule separates reservations. */
    vmm_cursor = off + size + STANDIN_GRANULARITY;
    *out = standin_vmm_base() + off;
    return TCU_SUCCESS;
}
