/*
 * cuda_context.c: opening a CUDA device, the context it works in, and the guard
 * every entry point runs under.
 *
 * Which context: the one current on the opening thread when it belongs to the
 * requested ordinal (a host that made its own context current meant it), else the
 * device's primary context, the one the CUDA runtime and so PyTorch, CuPy and Warp
 * use: a device pointer then means the same thing to all of them. The primary context
 * is retained once and never released (registry devices live until the process ends,
 * and releasing it at exit would race the driver's own teardown). An adopted context
 * that is not the primary one is a memory domain of its own: its arrays never meet the
 * primary context's arrays in one launch.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

static tack_status
sticky_failure(tack__cuda_state *s, tcu_result rc, const char *call)
{
    const char *name = "unknown error";
    if (s->drv->api.cuGetErrorName(rc, &name) != TCU_SUCCESS || !name) {
        name = "unknown error";
    }
    return tack__fail(
        TACK_ERR_DEVICE_UNAVAILABLE,
        "device cuda:%d is unusable: a kernel or copy failed with %s (%d), "
        "seen in %s, and CUDA keeps that error for the rest of the "
        "process; results written since the last synchronization may "
        "be incomplete: restart the process",
        s->ordinal, name, (int)rc, call);
}

tack_status
tack__cuda_check(tack__cuda_state *s, tcu_result rc, const char *call)
{
    if (rc == TCU_SUCCESS) {
        return TACK_OK;
    }
    if (tcu_is_sticky(rc)) {
        tcu_result none = TCU_SUCCESS;
        atomic_compare_exchange_strong(&s->sticky, &none, rc);
        return sticky_failure(s, rc, call);
    }
    return tack__cuda_error(s->drv, rc, call);
}

tack_status
tack__cuda_enter(tack__cuda_state *s, tack__cuda_guard *g)
{
    g->pushed = false;
    tcu_result sticky = atomic_load_explicit(&s->sticky, memory_order_acquire);
    if (sticky != TCU_SUCCESS) {
        return sticky_failure(s, sticky, "an earlier call");
    }
    tcu_context cur = NULL;
    tcu_result rc = s->drv->api.cuCtxGetCurrent(&cur);
    if (rc != TCU_SUCCESS) {
        return tack__cuda_check(s, rc, "cuCtxGetCurrent");
    }
    if (cur == s->ctx) {
        return TACK_OK;
    }
    if (!cur) {
        /* No context on this thread: make ours current and leave it so, as the CUDA
         * runtime does with the primary context; later calls then cost one query. */
        rc = s->drv->api.cuCtxSetCurrent(s->ctx);
        return tack__cuda_check(s, rc, "cuCtxSetCurrent");
    }
    rc = s->drv->api.cuCtxPushCurrent(s->ctx);
    if (rc != TCU_SUCCESS) {
        return tack__cuda_check(s, rc, "cuCtxPushCurrent");
    }
    g->pushed = true;
    return TACK_OK;
}

void
tack__cuda_leave(tack__cuda_state *s, tack__cuda_guard *g)
{
    if (g->pushed) {
        tcu_context popped = NULL;
        (void)s->drv->api.cuCtxPopCurrent(&popped); /* restores the caller's context */
        g->pushed = false;
    }
}

/* The context to work in (see the top of this file). Out: *ctx, *primary. */
static tack_status
choose_context(tack__cuda_state *s, tcu_context *ctx, bool *primary)
{
    const tack__cuda_api *api = &s->drv->api;
    tcu_context cur = NULL;
    tcu_result rc = api->cuCtxGetCurrent(&cur);
    if (rc != TCU_SUCCESS) {
        return tack__cuda_error(s->drv, rc, "cuCtxGetCurrent");
    }
    tcu_context prim = NULL;
    rc = api->cuDevicePrimaryCtxRetain(&prim, s->device);
    if (rc != TCU_SUCCESS) {
        return tack__cuda_error(s->drv, rc, "cuDevicePrimaryCtxRetain");
    }
    if (cur && cur != prim) {
        tcu_device cur_dev = -1;
        if (api->cuCtxGetDevice(&cur_dev) == TCU_SUCCESS && cur_dev == s->device) {
            /* A context of this device made current by the host: adopt it. The
             * primary context is not needed then. */
            (void)api->cuDevicePrimaryCtxRelease(s->device);
            *ctx = cur;
            *primary = false;
            return TACK_OK;
        }
    }
    *ctx = prim; /* retained: never released */
    *primary = true;
    return TACK_OK;
}

