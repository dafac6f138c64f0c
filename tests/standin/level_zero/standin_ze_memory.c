/*
 * standin_ze_memory.c: the stand-in's device memory (zeMemAllocDevice, zeMemFree,
 * zeMemAllocShared, zeMemAllocHost, zeMemFreeExt, zeMemGetAllocProperties).
 *
 * Strict where real drivers are lenient: an allocation belongs to its context, and
 * the same pointer given with another context is unknown memory (the specification's
 * rule; Intel's driver answers for any context). The application's view of device
 * memory is PROT_NONE: the host cannot touch it. Host and shared memory (which Tack
 * never allocates, other libraries do) are readable by the host and belong to no
 * device (shared memory to the one it was made for, if any).
 */
#define _GNU_SOURCE /* memfd_create */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "standin_ze.h"

static standin_allocation *allocations; /* every allocation made, newest first */
enum { STANDIN_GUARD = 4096 };          /* the PROT_NONE page after each user view */
static uint64_t next_id = 1;

standin_allocation *
standin_allocation_at(const void *p, size_t n, bool deferred_ok,
                      standin_allocation **any_alloc)
{
    const char *c = p;
    *any_alloc = NULL;
    for (standin_allocation *a = allocations; a; a = a->next) {
        size_t reserved = a->size ? a->size : 1;
        if (c >= a->user && c < a->user + reserved) {
            *any_alloc = a;
            bool fits = (size_t)(c - a->user) <= a->size &&
                        n <= a->size - (size_t)(c - a->user);
            return a->alias && (deferred_ok || !a->deferred) && fits ? a : NULL;
        }
    }
    return NULL;
}

static void
release(standin_allocation *a)
{
    size_t pages = (a->size + 4095) / 4096 * 4096;
    munmap(a->alias, pages ? pages : 4096);
    /* The range stays reserved; for host and shared memory its view was readable. */
    mprotect(a->user, pages ? pages : 4096, PROT_NONE);
    a->alias = NULL;
    a->deferred = false;
    a->context->live--;
}

void
standin_free_deferred(standin_context *c)
{
    for (standin_allocation *a = allocations; a; a = a->next) {
        if (a->context == c && a->deferred) {
            release(a);
        }
    }
}

__attribute__((destructor)) static void
free_allocations(void)
{
    while (allocations) {
        standin_allocation *next = allocations->next;
        size_t pages = (allocations->size + 4095) / 4096 * 4096;
        if (allocations->alias) {
            munmap(allocations->alias, pages ? pages : 4096);
        }
        munmap(allocations->user, (pages ? pages : 4096) + STANDIN_GUARD);
        free(allocations);
        allocations = next;
    }
}

/* Two views of one memfd: user with protection user_prot, alias read-write. */
static ze_result_t
map_twice(size_t size, int user_prot, char **user, char **alias)
{
    size_t pages = size ? (size + 4095) / 4096 * 4096 : 4096;
    int fd = memfd_create("standin-ze", MFD_CLOEXEC);
    if (fd < 0) {
        return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    }
    ze_result_t rc = ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    if (ftruncate(fd, (off_t)pages) == 0) {
        /* The user view is followed by a guard page that stays PROT_NONE (even
         * while a launch runs on the view), so that a kernel that runs past the
         * last page of an allocation faults rather than reaching whatever mapping
         * the system put next (another allocation, or the read-write alias). */
        void *u = mmap(NULL, pages + STANDIN_GUARD, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (u != MAP_FAILED &&
            mmap(u, pages, user_prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
            munmap(u, pages + STANDIN_GUARD);
            u = MAP_FAILED;
        }
        void *a = mmap(NULL, pages, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (u != MAP_FAILED && a != MAP_FAILED) {
            *user = u;
            *alias = a;
            rc = ZE_RESULT_SUCCESS;
        }
        else {
            if (u != MAP_FAILED) {
                munmap(u, pages + STANDIN_GUARD);
            }
            if (a != MAP_FAILED) {
                munmap(a, pages);
            }
        }
    }
    close(fd);
    return rc;
}

static ze_result_t
check_size(size_t size, size_t alignment, const char *call)
{
    if (size == 0) {
        return standin_complain(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, call, "size is 0");
    }
    if (size > (size_t)1 << 30) {
        return standin_complain(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, call,
                                "size %zu is above maxMemAllocSize", size);
    }
    if (alignment & (alignment - 1) || alignment > 4096) {
        return standin_complain(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT, call,
                                "alignment %zu is not a power of two up to 4096",
                                alignment);
    }
    return ZE_RESULT_SUCCESS;
}

static ze_result_t
check_device_desc(const ze_device_mem_alloc_desc_t *desc, const char *call)
{
    if (!desc) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                "device_desc is NULL");
    }
    ze_result_t rc =
        standin_check_stype(desc->stype, ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, call);
    if (rc != ZE_RESULT_SUCCESS) {
        return rc;
    }
    if (desc->flags &
        ~(ze_device_mem_alloc_flags_t)(ZE_DEVICE_MEM_ALLOC_FLAG_BIAS_CACHED |
                                       ZE_DEVICE_MEM_ALLOC_FLAG_BIAS_UNCACHED |
                                       ZE_DEVICE_MEM_ALLOC_FLAG_BIAS_INITIAL_PLACEMENT)) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_ENUMERATION, call,
                                "flags 0x%x has unknown bits", (unsigned)desc->flags);
    }
    if (desc->ordinal != 0) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                                "memory ordinal %u: the device has one memory",
                                (unsigned)desc->ordinal);
    }
    return ZE_RESULT_SUCCESS;
}

