/*
 * level_zero_backend.c: the level_zero backend table and the opening of its devices.
 *
 * A plain tack.device("level_zero", N) is the N-th root device over all the loader's
 * drivers, in the loader's order (the root-device index SYCL libraries put in DLPack's
 * device_id). It runs in a context of Tack's own, made once and never destroyed.
 *
 * A device opened with external_context adopts another library's Level Zero context:
 * the handles are checked for presence before the loader is loaded, so a mistake in
 * them is reported as such on every machine; then the driver and device must be ones
 * the loader lists and the context a live one, and Tack's queue and list are made in
 * that context, so every allocation lands where the other library can use it. Tack
 * destroys only what it made (the queue and list, when the device is released), never
 * the adopted context (docs/level_zero.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu_driver.h"
#include "level_zero_kernel.h"

static tack_status
check_external_context(const tack_external_context *ctx)
{
    static const char *const names[] = {"driver", "device", "context"};
    uintptr_t values[] = {ctx->driver, ctx->device, ctx->context};
    char bad[64] = "";
    size_t used = 0;
    for (unsigned k = 0; k < 3; k++) {
        if (!(ctx->present & (1u << k)) || values[k] == 0) {
            size_t n = strlen(names[k]);
            if (used) {
                memcpy(bad + used, ", ", 2);
                used += 2;
            }
            memcpy(bad + used, names[k], n);
            used += n;
            bad[used] = '\0';
        }
    }
    if (used) {
        return tack__fail(
            TACK_ERR_INVALID_ARGUMENT,
            "external_context is missing or has null handles for: %s; give "
            "all three of driver, device and context as non-zero integers",
            bad);
    }
    return TACK_OK;
}

/* The root device of a plain open. Out: *root only on success. */
static tack_status
find_root(const tack__ze_loader *ze, int ordinal, const tack__ze_root **root)
{
    if (ordinal < 0 || (uint32_t)ordinal >= ze->ndevices) {
        return tack__fail_remedy(TACK_ERR_DEVICE_UNAVAILABLE, TACK_REMEDY_CPU,
                                 "there is no Level Zero device %d: the loader %s "
                                 "reports %u (use an ordinal from 0 to %u)",
                                 ordinal, ze->path, (unsigned)ze->ndevices,
                                 (unsigned)ze->ndevices - 1);
    }
    *root = &ze->roots[ordinal];
    return TACK_OK;
}

/* The root device the external handles name, which must be the one at ordinal. The
 * handles are compared with the loader's, never dereferenced, before any call. */
static tack_status
find_adopted_root(const tack__ze_loader *ze, const tack_external_context *ext,
                  int ordinal, const tack__ze_root **root)
{
    bool driver_known = false;
    for (uint32_t k = 0; k < ze->ndrivers; k++) {
        driver_known |= (uintptr_t)ze->drivers[k] == ext->driver;
    }
    if (!driver_known) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "external_context['driver'] (0x%jx) is not a driver of the "
                          "Level Zero loader %s: pass the handles of a context made "
                          "with this process's loader",
                          (uintmax_t)ext->driver, ze->path);
    }
    for (uint32_t k = 0; k < ze->ndevices; k++) {
        const tack__ze_root *r = &ze->roots[k];
        if ((uintptr_t)r->driver != ext->driver ||
            (uintptr_t)r->device != ext->device) {
            continue;
        }
        if ((int)k != ordinal) {
            return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                              "external_context['device'] is Level Zero device %u, not "
                              "%d: open tack.device('level_zero:%u', "
                              "external_context=...)",
                              (unsigned)k, ordinal, (unsigned)k);
        }
        *root = r;
        return TACK_OK;
    }
    return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                      "external_context['device'] (0x%jx) is not a root device of that "
                      "driver: pass the device the context's queue runs on "
                      "(sub-devices are not supported)",
                      (uintmax_t)ext->device);
}

