/*
 * standin_host.c: page-locked host memory of the stand-in driver: cuMemHostAlloc and
 * cuMemFreeHost (memory the driver allocates), cuMemHostRegister and
 * cuMemHostUnregister (memory the caller owns, made known to the driver).
 *
 * Both are host memory: the host reads and writes them at once, copies take them as
 * their host side, and pointer queries say CU_MEMORYTYPE_HOST with the pointer as its
 * own host address. Stricter than unified addressing, which lets a kernel or a
 * device-to-device copy read pinned memory through the same pointer: the stand-in
 * refuses it as device memory, since Tack treats it as host memory (docs/cuda.md).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_layer.h"

static size_t
page_round(size_t n)
{
    long p = sysconf(_SC_PAGESIZE);
    size_t page = p > 0 ? (size_t)p : 4096u;
    return (n + page - 1) / page * page;
}

STANDIN_EXPORT tcu_result
cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    standin_rc rc = standin_enter("cuMemHostAlloc");
    struct standin_context *ctx = NULL;
    void *m = MAP_FAILED;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    unsigned known = TCU_MEMHOSTALLOC_PORTABLE | TCU_MEMHOSTALLOC_DEVICEMAP |
                     TCU_MEMHOSTALLOC_WRITECOMBINED;
    if (rc == STANDIN_OK && (!pp || bytesize == 0 || (Flags & ~known))) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        m = mmap(NULL, page_round(bytesize), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        rc = m == MAP_FAILED ? STANDIN_ERR_OUT_OF_MEMORY : STANDIN_OK;
    }
    standin_alloc *a = NULL;
    if (rc == STANDIN_OK &&
        !(a = standin_alloc_add((uintptr_t)m, bytesize, m, ctx, ALLOC_PINNED))) {
        munmap(m, page_round(bytesize));
        rc = STANDIN_ERR_OUT_OF_MEMORY;
    }
    if (rc == STANDIN_OK) {
        a->host_owned = true;
        memset(m, STANDIN_FILL, bytesize);
        *pp = m;
    }
    return standin_leave(rc, "cuMemHostAlloc", "bytes=%zu, flags=%u, ptr=%p", bytesize,
                         Flags, rc == STANDIN_OK ? m : NULL);
}

/* cuMemFreeHost (host_owned: a cuMemHostAlloc block) and cuMemHostUnregister: p must
 * be the start of such a live range, else `missing`. */
static standin_rc
release_pinned(const char *name, void *p, bool host_owned, standin_rc missing)
{
    standin_rc rc = standin_enter(name);
    struct standin_context *ctx = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    standin_alloc *a = rc == STANDIN_OK ? standin_alloc_find((uintptr_t)p) : NULL;
    if (rc == STANDIN_OK &&
        (!a || a->kind != ALLOC_PINNED || a->host_owned != host_owned || a->freed ||
         a->base != (uintptr_t)p)) {
        rc = missing;
    }
    if (rc == STANDIN_OK) {
        /* A block's range stays reserved and faults (stricter: never reused); a
         * registered range is the caller's memory, left as it is. */
        standin_alloc_release(a);
    }
    return standin_leave(rc, name, "ptr=%p", p);
}

STANDIN_EXPORT tcu_result
cuMemFreeHost(void *p)
{
    return release_pinned("cuMemFreeHost", p, true, STANDIN_ERR_INVALID_VALUE);
}

STANDIN_EXPORT tcu_result
cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    standin_rc rc = standin_enter("cuMemHostRegister");
    struct standin_context *ctx = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    unsigned known = TCU_MEMHOSTREGISTER_PORTABLE | TCU_MEMHOSTREGISTER_DEVICEMAP |
                     TCU_MEMHOSTREGISTER_IOMEMORY | TCU_MEMHOSTREGISTER_READ_ONLY;
    if (rc == STANDIN_OK && (!p || bytesize == 0 || (Flags & ~known) ||
                             standin_in_device_view(p, bytesize))) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    const standin_alloc *other =
        rc == STANDIN_OK ? standin_host_overlapping(p, bytesize) : NULL;
    if (other) {
        /* Pinned already (registered, or the driver's own block); managed memory is
         * the driver's too and cannot be registered. */
        rc = other->kind == ALLOC_PINNED ? STANDIN_ERR_HOST_MEMORY_ALREADY_REGISTERED
                                         : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK &&
        !standin_alloc_add((uintptr_t)p, bytesize, p, ctx, ALLOC_PINNED)) {
        rc = STANDIN_ERR_OUT_OF_MEMORY;
    }
    return standin_leave(rc, "cuMemHostRegister", "ptr=%p, bytes=%zu, flags=%u", p,
                         bytesize, Flags);
}

STANDIN_EXPORT tcu_result
cuMemHostUnregister(void *p)
{
    return release_pinned("cuMemHostUnregister", p, false,
                          STANDIN_ERR_HOST_MEMORY_NOT_REGISTERED);
}
