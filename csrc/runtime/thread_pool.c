/*
 * thread_pool.c: the persistent thread pool that runs the parallel loop of a kernel.
 *
 * Workers are created at the first parallel launch (TACK_NUM_THREADS - 1 of them,
 * the calling thread being the last one) and live until the process ends. A launch
 * publishes one job (a function over [0, n) and a chunk size) and bumps a
 * generation counter; every worker and the calling thread then take chunks from one
 * atomic counter until none are left, which balances uneven iterations (an escape-
 * time fractal) as well as even ones. The launch returns once every worker has
 * reported back, so nothing of the job is touched after it returns.
 *
 * One job at a time: a second launch that finds the pool busy (another Python
 * thread, or a kernel launched from inside a kernel) runs on its own thread instead
 * of waiting, so the pool can never deadlock on itself.
 *
 * After fork() the child has only the forking thread: no workers, and the pool's
 * mutex, condition variables and busy flag in whatever state the parent's threads
 * left them (a launch running, a worker holding the lock). The child re-creates them
 * all and the pool starts again there on first use. The handler is registered
 * before the pool can start, so a fork during the start is covered too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

typedef struct pool_job {
    tack__pool_fn fn;
    void *ctx;
    int64_t n;
    int64_t chunk;
} pool_job;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;      /* workers wait here for a new generation */
    pthread_cond_t done;      /* the launcher waits here for active == 0 */
    int threads;              /* workers + the calling thread */
    int workers;              /* workers actually started */
    uint64_t generation;      /* bumped once per job, under lock */
    pool_job job;             /* the current job, under lock */
    int active;               /* workers not yet finished with the job, under lock */
    atomic_int_fast64_t next; /* the next chunk's first trip */
    atomic_flag busy;         /* a launch owns the pool */
} pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .busy = ATOMIC_FLAG_INIT,
};

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT; /* never reset */

uint64_t
tack__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int
cpu_count(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) {
            return n;
        }
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static int
configured_threads(void)
{
    const char *env = getenv("TACK_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 1) {
            return v > 1024 ? 1024 : (int)v;
        }
    }
    return cpu_count();
}

/* Takes chunks until none are left. Returns the number of trips this thread ran. */
static int64_t
run_chunks(const pool_job *job)
{
    int64_t ran = 0;
    int64_t begin = atomic_load(&pool.next);
    for (;;) {
        /* The counter never passes n: an unconditional add of chunk could overflow
         * it into a negative start when n is within a chunk of INT64_MAX. */
        int64_t end = 0;
        do {
            if (begin >= job->n) {
                return ran;
            }
            end = job->n - begin < job->chunk ? job->n : begin + job->chunk;
        } while (!atomic_compare_exchange_weak(&pool.next, &begin, end));
        job->fn(job->ctx, begin, end);
        ran += end - begin;
        begin = end;
    }
}

static void *
worker_main(void *arg)
{
    (void)arg;
    /* Workers start before any job (pool_start runs once, before the first), when
     * the generation is 0. */
    uint64_t seen = 0;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        while (pool.generation == seen) {
            pthread_cond_wait(&pool.wake, &pool.lock);
        }
        seen = pool.generation;
        pool_job job = pool.job;
        pthread_mutex_unlock(&pool.lock);
        run_chunks(&job);
        pthread_mutex_lock(&pool.lock);
        if (--pool.active == 0) {
            pthread_cond_signal(&pool.done);
        }
    }
    return NULL;
}

/* The child of a fork has only the forking thread: forget the workers. */
static void
after_fork_child(void)
{
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.workers = 0;
    pool.active = 0;
    pool.generation = 0;
    atomic_flag_clear(&pool.busy);
    pool_once = (pthread_once_t)PTHREAD_ONCE_INIT;
}

static void
register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
}

#define POOL_STACK_NBYTES ((size_t)8 << 20)

static void
pool_start(void)
{
    pool.threads = configured_threads();
    /* Workers never take signals: the interpreter's handlers belong to its threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* A kernel's local arrays live on the stack of the thread running an iteration
     * (up to 1 MiB per kernel, parse.py's LOCAL_ARRAYS_MAX_BYTES): a fixed size,
     * not whatever RLIMIT_STACK says (glibc's default when it is unlimited is
     * smaller). */
    pthread_attr_setstacksize(&attr, POOL_STACK_NBYTES);
    for (int k = 1; k < pool.threads; k++) {
        pthread_t t;
        if (pthread_create(&t, &attr, worker_main, NULL) != 0) {
            break; /* fewer workers still run every launch correctly */
        }
        pool.workers++;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int
tack__pool_threads(void)
{
    pthread_once(&fork_once, register_fork_handler);
    pthread_once(&pool_once, pool_start);
    return pool.workers + 1;
}

int
tack_kernel_num_threads(void)
{
    return tack__pool_threads();
}

bool
tack__pool_run(int64_t n, int64_t chunk, tack__pool_fn fn, void *ctx,
               int64_t *caller_trips, uint64_t *caller_ns)
{
    if (tack__pool_threads() < 2 || atomic_flag_test_and_set(&pool.busy)) {
        return false;
    }
    pool_job job = {fn, ctx, n, chunk < 1 ? 1 : chunk};
    pthread_mutex_lock(&pool.lock);
    pool.job = job;
    atomic_store(&pool.next, 0);
    pool.active = pool.workers;
    pool.generation++;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    uint64_t t0 = tack__now_ns();
    *caller_trips = run_chunks(&job);
    *caller_ns = tack__now_ns() - t0;

    pthread_mutex_lock(&pool.lock);
    while (pool.active > 0) {
        pthread_cond_wait(&pool.done, &pool.lock);
    }
    pthread_mutex_unlock(&pool.lock);
    atomic_flag_clear(&pool.busy);
    return true;
}
