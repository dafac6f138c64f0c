/* test_reclaim.c: a host takes back the memory it lent (tack_array_reclaim). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "harness.h"
#include "internal.h"

static int releases;

static void
count_release(void *ctx)
{
    (void)ctx;
    releases++;
}

/* A 4x4 float32 field over memory of the test's own, with a counting release. */
static tack_array *
lend(float *memory)
{
    tack_device *cpu;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &cpu));
    int64_t shape[2] = {4, 4};
    tack_array *field = NULL;
    releases = 0;
    CHECK_OK(tack_array_wrap_memory(cpu, memory, TACK_FLOAT32, 2, shape, true,
                                    count_release, NULL, &field));
    tack_device_release(cpu);
    return field;
}

TACK_TEST(reclaim_of_the_last_reference_releases_it_at_once)
{
    static float memory[16];
    tack_array *field = lend(memory);
    CHECK_OK(tack_array_reclaim(field)); /* consumed */
    CHECK_EQ_INT(releases, 1);
}

/* The message names the array by dtype, shape and the address the host wrapped. */
static void
check_names_the_field(const char *shape, const float *memory)
{
    char name[64], address[32];
    snprintf(name, sizeof name, "float32 array %s", shape);
    snprintf(address, sizeof address, "%p", (const void *)memory);
    CHECK(strstr(tack_last_error(), name) != NULL);
    CHECK(strstr(tack_last_error(), address) != NULL);
}

/* A flat view of the field, as Python's reshape makes; the reclaim that follows is
 * refused. */
static tack_array *
view_and_reclaim(tack_array *field)
{
    tack_array *view;
    int64_t flat[1] = {16};
    CHECK_OK(tack_array_reshape(field, 1, flat, &view));
    CHECK_STATUS(tack_array_reclaim(field), TACK_ERR_IN_USE);
    return view;
}

TACK_TEST(reclaim_with_a_view_alive_is_refused_and_the_view_still_works)
{
    unsetenv("TACK_DEBUG");
    static float memory[16];
    tack_array *field = lend(memory);
    tack_array *view = view_and_reclaim(field);
    check_names_the_field("(4, 4)", memory);
    CHECK(strstr(tack_last_error(), "1 other reference") != NULL);
    CHECK(strstr(tack_last_error(), "TACK_DEBUG") == NULL);
    CHECK_EQ_INT(releases, 0);
    /* Outside debug mode a refusal changes nothing: the caller keeps the memory. */
    float v = 2.0f;
    CHECK_OK(tack_array_fill(view, &v, TACK_FLOAT32));
    CHECK_EQ_DBL(memory[15], 2.0);
    tack_array_release(view);
    CHECK_OK(tack_array_reclaim(field));
    CHECK_EQ_INT(releases, 1);
}

TACK_TEST(reclaim_counts_every_other_holder_of_the_array_and_the_buffer)
{
    unsetenv("TACK_DEBUG");
    static float memory[16];
    tack_array *field = lend(memory);
    tack_array *ro;
    CHECK_OK(tack_array_readonly_view(field, &ro));
    tack_array_retain(field); /* as a tack.Array or a DLPack export holds it */
    CHECK_STATUS(tack_array_reclaim(field), TACK_ERR_IN_USE);
    CHECK(strstr(tack_last_error(), "2 other reference") != NULL);
    tack_array_release(field);
    CHECK_STATUS(tack_array_reclaim(field), TACK_ERR_IN_USE);
    tack_array_release(ro);
    CHECK_EQ_INT(releases, 0);
    CHECK_OK(tack_array_reclaim(field));
    CHECK_EQ_INT(releases, 1);
}

TACK_TEST(in_debug_mode_a_refused_reclaim_cuts_the_views_off)
{
    setenv("TACK_DEBUG", "1", 1);
    static float memory[16];
    tack_array *field = lend(memory);
    tack_array *view = view_and_reclaim(field);
    int64_t flat[1] = {16};
    CHECK(strstr(tack_last_error(), "TACK_DEBUG") != NULL);
    memory[0] = 7.0f; /* the host reuses its memory: nothing of Tack may see it */
    float v = 1.0f, out[16];
    CHECK_STATUS(tack_array_get_element(view, 0, &v), TACK_ERR_RECLAIMED);
    check_names_the_field("(16,)", memory);
    CHECK(strstr(tack_last_error(), "element read") != NULL);
    CHECK_EQ_DBL(v, 1.0);
    CHECK_STATUS(tack_array_set_element(view, 0, &v), TACK_ERR_RECLAIMED);
    CHECK_STATUS(tack_array_fill(view, &v, TACK_FLOAT32), TACK_ERR_RECLAIMED);
    CHECK_STATUS(tack_array_copy_to_host(view, out, TACK_FLOAT32), TACK_ERR_RECLAIMED);
    CHECK_STATUS(tack_array_copy_from_host(view, out, TACK_FLOAT32, 16),
                 TACK_ERR_RECLAIMED);
    tack_array *other;
    CHECK_STATUS(tack_array_reshape(view, 1, flat, &other), TACK_ERR_RECLAIMED);
    CHECK_STATUS(tack_array_readonly_view(view, &other), TACK_ERR_RECLAIMED);
    CHECK_STATUS(tack_array_to_device(view, tack_array_device(view), &other),
                 TACK_ERR_RECLAIMED);
    DLManagedTensorVersioned *mt;
    CHECK_STATUS(tack_dlpack_export_versioned(view, NULL, &mt), TACK_ERR_RECLAIMED);
    const tack_array *args[1] = {view};
    const char *names[1] = {"t"};
    const bool stored[1] = {false};
    CHECK_STATUS(tack_kernel_check_arrays("hottest", 1, args, names, stored),
                 TACK_ERR_RECLAIMED);
    CHECK(strstr(tack_last_error(), "kernel 'hottest', parameter 't'") != NULL);
    CHECK_EQ_DBL(memory[0], 7.0);
    /* The release still runs exactly once, when the last holder lets go. */
    tack_array_release(view);
    CHECK_EQ_INT(releases, 0);
    CHECK_OK(tack_array_reclaim(field));
    CHECK_EQ_INT(releases, 1);
    unsetenv("TACK_DEBUG");
}

TACK_TEST(reclaim_leaves_arrays_of_other_memory_alone_in_debug_mode)
{
    setenv("TACK_DEBUG", "1", 1);
    static float memory[16];
    tack_array *field = lend(memory);
    tack_array_retain(field);
    CHECK_STATUS(tack_array_reclaim(field), TACK_ERR_IN_USE);
    tack_device *cpu;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &cpu));
    int64_t shape[1] = {4};
    tack_array *own;
    CHECK_OK(tack_array_zeros(cpu, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &own));
    float v = 3.0f;
    CHECK_OK(tack_array_fill(own, &v, TACK_FLOAT32));
    tack_array_release(own);
    tack_device_release(cpu);
    tack_array_release(field);
    tack_array_release(field);
    CHECK_EQ_INT(releases, 1);
    unsetenv("TACK_DEBUG");
}
