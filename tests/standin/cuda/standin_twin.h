/*
 * standin_twin.h: how a launch on the stand-in CUDA driver computes anything.
 *
 * The stand-in cannot run GPU code. A kernel becomes runnable on it when a "CPU twin"
 * is registered for its entry name: a C function built from the same kernel IR as the
 * CUDA source (by the CPU code generator), taking the same by-value parameter bytes.
 * When a queued launch of that entry reaches a synchronization point, the stand-in
 * calls the twin once with the launch geometry and the parameter bytes as
 * cuLaunchKernel received them; the twin runs the grid-stride loop over gridDim *
 * blockDim threads itself and turns every device address it meets into host memory with
 * `translate`.
 *
 * A launch of a function with no twin is validated, logged, and refused with
 * CUDA_ERROR_NOT_SUPPORTED (801), queueing nothing: silently succeeding would leave the
 * output at the stand-in's 0xA5 fill and pass for a wrong answer.
 *
 * These functions are exported by libtack_standin_cuda.so; resolve them with dlsym on
 * the handle that opened the stand-in (they are not part of the CUDA API).
 */
#ifndef TACK_STANDIN_TWIN_H
#define TACK_STANDIN_TWIN_H

/* The launch's layout and the twin's signature, as Tack's side declares them. */
#include "../../../csrc/backends/gpu/gpu_twin.h"

/*
 * Registers fn as the twin of the kernel entry `entry` (copied). A later registration
 * of the same entry replaces the earlier one. Returns 0, or -1 when out of memory.
 */
int tack_standin_cuda_register_twin(const char *entry, tack_standin_twin_fn fn,
                                    void *user);

/*
 * Gives the stand-in the CUDA C++ source that `module` (a CUmodule of the current
 * context, from cuModuleLoadData) was compiled from (copied). Under
 * TACK_STANDIN_EXEC=emulate the stand-in ignores twins and runs that source instead,
 * compiled for the host after cuda_emulation.hpp (standin_emulate.c); a launch of a
 * module without source is then refused with CUDA_ERROR_NOT_SUPPORTED. Returns a
 * CUresult: 0, CUDA_ERROR_INVALID_HANDLE for an unknown or unloaded module,
 * CUDA_ERROR_INVALID_VALUE for a NULL source.
 */
struct CUmod_st;
int tack_standin_cuda_module_source(struct CUmod_st *module, const char *cuda_source);

#endif /* TACK_STANDIN_TWIN_H */
