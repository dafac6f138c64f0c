/*
 * device.c: opening devices, the registry of plain devices and the default device.
 *
 * Invariants: a registry device (opened without options) is made once per (backend,
 * ordinal), lives until the process ends and is never freed, so a borrowed pointer to
 * it never dangles; a device opened with options is refcounted and closed with its
 * backend when the last reference goes.
 *
 * fork(): the registry lock is taken around the fork (pthread_atfork), so the child
 * never inherits it held by a thread it does not have, nor a half-made entry.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Ordinals above this are refused: no machine has that many devices of one kind. */
#define TACK__MAX_ORDINAL 64

static const tack_backend *const backends[] = {
    &tack__backend_cpu,
    &tack__backend_cuda,
    &tack__backend_hip,
    &tack__backend_level_zero,
};
#define TACK__NBACKENDS (sizeof backends / sizeof backends[0])

const tack_backend *
tack__backend_for_dlpack_type(int dlpack_device_type)
{
    for (size_t b = 0; b < TACK__NBACKENDS; b++) {
        if (backends[b]->dlpack_device_type == dlpack_device_type) {
            return backends[b];
        }
    }
    return NULL;
}

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static tack_device *registry[TACK__NBACKENDS][TACK__MAX_ORDINAL];
/* Owned reference; NULL means the CPU. Written under registry_lock; read without it
 * when it is a registry device, which never dies. */
static _Atomic(tack_device *) default_device;
/* Per backend with device memory, the first of its registry devices opened in this
 * process (never dies), for tack__device_foreign_space; NULL while none is. */
static _Atomic(tack_device *) first_open[TACK__NBACKENDS];

static void
lock_registry(void)
{
    pthread_mutex_lock(&registry_lock);
}

static void
unlock_registry(void)
{
    pthread_mutex_unlock(&registry_lock);
}

static void
register_fork_handler(void)
{
    /* The forking thread holds the lock across fork() and releases it on both sides. */
    pthread_atfork(lock_registry, unlock_registry, unlock_registry);
}

/* Every path that takes the lock goes through here first. */
static void
registry_enter(void)
{
    pthread_once(&fork_once, register_fork_handler);
    pthread_mutex_lock(&registry_lock);
}

static const tack_backend *
find_backend(const char *name, size_t *index)
{
    for (size_t i = 0; i < TACK__NBACKENDS; i++) {
        if (strcmp(backends[i]->name, name) == 0) {
            *index = i;
            return backends[i];
        }
    }
    return NULL;
}

const tack_backend *
tack__backend_named(const char *name)
{
    size_t index;
    return find_backend(name, &index);
}

tack_status
tack_device_parse(const char *spec, char *name_out, size_t name_cap, int *ordinal)
{
    TACK__CHECK_ARG(name_out);
    TACK__CHECK_ARG(ordinal);
    if (!spec || !*spec) {
        return tack__fail(
            TACK_ERR_UNKNOWN_DEVICE,
            "empty device name: use 'cpu', 'cuda', 'hip' or 'level_zero'");
    }
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (len + 1 > name_cap) {
        return tack__fail(TACK_ERR_UNKNOWN_DEVICE,
                          "unknown device '%.64s': use 'cpu', "
                          "'cuda', 'hip' or 'level_zero'",
                          spec);
    }
    int ord = *ordinal;
    if (colon) {
        const char *p = colon + 1;
        if (*p == '\0') {
            return tack__fail(
                TACK_ERR_UNKNOWN_DEVICE,
                "device '%.64s' has no ordinal after ':': write e.g. 'cuda:1'", spec);
        }
        long v = 0;
        for (; *p; p++) {
            if (*p < '0' || *p > '9' || v > TACK__MAX_ORDINAL) {
                return tack__fail(
                    TACK_ERR_UNKNOWN_DEVICE,
                    "device '%.64s' has a bad ordinal: write e.g. 'cuda:1'", spec);
            }
            v = v * 10 + (*p - '0');
        }
        ord = (int)v;
    }
    memcpy(name_out, spec, len);
    name_out[len] = '\0';
    *ordinal = ord;
    return TACK_OK;
}

bool
tack_device_accepts_option(const char *name, const char *option)
{
    size_t index;
    if (!name || !option) {
        return false;
    }
    const tack_backend *b = find_backend(name, &index);
    if (!b || !b->option_names) {
        return false;
    }
    for (const char *const *o = b->option_names; *o; o++) {
        if (strcmp(*o, option) == 0) {
            return true;
        }
    }
    return false;
}

