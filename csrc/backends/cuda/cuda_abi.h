/*
 * cuda_abi.h: Tack's own declarations of the part of the CUDA driver API that the
 * CUDA backend and the strict stand-in driver (tests/standin/cuda) use.
 *
 * Tack builds with no CUDA SDK, so this header never includes cuda.h. Every fact here
 * is written once, in the lists below, and tests/c/test_cuda_abi.c (built where a CUDA
 * toolkit is found) includes the toolkit's cuda.h and cudaTypedefs.h and checks at
 * compile time that each constant, struct size, field offset and function type matches
 * the ABI of CUDA 13.0 at the version pinned here.
 *
 * Naming: CUDA's constants keep their names with a TCU_ prefix in place of CUDA_ or CU_
 * (CUDA_ERROR_INVALID_VALUE is TCU_ERROR_INVALID_VALUE, CU_STREAM_NON_BLOCKING is
 * TCU_STREAM_NON_BLOCKING); types are tcu_<what>; struct fields keep CUDA's spelling so
 * the driver's documentation reads across unchanged. Handle types use CUDA's struct
 * tags (struct CUctx_st and so on), so they are the very same types when cuda.h is
 * present.
 */
#ifndef TACK_CUDA_ABI_H
#define TACK_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ---- result codes (the subset Tack maps or the stand-in returns) ---------------- */

#define TCU_RESULT_LIST(X)                       \
    X(SUCCESS, 0)                                \
    X(ERROR_INVALID_VALUE, 1)                    \
    X(ERROR_OUT_OF_MEMORY, 2)                    \
    X(ERROR_NOT_INITIALIZED, 3)                  \
    X(ERROR_DEINITIALIZED, 4)                    \
    X(ERROR_STUB_LIBRARY, 34)                    \
    X(ERROR_NO_DEVICE, 100)                      \
    X(ERROR_INVALID_DEVICE, 101)                 \
    X(ERROR_INVALID_IMAGE, 200)                  \
    X(ERROR_INVALID_CONTEXT, 201)                \
    X(ERROR_ALREADY_MAPPED, 208)                 \
    X(ERROR_NO_BINARY_FOR_GPU, 209)              \
    X(ERROR_NOT_MAPPED, 211)                     \
    X(ERROR_INVALID_PTX, 218)                    \
    X(ERROR_UNSUPPORTED_PTX_VERSION, 222)        \
    X(ERROR_CONTAINED, 226)                      \
    X(ERROR_OPERATING_SYSTEM, 304)               \
    X(ERROR_INVALID_HANDLE, 400)                 \
    X(ERROR_ILLEGAL_STATE, 401)                  \
    X(ERROR_NOT_FOUND, 500)                      \
    X(ERROR_NOT_READY, 600)                      \
    X(ERROR_ILLEGAL_ADDRESS, 700)                \
    X(ERROR_LAUNCH_OUT_OF_RESOURCES, 701)        \
    X(ERROR_LAUNCH_TIMEOUT, 702)                 \
    X(ERROR_PRIMARY_CONTEXT_ACTIVE, 708)         \
    X(ERROR_CONTEXT_IS_DESTROYED, 709)           \
    X(ERROR_ASSERT, 710)                         \
    X(ERROR_HOST_MEMORY_ALREADY_REGISTERED, 712) \
    X(ERROR_HOST_MEMORY_NOT_REGISTERED, 713)     \
    X(ERROR_HARDWARE_STACK_ERROR, 714)           \
    X(ERROR_ILLEGAL_INSTRUCTION, 715)            \
    X(ERROR_MISALIGNED_ADDRESS, 716)             \
    X(ERROR_INVALID_ADDRESS_SPACE, 717)          \
    X(ERROR_INVALID_PC, 718)                     \
    X(ERROR_LAUNCH_FAILED, 719)                  \
    X(ERROR_NOT_PERMITTED, 800)                  \
    X(ERROR_NOT_SUPPORTED, 801)                  \
    X(ERROR_UNKNOWN, 999)

