/*
 * gpu_driver.h: what the GPU backends share: loading a driver library with dlopen,
 * and the slots of a stub backend whose device support this build does not contain
 * (hip, level_zero). The device of a CUDA-like driver is csrc/backends/gpu/.
 */
#ifndef TACK_GPU_DRIVER_H
#define TACK_GPU_DRIVER_H

#include "../runtime/internal.h"

/* A stub backend's driver: what its table's impl points at. */
typedef struct tack__driver_stub {
    const char *const *libraries; /* dlopen candidates, NULL-terminated */
    const char *what_to_install;  /* named when none of them loads */
} tack__driver_stub;

/*
 * The open slot of a GPU backend whose device support this build does not contain
 * yet: loads the driver named by self->impl (a tack__driver_stub) and then answers
 * TACK_ERR_DEVICE_UNAVAILABLE saying so, or names the missing library. The library
 * stays loaded: drivers are never unloaded while a process may use them.
 */
tack_status tack__stub_open(const tack_backend *self, int ordinal,
                            const tack_device_options *options, void **state);

/* The table slots every stub backend shares, for its initializer (all
 * but open: a backend may check its options before calling tack__stub_open). */
#define TACK__STUB_SLOTS                                                            \
    .close = NULL, .alloc = tack__stub_alloc, .free = tack__stub_free,              \
    .copy = tack__stub_copy, .fill = tack__stub_fill,                               \
    .memory_space = tack__stub_memory_space, .synchronize = tack__stub_synchronize, \
    .memory_domain = tack__stub_memory_domain

/*
 * Opens the first library of candidates (NULL-terminated) that dlopen finds.
 * Out: *handle only on success. TACK_ERR_DEVICE_UNAVAILABLE, naming the libraries that
 * were not found and what to install, when none loads.
 */
tack_status tack__driver_load(const char *backend, const char *const *candidates,
                              const char *what_to_install, void **handle);

/*
 * The answer of a backend whose driver loaded but whose device support this build
 * does not contain yet: a RuntimeError that says so, never a silent fallback.
 */
tack_status tack__driver_not_built(const char *backend);

/* Table slots of the stub backends (a driver this build has no device support for):
 * reached only after open succeeded, which tack__stub_open never does. */
tack_status tack__stub_alloc(void *state, size_t nbytes, bool exportable, void **ptr);
void tack__stub_free(void *state, void *ptr);
tack_status tack__stub_copy(void *state, void *dst, const void *src, size_t nbytes,
                            tack_copy_kind kind);
tack_status tack__stub_fill(void *state, void *dst, const void *pattern,
                            size_t pattern_nbytes, size_t count);
tack_status tack__stub_memory_space(void *state, const void *ptr,
                                    tack_memory_space *out);
tack_status tack__stub_synchronize(void *state);
uint64_t tack__stub_memory_domain(void *state, int ordinal);

#endif /* TACK_GPU_DRIVER_H */
