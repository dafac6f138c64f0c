/*
 * level_zero_kernel.c: the level_zero backend's kernel build, and each context's
 * module of a kernel (docs/level_zero.md, "Kernels").
 *
 * The front end hands a request whose image is the SPIR-V module of the kernel's
 * OpenCL C (tack.kernel.spirv); the GPU layer checks it and builds the C twin
 * (gpu_build_request.c). At a kernel's first launch on a context the module is made
 * from that SPIR-V (zeModuleCreate, ZE_MODULE_FORMAT_IL_SPIRV) for the device, and
 * its entry points with zeKernelCreate; both are kept for the life of the process
 * (kernels are never released), one module per context and device.
 *
 * Under the stand-in driver the launches are computed by CPU twins (gpu_twin.h): its
 * registry is looked up among the libraries the Level Zero loader loaded, and is
 * absent on a real driver. Two stand-in drivers each have their own registry, and a
 * twin is registered with every one found.
 */
#define _GNU_SOURCE /* dl_iterate_phdr, RTLD_NOLOAD */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "../gpu/gpu_kernel.h"
#include "level_zero_kernel.h"

/* ---- the stand-in's twin registries -------------------------------------------- */

#define MAX_REGISTRIES 8
#define MAX_LIBRARIES 256

static pthread_once_t registries_once = PTHREAD_ONCE_INIT;
static tack_standin_register_twin_fn registries[MAX_REGISTRIES];
static int nregistries;

typedef struct library_names {
    char names[MAX_LIBRARIES][512];
    int n;
} library_names;

/* Collects the loaded libraries' paths; they are opened after the walk, since
 * dl_iterate_phdr holds the dynamic linker's lock while it calls back. */
static int
collect_library(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    library_names *l = data;
    if (info->dlpi_name && info->dlpi_name[0] && l->n < MAX_LIBRARIES) {
        snprintf(l->names[l->n++], sizeof l->names[0], "%s", info->dlpi_name);
    }
    return 0;
}

static void
find_registries(void)
{
    library_names *l = tack__calloc(sizeof *l);
    if (!l) {
        return; /* no twins: launches under the stand-in are refused, and say so */
    }
    dl_iterate_phdr(collect_library, l);
    for (int i = 0; i < l->n && nregistries < MAX_REGISTRIES; i++) {
        void *lib = dlopen(l->names[i], RTLD_LAZY | RTLD_NOLOAD);
        void *sym = lib ? dlsym(lib, TACK_STANDIN_ZE_REGISTER_TWIN) : NULL;
        tack_standin_register_twin_fn fn = NULL;
        memcpy(&fn, &sym, sizeof fn);
        bool known = false;
        for (int k = 0; k < nregistries; k++) {
            known = known || registries[k] == fn;
        }
        if (fn && !known) {
            registries[nregistries++] = fn;
        }
        if (lib) {
            dlclose(lib); /* only the reference NOLOAD took: the loader keeps it */
        }
    }
    tack__free(l);
}

/* A tack_standin_register_twin_fn over every registry found. */
static int
register_everywhere(const char *entry, tack_standin_twin_fn fn, void *user)
{
    int rc = 0;
    for (int k = 0; k < nregistries; k++) {
        rc |= registries[k](entry, fn, user);
    }
    return rc;
}

tack_standin_register_twin_fn
tack__ze_twin_registry(void)
{
    pthread_once(&registries_once, find_registries);
    return nregistries ? register_everywhere : NULL;
}

/* ---- build ---------------------------------------------------------------------- */

tack_status
tack__ze_kernel_build(const tack_backend *self, const char *name, const char *filename,
                      const tack_kernel_request *req, tack_kernel **out, char **log)
{
    if (!req->image || req->image_nbytes == 0) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': the level_zero backend builds a request whose "
                          "image is the kernel's SPIR-V module (tack.kernel's Level "
                          "Zero emitter makes one), not a source alone",
                          name);
    }
    return tack__gpu_kernel_build(self, name, filename, req, out, log);
}

/* ---- fp64 ---------------------------------------------------------------------- */

/* Whether the SPIR-V words declare OpCapability Float64 (opcode 17, capability 10):
 * the module computes in float64 somewhere. */
static bool
needs_fp64(const unsigned char *image, size_t nbytes)
{
    size_t nwords = nbytes / 4;
    for (size_t at = 5; at < nwords;) {
        uint32_t w, operand = 0;
        memcpy(&w, image + 4 * at, 4);
        uint32_t count = w >> 16;
        if (count == 0) {
            return false; /* not a module the driver would take: it says so */
        }
        if ((w & 0xffffu) == 17u && count == 2 && at + 1 < nwords) {
            memcpy(&operand, image + 4 * (at + 1), 4);
            if (operand == 10u) {
                return true;
            }
        }
        at += count;
    }
    return false;
}

