/*
 * rtc.c: a GPU kernel's source -> an image through a runtime compiler of the NVRTC
 * family, loaded with dlopen, with the disk cache of kernel_cache.c (see rtc.h).
 *
 * What differs between compilers is data, one rtc_spec each: the names of the
 * entry points (declared here with their documented C signatures, all plain C types,
 * so building Tack needs no vendor header), where the library is found, how an
 * architecture is spelled and which options every compile gets. Every compiler's
 * library is loaded once per process (pthread_once) and never closed: images it
 * produced may be in use.
 *
 * Cache entries: <dir>/<key><ext> (NVRTC: .cubin or .ptx) beside <key>.meta, where
 * the key hashes the compiler's cache tag, its version, the options (the target's
 * first) and the source; the meta holds the full source, so a hash collision can
 * never return another kernel's image.
 */
#define _GNU_SOURCE
#include <ctype.h>
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
#include "rtc.h"

/* ---- the compilers ------------------------------------------------------------ */

/* The entry points every compiler of the family has, in this order. "portable" is
 * NVRTC's PTX, "binary" its CUBIN. */
// clang-format off
#define RTC_ENTRY_POINTS(X)                                                       \
    X(get_error_string) X(version) X(num_archs) X(archs) X(create) X(destroy)     \
    X(compile) X(log_size) X(log) X(portable_size) X(portable) X(binary_size)     \
    X(binary)
// clang-format on

enum {
#define RTC_ENTRY_ENUM(name) RTC_##name,
    RTC_ENTRY_POINTS(RTC_ENTRY_ENUM)
#undef RTC_ENTRY_ENUM
        RTC_NENTRIES
};

enum { NOPTS = 4 }; /* the target's option, then the fixed ones */

/* What Tack needs to know of one runtime compiler. */
typedef struct rtc_spec {
    const char *name;          /* in messages: "NVRTC" */
    const char *env;           /* the variable that names the library */
    const char *sonames[3];    /* tried on the loader's path, in order */
    const char *roots_env[2];  /* toolkit roots from the environment */
    const char *root_default;  /* the toolkit's usual root */
    const char *root_library;  /* the library under a root */
    const char *binary_prefix; /* a binary's architecture: prefix + number */
    const char *portable_prefix;
    const char *binary_ext, *portable_ext; /* cache entries' extensions */
    const char *target_option;             /* followed by the target */
    const char *fixed_options[NOPTS - 1];
    const char *cache_tag; /* first in every cache key */
    const char *entry[RTC_NENTRIES];
} rtc_spec;

static const rtc_spec specs[TACK_RTC_COUNT] = {
    [TACK_RTC_NVRTC] =
        {
            .name = "NVRTC",
            .env = "TACK_NVRTC",
            .sonames = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"},
            .roots_env = {"CUDA_HOME", "CUDA_PATH"},
            .root_default = "/usr/local/cuda",
            .root_library = "lib64/libnvrtc.so",
            .binary_prefix = "sm_",
            .portable_prefix = "compute_",
            .binary_ext = ".cubin",
            .portable_ext = ".ptx",
            .target_option = "--gpu-architecture=",
            .fixed_options = {"--fmad=false", "-default-device", "--std=c++17"},
            .cache_tag = "tack-nvrtc 1",
            .entry =
                {
                    [RTC_get_error_string] = "nvrtcGetErrorString",
                    [RTC_version] = "nvrtcVersion",
                    [RTC_num_archs] = "nvrtcGetNumSupportedArchs",
                    [RTC_archs] = "nvrtcGetSupportedArchs",
                    [RTC_create] = "nvrtcCreateProgram",
                    [RTC_destroy] = "nvrtcDestroyProgram",
                    [RTC_compile] = "nvrtcCompileProgram",
                    [RTC_log_size] = "nvrtcGetProgramLogSize",
                    [RTC_log] = "nvrtcGetProgramLog",
                    [RTC_portable_size] = "nvrtcGetPTXSize",
                    [RTC_portable] = "nvrtcGetPTX",
                    [RTC_binary_size] = "nvrtcGetCUBINSize",
                    [RTC_binary] = "nvrtcGetCUBIN",
                },
        },
};

/* ---- the library ------------------------------------------------------------ */

typedef int rtc_result; /* success == 0 in every compiler of the family */
typedef struct rtc_program_ *rtc_program;

