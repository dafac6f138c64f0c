/* test_status.c: the status table and the thread-local last-error message. */
#include <pthread.h>

#include "harness.h"
#include "internal.h"

TACK_TEST(status_names_and_kinds_come_from_the_table)
{
    CHECK(strcmp(tack_status_name(TACK_OK), "ok") == 0);
    CHECK(strcmp(tack_status_name(TACK_ERR_READ_ONLY), "read_only") == 0);
    CHECK_EQ_INT(tack_status_kind(TACK_ERR_READ_ONLY), TACK_KIND_READ_ONLY);
    CHECK_EQ_INT(tack_status_kind(TACK_ERR_DLPACK_INVALID), TACK_KIND_DLPACK_VALUE);
    CHECK_EQ_INT(tack_status_kind(TACK_ERR_NO_MEMORY), TACK_KIND_MEMORY);
    CHECK(strcmp(tack_status_name((tack_status)9999), "unknown") == 0);
    for (int s = 0; s < TACK_STATUS_COUNT; s++) {
        CHECK(tack_status_message((tack_status)s)[0] != '\0');
    }
}

TACK_TEST(last_error_is_set_by_failures_and_cleared)
{
    tack_clear_error();
    CHECK(tack_last_error()[0] == '\0');
    tack_device *dev;
    CHECK_STATUS(tack_device_open("gpu9000", 0, NULL, &dev), TACK_ERR_UNKNOWN_DEVICE);
    CHECK(strstr(tack_last_error(), "gpu9000") != NULL);
    tack_clear_error();
    CHECK(tack_last_error()[0] == '\0');
}

TACK_TEST(set_error_records_a_failure_found_outside)
{
    tack_clear_error();
    CHECK_STATUS(tack_set_error(TACK_ERR_BAD_TYPE, "no __dlpack__ on a list"),
                 TACK_ERR_BAD_TYPE);
    CHECK(strcmp(tack_last_error(), "no __dlpack__ on a list") == 0);
    CHECK(strcmp(tack_last_error_problem(), "no __dlpack__ on a list") == 0);
    CHECK_EQ_INT(tack_last_error_remedy(), TACK_REMEDY_NONE);
    CHECK(tack_last_error_origin()[0] == '\0');
    /* Success is not a failure to record: it becomes an internal error. */
    CHECK_STATUS(tack_set_error(TACK_OK, "fine"), TACK_ERR_INTERNAL);
    CHECK(strcmp(tack_last_error(), tack_status_message(TACK_ERR_INTERNAL)) == 0);
    CHECK_STATUS(tack_set_error((tack_status)9999, "odd"), TACK_ERR_INTERNAL);
}

TACK_TEST(follow_stream_checks_the_stream_for_the_device)
{
    tack_device *dev;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &dev));
    CHECK_OK(tack_device_follow_stream(dev, -1));
    /* The CPU has no streams: any other value is refused, not ignored. */
    CHECK_STATUS(tack_device_follow_stream(dev, 1), TACK_ERR_DLPACK_INVALID);
    CHECK_STATUS(tack_device_follow_stream(dev, -7), TACK_ERR_DLPACK_INVALID);
    tack_device_release(dev);
}

static void *
other_thread(void *arg)
{
    (void)arg;
    /* A fresh thread starts with an empty message. */
    return (void *)(uintptr_t)(tack_last_error()[0] == '\0');
}

TACK_TEST(last_error_is_per_thread)
{
    tack__fail(TACK_ERR_INTERNAL, "main thread failure");
    pthread_t t;
    void *res;
    CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0);
    CHECK(pthread_join(t, &res) == 0);
    CHECK(res == (void *)1);
    CHECK(strcmp(tack_last_error_problem(), "main thread failure") == 0);
}

TACK_TEST(messages_name_their_origin_in_debug_builds_and_their_remedy)
{
    tack_clear_error();
    CHECK(tack_last_error_origin()[0] == '\0');
    CHECK_EQ_INT(tack_last_error_remedy(), TACK_REMEDY_NONE);
    tack_array *arr = NULL;
    int64_t shape[1] = {-1};
    tack_device *dev = NULL;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &dev));
    CHECK_STATUS(tack_array_empty(dev, TACK_FLOAT32, 1, shape, 0, &arr),
                 TACK_ERR_BAD_SHAPE);
#ifdef NDEBUG
    CHECK(tack_last_error_origin()[0] == '\0');
#else
    /* The file and line where the failure started, shown in the message. */
    CHECK(strncmp(tack_last_error_origin(), "csrc/runtime/array.c:", 21) == 0);
    CHECK(strstr(tack_last_error(), tack_last_error_origin()) != NULL);
#endif
    CHECK(strstr(tack_last_error(), tack_last_error_problem()) == tack_last_error());
    /* A failure with a remedy ends with it, in C terms. */
    CHECK_OK(tack_array_zeros(dev, TACK_FLOAT32, 1, (int64_t[]){2}, 0, &arr));
    float v = 1.0f;
    CHECK_STATUS(tack_array_fill(arr, &v, TACK_FLOAT32), TACK_ERR_READ_ONLY);
    CHECK_EQ_INT(tack_last_error_remedy(), TACK_REMEDY_WRITABLE_COPY);
    CHECK(strstr(tack_last_error(), "tack_array_copyto") != NULL);
    CHECK(strstr(tack_last_error_problem(), "tack_array_copyto") == NULL);
    tack_array_release(arr);
    tack_clear_error();
    CHECK(tack_last_error_problem()[0] == '\0');
    CHECK(tack_last_error_origin()[0] == '\0');
}
