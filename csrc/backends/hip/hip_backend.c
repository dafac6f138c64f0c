/*
 * hip_backend.c: the hip backend table. The driver is opened with dlopen on first
 * use; without it, opening a device raises RuntimeError naming the library.
 */
#include "../gpu_driver.h"

static const char *const hip_libraries[] = {"libamdhip64.so.6", "libamdhip64.so", NULL};

static tack_status
hip_open(int ordinal, const tack_device_options *options, void **state)
{
    (void)ordinal;
    (void)options;
    void *handle;
    tack_status st =
        tack__driver_load("hip", hip_libraries, "the ROCm HIP runtime", &handle);
    if (st != TACK_OK) {
        return st;
    }
    /* The library stays loaded: drivers must never be unloaded while in use. */
    (void)state;
    return tack__driver_not_built("hip");
}

static const char *const hip_options[] = {NULL};

const tack_backend tack__backend_hip = {
    .size = sizeof(tack_backend),
    .name = "hip",
    .dlpack_device_type = 10,
    .option_names = hip_options,
    .open = hip_open,
    .close = NULL,
    .alloc = tack__gpu_alloc,
    .free = tack__gpu_free,
    .copy = tack__gpu_copy,
    .fill = tack__gpu_fill,
    .memory_space = tack__gpu_memory_space,
    .synchronize = tack__gpu_synchronize,
    .memory_domain = tack__gpu_memory_domain,
};
