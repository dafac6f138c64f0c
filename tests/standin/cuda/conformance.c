/*
 * conformance.c: the runner of one table of CUDA driver call sequences and the results
the driver
 * documents, run against any driver library: the stand-in (every `make test`) or the
 * real libcuda.so.1 (scripts/gpu_check.sh on a GPU machine). A case that fails on the
 * real driver is a bug in the stand-in's model of it, found before it misleads Tack's
 * tests.
 *
 *   tack_cuda_conformance [--no-device-faults] [driver-path] [case[,case...]]
 *
 * The driver is the argument, else $TACK_CUDA_DRIVER, else libcuda.so.1. It is opened
 * with dlopen and every entry point is resolved through cuGetProcAddress_v2 at the ABI
 * version cuda_abi.h pins, exactly as Tack's backend does. Each case runs in its own
 * process (the parent never touches the driver), so one crash fails one case. The cases
 * are in conformance_driver.c (documented behaviour without kernels),
 * conformance_kernels.c (modules and launches), conformance_managed.c (managed memory),
 * conformance_host.c (page-locked host memory) and conformance_standin.c (the
 * stand-in's own strictness).
 *
 * Marks:
 *   UNVERIFIED   the result the documentation implies, not yet confirmed on hardware;
 *                the output names these cases, so the first GPU run pins them.
 *   STANDIN      a test of the stand-in's own strictness (faults on host access, stale
 *                bytes without synchronization, fault injection, the call log): not run
 *                against a real driver, and counted apart.
 *   DEVICE_FAULT a case that makes the device fault on purpose; --no-device-faults
 *                leaves these out (compute-sanitizer would report them).
 *   CUBIN        a case that loads a CUBIN built by nvcc at build time; without a
 *                toolkit these are left out, and the summary says how many.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance.h"

struct conformance_driver cu;

static const char *driver_path;

const char *
result_name(tcu_result rc)
{
    switch (rc) {
#define NAME_CASE(name, value) \
    case (value): return #name;
        TCU_RESULT_LIST(NAME_CASE)
#undef NAME_CASE
    default: return "?";
    }
}

void
fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    %s:%d: ", file, line);
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is just above
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    _exit(1);
}

/* Opens the driver and resolves every entry point. In the child: the parent never
 * loads the driver, so each case starts from an uninitialized one. clang-tidy counts
 * the entry point list expanded, one lookup each, as this function's statements. */
static void
// NOLINTNEXTLINE(readability-function-size)
driver_open(void)
{
    cu.lib = dlopen(driver_path, RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        fail(__FILE__, __LINE__, "dlopen(%s): %s", driver_path, dlerror());
    }
    void *get = dlsym(cu.lib, "cuGetProcAddress_v2");
    if (!get) {
        fail(__FILE__, __LINE__, "%s has no cuGetProcAddress_v2", driver_path);
    }
    memcpy(&cu.cuGetProcAddress, &get, sizeof get);
    void *reg = dlsym(cu.lib, "tack_standin_cuda_register_twin");
    cu.standin = reg != NULL;
    memcpy(&cu.register_twin, &reg, sizeof reg);
#define RESOLVE(name, symbol, version)                                               \
    do {                                                                             \
        void *pfn = NULL;                                                            \
        tcu_proc_address_query_result status = -1;                                   \
        tcu_result rc = cu.cuGetProcAddress(                                         \
            #name, &pfn, version, TCU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);      \
        if (rc != TCU_SUCCESS || status != TCU_GET_PROC_ADDRESS_SUCCESS || !pfn) {   \
            fail(__FILE__, __LINE__, "cuGetProcAddress(%s, %d) -> %d %s, status %d", \
                 #name, version, rc, result_name(rc), status);                       \
        }                                                                            \
        memcpy(&cu.name, &pfn, sizeof pfn);                                          \
    } while (0);
    TCU_ENTRY_POINTS(RESOLVE)
    TCU_TEST_ENTRY_POINTS(RESOLVE)
#undef RESOLVE
}

tcu_context
primary_current(void)
{
    tcu_context ctx = NULL;
    OK(cu.cuInit(0));
    OK(cu.cuDevicePrimaryCtxRetain(&ctx, 0));
    OK(cu.cuCtxSetCurrent(ctx));
    return ctx;
}

tcu_deviceptr
alloc(size_t nbytes)
{
    tcu_deviceptr p = 0;
    OK(cu.cuMemAlloc(&p, nbytes));
    return p;
}

/* ---- the case registry ------------------------------------------------------------
 */

static struct {
    const char *name;
    void (*fn)(void);
    int marks;
    const char *env;
} cases[128];
static int ncases;

void
conformance_register(const char *name, void (*fn)(void), int marks, const char *env)
{
    if (ncases < (int)(sizeof cases / sizeof cases[0])) {
        cases[ncases].name = name;
        cases[ncases].fn = fn;
        cases[ncases].marks = marks;
        cases[ncases].env = env;
        ncases++;
    }
}

char case_tempfile[64];

static void
set_case_env(const char *vars)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", vars);
    for (char *save = NULL, *item = strtok_r(buf, ";", &save); item;
         item = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            continue;
        }
        *eq = '\0';
        const char *value = eq + 1;
        if (strcmp(value, "@tempfile") == 0) {
            snprintf(case_tempfile, sizeof case_tempfile, "/tmp/tack-standin-XXXXXX");
            int fd = mkstemp(case_tempfile);
            EXPECT(fd >= 0);
            close(fd);
            value = case_tempfile;
        }
        setenv(item, value, 1);
    }
}

