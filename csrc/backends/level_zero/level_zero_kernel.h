/*
 * level_zero_kernel.h: what the level_zero backend's kernel files share
 * (level_zero_kernel.c: the build and each context's module;
 * level_zero_kernel_launch.c: a launch). The kernel itself is the GPU layer's
 * (gpu_kernel.h), its image the SPIR-V module.
 */
#ifndef TACK_LEVEL_ZERO_KERNEL_H
#define TACK_LEVEL_ZERO_KERNEL_H

#include "../gpu/gpu_kernel.h"
#include "level_zero_internal.h"

/* Level Zero handles are stored in the GPU layer's untyped slots (a pointer each);
 * copied with this size, which every handle type has. */
#define TACK__ZE_HANDLE_NBYTES sizeof(void *)
_Static_assert(sizeof(tze_kernel) == sizeof(void *) &&
                   sizeof(tze_module) == sizeof(void *) &&
                   sizeof(tze_context) == sizeof(void *),
               "a Level Zero handle is one pointer");

/* Work groups a parallel launch spreads over when the trips are unknown or many: its
 * loop is grid-stride, so any count is correct. */
#define TACK__ZE_FILL_GROUPS 64u

/* The backend table's kernel slots. */
tack_status tack__ze_kernel_build(const tack_backend *self, const char *name,
                                  const char *filename, const tack_kernel_request *req,
                                  tack_kernel **out, char **log);
tack_status tack__ze_kernel_launch(void *state, tack_kernel *kernel, const void *params,
                                   size_t params_nbytes, unsigned flags,
                                   tack_kernel_value *result);

/* The stand-in driver's twin registry, over every stand-in the loader loaded; NULL on
 * a real driver. Found once per process. */
tack_standin_register_twin_fn tack__ze_twin_registry(void);

/* TACK_OK when s's device can run k's module: one that declares the Float64
 * capability needs ZE_DEVICE_MODULE_FLAG_FP64, else TACK_ERR_UNSUPPORTED saying how to
 * write the kernel in float32. */
tack_status tack__ze_kernel_fits(const tack__gpu_kernel *k, const tack__ze_state *s);

/* The module of k on s's context and device, made at its first launch there, with
 * its entry points and their group sizes. Out: *out (Borrowed: lives as long as k)
 * only on success. */
tack_status tack__ze_module_of(tack__gpu_kernel *k, const tack__ze_state *s,
                               const tack__gpu_context_module **out);

/* level_zero_memory.c's list discipline, for the launch (call with s->lock held):
 * flush executes what is appended (and with wait synchronizes the queue); writable
 * waits for an executed list; appended counts a command (rc its call's result) and
 * appends the barrier that orders it before the next. */
tack_status tack__ze_flush_locked(tack__ze_state *s, bool wait);
tack_status tack__ze_writable_locked(tack__ze_state *s);
tack_status tack__ze_appended_locked(tack__ze_state *s, tze_result rc,
                                     const char *call);

#endif /* TACK_LEVEL_ZERO_KERNEL_H */
