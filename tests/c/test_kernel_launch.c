/*
 * test_kernel_launch.c: the checks before a launch (devices, read-only arrays) and
 * the launch itself (serial and parallel, debug-mode failures).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include "internal.h"
#include "kernel_test_util.h"

/* Under valgrind every thread takes turns on one instrumented core, tens of times
 * slower: a tiny launch there really can cost more than the pool's threshold, so
 * check_tiny_launches_stay_serial's claim is about timing valgrind does not keep.
 * The launches still run (memory is what valgrind checks); the plain and ASan
 * runs check the claim. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define TIMING_IS_REAL (!RUNNING_ON_VALGRIND)
#endif
#endif
#ifndef TIMING_IS_REAL
#define TIMING_IS_REAL 1
#endif

static tack_kernel *
build_double(void)
{
    fresh_cache_dir();
    tack_kernel *k;
    char *log;
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &k, &log));
    return k;
}

/* Whether the last message speaks C: no Python spelling (a binding adds its own
 * advice from the remedy). */
static void
check_message_speaks_c(tack_remedy remedy, const char *c_advice)
{
    const char *msg = tack_last_error();
    CHECK_EQ_INT(tack_last_error_remedy(), remedy);
    CHECK(strstr(msg, c_advice) != NULL);
    CHECK(strstr(tack_last_error_problem(), c_advice) == NULL);
    CHECK(strstr(msg, "tack.") == NULL);
    CHECK(strstr(msg, ".to_device(") == NULL);
    CHECK(strstr(msg, "=True") == NULL);
}

TACK_TEST(read_only_array_bound_to_a_stored_parameter_is_refused)
{
    tack_device *cpu;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &cpu));
    int64_t shape[1] = {4};
    tack_array *a, *ro;
    CHECK_OK(tack_array_zeros(cpu, TACK_FLOAT32, 1, shape, TACK_BUFFER_WRITABLE, &a));
    CHECK_OK(tack_array_readonly_view(a, &ro));
    const char *names[2] = {"src", "out"};
    const tack_array *arrays[2] = {ro, a};
    bool stored[2] = {false, true};
    CHECK_OK(tack_kernel_check_arrays("k", 2, arrays, names, stored));
    arrays[1] = ro;
    CHECK_STATUS(tack_kernel_check_arrays("k", 2, arrays, names, stored),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK(strstr(tack_last_error(), "'k'") != NULL);
    CHECK(strstr(tack_last_error(), "'out'") != NULL);
    check_message_speaks_c(TACK_REMEDY_WRITABLE_COPY, "tack_array_copyto");
    CHECK_EQ_INT(tack_status_kind(TACK_ERR_INVALID_ARGUMENT), TACK_KIND_VALUE);
    /* Scalars (NULL) are skipped. */
    arrays[1] = NULL;
    CHECK_OK(tack_kernel_check_arrays("k", 2, arrays, names, stored));
    tack_array_release(ro);
    tack_array_release(a);
    tack_device_release(cpu);
}

/* The checks read nparams entries of every table: a count outside 0 to
 * TACK_KERNEL_MAX_PARAMS is refused before any table is read (here the tables are
 * NULL, which an accepted count of 0 also allows). */
TACK_TEST(the_checks_refuse_a_parameter_count_out_of_range)
{
    const int counts[2] = {-1, TACK_KERNEL_MAX_PARAMS + 1};
    for (int c = 0; c < 2; c++) {
        CHECK_STATUS(tack_kernel_check_arrays("k", counts[c], NULL, NULL, NULL),
                     TACK_ERR_INVALID_ARGUMENT);
        CHECK(strstr(tack_last_error(), "kernel 'k'") != NULL);
        CHECK(strstr(tack_last_error(), "a kernel has 0 to 64") != NULL);
        CHECK_STATUS(
            tack_kernel_check_read_first("k", counts[c], NULL, NULL, NULL, NULL),
            TACK_ERR_INVALID_ARGUMENT);
        CHECK(strstr(tack_last_error(), "a kernel has 0 to 64") != NULL);
    }
    CHECK_OK(tack_kernel_check_arrays("k", 0, NULL, NULL, NULL));
    CHECK_OK(tack_kernel_check_read_first("k", 0, NULL, NULL, NULL, NULL));
}