static ze_result_t
check_host_desc(const ze_host_mem_alloc_desc_t *desc, const char *call)
{
    if (!desc) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                "host_desc is NULL");
    }
    ze_result_t rc =
        standin_check_stype(desc->stype, ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, call);
    if (rc == ZE_RESULT_SUCCESS &&
        desc->flags & ~(ze_host_mem_alloc_flags_t)0xf) { /* the four BIAS flags */
        rc = standin_complain(ZE_RESULT_ERROR_INVALID_ENUMERATION, call,
                              "flags 0x%x has unknown bits", (unsigned)desc->flags);
    }
    return rc;
}

/* A new allocation of type in context c (device d, NULL for host memory and for
 * shared memory tied to no device). Host and shared memory are for the host to
 * touch: their application view is read-write, over the same pages the stand-in's
 * commands use. Call under standin_lock, with the arguments checked. */
static ze_result_t
allocate(standin_context *c, standin_device *d, ze_memory_type_t type, size_t size,
         void **pptr)
{
    int prot = type == ZE_MEMORY_TYPE_DEVICE ? PROT_NONE : PROT_READ | PROT_WRITE;
    standin_allocation *a = calloc(1, sizeof *a);
    ze_result_t rc = a ? map_twice(size, prot, &a->user, &a->alias)
                       : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    if (rc != ZE_RESULT_SUCCESS) {
        free(a);
        return rc;
    }
    *a = (standin_allocation){c,    d,         type,  a->user,    a->alias,
                              size, next_id++, false, allocations};
    allocations = a;
    c->live++;
    *pptr = a->user;
    return ZE_RESULT_SUCCESS;
}