/* The sticky errors: cuda.h documents each as leaving the process "in an inconsistent
 * state": every later call on the context returns it, and only a new process can use
 * the device again. */
#define TCU_STICKY_RESULT_LIST(X)  \
    X(ERROR_CONTAINED)             \
    X(ERROR_ILLEGAL_ADDRESS)       \
    X(ERROR_LAUNCH_TIMEOUT)        \
    X(ERROR_ASSERT)                \
    X(ERROR_HARDWARE_STACK_ERROR)  \
    X(ERROR_ILLEGAL_INSTRUCTION)   \
    X(ERROR_MISALIGNED_ADDRESS)    \
    X(ERROR_INVALID_ADDRESS_SPACE) \
    X(ERROR_INVALID_PC)            \
    X(ERROR_LAUNCH_FAILED)

/* ---- device attributes --------------------------------------------------------- */

#define TCU_DEVICE_ATTRIBUTE_LIST(X)                    \
    X(MAX_THREADS_PER_BLOCK, 1)                         \
    X(MAX_BLOCK_DIM_X, 2)                               \
    X(MAX_BLOCK_DIM_Y, 3)                               \
    X(MAX_BLOCK_DIM_Z, 4)                               \
    X(MAX_GRID_DIM_X, 5)                                \
    X(MAX_GRID_DIM_Y, 6)                                \
    X(MAX_GRID_DIM_Z, 7)                                \
    X(MAX_SHARED_MEMORY_PER_BLOCK, 8)                   \
    X(TOTAL_CONSTANT_MEMORY, 9)                         \
    X(WARP_SIZE, 10)                                    \
    X(MAX_REGISTERS_PER_BLOCK, 12)                      \
    X(CLOCK_RATE, 13)                                   \
    X(MULTIPROCESSOR_COUNT, 16)                         \
    X(INTEGRATED, 18)                                   \
    X(CAN_MAP_HOST_MEMORY, 19)                          \
    X(PCI_BUS_ID, 33)                                   \
    X(PCI_DEVICE_ID, 34)                                \
    X(L2_CACHE_SIZE, 38)                                \
    X(MAX_THREADS_PER_MULTIPROCESSOR, 39)               \
    X(ASYNC_ENGINE_COUNT, 40)                           \
    X(UNIFIED_ADDRESSING, 41)                           \
    X(PCI_DOMAIN_ID, 50)                                \
    X(COMPUTE_CAPABILITY_MAJOR, 75)                     \
    X(COMPUTE_CAPABILITY_MINOR, 76)                     \
    X(MANAGED_MEMORY, 83)                               \
    X(CONCURRENT_MANAGED_ACCESS, 89)                    \
    X(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97)            \
    X(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 102)         \
    X(HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 103) \
    X(MEMORY_POOLS_SUPPORTED, 115)

/* ---- other constants (CU_<name> in cuda.h) --------------------------------------- */

