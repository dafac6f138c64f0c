/*
 * gpu_module_cache.c: a GPU kernel's module on each context, made at its first
 * launch there and kept for the life of the process.
 *
 * The CUDA source is compiled by NVRTC (rtc.h, with its disk cache) for the device's
 * compute capability, loaded with cuModuleLoadData, and its entry points looked up
 * with the launch shape that fills the device. NVRTC must be no newer than the
 * driver: a newer major is refused before compiling, a newer minor builds CUBINs
 * only (tack__cuda_nvrtc_fits). A module whose entry points cannot be looked up is
 * unloaded again, so the next launch starts afresh.
 */
#include <stdio.h>

#include "gpu_kernel.h"

#define FIXED_BLOCK 256
/* Dynamic shared memory a block may use without opting in (every CUDA GPU). */
#define SHARED_MAX 49152

/* A device attribute of s's device. Inside a guard. */
static tack_status
attribute(tack__gpu_state *s, tack__gpu_attribute attr, int *out)
{
    return tack__gpu_check(s, s->drv->api.device_attribute(out, attr, s->device),
                           "cuDeviceGetAttribute");
}

/* The entry point `name` of mod and the block size and grid that fill the device
 * with it: cuOccupancyMaxPotentialBlockSize's, or FIXED_BLOCK threads per block and
 * as many blocks as the multiprocessors hold when the driver lacks it. A reduction
 * needs partial_size bytes of shared memory per thread: the block stays within
 * SHARED_MAX of them, a multiple of 32 threads where that fits. Inside a guard. */
static tack_status
entry_of(tack__gpu_state *s, tack__gpu_module mod, const char *name, int partial_size,
         tack__gpu_entry *out)
{
    const tack__gpu_api *api = &s->drv->api;
    tack_status st = tack__gpu_check(s, api->module_get_function(&out->fn, mod, name),
                                     "cuModuleGetFunction");
    int limit = 0; /* none */
    if (partial_size > 0) {
        limit = SHARED_MAX / partial_size;
        limit = limit > 1024 ? 1024 : limit >= 32 ? limit / 32 * 32 : limit;
    }
    int grid = 0, block = 0;
    if (st == TACK_OK && api->occupancy_max_block_size) {
        st = tack__gpu_check(
            s,
            api->occupancy_max_block_size(&grid, &block, out->fn, NULL,
                                          (size_t)limit * (size_t)partial_size, limit),
            "cuOccupancyMaxPotentialBlockSize");
    }
    else if (st == TACK_OK) {
        int sms = 0, threads = 0;
        st = attribute(s, TACK__GPU_ATTRIBUTE_MULTIPROCESSORS, &sms);
        if (st == TACK_OK) {
            st = attribute(s, TACK__GPU_ATTRIBUTE_THREADS_PER_MULTIPROCESSOR, &threads);
        }
        block = limit > 0 && limit < FIXED_BLOCK ? limit : FIXED_BLOCK;
        grid = sms * (threads / block);
    }
    if (block <= 0 || (limit > 0 && block > limit)) {
        block = limit > 0 && limit < FIXED_BLOCK ? limit : FIXED_BLOCK;
    }
    out->block = (unsigned)block;
    out->grid = grid > 0 ? (unsigned)grid : 1;
    return st;
}

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

/* tack__cuda_nvrtc_fits for the NVRTC Tack loaded and s's driver. */
static tack_status
nvrtc_fits_driver(const tack__gpu_state *s, const char *kernel, const char *target)
{
    int major = 0, minor = 0;
    tack_status st = tack_rtc_version(TACK_RTC_NVRTC, &major, &minor);
    return st == TACK_OK
               ? tack__cuda_nvrtc_fits(kernel, major, minor, s->drv->version, target)
               : st;
}

