/*
 * test_dlpack_stream.c: the consumer's stream rules (csrc/runtime/dlpack_stream.c):
 * which backend serves a DLPack device type, which stream Tack asks a producer for,
 * and the exchange API's pending-work rule, on the CPU and on the stand-in CUDA
 * driver.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>
#include <string.h>

#include "cuda_test_util.h"
#include "harness.h"
#include "tack/dlpack.h"

TACK_TEST(dlpack_backend_serving_each_device_type)
{
    CHECK(strcmp(tack_dlpack_backend_name(kDLCPU), "cpu") == 0);
    CHECK(strcmp(tack_dlpack_backend_name(kDLCUDAHost), "cpu") == 0);
    CHECK(strcmp(tack_dlpack_backend_name(kDLROCMHost), "cpu") == 0);
    CHECK(strcmp(tack_dlpack_backend_name(kDLCUDA), "cuda") == 0);
    CHECK(strcmp(tack_dlpack_backend_name(kDLCUDAManaged), "cuda") == 0);
    CHECK(strcmp(tack_dlpack_backend_name(kDLROCM), "hip") == 0);
    CHECK(strcmp(tack_dlpack_backend_name(kDLOneAPI), "level_zero") == 0);
    CHECK(tack_dlpack_backend_name(kDLMetal) == NULL);
    CHECK(tack_dlpack_backend_name(12345) == NULL);
}

TACK_TEST(dlpack_no_consumer_stream_where_tack_has_none)
{
    /* Host and pinned memory, backends without streams (HIP's and Level Zero's are
     * not even opened), and types no backend imports: no stream= is passed. */
    const int32_t types[] = {kDLCPU,    kDLCUDAHost, kDLROCMHost, kDLROCM,
                             kDLOneAPI, kDLMetal,    12345};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        CHECK(tack_dlpack_stream_device(types[k], 0) == NULL);
        CHECK(tack_dlpack_consumer_stream(types[k], 0) == 0);
    }
}

TACK_TEST(dlpack_no_consumer_stream_without_a_cuda_driver)
{
    setenv("TACK_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    CHECK(tack_dlpack_stream_device(kDLCUDA, 0) == NULL);
    CHECK(tack_dlpack_consumer_stream(kDLCUDA, 0) == 0);
}

TACK_TEST(dlpack_consumer_stream_is_tacks_cuda_stream)
{
    tack_device *dev = open_standin(NULL);
    uintptr_t own = tack_device_stream(dev);
    CHECK(own != 0);
    CHECK(tack_dlpack_consumer_stream(kDLCUDA, 0) == own);
    CHECK(tack_dlpack_consumer_stream(kDLCUDAManaged, 0) == own);
    tack_device *served = tack_dlpack_stream_device(kDLCUDAManaged, 0);
    CHECK(served == dev); /* the registry's device 0 */
    tack_device_release(served);
    /* ids that are no device: nothing to ask for */
    CHECK(tack_dlpack_consumer_stream(kDLCUDA, -1) == 0);
    CHECK(tack_dlpack_consumer_stream(kDLCUDA, (int64_t)INT32_MAX + 1) == 0);
    CHECK(tack_dlpack_consumer_stream(kDLCUDA, 63) == 0);
    tack_device_release(dev);
}

/* ---- the exchange API's pending-work rule -------------------------------------- */

static int stream_calls;
static void *producer_stream;
static int producer_rc;

static int
current_work_stream(DLDeviceType type, int32_t id, void **out)
{
    (void)type;
    (void)id;
    stream_calls++;
    *out = producer_stream;
    return producer_rc;
}

static DLManagedTensorVersioned
tensor_on(int32_t type, int32_t id)
{
    DLManagedTensorVersioned mt;
    memset(&mt, 0, sizeof mt);
    mt.version.major = 1;
    mt.dl_tensor.device.device_type = (DLDeviceType)type;
    mt.dl_tensor.device.device_id = id;
    return mt;
}

TACK_TEST(dlpack_exchange_host_memory_has_no_pending_work)
{
    DLPackExchangeAPI api;
    memset(&api, 0, sizeof api);
    api.current_work_stream = current_work_stream;
    producer_stream = (void *)0x1000;
    const int32_t host[] = {kDLCPU, kDLCUDAHost, kDLROCMHost};
    for (size_t k = 0; k < sizeof host / sizeof host[0]; k++) {
        DLManagedTensorVersioned mt = tensor_on(host[k], 0);
        CHECK(!tack_dlpack_exchange_pending_work(&api, &mt));
    }
    CHECK_EQ_INT(stream_calls, 0); /* the producer is not even asked */
    DLManagedTensorVersioned old = tensor_on(kDLCUDA, 0);
    old.version.major = 2;
    CHECK(!tack_dlpack_exchange_pending_work(&api, &old));
    CHECK(!tack_dlpack_exchange_pending_work(NULL, &old));
    CHECK(!tack_dlpack_exchange_pending_work(&api, NULL));
}

TACK_TEST(dlpack_exchange_pending_work_without_a_tack_stream)
{
    DLPackExchangeAPI api;
    memset(&api, 0, sizeof api);
    DLManagedTensorVersioned mt = tensor_on(kDLROCM, 0);
    CHECK(tack_dlpack_exchange_pending_work(&api, &mt)); /* cannot ask the producer */
    api.current_work_stream = current_work_stream;
    producer_rc = 1;
    CHECK(tack_dlpack_exchange_pending_work(&api, &mt)); /* asking failed */
    producer_rc = 0;
    producer_stream = NULL;
    CHECK(!tack_dlpack_exchange_pending_work(&api, &mt)); /* the default stream */
    producer_stream = (void *)0x1000;
    CHECK(tack_dlpack_exchange_pending_work(&api, &mt)); /* a stream of its own */
    CHECK_EQ_INT(stream_calls, 3);
}

TACK_TEST(dlpack_exchange_orders_tacks_cuda_stream_after_the_producer)
{
    tack_device *dev = open_standin("cuStreamWaitEvent:2:1");
    DLPackExchangeAPI api;
    memset(&api, 0, sizeof api);
    api.current_work_stream = current_work_stream;
    DLManagedTensorVersioned mt = tensor_on(kDLCUDA, 0);
    producer_stream = NULL; /* the legacy default stream: Tack's stream waits for it */
    CHECK(!tack_dlpack_exchange_pending_work(&api, &mt));
    /* The stand-in fails the second wait: Tack could not order after the producer. */
    CHECK(tack_dlpack_exchange_pending_work(&api, &mt));
    CHECK_EQ_INT(stream_calls, 2);
    tack_device_release(dev);
}