static tack_status
device_make(const tack_backend *b, int ordinal, const tack_device_options *options,
            tack_device **out)
{
    void *state = NULL;
    tack_status st = b->open(b, ordinal, options, &state);
    if (st != TACK_OK) {
        return st;
    }
    tack_device *dev;
    st = tack__new(sizeof *dev, (void **)&dev);
    if (st != TACK_OK) {
        if (b->close) {
            b->close(state);
        }
        return st;
    }
    atomic_init(&dev->refcount, 1);
    dev->backend = b;
    dev->ordinal = ordinal;
    dev->state = state;
    dev->external_context = options && options->external_context;
    if (dev->external_context) {
        dev->external = *options->external_context;
    }
    dev->memory_domain = b->memory_domain(state, ordinal);
    *out = dev;
    return TACK_OK;
}

tack_status
tack_device_open(const char *name, int ordinal, const tack_device_options *options,
                 tack_device **out)
{
    TACK__CHECK_ARG(out);
    if (!name) {
        return tack__fail(TACK_ERR_UNKNOWN_DEVICE, "no device name given");
    }
    if (strcmp(name, "metal") == 0) {
        return tack__fail(
            TACK_ERR_DEVICE_UNAVAILABLE,
            "the 'metal' backend exists only on macOS with Apple GPUs; on "
            "this system use 'cpu', 'cuda', 'hip' or 'level_zero'");
    }
    size_t index;
    const tack_backend *b = find_backend(name, &index);
    if (!b) {
        return tack__fail(TACK_ERR_UNKNOWN_DEVICE,
                          "unknown device '%.64s': use 'cpu', 'cuda', 'hip' or "
                          "'level_zero'",
                          name);
    }
    if (ordinal < 0 || ordinal >= TACK__MAX_ORDINAL) {
        return tack__fail(TACK_ERR_UNKNOWN_DEVICE,
                          "device ordinal %d is out of range for '%s': use 0..%d",
                          ordinal, name, TACK__MAX_ORDINAL - 1);
    }
    if (options && options->external_context) {
        return device_make(b, ordinal, options, out);
    }
    registry_enter();
    tack_device *dev = registry[index][ordinal];
    tack_status st = TACK_OK;
    if (!dev) {
        st = device_make(b, ordinal, NULL, &dev);
        if (st == TACK_OK) {
            dev->in_registry = true;
            registry[index][ordinal] = dev;
            tack_device *none = NULL;
            if (b->dlpack_device_type != kDLCPU) {
                atomic_compare_exchange_strong(&first_open[index], &none, dev);
            }
        }
    }
    pthread_mutex_unlock(&registry_lock);
    if (st == TACK_OK) {
        *out = dev;
    }
    return st;
}

tack_memory_space
tack__device_foreign_space(const void *ptr)
{
    for (size_t i = 0; i < TACK__NBACKENDS; i++) {
        tack_device *dev = atomic_load_explicit(&first_open[i], memory_order_acquire);
        tack_memory_space space = TACK_MEMORY_HOST;
        /* Device memory of any ordinal is unreachable from the host; no answer
         * leaves the question to the caller. */
        if (dev && dev->backend->memory_space(dev->state, ptr, &space) == TACK_OK &&
            (space == TACK_MEMORY_DEVICE || space == TACK_MEMORY_UNKNOWN)) {
            return TACK_MEMORY_DEVICE;
        }
    }
    return TACK_MEMORY_HOST;
}

void
tack_device_retain(tack_device *dev)
{
    if (dev && !dev->in_registry) {
        atomic_fetch_add_explicit(&dev->refcount, 1, memory_order_relaxed);
    }
}

void
tack_device_release(tack_device *dev)
{
    if (!dev || dev->in_registry) {
        return;
    }
    size_t before = atomic_fetch_sub_explicit(&dev->refcount, 1, memory_order_acq_rel);
    assert(before > 0 && "tack_device_release of a device already released");
    if (before == 1) {
        if (dev->backend->close) {
            dev->backend->close(dev->state);
        }
        tack__free(dev);
    }
}

const char *
tack_device_backend_name(const tack_device *dev)
{
    return dev ? dev->backend->name : "";
}

int
tack_device_ordinal(const tack_device *dev)
{
    return dev ? dev->ordinal : -1;
}

