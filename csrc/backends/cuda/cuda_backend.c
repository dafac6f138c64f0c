/*
 * cuda_backend.c: the cuda backend table. The driver is opened with dlopen on first
 * use; without it, opening a device raises RuntimeError naming the library.
 */
#include "../gpu_driver.h"

static const char *const cuda_libraries[] = {"libcuda.so.1", "libcuda.so", NULL};

static tack_status
cuda_open(int ordinal, const tack_device_options *options, void **state)
{
    (void)ordinal;
    (void)options;
    void *handle;
    tack_status st =
        tack__driver_load("cuda", cuda_libraries, "the NVIDIA driver", &handle);
    if (st != TACK_OK) {
        return st;
    }
    /* The library stays loaded: drivers must never be unloaded while in use. */
    (void)state;
    return tack__driver_not_built("cuda");
}

static const char *const cuda_options[] = {NULL};

const tack_backend tack__backend_cuda = {
    .size = sizeof(tack_backend),
    .name = "cuda",
    .dlpack_device_type = 2,
    .option_names = cuda_options,
    .open = cuda_open,
    .close = NULL,
    .alloc = tack__gpu_alloc,
    .free = tack__gpu_free,
    .copy = tack__gpu_copy,
    .fill = tack__gpu_fill,
    .memory_space = tack__gpu_memory_space,
    .synchronize = tack__gpu_synchronize,
    .memory_domain = tack__gpu_memory_domain,
};
