/*
 * cuda_host.c: the CUDA layer's page-locked host memory entry points: cuMemHostAlloc
 * and cuMemFreeHost (memory the driver allocates), cuMemHostRegister and
 * cuMemHostUnregister (memory the caller owns, made known to the driver), over the
 * core's (tests/standin/core/standin_host.c).
 */
#include "cuda_layer.h"

STANDIN_EXPORT tcu_result
cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    standin_rc rc = standin_enter("cuMemHostAlloc");
    struct standin_context *ctx = NULL;
    void *m = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    unsigned known = TCU_MEMHOSTALLOC_PORTABLE | TCU_MEMHOSTALLOC_DEVICEMAP |
                     TCU_MEMHOSTALLOC_WRITECOMBINED;
    if (rc == STANDIN_OK) {
        rc = pp && !(Flags & ~known) ? standin_host_alloc(ctx, bytesize, &m)
                                     : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *pp = m;
    }
    return standin_leave(rc, "cuMemHostAlloc", "bytes=%zu, flags=%u, ptr=%p", bytesize,
                         Flags, rc == STANDIN_OK ? m : NULL);
}

/* cuMemFreeHost (host_owned: a cuMemHostAlloc block) and cuMemHostUnregister: p must
 * be the start of such a live range, else `missing`. */
static tcu_result
release_pinned(const char *name, void *p, bool host_owned, standin_rc missing)
{
    standin_rc rc = standin_enter(name);
    struct standin_context *ctx = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK) {
        rc = standin_host_release(p, host_owned, missing);
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
    if (rc == STANDIN_OK) {
        rc = !(Flags & ~known) ? standin_host_register(ctx, p, bytesize)
                               : STANDIN_ERR_INVALID_VALUE;
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
