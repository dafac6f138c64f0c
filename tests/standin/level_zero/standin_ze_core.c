/*
 * standin_ze_core.c: the stand-in's objects and its driver, device and context calls.
 *
 * One driver, TACK_STANDIN_ZE_DEVICES root devices. zeInit is idempotent (the Debian
 * loader calls it twice for one call of the application). Destroyed objects stay in
 * the list, tagged dead, so a later use of their handle is reported; the destructor
 * frees them all at unload, which keeps valgrind's leak count honest.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "standin_ze.h"

pthread_mutex_t standin_lock = PTHREAD_MUTEX_INITIALIZER;
standin_driver standin_the_driver = {{STANDIN_DRIVER, false, NULL}};
standin_device standin_devices[STANDIN_MAX_DEVICES];
uint32_t standin_ndevices;

static bool initialised;
static ze_api_version_t api_version = ZE_API_VERSION_1_4;
static standin_object *objects; /* every object made with standin_new, newest first */

ze_result_t
standin_complain(ze_result_t rc, const char *call, const char *why, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, why);
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is just above
    vsnprintf(text, sizeof text, why, ap);
    va_end(ap);
    fprintf(stderr, "standin-ze: %s: %s (0x%x)\n", call, text, (unsigned)rc);
    const char *log = getenv("TACK_STANDIN_ZE_LOG");
    FILE *f = log && *log ? fopen(log, "a") : NULL;
    if (f) {
        fprintf(f, "standin-ze: %s: %s (0x%x)\n", call, text, (unsigned)rc);
        fclose(f);
    }
    return rc;
}

ze_result_t
standin_check_not_ended(const char *call)
{
    const char *ended = getenv("TACK_STANDIN_ZE_ENDED");
    if (ended && *ended) {
        return standin_complain(ZE_RESULT_ERROR_UNINITIALIZED, call,
                                "called after the application ended (the library that "
                                "owns the context may be gone)");
    }
    return ZE_RESULT_SUCCESS;
}

ze_api_version_t
standin_api_version(void)
{
    return api_version;
}

bool
standin_initialised(void)
{
    pthread_mutex_lock(&standin_lock);
    bool done = initialised;
    pthread_mutex_unlock(&standin_lock);
    return done;
}

static const char *
tag_name(standin_tag tag)
{
    switch (tag) {
    case STANDIN_DRIVER: return "driver";
    case STANDIN_DEVICE: return "device";
    case STANDIN_CONTEXT: return "context";
    case STANDIN_QUEUE: return "command queue";
    case STANDIN_LIST: return "command list";
    case STANDIN_MODULE: return "module";
    case STANDIN_KERNEL: return "kernel";
    case STANDIN_BUILD_LOG: return "module build log";
    }
    return "object";
}

void *
standin_find(const void *h, standin_tag tag, const char *call, ze_result_t *rc)
{
    if (!h) {
        *rc = standin_complain(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, call,
                               "the %s handle is NULL", tag_name(tag));
        return NULL;
    }
    standin_object *found = NULL;
    if (h == &standin_the_driver) {
        found = &standin_the_driver.obj;
    }
    for (uint32_t k = 0; k < standin_ndevices && !found; k++) {
        found = h == &standin_devices[k] ? &standin_devices[k].obj : NULL;
    }
    for (standin_object *o = objects; o && !found; o = o->next) {
        found = h == o ? o : NULL;
    }
    if (!found || found->tag != tag) {
        *rc = standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                               "%p is not a %s handle of this driver%s", h,
                               tag_name(tag), found ? " (it is another kind)" : "");
        return NULL;
    }
    if (found->dead) {
        *rc = standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                               "the %s %p was destroyed", tag_name(tag), h);
        return NULL;
    }
    return found;
}

void *
standin_new(size_t size, standin_tag tag)
{
    standin_object *o = calloc(1, size);
    if (o) {
        o->tag = tag;
        o->next = objects;
        objects = o;
    }
    return o;
}

