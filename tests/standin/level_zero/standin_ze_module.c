/*
 * standin_ze_module.c: the stand-in's modules, kernels and kernel launches, and the
 * registry of CPU twins that computes those launches (csrc/backends/gpu/gpu_twin.h is
 * the ABI both sides include).
 *
 * A module is made from SPIR-V only (ZE_MODULE_FORMAT_IL_SPIRV): the words are checked
 * for SPIR-V's magic and a whole header, and the names of its OpenCL kernel entry
 * points are read from its OpEntryPoint instructions, so zeKernelCreate refuses a name
 * the module does not define, as a real driver does. The stand-in runs no SPIR-V here:
 * a launch is appended with the twin registered for its kernel's name at that moment
 * and refused with ZE_RESULT_ERROR_UNSUPPORTED_FEATURE when none is (succeeding would
 * leave the output untouched and pass for a wrong answer).
 *
 * Stricter than a real driver where Tack's correctness depends on it:
 * - a kernel is launched only with every argument up to the highest one set, and
 *   with a group size set (zeKernelSetGroupSize), so a launch never runs on stale or
 *   default state;
 * - a module is destroyed only after its kernels, a kernel only when no command list
 *   holds a launch of it (until the list is reset or destroyed);
 * - a launch whose local-memory arguments take more than the device's
 *   maxSharedLocalMemory (zeDeviceGetComputeProperties) is refused with
 *   ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, where OpenCL would fail it at run time
 *   (CL_OUT_OF_RESOURCES) or a GPU hang;
 * - the stand-in cannot see which memory a kernel touches, so a launch counts as
 *   touching all of it: a barrier must separate it from every other command of its
 *   list (standin_ze_queue.c's race check).
 *
 * Environment: TACK_STANDIN_ZE_FP64=0 makes the devices report no fp64
 * (zeDeviceGetModuleProperties), for testing a float64 kernel's refusal;
 * TACK_STANDIN_ZE_FAIL_BUILD=<text> makes every zeModuleCreate whose arguments are
 * right fail with ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, <text> its build log
 * (standin_ze_build_log.c), for testing what a caller does with a driver's log;
 * TACK_STANDIN_ZE_LOCAL_MEMORY=<bytes> is the devices' maxSharedLocalMemory
 * (standin_group_limits), for testing a kernel that needs more.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, strnlen */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "standin_ze.h"

#define SPIRV_MAGIC 0x07230203u
#define SPIRV_OP_ENTRY_POINT 15u
#define SPIRV_EXECUTION_KERNEL 6u

typedef struct twin {
    char *entry;
    tack_standin_twin_fn fn;
    void *user;
    struct twin *next;
} twin;

static twin *twins; /* under standin_lock; freed at unload */

STANDIN_EXPORT int tack_standin_ze_register_twin(const char *entry,
                                                 tack_standin_twin_fn fn, void *user);

int
tack_standin_ze_register_twin(const char *entry, tack_standin_twin_fn fn, void *user)
{
    if (!entry || !fn) {
        return -1;
    }
    pthread_mutex_lock(&standin_lock);
    twin *t = twins;
    while (t && strcmp(t->entry, entry) != 0) {
        t = t->next;
    }
    int rc = 0;
    if (!t && (t = calloc(1, sizeof *t)) != NULL) {
        t->entry = strdup(entry);
        if (t->entry) {
            t->next = twins;
            twins = t;
        }
        else {
            free(t);
            t = NULL;
        }
    }
    if (t) {
        t->fn = fn;
        t->user = user;
    }
    else {
        rc = -1;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

__attribute__((destructor)) static void
free_twins(void)
{
    while (twins) {
        twin *next = twins->next;
        free(twins->entry);
        free(twins);
        twins = next;
    }
}

/* ---- device compute and module properties ---------------------------------------- */

/* A device query's checks: a live device, a properties struct (stype is its first
 * member, NULL when it is NULL) of the stype want; the complaint's result, else
 * success. */
static ze_result_t
check_query(ze_device_handle_t hDevice, const ze_structure_type_t *stype,
            ze_structure_type_t want, const char *call)
{
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_device *d = standin_find(hDevice, STANDIN_DEVICE, call, &rc);
    pthread_mutex_unlock(&standin_lock);
    if (!d) {
        return rc;
    }
    if (!stype) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                "props is NULL");
    }
    return standin_check_stype(*stype, want, call);
}

