/*
 * standin_stream.c: streams, events, and the deferred execution of asynchronous work.
 *
 * Every asynchronous operation gets a process-wide sequence number and waits in its
 * stream's queue. Nothing runs until a synchronization point asks for it:
 * cuStreamSynchronize, cuEventSynchronize (up to the event's record), a synchronous
 * copy (the legacy stream up to the copy), cuCtxSynchronize and cuMemFree (the whole
 * context), a second cuStreamQuery / cuEventQuery (the first one answers NOT_READY),
 * and any of these reaching a cuStreamWaitEvent, which first runs the waited-for stream
 * up to the event's record. So a host read that skipped its synchronization sees stale
 * bytes.
 *
 * The legacy (NULL) stream is modelled as the driver documents it: work queued on it
 * waits for all earlier work of the context's blocking streams, and work queued on a
 * blocking stream waits for earlier legacy work. Streams created with
 * CU_STREAM_NON_BLOCKING take part in neither, so a synchronous cuMemcpyHtoD does not
 * wait for them, exactly the race the driver has.
 */
#include <stdlib.h>
#include <string.h>

#include "standin.h"

/* ---- streams and their queues ---------------------------------------------------- */

struct CUstream_st *
standin_stream_new(struct CUctx_st *ctx, unsigned flags)
{
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s) {
        return NULL;
    }
    s->ctx = ctx;
    s->flags = flags;
    s->alive = true;
    s->next = standin.streams;
    standin.streams = s;
    return s;
}

static struct CUstream_st *
per_thread_stream(struct CUctx_st *ctx)
{
    pthread_t self = pthread_self();
    for (struct CUstream_st *s = standin.streams; s; s = s->next) {
        if (s->ctx == ctx && s->per_thread && pthread_equal(s->owner, self)) {
            return s;
        }
    }
    struct CUstream_st *s = standin_stream_new(ctx, TCU_STREAM_DEFAULT);
    if (s) {
        s->per_thread = true;
        s->owner = self;
    }
    return s;
}

tcu_result
standin_stream(struct CUctx_st *ctx, tcu_stream handle, struct CUstream_st **out)
{
    uintptr_t h = (uintptr_t)handle;
    if (h == 0 || h == TCU_STREAM_LEGACY_HANDLE) {
        *out = ctx->legacy;
        return TCU_SUCCESS;
    }
    if (h == TCU_STREAM_PER_THREAD_HANDLE) {
        *out = per_thread_stream(ctx);
        return *out ? TCU_SUCCESS : TCU_ERROR_OUT_OF_MEMORY;
    }
    for (struct CUstream_st *s = standin.streams; s; s = s->next) {
        if (s == handle) {
            if (!s->alive || s->ctx != ctx || s->per_thread || s->legacy) {
                return TCU_ERROR_INVALID_HANDLE;
            }
            *out = s;
            return TCU_SUCCESS;
        }
    }
    return TCU_ERROR_INVALID_HANDLE;
}

standin_op *
standin_op_new(enum standin_op_kind kind)
{
    standin_op *op = calloc(1, sizeof *op);
    if (op) {
        op->kind = kind;
    }
    return op;
}

static void
op_free(standin_op *op)
{
    if (op->kind == OP_LAUNCH) {
        standin_launch_free(op->launch);
    }
    if (op->kind == OP_FREE && op->alloc->free_stamp == &op->stamp) {
        op->alloc->free_stamp = NULL; /* dropped unrun (a dead context) */
    }
    standin_clock_free(&op->stamp.after);
    free(op);
}

static void
append(struct CUstream_st *s, standin_op *op)
{
    op->seq = ++standin.next_seq;
    op->next = NULL;
    if (s->tail) {
        s->tail->next = op;
    }
    else {
        s->head = op;
    }
    s->tail = op;
    s->last_seq = op->seq;
    s->queries = 0;
}

static bool
pending(const struct CUstream_st *s)
{
    return s->head != NULL;
}

/* Queues a wait on t's newest work. Out of memory here would lose an ordering edge,
 * so the waited-for work runs at once instead (an ordering the caller also asked for).
 */