__attribute__((destructor)) static void
free_objects(void)
{
    /* First the lists' launches, which point at their kernels: every object is
     * still there. */
    for (standin_object *o = objects; o; o = o->next) {
        if (o->tag == STANDIN_LIST) {
            standin_commands_clear((standin_list *)o);
        }
    }
    while (objects) {
        standin_object *next = objects->next;
        /* A device that is never closed (Tack's registry) leaves its queue and list. */
        if (objects->tag == STANDIN_LIST) {
            free(((standin_list *)objects)->commands);
        }
        if (objects->tag == STANDIN_MODULE) {
            standin_module_release((standin_module *)objects);
        }
        if (objects->tag == STANDIN_KERNEL) {
            standin_kernel_release((standin_kernel *)objects);
        }
        if (objects->tag == STANDIN_BUILD_LOG) {
            standin_build_log_release((standin_build_log *)objects);
        }
        if (objects->tag == STANDIN_QUEUE) {
            free(((standin_queue *)objects)->pending);
        }
        free(objects);
        objects = next;
    }
}

/* The number in $name, within [lo, hi], or fallback when unset. */
static long
env_number(const char *name, long lo, long hi, long fallback)
{
    const char *s = getenv(name);
    if (!s || !*s) {
        return fallback;
    }
    char *end = NULL;
    long v = strtol(s, &end, 10);
    return *end == '\0' && v >= lo && v <= hi ? v : fallback;
}

/* $TACK_STANDIN_ZE_API_VERSION, "1.0" to "1.4"; 1.4 when unset or anything else. */
static ze_api_version_t
env_api_version(void)
{
    const char *s = getenv("TACK_STANDIN_ZE_API_VERSION");
    if (s && s[0] == '1' && s[1] == '.' && s[2] >= '0' && s[2] <= '4' && s[3] == '\0') {
        int minor = s[2] - '0';
        return (ze_api_version_t)ZE_MAKE_VERSION(1, minor);
    }
    return ZE_API_VERSION_1_4;
}

ze_result_t
standin_zeInit(ze_init_flags_t flags)
{
    if (flags & ~(ze_init_flags_t)(ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY)) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_ENUMERATION, "zeInit",
                                "flags 0x%x has unknown bits", (unsigned)flags);
    }
    pthread_mutex_lock(&standin_lock);
    if (!initialised) {
        standin_ndevices =
            (uint32_t)env_number("TACK_STANDIN_ZE_DEVICES", 0, STANDIN_MAX_DEVICES, 1);
        for (uint32_t k = 0; k < standin_ndevices; k++) {
            standin_devices[k] = (standin_device){{STANDIN_DEVICE, false, NULL}, k};
        }
        api_version = env_api_version();
        initialised = true;
    }
    pthread_mutex_unlock(&standin_lock);
    return ZE_RESULT_SUCCESS;
}

/* Level Zero's count protocol: *pCount 0 asks for the count; otherwise up to *pCount
 * handles are written and *pCount becomes the number written. */
static ze_result_t
list_handles(const char *call, uint32_t *pCount, void **out, void *const *all,
             uint32_t n)
{
    if (!pCount) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                "pCount is NULL");
    }
    if (*pCount == 0 || !out) {
        *pCount = n;
        return ZE_RESULT_SUCCESS;
    }
    uint32_t m = *pCount < n ? *pCount : n;
    for (uint32_t k = 0; k < m; k++) {
        out[k] = all[k];
    }
    *pCount = m;
    return ZE_RESULT_SUCCESS;
}

ze_result_t
standin_zeDriverGet(uint32_t *pCount, ze_driver_handle_t *phDrivers)
{
    if (!standin_initialised()) {
        return standin_complain(ZE_RESULT_ERROR_UNINITIALIZED, "zeDriverGet",
                                "zeInit was not called");
    }
    void *all[1] = {&standin_the_driver};
    return list_handles("zeDriverGet", pCount, (void **)phDrivers, all, 1);
}

/* The driver of a call, or NULL with *rc set. */
static standin_driver *
driver_of(ze_driver_handle_t h, const char *call, ze_result_t *rc)
{
    if (!standin_initialised()) {
        *rc = standin_complain(ZE_RESULT_ERROR_UNINITIALIZED, call,
                               "zeInit was not called");
        return NULL;
    }
    pthread_mutex_lock(&standin_lock);
    standin_driver *d = standin_find(h, STANDIN_DRIVER, call, rc);
    pthread_mutex_unlock(&standin_lock);
    return d;
}

