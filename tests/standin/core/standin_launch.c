/*
 * standin_launch.c: modules, functions and launches, and the registry of CPU twins
 * (standin_twin.h).
 *
 * A module is the image a layer checked and copied, with the source it was compiled
 * from when the caller gave one; a function is an entry of it with the parameter layout
 * the layer read from the image, so a launch packs exactly the bytes the kernel would
 * see. A launch is queued like any other work and, when its queue runs, calls its
 * entry's CPU twin, or under TACK_STANDIN_EXEC=emulate the module's source compiled for
 * the host (standin_emulate.c). A launch that nothing could compute is refused with
 * NOT_SUPPORTED, queueing nothing: silently succeeding would leave the output at the
 * 0xA5 fill and pass for a wrong answer.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "standin.h"

typedef struct standin_launch_op {
    char *entry;
    struct standin_context *ctx;
    struct standin_queue *stream; /* the queue it was queued on */
    tack_standin_twin_fn fn;
    void *user;
    void *emulated; /* instead of fn: the module's own code (standin_emulate.c) */
    unsigned grid[3], block[3];
    unsigned shared;
    unsigned char *params;
    size_t params_nbytes;
    const standin_stamp *use; /* while it runs: where it was queued */
} standin_launch_op;

typedef struct twin {
    char *entry;
    tack_standin_twin_fn fn;
    void *user;
    struct twin *next;
} twin;

static struct standin_module *modules;
static struct standin_function *functions;
static twin *twins;

/* ---- the twin registry ----------------------------------------------------------- */

