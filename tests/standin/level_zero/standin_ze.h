/*
 * standin_ze.h: the strict stand-in Level Zero driver (docs/level_zero.md), shared by
 * its files. The real loader loads it through ZE_ENABLE_ALT_DRIVERS; it exports only
 * the loader's 53 zeGet*ProcAddrTable / zetGet* / zesGet* getters and fills the tables
 * with the calls below.
 *
 * Strict where the specification allows a driver to be: every handle is looked up in
 * the stand-in's own list of live objects before it is read (an unknown or destroyed
 * handle is an error, never a crash), every descriptor's stype is checked, and every
 * error is also printed on stderr as "standin-ze: <call>: <why> (0x...)", so a test can
 * fail on any complaint it did not expect.
 *
 * Environment: TACK_STANDIN_ZE_DEVICES (root devices, default 1, at most 4);
 * TACK_STANDIN_ZE_API_VERSION ("1.0" to "1.4": what zeDriverGetApiVersion reports,
 * default 1.4); TACK_STANDIN_ZE_ENDED (standin_check_not_ended); TACK_STANDIN_ZE_LOG (a
 * file each complaint is appended to as well).
 */
#ifndef TACK_STANDIN_ZE_H
#define TACK_STANDIN_ZE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ze_api.h>
#include <ze_ddi.h>
#include <zes_ddi.h>
#include <zet_ddi.h>

#include "../../../csrc/backends/gpu/gpu_twin.h" /* the CPU twin ABI */

#define STANDIN_EXPORT __attribute__((visibility("default")))
#define STANDIN_MAX_DEVICES 4
#define STANDIN_QUEUE_GROUPS 2

/* What a handle points at. The tag is the first member of every object. */
typedef enum standin_tag {
    STANDIN_DRIVER = 0x5a440001,
    STANDIN_DEVICE,
    STANDIN_CONTEXT,
    STANDIN_QUEUE,
    STANDIN_LIST,
    STANDIN_MODULE,
    STANDIN_KERNEL,
    STANDIN_BUILD_LOG,
} standin_tag;

typedef struct standin_object {
    standin_tag tag;
    bool dead;                   /* destroyed: kept, so a later use is reported */
    struct standin_object *next; /* every object made, for lookups and the destructor */
} standin_object;

typedef struct standin_driver {
    standin_object obj;
} standin_driver;

typedef struct standin_device {
    standin_object obj;
    uint32_t index;
} standin_device;

typedef struct standin_context {
    standin_object obj;
    size_t live; /* allocations, queues and lists made in it and not yet destroyed */
} standin_context;

/* An allocation: memfd pages mapped twice. user (what the application gets) is
 * PROT_NONE for device memory, so a host access faults at once (read-write for host
 * and shared memory); the stand-in copies through alias. A
 * freed allocation keeps its user range reserved (PROT_NONE), so a use after free
 * faults too and its address is never handed out again. */
typedef struct standin_allocation {
    standin_context *context;
    standin_device *device; /* NULL for host memory and device-less shared memory */
    ze_memory_type_t type;  /* DEVICE, SHARED or HOST */
    char *user;
    char *alias; /* NULL once freed */
    size_t size;
    uint64_t id;
    bool deferred; /* zeMemFreeExt(DEFER_FREE): freed at the context's next sync */
    struct standin_allocation *next;
} standin_allocation;

/* One appended command. Pointers are the application's, translated at execution. */
typedef enum standin_command_kind {
    STANDIN_COPY,
    STANDIN_FILL,
    STANDIN_BARRIER,
    STANDIN_LAUNCH, /* touches any memory: a barrier must separate it from the rest */
} standin_command_kind;

#define STANDIN_MAX_PATTERN 128

typedef struct standin_command {
    standin_command_kind kind;
    char *dst;
    const char *src;
    size_t size;
    size_t pattern_size;
    unsigned char pattern[STANDIN_MAX_PATTERN];
    struct standin_launch *launch; /* STANDIN_LAUNCH: owned by the list's commands */
} standin_command;

typedef struct standin_list {
    standin_object obj;
    standin_context *context;
    standin_device *device;
    uint32_t group; /* the queue group it was made for */
    bool closed;
    size_t pending; /* times it is queued and not yet run */
    standin_command *commands;
    size_t ncommands, cap;
} standin_list;

