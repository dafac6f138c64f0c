/*
 * test_level_zero_backend.c: the level_zero backend through the public C API and the
 * real Level Zero loader (Debian's libze_loader.so.1), which loads the strict stand-in
 * driver of tests/standin/level_zero through ZE_ENABLE_ALT_DRIVERS.
 *
 * Each test runs in its own process, so each one sets the loader's and the stand-in's
 * environment before the first open. Built only where the level-zero headers are.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../csrc/backends/gpu/gpu_twin.h"
#include "../../csrc/backends/level_zero/ze_abi.h"
#include "harness.h"
#include "tack/array.h"
#include "tack/device.h"

#ifndef TACK_TEST_STANDIN_ZE
#error "TACK_TEST_STANDIN_ZE must name the built stand-in driver"
#endif

/* The real loader, with the stand-in as its only driver, offering ndevices devices;
 * or, where TACK_TEST_ZE_DRIVERS names a list (the two-driver mode of `make
 * test-c-level-zero-modes`: the stand-in under two names), with that list of drivers,
 * which forces the loader's multi-driver path. Launches run on CPU twins: the stand-in
 * never loads OpenCL here, whatever the environment offers, so valgrind and ASan never
 * see Intel's OpenCL runtime. */
static void
use_standin(const char *ndevices)
{
    const char *drivers = getenv("TACK_TEST_ZE_DRIVERS");
    unsetenv("TACK_LEVEL_ZERO_DRIVER");
    setenv("ZE_ENABLE_ALT_DRIVERS",
           drivers && *drivers ? drivers : TACK_TEST_STANDIN_ZE, 1);
    setenv("TACK_STANDIN_ZE_DEVICES", ndevices, 1);
    setenv("TACK_STANDIN_ZE_EXECUTE", "twin", 1);
}

static void
check_error_says(const char *what)
{
    const char *msg = tack_last_error();
    if (!msg || !strstr(msg, what)) {
        tack_test_fail(__FILE__, __LINE__, "the error '%s' does not say '%s'",
                       msg ? msg : "(none)", what);
    }
}

/* Opening level_zero:ordinal fails as a missing device, with a message saying what. */
static void
check_open_unavailable(int ordinal, const char *what)
{
    tack_device *dev = NULL;
    CHECK_STATUS(tack_device_open("level_zero", ordinal, NULL, &dev),
                 TACK_ERR_DEVICE_UNAVAILABLE);
    CHECK(dev == NULL);
    check_error_says(what);
}

TACK_TEST(level_zero_missing_loader_is_device_unavailable)
{
    setenv("TACK_LEVEL_ZERO_DRIVER", "/nonexistent/libze_loader.so.1", 1);
    check_open_unavailable(0, "/nonexistent/libze_loader.so.1");
}

TACK_TEST(level_zero_loader_without_a_driver_says_no_driver)
{
    /* The loader's list of drivers replaced by one that does not exist: the loader
     * itself loads, zeInit finds nothing (on any machine, Intel GPU or not). */
    unsetenv("TACK_LEVEL_ZERO_DRIVER");
    setenv("ZE_ENABLE_ALT_DRIVERS", "/nonexistent/libze_no_driver.so", 1);
    check_open_unavailable(0, "found no driver");
}

TACK_TEST(level_zero_driver_without_a_device_says_no_device)
{
    use_standin("0");
    check_open_unavailable(0, "report no device");
}

/* How many drivers use_standin gives the loader: one per name in its list. */
static int
standin_drivers(void)
{
    const char *drivers = getenv("TACK_TEST_ZE_DRIVERS");
    int n = 1;
    for (const char *c = drivers ? drivers : ""; *c; c++) {
        n += *c == ',';
    }
    return n;
}

TACK_TEST(level_zero_ordinal_beyond_the_devices_is_refused)
{
    /* The devices of every driver are numbered in turn: two each. */
    use_standin("2");
    int devices = 2 * standin_drivers();
    char says[32];
    snprintf(says, sizeof says, "reports %d", devices);
    check_open_unavailable(devices, says);
}

/* ---- the test's own view of the loader: what another library would do ------------ */

static tze_api test_api;
/* Tack never destroys a context, so ze_abi.h does not declare the call. */
static tze_result (*test_zeContextDestroy)(tze_context);

/* The process's loader (the one Tack loaded, or loads), initialised; the first driver
 * and its first device. */
