/*
 * jit.c: from generated C source to a loaded kernel: the CPU backend's kernel_build
 * slot (backend.h; kernel.c dispatches to it).
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
 * from Python release the GIL before calling in. A child forked while another
 * thread compiles inherits the mutex locked by a thread it does not have, so the
 * child re-creates it (pthread_atfork); the table it guards is published with one
 * atomic store, so the child always sees a whole one.
 *
 * Each compile works in a folder of its own, made by mkdtemp in the cache folder,
 * and removes it whatever happens. When the cache folder cannot be written (read-
 * only, full, not private) compiles go to a private temporary folder instead, for
 * the rest of the process; tack_kernel_cache_notice() tells the user once.
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
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "internal.h"
#include "tack/tack.h"

extern char **environ;

/* Order matters only for the key. No -w: it would also silence the one warning made
 * an error here (a call to a function nothing declared, which would otherwise compile
 * and only fail at load time, without a log). The generated code raises no other
 * warning, and the log is read only when a compile fails. */
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
    "-Werror=implicit-function-declaration",
    NULL,
};
/* After the source file, where the linker looks for what it still needs. */
static const char *const link_flags[] = {"-lm", NULL};

#define MAX_CC_ARGS 16
/* The compiler's words, the flags, the source, -o and the object, the libraries. */
#define MAX_COMMAND (MAX_CC_ARGS + 24)

static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
/* Written under build_lock, with a release store, after the new entry is complete. */
static _Atomic(tack__cpu_kernel *) loaded;
/* The cache folder failed a write in this process: compile in temporary folders. */
static bool cache_unwritable; /* under build_lock */
static bool swept;            /* stale temporary files removed once, under build_lock */
static _Atomic uint64_t stat_compiles, stat_disk_hits, stat_memory_hits, stat_rebuilds,
    stat_failures;

void
tack_kernel_get_stats(tack_kernel_stats *out)
{
    if (!out) {
        return;
    }
    out->compiles = atomic_load(&stat_compiles);
    out->disk_hits = atomic_load(&stat_disk_hits);
    out->memory_hits = atomic_load(&stat_memory_hits);
    out->rebuilds = atomic_load(&stat_rebuilds);
    out->failures = atomic_load(&stat_failures);
    out->parallel_launches = atomic_load(&tack__stat_parallel);
    out->serial_launches = atomic_load(&tack__stat_serial);
    out->restrict_launches = atomic_load(&tack__stat_restrict);
    out->plain_atomic_launches = atomic_load(&tack__stat_plain_atomic);
    out->privatized_launches = atomic_load(&tack__stat_privatized);
}

void
tack_kernel_log_free(char *log)
{
    tack__free(log);
}

/* ---- the notice ----------------------------------------------------------------- */

/* Written once, under build_lock, before notice_state becomes PENDING; never again. */
static char notice_text[TACK__PATH_CAP + 512];
enum { NOTICE_NONE, NOTICE_PENDING, NOTICE_TAKEN };
static atomic_int notice_state;

static void TACK__PRINTF(1, 2) notice(const char *fmt, ...)
{
    if (atomic_load(&notice_state) != NOTICE_NONE) {
        return; /* said once per process */
    }
    va_list ap;
    va_start(ap, fmt);
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    vsnprintf(notice_text, sizeof notice_text, fmt, ap);
    va_end(ap);
    atomic_store_explicit(&notice_state, NOTICE_PENDING, memory_order_release);
}

const char *
tack_kernel_cache_notice(void)
{
    int pending = NOTICE_PENDING;
    return atomic_compare_exchange_strong(&notice_state, &pending, NOTICE_TAKEN)
               ? notice_text
               : NULL;
}

/* ---- fork ----------------------------------------------------------------------- */

/* The child has only the forking thread: a build running on another thread at the
 * fork will never unlock, so the child starts with a fresh mutex. Nothing else needs
 * repair: the table is published atomically and a half-done compile belongs to the
 * parent (its temporary folder is the parent's to remove). */
static void
after_fork_child(void)
{
    pthread_mutex_init(&build_lock, NULL);
}

static void
register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
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

