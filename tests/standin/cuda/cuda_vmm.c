/*
 * standin_vmm.c: the virtual memory management API (cuMemCreate and friends) of the
 * stand-in driver, and POSIX file descriptor export and import.
 *
 * A physical allocation is its own memfd ("tack-standin-vmm-d<device>"), so the fd that
 * cuMemExportToShareableHandle returns is a real one: a duplicate the caller owns and
 * must close, which another process (or this one) can import and map. Mapping puts the
 * memfd into the reserved device range with PROT_NONE, like the pool; the stand-in
 * reads and writes through a second, read-write mapping of the same memfd.
 *
 * The checks follow NVIDIA's documentation, with three stricter readings (marked
 * below): cuMemMap maps a whole allocation at offset 0, cuMemUnmap and cuMemSetAccess
 * name whole mappings, and cuMemAddressFree refuses a range that still has mappings.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_layer.h"

typedef struct standin_vmm_handle {
    int fd; /* the memfd; closed when released and unmapped */
    size_t size;
    int device;
    unsigned handle_types; /* requestedHandleTypes at creation */
    bool released;
    int mappings;
    unsigned char *alias; /* read-write view of the whole allocation */
    struct standin_vmm_handle *next;
} standin_vmm_handle;

typedef struct reservation {
    uintptr_t base;
    size_t size;
    bool freed;
    struct reservation *next;
} reservation;

static standin_vmm_handle *handles;
static reservation *reservations;

static standin_vmm_handle *
known_handle(tcu_mem_handle h)
{
    for (standin_vmm_handle *p = handles; p; p = p->next) {
        if ((tcu_mem_handle)(uintptr_t)p == h) {
            return p->released ? NULL : p;
        }
    }
    return NULL;
}

static void
handle_destroy_if_unused(standin_vmm_handle *h)
{
    if (h->released && h->mappings == 0 && h->fd >= 0) {
        munmap(h->alias, h->size);
        close(h->fd);
        h->fd = -1;
        h->alias = NULL;
    }
}

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
    if (rc == STANDIN_OK) {
        if (!granularity || (option != TCU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                             option != TCU_MEM_ALLOC_GRANULARITY_RECOMMENDED)) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
        else {
            *granularity = STANDIN_GRANULARITY;
        }
    }
    return standin_leave(rc, "cuMemGetAllocationGranularity", "option=%d", option);
}

static standin_rc
handle_new(int fd, size_t size, int device, unsigned types, standin_vmm_handle **out)
{
    standin_vmm_handle *h = calloc(1, sizeof *h);
    void *a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!h || a == MAP_FAILED) {
        free(h);
        if (a != MAP_FAILED) {
            munmap(a, size);
        }
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    h->fd = fd;
    h->size = size;
    h->device = device;
    h->handle_types = types;
    h->alias = a;
    h->next = handles;
    handles = h;
    *out = h;
    return STANDIN_OK;
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
    if (rc == STANDIN_OK &&
        (!handle || flags != 0 || size == 0 || size % STANDIN_GRANULARITY != 0)) {
        rc = STANDIN_ERR_INVALID_VALUE; /* size must be a multiple of the granularity */
    }
    if (rc == STANDIN_OK) {
        char name[40];
        snprintf(name, sizeof name, "tack-standin-vmm-d%d", prop->location.id);
        int fd = memfd_create(name, MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
            rc = STANDIN_ERR_OUT_OF_MEMORY;
        }
        else {
            rc = handle_new(fd, size, prop->location.id,
                            (unsigned)prop->requestedHandleTypes, &h);
        }
        if (rc != STANDIN_OK && fd >= 0) {
            close(fd);
        }
    }
    if (rc == STANDIN_OK) {
        memset(h->alias, STANDIN_FILL, size);
        *handle = (tcu_mem_handle)(uintptr_t)h;
    }
    return standin_leave(rc, "cuMemCreate", "size=%zu, handle=%p", size, (void *)h);
}

STANDIN_EXPORT tcu_result
cuMemRelease(tcu_mem_handle handle)
{
    standin_rc rc = standin_enter("cuMemRelease");
    if (rc == STANDIN_OK) {
        standin_vmm_handle *h = known_handle(handle);
        if (!h) {
            rc = STANDIN_ERR_INVALID_VALUE; /* unknown or released twice */
        }
        else {
            /* The memory lives on while a mapping uses it, as documented. */
            h->released = true;
            handle_destroy_if_unused(h);
        }
    }
    return standin_leave(rc, "cuMemRelease", "handle=0x%llx", handle);
}