static void
test_loader(tze_driver *driver, tze_device *device)
{
    void *lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL);
#define TEST_RESOLVE(name, params, version)       \
    {                                             \
        void *pfn = dlsym(lib, #name);            \
        memcpy(&test_api.name, &pfn, sizeof pfn); \
    }
    TZE_ENTRY_POINTS(TEST_RESOLVE)
#undef TEST_RESOLVE
    void *destroy = dlsym(lib, "zeContextDestroy");
    memcpy(&test_zeContextDestroy, &destroy, sizeof destroy);
    CHECK_EQ_INT(test_api.zeInit(0), 0);
    uint32_t n = 1;
    CHECK_EQ_INT(test_api.zeDriverGet(&n, driver), 0);
    n = 1;
    CHECK_EQ_INT(test_api.zeDeviceGet(*driver, &n, device), 0);
}

static tze_context
test_context(tze_driver driver)
{
    tze_context_desc desc = {TZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
    tze_context ctx = NULL;
    CHECK_EQ_INT(test_api.zeContextCreate(driver, &desc, &ctx), 0);
    return ctx;
}

static char log_path[] = "/tmp/tack-standin-ze-XXXXXX";

static void
remove_log(void)
{
    unlink(log_path);
}

/* A fresh file the stand-in appends its complaints to from here on (removed when the
 * test's process ends). */
static FILE *
capture_complaints(void)
{
    int fd = mkstemp(log_path);
    CHECK(fd >= 0);
    setenv("TACK_STANDIN_ZE_LOG", log_path, 1);
    atexit(remove_log);
    FILE *f = fdopen(fd, "r");
    CHECK(f != NULL);
    return f;
}

/* Fails unless what the stand-in complained of since capture_complaints contains want
 * (or, with want NULL, nothing at all). */
static void
check_complaints(FILE *f, const char *want)
{
    char text[4096] = "";
    rewind(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    bool ok = want ? strstr(text, want) != NULL : n == 0;
    if (!ok) {
        tack_test_fail(__FILE__, __LINE__, "stand-in said '%s', expected %s%s", text,
                       want ? "" : "nothing", want ? want : "");
    }
}

static tack_device *
open_plain(int ordinal)
{
    tack_device *dev = NULL;
    CHECK_OK(tack_device_open("level_zero", ordinal, NULL, &dev));
    return dev;
}

TACK_TEST(level_zero_opens_a_standin_device_through_the_loader)
{
    use_standin("2");
    tack_device *dev = open_plain(1);
    CHECK_EQ_INT(tack_device_dlpack_type(dev), 14);
    CHECK_EQ_INT(tack_device_ordinal(dev), 1);
    CHECK(!tack_device_has_external_context(dev));
    const char *path = tack_device_driver_path(dev);
    CHECK(path && strstr(path, "libze_loader.so.1"));
    CHECK(strstr(path, "Tack stand-in Level Zero GPU 1") && strstr(path, "API 1.4"));
    tack_device *again = open_plain(1);
    CHECK(again == dev); /* the registry's */
    CHECK(tack_device_memory_domain(open_plain(0)) != tack_device_memory_domain(dev));
}

TACK_TEST(level_zero_fill_copy_and_read_back_every_width)
{
    use_standin("1");
    FILE *err = capture_complaints();
    tack_device *dev = open_plain(0);
    tack_device *cpu = NULL;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &cpu));
    const tack_dtype dtypes[] = {TACK_INT8,    TACK_INT16, TACK_FLOAT32,
                                 TACK_FLOAT64, TACK_VEC3F, TACK_VEC4F};
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        int64_t shape[1] = {1000};
        tack_array *a = NULL, *b = NULL, *h = NULL;
        CHECK_OK(tack_array_empty(dev, dtypes[k], 1, shape, TACK_BUFFER_WRITABLE, &a));
        CHECK_OK(tack_array_zeros(dev, dtypes[k], 1, shape, TACK_BUFFER_WRITABLE, &b));
        double v = tack_dtype_get(dtypes[k])->kind == 'f' ? 1.5 : 3;
        CHECK_OK(tack_array_fill(a, &v, TACK_FLOAT64));
        CHECK_OK(tack_array_copyto(b, a)); /* device to device, queued */
        CHECK_OK(tack_array_to_device(b, cpu, &h));
        size_t n = 1000 * tack_dtype_get(dtypes[k])->ncomponents;
        double *host = malloc(n * sizeof *host);
        CHECK(host != NULL);
        CHECK_OK(tack_array_copy_to_host(h, host, TACK_FLOAT64));
        for (size_t i = 0; i < n; i++) {
            CHECK_EQ_DBL(host[i], v);
        }
        free(host);
        tack_array_release(a);
        tack_array_release(b);
        tack_array_release(h);
    }
    check_complaints(err, NULL);
}

