/*
 * level_zero_backend.c: the level_zero backend table. Its devices accept the option
 * external_context: the driver, device and context handles of another library's
 * Level Zero context, so that Tack allocates where that library can use the memory
 * (see docs/architecture.md). The handles are checked before the driver is loaded,
 * so a mistake in them is reported as such on every machine.
 */
#include <string.h>

#include "../gpu_driver.h"

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

static tack_status
level_zero_open(const tack_backend *self, int ordinal,
                const tack_device_options *options, void **state)
{
    /* The handles are checked before the driver is loaded, so a mistake in them is
     * reported as such on every machine. */
    if (options && options->external_context) {
        tack_status st = check_external_context(options->external_context);
        if (st != TACK_OK) {
            return st;
        }
    }
    return tack__stub_open(self, ordinal, options, state);
}

static const char *const libraries[] = {"libze_loader.so.1", "libze_loader.so", NULL};
static const tack__driver_stub driver = {libraries, "the oneAPI Level Zero loader"};
static const char *const options[] = {"external_context", NULL};

const tack_backend tack__backend_level_zero = {
    .size = sizeof(tack_backend),
    .name = "level_zero",
    .dlpack_device_type = kDLOneAPI,
    .option_names = options,
    .impl = &driver,
    .open = level_zero_open, /* checks external_context first */
    TACK__STUB_SLOTS,
};
