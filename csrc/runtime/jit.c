/*
 * jit.c: from generated C source to a loaded kernel.
 *
 * The compiler is $CC (split on spaces, so "ccache gcc" works) or cc, run with
 * posix_spawn at -O3 -march=native into a shared object that dlopen loads. Each
 * specialization is its own shared object, so adding a kernel never recompiles
 * another. Loaded kernels live in a process-wide table keyed like the disk cache
 * and are never unloaded.
 *
 * The key hashes the source, the compiler's identity (resolved path, size and
 * modification time of the executable: cheap to read, unlike running --version,
 * and it changes when the compiler is upgraded), the flags, the CPU (the flags say
 * -march=native) and TACK_VERSION.
 *
 * One mutex serialises builds in a process: two threads asking for the same
 * specialization get one compile, and nothing is ever loaded half-built. Callers
 * from Python release the GIL before calling in.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "internal.h"
#include "tack/tack.h"

extern char **environ;

/* Order matters only for the key; -w keeps the log to real errors. */
static const char *const compile_flags[] = {
    "-O3",
    "-march=native",
    "-fPIC",
    "-shared",
    "-fwrapv",
    "-fno-math-errno",
    /* each operation rounds, as in Python: no fused multiply-add (clang's default
     * would contract a * b + c) */
    "-ffp-contract=off",
    "-funroll-loops",
    "-std=c11",
    "-pipe",
    "-w",
    NULL,
};

#define MAX_CC_ARGS 16

static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;
static tack_kernel *loaded; /* under build_lock */
static _Atomic uint64_t stat_compiles, stat_disk_hits, stat_memory_hits, stat_rebuilds,
    stat_failures;
extern _Atomic uint64_t tack__stat_parallel, tack__stat_serial, tack__stat_restrict;

void
tack_kernel_get_stats(tack_kernel_stats *out)
{
    out->compiles = atomic_load(&stat_compiles);
    out->disk_hits = atomic_load(&stat_disk_hits);
    out->memory_hits = atomic_load(&stat_memory_hits);
    out->rebuilds = atomic_load(&stat_rebuilds);
    out->failures = atomic_load(&stat_failures);
    out->parallel_launches = atomic_load(&tack__stat_parallel);
    out->serial_launches = atomic_load(&tack__stat_serial);
    out->restrict_launches = atomic_load(&tack__stat_restrict);
}

void
tack_kernel_log_free(char *log)
{
    tack__free(log);
}

/* ---- the compiler ------------------------------------------------------------- */

typedef struct compiler {
    char words[1024]; /* $CC split in place */
    char *argv[MAX_CC_ARGS];
    int argc;
    char path[TACK__PATH_CAP]; /* the executable argv[0] resolves to */
} compiler;

static bool
find_in_path(const char *name, char *out, size_t cap)
{
    if (strchr(name, '/')) {
        return realpath(name, out) != NULL;
    }
    const char *path = getenv("PATH");
    if (!path) {
        path = "/usr/bin:/bin";
    }
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        char cand[TACK__PATH_CAP];
        int n = snprintf(cand, sizeof cand, "%.*s/%s", (int)len, path, name);
        if (n > 0 && (size_t)n < sizeof cand && access(cand, X_OK) == 0 &&
            realpath(cand, out)) {
            (void)cap;
            return true;
        }
        path += len + (colon ? 1 : 0);
    }
    return false;
}

static tack_status
compiler_find(compiler *c)
{
    const char *cc = getenv("CC");
    if (!cc || !*cc) {
        cc = "cc";
    }
    snprintf(c->words, sizeof c->words, "%s", cc);
    c->argc = 0;
    for (char *tok = strtok(c->words, " \t"); tok && c->argc < MAX_CC_ARGS - 1;
         tok = strtok(NULL, " \t")) {
        c->argv[c->argc++] = tok;
    }
    if (c->argc == 0 || !find_in_path(c->argv[0], c->path, sizeof c->path)) {
        return tack__fail(TACK_ERR_COMPILE,
                          "no C compiler: '%s' was not found on PATH; install one "
                          "(gcc or clang) or set CC to its path",
                          c->argc ? c->argv[0] : cc);
    }
    return TACK_OK;
}

