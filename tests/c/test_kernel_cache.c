/*
 * test_kernel_cache.c: the JIT driver and the disk cache: a private directory,
 * reuse across processes, corrupt and foreign entries rebuilt, compile failures
 * reported with the compiler's log and never cached.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>

#include "internal.h"
#include "kernel_test_util.h"

static tack_kernel_stats
stats(void)
{
    tack_kernel_stats s;
    tack_kernel_get_stats(&s);
    return s;
}

/* Builds the test kernel in a child process, so the parent's in-memory table stays
 * empty and only the disk cache can carry the result over. */
static void
build_in_child(void)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        tack_kernel *k;
        char *log;
        tack_status st =
            tack_kernel_build("double", "t.py", double_kernel_source, &k, &log);
        _exit(st == TACK_OK && stats().compiles == 1 ? 0 : 1);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The path of the one file in dir whose name ends with ext. */
static void
entry_path(const char *dir, const char *ext, char *out, size_t cap)
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

static void
check_kernel_runs(tack_kernel *k)
{
    double out[64];
    int64_t shape[1] = {64};
    tack_kernel_arg args[2] = {{out, shape, 0, 0}, {NULL, NULL, -1, 0}};
    CHECK_OK(tack_kernel_launch(k, args));
    for (int i = 0; i < 64; i++) {
        CHECK_EQ_DBL(out[i], 2.0 * i);
    }
}

TACK_TEST(hash_is_stable_and_sensitive)
{
    tack__hash a, b;
    char ha[33], hb[33];
    tack__hash_init(&a);
    tack__hash_str(&a, "abc");
    tack__hash_init(&b);
    tack__hash_str(&b, "abc");
    tack__hash_hex(&a, ha);
    tack__hash_hex(&b, hb);
    CHECK(strcmp(ha, hb) == 0);
    CHECK_EQ_INT(strlen(ha), 32);
    tack__hash_init(&b);
    tack__hash_str(&b, "abd");
    tack__hash_hex(&b, hb);
    CHECK(strcmp(ha, hb) != 0);
}

TACK_TEST(cache_dir_is_created_private)
{
    const char *dir = fresh_cache_dir();
    char got[TACK__PATH_CAP];
    CHECK(tack__cache_dir(got, sizeof got));
    struct stat sb;
    CHECK(stat(dir, &sb) == 0);
    CHECK_EQ_INT(sb.st_mode & 0777, 0700);
    /* An existing directory with looser permissions is tightened. */
    CHECK(chmod(dir, 0755) == 0);
    CHECK(tack__cache_dir(got, sizeof got));
    CHECK(stat(dir, &sb) == 0);
    CHECK_EQ_INT(sb.st_mode & 0777, 0700);
    remove_cache_dir(dir);
}

TACK_TEST(build_compiles_once_then_hits_memory)
{
    const char *dir = fresh_cache_dir();
    tack_kernel *k1, *k2;
    char *log;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k1, &log));
    CHECK(log == NULL);
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k2, &log));
    CHECK(k1 == k2);
    CHECK_EQ_INT(stats().compiles, 1);
    CHECK_EQ_INT(stats().memory_hits, 1);
    check_kernel_runs(k1);
    char so[TACK__PATH_CAP];
    entry_path(dir, ".so", so, sizeof so);
    struct stat sb;
    CHECK(stat(so, &sb) == 0);
    CHECK_EQ_INT(sb.st_mode & 022, 0);
    remove_cache_dir(dir);
}

TACK_TEST(second_process_loads_from_disk_without_compiling)
{
    const char *dir = fresh_cache_dir();
    build_in_child();
    tack_kernel *k;
    char *log;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    CHECK_EQ_INT(stats().compiles, 0);
    CHECK_EQ_INT(stats().disk_hits, 1);
    check_kernel_runs(k);
    remove_cache_dir(dir);
}