/* One compiler's loaded library. Written once, by its load; read-only after. */
typedef struct rtc_lib {
    const char *(*get_error_string)(rtc_result);
    rtc_result (*version)(int *, int *);
    rtc_result (*num_archs)(int *);
    rtc_result (*archs)(int *);
    rtc_result (*create)(rtc_program *, const char *, const char *, int,
                         const char *const *, const char *const *);
    rtc_result (*destroy)(rtc_program *);
    rtc_result (*compile)(rtc_program, int, const char *const *);
    rtc_result (*log_size)(rtc_program, size_t *);
    rtc_result (*log)(rtc_program, char *);
    rtc_result (*portable_size)(rtc_program, size_t *);
    rtc_result (*portable)(rtc_program, char *);
    rtc_result (*binary_size)(rtc_program, size_t *);
    rtc_result (*binary)(rtc_program, char *);
    int major, minor;
    int archs_n;
    int archs_list[64];
    char error[512]; /* why loading failed; empty when it worked */
    _Atomic uint64_t compiles, disk_hits, rebuilds, failures;
} rtc_lib;

static rtc_lib libs[TACK_RTC_COUNT];

/* dlsym of every entry point into lib, in RTC_ENTRY_POINTS order (POSIX guarantees
 * the conversion to a function pointer works). */
static bool
bind_all(rtc_lib *lib, const rtc_spec *spec, void *handle, const char *path)
{
#define RTC_BIND(field)                                                   \
    {                                                                     \
        void *sym_ = dlsym(handle, spec->entry[RTC_##field]);             \
        if (!sym_) {                                                      \
            snprintf(lib->error, sizeof lib->error, "%s has no %s", path, \
                     spec->entry[RTC_##field]);                           \
            return false;                                                 \
        }                                                                 \
        memcpy(&lib->field, &sym_, sizeof sym_);                          \
    }
    RTC_ENTRY_POINTS(RTC_BIND)
#undef RTC_BIND
    int n = 0;
    if (lib->version(&lib->major, &lib->minor) != 0 || lib->num_archs(&n) != 0 ||
        n < 0 || n > (int)(sizeof lib->archs_list / sizeof lib->archs_list[0]) ||
        lib->archs(lib->archs_list) != 0) {
        snprintf(lib->error, sizeof lib->error, "%s does not answer its version", path);
        return false;
    }
    lib->archs_n = n;
    return true;
}

static bool
try_load(rtc_lib *lib, const rtc_spec *spec, const char *path)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        return false;
    }
    if (!bind_all(lib, spec, handle, path)) {
        dlclose(handle);
        return false;
    }
    lib->error[0] = '\0';
    return true; /* never closed: see the file comment */
}

static void
load(tack_rtc_kind rtc)
{
    rtc_lib *lib = &libs[rtc];
    const rtc_spec *spec = &specs[rtc];
    const char *env = getenv(spec->env);
    if (env && *env) {
        if (!try_load(lib, spec, env) && !lib->error[0]) {
            snprintf(lib->error, sizeof lib->error, "%s=%s cannot be loaded: %s",
                     spec->env, env, dlerror());
        }
        return;
    }
    for (size_t i = 0; i < sizeof spec->sonames / sizeof spec->sonames[0]; i++) {
        if (spec->sonames[i] && try_load(lib, spec, spec->sonames[i])) {
            return;
        }
    }
    const char *roots[] = {getenv(spec->roots_env[0]), getenv(spec->roots_env[1]),
                           spec->root_default};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        char path[TACK__PATH_CAP];
        if (roots[i] && *roots[i] &&
            tack__path(path, sizeof path, "%s/%s", roots[i], spec->root_library) &&
            try_load(lib, spec, path)) {
            return;
        }
    }
    if (!lib->error[0]) {
        snprintf(lib->error, sizeof lib->error,
                 "%s was not found (tried %s, %s, %s and %s under $%s, $%s and %s); "
                 "install it or set %s to its path",
                 spec->name, spec->sonames[0], spec->sonames[1], spec->sonames[2],
                 spec->root_library, spec->roots_env[0], spec->roots_env[1],
                 spec->root_default, spec->env);
    }
}

static void
load_nvrtc(void)
{
    load(TACK_RTC_NVRTC);
}

static pthread_once_t load_once[TACK_RTC_COUNT] = {PTHREAD_ONCE_INIT};
static void (*const loaders[TACK_RTC_COUNT])(void) = {[TACK_RTC_NVRTC] = load_nvrtc};

/* The loaded library of rtc. Out: *out only on success. */
static tack_status
loaded(tack_rtc_kind rtc, rtc_lib **out)
{
    if ((unsigned)rtc >= TACK_RTC_COUNT) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "unknown runtime compiler %d (Tack knows %d)", (int)rtc,
                          (int)TACK_RTC_COUNT);
    }
    pthread_once(&load_once[rtc], loaders[rtc]);
    if (libs[rtc].error[0]) {
        return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE, "%s", libs[rtc].error);
    }
    *out = &libs[rtc];
    return TACK_OK;
}