static void
hash_cpu(tack__hash *h)
{
#if defined(__x86_64__) || defined(__i386__)
    static const unsigned leaves[] = {0, 1, 7};
    for (size_t k = 0; k < sizeof leaves / sizeof leaves[0]; k++) {
        unsigned r[4] = {0};
        __cpuid_count(leaves[k], 0, r[0], r[1], r[2], r[3]);
        if (leaves[k] == 1) {
            r[1] = 0; /* EBX holds the APIC id of the CPU we happen to run on */
        }
        tack__hash_update(h, r, sizeof r);
    }
#endif
    struct utsname u;
    if (uname(&u) == 0) {
        tack__hash_str(h, u.machine);
    }
}

static void
compute_key(const compiler *c, const char *source, char key[33])
{
    tack__hash h;
    tack__hash_init(&h);
    tack__hash_str(&h, source);
    tack__hash_str(&h, c->path);
    for (int k = 1; k < c->argc; k++) {
        tack__hash_str(&h, c->argv[k]);
    }
    struct stat sb;
    if (stat(c->path, &sb) == 0) {
        int64_t id[2] = {(int64_t)sb.st_size, (int64_t)sb.st_mtime};
        tack__hash_update(&h, id, sizeof id);
    }
    for (const char *const *f = compile_flags; *f; f++) {
        tack__hash_str(&h, *f);
    }
    hash_cpu(&h);
    tack__hash_str(&h, TACK_VERSION);
    int abi = TACK_KERNEL_ABI;
    tack__hash_update(&h, &abi, sizeof abi);
    tack__hash_hex(&h, key);
}

static bool
write_file(const char *path, const char *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return false;
    }
    bool ok = true;
    while (n > 0 && ok) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        ok = w > 0;
        if (ok) {
            data += w;
            n -= (size_t)w;
        }
    }
    return close(fd) == 0 && ok;
}

/* The command line and the compiler's output, as one new string. */
static char *
read_log(const compiler *c, const char *c_path, const char *so_path,
         const char *log_path, const char *extra)
{
    char cmd[2048];
    size_t used = 0;
    const char *parts[MAX_CC_ARGS + 16];
    int np = 0;
    for (int k = 0; k < c->argc; k++) {
        parts[np++] = c->argv[k];
    }
    for (const char *const *f = compile_flags; *f; f++) {
        parts[np++] = *f;
    }
    parts[np++] = c_path;
    parts[np++] = "-o";
    parts[np++] = so_path;
    parts[np++] = "-lm";
    for (int k = 0; k < np && used < sizeof cmd; k++) {
        int n = snprintf(cmd + used, sizeof cmd - used, "%s%s", k ? " " : "", parts[k]);
        used += n > 0 ? (size_t)n : 0;
    }
    char output[16384] = "";
    size_t out_len = 0;
    int fd = log_path ? open(log_path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        ssize_t r;
        while (out_len < sizeof output - 1 &&
               (r = read(fd, output + out_len, sizeof output - 1 - out_len)) > 0) {
            out_len += (size_t)r;
        }
        output[out_len] = '\0';
        close(fd);
    }
    size_t total = strlen(cmd) + out_len + strlen(extra) + 8;
    char *log = tack__alloc(total, 0);
    if (log) {
        snprintf(log, total, "$ %s\n%s%s", cmd, output, extra);
    }
    return log;
}

/* Runs the compiler on c_path. Returns true when it exited 0. */
static bool
run_compiler(const compiler *c, const char *c_path, const char *so_path,
             const char *log_path, char **log)
{
    const char *argv[MAX_CC_ARGS + 16];
    int n = 0;
    for (int k = 0; k < c->argc; k++) {
        argv[n++] = c->argv[k];
    }
    for (const char *const *f = compile_flags; *f; f++) {
        argv[n++] = *f;
    }
    argv[n++] = c_path;
    argv[n++] = "-o";
    argv[n++] = so_path;
    argv[n++] = "-lm";
    argv[n] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, c->path, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    int wstatus = 0;
    if (rc == 0) {
        while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
        }
    }
    bool ok = rc == 0 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
    if (!ok) {
        char extra[160] = "";
        if (rc != 0) {
            snprintf(extra, sizeof extra, "(could not start the compiler: %s)\n",
                     strerror(rc));
        }
        else if (WIFSIGNALED(wstatus)) {
            snprintf(extra, sizeof extra, "(the compiler was killed by signal %d)\n",
                     WTERMSIG(wstatus));
        }
        else {
            snprintf(extra, sizeof extra, "(the compiler exited with status %d)\n",
                     WEXITSTATUS(wstatus));
        }
        *log = read_log(c, c_path, so_path, log_path, extra);
    }
    return ok;
}

