/*
 * level_zero_kernel_launch.c: the level_zero backend's kernel_launch slot
 * (docs/level_zero.md, "Kernels").
 *
 * The launch contract is CUDA's (emit_cuda.py and emit_opencl.py's opening
 * comments): argument 0 is the parameter block by value, argument 1 the address of
 * the launch record (0 without one), a reduction's body takes its work group's
 * partials as a local-memory argument last (a size and no value), and
 * tack_kernel_finish takes the body's group count after the record. Launches go into
 * Tack's command list, each followed by a barrier (level_zero_memory.c); a kernel's
 * argument and group-size state is set and its launch appended under the device's
 * lock, since the driver copies that state when the launch is appended.
 *
 * A launch with a record (reductions, returned values, debug mode) allocates it with
 * the partials, copies the record in from this stack, runs the body and the finish,
 * copies the record back and synchronizes before returning, as CUDA's does, and the
 * GPU layer reads the record (tack__gpu_read_record).
 */
#include <string.h>

#include "level_zero_kernel.h"

/* Sets argument i of fn to nbytes at value (NULL: local memory of that size). */
static tack_status
set_arg(const tack__ze_state *s, tze_kernel fn, uint32_t i, size_t nbytes,
        const void *value)
{
    tze_result rc = s->ze->api.zeKernelSetArgumentValue(fn, i, nbytes, value);
    return rc == TZE_RESULT_SUCCESS ? TACK_OK
                                    : tack__ze_error(rc, "zeKernelSetArgumentValue");
}

/* One launch of entry e, its arguments set, appended with its barrier; under the
 * stand-in its twin is registered just before. Call with s->lock held. */
static tack_status
append_launch(tack__ze_state *s, tack__gpu_kernel *k, const char *entry,
              tack__gpu_function e, tack_standin_twin_fn twin, unsigned grid,
              unsigned block, const void *const *args, const size_t *sizes, int nargs)
{
    tze_kernel fn;
    memcpy(&fn, &e, TACK__ZE_HANDLE_NBYTES);
    tack_status st = TACK_OK;
    for (int i = 0; st == TACK_OK && i < nargs; i++) {
        st = set_arg(s, fn, (uint32_t)i, sizes[i], args[i]);
    }
    tze_result rc = TZE_RESULT_SUCCESS;
    if (st == TACK_OK) {
        rc = s->ze->api.zeKernelSetGroupSize(fn, block, 1, 1);
        st = rc == TZE_RESULT_SUCCESS ? TACK_OK
                                      : tack__ze_error(rc, "zeKernelSetGroupSize");
    }
    bool held = false;
    if (st == TACK_OK) {
        st = tack__gpu_twin_register(tack__ze_twin_registry(), entry, twin, k, &held);
    }
    if (st == TACK_OK) {
        tze_group_count groups = {grid, 1, 1};
        rc = s->ze->api.zeCommandListAppendLaunchKernel(s->list, fn, &groups, NULL, 0,
                                                        NULL);
        st = tack__ze_appended_locked(s, rc, "zeCommandListAppendLaunchKernel");
    }
    tack__gpu_twin_end(held);
    return st;
}

/* The launch with a record (see the opening comment), scratch its allocation.
 * Call with s->lock held; the list is synchronized on every path once a copy of
 * this stack frame was appended. */
static tack_status
launch_with_record(tack__ze_state *s, tack__gpu_kernel *k,
                   const tack__gpu_context_module *m, const char *entry,
                   tack__gpu_function fn, const void *block_arg, size_t block_nbytes,
                   unsigned grid, unsigned block, int64_t trips, char *scratch,
                   tack__gpu_record *rec)
{
    memset(rec, 0, sizeof *rec);
    size_t partials = (size_t)grid * (size_t)k->partial_size;
    rec->partials = partials ? (uint64_t)(uintptr_t)(scratch + sizeof *rec) : 0;
    uint64_t addr = (uint64_t)(uintptr_t)scratch;
    int64_t nblocks = tack__gpu_finish_blocks(k, trips, grid);
    const tze_api *api = &s->ze->api;
    tze_result rc = api->zeCommandListAppendMemoryCopy(s->list, scratch, rec,
                                                       sizeof *rec, NULL, 0, NULL);
    tack_status st = tack__ze_appended_locked(s, rc, "zeCommandListAppendMemoryCopy");
    const void *args[3] = {block_arg, &addr, NULL};
    size_t sizes[3] = {block_nbytes, 8, (size_t)block * (size_t)k->partial_size};
    if (st == TACK_OK && trips != 0) {
        st = append_launch(s, k, entry, fn, tack__gpu_twin_body, grid, block, args,
                           sizes, k->partial_size > 0 ? 3 : 2);
    }
    if (st == TACK_OK && m->finish) {
        args[2] = &nblocks;
        sizes[2] = 8;
        st = append_launch(s, k, "tack_kernel_finish", m->finish, tack__gpu_twin_finish,
                           1, 1, args, sizes, 3);
    }
    if (st == TACK_OK) {
        rc = api->zeCommandListAppendMemoryCopy(s->list, rec, scratch, sizeof *rec,
                                                NULL, 0, NULL);
        st = tack__ze_appended_locked(s, rc, "zeCommandListAppendMemoryCopy");
    }
    /* Always: the appended copies read and write the caller's frame. */
    tack_status synced = tack__ze_flush_locked(s, true);
    return st == TACK_OK ? synced : st;
}