ze_result_t
standin_zeMemAllocDevice(ze_context_handle_t hContext,
                         const ze_device_mem_alloc_desc_t *desc, size_t size,
                         size_t alignment, ze_device_handle_t hDevice, void **pptr)
{
    const char *call = "zeMemAllocDevice";
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_context *c = standin_find(hContext, STANDIN_CONTEXT, call, &rc);
    standin_device *d = c ? standin_find(hDevice, STANDIN_DEVICE, call, &rc) : NULL;
    if (d) {
        rc = pptr ? check_device_desc(desc, call)
                  : standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                     "pptr is NULL");
    }
    rc = d && rc == ZE_RESULT_SUCCESS ? check_size(size, alignment, call) : rc;
    if (d && pptr && rc == ZE_RESULT_SUCCESS) {
        rc = allocate(c, d, ZE_MEMORY_TYPE_DEVICE, size, pptr);
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeMemAllocShared(ze_context_handle_t hContext,
                         const ze_device_mem_alloc_desc_t *device_desc,
                         const ze_host_mem_alloc_desc_t *host_desc, size_t size,
                         size_t alignment, ze_device_handle_t hDevice, void **pptr)
{
    const char *call = "zeMemAllocShared";
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_context *c = standin_find(hContext, STANDIN_CONTEXT, call, &rc);
    standin_device *d = c && hDevice ? standin_find(hDevice, STANDIN_DEVICE, call, &rc)
                                     : NULL; /* hDevice is optional */
    if (rc == ZE_RESULT_SUCCESS) {
        rc = pptr ? check_device_desc(device_desc, call)
                  : standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                     "pptr is NULL");
    }
    rc = rc == ZE_RESULT_SUCCESS ? check_host_desc(host_desc, call) : rc;
    rc = rc == ZE_RESULT_SUCCESS ? check_size(size, alignment, call) : rc;
    if (c && pptr && rc == ZE_RESULT_SUCCESS) {
        rc = allocate(c, d, ZE_MEMORY_TYPE_SHARED, size, pptr);
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeMemAllocHost(ze_context_handle_t hContext,
                       const ze_host_mem_alloc_desc_t *host_desc, size_t size,
                       size_t alignment, void **pptr)
{
    const char *call = "zeMemAllocHost";
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_context *c = standin_find(hContext, STANDIN_CONTEXT, call, &rc);
    if (c) {
        rc = pptr ? check_host_desc(host_desc, call)
                  : standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                     "pptr is NULL");
    }
    rc = c && rc == ZE_RESULT_SUCCESS ? check_size(size, alignment, call) : rc;
    if (c && pptr && rc == ZE_RESULT_SUCCESS) {
        rc = allocate(c, NULL, ZE_MEMORY_TYPE_HOST, size, pptr);
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

/* The live allocation whose base is ptr, made in context c; else the complaint. */
static standin_allocation *
allocation_to_free(standin_context *c, void *ptr, const char *call, ze_result_t *rc)
{
    standin_allocation *any = NULL;
    standin_allocation *a = standin_allocation_at(ptr, 0, false, &any);
    const char *why = NULL;
    if (!ptr) {
        why = "ptr is NULL";
    }
    else if (!any) {
        why = "not an allocation of this driver";
    }
    else if (!any->alias || any->deferred) {
        why = "the allocation was already freed";
    }
    else if (any->context != c) {
        why = "the allocation belongs to another context";
    }
    else if (a->user != (char *)ptr) {
        why = "not the base of its allocation";
    }
    if (why) {
        *rc = standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call, "%p: %s", ptr,
                               why);
        return NULL;
    }
    return a;
}

ze_result_t
standin_zeMemFree(ze_context_handle_t hContext, void *ptr)
{
    if (standin_check_not_ended("zeMemFree") != ZE_RESULT_SUCCESS) {
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_context *c = standin_find(hContext, STANDIN_CONTEXT, "zeMemFree", &rc);
    standin_allocation *a = c ? allocation_to_free(c, ptr, "zeMemFree", &rc) : NULL;
    if (a) {
        release(a);
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeMemFreeExt(ze_context_handle_t hContext,
                     const ze_memory_free_ext_desc_t *desc, void *ptr)
{
    if (standin_check_not_ended("zeMemFreeExt") != ZE_RESULT_SUCCESS) {
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    const char *call = "zeMemFreeExt";
    if (standin_api_version() < ZE_API_VERSION_1_3) {
        /* The loader has the call; a driver reporting an older API must not get it. */
        return standin_complain(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, call,
                                "zeMemFreeExt is API 1.3 and the driver reports %u.%u",
                                ZE_MAJOR_VERSION(standin_api_version()),
                                ZE_MINOR_VERSION(standin_api_version()));
    }
    if (!desc) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                "desc is NULL");
    }
    ze_result_t rc =
        standin_check_stype(desc->stype, ZE_STRUCTURE_TYPE_MEMORY_FREE_EXT_DESC, call);
    if (rc != ZE_RESULT_SUCCESS) {
        return rc;
    }
    pthread_mutex_lock(&standin_lock);
    standin_context *c = standin_find(hContext, STANDIN_CONTEXT, call, &rc);
    standin_allocation *a = c ? allocation_to_free(c, ptr, call, &rc) : NULL;
    if (a && (desc->freePolicy & ZE_DRIVER_MEMORY_FREE_POLICY_EXT_FLAG_DEFER_FREE) &&
        standin_context_busy(c)) {
        a->deferred = true; /* freed when the queued work has run */
    }
    else if (a) {
        release(a);
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeMemGetAllocProperties(ze_context_handle_t hContext, const void *ptr,
                                ze_memory_allocation_properties_t *props,
                                ze_device_handle_t *phDevice)
{
    const char *call = "zeMemGetAllocProperties";
    if (!props || !ptr) {
        return standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                                "%s is NULL", props ? "ptr" : "props");
    }
    ze_result_t rc = standin_check_stype(
        props->stype, ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, call);
    if (rc != ZE_RESULT_SUCCESS) {
        return rc;
    }
    if (props->pNext) {
        /* No extension structure is known here; reading one would be a guess. */
        return standin_complain(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                                "props->pNext is not NULL: the stand-in knows no "
                                "extension of ze_memory_allocation_properties_t");
    }
    pthread_mutex_lock(&standin_lock);
    standin_context *c = standin_find(hContext, STANDIN_CONTEXT, call, &rc);
    standin_allocation *any = NULL;
    standin_allocation *a = c ? standin_allocation_at(ptr, 0, false, &any) : NULL;
    if (c) {
        bool mine = a && a->context == c;
        props->type = mine ? a->type : ZE_MEMORY_TYPE_UNKNOWN;
        props->id = mine ? a->id : 0;
        props->pageSize = mine ? 4096 : 0;
        if (phDevice) {
            *phDevice = mine ? (ze_device_handle_t)a->device : NULL;
        }
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

void
standin_views_protect(const standin_list *l, int prot)
{
    for (standin_allocation *a = allocations; a; a = a->next) {
        if (a->alias && a->type == ZE_MEMORY_TYPE_DEVICE && a->context == l->context &&
            a->device == l->device) {
            mprotect(a->user, (a->size + 4095) / 4096 * 4096, prot);
        }
    }
}
