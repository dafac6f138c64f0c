/*
 * cuda_memory.c: device memory on Tack's stream.
 *
 * Every operation is queued on Tack's own non-blocking stream, so it is ordered after
 * the launches queued before it. A copy that involves host memory waits for its
 * stream before returning (the host buffer is the caller's, and it may be freed or
 * read at once); device-to-device copies and fills return once queued. The
 * synchronous cuMemcpyHtoD is never used: it runs on the legacy default stream, which
 * a non-blocking stream does not order against.
 */
#include <string.h>

#include "cuda_internal.h"

tack_status
tack__cuda_alloc_queued(tack__cuda_state *s, size_t nbytes, tcu_deviceptr *ptr)
{
    tcu_deviceptr p = 0;
    tcu_result rc = s->pools ? s->drv->api.cuMemAllocAsync(&p, nbytes, s->stream)
                             : s->drv->api.cuMemAlloc(&p, nbytes);
    tack_status st =
        tack__cuda_check(s, rc, s->pools ? "cuMemAllocAsync" : "cuMemAlloc");
    if (st == TACK_OK) {
        *ptr = p;
    }
    return st;
}

void
tack__cuda_free_queued(tack__cuda_state *s, tcu_deviceptr ptr)
{
    /* Stream-ordered: the memory returns to the pool after the work queued on it. */
    (void)(s->pools ? s->drv->api.cuMemFreeAsync(ptr, s->stream)
                    : s->drv->api.cuMemFree(ptr));
}

tack_status
tack__cuda_alloc(void *state, size_t nbytes, bool exportable, void **ptr)
{
    tack__cuda_state *s = state;
    if (nbytes == 0 && !exportable) {
        *ptr = NULL; /* a buffer of no bytes has no address; free ignores NULL */
        return TACK_OK;
    }
    tack__cuda_guard g;
    tack_status st = tack__cuda_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    if (exportable) {
        st = tack__cuda_vmm_alloc(s, nbytes ? nbytes : 1, ptr); /* has a handle */
    }
    else {
        tcu_deviceptr p = 0;
        st = tack__cuda_alloc_queued(s, nbytes, &p);
        if (st == TACK_OK) {
            *ptr = (void *)(uintptr_t)p;
        }
    }
    tack__cuda_leave(s, &g);
    return st;
}

void
tack__cuda_free(void *state, void *ptr)
{
    tack__cuda_state *s = state;
    if (!ptr) {
        return;
    }
    /* Release runs from any thread, and at interpreter exit possibly after the driver
     * has shut down: then the memory is leaked, never touched. A context with a
     * sticky error cannot free either; the process is going to restart. */
    tack__cuda_guard g;
    bool ok = tack__cuda_enter(s, &g) == TACK_OK;
    if (tack__cuda_vmm_free(s, ptr, ok)) {
        if (ok) {
            tack__cuda_leave(s, &g);
        }
        return;
    }
    if (!ok) {
        return;
    }
    tack__cuda_free_queued(s, (tcu_deviceptr)(uintptr_t)ptr);
    tack__cuda_leave(s, &g);
}