ze_result_t
standin_zeDeviceGetComputeProperties(ze_device_handle_t hDevice,
                                     ze_device_compute_properties_t *props)
{
    ze_result_t rc = check_query(hDevice, props ? &props->stype : NULL,
                                 ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES,
                                 "zeDeviceGetComputeProperties");
    if (rc != ZE_RESULT_SUCCESS || !props) { /* check_query refused a NULL props */
        return rc != ZE_RESULT_SUCCESS ? rc : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    }
    uint32_t max_group = 0, local_nbytes = 0;
    pthread_mutex_lock(&standin_lock);
    standin_group_limits(&max_group, &local_nbytes);
    pthread_mutex_unlock(&standin_lock);
    void *next = props->pNext;
    memset(props, 0, sizeof *props);
    props->stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
    props->pNext = next;
    props->maxTotalGroupSize = max_group;
    props->maxGroupSizeX = props->maxGroupSizeY = props->maxGroupSizeZ = max_group;
    props->maxGroupCountX = props->maxGroupCountY = props->maxGroupCountZ = UINT32_MAX;
    props->maxSharedLocalMemory = local_nbytes;
    props->numSubGroupSizes = 3;
    props->subGroupSizes[0] = 8;
    props->subGroupSizes[1] = 16;
    props->subGroupSizes[2] = 32;
    return ZE_RESULT_SUCCESS;
}

ze_result_t
standin_zeDeviceGetModuleProperties(ze_device_handle_t hDevice,
                                    ze_device_module_properties_t *props)
{
    ze_result_t rc = check_query(hDevice, props ? &props->stype : NULL,
                                 ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES,
                                 "zeDeviceGetModuleProperties");
    if (rc != ZE_RESULT_SUCCESS || !props) { /* check_query refused a NULL props */
        return rc != ZE_RESULT_SUCCESS ? rc : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    }
    const char *fp64 = getenv("TACK_STANDIN_ZE_FP64");
    void *next = props->pNext;
    memset(props, 0, sizeof *props);
    props->stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
    props->pNext = next;
    props->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
    props->flags = ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS;
    if (!fp64 || strcmp(fp64, "0") != 0) {
        props->flags |= ZE_DEVICE_MODULE_FLAG_FP64;
        props->fp64flags = ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST | ZE_DEVICE_FP_FLAG_FMA;
    }
    props->fp16flags = ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST;
    props->fp32flags = ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST | ZE_DEVICE_FP_FLAG_FMA;
    props->maxArgumentsSize = 2048;
    props->printfBufferSize = 0;
    return ZE_RESULT_SUCCESS;
}

/* ---- modules --------------------------------------------------------------------- */

/* The kernel entry points of a SPIR-V module of nwords words (a whole header checked
 * by the caller), as one buffer of NUL-terminated names. Returns false for a module
 * whose instructions do not tile its words or whose names are not terminated. */
static bool
read_entry_points(const uint32_t *words, size_t nwords, char **names, size_t *nbytes)
{
    size_t used = 0, cap = 64;
    char *out = malloc(cap);
    for (size_t at = 5; out && at < nwords;) {
        uint32_t count = words[at] >> 16, op = words[at] & 0xffffu;
        if (count == 0 || count > nwords - at) {
            break;
        }
        if (op == SPIRV_OP_ENTRY_POINT && count > 3 &&
            words[at + 1] == SPIRV_EXECUTION_KERNEL) {
            const char *name = (const char *)&words[at + 3];
            size_t len = strnlen(name, 4 * (size_t)(count - 3));
            if (len == 4 * (size_t)(count - 3)) {
                break;
            }
            if (used + len + 1 > cap) {
                cap = 2 * (used + len + 1);
                char *grown = realloc(out, cap);
                if (!grown) {
                    break;
                }
                out = grown;
            }
            memcpy(out + used, name, len + 1);
            used += len + 1;
        }
        at += count;
        if (at == nwords) {
            *names = out;
            *nbytes = used;
            return true;
        }
    }
    free(out);
    return false;
}

