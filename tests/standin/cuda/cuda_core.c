/*
 * cuda_core.c: the CUDA layer's initialization, version, device, context and error-name
 * entry points, over the core's (tests/standin/core/standin_core.c), and the device's
 * attributes by CUDA's numbers.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_layer.h"

STANDIN_EXPORT void
tack_standin_cuda_teardown(void)
{
    (void)standin_enter("tack_standin_cuda_teardown");
    standin_teardown();
    (void)standin_leave(STANDIN_OK, "tack_standin_cuda_teardown", "%s", "");
}

STANDIN_EXPORT tcu_result
cuInit(unsigned int Flags)
{
    standin_rc rc = standin_enter_as("cuInit", STANDIN_ENTRY_INIT);
    if (rc == STANDIN_OK) {
        rc = Flags != 0 ? STANDIN_ERR_INVALID_VALUE : standin_init();
    }
    return standin_leave(rc, "cuInit", "%u", Flags);
}

STANDIN_EXPORT tcu_result
cuDriverGetVersion(int *driverVersion)
{
    standin_rc rc = standin_enter_as("cuDriverGetVersion", STANDIN_ENTRY_ANYTIME);
    if (rc == STANDIN_OK && !driverVersion) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *driverVersion = standin.driver_version;
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
    standin_rc rc = standin_enter("cuDeviceGetCount");
    if (rc == STANDIN_OK && !count) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *count = standin.ndevices;
    }
    return standin_leave(rc, "cuDeviceGetCount", "%s", "");
}

STANDIN_EXPORT tcu_result
cuDeviceGet(tcu_device *device, int ordinal)
{
    standin_rc rc = standin_enter("cuDeviceGet");
    if (rc == STANDIN_OK) {
        rc = device ? standin_device_check(ordinal) : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *device = ordinal;
    }
    return standin_leave(rc, "cuDeviceGet", "ordinal=%d", ordinal);
}

STANDIN_EXPORT tcu_result
cuDeviceGetName(char *name, int len, tcu_device dev)
{
    standin_rc rc = standin_enter("cuDeviceGetName");
    if (rc == STANDIN_OK) {
        rc = name && len > 0 ? standin_device_check(dev) : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        /* Truncated to len - 1 characters and terminated, as the driver does. */
        snprintf(name, (size_t)len, "Tack stand-in CUDA device %d", dev);
    }
    return standin_leave(rc, "cuDeviceGetName", "len=%d, dev=%d", len, dev);
}

/* The core's device facts by CUDA's attribute numbers. */
static const struct {
    tcu_device_attribute attrib;
    const int *value;
} attributes[] = {
#define F(name) &standin_device.name
    {TCU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, F(max_threads_per_block)},
    {TCU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, F(max_block_x)},
    {TCU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, F(max_block_y)},
    {TCU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, F(max_block_z)},
    {TCU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, F(max_grid_x)},
    {TCU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, F(max_grid_y)},
    {TCU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, F(max_grid_z)},
    {TCU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, F(max_shared_per_block)},
    {TCU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, F(constant_memory)},
    {TCU_DEVICE_ATTRIBUTE_WARP_SIZE, F(warp_size)},
    {TCU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, F(max_registers_per_block)},
    {TCU_DEVICE_ATTRIBUTE_CLOCK_RATE, F(clock_khz)},
    {TCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, F(multiprocessors)},
    {TCU_DEVICE_ATTRIBUTE_INTEGRATED, F(integrated)},
    {TCU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, F(can_map_host_memory)},
    {TCU_DEVICE_ATTRIBUTE_PCI_BUS_ID, F(pci_bus)}, /* plus the ordinal */
    {TCU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, F(pci_device)},
    {TCU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, F(l2_cache_bytes)},
    {TCU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, F(max_threads_per_sm)},
    {TCU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, F(async_engines)},
    {TCU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, F(unified_addressing)},
    {TCU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, F(pci_domain)},
    {TCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, F(arch_major)},
    {TCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, F(arch_minor)},
    {TCU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, F(managed_memory)},
    {TCU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, F(concurrent_managed_access)},
    {TCU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, F(max_shared_optin)},
    {TCU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, F(vmm)},
    {TCU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, F(fd_export)},
    {TCU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, F(memory_pools)},
#undef F
};