/* Wraps 16 float32 at p on dev; the status. */
static tack_status
wrap16(tack_device *dev, void *p)
{
    int64_t shape[1] = {16};
    tack_array *w = NULL;
    tack_status st =
        tack_array_wrap_memory(dev, p, TACK_FLOAT32, 1, shape, true, NULL, NULL, &w);
    tack_array_release(w);
    return st;
}

TACK_TEST(level_zero_device_memory_is_the_devices_and_not_the_hosts)
{
    use_standin("2");
    FILE *err = capture_complaints();
    tack_device *dev = open_plain(0);
    int64_t shape[1] = {16};
    tack_array *a = NULL, *other = NULL;
    CHECK_OK(tack_array_empty(dev, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &a));
    CHECK_OK(tack_array_empty(open_plain(1), TACK_FLOAT32, 1, shape,
                              TACK_BUFFER_WRITABLE, &other));
    float host[16];
    CHECK_STATUS(wrap16(dev, host), TACK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wrap16(dev, tack_array_data(other)), TACK_ERR_INVALID_ARGUMENT);
    CHECK_OK(wrap16(dev, tack_array_data(a)));
    tack_array_release(other);
    tack_array_release(a);
    check_complaints(err, NULL);
}

static tack_status
open_adopted(int ordinal, uintptr_t driver, uintptr_t device, uintptr_t context,
             tack_device **out)
{
    tack_external_context ext = {driver, device, context, 7};
    tack_device_options options = {&ext};
    return tack_device_open("level_zero", ordinal, &options, out);
}

/* The allocation type the test's own query gives for p in ctx. */
static uint32_t
memory_type_in(tze_context ctx, const void *p)
{
    tze_memory_allocation_properties props;
    memset(&props, 0, sizeof props);
    props.stype = TZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
    tze_device owner = NULL;
    CHECK_EQ_INT(test_api.zeMemGetAllocProperties(ctx, p, &props, &owner), 0);
    return props.type;
}

/* The stand-in with ndevices, complaints captured, and a context the test makes on its
 * first driver's first device, as another library would. */
static tze_context
adoption_setup(const char *ndevices, FILE **err, tze_driver *driver, tze_device *device)
{
    use_standin(ndevices);
    *err = capture_complaints();
    test_loader(driver, device);
    return test_context(*driver);
}

TACK_TEST(level_zero_adopted_context_holds_every_allocation)
{
    tze_driver driver = NULL;
    tze_device device = NULL;
    FILE *err = NULL;
    tze_context ctx = adoption_setup("1", &err, &driver, &device);
    tack_device *dev = NULL;
    CHECK_OK(
        open_adopted(0, (uintptr_t)driver, (uintptr_t)device, (uintptr_t)ctx, &dev));
    CHECK(tack_device_has_external_context(dev));
    tack_external_context got = {0, 0, 0, 0};
    CHECK(tack_device_external_context(dev, &got));
    CHECK(got.driver == (uintptr_t)driver && got.device == (uintptr_t)device &&
          got.context == (uintptr_t)ctx);
    tack_device *plain = open_plain(0);
    CHECK(!tack_device_external_context(plain, &got));
    CHECK(tack_device_memory_domain(plain) != tack_device_memory_domain(dev));

    int64_t shape[1] = {256};
    tack_array *a = NULL, *mine = NULL;
    CHECK_OK(tack_array_zeros(dev, TACK_INT32, 1, shape, TACK_BUFFER_WRITABLE, &a));
    CHECK_OK(
        tack_array_zeros(plain, TACK_INT32, 1, shape, TACK_BUFFER_WRITABLE, &mine));
    CHECK_EQ_INT(memory_type_in(ctx, tack_array_data(a)), TZE_MEMORY_TYPE_DEVICE);
    /* The plain device's memory is its own context's, unknown in the adopted one. */
    CHECK_EQ_INT(memory_type_in(ctx, tack_array_data(mine)), TZE_MEMORY_TYPE_UNKNOWN);
    CHECK_STATUS(wrap16(dev, tack_array_data(mine)), TACK_ERR_INVALID_ARGUMENT);
    int32_t seven = 7, back[256];
    CHECK_OK(tack_array_fill(a, &seven, TACK_INT32));
    CHECK_OK(tack_array_copy_to_host(a, back, TACK_INT32));
    CHECK_EQ_INT(back[255], 7);
    tack_array_release(a);
    tack_array_release(mine);
    tack_device_release(dev);
    /* Tack freed its memory and destroyed its queue and list, and left the context to
     * its owner: destroying it succeeds (the stand-in refuses a context still in use,
     * and reports one destroyed twice). */
    CHECK_EQ_INT(test_zeContextDestroy(ctx), 0);
    check_complaints(err, NULL);
}