/* Whether name is one of m's entry points. */
static bool
has_entry(const standin_module *m, const char *name)
{
    for (size_t at = 0; at < m->names_nbytes; at += strlen(m->names + at) + 1) {
        if (strcmp(m->names + at, name) == 0) {
            return true;
        }
    }
    return false;
}

/* The checks of zeModuleCreate's arguments but the handles. A module that is not
 * SPIR-V gets a build log (when asked for) saying so. */
static ze_result_t
check_module_desc(const ze_module_desc_t *desc, ze_module_handle_t *phModule,
                  ze_module_build_log_handle_t *phBuildLog, const char *call)
{
    if (!desc || !phModule) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                "desc or phModule is NULL");
    }
    ze_result_t rc =
        standin_check_stype(desc->stype, ZE_STRUCTURE_TYPE_MODULE_DESC, call);
    if (rc != ZE_RESULT_SUCCESS) {
        return rc;
    }
    if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_ENUMERATION, call,
                                "format %d: the stand-in takes SPIR-V only",
                                (int)desc->format);
    }
    uint32_t magic = 0;
    if (desc->pInputModule && desc->inputSize >= 20) {
        memcpy(&magic, desc->pInputModule, 4);
    }
    if (!desc->pInputModule || desc->inputSize < 20 || desc->inputSize % 4 ||
        magic != SPIRV_MAGIC) {
        char why[160];
        snprintf(why, sizeof why,
                 "%zu bytes that are not a SPIR-V module (no header, not whole "
                 "words, or no magic number)",
                 desc->inputSize);
        standin_build_log_give(phBuildLog, why);
        return standin_complain(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY, call, "%s", why);
    }
    return ZE_RESULT_SUCCESS;
}

