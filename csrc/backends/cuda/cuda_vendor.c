/*
 * cuda_vendor.c: what the GPU layer knows of CUDA without its driver
 * (tack__gpu_vendor): the word users know, NVRTC as the kernels' compiler, and which
 * of NVRTC's images a CUDA driver loads, with the remedy when it does not.
 *
 * A CUDA driver loads what an NVRTC of its own version or older made. A newer NVRTC
 * of the same major version still makes loadable CUBINs (minor-version
 * compatibility), but its PTX needs a driver at least as new; a newer major makes
 * nothing this driver loads. Versions are CUDA's encoding, 1000 * major + 10 * minor.
 */
#include <stdio.h>

#include "cuda_internal.h"

tack_status
tack__cuda_nvrtc_fits(const char *kernel, int nvrtc_major, int nvrtc_minor,
                      int driver_version, const char *target)
{
    int driver_major = driver_version / 1000, driver_minor = driver_version % 1000 / 10;
    if (1000 * nvrtc_major + 10 * nvrtc_minor <= driver_version ||
        (nvrtc_major == driver_major &&
         !tack_rtc_is_portable(TACK_RTC_NVRTC, target))) {
        return TACK_OK;
    }
    return tack__fail(
        TACK_ERR_DEVICE_UNAVAILABLE,
        "kernel '%s': NVRTC %d.%d is newer than the CUDA driver (%d.%d), which cannot "
        "load %s; set TACK_NVRTC to the libnvrtc of a CUDA toolkit no newer than "
        "%d.%d, or install a newer NVIDIA driver",
        kernel, nvrtc_major, nvrtc_minor, driver_major, driver_minor,
        nvrtc_major > driver_major
            ? "anything it compiles"
            : "its PTX (a newer minor version keeps only CUBINs loadable, and NVRTC "
              "has no CUBIN for this GPU)",
        driver_major, driver_minor);
}

/* cuModuleLoadData's CUDA_ERROR_UNSUPPORTED_PTX_VERSION (the table classifies it
 * TACK__GPU_IMAGE_TOO_NEW): a PTX newer than the driver reads. */
static tack_status
ptx_too_new(const char *kernel, int driver_version, int nvrtc_major, int nvrtc_minor)
{
    return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                      "kernel '%s': the CUDA driver (%d.%d) cannot read the PTX of "
                      "NVRTC %d.%d (cuModuleLoadData: "
                      "CUDA_ERROR_UNSUPPORTED_PTX_VERSION); set TACK_NVRTC to the "
                      "libnvrtc of a CUDA toolkit no newer than the driver, or "
                      "install a newer NVIDIA driver",
                      kernel, driver_version / 1000, driver_version % 1000 / 10,
                      nvrtc_major, nvrtc_minor);
}

const tack__gpu_vendor tack__cuda_vendor = {
    .platform = "CUDA",
    .rtc = TACK_RTC_NVRTC,
    .image_fits = tack__cuda_nvrtc_fits,
    .image_too_new = ptx_too_new,
};
