/*
 * test_cuda_backend.c: the CUDA backend through the public C API, on the strict
 * stand-in driver (tests/standin/cuda), so these run under ASan, UBSan and valgrind:
 * fills of every width, copies, export_memory's descriptor, stream rules, release
 * from another thread, and the undoing of a failed exportable allocation.
 *
 * Each test runs in its own process, so each one opens the driver afresh and may set
 * the stand-in's environment (fault injection) before it does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "cuda_test_util.h"
#include "harness.h"
#include "internal.h"
#include "tack/dlpack.h"

TACK_TEST(cuda_fill_every_width_and_read_back)
{
    tack_device *dev = open_standin(NULL);
    const tack_dtype dtypes[] = {TACK_INT8,    TACK_INT16, TACK_FLOAT32,
                                 TACK_FLOAT64, TACK_VEC3F, TACK_VEC4F};
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        int64_t shape[1] = {37};
        tack_array *a = NULL;
        CHECK_OK(tack_array_empty(dev, dtypes[k], 1, shape, TACK_BUFFER_WRITABLE, &a));
        double v = 1.5;
        if (tack_dtype_get(dtypes[k])->kind != 'f') {
            v = 3;
        }
        CHECK_OK(tack_array_fill(a, &v, TACK_FLOAT64));
        size_t n = 37 * tack_dtype_get(dtypes[k])->ncomponents;
        double *host = malloc(n * sizeof *host);
        CHECK(host != NULL);
        CHECK_OK(tack_array_copy_to_host(a, host, TACK_FLOAT64));
        for (size_t i = 0; i < n; i++) {
            CHECK_EQ_DBL(host[i], v);
        }
        free(host);
        tack_array_release(a);
    }
}

TACK_TEST(cuda_copyto_on_one_device_and_through_the_host)
{
    tack_device *dev = open_standin(NULL);
    tack_device *cpu = NULL;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &cpu));
    int64_t shape[1] = {1000};
    float src[1000];
    for (int i = 0; i < 1000; i++) {
        src[i] = (float)i;
    }
    tack_array *a = NULL, *b = NULL, *c = NULL, *h = NULL;
    CHECK_OK(tack_array_empty(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &a));
    CHECK_OK(tack_array_empty(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &b));
    CHECK_OK(tack_array_empty(dev, TACK_INT64, 1, shape, TACK_BUFFER_WRITABLE, &c));
    CHECK_OK(tack_array_copy_from_host(a, src, TACK_FLOAT32, 1000));
    CHECK_OK(tack_array_copyto(b, a));
    CHECK_OK(tack_array_copyto(c, b));
    CHECK_OK(tack_array_to_device(c, cpu, &h));
    const int64_t *back = tack_array_data(h);
    for (int i = 0; i < 1000; i++) {
        CHECK_EQ_INT(back[i], i);
    }
    tack_array_release(a);
    tack_array_release(b);
    tack_array_release(c);
    tack_array_release(h);
}

TACK_TEST(cuda_export_memory_fd_is_cached_and_closed_with_the_buffer)
{
    tack_device *dev = open_standin(NULL);
    int64_t shape[1] = {100};
    tack_array *a = NULL;
    CHECK_OK(tack_array_empty(dev, TACK_FLOAT32, 1, shape,
                              TACK_BUFFER_WRITABLE | TACK_BUFFER_EXPORTABLE, &a));
    tack_exported_memory m, again;
    CHECK_OK(tack_array_export_memory(a, &m));
    CHECK(strcmp(m.backend, "cuda") == 0 && strcmp(m.handle_type, "posix_fd") == 0);
    CHECK_EQ_INT(m.size, 400);
    CHECK_EQ_INT(m.allocation_size, 2 << 20);
    CHECK_OK(tack_array_export_memory(a, &again));
    CHECK_EQ_INT(again.handle, m.handle);
    int fd = (int)m.handle;
    CHECK(fcntl(fd, F_GETFD) != -1);
    tack_array_release(a);
    CHECK(fcntl(fd, F_GETFD) == -1); /* closed with the memory */

    /* An ordinary array exports a copy that lives as long as its buffer. */
    CHECK_OK(tack_array_zeros(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &a));
    CHECK_OK(tack_array_export_memory(a, &m));
    CHECK(fcntl((int)m.handle, F_GETFD) != -1);
    tack_array_release(a);
    CHECK(fcntl((int)m.handle, F_GETFD) == -1);
}