#define TCU_CONSTANT_LIST(X)                         \
    X(CTX_SCHED_AUTO, 0)                             \
    X(STREAM_DEFAULT, 0)                             \
    X(STREAM_NON_BLOCKING, 1)                        \
    X(EVENT_DEFAULT, 0)                              \
    X(EVENT_BLOCKING_SYNC, 1)                        \
    X(EVENT_DISABLE_TIMING, 2)                       \
    X(EVENT_INTERPROCESS, 4)                         \
    X(MEMORYTYPE_HOST, 1)                            \
    X(MEMORYTYPE_DEVICE, 2)                          \
    X(MEMORYTYPE_ARRAY, 3)                           \
    X(MEMORYTYPE_UNIFIED, 4)                         \
    X(POINTER_ATTRIBUTE_CONTEXT, 1)                  \
    X(POINTER_ATTRIBUTE_MEMORY_TYPE, 2)              \
    X(POINTER_ATTRIBUTE_DEVICE_POINTER, 3)           \
    X(POINTER_ATTRIBUTE_HOST_POINTER, 4)             \
    X(POINTER_ATTRIBUTE_BUFFER_ID, 7)                \
    X(POINTER_ATTRIBUTE_IS_MANAGED, 8)               \
    X(POINTER_ATTRIBUTE_DEVICE_ORDINAL, 9)           \
    X(POINTER_ATTRIBUTE_RANGE_START_ADDR, 11)        \
    X(POINTER_ATTRIBUTE_RANGE_SIZE, 12)              \
    X(POINTER_ATTRIBUTE_MAPPED, 13)                  \
    X(POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, 14)    \
    X(MEM_HANDLE_TYPE_NONE, 0)                       \
    X(MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1)      \
    X(MEM_ACCESS_FLAGS_PROT_NONE, 0)                 \
    X(MEM_ACCESS_FLAGS_PROT_READ, 1)                 \
    X(MEM_ACCESS_FLAGS_PROT_READWRITE, 3)            \
    X(MEM_LOCATION_TYPE_INVALID, 0)                  \
    X(MEM_LOCATION_TYPE_DEVICE, 1)                   \
    X(MEM_ALLOCATION_TYPE_INVALID, 0)                \
    X(MEM_ALLOCATION_TYPE_PINNED, 1)                 \
    X(MEM_ALLOC_GRANULARITY_MINIMUM, 0)              \
    X(MEM_ALLOC_GRANULARITY_RECOMMENDED, 1)          \
    X(GET_PROC_ADDRESS_DEFAULT, 0)                   \
    X(GET_PROC_ADDRESS_LEGACY_STREAM, 1)             \
    X(GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, 2) \
    X(GET_PROC_ADDRESS_SUCCESS, 0)                   \
    X(GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, 1)          \
    X(GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, 2)    \
    X(MEM_ATTACH_GLOBAL, 1)                          \
    X(MEM_ATTACH_HOST, 2)                            \
    X(MEMHOSTALLOC_PORTABLE, 1)                      \
    X(MEMHOSTALLOC_DEVICEMAP, 2)                     \
    X(MEMHOSTALLOC_WRITECOMBINED, 4)                 \
    X(MEMHOSTREGISTER_PORTABLE, 1)                   \
    X(MEMHOSTREGISTER_DEVICEMAP, 2)                  \
    X(MEMHOSTREGISTER_IOMEMORY, 4)                   \
    X(MEMHOSTREGISTER_READ_ONLY, 8)

enum {
#define TCU_X_(name, value) TCU_##name = value,
    TCU_RESULT_LIST(TCU_X_) TCU_CONSTANT_LIST(TCU_X_)
#undef TCU_X_
#define TCU_X_(name, value) TCU_DEVICE_ATTRIBUTE_##name = value,
        TCU_DEVICE_ATTRIBUTE_LIST(TCU_X_)
#undef TCU_X_
};

/* The special stream handles (cuda.h defines them as casts of these integers) and the
 * keys of cuLaunchKernel's `extra` array. */
#define TCU_STREAM_LEGACY_HANDLE ((uintptr_t)0x1)
#define TCU_STREAM_PER_THREAD_HANDLE ((uintptr_t)0x2)
#define TCU_LAUNCH_PARAM_END_HANDLE ((uintptr_t)0x0)
#define TCU_LAUNCH_PARAM_BUFFER_POINTER_HANDLE ((uintptr_t)0x1)
#define TCU_LAUNCH_PARAM_BUFFER_SIZE_HANDLE ((uintptr_t)0x2)

/* ---- types ----------------------------------------------------------------------- */

/* cuda.h declares these as enums; every one of them is int-sized (the ABI test checks).
 * The ABI test of function types defines TCU_ABI_TYPES_FROM_CUDA_H and binds these
 * names, and the struct names below, to cuda.h's own types, so it can compare each
 * entry point's type exactly. */