/* The number of arch spelled as prefix + digits (at most 9999), or -1. */
static int
arch_number(const char *arch, const char *prefix)
{
    size_t n = prefix ? strlen(prefix) : 0;
    if (!arch || !prefix || strncmp(arch, prefix, n) != 0) {
        return -1;
    }
    int v = 0, digits = 0;
    for (const char *c = arch + n; *c; c++, digits++) {
        if (*c < '0' || *c > '9' || digits == 4) {
            return -1;
        }
        v = v * 10 + (*c - '0');
    }
    return digits > 0 && v >= 10 ? v : -1;
}

/* The number of a target, binary or portable (*portable says which), or -1. */
static int
target_number(const rtc_spec *spec, const char *target, bool *portable)
{
    int v = arch_number(target, spec->binary_prefix);
    *portable = v < 0;
    return v >= 0 ? v : arch_number(target, spec->portable_prefix);
}

static tack_status
unspelled(const rtc_spec *spec, const char *what, const char *arch)
{
    if (!arch) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT, "%s: NULL architecture", what);
    }
    return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                      "%s: '%s' is not an architecture %s spells (%sXY or %sXY, such "
                      "as %s90)",
                      what, arch, spec->name, spec->binary_prefix,
                      spec->portable_prefix, spec->binary_prefix);
}

/* Checks rtc and the spelling of arch (before anything is loaded, so bad arguments
 * need no toolkit), then loads the compiler. Out: *number, *portable and *lib only
 * on success. */
static tack_status
prepare(tack_rtc_kind rtc, const char *what, const char *arch, int *number,
        bool *portable, rtc_lib **lib)
{
    if ((unsigned)rtc >= TACK_RTC_COUNT) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "%s: unknown runtime compiler %d (Tack knows %d)", what,
                          (int)rtc, (int)TACK_RTC_COUNT);
    }
    bool p = false;
    int v = target_number(&specs[rtc], arch, &p);
    if (v < 0) {
        return unspelled(&specs[rtc], what, arch);
    }
    tack_status st = loaded(rtc, lib);
    if (st == TACK_OK) {
        *number = v;
        *portable = p;
    }
    return st;
}

tack_status
tack_rtc_version(tack_rtc_kind rtc, int *major, int *minor)
{
    if (!major || !minor) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT, "tack_rtc_version: NULL output");
    }
    rtc_lib *lib = NULL;
    tack_status st = loaded(rtc, &lib);
    if (st == TACK_OK) {
        *major = lib->major;
        *minor = lib->minor;
    }
    return st;
}

tack_status
tack_rtc_supports(tack_rtc_kind rtc, const char *arch, int *yes)
{
    if (!yes) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT, "tack_rtc_supports: NULL output");
    }
    bool portable = false;
    int v = 0;
    rtc_lib *lib = NULL;
    tack_status st = prepare(rtc, "tack_rtc_supports", arch, &v, &portable, &lib);
    if (st != TACK_OK) {
        return st;
    }
    int found = 0;
    for (int i = 0; i < lib->archs_n; i++) {
        found |= lib->archs_list[i] == v;
    }
    *yes = found;
    return TACK_OK;
}

bool
tack_rtc_is_portable(tack_rtc_kind rtc, const char *target)
{
    return (unsigned)rtc < TACK_RTC_COUNT &&
           arch_number(target, specs[rtc].portable_prefix) >= 0;
}

