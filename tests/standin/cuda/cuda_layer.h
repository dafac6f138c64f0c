/*
 * cuda_layer.h: the CUDA layer of the stand-in driver, the exported cu* entry points of
 * libtack_standin_cuda.so over the name-neutral core (tests/standin/core/standin.h).
 *
 * Each entry point is the same few steps: enter the core's protocol (lock, injected
 * fault, initialization), resolve the current context and the handles it was given,
 * turn CUDA's flags, attributes and special handle values into the core's terms, call
 * one core operation, write the out-parameters, and leave (the call log line). What the
 * stand-in models lives in the core; what is CUDA's spelling of it lives here.
 */
#ifndef TACK_STANDIN_CUDA_LAYER_H
#define TACK_STANDIN_CUDA_LAYER_H

#include "standin_layer.h"
#include "../core/standin.h"

/* The exported entry points carry cuda.h's names; everything else is hidden. */
#define STANDIN_EXPORT __attribute__((visibility("default")))

/* Every entry point the stand-in exports, declared from cuda_abi.h's list, so the
 * compiler checks each definition against the ABI Tack pins. */
#define STANDIN_DECLARE(name, symbol, version) STANDIN_EXPORT tcu_fn_##name symbol;
TCU_ENTRY_POINTS(STANDIN_DECLARE)
TCU_TEST_ENTRY_POINTS(STANDIN_DECLARE)
#undef STANDIN_DECLARE
STANDIN_EXPORT int tack_standin_cuda_register_twin(const char *entry,
                                                   tack_standin_twin_fn fn, void *user);
STANDIN_EXPORT int tack_standin_cuda_module_source(struct CUmod_st *module,
                                                   const char *cuda_source);
/* Tears the driver down now, as it is at process exit (docs/cuda.md): every later
 * call returns CUDA_ERROR_DEINITIALIZED. A test hook: not part of the CUDA API. */
STANDIN_EXPORT void tack_standin_cuda_teardown(void);

/* The core's objects are CUDA's handles: a handle is the object's address. */
static inline tcu_context
cuda_context_handle(struct standin_context *c)
{
    return (tcu_context)(void *)c;
}

/* A stream handle as the caller passed it (NULL, CU_STREAM_LEGACY,
 * CU_STREAM_PER_THREAD, or a stream) resolved in ctx (cuda_stream.c). */
standin_rc cuda_stream(struct standin_context *ctx, tcu_stream handle,
                       struct standin_queue **out);
/* The current context and, in it, the stream handle. */
standin_rc cuda_current_stream(tcu_stream handle, struct standin_context **ctx,
                               struct standin_queue **out);

/* The two image formats cuModuleLoadData takes (a module's `format`). */
enum { CUDA_IMAGE_PTX = 1, CUDA_IMAGE_CUBIN = 2 };
/* Checks an image cuModuleLoadData was given (cuda_image.c). Out: its size in bytes
 * (PTX: with its terminating NUL) and its format. */
standin_rc cuda_image_check(const unsigned char *img, size_t *nbytes, int *format);
/* Reads the parameter layout of f's entry from m's image; NOT_FOUND without one. */
standin_rc cuda_image_params(const struct standin_module *m,
                             struct standin_function *f);

#endif /* TACK_STANDIN_CUDA_LAYER_H */