#ifndef TCU_ABI_TYPES_FROM_CUDA_H
typedef int tcu_result;
typedef int tcu_device_attribute;
typedef int tcu_pointer_attribute;
typedef int tcu_mem_location_type;
typedef int tcu_mem_allocation_type;
typedef int tcu_mem_handle_type;
typedef int tcu_mem_access_flags;
typedef int tcu_granularity_flags;
typedef int tcu_proc_address_query_result;
typedef int tcu_memorytype;
#endif

typedef int tcu_device;
typedef unsigned long long tcu_deviceptr;
typedef unsigned long long tcu_mem_handle; /* CUmemGenericAllocationHandle */
typedef struct CUctx_st *tcu_context;
typedef struct CUstream_st *tcu_stream;
typedef struct CUevent_st *tcu_event;
typedef struct CUmod_st *tcu_module;
typedef struct CUfunc_st *tcu_function;
typedef struct CUctxCreateParams_st tcu_ctx_create_params; /* only ever NULL here */
typedef struct CUarray_st *tcu_array;                      /* only ever NULL here */

#ifndef TCU_ABI_TYPES_FROM_CUDA_H
typedef struct tcu_uuid {
    char bytes[16];
} tcu_uuid;

typedef struct tcu_mem_location {
    tcu_mem_location_type type;
    int id;
} tcu_mem_location;

typedef struct tcu_mem_allocation_prop {
    tcu_mem_allocation_type type;
    tcu_mem_handle_type requestedHandleTypes;
    tcu_mem_location location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} tcu_mem_allocation_prop;

typedef struct tcu_mem_access_desc {
    tcu_mem_location location;
    tcu_mem_access_flags flags;
} tcu_mem_access_desc;

/* CUDA_MEMCPY2D: Height rows of WidthInBytes bytes, each side's rows Pitch bytes
 * apart, starting at row Y, byte XInBytes of it. */
typedef struct tcu_memcpy2d {
    size_t srcXInBytes;
    size_t srcY;
    tcu_memorytype srcMemoryType;
    const void *srcHost;
    tcu_deviceptr srcDevice;
    tcu_array srcArray;
    size_t srcPitch;
    size_t dstXInBytes;
    size_t dstY;
    tcu_memorytype dstMemoryType;
    void *dstHost;
    tcu_deviceptr dstDevice;
    tcu_array dstArray;
    size_t dstPitch;
    size_t WidthInBytes;
    size_t Height;
} tcu_memcpy2d;
#endif

/* The largest pitch of a 2-D copy (CU_DEVICE_ATTRIBUTE_MAX_PITCH, the same on every
 * GPU the driver supports). */
#define TCU_MAX_PITCH ((size_t)2147483647)

/* Whether rc is one of TCU_STICKY_RESULT_LIST. */
static inline int
tcu_is_sticky(tcu_result rc)
{
#define TCU_X_(name) (int)rc == TCU_##name ||
    return TCU_STICKY_RESULT_LIST(TCU_X_) 0;
#undef TCU_X_
}

/* ---- function types, one per entry point ------------------------------------------
 */

typedef tcu_result tcu_fn_cuGetProcAddress(const char *symbol, void **pfn,
                                           int cudaVersion, uint64_t flags,
                                           tcu_proc_address_query_result *symbolStatus);
typedef tcu_result tcu_fn_cuGetErrorName(tcu_result error, const char **pStr);
typedef tcu_result tcu_fn_cuGetErrorString(tcu_result error, const char **pStr);
typedef tcu_result tcu_fn_cuInit(unsigned int Flags);
typedef tcu_result tcu_fn_cuDriverGetVersion(int *driverVersion);
typedef tcu_result tcu_fn_cuDeviceGetCount(int *count);
typedef tcu_result tcu_fn_cuDeviceGet(tcu_device *device, int ordinal);
typedef tcu_result tcu_fn_cuDeviceGetName(char *name, int len, tcu_device dev);
typedef tcu_result tcu_fn_cuDeviceGetAttribute(int *pi, tcu_device_attribute attrib,
                                               tcu_device dev);