/* Checks out[i] == 2 i over n elements (what the double kernels store). */
static void
check_doubled(const double *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (out[i] != 2.0 * (double)i) {
            CHECK_EQ_DBL(out[i], 2.0 * (double)i);
        }
    }
}

/* Launches k on 16 elements: after `settle` launches, every launch runs serially
 * (its cost is known by then, however disturbed the earlier measurements were). */
static void
check_tiny_launches_stay_serial(tack_kernel *k, tack_kernel_arg *args, int64_t *shape,
                                int settle)
{
    shape[0] = 16;
    for (int round = 0; round < settle; round++) {
        CHECK_OK(tack_kernel_launch(k, args));
    }
    tack_kernel_stats s;
    tack_kernel_get_stats(&s);
    uint64_t serial_before = s.serial_launches;
    for (int round = 0; round < 4; round++) {
        CHECK_OK(tack_kernel_launch(k, args));
    }
    tack_kernel_get_stats(&s);
    if (TIMING_IS_REAL) {
        CHECK_EQ_INT(s.serial_launches, serial_before + 4);
    }
}

TACK_TEST(launch_serial_and_parallel_give_the_same_result)
{
    setenv("TACK_NUM_THREADS", "4", 1);
    tack_kernel *k = build_double();
    enum { N = 1 << 20 };
    double *out = calloc(N, sizeof *out);
    CHECK(out != NULL);
    int64_t shape[1] = {N};
    tack_kernel_arg args[2] = {{out, shape, 0, 0}, {NULL, NULL, -1, 0}};
    for (int round = 0; round < 3; round++) {
        CHECK_OK(tack_kernel_launch(k, args));
    }
    check_doubled(out, N);
    tack_kernel_stats s;
    tack_kernel_get_stats(&s);
    CHECK(s.parallel_launches >= 1);
    /* Tiny launches stay on the calling thread once the cost is known: at the
     * latest after two of them, even when every big launch above was disturbed. */
    check_tiny_launches_stay_serial(k, args, shape, 2);
    free(out);
}

/* The double kernel, but the trip range that the thread named by slow_thread runs
 * first sleeps for 100 ms: a calling thread the OS deschedules in the middle of a
 * parallel launch. */
static const char slow_caller_source[] =
    "#define _POSIX_C_SOURCE 200809L\n" KERNEL_TEST_PARAMS
    "#include <pthread.h>\n"
    "#include <time.h>\n"
    "E pthread_t slow_thread; E int slow_pending;\n"
    "E int64_t\n"
    "tack_kernel_trips(const void *v, tk_ctx *c) { (void)c; return ((const P "
    "*)v)->a0_n[0]; }\n"
    "E void\n"
    "tack_kernel_body(int64_t b, int64_t e, const void *v, tk_ctx *c) {\n"
    "    const P *p = v; double *o = p->a0; (void)c;\n"
    "    if (__atomic_load_n(&slow_pending, __ATOMIC_ACQUIRE) &&\n"
    "        pthread_equal(pthread_self(), slow_thread)) {\n"
    "        __atomic_store_n(&slow_pending, 0, __ATOMIC_RELEASE);\n"
    "        struct timespec ts = {0, 100000000};\n"
    "        nanosleep(&ts, 0);\n"
    "    }\n"
    "    for (int64_t i = b; i < e; i++) { o[i] = 2.0 * (double)i; }\n"
    "}\n";

TACK_TEST(a_descheduled_caller_does_not_send_tiny_launches_to_the_pool)
{
    setenv("TACK_NUM_THREADS", "4", 1);
    fresh_cache_dir();
    tack_kernel *k;
    char *log = NULL;
    CHECK_OK(tack_kernel_build("slow", "t.py", slow_caller_source, &k, &log));
    void *handle = ((tack__cpu_kernel *)k->impl)->handle;
    pthread_t *slow_thread = dlsym(handle, "slow_thread");
    int *slow_pending = dlsym(handle, "slow_pending");
    CHECK(slow_thread != NULL && slow_pending != NULL);
    enum { N = 1 << 20 };
    double *out = calloc(N, sizeof *out);
    CHECK(out != NULL);
    int64_t shape[1] = {N};
    tack_kernel_arg args[2] = {{out, shape, 0, 0}, {NULL, NULL, -1, 0}};
    tack_kernel_stats s;
    tack_kernel_get_stats(&s);
    uint64_t parallel_before = s.parallel_launches;
    /* The first launch, whose cost is still unknown, goes to the pool; its calling
     * thread stalls in its first range while the workers do the rest. */
    *slow_thread = pthread_self();
    __atomic_store_n(slow_pending, 1, __ATOMIC_RELEASE);
    CHECK_OK(tack_kernel_launch(k, args));
    CHECK_OK(tack_kernel_launch(k, args));
    tack_kernel_get_stats(&s);
    CHECK(s.parallel_launches >= parallel_before + 1);
    check_doubled(out, N);
    /* The stall says nothing of the kernel's cost: tiny launches run serially
     * within a few launches, and then stay there. */
    check_tiny_launches_stay_serial(k, args, shape, 3);
    free(out);
}

