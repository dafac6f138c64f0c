/*
 * cuda_vmm.c: the CUDA layer's virtual memory management entry points (cuMemCreate and
 * friends, POSIX fd export and import) over the core's (tests/standin/core/
 * standin_vmm.c): CUDA's allocation properties, handle types and access descriptors
 * turned into the core's terms.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_layer.h"

/* The allocation properties the stand-in supports: pinned device memory of a known
 * device, exportable as a POSIX fd or not at all. */
static standin_rc
check_prop(const tcu_mem_allocation_prop *prop)
{
    if (!prop || prop->type != TCU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != TCU_MEM_LOCATION_TYPE_DEVICE) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    if (!standin_device_ok(prop->location.id)) {
        return STANDIN_ERR_INVALID_DEVICE;
    }
    if (prop->requestedHandleTypes != TCU_MEM_HANDLE_TYPE_NONE &&
        prop->requestedHandleTypes != TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        return STANDIN_ERR_NOT_SUPPORTED; /* Win32 and fabric handles */
    }
    return STANDIN_OK;
}

STANDIN_EXPORT tcu_result
cuMemGetAllocationGranularity(size_t *granularity, const tcu_mem_allocation_prop *prop,
                              tcu_granularity_flags option)
{
    standin_rc rc = standin_enter("cuMemGetAllocationGranularity");
    if (rc == STANDIN_OK) {
        rc = check_prop(prop);
    }
    if (rc == STANDIN_OK &&
        (!granularity || (option != TCU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                          option != TCU_MEM_ALLOC_GRANULARITY_RECOMMENDED))) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *granularity = STANDIN_GRANULARITY;
    }
    return standin_leave(rc, "cuMemGetAllocationGranularity", "option=%d", option);
}

STANDIN_EXPORT tcu_result
cuMemCreate(tcu_mem_handle *handle, size_t size, const tcu_mem_allocation_prop *prop,
            unsigned long long flags)
{
    standin_rc rc = standin_enter("cuMemCreate");
    standin_vmm_handle *h = NULL;
    if (rc == STANDIN_OK) {
        rc = check_prop(prop);
    }
    if (rc == STANDIN_OK) {
        bool fd_export =
            prop->requestedHandleTypes == TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        rc = handle && flags == 0
                 ? standin_vmm_create(prop->location.id, size, fd_export, &h)
                 : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *handle = (tcu_mem_handle)(uintptr_t)h;
    }
    return standin_leave(rc, "cuMemCreate", "size=%zu, handle=%p", size, (void *)h);
}

STANDIN_EXPORT tcu_result
cuMemRelease(tcu_mem_handle handle)
{
    standin_rc rc = standin_enter("cuMemRelease");
    if (rc == STANDIN_OK) {
        rc = standin_vmm_release(handle);
    }
    return standin_leave(rc, "cuMemRelease", "handle=0x%llx", handle);
}

STANDIN_EXPORT tcu_result
cuMemAddressReserve(tcu_deviceptr *ptr, size_t size, size_t alignment,
                    tcu_deviceptr addr, unsigned long long flags)
{
    standin_rc rc = standin_enter("cuMemAddressReserve");
    standin_addr base = 0;
    (void)addr; /* only a hint */
    if (rc == STANDIN_OK) {
        rc = ptr && flags == 0 ? standin_vmm_address_reserve(size, alignment, &base)
                               : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *ptr = base;
    }
    return standin_leave(rc, "cuMemAddressReserve",
                         "size=%zu, alignment=%zu, ptr=0x%llx", size, alignment, base);
}

STANDIN_EXPORT tcu_result
cuMemAddressFree(tcu_deviceptr ptr, size_t size)
{
    standin_rc rc = standin_enter("cuMemAddressFree");
    if (rc == STANDIN_OK) {
        rc = standin_vmm_address_free(ptr, size);
    }
    return standin_leave(rc, "cuMemAddressFree", "ptr=0x%llx, size=%zu", ptr, size);
}