/* The attribute's value on dev; false for an attribute the stand-in does not model. */
static bool
attribute_value(tcu_device_attribute attrib, int dev, int *value)
{
    for (size_t k = 0; k < sizeof attributes / sizeof attributes[0]; k++) {
        if (attributes[k].attrib == attrib) {
            *value = *attributes[k].value +
                     (attrib == TCU_DEVICE_ATTRIBUTE_PCI_BUS_ID ? dev : 0);
            return true;
        }
    }
    return false;
}

STANDIN_EXPORT tcu_result
cuDeviceGetAttribute(int *pi, tcu_device_attribute attrib, tcu_device dev)
{
    standin_rc rc = standin_enter("cuDeviceGetAttribute");
    int value = 0;
    if (rc == STANDIN_OK && pi) {
        rc = standin_device_check(dev);
    }
    if (rc == STANDIN_OK && (!pi || !attribute_value(attrib, dev, &value))) {
        /* Stricter for an attribute the stand-in does not model: the driver knows many
         * more; asking for one is a gap to fill, never a silent 0. */
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *pi = value;
    }
    return standin_leave(rc, "cuDeviceGetAttribute", "attrib=%d, dev=%d", attrib, dev);
}

STANDIN_EXPORT tcu_result
cuDeviceGetUuid_v2(tcu_uuid *uuid, tcu_device dev)
{
    standin_rc rc = standin_enter("cuDeviceGetUuid");
    unsigned char bytes[16];
    if (rc == STANDIN_OK) {
        rc = uuid ? standin_device_uuid(dev, bytes) : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        memcpy(uuid->bytes, bytes, sizeof bytes);
    }
    return standin_leave(rc, "cuDeviceGetUuid", "dev=%d", dev);
}

STANDIN_EXPORT tcu_result
cuDeviceTotalMem_v2(size_t *bytes, tcu_device dev)
{
    standin_rc rc = standin_enter("cuDeviceTotalMem");
    if (rc == STANDIN_OK) {
        rc = bytes ? standin_device_check(dev) : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *bytes = standin_memory_total();
    }
    return standin_leave(rc, "cuDeviceTotalMem", "dev=%d", dev);
}

/* ---- primary contexts ------------------------------------------------------------ */

STANDIN_EXPORT tcu_result
cuDevicePrimaryCtxRetain(tcu_context *pctx, tcu_device dev)
{
    standin_rc rc = standin_enter("cuDevicePrimaryCtxRetain");
    struct standin_context *c = NULL;
    if (rc == STANDIN_OK) {
        rc = pctx ? standin_primary_retain(dev, &c) : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *pctx = cuda_context_handle(c);
    }
    return standin_leave(rc, "cuDevicePrimaryCtxRetain", "dev=%d", dev);
}

STANDIN_EXPORT tcu_result
cuDevicePrimaryCtxRelease_v2(tcu_device dev)
{
    standin_rc rc = standin_enter("cuDevicePrimaryCtxRelease");
    if (rc == STANDIN_OK) {
        rc = standin_primary_release(dev);
    }
    return standin_leave(rc, "cuDevicePrimaryCtxRelease", "dev=%d, retains=%d", dev,
                         rc == STANDIN_OK ? standin.primary_retains[dev] : -1);
}

STANDIN_EXPORT tcu_result
cuDevicePrimaryCtxGetState(tcu_device dev, unsigned int *flags, int *active)
{
    standin_rc rc = standin_enter("cuDevicePrimaryCtxGetState");
    bool is_active = false;
    if (rc == STANDIN_OK) {
        rc = flags && active ? standin_primary_active(dev, &is_active)
                             : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *flags = 0;
        *active = is_active;
    }
    return standin_leave(rc, "cuDevicePrimaryCtxGetState", "dev=%d", dev);
}

/* ---- contexts -------------------------------------------------------------------- */