/* ---- the cache key -------------------------------------------------------------- */

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

/* The compile command: the compiler's words, the flags, the source, -o object, the
 * libraries. A NULL path is left out (the key is computed without them). Returns
 * the number of words; argv[n] is NULL. */
static int
command_words(const compiler *c, const char *c_path, const char *so_path,
              const char *argv[MAX_COMMAND])
{
    int n = 0;
    for (int k = 0; k < c->argc; k++) {
        argv[n++] = c->argv[k];
    }
    for (const char *const *f = compile_flags; *f; f++) {
        argv[n++] = *f;
    }
    if (c_path) {
        argv[n++] = c_path;
    }
    argv[n++] = "-o";
    if (so_path) {
        argv[n++] = so_path;
    }
    for (const char *const *f = link_flags; *f; f++) {
        argv[n++] = *f;
    }
    argv[n] = NULL;
    return n;
}

/* Every word of the command keys the cache, so no flag can change the object
 * without changing the key. The compiler itself is its resolved path instead of
 * argv[0]. */
static void
compute_key(const compiler *c, const char *source, char key[33])
{
    tack__hash h;
    tack__hash_init(&h);
    tack__hash_str(&h, source);
    tack__hash_str(&h, c->path);
    struct stat sb;
    if (stat(c->path, &sb) == 0) {
        char id[64];
        snprintf(id, sizeof id, "%lld %lld", (long long)sb.st_size,
                 (long long)sb.st_mtime);
        tack__hash_str(&h, id);
    }
    const char *argv[MAX_COMMAND];
    int n = command_words(c, NULL, NULL, argv);
    for (int k = 1; k < n; k++) {
        tack__hash_str(&h, argv[k]);
    }
    hash_cpu(&h);
    tack__hash_str(&h, TACK_VERSION);
    int abi = TACK_KERNEL_ABI;
    tack__hash_update(&h, &abi, sizeof abi);
    tack__hash_hex(&h, key);
}

int
tack__jit_key_words(const char **words, int cap)
{
    static compiler c;
    if (compiler_find(&c) != TACK_OK) {
        return -1;
    }
    const char *argv[MAX_COMMAND];
    int n = command_words(&c, NULL, NULL, argv);
    int count = 0;
    for (int k = 1; k < n && count < cap; k++) {
        words[count++] = argv[k];
    }
    return count;
}

/* Writes a new file. Returns 0 or the errno of the failure (the partial file is the
 * caller's to remove). */
static int
write_file(const char *path, const char *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return errno;
    }
    int err = 0;
    while (n > 0 && !err) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            err = w < 0 ? errno : EIO;
        }
        else {
            data += w;
            n -= (size_t)w;
        }
    }
    if (close(fd) != 0 && !err) {
        err = errno;
    }
    return err;
}

