/*
 * thread_pool.c: the persistent thread pool that runs the parallel loop of a kernel.
 *
 * Workers are created at the first parallel launch (TACK_NUM_THREADS - 1 of them,
 * the calling thread being the last one) and live until the process ends. A launch
 * publishes one job (a function over [0, n) and a chunk size) and bumps a
 * generation counter. The chunks are cut into one contiguous block per thread (the
 * calling thread's first); each thread takes the chunks of its own block in order,
 * then takes what is left of the others' blocks, chunk by chunk, which balances
 * uneven iterations (an escape-time fractal) and a thread the OS keeps off a core.
 * Contiguous blocks matter for stencils: a thread that runs planes i and i + 1 reads
 * their shared neighbours from its own cache, where chunks dealt out in turn would
 * have each thread fetch them again at every chunk boundary. Chunk boundaries are
 * multiples of the chunk size from 0 whoever runs them (reductions index their
 * partials by chunk). The launch returns once every worker has reported back, so
 * nothing of the job is touched after it returns.
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

/* The most threads a pool runs (configured_threads caps TACK_NUM_THREADS). */
#define POOL_MAX_THREADS 1024

/* One thread's block of a job: trips [next, end), taken chunk by chunk from next by
 * its owner and by any thread that has finished its own. On a cache line of its own:
 * the owner's updates do not slow the other threads' reads of theirs. */
typedef struct pool_block {
    _Alignas(64) atomic_int_fast64_t next;
    int64_t end; /* written before the job is published, then only read */
} pool_block;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* workers wait here for a new generation */
    pthread_cond_t done; /* the launcher waits here for active == 0 */
    int threads;         /* workers + the calling thread */
    int workers;         /* workers actually started */
    uint64_t generation; /* bumped once per job, under lock */
    pool_job job;        /* the current job, under lock */
    int active;          /* workers not yet finished with the job, under lock */
    atomic_flag busy;    /* a launch owns the pool */
    pool_block block[POOL_MAX_THREADS]; /* [0, threads): the job's blocks, by thread */
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
            return v > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)v;
        }
    }
    return cpu_count();
}

/* Takes chunks from block b until it has none left. Returns the trips taken. */
static int64_t
drain_block(const pool_job *job, pool_block *b)
{
    int64_t ran = 0;
    int64_t begin = atomic_load_explicit(&b->next, memory_order_relaxed);
    for (;;) {
        /* The counter never passes the block's end: an unconditional add of chunk
         * could overflow it into a negative start when n is within a chunk of
         * INT64_MAX. */
        int64_t end = 0;
        do {
            if (begin >= b->end) {
                return ran;
            }
            end = b->end - begin < job->chunk ? b->end : begin + job->chunk;
        } while (!atomic_compare_exchange_weak(&b->next, &begin, end));
        job->fn(job->ctx, begin, end);
        ran += end - begin;
        begin = end;
    }
}

/* Thread self's share of the job: its own block, then whatever the other threads
 * have not taken of theirs (the next thread's first, so that two idle threads do
 * not queue on one block). Returns the number of trips this thread ran. */
static int64_t
run_chunks(const pool_job *job, int self, int threads)
{
    int64_t ran = 0;
    for (int k = 0; k < threads; k++) {
        ran += drain_block(job, &pool.block[(self + k) % threads]);
    }
    return ran;
}

/* Cuts the job's chunks (the last one may be short) into one contiguous block per
 * thread, block t holding chunks [t * c / threads, (t + 1) * c / threads). */
static void
cut_blocks(const pool_job *job, int threads)
{
    int64_t chunks = job->n / job->chunk + (job->n % job->chunk != 0);
    int64_t q = chunks / threads, r = chunks % threads;
    for (int t = 0; t < threads; t++) {
        /* first chunk of block t: t * chunks / threads without overflow (r, t <
         * threads <= POOL_MAX_THREADS); its trip is below n, so no overflow either */
        int64_t first = q * t + r * t / threads;
        int64_t last = q * (t + 1) + r * (t + 1) / threads;
        atomic_store_explicit(&pool.block[t].next, first * job->chunk,
                              memory_order_relaxed);
        pool.block[t].end = last == chunks ? job->n : last * job->chunk;
    }
}

static void *
worker_main(void *arg)
{
    int self = (int)(intptr_t)arg; /* 1 .. workers: the calling thread is 0 */
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
        int threads = pool.workers + 1;
        pthread_mutex_unlock(&pool.lock);
        run_chunks(&job, self, threads);
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
        if (pthread_create(&t, &attr, worker_main, (void *)(intptr_t)k) != 0) {
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
    int threads = pool.workers + 1;
    pthread_mutex_lock(&pool.lock);
    pool.job = job;
    cut_blocks(&job, threads); /* published to the workers by the unlock below */
    pool.active = pool.workers;
    pool.generation++;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    uint64_t t0 = tack__now_ns();
    *caller_trips = run_chunks(&job, 0, threads);
    *caller_ns = tack__now_ns() - t0;

    pthread_mutex_lock(&pool.lock);
    while (pool.active > 0) {
        pthread_cond_wait(&pool.done, &pool.lock);
    }
    pthread_mutex_unlock(&pool.lock);
    atomic_flag_clear(&pool.busy);
    return true;
}