tack_status
tack_rtc_choose(tack_rtc_kind rtc, const char *device_arch, char *target, size_t cap)
{
    if (!target || cap < TACK_RTC_ARCH_CAP) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "tack_rtc_choose: NULL output or fewer than %d bytes",
                          TACK_RTC_ARCH_CAP);
    }
    bool portable = false;
    int arch = 0;
    rtc_lib *lib = NULL;
    tack_status st =
        prepare(rtc, "tack_rtc_choose", device_arch, &arch, &portable, &lib);
    if (st == TACK_OK && portable) {
        st = unspelled(&specs[rtc], "tack_rtc_choose (a device's own architecture)",
                       device_arch);
    }
    if (st != TACK_OK) {
        return st;
    }
    const rtc_spec *spec = &specs[rtc];
    int below = 0;
    for (int i = 0; i < lib->archs_n; i++) {
        if (lib->archs_list[i] == arch) {
            snprintf(target, cap, "%s%d", spec->binary_prefix, arch);
            return TACK_OK;
        }
        if (lib->archs_list[i] < arch && lib->archs_list[i] > below) {
            below = lib->archs_list[i];
        }
    }
    if (below == 0) {
        return tack__fail(
            TACK_ERR_DEVICE_UNAVAILABLE,
            "%s %d.%d cannot compile for compute capability %d.%d (its oldest is "
            "%d.%d); set %s to an older CUDA toolkit's library",
            spec->name, lib->major, lib->minor, arch / 10, arch % 10,
            lib->archs_n ? lib->archs_list[0] / 10 : 0,
            lib->archs_n ? lib->archs_list[0] % 10 : 0, spec->env);
    }
    snprintf(target, cap, "%s%d", spec->portable_prefix, below);
    return TACK_OK;
}

void
tack_rtc_free(void *p)
{
    tack__free(p);
}

void
tack_rtc_get_stats(tack_rtc_kind rtc, tack_rtc_stats *out)
{
    if (!out || (unsigned)rtc >= TACK_RTC_COUNT) {
        return;
    }
    out->compiles = atomic_load(&libs[rtc].compiles);
    out->disk_hits = atomic_load(&libs[rtc].disk_hits);
    out->rebuilds = atomic_load(&libs[rtc].rebuilds);
    out->failures = atomic_load(&libs[rtc].failures);
}

/* ---- compiling --------------------------------------------------------------- */

static char *
program_log(const rtc_lib *lib, rtc_program prog)
{
    size_t n = 0;
    if (lib->log_size(prog, &n) != 0 || n == 0) {
        return tack__strndup("", 0);
    }
    char *text = tack__alloc(n + 1, 0);
    if (text && lib->log(prog, text) != 0) {
        text[0] = '\0';
    }
    if (text) {
        text[n] = '\0';
    }
    return text;
}

