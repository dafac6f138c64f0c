/*
 * kernel_test_util.h: a hand-written kernel in the generated-code ABI (kernel.h) and
 * a private cache directory, shared by the kernel tests.
 */
#ifndef TACK_KERNEL_TEST_UTIL_H
#define TACK_KERNEL_TEST_UTIL_H

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* out[i] = 2 * i over a float64 array; args[1].i names a trip that fails like a
 * debug-mode bounds check (-1: none). */
static const char double_kernel_source[] =
    "#include <stdint.h>\n"
    "typedef struct { void *data; const int64_t *shape; int64_t i; double f; } "
    "tk_arg;\n"
    "typedef struct tk_ctx { int failed; void (*fail)(struct tk_ctx *, int, int, int,\n"
    "    int64_t, int64_t, const char *); } tk_ctx;\n"
    "__attribute__((visibility(\"default\"))) const int tack_kernel_abi = 2;\n"
    "__attribute__((visibility(\"default\"))) int64_t\n"
    "tack_kernel_trips(const tk_arg *a, tk_ctx *c) { (void)c; return a[0].shape[0]; }\n"
    "__attribute__((visibility(\"default\"))) void\n"
    "tack_kernel_body(int64_t b, int64_t e, const tk_arg *a, tk_ctx *c) {\n"
    "    double *o = a[0].data;\n"
    "    for (int64_t i = b; i < e; i++) {\n"
    "        if (i == a[1].i) { c->fail(c, 1, 7, 0, i + 1000, a[0].shape[0], \"out\");"
    " return; }\n"
    "        o[i] = 2.0 * (double)i;\n"
    "    }\n"
    "}\n";

/* Points TACK_CACHE_DIR at a new empty directory and returns its path (static). */
static inline const char *
fresh_cache_dir(void)
{
    static char dir[256];
    snprintf(dir, sizeof dir, "/tmp/tack-ctest-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    rmdir(dir); /* let the runtime create it, with its own mode */
    setenv("TACK_CACHE_DIR", dir, 1);
    return dir;
}

static inline void
remove_cache_dir(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

#endif /* TACK_KERNEL_TEST_UTIL_H */