/* The context: the adopted one, checked live, or a new one of Tack's own. */
static tack_status
make_context(tack__ze_state *s, const tack_external_context *ext)
{
    const tze_api *api = &s->ze->api;
    if (ext) {
        s->context = (tze_context)ext->context;
        s->adopted = true;
        tze_result rc = api->zeContextGetStatus(s->context);
        if (rc != TZE_RESULT_SUCCESS) {
            return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                              "external_context['context'] is not a live context of "
                              "that driver (zeContextGetStatus: %s): pass the context "
                              "the other library allocates in, while it exists",
                              tack__ze_result_name(rc));
        }
        return TACK_OK;
    }
    tze_context_desc desc = {TZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
    tze_result rc = api->zeContextCreate(s->driver, &desc, &s->context);
    return rc == TZE_RESULT_SUCCESS ? TACK_OK : tack__ze_error(rc, "zeContextCreate");
}

/* The first queue group that computes (kernels will run there; it also copies and
 * fills), into s->group and s->fill_pattern. */
static tack_status
find_compute_group(tack__ze_state *s)
{
    tze_command_queue_group_properties groups[16];
    uint32_t count = 16;
    for (uint32_t k = 0; k < count; k++) {
        memset(&groups[k], 0, sizeof groups[k]);
        groups[k].stype = TZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
    }
    tze_result rc =
        s->ze->api.zeDeviceGetCommandQueueGroupProperties(s->device, &count, groups);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeDeviceGetCommandQueueGroupProperties");
    }
    for (uint32_t k = 0; k < count && k < 16; k++) {
        if (groups[k].flags & TZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
            s->group = k;
            s->fill_pattern = groups[k].maxMemoryFillPatternSize;
            return TACK_OK;
        }
    }
    return tack__fail_remedy(TACK_ERR_DEVICE_UNAVAILABLE, TACK_REMEDY_CPU,
                             "the Level Zero device %d has no compute queue group: it "
                             "cannot run Tack's work",
                             s->ordinal);
}

/* Tack's command queue and list, in s->context, on the compute group. */
static tack_status
make_queue(tack__ze_state *s)
{
    const tze_api *api = &s->ze->api;
    tack_status st = find_compute_group(s);
    if (st != TACK_OK) {
        return st;
    }
    tze_command_queue_desc qdesc = {TZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                    NULL,
                                    s->group,
                                    0,
                                    0,
                                    TZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                    TZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    tze_result rc = api->zeCommandQueueCreate(s->context, s->device, &qdesc, &s->queue);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeCommandQueueCreate");
    }
    tze_command_list_desc ldesc = {TZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, s->group,
                                   0};
    rc = api->zeCommandListCreate(s->context, s->device, &ldesc, &s->list);
    if (rc != TZE_RESULT_SUCCESS) {
        (void)api->zeCommandQueueDestroy(s->queue);
        s->queue = NULL;
        return tack__ze_error(rc, "zeCommandListCreate");
    }
    return TACK_OK;
}

/* The group limits of s's device into s->max_group and s->shared_local. */
static tack_status
read_group_limits(tack__ze_state *s)
{
    tze_device_compute_properties props;
    memset(&props, 0, sizeof props);
    props.stype = TZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
    tze_result rc = s->ze->api.zeDeviceGetComputeProperties(s->device, &props);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeDeviceGetComputeProperties");
    }
    if (props.maxTotalGroupSize == 0) { /* the driver's word: no group could run */
        return tack__fail_remedy(TACK_ERR_DEVICE_UNAVAILABLE, TACK_REMEDY_CPU,
                                 "the Level Zero device %d reports a "
                                 "maxTotalGroupSize of 0: it cannot run a kernel",
                                 s->ordinal);
    }
    s->max_group = props.maxTotalGroupSize;
    s->shared_local = props.maxSharedLocalMemory;
    return TACK_OK;
}

