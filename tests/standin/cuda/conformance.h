/*
 * conformance.h: what the files of the CUDA conformance suite share: the driver as the
 * backend resolves it, the assertion macros, the case registry, and the helpers several
 * groups of cases use. conformance.c has the runner and says how to use the suite.
 */
#ifndef TACK_CUDA_CONFORMANCE_H
#define TACK_CUDA_CONFORMANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../../csrc/backends/cuda/cuda_abi.h"
#include "standin_twin.h"

/* ---- the driver, resolved as the backend resolves it ----------------------------- */

struct conformance_driver {
    void *lib;
    bool standin; /* exports the stand-in's twin registry */
    int (*register_twin)(const char *, tack_standin_twin_fn, void *);
// NOLINTNEXTLINE(bugprone-macro-parentheses): a declarator cannot take them
#define FIELD(name, symbol, version) tcu_fn_##name *name;
    TCU_ENTRY_POINTS(FIELD)
    TCU_TEST_ENTRY_POINTS(FIELD)
#undef FIELD
};
extern struct conformance_driver cu;

/* ---- assertions: a failed one ends the case's process ---------------------------- */

const char *result_name(tcu_result rc);
__attribute__((noreturn, format(printf, 3, 4))) void fail(const char *file, int line,
                                                          const char *fmt, ...);

#define EXPECT_RC(expr, want)                                                      \
    do {                                                                           \
        tcu_result got_ = (expr);                                                  \
        if (got_ != (want)) {                                                      \
            fail(__FILE__, __LINE__, "%s -> %d %s, want %d %s", #expr, got_,       \
                 result_name(got_), (int)(want), result_name((tcu_result)(want))); \
        }                                                                          \
    } while (0)
#define OK(expr) EXPECT_RC(expr, TCU_SUCCESS)
#define EXPECT(cond)                                        \
    do {                                                    \
        if (!(cond)) {                                      \
            fail(__FILE__, __LINE__, "expected %s", #cond); \
        }                                                   \
    } while (0)
#define EXPECT_EQ(a, b)                                                         \
    do {                                                                        \
        long long a_ = (long long)(a), b_ = (long long)(b);                     \
        if (a_ != b_) {                                                         \
            fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); \
        }                                                                       \
    } while (0)

/* ---- the case registry ------------------------------------------------------------
 */

/* Marks (conformance.c explains them). */
enum { UNVERIFIED = 1, STANDIN = 2, DEVICE_FAULT = 4, CUBIN = 8 };

void conformance_register(const char *name, void (*fn)(void), int marks,
                          const char *env);

/* The stand-in reads its environment once, at its first call: a case that needs a
 * variable names it ("NAME=value;..."), and the runner sets it before opening the
 * driver. The value @tempfile stands for a new temporary file, named in case_tempfile.
 */
#define CASE_ENV(id, how, vars)                                  \
    static void case_##id(void);                                 \
    __attribute__((constructor)) static void register_##id(void) \
    {                                                            \
        conformance_register(#id, case_##id, (how), (vars));     \
    }                                                            \
    static void case_##id(void)
#define CASE(id, how) CASE_ENV(id, how, NULL)

extern char case_tempfile[64];

/* ---- helpers ----------------------------------------------------------------------
 */

/* cuInit, then the primary context of device 0 made current. */
tcu_context primary_current(void);
tcu_deviceptr alloc(size_t nbytes);
/* Pinned memory on device 0, exportable as a POSIX fd or not. */
const tcu_mem_allocation_prop *vmm_prop(bool exportable);
size_t granularity(bool exportable);
/* Reserves, maps and opens size bytes of h for device 0; and undoes it. */
tcu_deviceptr vmm_map(tcu_mem_handle h, size_t size);
void vmm_unmap(tcu_deviceptr va, size_t size);
/* The PTX of the suite's kernel (tests/standin/cuda/fill_index.cu). */
extern const char fill_ptx[];
/* Loads the suite's kernel tack_fill_index (out[i] = 3 * i + 1 for i < n) from PTX,
 * with its CPU twin registered when the driver is the stand-in. */
tcu_function load_fill(void);

#endif /* TACK_CUDA_CONFORMANCE_H */
