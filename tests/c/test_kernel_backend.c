/*
 * test_kernel_backend.c: the device-neutral kernel object. Building, launching and
 * releasing a kernel go through the backend table's kernel slots: a test backend
 * with its own slots receives exactly what the runtime hands any backend (the
 * packed parameter block, the device's state, the flags), a table without the
 * slots runs no kernels, and the CPU is one table among them.
 */
#define _GNU_SOURCE
#include <string.h>

#include "internal.h"
#include "kernel_test_util.h"

/* What the test backend's slots saw. */
static struct {
    int builds, launches, releases;
    const tack_backend *self;
    const char *source;
    void *state;
    unsigned flags;
    size_t nbytes;
    unsigned char params[256];
} seen;

/* One float64 2-d array, then an int, then a float: a block of 1 + 2 + 1 + 1 words. */
static const uint32_t test_key[3] = {TACK_KERNEL_KEY_ARRAY | TACK_FLOAT64 << 8 | 2,
                                     TACK_KERNEL_KEY_INT, TACK_KERNEL_KEY_FLOAT};
static tack_kernel test_kernel;

static tack_status
test_build(const tack_backend *self, const char *name, const char *filename,
           const tack_kernel_request *req, tack_kernel **out, char **log)
{
    (void)log;
    seen.builds++;
    seen.self = self;
    seen.source = req->source;
    test_kernel.backend = self;
    test_kernel.name = name;
    test_kernel.filename = filename;
    test_kernel.nparams = 3;
    test_kernel.param_key = test_key;
    test_kernel.result_kind = TACK_KERNEL_RESULT_INT;
    *out = &test_kernel;
    return TACK_OK;
}

static tack_status
test_launch(void *state, tack_kernel *k, const void *params, size_t nbytes,
            unsigned flags, tack_kernel_value *result)
{
    CHECK(k == &test_kernel);
    seen.launches++;
    seen.state = state;
    seen.flags = flags;
    seen.nbytes = nbytes;
    CHECK(nbytes <= sizeof seen.params);
    memcpy(seen.params, params, nbytes);
    result->kind = TACK_KERNEL_RESULT_INT;
    result->i = 42;
    return TACK_OK;
}

static void
test_release(tack_kernel *k)
{
    CHECK(k == &test_kernel);
    seen.releases++;
}

static const tack_backend test_backend = {
    .size = sizeof(tack_backend),
    .name = "testkernels",
    .dlpack_device_type = 77,
    .kernel_build = test_build,
    .kernel_launch = test_launch,
    .kernel_release = test_release,
};

/* A table compiled before the kernel slots existed: they lie beyond its size. */
static const tack_backend old_backend = {
    .size = offsetof(tack_backend, kernel_build),
    .name = "oldtable",
    .dlpack_device_type = 78,
    .kernel_build = test_build, /* beyond .size: never read */
    .kernel_launch = test_launch,
};

/* A current table that leaves the slots empty. */
static const tack_backend empty_backend = {
    .size = sizeof(tack_backend),
    .name = "noslots",
    .dlpack_device_type = 79,
};

static tack_kernel *
build_test(void)
{
    tack_kernel *k = NULL;
    char *log = NULL;
    const tack_kernel_request req = {.source = "source!"};
    CHECK_OK(tack__kernel_build_with(&test_backend, "k", "t.py", &req, &k, &log));
    CHECK(log == NULL);
    return k;
}

TACK_TEST(kernel_build_goes_to_the_backend_s_build_slot)
{
    tack_kernel *k = build_test();
    CHECK(k == &test_kernel);
    CHECK_EQ_INT(seen.builds, 1);
    CHECK(seen.self == &test_backend);
    CHECK(strcmp(seen.source, "source!") == 0);
    CHECK_EQ_INT(tack_kernel_dlpack_type(k), 77);
    CHECK_EQ_INT(tack_kernel_dlpack_type(NULL), 0);
}

