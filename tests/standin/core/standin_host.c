/*
 * standin_host.c: page-locked host memory: blocks the driver allocates and host memory
 * the caller owns and registers with it.
 *
 * Both are host memory: the host reads and writes them at once, copies take them as
 * their host side, and pointer queries say host memory with the pointer as its own
 * host address. Stricter than unified addressing, which lets a kernel or a
 * device-to-device copy read pinned memory through the same pointer: the stand-in
 * refuses it as device memory, since Tack treats it as host memory (docs/cuda.md).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "standin.h"

static size_t
page_round(size_t n)
{
    long p = sysconf(_SC_PAGESIZE);
    size_t page = p > 0 ? (size_t)p : 4096u;
    return (n + page - 1) / page * page;
}

standin_rc
standin_host_alloc(struct standin_context *ctx, size_t nbytes, void **out)
{
    if (nbytes == 0) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    void *m = mmap(NULL, page_round(nbytes), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    standin_alloc *a = standin_alloc_add((uintptr_t)m, nbytes, m, ctx, ALLOC_PINNED);
    if (!a) {
        munmap(m, page_round(nbytes));
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    a->host_owned = true;
    memset(m, STANDIN_FILL, nbytes);
    *out = m;
    return STANDIN_OK;
}

standin_rc
standin_host_register(struct standin_context *ctx, void *p, size_t nbytes)
{
    if (!p || nbytes == 0 || standin_in_device_view(p, nbytes)) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    const standin_alloc *other = standin_host_overlapping(p, nbytes);
    if (other) {
        /* Pinned already (registered, or the driver's own block); managed memory is
         * the driver's too and cannot be registered. */
        return other->kind == ALLOC_PINNED ? STANDIN_ERR_HOST_MEMORY_ALREADY_REGISTERED
                                           : STANDIN_ERR_INVALID_VALUE;
    }
    return standin_alloc_add((uintptr_t)p, nbytes, p, ctx, ALLOC_PINNED)
               ? STANDIN_OK
               : STANDIN_ERR_OUT_OF_MEMORY;
}

standin_rc
standin_host_release(void *p, bool host_owned, standin_rc missing)
{
    standin_alloc *a = standin_alloc_find((uintptr_t)p);
    if (!a || a->kind != ALLOC_PINNED || a->host_owned != host_owned || a->freed ||
        a->base != (uintptr_t)p) {
        return missing;
    }
    /* A block's range stays reserved and faults (stricter: never reused); a
     * registered range is the caller's memory, left as it is. */
    standin_alloc_release(a);
    return STANDIN_OK;
}
