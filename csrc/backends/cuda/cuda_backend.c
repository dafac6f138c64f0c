/*
 * cuda_backend.c: the cuda backend table. The driver is opened with dlopen on first
 * use (gpu_driver.c); without it, opening a device raises RuntimeError naming the
 * library.
 */
#include "../gpu_driver.h"

static const char *const libraries[] = {"libcuda.so.1", "libcuda.so", NULL};
static const tack__gpu_driver driver = {libraries, "the NVIDIA driver"};
static const char *const options[] = {NULL};

const tack_backend tack__backend_cuda = {
    .size = sizeof(tack_backend),
    .name = "cuda",
    .dlpack_device_type = kDLCUDA,
    .option_names = options,
    .impl = &driver,
    .open = tack__gpu_open,
    TACK__GPU_SLOTS,
};