/* The double kernel, each trip busy for spin_ns nanoseconds (0: none). */
static const char dear_source[] =
    "#define _POSIX_C_SOURCE 200809L\n" KERNEL_TEST_PARAMS
    "#include <time.h>\n"
    "E long spin_ns;\n"
    "static long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);\n"
    "    return t.tv_sec * 1000000000L + t.tv_nsec; }\n"
    "E int64_t\n"
    "tack_kernel_trips(const void *v, tk_ctx *c) { (void)c; return ((const P "
    "*)v)->a0_n[0]; }\n"
    "E void\n"
    "tack_kernel_body(int64_t b, int64_t e, const void *v, tk_ctx *c) {\n"
    "    const P *p = v; double *o = p->a0; (void)c;\n"
    "    long spin = __atomic_load_n(&spin_ns, __ATOMIC_RELAXED);\n"
    "    for (int64_t i = b; i < e; i++) {\n"
    "        for (long t0 = spin ? now() : 0; spin && now() - t0 < spin;) {}\n"
    "        o[i] = 2.0 * (double)i;\n"
    "    }\n"
    "}\n";

TACK_TEST(tiny_launches_are_timed_by_sample_and_dearer_trips_still_reach_the_pool)
{
    setenv("TACK_NUM_THREADS", "2", 1);
    fresh_cache_dir();
    if (tack_kernel_num_threads() < 2) {
        return; /* one thread: nothing is timed, nothing goes to the pool */
    }
    tack_kernel *k;
    char *log = NULL;
    CHECK_OK(tack_kernel_build("dear", "t.py", dear_source, &k, &log));
    tack__cpu_kernel *impl = k->impl;
    long *spin_ns = dlsym(impl->handle, "spin_ns");
    CHECK(spin_ns != NULL);
    double out[16];
    int64_t shape[1] = {16};
    tack_kernel_arg args[2] = {{out, shape, 0, 0}, {NULL, NULL, -1, 0}};
    /* Cheap trips: once the cost is known, most launches read no clock. */
    for (int round = 0; round < 200; round++) {
        CHECK_OK(tack_kernel_launch(k, args));
    }
    check_doubled(out, 16);
    if (!TIMING_IS_REAL) {
        return;
    }
    CHECK(atomic_load(&impl->untimed) >= 100);
    /* Trips of 5 us: 16 of them are 80 us, past the pool's threshold. The sampled
     * launches raise the estimate until one goes to the pool. */
    __atomic_store_n(spin_ns, 5000L, __ATOMIC_RELAXED);
    tack_kernel_stats s;
    tack_kernel_get_stats(&s);
    uint64_t parallel_before = s.parallel_launches;
    for (int round = 0; round < 64 * 80 && s.parallel_launches == parallel_before;
         round++) {
        CHECK_OK(tack_kernel_launch(k, args));
        tack_kernel_get_stats(&s);
    }
    CHECK(s.parallel_launches > parallel_before);
    check_doubled(out, 16);
}

/* A caller's lock that counts how often a launch dropped it, and checks each drop
 * is taken back before the launch returns. */
typedef struct {
    int released, reacquired;
} counting_lock;

static void
count_release(void *ctx)
{
    counting_lock *c = ctx;
    CHECK_EQ_INT(c->released, c->reacquired); /* never dropped twice */
    c->released++;
}

static void
count_reacquire(void *ctx)
{
    counting_lock *c = ctx;
    c->reacquired++;
    CHECK_EQ_INT(c->released, c->reacquired);
}

