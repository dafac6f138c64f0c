/*
 * test_kernel_cache.c: the JIT driver and the disk cache: a private directory,
 * reuse across processes, corrupt and foreign entries rebuilt, compile failures
 * reported with the compiler's log and never cached.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>

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
    char got[TACK__PATH_CAP], why[512];
    CHECK(tack__cache_dir(got, sizeof got, why, sizeof why));
    CHECK(strcmp(got, dir) == 0);
    struct stat sb;
    CHECK(stat(dir, &sb) == 0);
    CHECK_EQ_INT(sb.st_mode & 07777, 0700);
    remove_cache_dir(dir);
}

/* A directory Tack did not make keeps its mode (TACK_CACHE_DIR=/tmp must not lock
 * out other users); the cache goes into a private folder inside it. */
static void
check_open_dir_gets_a_private_subfolder(unsigned mode)
{
    const char *dir = fresh_cache_dir();
    CHECK(mkdir(dir, 0700) == 0);
    CHECK(chmod(dir, mode) == 0);
    char got[TACK__PATH_CAP], want[TACK__PATH_CAP], why[512];
    snprintf(want, sizeof want, "%s/tack-%u", dir, (unsigned)geteuid());
    for (int round = 0; round < 2; round++) { /* creates it, then reuses it */
        CHECK(tack__cache_dir(got, sizeof got, why, sizeof why));
        CHECK(strcmp(got, want) == 0);
    }
    struct stat sb;
    CHECK(stat(dir, &sb) == 0);
    CHECK_EQ_INT(sb.st_mode & 07777, mode);
    CHECK(stat(want, &sb) == 0);
    CHECK_EQ_INT(sb.st_mode & 07777, 0700);
    tack_kernel *k;
    char *log;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    char so[TACK__PATH_CAP];
    cache_entry_path(want, ".so", so, sizeof so);
    CHECK(stat(dir, &sb) == 0);
    CHECK_EQ_INT(sb.st_mode & 07777, mode);
    remove_cache_dir(dir);
}

TACK_TEST(shared_tmp_like_cache_dir_keeps_its_mode)
{
    check_open_dir_gets_a_private_subfolder(01777);
}

TACK_TEST(readable_cache_dir_keeps_its_mode)
{
    check_open_dir_gets_a_private_subfolder(0755);
}