TACK_TEST(cuda_exportable_allocation_failure_leaks_nothing)
{
    tack_device *dev = open_standin("cuMemSetAccess:1:1");
    int64_t shape[1] = {10};
    tack_array *a = NULL;
    CHECK_STATUS(tack_array_empty(dev, TACK_FLOAT32, 1, shape,
                                  TACK_BUFFER_WRITABLE | TACK_BUFFER_EXPORTABLE, &a),
                 TACK_ERR_BACKEND);
    CHECK(a == NULL);
    CHECK_OK(tack_array_empty(dev, TACK_FLOAT32, 1, shape,
                              TACK_BUFFER_WRITABLE | TACK_BUFFER_EXPORTABLE, &a));
    tack_array_release(a);
}

/* The export options tack_dlpack_export_prepare makes of a request with only a
 * stream (has false: stream=None). */
static tack_status
prepare_stream(tack_array *arr, bool has, int64_t stream, tack_dlpack_export_options *o)
{
    tack_dlpack_export_request req;
    memset(&req, 0, sizeof req);
    req.has_stream = has;
    req.stream = stream;
    bool versioned = false;
    memset(o, 0, sizeof *o);
    return tack_dlpack_export_prepare(arr, &req, &versioned, o);
}

TACK_TEST(cuda_dlpack_stream_rules)
{
    tack_device *dev = open_standin(NULL);
    tack_device *cpu = NULL;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &cpu));
    int64_t shape[1] = {4};
    tack_array *g = NULL, *h = NULL;
    CHECK_OK(tack_array_zeros(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &g));
    CHECK_OK(tack_array_zeros(cpu, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &h));
    tack_dlpack_export_options o;
    CHECK_OK(prepare_stream(g, false, 0, &o));
    CHECK(!o.has_stream); /* None: the host waits (share), as for -1 */
    CHECK_OK(prepare_stream(g, true, 2, &o));
    CHECK(o.has_stream && o.stream == 2);
    CHECK_OK(prepare_stream(g, true, -1, &o));
    CHECK(!o.has_stream);
    CHECK_STATUS(prepare_stream(g, true, 0, &o), TACK_ERR_DLPACK_INVALID);
    CHECK_STATUS(prepare_stream(g, true, -7, &o), TACK_ERR_DLPACK_INVALID);
    CHECK_OK(prepare_stream(h, true, -1, &o));
    CHECK(!o.has_stream);
    CHECK_OK(prepare_stream(h, false, 0, &o));
    CHECK(!o.has_stream);
    CHECK_STATUS(prepare_stream(h, true, 1, &o), TACK_ERR_DLPACK_INVALID);
    CHECK(tack_device_stream(dev) != 0 && tack_device_stream(cpu) == 0);
    CHECK(strcmp(tack_device_driver_path(dev), TACK_TEST_STANDIN_CUDA) == 0);
    CHECK(tack_device_driver_path(cpu) == NULL);
    tack_array_release(g);
    tack_array_release(h);
}

static void *
release_array(void *arr)
{
    tack_array_release(arr);
    return NULL;
}

TACK_TEST(cuda_release_from_another_thread)
{
    tack_device *dev = open_standin(NULL);
    int64_t shape[1] = {64};
    for (int k = 0; k < 2; k++) {
        tack_array *a = NULL;
        unsigned flags = TACK_BUFFER_WRITABLE | (k ? TACK_BUFFER_EXPORTABLE : 0u);
        CHECK_OK(tack_array_zeros(dev, TACK_FLOAT32, 1, shape, flags, &a));
        pthread_t t;
        CHECK_EQ_INT(pthread_create(&t, NULL, release_array, a), 0);
        CHECK_EQ_INT(pthread_join(t, NULL), 0);
    }
    /* The device still works on this thread. */
    tack_array *b = NULL;
    CHECK_OK(tack_array_zeros(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &b));
    tack_array_release(b);
}

