/*
 * standin_ze_queue.c: the stand-in's command queues and command lists.
 *
 * Commands run only at synchronization points: zeCommandQueueExecuteCommandLists queues
 * closed lists, and zeCommandQueueSynchronize runs them, so work that an application
 * forgets to synchronize is never seen done. Every pointer of an appended command is
 * checked when it is appended and again when it runs: device memory must be a live
 * allocation of the list's own context (the specification's rule, which real drivers
 * do not enforce), host memory is anything else. Two commands with no barrier between
 * them that touch the same device memory are an error: Level Zero may run them
 * concurrently.
 */
#include <stdlib.h>
#include <string.h>

#include "standin_ze.h"

static standin_queue *queues[64]; /* live queues, for standin_context_busy */

bool
standin_context_busy(const standin_context *c)
{
    for (size_t k = 0; k < sizeof queues / sizeof queues[0]; k++) {
        if (queues[k] && queues[k]->context == c && queues[k]->npending) {
            return true;
        }
    }
    return false;
}

/* The context and device of a Create call whose descriptor (stype first) must have
 * stype want, or NULL with *rc set. */
static standin_context *
create_args(ze_context_handle_t hc, ze_device_handle_t hd, const void *desc,
            ze_structure_type_t want, const void *out, const char *call,
            standin_device **dev, ze_result_t *rc)
{
    if (!desc || !out) {
        *rc = standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                               "desc or the handle pointer is NULL");
        return NULL;
    }
    standin_context *c = standin_find(hc, STANDIN_CONTEXT, call, rc);
    *dev = c ? standin_find(hd, STANDIN_DEVICE, call, rc) : NULL;
    if (*dev) {
        ze_structure_type_t stype;
        memcpy(&stype, desc, sizeof stype);
        *rc = standin_check_stype(stype, want, call);
    }
    return *dev && *rc == ZE_RESULT_SUCCESS ? c : NULL;
}

