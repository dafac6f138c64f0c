/*
 * level_zero_memory.c: device memory of the level_zero backend: allocation in the
 * device's context, copies and fills through Tack's command list, pointer queries.
 *
 * Ordering: every command is followed by a barrier, so the list runs in the order Tack
 * appended it. A copy from or to the host, and a fill, wait for the list to finish
 * before returning, because the host memory they read (the caller's buffer, the fill
 * pattern) may be gone right after; device-to-device copies stay queued until the next
 * synchronization. A free first executes what is queued, then gives the memory back
 * after that work: with zeMemFreeExt's deferred policy where the driver has it
 * (API 1.3), else with zeMemFree once the queue is synchronized.
 */
#include <stdlib.h>
#include <string.h>

#include "level_zero_kernel.h"

/* Executes the list if it holds commands; with wait, also synchronizes the queue and
 * makes the list writable again. Call with s->lock held. */
tack_status
tack__ze_flush_locked(tack__ze_state *s, bool wait)
{
    const tze_api *api = &s->ze->api;
    if (s->appended) {
        if (s->in_flight) {
            return tack__fail(TACK_ERR_INTERNAL,
                              "level_zero: commands appended to an executing list");
        }
        tze_result rc = api->zeCommandListClose(s->list);
        if (rc == TZE_RESULT_SUCCESS) {
            rc = api->zeCommandQueueExecuteCommandLists(s->queue, 1, &s->list, NULL);
        }
        if (rc != TZE_RESULT_SUCCESS) {
            /* The list is dropped: its commands will not run. */
            (void)api->zeCommandListReset(s->list);
            s->appended = 0;
            return tack__ze_error(rc, "zeCommandQueueExecuteCommandLists");
        }
        s->appended = 0;
        s->in_flight = true;
    }
    if (wait && s->in_flight) {
        tze_result rc = api->zeCommandQueueSynchronize(s->queue, UINT64_MAX);
        s->in_flight = false;
        tze_result reset = api->zeCommandListReset(s->list);
        if (rc != TZE_RESULT_SUCCESS) {
            return tack__ze_error(rc, "zeCommandQueueSynchronize");
        }
        if (reset != TZE_RESULT_SUCCESS) {
            return tack__ze_error(reset, "zeCommandListReset");
        }
    }
    return TACK_OK;
}

/* Makes the list writable: an executed list is waited for first. */
tack_status
tack__ze_writable_locked(tack__ze_state *s)
{
    return s->in_flight ? tack__ze_flush_locked(s, true) : TACK_OK;
}

/* After a command was appended: the barrier that orders it before the next one. */
tack_status
tack__ze_appended_locked(tack__ze_state *s, tze_result rc, const char *call)
{
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, call);
    }
    s->appended++;
    rc = s->ze->api.zeCommandListAppendBarrier(s->list, NULL, 0, NULL);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeCommandListAppendBarrier");
    }
    s->appended++;
    return TACK_OK;
}

tack_status
tack__ze_alloc(void *state, size_t nbytes, bool exportable, void **ptr)
{
    tack__ze_state *s = state;
    if (exportable) {
        return tack__fail(TACK_ERR_UNSUPPORTED,
                          "Level Zero memory cannot be exported as an OS handle: "
                          "export_memory is for CUDA devices; share it through DLPack");
    }
    if (nbytes == 0) {
        *ptr = NULL; /* a buffer of no bytes has no address; free ignores NULL */
        return TACK_OK;
    }
    tze_device_mem_alloc_desc desc = {TZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0,
                                      0};
    void *p = NULL;
    /* Alignment 0 is the driver's default, at least what any element type needs. */
    tze_result rc =
        s->ze->api.zeMemAllocDevice(s->context, &desc, nbytes, 0, s->device, &p);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeMemAllocDevice");
    }
    *ptr = p;
    return TACK_OK;
}

void
tack__ze_free(void *state, void *ptr)
{
    tack__ze_state *s = state;
    if (!ptr || tack__process_exiting()) {
        return; /* at exit the memory goes with the process (docs/level_zero.md) */
    }
    const tze_api *api = &s->ze->api;
    pthread_mutex_lock(&s->lock);
    /* The queued work may still use the memory: it is executed first. A failure
     * leaves nothing to wait for, and the memory is freed all the same. */
    (void)tack__ze_flush_locked(s, false);
    bool freed = false;
    if (s->free_ext && s->in_flight) {
        tze_memory_free_ext_desc desc = {
            TZE_STRUCTURE_TYPE_MEMORY_FREE_EXT_DESC, NULL,
            TZE_DRIVER_MEMORY_FREE_POLICY_EXT_FLAG_DEFER_FREE};
        tze_result rc = api->zeMemFreeExt(s->context, &desc, ptr);
        freed = rc == TZE_RESULT_SUCCESS;
        if (tack__ze_unsupported(rc)) {
            s->free_ext = false; /* the driver left it out: zeMemFree from now on */
        }
    }
    if (!freed) {
        (void)tack__ze_flush_locked(s, true);
        (void)api->zeMemFree(s->context, ptr);
    }
    pthread_mutex_unlock(&s->lock);
}