STANDIN_EXPORT tcu_result
cuCtxCreate_v4(tcu_context *pctx, tcu_ctx_create_params *params, unsigned int flags,
               tcu_device dev)
{
    standin_rc rc = standin_enter("cuCtxCreate");
    struct standin_context *c = NULL;
    if (rc == STANDIN_OK) {
        /* Stricter: execution-affinity and CIG parameters are not modelled. */
        rc = pctx && !params && flags == 0 ? standin_context_create(dev, &c)
                                           : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *pctx = cuda_context_handle(c);
    }
    return standin_leave(rc, "cuCtxCreate", "dev=%d", dev);
}

STANDIN_EXPORT tcu_result
cuCtxDestroy_v2(tcu_context ctx)
{
    standin_rc rc = standin_enter("cuCtxDestroy");
    if (rc == STANDIN_OK) {
        rc = standin_context_destroy(ctx);
    }
    return standin_leave(rc, "cuCtxDestroy", "ctx=%p", (void *)ctx);
}

STANDIN_EXPORT tcu_result
cuCtxGetCurrent(tcu_context *pctx)
{
    standin_rc rc = standin_enter("cuCtxGetCurrent");
    if (rc == STANDIN_OK && !pctx) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *pctx = cuda_context_handle(standin_context_top());
    }
    return standin_leave(rc, "cuCtxGetCurrent", "%s", "");
}

STANDIN_EXPORT tcu_result
cuCtxSetCurrent(tcu_context ctx)
{
    standin_rc rc = standin_enter("cuCtxSetCurrent");
    if (rc == STANDIN_OK) {
        rc = standin_context_set(ctx);
    }
    return standin_leave(rc, "cuCtxSetCurrent", "ctx=%p", (void *)ctx);
}

STANDIN_EXPORT tcu_result
cuCtxPushCurrent_v2(tcu_context ctx)
{
    standin_rc rc = standin_enter("cuCtxPushCurrent");
    if (rc == STANDIN_OK) {
        rc = standin_context_push(ctx);
    }
    return standin_leave(rc, "cuCtxPushCurrent", "ctx=%p", (void *)ctx);
}

STANDIN_EXPORT tcu_result
cuCtxPopCurrent_v2(tcu_context *pctx)
{
    standin_rc rc = standin_enter("cuCtxPopCurrent");
    struct standin_context *c = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_context_pop(&c);
    }
    if (rc == STANDIN_OK && pctx) {
        *pctx = cuda_context_handle(c);
    }
    return standin_leave(rc, "cuCtxPopCurrent", "depth=%d", standin_context_depth());
}

STANDIN_EXPORT tcu_result
cuCtxGetDevice(tcu_device *device)
{
    standin_rc rc = standin_enter("cuCtxGetDevice");
    struct standin_context *ctx = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK && !device) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *device = ctx->device;
    }
    return standin_leave(rc, "cuCtxGetDevice", "%s", "");
}

STANDIN_EXPORT tcu_result
cuCtxSynchronize(void)
{
    standin_rc rc = standin_enter("cuCtxSynchronize");
    struct standin_context *ctx = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK) {
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
    standin_rc rc = standin_enter_as("cuGetErrorName", STANDIN_ENTRY_ANYTIME);
    if (rc == STANDIN_OK) {
        const char *name = result_name(error);
        if (!pStr) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
        else {
            *pStr = name;
            rc = name ? STANDIN_OK : STANDIN_ERR_INVALID_VALUE;
        }
    }
    return standin_leave(rc, "cuGetErrorName", "%d", error);
}

STANDIN_EXPORT tcu_result
cuGetErrorString(tcu_result error, const char **pStr)
{
    standin_rc rc = standin_enter_as("cuGetErrorString", STANDIN_ENTRY_ANYTIME);
    if (rc == STANDIN_OK) {
        const char *name = result_name(error);
        if (!pStr) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
        else {
            /* The stand-in's description is the name itself: messages built from it
             * say where they came from. */
            *pStr = name;
            rc = name ? STANDIN_OK : STANDIN_ERR_INVALID_VALUE;
        }
    }
    return standin_leave(rc, "cuGetErrorString", "%d", error);
}