TACK_TEST(the_callers_lock_is_kept_over_short_launches_and_dropped_over_long_ones)
{
    setenv("TACK_NUM_THREADS", "2", 1);
    tack_kernel *k = build_double();
    enum { N = 1 << 20 };
    double *out = calloc(N, sizeof *out);
    CHECK(out != NULL);
    int64_t shape[1] = {N};
    tack_kernel_arg args[2] = {{out, shape, 0, 0}, {NULL, NULL, -1, 0}};
    counting_lock c = {0, 0};
    tack_kernel_lock lock = {count_release, count_reacquire, &c};
    tack_kernel_set_caller_lock(&lock);
    /* A big launch: dropped, on the pool or not. */
    CHECK_OK(tack_kernel_launch(k, args));
    CHECK_EQ_INT(c.released, 1);
    CHECK_EQ_INT(c.reacquired, 1);
    check_doubled(out, N);
    /* Tiny launches: once the estimate knows them short, the lock stays held. */
    shape[0] = 16;
    for (int round = 0; round < 8; round++) {
        CHECK_OK(tack_kernel_launch(k, args));
    }
    int settled = c.released;
    for (int round = 0; round < 16; round++) {
        CHECK_OK(tack_kernel_launch(k, args));
    }
    CHECK_EQ_INT(c.reacquired, c.released);
    if (TIMING_IS_REAL) {
        CHECK_EQ_INT(c.released, settled);
    }
    /* Big again: the first one runs its trip count's setup with the lock held (the
     * last launch was short), and drops the lock before its trips. */
    shape[0] = N;
    int before_big = c.released;
    CHECK_OK(tack_kernel_launch(k, args));
    CHECK_EQ_INT(c.released, before_big + 1);
    CHECK_EQ_INT(c.reacquired, c.released);
    /* A failed launch takes the lock back too. */
    args[1].i = 37;
    CHECK_STATUS(tack_kernel_launch(k, args), TACK_ERR_INDEX);
    CHECK_EQ_INT(c.reacquired, c.released);
    tack_kernel_set_caller_lock(NULL);
    args[1].i = -1;
    int before = c.released;
    CHECK_OK(tack_kernel_launch(k, args));
    CHECK_EQ_INT(c.released, before);
    free(out);
}

TACK_TEST(debug_failure_stops_the_launch_with_index_error)
{
    setenv("TACK_NUM_THREADS", "2", 1);
    tack_kernel *k = build_double();
    double out[100];
    int64_t shape[1] = {100};
    tack_kernel_arg args[2] = {{out, shape, 0, 0}, {NULL, NULL, 37, 0}};
    CHECK_STATUS(tack_kernel_launch(k, args), TACK_ERR_INDEX);
    CHECK(strstr(tack_last_error(), "1037") != NULL);
    CHECK(strstr(tack_last_error(), "'out'") != NULL);
    CHECK(strstr(tack_last_error(), "line 7") != NULL);
    /* The next launch starts clean. */
    args[1].i = -1;
    CHECK_OK(tack_kernel_launch(k, args));
}

static tack_array *
array_on(tack_device *dev, double *memory)
{
    tack_buffer *buf;
    CHECK_OK(tack_buffer_wrap(dev, memory, 4 * sizeof(double), TACK_BUFFER_WRITABLE,
                              NULL, NULL, &buf));
    int64_t shape[1] = {4};
    tack_array *a;
    CHECK_OK(tack_array_from_buffer(buf, TACK_FLOAT64, 1, shape, true, &a));
    tack_buffer_release(buf);
    return a;
}