/* ---- loading ------------------------------------------------------------------ */

static tack_status
load_object(const char *path, const char *source, size_t source_len, const char *key,
            const char *name, const char *filename, tack_kernel **out)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        return tack__fail(TACK_ERR_COMPILE, "could not load the kernel '%s': %s", name,
                          dlerror());
    }
    const int *abi = dlsym(handle, "tack_kernel_abi");
    void *trips = dlsym(handle, "tack_kernel_trips");
    void *body = dlsym(handle, "tack_kernel_body");
    if (!abi || !trips || !body || *abi != TACK_KERNEL_ABI) {
        dlclose(handle);
        return tack__fail(TACK_ERR_COMPILE,
                          "the shared object of kernel '%s' lacks the kernel entry "
                          "points of ABI %d",
                          name, TACK_KERNEL_ABI);
    }
    tack_kernel *k = tack__calloc(sizeof *k);
    char *name_copy = tack__strndup(name, strlen(name));
    char *file_copy = tack__strndup(filename, strlen(filename));
    char *src_copy = tack__strndup(source, source_len);
    if (!k || !name_copy || !file_copy || !src_copy) {
        tack__free(k);
        tack__free(name_copy);
        tack__free(file_copy);
        tack__free(src_copy);
        dlclose(handle);
        return tack__fail(TACK_ERR_NO_MEMORY, "out of memory loading a kernel");
    }
    memcpy(k->key, key, 33);
    k->name = name_copy;
    k->filename = file_copy;
    k->source = src_copy;
    k->source_len = source_len;
    k->handle = handle;
    /* POSIX guarantees that a data pointer from dlsym converts to a function. */
    memcpy(&k->trips, &trips, sizeof trips);
    memcpy(&k->body, &body, sizeof body);
    tack__kernel_optional(k, handle);
    atomic_init(&k->trip_ns_q8, 0);
    *out = k;
    return TACK_OK;
}

/* Compiles source in work_dir. On success *so_path names the object (the caller
 * publishes or deletes it). */
static tack_status
compile_to(const compiler *c, const char *work_dir, const char *key, const char *source,
           size_t source_len, const char *name, char *so_path, size_t cap, char **log)
{
    static _Atomic unsigned serial;
    unsigned id = atomic_fetch_add(&serial, 1);
    char c_path[TACK__PATH_CAP], log_path[TACK__PATH_CAP];
    long pid = (long)getpid();
    if (!tack__path(c_path, sizeof c_path, "%s/%s.tmp%ld-%u.c", work_dir, key, pid,
                    id) ||
        !tack__path(log_path, sizeof log_path, "%s/%s.tmp%ld-%u.log", work_dir, key,
                    pid, id) ||
        !tack__path(so_path, cap, "%s/%s.tmp%ld-%u.so", work_dir, key, pid, id)) {
        return tack__fail(TACK_ERR_COMPILE, "the kernel cache path %s is too long",
                          work_dir);
    }
    if (!write_file(c_path, source, source_len)) {
        return tack__fail(TACK_ERR_COMPILE, "could not write %s: %s", c_path,
                          strerror(errno));
    }
    atomic_fetch_add(&stat_compiles, 1);
    bool ok = run_compiler(c, c_path, so_path, log_path, log);
    unlink(c_path);
    unlink(log_path);
    if (!ok) {
        unlink(so_path);
        atomic_fetch_add(&stat_failures, 1);
        return tack__fail(TACK_ERR_COMPILE, "kernel '%s' failed to compile", name);
    }
    return TACK_OK;
}

