/*
 * level_zero_driver.c: loading the oneAPI Level Zero loader, zeInit, and the discovery
 * of drivers and root devices.
 *
 * Only the versioned libze_loader.so.1 is opened (the unversioned name comes from a
 * -dev package and may be any loader). $TACK_LEVEL_ZERO_DRIVER, a full path, replaces
 * it. A driver of the test suite is loaded by the real loader, through its own
 * ZE_ENABLE_ALT_DRIVERS: nothing here knows of it.
 *
 * The API 1.0 calls come from dlsym and are all required. A later call is looked up too
 * and kept (possibly NULL: the loader predates it); the backend uses it only for a
 * device whose driver reports, through zeDriverGetApiVersion, at least the version the
 * call came with.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu_driver.h"
#include "level_zero_internal.h"

static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;
static tack__ze_loader loader;
static _Atomic(const tack__ze_loader *) loader_ready;

static const char *
library_name(void)
{
    const char *env = getenv("TACK_LEVEL_ZERO_DRIVER");
    return env && *env ? env : "libze_loader.so.1";
}

const char *
tack__ze_result_name(tze_result rc)
{
    switch (rc) {
#define TZE_RESULT_CASE(name, value) \
    case TZE_RESULT_##name: return "ZE_RESULT_" #name;
        TZE_RESULT_LIST(TZE_RESULT_CASE)
#undef TZE_RESULT_CASE
    default: return "an unknown ze_result_t";
    }
}

bool
tack__ze_unsupported(tze_result rc)
{
    return rc == TZE_RESULT_ERROR_UNSUPPORTED_FEATURE ||
           rc == TZE_RESULT_ERROR_UNINITIALIZED;
}

tack_status
tack__ze_error(tze_result rc, const char *call)
{
    switch (rc) {
    case TZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
    case TZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
        return tack__fail(
            TACK_ERR_NO_MEMORY,
            "%s: the Level Zero device is out of memory (%s): free arrays "
            "or use a smaller shape",
            call, tack__ze_result_name(rc));
    case TZE_RESULT_ERROR_DEVICE_LOST:
        return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                          "%s: the Level Zero device was lost (%s): it hung, was reset "
                          "or removed; restart the process",
                          call, tack__ze_result_name(rc));
    default:
        return tack__fail(TACK_ERR_BACKEND, "%s failed: %s (0x%x)", call,
                          tack__ze_result_name(rc), (unsigned)rc);
    }
}

/* Every entry point of ze_abi.h and where its pointer lives in tze_api; a newer one
 * may be absent (its pointer stays NULL and its callers check the API version). */
typedef struct ze_entry {
    const char *name;
    size_t offset;
    bool newer;
} ze_entry;
#define TACK__ZE_ENTRY(name, params, version) {#name, offsetof(tze_api, name), false},
#define TACK__ZE_NEWER_ENTRY(name, params, version) \
    {#name, offsetof(tze_api, name), true},
static const ze_entry entries[] = {TZE_ENTRY_POINTS(TACK__ZE_ENTRY)
                                       TZE_NEWER_ENTRY_POINTS(TACK__ZE_NEWER_ENTRY)};
#undef TACK__ZE_ENTRY
#undef TACK__ZE_NEWER_ENTRY

static tack_status
resolve(void *lib, tze_api *api, const char *path)
{
    for (size_t k = 0; k < sizeof entries / sizeof entries[0]; k++) {
        void *pfn = dlsym(lib, entries[k].name);
        if (!pfn && !entries[k].newer) {
            return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                              "the Level Zero loader %s has no %s, so it is not a "
                              "Level Zero loader: install libze1 (Debian) or Intel's "
                              "level-zero package, or unset TACK_LEVEL_ZERO_DRIVER",
                              path, entries[k].name);
        }
        memcpy((char *)api + entries[k].offset, &pfn, sizeof pfn);
    }
    return TACK_OK;
}

static tack_status
no_driver(const char *path, const char *why, tze_result rc)
{
    return tack__fail_remedy(
        TACK_ERR_DEVICE_UNAVAILABLE, TACK_REMEDY_CPU,
        "the Level Zero loader %s found no driver (%s, %s): install Intel's GPU "
        "driver for Level Zero (intel-level-zero-gpu or libze-intel-gpu1) on a "
        "machine with an Intel GPU, or use tack.device('cpu')",
        path, why, tack__ze_result_name(rc));
}

/* Lists the root devices of driver d into l->roots. */
static tack_status
add_devices(tack__ze_loader *l, tze_driver d)
{
    tze_api_version version = 0;
    tze_result rc = l->api.zeDriverGetApiVersion(d, &version);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeDriverGetApiVersion");
    }
    uint32_t count = 0;
    rc = l->api.zeDeviceGet(d, &count, NULL);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeDeviceGet");
    }
    uint32_t room = TACK__ZE_MAX_DEVICES - l->ndevices;
    count = count < room ? count : room;
    tze_device devices[TACK__ZE_MAX_DEVICES];
    rc = count ? l->api.zeDeviceGet(d, &count, devices) : TZE_RESULT_SUCCESS;
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeDeviceGet");
    }
    for (uint32_t k = 0; k < count; k++) {
        l->roots[l->ndevices++] = (tack__ze_root){d, devices[k], version};
    }
    return TACK_OK;
}

