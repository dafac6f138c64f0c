/*
 * cuda_memory.c: the CUDA layer's allocation, copy, memset and pointer-query entry
 * points, over the core's memory model (tests/standin/core/standin_memory.c); pointer
 * attributes by CUDA's numbers.
 */
#include <string.h>

#include "cuda_layer.h"

/* ---- allocations ----------------------------------------------------------------- */

STANDIN_EXPORT tcu_result
cuMemAlloc_v2(tcu_deviceptr *dptr, size_t bytesize)
{
    standin_rc rc = standin_enter("cuMemAlloc");
    struct standin_context *ctx = NULL;
    standin_addr p = 0;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK) {
        rc = dptr ? standin_mem_alloc(ctx, bytesize, &p) : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *dptr = p;
    }
    return standin_leave(rc, "cuMemAlloc", "bytes=%zu, ptr=0x%llx", bytesize, p);
}

STANDIN_EXPORT tcu_result
cuMemAllocAsync(tcu_deviceptr *dptr, size_t bytesize, tcu_stream hStream)
{
    standin_rc rc = standin_enter("cuMemAllocAsync");
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    standin_addr p = 0;
    if (rc == STANDIN_OK) {
        rc = cuda_current_stream(hStream, &ctx, &s);
    }
    if (rc == STANDIN_OK) {
        rc = dptr ? standin_mem_alloc_async(ctx, s, bytesize, &p)
                  : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *dptr = p;
    }
    return standin_leave(rc, "cuMemAllocAsync", "bytes=%zu, stream=%p, ptr=0x%llx",
                         bytesize, (void *)hStream, p);
}

STANDIN_EXPORT tcu_result
cuMemAllocManaged(tcu_deviceptr *dptr, size_t bytesize, unsigned int flags)
{
    standin_rc rc = standin_enter("cuMemAllocManaged");
    struct standin_context *ctx = NULL;
    standin_addr p = 0;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK) {
        /* flags: exactly one of CU_MEM_ATTACH_GLOBAL and CU_MEM_ATTACH_HOST. */
        bool flags_ok = flags == TCU_MEM_ATTACH_GLOBAL || flags == TCU_MEM_ATTACH_HOST;
        rc = dptr && bytesize > 0 && flags_ok
                 ? standin_mem_alloc_managed(ctx, bytesize, &p)
                 : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *dptr = p;
    }
    return standin_leave(rc, "cuMemAllocManaged", "bytes=%zu, flags=%u, ptr=0x%llx",
                         bytesize, flags, p);
}

STANDIN_EXPORT tcu_result
cuMemFree_v2(tcu_deviceptr dptr)
{
    standin_rc rc = standin_enter("cuMemFree");
    struct standin_context *ctx = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK) {
        rc = standin_mem_free(ctx, dptr);
    }
    return standin_leave(rc, "cuMemFree", "ptr=0x%llx", dptr);
}

STANDIN_EXPORT tcu_result
cuMemFreeAsync(tcu_deviceptr dptr, tcu_stream hStream)
{
    standin_rc rc = standin_enter("cuMemFreeAsync");
    struct standin_context *ctx = NULL;
    struct standin_queue *s = NULL;
    if (rc == STANDIN_OK) {
        rc = cuda_current_stream(hStream, &ctx, &s);
    }
    if (rc == STANDIN_OK) {
        rc = standin_mem_free_async(ctx, s, dptr);
    }
    return standin_leave(rc, "cuMemFreeAsync", "ptr=0x%llx, stream=%p", dptr,
                         (void *)hStream);
}

STANDIN_EXPORT tcu_result
cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    standin_rc rc = standin_enter("cuMemGetInfo");
    struct standin_context *ctx = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK && (!free_bytes || !total)) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        standin_mem_info(free_bytes, total);
    }
    return standin_leave(rc, "cuMemGetInfo", "%s", "");
}

/* ---- copies and memsets ---------------------------------------------------------- */

/* One copy or memset as an entry point was given it: a 0 device address means "host
 * side". */
typedef struct transfer {
    const char *name;
    tcu_deviceptr dst_dev, src_dev;
    void *dst_host;
    const void *src_host;
    size_t nbytes;
    uint32_t pattern; /* memset: value and width; width 0 for a copy */
    unsigned width;
    tcu_stream stream;
    bool sync; /* a synchronous call: the legacy stream, run to this operation */
} transfer;

