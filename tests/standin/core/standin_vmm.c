/*
 * standin_vmm.c: virtual memory management (physical allocations, reserved address
 * ranges, mappings and their access) and POSIX file descriptor export and import.
 *
 * A physical allocation is its own memfd ("tack-standin-vmm-d<device>"), so an exported
 * fd is a real one: a duplicate the caller owns and must close, which another process
 * (or this one) can import and map. Mapping puts the memfd into the reserved device
 * range with PROT_NONE, like the pool; the stand-in reads and writes through a second,
 * read-write mapping of the same memfd.
 *
 * The checks follow NVIDIA's documentation of the CUDA calls, with three stricter
 * readings: a map maps a whole allocation at offset 0, an unmap and an access change
 * name whole mappings, and freeing a reserved range refuses one that still has
 * mappings.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "standin.h"

struct standin_vmm_handle {
    int fd; /* the memfd; closed when released and unmapped */
    size_t size;
    int device;
    bool fd_export; /* exportable as a POSIX fd (asked for at creation) */
    bool released;
    int mappings;
    unsigned char *alias; /* read-write view of the whole allocation */
    struct standin_vmm_handle *next;
};

typedef struct reservation {
    uintptr_t base;
    size_t size;
    bool freed;
    struct reservation *next;
} reservation;

static standin_vmm_handle *handles;
static reservation *reservations;