STANDIN_EXPORT tcu_result
cuMemAddressReserve(standin_addr *ptr, size_t size, size_t alignment, standin_addr addr,
                    unsigned long long flags)
{
    standin_rc rc = standin_enter("cuMemAddressReserve");
    uintptr_t base = 0;
    (void)addr; /* only a hint */
    if (rc == STANDIN_OK &&
        (!ptr || flags != 0 || size == 0 || size % STANDIN_GRANULARITY != 0 ||
         (alignment & (alignment - 1)) != 0)) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    reservation *r = NULL;
    if (rc == STANDIN_OK && !(r = calloc(1, sizeof *r))) {
        rc = STANDIN_ERR_OUT_OF_MEMORY;
    }
    if (rc == STANDIN_OK) {
        rc = standin_vmm_reserve(size, alignment, &base);
    }
    if (rc == STANDIN_OK) {
        r->base = base;
        r->size = size;
        r->next = reservations;
        reservations = r;
        *ptr = (standin_addr)base;
    }
    else {
        free(r);
    }
    return standin_leave(rc, "cuMemAddressReserve",
                         "size=%zu, alignment=%zu, ptr=0x%llx", size, alignment,
                         (unsigned long long)base);
}

static reservation *
reservation_of(uintptr_t p, size_t size)
{
    for (reservation *r = reservations; r; r = r->next) {
        if (!r->freed && p >= r->base && p - r->base < r->size &&
            size <= r->size - (p - r->base)) {
            return r;
        }
    }
    return NULL;
}

/* The live mapping that starts at p, or NULL. */
static standin_alloc *
mapping_at(uintptr_t p)
{
    standin_alloc *a = standin_alloc_find(p);
    return a && a->kind == ALLOC_VMM && !a->freed && a->base == p ? a : NULL;
}

/* True when some live mapping overlaps [p, p + size). */
static bool
mapped_within(uintptr_t p, size_t size)
{
    for (uintptr_t q = p; q < p + size; q += STANDIN_GRANULARITY) {
        standin_alloc *a = standin_alloc_find(q);
        if (a && a->kind == ALLOC_VMM && !a->freed) {
            return true;
        }
    }
    return false;
}

STANDIN_EXPORT tcu_result
cuMemAddressFree(standin_addr ptr, size_t size)
{
    standin_rc rc = standin_enter("cuMemAddressFree");
    if (rc == STANDIN_OK) {
        reservation *r = reservation_of((uintptr_t)ptr, size);
        /* It must name a whole reservation, and (stricter) one with nothing mapped. */
        if (!r || r->base != (uintptr_t)ptr || r->size != size ||
            mapped_within(r->base, r->size)) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
        else {
            r->freed = true;
        }
    }
    return standin_leave(rc, "cuMemAddressFree", "ptr=0x%llx, size=%zu", ptr, size);
}

STANDIN_EXPORT tcu_result
cuMemMap(standin_addr ptr, size_t size, size_t offset, tcu_mem_handle handle,
         unsigned long long flags)
{
    standin_rc rc = standin_enter("cuMemMap");
    standin_vmm_handle *h = NULL;
    reservation *r = NULL;
    if (rc == STANDIN_OK) {
        h = known_handle(handle);
        r = reservation_of((uintptr_t)ptr, size);
        /* Stricter: the whole allocation, from offset 0; never over a mapping. */
        if (!h || !r || flags != 0 || (uintptr_t)ptr % STANDIN_GRANULARITY != 0 ||
            offset != 0 || size != h->size || mapped_within((uintptr_t)ptr, size)) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
    }
    standin_alloc *m = NULL;
    if (rc == STANDIN_OK) {
        void *at = mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED,
                        h->fd, 0);
        if (at == MAP_FAILED ||
            !(m = standin_alloc_add((uintptr_t)ptr, size, h->alias, NULL, ALLOC_VMM))) {
            rc = STANDIN_ERR_OUT_OF_MEMORY;
        }
    }
    if (rc == STANDIN_OK) {
        m->device = h->device;
        m->vmm = h;
        m->reservation = r->base;
        m->reservation_size = r->size;
        h->mappings++;
    }
    return standin_leave(rc, "cuMemMap",
                         "ptr=0x%llx, size=%zu, offset=%zu, handle=0x%llx", ptr, size,
                         offset, handle);
}

