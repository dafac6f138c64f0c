/*
 * cuda_backend.c: the cuda backend table. The device is the GPU layer's
 * (csrc/backends/gpu/) over the CUDA driver's table (cuda_table.c); the kernel slots
 * are the GPU layer's (gpu_kernel.h). docs/cuda.md describes the model: one
 * non-blocking stream per device, host reads wait, exports share.
 */
#include "../gpu/gpu_kernel.h"
#include "cuda_internal.h"

static const char *const option_names[] = {NULL};

static tack_status
cuda_open(const tack_backend *self, int ordinal, const tack_device_options *options,
          void **state)
{
    tack_status st = tack__gpu_refuse_options(self, options);
    const tack__gpu_driver *drv = NULL;
    if (st == TACK_OK) {
        st = tack__cuda_driver_get(&drv);
    }
    return st == TACK_OK ? tack__gpu_open(drv, ordinal, state) : st;
}

const tack_backend tack__backend_cuda = {
    .size = sizeof(tack_backend),
    .name = "cuda",
    .dlpack_device_type = kDLCUDA,
    .option_names = option_names,
    .impl = &tack__cuda_vendor,
    .open = cuda_open,
    TACK__GPU_SLOTS,
    .kernel_build = tack__gpu_kernel_build,
    .kernel_launch = tack__gpu_kernel_launch,
};
