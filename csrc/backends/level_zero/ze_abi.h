/*
 * ze_abi.h: Tack's own declarations of the part of the oneAPI Level Zero API that the
 * level_zero backend uses.
 *
 * Tack builds with no Level Zero SDK, so this header never includes ze_api.h. Every
 * fact here is written once, in the lists below, and tests/c/test_level_zero_abi.c
 * (built where meson finds the level-zero headers) includes the installed ze_api.h and
 * checks at compile time that each constant, struct size, field offset and function
 * type matches.
 *
 * Level of the API: 1.4 (Debian 12's libze-dev). A call from a later version is not
 * declared in TZE_ENTRY_POINTS; it is looked up at run time and used only when the
 * driver's zeDriverGetApiVersion is at least the version named in
 * TZE_NEWER_ENTRY_POINTS.
 *
 * Naming: Level Zero's constants keep their names with TZE_ in place of ZE_
 * (ZE_RESULT_ERROR_UNINITIALIZED is TZE_RESULT_ERROR_UNINITIALIZED); types are
 * tze_<what>; struct fields keep Level Zero's spelling. Handle types use Level Zero's
 * struct tags, so they are the very same types when ze_api.h is present.
 */
#ifndef TACK_ZE_ABI_H
#define TACK_ZE_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ---- result codes (the subset Tack tells apart) ---------------------------------- */

#define TZE_RESULT_LIST(X)                     \
    X(SUCCESS, 0)                              \
    X(NOT_READY, 1)                            \
    X(ERROR_DEVICE_LOST, 0x70000001)           \
    X(ERROR_OUT_OF_HOST_MEMORY, 0x70000002)    \
    X(ERROR_OUT_OF_DEVICE_MEMORY, 0x70000003)  \
    X(ERROR_MODULE_BUILD_FAILURE, 0x70000004)  \
    X(ERROR_UNINITIALIZED, 0x78000001)         \
    X(ERROR_UNSUPPORTED_VERSION, 0x78000002)   \
    X(ERROR_UNSUPPORTED_FEATURE, 0x78000003)   \
    X(ERROR_INVALID_ARGUMENT, 0x78000004)      \
    X(ERROR_INVALID_NULL_HANDLE, 0x78000005)   \
    X(ERROR_HANDLE_OBJECT_IN_USE, 0x78000006)  \
    X(ERROR_INVALID_NULL_POINTER, 0x78000007)  \
    X(ERROR_INVALID_SIZE, 0x78000008)          \
    X(ERROR_UNSUPPORTED_SIZE, 0x78000009)      \
    X(ERROR_INVALID_ENUMERATION, 0x7800000c)   \
    X(ERROR_INVALID_NATIVE_BINARY, 0x7800000f) \
    X(ERROR_INVALID_KERNEL_NAME, 0x78000011)   \
    X(ERROR_UNKNOWN, 0x7ffffffe)

enum {
#define TZE_RESULT_ENUM(name, value) TZE_RESULT_##name = value,
    TZE_RESULT_LIST(TZE_RESULT_ENUM)
#undef TZE_RESULT_ENUM
};

/* ---- other constants --------------------------------------------------------------
 */

#define TZE_MAKE_VERSION(major, minor) (((major) << 16) | ((minor)&0x0000ffff))
#define TZE_MAJOR_VERSION(v) ((unsigned)(v) >> 16)
#define TZE_MINOR_VERSION(v) ((unsigned)(v)&0x0000ffffu)

