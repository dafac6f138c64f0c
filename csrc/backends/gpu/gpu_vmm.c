/*
 * gpu_vmm.c: exportable allocations (tack.empty(..., exportable=True)) through the
 * driver's virtual memory management calls, and their export as a POSIX file
 * descriptor.
 *
 * Memory from the stream-ordered allocator cannot be exported as an OS handle; a
 * physical allocation made with the POSIX-fd handle type can. An allocation is: a
 * physical allocation of the size rounded up to the recommended granularity, a
 * reserved address range of that size (aligned to the granularity), the mapping, and
 * read-write access for this device. The physical handle is kept (the export needs
 * it); the fd is made on the first export, cached, and closed when the memory is
 * freed. Unmapping is not stream-ordered, so the free waits for Tack's stream first.
 */
#include <string.h>
#include <unistd.h>

#include "gpu_internal.h"

struct tack__gpu_vmm {
    struct tack__gpu_vmm *next;
    uintptr_t ptr;
    size_t size; /* allocation size: reserved, mapped and exported */
    tack__gpu_mem_handle handle;
    int fd; /* -1 until the first export */
};

/* Undoes the first `stage` steps of an allocation (1: created, 2: reserved, 3:
 * mapped), newest first. */
static void
undo(tack__gpu_state *s, tack__gpu_mem_handle h, tack__gpu_ptr p, size_t size,
     int stage)
{
    const tack__gpu_api *api = &s->drv->api;
    if (stage >= 3) {
        (void)api->vmm_unmap(p, size);
    }
    if (stage >= 2) {
        (void)api->vmm_address_free(p, size);
    }
    if (stage >= 1) {
        (void)api->vmm_release(h);
    }
}

/* The steps of an allocation of size bytes; on failure *stage says how many were
 * done. */
static tack_status
vmm_steps(tack__gpu_state *s, size_t size, tack__gpu_mem_handle *h, tack__gpu_ptr *p,
          int *stage)
{
    tack_status st = TACK__GPU_CHECKED(s, vmm_create, h, size, s->device);
    if (st == TACK_OK) {
        *stage = 1;
        st = TACK__GPU_CHECKED(s, vmm_reserve, p, size, s->info.granularity);
    }
    if (st == TACK_OK) {
        *stage = 2;
        st = TACK__GPU_CHECKED(s, vmm_map, *p, size, *h);
    }
    if (st == TACK_OK) {
        *stage = 3;
        st = TACK__GPU_CHECKED(s, vmm_set_access, *p, size, s->device);
    }
    return st;
}

tack_status
tack__gpu_vmm_alloc(tack__gpu_state *s, size_t nbytes, void **ptr)
{
    if (!s->info.vmm) {
        return tack__fail(TACK_ERR_UNSUPPORTED,
                          "device %s:%d cannot make exportable memory: its driver "
                          "reports no virtual memory management or no POSIX file "
                          "descriptor handles; allocate without exportable=True",
                          s->drv->backend, s->ordinal);
    }
    size_t g = s->info.granularity;
    if (nbytes > SIZE_MAX - (g - 1)) {
        return tack__fail(TACK_ERR_SIZE_OVERFLOW,
                          "%zu bytes cannot be rounded up to the %zu-byte allocation "
                          "granularity: use a smaller shape",
                          nbytes, g);
    }
    size_t size = (nbytes + g - 1) / g * g;
    struct tack__gpu_vmm *rec;
    tack_status st = tack__new(sizeof *rec, (void **)&rec);
    if (st != TACK_OK) {
        return st;
    }
    tack__gpu_mem_handle h = 0;
    tack__gpu_ptr p = 0;
    int stage = 0;
    st = vmm_steps(s, size, &h, &p, &stage);
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
static struct tack__gpu_vmm *
take(tack__gpu_state *s, void *ptr)
{
    pthread_mutex_lock(&s->vmm_lock);
    struct tack__gpu_vmm **link = &s->vmm_list;
    while (*link && (*link)->ptr != (uintptr_t)ptr) {
        link = &(*link)->next;
    }
    struct tack__gpu_vmm *rec = *link;
    if (rec) {
        *link = rec->next;
    }
    pthread_mutex_unlock(&s->vmm_lock);
    return rec;
}

bool
tack__gpu_vmm_free(tack__gpu_state *s, void *ptr, bool driver_ok)
{
    if (!s->info.vmm) {
        return false;
    }
    struct tack__gpu_vmm *rec = take(s, ptr);
    if (!rec) {
        return false;
    }
    if (rec->fd >= 0) {
        (void)close(rec->fd); /* ours: a consumer that keeps it imports a dup */
    }
    if (driver_ok) {
        (void)s->drv->api.stream_synchronize(s->stream);
        undo(s, rec->handle, (tack__gpu_ptr)rec->ptr, rec->size, 3);
    }
    tack__free(rec);
    return true;
}

tack_status
tack__gpu_export_memory(void *state, void *ptr, size_t nbytes,
                        tack_exported_memory *out)
{
    tack__gpu_state *s = state;
    tack__gpu_guard g;
    tack_status st = tack__gpu_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    pthread_mutex_lock(&s->vmm_lock);
    struct tack__gpu_vmm *rec = s->vmm_list;
    while (rec && rec->ptr != (uintptr_t)ptr) {
        rec = rec->next;
    }
    if (!rec) {
        st = tack__fail(TACK_ERR_UNSUPPORTED,
                        "address %p is not an exportable allocation of %s:%d: "
                        "allocate with exportable=True",
                        ptr, s->drv->backend, s->ordinal);
    }
    else if (rec->fd < 0) {
        int fd = -1;
        st = TACK__GPU_CHECKED(s, vmm_export_fd, &fd, rec->handle);
        if (st == TACK_OK) {
            rec->fd = fd;
        }
    }
    if (st == TACK_OK) {
        out->backend = s->drv->backend;
        out->handle_type = "posix_fd";
        out->handle = (uint64_t)rec->fd;
        out->size = nbytes;
        out->allocation_size = rec->size;
        memcpy(out->device_uuid, s->info.uuid, sizeof out->device_uuid);
    }
    pthread_mutex_unlock(&s->vmm_lock);
    tack__gpu_leave(s, &g);
    return st;
}