TACK_TEST(subfolder_that_is_not_private_is_not_used_nor_changed)
{
    const char *dir = fresh_cache_dir();
    CHECK(mkdir(dir, 0700) == 0);
    CHECK(chmod(dir, 01777) == 0);
    char sub[TACK__PATH_CAP];
    snprintf(sub, sizeof sub, "%s/tack-%u", dir, (unsigned)geteuid());
    CHECK(mkdir(sub, 0700) == 0);
    CHECK(chmod(sub, 0777) == 0); /* anyone could plant an object in it */
    char got[TACK__PATH_CAP], why[512];
    CHECK(!tack__cache_dir(got, sizeof got, why, sizeof why));
    CHECK(strstr(why, sub) != NULL);
    struct stat sb;
    CHECK(stat(sub, &sb) == 0);
    CHECK_EQ_INT(sb.st_mode & 07777, 0777);
    /* Kernels still build, in a private temporary folder, and the user is told. */
    tack_kernel *k;
    char *log;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    check_kernel_runs(k);
    const char *note = tack_kernel_cache_notice();
    CHECK(note != NULL && strstr(note, sub) != NULL);
    CHECK(tack_kernel_cache_notice() == NULL); /* said once */
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
    cache_entry_path(dir, ".so", so, sizeof so);
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
    cache_entry_path(dir, ".so", so, sizeof so);
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
    cache_entry_path(dir, ".meta", meta, sizeof meta);
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
    cache_entry_path(dir, ".so", so, sizeof so);
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
    char got[TACK__PATH_CAP], why[512];
    CHECK(!tack__cache_dir(got, sizeof got, why, sizeof why));
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

TACK_TEST(a_call_to_an_undeclared_function_is_a_compile_error)
{
    const char *dir = fresh_cache_dir();
    tack_kernel *k = NULL;
    char *log = NULL;
    /* The double kernel, plus a call to a helper nothing declares nor defines:
     * refused by the compiler, with its log, not at load time without one. */
    static const char source[] = KERNEL_TEST_PARAMS
        "E int64_t tack_kernel_trips(const void *v, tk_ctx *c) {\n"
        "    (void)c; return tk_missing_helper(((const P *)v)->a0_n[0]);\n"
        "}\n"
        "E void tack_kernel_body(int64_t b, int64_t e, const void *v, tk_ctx *c) {\n"
        "    (void)b; (void)e; (void)v; (void)c;\n"
        "}\n";
    CHECK_STATUS(tack_kernel_build("undeclared", "t.py", source, &k, &log),
                 TACK_ERR_COMPILE);
    CHECK(log != NULL);
    CHECK(strstr(log, "tk_missing_helper") != NULL);
    CHECK(strstr(log, "implicit") != NULL);
    CHECK(k == NULL);
    CHECK_EQ_INT(stats().compiles, 1);
    CHECK_EQ_INT(stats().failures, 1);
    tack_kernel_log_free(log);
    remove_cache_dir(dir);
}

TACK_TEST(object_without_entry_points_is_refused)
{
    const char *dir = fresh_cache_dir();
    tack_kernel *k = NULL;
    char *log;
    CHECK_STATUS(tack_kernel_build("empty", "t.py", "int unrelated = 1;\n", &k, &log),
                 TACK_ERR_COMPILE);
    /* The compiler succeeded: the message names the kernel, there is no log. */
    CHECK(log == NULL);
    CHECK(strstr(tack_last_error(), "'empty'") != NULL);
    remove_cache_dir(dir);
}

TACK_TEST(missing_compiler_is_a_compile_error_said_once)
{
    const char *dir = fresh_cache_dir();
    setenv("CC", "/nonexistent/tack-no-cc", 1);
    tack_kernel *k = NULL;
    char *log;
    CHECK_STATUS(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log),
                 TACK_ERR_COMPILE);
    /* No compiler ran, so there is no log to repeat the message in. */
    CHECK(log == NULL);
    const char *msg = tack_last_error();
    const char *first = strstr(msg, "tack-no-cc");
    CHECK(first != NULL && strstr(first + 1, "tack-no-cc") == NULL);
    unsetenv("CC");
    remove_cache_dir(dir);
}

/* The key of the one entry in dir (its .meta file's name). */
static void
entry_key(const char *dir, char key[33])
{
    char meta[TACK__PATH_CAP];
    cache_entry_path(dir, ".meta", meta, sizeof meta);
    const char *base = strrchr(meta, '/') + 1;
    CHECK(strlen(base) == 32 + strlen(".meta"));
    memcpy(key, base, 32);
    key[32] = '\0';
}

static void
touch_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK(write(fd, "partial", 7) == 7);
    close(fd);
}

TACK_TEST(leftovers_of_a_killed_compile_with_our_pid_do_not_block_the_build)
{
    /* A process killed mid-compile leaves its temporary files behind; in a
     * container the next process often has the same pid (1). */
    const char *dir = fresh_cache_dir();
    build_in_child();
    char key[33];
    entry_key(dir, key);
    remove_cache_dir(dir);
    CHECK(mkdir(dir, 0700) == 0);
    static const char *const exts[] = {".c", ".log", ".so", ".so.meta"};
    for (int serial = 0; serial < 4; serial++) {
        for (size_t e = 0; e < sizeof exts / sizeof exts[0]; e++) {
            char path[TACK__PATH_CAP];
            snprintf(path, sizeof path, "%s/%s.tmp%ld-%d%s", dir, key, (long)getpid(),
                     serial, exts[e]);
            touch_file(path);
        }
    }
    tack_kernel *k;
    char *log = NULL;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    check_kernel_runs(k);
    remove_cache_dir(dir);
}

static bool
exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

