/*
 * gpu_pointer.c: where a pointer lives, asked of the driver in one pointer_info call,
 * which succeeds for a pointer the driver does not know and says so (ordinary host
 * memory).
 *
 * Device memory counts as this device's only when the driver says it belongs to this
 * ordinal: another GPU's memory is refused rather than read through peer access a
 * launch may not have. Managed memory is reachable from every device. Pinned host
 * memory is host memory (the CPU backend wraps it).
 */
#include "gpu_internal.h"

tack_status
tack__gpu_memory_space(void *state, const void *ptr, tack_memory_space *out)
{
    tack__gpu_state *s = state;
    tack__gpu_guard g;
    tack_status st = tack__gpu_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    tack__gpu_pointer_info info = {TACK__GPU_POINTER_UNKNOWN, -1};
    st = TACK__GPU_CHECKED(s, pointer_info, (tack__gpu_ptr)(uintptr_t)ptr, &info);
    tack__gpu_leave(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    switch (info.kind) {
    case TACK__GPU_POINTER_MANAGED: *out = TACK_MEMORY_MANAGED; break;
    case TACK__GPU_POINTER_DEVICE:
        *out = info.ordinal == s->ordinal ? TACK_MEMORY_DEVICE : TACK_MEMORY_UNKNOWN;
        break;
    case TACK__GPU_POINTER_HOST: *out = TACK_MEMORY_PINNED; break;
    case TACK__GPU_POINTER_UNKNOWN:
    default: *out = TACK_MEMORY_HOST; break;
    }
    return TACK_OK;
}
