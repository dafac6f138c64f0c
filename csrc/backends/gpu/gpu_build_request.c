/*
 * gpu_build_request.c: a GPU backend's kernel_build slot. The front end's build
 * request (kernel.h's tack_kernel_request: target source, twin source, launch facts
 * and the failure record's names) is checked here once, for every CUDA-like
 * backend, so the launch trusts its facts; the twin is built by the CPU backend
 * (its disk cache makes this cheap) and must agree with them.
 */
#include <string.h>

#include "gpu_kernel.h"

static void
free_names(char **names, int n)
{
    for (int i = 0; names && i < n; i++) {
        tack__free(names[i]);
    }
    tack__free(names);
}

static bool
is_flag(int v)
{
    return v == 0 || v == 1;
}

/* Whether the request's facts are each in range and agree with each other: the
 * partials and a returned value live in the record, and partials need a grid. */
static bool
facts_agree(const tack_kernel_request *r)
{
    if (!is_flag(r->parallel) || !is_flag(r->host_trips) || !is_flag(r->needs_ctx) ||
        !is_flag(r->restrict_body) || r->partial_size < 0 ||
        r->partial_size > TACK_KERNEL_MAX_PARTIAL_SIZE ||
        r->result_kind < TACK_KERNEL_RESULT_NONE ||
        r->result_kind > TACK_KERNEL_RESULT_BOOL) {
        return false;
    }
    return !((r->partial_size > 0 || r->result_kind) && !r->needs_ctx) &&
           !(r->partial_size > 0 && !r->parallel);
}

/* Copies the request's names (each a non-empty string). Returns TACK_OK,
 * TACK_ERR_INVALID_ARGUMENT (nothing set) for a list that is not nnames of them,
 * TACK_ERR_NO_MEMORY. Out: *out (Owned: free_names) only on success. */
static tack_status
copy_names(const tack_kernel_request *r, char ***out)
{
    if (r->nnames < 0 || r->nnames > TACK_KERNEL_MAX_NAMES ||
        (r->nnames > 0 && !r->names)) {
        return TACK_ERR_INVALID_ARGUMENT;
    }
    for (int i = 0; i < r->nnames; i++) {
        if (!r->names[i] || !r->names[i][0]) {
            return TACK_ERR_INVALID_ARGUMENT;
        }
    }
    char **names = tack__calloc(((size_t)r->nnames + 1) * sizeof *names);
    for (int i = 0; names && i < r->nnames; i++) {
        if (!(names[i] = tack__strndup(r->names[i], strlen(r->names[i])))) {
            free_names(names, i);
            names = NULL;
        }
    }
    if (!names) {
        return TACK_ERR_NO_MEMORY;
    }
    *out = names;
    return TACK_OK;
}

/* Checks the request. Out: *names (Owned) only on success. */
static tack_status
read_request(const tack_backend *self, const char *name, const tack_kernel_request *r,
             char ***names)
{
    if (!r->twin_source) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': the %s backend builds a request with the C "
                          "twin of the same specialization (tack.kernel's GPU "
                          "emitters make one), not a source alone",
                          name, self->name);
    }
    if ((r->image == NULL) != (r->image_nbytes == 0)) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': the build request's image is %s with %zu "
                          "bytes; an image has bytes, and no image none",
                          name, r->image ? "set" : "NULL", r->image_nbytes);
    }
    if (!facts_agree(r)) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': the build request's launch facts contradict "
                          "each other (parallel %d, host_trips %d, needs_ctx %d, "
                          "restrict_body %d, partial_size %d, result_kind %d); "
                          "rebuild it with tack.kernel's emitter for %s",
                          name, r->parallel, r->host_trips, r->needs_ctx,
                          r->restrict_body, r->partial_size, r->result_kind,
                          self->name);
    }
    tack_status st = copy_names(r, names);
    if (st == TACK_ERR_NO_MEMORY) {
        return tack__fail(st, "out of memory building kernel '%s'", name);
    }
    if (st != TACK_OK) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': the build request's names must be %d "
                          "non-empty strings (at most %d), the kernel's array names; "
                          "rebuild it with tack.kernel's emitter for %s",
                          name, r->nnames, TACK_KERNEL_MAX_NAMES, self->name);
    }
    return TACK_OK;
}

tack_status
tack__gpu_kernel_build(const tack_backend *self, const char *name, const char *filename,
                       const tack_kernel_request *req, tack_kernel **out, char **log)
{
    char **names = NULL;
    tack_status st = read_request(self, name, req, &names);
    if (st != TACK_OK) {
        return st;
    }
    tack_kernel *cpu = NULL;
    st = tack__cpu_kernel_build(&tack__backend_cpu, name, filename, req->twin_source,
                                &cpu, log);
    if (st == TACK_OK && cpu->result_kind != req->result_kind) {
        st = tack__fail(TACK_ERR_INVALID_ARGUMENT,
                        "kernel '%s': the build request's result kind %d is not its "
                        "twin's (%d); rebuild it with tack.kernel's emitter for %s",
                        name, req->result_kind, cpu->result_kind, self->name);
    }
    if (st != TACK_OK) {
        free_names(names, req->nnames);
        return st;
    }
    tack__gpu_kernel *k = tack__calloc(sizeof *k);
    unsigned char *image = req->image_nbytes ? tack__alloc(req->image_nbytes, 0) : NULL;
    if (!k || !(k->source = tack__strndup(req->source, strlen(req->source))) ||
        (req->image_nbytes && !image)) {
        if (k) {
            tack__free(k->source);
        }
        tack__free(image);
        tack__free(k);
        free_names(names, req->nnames);
        return tack__fail(TACK_ERR_NO_MEMORY, "out of memory building kernel '%s'",
                          name);
    }
    if (image) {
        memcpy(image, req->image, req->image_nbytes);
        k->image = image;
        k->image_nbytes = req->image_nbytes;
    }
    k->parallel = req->parallel;
    k->host_trips = req->host_trips;
    k->needs_ctx = req->needs_ctx;
    k->restrict_body = req->restrict_body;
    k->partial_size = req->partial_size;
    k->names = names;
    k->nnames = req->nnames;
    k->cpu = cpu;
    pthread_mutex_init(&k->lock, NULL);
    k->pub = *cpu;
    k->pub.backend = self;
    /* the module's file table is the first of its names (kernel.h) */
    k->pub.files = (const char *const *)k->names;
    k->pub.nfiles = k->nnames;
    k->pub.impl = k;
    *out = &k->pub;
    return TACK_OK;
}
