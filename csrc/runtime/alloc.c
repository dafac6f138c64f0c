/*
 * alloc.c: the allocation hook. The default allocator is C11 aligned_alloc; a test
 * installs one that counts and fails on request.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A block of unspecified alignment (0) is at least this aligned: enough for any
 * dtype and for vector loads. */
#define TACK__MIN_ALIGNMENT 64u

static void *
default_alloc(void *ctx, size_t nbytes, size_t alignment)
{
    (void)ctx;
    if (alignment <= TACK__STRUCT_ALIGNMENT) {
        /* malloc already aligns this much, and glibc's memalign is several times
         * slower and fragments the heap: structs on hot paths come here. */
        return malloc(nbytes);
    }
    /* C11 wants the size to be a multiple of the alignment. */
    size_t rounded = (nbytes + alignment - 1) & ~(alignment - 1);
    if (rounded < nbytes) {
        return NULL;
    }
    return aligned_alloc(alignment, rounded);
}

static void
default_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static const tack_allocator default_allocator = {default_alloc, default_free, NULL};
static tack_allocator current = {default_alloc, default_free, NULL};

void
tack_set_allocator(const tack_allocator *allocator)
{
    current = allocator ? *allocator : default_allocator;
}

void *
tack__alloc(size_t nbytes, size_t alignment)
{
    if (alignment == 0) {
        alignment = TACK__MIN_ALIGNMENT;
    }
    else if (alignment < TACK__STRUCT_ALIGNMENT) {
        alignment = TACK__STRUCT_ALIGNMENT;
    }
    /* A zero-byte request still gets a unique, freeable pointer. */
    return current.alloc(current.ctx, nbytes ? nbytes : 1, alignment);
}

void *
tack__calloc(size_t nbytes)
{
    void *p = tack__alloc(nbytes, TACK__STRUCT_ALIGNMENT);
    if (p) {
        memset(p, 0, nbytes ? nbytes : 1);
    }
    return p;
}

void
tack__free(void *ptr)
{
    if (ptr) {
        current.free(current.ctx, ptr);
    }
}

char *
tack__strndup(const char *s, size_t n)
{
    char *d = tack__alloc(n + 1, 0);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

tack_status
tack__new(size_t nbytes, void **out)
{
    void *p = tack__calloc(nbytes);
    if (!p) {
        return tack__fail(TACK_ERR_NO_MEMORY, "out of memory allocating %zu bytes",
                          nbytes);
    }
    *out = p;
    return TACK_OK;
}
