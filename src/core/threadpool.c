/*
 * A fixed pool of worker threads for CPU kernels. pxl_parallel_for hands out
 * task indices through an atomic counter; the calling thread works too, so a
 * pool of n threads runs n-1 workers.
 *
 * Handing a job over: the caller fills fn, arg and n_tasks, then bumps the
 * atomic generation (release); a worker that reads the new generation
 * (acquire) sees the job. Each worker takes part in every job and, done,
 * decrements active_workers (acq_rel); the caller returns when it reads 0
 * (acquire), so no worker touches the job after that and the next one can
 * be written. Decoding an LLM token makes a few dozen short jobs with a few
 * microseconds of serial work between them, so both sides first poll their
 * atomic for at most POOL_SPIN_S seconds and only then sleep on a condition
 * variable (wake, done) under mu. No wakeup is lost: a sleeper re-reads the
 * atomic under mu before it waits, and the other side takes mu to broadcast
 * or signal after it changed the atomic.
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* seconds: the longest poll before sleeping; a gap between two clock reads
 * of a poll that means the thread was descheduled. The most waits skipped
 * after polls that failed (poll_state). */
#define POOL_SPIN_S 50e-6
#define POOL_GAP_S 20e-6
#define POOL_BACKOFF_MAX 256u

/* A thread's polling state: after a poll that ran out or was descheduled,
 * the next `skip` waits sleep at once; `backoff` (the skip given last)
 * doubles with each such poll in a row, up to POOL_BACKOFF_MAX, and a poll
 * that sees the job clears it. */
typedef struct {
    unsigned skip, backoff;
} poll_state;

struct pxl_threadpool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t *threads;
    int n_workers;
    atomic_int stop;
    atomic_int busy;                  /* a job is in flight: nested calls run serially */
    atomic_uint_least64_t generation; /* bumped (release) for each job */
    /* the current job: written by the caller only while no worker is in a job */
    pxl_task_fn fn;
    void *arg;
    size_t n_tasks;
    atomic_size_t next;
    atomic_int active_workers; /* workers still inside the current job */
    poll_state caller_poll;    /* the calling thread's */
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void run_tasks(pxl_threadpool *p) {
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= p->n_tasks) break;
        p->fn(p->arg, i);
    }
}

/* Polls, for at most POOL_SPIN_S, until the job is there (done 0: generation
 * differs from seen, or stop is set) or over (done 1: no worker is left in
 * it); returns 1 when it is, 0 when the caller should sleep instead. Polling
 * pays only while both threads run; where there are more runnable threads
 * than cores, a poll takes time from the thread it waits for (which then
 * often does not come within POOL_SPIN_S) or is itself descheduled (a gap
 * of more than POOL_GAP_S between two reads of the clock): either makes the
 * thread skip its next polls (poll_state). */
static int poll_for(pxl_threadpool *p, int done, uint64_t seen, poll_state *st) {
    double start = 0.0, last = 0.0;
    if (st->skip) {
        st->skip--;
        return 0;
    }
    for (unsigned i = 0;; i++) {
        if (done ? atomic_load_explicit(&p->active_workers, memory_order_acquire) == 0
                 : atomic_load_explicit(&p->generation, memory_order_acquire) != seen ||
                       atomic_load_explicit(&p->stop, memory_order_acquire)) {
            st->backoff = 0;
            return 1;
        }
        if (i % 64 == 0) { /* the clock every 64 polls: about a microsecond apart */
            double now = pxl_time_now();
            if (i == 0) {
                start = now;
            } else if (now - last > POOL_GAP_S || now - start >= POOL_SPIN_S) {
                st->backoff = st->backoff ? (st->backoff < POOL_BACKOFF_MAX ? 2 * st->backoff : POOL_BACKOFF_MAX) : 1;
                st->skip = st->backoff;
                return 0;
            }
            last = now;
        }
        cpu_relax();
    }
}

static void *worker(void *arg) {
    pxl_threadpool *p = arg;
    uint64_t seen = 0;
    poll_state st = {0, 0};
    for (;;) {
        if (!poll_for(p, 0, seen, &st)) {
            pthread_mutex_lock(&p->mu);
            while (!atomic_load_explicit(&p->stop, memory_order_acquire) &&
                   atomic_load_explicit(&p->generation, memory_order_acquire) == seen)
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) break;
        seen = atomic_load_explicit(&p->generation, memory_order_acquire);
        run_tasks(p);
        if (atomic_fetch_sub_explicit(&p->active_workers, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu); /* the caller may be asleep on done */
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

pxl_threadpool *pxl_threadpool_create(pxl_ctx *ctx, int n_threads) {
    pxl_threadpool *p = pxl_calloc(ctx, 1, sizeof *p);
    if (!p) return NULL;
    int n_workers = n_threads > 1 ? n_threads - 1 : 0;
    p->threads = pxl_calloc(ctx, (size_t)(n_workers ? n_workers : 1), sizeof *p->threads);
    if (!p->threads) {
        pxl_free(ctx, p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->stop, 0);
    atomic_init(&p->busy, 0);
    atomic_init(&p->generation, 0);
    atomic_init(&p->next, 0);
    atomic_init(&p->active_workers, 0);
    for (int i = 0; i < n_workers; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0) break;
        p->n_workers++;
    }
    return p;
}

void pxl_threadpool_free(pxl_ctx *ctx, pxl_threadpool *p) {
    if (!p) return;
    atomic_store_explicit(&p->stop, 1, memory_order_release);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_workers; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pxl_free(ctx, p->threads);
    pxl_free(ctx, p);
}

void pxl_threadpool_run(pxl_threadpool *p, size_t n_tasks, pxl_task_fn fn, void *arg) {
    /* busy is set from here to the end of the job: a call from inside a task
     * (on any thread) finds it set and runs serially */
    if (p->n_workers == 0 || n_tasks < 2 || atomic_exchange_explicit(&p->busy, 1, memory_order_acquire)) {
        for (size_t i = 0; i < n_tasks; i++) fn(arg, i);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->n_tasks = n_tasks;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->active_workers, p->n_workers, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_mutex_lock(&p->mu); /* wakes the workers that went to sleep */
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_tasks(p);

    if (!poll_for(p, 1, 0, &p->caller_poll)) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load_explicit(&p->active_workers, memory_order_acquire) > 0) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    atomic_store_explicit(&p->busy, 0, memory_order_release);
}

void pxl_parallel_for(pxl_ctx *ctx, size_t n_tasks, pxl_task_fn fn, void *arg) {
    if (n_tasks == 0) return;
    if (ctx->n_threads > 1 && !ctx->pool) ctx->pool = pxl_threadpool_create(ctx, ctx->n_threads);
    if (!ctx->pool) { /* one thread, or the pool could not be made: run here */
        for (size_t i = 0; i < n_tasks; i++) fn(arg, i);
        return;
    }
    pxl_threadpool_run(ctx->pool, n_tasks, fn, arg);
}