static tcu_result
transfer_call(const transfer *t)
{
    standin_rc rc = standin_enter(t->name);
    struct standin_context *ctx = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    struct standin_queue *s = NULL;
    if (rc == STANDIN_OK && !t->sync) {
        rc = cuda_stream(ctx, t->stream, &s);
    }
    if (rc == STANDIN_OK) {
        standin_transfer q = {.dst_dev = t->dst_dev,
                              .src_dev = t->src_dev,
                              .dst_host = t->dst_host,
                              .src_host = t->src_host,
                              .nbytes = t->nbytes,
                              .pattern = t->pattern,
                              .width = t->width,
                              .queue = s,
                              .sync = t->sync};
        rc = standin_transfer_queue(ctx, &q);
    }
    /* A host address is logged as such; a device one as the 0x... it was given. */
    return standin_leave(
        rc, t->name, "dst=%s0x%llx, src=%s0x%llx, n=%zu, stream=%p",
        t->dst_dev ? "" : "host:",
        t->dst_dev ? t->dst_dev : (unsigned long long)(uintptr_t)t->dst_host,
        t->width     ? "value:"
        : t->src_dev ? ""
                     : "host:",
        t->width     ? t->pattern
        : t->src_dev ? t->src_dev
                     : (unsigned long long)(uintptr_t)t->src_host,
        t->nbytes, (void *)t->stream);
}

