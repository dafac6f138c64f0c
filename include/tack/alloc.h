/*
 * alloc.h: the one allocation hook. Every heap allocation the runtime makes (its own
 * structs and CPU array memory) goes through the allocator installed here, so a test
 * can count allocations, make the k-th one fail, and check that nothing leaked.
 */
#ifndef TACK_ALLOC_H
#define TACK_ALLOC_H

#include <stddef.h>

#include "tack/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tack_allocator {
    /* Returns nbytes (> 0) of memory aligned to alignment (a power of two, at most
     * 4096), or NULL. */
    void *(*alloc)(void *ctx, size_t nbytes, size_t alignment);
    /* Frees what alloc returned; ptr is never NULL. */
    void (*free)(void *ctx, void *ptr);
    void *ctx;
} tack_allocator;

/*
 * Installs an allocator for the whole process, or the default one when NULL.
 * Only call this while no Tack object exists: memory must be freed by the allocator
 * that allocated it. Not thread-safe with concurrent Tack calls.
 */
TACK_API void tack_set_allocator(const tack_allocator *allocator);

#ifdef __cplusplus
}
#endif

#endif /* TACK_ALLOC_H */
