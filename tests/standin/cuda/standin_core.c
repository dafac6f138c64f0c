/*
 * standin_core.c: the stand-in driver's entry protocol (lock, fault injection, call
 * log), initialization, devices, contexts and error names.
 *
 * Environment (read once, at the first call):
 *   TACK_STANDIN_FAIL=name:k[:code][,name:k[:code]...]  the k-th call (from 1) of entry
 *       point `name` (its base name, e.g. cuMemAllocAsync) returns `code` (default 2,
 *       CUDA_ERROR_OUT_OF_MEMORY) without doing anything. A sticky code (700, 702,
 *       710, 714-719, 226: TCU_STICKY_RESULT_LIST) also poisons the calling thread's
 *       context, as a real fault would.
 *   TACK_STANDIN_LOG=path   appends one line per call: "name(arguments) -> result".
 *   TACK_STANDIN_ASYNC=eager   runs queued work as soon as it is queued (for debugging;
 *       the default defers it to the next synchronization point).
 *   TACK_STANDIN_DEVICES=n   number of devices (default 1, at most 8).
 *   TACK_STANDIN_MEMORY=bytes   device memory of the process (default 8 GiB, sparse).
 *   TACK_STANDIN_DRIVER_VERSION=v   what cuDriverGetVersion answers (default 13000,
 *       1000 * major + 10 * minor), to play an older driver; the images it loads
 *       are checked as 13.0's.
 *   TACK_STANDIN_EXEC=twin|emulate   what computes a launch: its registered CPU twin
 *       (default), or the module's CUDA source compiled for the host
 *       (standin_emulate.c); any other value makes cuInit fail.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "standin.h"

standin_state standin = {.log_fd = -1};
pthread_mutex_t standin_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- environment ----------------------------------------------------------------- */

#define MAX_FAULTS 16

static struct {
    char name[64];
    long at;
    tcu_result code;
    long calls;
} faults[MAX_FAULTS];
static int nfaults;
static bool configured;

static void
parse_faults(const char *spec)
{
    while (spec && *spec && nfaults < MAX_FAULTS) {
        const char *end = strchr(spec, ',');
        size_t len = end ? (size_t)(end - spec) : strlen(spec);
        char item[96];
        if (len < sizeof item) {
            memcpy(item, spec, len);
            item[len] = '\0';
            char *colon = strchr(item, ':');
            if (colon) {
                *colon = '\0';
                char *rest = NULL;
                long at = strtol(colon + 1, &rest, 10);
                long code = TCU_ERROR_OUT_OF_MEMORY;
                if (rest && *rest == ':') {
                    code = strtol(rest + 1, NULL, 10);
                }
                size_t name_len = strlen(item);
                if (at > 0 && name_len < sizeof faults[0].name) {
                    memcpy(faults[nfaults].name, item, name_len + 1);
                    faults[nfaults].at = at;
                    faults[nfaults].code = (tcu_result)code;
                    nfaults++;
                }
            }
        }
        spec = end ? end + 1 : NULL;
    }
}

static void
configure(void)
{
    configured = true;
    parse_faults(getenv("TACK_STANDIN_FAIL"));
    const char *log = getenv("TACK_STANDIN_LOG");
    if (log && *log) {
        standin.log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    }
    const char *async = getenv("TACK_STANDIN_ASYNC");
    standin.eager = async && strcmp(async, "eager") == 0;
    /* What computes a launch: a registered CPU twin (the default), or the module's own
     * CUDA code compiled for the host (standin_emulate.c). */
    const char *exec = getenv("TACK_STANDIN_EXEC");
    standin.emulate = exec && strcmp(exec, "emulate") == 0;
    standin.exec_unknown =
        exec && *exec && !standin.emulate && strcmp(exec, "twin") != 0;
    const char *devices = getenv("TACK_STANDIN_DEVICES");
    long n = devices ? strtol(devices, NULL, 10) : 1;
    standin.ndevices = n < 0                     ? 0
                       : n > STANDIN_MAX_DEVICES ? STANDIN_MAX_DEVICES
                                                 : (int)n;
    /* An older driver, as cuDriverGetVersion reports it (the entry points stay). */
    const char *version = getenv("TACK_STANDIN_DRIVER_VERSION");
    long v = version ? strtol(version, NULL, 10) : 0;
    standin.driver_version =
        v > 0 && v <= STANDIN_DRIVER_VERSION ? (int)v : STANDIN_DRIVER_VERSION;
}

