/*
 * standin_order.c: which queued work is certain to run before which, across queues.
 *
 * Each queue keeps a clock: for every other queue, the newest sequence number of that
 * queue's work that the queue's next operation is ordered after (through an event
 * wait, or the legacy queue's implicit waits, directly or through a chain of them). An
 * event records its queue's clock with itself; each queued operation that uses memory
 * is stamped with its queue's clock when it is queued. The host's own knowledge (it
 * waited for a queue) is not in the clocks: what the host waited for has run, and the
 * memory rules ask that of each allocation instead (standin_memory.c).
 *
 * Out of memory while a clock grows, it is marked as ordered after everything: the
 * stand-in then misses a race rather than reporting one that is not there.
 */
#include <stdlib.h>
#include <string.h>

#include "standin.h"

uint64_t
standin_clock_get(const standin_clock *c, const struct standin_queue *s)
{
    if (c->everything) {
        return UINT64_MAX;
    }
    for (size_t k = 0; k < c->n; k++) {
        if (c->ticks[k].stream == s) {
            return c->ticks[k].seq;
        }
    }
    return 0;
}

void
standin_clock_tick(standin_clock *c, struct standin_queue *s, uint64_t seq)
{
    for (size_t k = 0; k < c->n; k++) {
        if (c->ticks[k].stream == s) {
            c->ticks[k].seq = seq > c->ticks[k].seq ? seq : c->ticks[k].seq;
            return;
        }
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4;
        struct standin_tick *bigger = realloc(c->ticks, cap * sizeof *bigger);
        if (!bigger) {
            c->everything = true;
            return;
        }
        c->ticks = bigger;
        c->cap = cap;
    }
    c->ticks[c->n].stream = s;
    c->ticks[c->n].seq = seq;
    c->n++;
}

void
standin_clock_merge(standin_clock *into, const standin_clock *from)
{
    into->everything = into->everything || from->everything;
    for (size_t k = 0; k < from->n; k++) {
        standin_clock_tick(into, from->ticks[k].stream, from->ticks[k].seq);
    }
}

void
standin_clock_copy(standin_clock *to, const standin_clock *from)
{
    to->n = 0;
    to->everything = false;
    standin_clock_merge(to, from);
}

void
standin_clock_free(standin_clock *c)
{
    free(c->ticks);
    memset(c, 0, sizeof *c);
}

bool
standin_ordered_after(const standin_stamp *use, const struct standin_queue *s,
                      uint64_t seq)
{
    if (use->stream == s) {
        return use->seq > seq; /* one stream runs in order */
    }
    return standin_clock_get(&use->after, s) >= seq;
}