static void
wait_on(struct CUstream_st *s, struct CUstream_st *t)
{
    standin_op *w = standin_op_new(OP_WAIT);
    if (!w) {
        standin_run_until(t, t->last_seq);
        return;
    }
    w->wait_stream = t;
    w->wait_seq = t->last_seq;
    append(s, w);
    standin_clock_merge(&s->clock, &t->clock);
    standin_clock_tick(&s->clock, t, w->wait_seq);
}

/* The legacy stream's implicit synchronization with the blocking streams. */
static void
implicit_waits(struct CUstream_st *s)
{
    if (s->legacy) {
        for (struct CUstream_st *t = standin.streams; t; t = t->next) {
            if (t != s && t->ctx == s->ctx && !t->legacy &&
                t->flags == TCU_STREAM_DEFAULT && pending(t)) {
                wait_on(s, t);
            }
        }
    }
    else if (s->flags == TCU_STREAM_DEFAULT && pending(s->ctx->legacy)) {
        wait_on(s, s->ctx->legacy);
    }
}

void
standin_enqueue(struct CUstream_st *s, standin_op *op)
{
    implicit_waits(s);
    append(s, op);
    if (op->kind != OP_WAIT && op->kind != OP_ALLOC) {
        /* Work that uses memory remembers what it is ordered after. */
        op->stamp.stream = s;
        op->stamp.seq = op->seq;
        standin_clock_copy(&op->stamp.after, &s->clock);
    }
    if (standin.eager) {
        standin_run_until(s, s->last_seq);
    }
}

/* ---- execution ------------------------------------------------------------------- */

static void
fill(unsigned char *dst, uint32_t pattern, unsigned width, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        memcpy(dst + k * width, &pattern, width); /* little-endian: the low bytes */
    }
}

/* Whether the memory a copy, memset or free names may be touched now (see
 * standin_use_ok): on the driver, the other outcomes are a race or a use after free. */
static bool
uses_ok(const standin_op *op)
{
    const standin_alloc *a = op->kind == OP_FREE ? op->alloc : op->dst_alloc;
    return (!a || standin_use_ok(a, &op->stamp)) &&
           (!op->src_alloc || standin_use_ok(op->src_alloc, &op->stamp));
}

static void
execute(struct CUstream_st *s, standin_op *op)
{
    bool ok = true;
    switch (op->kind) {
    case OP_COPY:
        if ((ok = uses_ok(op))) {
            memmove(op->dst, op->src, op->nbytes);
        }
        break;
    case OP_MEMSET:
        if ((ok = uses_ok(op))) {
            fill(op->dst, op->pattern, op->width, op->count);
        }
        break;
    case OP_WAIT: standin_run_until(op->wait_stream, op->wait_seq); break;
    case OP_FREE:
        ok = uses_ok(op);
        standin_alloc_release(op->alloc);
        break;
    case OP_LAUNCH: ok = standin_launch_run(op->launch, &op->stamp); break;
    case OP_FAULT: ok = false; break;
    case OP_ALLOC: op->alloc->ready_at = standin.next_seq; break;
    }
    if (!ok) {
        standin_poison(s->ctx, TCU_ERROR_ILLEGAL_ADDRESS);
    }
}

tcu_result
standin_run_until(struct CUstream_st *s, uint64_t seq)
{
    while (s->head && s->head->seq <= seq && s->ctx->sticky == TCU_SUCCESS) {
        standin_op *op = s->head;
        s->head = op->next;
        if (!s->head) {
            s->tail = NULL;
        }
        execute(s, op);
        op_free(op);
    }
    return s->ctx->sticky;
}

tcu_result
standin_run_context(struct CUctx_st *ctx)
{
    for (struct CUstream_st *s = standin.streams; s; s = s->next) {
        if (s->ctx == ctx) {
            standin_run_until(s, s->last_seq);
        }
    }
    return ctx->sticky;
}

void
standin_discard_context(struct CUctx_st *ctx)
{
    for (struct CUstream_st *s = standin.streams; s; s = s->next) {
        if (s->ctx == ctx) {
            while (s->head) {
                standin_op *op = s->head;
                s->head = op->next;
                op_free(op);
            }
            s->tail = NULL;
        }
    }
}

/* ---- stream entry points --------------------------------------------------------- */

