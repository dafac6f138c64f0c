/*
 * standin_core.c: the stand-in's entry protocol (lock, fault injection, call log), its
 * configuration, initialization and teardown, devices, primary contexts and each
 * thread's context stack. Numbers and names below are the layer's (standin_layer.h);
 * the environment is read once, at the first call of any entry point:
 *
 *   TACK_STANDIN_FAIL=name:k[:code][,name:k[:code]...]  the k-th call (from 1) of entry
 *       point `name` (the name the layer logs, e.g. cuMemAllocAsync) returns `code`
 *       (default STANDIN_ERR_INJECTED_DEFAULT, CUDA's out of memory) without doing
 *       anything. A sticky code (standin_rc_is_sticky) also poisons the calling
 *       thread's context, as a real fault would.
 *   TACK_STANDIN_LOG=path   appends one line per call: "name(arguments) -> result".
 *   TACK_STANDIN_ASYNC=eager   runs queued work as soon as it is queued (for debugging;
 *       the default defers it to the next synchronization point).
 *   TACK_STANDIN_DEVICES=n   number of devices (default 1, at most 8).
 *   TACK_STANDIN_MEMORY=bytes   device memory of the process (default 8 GiB, sparse).
 *   TACK_STANDIN_DRIVER_VERSION=v   the driver version the layer reports (default and
 *       at most STANDIN_LAYER_VERSION), to play an older driver.
 *   TACK_STANDIN_EXEC=twin|emulate   what computes a launch: its registered CPU twin
 *       (default), or the module's source compiled for the host (standin_emulate.c);
 *       any other value makes initialization fail.
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
    standin_rc code;
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
                long code = STANDIN_ERR_OUT_OF_MEMORY;
                if (rest && *rest == ':') {
                    code = strtol(rest + 1, NULL, 10);
                }
                size_t name_len = strlen(item);
                if (at > 0 && name_len < sizeof faults[0].name) {
                    memcpy(faults[nfaults].name, item, name_len + 1);
                    faults[nfaults].at = at;
                    faults[nfaults].code = (standin_rc)code;
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
        v > 0 && v <= STANDIN_LAYER_VERSION ? (int)v : STANDIN_LAYER_VERSION;
}

/* ---- the entry protocol ---------------------------------------------------------- */

/* The fault injected into this call, or 0. */
static standin_rc
injected(const char *name)
{
    /* Every entry for the name counts every call, so two entries for one entry point
     * each fire at their own k-th call. */
    standin_rc rc = STANDIN_OK;
    for (int k = 0; k < nfaults; k++) {
        if (strcmp(faults[k].name, name) == 0 && ++faults[k].calls == faults[k].at &&
            rc == STANDIN_OK) {
            rc = faults[k].code;
        }
    }
    return rc;
}

static _Thread_local struct standin_context *ctx_stack[32];
static _Thread_local int ctx_depth;

/* The protocol's checks: `kind` says whether the entry point needs initialization. */
static standin_rc
enter(const char *name, enum standin_entry kind)
{
    pthread_mutex_lock(&standin_lock);
    if (!configured) {
        configure();
    }
    standin_rc rc = injected(name);
    if (rc != STANDIN_OK) {
        if (standin_rc_is_sticky(rc) && ctx_depth > 0) {
            standin_poison(ctx_stack[ctx_depth - 1], rc);
        }
        return rc;
    }
    bool anytime = kind == STANDIN_ENTRY_ANYTIME;
    if (atomic_load(&standin.torn_down) && !anytime) {
        return STANDIN_ERR_DEINITIALIZED;
    }
    /* A child forked after cuInit cannot use the driver, not even to initialize it
     * again: CUDA is not fork-safe, and a test that forks must exec (or fork before
     * initializing) as it would have to on a GPU. */
    if (standin.initialized && getpid() != standin.init_pid && !anytime) {
        return STANDIN_ERR_NOT_INITIALIZED;
    }
    if (!standin.initialized && kind == STANDIN_ENTRY_INITIALIZED) {
        return STANDIN_ERR_NOT_INITIALIZED;
    }
    return STANDIN_OK;
}

standin_rc
standin_enter(const char *name)
{
    return enter(name, STANDIN_ENTRY_INITIALIZED);
}

standin_rc
standin_enter_as(const char *name, enum standin_entry kind)
{
    return enter(name, kind);
}

