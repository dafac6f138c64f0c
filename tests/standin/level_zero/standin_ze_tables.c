/*
 * standin_ze_tables.c: the loader's view of the stand-in: all 53 table getters of API
 * 1.4's ze_ddi.h, zet_ddi.h and zes_ddi.h. The loader (1.8.12) fetches every table and
 * drops a driver that lacks any of 46 of them, so each getter exists and succeeds, and
 * fills what the stand-in implements; the loader zero-fills its copy, so the rest stay
 * NULL and answer ZE_RESULT_ERROR_UNSUPPORTED_FEATURE.
 */
#include "standin_ze.h"

/* The tables the stand-in leaves empty. */
#define STANDIN_EMPTY_TABLES(X)                                                \
    X(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)                   \
    X(zeGetImageProcAddrTable, ze_image_dditable_t)                            \
    X(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)                     \
    X(zeGetFenceProcAddrTable, ze_fence_dditable_t)                            \
    X(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t)                   \
    X(zeGetEventProcAddrTable, ze_event_dditable_t)                            \
    X(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)                     \
    X(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)                   \
    X(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)                        \
    X(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)               \
    X(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)                 \
    X(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)      \
    X(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)          \
    X(zetGetDeviceProcAddrTable, zet_device_dditable_t)                        \
    X(zetGetContextProcAddrTable, zet_context_dditable_t)                      \
    X(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)             \
    X(zetGetModuleProcAddrTable, zet_module_dditable_t)                        \
    X(zetGetKernelProcAddrTable, zet_kernel_dditable_t)                        \
    X(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)             \
    X(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)      \
    X(zetGetMetricProcAddrTable, zet_metric_dditable_t)                        \
    X(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)       \
    X(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)    \
    X(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)             \
    X(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)                 \
    X(zetGetDebugProcAddrTable, zet_debug_dditable_t)                          \
    X(zesGetDriverProcAddrTable, zes_driver_dditable_t)                        \
    X(zesGetDeviceProcAddrTable, zes_device_dditable_t)                        \
    X(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)                  \
    X(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t) \
    X(zesGetPowerProcAddrTable, zes_power_dditable_t)                          \
    X(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)                  \
    X(zesGetEngineProcAddrTable, zes_engine_dditable_t)                        \
    X(zesGetStandbyProcAddrTable, zes_standby_dditable_t)                      \
    X(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)                    \
    X(zesGetMemoryProcAddrTable, zes_memory_dditable_t)                        \
    X(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)               \
    X(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)              \
    X(zesGetPsuProcAddrTable, zes_psu_dditable_t)                              \
    X(zesGetFanProcAddrTable, zes_fan_dditable_t)                              \
    X(zesGetLedProcAddrTable, zes_led_dditable_t)                              \
    X(zesGetRasProcAddrTable, zes_ras_dditable_t)                              \
    X(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)

/* Every table of API 1.x has the layout the stand-in was compiled with. */
static ze_result_t
check_version(ze_api_version_t version, const void *table, const char *getter)
{
    if (!table) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, getter,
                                "the table pointer is NULL");
    }
    if (ZE_MAJOR_VERSION(version) != 1) {
        return standin_complain(ZE_RESULT_ERROR_UNSUPPORTED_VERSION, getter,
                                "API version %u.%u: the stand-in implements 1.x",
                                ZE_MAJOR_VERSION(version), ZE_MINOR_VERSION(version));
    }
    return ZE_RESULT_SUCCESS;
}