STANDIN_EXPORT tcu_result
cuMemcpyHtoD_v2(tcu_deviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    transfer t = {.name = "cuMemcpyHtoD",
                  .dst_dev = dstDevice,
                  .src_host = srcHost,
                  .nbytes = ByteCount,
                  .sync = true};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemcpyDtoH_v2(void *dstHost, tcu_deviceptr srcDevice, size_t ByteCount)
{
    transfer t = {.name = "cuMemcpyDtoH",
                  .dst_host = dstHost,
                  .src_dev = srcDevice,
                  .nbytes = ByteCount,
                  .sync = true};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemcpyDtoD_v2(tcu_deviceptr dstDevice, tcu_deviceptr srcDevice, size_t ByteCount)
{
    /* The driver documents device-to-device cuMemcpy as asynchronous with respect to
     * the host; the stand-in queues it on the legacy stream without running it. */
    transfer t = {.name = "cuMemcpyDtoD",
                  .dst_dev = dstDevice,
                  .src_dev = srcDevice,
                  .nbytes = ByteCount,
                  .stream = NULL};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemcpyHtoDAsync_v2(tcu_deviceptr dstDevice, const void *srcHost, size_t ByteCount,
                     tcu_stream hStream)
{
    transfer t = {.name = "cuMemcpyHtoDAsync",
                  .dst_dev = dstDevice,
                  .src_host = srcHost,
                  .nbytes = ByteCount,
                  .stream = hStream};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemcpyDtoHAsync_v2(void *dstHost, tcu_deviceptr srcDevice, size_t ByteCount,
                     tcu_stream hStream)
{
    transfer t = {.name = "cuMemcpyDtoHAsync",
                  .dst_host = dstHost,
                  .src_dev = srcDevice,
                  .nbytes = ByteCount,
                  .stream = hStream};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemcpyDtoDAsync_v2(tcu_deviceptr dstDevice, tcu_deviceptr srcDevice, size_t ByteCount,
                     tcu_stream hStream)
{
    transfer t = {.name = "cuMemcpyDtoDAsync",
                  .dst_dev = dstDevice,
                  .src_dev = srcDevice,
                  .nbytes = ByteCount,
                  .stream = hStream};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemsetD8Async(tcu_deviceptr dstDevice, unsigned char uc, size_t N, tcu_stream hStream)
{
    transfer t = {.name = "cuMemsetD8Async",
                  .dst_dev = dstDevice,
                  .nbytes = N,
                  .pattern = uc,
                  .width = 1,
                  .stream = hStream};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemsetD16Async(tcu_deviceptr dstDevice, unsigned short us, size_t N,
                 tcu_stream hStream)
{
    transfer t = {.name = "cuMemsetD16Async",
                  .dst_dev = dstDevice,
                  .nbytes = N,
                  .pattern = us,
                  .width = 2,
                  .stream = hStream};
    return transfer_call(&t);
}

STANDIN_EXPORT tcu_result
cuMemsetD32Async(tcu_deviceptr dstDevice, unsigned int ui, size_t N, tcu_stream hStream)
{
    transfer t = {.name = "cuMemsetD32Async",
                  .dst_dev = dstDevice,
                  .nbytes = N,
                  .pattern = ui,
                  .width = 4,
                  .stream = hStream};
    return transfer_call(&t);
}

/* ---- pointer attributes ---------------------------------------------------------- */

/* Writes one attribute of a (possibly NULL: not a CUDA pointer) allocation. The value
 * types are those the driver documents: CUcontext, unsigned int, CUdeviceptr, void *,
 * unsigned long long, bool, int. */
static standin_rc
write_attribute(tcu_pointer_attribute attr, const standin_alloc *a, tcu_deviceptr ptr,
                void *data)
{
    switch (attr) {
    case TCU_POINTER_ATTRIBUTE_CONTEXT: {
        tcu_context c = cuda_context_handle(a ? a->ctx : NULL);
        memcpy(data, &c, sizeof(tcu_context));
        return STANDIN_OK;
    }
    case TCU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
        /* Managed memory reads as device memory, as on Linux (the runtime documents
         * that either DEVICE or HOST may come back; IS_MANAGED is what tells). */
        unsigned v = !a                        ? 0
                     : a->kind == ALLOC_PINNED ? TCU_MEMORYTYPE_HOST
                                               : TCU_MEMORYTYPE_DEVICE;
        memcpy(data, &v, sizeof v);
        return STANDIN_OK;
    }
    case TCU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
        tcu_deviceptr v = a ? ptr : 0;
        memcpy(data, &v, sizeof v);
        return STANDIN_OK;
    }
    case TCU_POINTER_ATTRIBUTE_HOST_POINTER: {
        /* Managed and pinned memory are reached from the host at the same address;
         * device memory has no host address. */
        bool host = a && standin_alloc_host_reachable(a);
        void *v = host ? (void *)(uintptr_t)ptr : NULL;
        memcpy(data, &v, sizeof v);
        return a && !host ? STANDIN_ERR_INVALID_VALUE : STANDIN_OK;
    }
    case TCU_POINTER_ATTRIBUTE_BUFFER_ID: {
        unsigned long long v = a ? a->buffer_id : 0;
        memcpy(data, &v, sizeof v);
        return STANDIN_OK;
    }
    case TCU_POINTER_ATTRIBUTE_IS_MANAGED: {
        bool v = a && a->kind == ALLOC_MANAGED;
        memcpy(data, &v, sizeof v);
        return STANDIN_OK;
    }
    case TCU_POINTER_ATTRIBUTE_MAPPED: {
        bool v = a != NULL;
        memcpy(data, &v, sizeof v);
        return STANDIN_OK;
    }
    case TCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
        /* -2 for a pointer CUDA does not know (as documented, unverified on hardware).
         */
        int v = a ? a->device : -2;
        memcpy(data, &v, sizeof v);
        return STANDIN_OK;
    }
    case TCU_POINTER_ATTRIBUTE_RANGE_START_ADDR: {
        tcu_deviceptr v = !a ? 0 : a->kind == ALLOC_VMM ? a->reservation : a->base;
        memcpy(data, &v, sizeof v);
        return STANDIN_OK;
    }
    case TCU_POINTER_ATTRIBUTE_RANGE_SIZE: {
        size_t v = !a ? 0 : a->kind == ALLOC_VMM ? a->reservation_size : a->nbytes;
        memcpy(data, &v, sizeof v);
        return STANDIN_OK;
    }
    case TCU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: {
        unsigned long long v =
            a && a->kind == ALLOC_VMM ? TCU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0;
        memcpy(data, &v, sizeof v);
        return STANDIN_OK;
    }
    default: return STANDIN_ERR_INVALID_VALUE;
    }
}

STANDIN_EXPORT tcu_result
cuPointerGetAttribute(void *data, tcu_pointer_attribute attribute, tcu_deviceptr ptr)
{
    standin_rc rc = standin_enter("cuPointerGetAttribute");
    if (rc == STANDIN_OK) {
        const standin_alloc *a = standin_pointer_target(ptr);
        if (!data || !a) {
            rc = STANDIN_ERR_INVALID_VALUE; /* not a CUDA pointer */
        }
        else {
            rc = write_attribute(attribute, a, ptr, data);
        }
    }
    return standin_leave(rc, "cuPointerGetAttribute", "attribute=%d, ptr=0x%llx",
                         attribute, ptr);
}

STANDIN_EXPORT tcu_result
cuPointerGetAttributes(unsigned int numAttributes, tcu_pointer_attribute *attributes,
                       void **data, tcu_deviceptr ptr)
{
    standin_rc rc = standin_enter("cuPointerGetAttributes");
    if (rc == STANDIN_OK) {
        if (numAttributes == 0 || !attributes || !data) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
        else {
            /* Unlike cuPointerGetAttribute, a pointer CUDA does not know is a success
             * with every attribute at its empty value. */
            const standin_alloc *a = standin_pointer_target(ptr);
            for (unsigned k = 0; k < numAttributes && rc == STANDIN_OK; k++) {
                if (!data[k]) {
                    rc = STANDIN_ERR_INVALID_VALUE;
                }
                else if (attributes[k] == TCU_POINTER_ATTRIBUTE_HOST_POINTER &&
                         !(a && standin_alloc_host_reachable(a))) {
                    void *none = NULL;
                    memcpy(data[k], &none, sizeof(void *));
                }
                else {
                    rc = write_attribute(attributes[k], a, ptr, data[k]);
                }
            }
        }
    }
    return standin_leave(rc, "cuPointerGetAttributes", "n=%u, ptr=0x%llx",
                         numAttributes, ptr);
}
