/*
 * test_kernel_alloc.c: tack_kernel_build with the k-th allocation made to fail, for
 * every k until it succeeds, both compiling and loading from the disk cache. Each
 * failure must return TACK_ERR_NO_MEMORY, write no kernel and, once its log is
 * freed, leave no allocation behind. (A built kernel is never unloaded, so success
 * keeps its allocations.)
 */
#define _GNU_SOURCE
#include "internal.h"
#include "kernel_test_util.h"

#include <sys/wait.h>

static void
sweep_build(bool fresh_each_time)
{
    const char *dir = fresh_cache_dir();
    if (!fresh_each_time) {
        /* Populate the disk cache from a child process: in this one the kernel
         * must not be loaded yet, or the in-process table would answer. */
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            tack_kernel *warm;
            char *log;
            tack_status st =
                tack_kernel_build("double", "t.py", double_kernel_source, &warm, &log);
            _exit(st == TACK_OK ? 0 : 1);
        }
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        tack_kernel_stats before;
        tack_kernel_get_stats(&before);
        CHECK_EQ_INT(before.compiles, 0);
    }
    for (long k = 1;; k++) {
        if (fresh_each_time) {
            fresh_cache_dir();
        }
        tack_test_counting_allocator(k);
        tack_kernel *made = NULL;
        char *log = NULL;
        /* A distinct name per round: the in-process table must not answer. */
        char name[32];
        snprintf(name, sizeof name, "double_%ld", k);
        tack_status st =
            tack_kernel_build(name, "t.py", double_kernel_source, &made, &log);
        tack_kernel_log_free(log);
        if (st == TACK_OK) {
            CHECK(made != NULL);
            CHECK(k > 1);
            if (!fresh_each_time) {
                tack_kernel_stats after;
                tack_kernel_get_stats(&after);
                /* The successful round loaded from the disk cache. (A failure while
                 * reading the cache falls back to compiling, which fails too.) */
                CHECK(after.disk_hits >= 1);
            }
            break;
        }
        CHECK_EQ_INT(st, TACK_ERR_NO_MEMORY);
        CHECK(made == NULL);
        CHECK_EQ_INT(tack_test_live_allocations(), 0);
        CHECK(k < 200);
    }
    tack_set_allocator(NULL);
    remove_cache_dir(dir);
}

TACK_TEST(alloc_failure_kernel_build_compiling)
{
    sweep_build(true);
}

TACK_TEST(alloc_failure_kernel_build_from_the_disk_cache)
{
    sweep_build(false);
}
