/* pool.c — see pool.h. Workers wait for a new generation number, spinning first, then sleeping. */
#include "cpu/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "libwhisperc.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define POOL_SPIN  20000 /* pause iterations (tens of microseconds) before a worker sleeps */
/* After this many pauses spinners also yield the core, so that with more threads than cores
 * (several processes) the thread holding the work gets to run. */
#define POOL_YIELD 1024

struct pool {
    int n_threads;
    pthread_t *workers; /* [n_threads - 1] */
    int n_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint gen;     /* bumped once per pool_run */
    atomic_int sleeping; /* workers blocked on cv */
    atomic_int next;     /* next unclaimed task */
    atomic_int busy;     /* workers still inside the current run */
    atomic_int stop;
    pool_fn fn;
    void *ctx;
    int n_tasks;
    struct worker_arg {
        struct pool *p;
        int thread;
    } * args;
};

static void run_tasks(struct pool *p, int thread) {
    int t;
    while ((t = atomic_fetch_add(&p->next, 1)) < p->n_tasks)
        p->fn(p->ctx, t, thread);
}

static void *worker_main(void *arg) {
    struct worker_arg *a = arg;
    struct pool *p = a->p;
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load(&p->gen)) == seen && !atomic_load(&p->stop)) {
            if (++spins < POOL_SPIN) {
                if (spins % POOL_YIELD == 0)
                    sched_yield();
                else
                    CPU_RELAX();
                continue;
            }
            /* The master bumps gen and then checks `sleeping` (both seq_cst), so either it sees
             * us sleeping and broadcasts under the mutex, or we see the new gen here. */
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleeping, 1);
            while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&p->sleeping, 1);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = g;
        run_tasks(p, a->thread);
        atomic_fetch_sub(&p->busy, 1);
    }
}

static void wake_all(struct pool *p) {
    if (atomic_load(&p->sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

int pool_new(int n_threads, struct pool **out) {
    *out = NULL;
    if (n_threads < 1)
        n_threads = 1;
    struct pool *p = calloc(1, sizeof *p);
    if (!p)
        return WHISPERC_ERR_NO_MEMORY;
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->workers = calloc((size_t)n_threads, sizeof *p->workers);
    p->args = calloc((size_t)n_threads, sizeof *p->args);
    if (!p->workers || !p->args) {
        pool_free(p);
        return WHISPERC_ERR_NO_MEMORY;
    }
    for (int i = 1; i < n_threads; i++) {
        p->args[i].p = p;
        p->args[i].thread = i;
        if (pthread_create(&p->workers[i - 1], NULL, worker_main, &p->args[i]) != 0) {
            pool_free(p);
            return WHISPERC_ERR_BACKEND;
        }
        p->n_started++;
    }
    *out = p;
    return 0;
}

void pool_free(struct pool *p) {
    if (!p)
        return;
    atomic_store(&p->stop, 1);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_started; i++)
        pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->workers);
    free(p->args);
    free(p);
}

int pool_threads(const struct pool *p) { return p->n_threads; }

void pool_run(struct pool *p, pool_fn fn, void *ctx, int n_tasks) {
    if (n_tasks <= 0)
        return;
    if (p->n_threads == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++)
            fn(ctx, t, 0);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    atomic_store(&p->next, 0);
    atomic_store(&p->busy, p->n_threads - 1);
    atomic_fetch_add(&p->gen, 1);
    wake_all(p);
    run_tasks(p, 0);
    for (unsigned spins = 1; atomic_load(&p->busy) > 0; spins++) {
        if (spins % (8 * POOL_YIELD) == 0)
            sched_yield(); /* a worker may be waiting for a core */
        else
            CPU_RELAX();
    }
}