typedef struct standin_queue {
    standin_object obj;
    standin_context *context;
    standin_device *device;
    uint32_t group;
    standin_list **pending; /* executed, to run at the next synchronization */
    size_t npending, cap;
} standin_queue;

/* A module: a copy of its SPIR-V words and the names of its kernel entry points. */
typedef struct standin_module {
    standin_object obj;
    standin_context *context;
    standin_device *device;
    uint32_t *words; /* Owned; NULL once destroyed */
    size_t nwords;
    char *names; /* Owned: NUL-terminated names, one after another */
    size_t names_nbytes;
    size_t kernels;   /* live kernels made from it */
    void *cl_program; /* its OpenCL program when launches execute SPIR-V, else NULL */
} standin_module;

/* A module's build log, made by zeModuleCreate when asked for (phBuildLog): the
 * OpenCL build log or the stand-in's own reason for refusing the module, "" when it
 * was built. Its owner must destroy it (zeModuleBuildLogDestroy); one still live at
 * unload is a complaint. */
typedef struct standin_build_log {
    standin_object obj;
    char *text; /* Owned; NULL once destroyed */
} standin_build_log;

/* What a kernel parameter is, read from the module's SPIR-V (OpFunctionParameter's
 * type): a value, a pointer to CrossWorkgroup (global) or Workgroup (local) memory. */
typedef enum standin_arg_kind {
    STANDIN_ARG_VALUE,
    STANDIN_ARG_GLOBAL,
    STANDIN_ARG_LOCAL,
} standin_arg_kind;

#define STANDIN_MAX_ARGS 16
#define STANDIN_MAX_ARG_NBYTES 2048

typedef struct standin_kernel {
    standin_object obj;
    standin_module *module;
    char name[256];
    uint32_t group[3];                     /* zeKernelSetGroupSize's; 0: never set */
    unsigned char *args[STANDIN_MAX_ARGS]; /* Owned: each argument's bytes, or NULL */
    size_t arg_nbytes[STANDIN_MAX_ARGS];
    bool arg_null[STANDIN_MAX_ARGS]; /* set with a NULL value (args[] holds zeros) */
    size_t appended; /* launches of it in lists not reset or destroyed since */
    void *cl_kernel; /* its OpenCL kernel when launches execute SPIR-V, else NULL */
    int nparams; /* parameters read from the SPIR-V (-1: the entry has no function) */
    standin_arg_kind kinds[STANDIN_MAX_ARGS];
} standin_kernel;

/* A launch as appended: the kernel's arguments packed then, and the twin that
 * computes it. */
typedef struct standin_launch {
    standin_kernel *kernel;
    tack_standin_twin_fn fn;
    void *user;
    uint32_t groups[3];    /* the group count */
    uint32_t group[3];     /* the group size */
    unsigned char *params; /* twin: the packed block; SPIR-V: each argument's bytes */
    size_t params_nbytes;
    void *cl_kernel;                 /* SPIR-V: the OpenCL kernel, else NULL */
    int nargs;                       /* SPIR-V: the arguments and where they are */
    size_t arg_at[STANDIN_MAX_ARGS]; /* in params */
    size_t arg_nbytes[STANDIN_MAX_ARGS];
    bool arg_null[STANDIN_MAX_ARGS]; /* set with a NULL value (local memory, NULL) */
} standin_launch;

/* The process-wide state, under standin_lock. */
extern pthread_mutex_t standin_lock;
extern standin_driver standin_the_driver;
extern standin_device standin_devices[STANDIN_MAX_DEVICES];
extern uint32_t standin_ndevices;

/* Prints "standin-ze: call: why (0x...)" on stderr and returns rc. */
ze_result_t standin_complain(ze_result_t rc, const char *call, const char *why, ...)
    __attribute__((format(printf, 3, 4)));

/* ZE_RESULT_ERROR_UNINITIALIZED, complained of, once $TACK_STANDIN_ZE_ENDED is set (a
 * test sets it when its application has ended: a free or destroy after that is the
 * mistake of a library that outlives its context's owner); else success. */
ze_result_t standin_check_not_ended(const char *call);

