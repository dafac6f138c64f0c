/*
 * gpu_driver.h: what the GPU backends share: loading a driver library with dlopen.
 */
#ifndef TACK_GPU_DRIVER_H
#define TACK_GPU_DRIVER_H

#include "../runtime/internal.h"

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

/* Table slots shared by the GPU backends of this build: they are reached only after
 * open succeeded, which it does not yet on any GPU backend. */
tack_status tack__gpu_alloc(void *state, size_t nbytes, bool exportable, void **ptr);
void tack__gpu_free(void *state, void *ptr);
tack_status tack__gpu_copy(void *state, void *dst, const void *src, size_t nbytes,
                           tack_copy_kind kind);
tack_status tack__gpu_fill(void *state, void *dst, const void *pattern,
                           size_t pattern_nbytes, size_t count);
tack_status tack__gpu_memory_space(void *state, const void *ptr,
                                   tack_memory_space *out);
tack_status tack__gpu_synchronize(void *state);
uint64_t tack__gpu_memory_domain(void *state, int ordinal);

#endif /* TACK_GPU_DRIVER_H */
