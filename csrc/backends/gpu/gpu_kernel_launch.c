/*
 * gpu_kernel_launch.c: a GPU backend's kernel_launch slot (docs/kernels.md,
 * "Kernels on CUDA").
 *
 * A launch is queued on Tack's stream and returns; a launch with TACK_KERNEL_SHARED
 * (an argument's buffer is shared with another library) synchronizes first. A kernel
 * that reduces, returns a value or runs in debug mode (needs_ctx) gets a context
 * record: one stream-ordered scratch allocation per launch holds the 64-byte record
 * (emit_cuda.py's tk_ctx) and the blocks' partials; the record is set from a host
 * copy on this stack, the body and then tack_kernel_finish run, and the record comes
 * back before the launch returns the value or raises the CPU's error (launch.c
 * words it). So these launches always complete before returning; every path that
 * queued a copy waits for the stream, since the copies use this stack frame.
 *
 * What still differs from the CPU: float reductions are associated by the grid (a
 * tree per block, blocks folded in order) rather than by the CPU's fixed chunks, and
 * the math functions are libdevice's (docs/kernels.md, "What differs on the GPU").
 *
 */
#include <string.h>

#include "gpu_kernel.h"

/* Queues fn on Tack's stream, its stand-in twin registered just before. */
static tack_status
launch_entry(tack__gpu_state *s, tack__gpu_kernel *k, const char *entry,
             tack__gpu_function fn, tack_standin_twin_fn twin, unsigned grid,
             unsigned block, unsigned shared, void **args)
{
    bool held = false;
    tack_status st = tack__gpu_twin_begin(s, entry, twin, k, &held);
    if (st == TACK_OK) {
        st = TACK__GPU_CHECKED(s, launch_kernel, fn, grid, 1, 1, block, 1, 1, shared,
                               s->stream, args, NULL);
    }
    tack__gpu_twin_end(held);
    return st;
}

tack_status
tack__gpu_read_record(const tack__gpu_kernel *k, const tack__gpu_record *r,
                      tack_kernel_value *result)
{
    if (r->failed) {
        bool index = r->why == TACK_KERNEL_FAIL_INDEX;
        if ((!index && r->why != TACK_KERNEL_FAIL_ZERO_DIVISION) ||
            (index && (r->name < 0 || r->name >= k->nnames))) {
            return tack__fail(TACK_ERR_BACKEND,
                              "kernel '%s' left a failure record Tack cannot read "
                              "(why %d, name %d of %d); the device memory of the "
                              "launch was overwritten",
                              k->pub.name, r->why, r->name, k->nnames);
        }
        tack__kernel_failure f = {.failed = 1,
                                  .why = r->why,
                                  .line = r->line,
                                  .axis = r->axis,
                                  .index = r->index,
                                  .extent = r->extent,
                                  .name = index ? k->names[r->name] : NULL};
        return tack__kernel_failure_status(&k->pub, &f);
    }
    result->kind = (tack_kernel_result_kind)k->pub.result_kind;
    result->i = r->result_i;
    result->f = r->result_f;
    return TACK_OK;
}

/*
 * A launch with a record (reductions, returned values, debug mode): one scratch
 * allocation on Tack's stream holds the record and the blocks' partials; the record
 * is set from the host, the body runs (unless trips is 0), then the finish, and the
 * record is read back. The host copies of the record live on this stack, so the
 * launch waits for its stream before returning, on every path once a copy is
 * queued. Inside a guard.
 */
static tack_status
launch_with_record(tack__gpu_state *s, tack__gpu_kernel *k,
                   const tack__gpu_context_module *m, const tack__gpu_entry *e,
                   const char *entry, void *params, unsigned grid, unsigned block,
                   int64_t trips, tack_kernel_value *result)
{
    size_t partials = (size_t)grid * (size_t)k->partial_size;
    size_t nbytes = sizeof(tack__gpu_record) + partials;
    tack__gpu_ptr scratch = 0;
    tack_status st = tack__gpu_alloc_queued(s, nbytes, &scratch);
    if (st != TACK_OK) {
        return st;
    }
    tack__gpu_record rec;
    memset(&rec, 0, sizeof rec);
    rec.partials = partials ? scratch + sizeof(tack__gpu_record) : 0;
    uint64_t addr = scratch;
    int64_t nblocks = tack__gpu_finish_blocks(k, trips, grid);
    void *args[3] = {params, &addr, &nblocks};
    st = TACK__GPU_CHECKED(s, copy_htod_async, scratch, &rec, sizeof rec, s->stream);
    if (st == TACK_OK && trips != 0) {
        st = launch_entry(s, k, entry, e->fn, tack__gpu_twin_body, grid, block,
                          block * (unsigned)k->partial_size, args);
    }
    if (st == TACK_OK && m->finish) {
        st = launch_entry(s, k, "tack_kernel_finish", m->finish, tack__gpu_twin_finish,
                          1, 1, 0, args);
    }
    if (st == TACK_OK) {
        st =
            TACK__GPU_CHECKED(s, copy_dtoh_async, &rec, scratch, sizeof rec, s->stream);
    }
    /* Always: the queued copies read and write this stack frame. */
    tack_status synced = TACK__GPU_CHECKED(s, stream_synchronize, s->stream);
    st = st == TACK_OK ? synced : st;
    tack__gpu_free_queued(s, scratch);
    return st == TACK_OK ? tack__gpu_read_record(k, &rec, result) : st;
}