/* What zeDriverGetApiVersion reports. */
ze_api_version_t standin_api_version(void);

/* Whether zeInit succeeded; every other call but the getters refuses before it. */
bool standin_initialised(void);

/* The live object of that tag that h points at, or NULL (and the complaint printed,
 * *rc set) when h is NULL, unknown, of another kind, or destroyed. Call under
 * standin_lock. */
void *standin_find(const void *h, standin_tag tag, const char *call, ze_result_t *rc);

/* Adds a new object (calloc'd, size bytes, tag set) to the list. NULL when out of
 * memory. Call under standin_lock. */
void *standin_new(size_t size, standin_tag tag);

/* The calls of each file, for the tables (standin_ze_tables.c). */
ze_result_t standin_zeInit(ze_init_flags_t flags);
ze_result_t standin_zeDriverGet(uint32_t *pCount, ze_driver_handle_t *phDrivers);
ze_result_t standin_zeDriverGetApiVersion(ze_driver_handle_t hDriver,
                                          ze_api_version_t *version);
ze_result_t standin_zeDriverGetProperties(ze_driver_handle_t hDriver,
                                          ze_driver_properties_t *props);
ze_result_t standin_zeDriverGetExtensionProperties(
    ze_driver_handle_t hDriver, uint32_t *pCount,
    ze_driver_extension_properties_t *props);
ze_result_t standin_zeDeviceGet(ze_driver_handle_t hDriver, uint32_t *pCount,
                                ze_device_handle_t *phDevices);
ze_result_t standin_zeDeviceGetProperties(ze_device_handle_t hDevice,
                                          ze_device_properties_t *props);
ze_result_t standin_zeDeviceGetCommandQueueGroupProperties(
    ze_device_handle_t hDevice, uint32_t *pCount,
    ze_command_queue_group_properties_t *props);
/* The largest fill pattern of queue group group (0 for no such group). */
size_t standin_fill_pattern_limit(uint32_t group);
ze_result_t standin_zeContextCreate(ze_driver_handle_t hDriver,
                                    const ze_context_desc_t *desc,
                                    ze_context_handle_t *phContext);
ze_result_t standin_zeContextDestroy(ze_context_handle_t hContext);

/* The live allocation holding [p, p + n) (n may be 0), or NULL; with deferred_ok one
 * whose free waits for queued work counts as live (for that work). *any_alloc is set
 * to the allocation (live, freed or deferred) whose reserved range holds p, if any.
 * Call under standin_lock. */
standin_allocation *standin_allocation_at(const void *p, size_t n, bool deferred_ok,
                                          standin_allocation **any_alloc);
/* Frees every deferred allocation of context c. Call under standin_lock. */
void standin_free_deferred(standin_context *c);
/* Whether context c has lists queued and not yet run. Call under standin_lock. */
bool standin_context_busy(const standin_context *c);
/* A context of a call, looked up under standin_lock (taken and released here). */
standin_context *standin_context_of(ze_context_handle_t h, const char *call,
                                    ze_result_t *rc);
/* check_stype of standin_ze_core.c: ZE_RESULT_ERROR_INVALID_ARGUMENT (complained)
 * unless got == want. */
ze_result_t standin_check_stype(ze_structure_type_t got, ze_structure_type_t want,
                                const char *call);

ze_result_t standin_zeContextGetStatus(ze_context_handle_t hContext);
ze_result_t standin_zeMemAllocDevice(ze_context_handle_t hContext,
                                     const ze_device_mem_alloc_desc_t *desc,
                                     size_t size, size_t alignment,
                                     ze_device_handle_t hDevice, void **pptr);
ze_result_t standin_zeMemAllocShared(ze_context_handle_t hContext,
                                     const ze_device_mem_alloc_desc_t *device_desc,
                                     const ze_host_mem_alloc_desc_t *host_desc,
                                     size_t size, size_t alignment,
                                     ze_device_handle_t hDevice, void **pptr);
ze_result_t standin_zeMemAllocHost(ze_context_handle_t hContext,
                                   const ze_host_mem_alloc_desc_t *host_desc,
                                   size_t size, size_t alignment, void **pptr);