ze_result_t
standin_zeCommandQueueCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                             const ze_command_queue_desc_t *desc,
                             ze_command_queue_handle_t *phCommandQueue)
{
    const char *call = "zeCommandQueueCreate";
    ze_result_t rc = ZE_RESULT_SUCCESS;
    standin_device *d = NULL;
    pthread_mutex_lock(&standin_lock);
    standin_context *c =
        create_args(hContext, hDevice, desc, ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                    phCommandQueue, call, &d, &rc);
    if (c && rc == ZE_RESULT_SUCCESS &&
        (desc->ordinal >= STANDIN_QUEUE_GROUPS || desc->index != 0 ||
         desc->mode > ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS)) {
        rc = standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                              "ordinal %u, index %u, mode %u: the device has %d queue "
                              "groups of one queue each",
                              (unsigned)desc->ordinal, (unsigned)desc->index,
                              (unsigned)desc->mode, STANDIN_QUEUE_GROUPS);
    }
    size_t slot = 0;
    while (slot < sizeof queues / sizeof queues[0] && queues[slot]) {
        slot++;
    }
    if (c && rc == ZE_RESULT_SUCCESS && slot == sizeof queues / sizeof queues[0]) {
        rc = standin_complain(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, call,
                              "too many queues");
    }
    standin_queue *q = NULL;
    if (c && rc == ZE_RESULT_SUCCESS) {
        q = standin_new(sizeof *q, STANDIN_QUEUE);
        rc = q ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (q) {
        q->context = c;
        q->group = desc->ordinal;
        q->device = d;
        queues[slot] = q;
        c->live++;
        *phCommandQueue = (ze_command_queue_handle_t)q;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeCommandQueueDestroy(ze_command_queue_handle_t hCommandQueue)
{
    if (standin_check_not_ended("zeCommandQueueDestroy") != ZE_RESULT_SUCCESS) {
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_queue *q =
        standin_find(hCommandQueue, STANDIN_QUEUE, "zeCommandQueueDestroy", &rc);
    if (q && q->npending) {
        rc = standin_complain(
            ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, "zeCommandQueueDestroy",
            "%zu executed lists were never synchronized", q->npending);
    }
    else if (q) {
        for (size_t k = 0; k < sizeof queues / sizeof queues[0]; k++) {
            queues[k] = queues[k] == q ? NULL : queues[k];
        }
        free(q->pending);
        q->pending = NULL;
        q->context->live--;
        q->obj.dead = true;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

/* Checks [p, p + n) of a command of list l: a live allocation of l's context, or memory
 * that is no allocation at all (host memory); host memory of the context and shared
 * memory tied to no device serve every device. running: the command is being run, and
 * memory whose free waits for it is still its. */
static ze_result_t
check_range(const standin_list *l, const void *p, size_t n, bool running,
            const char *call, const char *what)
{
    standin_allocation *any = NULL;
    standin_allocation *a = standin_allocation_at(p, n, running, &any);
    const char *why = NULL;
    if (!p) {
        why = "is NULL";
    }
    else if (any && (!any->alias || (any->deferred && !running))) {
        why = "is in freed device memory";
    }
    else if (any && any->context != l->context) {
        why =
            "is device memory of another context: a pointer is valid only in the "
            "context that allocated it";
    }
    else if (any && !a) {
        why = "runs past the end of its allocation";
    }
    else if (any && any->device && any->device != l->device) {
        why = "is device memory of another device";
    }
    if (why) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                                "%s %p (+%zu) %s", what, p, n, why);
    }
    return ZE_RESULT_SUCCESS;
}

static bool
overlaps(const char *a, size_t an, const char *b, size_t bn)
{
    return a < b + bn && b < a + an;
}

/* Whether a command touching [p, p+n) conflicts with one since the last barrier. */
static bool
races(const standin_list *l, const char *p, size_t n, bool writes)
{
    for (size_t k = l->ncommands; k-- > 0;) {
        const standin_command *c = &l->commands[k];
        if (c->kind == STANDIN_BARRIER) {
            return false;
        }
        bool hit =
            c->kind == STANDIN_LAUNCH || overlaps(c->dst, c->size, p, n) ||
            (writes && c->kind == STANDIN_COPY && overlaps(c->src, c->size, p, n));
        if (hit) {
            return true;
        }
    }
    return false;
}

ze_result_t
standin_append(ze_command_list_handle_t h, const standin_command *cmd,
               ze_event_handle_t signal, uint32_t nwait, const ze_event_handle_t *wait,
               const char *call)
{
    (void)wait; /* may be non-NULL with nwait 0 (the loader's intercept does that) */
    if (signal || nwait) {
        return standin_complain(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, call,
                                "the stand-in has no events");
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_list *l = standin_find(h, STANDIN_LIST, call, &rc);
    if (l && (l->closed || l->pending)) {
        rc = standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                              "the command list is %s: reset it first",
                              l->pending ? "queued" : "closed");
    }
    if (l && rc == ZE_RESULT_SUCCESS && cmd->kind == STANDIN_FILL &&
        cmd->pattern_size > standin_fill_pattern_limit(l->group)) {
        rc = standin_complain(
            ZE_RESULT_ERROR_INVALID_SIZE, call,
            "a %zu-byte pattern: the list's queue group %u takes up to "
            "%zu (maxMemoryFillPatternSize)",
            cmd->pattern_size, (unsigned)l->group,
            standin_fill_pattern_limit(l->group));
    }
    if (l && rc == ZE_RESULT_SUCCESS && cmd->kind == STANDIN_LAUNCH &&
        (l->ncommands && l->commands[l->ncommands - 1].kind != STANDIN_BARRIER)) {
        rc = standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                              "a launch after other commands of the list with no "
                              "barrier between them (the stand-in cannot see what "
                              "a kernel touches)");
    }
    if (l && rc == ZE_RESULT_SUCCESS && cmd->kind != STANDIN_BARRIER &&
        cmd->kind != STANDIN_LAUNCH) {
        rc = check_range(l, cmd->dst, cmd->size, false, call, "the destination");
        if (rc == ZE_RESULT_SUCCESS && cmd->kind == STANDIN_COPY) {
            rc = check_range(l, cmd->src, cmd->size, false, call, "the source");
        }
        if (rc == ZE_RESULT_SUCCESS &&
            (races(l, cmd->dst, cmd->size, true) ||
             (cmd->kind == STANDIN_COPY && races(l, cmd->src, cmd->size, false)))) {
            rc = standin_complain(
                ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                "touches memory an earlier command of the list touches, "
                "with no barrier between them");
        }
    }
    if (l && rc == ZE_RESULT_SUCCESS && l->ncommands == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        standin_command *grown = realloc(l->commands, cap * sizeof *grown);
        rc = grown ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        if (grown) {
            l->commands = grown;
            l->cap = cap;
        }
    }
    if (l && rc == ZE_RESULT_SUCCESS) {
        l->commands[l->ncommands++] = *cmd;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeCommandListAppendBarrier(ze_command_list_handle_t hCommandList,
                                   ze_event_handle_t hSignalEvent,
                                   uint32_t numWaitEvents,
                                   ze_event_handle_t *phWaitEvents)
{
    standin_command cmd = {.kind = STANDIN_BARRIER};
    return standin_append(hCommandList, &cmd, hSignalEvent, numWaitEvents, phWaitEvents,
                          "zeCommandListAppendBarrier");
}

ze_result_t
standin_zeCommandListAppendMemoryCopy(ze_command_list_handle_t hCommandList,
                                      void *dstptr, const void *srcptr, size_t size,
                                      ze_event_handle_t hSignalEvent,
                                      uint32_t numWaitEvents,
                                      ze_event_handle_t *phWaitEvents)
{
    const char *call = "zeCommandListAppendMemoryCopy";
    if (dstptr && srcptr && overlaps(dstptr, size, srcptr, size)) {
        return standin_complain(ZE_RESULT_ERROR_OVERLAPPING_REGIONS, call,
                                "source and destination overlap");
    }
    standin_command cmd = {
        .kind = STANDIN_COPY, .dst = dstptr, .src = srcptr, .size = size};
    return standin_append(hCommandList, &cmd, hSignalEvent, numWaitEvents, phWaitEvents,
                          call);
}

ze_result_t
standin_zeCommandListAppendMemoryFill(ze_command_list_handle_t hCommandList, void *ptr,
                                      const void *pattern, size_t pattern_size,
                                      size_t size, ze_event_handle_t hSignalEvent,
                                      uint32_t numWaitEvents,
                                      ze_event_handle_t *phWaitEvents)
{
    const char *call = "zeCommandListAppendMemoryFill";
    if (!pattern || pattern_size == 0 || pattern_size > STANDIN_MAX_PATTERN ||
        (pattern_size & (pattern_size - 1)) || size % pattern_size) {
        return standin_complain(
            ZE_RESULT_ERROR_INVALID_SIZE, call,
            "pattern of %zu bytes for %zu bytes: the pattern must be a "
            "power of two up to %d that divides the size",
            pattern_size, size, STANDIN_MAX_PATTERN);
    }
    standin_command cmd = {
        .kind = STANDIN_FILL, .dst = ptr, .size = size, .pattern_size = pattern_size};
    memcpy(cmd.pattern, pattern, pattern_size); /* kept by value */
    return standin_append(hCommandList, &cmd, hSignalEvent, numWaitEvents, phWaitEvents,
                          call);
}

ze_result_t
standin_zeCommandListCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                            const ze_command_list_desc_t *desc,
                            ze_command_list_handle_t *phCommandList)
{
    const char *call = "zeCommandListCreate";
    ze_result_t rc = ZE_RESULT_SUCCESS;
    standin_device *d = NULL;
    pthread_mutex_lock(&standin_lock);
    standin_context *c =
        create_args(hContext, hDevice, desc, ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
                    phCommandList, call, &d, &rc);
    if (c && rc == ZE_RESULT_SUCCESS &&
        desc->commandQueueGroupOrdinal >= STANDIN_QUEUE_GROUPS) {
        rc = standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                              "queue group ordinal %u: the device has %d groups",
                              (unsigned)desc->commandQueueGroupOrdinal,
                              STANDIN_QUEUE_GROUPS);
    }
    standin_list *l = NULL;
    if (c && rc == ZE_RESULT_SUCCESS) {
        l = standin_new(sizeof *l, STANDIN_LIST);
        rc = l ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (l) {
        l->context = c;
        l->group = desc->commandQueueGroupOrdinal;
        l->device = d;
        c->live++;
        *phCommandList = (ze_command_list_handle_t)l;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

/* The list behind h for Destroy, Close and Reset: known and not queued. */
static standin_list *
idle_list(ze_command_list_handle_t h, const char *call, ze_result_t *rc)
{
    standin_list *l = standin_find(h, STANDIN_LIST, call, rc);
    if (l && l->pending) {
        *rc = standin_complain(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, call,
                               "the list is queued and not yet synchronized");
        return NULL;
    }
    return l;
}

ze_result_t
standin_zeCommandListDestroy(ze_command_list_handle_t hCommandList)
{
    if (standin_check_not_ended("zeCommandListDestroy") != ZE_RESULT_SUCCESS) {
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_list *l = idle_list(hCommandList, "zeCommandListDestroy", &rc);
    if (l) {
        standin_commands_clear(l);
        free(l->commands);
        l->commands = NULL;
        l->context->live--;
        l->obj.dead = true;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeCommandListClose(ze_command_list_handle_t hCommandList)
{
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_list *l = idle_list(hCommandList, "zeCommandListClose", &rc);
    if (l && l->closed) {
        rc = standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, "zeCommandListClose",
                              "the list is already closed");
    }
    else if (l) {
        l->closed = true;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeCommandListReset(ze_command_list_handle_t hCommandList)
{
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_list *l = idle_list(hCommandList, "zeCommandListReset", &rc);
    if (l) {
        l->closed = false;
        standin_commands_clear(l);
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeCommandQueueExecuteCommandLists(ze_command_queue_handle_t hCommandQueue,
                                          uint32_t numCommandLists,
                                          ze_command_list_handle_t *phCommandLists,
                                          ze_fence_handle_t hFence)
{
    const char *call = "zeCommandQueueExecuteCommandLists";
    if (hFence) {
        return standin_complain(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, call,
                                "the stand-in has no fences");
    }
    if (!phCommandLists || numCommandLists == 0) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_SIZE, call, "no command lists");
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_queue *q = standin_find(hCommandQueue, STANDIN_QUEUE, call, &rc);
    for (uint32_t k = 0; q && rc == ZE_RESULT_SUCCESS && k < numCommandLists; k++) {
        standin_list *l = standin_find(phCommandLists[k], STANDIN_LIST, call, &rc);
        if (l && (!l->closed || l->context != q->context || l->device != q->device ||
                  l->group != q->group)) {
            rc = standin_complain(
                ZE_RESULT_ERROR_INVALID_ARGUMENT, call, "list %u is %s", (unsigned)k,
                !l->closed ? "not closed"
                           : "of another context, device or queue group");
        }
    }
    if (q && rc == ZE_RESULT_SUCCESS && q->npending + numCommandLists > q->cap) {
        size_t cap = q->npending + numCommandLists + 16;
        // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
        standin_list **grown = realloc(q->pending, cap * sizeof *grown);
        rc = grown ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        if (grown) {
            q->pending = grown;
            q->cap = cap;
        }
    }
    for (uint32_t k = 0; q && rc == ZE_RESULT_SUCCESS && k < numCommandLists; k++) {
        standin_list *l = (standin_list *)phCommandLists[k];
        l->pending++;
        q->pending[q->npending++] = l;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

/* Runs one command: its ranges checked again (memory may have been freed since it was
 * appended), device pointers translated to the stand-in's read-write views. */
static ze_result_t
run(const standin_list *l, const standin_command *c)
{
    const char *call = "zeCommandQueueSynchronize";
    if (c->kind == STANDIN_BARRIER) {
        return ZE_RESULT_SUCCESS;
    }
    if (c->kind == STANDIN_LAUNCH) {
        return standin_launch_run(l, c->launch);
    }
    ze_result_t rc =
        check_range(l, c->dst, c->size, true, call, "a queued command's destination");
    if (rc == ZE_RESULT_SUCCESS && c->kind == STANDIN_COPY) {
        rc = check_range(l, c->src, c->size, true, call, "a queued command's source");
    }
    if (rc != ZE_RESULT_SUCCESS) {
        return rc;
    }
    standin_allocation *any = NULL;
    standin_allocation *d = standin_allocation_at(c->dst, c->size, true, &any);
    char *dst = d ? d->alias + (c->dst - d->user) : c->dst;
    if (c->kind == STANDIN_FILL) {
        for (size_t k = 0; k < c->size; k += c->pattern_size) {
            memcpy(dst + k, c->pattern, c->pattern_size);
        }
        return ZE_RESULT_SUCCESS;
    }
    standin_allocation *s = standin_allocation_at(c->src, c->size, true, &any);
    const char *src = s ? s->alias + (c->src - s->user) : c->src;
    memcpy(dst, src, c->size);
    return ZE_RESULT_SUCCESS;
}

ze_result_t
standin_zeCommandQueueSynchronize(ze_command_queue_handle_t hCommandQueue,
                                  uint64_t timeout)
{
    (void)timeout; /* the work runs here, to its end */
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_queue *q =
        standin_find(hCommandQueue, STANDIN_QUEUE, "zeCommandQueueSynchronize", &rc);
    for (size_t k = 0; q && k < q->npending; k++) {
        standin_list *l = q->pending[k];
        for (size_t j = 0; j < l->ncommands && rc == ZE_RESULT_SUCCESS; j++) {
            rc = run(l, &l->commands[j]);
        }
        l->pending--;
    }
    if (q) {
        q->npending = 0;
        standin_free_deferred(q->context);
    }
    pthread_mutex_unlock(&standin_lock);
    return rc == ZE_RESULT_SUCCESS ? rc : ZE_RESULT_ERROR_DEVICE_LOST;
}