/* X(name, value): checked against ze_api.h under ZE_<name>. */
#define TZE_CONSTANT_LIST(X)                              \
    X(API_VERSION_1_0, 0x10000)                           \
    X(API_VERSION_1_3, 0x10003)                           \
    X(API_VERSION_1_4, 0x10004)                           \
    X(STRUCTURE_TYPE_DRIVER_PROPERTIES, 0x1)              \
    X(STRUCTURE_TYPE_DEVICE_PROPERTIES, 0x3)              \
    X(STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES, 0x6) \
    X(COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE, 1)       \
    X(STRUCTURE_TYPE_CONTEXT_DESC, 0xd)                   \
    X(STRUCTURE_TYPE_COMMAND_QUEUE_DESC, 0xe)             \
    X(STRUCTURE_TYPE_COMMAND_LIST_DESC, 0xf)              \
    X(STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, 0x15)         \
    X(STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, 0x17)  \
    X(STRUCTURE_TYPE_MEMORY_FREE_EXT_DESC, 0x1000a)       \
    X(STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES, 0x4)      \
    X(STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES, 0x5)       \
    X(STRUCTURE_TYPE_MODULE_DESC, 0x1b)                   \
    X(STRUCTURE_TYPE_KERNEL_DESC, 0x1d)                   \
    X(MODULE_FORMAT_IL_SPIRV, 0)                          \
    X(DEVICE_MODULE_FLAG_FP64, 2)                         \
    X(MAX_NATIVE_KERNEL_UUID_SIZE, 16)                    \
    X(DEVICE_TYPE_GPU, 1)                                 \
    X(DEVICE_PROPERTY_FLAG_SUBDEVICE, 2)                  \
    X(MEMORY_TYPE_UNKNOWN, 0)                             \
    X(MEMORY_TYPE_HOST, 1)                                \
    X(MEMORY_TYPE_DEVICE, 2)                              \
    X(MEMORY_TYPE_SHARED, 3)                              \
    X(COMMAND_QUEUE_MODE_ASYNCHRONOUS, 2)                 \
    X(COMMAND_QUEUE_PRIORITY_NORMAL, 0)                   \
    X(DRIVER_MEMORY_FREE_POLICY_EXT_FLAG_DEFER_FREE, 2)   \
    X(MAX_DRIVER_UUID_SIZE, 16)                           \
    X(MAX_DEVICE_UUID_SIZE, 16)                           \
    X(MAX_DEVICE_NAME, 256)                               \
    X(SUBGROUPSIZE_COUNT, 8)

enum {
#define TZE_CONSTANT_ENUM(name, value) TZE_##name = value,
    TZE_CONSTANT_LIST(TZE_CONSTANT_ENUM)
#undef TZE_CONSTANT_ENUM
};

/* ---- handles: Level Zero's own struct tags -----------------------------------------
 */

typedef struct _ze_driver_handle_t *tze_driver;
typedef struct _ze_device_handle_t *tze_device;
typedef struct _ze_context_handle_t *tze_context;
typedef struct _ze_command_queue_handle_t *tze_command_queue;
typedef struct _ze_command_list_handle_t *tze_command_list;
typedef struct _ze_event_handle_t *tze_event;
typedef struct _ze_fence_handle_t *tze_fence;
typedef struct _ze_module_handle_t *tze_module;
typedef struct _ze_module_build_log_handle_t *tze_module_build_log;
typedef struct _ze_kernel_handle_t *tze_kernel;

/* Enumerations are 32-bit in Level Zero (each ends with a FORCE_UINT32 member). */
typedef uint32_t tze_structure_type;
typedef uint32_t tze_api_version;
typedef uint32_t tze_flags;

/* ---- structs ------------------------------------------------------------------------
 */

/* test_level_zero_abi_signatures.c binds these names to ze_api.h's own types instead,
 * so that it compares function types exactly; test_level_zero_abi.c checks that the
 * definitions here have ze_api.h's sizes and layouts. */
#ifndef TZE_ABI_TYPES_FROM_ZE_API_H
/* ze_result_t: an enumeration, 32 bits wide. */
typedef uint32_t tze_result;

typedef struct tze_driver_uuid {
    uint8_t id[TZE_MAX_DRIVER_UUID_SIZE];
} tze_driver_uuid;

typedef struct tze_device_uuid {
    uint8_t id[TZE_MAX_DEVICE_UUID_SIZE];
} tze_device_uuid;

typedef struct tze_driver_properties {
    tze_structure_type stype;
    void *pNext;
    tze_driver_uuid uuid;
    uint32_t driverVersion;
} tze_driver_properties;

typedef struct tze_device_properties {
    tze_structure_type stype;
    void *pNext;
    uint32_t type;
    uint32_t vendorId;
    uint32_t deviceId;
    tze_flags flags;
    uint32_t subdeviceId;
    uint32_t coreClockRate;
    uint64_t maxMemAllocSize;
    uint32_t maxHardwareContexts;
    uint32_t maxCommandQueuePriority;
    uint32_t numThreadsPerEU;
    uint32_t physicalEUSimdWidth;
    uint32_t numEUsPerSubslice;
    uint32_t numSubslicesPerSlice;
    uint32_t numSlices;
    uint64_t timerResolution;
    uint32_t timestampValidBits;
    uint32_t kernelTimestampValidBits;
    tze_device_uuid uuid;
    char name[TZE_MAX_DEVICE_NAME];
} tze_device_properties;