static tack_status
query_device(tack__cuda_state *s)
{
    const tack__cuda_api *api = &s->drv->api;
    int pools = 0, vmm = 0, fd = 0;
    if (api->cuDeviceGetAttribute(&pools, TCU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                  s->device) != TCU_SUCCESS) {
        pools = 0;
    }
    if (api->cuDeviceGetAttribute(
            &vmm, TCU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            s->device) != TCU_SUCCESS) {
        vmm = 0;
    }
    if (api->cuDeviceGetAttribute(
            &fd, TCU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
            s->device) != TCU_SUCCESS) {
        fd = 0;
    }
    s->pools = pools != 0;
    s->vmm = vmm != 0 && fd != 0;
    tcu_uuid uuid;
    memset(&uuid, 0, sizeof uuid);
    tcu_result rc = api->cuDeviceGetUuid(&uuid, s->device);
    if (rc != TCU_SUCCESS) {
        return tack__cuda_error(s->drv, rc, "cuDeviceGetUuid");
    }
    memcpy(s->uuid, uuid.bytes, sizeof s->uuid);
    if (s->vmm) {
        tcu_mem_allocation_prop prop;
        tack__cuda_vmm_prop(s->device, &prop);
        rc = api->cuMemGetAllocationGranularity(&s->granularity, &prop,
                                                TCU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
        if (rc != TCU_SUCCESS || s->granularity == 0) {
            s->vmm = false;
        }
    }
    return TACK_OK;
}

/* open after the driver and the device handle: the context, the stream, the
 * attributes. On failure everything made here is undone. */
static tack_status
open_state(tack__cuda_state *s)
{
    const tack__cuda_api *api = &s->drv->api;
    tack_status st = choose_context(s, &s->ctx, &s->primary);
    if (st != TACK_OK) {
        return st;
    }
    tack__cuda_guard g;
    st = tack__cuda_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    st = query_device(s);
    if (st == TACK_OK) {
        tcu_result rc = api->cuStreamCreate(&s->stream, TCU_STREAM_NON_BLOCKING);
        if (rc != TCU_SUCCESS) {
            st = tack__cuda_error(s->drv, rc, "cuStreamCreate");
        }
    }
    if (st == TACK_OK) {
        tcu_result rc = api->cuEventCreate(&s->handoff, TCU_EVENT_DISABLE_TIMING);
        if (rc != TCU_SUCCESS) {
            (void)api->cuStreamDestroy(s->stream);
            st = tack__cuda_error(s->drv, rc, "cuEventCreate");
        }
    }
    tack__cuda_leave(s, &g);
    /* A failed open keeps the primary context retained: it is never released, as
     * the next open retains it again and the driver counts. */
    return st;
}

tack_status
tack__cuda_open(const tack_backend *self, int ordinal,
                const tack_device_options *options, void **state)
{
    (void)self;
    if (options && options->external_context) {
        return tack__fail(TACK_ERR_UNKNOWN_OPTION,
                          "the cuda backend takes no external_context: make the "
                          "context current on this thread before the first use of "
                          "the device, and Tack adopts it");
    }
    const tack__cuda_driver *drv = NULL;
    tack_status st = tack__cuda_driver_get(&drv);
    if (st != TACK_OK) {
        return st;
    }
    int count = 0;
    tcu_result rc = drv->api.cuDeviceGetCount(&count);
    if (rc != TCU_SUCCESS) {
        return tack__cuda_error(drv, rc, "cuDeviceGetCount");
    }
    if (ordinal < 0 || ordinal >= count) {
        if (count == 0) {
            return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                              "the CUDA driver %s sees no CUDA device: use "
                              "tack.device('cpu')",
                              drv->path);
        }
        return tack__fail(TACK_ERR_UNKNOWN_DEVICE,
                          "there is no CUDA device %d: this machine has %d (0..%d)",
                          ordinal, count, count - 1);
    }
    tack__cuda_state *s;
    st = tack__new(sizeof *s, (void **)&s);
    if (st != TACK_OK) {
        return st;
    }
    memset(s, 0, sizeof *s);
    s->drv = drv;
    s->ordinal = ordinal;
    atomic_init(&s->sticky, TCU_SUCCESS);
    pthread_mutex_init(&s->vmm_lock, NULL);
    pthread_mutex_init(&s->handoff_lock, NULL);
    rc = drv->api.cuDeviceGet(&s->device, ordinal);
    st = rc == TCU_SUCCESS ? open_state(s) : tack__cuda_error(drv, rc, "cuDeviceGet");
    if (st != TACK_OK) {
        pthread_mutex_destroy(&s->vmm_lock);
        pthread_mutex_destroy(&s->handoff_lock);
        tack__free(s);
        return st;
    }
    tack__cuda_note_device(s);
    *state = s;
    return TACK_OK;
}

void
tack__cuda_close(void *state)
{
    /* Only devices opened with options are closed, and the cuda backend takes none;
     * registry devices live until the process ends. Kept for the table's contract. */
    tack__cuda_state *s = state;
    tack__cuda_guard g;
    if (tack__cuda_enter(s, &g) == TACK_OK) {
        (void)s->drv->api.cuStreamSynchronize(s->stream);
        (void)s->drv->api.cuEventDestroy(s->handoff);
        (void)s->drv->api.cuStreamDestroy(s->stream);
        tack__cuda_leave(s, &g);
    }
    pthread_mutex_destroy(&s->vmm_lock);
    pthread_mutex_destroy(&s->handoff_lock);
    tack__free(s);
}

uint64_t
tack__cuda_memory_domain(void *state, int ordinal)
{
    tack__cuda_state *s = state;
    if (s->primary) {
        return (uint64_t)ordinal + 1;
    }
    /* A context of its own: a domain no primary context shares (the high bit set). */
    return (uint64_t)(uintptr_t)s->ctx | ((uint64_t)1 << 63);
}

const char *
tack__cuda_driver_path(void *state)
{
    tack__cuda_state *s = state;
    return s->drv->path;
}