/* The command line and the compiler's output, as one new string. */
static char *
read_log(const compiler *c, const char *c_path, const char *so_path,
         const char *log_path, const char *extra)
{
    char cmd[2048];
    size_t used = 0;
    const char *parts[MAX_COMMAND];
    int np = command_words(c, c_path, so_path, parts);
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
    const char *argv[MAX_COMMAND];
    command_words(c, c_path, so_path, argv);

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

/* Reads a loaded kernel's parameter key, file names and stored flags, and its
 * optional entry points and constants (the restrict and serial bodies, the finish
 * function, the partial size and the result kind; kernel.h's ABI). load_object has
 * checked that the mandatory symbols exist and that the partial size is in range. */
static void
read_symbols(tack__cpu_kernel *k, void *handle)
{
    /* POSIX guarantees that a data pointer from dlsym converts to a function. */
    void *restricted = dlsym(handle, "tack_kernel_body_restrict");
    void *finish = dlsym(handle, "tack_kernel_finish");
    void *serial = dlsym(handle, "tack_kernel_body_serial");
    memcpy(&k->body_restrict, &restricted, sizeof restricted);
    memcpy(&k->body_serial, &serial, sizeof serial);
    k->atomics = dlsym(handle, "tack_kernel_atomics") != NULL;
    memcpy(&k->finish, &finish, sizeof finish);
    k->pub.nparams = *(const int *)dlsym(handle, "tack_kernel_nparams");
    k->pub.param_key = dlsym(handle, "tack_kernel_param_key");
    k->pub.files = dlsym(handle, "tack_kernel_files");
    for (k->pub.nfiles = 0; k->pub.files && k->pub.files[k->pub.nfiles] &&
                            k->pub.nfiles < TACK_KERNEL_MAX_FILES;
         k->pub.nfiles++) {
    }
    k->pub.param_stored = dlsym(handle, "tack_kernel_param_stored");
    const int64_t *partial = dlsym(handle, "tack_kernel_partial_size");
    const int *kind = dlsym(handle, "tack_kernel_result_kind");
    k->partial_size = partial && *partial > 0 ? *partial : 0; /* load_object: bounded */
    k->pub.result_kind =
        kind && *kind >= TACK_KERNEL_RESULT_NONE && *kind <= TACK_KERNEL_RESULT_BOOL
            ? *kind
            : TACK_KERNEL_RESULT_NONE;
}

static tack_status
load_object(const char *path, const char *source, size_t source_len, const char *key,
            const char *name, const char *filename, tack__cpu_kernel **out)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        return tack__fail(TACK_ERR_COMPILE, "could not load the kernel '%s': %s", name,
                          dlerror());
    }
    const int *abi = dlsym(handle, "tack_kernel_abi");
    void *trips = dlsym(handle, "tack_kernel_trips");
    void *body = dlsym(handle, "tack_kernel_body");
    const int *nparams = dlsym(handle, "tack_kernel_nparams");
    const int64_t *partial = dlsym(handle, "tack_kernel_partial_size");
    if (partial && (*partial < 0 || *partial > TACK_KERNEL_MAX_PARTIAL_SIZE)) {
        long long nbytes = (long long)*partial; /* read before the object goes */
        dlclose(handle);
        return tack__fail(TACK_ERR_COMPILE,
                          "kernel '%s' declares %lld bytes of reduction partials; at "
                          "most %d are supported",
                          name, nbytes, TACK_KERNEL_MAX_PARTIAL_SIZE);
    }
    if (!abi || !trips || !body || *abi != TACK_KERNEL_ABI || !nparams ||
        *nparams < 0 || *nparams > TACK_KERNEL_MAX_PARAMS ||
        !dlsym(handle, "tack_kernel_param_key")) {
        dlclose(handle);
        return tack__fail(TACK_ERR_COMPILE,
                          "the shared object of kernel '%s' lacks the kernel entry "
                          "points of ABI %d",
                          name, TACK_KERNEL_ABI);
    }
    tack__cpu_kernel *k = tack__calloc(sizeof *k);
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
    k->pub.backend = &tack__backend_cpu;
    k->pub.name = name_copy;
    k->pub.filename = file_copy;
    k->pub.impl = k;
    /* POSIX guarantees that a data pointer from dlsym converts to a function. */
    memcpy(&k->trips, &trips, sizeof trips);
    memcpy(&k->body, &body, sizeof body);
    read_symbols(k, handle);
    atomic_init(&k->trip_ns_q8, 0);
    *out = k;
    return TACK_OK;
}

/* Compiles source in a new folder: <parent>/<key>.tmpXXXXXX, or a private one under
 * $TMPDIR when parent is NULL. On success *work names the folder and *so_path the
 * object in it (the caller loads it, publishes it and removes the folder); on
 * failure nothing is left on disk, and *io_err is the errno when the folder itself
 * failed (could not be made or written: read-only, full), else 0. */