tack_status
tack__ze_kernel_fits(const tack__gpu_kernel *k, const tack__ze_state *s)
{
    if (!needs_fp64(k->image, k->image_nbytes)) {
        return TACK_OK;
    }
    tze_device_module_properties props;
    memset(&props, 0, sizeof props);
    props.stype = TZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
    tze_result rc = s->ze->api.zeDeviceGetModuleProperties(s->device, &props);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeDeviceGetModuleProperties");
    }
    if (props.flags & TZE_DEVICE_MODULE_FLAG_FP64) {
        return TACK_OK;
    }
    /* Only a kernel that computes in float64 declares it: the record holds a
     * returned float as its double's bits and a reduction's partials are of the
     * reduction's type (emit_opencl.py), so the same kernel in float32 runs here. */
    return tack__fail(TACK_ERR_UNSUPPORTED,
                      "kernel '%s': its SPIR-V module uses float64 (OpCapability "
                      "Float64), which this Level Zero device does not support (no "
                      "ZE_DEVICE_MODULE_FLAG_FP64); write it in float32: float32 "
                      "arrays, np.float32 or tack.f32(...) scalars (a Python float is "
                      "float64), locals started from tack.f32(0.0), float literals as "
                      "they are (x * 0.5 stays float32), no float64 value anywhere "
                      "(docs/level_zero.md, \"Kernels: SPIR-V\")",
                      k->pub.name);
}

/* ---- each context's module ------------------------------------------------------- */

/* The kernel `entry` of k's module mod, with its group size, or an error naming it.
 * The group size is the driver's suggestion, which knows nothing of the local memory
 * a reduction's partials take (the argument is set at each launch), so it is capped
 * by the device's group limits (tack__gpu_block_limit). */
static tack_status
entry_of(const tack__ze_state *s, const tack__gpu_kernel *k, tze_module mod,
         const char *entry, tack__gpu_entry *out)
{
    const tze_api *api = &s->ze->api;
    unsigned most = 0;
    tack_status st = tack__gpu_block_limit(
        k, s->shared_local, s->max_group,
        "shared local memory (zeDeviceGetComputeProperties' maxSharedLocalMemory)",
        &most);
    if (st != TACK_OK) {
        return st;
    }
    tze_kernel_desc desc = {TZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, entry};
    tze_kernel kn = NULL;
    tze_result rc = api->zeKernelCreate(mod, &desc, &kn);
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__fail(TACK_ERR_BACKEND,
                          "kernel '%s': zeKernelCreate('%s') failed (%s): its SPIR-V "
                          "module lacks the entry point",
                          k->pub.name, entry, tack__ze_result_name(rc));
    }
    /* groups for a grid-stride loop: the driver's size for a large global size */
    uint32_t x = 1, y = 1, z = 1;
    rc = api->zeKernelSuggestGroupSize(kn, TACK__ZE_FILL_GROUPS * 256u, 1, 1, &x, &y,
                                       &z);
    x = x > most ? most : x == 0 ? 1 : x;
    if (rc == TZE_RESULT_SUCCESS) {
        rc = api->zeKernelSetGroupSize(kn, x, 1, 1);
    }
    if (rc != TZE_RESULT_SUCCESS) {
        (void)api->zeKernelDestroy(kn);
        return tack__ze_error(rc, "zeKernelSuggestGroupSize");
    }
    memcpy(&out->fn, &kn, TACK__ZE_HANDLE_NBYTES);
    out->block = x;
    out->grid = TACK__ZE_FILL_GROUPS;
    return TACK_OK;
}

/* The first bytes of a driver's build log a CompileError shows, and the longest log
 * Tack reads at all (a longer one is described by its size). */
#define TACK__ZE_LOG_SHOWN 4096u
#define TACK__ZE_LOG_READ ((size_t)1 << 20)

/* The text of a module's build log (zeModuleBuildLogGetString: its size, then the
 * text) into out: its first TACK__ZE_LOG_SHOWN bytes, and how many more there are;
 * "(empty)" when the driver gives none. The text is the driver's, so it is
 * terminated here whatever the driver wrote. */
static void
build_log_text(const tze_api *api, tze_module_build_log log, char *out, size_t cap)
{
    snprintf(out, cap, "(empty)");
    size_t n = 0;
    if (api->zeModuleBuildLogGetString(log, &n, NULL) != TZE_RESULT_SUCCESS || n <= 1) {
        return;
    }
    if (n > TACK__ZE_LOG_READ) {
        snprintf(out, cap, "(%zu bytes, not read)", n);
        return;
    }
    char *text = tack__calloc(n + 1);
    size_t got = n;
    if (text && api->zeModuleBuildLogGetString(log, &got, text) == TZE_RESULT_SUCCESS) {
        size_t len = strnlen(text, n);
        if (len > TACK__ZE_LOG_SHOWN) {
            snprintf(out, cap, "%.*s\n... (%zu more bytes)", (int)TACK__ZE_LOG_SHOWN,
                     text, len - TACK__ZE_LOG_SHOWN);
        }
        else if (len > 0) {
            snprintf(out, cap, "%s", text);
        }
    }
    tack__free(text);
}

