/*
 * nvrtc.c: CUDA source -> CUBIN or PTX through NVRTC, loaded with dlopen, with the
 * disk cache of kernel_cache.c (see tack/nvrtc.h).
 *
 * NVRTC's entry points are declared here with their documented C signatures (all
 * plain C types), so building Tack needs no CUDA header. The library is loaded once
 * per process (pthread_once) and never closed: images it produced may be in use.
 *
 * Cache entries: <dir>/<key>.cubin or <dir>/<key>.ptx beside <key>.meta, where the
 * key hashes "tack-nvrtc", NVRTC's version, the architecture, the output kind, the
 * options and the source; the meta holds the full source, so a hash collision can
 * never return another kernel's image.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "tack/nvrtc.h"

/* ---- the library ------------------------------------------------------------ */

typedef int nvrtc_result; /* NVRTC_SUCCESS == 0 */
typedef struct nvrtc_program_ *nvrtc_program;

static struct {
    const char *(*get_error_string)(nvrtc_result);
    nvrtc_result (*version)(int *, int *);
    nvrtc_result (*num_archs)(int *);
    nvrtc_result (*archs)(int *);
    nvrtc_result (*create)(nvrtc_program *, const char *, const char *, int,
                           const char *const *, const char *const *);
    nvrtc_result (*destroy)(nvrtc_program *);
    nvrtc_result (*compile)(nvrtc_program, int, const char *const *);
    nvrtc_result (*log_size)(nvrtc_program, size_t *);
    nvrtc_result (*log)(nvrtc_program, char *);
    nvrtc_result (*ptx_size)(nvrtc_program, size_t *);
    nvrtc_result (*ptx)(nvrtc_program, char *);
    nvrtc_result (*cubin_size)(nvrtc_program, size_t *);
    nvrtc_result (*cubin)(nvrtc_program, char *);
    int major, minor;
    int archs_n;
    int archs_list[64];
    char error[512]; /* why loading failed; empty when it worked */
} lib;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static _Atomic uint64_t stat_compiles, stat_disk_hits, stat_rebuilds, stat_failures;

/* dlsym into a function pointer (POSIX guarantees the conversion works). */
#define BIND(field, symbol)                                                      \
    do {                                                                         \
        void *sym_ = dlsym(handle, symbol);                                      \
        if (!sym_) {                                                             \
            snprintf(lib.error, sizeof lib.error, "%s has no %s", path, symbol); \
            return false;                                                        \
        }                                                                        \
        memcpy(&lib.field, &sym_, sizeof sym_);                                  \
    } while (0)

static bool
bind_all(void *handle, const char *path)
{
    BIND(get_error_string, "nvrtcGetErrorString");
    BIND(version, "nvrtcVersion");
    BIND(num_archs, "nvrtcGetNumSupportedArchs");
    BIND(archs, "nvrtcGetSupportedArchs");
    BIND(create, "nvrtcCreateProgram");
    BIND(destroy, "nvrtcDestroyProgram");
    BIND(compile, "nvrtcCompileProgram");
    BIND(log_size, "nvrtcGetProgramLogSize");
    BIND(log, "nvrtcGetProgramLog");
    BIND(ptx_size, "nvrtcGetPTXSize");
    BIND(ptx, "nvrtcGetPTX");
    BIND(cubin_size, "nvrtcGetCUBINSize");
    BIND(cubin, "nvrtcGetCUBIN");
    int n = 0;
    if (lib.version(&lib.major, &lib.minor) != 0 || lib.num_archs(&n) != 0 || n < 0 ||
        n > (int)(sizeof lib.archs_list / sizeof lib.archs_list[0]) ||
        lib.archs(lib.archs_list) != 0) {
        snprintf(lib.error, sizeof lib.error, "%s does not answer its version", path);
        return false;
    }
    lib.archs_n = n;
    return true;
}

static bool
try_load(const char *path)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        return false;
    }
    if (!bind_all(handle, path)) {
        dlclose(handle);
        return false;
    }
    lib.error[0] = '\0';
    return true; /* never closed: see the file comment */
}

static void
load(void)
{
    const char *env = getenv("TACK_NVRTC");
    if (env && *env) {
        if (!try_load(env)) {
            if (!lib.error[0]) {
                snprintf(lib.error, sizeof lib.error,
                         "TACK_NVRTC=%s cannot be loaded: %s", env, dlerror());
            }
        }
        return;
    }
    static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                          "libnvrtc.so"};
    for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
        if (try_load(sonames[i])) {
            return;
        }
    }
    const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        char path[TACK__PATH_CAP];
        if (roots[i] && *roots[i] &&
            tack__path(path, sizeof path, "%s/lib64/libnvrtc.so", roots[i]) &&
            try_load(path)) {
            return;
        }
    }
    if (!lib.error[0]) {
        snprintf(lib.error, sizeof lib.error,
                 "NVRTC was not found (tried libnvrtc.so.13, libnvrtc.so.12, "
                 "libnvrtc.so and lib64 under $CUDA_HOME, $CUDA_PATH and "
                 "/usr/local/cuda); install the CUDA toolkit's NVRTC or set TACK_NVRTC "
                 "to its path");
    }
}