TACK_TEST(arrays_of_different_memory_domains_or_a_foreign_device_are_refused)
{
    static double m1[4], m2[4], m3[4];
    tack_device *cpu;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &cpu));
    tack_array *a = array_on(cpu, m1);
    tack_array *b = array_on(fake_device(&tack__backend_cpu, 7), m2);
    /* a backend that runs no kernels (a table from before the kernel slots) */
    static const tack_backend no_kernels = {
        .size = offsetof(tack_backend, kernel_build),
        .name = "nokernels",
        .dlpack_device_type = 99,
    };
    tack_array *g = array_on(fake_device(&no_kernels, 1), m3);
    const char *names[2] = {"x", "y"};
    bool stored[2] = {false, true};
    const tack_array *same[2] = {a, a};
    CHECK_OK(tack_kernel_check_arrays("k", 2, same, names, stored));
    const tack_array *mixed[2] = {a, b};
    CHECK_STATUS(tack_kernel_check_arrays("k", 2, mixed, names, stored),
                 TACK_ERR_DEVICE_MISMATCH);
    /* both parameters, each with its device */
    CHECK(strstr(tack_last_error(), "'x' (on ") != NULL);
    CHECK(strstr(tack_last_error(), "'y' (on ") != NULL);
    CHECK_EQ_INT(tack_status_kind(TACK_ERR_DEVICE_MISMATCH), TACK_KIND_VALUE);
    const tack_array *gpu[2] = {g, a};
    CHECK_STATUS(tack_kernel_check_arrays("k", 2, gpu, names, stored),
                 TACK_ERR_DEVICE_MISMATCH);
    CHECK(strstr(tack_last_error(), "nokernels") != NULL);
    check_message_speaks_c(TACK_REMEDY_TO_CPU, "tack_array_to_device");
    tack_array_release(a);
    tack_array_release(b);
    tack_array_release(g);
}

TACK_TEST(args_disjoint_only_when_no_stored_array_overlaps_another)
{
    static double m[8];
    tack_device *cpu;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &cpu));
    tack_buffer *buf;
    CHECK_OK(
        tack_buffer_wrap(cpu, m, sizeof m, TACK_BUFFER_WRITABLE, NULL, NULL, &buf));
    int64_t four[1] = {4}, zero[1] = {0};
    tack_array *whole, *head, *empty;
    int64_t eight[1] = {8};
    CHECK_OK(tack_array_from_buffer(buf, TACK_FLOAT64, 1, eight, true, &whole));
    CHECK_OK(tack_array_from_buffer(buf, TACK_FLOAT64, 1, four, true, &head));
    CHECK_OK(tack_array_from_buffer(buf, TACK_FLOAT64, 1, zero, true, &empty));
    tack_buffer_release(buf);
    tack_array *other = array_on(cpu, (double[4]){0});

    bool stored[3] = {false, true, false};
    const tack_array *apart[3] = {whole, other, NULL};
    CHECK(tack_kernel_args_disjoint(3, apart, stored));
    const tack_array *twice[3] = {other, other, NULL};
    CHECK(!tack_kernel_args_disjoint(3, twice, stored));
    const tack_array *nested[3] = {whole, head, NULL};
    CHECK(!tack_kernel_args_disjoint(3, nested, stored));
    /* Only-read arrays may overlap each other; an empty array overlaps nothing. */
    bool none[3] = {false, false, false};
    CHECK(tack_kernel_args_disjoint(3, nested, none));
    const tack_array *with_empty[3] = {whole, empty, NULL};
    CHECK(tack_kernel_args_disjoint(3, with_empty, stored));

    /* An array read before the parallel loop may not overlap a stored one; two
     * stored arrays, or a stored and a merely read one, may (tack_kernel_args_
     * disjoint turns off the restrict body for those). */
    const char *names[3] = {"w", "out", "n"};
    bool first[3] = {true, false, false};
    CHECK_STATUS(tack_kernel_check_read_first("k", 3, nested, names, first, stored),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK(strstr(tack_last_error(), "reads 'w' before its parallel loop") != NULL);
    CHECK_OK(tack_kernel_check_read_first("k", 3, apart, names, first, stored));
    CHECK_OK(tack_kernel_check_read_first("k", 3, nested, names, none, stored));
    CHECK_OK(tack_kernel_check_read_first("k", 3, with_empty, names, first, stored));
    tack_array_release(whole);
    tack_array_release(head);
    tack_array_release(empty);
    tack_array_release(other);
    tack_device_release(cpu);
}

/* double_kernel_source plus a restrict body that writes 3 * i, so a test can see
 * which body ran. */
static const char restrict_tail[] =
    "E void\n"
    "tack_kernel_body_restrict(int64_t b, int64_t e, const void *v, tk_ctx *c) {\n"
    "    (void)c; double *o = ((const P *)v)->a0;\n"
    "    for (int64_t i = b; i < e; i++) o[i] = 3.0 * (double)i;\n"
    "}\n";