typedef struct tze_command_queue_group_properties {
    tze_structure_type stype;
    void *pNext;
    tze_flags flags;
    size_t maxMemoryFillPatternSize;
    uint32_t numQueues;
} tze_command_queue_group_properties;

typedef struct tze_context_desc {
    tze_structure_type stype;
    const void *pNext;
    tze_flags flags;
} tze_context_desc;

typedef struct tze_command_queue_desc {
    tze_structure_type stype;
    const void *pNext;
    uint32_t ordinal;
    uint32_t index;
    tze_flags flags;
    uint32_t mode;
    uint32_t priority;
} tze_command_queue_desc;

typedef struct tze_command_list_desc {
    tze_structure_type stype;
    const void *pNext;
    uint32_t commandQueueGroupOrdinal;
    tze_flags flags;
} tze_command_list_desc;

typedef struct tze_device_mem_alloc_desc {
    tze_structure_type stype;
    const void *pNext;
    tze_flags flags;
    uint32_t ordinal;
} tze_device_mem_alloc_desc;

typedef struct tze_memory_allocation_properties {
    tze_structure_type stype;
    void *pNext;
    uint32_t type;
    uint64_t id;
    uint64_t pageSize;
} tze_memory_allocation_properties;

typedef struct tze_memory_free_ext_desc {
    tze_structure_type stype;
    const void *pNext;
    tze_flags freePolicy;
} tze_memory_free_ext_desc;

typedef struct tze_device_compute_properties {
    tze_structure_type stype;
    void *pNext;
    uint32_t maxTotalGroupSize; /* work items in one group, all dimensions together */
    uint32_t maxGroupSizeX;
    uint32_t maxGroupSizeY;
    uint32_t maxGroupSizeZ;
    uint32_t maxGroupCountX;
    uint32_t maxGroupCountY;
    uint32_t maxGroupCountZ;
    uint32_t maxSharedLocalMemory; /* bytes of local memory one group may use */
    uint32_t numSubGroupSizes;
    uint32_t subGroupSizes[TZE_SUBGROUPSIZE_COUNT];
} tze_device_compute_properties;

typedef struct tze_native_kernel_uuid {
    uint8_t id[TZE_MAX_NATIVE_KERNEL_UUID_SIZE];
} tze_native_kernel_uuid;

typedef struct tze_device_module_properties {
    tze_structure_type stype;
    void *pNext;
    uint32_t spirvVersionSupported;
    tze_flags flags; /* TZE_DEVICE_MODULE_FLAG_FP64: the device computes in float64 */
    tze_flags fp16flags;
    tze_flags fp32flags;
    tze_flags fp64flags;
    uint32_t maxArgumentsSize;
    uint32_t printfBufferSize;
    tze_native_kernel_uuid nativeKernelSupported;
} tze_device_module_properties;

typedef struct tze_module_desc {
    tze_structure_type stype;
    const void *pNext;
    uint32_t format; /* TZE_MODULE_FORMAT_IL_SPIRV */
    size_t inputSize;
    const uint8_t *pInputModule;
    const char *pBuildFlags;
    const struct _ze_module_constants_t *pConstants; /* Tack passes NULL */
} tze_module_desc;

typedef struct tze_kernel_desc {
    tze_structure_type stype;
    const void *pNext;
    tze_flags flags;
    const char *pKernelName;
} tze_kernel_desc;

typedef struct tze_group_count {
    uint32_t groupCountX;
    uint32_t groupCountY;
    uint32_t groupCountZ;
} tze_group_count;
#endif /* TZE_ABI_TYPES_FROM_ZE_API_H */

/* ---- entry points -------------------------------------------------------------------
 */

/* X(name, parameters, version): the API 1.0 calls the backend needs, every one required
 * of the loader (all of them are in every loader since 1.0). */
