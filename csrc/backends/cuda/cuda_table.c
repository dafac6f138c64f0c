/*
 * cuda_table.c: the GPU layer's driver table (gpu_internal.h) over the CUDA driver's
 * entry points, the way CuPy maps cu* names to hip* once. Every CUDA number the GPU
 * layer would otherwise need is here: attribute ids, pointer attribute queries, the
 * VMM properties, stream and event flags, which result codes are sticky, the compute
 * capability as NVRTC spells it. Each entry
 * makes exactly the driver calls the backend always made, so a driver's call log
 * reads the same through the table.
 *
 * raw is written once, by tack__cuda_table_fill under the driver's load lock and
 * before the driver is published (cuda_driver.c); every entry reads it after that.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

static tack__cuda_api raw;

#define DPTR(p) ((tcu_deviceptr)(p))

static tack__gpu_class
classify(tack__gpu_result rc)
{
    if (rc == TCU_SUCCESS) {
        return TACK__GPU_OK;
    }
    if (rc == TCU_ERROR_OUT_OF_MEMORY) {
        return TACK__GPU_OOM;
    }
    if (rc == TCU_ERROR_DEINITIALIZED) {
        return TACK__GPU_SHUTDOWN;
    }
    if (rc == TCU_ERROR_UNSUPPORTED_PTX_VERSION) {
        return TACK__GPU_IMAGE_TOO_NEW;
    }
    return tcu_is_sticky(rc) ? TACK__GPU_STICKY : TACK__GPU_OTHER;
}

static const char *
error_name(tack__gpu_result rc)
{
    const char *name = "unknown error";
    if (raw.cuGetErrorName(rc, &name) != TCU_SUCCESS || !name) {
        name = "unknown error";
    }
    return name;
}

static const char *
error_text(tack__gpu_result rc)
{
    const char *text = "";
    if (raw.cuGetErrorString(rc, &text) != TCU_SUCCESS || !text) {
        text = "";
    }
    return text;
}

/* ---- devices and contexts ------------------------------------------------------- */

static tack__gpu_result
device_count(int *count)
{
    return raw.cuDeviceGetCount(count);
}

static tack__gpu_result
device_get(tack__gpu_device *device, int ordinal)
{
    return raw.cuDeviceGet(device, ordinal);
}

/* The properties of an exportable allocation on device: pinned device memory with
 * the POSIX file descriptor handle type. */
static void
vmm_prop(tack__gpu_device device, tcu_mem_allocation_prop *prop)
{
    memset(prop, 0, sizeof *prop);
    prop->type = TCU_MEM_ALLOCATION_TYPE_PINNED;
    prop->requestedHandleTypes = TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop->location.type = TCU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = device;
}

/* An attribute read as a flag: an attribute the driver does not answer is off. */
static bool
flag(tcu_device_attribute attr, tack__gpu_device device)
{
    int v = 0;
    return raw.cuDeviceGetAttribute(&v, attr, device) == TCU_SUCCESS && v != 0;
}