static tack_status
compile_in(const compiler *c, const char *parent, const char *key, const char *source,
           size_t source_len, const char *name, char work[TACK__PATH_CAP],
           char so_path[TACK__PATH_CAP], char **log, int *io_err)
{
    const char *tmp = getenv("TMPDIR");
    bool fits = parent
                    ? tack__path(work, TACK__PATH_CAP, "%s/%s.tmpXXXXXX", parent, key)
                    : tack__path(work, TACK__PATH_CAP, "%s/tack-XXXXXX",
                                 tmp && *tmp ? tmp : "/tmp");
    char c_path[TACK__PATH_CAP], log_path[TACK__PATH_CAP];
    *io_err = 0;
    /* The longest name in the folder is k.so.meta (the cache entry being written). */
    if (!fits || strlen(work) + sizeof "/k.so.meta" > TACK__PATH_CAP) {
        return tack__fail(TACK_ERR_COMPILE,
                          "the kernel cache path %s is too long; set TACK_CACHE_DIR "
                          "to a shorter one",
                          work);
    }
    if (!mkdtemp(work)) {
        *io_err = errno;
        return tack__fail(TACK_ERR_COMPILE,
                          "could not create a folder to compile kernel '%s' in (%s): "
                          "%s; set TACK_CACHE_DIR or TMPDIR to a writable folder",
                          name, work, strerror(errno));
    }
    tack__path(c_path, sizeof c_path, "%s/k.c", work);
    tack__path(log_path, sizeof log_path, "%s/k.log", work);
    tack__path(so_path, TACK__PATH_CAP, "%s/k.so", work);
    *io_err = write_file(c_path, source, source_len);
    if (*io_err) {
        tack__remove_dir(work);
        return tack__fail(TACK_ERR_COMPILE,
                          "could not write the source of kernel '%s' to %s: %s", name,
                          c_path, strerror(*io_err));
    }
    atomic_fetch_add(&stat_compiles, 1);
    bool ok = run_compiler(c, c_path, so_path, log_path, log);
    unlink(c_path);
    unlink(log_path);
    if (!ok) {
        tack__remove_dir(work);
        atomic_fetch_add(&stat_failures, 1);
        return tack__fail(TACK_ERR_COMPILE, "kernel '%s' failed to compile", name);
    }
    return TACK_OK;
}

/* A compiler that fails in a folder this short of space (or read-only) may have
 * failed for want of room, not because of the source. */
#define LOW_SPACE_BYTES (16u << 20)

static bool
folder_looks_full(const char *dir)
{
    struct statvfs fs;
    if (statvfs(dir, &fs) != 0) {
        return false;
    }
    return (fs.f_flag & ST_RDONLY) ||
           (unsigned long long)fs.f_bavail * fs.f_frsize < LOW_SPACE_BYTES ||
           (fs.f_files > 0 && fs.f_favail == 0);
}

static const char fallback_note[] =
    "kernels are compiled in a private temporary folder and not kept after this "
    "process";
static const char write_advice[] =
    "make it writable or free some space, or set TACK_CACHE_DIR to another folder";

