/*
 * harness.h: the C test harness. TACK_TEST(name) defines a test and registers it;
 * the runner (harness.c) runs each test in its own process, so a crash fails one
 * test, and ends with the line "N passed, N failed".
 */
#ifndef TACK_TEST_HARNESS_H
#define TACK_TEST_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tack/tack.h"

typedef void (*tack_test_fn)(void);
void tack_test_register(const char *name, tack_test_fn fn);
/* Reports a failed check and ends the test's process. */
void tack_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

#define TACK_TEST(name)                                            \
    static void test_##name(void);                                 \
    __attribute__((constructor)) static void register_##name(void) \
    {                                                              \
        tack_test_register(#name, test_##name);                    \
    }                                                              \
    static void test_##name(void)

#define CHECK(cond)                                                 \
    do {                                                            \
        if (!(cond)) {                                              \
            tack_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
        }                                                           \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                            \
    do {                                                                              \
        long long va_ = (long long)(a), vb_ = (long long)(b);                         \
        if (va_ != vb_) {                                                             \
            tack_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, va_, \
                           vb_);                                                      \
        }                                                                             \
    } while (0)

#define CHECK_EQ_DBL(a, b)                                                         \
    do {                                                                           \
        double va_ = (double)(a), vb_ = (double)(b);                               \
        if (va_ != vb_) {                                                          \
            tack_test_fail(__FILE__, __LINE__, "%s == %s: %.17g != %.17g", #a, #b, \
                           va_, vb_);                                              \
        }                                                                          \
    } while (0)

#define CHECK_STATUS(expr, want)                                                     \
    do {                                                                             \
        tack_status got_ = (expr);                                                   \
        if (got_ != (want)) {                                                        \
            tack_test_fail(__FILE__, __LINE__, "%s: status %s, want %s (%s)", #expr, \
                           tack_status_name(got_), tack_status_name(want),           \
                           tack_last_error());                                       \
        }                                                                            \
    } while (0)

#define CHECK_OK(expr) CHECK_STATUS(expr, TACK_OK)

/* ---- a counting allocator that can fail the k-th allocation ------------------- */

/* Installs the counting allocator; fail_at = k makes the k-th allocation (from 1)
 * and every later one fail; 0 never fails. */
void tack_test_counting_allocator(long fail_at);
/* Allocations not yet freed since the counting allocator was installed. */
long tack_test_live_allocations(void);
/* Allocations made since install. */
long tack_test_allocation_count(void);
/* Calls attempt(ctx) with the k-th allocation failing, for k = 1, 2, ... until it
 * returns TACK_OK: every failure must be TACK_ERR_NO_MEMORY and leave no allocation
 * behind (attempt checks its own out-parameters). At least one failure must happen;
 * the default allocator is back afterwards. Returns the k that succeeded. */
long tack_test_alloc_sweep(tack_status (*attempt)(void *ctx), void *ctx);

#endif /* TACK_TEST_HARNESS_H */
