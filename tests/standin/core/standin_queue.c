/*
 * standin_queue.c: queues (what a layer calls streams), events, and the deferred
 * execution of asynchronous work.
 *
 * Every asynchronous operation gets a process-wide sequence number and waits in its
 * queue. Nothing runs until a synchronization point asks for it: a queue or event
 * synchronization (the event up to its record), a synchronous copy (the legacy queue up
 * to the copy), a context synchronization and a synchronous free (the whole context), a
 * second query of a queue or an event (the first one answers NOT_READY), and any of
 * these reaching an event wait, which first runs the waited-for queue up to the event's
 * record. So a host read that skipped its synchronization sees stale bytes.
 *
 * The legacy queue of a context (CUDA's NULL stream) is modelled as the driver
 * documents it: work queued on it waits for all earlier work of the context's blocking
 * queues, and work queued on a blocking queue waits for earlier legacy work.
 * Non-blocking queues take part in neither, so a synchronous host-to-device copy does
 * not wait for them, exactly the race the driver has.
 */
#include <stdlib.h>
#include <string.h>

#include "standin.h"

/* ---- streams and their queues ---------------------------------------------------- */

struct standin_queue *
standin_queue_new(struct standin_context *ctx, bool non_blocking)
{
    struct standin_queue *s = calloc(1, sizeof *s);
    if (!s) {
        return NULL;
    }
    s->ctx = ctx;
    s->non_blocking = non_blocking;
    s->alive = true;
    s->next = standin.streams;
    standin.streams = s;
    return s;
}

struct standin_queue *
standin_queue_per_thread(struct standin_context *ctx)
{
    pthread_t self = pthread_self();
    for (struct standin_queue *s = standin.streams; s; s = s->next) {
        if (s->ctx == ctx && s->per_thread && pthread_equal(s->owner, self)) {
            return s;
        }
    }
    struct standin_queue *s = standin_queue_new(ctx, false);
    if (s) {
        s->per_thread = true;
        s->owner = self;
    }
    return s;
}

standin_rc
standin_queue_find(struct standin_context *ctx, const void *handle,
                   struct standin_queue **out)
{
    for (struct standin_queue *s = standin.streams; s; s = s->next) {
        if ((const void *)s == handle) {
            if (!s->alive || s->ctx != ctx || s->per_thread || s->legacy) {
                return STANDIN_ERR_INVALID_HANDLE;
            }
            *out = s;
            return STANDIN_OK;
        }
    }
    return STANDIN_ERR_INVALID_HANDLE;
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
append(struct standin_queue *s, standin_op *op)
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
pending(const struct standin_queue *s)
{
    return s->head != NULL;
}

/* Queues a wait on t's newest work. Out of memory here would lose an ordering edge,
 * so the waited-for work runs at once instead (an ordering the caller also asked for).
 */
static void
wait_on(struct standin_queue *s, struct standin_queue *t)
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
implicit_waits(struct standin_queue *s)
{
    if (s->legacy) {
        for (struct standin_queue *t = standin.streams; t; t = t->next) {
            if (t != s && t->ctx == s->ctx && !t->legacy && !t->non_blocking &&
                pending(t)) {
                wait_on(s, t);
            }
        }
    }
    else if (!s->non_blocking && pending(s->ctx->legacy)) {
        wait_on(s, s->ctx->legacy);
    }
}

void
standin_enqueue(struct standin_queue *s, standin_op *op)
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
execute(struct standin_queue *s, standin_op *op)
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
        standin_poison(s->ctx, STANDIN_ERR_ILLEGAL_ADDRESS);
    }
}

