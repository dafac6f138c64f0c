/*
 * cuda_vmm.c: exportable allocations (tack.empty(..., exportable=True)) through the
 * virtual memory management API, and their export as a POSIX file descriptor.
 *
 * Memory from cuMemAllocAsync cannot be exported as an OS handle; memory from
 * cuMemCreate with the POSIX-fd handle type can. An allocation is: a physical
 * allocation of the size rounded up to the recommended granularity, a reserved
 * address range of that size (aligned to the granularity), the mapping, and
 * read-write access for this device. The physical handle is kept (the export needs
 * it); the fd is made on the first export, cached, and closed when the memory is
 * freed. Unmapping is not stream-ordered, so the free waits for Tack's stream first.
 */
#include <string.h>
#include <unistd.h>

#include "cuda_internal.h"

struct tack__cuda_vmm {
    struct tack__cuda_vmm *next;
    uintptr_t ptr;
    size_t size; /* allocation size: reserved, mapped and exported */
    tcu_mem_handle handle;
    int fd; /* -1 until the first export */
};

void
tack__cuda_vmm_prop(tcu_device device, tcu_mem_allocation_prop *prop)
{
    memset(prop, 0, sizeof *prop);
    prop->type = TCU_MEM_ALLOCATION_TYPE_PINNED;
    prop->requestedHandleTypes = TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop->location.type = TCU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = device;
}

static void
undo(tack__cuda_state *s, tcu_mem_handle h, tcu_deviceptr p, size_t size, int stage)
{
    const tack__cuda_api *api = &s->drv->api;
    if (stage >= 3) {
        (void)api->cuMemUnmap(p, size);
    }
    if (stage >= 2) {
        (void)api->cuMemAddressFree(p, size);
    }
    if (stage >= 1) {
        (void)api->cuMemRelease(h);
    }
}

tack_status
tack__cuda_vmm_alloc(tack__cuda_state *s, size_t nbytes, void **ptr)
{
    if (!s->vmm) {
        return tack__fail(TACK_ERR_UNSUPPORTED,
                          "device cuda:%d cannot make exportable memory: its driver "
                          "reports no virtual memory management or no POSIX file "
                          "descriptor handles; allocate without exportable=True",
                          s->ordinal);
    }
    size_t g = s->granularity;
    if (nbytes > SIZE_MAX - (g - 1)) {
        return tack__fail(TACK_ERR_SIZE_OVERFLOW,
                          "%zu bytes cannot be rounded up to the %zu-byte allocation "
                          "granularity: use a smaller shape",
                          nbytes, g);
    }
    size_t size = (nbytes + g - 1) / g * g;
    struct tack__cuda_vmm *rec;
    tack_status st = tack__new(sizeof *rec, (void **)&rec);
    if (st != TACK_OK) {
        return st;
    }
    const tack__cuda_api *api = &s->drv->api;
    tcu_mem_allocation_prop prop;
    tack__cuda_vmm_prop(s->device, &prop);
    tcu_mem_handle h = 0;
    tcu_deviceptr p = 0;
    int stage = 0;
    st = tack__cuda_check(s, api->cuMemCreate(&h, size, &prop, 0), "cuMemCreate");
    if (st == TACK_OK) {
        stage = 1;
        st = tack__cuda_check(s, api->cuMemAddressReserve(&p, size, g, 0, 0),
                              "cuMemAddressReserve");
    }
    if (st == TACK_OK) {
        stage = 2;
        st = tack__cuda_check(s, api->cuMemMap(p, size, 0, h, 0), "cuMemMap");
    }
    if (st == TACK_OK) {
        stage = 3;
        tcu_mem_access_desc access;
        memset(&access, 0, sizeof access);
        access.location = prop.location;
        access.flags = TCU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        st = tack__cuda_check(s, api->cuMemSetAccess(p, size, &access, 1),
                              "cuMemSetAccess");
    }
    if (st != TACK_OK) {
        undo(s, h, p, size, stage);
        tack__free(rec);
        return st;
    }
    rec->ptr = (uintptr_t)p;
    rec->size = size;
    rec->handle = h;
    rec->fd = -1;
    pthread_mutex_lock(&s->vmm_lock);
    rec->next = s->vmm_list;
    s->vmm_list = rec;
    pthread_mutex_unlock(&s->vmm_lock);
    *ptr = (void *)(uintptr_t)p;
    return TACK_OK;
}

/* Unlinks and returns the record of ptr, or NULL. */
static struct tack__cuda_vmm *
take(tack__cuda_state *s, void *ptr)
{
    pthread_mutex_lock(&s->vmm_lock);
    struct tack__cuda_vmm **link = &s->vmm_list;
    while (*link && (*link)->ptr != (uintptr_t)ptr) {
        link = &(*link)->next;
    }
    struct tack__cuda_vmm *rec = *link;
    if (rec) {
        *link = rec->next;
    }
    pthread_mutex_unlock(&s->vmm_lock);
    return rec;
}

bool
tack__cuda_vmm_free(tack__cuda_state *s, void *ptr, bool driver_ok)
{
    if (!s->vmm) {
        return false;
    }
    struct tack__cuda_vmm *rec = take(s, ptr);
    if (!rec) {
        return false;
    }
    if (rec->fd >= 0) {
        (void)close(rec->fd); /* ours: a consumer that keeps it imports a dup */
    }
    if (driver_ok) {
        (void)s->drv->api.cuStreamSynchronize(s->stream);
        undo(s, rec->handle, (tcu_deviceptr)rec->ptr, rec->size, 3);
    }
    tack__free(rec);
    return true;
}

tack_status
tack__cuda_export_memory(void *state, void *ptr, size_t nbytes,
                         tack_exported_memory *out)
{
    tack__cuda_state *s = state;
    tack__cuda_guard g;
    tack_status st = tack__cuda_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    pthread_mutex_lock(&s->vmm_lock);
    struct tack__cuda_vmm *rec = s->vmm_list;
    while (rec && rec->ptr != (uintptr_t)ptr) {
        rec = rec->next;
    }
    if (!rec) {
        st = tack__fail(TACK_ERR_UNSUPPORTED,
                        "address %p is not an exportable allocation of cuda:%d: "
                        "allocate with exportable=True",
                        ptr, s->ordinal);
    }
    else if (rec->fd < 0) {
        int fd = -1;
        st = tack__cuda_check(
            s,
            s->drv->api.cuMemExportToShareableHandle(
                &fd, rec->handle, TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            "cuMemExportToShareableHandle");
        if (st == TACK_OK) {
            rec->fd = fd;
        }
    }
    if (st == TACK_OK) {
        out->backend = "cuda";
        out->handle_type = "posix_fd";
        out->handle = (uint64_t)rec->fd;
        out->size = nbytes;
        out->allocation_size = rec->size;
        memcpy(out->device_uuid, s->uuid, sizeof out->device_uuid);
    }
    pthread_mutex_unlock(&s->vmm_lock);
    tack__cuda_leave(s, &g);
    return st;
}
