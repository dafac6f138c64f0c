/*
 * gpu_driver.c: dlopen of GPU drivers, shared by the cuda, hip and level_zero
 * backends. Drivers are loaded at run time so that Tack builds and runs its CPU
 * tests with no GPU and no GPU toolkit.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gpu_driver.h"

tack_status
tack__driver_load(const char *backend, const char *const *candidates,
                  const char *what_to_install, void **handle)
{
    char tried[256] = "";
    size_t used = 0;
    for (const char *const *c = candidates; *c; c++) {
        void *h = dlopen(*c, RTLD_NOW | RTLD_LOCAL);
        if (h) {
            *handle = h;
            return TACK_OK;
        }
        int n =
            snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", *c);
        if (n > 0 && (size_t)n < sizeof tried - used) {
            used += (size_t)n;
        }
    }
    return tack__fail_remedy(
        TACK_ERR_DEVICE_UNAVAILABLE, TACK_REMEDY_CPU,
        "the '%s' backend needs its driver library, and none was found "
        "(tried %s; install %s)",
        backend, tried, what_to_install);
}

tack_status
tack__stub_open(const tack_backend *self, int ordinal,
                const tack_device_options *options, void **state)
{
    (void)ordinal;
    (void)options;
    (void)state;
    const tack__driver_stub *drv = self->impl;
    void *handle = NULL;
    tack_status st =
        tack__driver_load(self->name, drv->libraries, drv->what_to_install, &handle);
    if (st != TACK_OK) {
        return st;
    }
    return tack__driver_not_built(self->name);
}

tack_status
tack__driver_not_built(const char *backend)
{
    return tack__fail_remedy(
        TACK_ERR_DEVICE_UNAVAILABLE, TACK_REMEDY_CPU,
        "the '%s' driver is present, but this build of Tack has no '%s' "
        "array support yet",
        backend, backend);
}

static tack_status
unreachable(void)
{
    return tack__fail(TACK_ERR_INTERNAL, "GPU backend slot called without a device");
}

tack_status
tack__stub_alloc(void *state, size_t nbytes, bool exportable, void **ptr)
{
    (void)state, (void)nbytes, (void)exportable, (void)ptr;
    return unreachable();
}

void
tack__stub_free(void *state, void *ptr)
{
    (void)state, (void)ptr;
}

tack_status
tack__stub_copy(void *state, void *dst, const void *src, size_t nbytes,
                tack_copy_kind kind)
{
    (void)state, (void)dst, (void)src, (void)nbytes, (void)kind;
    return unreachable();
}

tack_status
tack__stub_fill(void *state, void *dst, const void *pattern, size_t pattern_nbytes,
                size_t count)
{
    (void)state, (void)dst, (void)pattern, (void)pattern_nbytes, (void)count;
    return unreachable();
}

tack_status
tack__stub_memory_space(void *state, const void *ptr, tack_memory_space *out)
{
    (void)state, (void)ptr, (void)out;
    return unreachable();
}

tack_status
tack__stub_synchronize(void *state)
{
    (void)state;
    return TACK_OK;
}

uint64_t
tack__stub_memory_domain(void *state, int ordinal)
{
    (void)state;
    return (uint64_t)ordinal + 1;
}