/* Fills s for root r: properties, context, queue and list. */
static tack_status
open_root(tack__ze_state *s, const tack__ze_root *r, const tack_external_context *ext)
{
    const tze_api *api = &s->ze->api;
    s->driver = r->driver;
    s->device = r->device;
    s->version = r->version;
    s->ordinal = (int)(r - s->ze->roots);
    s->free_ext = api->zeMemFreeExt && s->version >= TZE_API_VERSION_1_3;
    tze_device_properties props;
    memset(&props, 0, sizeof props);
    props.stype = TZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
    tze_result rc = api->zeDeviceGetProperties(s->device, &props);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeDeviceGetProperties");
    }
    props.name[sizeof props.name - 1] = '\0';
    snprintf(s->describe, sizeof s->describe, "%.500s, device '%.256s', API %u.%u",
             s->ze->path, props.name, TZE_MAJOR_VERSION(s->version),
             TZE_MINOR_VERSION(s->version));
    tack_status st = read_group_limits(s);
    if (st == TACK_OK) {
        st = make_context(s, ext);
    }
    return st == TACK_OK ? make_queue(s) : st;
}

static void
level_zero_close(void *state)
{
    tack__ze_state *s = state;
    if (!s) {
        return;
    }
    const tze_api *api = &s->ze->api;
    if (tack__process_exiting()) {
        /* The context's owner may already be gone: nothing is destroyed. */
        pthread_mutex_destroy(&s->lock);
        free(s);
        return;
    }
    (void)tack__ze_synchronize(s);
    /* Only what Tack made: an adopted context stays, and so does Tack's own (the
     * registry's devices, which own one, are never closed). */
    if (s->list) {
        (void)api->zeCommandListDestroy(s->list);
    }
    if (s->queue) {
        (void)api->zeCommandQueueDestroy(s->queue);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static tack_status
level_zero_open(const tack_backend *self, int ordinal,
                const tack_device_options *options, void **state)
{
    (void)self;
    const tack_external_context *ext = options ? options->external_context : NULL;
    tack_status st = ext ? check_external_context(ext) : TACK_OK;
    const tack__ze_loader *ze = NULL;
    if (st == TACK_OK) {
        st = tack__ze_loader_get(&ze);
    }
    const tack__ze_root *root = NULL;
    if (st == TACK_OK) {
        st = ext ? find_adopted_root(ze, ext, ordinal, &root)
                 : find_root(ze, ordinal, &root);
    }
    if (st != TACK_OK) {
        return st;
    }
    tack__ze_state *s = calloc(1, sizeof *s);
    if (!s) {
        return tack__fail(TACK_ERR_NO_MEMORY,
                          "out of memory opening a Level Zero device");
    }
    s->ze = ze;
    pthread_mutex_init(&s->lock, NULL);
    st = open_root(s, root, ext);
    if (st != TACK_OK) {
        /* A context of Tack's own made before the failure is left: destroying it is
         * not worth a second failure path, and it is one small object. */
        level_zero_close(s);
        return st;
    }
    *state = s;
    return TACK_OK;
}

static uint64_t
level_zero_memory_domain(void *state, int ordinal)
{
    const tack__ze_state *s = state;
    /* An adopted context is a domain of its own: its pointers mean nothing in Tack's
     * context of the same device, nor in another adopted one. */
    return s->adopted ? (uint64_t)(uintptr_t)s->context | (uint64_t)1 << 63
                      : (uint64_t)ordinal + 1;
}

static const char *
level_zero_driver_path(void *state)
{
    const tack__ze_state *s = state;
    return s->describe;
}

static const char *const options[] = {"external_context", NULL};

const tack_backend tack__backend_level_zero = {
    .size = sizeof(tack_backend),
    .name = "level_zero",
    .dlpack_device_type = kDLOneAPI,
    .option_names = options,
    .impl = NULL,
    .open = level_zero_open,
    .close = level_zero_close,
    .alloc = tack__ze_alloc,
    .free = tack__ze_free,
    .copy = tack__ze_copy,
    .fill = tack__ze_fill,
    .memory_space = tack__ze_memory_space,
    .synchronize = tack__ze_synchronize,
    .memory_domain = level_zero_memory_domain,
    .driver_path = level_zero_driver_path,
    .kernel_build = tack__ze_kernel_build,
    .kernel_launch = tack__ze_kernel_launch,
};