int
standin_twin_register(const char *entry, tack_standin_twin_fn fn, void *user)
{
    pthread_mutex_lock(&standin_lock);
    int rc = -1;
    twin *t = NULL;
    for (t = twins; t && strcmp(t->entry, entry) != 0; t = t->next) {
    }
    if (t) {
        t->fn = fn;
        t->user = user;
        rc = 0;
    }
    else if ((t = calloc(1, sizeof *t)) && (t->entry = strdup(entry))) {
        t->fn = fn;
        t->user = user;
        t->next = twins;
        twins = t;
        rc = 0;
    }
    else {
        free(t);
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

static const twin *
twin_of(const char *entry)
{
    for (const twin *t = twins; t; t = t->next) {
        if (strcmp(t->entry, entry) == 0) {
            return t;
        }
    }
    return NULL;
}

/* The twin's translate: addresses as the launch's queue sees them when it runs. */
static void *
launch_translate(void *launch, uint64_t device_address, size_t nbytes)
{
    const standin_launch_op *l = launch;
    return standin_queued_translate(l->ctx, l->use, device_address, nbytes);
}

bool
standin_launch_run(standin_launch_op *l, const standin_stamp *use)
{
    l->use = use;
    if (l->emulated) {
        standin_launch_args a = {.entry = l->entry,
                                 .ctx = l->ctx,
                                 .use = use,
                                 .grid = {l->grid[0], l->grid[1], l->grid[2]},
                                 .block = {l->block[0], l->block[1], l->block[2]},
                                 .shared = l->shared,
                                 .params = l->params,
                                 .params_nbytes = l->params_nbytes};
        return standin_emulate_run(l->emulated, &a);
    }
    tack_standin_launch launch = {
        .entry = l->entry,
        .grid = {l->grid[0], l->grid[1], l->grid[2]},
        .block = {l->block[0], l->block[1], l->block[2]},
        .params = l->params,
        .params_nbytes = l->params_nbytes,
        .translate = launch_translate,
        .translate_ctx = l,
    };
    /* The twin runs with the stand-in's lock held: it must not call the driver. */
    return l->fn(&launch, l->user) == 0;
}

void
standin_launch_free(standin_launch_op *l)
{
    if (l) {
        free(l->entry);
        free(l->params);
        free(l);
    }
}

/* ---- modules and functions ------------------------------------------------------- */

standin_rc
standin_module_add(struct standin_context *ctx, const void *image, size_t nbytes,
                   int format, struct standin_module **out)
{
    struct standin_module *m = calloc(1, sizeof *m);
    unsigned char *copy = malloc(nbytes);
    if (!m || !copy) {
        free(m);
        free(copy);
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    memcpy(copy, image, nbytes);
    m->image = copy;
    m->image_nbytes = nbytes;
    m->format = format;
    m->ctx = ctx;
    m->alive = true;
    m->next = modules; /* modules are kept for the life of the process */
    modules = m;
    *out = m;
    return STANDIN_OK;
}

struct standin_module *
standin_module_find(const void *handle, const struct standin_context *ctx)
{
    for (struct standin_module *m = modules; m; m = m->next) {
        if ((const void *)m == handle) {
            return m->alive && m->ctx == ctx ? m : NULL;
        }
    }
    return NULL;
}

void
standin_module_unload(struct standin_module *m)
{
    m->alive = false; /* launches already queued keep what they need */
    free(m->image);
    m->image = NULL;
    free(m->source);
    m->source = NULL;
}

standin_rc
standin_module_set_source(struct standin_module *m, const char *source)
{
    char *copy = strdup(source);
    if (!copy) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    free(m->source);
    m->source = copy;
    return STANDIN_OK;
}

struct standin_function *
standin_function_new(struct standin_module *m, const char *name)
{
    struct standin_function *f = calloc(1, sizeof *f);
    if (f && !(f->name = strdup(name))) {
        free(f);
        return NULL;
    }
    if (f) {
        f->mod = m;
    }
    return f;
}

void
standin_function_publish(struct standin_function *f)
{
    f->next = functions;
    functions = f;
}

void
standin_function_discard(struct standin_function *f)
{
    if (f) {
        free(f->name);
        free(f);
    }
}

struct standin_function *
standin_function_find(const void *handle)
{
    for (struct standin_function *f = functions; f; f = f->next) {
        if ((const void *)f == handle) {
            return f->mod->alive ? f : NULL;
        }
    }
    return NULL;
}

/* ---- launches -------------------------------------------------------------------- */

/* Geometry within the device's limits (standin_device). */
static standin_rc
check_geometry(const unsigned grid[3], const unsigned block[3], unsigned shared)
{
    const standin_device_facts *d = &standin_device;
    const unsigned grid_max[3] = {(unsigned)d->max_grid_x, (unsigned)d->max_grid_y,
                                  (unsigned)d->max_grid_z};
    const unsigned block_max[3] = {(unsigned)d->max_block_x, (unsigned)d->max_block_y,
                                   (unsigned)d->max_block_z};
    unsigned long long threads = 1;
    for (int k = 0; k < 3; k++) {
        if (grid[k] == 0 || block[k] == 0 || grid[k] > grid_max[k] ||
            block[k] > block_max[k]) {
            return STANDIN_ERR_INVALID_VALUE;
        }
        threads *= block[k];
    }
    if (threads > (unsigned)d->max_threads_per_block || shared > STANDIN_MAX_SHARED) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    return STANDIN_OK;
}

standin_rc
standin_params_pack(const struct standin_function *f, void **by_param,
                    const void *buffer, size_t buffer_nbytes, unsigned char **out)
{
    if (by_param && buffer) {
        return STANDIN_ERR_INVALID_VALUE; /* one form or the other */
    }
    unsigned char *buf = calloc(1, f->params_nbytes ? f->params_nbytes : 1);
    if (!buf) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    standin_rc rc = STANDIN_OK;
    if (buffer) {
        if (buffer_nbytes != f->params_nbytes) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
        else {
            memcpy(buf, buffer, buffer_nbytes);
        }
    }
    else {
        for (unsigned k = 0; k < f->nparams && rc == STANDIN_OK; k++) {
            if (!by_param || !by_param[k]) {
                rc = STANDIN_ERR_INVALID_VALUE;
            }
            else {
                memcpy(buf + f->offset[k], by_param[k], f->size[k]);
            }
        }
    }
    if (rc != STANDIN_OK) {
        free(buf);
        return rc;
    }
    *out = buf;
    return STANDIN_OK;
}

void
standin_params_hex(const unsigned char *params, size_t n, char *out, size_t out_nbytes)
{
    size_t shown = n < (out_nbytes - 4) / 2 ? n : (out_nbytes - 4) / 2;
    for (size_t k = 0; k < shown; k++) {
        snprintf(out + 2 * k, 3, "%02x", params[k]);
    }
    memcpy(out + 2 * shown, shown < n ? "..." : "", shown < n ? 4 : 1);
}

standin_rc
standin_launch_check(struct standin_context *ctx, const struct standin_function *f,
                     const unsigned grid[3], const unsigned block[3], unsigned shared)
{
    if (f->mod->ctx != ctx) {
        return STANDIN_ERR_INVALID_HANDLE; /* a function of another context */
    }
    return check_geometry(grid, block, shared);
}

standin_rc
standin_launch_queue(struct standin_context *ctx, struct standin_queue *s,
                     struct standin_function *f, const unsigned grid[3],
                     const unsigned block[3], unsigned shared, unsigned char *params)
{
    const twin *t = !standin.emulate ? twin_of(f->name) : NULL;
    if (standin.emulate && !f->emulated) {
        f->emulated = standin_emulate_entry(f->mod->source, f->name);
    }
    standin_rc rc = STANDIN_OK;
    if (standin.emulate ? !f->emulated : !t) {
        rc = STANDIN_ERR_NOT_SUPPORTED; /* nothing could compute it (reason logged) */
    }
    standin_launch_op *l = NULL;
    standin_op *op = NULL;
    if (rc == STANDIN_OK &&
        (!(l = calloc(1, sizeof *l)) || !(l->entry = strdup(f->name)) ||
         !(op = standin_op_new(OP_LAUNCH)))) {
        rc = STANDIN_ERR_OUT_OF_MEMORY;
    }
    if (rc != STANDIN_OK) {
        free(params);
        standin_launch_free(l);
        return rc;
    }
    l->ctx = ctx;
    l->stream = s;
    if (t) {
        l->fn = t->fn;
        l->user = t->user;
    }
    l->emulated = t ? NULL : f->emulated;
    l->shared = shared;
    memcpy(l->grid, grid, sizeof l->grid);
    memcpy(l->block, block, sizeof l->block);
    l->params = params;
    l->params_nbytes = f->params_nbytes;
    op->launch = l;
    standin_enqueue(s, op);
    return STANDIN_OK;
}

/* ---- occupancy ------------------------------------------------------------------- */

standin_rc
standin_occupancy(int block_limit, size_t (*dynamic_of)(int block), size_t dynamic,
                  int *block_out, int *grid_out)
{
    int block = standin_device.max_threads_per_block;
    if (block_limit > 0 && block_limit < block) {
        block = block_limit >= 32 ? block_limit / 32 * 32 : block_limit;
    }
    if ((dynamic_of ? dynamic_of(block) : dynamic) > STANDIN_MAX_SHARED) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    *block_out = block;
    *grid_out =
        standin_device.multiprocessors * (standin_device.max_threads_per_sm / block);
    return STANDIN_OK;
}