TACK_TEST(kernel_launch_hands_the_backend_the_packed_block_the_state_and_the_flags)
{
    tack_kernel *k = build_test();
    tack_device *dev = fake_device(&test_backend, 5);
    int state;
    dev->state = &state;
    double data[6];
    int64_t shape[2] = {2, 3};
    tack_kernel_arg args[3] = {
        {data, shape, 0, 0}, {NULL, NULL, -7, 0}, {NULL, NULL, 0, 2.5}};
    tack_kernel_value value = {TACK_KERNEL_RESULT_NONE, 0, 0.0};
    CHECK_OK(tack_kernel_launch_on(dev, k, args, TACK_KERNEL_NOALIAS, &value));
    CHECK_EQ_INT(seen.launches, 1);
    CHECK(seen.state == &state);
    CHECK_EQ_INT(seen.flags, TACK_KERNEL_NOALIAS);
    /* the block, as tack_kernel_params_pack lays it out for the kernel's key */
    unsigned char want[5 * 8];
    CHECK_EQ_INT(seen.nbytes, sizeof want);
    CHECK_EQ_INT(tack_kernel_params_size(3, test_key), sizeof want);
    tack_kernel_params_pack(3, test_key, args, want);
    CHECK(memcmp(seen.params, want, sizeof want) == 0);
    uint64_t ptr;
    memcpy(&ptr, seen.params, 8);
    CHECK(ptr == (uint64_t)(uintptr_t)data);
    /* what the slot returned comes back */
    CHECK_EQ_INT(value.kind, TACK_KERNEL_RESULT_INT);
    CHECK_EQ_INT(value.i, 42);
    /* no device: the slot gets no state */
    CHECK_OK(tack_kernel_launch_ex(k, args, 0, NULL));
    CHECK_EQ_INT(seen.launches, 2);
    CHECK(seen.state == NULL);
    CHECK_EQ_INT(seen.flags, 0);
}

TACK_TEST(a_kernel_launched_on_another_backend_s_device_is_refused)
{
    tack_kernel *k = build_test();
    tack_device *cpu;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &cpu));
    double data[6];
    int64_t shape[2] = {2, 3};
    tack_kernel_arg args[3] = {
        {data, shape, 0, 0}, {NULL, NULL, 0, 0}, {NULL, NULL, 0, 0}};
    CHECK_STATUS(tack_kernel_launch_on(cpu, k, args, 0, NULL),
                 TACK_ERR_DEVICE_MISMATCH);
    CHECK(strstr(tack_last_error(), "testkernels") != NULL);
    CHECK_EQ_INT(seen.launches, 0);
    tack_device_release(cpu);
}

TACK_TEST(a_backend_without_kernel_slots_is_unsupported)
{
    const tack_backend *slotless[2] = {&old_backend, &empty_backend};
    const tack_kernel_request req = {.source = "s"};
    for (int b = 0; b < 2; b++) {
        tack_kernel *k = NULL;
        char *log = (char *)"untouched";
        CHECK_STATUS(
            tack__kernel_build_with(slotless[b], "mykernel", "t.py", &req, &k, &log),
            TACK_ERR_UNSUPPORTED);
        CHECK(log == NULL);
        CHECK(k == NULL);
        CHECK(strstr(tack_last_error(), slotless[b]->name) != NULL);
        CHECK(strstr(tack_last_error(), "mykernel") != NULL);
        /* a kernel object of such a backend cannot launch either */
        tack_kernel orphan = {
            .backend = slotless[b], .name = "orphan", .filename = "t.py"};
        CHECK_STATUS(tack_kernel_launch(&orphan, NULL), TACK_ERR_UNSUPPORTED);
        CHECK(strstr(tack_last_error(), slotless[b]->name) != NULL);
        tack_kernel_release(&orphan); /* no release slot: nothing happens */
    }
    CHECK_EQ_INT(seen.builds, 0);
    CHECK_EQ_INT(seen.launches, 0);
    CHECK_EQ_INT(tack_status_kind(TACK_ERR_UNSUPPORTED), TACK_KIND_RUNTIME);
}