/* Fails only when the UUID cannot be read (names.device_info says so). */
static tack__gpu_result
device_info(tack__gpu_device device, tack__gpu_device_info *info)
{
    info->pools = flag(TCU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device);
    bool vmm = flag(TCU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device);
    bool fd =
        flag(TCU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, device);
    info->vmm = vmm && fd;
    tcu_uuid uuid;
    memset(&uuid, 0, sizeof uuid);
    tcu_result rc = raw.cuDeviceGetUuid(&uuid, device);
    if (rc != TCU_SUCCESS) {
        return rc;
    }
    memcpy(info->uuid, uuid.bytes, sizeof info->uuid);
    if (info->vmm) {
        tcu_mem_allocation_prop prop;
        vmm_prop(device, &prop);
        rc = raw.cuMemGetAllocationGranularity(&info->granularity, &prop,
                                               TCU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
        if (rc != TCU_SUCCESS || info->granularity == 0) {
            info->vmm = false;
        }
    }
    return TCU_SUCCESS;
}

static tack__gpu_result
device_attribute(int *value, tack__gpu_attribute which, tack__gpu_device device)
{
    static const tcu_device_attribute ids[] = {
        [TACK__GPU_ATTRIBUTE_MULTIPROCESSORS] =
            TCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        [TACK__GPU_ATTRIBUTE_THREADS_PER_MULTIPROCESSOR] =
            TCU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
    };
    return raw.cuDeviceGetAttribute(value, ids[which], device);
}

/* NVRTC's spelling of a binary for exactly the device: sm_XY for compute capability
 * X.Y, its two attributes read in that order (names.device_arch says the call). */
static tack__gpu_result
device_arch(tack__gpu_device device, char arch[TACK_RTC_ARCH_CAP])
{
    int major = 0, minor = 0;
    tcu_result rc = raw.cuDeviceGetAttribute(
        &major, TCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    if (rc == TCU_SUCCESS) {
        rc = raw.cuDeviceGetAttribute(
            &minor, TCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    }
    if (rc == TCU_SUCCESS) {
        snprintf(arch, TACK_RTC_ARCH_CAP, "sm_%d", major * 10 + minor);
    }
    return rc;
}

static tack__gpu_result
primary_context_retain(tack__gpu_context *ctx, tack__gpu_device device)
{
    tcu_context c = NULL;
    tcu_result rc = raw.cuDevicePrimaryCtxRetain(&c, device);
    *ctx = (tack__gpu_context)c;
    return rc;
}

static tack__gpu_result
primary_context_release(tack__gpu_device device)
{
    return raw.cuDevicePrimaryCtxRelease(device);
}

static tack__gpu_result
context_get_current(tack__gpu_context *ctx)
{
    tcu_context c = NULL;
    tcu_result rc = raw.cuCtxGetCurrent(&c);
    *ctx = (tack__gpu_context)c;
    return rc;
}

static tack__gpu_result
context_set_current(tack__gpu_context ctx)
{
    return raw.cuCtxSetCurrent((tcu_context)ctx);
}

static tack__gpu_result
context_push(tack__gpu_context ctx)
{
    return raw.cuCtxPushCurrent((tcu_context)ctx);
}

static tack__gpu_result
context_pop(tack__gpu_context *ctx)
{
    tcu_context c = NULL;
    tcu_result rc = raw.cuCtxPopCurrent(&c);
    *ctx = (tack__gpu_context)c;
    return rc;
}

static tack__gpu_result
context_get_device(tack__gpu_device *device)
{
    return raw.cuCtxGetDevice(device);
}

/* ---- streams and events --------------------------------------------------------- */

static tack__gpu_result
stream_create(tack__gpu_stream *stream)
{
    tcu_stream h = NULL;
    tcu_result rc = raw.cuStreamCreate(&h, TCU_STREAM_NON_BLOCKING);
    *stream = (tack__gpu_stream)h;
    return rc;
}

static tack__gpu_result
stream_destroy(tack__gpu_stream stream)
{
    return raw.cuStreamDestroy((tcu_stream)stream);
}

static tack__gpu_result
stream_synchronize(tack__gpu_stream stream)
{
    return raw.cuStreamSynchronize((tcu_stream)stream);
}

static tack__gpu_result
stream_wait_event(tack__gpu_stream stream, tack__gpu_event event)
{
    return raw.cuStreamWaitEvent((tcu_stream)stream, (tcu_event)event, 0);
}

static tack__gpu_result
event_create(tack__gpu_event *event)
{
    tcu_event h = NULL;
    tcu_result rc = raw.cuEventCreate(&h, TCU_EVENT_DISABLE_TIMING);
    *event = (tack__gpu_event)h;
    return rc;
}

static tack__gpu_result
event_destroy(tack__gpu_event event)
{
    return raw.cuEventDestroy((tcu_event)event);
}

static tack__gpu_result
event_record(tack__gpu_event event, tack__gpu_stream stream)
{
    return raw.cuEventRecord((tcu_event)event, (tcu_stream)stream);
}

/* ---- memory --------------------------------------------------------------------- */

static tack__gpu_result
mem_alloc(tack__gpu_ptr *ptr, size_t nbytes)
{
    tcu_deviceptr p = 0;
    tcu_result rc = raw.cuMemAlloc(&p, nbytes);
    *ptr = p;
    return rc;
}

static tack__gpu_result
mem_free(tack__gpu_ptr ptr)
{
    return raw.cuMemFree(DPTR(ptr));
}

static tack__gpu_result
mem_alloc_async(tack__gpu_ptr *ptr, size_t nbytes, tack__gpu_stream stream)
{
    tcu_deviceptr p = 0;
    tcu_result rc = raw.cuMemAllocAsync(&p, nbytes, (tcu_stream)stream);
    *ptr = p;
    return rc;
}

static tack__gpu_result
mem_free_async(tack__gpu_ptr ptr, tack__gpu_stream stream)
{
    return raw.cuMemFreeAsync(DPTR(ptr), (tcu_stream)stream);
}

static tack__gpu_result
copy_htod_async(tack__gpu_ptr dst, const void *src, size_t nbytes,
                tack__gpu_stream stream)
{
    return raw.cuMemcpyHtoDAsync(DPTR(dst), src, nbytes, (tcu_stream)stream);
}

static tack__gpu_result
copy_dtoh_async(void *dst, tack__gpu_ptr src, size_t nbytes, tack__gpu_stream stream)
{
    return raw.cuMemcpyDtoHAsync(dst, DPTR(src), nbytes, (tcu_stream)stream);
}

static tack__gpu_result
copy_dtod_async(tack__gpu_ptr dst, tack__gpu_ptr src, size_t nbytes,
                tack__gpu_stream stream)
{
    return raw.cuMemcpyDtoDAsync(DPTR(dst), DPTR(src), nbytes, (tcu_stream)stream);
}

static tack__gpu_result
copy_peer_async(tack__gpu_ptr dst, tack__gpu_context dst_ctx, tack__gpu_ptr src,
                tack__gpu_context src_ctx, size_t nbytes, tack__gpu_stream stream)
{
    return raw.cuMemcpyPeerAsync(DPTR(dst), (tcu_context)dst_ctx, DPTR(src),
                                 (tcu_context)src_ctx, nbytes, (tcu_stream)stream);
}

static tack__gpu_result
copy_2d_async(tack__gpu_ptr dst, size_t dst_pitch, tack__gpu_ptr src, size_t src_pitch,
              size_t width, size_t height, tack__gpu_stream stream)
{
    tcu_memcpy2d c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = TCU_MEMORYTYPE_DEVICE; /* managed memory is device memory too */
    c.srcDevice = DPTR(src);
    c.srcPitch = src_pitch;
    c.dstMemoryType = TCU_MEMORYTYPE_DEVICE;
    c.dstDevice = DPTR(dst);
    c.dstPitch = dst_pitch;
    c.WidthInBytes = width;
    c.Height = height;
    return raw.cuMemcpy2DAsync(&c, (tcu_stream)stream);
}

/* n words of word_size (1, 2 or 4) bytes. */
static tack__gpu_result
memset_async(tack__gpu_ptr dst, uint32_t word, size_t word_size, size_t n,
             tack__gpu_stream stream)
{
    tcu_stream h = (tcu_stream)stream;
    return word_size == 1 ? raw.cuMemsetD8Async(DPTR(dst), (unsigned char)word, n, h)
           : word_size == 2
               ? raw.cuMemsetD16Async(DPTR(dst), (unsigned short)word, n, h)
               : raw.cuMemsetD32Async(DPTR(dst), word, n, h);
}

/* One cuPointerGetAttributes call: unlike cuPointerGetAttribute, it succeeds for a
 * pointer CUDA does not know and reports zeroed attributes. */
static tack__gpu_result
pointer_info(tack__gpu_ptr ptr, tack__gpu_pointer_info *info)
{
    unsigned int type = 0;
    int ordinal = -1;
    unsigned int managed = 0;
    tcu_pointer_attribute attrs[] = {TCU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     TCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                     TCU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[] = {&type, &ordinal, &managed};
    tcu_result rc = raw.cuPointerGetAttributes(3, attrs, data, DPTR(ptr));
    if (rc != TCU_SUCCESS) {
        return rc;
    }
    info->ordinal = ordinal;
    info->kind = managed                         ? TACK__GPU_POINTER_MANAGED
                 : type == TCU_MEMORYTYPE_DEVICE ? TACK__GPU_POINTER_DEVICE
                 : type == TCU_MEMORYTYPE_HOST   ? TACK__GPU_POINTER_HOST
                                                 : TACK__GPU_POINTER_UNKNOWN;
    return TCU_SUCCESS;
}

/* ---- exportable memory ---------------------------------------------------------- */

static tack__gpu_result
vmm_create(tack__gpu_mem_handle *handle, size_t size, tack__gpu_device device)
{
    tcu_mem_allocation_prop prop;
    vmm_prop(device, &prop);
    tcu_mem_handle h = 0;
    tcu_result rc = raw.cuMemCreate(&h, size, &prop, 0);
    *handle = h;
    return rc;
}

static tack__gpu_result
vmm_release(tack__gpu_mem_handle handle)
{
    return raw.cuMemRelease(handle);
}

static tack__gpu_result
vmm_reserve(tack__gpu_ptr *ptr, size_t size, size_t alignment)
{
    tcu_deviceptr p = 0;
    tcu_result rc = raw.cuMemAddressReserve(&p, size, alignment, 0, 0);
    *ptr = p;
    return rc;
}

static tack__gpu_result
vmm_address_free(tack__gpu_ptr ptr, size_t size)
{
    return raw.cuMemAddressFree(DPTR(ptr), size);
}

static tack__gpu_result
vmm_map(tack__gpu_ptr ptr, size_t size, tack__gpu_mem_handle handle)
{
    return raw.cuMemMap(DPTR(ptr), size, 0, handle, 0);
}

static tack__gpu_result
vmm_unmap(tack__gpu_ptr ptr, size_t size)
{
    return raw.cuMemUnmap(DPTR(ptr), size);
}

/* Read-write access for device, the allocation's own. */
static tack__gpu_result
vmm_set_access(tack__gpu_ptr ptr, size_t size, tack__gpu_device device)
{
    tcu_mem_allocation_prop prop;
    vmm_prop(device, &prop);
    tcu_mem_access_desc access;
    memset(&access, 0, sizeof access);
    access.location = prop.location;
    access.flags = TCU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return raw.cuMemSetAccess(DPTR(ptr), size, &access, 1);
}

static tack__gpu_result
vmm_export_fd(int *fd, tack__gpu_mem_handle handle)
{
    return raw.cuMemExportToShareableHandle(
        fd, handle, TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
}

/* ---- modules and launches ------------------------------------------------------- */

static tack__gpu_result
module_load(tack__gpu_module *module, const void *image)
{
    tcu_module m = NULL;
    tcu_result rc = raw.cuModuleLoadData(&m, image);
    *module = (tack__gpu_module)m;
    return rc;
}

static tack__gpu_result
module_unload(tack__gpu_module module)
{
    return raw.cuModuleUnload((tcu_module)module);
}

static tack__gpu_result
module_get_function(tack__gpu_function *fn, tack__gpu_module module, const char *name)
{
    tcu_function f = NULL;
    tcu_result rc = raw.cuModuleGetFunction(&f, (tcu_module)module, name);
    *fn = (tack__gpu_function)f;
    return rc;
}

static tack__gpu_result
launch_kernel(tack__gpu_function fn, unsigned grid_x, unsigned grid_y, unsigned grid_z,
              unsigned block_x, unsigned block_y, unsigned block_z,
              unsigned shared_nbytes, tack__gpu_stream stream, void **params,
              void **extra)
{
    return raw.cuLaunchKernel((tcu_function)fn, grid_x, grid_y, grid_z, block_x,
                              block_y, block_z, shared_nbytes, (tcu_stream)stream,
                              params, extra);
}

static tack__gpu_result
occupancy_max_block_size(int *min_grid, int *block, tack__gpu_function fn,
                         size_t (*block_shared_nbytes)(int block), size_t shared_nbytes,
                         int limit)
{
    return raw.cuOccupancyMaxPotentialBlockSize(
        min_grid, block, (tcu_function)fn, block_shared_nbytes, shared_nbytes, limit);
}

/* ---- the table ------------------------------------------------------------------ */

/* The driver's name of each entry, as messages say it. device_info fails only in
 * cuDeviceGetUuid; memset_async is one of cuMemsetD8/D16/D32Async. */
static const tack__gpu_names names = {
    .device_count = "cuDeviceGetCount",
    .device_get = "cuDeviceGet",
    .device_info = "cuDeviceGetUuid",
    .device_attribute = "cuDeviceGetAttribute",
    .device_arch = "cuDeviceGetAttribute",
    .primary_context_retain = "cuDevicePrimaryCtxRetain",
    .primary_context_release = "cuDevicePrimaryCtxRelease",
    .context_get_current = "cuCtxGetCurrent",
    .context_set_current = "cuCtxSetCurrent",
    .context_push = "cuCtxPushCurrent",
    .context_pop = "cuCtxPopCurrent",
    .context_get_device = "cuCtxGetDevice",
    .stream_create = "cuStreamCreate",
    .stream_destroy = "cuStreamDestroy",
    .stream_synchronize = "cuStreamSynchronize",
    .stream_wait_event = "cuStreamWaitEvent",
    .event_create = "cuEventCreate",
    .event_destroy = "cuEventDestroy",
    .event_record = "cuEventRecord",
    .mem_alloc = "cuMemAlloc",
    .mem_free = "cuMemFree",
    .mem_alloc_async = "cuMemAllocAsync",
    .mem_free_async = "cuMemFreeAsync",
    .copy_htod_async = "cuMemcpyHtoDAsync",
    .copy_dtoh_async = "cuMemcpyDtoHAsync",
    .copy_dtod_async = "cuMemcpyDtoDAsync",
    .copy_peer_async = "cuMemcpyPeerAsync",
    .copy_2d_async = "cuMemcpy2DAsync",
    .memset_async = "cuMemsetAsync",
    .pointer_info = "cuPointerGetAttributes",
    .vmm_create = "cuMemCreate",
    .vmm_release = "cuMemRelease",
    .vmm_reserve = "cuMemAddressReserve",
    .vmm_address_free = "cuMemAddressFree",
    .vmm_map = "cuMemMap",
    .vmm_unmap = "cuMemUnmap",
    .vmm_set_access = "cuMemSetAccess",
    .vmm_export_fd = "cuMemExportToShareableHandle",
    .module_load = "cuModuleLoadData",
    .module_unload = "cuModuleUnload",
    .module_get_function = "cuModuleGetFunction",
    .launch_kernel = "cuLaunchKernel",
    .occupancy_max_block_size = "cuOccupancyMaxPotentialBlockSize",
};

void
tack__cuda_table_fill(const tack__cuda_api *resolved, tack__gpu_driver *d)
{
    raw = *resolved;
    tack__gpu_api api = {.classify = classify,
                         .error_name = error_name,
                         .error_text = error_text,
#define TACK__CUDA_ENTRY(name, params) .name = (name),
                         TACK__GPU_CALLS(TACK__CUDA_ENTRY)
#undef TACK__CUDA_ENTRY
    };
    if (!raw.cuOccupancyMaxPotentialBlockSize) {
        api.occupancy_max_block_size = NULL; /* optional: a fixed block size */
    }
    d->api = api;
    d->names = &names;
    d->vendor = &tack__cuda_vendor;
    d->backend = "cuda";
    d->streams.legacy = TCU_STREAM_LEGACY_HANDLE;
    d->streams.per_thread = TCU_STREAM_PER_THREAD_HANDLE;
    d->streams.remedy =
        "pass 1 (the legacy default stream), 2 (the per-thread "
        "default stream) or another library's cudaStream_t as an int";
}
