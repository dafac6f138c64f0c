/*
 * standin_emulate.c: launches that run the module's own CUDA code
 * (TACK_STANDIN_EXEC=emulate), instead of a CPU twin.
 *
 * The stand-in cannot run PTX or a CUBIN, so the CUDA C++ source of a module is handed
 * to it beside the image (tack_standin_cuda_module_source, standin_twin.h). At the
 * first launch of an entry, the source is compiled for the host after
 * cuda_emulation.hpp (the project's CUDA built-ins for the CPU) with `g++ -std=c++20`
 * into a shared object, cached on disk by a hash of the whole text, and loaded; the
 * object has one tk_emu_entry_<name> per `extern "C" __global__` function of the
 * source.
 *
 * When the queued launch reaches its synchronization point, the stand-in forks: the
 * child makes exactly the device memory the launch may use accessible at its device
 * addresses (the pages of every live allocation of the launch's device, as its stream
 * sees them, and of VMM mappings with the access they were given), runs the grid with
 * the launch's geometry, dynamic shared memory size and parameter bytes, and exits.
 * Device memory is shared memory (a memfd, MAP_SHARED managed memory), so what the
 * kernel wrote is what the parent then reads through its alias. The parent's own view
 * of device memory never changes: a host dereference still faults at once.
 *
 * The child dying by a signal (an access outside the launch's memory, SIGSEGV), a time
 * limit passed (a barrier that never opens), or the emulation refusing the launch is a
 * device fault: the sticky CUDA_ERROR_ILLEGAL_ADDRESS, with the cause in the log. Page
 * granularity is the limit of this check: an overrun that stays inside a page of
 * memory the launch may use goes unnoticed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "standin.h"

#ifndef TACK_STANDIN_EMULATION_HEADER
#error "define TACK_STANDIN_EMULATION_HEADER as the path of cuda_emulation.hpp"
#endif

extern char **environ;

#define ENTRY_MARK "extern \"C\" __global__ void "
#define DEFAULT_TIMEOUT 120 /* seconds one emulated launch may take */

/* cuda_emulation.hpp's tk_emu_launch and the result codes of its entries. */
typedef struct emu_launch {
    const void *params;
    size_t params_nbytes;
    unsigned grid[3], block[3];
    size_t shared;
} emu_launch;
typedef int (*emu_entry_fn)(const emu_launch *);

/* Every shared object loaded, by the hash of its source (never unloaded). */
typedef struct emu_object {
    uint64_t hash;
    void *handle;
    struct emu_object *next;
} emu_object;
static emu_object *objects;

/* ---- environment ------------------------------------------------------------------
 */

static void emu_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
emu_log(const char *fmt, ...)
{
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is just above
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n >= sizeof line - 1 ? sizeof line - 2 : (size_t)n;
    line[len++] = '\n';
    if (standin.log_fd >= 0) {
        ssize_t w = write(standin.log_fd, line, len);
        (void)w;
    }
}

/* The folder of compiled modules: TACK_STANDIN_EMULATE_CACHE, else one of this user's
 * under $TMPDIR (made 0700; refused when someone else owns it or can write it). */
static bool
cache_dir(char *out, size_t n)
{
    const char *env = getenv("TACK_STANDIN_EMULATE_CACHE");
    const char *tmp = getenv("TMPDIR");
    int m = env && *env ? snprintf(out, n, "%s", env)
                        : snprintf(out, n, "%s/tack-standin-emulate-%u",
                                   tmp && *tmp ? tmp : "/tmp", (unsigned)getuid());
    if (m < 0 || (size_t)m >= n) {
        return false;
    }
    (void)mkdir(out, 0700);
    struct stat st;
    return stat(out, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
           (st.st_mode & 022) == 0;
}

/* ---- the source -------------------------------------------------------------------
 */

static uint64_t
fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        h = (h ^ (unsigned char)s[k]) * 0x100000001b3ull;
    }
    return h;
}

/* The whole file contents, NUL-terminated, or NULL. Owned by the caller. */
static char *
read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
        fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t)n + 1)) &&
        fread(s, 1, (size_t)n, f) == (size_t)n) {
        s[n] = '\0';
    }
    else {
        free(s);
        s = NULL;
    }
    if (f) {
        fclose(f);
    }
    return s;
}