static tack_status
build_locked(const char *name, const char *filename, const char *source,
             tack_kernel **out, char **log)
{
    size_t source_len = strlen(source);
    compiler c = {0};
    tack_status st = compiler_find(&c);
    if (st != TACK_OK) {
        *log = tack__strndup(tack_last_error(), strlen(tack_last_error()));
        return st;
    }
    char key[33];
    compute_key(&c, source, key);
    for (tack_kernel *k = loaded; k; k = k->next) {
        if (strcmp(k->key, key) == 0 && k->source_len == source_len &&
            memcmp(k->source, source, source_len) == 0) {
            atomic_fetch_add(&stat_memory_hits, 1);
            *out = k;
            return TACK_OK;
        }
    }
    char dir[TACK__PATH_CAP];
    bool persistent = tack__cache_dir(dir, sizeof dir);
    tack_kernel *k = NULL;
    if (persistent) {
        int fd = -1;
        tack__entry e = tack__cache_lookup(dir, key, source, source_len, &fd);
        if (e == TACK__ENTRY_OK) {
            /* Load exactly the file that was verified, not whatever the path
             * names a moment later. */
            char fd_path[64], so_path[TACK__PATH_CAP];
            tack__path(fd_path, sizeof fd_path, "/proc/self/fd/%d", fd);
            tack__path(so_path, sizeof so_path, "%s/%s.so", dir, key);
            st = load_object(access(fd_path, F_OK) == 0 ? fd_path : so_path, source,
                             source_len, key, name, filename, &k);
            if (st == TACK_OK) {
                /* The descriptor stays open for the life of the process, as the
                 * kernel does: the dynamic loader knows a library by its path, and
                 * a closed descriptor's number (so its /proc/self/fd path) is reused
                 * by the next file opened, which dlopen would then answer with this
                 * library instead of loading the new one. */
                atomic_fetch_add(&stat_disk_hits, 1);
            }
            else {
                close(fd);
                e = TACK__ENTRY_BAD;
            }
        }
        if (e == TACK__ENTRY_BAD) {
            atomic_fetch_add(&stat_rebuilds, 1);
        }
    }
    if (!k) {
        char work[TACK__PATH_CAP];
        if (persistent) {
            memcpy(work, dir, sizeof work);
        }
        else {
            const char *tmp = getenv("TMPDIR");
            if (!tack__path(work, sizeof work, "%s/tack-XXXXXX",
                            tmp && *tmp ? tmp : "/tmp") ||
                !mkdtemp(work)) {
                st = tack__fail(TACK_ERR_COMPILE,
                                "no usable kernel cache directory and no temporary "
                                "one: %s; set TACK_CACHE_DIR to a private directory",
                                strerror(errno));
                *log = tack__strndup(tack_last_error(), strlen(tack_last_error()));
                return st;
            }
        }
        char so_path[TACK__PATH_CAP];
        st = compile_to(&c, work, key, source, source_len, name, so_path,
                        sizeof so_path, log);
        if (st == TACK_OK) {
            st = load_object(so_path, source, source_len, key, name, filename, &k);
            if (st == TACK_OK && persistent) {
                tack__cache_commit(dir, key, so_path, source, source_len);
            }
            unlink(so_path);
        }
        if (!persistent) {
            rmdir(work);
        }
        if (st != TACK_OK) {
            if (!*log) {
                *log = tack__strndup(tack_last_error(), strlen(tack_last_error()));
            }
            return st;
        }
    }
    if (!k) { /* every path above sets k or returns */
        return tack__fail(TACK_ERR_INTERNAL, "kernel build produced no kernel");
    }
    k->next = loaded;
    loaded = k;
    *out = k;
    return TACK_OK;
}

tack_status
tack_kernel_build(const char *name, const char *filename, const char *source,
                  tack_kernel **out, char **log)
{
    *log = NULL;
    if (!name || !filename || !source) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "tack_kernel_build needs a name, a filename and source");
    }
    pthread_mutex_lock(&build_lock);
    tack_status st = build_locked(name, filename, source, out, log);
    pthread_mutex_unlock(&build_lock);
    return st;
}