typedef tcu_result tcu_fn_cuDeviceGetUuid(tcu_uuid *uuid, tcu_device dev);
typedef tcu_result tcu_fn_cuDeviceTotalMem(size_t *bytes, tcu_device dev);
typedef tcu_result tcu_fn_cuDevicePrimaryCtxRetain(tcu_context *pctx, tcu_device dev);
typedef tcu_result tcu_fn_cuDevicePrimaryCtxRelease(tcu_device dev);
typedef tcu_result tcu_fn_cuDevicePrimaryCtxGetState(tcu_device dev,
                                                     unsigned int *flags, int *active);
typedef tcu_result tcu_fn_cuCtxCreate(tcu_context *pctx, tcu_ctx_create_params *params,
                                      unsigned int flags, tcu_device dev);
typedef tcu_result tcu_fn_cuCtxDestroy(tcu_context ctx);
typedef tcu_result tcu_fn_cuCtxGetCurrent(tcu_context *pctx);
typedef tcu_result tcu_fn_cuCtxSetCurrent(tcu_context ctx);
typedef tcu_result tcu_fn_cuCtxPushCurrent(tcu_context ctx);
typedef tcu_result tcu_fn_cuCtxPopCurrent(tcu_context *pctx);
typedef tcu_result tcu_fn_cuCtxGetDevice(tcu_device *device);
typedef tcu_result tcu_fn_cuCtxSynchronize(void);
typedef tcu_result tcu_fn_cuStreamCreate(tcu_stream *phStream, unsigned int Flags);
typedef tcu_result tcu_fn_cuStreamDestroy(tcu_stream hStream);
typedef tcu_result tcu_fn_cuStreamSynchronize(tcu_stream hStream);
typedef tcu_result tcu_fn_cuStreamQuery(tcu_stream hStream);
typedef tcu_result tcu_fn_cuStreamWaitEvent(tcu_stream hStream, tcu_event hEvent,
                                            unsigned int Flags);
typedef tcu_result tcu_fn_cuEventCreate(tcu_event *phEvent, unsigned int Flags);
typedef tcu_result tcu_fn_cuEventDestroy(tcu_event hEvent);
typedef tcu_result tcu_fn_cuEventRecord(tcu_event hEvent, tcu_stream hStream);
typedef tcu_result tcu_fn_cuEventSynchronize(tcu_event hEvent);
typedef tcu_result tcu_fn_cuEventQuery(tcu_event hEvent);
typedef tcu_result tcu_fn_cuMemGetInfo(size_t *free, size_t *total);
typedef tcu_result tcu_fn_cuMemAlloc(tcu_deviceptr *dptr, size_t bytesize);
typedef tcu_result tcu_fn_cuMemFree(tcu_deviceptr dptr);
typedef tcu_result tcu_fn_cuMemAllocAsync(tcu_deviceptr *dptr, size_t bytesize,
                                          tcu_stream hStream);
typedef tcu_result tcu_fn_cuMemFreeAsync(tcu_deviceptr dptr, tcu_stream hStream);
typedef tcu_result tcu_fn_cuMemAllocManaged(tcu_deviceptr *dptr, size_t bytesize,
                                            unsigned int flags);
typedef tcu_result tcu_fn_cuMemHostAlloc(void **pp, size_t bytesize,
                                         unsigned int Flags);
typedef tcu_result tcu_fn_cuMemFreeHost(void *p);
typedef tcu_result tcu_fn_cuMemHostRegister(void *p, size_t bytesize,
                                            unsigned int Flags);
typedef tcu_result tcu_fn_cuMemHostUnregister(void *p);
typedef tcu_result tcu_fn_cuMemcpyHtoD(tcu_deviceptr dstDevice, const void *srcHost,
                                       size_t ByteCount);