TACK_TEST(noalias_flag_runs_the_restrict_body_when_there_is_one)
{
    fresh_cache_dir();
    char source[sizeof double_kernel_source + sizeof restrict_tail];
    snprintf(source, sizeof source, "%s%s", double_kernel_source, restrict_tail);
    tack_kernel *k, *plain;
    char *log;
    CHECK_OK(tack_kernel_build("both", "t.py", source, &k, &log));
    CHECK_OK(tack_kernel_build("double", "t.py", double_kernel_source, &plain, &log));
    double out[4];
    int64_t shape[1] = {4};
    tack_kernel_arg args[2] = {{out, shape, 0, 0}, {NULL, NULL, -1, 0}};
    tack_kernel_stats s0, s1;
    tack_kernel_get_stats(&s0);
    CHECK_OK(tack_kernel_launch_ex(k, args, TACK_KERNEL_NOALIAS, NULL));
    CHECK_EQ_DBL(out[3], 9.0);
    tack_kernel_get_stats(&s1);
    CHECK_EQ_INT(s1.restrict_launches, s0.restrict_launches + 1);
    CHECK_OK(tack_kernel_launch_ex(k, args, 0, NULL));
    CHECK_EQ_DBL(out[3], 6.0);
    /* No restrict body: the flag changes nothing. */
    CHECK_OK(tack_kernel_launch_ex(plain, args, TACK_KERNEL_NOALIAS, NULL));
    CHECK_EQ_DBL(out[3], 6.0);
    tack_kernel_get_stats(&s0);
    CHECK_EQ_INT(s0.restrict_launches, s1.restrict_launches);
}

TACK_TEST(specialization_key_words_come_from_the_runtime)
{
    static double m1[4], m2[4];
    tack_device *cpu;
    CHECK_OK(tack_device_open("cpu", 0, NULL, &cpu));
    tack_array *a = array_on(cpu, m1);
    tack_array *g = array_on(fake_device(&tack__backend_cuda, 3), m2);
    CHECK_EQ_INT(tack_kernel_key_array(a),
                 TACK_KERNEL_KEY_ARRAY | (uint32_t)TACK_FLOAT64 << 8 | 1u);
    uint32_t tail[2];
    const tack_array *none[2] = {NULL, NULL};
    tack_kernel_key_tail(2, none, true, tail);
    CHECK_EQ_INT(tail[0], 1);
    CHECK_EQ_INT(tail[1], kDLCPU);
    const tack_array *on_cpu[2] = {NULL, a};
    tack_kernel_key_tail(2, on_cpu, false, tail);
    CHECK_EQ_INT(tail[0], 0);
    CHECK_EQ_INT(tail[1], kDLCPU);
    const tack_array *on_gpu[2] = {g, NULL};
    tack_kernel_key_tail(2, on_gpu, false, tail);
    CHECK_EQ_INT(tail[1], kDLCUDA);
    tack_array_release(a);
    tack_array_release(g);
    tack_device_release(cpu);
}

/* The double kernel's parameters with a stored table that says it stores to neither,
 * and a body that does nothing. */
static const char declared_kernel_source[] = KERNEL_TEST_PARAMS
    "E const unsigned char tack_kernel_param_stored[] = {0, 0};\n"
    "E int64_t tack_kernel_trips(const void *v, tk_ctx *c) { (void)v; (void)c;"
    " return -1; }\n"
    "E void tack_kernel_body(int64_t b, int64_t e, const void *v, tk_ctx *c) {\n"
    "    (void)b; (void)e; (void)v; (void)c; }\n";