STANDIN_EXPORT tcu_result
cuStreamCreate(tcu_stream *phStream, unsigned int Flags)
{
    tcu_result rc = standin_enter("cuStreamCreate");
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        if (!phStream ||
            (Flags != TCU_STREAM_DEFAULT && Flags != TCU_STREAM_NON_BLOCKING)) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else if (!(s = standin_stream_new(ctx, Flags))) {
            rc = TCU_ERROR_OUT_OF_MEMORY;
        }
        else {
            *phStream = s;
        }
    }
    return standin_leave(rc, "cuStreamCreate", "flags=%u, stream=%p", Flags, (void *)s);
}

STANDIN_EXPORT tcu_result
cuStreamDestroy_v2(tcu_stream hStream)
{
    tcu_result rc = standin_enter("cuStreamDestroy");
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        uintptr_t h = (uintptr_t)hStream;
        if (h == 0 || h == TCU_STREAM_LEGACY_HANDLE ||
            h == TCU_STREAM_PER_THREAD_HANDLE) {
            rc = TCU_ERROR_INVALID_HANDLE; /* the built-in streams are not destroyed */
        }
        else {
            rc = standin_stream(ctx, hStream, &s);
        }
    }
    if (rc == TCU_SUCCESS) {
        /* Work already queued still runs (at the context's next synchronization, or
         * when a wait reaches it), as the driver documents. */
        s->alive = false;
    }
    return standin_leave(rc, "cuStreamDestroy", "stream=%p", (void *)hStream);
}

STANDIN_EXPORT tcu_result
cuStreamSynchronize(tcu_stream hStream)
{
    tcu_result rc = standin_enter("cuStreamSynchronize");
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        rc = standin_stream(ctx, hStream, &s);
    }
    if (rc == TCU_SUCCESS) {
        /* Only the stream's own queue and what it waits for: the implicit waits of the
         * legacy stream were queued with its work, and waiting for more would be a
         * leniency the driver does not promise. */
        rc = standin_run_until(s, s->last_seq);
    }
    return standin_leave(rc, "cuStreamSynchronize", "stream=%p", (void *)hStream);
}

STANDIN_EXPORT tcu_result
cuStreamQuery(tcu_stream hStream)
{
    tcu_result rc = standin_enter("cuStreamQuery");
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        rc = standin_stream(ctx, hStream, &s);
    }
    if (rc == TCU_SUCCESS && pending(s)) {
        /* The first query of pending work answers NOT_READY and runs nothing; the next
         * one finishes it, so a polling loop ends and a single query proves nothing. */
        if (s->queries++ == 0) {
            rc = TCU_ERROR_NOT_READY;
        }
        else {
            rc = standin_run_until(s, s->last_seq);
        }
    }
    return standin_leave(rc, "cuStreamQuery", "stream=%p", (void *)hStream);
}

/* ---- events ---------------------------------------------------------------------- */

static struct CUevent_st *
known_event(tcu_event handle)
{
    for (struct CUevent_st *e = standin.events; e; e = e->next) {
        if (e == handle) {
            return e->alive ? e : NULL;
        }
    }
    return NULL;
}

static bool
event_complete(const struct CUevent_st *e)
{
    return !e->stream || !e->stream->head || e->stream->head->seq > e->seq;
}

STANDIN_EXPORT tcu_result
cuStreamWaitEvent(tcu_stream hStream, tcu_event hEvent, unsigned int Flags)
{
    tcu_result rc = standin_enter("cuStreamWaitEvent");
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    struct CUevent_st *e = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        rc = standin_stream(ctx, hStream, &s);
    }
    if (rc == TCU_SUCCESS) {
        if (Flags != 0) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else if (!(e = known_event(hEvent))) {
            rc = TCU_ERROR_INVALID_HANDLE;
        }
        else if (!event_complete(e)) {
            /* An event never recorded, or already complete, is nothing to wait for. */
            standin_op *w = standin_op_new(OP_WAIT);
            if (!w) {
                rc = TCU_ERROR_OUT_OF_MEMORY;
            }
            else {
                w->wait_stream = e->stream;
                w->wait_seq = e->seq;
                standin_enqueue(s, w);
                standin_clock_merge(&s->clock, &e->clock);
            }
        }
    }
    return standin_leave(rc, "cuStreamWaitEvent", "stream=%p, event=%p",
                         (void *)hStream, (void *)hEvent);
}

