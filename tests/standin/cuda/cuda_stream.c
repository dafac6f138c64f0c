/*
 * cuda_stream.c: the stream and event entry points of the CUDA layer, over the core's
 * queues and events (tests/standin/core/standin_queue.c), and CUDA's special stream
 * handles.
 */
#include "cuda_layer.h"

standin_rc
cuda_stream(struct standin_context *ctx, tcu_stream handle, struct standin_queue **out)
{
    uintptr_t h = (uintptr_t)handle;
    if (h == 0 || h == TCU_STREAM_LEGACY_HANDLE) {
        *out = ctx->legacy;
        return STANDIN_OK;
    }
    if (h == TCU_STREAM_PER_THREAD_HANDLE) {
        *out = standin_queue_per_thread(ctx);
        return *out ? STANDIN_OK : STANDIN_ERR_OUT_OF_MEMORY;
    }
    return standin_queue_find(ctx, handle, out);
}

standin_rc
cuda_current_stream(tcu_stream handle, struct standin_context **ctx,
                    struct standin_queue **out)
{
    standin_rc rc = standin_current(ctx);
    return rc == STANDIN_OK ? cuda_stream(*ctx, handle, out) : rc;
}

STANDIN_EXPORT tcu_result
cuStreamCreate(tcu_stream *phStream, unsigned int Flags)
{
    standin_rc rc = standin_enter("cuStreamCreate");
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK) {
        bool flags_ok = Flags == TCU_STREAM_DEFAULT || Flags == TCU_STREAM_NON_BLOCKING;
        rc = phStream && flags_ok
                 ? standin_queue_create(ctx, Flags == TCU_STREAM_NON_BLOCKING, &s)
                 : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *phStream = (tcu_stream)(void *)s;
    }
    return standin_leave(rc, "cuStreamCreate", "flags=%u, stream=%p", Flags, (void *)s);
}

STANDIN_EXPORT tcu_result
cuStreamDestroy_v2(tcu_stream hStream)
{
    standin_rc rc = standin_enter("cuStreamDestroy");
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK) {
        /* The built-in streams are not destroyed. */
        rc = standin_queue_find(ctx, hStream, &s);
    }
    if (rc == STANDIN_OK) {
        standin_queue_destroy(s);
    }
    return standin_leave(rc, "cuStreamDestroy", "stream=%p", (void *)hStream);
}

STANDIN_EXPORT tcu_result
cuStreamSynchronize(tcu_stream hStream)
{
    standin_rc rc = standin_enter("cuStreamSynchronize");
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    if (rc == STANDIN_OK) {
        rc = cuda_current_stream(hStream, &ctx, &s);
    }
    if (rc == STANDIN_OK) {
        rc = standin_queue_sync(s);
    }
    return standin_leave(rc, "cuStreamSynchronize", "stream=%p", (void *)hStream);
}

STANDIN_EXPORT tcu_result
cuStreamQuery(tcu_stream hStream)
{
    standin_rc rc = standin_enter("cuStreamQuery");
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    if (rc == STANDIN_OK) {
        rc = cuda_current_stream(hStream, &ctx, &s);
    }
    if (rc == STANDIN_OK) {
        rc = standin_queue_query(s);
    }
    return standin_leave(rc, "cuStreamQuery", "stream=%p", (void *)hStream);
}

STANDIN_EXPORT tcu_result
cuStreamWaitEvent(tcu_stream hStream, tcu_event hEvent, unsigned int Flags)
{
    standin_rc rc = standin_enter("cuStreamWaitEvent");
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    struct standin_event *e = NULL;
    if (rc == STANDIN_OK) {
        rc = cuda_current_stream(hStream, &ctx, &s);
    }
    if (rc == STANDIN_OK) {
        rc = Flags != 0                          ? STANDIN_ERR_INVALID_VALUE
             : !(e = standin_event_find(hEvent)) ? STANDIN_ERR_INVALID_HANDLE
                                                 : standin_queue_wait_event(s, e);
    }
    return standin_leave(rc, "cuStreamWaitEvent", "stream=%p, event=%p",
                         (void *)hStream, (void *)hEvent);
}

STANDIN_EXPORT tcu_result
cuEventCreate(tcu_event *phEvent, unsigned int Flags)
{
    standin_rc rc = standin_enter("cuEventCreate");
    struct standin_context *ctx = NULL;
    struct standin_event *e = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK) {
        unsigned known =
            TCU_EVENT_BLOCKING_SYNC | TCU_EVENT_DISABLE_TIMING | TCU_EVENT_INTERPROCESS;
        bool flags_ok = !(Flags & ~known) && (!(Flags & TCU_EVENT_INTERPROCESS) ||
                                              (Flags & TCU_EVENT_DISABLE_TIMING));
        rc = phEvent && flags_ok ? standin_event_create(ctx, &e)
                                 : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *phEvent = (tcu_event)(void *)e;
    }
    return standin_leave(rc, "cuEventCreate", "flags=%u, event=%p", Flags, (void *)e);
}

STANDIN_EXPORT tcu_result
cuEventDestroy_v2(tcu_event hEvent)
{
    standin_rc rc = standin_enter("cuEventDestroy");
    struct standin_context *ctx = NULL;
    struct standin_event *e = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK && !(e = standin_event_find(hEvent))) {
        rc = STANDIN_ERR_INVALID_HANDLE;
    }
    if (rc == STANDIN_OK) {
        standin_event_destroy(e);
    }
    return standin_leave(rc, "cuEventDestroy", "event=%p", (void *)hEvent);
}

STANDIN_EXPORT tcu_result
cuEventRecord(tcu_event hEvent, tcu_stream hStream)
{
    standin_rc rc = standin_enter("cuEventRecord");
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    struct standin_event *e = NULL;
    if (rc == STANDIN_OK) {
        rc = cuda_current_stream(hStream, &ctx, &s);
    }
    if (rc == STANDIN_OK) {
        rc = (e = standin_event_find(hEvent)) ? standin_event_record(e, s)
                                              : STANDIN_ERR_INVALID_HANDLE;
    }
    return standin_leave(rc, "cuEventRecord", "event=%p, stream=%p", (void *)hEvent,
                         (void *)hStream);
}

STANDIN_EXPORT tcu_result
cuEventSynchronize(tcu_event hEvent)
{
    standin_rc rc = standin_enter("cuEventSynchronize");
    struct standin_event *e = NULL;
    if (rc == STANDIN_OK) {
        rc = (e = standin_event_find(hEvent)) ? standin_event_sync(e)
                                              : STANDIN_ERR_INVALID_HANDLE;
    }
    return standin_leave(rc, "cuEventSynchronize", "event=%p", (void *)hEvent);
}

STANDIN_EXPORT tcu_result
cuEventQuery(tcu_event hEvent)
{
    standin_rc rc = standin_enter("cuEventQuery");
    struct standin_event *e = NULL;
    if (rc == STANDIN_OK) {
        rc = (e = standin_event_find(hEvent)) ? standin_event_query(e)
                                              : STANDIN_ERR_INVALID_HANDLE;
    }
    return standin_leave(rc, "cuEventQuery", "event=%p", (void *)hEvent);
}