typedef tcu_result tcu_fn_cuMemcpyDtoH(void *dstHost, tcu_deviceptr srcDevice,
                                       size_t ByteCount);
typedef tcu_result tcu_fn_cuMemcpyDtoD(tcu_deviceptr dstDevice, tcu_deviceptr srcDevice,
                                       size_t ByteCount);
typedef tcu_result tcu_fn_cuMemcpyHtoDAsync(tcu_deviceptr dstDevice,
                                            const void *srcHost, size_t ByteCount,
                                            tcu_stream hStream);
typedef tcu_result tcu_fn_cuMemcpyDtoHAsync(void *dstHost, tcu_deviceptr srcDevice,
                                            size_t ByteCount, tcu_stream hStream);
typedef tcu_result tcu_fn_cuMemcpyDtoDAsync(tcu_deviceptr dstDevice,
                                            tcu_deviceptr srcDevice, size_t ByteCount,
                                            tcu_stream hStream);
typedef tcu_result tcu_fn_cuMemcpyPeerAsync(tcu_deviceptr dstDevice,
                                            tcu_context dstContext,
                                            tcu_deviceptr srcDevice,
                                            tcu_context srcContext, size_t ByteCount,
                                            tcu_stream hStream);
typedef tcu_result tcu_fn_cuMemcpy2DAsync(const tcu_memcpy2d *pCopy,
                                          tcu_stream hStream);
typedef tcu_result tcu_fn_cuMemsetD8Async(tcu_deviceptr dstDevice, unsigned char uc,
                                          size_t N, tcu_stream hStream);
typedef tcu_result tcu_fn_cuMemsetD16Async(tcu_deviceptr dstDevice, unsigned short us,
                                           size_t N, tcu_stream hStream);
typedef tcu_result tcu_fn_cuMemsetD32Async(tcu_deviceptr dstDevice, unsigned int ui,
                                           size_t N, tcu_stream hStream);
typedef tcu_result tcu_fn_cuPointerGetAttribute(void *data,
                                                tcu_pointer_attribute attribute,
                                                tcu_deviceptr ptr);
typedef tcu_result tcu_fn_cuPointerGetAttributes(unsigned int numAttributes,
                                                 tcu_pointer_attribute *attributes,
                                                 void **data, tcu_deviceptr ptr);
typedef tcu_result tcu_fn_cuMemGetAllocationGranularity(
    size_t *granularity, const tcu_mem_allocation_prop *prop,
    tcu_granularity_flags option);
typedef tcu_result tcu_fn_cuMemCreate(tcu_mem_handle *handle, size_t size,
                                      const tcu_mem_allocation_prop *prop,
                                      unsigned long long flags);
typedef tcu_result tcu_fn_cuMemRelease(tcu_mem_handle handle);
typedef tcu_result tcu_fn_cuMemAddressReserve(tcu_deviceptr *ptr, size_t size,
                                              size_t alignment, tcu_deviceptr addr,
                                              unsigned long long flags);
typedef tcu_result tcu_fn_cuMemAddressFree(tcu_deviceptr ptr, size_t size);
typedef tcu_result tcu_fn_cuMemMap(tcu_deviceptr ptr, size_t size, size_t offset,
                                   tcu_mem_handle handle, unsigned long long flags);
typedef tcu_result tcu_fn_cuMemUnmap(tcu_deviceptr ptr, size_t size);
typedef tcu_result tcu_fn_cuMemSetAccess(tcu_deviceptr ptr, size_t size,
                                         const tcu_mem_access_desc *desc, size_t count);
typedef tcu_result tcu_fn_cuMemExportToShareableHandle(void *shareableHandle,
                                                       tcu_mem_handle handle,
                                                       tcu_mem_handle_type handleType,
                                                       unsigned long long flags);
typedef tcu_result tcu_fn_cuMemImportFromShareableHandle(
    tcu_mem_handle *handle, void *osHandle, tcu_mem_handle_type shHandleType);