/* Whether every __shared__ of source is `extern __shared__` (dynamic shared memory,
 * which the emulation models; a static __shared__ variable would be per thread). */
static bool
only_dynamic_shared(const char *source)
{
    for (const char *p = strstr(source, "__shared__"); p;
         p = strstr(p + 1, "__shared__")) {
        const char *q = p;
        while (q > source && (q[-1] == ' ' || q[-1] == '\t')) {
            q--;
        }
        if (q - source < 6 || strncmp(q - 6, "extern", 6) != 0) {
            return false;
        }
    }
    return true;
}

/* The text g++ compiles: the emulation header, the module, and one TK_EMU_ENTRY per
 * entry point of the module. NULL when out of memory. Owned by the caller. */
static char *
host_text(const char *header, const char *source)
{
    size_t extra = 0;
    for (const char *p = strstr(source, ENTRY_MARK); p; p = strstr(p + 1, ENTRY_MARK)) {
        extra += strcspn(p + strlen(ENTRY_MARK), "( \n") + 32;
    }
    size_t n = strlen(header) + strlen(source) + extra + 64;
    char *text = malloc(n);
    if (!text) {
        return NULL;
    }
    int at = snprintf(text, n, "%s\n#line 1 \"module.cu\"\n%s\n", header, source);
    for (const char *p = strstr(source, ENTRY_MARK); p && at > 0 && (size_t)at < n;
         p = strstr(p + 1, ENTRY_MARK)) {
        const char *name = p + strlen(ENTRY_MARK);
        int len = (int)strcspn(name, "( \n");
        at += snprintf(text + at, n - (size_t)at, "TK_EMU_ENTRY(%.*s)\n", len, name);
    }
    if (at <= 0 || (size_t)at >= n) {
        free(text);
        return NULL;
    }
    return text;
}

/* ---- compiling --------------------------------------------------------------------
 */

/* Runs the compiler over cpp into so (through a temporary name, so a concurrent
 * process never loads half a file); its messages go to log. True on success. */