tack_status
tack__gpu_launch_trips(const tack__gpu_kernel *k, const void *params, int64_t *trips,
                       bool *nothing, tack_kernel_value *result)
{
    *trips = -1; /* unknown on the host: the grid fills the device */
    *nothing = false;
    if (k->parallel && k->host_trips) {
        /* reads extents and scalars only; a debug-mode setup may fail here */
        tack_status st = tack__cpu_kernel_trips(k->cpu, params, trips);
        if (st != TACK_OK) {
            return st;
        }
        *nothing = *trips <= 0 && !tack__gpu_needs_finish(k);
        if (*nothing) {
            result->kind = TACK_KERNEL_RESULT_NONE; /* the launch's whole result */
        }
        *trips = *trips < 0 ? 0 : *trips;
    }
    return TACK_OK;
}

const tack__gpu_entry *
tack__gpu_body_entry(const tack__gpu_context_module *m, unsigned flags,
                     const char **name)
{
    bool restrict_body = (flags & TACK_KERNEL_NOALIAS) && m->body_restrict.fn;
    *name = restrict_body ? "tack_kernel_body_restrict" : "tack_kernel_body";
    return restrict_body ? &m->body_restrict : &m->body;
}

void
tack__gpu_launch_shape(const tack__gpu_kernel *k, const tack__gpu_entry *e,
                       int64_t trips, unsigned *grid, unsigned *block)
{
    /* a serial kernel runs as one thread; a parallel one on the blocks that fill
     * the device, fewer when the trips need fewer (the loop is grid-stride) */
    *block = k->parallel ? e->block : 1;
    *grid = k->parallel ? e->grid : 1;
    /* whole blocks for the trips, rounded up without overflow near INT64_MAX */
    int64_t blocks = trips / *block + (trips % *block != 0);
    if (trips > 0 && blocks < (int64_t)*grid) {
        *grid = (unsigned)blocks;
    }
}

tack_status
tack__gpu_block_limit(const tack__gpu_kernel *k, uint64_t shared_nbytes,
                      unsigned max_block, const char *shared_name, unsigned *out)
{
    if (k->partial_size <= 0) {
        *out = max_block;
        return TACK_OK;
    }
    uint64_t fit = shared_nbytes / (uint64_t)k->partial_size;
    if (fit == 0) {
        /* 4096 bytes (TACK_KERNEL_MAX_PARTIAL_SIZE) fit every GPU Tack knows; a
         * device with less must refuse before a launch asks for it. */
        return tack__fail(TACK_ERR_UNSUPPORTED,
                          "kernel '%s': one work item's reduction partials take %d "
                          "bytes (8 for each int64 or float64 reduction, 4 for each "
                          "32-bit one: about %d reductions), more than the %llu bytes "
                          "of %s this device gives a group; reduce in fewer names, "
                          "or in 32-bit types",
                          k->pub.name, k->partial_size, k->partial_size / 8,
                          (unsigned long long)shared_nbytes, shared_name);
    }
    unsigned limit = fit < max_block ? (unsigned)fit : max_block;
    /* The block's tree (emit_grid.py's parallel_body) takes any size; whole warps
     * (CUDA) or subgroups (Intel's GPUs run 8, 16 or 32 wide) waste no lanes. */
    *out = limit >= 32 ? limit / 32 * 32 : limit;
    return TACK_OK;
}

tack_status
tack__gpu_kernel_launch(void *state, tack_kernel *kernel, const void *params,
                        size_t params_nbytes, unsigned flags, tack_kernel_value *result)
{
    tack__gpu_kernel *k = kernel->impl;
    tack__gpu_state *s = state;
    if (!s) {
        const tack__gpu_vendor *v = kernel->backend->impl;
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s' runs on %s: launch it on a %s device "
                          "(tack_kernel_launch_on)",
                          kernel->name, v->platform, v->platform);
    }
    int64_t trips = -1;
    bool nothing = false;
    tack_status st = tack__gpu_launch_trips(k, params, &trips, &nothing, result);
    if (st != TACK_OK || nothing) {
        return st;
    }
    tack__gpu_guard g;
    st = tack__gpu_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    const tack__gpu_context_module *m = NULL;
    st = tack__gpu_module_of(k, s, &m);
    tack_kernel_value value = {TACK_KERNEL_RESULT_NONE, 0, 0.0};
    if (st == TACK_OK) {
        const char *entry = NULL;
        const tack__gpu_entry *e = tack__gpu_body_entry(m, flags, &entry);
        unsigned block = 1, grid = 1;
        tack__gpu_launch_shape(k, e, trips, &grid, &block);
        uint64_t one = 0; /* a kernel without parameters declares a 1-byte block */
        void *block_arg = params_nbytes ? (void *)params : (void *)&one;
        if (k->needs_ctx) {
            st = launch_with_record(s, k, m, e, entry, block_arg, grid, block, trips,
                                    &value);
        }
        else {
            uint64_t none = 0; /* no record: the kernel never touches it */
            void *args[2] = {block_arg, &none};
            st = launch_entry(s, k, entry, e->fn, tack__gpu_twin_body, grid, block, 0,
                              args);
        }
    }
    if (st == TACK_OK && !k->needs_ctx && (flags & TACK_KERNEL_SHARED)) {
        st = TACK__GPU_CHECKED(s, stream_synchronize, s->stream);
    }
    tack__gpu_leave(s, &g);
    if (st == TACK_OK) {
        *result = value;
    }
    return st;
}