/* ze_host_mem_alloc_desc_t: Tack never allocates host or shared USM, so ze_abi.h
 * declares neither it nor the calls; the test makes them as another library would. */
typedef struct test_host_mem_alloc_desc {
    uint32_t stype; /* ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC */
    const void *pNext;
    uint32_t flags;
} test_host_mem_alloc_desc;

/* 64 bytes of shared (shared) or host USM in ctx, made through the loader. */
static void *
test_usm(tze_context ctx, tze_device device, bool shared)
{
    void *lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL);
    tze_device_mem_alloc_desc ddesc = {TZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL,
                                       0, 0};
    test_host_mem_alloc_desc hdesc = {0x16, NULL, 0};
    void *p = NULL;
    if (shared) {
        tze_result (*alloc)(tze_context, const tze_device_mem_alloc_desc *,
                            const test_host_mem_alloc_desc *, size_t, size_t,
                            tze_device, void **);
        void *pfn = dlsym(lib, "zeMemAllocShared");
        memcpy(&alloc, &pfn, sizeof pfn);
        CHECK_EQ_INT(alloc(ctx, &ddesc, &hdesc, 64, 64, device, &p), 0);
    }
    else {
        tze_result (*alloc)(tze_context, const test_host_mem_alloc_desc *, size_t,
                            size_t, void **);
        void *pfn = dlsym(lib, "zeMemAllocHost");
        memcpy(&alloc, &pfn, sizeof pfn);
        CHECK_EQ_INT(alloc(ctx, &hdesc, 64, 64, &p), 0);
    }
    dlclose(lib);
    return p;
}

