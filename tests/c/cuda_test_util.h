/*
 * cuda_test_util.h: opening the strict stand-in CUDA driver (tests/standin/cuda) from
 * a C test, shared by the tests that run the CUDA backend on it.
 */
#ifndef TACK_CUDA_TEST_UTIL_H
#define TACK_CUDA_TEST_UTIL_H

#include <stdlib.h>

#include "harness.h"
#include "tack/device.h"

#ifndef TACK_TEST_STANDIN_CUDA
#error "TACK_TEST_STANDIN_CUDA must name the built stand-in driver"
#endif

/* The stand-in's device 0, its memory small enough for valgrind to map cheaply; fail
 * (or NULL) is TACK_STANDIN_FAIL. Each test runs in its own process, so each one
 * opens the driver afresh with its own environment. */
static inline tack_device *
open_standin(const char *fail)
{
    setenv("TACK_CUDA_DRIVER", TACK_TEST_STANDIN_CUDA, 1);
    setenv("TACK_STANDIN_MEMORY", "268435456", 1);
    if (fail) {
        setenv("TACK_STANDIN_FAIL", fail, 1);
    }
    tack_device *dev = NULL;
    CHECK_OK(tack_device_open("cuda", 0, NULL, &dev));
    return dev;
}

#endif /* TACK_CUDA_TEST_UTIL_H */
