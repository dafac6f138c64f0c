/*
 * gpu_memory.c: device memory on Tack's stream.
 *
 * Every operation is queued on Tack's own non-blocking stream, so it is ordered after
 * the launches queued before it. A copy that involves host memory waits for its
 * stream before returning (the host buffer is the caller's, and it may be freed or
 * read at once); device-to-device copies and fills return once queued. The driver's
 * synchronous copies are never used: they run on the legacy default stream, which a
 * non-blocking stream does not order against.
 */
#include <string.h>

#include "gpu_internal.h"

tack_status
tack__gpu_alloc_queued(tack__gpu_state *s, size_t nbytes, tack__gpu_ptr *ptr)
{
    tack__gpu_ptr p = 0;
    bool pools = s->info.pools;
    tack__gpu_result rc = pools ? s->drv->api.mem_alloc_async(&p, nbytes, s->stream)
                                : s->drv->api.mem_alloc(&p, nbytes);
    tack_status st = tack__gpu_check(
        s, rc,
        pools ? TACK__GPU_NAME(s, mem_alloc_async) : TACK__GPU_NAME(s, mem_alloc));
    if (st == TACK_OK) {
        *ptr = p;
    }
    return st;
}

void
tack__gpu_free_queued(tack__gpu_state *s, tack__gpu_ptr ptr)
{
    /* Stream-ordered: the memory returns to the pool after the work queued on it. */
    (void)(s->info.pools ? s->drv->api.mem_free_async(ptr, s->stream)
                         : s->drv->api.mem_free(ptr));
}

tack_status
tack__gpu_alloc(void *state, size_t nbytes, bool exportable, void **ptr)
{
    tack__gpu_state *s = state;
    if (nbytes == 0 && !exportable) {
        *ptr = NULL; /* a buffer of no bytes has no address; free ignores NULL */
        return TACK_OK;
    }
    tack__gpu_guard g;
    tack_status st = tack__gpu_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    if (exportable) {
        st = tack__gpu_vmm_alloc(s, nbytes ? nbytes : 1, ptr); /* has a handle */
    }
    else {
        tack__gpu_ptr p = 0;
        st = tack__gpu_alloc_queued(s, nbytes, &p);
        if (st == TACK_OK) {
            *ptr = (void *)(uintptr_t)p;
        }
    }
    tack__gpu_leave(s, &g);
    return st;
}

void
tack__gpu_free(void *state, void *ptr)
{
    tack__gpu_state *s = state;
    if (!ptr) {
        return;
    }
    /* Release runs from any thread, and at interpreter exit possibly after the driver
     * has shut down: then the memory is leaked, never touched. A context with a
     * sticky error cannot free either; the process is going to restart. */
    tack__gpu_guard g;
    bool ok = tack__gpu_enter(s, &g) == TACK_OK;
    if (tack__gpu_vmm_free(s, ptr, ok)) {
        if (ok) {
            tack__gpu_leave(s, &g);
        }
        return;
    }
    if (!ok) {
        return;
    }
    tack__gpu_free_queued(s, (tack__gpu_ptr)(uintptr_t)ptr);
    tack__gpu_leave(s, &g);
}

/* One copy queued on Tack's stream; waits when host memory is involved. */
static tack_status
copy_queued(tack__gpu_state *s, void *dst, const void *src, size_t nbytes,
            tack_copy_kind kind)
{
    tack__gpu_ptr d = (tack__gpu_ptr)(uintptr_t)dst,
                  from = (tack__gpu_ptr)(uintptr_t)src;
    tack_status st;
    switch (kind) {
    case TACK_COPY_HOST_TO_DEVICE:
        st = TACK__GPU_CHECKED(s, copy_htod_async, d, src, nbytes, s->stream);
        break;
    case TACK_COPY_DEVICE_TO_HOST:
        st = TACK__GPU_CHECKED(s, copy_dtoh_async, dst, from, nbytes, s->stream);
        break;
    case TACK_COPY_DEVICE_TO_DEVICE:
    default: return TACK__GPU_CHECKED(s, copy_dtod_async, d, from, nbytes, s->stream);
    }
    if (st != TACK_OK) {
        return st;
    }
    return TACK__GPU_CHECKED(s, stream_synchronize, s->stream);
}

tack_status
tack__gpu_copy(void *state, void *dst, const void *src, size_t nbytes,
               tack_copy_kind kind)
{
    tack__gpu_state *s = state;
    if (nbytes == 0) {
        return TACK_OK;
    }
    tack__gpu_guard g;
    tack_status st = tack__gpu_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    st = copy_queued(s, dst, src, nbytes, kind);
    tack__gpu_leave(s, &g);
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
fill_by_doubling(tack__gpu_state *s, unsigned char *dst, const void *pattern,
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
tack__gpu_fill(void *state, void *dst, const void *pattern, size_t pattern_nbytes,
               size_t count)
{
    tack__gpu_state *s = state;
    if (count == 0) {
        return TACK_OK;
    }
    tack__gpu_guard g;
    tack_status st = tack__gpu_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    uint32_t word = 0;
    size_t w = 0;
    if (repeating_word(pattern, pattern_nbytes, &word, &w)) {
        size_t n = count * (pattern_nbytes / w);
        st = TACK__GPU_CHECKED(s, memset_async, (tack__gpu_ptr)(uintptr_t)dst, word, w,
                               n, s->stream);
    }
    else {
        st = fill_by_doubling(s, dst, pattern, pattern_nbytes, count);
    }
    tack__gpu_leave(s, &g);
    return st;
}

tack_status
tack__gpu_copy_peer(void *state, void *dst, void *src_state, const void *src,
                    size_t nbytes)
{
    tack__gpu_state *d = state, *s = src_state;
    if (nbytes == 0) {
        return TACK_OK;
    }
    /* The copy reads the source after its device's queued writes, and the source's
     * device waits for the copy before anything it queues later (a write, or the
     * stream-ordered free of the source) can touch that memory. */
    tack_status st = tack__gpu_handoff(s, d);
    tack__gpu_guard g;
    if (st == TACK_OK && (st = tack__gpu_enter(d, &g)) == TACK_OK) {
        st =
            TACK__GPU_CHECKED(d, copy_peer_async, (tack__gpu_ptr)(uintptr_t)dst, d->ctx,
                              (tack__gpu_ptr)(uintptr_t)src, s->ctx, nbytes, d->stream);
        tack__gpu_leave(d, &g);
    }
    return st == TACK_OK ? tack__gpu_handoff(d, s) : st;
}

tack_status
tack__gpu_copy_2d(void *state, void *dst, size_t dst_pitch, const void *src,
                  size_t src_pitch, size_t width, size_t height)
{
    tack__gpu_state *s = state;
    tack__gpu_guard g;
    tack_status st = tack__gpu_enter(s, &g);
    if (st == TACK_OK) {
        st = TACK__GPU_CHECKED(s, copy_2d_async, (tack__gpu_ptr)(uintptr_t)dst,
                               dst_pitch, (tack__gpu_ptr)(uintptr_t)src, src_pitch,
                               width, height, s->stream);
        tack__gpu_leave(s, &g);
    }
    return st;
}
