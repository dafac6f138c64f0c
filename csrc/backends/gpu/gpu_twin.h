/*
 * gpu_twin.h: the twin ABI between Tack's GPU kernel launches and the stand-in
 * driver (tests/standin), one header for both sides.
 *
 * The stand-in runs no GPU code. A kernel entry becomes runnable on it when Tack
 * registers a CPU twin for the entry's name: a function that takes the launch as
 * the driver received it (geometry and the by-value parameter bytes) and computes
 * it with the CPU build of the same specialization, turning every device address
 * into host memory with `translate`. The stand-in is not installed with Tack, so
 * the vendor's driver loader looks up its two entry points with dlsym on the
 * driver's handle, by the names that vendor's stand-in layer exports
 * (tack__gpu_standin in gpu_internal.h); on a real driver they are absent and no
 * twin is ever registered.
 *
 * What must stay true: this layout and these signatures are the stand-in's
 * exports (tests/standin/cuda/standin_twin.h declares them over this header), so a
 * change here is a change of both sides at once.
 */
#ifndef TACK_GPU_TWIN_H
#define TACK_GPU_TWIN_H

#include <stddef.h>
#include <stdint.h>

/* The Level Zero stand-in's registry (tests/standin/level_zero/standin_ze_module.c),
 * a tack_standin_register_twin_fn; its launches' grid is the group count, block the
 * group size, and params the kernel's arguments each at an 8-byte boundary. */
#define TACK_STANDIN_ZE_REGISTER_TWIN "tack_standin_ze_register_twin"

typedef struct tack_standin_launch {
    const char *entry;    /* the kernel's entry name */
    unsigned grid[3];     /* gridDim */
    unsigned block[3];    /* blockDim */
    const void *params;   /* the parameters, packed in declaration order, each at */
    size_t params_nbytes; /* its natural alignment (as the kernel's ABI lays them) */
    /* Host memory for [device_address, device_address + nbytes), or NULL when the
     * range is not inside one live allocation the launch's context can use: the twin
     * must then return nonzero (an out-of-bounds access on the device). */
    void *(*translate)(void *translate_ctx, uint64_t device_address, size_t nbytes);
    void *translate_ctx;
} tack_standin_launch;

/* Returns 0 on success; nonzero is a device fault, which the stand-in turns into
 * the sticky illegal-address error of the launch's context. */
typedef int (*tack_standin_twin_fn)(const tack_standin_launch *launch, void *user);

/* The stand-in's registry: registers fn as the twin of `entry` (copied); a later
 * registration of the same entry replaces the earlier one. Returns 0, or -1 when
 * out of memory. */
typedef int (*tack_standin_register_twin_fn)(const char *entry, tack_standin_twin_fn fn,
                                             void *user);

#endif /* TACK_GPU_TWIN_H */
