/*
 * pool.h — a small fork-join thread pool for the CPU backend.
 *
 * pool_run() hands n_tasks task indices to the calling thread and n_threads-1 workers, which claim
 * them one by one, and returns when all are done. The decoder issues a few dozen ops per token,
 * each a pool_run of microseconds, so idle workers spin briefly before sleeping: a condition
 * variable wake-up per op would cost more than the op.
 */
#ifndef WC_CPU_POOL_H
#define WC_CPU_POOL_H

/* One task: `task` in [0, n_tasks), `thread` in [0, n_threads) names the thread running it
 * (for per-thread scratch memory). */
typedef void (*pool_fn)(void *ctx, int task, int thread);

struct pool;

/* Starts n_threads-1 workers. Returns 0 or WHISPERC_ERR_NO_MEMORY / WHISPERC_ERR_BACKEND. */
int pool_new(int n_threads, struct pool **out);
void pool_free(struct pool *p); /* NULL is a no-op; joins the workers */
int pool_threads(const struct pool *p);
void pool_run(struct pool *p, pool_fn fn, void *ctx, int n_tasks);

#endif /* WC_CPU_POOL_H */
