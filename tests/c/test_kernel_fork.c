/*
 * test_kernel_fork.c: the runtime in the child of fork(). A child forked while
 * another thread compiles a kernel, or runs a parallel launch, must still be able to
 * allocate, compile and run a parallel launch of its own (a child of Python's
 * multiprocessing with the fork start method). A regression hangs the child, so
 * every child is waited for with a deadline and killed past it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

#include "internal.h"
#include "kernel_test_util.h"

enum { N = 1 << 18, DEADLINE_S = 30 };

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The exit status of pid, or -1 when it was still running after seconds (then it is
 * killed: a hang fails the test instead of stalling the runner). */
static int
wait_with_deadline(pid_t pid, int seconds)
{
    for (long waited = 0; waited < seconds * 1000L; waited += 20) {
        int status;
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) {
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        sleep_ms(20);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

/* A $CC that creates marker when it starts, then takes seconds before compiling. */
static void
write_slow_cc(const char *dir, char *cc, size_t cap, const char *marker)
{
    snprintf(cc, cap, "%s/slow-cc", dir);
    FILE *f = fopen(cc, "w");
    CHECK(f != NULL);
    fprintf(f, "#!/bin/sh\ntouch '%s'\nsleep 3\nexec cc \"$@\"\n", marker);
    CHECK(fclose(f) == 0);
    CHECK(chmod(cc, 0755) == 0);
}

/* The test kernel with a comment appended: new source, so a new compile. */
static char *
variant_source(const char *tag)
{
    size_t n = sizeof double_kernel_source + strlen(tag) + 16;
    char *s = malloc(n);
    CHECK(s != NULL);
    snprintf(s, n, "%s/* %s */\n", double_kernel_source, tag);
    return s;
}

/* Builds and launches source over N elements; 0 when every value is right. */
static int
build_and_run(const char *source)
{
    tack_kernel *k;
    char *log = NULL;
    if (tack_kernel_build("double", "t.py", source, &k, &log) != TACK_OK) {
        fprintf(stderr, "build failed: %s\n%s\n", tack_last_error(), log ? log : "");
        return 1;
    }
    tack_device *cpu;
    tack_array *arr;
    int64_t shape[1] = {N};
    if (tack_device_open("cpu", 0, NULL, &cpu) != TACK_OK ||
        tack_array_empty(cpu, TACK_FLOAT64, 1, shape, 0, &arr) != TACK_OK) {
        return 2;
    }
    double *out = tack_array_data(arr);
    tack_kernel_arg args[2] = {{out, shape, 0, 0}, {NULL, NULL, -1, 0}};
    if (tack_kernel_launch(k, args) != TACK_OK) {
        return 3;
    }
    for (int64_t i = 0; i < N; i++) {
        if (out[i] != 2.0 * (double)i) {
            return 4;
        }
    }
    tack_array_release(arr);
    tack_device_release(cpu);
    return 0;
}

static uint64_t
parallel_launches(void)
{
    tack_kernel_stats s;
    tack_kernel_get_stats(&s);
    return s.parallel_launches;
}

/* In the child: a new compile and two parallel launches (the parent's kernel and
 * the new one), on a pool the child has to start again. */
static int
child_work(void)
{
    setenv("CC", "cc", 1);
    uint64_t before = parallel_launches();
    char *fresh = variant_source("child");
    int rc = build_and_run(double_kernel_source);
    if (rc == 0) {
        rc = build_and_run(fresh);
    }
    free(fresh);
    if (rc == 0 && parallel_launches() < before + 2) {
        rc = 5;
    }
    return rc;
}

static void *
slow_build(void *source)
{
    tack_kernel *k;
    char *log = NULL;
    tack_status st = tack_kernel_build("slow", "t.py", source, &k, &log);
    tack_kernel_log_free(log);
    return (void *)(intptr_t)st;
}

TACK_TEST(child_forked_during_a_compile_compiles_and_launches)
{
    setenv("TACK_NUM_THREADS", "4", 1);
    const char *cache = fresh_cache_dir();
    char tools[] = "/tmp/tack-ctest-cc-XXXXXX";
    CHECK(mkdtemp(tools) != NULL);
    char cc[512], marker[512];
    snprintf(marker, sizeof marker, "%s/started", tools);
    write_slow_cc(tools, cc, sizeof cc, marker);

    /* The pool is running in the parent before the fork. */
    CHECK_EQ_INT(build_and_run(double_kernel_source), 0);
    CHECK(parallel_launches() >= 1);

    setenv("CC", cc, 1);
    char *slow_source = variant_source("slow");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, slow_build, slow_source) == 0);
    for (int k = 0; k < 30000 / 20 && access(marker, F_OK) != 0; k++) {
        sleep_ms(20);
    }
    CHECK(access(marker, F_OK) == 0); /* the compiler runs: the build holds its lock */

    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        _exit(child_work());
    }
    CHECK_EQ_INT(wait_with_deadline(pid, DEADLINE_S), 0);
    void *st;
    CHECK(pthread_join(t, &st) == 0);
    CHECK_EQ_INT((int)(intptr_t)st, TACK_OK);
    free(slow_source);
    remove_cache_dir(cache);
    remove_cache_dir(tools);
}

static atomic_bool stop;
/* Static, not on the launching thread's stack: a child has no such thread, and its
 * leak check must still see the array reachable. */
static double loop_out[N];

static void *
launch_loop(void *kernel)
{
    int64_t shape[1] = {N};
    tack_kernel_arg args[2] = {{loop_out, shape, 0, 0}, {NULL, NULL, -1, 0}};
    while (!atomic_load(&stop)) {
        CHECK_OK(tack_kernel_launch(kernel, args));
    }
    return NULL;
}

TACK_TEST(child_forked_during_parallel_launches_runs_its_own)
{
    setenv("TACK_NUM_THREADS", "4", 1);
    const char *cache = fresh_cache_dir();
    tack_kernel *k;
    char *log = NULL;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, launch_loop, k) == 0);
    for (int round = 0; round < 10; round++) {
        sleep_ms(5);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            _exit(child_work());
        }
        CHECK_EQ_INT(wait_with_deadline(pid, DEADLINE_S), 0);
    }
    atomic_store(&stop, true);
    CHECK(pthread_join(t, NULL) == 0);
    remove_cache_dir(cache);
}
