/*
 * cuda_module.c: the CUDA layer's module, function, launch and occupancy entry points,
 * and the stand-in's own twin and module-source hooks (standin_twin.h), over the core's
 * (tests/standin/core/standin_launch.c). Images are checked and read by cuda_image.c.
 */
#include <string.h>

#include "cuda_layer.h"

STANDIN_EXPORT int
tack_standin_cuda_register_twin(const char *entry, tack_standin_twin_fn fn, void *user)
{
    return standin_twin_register(entry, fn, user);
}

STANDIN_EXPORT tcu_result
cuModuleLoadData(tcu_module *module, const void *image)
{
    standin_rc rc = standin_enter("cuModuleLoadData");
    struct standin_context *ctx = NULL;
    struct standin_module *m = NULL;
    size_t n = 0;
    int format = 0;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK) {
        rc = module && image ? cuda_image_check(image, &n, &format)
                             : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        rc = standin_module_add(ctx, image, n, format, &m);
    }
    if (rc == STANDIN_OK) {
        *module = (tcu_module)(void *)m;
    }
    return standin_leave(rc, "cuModuleLoadData", "kind=%s, bytes=%zu, module=%p",
                         m ? (m->format == CUDA_IMAGE_CUBIN ? "cubin" : "ptx") : "-",
                         m ? m->image_nbytes : 0, (void *)m);
}

STANDIN_EXPORT tcu_result
cuModuleUnload(tcu_module hmod)
{
    standin_rc rc = standin_enter("cuModuleUnload");
    struct standin_context *ctx = NULL;
    struct standin_module *m = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK && !(m = standin_module_find(hmod, ctx))) {
        rc = STANDIN_ERR_INVALID_HANDLE;
    }
    if (rc == STANDIN_OK) {
        standin_module_unload(m);
    }
    return standin_leave(rc, "cuModuleUnload", "module=%p", (void *)hmod);
}

/* The stand-in's own entry point (standin_twin.h): the CUDA source the module was
 * built from, for emulated launches. A later call replaces it. */
STANDIN_EXPORT int
tack_standin_cuda_module_source(struct CUmod_st *module, const char *cuda_source)
{
    standin_rc rc = standin_enter("tack_standin_cuda_module_source");
    struct standin_context *ctx = NULL;
    struct standin_module *m = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK && !cuda_source) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK && !(m = standin_module_find(module, ctx))) {
        rc = STANDIN_ERR_INVALID_HANDLE;
    }
    if (rc == STANDIN_OK) {
        rc = standin_module_set_source(m, cuda_source);
    }
    return standin_leave(rc, "tack_standin_cuda_module_source", "module=%p, bytes=%zu",
                         (void *)module, rc == STANDIN_OK ? strlen(m->source) : 0);
}

STANDIN_EXPORT tcu_result
cuModuleGetFunction(tcu_function *hfunc, tcu_module hmod, const char *name)
{
    standin_rc rc = standin_enter("cuModuleGetFunction");
    struct standin_context *ctx = NULL;
    struct standin_module *m = NULL;
    struct standin_function *f = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK && (!hfunc || !name)) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK && !(m = standin_module_find(hmod, ctx))) {
        rc = STANDIN_ERR_INVALID_HANDLE;
    }
    if (rc == STANDIN_OK && !(f = standin_function_new(m, name))) {
        rc = STANDIN_ERR_OUT_OF_MEMORY;
    }
    if (rc == STANDIN_OK) {
        rc = cuda_image_params(m, f);
    }
    if (rc == STANDIN_OK) {
        standin_function_publish(f);
        *hfunc = (tcu_function)(void *)f;
    }
    else {
        standin_function_discard(f);
    }
    return standin_leave(rc, "cuModuleGetFunction", "name=%s, params=%u, bytes=%zu",
                         name ? name : "(null)", rc == STANDIN_OK ? f->nparams : 0,
                         rc == STANDIN_OK ? f->params_nbytes : 0);
}

/* The parameter buffer cuLaunchKernel's `extra` names (CU_LAUNCH_PARAM_* pairs up to
 * CU_LAUNCH_PARAM_END): INVALID_VALUE for another key or no buffer. */
