/*
 * kernel_cache.c: the disk cache of compiled kernels.
 *
 * One entry per specialization, named by a 128-bit key over everything that changes
 * the binary (generated source, compiler identity, flags, CPU, Tack version; jit.c
 * computes it with hash.c's hash, which also checks the objects here):
 *
 *   <dir>/<key>.so     the shared object
 *   <dir>/<key>.meta   "tack-kernel-cache 1 <so size> <so hash>\n" + the full source
 *
 * Trust rules: the directory is private (owned by this user, no access for others); an
 * entry is used only if both files are regular files owned by this user, not writable
 * by group or others, the meta holds this exact source (so a hash collision cannot load
 * the wrong kernel) and the .so has the recorded size and hash (so a truncated or
 * corrupted object is rebuilt instead of loaded). Anything else is a bad entry: it is
 * ignored and replaced by a fresh build. Writers compile in a folder of their own
 * (<key>.tmpXXXXXX, from mkdtemp, so no two processes, nor a killed one and the next
 * with its pid, ever share a name) and rename into place, .so first and meta last,
 * so a reader sees either no entry, an old complete one, or a new complete one; a
 * mismatched pair fails the hash check. Temporary entries a killed process left are
 * swept once a day old.
 *
 * The folder is Tack's own only if Tack created it (0700). An existing folder that is
 * open to others (TACK_CACHE_DIR=/tmp) keeps its mode: the cache then lives in a
 * private folder inside it, tack-<uid>.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define META_MAGIC "tack-kernel-cache 1"

/* ---- paths ---------------------------------------------------------------------- */

bool
tack__path(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* The analyzer does not follow va_start through the format attribute. */
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    int n = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap) {
        out[0] = '\0';
        return false;
    }
    return true;
}

/* ---- the directory ------------------------------------------------------------- */

/* mkdir -p with mode 0700 for every directory it creates. */
static bool
make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            int rc = mkdir(path, 0700);
            *p = '/';
            if (rc != 0 && errno != EEXIST) {
                return false;
            }
        }
    }
    return mkdir(path, 0700) == 0 || errno == EEXIST;
}

/* A directory of this user that nobody else may enter. */
static bool
private_dir(const struct stat *sb)
{
    return S_ISDIR(sb->st_mode) && sb->st_uid == geteuid() && (sb->st_mode & 077) == 0;
}

bool
tack__cache_dir(char *dir, size_t cap, char *why, size_t why_cap)
{
    const char *env = getenv("TACK_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    bool fits;
    why[0] = '\0';
    if (env && *env) {
        fits = tack__path(dir, cap, "%s", env);
    }
    else if (xdg && *xdg == '/') {
        fits = tack__path(dir, cap, "%s/tack", xdg);
    }
    else if (home && *home) {
        fits = tack__path(dir, cap, "%s/.cache/tack", home);
    }
    else {
        return false; /* nowhere to keep kernels, and nothing the user asked for */
    }
    if (!fits) {
        snprintf(why, why_cap, "the kernel cache path is too long");
        return false;
    }
    struct stat sb;
    if (!make_dirs(dir) || stat(dir, &sb) != 0) {
        snprintf(why, why_cap, "could not create the kernel cache folder %s: %s", dir,
                 strerror(errno));
        return false;
    }
    if (private_dir(&sb)) {
        return true;
    }
    /* Tack creates its folders 0700, so this one was made by someone else, for their
     * own reasons (TACK_CACHE_DIR=/tmp, a shared project folder): its mode is not
     * ours to change. A private folder inside it is safe where nobody else can
     * rename it away: in a folder of ours, or in a sticky one such as /tmp. */
    if (!S_ISDIR(sb.st_mode) ||
        (sb.st_uid != geteuid() && (sb.st_mode & S_ISVTX) == 0)) {
        snprintf(why, why_cap,
                 "the kernel cache folder %s is not a folder of this user; set "
                 "TACK_CACHE_DIR to one",
                 dir);
        return false;
    }
    char sub[TACK__PATH_CAP];
    if (!tack__path(sub, sizeof sub, "%s/tack-%lu", dir, (unsigned long)geteuid())) {
        snprintf(why, why_cap, "the kernel cache path is too long");
        return false;
    }
    if (mkdir(sub, 0700) != 0 && errno != EEXIST) {
        snprintf(why, why_cap, "could not create the kernel cache folder %s: %s", sub,
                 strerror(errno));
        return false;
    }
    /* lstat: in a shared folder the name may be a link someone else planted. */
    if (lstat(sub, &sb) != 0 || !private_dir(&sb)) {
        snprintf(why, why_cap,
                 "the kernel cache folder %s is not private to this user (it must be "
                 "a folder of this user with mode 0700); remove it or set "
                 "TACK_CACHE_DIR",
                 sub);
        return false;
    }
    memcpy(dir, sub, strlen(sub) + 1);
    return true;
}

/* ---- temporary files --------------------------------------------------------------
 */

void
tack__remove_dir(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                unlinkat(dirfd(d), e->d_name, 0);
            }
        }
        closedir(d);
    }
    rmdir(path);
}