tack_status
tack__ze_copy(void *state, void *dst, const void *src, size_t nbytes,
              tack_copy_kind kind)
{
    tack__ze_state *s = state;
    if (nbytes == 0) {
        return TACK_OK;
    }
    pthread_mutex_lock(&s->lock);
    tack_status st = tack__ze_writable_locked(s);
    if (st == TACK_OK) {
        tze_result rc = s->ze->api.zeCommandListAppendMemoryCopy(s->list, dst, src,
                                                                 nbytes, NULL, 0, NULL);
        st = tack__ze_appended_locked(s, rc, "zeCommandListAppendMemoryCopy");
    }
    if (st == TACK_OK && kind != TACK_COPY_DEVICE_TO_DEVICE) {
        st = tack__ze_flush_locked(
            s, true); /* the host side is the caller's, valid only now */
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* A fill whose pattern zeCommandListAppendMemoryFill cannot take (not a power of two,
 * as a 12-byte vec3f): whole patterns are staged on the host, copied once, then
 * doubled on the device. */
static tack_status
fill_by_copies_locked(tack__ze_state *s, char *dst, const void *pattern, size_t psize,
                      size_t count)
{
    size_t total = psize * count;
    size_t first = count < 4096 / psize + 1 ? count : 4096 / psize + 1;
    char *stage = malloc(first * psize);
    if (!stage) {
        return tack__fail(TACK_ERR_NO_MEMORY, "out of host memory staging a fill");
    }
    for (size_t k = 0; k < first; k++) {
        memcpy(stage + k * psize, pattern, psize);
    }
    const tze_api *api = &s->ze->api;
    tze_result rc = api->zeCommandListAppendMemoryCopy(s->list, dst, stage,
                                                       first * psize, NULL, 0, NULL);
    tack_status st = tack__ze_appended_locked(s, rc, "zeCommandListAppendMemoryCopy");
    if (st == TACK_OK) {
        st = tack__ze_flush_locked(s, true);
    }
    free(stage);
    for (size_t done = first * psize; st == TACK_OK && done < total;) {
        size_t n = done < total - done ? done : total - done;
        rc = api->zeCommandListAppendMemoryCopy(s->list, dst + done, dst, n, NULL, 0,
                                                NULL);
        st = tack__ze_appended_locked(s, rc, "zeCommandListAppendMemoryCopy");
        done += n;
    }
    return st;
}

tack_status
tack__ze_fill(void *state, void *dst, const void *pattern, size_t pattern_nbytes,
              size_t count)
{
    tack__ze_state *s = state;
    if (count == 0 || pattern_nbytes == 0) {
        return TACK_OK;
    }
    pthread_mutex_lock(&s->lock);
    tack_status st = tack__ze_writable_locked(s);
    bool native = pattern_nbytes <= s->fill_pattern &&
                  (pattern_nbytes & (pattern_nbytes - 1)) == 0;
    if (st == TACK_OK && native) {
        tze_result rc = s->ze->api.zeCommandListAppendMemoryFill(
            s->list, dst, pattern, pattern_nbytes, pattern_nbytes * count, NULL, 0,
            NULL);
        st = tack__ze_appended_locked(s, rc, "zeCommandListAppendMemoryFill");
    }
    else if (st == TACK_OK) {
        st = fill_by_copies_locked(s, dst, pattern, pattern_nbytes, count);
    }
    if (st == TACK_OK) {
        st = tack__ze_flush_locked(
            s, true); /* the pattern is the caller's, valid only now */
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

tack_status
tack__ze_memory_space(void *state, const void *ptr, tack_memory_space *out)
{
    tack__ze_state *s = state;
    tze_memory_allocation_properties props;
    memset(&props, 0, sizeof props);
    props.stype = TZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
    tze_device owner = NULL;
    tze_result rc = s->ze->api.zeMemGetAllocProperties(s->context, ptr, &props, &owner);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeMemGetAllocProperties");
    }
    switch (props.type) {
    case TZE_MEMORY_TYPE_DEVICE:
        *out = owner == s->device ? TACK_MEMORY_DEVICE : TACK_MEMORY_UNKNOWN;
        break;
    case TZE_MEMORY_TYPE_SHARED:
        *out = owner == s->device || !owner ? TACK_MEMORY_MANAGED : TACK_MEMORY_UNKNOWN;
        break;
    case TZE_MEMORY_TYPE_HOST: *out = TACK_MEMORY_PINNED; break;
    default:
        *out = TACK_MEMORY_HOST; /* not memory of this context */
        break;
    }
    return TACK_OK;
}

tack_status
tack__ze_synchronize(void *state)
{
    tack__ze_state *s = state;
    pthread_mutex_lock(&s->lock);
    tack_status st = tack__ze_flush_locked(s, true);
    pthread_mutex_unlock(&s->lock);
    return st;
}