static standin_rc
extra_buffer(void **extra, const void **from, size_t *size)
{
    *from = NULL;
    *size = (size_t)-1;
    for (size_t k = 0; (uintptr_t)extra[k] != TCU_LAUNCH_PARAM_END_HANDLE; k += 2) {
        uintptr_t key = (uintptr_t)extra[k];
        if (key == TCU_LAUNCH_PARAM_BUFFER_POINTER_HANDLE) {
            *from = extra[k + 1];
        }
        else if (key == TCU_LAUNCH_PARAM_BUFFER_SIZE_HANDLE && extra[k + 1]) {
            memcpy(size, extra[k + 1], sizeof *size);
        }
        else {
            return STANDIN_ERR_INVALID_VALUE;
        }
    }
    return *from ? STANDIN_OK : STANDIN_ERR_INVALID_VALUE;
}

/* Packs the parameters as the kernel sees them, from either form cuLaunchKernel takes.
 */
static standin_rc
pack_params(const struct standin_function *f, void **kernelParams, void **extra,
            unsigned char **out)
{
    const void *from = NULL;
    size_t size = 0;
    if (kernelParams && extra) {
        return STANDIN_ERR_INVALID_VALUE; /* one form or the other */
    }
    standin_rc rc = extra ? extra_buffer(extra, &from, &size) : STANDIN_OK;
    return rc == STANDIN_OK ? standin_params_pack(f, kernelParams, from, size, out)
                            : rc;
}

STANDIN_EXPORT tcu_result
cuLaunchKernel(tcu_function f, unsigned int gridDimX, unsigned int gridDimY,
               unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
               unsigned int blockDimZ, unsigned int sharedMemBytes, tcu_stream hStream,
               void **kernelParams, void **extra)
{
    standin_rc rc = standin_enter("cuLaunchKernel");
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    struct standin_function *fn = NULL;
    unsigned char *params = NULL;
    const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
    const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
    char hex[100] = "";
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK && !(fn = standin_function_find(f))) {
        rc = STANDIN_ERR_INVALID_HANDLE;
    }
    if (rc == STANDIN_OK) {
        rc = cuda_stream(ctx, hStream, &s);
    }
    if (rc == STANDIN_OK) {
        rc = standin_launch_check(ctx, fn, grid, block, sharedMemBytes);
    }
    if (rc == STANDIN_OK) {
        rc = pack_params(fn, kernelParams, extra, &params);
    }
    if (rc == STANDIN_OK) {
        standin_params_hex(params, fn->params_nbytes, hex, sizeof hex);
        rc = standin_launch_queue(ctx, s, fn, grid, block, sharedMemBytes, params);
    }
    return standin_leave(rc, "cuLaunchKernel",
                         "fn=%s, grid=%ux%ux%u, block=%ux%ux%u, shared=%u, stream=%p, "
                         "params=%zu bytes %s",
                         fn ? fn->name : "?", gridDimX, gridDimY, gridDimZ, blockDimX,
                         blockDimY, blockDimZ, sharedMemBytes, (void *)hStream,
                         fn ? fn->params_nbytes : 0, hex);
}

STANDIN_EXPORT tcu_result
cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, tcu_function func,
                                 tcu_occupancy_b2d_size blockSizeToDynamicSMemSize,
                                 size_t dynamicSMemSize, int blockSizeLimit)
{
    standin_rc rc = standin_enter("cuOccupancyMaxPotentialBlockSize");
    struct standin_context *ctx = NULL;
    int block = 0, grid = 0;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    const struct standin_function *f =
        rc == STANDIN_OK ? standin_function_find(func) : NULL;
    if (rc == STANDIN_OK && (!minGridSize || !blockSize || blockSizeLimit < 0)) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    else if (rc == STANDIN_OK && (!f || f->mod->ctx != ctx)) {
        rc = STANDIN_ERR_INVALID_HANDLE;
    }
    if (rc == STANDIN_OK) {
        rc = standin_occupancy(blockSizeLimit, blockSizeToDynamicSMemSize,
                               dynamicSMemSize, &block, &grid);
    }
    if (rc == STANDIN_OK) {
        *blockSize = block;
        *minGridSize = grid;
    }
    return standin_leave(rc, "cuOccupancyMaxPotentialBlockSize",
                         "fn=%s, limit=%d, block=%d, grid=%d", f ? f->name : "?",
                         blockSizeLimit, block, grid);
}