STANDIN_EXPORT tcu_result
cuEventCreate(tcu_event *phEvent, unsigned int Flags)
{
    tcu_result rc = standin_enter("cuEventCreate");
    struct CUctx_st *ctx = NULL;
    struct CUevent_st *e = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        unsigned known =
            TCU_EVENT_BLOCKING_SYNC | TCU_EVENT_DISABLE_TIMING | TCU_EVENT_INTERPROCESS;
        if (!phEvent || (Flags & ~known) ||
            ((Flags & TCU_EVENT_INTERPROCESS) && !(Flags & TCU_EVENT_DISABLE_TIMING))) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else if (!(e = calloc(1, sizeof *e))) {
            rc = TCU_ERROR_OUT_OF_MEMORY;
        }
        else {
            e->ctx = ctx;
            e->alive = true;
            e->next = standin.events;
            standin.events = e;
            *phEvent = e;
        }
    }
    return standin_leave(rc, "cuEventCreate", "flags=%u, event=%p", Flags, (void *)e);
}

STANDIN_EXPORT tcu_result
cuEventDestroy_v2(tcu_event hEvent)
{
    tcu_result rc = standin_enter("cuEventDestroy");
    struct CUctx_st *ctx = NULL;
    struct CUevent_st *e = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        if (!(e = known_event(hEvent))) {
            rc = TCU_ERROR_INVALID_HANDLE;
        }
        else {
            e->alive = false; /* waits already queued on it still hold */
        }
    }
    return standin_leave(rc, "cuEventDestroy", "event=%p", (void *)hEvent);
}

STANDIN_EXPORT tcu_result
cuEventRecord(tcu_event hEvent, tcu_stream hStream)
{
    tcu_result rc = standin_enter("cuEventRecord");
    struct CUctx_st *ctx = NULL;
    struct CUstream_st *s = NULL;
    struct CUevent_st *e = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        rc = standin_stream(ctx, hStream, &s);
    }
    if (rc == TCU_SUCCESS) {
        if (!(e = known_event(hEvent)) || e->ctx != s->ctx) {
            rc = TCU_ERROR_INVALID_HANDLE; /* event and stream share a context */
        }
        else {
            implicit_waits(s);
            e->stream = s;
            e->seq = s->last_seq;
            e->queries = 0;
            standin_clock_copy(&e->clock, &s->clock);
            standin_clock_tick(&e->clock, s, e->seq);
        }
    }
    return standin_leave(rc, "cuEventRecord", "event=%p, stream=%p", (void *)hEvent,
                         (void *)hStream);
}

STANDIN_EXPORT tcu_result
cuEventSynchronize(tcu_event hEvent)
{
    tcu_result rc = standin_enter("cuEventSynchronize");
    struct CUevent_st *e = NULL;
    if (rc == TCU_SUCCESS) {
        if (!(e = known_event(hEvent))) {
            rc = TCU_ERROR_INVALID_HANDLE;
        }
        else if (e->ctx->sticky != TCU_SUCCESS) {
            rc = e->ctx->sticky;
        }
        else if (e->stream) {
            rc = standin_run_until(e->stream, e->seq);
        }
    }
    return standin_leave(rc, "cuEventSynchronize", "event=%p", (void *)hEvent);
}

STANDIN_EXPORT tcu_result
cuEventQuery(tcu_event hEvent)
{
    tcu_result rc = standin_enter("cuEventQuery");
    struct CUevent_st *e = NULL;
    if (rc == TCU_SUCCESS) {
        if (!(e = known_event(hEvent))) {
            rc = TCU_ERROR_INVALID_HANDLE;
        }
        else if (e->ctx->sticky != TCU_SUCCESS) {
            rc = e->ctx->sticky;
        }
        else if (!event_complete(e)) {
            rc = e->queries++ == 0 ? TCU_ERROR_NOT_READY
                                   : standin_run_until(e->stream, e->seq);
        }
    }
    return standin_leave(rc, "cuEventQuery", "event=%p", (void *)hEvent);
}
