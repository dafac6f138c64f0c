/*
 * dlpack_stream.c: the stream rules of DLPack exchange, on both sides.
 *
 * The Array API numbers streams per device type (tack__dlpack_stream_check): what a
 * consumer may pass to Tack's __dlpack__, and what tack_device_follow_stream takes.
 * kDLCPU and kDLOneAPI have no integer streams (oneAPI's is a SYCL queue object, and
 * its consumers pass none): only -1, "do not synchronize", is taken.
 * As a consumer Tack asks a producer to order its pending writes before Tack's own
 * stream on the tensor's device (tack_dlpack_consumer_stream); through the exchange
 * API, which hands a tensor over without that request, Tack's stream is made to wait
 * for the producer's current stream instead (tack_dlpack_exchange_pending_work).
 *
 * Which memory has a Tack stream: device memory (not pinned or host memory) whose
 * backend (dlpack_import.c's device table) has the stream slot. Today that is
 * CUDA's, for kDLCUDA and kDLCUDAManaged; a backend that gains the slot is served
 * without a change here.
 */
#include "tack/dlpack.h"

#include "internal.h"

tack_status
tack__dlpack_stream_check(int32_t device_type, int64_t stream)
{
    bool ok;
    bool none = false; /* the device type has no int streams at all */
    switch (device_type) {
    case kDLCPU:    /* no streams: only "do not synchronize" */
    case kDLOneAPI: /* a SYCL queue is an object, never an int: the same rule */
        ok = stream == -1;
        none = true;
        break;
    case kDLCUDA:
    case kDLCUDAManaged: ok = stream >= -1 && stream != 0; break; /* 0 is ambiguous */
    case kDLROCM: ok = stream >= -1 && stream != 1 && stream != 2; break;
    default: ok = stream >= -1; break;
    }
    if (!ok) {
        return tack__fail_remedy(
            TACK_ERR_DLPACK_INVALID, none ? TACK_REMEDY_NO_STREAM : TACK_REMEDY_NONE,
            "stream %lld is not a stream of DLPack device type %d%s", (long long)stream,
            (int)device_type, none ? ", which has no integer streams" : "");
    }
    return TACK_OK;
}

const char *
tack_dlpack_backend_name(int32_t device_type)
{
    const char *backend = NULL;
    bool host_memory = false;
    return tack__dlpack_device_row(device_type, &backend, &host_memory) ? backend
                                                                        : NULL;
}

tack_device *
tack_dlpack_stream_device(int32_t device_type, int64_t device_id)
{
    const char *name = NULL;
    bool host_memory = false;
    if (!tack__dlpack_device_row(device_type, &name, &host_memory) || host_memory ||
        device_id < 0 || device_id > INT32_MAX) {
        return NULL;
    }
    /* The table first: a backend without streams is never opened (or its driver
     * loaded) for this question. */
    const tack_backend *b = tack__backend_named(name);
    if (!b || !TACK__BACKEND_SLOT(b, stream)) {
        return NULL;
    }
    tack_device *dev = NULL;
    if (tack_device_open(name, (int)device_id, NULL, &dev) != TACK_OK) {
        return NULL; /* no such device here: nothing of Tack's can be ordered */
    }
    return dev;
}

uintptr_t
tack_dlpack_consumer_stream(int32_t device_type, int64_t device_id)
{
    tack_device *dev = tack_dlpack_stream_device(device_type, device_id);
    if (!dev) {
        return 0;
    }
    uintptr_t stream = tack_device_stream(dev);
    tack_device_release(dev);
    /* The legacy default stream when Tack has none of its own (never 0, which the
     * Array API forbids on CUDA). */
    return stream ? stream : 1u;
}

bool
tack_dlpack_exchange_pending_work(const DLPackExchangeAPI *api,
                                  const DLManagedTensorVersioned *mt)
{
    if (!api || !mt || mt->version.major != 1) {
        return false; /* not a tensor of the exchange API's version */
    }
    int32_t type = mt->dl_tensor.device.device_type;
    int32_t id = mt->dl_tensor.device.device_id;
    const char *name = NULL;
    bool host_memory = false;
    if (tack__dlpack_device_row(type, &name, &host_memory) && host_memory) {
        return false; /* host memory: the producer's work on it is done */
    }
    if (!api->current_work_stream) {
        return true;
    }
    void *stream = NULL;
    if (api->current_work_stream((DLDeviceType)type, id, &stream) != 0) {
        return true;
    }
    tack_device *dev = tack_dlpack_stream_device(type, id);
    if (!dev) {
        return stream != NULL; /* no stream of Tack's to order after the producer's */
    }
    /* NULL is the producer's legacy default stream. */
    uintptr_t foreign = stream ? (uintptr_t)stream : 1u;
    tack_status status = tack_device_wait_for_stream(dev, foreign);
    tack_device_release(dev);
    return status != TACK_OK;
}