/* Makes k's module and entry points on s's context and device into m. */
static tack_status
make_module(tack__gpu_kernel *k, const tack__ze_state *s, tack__gpu_context_module *m)
{
    const tze_api *api = &s->ze->api;
    tze_module_desc desc = {TZE_STRUCTURE_TYPE_MODULE_DESC,
                            NULL,
                            TZE_MODULE_FORMAT_IL_SPIRV,
                            k->image_nbytes,
                            k->image,
                            "",
                            NULL};
    tze_module mod = NULL;
    tze_module_build_log log = NULL;
    tze_result rc = api->zeModuleCreate(s->context, s->device, &desc, &mod, &log);
    bool refused = rc == TZE_RESULT_ERROR_MODULE_BUILD_FAILURE ||
                   rc == TZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    /* Where the loader intercepts, a failed call's log is a handle no call can take
     * (level_zero_driver.c, failed_build_logs_usable): it is left (the loader's
     * leak), and the message says why it is missing. */
    bool unwrapped = rc != TZE_RESULT_SUCCESS && !s->ze->failed_build_logs_usable;
    char text[TACK__ZE_LOG_SHOWN + 64];
    snprintf(text, sizeof text, "(none given)");
    if (unwrapped && log) {
        snprintf(text, sizeof text,
                 "(not readable: the Level Zero loader's intercept layer, on with "
                 "several drivers or ZE_ENABLE_LOADER_INTERCEPT, returns a failed "
                 "build's log unwrapped)");
    }
    else if (log) { /* the caller's to destroy, whatever the build gave */
        if (refused) {
            build_log_text(api, log, text, sizeof text);
        }
        (void)api->zeModuleBuildLogDestroy(log);
    }
    if (refused) {
        return tack__fail(TACK_ERR_COMPILE,
                          "kernel '%s': the Level Zero driver could not build its "
                          "SPIR-V module (%s); its build log: %s",
                          k->pub.name, tack__ze_result_name(rc), text);
    }
    if (rc != TZE_RESULT_SUCCESS) {
        return tack__ze_error(rc, "zeModuleCreate");
    }
    tack_status st = entry_of(s, k, mod, "tack_kernel_body", &m->body);
    if (st == TACK_OK && k->restrict_body) {
        st = entry_of(s, k, mod, "tack_kernel_body_restrict", &m->body_restrict);
    }
    tack__gpu_entry finish = {NULL, 0, 0};
    if (st == TACK_OK && tack__gpu_needs_finish(k)) {
        st = entry_of(s, k, mod, "tack_kernel_finish", &finish);
    }
    if (st != TACK_OK) {
        tze_kernel made[2];
        memcpy(&made[0], &m->body.fn, TACK__ZE_HANDLE_NBYTES);
        memcpy(&made[1], &m->body_restrict.fn, TACK__ZE_HANDLE_NBYTES);
        for (int i = 0; i < 2; i++) {
            if (made[i]) {
                (void)api->zeKernelDestroy(made[i]);
            }
        }
        (void)api->zeModuleDestroy(mod);
        return st;
    }
    m->finish = finish.fn;
    memcpy(&m->mod, &mod, TACK__ZE_HANDLE_NBYTES);
    return TACK_OK;
}

tack_status
tack__ze_module_of(tack__gpu_kernel *k, const tack__ze_state *s,
                   const tack__gpu_context_module **out)
{
    tack__gpu_context ctx;
    memcpy(&ctx, &s->context, TACK__ZE_HANDLE_NBYTES);
    pthread_mutex_lock(&k->lock);
    tack__gpu_context_module *m = k->modules;
    while (m && (m->ctx != ctx || m->device != (const void *)s->device)) {
        m = m->next;
    }
    tack_status st = TACK_OK;
    if (!m) {
        st = tack__ze_kernel_fits(k, s);
        if (st == TACK_OK && !(m = tack__calloc(sizeof *m))) {
            st = tack__fail(TACK_ERR_NO_MEMORY, "out of memory loading kernel '%s'",
                            k->pub.name);
        }
        if (st == TACK_OK) {
            st = make_module(k, s, m);
        }
        if (st == TACK_OK) {
            m->ctx = ctx;
            m->device = s->device;
            m->next = k->modules;
            k->modules = m;
        }
        else {
            tack__free(m);
            m = NULL;
        }
    }
    pthread_mutex_unlock(&k->lock);
    if (st == TACK_OK) {
        *out = m;
    }
    return st;
}