ze_result_t
standin_zeDriverGetApiVersion(ze_driver_handle_t hDriver, ze_api_version_t *version)
{
    ze_result_t rc = ZE_RESULT_SUCCESS;
    if (!driver_of(hDriver, "zeDriverGetApiVersion", &rc)) {
        return rc;
    }
    if (!version) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER,
                                "zeDriverGetApiVersion", "version is NULL");
    }
    *version = api_version;
    return ZE_RESULT_SUCCESS;
}

ze_result_t
standin_check_stype(ze_structure_type_t got, ze_structure_type_t want, const char *call)
{
    if (got != want) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                                "stype 0x%x, the call takes 0x%x", (unsigned)got,
                                (unsigned)want);
    }
    return ZE_RESULT_SUCCESS;
}

ze_result_t
standin_zeDriverGetProperties(ze_driver_handle_t hDriver, ze_driver_properties_t *props)
{
    ze_result_t rc = ZE_RESULT_SUCCESS;
    if (!driver_of(hDriver, "zeDriverGetProperties", &rc)) {
        return rc;
    }
    if (!props) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER,
                                "zeDriverGetProperties", "props is NULL");
    }
    rc = standin_check_stype(props->stype, ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES,
                             "zeDriverGetProperties");
    if (rc == ZE_RESULT_SUCCESS) {
        memset(&props->uuid, 0, sizeof props->uuid);
        memcpy(props->uuid.id, "tack-standin-ze", 15);
        props->driverVersion = 1;
    }
    return rc;
}

ze_result_t
standin_zeDriverGetExtensionProperties(ze_driver_handle_t hDriver, uint32_t *pCount,
                                       ze_driver_extension_properties_t *props)
{
    (void)props;
    ze_result_t rc = ZE_RESULT_SUCCESS;
    if (!driver_of(hDriver, "zeDriverGetExtensionProperties", &rc)) {
        return rc;
    }
    return list_handles("zeDriverGetExtensionProperties", pCount, NULL, NULL, 0);
}

ze_result_t
standin_zeDeviceGet(ze_driver_handle_t hDriver, uint32_t *pCount,
                    ze_device_handle_t *phDevices)
{
    ze_result_t rc = ZE_RESULT_SUCCESS;
    if (!driver_of(hDriver, "zeDeviceGet", &rc)) {
        return rc;
    }
    void *all[STANDIN_MAX_DEVICES];
    for (uint32_t k = 0; k < standin_ndevices; k++) {
        all[k] = &standin_devices[k];
    }
    return list_handles("zeDeviceGet", pCount, (void **)phDevices, all,
                        standin_ndevices);
}

ze_result_t
standin_zeDeviceGetProperties(ze_device_handle_t hDevice, ze_device_properties_t *props)
{
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_device *d =
        standin_find(hDevice, STANDIN_DEVICE, "zeDeviceGetProperties", &rc);
    pthread_mutex_unlock(&standin_lock);
    if (!d) {
        return rc;
    }
    if (!props) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER,
                                "zeDeviceGetProperties", "props is NULL");
    }
    rc = standin_check_stype(props->stype, ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES,
                             "zeDeviceGetProperties");
    if (rc != ZE_RESULT_SUCCESS) {
        return rc;
    }
    void *next = props->pNext;
    ze_structure_type_t stype = props->stype;
    memset(props, 0, sizeof *props);
    props->stype = stype;
    props->pNext = next;
    props->type = ZE_DEVICE_TYPE_GPU;
    props->vendorId = 0x8086;
    props->deviceId = 0x7ac0 + d->index;
    props->maxMemAllocSize = 1u << 30;
    props->numThreadsPerEU = 8;
    props->physicalEUSimdWidth = 8;
    props->numEUsPerSubslice = 8;
    props->numSubslicesPerSlice = 4;
    props->numSlices = 1;
    props->uuid.id[0] = (uint8_t)(d->index + 1);
    snprintf(props->name, sizeof props->name, "Tack stand-in Level Zero GPU %u",
             (unsigned)d->index);
    return ZE_RESULT_SUCCESS;
}