/* ---- the entry protocol ---------------------------------------------------------- */

/* The fault injected into this call, or 0. */
static tcu_result
injected(const char *name)
{
    /* Every entry for the name counts every call, so two entries for one entry point
     * each fire at their own k-th call. */
    tcu_result rc = TCU_SUCCESS;
    for (int k = 0; k < nfaults; k++) {
        if (strcmp(faults[k].name, name) == 0 && ++faults[k].calls == faults[k].at &&
            rc == TCU_SUCCESS) {
            rc = faults[k].code;
        }
    }
    return rc;
}

static _Thread_local struct CUctx_st *ctx_stack[32];
static _Thread_local int ctx_depth;

tcu_result
standin_enter(const char *name)
{
    pthread_mutex_lock(&standin_lock);
    if (!configured) {
        configure();
    }
    tcu_result rc = injected(name);
    if (rc != TCU_SUCCESS) {
        if (tcu_is_sticky(rc) && ctx_depth > 0) {
            standin_poison(ctx_stack[ctx_depth - 1], rc);
        }
        return rc;
    }
    bool anytime = strcmp(name, "cuDriverGetVersion") == 0 ||
                   strcmp(name, "cuGetErrorName") == 0 ||
                   strcmp(name, "cuGetErrorString") == 0 ||
                   strcmp(name, "cuGetProcAddress") == 0;
    if (atomic_load(&standin.torn_down) && !anytime) {
        return TCU_ERROR_DEINITIALIZED;
    }
    /* A child forked after cuInit cannot use the driver, not even to initialize it
     * again: CUDA is not fork-safe, and a test that forks must exec (or fork before
     * initializing) as it would have to on a GPU. */
    if (standin.initialized && getpid() != standin.init_pid && !anytime) {
        return TCU_ERROR_NOT_INITIALIZED;
    }
    if (!standin.initialized && !anytime && strcmp(name, "cuInit") != 0) {
        return TCU_ERROR_NOT_INITIALIZED;
    }
    return TCU_SUCCESS;
}