TACK_TEST(stale_temporary_files_are_swept_and_fresh_ones_kept)
{
    const char *dir = fresh_cache_dir();
    CHECK(mkdir(dir, 0700) == 0);
    char old_file[TACK__PATH_CAP], old_dir[TACK__PATH_CAP],
        old_inner[TACK__PATH_CAP + 8];
    char fresh_dir[TACK__PATH_CAP], other[TACK__PATH_CAP];
    snprintf(old_file, sizeof old_file, "%s/0123.tmp77-0.c", dir);
    snprintf(old_dir, sizeof old_dir, "%s/4567.tmpAbCdEf", dir);
    snprintf(old_inner, sizeof old_inner, "%s/k.so", old_dir);
    snprintf(fresh_dir, sizeof fresh_dir, "%s/89ab.tmpGhIjKl", dir);
    snprintf(other, sizeof other, "%s/notes.txt", dir);
    touch_file(old_file);
    CHECK(mkdir(old_dir, 0700) == 0);
    touch_file(old_inner);
    CHECK(mkdir(fresh_dir, 0700) == 0); /* another process compiling right now */
    touch_file(other);
    /* Two days old: no compile takes that long. */
    struct timespec two_days[2] = {{time(NULL) - 2 * 86400, 0},
                                   {time(NULL) - 2 * 86400, 0}};
    CHECK(utimensat(AT_FDCWD, old_file, two_days, 0) == 0);
    CHECK(utimensat(AT_FDCWD, old_inner, two_days, 0) == 0);
    CHECK(utimensat(AT_FDCWD, old_dir, two_days, 0) == 0);
    CHECK(utimensat(AT_FDCWD, other, two_days, 0) == 0);
    tack_kernel *k;
    char *log = NULL;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    CHECK(!exists(old_file));
    CHECK(!exists(old_dir));
    CHECK(exists(fresh_dir));
    CHECK(exists(other)); /* not a name Tack makes */
    remove_cache_dir(dir);
}

TACK_TEST(a_failed_compile_leaves_no_files)
{
    const char *dir = fresh_cache_dir();
    tack_kernel *k = NULL;
    char *log;
    CHECK_STATUS(tack_kernel_build("bad", "t.py", "int x = ;\n", &k, &log),
                 TACK_ERR_COMPILE);
    tack_kernel_log_free(log);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            fprintf(stderr, "left behind: %s\n", e->d_name);
            n++;
        }
    }
    closedir(d);
    CHECK_EQ_INT(n, 0);
    remove_cache_dir(dir);
}

/* A $CC that writes each argument it gets on a line of argv_file, then compiles. */
static void
write_recording_cc(const char *tools, const char *argv_file, char *cc, size_t cap)
{
    snprintf(cc, cap, "%s/record-cc", tools);
    FILE *f = fopen(cc, "w");
    CHECK(f != NULL);
    fprintf(f,
            "#!/bin/sh\nfor a in \"$@\"; do printf '%%s\\n' \"$a\" >> '%s'; done\n"
            "exec cc \"$@\"\n",
            argv_file);
    CHECK(fclose(f) == 0);
    CHECK(chmod(cc, 0755) == 0);
}

TACK_TEST(every_word_of_the_compile_command_keys_the_cache)
{
    const char *dir = fresh_cache_dir();
    char tools[] = "/tmp/tack-ctest-cc-XXXXXX";
    CHECK(mkdtemp(tools) != NULL);
    char cc[512], argv_file[512];
    snprintf(argv_file, sizeof argv_file, "%s/argv", tools);
    write_recording_cc(tools, argv_file, cc, sizeof cc);
    setenv("CC", cc, 1);
    tack_kernel *k;
    char *log = NULL;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    const char *words[64];
    int n = tack__jit_key_words(words, 64);
    CHECK(n > 0 && n < 64);
    FILE *f = fopen(argv_file, "r");
    CHECK(f != NULL);
    char line[TACK__PATH_CAP];
    int checked = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strchr(line, '/')) {
            continue; /* the source and object paths: not part of the key */
        }
        bool found = false;
        for (int w = 0; w < n && !found; w++) {
            found = strcmp(words[w], line) == 0;
        }
        if (!found) {
            fprintf(stderr, "'%s' reaches the compiler but not the key\n", line);
        }
        CHECK(found);
        checked++;
    }
    fclose(f);
    CHECK(checked >= 10);
    unsetenv("CC");
    remove_cache_dir(dir);
    remove_cache_dir(tools);
}