standin_rc
standin_leave(standin_rc rc, const char *name, const char *fmt, ...)
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

standin_rc
standin_current(struct standin_context **out)
{
    if (ctx_depth == 0 || !ctx_stack[ctx_depth - 1]) {
        return STANDIN_ERR_INVALID_CONTEXT;
    }
    struct standin_context *ctx = ctx_stack[ctx_depth - 1];
    if (!ctx->alive) {
        return STANDIN_ERR_INVALID_CONTEXT;
    }
    if (ctx->sticky != STANDIN_OK) {
        return ctx->sticky;
    }
    *out = ctx;
    return STANDIN_OK;
}

void
standin_poison(struct standin_context *ctx, standin_rc rc)
{
    if (ctx && ctx->sticky == STANDIN_OK) {
        ctx->sticky = rc;
        standin_discard_context(ctx);
    }
}

bool
standin_device_ok(int dev)
{
    return dev >= 0 && dev < standin.ndevices;
}

standin_rc
standin_device_check(int dev)
{
    return standin_device_ok(dev) ? STANDIN_OK : STANDIN_ERR_INVALID_DEVICE;
}

/* Looks a context handle up among those ever made: an unknown pointer is never
 * dereferenced. */
struct standin_context *
standin_known_context(const void *handle)
{
    for (struct standin_context *c = standin.contexts; c; c = c->next) {
        if ((const void *)c == handle) {
            return c;
        }
    }
    return NULL;
}

