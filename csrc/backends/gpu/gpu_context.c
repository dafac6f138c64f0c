/*
 * gpu_context.c: opening a device of a CUDA-like driver, the context it works in, and
 * the guard every entry point runs under.
 *
 * Which context: the one current on the opening thread when it belongs to the
 * requested ordinal (a host that made its own context current meant it), else the
 * device's primary context, the one the vendor's runtime and so PyTorch, CuPy and
 * Warp use: a device pointer then means the same thing to all of them. The primary
 * context is retained once and never released (registry devices live until the
 * process ends, and releasing it at exit would race the driver's own teardown). An
 * adopted context that is not the primary one is a memory domain of its own: its
 * arrays never meet the primary context's arrays in one launch.
 */
#include <stdio.h>
#include <string.h>

#include "gpu_internal.h"

tack_status
tack__gpu_enter(tack__gpu_state *s, tack__gpu_guard *g)
{
    g->pushed = false;
    tack__gpu_result sticky = atomic_load_explicit(&s->sticky, memory_order_acquire);
    if (sticky != TACK__GPU_SUCCESS) {
        return tack__gpu_sticky_failure(s, sticky, "an earlier call");
    }
    const tack__gpu_api *api = &s->drv->api;
    tack__gpu_context cur = NULL;
    tack__gpu_result rc = api->context_get_current(&cur);
    if (rc != TACK__GPU_SUCCESS) {
        return tack__gpu_check(s, rc, TACK__GPU_NAME(s, context_get_current));
    }
    if (cur == s->ctx) {
        return TACK_OK;
    }
    if (!cur) {
        /* No context on this thread: make ours current and leave it so, as the
         * vendor's runtime does with the primary context; later calls then cost one
         * query. */
        return TACK__GPU_CHECKED(s, context_set_current, s->ctx);
    }
    rc = api->context_push(s->ctx);
    if (rc != TACK__GPU_SUCCESS) {
        return tack__gpu_check(s, rc, TACK__GPU_NAME(s, context_push));
    }
    g->pushed = true;
    return TACK_OK;
}

void
tack__gpu_leave(tack__gpu_state *s, tack__gpu_guard *g)
{
    if (g->pushed) {
        tack__gpu_context popped = NULL;
        (void)s->drv->api.context_pop(&popped); /* restores the caller's context */
        g->pushed = false;
    }
}

/* The context to work in (see the top of this file). Out: *ctx, *primary. */
static tack_status
choose_context(tack__gpu_state *s, tack__gpu_context *ctx, bool *primary)
{
    const tack__gpu_driver *drv = s->drv;
    const tack__gpu_api *api = &drv->api;
    tack__gpu_context cur = NULL;
    tack__gpu_result rc = api->context_get_current(&cur);
    if (rc != TACK__GPU_SUCCESS) {
        return tack__gpu_error(drv, rc, drv->names->context_get_current);
    }
    tack__gpu_context prim = NULL;
    rc = api->primary_context_retain(&prim, s->device);
    if (rc != TACK__GPU_SUCCESS) {
        return tack__gpu_error(drv, rc, drv->names->primary_context_retain);
    }
    if (cur && cur != prim) {
        tack__gpu_device cur_dev = -1;
        if (api->context_get_device(&cur_dev) == TACK__GPU_SUCCESS &&
            cur_dev == s->device) {
            /* A context of this device made current by the host: adopt it. The
             * primary context is not needed then. */
            (void)api->primary_context_release(s->device);
            *ctx = cur;
            *primary = false;
            return TACK_OK;
        }
    }
    *ctx = prim; /* retained: never released */
    *primary = true;
    return TACK_OK;
}

/* open after the driver and the device handle: the context, the device's facts, the
 * stream and the handoff event. On failure everything made here is undone. */