#define TZE_ENTRY_POINTS(X)                                                           \
    X(zeInit, (tze_flags flags), TZE_API_VERSION_1_0)                                 \
    X(zeDriverGet, (uint32_t * pCount, tze_driver * phDrivers), TZE_API_VERSION_1_0)  \
    X(zeDriverGetApiVersion, (tze_driver hDriver, tze_api_version * version),         \
      TZE_API_VERSION_1_0)                                                            \
    X(zeDriverGetProperties, (tze_driver hDriver, tze_driver_properties * props),     \
      TZE_API_VERSION_1_0)                                                            \
    X(zeDeviceGet, (tze_driver hDriver, uint32_t * pCount, tze_device * phDevices),   \
      TZE_API_VERSION_1_0)                                                            \
    X(zeDeviceGetProperties, (tze_device hDevice, tze_device_properties * props),     \
      TZE_API_VERSION_1_0)                                                            \
    X(zeDeviceGetCommandQueueGroupProperties,                                         \
      (tze_device hDevice, uint32_t * pCount,                                         \
       tze_command_queue_group_properties * pCommandQueueGroupProperties),            \
      TZE_API_VERSION_1_0)                                                            \
    X(zeContextCreate,                                                                \
      (tze_driver hDriver, const tze_context_desc *desc, tze_context *phContext),     \
      TZE_API_VERSION_1_0)                                                            \
    X(zeContextGetStatus, (tze_context hContext), TZE_API_VERSION_1_0)                \
    X(zeCommandQueueCreate,                                                           \
      (tze_context hContext, tze_device hDevice, const tze_command_queue_desc *desc,  \
       tze_command_queue *phCommandQueue),                                            \
      TZE_API_VERSION_1_0)                                                            \
    X(zeCommandQueueExecuteCommandLists,                                              \
      (tze_command_queue hCommandQueue, uint32_t numCommandLists,                     \
       tze_command_list * phCommandLists, tze_fence hFence),                          \
      TZE_API_VERSION_1_0)                                                            \
    X(zeCommandQueueSynchronize, (tze_command_queue hCommandQueue, uint64_t timeout), \
      TZE_API_VERSION_1_0)                                                            \
    X(zeCommandListCreate,                                                            \
      (tze_context hContext, tze_device hDevice, const tze_command_list_desc *desc,   \
       tze_command_list *phCommandList),                                              \
      TZE_API_VERSION_1_0)                                                            \
    X(zeCommandQueueDestroy, (tze_command_queue hCommandQueue), TZE_API_VERSION_1_0)  \
    X(zeCommandListDestroy, (tze_command_list hCommandList), TZE_API_VERSION_1_0)     \
    X(zeCommandListAppendBarrier,                                                     \
      (tze_command_list hCommandList, tze_event hSignalEvent, uint32_t numWaitEvents, \
       tze_event * phWaitEvents),                                                     \
      TZE_API_VERSION_1_0)                                                            \
    X(zeCommandListClose, (tze_command_list hCommandList), TZE_API_VERSION_1_0)       \
    X(zeCommandListReset, (tze_command_list hCommandList), TZE_API_VERSION_1_0)       \
    X(zeCommandListAppendMemoryCopy,                                                  \
      (tze_command_list hCommandList, void *dstptr, const void *srcptr, size_t size,  \
       tze_event hSignalEvent, uint32_t numWaitEvents, tze_event *phWaitEvents),      \
      TZE_API_VERSION_1_0)                                                            \
    X(zeCommandListAppendMemoryFill,                                                  \
      (tze_command_list hCommandList, void *ptr, const void *pattern,                 \
       size_t pattern_size, size_t size, tze_event hSignalEvent,                      \
       uint32_t numWaitEvents, tze_event *phWaitEvents),                              \
      TZE_API_VERSION_1_0)                                                            \
    X(zeMemAllocDevice,                                                               \
      (tze_context hContext, const tze_device_mem_alloc_desc *device_desc,            \
       size_t size, size_t alignment, tze_device hDevice, void **pptr),               \
      TZE_API_VERSION_1_0)                                                            \
    X(zeMemFree, (tze_context hContext, void *ptr), TZE_API_VERSION_1_0)              \
    X(zeMemGetAllocProperties,                                                        \
      (tze_context hContext, const void *ptr,                                         \
       tze_memory_allocation_properties *pMemAllocProperties, tze_device *phDevice),  \
      TZE_API_VERSION_1_0)                                                            \
    X(zeDeviceGetComputeProperties,                                                   \
      (tze_device hDevice, tze_device_compute_properties * pComputeProperties),       \
      TZE_API_VERSION_1_0)                                                            \
    X(zeDeviceGetModuleProperties,                                                    \
      (tze_device hDevice, tze_device_module_properties * pModuleProperties),         \
      TZE_API_VERSION_1_0)                                                            \
    X(zeModuleCreate,                                                                 \
      (tze_context hContext, tze_device hDevice, const tze_module_desc *desc,         \
       tze_module *phModule, tze_module_build_log *phBuildLog),                       \
      TZE_API_VERSION_1_0)                                                            \
    X(zeModuleDestroy, (tze_module hModule), TZE_API_VERSION_1_0)                     \
    X(zeModuleBuildLogGetString,                                                      \
      (tze_module_build_log hModuleBuildLog, size_t * pSize, char *pBuildLog),        \
      TZE_API_VERSION_1_0)                                                            \
    X(zeModuleBuildLogDestroy, (tze_module_build_log hModuleBuildLog),                \
      TZE_API_VERSION_1_0)                                                            \
    X(zeKernelCreate,                                                                 \
      (tze_module hModule, const tze_kernel_desc *desc, tze_kernel *phKernel),        \
      TZE_API_VERSION_1_0)                                                            \
    X(zeKernelDestroy, (tze_kernel hKernel), TZE_API_VERSION_1_0)                     \
    X(zeKernelSetGroupSize,                                                           \
      (tze_kernel hKernel, uint32_t groupSizeX, uint32_t groupSizeY,                  \
       uint32_t groupSizeZ),                                                          \
      TZE_API_VERSION_1_0)                                                            \
    X(zeKernelSuggestGroupSize,                                                       \
      (tze_kernel hKernel, uint32_t globalSizeX, uint32_t globalSizeY,                \
       uint32_t globalSizeZ, uint32_t * groupSizeX, uint32_t * groupSizeY,            \
       uint32_t * groupSizeZ),                                                        \
      TZE_API_VERSION_1_0)                                                            \
    X(zeKernelSetArgumentValue,                                                       \
      (tze_kernel hKernel, uint32_t argIndex, size_t argSize, const void *pArgValue), \
      TZE_API_VERSION_1_0)                                                            \
    X(zeCommandListAppendLaunchKernel,                                                \
      (tze_command_list hCommandList, tze_kernel hKernel,                             \
       const tze_group_count *pLaunchFuncArgs, tze_event hSignalEvent,                \
       uint32_t numWaitEvents, tze_event *phWaitEvents),                              \
      TZE_API_VERSION_1_0)