static bool
compile(const char *cpp, const char *so, const char *log)
{
    const char *cxx = getenv("TACK_STANDIN_CXX");
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", so, (long)getpid());
    char *argv[] = {(char *)(cxx && *cxx ? cxx : "g++"),
                    "-std=c++20",
                    "-O1",
                    "-w",
                    "-fPIC",
                    "-shared",
                    "-pthread",
                    "-ffp-contract=off",
                    "-o",
                    tmp,
                    (char *)cpp,
                    NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    int status = 0;
    while (rc == 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    bool ok = rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
              rename(tmp, so) == 0;
    if (!ok) {
        (void)unlink(tmp);
    }
    return ok;
}

/* The loaded object of text (compiled unless the cache has it), or NULL. */
static void *
object_of(const char *text)
{
    uint64_t h = fnv1a(0xcbf29ce484222325ull, text, strlen(text));
    for (emu_object *o = objects; o; o = o->next) {
        if (o->hash == h) {
            return o->handle;
        }
    }
    char dir[4000], cpp[4100], so[4100], log[4100];
    if (!cache_dir(dir, sizeof dir)) {
        emu_log("emulate: no private folder for compiled modules (%s)", dir);
        return NULL;
    }
    snprintf(cpp, sizeof cpp, "%s/%016llx.cpp", dir, (unsigned long long)h);
    snprintf(so, sizeof so, "%s/%016llx.so", dir, (unsigned long long)h);
    snprintf(log, sizeof log, "%s/%016llx.log", dir, (unsigned long long)h);
    void *handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        FILE *f = fopen(cpp, "wb");
        bool written = f && fputs(text, f) >= 0;
        if (f && fclose(f) != 0) {
            written = false;
        }
        if (!written || !compile(cpp, so, log) ||
            !(handle = dlopen(so, RTLD_NOW | RTLD_LOCAL))) {
            emu_log("emulate: compiling %s for the host failed; see %s", cpp, log);
            fprintf(stderr,
                    "tack stand-in: a CUDA module did not compile for emulation; "
                    "the compiler's messages are in %s\n",
                    log);
            return NULL;
        }
    }
    emu_object *o = calloc(1, sizeof *o);
    if (!o) {
        dlclose(handle);
        return NULL;
    }
    o->hash = h;
    o->handle = handle;
    o->next = objects;
    objects = o;
    return handle;
}

void *
standin_emulate_entry(const char *source, const char *entry)
{
    static char *header;
    if (!source) {
        emu_log(
            "emulate: %s: the module's CUDA source was never given "
            "(tack_standin_cuda_module_source)",
            entry);
        return NULL;
    }
    if (!only_dynamic_shared(source)) {
        emu_log(
            "emulate: %s: the module declares static __shared__ memory, which the "
            "emulation does not model",
            entry);
        return NULL;
    }
    if (!header && !(header = read_text(TACK_STANDIN_EMULATION_HEADER))) {
        emu_log("emulate: cannot read %s", TACK_STANDIN_EMULATION_HEADER);
        return NULL;
    }
    char *text = host_text(header, source);
    void *handle = text ? object_of(text) : NULL;
    free(text);
    char sym[512];
    snprintf(sym, sizeof sym, "tk_emu_entry_%s", entry);
    void *fn = handle ? dlsym(handle, sym) : NULL;
    if (handle && !fn) {
        emu_log("emulate: the module has no entry point %s", entry);
    }
    return fn;
}

/* ---- running ----------------------------------------------------------------------
 */

/* The child: the launch's memory made reachable, the signals that end it restored,
 * the grid run. Never returns. */
static void __attribute__((noreturn)) child(void *fn, const standin_launch_args *a)
{
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGALRM, SIGILL, SIGFPE, SIGABRT};
    sigset_t set;
    sigemptyset(&set);
    for (size_t k = 0; k < sizeof fatal / sizeof fatal[0]; k++) {
        signal(fatal[k],
               SIG_DFL); /* the host program's handlers are not the device's */
        sigaddset(&set, fatal[k]);
    }
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    struct rlimit none = {0, 0};
    (void)setrlimit(RLIMIT_CORE, &none);
    const char *t = getenv("TACK_STANDIN_EMULATE_TIMEOUT");
    long seconds = t ? strtol(t, NULL, 10) : 0;
    alarm((unsigned)(seconds > 0 ? seconds : DEFAULT_TIMEOUT));
    if (!standin_expose_launch_memory(a->ctx, a->use)) {
        _exit(6);
    }
    emu_launch l = {.params = a->params,
                    .params_nbytes = a->params_nbytes,
                    .grid = {a->grid[0], a->grid[1], a->grid[2]},
                    .block = {a->block[0], a->block[1], a->block[2]},
                    .shared = a->shared};
    emu_entry_fn entry;
    memcpy(&entry, &fn, sizeof entry);
    _exit(entry(&l));
}

bool
standin_emulate_run(void *fn, const standin_launch_args *a)
{
    pid_t pid = fork();
    if (pid == 0) {
        child(fn, a);
    }
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return true;
    }
    static const char *why[] = {
        [3] = "the parameter bytes are not the entry's parameter list",
        [4] = "the geometry is beyond the device's limits",
        [5] = "the host could not start the block's threads",
        [6] = "the launch's memory could not be mapped",
    };
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    if (pid < 0) {
        emu_log("emulate(fn=%s) -> not run: fork failed (%s)", a->entry,
                strerror(errno));
    }
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
        emu_log(
            "emulate(fn=%s) -> fault: still running after the time limit "
            "(TACK_STANDIN_EMULATE_TIMEOUT; a barrier that never opens?)",
            a->entry);
    }
    else if (WIFSIGNALED(status)) {
        emu_log(
            "emulate(fn=%s) -> fault: signal %d (%s; an access outside the "
            "launch's memory)",
            a->entry, WTERMSIG(status), strsignal(WTERMSIG(status)));
    }
    else {
        emu_log("emulate(fn=%s) -> fault: %s", a->entry,
                code > 0 && code < (int)(sizeof why / sizeof why[0]) && why[code]
                    ? why[code]
                    : "the emulation stopped");
    }
    return false;
}