/* The stand-in's test hook that tears the driver down as process exit does. */
static void
teardown_driver(void)
{
    void *lib = dlopen(TACK_TEST_STANDIN_CUDA, RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL);
    void *sym = dlsym(lib, "tack_standin_cuda_teardown");
    CHECK(sym != NULL);
    void (*teardown)(void) = NULL;
    memcpy(&teardown, &sym, sizeof sym);
    teardown();
    dlclose(lib);
}

/* Arrays outliving the driver (released at exit, after its teardown): every release
 * leaks the device memory without a driver call that could crash, frees Tack's own
 * records once (ASan and valgrind watch), closes the exported descriptor, and a new
 * allocation says the driver is gone. */
TACK_TEST(cuda_release_after_driver_teardown)
{
    tack_device *dev = open_standin(NULL);
    int64_t shape[1] = {64};
    tack_array *plain = NULL, *exportable = NULL, *exported = NULL, *none = NULL;
    CHECK_OK(
        tack_array_zeros(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &plain));
    CHECK_OK(tack_array_zeros(dev, TACK_FLOAT32, 1, shape,
                              TACK_BUFFER_WRITABLE | TACK_BUFFER_EXPORTABLE,
                              &exportable));
    CHECK_OK(
        tack_array_zeros(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &exported));
    tack_exported_memory m;
    CHECK_OK(tack_array_export_memory(exportable, &m));
    DLManagedTensor *mt = NULL;
    CHECK_OK(tack_dlpack_export_legacy(exported, NULL, &mt));
    tack_array_release(exported); /* the capsule holds the last reference */
    teardown_driver();
    CHECK_STATUS(
        tack_array_empty(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &none),
        TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(tack_last_error(), "shutting down") != NULL);
    CHECK(none == NULL);
    tack_array_release(plain);
    tack_array_release(exportable);
    CHECK(fcntl((int)m.handle, F_GETFD) == -1); /* Tack's descriptor, closed */
    mt->deleter(mt);
    tack_device_release(dev);
}

TACK_TEST(cuda_missing_driver_names_the_path)
{
    setenv("TACK_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    tack_device *dev = NULL;
    CHECK_STATUS(tack_device_open("cuda", 0, NULL, &dev), TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(tack_last_error(), "/nonexistent/libcuda.so.1") != NULL);
}

/* The CPU backend's memory_space asks the memory_space slot of the GPU devices open
 * in this process (device.c): before any is open it answers host without loading a
 * driver; then device memory of any ordinal is device memory, and host memory stays
 * the host's. */
TACK_TEST(cpu_memory_space_asks_the_open_gpu_devices)
{
    setenv("TACK_STANDIN_DEVICES", "2", 1);
    int host = 0;
    tack_memory_space space = TACK_MEMORY_UNKNOWN;
    CHECK_OK(tack__backend_cpu.memory_space(NULL, &host, &space));
    CHECK_EQ_INT(space, TACK_MEMORY_HOST);
    CHECK(dlopen(TACK_TEST_STANDIN_CUDA, RTLD_NOW | RTLD_NOLOAD) == NULL);
    tack_device *dev = open_standin(NULL);
    tack_device *other = NULL;
    CHECK_OK(tack_device_open("cuda", 1, NULL, &other));
    int64_t shape[1] = {16};
    tack_array *a = NULL, *b = NULL;
    CHECK_OK(tack_array_zeros(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &a));
    CHECK_OK(tack_array_zeros(other, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &b));
    space = TACK_MEMORY_UNKNOWN;
    CHECK_OK(tack__backend_cpu.memory_space(NULL, tack_array_data(a), &space));
    CHECK_EQ_INT(space, TACK_MEMORY_DEVICE);
    space = TACK_MEMORY_UNKNOWN;
    CHECK_OK(tack__backend_cpu.memory_space(NULL, tack_array_data(b), &space));
    CHECK_EQ_INT(space, TACK_MEMORY_DEVICE);
    space = TACK_MEMORY_UNKNOWN;
    CHECK_OK(tack__backend_cpu.memory_space(NULL, &host, &space));
    CHECK_EQ_INT(space, TACK_MEMORY_HOST);
    tack_array_release(a);
    tack_array_release(b);
}