TACK_TEST(corrupt_entry_is_rebuilt)
{
    const char *dir = fresh_cache_dir();
    build_in_child();
    char so[TACK__PATH_CAP];
    entry_path(dir, ".so", so, sizeof so);
    /* Same size, different bytes: only the recorded hash can tell. */
    int fd = open(so, O_WRONLY);
    CHECK(fd >= 0);
    CHECK(pwrite(fd, "garbage!", 8, 64) == 8);
    close(fd);
    tack_kernel *k;
    char *log;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    CHECK_EQ_INT(stats().rebuilds, 1);
    CHECK_EQ_INT(stats().compiles, 1);
    check_kernel_runs(k);
    remove_cache_dir(dir);
}

TACK_TEST(truncated_meta_is_rebuilt)
{
    const char *dir = fresh_cache_dir();
    build_in_child();
    char meta[TACK__PATH_CAP];
    entry_path(dir, ".meta", meta, sizeof meta);
    CHECK(truncate(meta, 10) == 0);
    tack_kernel *k;
    char *log;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    CHECK_EQ_INT(stats().rebuilds, 1);
    check_kernel_runs(k);
    remove_cache_dir(dir);
}

TACK_TEST(entry_writable_by_others_or_foreign_is_rebuilt)
{
    const char *dir = fresh_cache_dir();
    build_in_child();
    char so[TACK__PATH_CAP];
    entry_path(dir, ".so", so, sizeof so);
    if (geteuid() == 0) {
        CHECK(chown(so, 12345, 12345) == 0); /* someone else's file */
    }
    else {
        CHECK(chmod(so, 0666) == 0); /* anyone could have replaced it */
    }
    tack_kernel *k;
    char *log;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    CHECK_EQ_INT(stats().rebuilds, 1);
    CHECK_EQ_INT(stats().disk_hits, 0);
    struct stat sb;
    CHECK(stat(so, &sb) == 0);
    CHECK_EQ_INT(sb.st_uid, geteuid()); /* replaced by our own build */
    check_kernel_runs(k);
    remove_cache_dir(dir);
}

TACK_TEST(foreign_cache_dir_is_not_used)
{
    if (geteuid() != 0) {
        return; /* only root can make a directory owned by someone else */
    }
    const char *dir = fresh_cache_dir();
    CHECK(mkdir(dir, 0700) == 0);
    CHECK(chown(dir, 12345, 12345) == 0);
    char got[TACK__PATH_CAP];
    CHECK(!tack__cache_dir(got, sizeof got));
    tack_kernel *k;
    char *log;
    /* Still builds, in a private temporary directory. */
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    check_kernel_runs(k);
    remove_cache_dir(dir);
}

TACK_TEST(compile_error_reports_the_log_and_is_not_cached)
{
    const char *dir = fresh_cache_dir();
    tack_kernel *k = NULL;
    char *log;
    const char *bad = "int tack_kernel_abi = ;\n";
    CHECK_STATUS(tack_kernel_build("bad", "t.py", bad, &k, &log), TACK_ERR_COMPILE);
    CHECK(log != NULL);
    CHECK(strstr(log, "error") != NULL);
    CHECK(k == NULL);
    tack_kernel_log_free(log);
    CHECK_STATUS(tack_kernel_build("bad", "t.py", bad, &k, &log), TACK_ERR_COMPILE);
    tack_kernel_log_free(log);
    CHECK_EQ_INT(stats().compiles, 2);
    CHECK_EQ_INT(stats().failures, 2);
    remove_cache_dir(dir);
}

TACK_TEST(object_without_entry_points_is_refused)
{
    const char *dir = fresh_cache_dir();
    tack_kernel *k = NULL;
    char *log;
    CHECK_STATUS(tack_kernel_build("empty", "t.py", "int unrelated = 1;\n", &k, &log),
                 TACK_ERR_COMPILE);
    CHECK(log != NULL);
    tack_kernel_log_free(log);
    remove_cache_dir(dir);
}

TACK_TEST(missing_compiler_is_a_compile_error)
{
    const char *dir = fresh_cache_dir();
    setenv("CC", "/nonexistent/tack-no-cc", 1);
    tack_kernel *k = NULL;
    char *log;
    CHECK_STATUS(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log),
                 TACK_ERR_COMPILE);
    CHECK(log != NULL && strstr(log, "tack-no-cc") != NULL);
    tack_kernel_log_free(log);
    unsetenv("CC");
    remove_cache_dir(dir);
}
