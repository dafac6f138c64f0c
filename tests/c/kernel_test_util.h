/*
 * kernel_test_util.h: a hand-written kernel in the generated-code ABI (kernel.h) and
 * a private cache directory, shared by the kernel tests.
 */
#ifndef TACK_KERNEL_TEST_UTIL_H
#define TACK_KERNEL_TEST_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "internal.h"

/* out[i] = 2 * i over a float64 array; its second (int) argument names a trip that
 * fails like a debug-mode bounds check (-1: none). The parameter block (kernel.h):
 * the array's data pointer and extent, then the int. */
#define KERNEL_TEST_PARAMS                                                            \
    "#include <stdint.h>\n"                                                           \
    "typedef struct tk_ctx { int failed; void (*fail)(struct tk_ctx *, int, int, "    \
    "int,\n"                                                                          \
    "    int64_t, int64_t, const char *); char *partials; int64_t chunk, result_i;\n" \
    "    double result_f; } tk_ctx;\n"                                                \
    "typedef struct { void *a0; int64_t a0_n[1]; int64_t a1; } P;\n"                  \
    "#define E __attribute__((visibility(\"default\")))\n"                            \
    "E const int tack_kernel_abi = 3;\n"                                              \
    "E const int tack_kernel_nparams = 2;\n"                                          \
    "E const uint32_t tack_kernel_param_key[] = {0x10b01u, 1u};\n"

static const char double_kernel_source[] = KERNEL_TEST_PARAMS
    "E int64_t\n"
    "tack_kernel_trips(const void *v, tk_ctx *c) { (void)c; return ((const P "
    "*)v)->a0_n[0]; }\n"
    "E void\n"
    "tack_kernel_body(int64_t b, int64_t e, const void *v, tk_ctx *c) {\n"
    "    const P *p = v; double *o = p->a0;\n"
    "    for (int64_t i = b; i < e; i++) {\n"
    "        if (i == p->a1) { c->fail(c, 1, 7, 0, i + 1000, p->a0_n[0], \"out\");"
    " return; }\n"
    "        o[i] = 2.0 * (double)i;\n"
    "    }\n"
    "}\n";

/* A device made by hand, as a backend with its own memory domain would make it
 * (never freed; state NULL). */
static inline tack_device *
fake_device(const tack_backend *backend, uint64_t domain)
{
    static tack_device devs[8];
    static int n;
    CHECK(n < 8);
    tack_device *d = &devs[n++];
    atomic_init(&d->refcount, 1);
    d->backend = backend;
    d->in_registry = true; /* never freed */
    d->memory_domain = domain;
    return d;
}

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

/* The path of the one file in dir whose name ends with ext (a cache entry). */
static inline void
cache_entry_path(const char *dir, const char *ext, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name), m = strlen(ext);
        if (n > m && strcmp(e->d_name + n - m, ext) == 0) {
            snprintf(out, cap, "%s/%s", dir, e->d_name);
            found++;
        }
    }
    closedir(d);
    CHECK_EQ_INT(found, 1);
}

#endif /* TACK_KERNEL_TEST_UTIL_H */