/* The launch of m's entry for flags, under s->lock. */
static tack_status
launch_locked(tack__ze_state *s, tack__gpu_kernel *k, const tack__gpu_context_module *m,
              const void *params, size_t params_nbytes, unsigned flags, int64_t trips,
              char *scratch, tack__gpu_record *rec)
{
    tack_status st = tack__ze_writable_locked(s);
    if (st != TACK_OK) {
        return st;
    }
    const char *entry = NULL;
    const tack__gpu_entry *e = tack__gpu_body_entry(m, flags, &entry);
    unsigned grid = 1, block = 1;
    tack__gpu_launch_shape(k, e, trips, &grid, &block);
    static const char one = 0; /* a kernel without parameters declares a 1-byte block */
    const void *block_arg = params_nbytes ? params : &one;
    size_t block_nbytes = params_nbytes ? params_nbytes : 1;
    if (k->needs_ctx) {
        return launch_with_record(s, k, m, entry, e->fn, block_arg, block_nbytes, grid,
                                  block, trips, scratch, rec);
    }
    uint64_t none = 0; /* no record: the kernel never touches it */
    const void *args[2] = {block_arg, &none};
    size_t sizes[2] = {block_nbytes, 8};
    st = append_launch(s, k, entry, e->fn, tack__gpu_twin_body, grid, block, args,
                       sizes, 2);
    if (st == TACK_OK && (flags & TACK_KERNEL_SHARED)) {
        st = tack__ze_flush_locked(s, true);
    }
    return st;
}

tack_status
tack__ze_kernel_launch(void *state, tack_kernel *kernel, const void *params,
                       size_t params_nbytes, unsigned flags, tack_kernel_value *result)
{
    tack__gpu_kernel *k = kernel->impl;
    tack__ze_state *s = state;
    if (!s) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s' runs on Level Zero: launch it on a level_zero "
                          "device (tack_kernel_launch_on)",
                          kernel->name);
    }
    int64_t trips = -1;
    bool nothing = false;
    tack_status st = tack__gpu_launch_trips(k, params, &trips, &nothing, result);
    if (st != TACK_OK || nothing) {
        return st;
    }
    const tack__gpu_context_module *m = NULL;
    st = tack__ze_module_of(k, s, &m);
    void *scratch = NULL;
    if (st == TACK_OK && k->needs_ctx) {
        /* a launch runs at most TACK__ZE_FILL_GROUPS groups (entry_of) */
        size_t partials = (size_t)TACK__ZE_FILL_GROUPS * (size_t)k->partial_size;
        st = tack__ze_alloc(s, sizeof(tack__gpu_record) + partials, false, &scratch);
    }
    tack__gpu_record rec;
    memset(&rec, 0, sizeof rec);
    if (st == TACK_OK) {
        pthread_mutex_lock(&s->lock);
        st = launch_locked(s, k, m, params, params_nbytes, flags, trips, scratch, &rec);
        pthread_mutex_unlock(&s->lock);
    }
    tack__ze_free(s, scratch);
    tack_kernel_value value = {TACK_KERNEL_RESULT_NONE, 0, 0.0};
    if (st == TACK_OK && k->needs_ctx) {
        st = tack__gpu_read_record(k, &rec, &value);
    }
    if (st == TACK_OK) {
        *result = value;
    }
    return st;
}
