/*
 * gpu_stream.c: waiting for Tack's stream, and ordering it against other libraries'
 * streams without blocking the host.
 *
 * Foreign streams are named by the integers DLPack and the Array API use: the
 * driver's special values (on CUDA 1 is the legacy default stream and 2 the
 * per-thread default stream, the driver's own CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD; tack__gpu_streams names them per driver), anything else a
 * stream handle of the same context. The callers refuse a user's 0 and negative
 * values; Tack itself passes 0, the driver's NULL stream (buffer.c).
 *
 * A handle is a pointer the driver dereferences: event records, stream waits, and the
 * queries that could vouch for it alike, so no driver call can check a made-up value
 * without the crash it would prevent. Tack checks what it can tell without the
 * driver: 0, the special values and its own stream are known, and any other value
 * must have the shape of a heap pointer (tack__plausible_address): `stream=3` is
 * refused, never handed over. A plausible value of no stream reaches the driver, whose
 * documented answer is an invalid-handle error (the stand-in gives it for any handle
 * it did not create; the real driver may crash instead).
 */
#include "gpu_internal.h"

tack_status
tack__gpu_synchronize(void *state)
{
    tack__gpu_state *s = state;
    tack__gpu_guard g;
    tack_status st = tack__gpu_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    st = TACK__GPU_CHECKED(s, stream_synchronize, s->stream);
    tack__gpu_leave(s, &g);
    return st;
}

uintptr_t
tack__gpu_own_stream(void *state)
{
    tack__gpu_state *s = state;
    return (uintptr_t)s->stream;
}

tack_status
tack__gpu_order(tack__gpu_state *s, tack__gpu_stream first, tack__gpu_stream then)
{
    if (first == then) {
        return TACK_OK; /* one stream is ordered with itself */
    }
    pthread_mutex_lock(&s->handoff_lock);
    tack_status st = TACK__GPU_CHECKED(s, event_record, s->handoff, first);
    if (st == TACK_OK) {
        st = TACK__GPU_CHECKED(s, stream_wait_event, then, s->handoff);
    }
    pthread_mutex_unlock(&s->handoff_lock);
    return st;
}

tack_status
tack__gpu_handoff(tack__gpu_state *first, tack__gpu_state *then)
{
    /* Each call in the context its stream belongs to; first's handoff lock keeps its
     * event from being recorded again before then's wait has captured it. */
    pthread_mutex_lock(&first->handoff_lock);
    tack__gpu_guard g;
    tack_status st = tack__gpu_enter(first, &g);
    if (st == TACK_OK) {
        st = TACK__GPU_CHECKED(first, event_record, first->handoff, first->stream);
        tack__gpu_leave(first, &g);
    }
    if (st == TACK_OK && (st = tack__gpu_enter(then, &g)) == TACK_OK) {
        st = TACK__GPU_CHECKED(then, stream_wait_event, then->stream, first->handoff);
        tack__gpu_leave(then, &g);
    }
    pthread_mutex_unlock(&first->handoff_lock);
    return st;
}

/* Whether foreign is a value the driver gives a meaning of its own (or 0, the NULL
 * stream Tack itself passes), so it needs no plausibility check. */
static bool
named_stream(const tack__gpu_state *s, uintptr_t foreign)
{
    const tack__gpu_streams *n = &s->drv->streams;
    return foreign == 0 || (n->legacy && foreign == n->legacy) ||
           (n->per_thread && foreign == n->per_thread) ||
           foreign == (uintptr_t)s->stream;
}

static tack_status
order_guarded(void *state, uintptr_t foreign, bool foreign_waits)
{
    tack__gpu_state *s = state;
    if (!named_stream(s, foreign) &&
        !tack__plausible_address(foreign, _Alignof(void *))) {
        return tack__fail(TACK_ERR_DLPACK_INVALID,
                          "stream %#llx is no %s stream handle: %s",
                          (unsigned long long)foreign, s->drv->vendor->platform,
                          s->drv->streams.remedy);
    }
    tack__gpu_guard g;
    tack_status st = tack__gpu_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    tack__gpu_stream other = (tack__gpu_stream)foreign;
    st = foreign_waits ? tack__gpu_order(s, s->stream, other)
                       : tack__gpu_order(s, other, s->stream);
    tack__gpu_leave(s, &g);
    return st;
}

tack_status
tack__gpu_order_foreign_after_tack(void *state, uintptr_t foreign)
{
    return order_guarded(state, foreign, true);
}

tack_status
tack__gpu_order_tack_after_foreign(void *state, uintptr_t foreign)
{
    return order_guarded(state, foreign, false);
}