/* One copy queued on Tack's stream; waits when host memory is involved. */
static tack_status
copy_queued(tack__cuda_state *s, void *dst, const void *src, size_t nbytes,
            tack_copy_kind kind)
{
    const tack__cuda_api *api = &s->drv->api;
    tcu_result rc;
    switch (kind) {
    case TACK_COPY_HOST_TO_DEVICE:
        rc = api->cuMemcpyHtoDAsync((tcu_deviceptr)(uintptr_t)dst, src, nbytes,
                                    s->stream);
        break;
    case TACK_COPY_DEVICE_TO_HOST:
        rc = api->cuMemcpyDtoHAsync(dst, (tcu_deviceptr)(uintptr_t)src, nbytes,
                                    s->stream);
        break;
    case TACK_COPY_DEVICE_TO_DEVICE:
    default:
        rc = api->cuMemcpyDtoDAsync((tcu_deviceptr)(uintptr_t)dst,
                                    (tcu_deviceptr)(uintptr_t)src, nbytes, s->stream);
        return tack__cuda_check(s, rc, "cuMemcpyDtoDAsync");
    }
    tack_status st = tack__cuda_check(
        s, rc,
        kind == TACK_COPY_HOST_TO_DEVICE ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync");
    if (st != TACK_OK) {
        return st;
    }
    return tack__cuda_check(s, api->cuStreamSynchronize(s->stream),
                            "cuStreamSynchronize");
}

tack_status
tack__cuda_copy(void *state, void *dst, const void *src, size_t nbytes,
                tack_copy_kind kind)
{
    tack__cuda_state *s = state;
    if (nbytes == 0) {
        return TACK_OK;
    }
    tack__cuda_guard g;
    tack_status st = tack__cuda_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    st = copy_queued(s, dst, src, nbytes, kind);
    tack__cuda_leave(s, &g);
    return st;
}

/* Whether the pattern is one 4-byte (or 2-, or 1-byte) word repeated: then the
 * driver's memset fills it, with the widest such word (fewer, wider stores).
 * Out: *word, *word_size. */
static bool
repeating_word(const unsigned char *pattern, size_t n, uint32_t *word,
               size_t *word_size)
{
    static const size_t sizes[] = {4, 2, 1};
    for (size_t k = 0; k < 3; k++) {
        size_t w = sizes[k];
        if (n % w != 0) {
            continue;
        }
        bool same = true;
        for (size_t i = w; i < n && same; i++) {
            same = pattern[i] == pattern[i % w];
        }
        if (same) {
            uint32_t v = 0;
            memcpy(&v, pattern, w); /* host byte order, as memset reads it back */
            *word = v;
            *word_size = w;
            return true;
        }
    }
    return false;
}

/* A pattern no memset writes (an 8-, 12- or 16-byte element that is not one word
 * repeated): the first element is copied from the host, then the filled prefix is
 * doubled with device-to-device copies, log2(count) of them, all on Tack's stream. */
static tack_status
fill_by_doubling(tack__cuda_state *s, unsigned char *dst, const void *pattern,
                 size_t pattern_nbytes, size_t count)
{
    /* The host copy waits for the stream, so the pattern (the caller's stack) can go.
     */
    tack_status st =
        copy_queued(s, dst, pattern, pattern_nbytes, TACK_COPY_HOST_TO_DEVICE);
    size_t done = 1;
    while (st == TACK_OK && done < count) {
        size_t n = done < count - done ? done : count - done;
        st = copy_queued(s, dst + done * pattern_nbytes, dst, n * pattern_nbytes,
                         TACK_COPY_DEVICE_TO_DEVICE);
        done += n;
    }
    return st;
}

tack_status
tack__cuda_fill(void *state, void *dst, const void *pattern, size_t pattern_nbytes,
                size_t count)
{
    tack__cuda_state *s = state;
    if (count == 0) {
        return TACK_OK;
    }
    tack__cuda_guard g;
    tack_status st = tack__cuda_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    const tack__cuda_api *api = &s->drv->api;
    tcu_deviceptr p = (tcu_deviceptr)(uintptr_t)dst;
    uint32_t word = 0;
    size_t w = 0;
    if (repeating_word(pattern, pattern_nbytes, &word, &w)) {
        size_t n = count * (pattern_nbytes / w);
        tcu_result rc =
            w == 1   ? api->cuMemsetD8Async(p, (unsigned char)word, n, s->stream)
            : w == 2 ? api->cuMemsetD16Async(p, (unsigned short)word, n, s->stream)
                     : api->cuMemsetD32Async(p, word, n, s->stream);
        st = tack__cuda_check(s, rc, "cuMemsetAsync");
    }
    else {
        st = fill_by_doubling(s, dst, pattern, pattern_nbytes, count);
    }
    tack__cuda_leave(s, &g);
    return st;
}

tack_status
tack__cuda_copy_peer(void *state, void *dst, void *src_state, const void *src,
                     size_t nbytes)
{
    tack__cuda_state *d = state, *s = src_state;
    if (nbytes == 0) {
        return TACK_OK;
    }
    /* The copy reads the source after its device's queued writes, and the source's
     * device waits for the copy before anything it queues later (a write, or the
     * stream-ordered free of the source) can touch that memory. */
    tack_status st = tack__cuda_handoff(s, d);
    tack__cuda_guard g;
    if (st == TACK_OK && (st = tack__cuda_enter(d, &g)) == TACK_OK) {
        st = tack__cuda_check(
            d,
            d->drv->api.cuMemcpyPeerAsync((tcu_deviceptr)(uintptr_t)dst, d->ctx,
                                          (tcu_deviceptr)(uintptr_t)src, s->ctx, nbytes,
                                          d->stream),
            "cuMemcpyPeerAsync");
        tack__cuda_leave(d, &g);
    }
    return st == TACK_OK ? tack__cuda_handoff(d, s) : st;
}

tack_status
tack__cuda_copy_2d(void *state, void *dst, size_t dst_pitch, const void *src,
                   size_t src_pitch, size_t width, size_t height)
{
    tack__cuda_state *s = state;
    tcu_memcpy2d c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = TCU_MEMORYTYPE_DEVICE; /* managed memory is device memory too */
    c.srcDevice = (tcu_deviceptr)(uintptr_t)src;
    c.srcPitch = src_pitch;
    c.dstMemoryType = TCU_MEMORYTYPE_DEVICE;
    c.dstDevice = (tcu_deviceptr)(uintptr_t)dst;
    c.dstPitch = dst_pitch;
    c.WidthInBytes = width;
    c.Height = height;
    tack__cuda_guard g;
    tack_status st = tack__cuda_enter(s, &g);
    if (st == TACK_OK) {
        st = tack__cuda_check(s, s->drv->api.cuMemcpy2DAsync(&c, s->stream),
                              "cuMemcpy2DAsync");
        tack__cuda_leave(s, &g);
    }
    return st;
}