TACK_TEST(build_for_a_dlpack_type_without_a_backend_is_unsupported)
{
    tack_kernel *k = NULL;
    char *log = NULL;
    CHECK_STATUS(tack_kernel_build_for(77, "k", "t.py", "s", &k, &log),
                 TACK_ERR_UNSUPPORTED);
    CHECK(strstr(tack_last_error(), "77") != NULL);
    CHECK(k == NULL && log == NULL);
    CHECK_STATUS(tack_kernel_build_for(kDLCPU, "k", "t.py", "s", &k, NULL),
                 TACK_ERR_INVALID_ARGUMENT);
}

TACK_TEST(release_goes_to_the_backend_s_release_slot)
{
    tack_kernel *k = build_test();
    tack_kernel_release(k);
    CHECK_EQ_INT(seen.releases, 1);
    tack_kernel_release(NULL);
    CHECK_EQ_INT(seen.releases, 1);
}

TACK_TEST(the_cpu_is_one_backend_table_with_the_kernel_slots)
{
    /* The CPU's build and launch are its table's slots, found as any other. */
    CHECK(TACK__BACKEND_SLOT(&tack__backend_cpu, kernel_build) ==
          tack__cpu_kernel_build_request);
    CHECK(TACK__BACKEND_SLOT(&tack__backend_cpu, kernel_launch) ==
          tack__cpu_kernel_launch);
    CHECK(TACK__BACKEND_SLOT(&tack__backend_cpu, kernel_release) == NULL);
    fresh_cache_dir();
    tack_kernel *k = NULL;
    char *log = NULL;
    CHECK_OK(tack_kernel_build_for(kDLCPU, "double", "t.py", double_kernel_source, &k,
                                   &log));
    CHECK(k->backend == &tack__backend_cpu);
    CHECK_EQ_INT(tack_kernel_dlpack_type(k), kDLCPU);
    CHECK_EQ_INT(k->nparams, 2);
    /* launched on the CPU device, or with none; a release keeps it (never unloaded) */
    tack_device *cpu;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &cpu));
    double out[8] = {0};
    int64_t shape[1] = {8};
    tack_kernel_arg args[2] = {{out, shape, 0, 0}, {NULL, NULL, -1, 0}};
    CHECK_OK(tack_kernel_launch_on(cpu, k, args, 0, NULL));
    CHECK_EQ_DBL(out[7], 14.0);
    tack_kernel_release(k);
    out[7] = 0;
    CHECK_OK(tack_kernel_launch(k, args));
    CHECK_EQ_DBL(out[7], 14.0);
    /* a device of another backend is refused before anything runs */
    out[7] = 0;
    CHECK_STATUS(tack_kernel_launch_on(fake_device(&test_backend, 3), k, args, 0, NULL),
                 TACK_ERR_DEVICE_MISMATCH);
    CHECK_EQ_DBL(out[7], 0.0);
    CHECK_EQ_INT(seen.launches, 0);
    tack_device_release(cpu);
}

TACK_TEST(arrays_on_a_backend_with_kernel_slots_pass_the_dispatch_checks)
{
    double m[4];
    tack_buffer *buf;
    CHECK_OK(tack_buffer_wrap(fake_device(&test_backend, 9), m, sizeof m,
                              TACK_BUFFER_WRITABLE, NULL, NULL, &buf));
    int64_t shape[1] = {4};
    tack_array *a;
    CHECK_OK(tack_array_from_buffer(buf, TACK_FLOAT64, 1, shape, true, &a));
    tack_buffer_release(buf);
    const tack_array *arrays[2] = {a, NULL};
    const char *names[2] = {"x", "n"};
    bool stored[2] = {true, false};
    CHECK_OK(tack_kernel_check_arrays("k", 2, arrays, names, stored));
    /* and the key's backend word is that backend's */
    uint32_t tail[2];
    tack_kernel_key_tail(2, arrays, false, tail);
    CHECK_EQ_INT(tail[1], 77);
    tack_array_release(a);
}