/* cuModuleLoadData; a PTX newer than the driver reads gets the remedy. */
static tack_status
load_module(tack__gpu_state *s, const char *kernel, const void *image,
            tack__gpu_module *mod)
{
    tack__gpu_result rc = s->drv->api.module_load(mod, image);
    int major = 0, minor = 0;
    if (rc == TCU_ERROR_UNSUPPORTED_PTX_VERSION &&
        tack_rtc_version(TACK_RTC_NVRTC, &major, &minor) == TACK_OK) {
        return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                          "kernel '%s': the CUDA driver (%d.%d) cannot read the PTX of "
                          "NVRTC %d.%d (cuModuleLoadData: "
                          "CUDA_ERROR_UNSUPPORTED_PTX_VERSION); set TACK_NVRTC to the "
                          "libnvrtc of a CUDA toolkit no newer than the driver, or "
                          "install a newer NVIDIA driver",
                          kernel, s->drv->version / 1000, s->drv->version % 1000 / 10,
                          major, minor);
    }
    return tack__gpu_check(s, rc, "cuModuleLoadData");
}

tack_status
tack__gpu_module_of(tack__gpu_kernel *k, tack__gpu_state *s,
                    const tack__gpu_context_module **out)
{
    const tack__gpu_api *api = &s->drv->api;
    pthread_mutex_lock(&k->lock);
    tack__gpu_context_module *m = k->modules;
    while (m && m->ctx != s->ctx) {
        m = m->next;
    }
    tack_status st = TACK_OK;
    if (!m) {
        int major = 0, minor = 0;
        char device_arch[TACK_RTC_ARCH_CAP], target[TACK_RTC_ARCH_CAP];
        void *image = NULL;
        size_t image_nbytes = 0;
        char *log = NULL;
        st = attribute(s, TACK__GPU_ATTRIBUTE_COMPUTE_MAJOR, &major);
        if (st == TACK_OK) {
            st = attribute(s, TACK__GPU_ATTRIBUTE_COMPUTE_MINOR, &minor);
        }
        if (st == TACK_OK) {
            /* the device's own architecture as NVRTC spells it; the one CUDA
             * spelling left here, until the driver table names the device's
             * architecture itself (a HIP device's is its gfx target) */
            snprintf(device_arch, sizeof device_arch, "sm_%d", major * 10 + minor);
            st = tack_rtc_choose(TACK_RTC_NVRTC, device_arch, target, sizeof target);
        }
        if (st == TACK_OK) {
            st = nvrtc_fits_driver(s, k->pub.name, target);
        }
        if (st == TACK_OK) {
            st = tack_rtc_compile(TACK_RTC_NVRTC, k->source, k->pub.name, target,
                                  &image, &image_nbytes, &log);
            if (st == TACK_ERR_COMPILE) {
                st = tack__fail(TACK_ERR_COMPILE,
                                "kernel '%s' failed to compile for CUDA:\n%s",
                                k->pub.name, log ? log : "");
            }
            tack_rtc_free(log);
        }
        if (st == TACK_OK && !(m = tack__calloc(sizeof *m))) {
            st = tack__fail(TACK_ERR_NO_MEMORY, "out of memory loading kernel '%s'",
                            k->pub.name);
        }
        bool loaded = false;
        if (st == TACK_OK) {
            st = load_module(s, k->pub.name, image, &m->mod);
            loaded = st == TACK_OK;
        }
        if (st == TACK_OK) {
            st = tack__gpu_twin_give_source(s, k, m->mod);
        }
        if (st == TACK_OK) {
            st = entry_of(s, m->mod, "tack_kernel_body", k->partial_size, &m->body);
        }
        if (st == TACK_OK && k->restrict_body) {
            st = entry_of(s, m->mod, "tack_kernel_body_restrict", k->partial_size,
                          &m->body_restrict);
        }
        if (st == TACK_OK && tack__gpu_needs_finish(k)) {
            st = tack__gpu_check(
                s, api->module_get_function(&m->finish, m->mod, "tack_kernel_finish"),
                "cuModuleGetFunction");
        }
        tack_rtc_free(image);
        if (st == TACK_OK) {
            m->ctx = s->ctx;
            m->next = k->modules;
            k->modules = m;
        }
        else {
            /* A module whose entry points could not be looked up is of no use: the
             * next launch loads the kernel afresh. */
            if (loaded) {
                (void)api->module_unload(m->mod);
            }
            tack__free(m);
            m = NULL;
        }
    }
    pthread_mutex_unlock(&k->lock);
    *out = m;
    return st;
}
