/*
 * cuda_stream.c: waiting for Tack's stream, and ordering it against other libraries'
 * streams without blocking the host.
 *
 * Foreign streams are named by the integers DLPack and the Array API use on CUDA:
 * 1 is the legacy default stream and 2 the per-thread default stream (the driver's
 * own special handles CU_STREAM_LEGACY and CU_STREAM_PER_THREAD), anything larger a
 * CUstream handle of the same context. The callers refuse a user's 0 and negative
 * values; Tack itself passes 0, the driver's NULL stream (buffer.c).
 *
 * A handle is a pointer the driver dereferences: cuEventRecord, cuStreamWaitEvent,
 * and the queries that could vouch for it (cuStreamQuery, cuStreamGetCtx) alike, so
 * no driver call can check a made-up value without the crash it would prevent. Tack
 * checks what it can tell without the driver: 0, 1, 2 and its own stream are known,
 * and any other value must have the shape of a heap pointer
 * (tack__plausible_address): `stream=3` is refused, never handed over. A plausible
 * value of no stream reaches the driver, whose documented answer is
 * CUDA_ERROR_INVALID_HANDLE (the stand-in gives it for any handle it did not create;
 * the real driver may crash instead).
 */
#include "cuda_internal.h"

tack_status
tack__cuda_synchronize(void *state)
{
    tack__cuda_state *s = state;
    tack__cuda_guard g;
    tack_status st = tack__cuda_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    st = tack__cuda_check(s, s->drv->api.cuStreamSynchronize(s->stream),
                          "cuStreamSynchronize");
    tack__cuda_leave(s, &g);
    return st;
}

uintptr_t
tack__cuda_stream(void *state)
{
    tack__cuda_state *s = state;
    return (uintptr_t)s->stream;
}

tack_status
tack__cuda_order(tack__cuda_state *s, tcu_stream first, tcu_stream then)
{
    const tack__cuda_api *api = &s->drv->api;
    if (first == then) {
        return TACK_OK; /* one stream is ordered with itself */
    }
    pthread_mutex_lock(&s->handoff_lock);
    tack_status st =
        tack__cuda_check(s, api->cuEventRecord(s->handoff, first), "cuEventRecord");
    if (st == TACK_OK) {
        st = tack__cuda_check(s, api->cuStreamWaitEvent(then, s->handoff, 0),
                              "cuStreamWaitEvent");
    }
    pthread_mutex_unlock(&s->handoff_lock);
    return st;
}

tack_status
tack__cuda_handoff(tack__cuda_state *first, tack__cuda_state *then)
{
    /* Each call in the context its stream belongs to; first's handoff lock keeps its
     * event from being recorded again before then's wait has captured it. */
    pthread_mutex_lock(&first->handoff_lock);
    tack__cuda_guard g;
    tack_status st = tack__cuda_enter(first, &g);
    if (st == TACK_OK) {
        st = tack__cuda_check(
            first, first->drv->api.cuEventRecord(first->handoff, first->stream),
            "cuEventRecord");
        tack__cuda_leave(first, &g);
    }
    if (st == TACK_OK && (st = tack__cuda_enter(then, &g)) == TACK_OK) {
        st = tack__cuda_check(
            then, then->drv->api.cuStreamWaitEvent(then->stream, first->handoff, 0),
            "cuStreamWaitEvent");
        tack__cuda_leave(then, &g);
    }
    pthread_mutex_unlock(&first->handoff_lock);
    return st;
}

static tack_status
order_guarded(void *state, uintptr_t foreign, bool foreign_waits)
{
    tack__cuda_state *s = state;
    if (foreign > 2 && foreign != (uintptr_t)s->stream &&
        !tack__plausible_address(foreign, _Alignof(void *))) {
        return tack__fail(TACK_ERR_DLPACK_INVALID,
                          "stream %#llx is no CUDA stream handle: pass 1 (the legacy "
                          "default stream), 2 (the per-thread default stream) or "
                          "another library's cudaStream_t as an int",
                          (unsigned long long)foreign);
    }
    tack__cuda_guard g;
    tack_status st = tack__cuda_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    tcu_stream other = (tcu_stream)foreign;
    st = foreign_waits ? tack__cuda_order(s, s->stream, other)
                       : tack__cuda_order(s, other, s->stream);
    tack__cuda_leave(s, &g);
    return st;
}

tack_status
tack__cuda_order_foreign_after_tack(void *state, uintptr_t foreign)
{
    return order_guarded(state, foreign, true);
}

tack_status
tack__cuda_order_tack_after_foreign(void *state, uintptr_t foreign)
{
    return order_guarded(state, foreign, false);
}
