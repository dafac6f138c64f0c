/*
 * hip_backend.c: the hip backend table. The ROCm runtime is opened with dlopen on
 * first use (gpu_driver.c); without it, opening a device raises RuntimeError naming
 * the library.
 */
#include "../gpu_driver.h"

static const char *const libraries[] = {"libamdhip64.so.6", "libamdhip64.so", NULL};
static const tack__driver_stub driver = {libraries, "the ROCm HIP runtime"};
static const char *const options[] = {NULL};

const tack_backend tack__backend_hip = {
    .size = sizeof(tack_backend),
    .name = "hip",
    .dlpack_device_type = kDLROCM,
    .option_names = options,
    .impl = &driver,
    .open = tack__stub_open,
    TACK__STUB_SLOTS,
};
