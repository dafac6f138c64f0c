/*
 * cuda_internal.h: what the files of the CUDA backend share (docs/cuda.md). The
 * device itself (context, memory, streams, VMM, pointers) is the GPU layer's
 * (csrc/backends/gpu/gpu_internal.h); this folder holds only what is CUDA's.
 *
 * cuda_abi.h      the driver API subset, checked against the toolkit by the C tests
 * cuda_driver.c   loading libcuda.so.1 (or $TACK_CUDA_DRIVER), entry points
 * cuda_table.c    the GPU layer's driver table filled from those entry points
 * cuda_vendor.c   what the GPU layer knows of CUDA without the driver: NVRTC, which
 *                 of its images a driver loads, the words of messages
 * cuda_backend.c  the backend table (its kernel slots: ../gpu/gpu_kernel.h)
 */
#ifndef TACK_CUDA_INTERNAL_H
#define TACK_CUDA_INTERNAL_H

#include "../gpu/gpu_internal.h"
#include "cuda_abi.h"

/* ---- the driver (cuda_driver.c, cuda_table.c) -------------------------------------
 */

/* One pointer per entry point of cuda_abi.h, resolved at its pinned ABI version. */
typedef struct tack__cuda_api {
#define TACK__CUDA_FIELD(name, symbol, version) tcu_fn_##name *name;
    TCU_ENTRY_POINTS(TACK__CUDA_FIELD)
#undef TACK__CUDA_FIELD
} tack__cuda_api;

/* Loads and initialises the driver on first use (thread-safe). Borrowed: lives until
 * the process ends. Errors: TACK_ERR_DEVICE_UNAVAILABLE naming the library and why
 * (missing, NVIDIA's stub, too old, no device). */
tack_status tack__cuda_driver_get(const tack__gpu_driver **out);

/* Fills d's table, names and words from entry points resolved and initialised (the
 * table's functions call them; raw must be complete before the driver is
 * published, and is never changed after). */
void tack__cuda_table_fill(const tack__cuda_api *raw, tack__gpu_driver *d);

/* ---- without the driver (cuda_vendor.c) ------------------------------------------
 */

/* The backend table's impl and the driver's vendor. */
extern const tack__gpu_vendor tack__cuda_vendor;

/* Whether an image NVRTC nvrtc_major.nvrtc_minor made for target (rtc.h's "sm_XY" or
 * "compute_XY") loads on a driver of driver_version (1000 * major + 10 * minor):
 * always when NVRTC is no newer; a CUBIN when only its minor version is newer
 * (minor-version compatibility); otherwise TACK_ERR_DEVICE_UNAVAILABLE naming both
 * versions and the remedy. tack__cuda_vendor's image_fits. */
tack_status tack__cuda_nvrtc_fits(const char *kernel, int nvrtc_major, int nvrtc_minor,
                                  int driver_version, const char *target);

#endif /* TACK_CUDA_INTERNAL_H */
