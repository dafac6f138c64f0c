/*
 * test_level_zero_abi.c: csrc/backends/level_zero/ze_abi.h against the installed
 * ze_api.h (Debian's libze-dev, API 1.4). Everything is checked at compile time: a
 * constant, struct size or field offset that drifts stops the build (function types are
 * checked in test_level_zero_abi_signatures.c). The one run-time test says the check
 * was built.
 *
 * Built only where meson finds the level-zero headers; see tests/c/meson.build.
 */
#include <ze_api.h>
#include <ze_ddi.h>

#include "../../csrc/backends/level_zero/ze_abi.h"
#include "harness.h"

#define CHECK_RESULT(name, value)                                                 \
    _Static_assert((long long)TZE_RESULT_##name == (long long)ZE_RESULT_##name && \
                       (long long)(value) == (long long)ZE_RESULT_##name,         \
                   #name);
TZE_RESULT_LIST(CHECK_RESULT)

#define CHECK_CONSTANT(name, value)                                 \
    _Static_assert((long long)TZE_##name == (long long)ZE_##name && \
                       (long long)(value) == (long long)ZE_##name,  \
                   #name);
TZE_CONSTANT_LIST(CHECK_CONSTANT)

_Static_assert(sizeof(tze_result) == sizeof(ze_result_t), "ze_result_t size");
_Static_assert(sizeof(tze_structure_type) == sizeof(ze_structure_type_t), "stype size");
_Static_assert(sizeof(tze_api_version) == sizeof(ze_api_version_t), "version size");
_Static_assert(sizeof(tze_flags) == sizeof(ze_init_flags_t), "flags size");
_Static_assert((long long)ZE_API_VERSION_CURRENT >= (long long)TZE_API_VERSION_1_4,
               "ze_abi.h is written against API 1.4; these headers are older");

#define CHECK_SAME_TYPE(ours, theirs)                          \
    _Static_assert(__builtin_types_compatible_p(ours, theirs), \
                   #ours " is not " #theirs);
CHECK_SAME_TYPE(tze_driver, ze_driver_handle_t)
CHECK_SAME_TYPE(tze_device, ze_device_handle_t)
CHECK_SAME_TYPE(tze_context, ze_context_handle_t)
CHECK_SAME_TYPE(tze_command_queue, ze_command_queue_handle_t)
CHECK_SAME_TYPE(tze_command_list, ze_command_list_handle_t)
CHECK_SAME_TYPE(tze_event, ze_event_handle_t)
CHECK_SAME_TYPE(tze_fence, ze_fence_handle_t)
CHECK_SAME_TYPE(tze_module, ze_module_handle_t)
CHECK_SAME_TYPE(tze_module_build_log, ze_module_build_log_handle_t)
CHECK_SAME_TYPE(tze_kernel, ze_kernel_handle_t)

#define CHECK_STRUCT(ours, theirs)                                            \
    _Static_assert(                                                           \
        sizeof(ours) == sizeof(theirs) && _Alignof(ours) == _Alignof(theirs), \
        #ours " size or alignment");
#define CHECK_FIELD(ours, theirs, field)                                           \
    _Static_assert(offsetof(ours, field) == offsetof(theirs, field) &&             \
                       sizeof(((ours *)0)->field) == sizeof(((theirs *)0)->field), \
                   #ours "." #field);

CHECK_STRUCT(tze_module_build_log_dditable, ze_module_build_log_dditable_t)
CHECK_FIELD(tze_module_build_log_dditable, ze_module_build_log_dditable_t, pfnDestroy)
CHECK_FIELD(tze_module_build_log_dditable, ze_module_build_log_dditable_t, pfnGetString)

CHECK_STRUCT(tze_driver_uuid, ze_driver_uuid_t)
CHECK_STRUCT(tze_device_uuid, ze_device_uuid_t)

CHECK_STRUCT(tze_driver_properties, ze_driver_properties_t)
#define DRIVER_PROPERTIES_FIELDS(X) X(stype) X(pNext) X(uuid) X(driverVersion)
#define CHECK_DRIVER_PROPERTIES(f) \
    CHECK_FIELD(tze_driver_properties, ze_driver_properties_t, f)
DRIVER_PROPERTIES_FIELDS(CHECK_DRIVER_PROPERTIES)

CHECK_STRUCT(tze_device_properties, ze_device_properties_t)
/* clang-format off */
#define DEVICE_PROPERTIES_FIELDS(X) \
    X(stype) \
    X(pNext) \
    X(type) \
    X(vendorId) \
    X(deviceId) \
    X(flags) \
    X(subdeviceId) \
    X(coreClockRate) \
    X(maxMemAllocSize) \
    X(maxHardwareContexts) \
    X(maxCommandQueuePriority) \
    X(numThreadsPerEU) \
    X(physicalEUSimdWidth) \
    X(numEUsPerSubslice) \
    X(numSubslicesPerSlice) \
    X(numSlices) \
    X(timerResolution) \
    X(timestampValidBits) \
    X(kernelTimestampValidBits) \
    X(uuid) \
    X(name)
/* clang-format on */
#define CHECK_DEVICE_PROPERTIES(f) \
    CHECK_FIELD(tze_device_properties, ze_device_properties_t, f)
DEVICE_PROPERTIES_FIELDS(CHECK_DEVICE_PROPERTIES)

CHECK_STRUCT(tze_command_queue_group_properties, ze_command_queue_group_properties_t)
#define GROUP_FIELDS(X) \
    X(stype) X(pNext) X(flags) X(maxMemoryFillPatternSize) X(numQueues)
#define CHECK_GROUP(f)                              \
    CHECK_FIELD(tze_command_queue_group_properties, \
                ze_command_queue_group_properties_t, f)
GROUP_FIELDS(CHECK_GROUP)

CHECK_STRUCT(tze_context_desc, ze_context_desc_t)
#define CONTEXT_DESC_FIELDS(X) X(stype) X(pNext) X(flags)
#define CHECK_CONTEXT_DESC(f) CHECK_FIELD(tze_context_desc, ze_context_desc_t, f)
CONTEXT_DESC_FIELDS(CHECK_CONTEXT_DESC)

CHECK_STRUCT(tze_command_queue_desc, ze_command_queue_desc_t)
#define QUEUE_DESC_FIELDS(X) \
    X(stype) X(pNext) X(ordinal) X(index) X(flags) X(mode) X(priority)
#define CHECK_QUEUE_DESC(f) \
    CHECK_FIELD(tze_command_queue_desc, ze_command_queue_desc_t, f)
QUEUE_DESC_FIELDS(CHECK_QUEUE_DESC)

CHECK_STRUCT(tze_command_list_desc, ze_command_list_desc_t)
#define LIST_DESC_FIELDS(X) X(stype) X(pNext) X(commandQueueGroupOrdinal) X(flags)
#define CHECK_LIST_DESC(f) CHECK_FIELD(tze_command_list_desc, ze_command_list_desc_t, f)
LIST_DESC_FIELDS(CHECK_LIST_DESC)

CHECK_STRUCT(tze_device_mem_alloc_desc, ze_device_mem_alloc_desc_t)
#define ALLOC_DESC_FIELDS(X) X(stype) X(pNext) X(flags) X(ordinal)
#define CHECK_ALLOC_DESC(f) \
    CHECK_FIELD(tze_device_mem_alloc_desc, ze_device_mem_alloc_desc_t, f)
ALLOC_DESC_FIELDS(CHECK_ALLOC_DESC)

CHECK_STRUCT(tze_memory_allocation_properties, ze_memory_allocation_properties_t)
#define ALLOC_PROPS_FIELDS(X) X(stype) X(pNext) X(type) X(id) X(pageSize)
#define CHECK_ALLOC_PROPS(f) \
    CHECK_FIELD(tze_memory_allocation_properties, ze_memory_allocation_properties_t, f)
ALLOC_PROPS_FIELDS(CHECK_ALLOC_PROPS)

CHECK_STRUCT(tze_memory_free_ext_desc, ze_memory_free_ext_desc_t)
#define FREE_DESC_FIELDS(X) X(stype) X(pNext) X(freePolicy)
#define CHECK_FREE_DESC(f) \
    CHECK_FIELD(tze_memory_free_ext_desc, ze_memory_free_ext_desc_t, f)
FREE_DESC_FIELDS(CHECK_FREE_DESC)

CHECK_STRUCT(tze_device_compute_properties, ze_device_compute_properties_t)
/* clang-format off */
#define COMPUTE_PROPS_FIELDS(X) \
    X(stype) \
    X(pNext) \
    X(maxTotalGroupSize) \
    X(maxGroupSizeX) \
    X(maxGroupSizeY) \
    X(maxGroupSizeZ) \
    X(maxGroupCountX) \
    X(maxGroupCountY) \
    X(maxGroupCountZ) \
    X(maxSharedLocalMemory) \
    X(numSubGroupSizes) \
    X(subGroupSizes)
/* clang-format on */
#define CHECK_COMPUTE_PROPS(f) \
    CHECK_FIELD(tze_device_compute_properties, ze_device_compute_properties_t, f)
COMPUTE_PROPS_FIELDS(CHECK_COMPUTE_PROPS)

CHECK_STRUCT(tze_native_kernel_uuid, ze_native_kernel_uuid_t)

CHECK_STRUCT(tze_device_module_properties, ze_device_module_properties_t)
/* clang-format off */
#define MODULE_PROPS_FIELDS(X) \
    X(stype) \
    X(pNext) \
    X(spirvVersionSupported) \
    X(flags) \
    X(fp16flags) \
    X(fp32flags) \
    X(fp64flags) \
    X(maxArgumentsSize) \
    X(printfBufferSize) \
    X(nativeKernelSupported)
/* clang-format on */
#define CHECK_MODULE_PROPS(f) \
    CHECK_FIELD(tze_device_module_properties, ze_device_module_properties_t, f)
MODULE_PROPS_FIELDS(CHECK_MODULE_PROPS)

CHECK_STRUCT(tze_module_desc, ze_module_desc_t)
/* clang-format off */
#define MODULE_DESC_FIELDS(X) \
    X(stype) \
    X(pNext) \
    X(format) \
    X(inputSize) \
    X(pInputModule) \
    X(pBuildFlags) \
    X(pConstants)
/* clang-format on */
#define CHECK_MODULE_DESC(f) CHECK_FIELD(tze_module_desc, ze_module_desc_t, f)
MODULE_DESC_FIELDS(CHECK_MODULE_DESC)

CHECK_STRUCT(tze_kernel_desc, ze_kernel_desc_t)
#define KERNEL_DESC_FIELDS(X) X(stype) X(pNext) X(flags) X(pKernelName)
#define CHECK_KERNEL_DESC(f) CHECK_FIELD(tze_kernel_desc, ze_kernel_desc_t, f)
KERNEL_DESC_FIELDS(CHECK_KERNEL_DESC)

CHECK_STRUCT(tze_group_count, ze_group_count_t)
#define GROUP_COUNT_FIELDS(X) X(groupCountX) X(groupCountY) X(groupCountZ)
#define CHECK_GROUP_COUNT(f) CHECK_FIELD(tze_group_count, ze_group_count_t, f)
GROUP_COUNT_FIELDS(CHECK_GROUP_COUNT)

TACK_TEST(level_zero_abi_checked_against_ze_api_h)
{
    /* The checks above are static; this test records that they were compiled. */
    CHECK_EQ_INT(TZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT), 1);
}