ze_result_t standin_zeMemFree(ze_context_handle_t hContext, void *ptr);
ze_result_t standin_zeMemFreeExt(ze_context_handle_t hContext,
                                 const ze_memory_free_ext_desc_t *desc, void *ptr);
ze_result_t standin_zeMemGetAllocProperties(ze_context_handle_t hContext,
                                            const void *ptr,
                                            ze_memory_allocation_properties_t *props,
                                            ze_device_handle_t *phDevice);
ze_result_t standin_zeCommandQueueCreate(ze_context_handle_t hContext,
                                         ze_device_handle_t hDevice,
                                         const ze_command_queue_desc_t *desc,
                                         ze_command_queue_handle_t *phCommandQueue);
ze_result_t standin_zeCommandQueueDestroy(ze_command_queue_handle_t hCommandQueue);
ze_result_t standin_zeCommandQueueExecuteCommandLists(
    ze_command_queue_handle_t hCommandQueue, uint32_t numCommandLists,
    ze_command_list_handle_t *phCommandLists, ze_fence_handle_t hFence);
ze_result_t standin_zeCommandQueueSynchronize(ze_command_queue_handle_t hCommandQueue,
                                              uint64_t timeout);
ze_result_t standin_zeCommandListCreate(ze_context_handle_t hContext,
                                        ze_device_handle_t hDevice,
                                        const ze_command_list_desc_t *desc,
                                        ze_command_list_handle_t *phCommandList);
ze_result_t standin_zeCommandListDestroy(ze_command_list_handle_t hCommandList);
ze_result_t standin_zeCommandListClose(ze_command_list_handle_t hCommandList);
ze_result_t standin_zeCommandListReset(ze_command_list_handle_t hCommandList);
ze_result_t standin_zeCommandListAppendBarrier(ze_command_list_handle_t hCommandList,
                                               ze_event_handle_t hSignalEvent,
                                               uint32_t numWaitEvents,
                                               ze_event_handle_t *phWaitEvents);
ze_result_t standin_zeCommandListAppendMemoryCopy(ze_command_list_handle_t hCommandList,
                                                  void *dstptr, const void *srcptr,
                                                  size_t size,
                                                  ze_event_handle_t hSignalEvent,
                                                  uint32_t numWaitEvents,
                                                  ze_event_handle_t *phWaitEvents);
ze_result_t standin_zeCommandListAppendMemoryFill(ze_command_list_handle_t hCommandList,
                                                  void *ptr, const void *pattern,
                                                  size_t pattern_size, size_t size,
                                                  ze_event_handle_t hSignalEvent,
                                                  uint32_t numWaitEvents,
                                                  ze_event_handle_t *phWaitEvents);

/* Appends cmd to the list behind h after the checks every append shares
 * (standin_ze_queue.c). A launch's cmd->launch is the caller's until this succeeds. */
ze_result_t standin_append(ze_command_list_handle_t h, const standin_command *cmd,
                           ze_event_handle_t signal, uint32_t nwait,
                           const ze_event_handle_t *wait, const char *call);

/* standin_ze_module.c */
/* Runs an appended launch of list l with its twin. Call under standin_lock. */
ze_result_t standin_launch_run(const standin_list *l, const standin_launch *launch);
/* Empties l's commands, freeing their launches. Call under standin_lock. */
void standin_commands_clear(standin_list *l);
/* Frees what a module or kernel owns (at destroy, or at unload). */
void standin_module_release(standin_module *m);
void standin_kernel_release(standin_kernel *k);
ze_result_t standin_zeDeviceGetModuleProperties(ze_device_handle_t hDevice,
                                                ze_device_module_properties_t *props);
ze_result_t standin_zeDeviceGetComputeProperties(ze_device_handle_t hDevice,
                                                 ze_device_compute_properties_t *props);
ze_result_t standin_zeModuleCreate(ze_context_handle_t hContext,
                                   ze_device_handle_t hDevice,
                                   const ze_module_desc_t *desc,
                                   ze_module_handle_t *phModule,
                                   ze_module_build_log_handle_t *phBuildLog);
ze_result_t standin_zeModuleDestroy(ze_module_handle_t hModule);
ze_result_t standin_zeModuleBuildLogDestroy(
    ze_module_build_log_handle_t hModuleBuildLog);