/* type is a type name, which parentheses would break. */
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STANDIN_EMPTY(getter, type)                                           \
    STANDIN_EXPORT ze_result_t getter(ze_api_version_t version, type *table); \
    ze_result_t getter(ze_api_version_t version, type *table)                 \
    {                                                                         \
        return check_version(version, table, #getter);                        \
    }
STANDIN_EMPTY_TABLES(STANDIN_EMPTY)
#undef STANDIN_EMPTY

/* A filled getter: its declaration, the version check, then the body's assignments. */
#define STANDIN_FILLED(getter, type)                                          \
    STANDIN_EXPORT ze_result_t getter(ze_api_version_t version, type *table); \
    ze_result_t getter(ze_api_version_t version, type *table)                 \
    {                                                                         \
        ze_result_t rc = check_version(version, table, #getter);              \
        if (rc == ZE_RESULT_SUCCESS) {                                        \
            fill_##getter(table);                                             \
        }                                                                     \
        return rc;                                                            \
    }
// NOLINTEND(bugprone-macro-parentheses)

static void
fill_zeGetGlobalProcAddrTable(ze_global_dditable_t *t)
{
    t->pfnInit = standin_zeInit;
}
STANDIN_FILLED(zeGetGlobalProcAddrTable, ze_global_dditable_t)

static void
fill_zeGetDriverProcAddrTable(ze_driver_dditable_t *t)
{
    t->pfnGet = standin_zeDriverGet;
    t->pfnGetApiVersion = standin_zeDriverGetApiVersion;
    t->pfnGetProperties = standin_zeDriverGetProperties;
    t->pfnGetExtensionProperties = standin_zeDriverGetExtensionProperties;
}
STANDIN_FILLED(zeGetDriverProcAddrTable, ze_driver_dditable_t)

static void
fill_zeGetDeviceProcAddrTable(ze_device_dditable_t *t)
{
    t->pfnGet = standin_zeDeviceGet;
    t->pfnGetProperties = standin_zeDeviceGetProperties;
    t->pfnGetCommandQueueGroupProperties =
        standin_zeDeviceGetCommandQueueGroupProperties;
    t->pfnGetModuleProperties = standin_zeDeviceGetModuleProperties;
    t->pfnGetComputeProperties = standin_zeDeviceGetComputeProperties;
}
STANDIN_FILLED(zeGetDeviceProcAddrTable, ze_device_dditable_t)

static void
fill_zeGetContextProcAddrTable(ze_context_dditable_t *t)
{
    t->pfnCreate = standin_zeContextCreate;
    t->pfnDestroy = standin_zeContextDestroy;
    t->pfnGetStatus = standin_zeContextGetStatus;
}
STANDIN_FILLED(zeGetContextProcAddrTable, ze_context_dditable_t)

static void
fill_zeGetCommandQueueProcAddrTable(ze_command_queue_dditable_t *t)
{
    t->pfnCreate = standin_zeCommandQueueCreate;
    t->pfnDestroy = standin_zeCommandQueueDestroy;
    t->pfnExecuteCommandLists = standin_zeCommandQueueExecuteCommandLists;
    t->pfnSynchronize = standin_zeCommandQueueSynchronize;
}
STANDIN_FILLED(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)

static void
fill_zeGetCommandListProcAddrTable(ze_command_list_dditable_t *t)
{
    t->pfnCreate = standin_zeCommandListCreate;
    t->pfnDestroy = standin_zeCommandListDestroy;
    t->pfnClose = standin_zeCommandListClose;
    t->pfnReset = standin_zeCommandListReset;
    t->pfnAppendBarrier = standin_zeCommandListAppendBarrier;
    t->pfnAppendMemoryCopy = standin_zeCommandListAppendMemoryCopy;
    t->pfnAppendMemoryFill = standin_zeCommandListAppendMemoryFill;
    t->pfnAppendLaunchKernel = standin_zeCommandListAppendLaunchKernel;
}
STANDIN_FILLED(zeGetCommandListProcAddrTable, ze_command_list_dditable_t)

static void
fill_zeGetMemProcAddrTable(ze_mem_dditable_t *t)
{
    t->pfnAllocDevice = standin_zeMemAllocDevice;
    t->pfnAllocShared = standin_zeMemAllocShared;
    t->pfnAllocHost = standin_zeMemAllocHost;
    t->pfnFree = standin_zeMemFree;
    t->pfnFreeExt = standin_zeMemFreeExt;
    t->pfnGetAllocProperties = standin_zeMemGetAllocProperties;
}
STANDIN_FILLED(zeGetMemProcAddrTable, ze_mem_dditable_t)

static void
fill_zeGetModuleProcAddrTable(ze_module_dditable_t *t)
{
    t->pfnCreate = standin_zeModuleCreate;
    t->pfnDestroy = standin_zeModuleDestroy;
}
STANDIN_FILLED(zeGetModuleProcAddrTable, ze_module_dditable_t)

static void
fill_zeGetModuleBuildLogProcAddrTable(ze_module_build_log_dditable_t *t)
{
    t->pfnDestroy = standin_zeModuleBuildLogDestroy;
    t->pfnGetString = standin_zeModuleBuildLogGetString;
}
STANDIN_FILLED(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)

static void
fill_zeGetKernelProcAddrTable(ze_kernel_dditable_t *t)
{
    t->pfnCreate = standin_zeKernelCreate;
    t->pfnDestroy = standin_zeKernelDestroy;
    t->pfnSetGroupSize = standin_zeKernelSetGroupSize;
    t->pfnSuggestGroupSize = standin_zeKernelSuggestGroupSize;
    t->pfnSetArgumentValue = standin_zeKernelSetArgumentValue;
}
STANDIN_FILLED(zeGetKernelProcAddrTable, ze_kernel_dditable_t)