static struct standin_context *
context_new(int device, bool primary)
{
    struct standin_context *c = calloc(1, sizeof *c);
    if (!c) {
        return NULL;
    }
    c->device = device;
    c->primary = primary;
    c->alive = true;
    c->legacy = standin_queue_new(c, false);
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
context_kill(struct standin_context *c)
{
    standin_discard_context(c);
    c->alive = false;
    /* It may stay on some thread's stack: every call through it then fails. */
}

/* ---- initialization and teardown ------------------------------------------------ */

/* At exit other threads may still be inside the stand-in, holding its lock: only the
 * flag is set, and their next call sees it. */
static void
teardown_at_exit(void)
{
    atomic_store(&standin.torn_down, true);
}

void
standin_teardown(void)
{
    /* What the driver owned goes with it: no queued work runs any more. */
    for (struct standin_context *c = standin.contexts; c; c = c->next) {
        standin_discard_context(c);
    }
    atomic_store(&standin.torn_down, true);
}

standin_rc
standin_init(void)
{
    if (standin.exec_unknown) {
        return STANDIN_ERR_INVALID_VALUE; /* a misspelt mode must not run twins */
    }
    if (standin.ndevices == 0) {
        return STANDIN_ERR_NO_DEVICE;
    }
    standin_rc rc = standin_memory_init();
    if (rc == STANDIN_OK && !standin.initialized) {
        standin.initialized = true;
        standin.init_pid = getpid();
        /* The driver shuts down at exit, after the exit handlers registered before
         * this one: a release from any of them meets a dead driver. */
        (void)atexit(teardown_at_exit);
    }
    return rc;
}

/* ---- devices --------------------------------------------------------------------- */

/* The stand-in's device: an sm_90 part shaped like an H100/H200, with VMM and POSIX fd
 * export, memory pools (stream-ordered allocation works) and managed memory (host
 * memory mapped at the address handed out, so the host may touch it). */
const standin_device_facts standin_device = {
    .max_threads_per_block = 1024,
    .max_block_x = 1024,
    .max_block_y = 1024,
    .max_block_z = 64,
    .max_grid_x = 2147483647,
    .max_grid_y = 65535,
    .max_grid_z = 65535,
    .max_shared_per_block = (int)STANDIN_MAX_SHARED,
    .max_shared_optin = 232448,
    .constant_memory = 65536,
    .warp_size = 32,
    .max_registers_per_block = 65536,
    .clock_khz = 1980000,
    .multiprocessors = 132,
    .max_threads_per_sm = 2048,
    .arch_major = 9,
    .arch_minor = 0,
    .integrated = 0,
    .can_map_host_memory = 1,
    .unified_addressing = 1,
    .async_engines = 2,
    .pci_domain = 0,
    .pci_bus = 0x10,
    .pci_device = 0,
    .l2_cache_bytes = 52428800,
    .managed_memory = 1,
    .concurrent_managed_access = 1,
    .vmm = 1,
    .fd_export = 1,
    .memory_pools = 1,
};

standin_rc
standin_device_uuid(int dev, unsigned char uuid[16])
{
    if (!standin_device_ok(dev)) {
        return STANDIN_ERR_INVALID_DEVICE;
    }
    /* A fixed, recognisable UUID per device ("tack-standin" + ordinal). */
    static const char prefix[12] = {'t', 'a', 'c', 'k', '-', 's',
                                    't', 'a', 'n', 'd', 'i', 'n'};
    memcpy(uuid, prefix, sizeof prefix);
    memset(uuid + 12, 0, 4);
    uuid[15] = (unsigned char)dev;
    return STANDIN_OK;
}

/* ---- primary contexts ------------------------------------------------------------ */

standin_rc
standin_primary_retain(int dev, struct standin_context **out)
{
    if (!standin_device_ok(dev)) {
        return STANDIN_ERR_INVALID_DEVICE;
    }
    if (!standin.primary[dev]) {
        /* Stricter: a primary context made after the last release gets a new handle,
         * so a handle kept past its release is caught. */
        standin.primary[dev] = context_new(dev, true);
    }
    if (!standin.primary[dev]) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    standin.primary_retains[dev]++;
    *out = standin.primary[dev];
    return STANDIN_OK;
}

standin_rc
standin_primary_release(int dev)
{
    if (!standin_device_ok(dev)) {
        return STANDIN_ERR_INVALID_DEVICE;
    }
    if (standin.primary_retains[dev] == 0) {
        return STANDIN_ERR_INVALID_CONTEXT; /* a release without a retain */
    }
    if (--standin.primary_retains[dev] == 0) {
        context_kill(standin.primary[dev]);
        standin.primary[dev] = NULL;
    }
    return STANDIN_OK;
}

standin_rc
standin_primary_active(int dev, bool *active)
{
    if (!standin_device_ok(dev)) {
        return STANDIN_ERR_INVALID_DEVICE;
    }
    *active = standin.primary_retains[dev] > 0;
    return STANDIN_OK;
}

/* ---- the calling thread's context stack ------------------------------------------ */

#define CTX_STACK_MAX (int)(sizeof ctx_stack / sizeof ctx_stack[0])

standin_rc
standin_context_create(int dev, struct standin_context **out)
{
    if (!standin_device_ok(dev)) {
        return STANDIN_ERR_INVALID_DEVICE;
    }
    if (ctx_depth == CTX_STACK_MAX) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    struct standin_context *c = context_new(dev, false);
    if (!c) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    /* The new context is pushed on the calling thread's stack. */
    ctx_stack[ctx_depth++] = c;
    *out = c;
    return STANDIN_OK;
}

standin_rc
standin_context_destroy(const void *handle)
{
    struct standin_context *c = standin_known_context(handle);
    if (!c || !c->alive || c->primary) {
        /* Unknown, destroyed, or primary (those are released instead). */
        return STANDIN_ERR_INVALID_CONTEXT;
    }
    context_kill(c);
    /* Removed from the calling thread's stack; other threads keep a dead handle, and
     * every call through it fails. */
    if (ctx_depth > 0 && ctx_stack[ctx_depth - 1] == c) {
        ctx_depth--;
    }
    return STANDIN_OK;
}

struct standin_context *
standin_context_top(void)
{
    return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

standin_rc
standin_context_set(const void *handle)
{
    struct standin_context *c = handle ? standin_known_context(handle) : NULL;
    if (handle && (!c || !c->alive)) {
        return STANDIN_ERR_INVALID_CONTEXT;
    }
    if (!c) {
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
    return STANDIN_OK;
}

standin_rc
standin_context_push(const void *handle)
{
    struct standin_context *c = standin_known_context(handle);
    if (!c || !c->alive) {
        return STANDIN_ERR_INVALID_CONTEXT;
    }
    if (ctx_depth == CTX_STACK_MAX) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    ctx_stack[ctx_depth++] = c;
    return STANDIN_OK;
}

standin_rc
standin_context_pop(struct standin_context **out)
{
    if (ctx_depth == 0) {
        return STANDIN_ERR_INVALID_CONTEXT;
    }
    *out = ctx_stack[--ctx_depth];
    return STANDIN_OK;
}

int
standin_context_depth(void)
{
    return ctx_depth;
}
