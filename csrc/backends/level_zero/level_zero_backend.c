/*
 * level_zero_backend.c: the level_zero backend table and the opening of its devices.
 *
 * A plain tack.device("level_zero", N) is the N-th root device over all the loader's
 * drivers, in the loader's order. Its devices accept the option external_context: the
 * driver, device and context handles of another library's Level Zero context, so that
 * Tack allocates where that library can use the memory (see docs/level_zero.md). The
 * handles are checked for presence before the loader is loaded, so a mistake in them
 * is reported as such on every machine.
 */
#include <string.h>

#include "../gpu_driver.h"
#include "level_zero_internal.h"

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

static tack_status
level_zero_open(const tack_backend *self, int ordinal,
                const tack_device_options *options, void **state)
{
    (void)self;
    (void)state;
    if (options && options->external_context) {
        tack_status st = check_external_context(options->external_context);
        if (st != TACK_OK) {
            return st;
        }
    }
    const tack__ze_loader *ze = NULL;
    tack_status st = tack__ze_loader_get(&ze);
    if (st != TACK_OK) {
        return st;
    }
    const tack__ze_root *root = NULL;
    st = find_root(ze, ordinal, &root);
    if (st != TACK_OK) {
        return st;
    }
    tze_device_properties props;
    memset(&props, 0, sizeof props);
    props.stype = TZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
    tze_result rc = ze->api.zeDeviceGetProperties(root->device, &props);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeDeviceGetProperties");
    }
    return tack__fail_remedy(
        TACK_ERR_DEVICE_UNAVAILABLE, TACK_REMEDY_CPU,
        "the Level Zero device %d ('%.200s', driver API %u.%u) was "
        "found, but this build of Tack has no level_zero array "
        "support yet",
        ordinal, props.name, TZE_MAJOR_VERSION(root->version),
        TZE_MINOR_VERSION(root->version));
}

static const char *const options[] = {"external_context", NULL};

const tack_backend tack__backend_level_zero = {
    .size = sizeof(tack_backend),
    .name = "level_zero",
    .dlpack_device_type = kDLOneAPI,
    .option_names = options,
    .impl = NULL,
    .open = level_zero_open, /* checks external_context first */
    TACK__GPU_SLOTS,
};