standin_rc
standin_run_until(struct standin_queue *s, uint64_t seq)
{
    while (s->head && s->head->seq <= seq && s->ctx->sticky == STANDIN_OK) {
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

standin_rc
standin_run_context(struct standin_context *ctx)
{
    for (struct standin_queue *s = standin.streams; s; s = s->next) {
        if (s->ctx == ctx) {
            standin_run_until(s, s->last_seq);
        }
    }
    return ctx->sticky;
}

void
standin_discard_context(struct standin_context *ctx)
{
    for (struct standin_queue *s = standin.streams; s; s = s->next) {
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

/* ---- what the entry points ask of queues ----------------------------------------- */

standin_rc
standin_queue_create(struct standin_context *ctx, bool non_blocking,
                     struct standin_queue **out)
{
    struct standin_queue *s = standin_queue_new(ctx, non_blocking);
    if (!s) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    *out = s;
    return STANDIN_OK;
}

void
standin_queue_destroy(struct standin_queue *s)
{
    /* Work already queued still runs (at the context's next synchronization, or when a
     * wait reaches it), as the driver documents. */
    s->alive = false;
}

standin_rc
standin_queue_sync(struct standin_queue *s)
{
    /* Only the queue itself and what it waits for: the implicit waits of the legacy
     * queue were queued with its work, and waiting for more would be a leniency the
     * driver does not promise. */
    return standin_run_until(s, s->last_seq);
}

standin_rc
standin_queue_query(struct standin_queue *s)
{
    if (!pending(s)) {
        return STANDIN_OK;
    }
    /* The first query of pending work answers NOT_READY and runs nothing; the next one
     * finishes it, so a polling loop ends and a single query proves nothing. */
    return s->queries++ == 0 ? STANDIN_ERR_NOT_READY
                             : standin_run_until(s, s->last_seq);
}

/* ---- events ---------------------------------------------------------------------- */

struct standin_event *
standin_event_find(const void *handle)
{
    for (struct standin_event *e = standin.events; e; e = e->next) {
        if ((const void *)e == handle) {
            return e->alive ? e : NULL;
        }
    }
    return NULL;
}

static bool
event_complete(const struct standin_event *e)
{
    return !e->stream || !e->stream->head || e->stream->head->seq > e->seq;
}

standin_rc
standin_queue_wait_event(struct standin_queue *s, struct standin_event *e)
{
    if (event_complete(e)) {
        return STANDIN_OK; /* never recorded, or already complete: nothing to wait for
                            */
    }
    standin_op *w = standin_op_new(OP_WAIT);
    if (!w) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    w->wait_stream = e->stream;
    w->wait_seq = e->seq;
    standin_enqueue(s, w);
    standin_clock_merge(&s->clock, &e->clock);
    return STANDIN_OK;
}

standin_rc
standin_event_create(struct standin_context *ctx, struct standin_event **out)
{
    struct standin_event *e = calloc(1, sizeof *e);
    if (!e) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    e->ctx = ctx;
    e->alive = true;
    e->next = standin.events;
    standin.events = e;
    *out = e;
    return STANDIN_OK;
}

void
standin_event_destroy(struct standin_event *e)
{
    e->alive = false; /* waits already queued on it still hold */
}

standin_rc
standin_event_record(struct standin_event *e, struct standin_queue *s)
{
    if (e->ctx != s->ctx) {
        return STANDIN_ERR_INVALID_HANDLE; /* event and queue share a context */
    }
    implicit_waits(s);
    e->stream = s;
    e->seq = s->last_seq;
    e->queries = 0;
    standin_clock_copy(&e->clock, &s->clock);
    standin_clock_tick(&e->clock, s, e->seq);
    return STANDIN_OK;
}

standin_rc
standin_event_sync(struct standin_event *e)
{
    if (e->ctx->sticky != STANDIN_OK) {
        return e->ctx->sticky;
    }
    return e->stream ? standin_run_until(e->stream, e->seq) : STANDIN_OK;
}

standin_rc
standin_event_query(struct standin_event *e)
{
    if (e->ctx->sticky != STANDIN_OK) {
        return e->ctx->sticky;
    }
    if (event_complete(e)) {
        return STANDIN_OK;
    }
    return e->queries++ == 0 ? STANDIN_ERR_NOT_READY
                             : standin_run_until(e->stream, e->seq);
}