/* Runs the compiler. Out: *image, *nbytes on success; *log on TACK_ERR_COMPILE. */
static tack_status
run_compiler(rtc_lib *lib, const rtc_spec *spec, const char *source, const char *name,
             const char *const *opts, bool portable, void **image, size_t *nbytes,
             char **log)
{
    rtc_program prog = NULL;
    rtc_result r = lib->create(&prog, source, name, 0, NULL, NULL);
    if (r != 0) {
        return tack__fail(TACK_ERR_COMPILE,
                          "%s could not create a program for '%s': %s", spec->name,
                          name, lib->get_error_string(r));
    }
    tack_status st = TACK_OK;
    r = lib->compile(prog, NOPTS, opts);
    if (r != 0) {
        atomic_fetch_add(&lib->failures, 1);
        *log = program_log(lib, prog);
        st = tack__fail(TACK_ERR_COMPILE,
                        "kernel '%s' failed to compile for the GPU (%s)", name,
                        lib->get_error_string(r));
        lib->destroy(&prog);
        return st;
    }
    size_t n = 0;
    r = portable ? lib->portable_size(prog, &n) : lib->binary_size(prog, &n);
    char *out = r == 0 && n > 0 ? tack__alloc(n, 0) : NULL;
    if (!out) {
        st = r != 0
                 ? tack__fail(TACK_ERR_COMPILE, "%s gave no image for '%s': %s",
                              spec->name, name, lib->get_error_string(r))
                 : tack__fail(TACK_ERR_NO_MEMORY, "no memory for a %zu-byte image", n);
    }
    else if ((portable ? lib->portable(prog, out) : lib->binary(prog, out)) != 0) {
        tack__free(out);
        out = NULL;
        st = tack__fail(TACK_ERR_COMPILE, "%s could not copy the image of '%s'",
                        spec->name, name);
    }
    lib->destroy(&prog);
    if (st == TACK_OK) {
        atomic_fetch_add(&lib->compiles, 1);
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

/* The image of the cache entry dir/key+ext for source, read whole. Out: *image
 * (Owned: tack__free) and *nbytes only on TACK__ENTRY_OK; an entry that cannot be read
 * whole (out of memory included) is TACK__ENTRY_BAD, and rebuilt. */
static tack__entry
read_entry(const char *dir, const char *key, const char *ext, const char *source,
           size_t source_len, void **image, size_t *nbytes)
{
    int fd = -1;
    tack__entry e = tack__cache_lookup_ext(dir, key, ext, source, source_len, &fd);
    if (e != TACK__ENTRY_OK) {
        return e;
    }
    struct stat sb;
    size_t size = fstat(fd, &sb) == 0 && sb.st_size > 0 ? (size_t)sb.st_size : 0;
    char *bytes = size ? tack__alloc(size, 0) : NULL;
    bool whole = bytes && tack__cache_read(fd, bytes, size);
    close(fd);
    if (!whole) {
        tack__free(bytes);
        return TACK__ENTRY_BAD;
    }
    *image = bytes;
    *nbytes = size;
    return TACK__ENTRY_OK;
}

tack_status
tack_rtc_compile(tack_rtc_kind rtc, const char *source, const char *name,
                 const char *target, void **image, size_t *nbytes, char **log)
{
    if (log) {
        *log = NULL;
    }
    if (!source || !name || !image || !nbytes || !log) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT, "tack_rtc_compile: NULL argument");
    }
    bool portable = false;
    int number = 0;
    rtc_lib *lib = NULL;
    tack_status st = prepare(rtc, "tack_rtc_compile", target, &number, &portable, &lib);
    if (st != TACK_OK) {
        return st;
    }
    const rtc_spec *spec = &specs[rtc];
    char target_opt[64];
    snprintf(target_opt, sizeof target_opt, "%s%s", spec->target_option, target);
    const char *opts[NOPTS] = {target_opt, spec->fixed_options[0],
                               spec->fixed_options[1], spec->fixed_options[2]};
    const char *ext = portable ? spec->portable_ext : spec->binary_ext;

    size_t source_len = strlen(source);
    tack__hash h;
    tack__hash_init(&h);
    tack__hash_str(&h, spec->cache_tag);
    tack__hash_update(&h, &lib->major, sizeof lib->major);
    tack__hash_update(&h, &lib->minor, sizeof lib->minor);
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
        tack__entry e = read_entry(dir, key, ext, source, source_len, image, nbytes);
        if (e == TACK__ENTRY_OK) {
            atomic_fetch_add(&lib->disk_hits, 1);
            return TACK_OK;
        }
        if (e == TACK__ENTRY_BAD) {
            atomic_fetch_add(&lib->rebuilds, 1);
        }
    }
    void *out = NULL;
    size_t n = 0;
    st = run_compiler(lib, spec, source, name, opts, portable, &out, &n, log);
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

/* The key of an outside image: its extension and everything that made it. */
static void
outside_key(const char *ext, const char *text, char key[33])
{
    tack__hash h;
    tack__hash_init(&h);
    tack__hash_str(&h, "outside image");
    tack__hash_str(&h, ext);
    tack__hash_str(&h, text);
    tack__hash_hex(&h, key);
}

/* Whether ext is a file ending the cache can take: a dot and letters or digits. */
static bool
outside_ext(const char *ext)
{
    size_t n = ext ? strlen(ext) : 0;
    if (n < 2 || n > 16 || ext[0] != '.') {
        return false;
    }
    for (size_t i = 1; i < n; i++) {
        if (!isalnum((unsigned char)ext[i])) {
            return false;
        }
    }
    return true;
}

bool
tack_rtc_cache_get(const char *ext, const char *text, void **image, size_t *nbytes)
{
    char dir[TACK__PATH_CAP], why[256], key[33];
    if (!outside_ext(ext) || !text || !image || !nbytes ||
        !tack__cache_dir(dir, sizeof dir, why, sizeof why)) {
        return false;
    }
    outside_key(ext, text, key);
    return read_entry(dir, key, ext, text, strlen(text), image, nbytes) ==
           TACK__ENTRY_OK;
}

void
tack_rtc_cache_put(const char *ext, const char *text, const void *image, size_t nbytes)
{
    char dir[TACK__PATH_CAP], why[256], key[33], tmp[TACK__PATH_CAP];
    if (!outside_ext(ext) || !text || !image || !nbytes ||
        !tack__cache_dir(dir, sizeof dir, why, sizeof why)) {
        return;
    }
    outside_key(ext, text, key);
    if (write_temp(dir, key, ext, image, nbytes, tmp, sizeof tmp)) {
        tack__cache_commit_ext(dir, key, ext, tmp, text, strlen(text));
        unlink(tmp); /* gone already when the commit renamed it */
    }
}