/* Every temporary name Tack makes in the cache folder contains ".tmp": the folder of
 * one compile (<key>.tmpXXXXXX) and the names of earlier versions
 * (<key>.tmp<pid>-<n>.c and the like). A compile takes seconds, so one older than
 * this was left by a process that was killed. */
#define STALE_SECONDS ((time_t)24 * 3600)

void
tack__cache_sweep(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        return;
    }
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat sb;
        if (!strstr(e->d_name, ".tmp") ||
            fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
            sb.st_uid != geteuid() || now - sb.st_mtime < STALE_SECONDS) {
            continue;
        }
        if (S_ISDIR(sb.st_mode)) {
            char path[TACK__PATH_CAP];
            if (tack__path(path, sizeof path, "%s/%s", dir, e->d_name)) {
                tack__remove_dir(path);
            }
        }
        else {
            unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    closedir(d);
}

/* ---- entries ------------------------------------------------------------------ */

static bool
trusted_file(int fd, struct stat *sb)
{
    return fstat(fd, sb) == 0 && S_ISREG(sb->st_mode) && sb->st_uid == geteuid() &&
           (sb->st_mode & 022) == 0;
}

/* Reads up to size bytes at fd into buf; returns how many it read. */
static size_t
read_into(int fd, char *buf, size_t size)
{
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
    }
    return got;
}

/* Reads the whole file at fd into a new buffer of *len bytes (+ a terminator). */
static char *
read_all(int fd, size_t size, size_t *len)
{
    char *buf = tack__alloc(size + 1, 0);
    if (!buf) {
        return NULL;
    }
    size_t got = read_into(fd, buf, size);
    buf[got] = '\0';
    *len = got;
    return buf;
}

bool
tack__cache_read(int fd, void *buf, size_t size)
{
    return read_into(fd, buf, size) == size;
}

static bool
hash_file(int fd, size_t size, char hex[33])
{
    size_t len;
    char *buf = read_all(fd, size, &len);
    if (!buf) {
        return false;
    }
    tack__hash h;
    tack__hash_init(&h);
    tack__hash_update(&h, buf, len);
    tack__hash_hex(&h, hex);
    tack__free(buf);
    return len == size && lseek(fd, 0, SEEK_SET) == 0;
}

