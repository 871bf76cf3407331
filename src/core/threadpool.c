/*
 * A fixed pool of worker threads for CPU kernels. pxl_parallel_for hands out
 * task indices through an atomic counter; the calling thread works too, so a
 * pool of n threads runs n-1 workers.
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

struct pxl_threadpool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t *threads;
    int n_workers;
    int stop;
    int busy;              /* a job is in flight: nested calls run serially */
    uint64_t generation;   /* bumped for each job */
    /* the current job */
    pxl_task_fn fn;
    void *arg;
    size_t n_tasks;
    atomic_size_t next;
    int active_workers;    /* workers still inside the current job */
};

static void run_tasks(pxl_threadpool *p) {
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n_tasks) break;
        p->fn(p->arg, i);
    }
}

static void *worker(void *arg) {
    pxl_threadpool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        run_tasks(p);
        pthread_mutex_lock(&p->mu);
        if (--p->active_workers == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
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
    for (int i = 0; i < n_workers; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0) break;
        p->n_workers++;
    }
    return p;
}

void pxl_threadpool_free(pxl_ctx *ctx, pxl_threadpool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
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
    pthread_mutex_lock(&p->mu);
    if (p->busy || p->n_workers == 0 || n_tasks < 2) {
        pthread_mutex_unlock(&p->mu);
        for (size_t i = 0; i < n_tasks; i++) fn(arg, i);
        return;
    }
    p->busy = 1;
    p->fn = fn;
    p->arg = arg;
    p->n_tasks = n_tasks;
    atomic_store(&p->next, 0);
    p->active_workers = p->n_workers;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_tasks(p);

    pthread_mutex_lock(&p->mu);
    while (p->active_workers > 0) pthread_cond_wait(&p->done, &p->mu);
    p->busy = 0;
    pthread_mutex_unlock(&p->mu);
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