TACK_TEST(level_zero_shared_usm_wraps_and_host_usm_does_not)
{
    tze_driver driver = NULL;
    tze_device device = NULL;
    FILE *err = NULL;
    tze_context ctx = adoption_setup("1", &err, &driver, &device);
    tack_device *dev = NULL;
    CHECK_OK(
        open_adopted(0, (uintptr_t)driver, (uintptr_t)device, (uintptr_t)ctx, &dev));
    void *shared = test_usm(ctx, device, true);
    void *host = test_usm(ctx, device, false);
    CHECK_EQ_INT(memory_type_in(ctx, shared), TZE_MEMORY_TYPE_SHARED);
    CHECK_EQ_INT(memory_type_in(ctx, host), TZE_MEMORY_TYPE_HOST);
    CHECK_OK(wrap16(dev, shared));
    CHECK_STATUS(wrap16(dev, host), TACK_ERR_INVALID_ARGUMENT);
    check_error_says("not in the memory space of level_zero:0");
    /* The plain device's context knows neither. */
    CHECK_STATUS(wrap16(open_plain(0), shared), TACK_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(test_api.zeMemFree(ctx, shared), 0);
    CHECK_EQ_INT(test_api.zeMemFree(ctx, host), 0);
    check_complaints(err, NULL);
    /* The query itself is strict: NULL is no pointer to ask about (the stand-in says
     * so in the plain mode; the validation layer answers before it). */
    tze_memory_allocation_properties props;
    memset(&props, 0, sizeof props);
    props.stype = TZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
    CHECK_EQ_INT(test_api.zeMemGetAllocProperties(ctx, NULL, &props, NULL),
                 TZE_RESULT_ERROR_INVALID_NULL_POINTER);
    tack_device_release(dev);
    CHECK_EQ_INT(test_zeContextDestroy(ctx), 0);
}

TACK_TEST(level_zero_external_handles_must_be_the_loaders)
{
    tze_driver driver = NULL;
    tze_device device = NULL;
    FILE *err = NULL;
    tze_context ctx = adoption_setup("2", &err, &driver, &device);
    tack_device *dev = NULL;
    uintptr_t d = (uintptr_t)driver, v = (uintptr_t)device, c = (uintptr_t)ctx;
    CHECK_STATUS(open_adopted(0, d + 8, v, c, &dev), TACK_ERR_INVALID_ARGUMENT);
    check_error_says("external_context['driver']");
    CHECK_STATUS(open_adopted(0, d, c, c, &dev), TACK_ERR_INVALID_ARGUMENT);
    check_error_says("external_context['device']");
    CHECK_STATUS(open_adopted(1, d, v, c, &dev), TACK_ERR_INVALID_ARGUMENT);
    check_error_says("level_zero:0");
    CHECK(dev == NULL);
    CHECK_EQ_INT(test_zeContextDestroy(ctx), 0);
    check_complaints(err, NULL);
}

/* The loader's intercept layer frees its wrapper of a destroyed handle and crashes on
 * its next use, so this one runs in the plain mode only (the _plain_mode suffix keeps
 * it out of the Makefile's runs in the other modes). */
TACK_TEST(level_zero_destroyed_external_context_is_refused_plain_mode)
{
    tze_driver driver = NULL;
    tze_device device = NULL;
    FILE *err = NULL;
    tze_context ctx = adoption_setup("1", &err, &driver, &device);
    CHECK_EQ_INT(test_zeContextDestroy(ctx), 0);
    tack_device *dev = NULL;
    CHECK_STATUS(
        open_adopted(0, (uintptr_t)driver, (uintptr_t)device, (uintptr_t)ctx, &dev),
        TACK_ERR_INVALID_ARGUMENT);
    check_error_says("external_context['context']");
    check_complaints(err, "was destroyed");
}

/* A copy queued on the device, then its source released at once: the free must wait
 * for the copy (the stand-in reports a queued command on freed memory). */
static void
check_free_after_queued_copy(void)
{
    FILE *err = capture_complaints();
    tack_device *dev = open_plain(0);
    int64_t shape[1] = {512};
    tack_array *a = NULL, *b = NULL;
    CHECK_OK(tack_array_empty(dev, TACK_FLOAT64, 1, shape, TACK_BUFFER_WRITABLE, &a));
    CHECK_OK(tack_array_zeros(dev, TACK_FLOAT64, 1, shape, TACK_BUFFER_WRITABLE, &b));
    double v = 2.25, back[512];
    CHECK_OK(tack_array_fill(a, &v, TACK_FLOAT64));
    CHECK_OK(tack_array_copyto(b, a));
    tack_array_release(a);
    CHECK_OK(tack_array_copy_to_host(b, back, TACK_FLOAT64));
    CHECK_EQ_DBL(back[0], 2.25);
    CHECK_EQ_DBL(back[511], 2.25);
    tack_array_release(b);
    check_complaints(err, NULL);
}

TACK_TEST(level_zero_free_waits_for_queued_work_with_zeMemFreeExt)
{
    use_standin("1");
    check_free_after_queued_copy();
}

TACK_TEST(level_zero_free_waits_for_queued_work_before_api_1_3)
{
    /* The stand-in refuses zeMemFreeExt from a driver that reports API 1.2. */
    use_standin("1");
    setenv("TACK_STANDIN_ZE_API_VERSION", "1.2", 1);
    check_free_after_queued_copy();
}

/* ---- the stand-in's modules, kernels and launches -------------------------------- */

/* A SPIR-V module whose one kernel entry point is "twice" (a header and one
 * OpEntryPoint: the stand-in reads no more, and runs the entry's CPU twin). */
static const uint32_t twice_spirv[] = {
    0x07230203u, 0x00010200u, 0, 8, 0, (5u << 16) | 15u, 6, 1, 0x63697774u /* "twic" */,
    0x00000065u /* "e\0\0\0" */};

/* The twin of "twice": arguments (int32 *data, int64 n), each at 8 bytes. */
static int
twice_twin(const tack_standin_launch *l, void *user)
{
    uint64_t addr;
    int64_t n;
    if (l->params_nbytes != 16 || strcmp(l->entry, "twice") != 0) {
        return 1;
    }
    memcpy(&addr, l->params, 8);
    memcpy(&n, (const char *)l->params + 8, 8);
    int32_t *data = l->translate(l->translate_ctx, addr, (size_t)n * 4);
    if (!data) {
        return 1;
    }
    for (int64_t i = 0; i < n; i++) {
        data[i] *= 2;
    }
    *(int *)user += 1;
    return 0;
}

static void
register_twice(int *runs)
{
    void *lib = dlopen(TACK_TEST_STANDIN_ZE, RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL);
    void *sym = dlsym(lib, TACK_STANDIN_ZE_REGISTER_TWIN);
    tack_standin_register_twin_fn reg = NULL;
    memcpy(&reg, &sym, sizeof sym);
    CHECK(reg != NULL);
    CHECK_EQ_INT(reg("twice", twice_twin, runs), 0);
    dlclose(lib);
}

/* A queue and a list on the device's compute group (1: the stand-in's group 0
 * copies only). */
static void
test_queue(tze_context ctx, tze_device dev, tze_command_queue *q, tze_command_list *l)
{
    tze_command_queue_desc qd = {TZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                 NULL,
                                 1,
                                 0,
                                 0,
                                 TZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                 TZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    CHECK_EQ_INT(test_api.zeCommandQueueCreate(ctx, dev, &qd, q), 0);
    tze_command_list_desc ld = {TZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, 1, 0};
    CHECK_EQ_INT(test_api.zeCommandListCreate(ctx, dev, &ld, l), 0);
}

static tze_kernel
test_kernel(tze_context ctx, tze_device dev, tze_module *mod, const char *name,
            tze_result *rc)
{
    tze_module_desc md = {TZE_STRUCTURE_TYPE_MODULE_DESC,
                          NULL,
                          TZE_MODULE_FORMAT_IL_SPIRV,
                          sizeof twice_spirv,
                          (const uint8_t *)twice_spirv,
                          NULL,
                          NULL};
    CHECK_EQ_INT(test_api.zeModuleCreate(ctx, dev, &md, mod, NULL), 0);
    tze_kernel_desc kd = {TZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, name};
    tze_kernel k = NULL;
    *rc = test_api.zeKernelCreate(*mod, &kd, &k);
    return k;
}

TACK_TEST(level_zero_standin_launch_runs_its_twin_at_synchronization)
{
    use_standin("1");
    FILE *err = capture_complaints();
    tze_driver driver;
    tze_device dev;
    test_loader(&driver, &dev);
    tze_context ctx = test_context(driver);
    tze_command_queue q;
    tze_command_list l;
    test_queue(ctx, dev, &q, &l);
    tze_module mod;
    tze_result rc;
    tze_kernel k = test_kernel(ctx, dev, &mod, "twice", &rc);
    CHECK_EQ_INT(rc, 0);
    int runs = 0;
    register_twice(&runs);
    int32_t host[64];
    for (int i = 0; i < 64; i++) {
        host[i] = i - 20;
    }
    tze_device_mem_alloc_desc ad = {TZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0,
                                    0};
    void *data = NULL;
    CHECK_EQ_INT(test_api.zeMemAllocDevice(ctx, &ad, sizeof host, 64, dev, &data), 0);
    uint32_t gx = 0, gy = 0, gz = 0;
    CHECK_EQ_INT(test_api.zeKernelSuggestGroupSize(k, 64, 1, 1, &gx, &gy, &gz), 0);
    CHECK(gx >= 1 && 64 % gx == 0 && gy == 1 && gz == 1);
    CHECK_EQ_INT(test_api.zeKernelSetGroupSize(k, gx, 1, 1), 0);
    int64_t n = 64;
    CHECK_EQ_INT(test_api.zeKernelSetArgumentValue(k, 0, sizeof data, &data), 0);
    CHECK_EQ_INT(test_api.zeKernelSetArgumentValue(k, 1, sizeof n, &n), 0);
    tze_group_count groups = {64 / gx, 1, 1};
    CHECK_EQ_INT(test_api.zeCommandListAppendMemoryCopy(l, data, host, sizeof host,
                                                        NULL, 0, NULL),
                 0);
    CHECK_EQ_INT(test_api.zeCommandListAppendBarrier(l, NULL, 0, NULL), 0);
    CHECK_EQ_INT(test_api.zeCommandListAppendLaunchKernel(l, k, &groups, NULL, 0, NULL),
                 0);
    CHECK_EQ_INT(test_api.zeCommandListAppendBarrier(l, NULL, 0, NULL), 0);
    CHECK_EQ_INT(test_api.zeCommandListAppendMemoryCopy(l, host, data, sizeof host,
                                                        NULL, 0, NULL),
                 0);
    CHECK_EQ_INT(test_api.zeCommandListClose(l), 0);
    CHECK_EQ_INT(test_api.zeCommandQueueExecuteCommandLists(q, 1, &l, NULL), 0);
    CHECK_EQ_INT(runs, 0); /* nothing runs before the synchronization */
    CHECK_EQ_INT(test_api.zeCommandQueueSynchronize(q, UINT64_MAX), 0);
    CHECK_EQ_INT(runs, 1);
    for (int i = 0; i < 64; i++) {
        CHECK_EQ_INT(host[i], 2 * (i - 20));
    }
    /* the kernel is held by the list's launch until the list is reset */
    CHECK_EQ_INT(test_api.zeKernelDestroy(k), TZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
    CHECK_EQ_INT(test_api.zeModuleDestroy(mod), TZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
    CHECK_EQ_INT(test_api.zeCommandListReset(l), 0);
    CHECK_EQ_INT(test_api.zeKernelDestroy(k), 0);
    CHECK_EQ_INT(test_api.zeModuleDestroy(mod), 0);
    CHECK_EQ_INT(test_api.zeMemFree(ctx, data), 0);
    CHECK_EQ_INT(test_api.zeCommandListDestroy(l), 0);
    CHECK_EQ_INT(test_api.zeCommandQueueDestroy(q), 0);
    check_complaints(err, "launches of the kernel are in command lists");
}

/* The C tests run under valgrind and ASan, where Intel's OpenCL runtime must not be
 * loaded: use_standin chooses the CPU twins, so the stand-in opens no OpenCL library
 * even where $TACK_STANDIN_ZE_OPENCL names one (here a library it would load and
 * find no OpenCL in). */
TACK_TEST(level_zero_standin_in_the_c_tests_never_loads_opencl)
{
    use_standin("1");
    setenv("TACK_STANDIN_ZE_OPENCL", TACK_TEST_STANDIN_CUDA, 1);
    CHECK(dlopen(TACK_TEST_STANDIN_CUDA, RTLD_NOW | RTLD_NOLOAD) == NULL);
    tze_driver driver;
    tze_device dev;
    test_loader(&driver, &dev);
    tze_context ctx = test_context(driver);
    tze_module mod;
    tze_result rc;
    tze_kernel k = test_kernel(ctx, dev, &mod, "twice", &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK(dlopen(TACK_TEST_STANDIN_CUDA, RTLD_NOW | RTLD_NOLOAD) == NULL);
    CHECK_EQ_INT(test_api.zeKernelDestroy(k), 0);
    CHECK_EQ_INT(test_api.zeModuleDestroy(mod), 0);
    CHECK_EQ_INT(test_zeContextDestroy(ctx), 0);
}

TACK_TEST(level_zero_standin_refuses_what_a_launch_cannot_trust)
{
    use_standin("1");
    FILE *err = capture_complaints();
    tze_driver driver;
    tze_device dev;
    test_loader(&driver, &dev);
    tze_context ctx = test_context(driver), other = test_context(driver);
    tze_command_queue q;
    tze_command_list l;
    test_queue(ctx, dev, &q, &l);
    tze_module mod, mod2;
    tze_result rc;
    CHECK(test_kernel(ctx, dev, &mod, "thrice", &rc) == NULL);
    CHECK_EQ_INT(rc, TZE_RESULT_ERROR_INVALID_KERNEL_NAME);
    check_complaints(err, "no kernel entry point 'thrice'");
    tze_kernel k = test_kernel(ctx, dev, &mod2, "twice", &rc);
    CHECK_EQ_INT(rc, 0);
    tze_group_count groups = {1, 1, 1};
    /* no group size yet, then no twin registered */
    CHECK_EQ_INT(test_api.zeCommandListAppendLaunchKernel(l, k, &groups, NULL, 0, NULL),
                 TZE_RESULT_ERROR_INVALID_ARGUMENT);
    check_complaints(err, "zeKernelSetGroupSize first");
    CHECK_EQ_INT(test_api.zeKernelSetGroupSize(k, 1, 1, 1), 0);
    CHECK_EQ_INT(test_api.zeCommandListAppendLaunchKernel(l, k, &groups, NULL, 0, NULL),
                 TZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    check_complaints(err, "no CPU twin is registered for kernel 'twice'");
    int runs = 0;
    register_twice(&runs);
    /* argument 0 unset below a set argument 1 */
    int64_t n = 4;
    CHECK_EQ_INT(test_api.zeKernelSetArgumentValue(k, 1, sizeof n, &n), 0);
    CHECK_EQ_INT(test_api.zeCommandListAppendLaunchKernel(l, k, &groups, NULL, 0, NULL),
                 TZE_RESULT_ERROR_INVALID_ARGUMENT);
    check_complaints(err, "argument 0 of kernel 'twice' was never set");
    /* memory of another context reaches the twin as NULL: a device fault */
    tze_device_mem_alloc_desc ad = {TZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0,
                                    0};
    void *foreign = NULL;
    CHECK_EQ_INT(test_api.zeMemAllocDevice(other, &ad, 64, 64, dev, &foreign), 0);
    CHECK_EQ_INT(test_api.zeKernelSetArgumentValue(k, 0, sizeof foreign, &foreign), 0);
    int32_t host[4] = {1, 2, 3, 4};
    CHECK_EQ_INT(test_api.zeCommandListAppendLaunchKernel(l, k, &groups, NULL, 0, NULL),
                 0);
    /* a copy right after a launch, with no barrier: the launch may touch anything */
    void *mine = NULL;
    CHECK_EQ_INT(test_api.zeMemAllocDevice(ctx, &ad, 64, 64, dev, &mine), 0);
    CHECK_EQ_INT(test_api.zeCommandListAppendMemoryCopy(l, mine, host, sizeof host,
                                                        NULL, 0, NULL),
                 TZE_RESULT_ERROR_INVALID_ARGUMENT);
    check_complaints(err, "with no barrier between them");
    CHECK_EQ_INT(test_api.zeCommandListClose(l), 0);
    CHECK_EQ_INT(test_api.zeCommandQueueExecuteCommandLists(q, 1, &l, NULL), 0);
    CHECK_EQ_INT(test_api.zeCommandQueueSynchronize(q, UINT64_MAX),
                 TZE_RESULT_ERROR_DEVICE_LOST);
    check_complaints(err, "not device memory of its list's context");
    CHECK_EQ_INT(runs, 0);
}

TACK_TEST(level_zero_standin_module_properties_report_fp64_unless_told)
{
    use_standin("1");
    tze_driver driver;
    tze_device dev;
    test_loader(&driver, &dev);
    tze_device_module_properties p;
    memset(&p, 0, sizeof p);
    p.stype = TZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
    CHECK_EQ_INT(test_api.zeDeviceGetModuleProperties(dev, &p), 0);
    CHECK(p.flags & TZE_DEVICE_MODULE_FLAG_FP64);
    setenv("TACK_STANDIN_ZE_FP64", "0", 1);
    CHECK_EQ_INT(test_api.zeDeviceGetModuleProperties(dev, &p), 0);
    CHECK(!(p.flags & TZE_DEVICE_MODULE_FLAG_FP64));
}

TACK_TEST(level_zero_standin_compute_properties_are_an_intel_gpus_unless_told)
{
    use_standin("1");
    tze_driver driver;
    tze_device dev;
    test_loader(&driver, &dev);
    FILE *err = capture_complaints();
    tze_device_compute_properties p;
    memset(&p, 0, sizeof p);
    p.stype = TZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
    CHECK_EQ_INT(test_api.zeDeviceGetComputeProperties(dev, &p),
                 TZE_RESULT_ERROR_INVALID_ARGUMENT);
    check_complaints(err, "zeDeviceGetComputeProperties");
    CHECK_EQ_INT(p.maxTotalGroupSize, 0);
    p.stype = TZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
    CHECK_EQ_INT(test_api.zeDeviceGetComputeProperties(dev, &p), 0);
    CHECK_EQ_INT(p.maxTotalGroupSize, 1024);
    CHECK_EQ_INT(p.maxSharedLocalMemory, 65536);
    setenv("TACK_STANDIN_ZE_LOCAL_MEMORY", "1024", 1);
    CHECK_EQ_INT(test_api.zeDeviceGetComputeProperties(dev, &p), 0);
    CHECK_EQ_INT(p.maxSharedLocalMemory, 1024);
}