ze_result_t
standin_zeModuleCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                       const ze_module_desc_t *desc, ze_module_handle_t *phModule,
                       ze_module_build_log_handle_t *phBuildLog)
{
    const char *call = "zeModuleCreate";
    ze_result_t rc = check_module_desc(desc, phModule, phBuildLog, call);
    if (rc != ZE_RESULT_SUCCESS) {
        return rc;
    }
    const char *fail = getenv("TACK_STANDIN_ZE_FAIL_BUILD");
    if (fail && *fail) { /* told to: the text is the build log, and no complaint */
        standin_build_log_give(phBuildLog, fail);
        return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    size_t nwords = desc->inputSize / 4;
    uint32_t *words = malloc(desc->inputSize);
    if (!words) {
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    memcpy(words, desc->pInputModule, desc->inputSize);
    char *names = NULL;
    size_t names_nbytes = 0;
    if (!read_entry_points(words, nwords, &names, &names_nbytes)) {
        free(words);
        static const char why[] = "the SPIR-V module's instructions are malformed";
        standin_build_log_give(phBuildLog, why);
        return standin_complain(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, call, "%s", why);
    }
    pthread_mutex_lock(&standin_lock);
    standin_context *c = standin_find(hContext, STANDIN_CONTEXT, call, &rc);
    standin_device *d = c ? standin_find(hDevice, STANDIN_DEVICE, call, &rc) : NULL;
    standin_module built = {.words = words, .nwords = nwords};
    char *log = NULL;
    if (d && standin_cl_executes() &&
        (rc = standin_cl_build(&built, &log)) != ZE_RESULT_SUCCESS) {
        standin_complain(rc, call, "OpenCL cannot build the SPIR-V module: %.300s",
                         log ? log : "(no build log)");
        d = NULL;
    }
    standin_module *m = d ? standin_new(sizeof *m, STANDIN_MODULE) : NULL;
    if (d && !m) {
        rc = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (m) {
        m->context = c;
        m->device = d;
        m->words = words;
        m->nwords = nwords;
        m->names = names;
        m->names_nbytes = names_nbytes;
        m->cl_program = built.cl_program;
        c->live++;
        *phModule = (ze_module_handle_t)m;
    }
    pthread_mutex_unlock(&standin_lock);
    if (m || log) { /* built, or OpenCL's refusal: the build said something */
        standin_build_log_give(phBuildLog, log ? log : "");
    }
    free(log);
    if (!m) {
        standin_cl_release(built.cl_program, NULL);
        free(words);
        free(names);
    }
    return rc;
}

ze_result_t
standin_zeModuleDestroy(ze_module_handle_t hModule)
{
    const char *call = "zeModuleDestroy";
    if (standin_check_not_ended(call) != ZE_RESULT_SUCCESS) {
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_module *m = standin_find(hModule, STANDIN_MODULE, call, &rc);
    if (m && m->kernels) {
        rc =
            standin_complain(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, call,
                             "%zu kernels of the module are not destroyed", m->kernels);
    }
    else if (m) {
        standin_module_release(m);
        m->context->live--;
        m->obj.dead = true;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

void
standin_module_release(standin_module *m)
{
    standin_cl_release(m->cl_program, NULL);
    m->cl_program = NULL;
    free(m->words);
    free(m->names);
    m->words = NULL;
    m->names = NULL;
    m->names_nbytes = 0;
}

/* ---- kernels --------------------------------------------------------------------- */

ze_result_t
standin_zeKernelCreate(ze_module_handle_t hModule, const ze_kernel_desc_t *desc,
                       ze_kernel_handle_t *phKernel)
{
    const char *call = "zeKernelCreate";
    if (!desc || !phKernel || !desc->pKernelName) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                "desc, its pKernelName or phKernel is NULL");
    }
    ze_result_t rc =
        standin_check_stype(desc->stype, ZE_STRUCTURE_TYPE_KERNEL_DESC, call);
    if (rc != ZE_RESULT_SUCCESS) {
        return rc;
    }
    size_t len = strlen(desc->pKernelName);
    if (len >= sizeof(((standin_kernel *)0)->name)) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_KERNEL_NAME, call,
                                "a kernel name of %zu bytes is too long", len);
    }
    pthread_mutex_lock(&standin_lock);
    standin_module *m = standin_find(hModule, STANDIN_MODULE, call, &rc);
    if (m && !has_entry(m, desc->pKernelName)) {
        rc = standin_complain(ZE_RESULT_ERROR_INVALID_KERNEL_NAME, call,
                              "the module has no kernel entry point '%s'",
                              desc->pKernelName);
        m = NULL;
    }
    standin_kernel *k = m ? standin_new(sizeof *k, STANDIN_KERNEL) : NULL;
    if (m && !k) {
        rc = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (k) {
        k->module = m;
        memcpy(k->name, desc->pKernelName, len + 1);
        k->nparams = standin_spirv_params(m->words, m->nwords, k->name, k->kinds,
                                          STANDIN_MAX_ARGS);
        rc = m->cl_program ? standin_cl_kernel(k, call) : ZE_RESULT_SUCCESS;
        if (rc != ZE_RESULT_SUCCESS) {
            k->obj.dead = true;
            k = NULL;
        }
    }
    if (k) {
        m->kernels++;
        *phKernel = (ze_kernel_handle_t)k;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeKernelDestroy(ze_kernel_handle_t hKernel)
{
    const char *call = "zeKernelDestroy";
    if (standin_check_not_ended(call) != ZE_RESULT_SUCCESS) {
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_kernel *k = standin_find(hKernel, STANDIN_KERNEL, call, &rc);
    if (k && k->appended) {
        rc = standin_complain(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, call,
                              "%zu launches of the kernel are in command lists not "
                              "reset or destroyed since",
                              k->appended);
    }
    else if (k) {
        k->module->kernels--;
        standin_kernel_release(k);
        k->obj.dead = true;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeKernelSetGroupSize(ze_kernel_handle_t hKernel, uint32_t groupSizeX,
                             uint32_t groupSizeY, uint32_t groupSizeZ)
{
    const char *call = "zeKernelSetGroupSize";
    uint64_t total = (uint64_t)groupSizeX * groupSizeY * groupSizeZ;
    uint32_t max_group = 0, local_nbytes = 0;
    pthread_mutex_lock(&standin_lock);
    standin_group_limits(&max_group, &local_nbytes);
    pthread_mutex_unlock(&standin_lock);
    if (total == 0 || total > max_group) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION, call,
                                "group size %ux%ux%u: each must be at least 1 and the "
                                "product at most %u (maxTotalGroupSize)",
                                groupSizeX, groupSizeY, groupSizeZ, max_group);
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_kernel *k = standin_find(hKernel, STANDIN_KERNEL, call, &rc);
    if (k) {
        k->group[0] = groupSizeX;
        k->group[1] = groupSizeY;
        k->group[2] = groupSizeZ;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

/* The largest divisor of n that is at most limit (n >= 1). */
static uint32_t
divisor_up_to(uint32_t n, uint32_t limit)
{
    for (uint32_t d = n < limit ? n : limit; d > 1; d--) {
        if (n % d == 0) {
            return d;
        }
    }
    return 1;
}

ze_result_t
standin_zeKernelSuggestGroupSize(ze_kernel_handle_t hKernel, uint32_t globalSizeX,
                                 uint32_t globalSizeY, uint32_t globalSizeZ,
                                 uint32_t *groupSizeX, uint32_t *groupSizeY,
                                 uint32_t *groupSizeZ)
{
    const char *call = "zeKernelSuggestGroupSize";
    if (!groupSizeX || !groupSizeY || !groupSizeZ) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                "an out-parameter is NULL");
    }
    if (!globalSizeX || !globalSizeY || !globalSizeZ) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION, call,
                                "a global size of 0");
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_kernel *k = standin_find(hKernel, STANDIN_KERNEL, call, &rc);
    pthread_mutex_unlock(&standin_lock);
    if (k) {
        /* as a real driver: sizes that divide the global ones, up to 256 threads */
        *groupSizeX = divisor_up_to(globalSizeX, 256);
        *groupSizeY = divisor_up_to(globalSizeY, 256 / *groupSizeX);
        *groupSizeZ = divisor_up_to(globalSizeZ, 256 / (*groupSizeX * *groupSizeY));
    }
    return rc;
}

ze_result_t
standin_zeKernelSetArgumentValue(ze_kernel_handle_t hKernel, uint32_t argIndex,
                                 size_t argSize, const void *pArgValue)
{
    const char *call = "zeKernelSetArgumentValue";
    if (argIndex >= STANDIN_MAX_ARGS || argSize == 0 ||
        (pArgValue && argSize > STANDIN_MAX_ARG_NBYTES)) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX, call,
                                "argument %u of %zu bytes at %p: the stand-in takes "
                                "indices below %d, 1 to %d bytes by value",
                                (unsigned)argIndex, argSize, pArgValue,
                                STANDIN_MAX_ARGS, STANDIN_MAX_ARG_NBYTES);
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_kernel *k = standin_find(hKernel, STANDIN_KERNEL, call, &rc);
    standin_arg_kind kind =
        k && (int)argIndex < k->nparams ? k->kinds[argIndex] : STANDIN_ARG_VALUE;
    const char *bad = NULL;
    if (k && k->nparams >= 0 && (int)argIndex >= k->nparams) {
        bad = "is past the kernel's parameters";
    }
    else if (k && kind == STANDIN_ARG_LOCAL && pArgValue) {
        bad = "is local memory: its value must be NULL (the size is what is set)";
    }
    else if (k && kind != STANDIN_ARG_LOCAL && !pArgValue &&
             (kind != STANDIN_ARG_GLOBAL || argSize != sizeof(void *))) {
        bad = "is a value: a NULL value is only for a pointer or local memory";
    }
    else if (k && kind == STANDIN_ARG_GLOBAL && argSize != sizeof(void *)) {
        bad = "is a global pointer: its size is 8";
    }
    if (bad) {
        rc = standin_complain(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE, call,
                              "argument %u (%zu bytes) of kernel '%s' %s",
                              (unsigned)argIndex, argSize, k->name, bad);
        k = NULL;
    }
    /* a NULL value is kept as zero bytes: a NULL pointer, or local memory's size */
    unsigned char *copy = k ? calloc(1, pArgValue ? argSize : sizeof(void *)) : NULL;
    if (k && !copy) {
        rc = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (copy) {
        if (pArgValue) {
            memcpy(copy, pArgValue, argSize);
        }
        free(k->args[argIndex]);
        k->args[argIndex] = copy;
        k->arg_nbytes[argIndex] = argSize;
        k->arg_null[argIndex] = !pArgValue;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

void
standin_kernel_release(standin_kernel *k)
{
    standin_cl_release(NULL, k->cl_kernel);
    k->cl_kernel = NULL;
    for (int i = 0; i < STANDIN_MAX_ARGS; i++) {
        free(k->args[i]);
        k->args[i] = NULL;
    }
}

/* ---- launches -------------------------------------------------------------------- */

/* The parameter block of a launch of k: its arguments in order, each at an 8-byte
 * boundary (gpu_twin.h's layout for Tack's entry points, whose arguments are the
 * parameter struct and 8-byte scalars). A pointer set with a NULL value is 8 zero
 * bytes; local memory takes no room (a twin makes its own, as a CUDA twin does for
 * shared memory). Where each argument is, for OpenCL, in out->arg_at. Call under
 * standin_lock. */
static ze_result_t
pack_arguments(const standin_kernel *k, standin_launch *out, const char *call)
{
    int n = STANDIN_MAX_ARGS;
    while (n > 0 && !k->args[n - 1]) {
        n--;
    }
    if (out->cl_kernel && n < k->nparams) {
        n = k->nparams; /* OpenCL runs only with every parameter set */
    }
    size_t nbytes = 0, stored[STANDIN_MAX_ARGS];
    for (int i = 0; i < n; i++) {
        if (!k->args[i]) {
            return standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                                    "argument %d of kernel '%s' was never set", i,
                                    k->name);
        }
        bool local = i < k->nparams && k->kinds[i] == STANDIN_ARG_LOCAL;
        stored[i] = !k->arg_null[i] ? k->arg_nbytes[i] : local ? 0 : sizeof(void *);
        nbytes += (stored[i] + 7) & ~(size_t)7;
    }
    out->params = calloc(1, nbytes ? nbytes : 1);
    if (!out->params) {
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(out->params + at, k->args[i], stored[i]);
        out->arg_at[i] = at;
        out->arg_nbytes[i] = k->arg_nbytes[i];
        out->arg_null[i] = k->arg_null[i];
        at += (stored[i] + 7) & ~(size_t)7;
    }
    out->nargs = n;
    out->params_nbytes = nbytes;
    return ZE_RESULT_SUCCESS;
}

/* The bytes of local memory a launch of k takes: the sizes its local-memory
 * arguments were set to, each the whole group's (as OpenCL's clSetKernelArg). Call
 * under standin_lock. */
static uint64_t
local_nbytes(const standin_kernel *k)
{
    uint64_t n = 0;
    for (int i = 0; i < k->nparams && i < STANDIN_MAX_ARGS; i++) {
        if (k->kinds[i] == STANDIN_ARG_LOCAL && k->args[i]) {
            n += k->arg_nbytes[i];
        }
    }
    return n;
}

ze_result_t
standin_zeCommandListAppendLaunchKernel(ze_command_list_handle_t hCommandList,
                                        ze_kernel_handle_t hKernel,
                                        const ze_group_count_t *pLaunchFuncArgs,
                                        ze_event_handle_t hSignalEvent,
                                        uint32_t numWaitEvents,
                                        ze_event_handle_t *phWaitEvents)
{
    const char *call = "zeCommandListAppendLaunchKernel";
    if (!pLaunchFuncArgs || !pLaunchFuncArgs->groupCountX ||
        !pLaunchFuncArgs->groupCountY || !pLaunchFuncArgs->groupCountZ) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                                "no group count, or a count of 0");
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    standin_command cmd = {.kind = STANDIN_LAUNCH};
    standin_launch *launch = calloc(1, sizeof *launch);
    if (!launch) {
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    pthread_mutex_lock(&standin_lock);
    standin_kernel *k = standin_find(hKernel, STANDIN_KERNEL, call, &rc);
    const twin *t = twins;
    while (k && t && strcmp(t->entry, k->name) != 0) {
        t = t->next;
    }
    bool spirv = k && k->cl_kernel;
    const char *refused = k ? standin_cl_refusal() : NULL;
    uint32_t max_group = 0, local_max = 0;
    standin_group_limits(&max_group, &local_max);
    (void)max_group; /* zeKernelSetGroupSize checked the group size */
    uint64_t local = 0;
    if (k && !k->group[0]) {
        rc = standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                              "kernel '%s' has no group size: call "
                              "zeKernelSetGroupSize first",
                              k->name);
    }
    else if (k && (local = local_nbytes(k)) > local_max) {
        rc = standin_complain(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, call,
                              "kernel '%s' asks for %llu bytes of local memory for a "
                              "group of %ux%ux%u; the device's groups have %u "
                              "(maxSharedLocalMemory)",
                              k->name, (unsigned long long)local, k->group[0],
                              k->group[1], k->group[2], local_max);
    }
    else if (k && refused) {
        rc = standin_complain(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, call,
                              "TACK_STANDIN_ZE_EXECUTE=spirv, and kernel '%s' cannot "
                              "run on OpenCL: %s",
                              k->name, refused);
    }
    else if (k && !spirv && !t) {
        rc = standin_complain(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, call,
                              "no CPU twin is registered for kernel '%s': the "
                              "stand-in cannot compute it",
                              k->name);
    }
    else if (k) {
        launch->cl_kernel = spirv ? k->cl_kernel : NULL;
        rc = pack_arguments(k, launch, call);
    }
    if (k && (spirv || t) && rc == ZE_RESULT_SUCCESS) {
        launch->kernel = k;
        launch->fn = spirv ? NULL : t->fn;
        launch->user = spirv ? NULL : t->user;
        launch->groups[0] = pLaunchFuncArgs->groupCountX;
        launch->groups[1] = pLaunchFuncArgs->groupCountY;
        launch->groups[2] = pLaunchFuncArgs->groupCountZ;
        memcpy(launch->group, k->group, sizeof launch->group);
    }
    pthread_mutex_unlock(&standin_lock);
    if (rc != ZE_RESULT_SUCCESS || !k) {
        /* (!k came with a complaint above: rc is never a success then) */
        free(launch->params);
        free(launch);
        return rc;
    }
    cmd.launch = launch;
    rc = standin_append(hCommandList, &cmd, hSignalEvent, numWaitEvents, phWaitEvents,
                        call);
    if (rc != ZE_RESULT_SUCCESS) {
        free(launch->params);
        free(launch);
    }
    else {
        pthread_mutex_lock(&standin_lock);
        k->appended++;
        pthread_mutex_unlock(&standin_lock);
    }
    return rc;
}

/* The twin's view of [address, address + nbytes): the alias of one live allocation
 * of the launching list's context and device, else NULL. Called under standin_lock
 * (the twin runs inside zeCommandQueueSynchronize). */
static void *
translate(void *ctx, uint64_t address, size_t nbytes)
{
    const standin_list *l = ctx;
    standin_allocation *any = NULL;
    const char *p = (const char *)(uintptr_t)address;
    standin_allocation *a = standin_allocation_at(p, nbytes, true, &any);
    if (!a || a->context != l->context || a->device != l->device) {
        standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, "zeCommandQueueSynchronize",
                         "a kernel reads %p (+%zu), which is not device memory of its "
                         "list's context and device",
                         (const void *)p, nbytes);
        return NULL;
    }
    return a->alias + (p - a->user);
}

ze_result_t
standin_launch_run(const standin_list *l, const standin_launch *launch)
{
    if (launch->cl_kernel) {
        return standin_cl_run(l, launch);
    }
    standin_count_twin();
    tack_standin_launch args = {
        .entry = launch->kernel->name,
        .params = launch->params,
        .params_nbytes = launch->params_nbytes,
        .translate = translate,
        .translate_ctx = (void *)(uintptr_t)l,
    };
    memcpy(args.grid, launch->groups, sizeof args.grid);
    memcpy(args.block, launch->group, sizeof args.block);
    if (launch->fn(&args, launch->user) != 0) {
        return standin_complain(
            ZE_RESULT_ERROR_DEVICE_LOST, "zeCommandQueueSynchronize",
            "kernel '%s' faulted (an access outside its memory)", launch->kernel->name);
    }
    return ZE_RESULT_SUCCESS;
}

void
standin_commands_clear(standin_list *l)
{
    for (size_t k = 0; k < l->ncommands; k++) {
        standin_launch *launch = l->commands[k].launch;
        if (launch) {
            launch->kernel->appended--;
            free(launch->params);
            free(launch);
        }
    }
    l->ncommands = 0;
}