/* X(name, parameters, version): calls after API 1.0, looked up at run time and used
 * only when the driver reports at least that version. */
#define TZE_NEWER_ENTRY_POINTS(X)                                                      \
    X(zeMemFreeExt,                                                                    \
      (tze_context hContext, const tze_memory_free_ext_desc *pMemFreeDesc, void *ptr), \
      TZE_API_VERSION_1_3)

#define TZE_FN_TYPEDEF(name, params, version) typedef tze_result tze_fn_##name params;
TZE_ENTRY_POINTS(TZE_FN_TYPEDEF)
TZE_NEWER_ENTRY_POINTS(TZE_FN_TYPEDEF)
#undef TZE_FN_TYPEDEF

/* ze_ddi.h's table of build-log calls, as the loader's
 * zeGetModuleBuildLogProcAddrTable fills it: the loader's own calls where it
 * intercepts, the driver's where it does not (level_zero_driver.c asks which). */
#ifndef TZE_ABI_TYPES_FROM_ZE_API_H
typedef struct tze_module_build_log_dditable {
    tze_fn_zeModuleBuildLogDestroy *pfnDestroy;
    tze_fn_zeModuleBuildLogGetString *pfnGetString;
} tze_module_build_log_dditable;
#endif
typedef tze_result tze_fn_zeGetModuleBuildLogProcAddrTable(
    tze_api_version version, tze_module_build_log_dditable *pDdiTable);

/* The loader's entry points, as resolved by level_zero_driver.c. A newer one is NULL
 * when the driver's API version is below its own. */
typedef struct tze_api {
#define TZE_API_FIELD(name, params, version) tze_fn_##name *name;
    TZE_ENTRY_POINTS(TZE_API_FIELD)
    TZE_NEWER_ENTRY_POINTS(TZE_API_FIELD)
#undef TZE_API_FIELD
} tze_api;

#endif /* TACK_ZE_ABI_H */