standin_vmm_handle *
standin_vmm_find(uint64_t handle)
{
    for (standin_vmm_handle *p = handles; p; p = p->next) {
        if ((uint64_t)(uintptr_t)p == handle) {
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

static standin_rc
handle_new(int fd, size_t size, int device, bool fd_export, standin_vmm_handle **out)
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
    h->fd_export = fd_export;
    h->alias = a;
    h->next = handles;
    handles = h;
    *out = h;
    return STANDIN_OK;
}

standin_rc
standin_vmm_create(int device, size_t size, bool fd_export, standin_vmm_handle **out)
{
    if (size == 0 || size % STANDIN_GRANULARITY != 0) {
        return STANDIN_ERR_INVALID_VALUE; /* a multiple of the granularity */
    }
    char name[40];
    snprintf(name, sizeof name, "tack-standin-vmm-d%d", device);
    int fd = memfd_create(name, MFD_CLOEXEC);
    standin_vmm_handle *h = NULL;
    standin_rc rc = fd < 0 || ftruncate(fd, (off_t)size) != 0
                        ? STANDIN_ERR_OUT_OF_MEMORY
                        : handle_new(fd, size, device, fd_export, &h);
    if (rc != STANDIN_OK) {
        if (fd >= 0) {
            close(fd);
        }
        return rc;
    }
    memset(h->alias, STANDIN_FILL, size);
    *out = h;
    return STANDIN_OK;
}

standin_rc
standin_vmm_release(uint64_t handle)
{
    standin_vmm_handle *h = standin_vmm_find(handle);
    if (!h) {
        return STANDIN_ERR_INVALID_VALUE; /* unknown or released twice */
    }
    /* The memory lives on while a mapping uses it, as documented. */
    h->released = true;
    handle_destroy_if_unused(h);
    return STANDIN_OK;
}

/* ---- reserved ranges and mappings ------------------------------------------------ */

standin_rc
standin_vmm_address_reserve(size_t size, size_t alignment, standin_addr *out)
{
    if (size == 0 || size % STANDIN_GRANULARITY != 0 ||
        (alignment & (alignment - 1)) != 0) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    reservation *r = calloc(1, sizeof *r);
    uintptr_t base = 0;
    standin_rc rc =
        r ? standin_vmm_reserve(size, alignment, &base) : STANDIN_ERR_OUT_OF_MEMORY;
    if (rc != STANDIN_OK) {
        free(r);
        return rc;
    }
    r->base = base;
    r->size = size;
    r->next = reservations;
    reservations = r;
    *out = (standin_addr)base;
    return STANDIN_OK;
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

standin_rc
standin_vmm_address_free(standin_addr ptr, size_t size)
{
    reservation *r = reservation_of((uintptr_t)ptr, size);
    /* It must name a whole reservation, and (stricter) one with nothing mapped. */
    if (!r || r->base != (uintptr_t)ptr || r->size != size ||
        mapped_within(r->base, r->size)) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    r->freed = true;
    return STANDIN_OK;
}

standin_rc
standin_vmm_map(standin_addr ptr, size_t size, size_t offset, uint64_t handle)
{
    standin_vmm_handle *h = standin_vmm_find(handle);
    reservation *r = reservation_of((uintptr_t)ptr, size);
    /* Stricter: the whole allocation, from offset 0; never over a mapping. */
    if (!h || !r || (uintptr_t)ptr % STANDIN_GRANULARITY != 0 || offset != 0 ||
        size != h->size || mapped_within((uintptr_t)ptr, size)) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    standin_alloc *m = NULL;
    void *at =
        mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, 0);
    if (at == MAP_FAILED ||
        !(m = standin_alloc_add((uintptr_t)ptr, size, h->alias, NULL, ALLOC_VMM))) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    m->device = h->device;
    m->vmm = h;
    m->reservation = r->base;
    m->reservation_size = r->size;
    h->mappings++;
    return STANDIN_OK;
}

standin_rc
standin_vmm_unmap(standin_addr ptr, size_t size)
{
    standin_alloc *m = mapping_at((uintptr_t)ptr);
    if (!m || m->nbytes != size) {
        return STANDIN_ERR_INVALID_VALUE; /* stricter: one whole mapping */
    }
    /* Work still queued against the mapping runs first: the memory must not go while
     * the device may use it. */
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
    return STANDIN_OK;
}

standin_rc
standin_vmm_set_access(standin_addr ptr, size_t size, const standin_access *desc,
                       size_t count)
{
    if (!desc || count == 0 || size == 0) {
        return STANDIN_ERR_INVALID_VALUE; /* an empty descriptor list is refused */
    }
    for (size_t k = 0; k < count; k++) {
        unsigned f = desc[k].access;
        if (!standin_device_ok(desc[k].device) ||
            (f != STANDIN_ACCESS_NONE && f != STANDIN_ACCESS_READ &&
             f != STANDIN_ACCESS_READWRITE)) {
            return STANDIN_ERR_INVALID_VALUE;
        }
    }
    /* Stricter: the range is a run of whole, adjacent mappings. */
    uintptr_t p = (uintptr_t)ptr, end = p + size;
    while (p < end) {
        standin_alloc *m = mapping_at(p);
        if (!m || m->nbytes > end - p) {
            return STANDIN_ERR_INVALID_VALUE;
        }
        p += m->nbytes;
    }
    for (p = (uintptr_t)ptr; p < end;) {
        standin_alloc *m = mapping_at(p);
        for (size_t k = 0; k < count; k++) {
            m->access[desc[k].device] = desc[k].access;
        }
        p += m->nbytes;
    }
    return STANDIN_OK;
}

/* ---- file descriptors ------------------------------------------------------------ */

standin_rc
standin_vmm_export_fd(uint64_t handle, int *out)
{
    standin_vmm_handle *h = standin_vmm_find(handle);
    /* The handle type must also have been requested at creation. */
    if (!h || !h->fd_export) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    int fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    *out = fd; /* the caller owns and closes it */
    return STANDIN_OK;
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

standin_rc
standin_vmm_import_fd(int fd, standin_vmm_handle **out)
{
    struct stat st;
    int device = exported_device(fd);
    if (device < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    if (!standin_device_ok(device)) {
        return STANDIN_ERR_INVALID_DEVICE;
    }
    /* The fd stays the caller's; the handle keeps its own duplicate. */
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    standin_rc rc = own < 0 ? STANDIN_ERR_OUT_OF_MEMORY
                            : handle_new(own, (size_t)st.st_size, device, true, out);
    if (rc != STANDIN_OK && own >= 0) {
        close(own);
    }
    return rc;
}
