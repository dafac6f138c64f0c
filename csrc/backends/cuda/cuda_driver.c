/*
 * cuda_driver.c: loading the CUDA driver and resolving its entry points, which
 * cuda_table.c turns into the GPU layer's driver table.
 *
 * Only libcuda.so.1 is opened, never libcuda.so: build images often put the toolkit's
 * lib64/stubs on the library path, and its libcuda.so is NVIDIA's stub, whose every
 * call returns CUDA_ERROR_STUB_LIBRARY (34). $TACK_CUDA_DRIVER, a full path, replaces
 * it (the strict stand-in of tests/standin/cuda; the device's repr shows it, so nobody
 * measures the stand-in by accident).
 *
 * dlsym finds one symbol, cuGetProcAddress_v2; every other entry point comes through
 * it at the ABI version pinned in cuda_abi.h, so a newer driver never hands Tack a
 * changed signature. Entry points resolve with the legacy default-stream semantics:
 * Tack passes its own stream everywhere, and 1/2 mean what the Array API says. The
 * stand-in's two twin hooks are looked up on the same handle (tack__gpu_standin).
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu_driver.h"
#include "cuda_internal.h"

static pthread_mutex_t driver_lock = PTHREAD_MUTEX_INITIALIZER;
static tack__gpu_driver driver;
static _Atomic(const tack__gpu_driver *) driver_ready;

/* The library to open: $TACK_CUDA_DRIVER when set and non-empty. */
static const char *
library_name(void)
{
    const char *env = getenv("TACK_CUDA_DRIVER");
    return env && *env ? env : "libcuda.so.1";
}

static tack_status
unavailable(const char *path, const char *why, tcu_result rc)
{
    return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                      "the CUDA driver %s cannot be used: %s (CUresult %d); use "
                      "tack.device('cpu'), or fix the driver installation",
                      path, why, (int)rc);
}

/* Whether an entry point may be absent: cuCtxCreate (tests only) and
 * cuOccupancyMaxPotentialBlockSize (launches then use a fixed block size). */
static bool
optional_entry(const char *name)
{
    return strcmp(name, "cuCtxCreate") == 0 ||
           strcmp(name, "cuOccupancyMaxPotentialBlockSize") == 0;
}

/* Resolves every entry point of cuda_abi.h but the optional ones. clang-tidy counts
 * TCU_ENTRY_POINTS expanded, one lookup each, as this function's statements. */
static tack_status
// NOLINTNEXTLINE(readability-function-size)
resolve(void *lib, tack__cuda_api *api, const char *path)
{
    tcu_fn_cuGetProcAddress *gpa =
        (tcu_fn_cuGetProcAddress *)(uintptr_t)dlsym(lib, "cuGetProcAddress_v2");
    if (!gpa) {
        return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                          "the CUDA driver %s has no cuGetProcAddress_v2, so it is "
                          "older than CUDA 12: install an NVIDIA driver of release "
                          "525 or later",
                          path);
    }
