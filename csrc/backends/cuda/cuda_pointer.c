/*
 * cuda_pointer.c: where a pointer lives, asked of the driver in one
 * cuPointerGetAttributes call. Unlike cuPointerGetAttribute, it succeeds for a pointer
 * CUDA does not know and reports zeroed attributes: ordinary host memory.
 *
 * Device memory counts as this device's only when the driver says it belongs to this
 * ordinal: another GPU's memory is refused rather than read through peer access a
 * launch may not have. Managed memory is reachable from every device. Pinned host
 * memory is host memory (the CPU backend wraps it).
 */
#include "cuda_internal.h"

tack_status
tack__cuda_memory_space(void *state, const void *ptr, tack_memory_space *out)
{
    tack__cuda_state *s = state;
    tack__cuda_guard g;
    tack_status st = tack__cuda_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    unsigned int type = 0;
    int ordinal = -1;
    unsigned int managed = 0;
    tcu_pointer_attribute attrs[] = {TCU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     TCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                     TCU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[] = {&type, &ordinal, &managed};
    tcu_result rc = s->drv->api.cuPointerGetAttributes(3, attrs, data,
                                                       (tcu_deviceptr)(uintptr_t)ptr);
    st = tack__cuda_check(s, rc, "cuPointerGetAttributes");
    tack__cuda_leave(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    if (managed) {
        *out = TACK_MEMORY_MANAGED;
    }
    else if (type == TCU_MEMORYTYPE_DEVICE) {
        *out = ordinal == s->ordinal ? TACK_MEMORY_DEVICE : TACK_MEMORY_UNKNOWN;
    }
    else if (type == TCU_MEMORYTYPE_HOST) {
        *out = TACK_MEMORY_PINNED;
    }
    else {
        *out = TACK_MEMORY_HOST;
    }
    return TACK_OK;
}

/* The first CUDA device opened in this process (registry devices never die), for
 * questions the CPU backend asks; NULL while no CUDA device has been opened. */
static _Atomic(tack__cuda_state *) any_device;

void
tack__cuda_note_device(tack__cuda_state *s)
{
    tack__cuda_state *none = NULL;
    atomic_compare_exchange_strong(&any_device, &none, s);
}

tack_memory_space
tack__cuda_pointer_kind(const void *ptr)
{
    tack__cuda_state *s = atomic_load_explicit(&any_device, memory_order_acquire);
    tack_memory_space space = TACK_MEMORY_HOST;
    if (!s || tack__cuda_memory_space(s, ptr, &space) != TACK_OK) {
        return TACK_MEMORY_HOST; /* no CUDA here, or no answer: the caller decides */
    }
    /* Device memory of any ordinal is unreachable from the host. */
    return space == TACK_MEMORY_DEVICE || space == TACK_MEMORY_UNKNOWN
               ? TACK_MEMORY_DEVICE
               : TACK_MEMORY_HOST;
}
