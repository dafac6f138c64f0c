/*
 * test_level_zero_backend.c: the level_zero backend through the public C API and the
 * real Level Zero loader (Debian's libze_loader.so.1), which loads the strict stand-in
 * driver of tests/standin/level_zero through ZE_ENABLE_ALT_DRIVERS.
 *
 * Each test runs in its own process, so each one sets the loader's and the stand-in's
 * environment before the first open. Built only where the level-zero headers are.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tack/device.h"

#ifndef TACK_TEST_STANDIN_ZE
#error "TACK_TEST_STANDIN_ZE must name the built stand-in driver"
#endif

/* The real loader, with the stand-in as its only driver, offering ndevices devices. */
static void
use_standin(const char *ndevices)
{
    unsetenv("TACK_LEVEL_ZERO_DRIVER");
    setenv("ZE_ENABLE_ALT_DRIVERS", TACK_TEST_STANDIN_ZE, 1);
    setenv("TACK_STANDIN_ZE_DEVICES", ndevices, 1);
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

TACK_TEST(level_zero_ordinal_beyond_the_devices_is_refused)
{
    use_standin("2");
    check_open_unavailable(2, "reports 2");
}

TACK_TEST(level_zero_discovery_reaches_the_standin_through_the_loader)
{
    use_standin("2");
    check_open_unavailable(1, "Tack stand-in Level Zero GPU 1");
    check_error_says("driver API 1.4");
}