static tack_status
loaded(void)
{
    pthread_once(&load_once, load);
    if (lib.error[0]) {
        return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE, "%s", lib.error);
    }
    return TACK_OK;
}

tack_status
tack_nvrtc_version(int *major, int *minor)
{
    if (!major || !minor) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT, "tack_nvrtc_version: NULL output");
    }
    tack_status st = loaded();
    if (st == TACK_OK) {
        *major = lib.major;
        *minor = lib.minor;
    }
    return st;
}

tack_status
tack_nvrtc_supports(int arch, int *yes)
{
    if (!yes) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "tack_nvrtc_supports: NULL output");
    }
    tack_status st = loaded();
    if (st != TACK_OK) {
        return st;
    }
    int found = 0;
    for (int i = 0; i < lib.archs_n; i++) {
        found |= lib.archs_list[i] == arch;
    }
    *yes = found;
    return TACK_OK;
}

tack_status
tack_nvrtc_choose(int arch, tack_nvrtc_output *kind, int *target)
{
    if (!kind || !target) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT, "tack_nvrtc_choose: NULL output");
    }
    tack_status st = loaded();
    if (st != TACK_OK) {
        return st;
    }
    int below = 0;
    for (int i = 0; i < lib.archs_n; i++) {
        if (lib.archs_list[i] == arch) {
            *kind = TACK_NVRTC_CUBIN;
            *target = arch;
            return TACK_OK;
        }
        if (lib.archs_list[i] < arch && lib.archs_list[i] > below) {
            below = lib.archs_list[i];
        }
    }
    if (below == 0) {
        return tack__fail(
            TACK_ERR_DEVICE_UNAVAILABLE,
            "NVRTC %d.%d cannot compile for compute capability %d.%d (its "
            "oldest is %d.%d); set TACK_NVRTC to an older CUDA toolkit's "
            "libnvrtc",
            lib.major, lib.minor, arch / 10, arch % 10,
            lib.archs_n ? lib.archs_list[0] / 10 : 0,
            lib.archs_n ? lib.archs_list[0] % 10 : 0);
    }
    *kind = TACK_NVRTC_PTX;
    *target = below;
    return TACK_OK;
}

void
tack_nvrtc_free(void *p)
{
    tack__free(p);
}

void
tack_nvrtc_get_stats(tack_nvrtc_stats *out)
{
    if (!out) {
        return;
    }
    out->compiles = atomic_load(&stat_compiles);
    out->disk_hits = atomic_load(&stat_disk_hits);
    out->rebuilds = atomic_load(&stat_rebuilds);
    out->failures = atomic_load(&stat_failures);
}

/* ---- compiling --------------------------------------------------------------- */

enum { NOPTS = 4 };

/* The options of every compile, after the architecture. */
static const char *const fixed_options[NOPTS - 1] = {"--fmad=false", "-default-device",
                                                     "--std=c++17"};

static char *
program_log(nvrtc_program prog)
{
    size_t n = 0;
    if (lib.log_size(prog, &n) != 0 || n == 0) {
        return tack__strndup("", 0);
    }
    char *text = tack__alloc(n + 1, 0);
    if (text && lib.log(prog, text) != 0) {
        text[0] = '\0';
    }
    if (text) {
        text[n] = '\0';
    }
    return text;
}

/* Runs NVRTC. Out: *image, *nbytes on success; *log on TACK_ERR_COMPILE. */
static tack_status
run_nvrtc(const char *source, const char *name, const char *const *opts,
          tack_nvrtc_output kind, void **image, size_t *nbytes, char **log)
{
    nvrtc_program prog = NULL;
    nvrtc_result r = lib.create(&prog, source, name, 0, NULL, NULL);
    if (r != 0) {
        return tack__fail(TACK_ERR_COMPILE,
                          "NVRTC could not create a program for '%s': %s", name,
                          lib.get_error_string(r));
    }
    tack_status st = TACK_OK;
    r = lib.compile(prog, NOPTS, opts);
    if (r != 0) {
        atomic_fetch_add(&stat_failures, 1);
        *log = program_log(prog);
        st = tack__fail(TACK_ERR_COMPILE,
                        "kernel '%s' failed to compile for the GPU (%s)", name,
                        lib.get_error_string(r));
        lib.destroy(&prog);
        return st;
    }
    size_t n = 0;
    r = kind == TACK_NVRTC_PTX ? lib.ptx_size(prog, &n) : lib.cubin_size(prog, &n);
    char *out = r == 0 && n > 0 ? tack__alloc(n, 0) : NULL;
    if (!out) {
        st = r != 0
                 ? tack__fail(TACK_ERR_COMPILE, "NVRTC gave no image for '%s': %s",
                              name, lib.get_error_string(r))
                 : tack__fail(TACK_ERR_NO_MEMORY, "no memory for a %zu-byte image", n);
    }
    else if ((kind == TACK_NVRTC_PTX ? lib.ptx(prog, out) : lib.cubin(prog, out)) !=
             0) {
        tack__free(out);
        out = NULL;
        st = tack__fail(TACK_ERR_COMPILE, "NVRTC could not copy the image of '%s'",
                        name);
    }
    lib.destroy(&prog);
    if (st == TACK_OK) {
        atomic_fetch_add(&stat_compiles, 1);
        *image = out;
        *nbytes = n;
    }
    return st;
}