static tack_status
open_state(tack__gpu_state *s)
{
    const tack__gpu_driver *drv = s->drv;
    const tack__gpu_api *api = &drv->api;
    tack_status st = choose_context(s, &s->ctx, &s->primary);
    if (st != TACK_OK) {
        return st;
    }
    tack__gpu_guard g;
    st = tack__gpu_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    tack__gpu_result rc = api->device_info(s->device, &s->info);
    if (rc != TACK__GPU_SUCCESS) {
        st = tack__gpu_error(drv, rc, drv->names->device_info);
    }
    if (st == TACK_OK && (rc = api->stream_create(&s->stream)) != TACK__GPU_SUCCESS) {
        st = tack__gpu_error(drv, rc, drv->names->stream_create);
    }
    if (st == TACK_OK && (rc = api->event_create(&s->handoff)) != TACK__GPU_SUCCESS) {
        (void)api->stream_destroy(s->stream);
        st = tack__gpu_error(drv, rc, drv->names->event_create);
    }
    tack__gpu_leave(s, &g);
    /* A failed open keeps the primary context retained: it is never released, as
     * the next open retains it again and the driver counts. */
    return st;
}

tack_status
tack__gpu_refuse_options(const tack_backend *self, const tack_device_options *options)
{
    if (options && options->external_context) {
        return tack__fail(TACK_ERR_UNKNOWN_OPTION,
                          "the %s backend takes no external_context: make the "
                          "context current on this thread before the first use of "
                          "the device, and Tack adopts it",
                          self->name);
    }
    return TACK_OK;
}

tack_status
tack__gpu_open(const tack__gpu_driver *drv, int ordinal, void **state)
{
    int count = 0;
    tack__gpu_result rc = drv->api.device_count(&count);
    if (rc != TACK__GPU_SUCCESS) {
        return tack__gpu_error(drv, rc, drv->names->device_count);
    }
    if (ordinal < 0 || ordinal >= count) {
        if (count == 0) {
            return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                              "the %s driver %s sees no %s device: use "
                              "tack.device('cpu')",
                              drv->vendor->platform, drv->path, drv->vendor->platform);
        }
        return tack__fail(TACK_ERR_UNKNOWN_DEVICE,
                          "there is no %s device %d: this machine has %d (0..%d)",
                          drv->vendor->platform, ordinal, count, count - 1);
    }
    tack__gpu_state *s;
    tack_status st = tack__new(sizeof *s, (void **)&s);
    if (st != TACK_OK) {
        return st;
    }
    memset(s, 0, sizeof *s);
    s->drv = drv;
    s->ordinal = ordinal;
    atomic_init(&s->sticky, TACK__GPU_SUCCESS);
    pthread_mutex_init(&s->vmm_lock, NULL);
    pthread_mutex_init(&s->handoff_lock, NULL);
    rc = drv->api.device_get(&s->device, ordinal);
    st = rc == TACK__GPU_SUCCESS ? open_state(s)
                                 : tack__gpu_error(drv, rc, drv->names->device_get);
    if (st != TACK_OK) {
        pthread_mutex_destroy(&s->vmm_lock);
        pthread_mutex_destroy(&s->handoff_lock);
        tack__free(s);
        return st;
    }
    *state = s;
    return TACK_OK;
}

void
tack__gpu_close(void *state)
{
    /* Only devices opened with options are closed, and the CUDA-like backends take
     * none; registry devices live until the process ends. Kept for the table's
     * contract. */
    tack__gpu_state *s = state;
    tack__gpu_guard g;
    if (tack__gpu_enter(s, &g) == TACK_OK) {
        (void)s->drv->api.stream_synchronize(s->stream);
        (void)s->drv->api.event_destroy(s->handoff);
        (void)s->drv->api.stream_destroy(s->stream);
        tack__gpu_leave(s, &g);
    }
    pthread_mutex_destroy(&s->vmm_lock);
    pthread_mutex_destroy(&s->handoff_lock);
    tack__free(s);
}

uint64_t
tack__gpu_memory_domain(void *state, int ordinal)
{
    tack__gpu_state *s = state;
    if (s->primary) {
        return (uint64_t)ordinal + 1;
    }
    /* A context of its own: a domain no primary context shares (the high bit set). */
    return (uint64_t)(uintptr_t)s->ctx | ((uint64_t)1 << 63);
}

const char *
tack__gpu_driver_path(void *state)
{
    tack__gpu_state *s = state;
    return s->drv->path;
}