/* Loads the entry of dir verified by tack__cache_lookup, or returns NULL. */
static tack__cpu_kernel *
load_cached(const char *dir, const char *key, const char *source, size_t source_len,
            const char *name, const char *filename)
{
    int fd = -1;
    tack__entry e = tack__cache_lookup(dir, key, source, source_len, &fd);
    tack__cpu_kernel *k = NULL;
    if (e == TACK__ENTRY_OK) {
        /* Load exactly the file that was verified, not whatever the path names a
         * moment later. */
        char fd_path[64], so_path[TACK__PATH_CAP];
        tack__path(fd_path, sizeof fd_path, "/proc/self/fd/%d", fd);
        tack__path(so_path, sizeof so_path, "%s/%s.so", dir, key);
        if (load_object(access(fd_path, F_OK) == 0 ? fd_path : so_path, source,
                        source_len, key, name, filename, &k) == TACK_OK) {
            /* The descriptor stays open for the life of the process, as the kernel
             * does: the dynamic loader knows a library by its path, and a closed
             * descriptor's number (so its /proc/self/fd path) is reused by the next
             * file opened, which dlopen would then answer with this library instead
             * of loading the new one. */
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
    return k;
}

/* Compiles and loads; publishes into dir when it is not NULL. */
static tack_status
compile_and_load(const compiler *c, const char *dir, const char *key,
                 const char *source, size_t source_len, const char *name,
                 const char *filename, tack__cpu_kernel **out, char **log)
{
    char work[TACK__PATH_CAP], so_path[TACK__PATH_CAP];
    int io_err = 0;
    tack_status st =
        compile_in(c, dir, key, source, source_len, name, work, so_path, log, &io_err);
    if (st != TACK_OK && dir && (io_err || folder_looks_full(dir))) {
        /* The folder, not the source, may be at fault: a private temporary folder
         * tells which. */
        int cache_err = io_err;
        tack_kernel_log_free(*log);
        *log = NULL;
        st = compile_in(c, NULL, key, source, source_len, name, work, so_path, log,
                        &io_err);
        if (st == TACK_OK) {
            cache_unwritable = true;
            notice("the kernel cache folder %s cannot be written (%s): %s; %s", dir,
                   cache_err ? strerror(cache_err) : "it is read-only or nearly full",
                   fallback_note, write_advice);
            dir = NULL;
        }
    }
    if (st != TACK_OK) {
        return st;
    }
    st = load_object(so_path, source, source_len, key, name, filename, out);
    if (st == TACK_OK && dir) {
        int err = tack__cache_commit(dir, key, so_path, source, source_len);
        if (err) {
            cache_unwritable = true;
            notice("could not keep a kernel in the cache folder %s (%s): %s; %s", dir,
                   strerror(err), fallback_note, write_advice);
        }
    }
    tack__remove_dir(work);
    return st;
}

static tack_status
build_locked(const char *name, const char *filename, const char *source,
             tack_kernel **out, char **log)
{
    size_t source_len = strlen(source);
    compiler c = {0};
    tack_status st = compiler_find(&c);
    if (st != TACK_OK) {
        return st; /* no compiler ran: the message says it all, and there is no log */
    }
    char key[33];
    compute_key(&c, source, key);
    for (tack__cpu_kernel *k = atomic_load_explicit(&loaded, memory_order_acquire); k;
         k = k->next) {
        if (strcmp(k->key, key) == 0 && k->source_len == source_len &&
            memcmp(k->source, source, source_len) == 0) {
            atomic_fetch_add(&stat_memory_hits, 1);
            *out = &k->pub;
            return TACK_OK;
        }
    }
    char dir[TACK__PATH_CAP], why[TACK__PATH_CAP + 256];
    bool persistent = tack__cache_dir(dir, sizeof dir, why, sizeof why);
    if (!persistent && why[0]) {
        notice("%s; %s", why, fallback_note);
    }
    tack__cpu_kernel *k =
        persistent ? load_cached(dir, key, source, source_len, name, filename) : NULL;
    if (!k) {
        bool keep = persistent && !cache_unwritable;
        if (keep && !swept) {
            tack__cache_sweep(dir);
            swept = true;
        }
        st = compile_and_load(&c, keep ? dir : NULL, key, source, source_len, name,
                              filename, &k, log);
        if (st != TACK_OK) {
            return st;
        }
    }
    if (!k) { /* every path above sets k or returns */
        return tack__fail(TACK_ERR_INTERNAL, "kernel build produced no kernel");
    }
    k->next = atomic_load_explicit(&loaded, memory_order_relaxed);
    atomic_store_explicit(&loaded, k, memory_order_release);
    *out = &k->pub;
    return TACK_OK;
}

/* The CPU backend's kernel_build slot (backend.h); kernel.c checked the pointers.
 * Only the source is read: the object states its own launch facts. */
tack_status
tack__cpu_kernel_build_request(const tack_backend *self, const char *name,
                               const char *filename, const tack_kernel_request *req,
                               tack_kernel **out, char **log)
{
    if (req->twin_source) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': the CPU backend builds C source alone, and "
                          "this request has a twin (made for a GPU backend); build it "
                          "for the backend its emitter made it for",
                          name);
    }
    return tack__cpu_kernel_build(self, name, filename, req->source, out, log);
}

tack_status
tack__cpu_kernel_build(const tack_backend *self, const char *name, const char *filename,
                       const char *source, tack_kernel **out, char **log)
{
    (void)self;
    pthread_once(&fork_once, register_fork_handler);
    pthread_mutex_lock(&build_lock);
    tack_status st = build_locked(name, filename, source, out, log);
    pthread_mutex_unlock(&build_lock);
    return st;
}