int
tack_device_dlpack_type(const tack_device *dev)
{
    return dev ? dev->backend->dlpack_device_type : 0;
}

uint64_t
tack_device_memory_domain(const tack_device *dev)
{
    return dev ? dev->memory_domain : 0;
}

bool
tack_device_has_external_context(const tack_device *dev)
{
    return dev && dev->external_context;
}

bool
tack_device_external_context(const tack_device *dev, tack_external_context *out)
{
    if (!dev || !dev->external_context || !out) {
        return false;
    }
    *out = dev->external;
    return true;
}

const tack_backend *
tack_device_backend(const tack_device *dev)
{
    return dev ? dev->backend : NULL;
}

tack_status
tack_device_synchronize(tack_device *dev)
{
    TACK__CHECK_ARG(dev);
    return dev->backend->synchronize ? dev->backend->synchronize(dev->state) : TACK_OK;
}

uintptr_t
tack_device_stream(const tack_device *dev)
{
    if (!dev) {
        return 0; /* no device has no stream, like the CPU */
    }
    uintptr_t (*stream)(void *) = TACK__BACKEND_SLOT(dev->backend, stream);
    return stream ? stream(dev->state) : 0;
}

tack_status
tack_device_wait_for_stream(tack_device *dev, uintptr_t foreign)
{
    TACK__CHECK_ARG(dev);
    tack_status (*order)(void *, uintptr_t) =
        TACK__BACKEND_SLOT(dev->backend, order_tack_after_foreign);
    return order ? order(dev->state, foreign) : TACK_OK;
}

tack_status
tack__stream_follow(tack_device *dev, int64_t stream)
{
    tack_status st = tack__dlpack_stream_check(
        dev ? dev->backend->dlpack_device_type : kDLCPU, stream);
    if (st != TACK_OK || stream == -1) {
        return st;
    }
    return tack_device_wait_for_stream(dev, (uintptr_t)stream);
}

tack_status
tack_device_follow_stream(tack_device *dev, int64_t stream)
{
    TACK__CHECK_ARG(dev);
    return tack__stream_follow(dev, stream);
}

tack_status
tack__stream_lead(tack_device *dev, int64_t stream)
{
    tack_status (*order)(void *, uintptr_t) =
        dev ? TACK__BACKEND_SLOT(dev->backend, order_foreign_after_tack) : NULL;
    return order && stream != -1 ? order(dev->state, (uintptr_t)stream) : TACK_OK;
}

const char *
tack_device_driver_path(const tack_device *dev)
{
    if (!dev) {
        return NULL;
    }
    const char *(*path)(void *) = TACK__BACKEND_SLOT(dev->backend, driver_path);
    return path ? path(dev->state) : NULL;
}

static atomic_bool exiting;

void
tack_process_exiting(void)
{
    atomic_store_explicit(&exiting, true, memory_order_release);
}

bool
tack__process_exiting(void)
{
    return atomic_load_explicit(&exiting, memory_order_acquire);
}

tack_status
tack_default_device(tack_device **out)
{
    /* The registry's CPU device never dies, so once made it is remembered here. With
     * a registry device as the default (the common case) no lock is taken: this is
     * on the DLPack import's hot path. */
    static _Atomic(tack_device *) cpu_device;
    TACK__CHECK_ARG(out);
    tack_device *dev = atomic_load_explicit(&default_device, memory_order_acquire);
    if (dev && !dev->in_registry) {
        /* Another thread may replace and release it: retain under the lock. */
        registry_enter();
        dev = atomic_load_explicit(&default_device, memory_order_relaxed);
        tack_device_retain(dev);
        pthread_mutex_unlock(&registry_lock);
    }
    if (!dev) {
        dev = atomic_load_explicit(&cpu_device, memory_order_acquire);
    }
    if (dev) {
        *out = dev;
        return TACK_OK;
    }
    tack_status st = tack_device_open("cpu", 0, NULL, &dev);
    if (st == TACK_OK) {
        atomic_store_explicit(&cpu_device, dev, memory_order_release);
        *out = dev;
    }
    return st;
}

void
tack_set_default_device(tack_device *dev)
{
    tack_device_retain(dev);
    registry_enter();
    tack_device *old = atomic_load_explicit(&default_device, memory_order_relaxed);
    atomic_store_explicit(&default_device, dev, memory_order_release);
    pthread_mutex_unlock(&registry_lock);
    tack_device_release(old);
}