STANDIN_EXPORT tcu_result
cuMemMap(tcu_deviceptr ptr, size_t size, size_t offset, tcu_mem_handle handle,
         unsigned long long flags)
{
    standin_rc rc = standin_enter("cuMemMap");
    if (rc == STANDIN_OK) {
        rc = flags == 0 ? standin_vmm_map(ptr, size, offset, handle)
                        : STANDIN_ERR_INVALID_VALUE;
    }
    return standin_leave(rc, "cuMemMap",
                         "ptr=0x%llx, size=%zu, offset=%zu, handle=0x%llx", ptr, size,
                         offset, handle);
}

STANDIN_EXPORT tcu_result
cuMemUnmap(tcu_deviceptr ptr, size_t size)
{
    standin_rc rc = standin_enter("cuMemUnmap");
    if (rc == STANDIN_OK) {
        rc = standin_vmm_unmap(ptr, size);
    }
    return standin_leave(rc, "cuMemUnmap", "ptr=0x%llx, size=%zu", ptr, size);
}

/* CUDA's access descriptors as the core's; INVALID_VALUE for a location that is not a
 * device. CUDA's flag values are the core's STANDIN_ACCESS_* bits. */
static standin_rc
access_of(const tcu_mem_access_desc *desc, size_t count, standin_access **out)
{
    standin_access *a = calloc(count, sizeof *a);
    if (!a) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    for (size_t k = 0; k < count; k++) {
        if (desc[k].location.type != TCU_MEM_LOCATION_TYPE_DEVICE) {
            free(a);
            return STANDIN_ERR_INVALID_VALUE;
        }
        a[k].device = desc[k].location.id;
        a[k].access = (unsigned)desc[k].flags;
    }
    *out = a;
    return STANDIN_OK;
}

STANDIN_EXPORT tcu_result
cuMemSetAccess(tcu_deviceptr ptr, size_t size, const tcu_mem_access_desc *desc,
               size_t count)
{
    standin_rc rc = standin_enter("cuMemSetAccess");
    standin_access *access = NULL;
    if (rc == STANDIN_OK && (!desc || count == 0)) {
        rc = STANDIN_ERR_INVALID_VALUE; /* an empty descriptor list is refused */
    }
    if (rc == STANDIN_OK) {
        rc = access_of(desc, count, &access);
    }
    if (rc == STANDIN_OK) {
        rc = standin_vmm_set_access(ptr, size, access, count);
    }
    free(access);
    return standin_leave(rc, "cuMemSetAccess", "ptr=0x%llx, size=%zu, count=%zu", ptr,
                         size, count);
}

STANDIN_EXPORT tcu_result
cuMemExportToShareableHandle(void *shareableHandle, tcu_mem_handle handle,
                             tcu_mem_handle_type handleType, unsigned long long flags)
{
    standin_rc rc = standin_enter("cuMemExportToShareableHandle");
    int fd = -1;
    if (rc == STANDIN_OK) {
        rc = shareableHandle && flags == 0 &&
                     handleType == TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                 ? standin_vmm_export_fd(handle, &fd)
                 : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        memcpy(shareableHandle, &fd, sizeof fd); /* the caller owns and closes it */
    }
    return standin_leave(rc, "cuMemExportToShareableHandle", "handle=0x%llx, fd=%d",
                         handle, fd);
}

STANDIN_EXPORT tcu_result
cuMemImportFromShareableHandle(tcu_mem_handle *handle, void *osHandle,
                               tcu_mem_handle_type shHandleType)
{
    standin_rc rc = standin_enter("cuMemImportFromShareableHandle");
    /* For POSIX fds the "handle" is the fd itself, cast to a pointer. */
    int fd = (int)(intptr_t)osHandle;
    standin_vmm_handle *h = NULL;
    if (rc == STANDIN_OK) {
        rc = handle && shHandleType == TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                 ? standin_vmm_import_fd(fd, &h)
                 : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *handle = (tcu_mem_handle)(uintptr_t)h;
    }
    return standin_leave(rc, "cuMemImportFromShareableHandle", "fd=%d, handle=%p", fd,
                         (void *)h);
}
