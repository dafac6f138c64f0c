/*
 * gpu_error.c: a driver's result codes as Tack statuses. What a code means comes from
 * the driver table's classify, so no file here knows a vendor's numbers; the message
 * names the call and the driver's own name of the code.
 *
 * A sticky error (an illegal address in a kernel, a failed launch) leaves the context
 * unusable for the rest of the process: it is recorded on the device, and every later
 * call fails at once with the same explanation (tack__gpu_enter).
 */
#include "gpu_internal.h"

tack_status
tack__gpu_sticky_failure(tack__gpu_state *s, tack__gpu_result rc, const char *call)
{
    const tack__gpu_driver *drv = s->drv;
    return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                      "device %s:%d is unusable: a kernel or copy failed with %s (%d), "
                      "seen in %s, and %s keeps that error for the rest of the "
                      "process; results written since the last synchronization may "
                      "be incomplete: restart the process",
                      drv->backend, s->ordinal, drv->api.error_name(rc), (int)rc, call,
                      drv->vendor->platform);
}

tack_status
tack__gpu_check(tack__gpu_state *s, tack__gpu_result rc, const char *call)
{
    if (rc == TACK__GPU_SUCCESS) {
        return TACK_OK;
    }
    if (s->drv->api.classify(rc) == TACK__GPU_STICKY) {
        tack__gpu_result none = TACK__GPU_SUCCESS;
        atomic_compare_exchange_strong(&s->sticky, &none, rc);
        return tack__gpu_sticky_failure(s, rc, call);
    }
    return tack__gpu_error(s->drv, rc, call);
}

tack_status
tack__gpu_error(const tack__gpu_driver *drv, tack__gpu_result rc, const char *call)
{
    const char *name = drv->api.error_name(rc);
    const char *text = drv->api.error_text(rc);
    switch (drv->api.classify(rc)) {
    case TACK__GPU_OOM:
        return tack__fail(TACK_ERR_NO_MEMORY,
                          "%s: the %s device is out of memory (%s): free arrays or "
                          "use a smaller shape",
                          call, drv->vendor->platform, name);
    case TACK__GPU_SHUTDOWN:
        return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                          "%s: the %s driver is shutting down (%s): the process is "
                          "exiting",
                          call, drv->vendor->platform, name);
    default:
        return tack__fail(TACK_ERR_BACKEND, "%s failed: %s (%d) %s", call, name,
                          (int)rc, text);
    }
}