#define TACK__CUDA_RESOLVE(name, symbol, version)                                  \
    do {                                                                           \
        void *pfn = NULL;                                                          \
        tcu_proc_address_query_result found = 0;                                   \
        tcu_result rc =                                                            \
            gpa(#name, &pfn, version, TCU_GET_PROC_ADDRESS_LEGACY_STREAM, &found); \
        if (rc == TCU_ERROR_STUB_LIBRARY) {                                        \
            return unavailable(path,                                               \
                               "it is NVIDIA's stub library, which has no GPU "    \
                               "behind it (remove the toolkit's lib64/stubs from " \
                               "LD_LIBRARY_PATH)",                                 \
                               rc);                                                \
        }                                                                          \
        if ((rc != TCU_SUCCESS || !pfn) && !optional_entry(#name)) {               \
            return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,                         \
                              "the CUDA driver %s does not provide %s at ABI "     \
                              "version %d (CUresult %d): install a newer NVIDIA "  \
                              "driver",                                            \
                              path, #name, version, (int)rc);                      \
        }                                                                          \
        memcpy(&api->name, &pfn, sizeof pfn);                                      \
    } while (0);
    TCU_ENTRY_POINTS(TACK__CUDA_RESOLVE)
#undef TACK__CUDA_RESOLVE
    return TACK_OK;
}

/* The stand-in's receiver of a module's CUDA source (tests/standin/cuda's
 * standin_twin.h), typed as the stand-in declares it; set with the driver. */
typedef tcu_result (*module_source_fn)(tcu_module module, const char *source);
static module_source_fn standin_module_source;

static tack__gpu_result
give_module_source(tack__gpu_module module, const char *source)
{
    return standin_module_source((tcu_module)module, source);
}

/* The stand-in's twin hooks, when lib is the stand-in (a real driver has neither:
 * they are not part of the CUDA API, and d->standin stays zero). */
static void
find_standin(void *lib, tack__gpu_driver *d)
{
    void *reg = dlsym(lib, "tack_standin_cuda_register_twin");
    void *give = dlsym(lib, "tack_standin_cuda_module_source");
    memcpy(&d->standin.register_twin, &reg, sizeof reg);
    if (give) {
        memcpy(&standin_module_source, &give, sizeof give);
        d->standin.module_source = give_module_source;
        d->standin.module_source_name = "tack_standin_cuda_module_source";
    }
}

static tack_status
load(tack__gpu_driver *d)
{
    tack__cuda_api api;
    memset(&api, 0, sizeof api);
    const char *name = library_name();
    const char *candidates[] = {name, NULL};
    void *lib = NULL;
    tack_status st = tack__driver_load("cuda", candidates, "the NVIDIA driver", &lib);
    if (st != TACK_OK) {
        return st;
    }
    /* The library stays loaded: a driver must never be unloaded while in use, and a
     * failed one costs only its mapping. */
    snprintf(d->path, sizeof d->path, "%s", name);
    Dl_info info;
    void *sym = dlsym(lib, "cuGetProcAddress_v2");
    if (sym && dladdr(sym, &info) && info.dli_fname) {
        snprintf(d->path, sizeof d->path, "%s", info.dli_fname);
    }
    st = resolve(lib, &api, d->path);
    if (st != TACK_OK) {
        return st;
    }
    tcu_result rc = api.cuInit(0);
    if (rc == TCU_ERROR_STUB_LIBRARY) {
        return unavailable(d->path,
                           "it is NVIDIA's stub library, which has no GPU behind it "
                           "(remove the toolkit's lib64/stubs from LD_LIBRARY_PATH)",
                           rc);
    }
    if (rc == TCU_ERROR_NO_DEVICE) {
        return unavailable(d->path, "cuInit found no CUDA device", rc);
    }
    if (rc != TCU_SUCCESS) {
        return unavailable(d->path, "cuInit failed", rc);
    }
    rc = api.cuDriverGetVersion(&d->version);
    if (rc != TCU_SUCCESS || d->version < TCU_MIN_DRIVER_VERSION) {
        return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                          "the CUDA driver %s supports CUDA %d.%d and Tack needs %d.%d "
                          "or later: install a newer NVIDIA driver",
                          d->path, d->version / 1000, d->version % 1000 / 10,
                          TCU_MIN_DRIVER_VERSION / 1000,
                          TCU_MIN_DRIVER_VERSION % 1000 / 10);
    }
    tack__cuda_table_fill(&api, d);
    find_standin(lib, d);
    return TACK_OK;
}

tack_status
tack__cuda_driver_get(const tack__gpu_driver **out)
{
    const tack__gpu_driver *d =
        atomic_load_explicit(&driver_ready, memory_order_acquire);
    if (d) {
        *out = d;
        return TACK_OK;
    }
    pthread_mutex_lock(&driver_lock);
    d = atomic_load_explicit(&driver_ready, memory_order_relaxed);
    tack_status st = TACK_OK;
    if (!d) {
        /* A failed load is retried by the next open: the environment may change. */
        memset(&driver, 0, sizeof driver);
        st = load(&driver);
        if (st == TACK_OK) {
            d = &driver;
            atomic_store_explicit(&driver_ready, d, memory_order_release);
        }
    }
    pthread_mutex_unlock(&driver_lock);
    if (st == TACK_OK) {
        *out = d;
    }
    return st;
}