typedef tcu_result tcu_fn_cuModuleLoadData(tcu_module *module, const void *image);
typedef tcu_result tcu_fn_cuModuleUnload(tcu_module hmod);
typedef tcu_result tcu_fn_cuModuleGetFunction(tcu_function *hfunc, tcu_module hmod,
                                              const char *name);
typedef tcu_result tcu_fn_cuLaunchKernel(
    tcu_function f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, tcu_stream hStream, void **kernelParams, void **extra);
/* Dynamic shared memory a block of blockSize threads needs (occupancy queries). */
typedef size_t (*tcu_occupancy_b2d_size)(int blockSize);
typedef tcu_result tcu_fn_cuOccupancyMaxPotentialBlockSize(
    int *minGridSize, int *blockSize, tcu_function func,
    tcu_occupancy_b2d_size blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
    int blockSizeLimit);

/* ---- the entry points ------------------------------------------------------------ */

/*
 * X(name, symbol, version): `name` is the base name that cuGetProcAddress_v2 takes,
 * `symbol` the name cuda.h 13.0 binds it to (what a library exports and dlsym finds),
 * and `version` the ABI version Tack pins it to: the value passed as cudaVersion, so a
 * newer driver never hands back a changed signature. Each pinned version is the newest
 * ABI of that entry point at or below CUDA 13.0 (cudaTypedefs.h's
 * PFN_<name>_v<version>), except cuCtxGetDevice and cuCtxSynchronize, pinned to the
 * forms that act on the current context. New entries go at the end, before the
 * optional cuOccupancyMaxPotentialBlockSize: the order is the order of the backend's
 * function table.
 */
