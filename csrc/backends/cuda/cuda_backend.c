/*
 * cuda_backend.c: the cuda backend table. The implementation is split by concept
 * (cuda_internal.h lists the files); docs/cuda.md describes the model: one
 * non-blocking stream per device, host reads wait, exports share.
 */
#include "../gpu/gpu_kernel.h"
#include "cuda_internal.h"

static const char *const options[] = {NULL};

const tack_backend tack__backend_cuda = {
    .size = sizeof(tack_backend),
    .name = "cuda",
    .dlpack_device_type = kDLCUDA,
    .option_names = options,
    .impl = NULL,
    .open = tack__cuda_open,
    .close = tack__cuda_close,
    .alloc = tack__cuda_alloc,
    .free = tack__cuda_free,
    .copy = tack__cuda_copy,
    .fill = tack__cuda_fill,
    .memory_space = tack__cuda_memory_space,
    .synchronize = tack__cuda_synchronize,
    .memory_domain = tack__cuda_memory_domain,
    .export_memory = tack__cuda_export_memory,
    .stream = tack__cuda_stream,
    .order_foreign_after_tack = tack__cuda_order_foreign_after_tack,
    .order_tack_after_foreign = tack__cuda_order_tack_after_foreign,
    .driver_path = tack__cuda_driver_path,
    .kernel_build = tack__gpu_kernel_build,
    .kernel_launch = tack__gpu_kernel_launch,
    .copy_peer = tack__cuda_copy_peer,
    .copy_2d = tack__cuda_copy_2d,
};