STANDIN_EXPORT tcu_result
cuMemUnmap(standin_addr ptr, size_t size)
{
    standin_rc rc = standin_enter("cuMemUnmap");
    standin_alloc *m = NULL;
    if (rc == STANDIN_OK) {
        m = mapping_at((uintptr_t)ptr);
        if (!m || m->nbytes != size) {
            rc = STANDIN_ERR_INVALID_VALUE; /* stricter: one whole mapping */
        }
    }
    if (rc == STANDIN_OK) {
        /* Work still queued against the mapping runs first: the memory must not go
         * while the device may use it. */
        for (struct standin_context *c = standin.contexts; c; c = c->next) {
            if (c->alive && c->device == m->device) {
                standin_run_context(c);
            }
        }
        void *at = mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        (void)at; /* failing to restore the reservation only loses address space */
        standin_alloc_release(m);
        m->vmm->mappings--;
        handle_destroy_if_unused(m->vmm);
    }
    return standin_leave(rc, "cuMemUnmap", "ptr=0x%llx, size=%zu", ptr, size);
}

STANDIN_EXPORT tcu_result
cuMemSetAccess(standin_addr ptr, size_t size, const tcu_mem_access_desc *desc,
               size_t count)
{
    standin_rc rc = standin_enter("cuMemSetAccess");
    if (rc == STANDIN_OK && (!desc || count == 0 || size == 0)) {
        rc = STANDIN_ERR_INVALID_VALUE; /* an empty descriptor list is refused */
    }
    for (size_t k = 0; rc == STANDIN_OK && k < count; k++) {
        tcu_mem_access_flags f = desc[k].flags;
        if (desc[k].location.type != TCU_MEM_LOCATION_TYPE_DEVICE ||
            !standin_device_ok(desc[k].location.id) ||
            (f != STANDIN_ACCESS_NONE && f != STANDIN_ACCESS_READ &&
             f != STANDIN_ACCESS_READWRITE)) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
    }
    /* Stricter: the range is a run of whole, adjacent mappings. */
    uintptr_t p = (uintptr_t)ptr, end = p + size;
    while (rc == STANDIN_OK && p < end) {
        standin_alloc *m = mapping_at(p);
        if (!m || m->nbytes > end - p) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
        else {
            p += m->nbytes;
        }
    }
    for (p = (uintptr_t)ptr; rc == STANDIN_OK && p < end;) {
        standin_alloc *m = mapping_at(p);
        for (size_t k = 0; k < count; k++) {
            m->access[desc[k].location.id] = (unsigned)desc[k].flags;
        }
        p += m->nbytes;
    }
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
        standin_vmm_handle *h = known_handle(handle);
        /* The handle type must also have been requested at creation. */
        if (!shareableHandle || !h || flags != 0 ||
            handleType != TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
            !(h->handle_types & TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
        else if ((fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0)) < 0) {
            rc = STANDIN_ERR_OUT_OF_MEMORY;
        }
        else {
            memcpy(shareableHandle, &fd, sizeof fd); /* the caller owns and closes it */
        }
    }
    return standin_leave(rc, "cuMemExportToShareableHandle", "handle=0x%llx, fd=%d",
                         handle, fd);
}

/* The device whose exported memory fd is, or -1 when fd is not one. */
static int
exported_device(int fd)
{
    char path[64], target[128];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) {
        return -1;
    }
    target[n] = '\0';
    static const char prefix[] = "/memfd:tack-standin-vmm-d";
    if (strncmp(target, prefix, sizeof prefix - 1) != 0) {
        return -1;
    }
    char *end = NULL;
    long device = strtol(target + sizeof prefix - 1, &end, 10);
    return end != target + sizeof prefix - 1 && device >= 0 &&
                   device < STANDIN_MAX_DEVICES
               ? (int)device
               : -1;
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
        struct stat st;
        int device = exported_device(fd);
        if (!handle || shHandleType != TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
            device < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
        else if (!standin_device_ok(device)) {
            rc = STANDIN_ERR_INVALID_DEVICE;
        }
        else {
            /* The fd stays the caller's; the handle keeps its own duplicate. */
            int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
            rc = own < 0 ? STANDIN_ERR_OUT_OF_MEMORY
                         : handle_new(own, (size_t)st.st_size, device,
                                      TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &h);
            if (rc != STANDIN_OK && own >= 0) {
                close(own);
            }
        }
    }
    if (rc == STANDIN_OK) {
        *handle = (tcu_mem_handle)(uintptr_t)h;
    }
    return standin_leave(rc, "cuMemImportFromShareableHandle", "fd=%d, handle=%p", fd,
                         (void *)h);
}