ze_result_t standin_zeModuleBuildLogGetString(
    ze_module_build_log_handle_t hModuleBuildLog, size_t *pSize, char *pBuildLog);
/* Makes a build log of text (copied) into *phBuildLog when phBuildLog is not NULL
 * (NULL there when out of memory). Takes standin_lock. */
void standin_build_log_give(ze_module_build_log_handle_t *phBuildLog, const char *text);
/* Complains of a build log never destroyed, and frees what it owns (at unload). */
void standin_build_log_release(standin_build_log *log);
ze_result_t standin_zeKernelCreate(ze_module_handle_t hModule,
                                   const ze_kernel_desc_t *desc,
                                   ze_kernel_handle_t *phKernel);
ze_result_t standin_zeKernelDestroy(ze_kernel_handle_t hKernel);
ze_result_t standin_zeKernelSetGroupSize(ze_kernel_handle_t hKernel,
                                         uint32_t groupSizeX, uint32_t groupSizeY,
                                         uint32_t groupSizeZ);
ze_result_t standin_zeKernelSuggestGroupSize(ze_kernel_handle_t hKernel,
                                             uint32_t globalSizeX, uint32_t globalSizeY,
                                             uint32_t globalSizeZ, uint32_t *groupSizeX,
                                             uint32_t *groupSizeY,
                                             uint32_t *groupSizeZ);
ze_result_t standin_zeKernelSetArgumentValue(ze_kernel_handle_t hKernel,
                                             uint32_t argIndex, size_t argSize,
                                             const void *pArgValue);
ze_result_t standin_zeCommandListAppendLaunchKernel(
    ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
    const ze_group_count_t *pLaunchFuncArgs, ze_event_handle_t hSignalEvent,
    uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents);

/* standin_ze_opencl.c: launches that execute the module's SPIR-V on OpenCL. */
/* Whether launches execute SPIR-V ($TACK_STANDIN_ZE_EXECUTE and whether OpenCL
 * offers a device that can); decided once, with a note. Call under standin_lock. */
bool standin_cl_executes(void);
/* The work items and bytes of local memory one group may use: the OpenCL device's
 * (CL_DEVICE_MAX_WORK_GROUP_SIZE, CL_DEVICE_LOCAL_MEM_SIZE) when launches execute
 * SPIR-V, else a real Intel GPU's (1024, 64 KiB); $TACK_STANDIN_ZE_LOCAL_MEMORY (bytes)
 * replaces the local memory, for testing a kernel that needs more. Under the lock. */
void standin_group_limits(uint32_t *max_group, uint32_t *local_nbytes);
/* Why $TACK_STANDIN_ZE_EXECUTE=spirv cannot be honoured, or NULL. Under the lock. */
const char *standin_cl_refusal(void);
/* Builds m's SPIR-V (m->cl_program); ZE_RESULT_ERROR_MODULE_BUILD_FAILURE with the
 * build log in *log (malloc'd) when it fails. Under standin_lock. */
ze_result_t standin_cl_build(standin_module *m, char **log);
/* Makes k's OpenCL kernel and reads its parameter kinds. Under standin_lock. */
ze_result_t standin_cl_kernel(standin_kernel *k, const char *call);
/* Runs launch on OpenCL with the device memory of l's context and device opened to
 * it, and waits for it. Under standin_lock. */
ze_result_t standin_cl_run(const standin_list *l, const standin_launch *launch);
void standin_cl_release(void *program, void *kernel);
/* Counts a launch computed by a twin. Under standin_lock. */
void standin_count_twin(void);
/* The kinds of entry's parameters in a SPIR-V module (standin_ze_spirv.c): their
 * number, or -1 when the entry point has no function. */
int standin_spirv_params(const uint32_t *words, size_t nwords, const char *entry,
                         standin_arg_kind *kinds, int max);
/* Opens (prot PROT_READ|PROT_WRITE) or closes (PROT_NONE) the application view of
 * every live device allocation of l's context and device (standin_ze_memory.c), for a
 * launch's execution. Under standin_lock. */
void standin_views_protect(const standin_list *l, int prot);

#endif /* TACK_STANDIN_ZE_H */