ze_result_t
standin_zeContextCreate(ze_driver_handle_t hDriver, const ze_context_desc_t *desc,
                        ze_context_handle_t *phContext)
{
    ze_result_t rc = ZE_RESULT_SUCCESS;
    if (!driver_of(hDriver, "zeContextCreate", &rc)) {
        return rc;
    }
    if (!desc || !phContext) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, "zeContextCreate",
                                "desc or phContext is NULL");
    }
    rc = standin_check_stype(desc->stype, ZE_STRUCTURE_TYPE_CONTEXT_DESC,
                             "zeContextCreate");
    if (rc != ZE_RESULT_SUCCESS) {
        return rc;
    }
    if (desc->flags & ~(ze_context_flags_t)ZE_CONTEXT_FLAG_TBD) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_ENUMERATION, "zeContextCreate",
                                "flags 0x%x has unknown bits", (unsigned)desc->flags);
    }
    pthread_mutex_lock(&standin_lock);
    standin_context *c = standin_new(sizeof *c, STANDIN_CONTEXT);
    pthread_mutex_unlock(&standin_lock);
    if (!c) {
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    *phContext = (ze_context_handle_t)c;
    return ZE_RESULT_SUCCESS;
}

standin_context *
standin_context_of(ze_context_handle_t h, const char *call, ze_result_t *rc)
{
    pthread_mutex_lock(&standin_lock);
    standin_context *c = standin_find(h, STANDIN_CONTEXT, call, rc);
    pthread_mutex_unlock(&standin_lock);
    return c;
}

ze_result_t
standin_zeContextGetStatus(ze_context_handle_t hContext)
{
    ze_result_t rc = ZE_RESULT_SUCCESS;
    standin_context_of(hContext, "zeContextGetStatus", &rc);
    return rc;
}

ze_result_t
standin_zeContextDestroy(ze_context_handle_t hContext)
{
    ze_result_t rc = standin_check_not_ended("zeContextDestroy");
    if (rc != ZE_RESULT_SUCCESS) {
        return rc;
    }
    pthread_mutex_lock(&standin_lock);
    standin_context *c =
        standin_find(hContext, STANDIN_CONTEXT, "zeContextDestroy", &rc);
    if (c && c->live) {
        rc = standin_complain(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, "zeContextDestroy",
                              "%zu allocations, queues or lists of it are alive",
                              c->live);
    }
    else if (c) {
        c->obj.dead = true;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

/* Two queue groups, so that a driver's order is not taken for granted: group 0 copies
 * only (fill patterns up to 4 bytes), group 1 computes (up to 16 bytes). */
static const ze_command_queue_group_properties_t groups[STANDIN_QUEUE_GROUPS] = {
    {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES, NULL,
     ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY, 4, 1},
    {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES, NULL,
     ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
         ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY,
     16, 1},
};

size_t
standin_fill_pattern_limit(uint32_t group)
{
    return group < STANDIN_QUEUE_GROUPS ? groups[group].maxMemoryFillPatternSize : 0;
}

ze_result_t
standin_zeDeviceGetCommandQueueGroupProperties(
    ze_device_handle_t hDevice, uint32_t *pCount,
    ze_command_queue_group_properties_t *props)
{
    const char *call = "zeDeviceGetCommandQueueGroupProperties";
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_device *d = standin_find(hDevice, STANDIN_DEVICE, call, &rc);
    pthread_mutex_unlock(&standin_lock);
    if (!d) {
        return rc;
    }
    if (!pCount) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                "pCount is NULL");
    }
    if (*pCount == 0 || !props) {
        *pCount = STANDIN_QUEUE_GROUPS;
        return ZE_RESULT_SUCCESS;
    }
    uint32_t n = *pCount < STANDIN_QUEUE_GROUPS ? *pCount : STANDIN_QUEUE_GROUPS;
    for (uint32_t k = 0; k < n; k++) {
        rc = standin_check_stype(
            props[k].stype, ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES, call);
        if (rc != ZE_RESULT_SUCCESS) {
            return rc;
        }
        void *next = props[k].pNext;
        props[k] = groups[k];
        props[k].pNext = next;
    }
    *pCount = n;
    return ZE_RESULT_SUCCESS;
}