/* Writes image to a new private file in dir; returns its path in tmp. */
static bool
write_temp(const char *dir, const char *key, const char *ext, const void *image,
           size_t nbytes, char *tmp, size_t cap)
{
    static _Atomic unsigned counter;
    if (!tack__path(tmp, cap, "%s/%s.tmp%ld-%u%s", dir, key, (long)getpid(),
                    atomic_fetch_add(&counter, 1), ext)) {
        return false;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return false;
    }
    const char *p = image;
    size_t left = nbytes;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    close(fd);
    if (left != 0) {
        unlink(tmp);
        return false;
    }
    return true;
}

tack_status
tack_nvrtc_compile(const char *source, const char *name, int arch,
                   tack_nvrtc_output kind, void **image, size_t *nbytes, char **log)
{
    if (log) {
        *log = NULL;
    }
    if (!source || !name || !image || !nbytes || !log ||
        (kind != TACK_NVRTC_CUBIN && kind != TACK_NVRTC_PTX) || arch < 10 ||
        arch > 9999) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "tack_nvrtc_compile: NULL argument, unknown output kind or "
                          "architecture %d outside 10..9999",
                          arch);
    }
    tack_status st = loaded();
    if (st != TACK_OK) {
        return st;
    }
    char arch_opt[48];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s_%d",
             kind == TACK_NVRTC_PTX ? "compute" : "sm", arch);
    const char *opts[NOPTS] = {arch_opt, fixed_options[0], fixed_options[1],
                               fixed_options[2]};
    const char *ext = kind == TACK_NVRTC_PTX ? ".ptx" : ".cubin";

    size_t source_len = strlen(source);
    tack__hash h;
    tack__hash_init(&h);
    tack__hash_str(&h, "tack-nvrtc 1");
    tack__hash_update(&h, &lib.major, sizeof lib.major);
    tack__hash_update(&h, &lib.minor, sizeof lib.minor);
    for (int i = 0; i < NOPTS; i++) {
        tack__hash_str(&h, opts[i]);
    }
    tack__hash_update(&h, source, source_len);
    char key[33];
    tack__hash_hex(&h, key);

    char dir[TACK__PATH_CAP];
    char why[256];
    bool persistent = tack__cache_dir(dir, sizeof dir, why, sizeof why);
    if (persistent) {
        int fd = -1;
        tack__entry e = tack__cache_lookup_ext(dir, key, ext, source, source_len, &fd);
        if (e == TACK__ENTRY_OK) {
            struct stat sb;
            size_t size =
                fstat(fd, &sb) == 0 && sb.st_size > 0 ? (size_t)sb.st_size : 0;
            char *bytes = size ? tack__alloc(size, 0) : NULL;
            if (size && !bytes) {
                close(fd);
                return tack__fail(TACK_ERR_NO_MEMORY,
                                  "no memory for the %zu-byte cached image of '%s'",
                                  size, name);
            }
            bool whole = bytes && tack__cache_read(fd, bytes, size);
            close(fd);
            if (whole) {
                atomic_fetch_add(&stat_disk_hits, 1);
                *image = bytes;
                *nbytes = size;
                return TACK_OK;
            }
            tack__free(bytes);
            e = TACK__ENTRY_BAD;
        }
        if (e == TACK__ENTRY_BAD) {
            atomic_fetch_add(&stat_rebuilds, 1);
        }
    }
    void *out = NULL;
    size_t n = 0;
    st = run_nvrtc(source, name, opts, kind, &out, &n, log);
    if (st != TACK_OK) {
        return st;
    }
    char tmp[TACK__PATH_CAP];
    if (persistent && write_temp(dir, key, ext, out, n, tmp, sizeof tmp)) {
        tack__cache_commit_ext(dir, key, ext, tmp, source, source_len);
        unlink(tmp); /* gone already when the commit renamed it */
    }
    *image = out;
    *nbytes = n;
    return TACK_OK;
}