#define TCU_ENTRY_POINTS(X)                                                  \
    X(cuGetProcAddress, cuGetProcAddress_v2, 12000)                          \
    X(cuGetErrorName, cuGetErrorName, 6000)                                  \
    X(cuGetErrorString, cuGetErrorString, 6000)                              \
    X(cuInit, cuInit, 2000)                                                  \
    X(cuDriverGetVersion, cuDriverGetVersion, 2020)                          \
    X(cuDeviceGetCount, cuDeviceGetCount, 2000)                              \
    X(cuDeviceGet, cuDeviceGet, 2000)                                        \
    X(cuDeviceGetName, cuDeviceGetName, 2000)                                \
    X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000)                      \
    X(cuDeviceGetUuid, cuDeviceGetUuid_v2, 11040)                            \
    X(cuDeviceTotalMem, cuDeviceTotalMem_v2, 3020)                           \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000)              \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, 11000)        \
    X(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, 7000)          \
    X(cuCtxCreate, cuCtxCreate_v4, 12050)                                    \
    X(cuCtxDestroy, cuCtxDestroy_v2, 4000)                                   \
    X(cuCtxGetCurrent, cuCtxGetCurrent, 4000)                                \
    X(cuCtxSetCurrent, cuCtxSetCurrent, 4000)                                \
    X(cuCtxPushCurrent, cuCtxPushCurrent_v2, 4000)                           \
    X(cuCtxPopCurrent, cuCtxPopCurrent_v2, 4000)                             \
    X(cuCtxGetDevice, cuCtxGetDevice, 2000)                                  \
    X(cuCtxSynchronize, cuCtxSynchronize, 2000)                              \
    X(cuStreamCreate, cuStreamCreate, 2000)                                  \
    X(cuStreamDestroy, cuStreamDestroy_v2, 4000)                             \
    X(cuStreamSynchronize, cuStreamSynchronize, 2000)                        \
    X(cuStreamQuery, cuStreamQuery, 2000)                                    \
    X(cuStreamWaitEvent, cuStreamWaitEvent, 3020)                            \
    X(cuEventCreate, cuEventCreate, 2000)                                    \
    X(cuEventDestroy, cuEventDestroy_v2, 4000)                               \
    X(cuEventRecord, cuEventRecord, 2000)                                    \
    X(cuEventSynchronize, cuEventSynchronize, 2000)                          \
    X(cuEventQuery, cuEventQuery, 2000)                                      \
    X(cuMemGetInfo, cuMemGetInfo_v2, 3020)                                   \
    X(cuMemAlloc, cuMemAlloc_v2, 3020)                                       \
    X(cuMemFree, cuMemFree_v2, 3020)                                         \
    X(cuMemAllocAsync, cuMemAllocAsync, 11020)                               \
    X(cuMemFreeAsync, cuMemFreeAsync, 11020)                                 \
    X(cuMemcpyHtoD, cuMemcpyHtoD_v2, 3020)                                   \
    X(cuMemcpyDtoH, cuMemcpyDtoH_v2, 3020)                                   \
    X(cuMemcpyDtoD, cuMemcpyDtoD_v2, 3020)                                   \
    X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, 3020)                         \
    X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, 3020)                         \
    X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, 3020)                         \
    X(cuMemsetD8Async, cuMemsetD8Async, 3020)                                \
    X(cuMemsetD16Async, cuMemsetD16Async, 3020)                              \
    X(cuMemsetD32Async, cuMemsetD32Async, 3020)                              \
    X(cuPointerGetAttribute, cuPointerGetAttribute, 4000)                    \
    X(cuPointerGetAttributes, cuPointerGetAttributes, 7000)                  \
    X(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity, 10020)   \
    X(cuMemCreate, cuMemCreate, 10020)                                       \
    X(cuMemRelease, cuMemRelease, 10020)                                     \
    X(cuMemAddressReserve, cuMemAddressReserve, 10020)                       \
    X(cuMemAddressFree, cuMemAddressFree, 10020)                             \
    X(cuMemMap, cuMemMap, 10020)                                             \
    X(cuMemUnmap, cuMemUnmap, 10020)                                         \
    X(cuMemSetAccess, cuMemSetAccess, 10020)                                 \
    X(cuMemExportToShareableHandle, cuMemExportToShareableHandle, 10020)     \
    X(cuMemImportFromShareableHandle, cuMemImportFromShareableHandle, 10020) \
    X(cuModuleLoadData, cuModuleLoadData, 2000)                              \
    X(cuModuleUnload, cuModuleUnload, 2000)                                  \
    X(cuModuleGetFunction, cuModuleGetFunction, 2000)                        \
    X(cuLaunchKernel, cuLaunchKernel, 4000)                                  \
    X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000)                            \
    X(cuMemcpy2DAsync, cuMemcpy2DAsync_v2, 3020)                             \
    X(cuOccupancyMaxPotentialBlockSize, cuOccupancyMaxPotentialBlockSize, 6050)

/* Entry points only the tests use, in the same form: the stand-in implements them and
 * the conformance suite resolves them, the backend never does. cuMemAllocManaged makes
 * the managed memory a kDLCUDAManaged producer hands to Tack; the cuMemHost* calls
 * make the page-locked host memory of a kDLCUDAHost producer. */
#define TCU_TEST_ENTRY_POINTS(X)                     \
    X(cuMemAllocManaged, cuMemAllocManaged, 6000)    \
    X(cuMemHostAlloc, cuMemHostAlloc, 2020)          \
    X(cuMemFreeHost, cuMemFreeHost, 2000)            \
    X(cuMemHostRegister, cuMemHostRegister_v2, 6050) \
    X(cuMemHostUnregister, cuMemHostUnregister, 4000)

/* The oldest driver the backend accepts (cuDriverGetVersion's encoding, 1000 * major +
 * 10 * minor). cuCtxCreate, which only tests use (to make a non-primary context), needs
 * 12050 and is therefore resolved as optional, as is cuOccupancyMaxPotentialBlockSize
 * (a launch without it uses a fixed block size). */
#define TCU_MIN_DRIVER_VERSION 12000

#endif /* TACK_CUDA_ABI_H */
