/*
 * gpu_module_cache.c: a GPU kernel's module on each context, made at its first
 * launch there and kept for the life of the process.
 *
 * The target's source is compiled by the vendor's runtime compiler (rtc.h, with its
 * disk cache) for the device's own architecture (the driver's device_arch), loaded
 * with module_load, and its entry points looked up with the launch shape that fills
 * the device. Whether the compiler's image can load on the driver at all is the
 * vendor's rule (tack__gpu_vendor's image_fits), asked before compiling. A module
 * whose entry points cannot be looked up is unloaded again, so the next launch
 * starts afresh.
 */
#include <stdio.h>

#include "gpu_kernel.h"

#define FIXED_BLOCK 256
/* Dynamic shared memory a block may use without opting in (every GPU of the
 * CUDA-like drivers: 48 KiB). */
#define SHARED_MAX 49152
/* Threads in a block on every GPU of the CUDA-like drivers. */
#define MAX_BLOCK 1024

/* A device attribute of s's device. Inside a guard. */
static tack_status
attribute(tack__gpu_state *s, tack__gpu_attribute attr, int *out)
{
    return TACK__GPU_CHECKED(s, device_attribute, out, attr, s->device);
}

/* The entry point `name` of mod and the block size and grid that fill the device
 * with it: the driver's occupancy_max_block_size, or FIXED_BLOCK threads per block and
 * as many blocks as the multiprocessors hold when the driver lacks it. A reduction
 * needs partial_size bytes of shared memory per thread: the block stays within
 * SHARED_MAX of them (tack__gpu_block_limit). Inside a guard. */
static tack_status
entry_of(tack__gpu_state *s, tack__gpu_module mod, const char *name,
         const tack__gpu_kernel *k, tack__gpu_entry *out)
{
    const tack__gpu_api *api = &s->drv->api;
    int partial_size = k->partial_size;
    unsigned most = 0;
    tack_status st =
        tack__gpu_block_limit(k, SHARED_MAX, MAX_BLOCK, "dynamic shared memory", &most);
    if (st == TACK_OK) {
        st = TACK__GPU_CHECKED(s, module_get_function, &out->fn, mod, name);
    }
    int limit = partial_size > 0 ? (int)most : 0; /* 0: none */
    int grid = 0, block = 0;
    if (st == TACK_OK && api->occupancy_max_block_size) {
        st = TACK__GPU_CHECKED(s, occupancy_max_block_size, &grid, &block, out->fn,
                               NULL, (size_t)limit * (size_t)partial_size, limit);
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

/* The vendor's image_fits for the compiler Tack loaded and s's driver. */
static tack_status
compiler_fits_driver(const tack__gpu_state *s, const char *kernel, const char *target)
{
    const tack__gpu_vendor *v = s->drv->vendor;
    int major = 0, minor = 0;
    tack_status st = tack_rtc_version(v->rtc, &major, &minor);
    return st == TACK_OK ? v->image_fits(kernel, major, minor, s->drv->version, target)
                         : st;
}

/* module_load; an image newer than the driver reads gets the vendor's remedy. */
static tack_status
load_module(tack__gpu_state *s, const char *kernel, const void *image,
            tack__gpu_module *mod)
{
    const tack__gpu_driver *drv = s->drv;
    tack__gpu_result rc = drv->api.module_load(mod, image);
    int major = 0, minor = 0;
    if (rc != TACK__GPU_SUCCESS && drv->api.classify(rc) == TACK__GPU_IMAGE_TOO_NEW &&
        tack_rtc_version(drv->vendor->rtc, &major, &minor) == TACK_OK) {
        return drv->vendor->image_too_new(kernel, drv->version, major, minor);
    }
    return tack__gpu_check(s, rc, TACK__GPU_NAME(s, module_load));
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
        const tack__gpu_vendor *v = s->drv->vendor;
        char device_arch[TACK_RTC_ARCH_CAP], target[TACK_RTC_ARCH_CAP];
        void *image = NULL;
        size_t image_nbytes = 0;
        char *log = NULL;
        st = TACK__GPU_CHECKED(s, device_arch, s->device, device_arch);
        if (st == TACK_OK) {
            st = tack_rtc_choose(v->rtc, device_arch, target, sizeof target);
        }
        if (st == TACK_OK) {
            st = compiler_fits_driver(s, k->pub.name, target);
        }
        if (st == TACK_OK) {
            st = tack_rtc_compile(v->rtc, k->source, k->pub.name, target, &image,
                                  &image_nbytes, &log);
            if (st == TACK_ERR_COMPILE) {
                st = tack__fail(TACK_ERR_COMPILE,
                                "kernel '%s' failed to compile for %s:\n%s",
                                k->pub.name, v->platform, log ? log : "");
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
            st = entry_of(s, m->mod, "tack_kernel_body", k, &m->body);
        }
        if (st == TACK_OK && k->restrict_body) {
            st = entry_of(s, m->mod, "tack_kernel_body_restrict", k, &m->body_restrict);
        }
        if (st == TACK_OK && tack__gpu_needs_finish(k)) {
            st = TACK__GPU_CHECKED(s, module_get_function, &m->finish, m->mod,
                                   "tack_kernel_finish");
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