static tack_status
discover(tack__ze_loader *l)
{
    tze_result rc = l->api.zeInit(0);
    if (rc == TZE_RESULT_ERROR_UNINITIALIZED) {
        return no_driver(l->path, "zeInit", rc);
    }
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeInit");
    }
    uint32_t count = 0;
    rc = l->api.zeDriverGet(&count, NULL);
    if (rc != TZE_RESULT_SUCCESS || count == 0) {
        return rc == TZE_RESULT_SUCCESS || rc == TZE_RESULT_ERROR_UNINITIALIZED
                   ? no_driver(l->path, "zeDriverGet counted none", rc)
                   : tack__ze_error(rc, "zeDriverGet");
    }
    tze_driver drivers[TACK__ZE_MAX_DEVICES];
    count = count < TACK__ZE_MAX_DEVICES ? count : TACK__ZE_MAX_DEVICES;
    rc = l->api.zeDriverGet(&count, drivers);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeDriverGet");
    }
    l->ndrivers = count;
    for (uint32_t k = 0; k < count; k++) {
        l->drivers[k] = drivers[k];
    }
    for (uint32_t k = 0; k < count; k++) {
        tack_status st = add_devices(l, drivers[k]);
        if (st != TACK_OK) {
            return st;
        }
    }
    if (l->ndevices == 0) {
        return tack__fail_remedy(TACK_ERR_DEVICE_UNAVAILABLE, TACK_REMEDY_CPU,
                                 "the Level Zero loader %s has %u driver(s) and they "
                                 "report no device: check that the GPU is visible "
                                 "(ZE_AFFINITY_MASK, permissions on /dev/dri), or use "
                                 "tack.device('cpu')",
                                 l->path, (unsigned)l->ndrivers);
    }
    return TACK_OK;
}

/*
 * Whether a failed zeModuleCreate's build log can be used through loader lib. The
 * loader's intercept layer wraps each handle a call returns, but returns a failed
 * zeModuleCreate's build log unwrapped (ze_ldrddi.cpp, up to 1.8.12 at least): it is
 * then the driver's handle, which zeModuleBuildLogGetString or Destroy through the
 * loader would read as its own wrapper, and crash. The loader intercepts with several
 * drivers or ZE_ENABLE_LOADER_INTERCEPT set (its rule), and then hands its own calls
 * out through zeGetModuleBuildLogProcAddrTable: a table whose GetString lies in the
 * loader itself, or no table, counts as intercepted too, whatever a later loader's
 * rule is. (A validation layer above an intercepting loader hides the second test.)
 */
static bool
failed_build_logs_usable(void *lib, const tack__ze_loader *l)
{
    const char *force = getenv("ZE_ENABLE_LOADER_INTERCEPT");
    if (l->ndrivers != 1 ||
        (force && *force && strcmp(force, "0") != 0 && strcmp(force, "false") != 0)) {
        return false;
    }
    void *sym = dlsym(lib, "zeGetModuleBuildLogProcAddrTable");
    tze_fn_zeGetModuleBuildLogProcAddrTable *get = NULL;
    memcpy(&get, &sym, sizeof get);
    tze_module_build_log_dditable table = {NULL, NULL};
    if (!get || get(TZE_API_VERSION_1_4, &table) != TZE_RESULT_SUCCESS ||
        !table.pfnGetString) {
        return false;
    }
    Dl_info in_table, in_loader;
    void *fn = NULL;
    memcpy(&fn, &table.pfnGetString, sizeof fn);
    return dladdr(fn, &in_table) && dladdr(sym, &in_loader) &&
           in_table.dli_fbase != in_loader.dli_fbase;
}

static tack_status
load(tack__ze_loader *l)
{
    const char *name = library_name();
    const char *candidates[] = {name, NULL};
    void *lib = NULL;
    tack_status st =
        tack__driver_load("level_zero", candidates,
                          "the oneAPI Level Zero loader (Debian: libze1)", &lib);
    if (st != TACK_OK) {
        return st;
    }
    /* The library stays loaded: a driver must never be unloaded while in use. */
    snprintf(l->path, sizeof l->path, "%s", name);
    Dl_info info;
    void *sym = dlsym(lib, "zeInit");
    if (sym && dladdr(sym, &info) && info.dli_fname) {
        snprintf(l->path, sizeof l->path, "%s", info.dli_fname);
    }
    st = resolve(lib, &l->api, l->path);
    st = st == TACK_OK ? discover(l) : st;
    if (st == TACK_OK) {
        l->failed_build_logs_usable = failed_build_logs_usable(lib, l);
    }
    return st;
}

tack_status
tack__ze_loader_get(const tack__ze_loader **out)
{
    const tack__ze_loader *l =
        atomic_load_explicit(&loader_ready, memory_order_acquire);
    if (l) {
        *out = l;
        return TACK_OK;
    }
    pthread_mutex_lock(&loader_lock);
    l = atomic_load_explicit(&loader_ready, memory_order_relaxed);
    tack_status st = TACK_OK;
    if (!l) {
        memset(&loader, 0, sizeof loader);
        st = load(&loader);
        if (st == TACK_OK) {
            l = &loader;
            atomic_store_explicit(&loader_ready, l, memory_order_release);
        }
    }
    pthread_mutex_unlock(&loader_lock);
    if (st == TACK_OK) {
        *out = l;
    }
    return st;
}