tcu_result
standin_leave(tcu_result rc, const char *name, const char *fmt, ...)
{
    if (standin.log_fd >= 0) {
        char args[384], line[512];
        va_list ap;
        va_start(ap, fmt);
        // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is just above
        int m = vsnprintf(args, sizeof args, fmt, ap);
        va_end(ap);
        if (m < 0) {
            args[0] = '\0';
        }
        int n = snprintf(line, sizeof line, "%s(%s) -> %d\n", name, args, rc);
        size_t len = n < 0 ? 0 : (size_t)n >= sizeof line ? sizeof line - 1 : (size_t)n;
        if (len > 0) {
            line[len - 1] = '\n'; /* a truncated line still ends its line */
        }
        /* One write per line, so lines from several threads never interleave. */
        ssize_t w = write(standin.log_fd, line, len);
        (void)w;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

tcu_result
standin_current(struct CUctx_st **out)
{
    if (ctx_depth == 0 || !ctx_stack[ctx_depth - 1]) {
        return TCU_ERROR_INVALID_CONTEXT;
    }
    struct CUctx_st *ctx = ctx_stack[ctx_depth - 1];
    if (!ctx->alive) {
        return TCU_ERROR_INVALID_CONTEXT;
    }
    if (ctx->sticky != TCU_SUCCESS) {
        return ctx->sticky;
    }
    *out = ctx;
    return TCU_SUCCESS;
}

void
standin_poison(struct CUctx_st *ctx, tcu_result rc)
{
    if (ctx && ctx->sticky == TCU_SUCCESS) {
        ctx->sticky = rc;
        standin_discard_context(ctx);
    }
}

bool
standin_device_ok(tcu_device dev)
{
    return dev >= 0 && dev < standin.ndevices;
}

/* Looks a context handle up among those ever made: an unknown pointer is never
 * dereferenced. */
struct CUctx_st *
standin_known_context(tcu_context handle)
{
    for (struct CUctx_st *c = standin.contexts; c; c = c->next) {
        if (c == handle) {
            return c;
        }
    }
    return NULL;
}

static struct CUctx_st *
context_new(int device, bool primary)
{
    struct CUctx_st *c = calloc(1, sizeof *c);
    if (!c) {
        return NULL;
    }
    c->device = device;
    c->primary = primary;
    c->alive = true;
    c->legacy = standin_stream_new(c, TCU_STREAM_DEFAULT);
    if (!c->legacy) {
        free(c);
        return NULL;
    }
    c->legacy->legacy = true;
    c->next = standin.contexts;
    standin.contexts = c;
    return c;
}

/* A context dies: its queued work is dropped (the driver frees everything a destroyed
 * context owns); its handle stays known so later use is reported, not followed. */
static void
context_kill(struct CUctx_st *c)
{
    standin_discard_context(c);
    c->alive = false;
    /* It may stay on some thread's stack: every call through it then fails. */
}

/* ---- initialization, teardown and versions ------------------------------------ */

/* At exit other threads may still be inside the stand-in, holding its lock: only the
 * flag is set, and their next call sees it. */
static void
teardown_at_exit(void)
{
    atomic_store(&standin.torn_down, true);
}

STANDIN_EXPORT void
tack_standin_cuda_teardown(void)
{
    (void)standin_enter("tack_standin_cuda_teardown");
    /* What the driver owned goes with it: no queued work runs any more. */
    for (struct CUctx_st *c = standin.contexts; c; c = c->next) {
        standin_discard_context(c);
    }
    atomic_store(&standin.torn_down, true);
    (void)standin_leave(TCU_SUCCESS, "tack_standin_cuda_teardown", "%s", "");
}

STANDIN_EXPORT tcu_result
cuInit(unsigned int Flags)
{
    tcu_result rc = standin_enter("cuInit");
    if (rc == TCU_SUCCESS) {
        if (Flags != 0 || standin.exec_unknown) {
            rc = TCU_ERROR_INVALID_VALUE; /* a misspelt mode must not run twins */
        }
        else if (standin.ndevices == 0) {
            rc = TCU_ERROR_NO_DEVICE;
        }
        else {
            rc = standin_memory_init();
            if (rc == TCU_SUCCESS && !standin.initialized) {
                standin.initialized = true;
                standin.init_pid = getpid();
                /* The driver shuts down at exit, after the exit handlers registered
                 * before this one: a release from any of them meets a dead driver. */
                (void)atexit(teardown_at_exit);
            }
        }
    }
    return standin_leave(rc, "cuInit", "%u", Flags);
}

STANDIN_EXPORT tcu_result
cuDriverGetVersion(int *driverVersion)
{
    tcu_result rc = standin_enter("cuDriverGetVersion");
    if (rc == TCU_SUCCESS) {
        if (!driverVersion) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else {
            *driverVersion = standin.driver_version;
        }
    }
    return standin_leave(rc, "cuDriverGetVersion", "%s", "");
}

/* NVRTC opens libcuda.so.1 itself and asks it for its private export tables; where the
 * stand-in is installed under that name (the GPU check's rehearsal), a missing symbol
 * crashes NVRTC's compile. The stand-in has no such tables: "not supported" makes
 * NVRTC go on as it does with no driver. Outside the entry protocol and the log, since
 * Tack never calls it and NVRTC may call it at any time. */
STANDIN_EXPORT tcu_result cuGetExportTable(const void **table, const void *id);

STANDIN_EXPORT tcu_result
cuGetExportTable(const void **table, const void *id)
{
    (void)table;
    (void)id;
    return TCU_ERROR_NOT_SUPPORTED;
}

/* ---- devices --------------------------------------------------------------------- */

STANDIN_EXPORT tcu_result
cuDeviceGetCount(int *count)
{
    tcu_result rc = standin_enter("cuDeviceGetCount");
    if (rc == TCU_SUCCESS) {
        if (!count) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else {
            *count = standin.ndevices;
        }
    }
    return standin_leave(rc, "cuDeviceGetCount", "%s", "");
}

STANDIN_EXPORT tcu_result
cuDeviceGet(tcu_device *device, int ordinal)
{
    tcu_result rc = standin_enter("cuDeviceGet");
    if (rc == TCU_SUCCESS) {
        if (!device) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else if (!standin_device_ok(ordinal)) {
            rc = TCU_ERROR_INVALID_DEVICE;
        }
        else {
            *device = ordinal;
        }
    }
    return standin_leave(rc, "cuDeviceGet", "ordinal=%d", ordinal);
}

STANDIN_EXPORT tcu_result
cuDeviceGetName(char *name, int len, tcu_device dev)
{
    tcu_result rc = standin_enter("cuDeviceGetName");
    if (rc == TCU_SUCCESS) {
        if (!name || len <= 0) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else if (!standin_device_ok(dev)) {
            rc = TCU_ERROR_INVALID_DEVICE;
        }
        else {
            /* Truncated to len - 1 characters and terminated, as the driver does. */
            snprintf(name, (size_t)len, "Tack stand-in CUDA device %d", dev);
        }
    }
    return standin_leave(rc, "cuDeviceGetName", "len=%d, dev=%d", len, dev);
}

/* The stand-in's device: an sm_90 part shaped like an H100/H200, with VMM and POSIX fd
 * export; memory pools are reported (cuMemAllocAsync works). Managed memory is not
 * modelled (a host access to it must work, which the PROT_NONE device view cannot
 * give), so the device says it has none. */
static const struct {
    tcu_device_attribute attrib;
    int value;
} attributes[] = {
    {TCU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {TCU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {TCU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {TCU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {TCU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {TCU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {TCU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {TCU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
    {TCU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536},
    {TCU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {TCU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
    {TCU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},
    {TCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
    {TCU_DEVICE_ATTRIBUTE_INTEGRATED, 0},
    {TCU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
    {TCU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0x10}, /* plus the ordinal */
    {TCU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
    {TCU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800},
    {TCU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
    {TCU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2},
    {TCU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
    {TCU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
    {TCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
    {TCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
    {TCU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
    {TCU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
    {TCU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
    {TCU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
    {TCU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1},
    {TCU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
};

/* The attribute's value on dev; false for an attribute the stand-in does not model. */
static bool
attribute_value(tcu_device_attribute attrib, tcu_device dev, int *value)
{
    for (size_t k = 0; k < sizeof attributes / sizeof attributes[0]; k++) {
        if (attributes[k].attrib == attrib) {
            *value = attributes[k].value +
                     (attrib == TCU_DEVICE_ATTRIBUTE_PCI_BUS_ID ? dev : 0);
            return true;
        }
    }
    return false;
}

STANDIN_EXPORT tcu_result
cuDeviceGetAttribute(int *pi, tcu_device_attribute attrib, tcu_device dev)
{
    tcu_result rc = standin_enter("cuDeviceGetAttribute");
    if (rc == TCU_SUCCESS) {
        int value = 0;
        if (pi && !standin_device_ok(dev)) {
            rc = TCU_ERROR_INVALID_DEVICE;
        }
        else if (!pi || !attribute_value(attrib, dev, &value)) {
            /* Stricter for an attribute the stand-in does not model: the driver knows
             * many more; asking for one is a gap to fill, never a silent 0. */
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else {
            *pi = value;
        }
    }
    return standin_leave(rc, "cuDeviceGetAttribute", "attrib=%d, dev=%d", attrib, dev);
}

STANDIN_EXPORT tcu_result
cuDeviceGetUuid_v2(tcu_uuid *uuid, tcu_device dev)
{
    tcu_result rc = standin_enter("cuDeviceGetUuid");
    if (rc == TCU_SUCCESS) {
        if (!uuid) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else if (!standin_device_ok(dev)) {
            rc = TCU_ERROR_INVALID_DEVICE;
        }
        else {
            /* A fixed, recognisable UUID per device ("tack-standin" + ordinal). */
            static const char prefix[12] = {'t', 'a', 'c', 'k', '-', 's',
                                            't', 'a', 'n', 'd', 'i', 'n'};
            memcpy(uuid->bytes, prefix, sizeof prefix);
            memset(uuid->bytes + 12, 0, 4);
            uuid->bytes[15] = (char)dev;
        }
    }
    return standin_leave(rc, "cuDeviceGetUuid", "dev=%d", dev);
}

STANDIN_EXPORT tcu_result
cuDeviceTotalMem_v2(size_t *bytes, tcu_device dev)
{
    tcu_result rc = standin_enter("cuDeviceTotalMem");
    if (rc == TCU_SUCCESS) {
        if (!bytes) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else if (!standin_device_ok(dev)) {
            rc = TCU_ERROR_INVALID_DEVICE;
        }
        else {
            *bytes = standin_memory_total();
        }
    }
    return standin_leave(rc, "cuDeviceTotalMem", "dev=%d", dev);
}

/* ---- primary contexts ------------------------------------------------------------ */

STANDIN_EXPORT tcu_result
cuDevicePrimaryCtxRetain(tcu_context *pctx, tcu_device dev)
{
    tcu_result rc = standin_enter("cuDevicePrimaryCtxRetain");
    if (rc == TCU_SUCCESS) {
        if (!pctx) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else if (!standin_device_ok(dev)) {
            rc = TCU_ERROR_INVALID_DEVICE;
        }
        else {
            if (!standin.primary[dev]) {
                /* Stricter: a primary context made after the last release gets a new
                 * handle, so a handle kept past its release is caught. */
                standin.primary[dev] = context_new(dev, true);
            }
            if (!standin.primary[dev]) {
                rc = TCU_ERROR_OUT_OF_MEMORY;
            }
            else {
                standin.primary_retains[dev]++;
                *pctx = standin.primary[dev];
            }
        }
    }
    return standin_leave(rc, "cuDevicePrimaryCtxRetain", "dev=%d", dev);
}

STANDIN_EXPORT tcu_result
cuDevicePrimaryCtxRelease_v2(tcu_device dev)
{
    tcu_result rc = standin_enter("cuDevicePrimaryCtxRelease");
    if (rc == TCU_SUCCESS) {
        if (!standin_device_ok(dev)) {
            rc = TCU_ERROR_INVALID_DEVICE;
        }
        else if (standin.primary_retains[dev] == 0) {
            rc = TCU_ERROR_INVALID_CONTEXT; /* a release without a retain */
        }
        else if (--standin.primary_retains[dev] == 0) {
            context_kill(standin.primary[dev]);
            standin.primary[dev] = NULL;
        }
    }
    return standin_leave(rc, "cuDevicePrimaryCtxRelease", "dev=%d, retains=%d", dev,
                         rc == TCU_SUCCESS ? standin.primary_retains[dev] : -1);
}

STANDIN_EXPORT tcu_result
cuDevicePrimaryCtxGetState(tcu_device dev, unsigned int *flags, int *active)
{
    tcu_result rc = standin_enter("cuDevicePrimaryCtxGetState");
    if (rc == TCU_SUCCESS) {
        if (!flags || !active) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else if (!standin_device_ok(dev)) {
            rc = TCU_ERROR_INVALID_DEVICE;
        }
        else {
            *flags = 0;
            *active = standin.primary_retains[dev] > 0;
        }
    }
    return standin_leave(rc, "cuDevicePrimaryCtxGetState", "dev=%d", dev);
}

/* ---- contexts -------------------------------------------------------------------- */

STANDIN_EXPORT tcu_result
cuCtxCreate_v4(tcu_context *pctx, tcu_ctx_create_params *params, unsigned int flags,
               tcu_device dev)
{
    tcu_result rc = standin_enter("cuCtxCreate");
    if (rc == TCU_SUCCESS) {
        if (!pctx || params || flags != 0) {
            /* Stricter: execution-affinity and CIG parameters are not modelled. */
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else if (!standin_device_ok(dev)) {
            rc = TCU_ERROR_INVALID_DEVICE;
        }
        else if (ctx_depth == (int)(sizeof ctx_stack / sizeof ctx_stack[0])) {
            rc = TCU_ERROR_OUT_OF_MEMORY;
        }
        else {
            struct CUctx_st *c = context_new(dev, false);
            if (!c) {
                rc = TCU_ERROR_OUT_OF_MEMORY;
            }
            else {
                /* The new context is pushed on the calling thread's stack. */
                ctx_stack[ctx_depth++] = c;
                *pctx = c;
            }
        }
    }
    return standin_leave(rc, "cuCtxCreate", "dev=%d", dev);
}

STANDIN_EXPORT tcu_result
cuCtxDestroy_v2(tcu_context ctx)
{
    tcu_result rc = standin_enter("cuCtxDestroy");
    if (rc == TCU_SUCCESS) {
        struct CUctx_st *c = standin_known_context(ctx);
        if (!c || !c->alive || c->primary) {
            /* Unknown, destroyed, or primary (those are released instead). */
            rc = TCU_ERROR_INVALID_CONTEXT;
        }
        else {
            context_kill(c);
            /* Removed from the calling thread's stack; other threads keep a dead
             * handle, and every call through it fails. */
            if (ctx_depth > 0 && ctx_stack[ctx_depth - 1] == c) {
                ctx_depth--;
            }
        }
    }
    return standin_leave(rc, "cuCtxDestroy", "ctx=%p", (void *)ctx);
}

STANDIN_EXPORT tcu_result
cuCtxGetCurrent(tcu_context *pctx)
{
    tcu_result rc = standin_enter("cuCtxGetCurrent");
    if (rc == TCU_SUCCESS) {
        if (!pctx) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else {
            *pctx = ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
        }
    }
    return standin_leave(rc, "cuCtxGetCurrent", "%s", "");
}

STANDIN_EXPORT tcu_result
cuCtxSetCurrent(tcu_context ctx)
{
    tcu_result rc = standin_enter("cuCtxSetCurrent");
    if (rc == TCU_SUCCESS) {
        struct CUctx_st *c = ctx ? standin_known_context(ctx) : NULL;
        if (ctx && (!c || !c->alive)) {
            rc = TCU_ERROR_INVALID_CONTEXT;
        }
        else if (!c) {
            if (ctx_depth > 0) {
                ctx_depth--; /* NULL pops, as documented */
            }
        }
        else if (ctx_depth == 0) {
            ctx_stack[ctx_depth++] = c;
        }
        else {
            ctx_stack[ctx_depth - 1] = c;
        }
    }
    return standin_leave(rc, "cuCtxSetCurrent", "ctx=%p", (void *)ctx);
}

STANDIN_EXPORT tcu_result
cuCtxPushCurrent_v2(tcu_context ctx)
{
    tcu_result rc = standin_enter("cuCtxPushCurrent");
    if (rc == TCU_SUCCESS) {
        struct CUctx_st *c = standin_known_context(ctx);
        if (!c || !c->alive) {
            rc = TCU_ERROR_INVALID_CONTEXT;
        }
        else if (ctx_depth == (int)(sizeof ctx_stack / sizeof ctx_stack[0])) {
            rc = TCU_ERROR_OUT_OF_MEMORY;
        }
        else {
            ctx_stack[ctx_depth++] = c;
        }
    }
    return standin_leave(rc, "cuCtxPushCurrent", "ctx=%p", (void *)ctx);
}

STANDIN_EXPORT tcu_result
cuCtxPopCurrent_v2(tcu_context *pctx)
{
    tcu_result rc = standin_enter("cuCtxPopCurrent");
    if (rc == TCU_SUCCESS) {
        if (ctx_depth == 0) {
            rc = TCU_ERROR_INVALID_CONTEXT;
        }
        else {
            struct CUctx_st *c = ctx_stack[--ctx_depth];
            if (pctx) {
                *pctx = c;
            }
        }
    }
    return standin_leave(rc, "cuCtxPopCurrent", "depth=%d", ctx_depth);
}

STANDIN_EXPORT tcu_result
cuCtxGetDevice(tcu_device *device)
{
    tcu_result rc = standin_enter("cuCtxGetDevice");
    struct CUctx_st *ctx = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        if (!device) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else {
            *device = ctx->device;
        }
    }
    return standin_leave(rc, "cuCtxGetDevice", "%s", "");
}

STANDIN_EXPORT tcu_result
cuCtxSynchronize(void)
{
    tcu_result rc = standin_enter("cuCtxSynchronize");
    struct CUctx_st *ctx = NULL;
    if (rc == TCU_SUCCESS) {
        rc = standin_current(&ctx);
    }
    if (rc == TCU_SUCCESS) {
        rc = standin_run_context(ctx);
    }
    return standin_leave(rc, "cuCtxSynchronize", "%s", "");
}

/* ---- error names ----------------------------------------------------------------- */

static const char *
result_name(tcu_result error)
{
    switch (error) {
#define NAME_CASE(name, value) \
    case value: return "CUDA_" #name;
        TCU_RESULT_LIST(NAME_CASE)
#undef NAME_CASE
    default: return NULL;
    }
}

STANDIN_EXPORT tcu_result
cuGetErrorName(tcu_result error, const char **pStr)
{
    tcu_result rc = standin_enter("cuGetErrorName");
    if (rc == TCU_SUCCESS) {
        const char *name = result_name(error);
        if (!pStr) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else {
            *pStr = name;
            rc = name ? TCU_SUCCESS : TCU_ERROR_INVALID_VALUE;
        }
    }
    return standin_leave(rc, "cuGetErrorName", "%d", error);
}

STANDIN_EXPORT tcu_result
cuGetErrorString(tcu_result error, const char **pStr)
{
    tcu_result rc = standin_enter("cuGetErrorString");
    if (rc == TCU_SUCCESS) {
        const char *name = result_name(error);
        if (!pStr) {
            rc = TCU_ERROR_INVALID_VALUE;
        }
        else {
            /* The stand-in's description is the name itself: messages built from it
             * say where they came from. */
            *pStr = name;
            rc = name ? TCU_SUCCESS : TCU_ERROR_INVALID_VALUE;
        }
    }
    return standin_leave(rc, "cuGetErrorString", "%d", error);
}
