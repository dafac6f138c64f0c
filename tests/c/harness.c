/*
 * harness.c: the runner. With no argument it forks one child per test and prints
 * each result, then "N passed, N failed". With a test name it runs that test in the
 * current process (for a debugger).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MAX_TESTS 512

static struct {
    const char *name;
    tack_test_fn fn;
} tests[MAX_TESTS];
static int ntests;

void
tack_test_register(const char *name, tack_test_fn fn)
{
    if (ntests < MAX_TESTS) {
        tests[ntests].name = name;
        tests[ntests].fn = fn;
        ntests++;
    }
}

void
tack_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    _exit(1);
}

static atomic_long live, count, fail_at;

static void *
counting_alloc(void *ctx, size_t nbytes, size_t alignment)
{
    (void)ctx;
    long n = atomic_fetch_add(&count, 1) + 1;
    long f = atomic_load(&fail_at);
    if (f && n >= f) {
        return NULL;
    }
    size_t rounded = (nbytes + alignment - 1) & ~(alignment - 1);
    void *p = aligned_alloc(alignment, rounded);
    if (p) {
        atomic_fetch_add(&live, 1);
    }
    return p;
}

static void
counting_free(void *ctx, void *ptr)
{
    (void)ctx;
    atomic_fetch_sub(&live, 1);
    free(ptr);
}

void
tack_test_counting_allocator(long k)
{
    static const tack_allocator counting = {counting_alloc, counting_free, NULL};
    atomic_store(&live, 0);
    atomic_store(&count, 0);
    atomic_store(&fail_at, k);
    tack_set_allocator(&counting);
}

long
tack_test_live_allocations(void)
{
    return atomic_load(&live);
}

long
tack_test_alloc_sweep(tack_status (*attempt)(void *ctx), void *ctx)
{
    long k = 1;
    for (;; k++) {
        tack_test_counting_allocator(k);
        tack_status st = attempt(ctx);
        if (st == TACK_OK) {
            break;
        }
        CHECK_EQ_INT(st, TACK_ERR_NO_MEMORY);
        CHECK_EQ_INT(tack_test_live_allocations(), 0);
        CHECK(k < 100);
    }
    tack_set_allocator(NULL);
    CHECK(k > 1); /* at least one failure was exercised */
    return k;
}

long
tack_test_allocation_count(void)
{
    return atomic_load(&count);
}

static int
run_one(int k)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 0;
    }
    if (pid == 0) {
        tests[k].fn();
        fflush(stdout);
        /* exit, not _exit: LeakSanitizer checks for leaks in its exit handler. */
        exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) {
        perror("waitpid");
        return 0;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return 1;
    }
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "  %s: killed by signal %d\n", tests[k].name, WTERMSIG(status));
    }
    return 0;
}

/* TACK_TEST_SHARD=i/n runs the tests k with k % n == i, so that slow runs (make
 * valgrind) can go side by side; unset runs them all. Returns false for a value not
 * of that form, which must not quietly run every test twice. */
static bool
shard_of_environment(int *index, int *count)
{
    *index = 0;
    *count = 1;
    const char *spec = getenv("TACK_TEST_SHARD");
    if (!spec) {
        return true;
    }
    int i = 0, n = 0;
    char tail = 0;
    if (sscanf(spec, "%d/%d%c", &i, &n, &tail) != 2 || n < 1 || i < 0 || i >= n) {
        fprintf(stderr, "TACK_TEST_SHARD=%s: expected i/n with 0 <= i < n\n", spec);
        return false;
    }
    *index = i;
    *count = n;
    return true;
}

int
main(int argc, char **argv)
{
    if (argc > 1) {
        for (int k = 0; k < ntests; k++) {
            if (strcmp(tests[k].name, argv[1]) == 0) {
                tests[k].fn();
                printf("1 passed, 0 failed\n");
                return 0;
            }
        }
        fprintf(stderr, "no test named %s\n", argv[1]);
        return 2;
    }
    int shard = 0, shards = 1;
    if (!shard_of_environment(&shard, &shards)) {
        return 2;
    }
    int passed = 0, failed = 0;
    for (int k = shard; k < ntests; k += shards) {
        if (run_one(k)) {
            passed++;
            printf("ok   %s\n", tests[k].name);
        }
        else {
            failed++;
            printf("FAIL %s\n", tests[k].name);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
