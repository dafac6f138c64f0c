/*
 * test_level_zero_abi_signatures.c: every entry point of
 * csrc/backends/level_zero/ze_abi.h has the function type of the declaration of that
 * name in the installed ze_api.h. Checked at compile time; built only where meson finds
 * the level-zero headers (tests/c/meson.build).
 *
 * The header's enum- and struct-typed names are bound to ze_api.h's own types here (the
 * header leaves them out under TZE_ABI_TYPES_FROM_ZE_API_H), so the comparison is
 * exact; test_level_zero_abi.c checks that Tack's own definitions have the same
 * layouts.
 */
#include <ze_api.h>
#include <ze_ddi.h>

typedef ze_result_t tze_result;
typedef ze_driver_properties_t tze_driver_properties;
typedef ze_device_properties_t tze_device_properties;
typedef ze_command_queue_group_properties_t tze_command_queue_group_properties;
typedef ze_context_desc_t tze_context_desc;
typedef ze_command_queue_desc_t tze_command_queue_desc;
typedef ze_command_list_desc_t tze_command_list_desc;
typedef ze_device_mem_alloc_desc_t tze_device_mem_alloc_desc;
typedef ze_memory_allocation_properties_t tze_memory_allocation_properties;
typedef ze_memory_free_ext_desc_t tze_memory_free_ext_desc;
typedef ze_device_compute_properties_t tze_device_compute_properties;
typedef ze_device_module_properties_t tze_device_module_properties;
typedef ze_module_desc_t tze_module_desc;
typedef ze_kernel_desc_t tze_kernel_desc;
typedef ze_group_count_t tze_group_count;
typedef ze_module_build_log_dditable_t tze_module_build_log_dditable;
#define TZE_ABI_TYPES_FROM_ZE_API_H 1

#include "../../csrc/backends/level_zero/ze_abi.h"

#define CHECK_ENTRY(name, params, version)                                        \
    _Static_assert(__builtin_types_compatible_p(tze_fn_##name, __typeof__(name)), \
                   #name " does not match ze_api.h");
TZE_ENTRY_POINTS(CHECK_ENTRY)
TZE_NEWER_ENTRY_POINTS(CHECK_ENTRY)
/* The loader's table getter level_zero_driver.c asks (ze_ddi.h). */
CHECK_ENTRY(zeGetModuleBuildLogProcAddrTable, , )