static int
open_in(const char *dir, const char *key, const char *ext)
{
    char path[TACK__PATH_CAP];
    if (!tack__path(path, sizeof path, "%s/%s%s", dir, key, ext)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}

tack__entry
tack__cache_lookup(const char *dir, const char *key, const char *source,
                   size_t source_len, int *fd)
{
    return tack__cache_lookup_ext(dir, key, ".so", source, source_len, fd);
}

tack__entry
tack__cache_lookup_ext(const char *dir, const char *key, const char *ext,
                       const char *source, size_t source_len, int *fd_out)
{
    int meta = open_in(dir, key, ".meta");
    if (meta < 0) {
        return errno == ENOENT ? TACK__ENTRY_MISSING : TACK__ENTRY_BAD;
    }
    tack__entry result = TACK__ENTRY_BAD;
    int so = -1;
    char *text = NULL;
    struct stat sb;
    if (!trusted_file(meta, &sb)) {
        goto done;
    }
    size_t len;
    text = read_all(meta, (size_t)sb.st_size, &len);
    if (!text) {
        goto done;
    }
    char *newline = memchr(text, '\n', len);
    unsigned long long so_size;
    char so_hash[33];
    /* A malformed size cannot pass: it is compared with the object's real size. */
    // NOLINTNEXTLINE(cert-err34-c)
    if (!newline || sscanf(text, META_MAGIC " %llu %32s", &so_size, so_hash) != 2) {
        goto done;
    }
    size_t header = (size_t)(newline - text) + 1;
    if (len - header != source_len || memcmp(newline + 1, source, source_len) != 0) {
        goto done;
    }
    so = open_in(dir, key, ext);
    char actual[33];
    if (so < 0 || !trusted_file(so, &sb) || (unsigned long long)sb.st_size != so_size ||
        !hash_file(so, (size_t)so_size, actual) || strcmp(actual, so_hash) != 0) {
        goto done;
    }
    result = TACK__ENTRY_OK;
    *fd_out = so;
    so = -1;
done:
    tack__free(text);
    if (so >= 0) {
        close(so);
    }
    close(meta);
    return result;
}

static bool
write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

int
tack__cache_commit(const char *dir, const char *key, const char *so_path,
                   const char *source, size_t source_len)
{
    return tack__cache_commit_ext(dir, key, ".so", so_path, source, source_len);
}

int
tack__cache_commit_ext(const char *dir, const char *key, const char *ext,
                       const char *so_path, const char *source, size_t source_len)
{
    char meta_tmp[TACK__PATH_CAP], meta_path[TACK__PATH_CAP], so_final[TACK__PATH_CAP];
    if (!tack__path(meta_tmp, sizeof meta_tmp, "%s.meta", so_path) ||
        !tack__path(meta_path, sizeof meta_path, "%s/%s.meta", dir, key) ||
        !tack__path(so_final, sizeof so_final, "%s/%s%s", dir, key, ext)) {
        return ENAMETOOLONG;
    }
    int so = open(so_path, O_RDONLY | O_CLOEXEC);
    if (so < 0) {
        return errno;
    }
    struct stat sb;
    char hex[33];
    bool ok = fstat(so, &sb) == 0 && hash_file(so, (size_t)sb.st_size, hex) &&
              fchmod(so, 0600) == 0;
    int err = ok ? 0 : errno ? errno : EIO;
    close(so);
    if (!ok) {
        return err;
    }
    int meta = open(meta_tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (meta < 0) {
        return errno;
    }
    char header[128];
    int n = snprintf(header, sizeof header, META_MAGIC " %llu %s\n",
                     (unsigned long long)sb.st_size, hex);
    ok = n > 0 && write_all(meta, header, (size_t)n) &&
         write_all(meta, source, source_len);
    err = ok ? 0 : errno ? errno : EIO;
    /* A full disk may only show when the data is flushed at close. */
    if (close(meta) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && rename(so_path, so_final) != 0) {
        ok = false;
        err = errno;
    }
    if (ok && rename(meta_tmp, meta_path) != 0) {
        /* The object is complete but has no meta: lookups see no entry and the
         * next build replaces it. */
        ok = false;
        err = errno;
    }
    if (!ok) {
        unlink(meta_tmp);
    }
    return err;
}