TACK_TEST(a_build_is_checked_against_the_call_it_would_run)
{
    tack_kernel *k = build_double(); /* out (float64, 1-d), n (int); no stored table */
    const char *names[2] = {"out", "n"};
    uint32_t key[4] = {TACK_KERNEL_KEY_ARRAY | (uint32_t)TACK_FLOAT64 << 8 | 1u,
                       TACK_KERNEL_KEY_INT, 1, kDLCPU}; /* debug 1: not compared */
    bool stored[2] = {true, false}; /* without a table: every array is stored */
    CHECK_OK(tack_kernel_check_build(k, "double", 2, names, key, stored));
    bool hidden[2] = {false, false};
    CHECK_STATUS(tack_kernel_check_build(k, "double", 2, names, key, hidden),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK(strstr(tack_last_error(), "'double'") && strstr(tack_last_error(), "'out'"));
    bool claimed[2] = {true, true};
    CHECK_STATUS(tack_kernel_check_build(k, "double", 2, names, key, claimed),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK(strstr(tack_last_error(), "'n'") != NULL);
    uint32_t wide[4] = {TACK_KERNEL_KEY_ARRAY | (uint32_t)TACK_INT8 << 8 | 3u,
                        TACK_KERNEL_KEY_INT, 0, kDLCPU};
    CHECK_STATUS(tack_kernel_check_build(k, "double", 2, names, wide, stored),
                 TACK_ERR_BAD_TYPE);
    CHECK(strstr(tack_last_error(), "a float64 array of 1 dimension") &&
          strstr(tack_last_error(), "an int8 array of 3 dimensions"));
    uint32_t scalar[4] = {key[0], TACK_KERNEL_KEY_FLOAT, 0, kDLCPU};
    CHECK_STATUS(tack_kernel_check_build(k, "double", 2, names, scalar, stored),
                 TACK_ERR_BAD_TYPE);
    CHECK(strstr(tack_last_error(), "'n'") && strstr(tack_last_error(), "a float"));
    uint32_t gpu[4] = {key[0], key[1], 0, kDLCUDA};
    CHECK_STATUS(tack_kernel_check_build(k, "double", 2, names, gpu, stored),
                 TACK_ERR_BAD_TYPE);
    CHECK_STATUS(tack_kernel_check_build(k, "double", 1, names, key, stored),
                 TACK_ERR_BAD_TYPE);
    CHECK_STATUS(tack_kernel_check_build(NULL, "double", 2, names, key, stored),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tack_kernel_check_build(k, "double", 2, NULL, key, stored),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tack_kernel_check_build(k, "double", 2, names, NULL, stored),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tack_kernel_check_build(k, "double", 2, names, key, NULL),
                 TACK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tack_kernel_check_build(k, "double", 65, names, key, stored),
                 TACK_ERR_INVALID_ARGUMENT);
    /* A build that says what it stores to is held to its own table. */
    tack_kernel *declared;
    char *log;
    CHECK_OK(
        tack_kernel_build("declared", "t.py", declared_kernel_source, &declared, &log));
    CHECK_OK(tack_kernel_check_build(declared, "declared", 2, names, key, hidden));
    CHECK_STATUS(tack_kernel_check_build(declared, "declared", 2, names, key, stored),
                 TACK_ERR_INVALID_ARGUMENT);
}

/* A reduction in the generated-code ABI: the sum of a float64 array, one partial per
 * chunk, folded by finish. */
static const char sum_kernel_source[] =
    "#include <stdint.h>\n"
    "typedef struct tk_ctx { int failed; void (*fail)(struct tk_ctx *, int, int, int,\n"
    "    int64_t, int64_t, const char *); char *partials; int64_t chunk, result_i;\n"
    "    double result_f; } tk_ctx;\n"
    "typedef struct { const double *a0; int64_t a0_n[1]; } P;\n"
    "#define E __attribute__((visibility(\"default\")))\n"
    "E const int tack_kernel_abi = 3;\n"
    "E const int tack_kernel_nparams = 1;\n"
    "E const uint32_t tack_kernel_param_key[] = {0x10b01u};\n"
    "E const int tack_kernel_result_kind = 2;\n"
    "E const int64_t tack_kernel_partial_size = sizeof(double);\n"
    "E int64_t tack_kernel_trips(const void *v, tk_ctx *c) {\n"
    "    (void)c; return ((const P *)v)->a0_n[0]; }\n"
    "E void tack_kernel_body(int64_t b, int64_t e, const void *v, tk_ctx *c) {\n"
    "    const double *x = ((const P *)v)->a0; double s = -0.0;\n"
    "    for (int64_t i = b; i < e; i++) s += x[i];\n"
    "    ((double *)c->partials)[b / c->chunk] = s + (double)(e - b) * 1e6;\n"
    "}\n"
    "E void tack_kernel_finish(const void *v, tk_ctx *c, int64_t n) {\n"
    "    (void)v; double s = 0; for (int64_t k = 0; k < n; k++)\n"
    "    s += ((double *)c->partials)[k]; c->result_f = s; c->result_i = n; }\n";

TACK_TEST(reduction_partials_per_fixed_chunk_and_the_returned_value)
{
    setenv("TACK_NUM_THREADS", "3", 1);
    fresh_cache_dir();
    tack_kernel *k;
    char *log;
    CHECK_OK(tack_kernel_build("sum", "t.py", sum_kernel_source, &k, &log));
    enum { N = 1000 };
    static double x[N];
    for (int i = 0; i < N; i++) {
        x[i] = (double)i;
    }
    int64_t shape[1] = {N};
    tack_kernel_arg args[1] = {{x, shape, 0, 0}};
    for (int round = 0; round < 3; round++) {
        tack_kernel_value v = {TACK_KERNEL_RESULT_NONE, -1, -1.0};
        CHECK_OK(tack_kernel_launch_ex(k, args, 0, &v));
        CHECK_EQ_INT(v.kind, TACK_KERNEL_RESULT_FLOAT);
        /* every trip counted once (the 1e6 per trip), in chunks of ceil(N / 256) */
        CHECK_EQ_DBL(v.f, (double)N * (N - 1) / 2 + (double)N * 1e6);
        CHECK_EQ_INT(v.i, (N + 3) / 4); /* nchunks: chunk = 4 */
    }
    /* No trips: finish folds nothing. */
    shape[0] = 0;
    tack_kernel_value v;
    CHECK_OK(tack_kernel_launch_ex(k, args, 0, &v));
    CHECK_EQ_DBL(v.f, 0.0);
    CHECK_EQ_INT(v.i, 0);
    /* The partials' allocation fails cleanly. */
    shape[0] = N;
    tack_test_counting_allocator(1);
    CHECK_STATUS(tack_kernel_launch_ex(k, args, 0, &v), TACK_ERR_NO_MEMORY);
    CHECK_EQ_INT(tack_test_live_allocations(), 0);
    tack_set_allocator(NULL);
}

TACK_TEST(a_kernel_declaring_too_many_bytes_of_partials_is_refused)
{
    /* The sum kernel above, claiming one byte more than any backend keeps per chunk:
     * a chunk of 0 trips (a division by zero in the body) if it were loaded. */
    fresh_cache_dir();
    char src[sizeof sum_kernel_source + 64];
    const char *decl = "tack_kernel_partial_size = sizeof(double);";
    const char *at = strstr(sum_kernel_source, decl);
    CHECK(at != NULL);
    int head = (int)(at - sum_kernel_source);
    snprintf(src, sizeof src, "%.*stack_kernel_partial_size = %d;%s", head,
             sum_kernel_source, TACK_KERNEL_MAX_PARTIAL_SIZE + 1, at + strlen(decl));
    tack_kernel *k = NULL;
    char *log = NULL;
    CHECK_STATUS(tack_kernel_build("sum", "t.py", src, &k, &log), TACK_ERR_COMPILE);
    CHECK(k == NULL);
    CHECK(strstr(tack_last_error(), "4097") != NULL);
    tack_kernel_log_free(log);
}

TACK_TEST(parameter_block_layout_follows_the_key)
{
    double data[6];
    int64_t shape[2] = {2, 3};
    uint32_t key[4] = {TACK_KERNEL_KEY_ARRAY | (uint32_t)TACK_FLOAT64 << 8 | 2u,
                       TACK_KERNEL_KEY_INT, TACK_KERNEL_KEY_FLOAT,
                       TACK_KERNEL_KEY_BOOL};
    tack_kernel_arg args[4] = {{data, shape, 0, 0.0},
                               {NULL, NULL, -7, 0.0},
                               {NULL, NULL, 0, 2.5},
                               {NULL, NULL, 1, 0.0}};
    CHECK_EQ_INT(tack_kernel_params_size(4, key), 6 * 8);
    uint64_t block[6];
    tack_kernel_params_pack(4, key, args, block);
    CHECK(block[0] == (uint64_t)(uintptr_t)data);
    CHECK_EQ_INT((int64_t)block[1], 2);
    CHECK_EQ_INT((int64_t)block[2], 3);
    CHECK_EQ_INT((int64_t)block[3], -7);
    double f;
    memcpy(&f, &block[4], 8);
    CHECK_EQ_DBL(f, 2.5);
    CHECK_EQ_INT((int64_t)block[5], 1);
    CHECK_EQ_INT(tack_kernel_params_size(0, key), 0);
}