/* ---- the runner ------------------------------------------------------------------ */

static int
run_case(int k)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 0;
    }
    if (pid == 0) {
        if (cases[k].env) {
            set_case_env(cases[k].env);
        }
        driver_open();
        cases[k].fn();
        fflush(NULL);
        exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) {
        perror("waitpid");
        return 0;
    }
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "    killed by signal %d\n", WTERMSIG(status));
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* True when name is one of the comma-separated names in list. */
static bool
listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\0')) {
            return true;
        }
    }
    return false;
}

int
main(int argc, char **argv)
{
    bool device_faults = true;
    if (argc > 1 && strcmp(argv[1], "--no-device-faults") == 0) {
        device_faults = false;
        argv++;
        argc--;
    }
    driver_path = argc > 1 ? argv[1] : getenv("TACK_CUDA_DRIVER");
    if (!driver_path || !*driver_path) {
        driver_path = "libcuda.so.1";
    }
    const char *only = argc > 2 ? argv[2] : NULL;
    /* Whether the driver is the stand-in decides which cases run. */
    void *probe = dlopen(driver_path, RTLD_NOW | RTLD_LOCAL);
    if (!probe) {
        fprintf(stderr, "cannot open the CUDA driver %s: %s\n", driver_path, dlerror());
        return 2;
    }
    bool standin = dlsym(probe, "tack_standin_cuda_register_twin") != NULL;
    dlclose(probe);
    printf("driver: %s (%s)\n", driver_path, standin ? "Tack stand-in" : "real");
    int passed = 0, failed = 0, standin_only = 0, unverified_failed = 0, no_cubin = 0;
#ifdef TACK_CUBIN_DIR
    const bool have_cubins = true;
#else
    const bool have_cubins = false;
#endif
    for (int k = 0; k < ncases; k++) {
        if ((only && !listed(only, cases[k].name)) ||
            (!device_faults && (cases[k].marks & DEVICE_FAULT))) {
            continue;
        }
        if ((cases[k].marks & STANDIN) && !standin) {
            standin_only++;
            continue;
        }
        if ((cases[k].marks & CUBIN) && !have_cubins) {
            no_cubin++;
            continue;
        }
        const char *mark =
            cases[k].marks & UNVERIFIED ? " [unverified on hardware]" : "";
        if (run_case(k)) {
            passed++;
            printf("ok   %s%s\n", cases[k].name, mark);
        }
        else {
            failed++;
            unverified_failed += (cases[k].marks & UNVERIFIED) != 0;
            printf("FAIL %s%s\n", cases[k].name, mark);
        }
    }
    printf("%d passed, %d failed", passed, failed);
    if (unverified_failed) {
        printf(" (%d of them unverified: the stand-in's model differs here)",
               unverified_failed);
    }
    if (standin_only) {
        printf(", %d stand-in only (not run on a real driver)", standin_only);
    }
    if (no_cubin) {
        printf(", %d left out (no CUBIN: meson found no nvcc)", no_cubin);
    }
    printf("\n");
    return failed ? 1 : 0;
}
