/*
 * batch_run.c — the workers of `whisper-c batch`: threads, each with its own whisperc_state on
 * a shared read-only model, taking the next item from one list. An item's outputs are written
 * into the run's staging directory, renamed into place, and only then is its results line
 * appended: a line with "ok" means the outputs are complete. SIGINT stops taking new items
 * (a second one aborts the current ones), SIGTERM aborts at once; an aborted item leaves no
 * line and runs again next time. One more signal after the abort ends the process, and so does
 * an abort that takes longer than --stop-timeout.
 *
 * With --batch-size N a worker takes up to N items at once, loads them, and transcribes them in
 * one whisperc_full_batch call; then the group's outputs are written into staging, made durable
 * together (one syncfs, not an fsync a file: on a GPU, where a group takes milliseconds, the
 * fsyncs cost as much as the transcription; but a file an fsync on a FUSE filesystem, whose
 * server syncfs may never reach), renamed into place item by item, each followed by
 * its line, and the group's lines synced once. The items of a group are all in flight until
 * the call returns. If the call fails (one input
 * refused, say), the group's items run again one at a time, so that each gets its own result.
 * With --read-threads R the worker takes its next group as it starts one, and R threads read
 * that group's files meanwhile (whisperc_model_load_audio: no state); a group read but not
 * started when the run stops is dropped, so it runs on resume.
 */
#ifdef __linux__
#define _GNU_SOURCE /* syncfs */
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/vfs.h>
#endif

#include "batch.h"
#include "cli.h"

/* A signal handler can reach only these. 1: take no new item, 2: abort the running ones. A
 * signal after level 2 ends the process at once: an item stuck where it cannot be aborted (the
 * abort is seen between decoder steps: not in an encoder pass, a read from a hung filesystem,
 * a GPU that hangs) must not keep it alive, and a run ended anywhere is resumable
 * as after SIGKILL (staging is emptied by the next run, results lines are single writes).
 * Reaching level 2 also arms alarm(stop_timeout_s): one SIGTERM (`timeout`, a scheduler) must
 * end the run too, so SIGALRM then does what a second signal would, except while a worker is
 * between renaming an item's outputs and appending its line (n_finishing): it waits a second
 * more for that, and meanwhile no other worker starts one (stopping), so that no item is left
 * with outputs but no line. Both are seq_cst atomics, lock-free, so a handler may use them:
 * the handler sets stopping then reads n_finishing, a worker adds to n_finishing then reads
 * stopping, and at least one of them sees the other. The stop level and signal are atomics
 * too: the handler runs on whichever thread the signal lands on, and workers read them. */
static atomic_int stop_level, stop_signal, stop_timeout_s;
static atomic_int n_finishing, stopping;

static void write_err(const char *s) {
    size_t n = 0;
    while (s[n])
        n++;
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0)
            return;
        s += w, n -= (size_t)w;
    }
}

/* Before an item's outputs and line: false if the run is ending at once (then the item gets
 * neither and runs again on resume). Every true is paired with finishing_end. */
static bool finishing_begin(void) {
    atomic_fetch_add(&n_finishing, 1);
    if (!atomic_load(&stopping))
        return true;
    atomic_fetch_sub(&n_finishing, 1);
    return false;
}

static void finishing_end(void) { atomic_fetch_sub(&n_finishing, 1); }

static void on_signal(int sig) {
    int level = atomic_load(&stop_level);
    if (level >= 2) {
        write_err("whisper-c: batch: stopped at once; rerun to resume\n");
        _exit(128 + sig);
    }
    atomic_store(&stop_signal, sig);
    level = sig == SIGINT && level == 0 ? 1 : 2;
    atomic_store(&stop_level, level);
    int timeout_s = atomic_load(&stop_timeout_s);
    if (level == 2 && timeout_s > 0)
        alarm((unsigned)timeout_s);
}

static void on_alarm(int sig) {
    (void)sig;
    if (atomic_load(&stop_level) < 2)
        return;
    atomic_store(&stopping, 1);
    if (atomic_load(&n_finishing) > 0) {
        alarm(1);
        return;
    }
    int sig_stop = atomic_load(&stop_signal);
    write_err(sig_stop == SIGINT ? "whisper-c: batch: the running items did not stop within "
                                   "--stop-timeout of SIGINT; stopped at once; rerun to resume\n"
                                 : "whisper-c: batch: the running items did not stop within "
                                   "--stop-timeout of SIGTERM; stopped at once; rerun to "
                                   "resume\n");
    _exit(128 + sig_stop);
}

static bool abort_requested(void *user) {
    (void)user;
    return atomic_load(&stop_level) >= 2;
}

struct pool;

struct worker {
    struct pool *pool;
    int index;
    whisperc_state *st;
    pthread_t thread;
    atomic_int percent;                    /* of the current item */
    double decode_s, read_wait_s, write_s; /* batch_progress's, this worker's share */
    /* the staging directory, opened before this worker stages anything: syncfs on it reports
     * every writeback error since then, also one another worker's syncfs saw first */
    int staging_fd;
    bool group_sync; /* a group's files made durable by one sync_staging_fs, not one by one */
};

struct pool {
    struct batch_run *run;
    pthread_mutex_t mu; /* guards run->progress, run->fatal, next, n_running, stderr */
    pthread_cond_t cv;  /* an item finished or a worker ended */
    int next, n_running;
    int n_started; /* threads created (the main thread's alone) */
    bool tty, quiet;
    struct worker *w;
};

int batch_mkdirs(const char *path, size_t from) {
    if (from >= strlen(path))
        return 0;
    char *p = strdup(path);
    int rc = p ? 0 : -1;
    for (size_t i = from + 1; p && rc == 0; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            rc = -1;
        p[i] = c;
        if (c == '\0')
            break;
    }
    free(p);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// one item

/* The directories of an output file below the output directory (ids may hold '/'). */
static int make_parents(const char *file, size_t from) {
    char dir[8400];
    snprintf(dir, sizeof dir, "%s", file);
    *strrchr(dir, '/') = '\0';
    return batch_mkdirs(dir, from);
}

/* The staging name of a worker's outputs: staging/w<index>, or w<index>-<j> for item j of a
 * group (j >= 0), whose files wait there together. */
static void staged_base(const struct worker *w, int j, char *base, size_t size) {
    if (j < 0)
        snprintf(base, size, "%s/w%d", w->pool->run->staging, w->index);
    else
        snprintf(base, size, "%s/w%d-%d", w->pool->run->staging, w->index, j);
}

/* Every chosen format of the state's selected result into its staging name (sync: each file
 * fsync'd; else the caller syncs them). Returns 0 or an errno value. */
static int stage_outputs(struct worker *w, int j, const struct whisperc_full_params *fp,
                         double duration_s, bool sync, char *err, size_t es) {
    const struct batch_run *r = w->pool->run;
    char base[4096];
    staged_base(w, j, base, sizeof base);
    return cli_write_outputs(&r->cfg->o, r->cfg->formats, w->st, r->models[w->index % r->n_models],
                             fp, duration_s, sync, base, err, es);
}

/* Renames the staged outputs (rc 0) to DIR/<id>.<ext>; on a failure (rc != 0 before or here)
 * removes them. Returns rc, or the errno value of a failure here. */
static int place_outputs(struct worker *w, int j, const struct batch_item *it, int rc, char *err,
                         size_t es) {
    const struct batch_config *c = w->pool->run->cfg;
    char base[4096], staged[4200], final[8400];
    staged_base(w, j, base, sizeof base);
    int f;
    for (f = 0; f < OUT_N_FORMATS && rc == 0; f++) {
        if (!c->formats[f])
            continue;
        const char *ext = out_format_ext((enum out_format)f);
        snprintf(staged, sizeof staged, "%s.%s", base, ext);
        if ((size_t)snprintf(final, sizeof final, "%s/%s.%s", c->out_dir, it->id, ext) >=
            sizeof final)
            rc = ENAMETOOLONG, snprintf(err, es, "%s/%s: path too long", c->out_dir, it->id);
        else if ((strchr(it->id, '/') && make_parents(final, strlen(c->out_dir)) != 0) ||
                 rename(staged, final) != 0)
            rc = errno ? errno : EIO,
            snprintf(err, es, "%.900s: cannot write: %s", final, strerror(rc));
    }
    for (f = 0; f < OUT_N_FORMATS && rc != 0; f++) { /* nothing staged may outlive a failure */
        snprintf(staged, sizeof staged, "%s.%s", base, out_format_ext((enum out_format)f));
        unlink(staged);
    }
    return rc;
}

/* Writes every chosen format into staging/w<index>.<ext>, then renames them to DIR/<id>.<ext>.
 * Returns 0 or an errno value. */
static int write_outputs(struct worker *w, const struct batch_item *it,
                         const struct whisperc_full_params *fp, double duration_s, char *err,
                         size_t es) {
    return place_outputs(w, -1, it, stage_outputs(w, -1, fp, duration_s, true, err, es), err, es);
}

/* Appends the item's results line and counts it; sync false: the caller syncs the results
 * file (a group's lines at once). */
static void record_line(struct worker *w, const struct batch_item *it, bool ok, double duration,
                        const char *lang, double seconds, const char *err, bool sync) {
    struct pool *p = w->pool;
    struct batch_run *r = p->run;
    struct sbuf line = {0};
    results_format(&line, it, ok, duration, lang, seconds, err);
    pthread_mutex_lock(&p->mu);
    if (line.oom || results_append(r->results_fd, &line, sync) != 0) {
        if (!r->fatal[0])
            snprintf(r->fatal, sizeof r->fatal, "cannot append to the results file: %s",
                     strerror(line.oom ? ENOMEM : errno));
    } else if (ok) {
        r->progress.n_ok++;
        r->progress.audio_s += duration;
    } else {
        r->progress.n_failed++;
        progress_message(p->tty, "FAILED %s (%s): %s", it->id, it->path, err);
    }
    r->progress.busy_s += seconds;
    atomic_store(&w->percent, 0);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    sbuf_free(&line);
}

static void record(struct worker *w, const struct batch_item *it, bool ok, double duration,
                   const char *lang, double seconds, const char *err) {
    record_line(w, it, ok, duration, lang, seconds, err, true);
}

/* The results file's lines appended so far made durable (after a group's record_line calls). */
static void results_sync(struct worker *w) {
    struct batch_run *r = w->pool->run;
    if (fdatasync(r->results_fd) != 0 && errno != EINVAL) {
        pthread_mutex_lock(&w->pool->mu);
        if (!r->fatal[0])
            snprintf(r->fatal, sizeof r->fatal, "cannot append to the results file: %s",
                     strerror(errno));
        pthread_mutex_unlock(&w->pool->mu);
    }
}

/* Every file written to the filesystem of the worker's staging directory made durable:
 * syncfs where there is one (one call for a group's files), else sync. Returns 0 or -1
 * (errno). */
static int sync_staging_fs(const struct worker *w) {
#ifdef __linux__
    if (w->staging_fd < 0) {
        errno = EBADF;
        return -1;
    }
    return syncfs(w->staging_fd);
#else
    (void)w;
    sync();
    return 0;
#endif
}

/* Whether one syncfs on the staging directory makes its files durable: not on FUSE, where
 * Linux passes syncfs on to few servers (virtiofs, from 5.15) and returns 0 either way, while
 * an fsync reaches every server. */
static bool staging_syncfs_works(int fd) {
#ifdef __linux__
    struct statfs sf;
    return fd >= 0 && fstatfs(fd, &sf) == 0 && sf.f_type != 0x65735546 /* FUSE_SUPER_MAGIC */;
#else
    (void)fd;
    return true; /* sync() */
#endif
}

/* A fault inside a GPU kernel spoils the context of every worker on that GPU, for the life of
 * the process: the run stops, the items not started stay to do (a rerun resumes them), and
 * the ones running when it happened are recorded failed (one of them may be the cause;
 * --retry-failed runs them again). */
static void device_lost(struct worker *w, const char *err) {
    struct batch_run *r = w->pool->run;
    pthread_mutex_lock(&w->pool->mu);
    if (!r->fatal[0])
        snprintf(r->fatal, sizeof r->fatal,
                 "the GPU failed and cannot be used again by this process (%.300s); stopped: run "
                 "the same command again to resume",
                 err);
    pthread_mutex_unlock(&w->pool->mu);
}

/* A full disk or quota, or a file system turned read-only, would fail every item after it: the
 * run stops instead and the item gets no line (it runs again on resume, once there is room).
 * Returns whether e was such a failure. */
static bool storage_lost(struct worker *w, int e, const char *err) {
    if (e != ENOSPC && e != EDQUOT && e != EROFS)
        return false;
    struct batch_run *r = w->pool->run;
    pthread_mutex_lock(&w->pool->mu);
    if (!r->fatal[0])
        snprintf(r->fatal, sizeof r->fatal,
                 "%.400s; stopped: make room and run the same command again to resume", err);
    pthread_mutex_unlock(&w->pool->mu);
    return true;
}

static void process(struct worker *w, const struct batch_item *it,
                    const struct whisperc_full_params *fp) {
    double t0 = batch_now();
    whisperc_status rc = whisperc_full_file(w->st, fp, it->path);
    double t1 = batch_now();
    w->decode_s += t1 - t0;
    if (rc == WHISPERC_ERR_ABORTED || !finishing_begin()) {
        atomic_store(&w->percent, 0);
        return; /* no line: it runs again on resume */
    }
    char err[1024] = "";
    if (rc != WHISPERC_OK) {
        const char *msg = whisperc_state_errmsg(w->st);
        snprintf(err, sizeof err, "%s", *msg ? msg : whisperc_status_str(rc));
    }
    if (rc == WHISPERC_OK && storage_lost(w, write_outputs(w, it, fp, -1, err, sizeof err), err)) {
        atomic_store(&w->percent, 0);
        finishing_end();
        return;
    }
    struct whisperc_timings tm = {.size = sizeof tm};
    bool timed = rc == WHISPERC_OK && whisperc_state_timings(w->st, &tm) == WHISPERC_OK;
    record(w, it, err[0] == '\0', timed ? tm.audio_seconds : -1,
           rc == WHISPERC_OK ? whisperc_full_language(w->st) : NULL, batch_now() - t0, err);
    finishing_end();
    w->write_s += batch_now() - t1;
    if (rc == WHISPERC_ERR_DEVICE)
        device_lost(w, err);
}

// ---------------------------------------------------------------------------------------------
// a group of items (--batch-size)

struct group {
    int idx[BATCH_MAX_GROUP]; /* the items taken, by index into the run's items */
    int n_idx;
    float *loaded[BATCH_MAX_GROUP]; /* per idx: the samples (malloc'd), or NULL and err[] */
    int n_loaded[BATCH_MAX_GROUP];
    double load_s[BATCH_MAX_GROUP];
    char err[BATCH_MAX_GROUP][512];
    char werr[BATCH_MAX_GROUP][1024]; /* per loaded item: writing its outputs failed */
    int werrno[BATCH_MAX_GROUP];      /* and the errno value */
    /* what a reader needs, set when the group is taken */
    const struct batch_items *items;
    const whisperc_model *model;
    const struct whisperc_full_params *fp;
    int n_readers;
    atomic_int next_read;
    /* the items loaded, for whisperc_full_batch */
    const struct batch_item *it[BATCH_MAX_GROUP];
    const float *pcm[BATCH_MAX_GROUP];
    int n_samples[BATCH_MAX_GROUP];
    int n;
};

/* Reads the group's files not taken by another reader yet. */
static void *group_read(void *arg) {
    struct group *g = arg;
    for (int j; (j = atomic_fetch_add(&g->next_read, 1)) < g->n_idx;) {
        double t0 = batch_now();
        g->err[j][0] = '\0';
        if (whisperc_model_load_audio(g->model, g->fp, g->items->v[g->idx[j]].path, &g->loaded[j],
                                      &g->n_loaded[j], g->err[j],
                                      sizeof g->err[j]) != WHISPERC_OK &&
            !g->err[j][0])
            snprintf(g->err[j], sizeof g->err[j], "cannot read the file");
        g->load_s[j] = batch_now() - t0;
    }
    return NULL;
}

/* Reads every file of the group on g->n_readers threads (this one among them). */
static void group_read_all(struct group *g) {
    pthread_t th[64];
    int n_th = 0;
    atomic_store(&g->next_read, 0);
    while (n_th + 1 < g->n_readers && n_th + 1 < g->n_idx &&
           pthread_create(&th[n_th], NULL, group_read, g) == 0)
        n_th++;
    group_read(g);
    for (int i = 0; i < n_th; i++)
        pthread_join(th[i], NULL);
}

static void *group_read_main(void *arg) {
    group_read_all(arg);
    return NULL;
}

/* Takes up to max items into g (0: none left, or the run stops); nothing read yet. */
static int take_next(struct pool *p, int *idx, int max);
static int group_take(struct worker *w, struct group *g, const struct whisperc_full_params *fp,
                      int max, int n_readers) {
    const struct batch_run *r = w->pool->run;
    g->n_idx = take_next(w->pool, g->idx, max);
    g->items = r->items;
    g->model = r->models[w->index % r->n_models];
    g->fp = fp;
    g->n_readers = n_readers < 1 ? 1 : n_readers;
    g->n = 0;
    return g->n_idx;
}

/* Frees what was read and not handed on (a group dropped at a stop: no line, runs again). */
static void group_drop(struct group *g) {
    for (int j = 0; j < g->n_idx; j++) {
        free(g->loaded[j]);
        g->loaded[j] = NULL;
    }
    g->n_idx = 0;
}

/* A group whose whisperc_full_batch failed: each item alone (its audio loaded), so that each
 * gets its own result or error, as without --batch-size. A fresh state first: a backend error
 * stays with the stream that had it. The old one goes before, as its memory (a batch's) may be
 * what the new one needs; a worker that cannot get a state again stops the run, as at start. */
static void group_one_by_one(struct worker *w, const struct group *g,
                             const struct whisperc_full_params *fp) {
    struct batch_run *r = w->pool->run;
    char err[1024] = "";
    whisperc_state_free(w->st);
    if (whisperc_state_new_v2(r->models[w->index % r->n_models], &w->st, err, sizeof err) !=
        WHISPERC_OK) {
        pthread_mutex_lock(&w->pool->mu);
        if (!r->fatal[0])
            snprintf(r->fatal, sizeof r->fatal, "decoding state %d: %.400s", w->index + 1, err);
        pthread_mutex_unlock(&w->pool->mu);
        return; /* the group: no line, it runs again on resume */
    }
    for (int j = 0; j < g->n; j++) {
        double t0 = batch_now();
        whisperc_status rc = whisperc_full(w->st, fp, g->pcm[j], g->n_samples[j]);
        if (rc == WHISPERC_ERR_ABORTED)
            break; /* this and the rest: no line, they run again on resume */
        err[0] = '\0';
        if (rc != WHISPERC_OK) {
            const char *msg = whisperc_state_errmsg(w->st);
            snprintf(err, sizeof err, "%s", *msg ? msg : whisperc_status_str(rc));
        }
        if (!finishing_begin())
            break;
        if (rc == WHISPERC_OK &&
            storage_lost(w, write_outputs(w, g->it[j], fp, -1, err, sizeof err), err)) {
            finishing_end();
            break; /* this and the rest: no line */
        }
        record(w, g->it[j], err[0] == '\0', g->n_samples[j] / 16000.0,
               rc == WHISPERC_OK ? whisperc_full_language(w->st) : NULL, batch_now() - t0, err);
        finishing_end();
        if (rc == WHISPERC_ERR_DEVICE) {
            device_lost(w, err);
            break; /* the rest of the group: no line, they run again on resume */
        }
    }
}

/* The group read: a file that could not be read is recorded as failed, the others go through
 * whisperc_full_batch; each item's time is its reading plus the call's time shared by audio
 * duration. */
static void group_run(struct worker *w, struct group *g, const struct whisperc_full_params *fp) {
    double t0 = batch_now(), audio_s = 0;
    g->n = 0;
    if (!w->st) { /* lost (group_one_by_one): the run stops, the group runs on resume */
        group_drop(g);
        return;
    }
    for (int j = 0; j < g->n_idx; j++) {
        const struct batch_item *it = &g->items->v[g->idx[j]];
        if (!g->loaded[j]) {
            record(w, it, false, -1, NULL, g->load_s[j], g->err[j]);
            continue;
        }
        g->it[g->n] = it;
        g->n_samples[g->n] = g->n_loaded[j];
        g->pcm[g->n++] = g->loaded[j];
        audio_s += g->n_loaded[j] / 16000.0;
    }
    double t1 = batch_now();
    whisperc_status rc = g->n ? whisperc_full_batch(w->st, fp, g->pcm, g->n_samples, g->n) : 0;
    w->decode_s += batch_now() - t1;
    if (g->n && rc == WHISPERC_OK) {
        double seconds = batch_now() - t0, t2 = batch_now();
        /* the group's outputs staged (timings: the group's), then durable at once */
        for (int j = 0; j < g->n; j++) {
            g->werr[j][0] = '\0';
            whisperc_batch_select(w->st, j);
            g->werrno[j] = stage_outputs(w, j, fp, g->n_samples[j] / 16000.0, !w->group_sync,
                                         g->werr[j], sizeof g->werr[j]);
        }
        if (w->group_sync && sync_staging_fs(w) != 0) {
            int e = errno;
            for (int j = 0; j < g->n; j++)
                if (!g->werr[j][0]) {
                    g->werrno[j] = e;
                    snprintf(g->werr[j], sizeof g->werr[j], "%s: cannot sync the outputs: %s",
                             w->pool->run->staging, strerror(e));
                }
        }
        for (int j = 0; j < g->n; j++) {
            double dur = g->n_samples[j] / 16000.0;
            whisperc_batch_select(w->st, j);
            if (!finishing_begin())
                break;
            g->werrno[j] =
                place_outputs(w, j, g->it[j], g->werrno[j], g->werr[j], sizeof g->werr[j]);
            if (storage_lost(w, g->werrno[j], g->werr[j])) {
                finishing_end();
                continue; /* no line; the items written go on */
            }
            record_line(w, g->it[j], g->werr[j][0] == '\0', dur, whisperc_full_language(w->st),
                        audio_s > 0 ? seconds * dur / audio_s : seconds / g->n, g->werr[j], false);
            finishing_end();
        }
        results_sync(w);
        w->write_s += batch_now() - t2;
    } else if (g->n && rc == WHISPERC_ERR_DEVICE) {
        char err[1024]; /* the whole group was on the GPU: each item recorded failed */
        snprintf(err, sizeof err, "%s", whisperc_state_errmsg(w->st));
        for (int j = 0; j < g->n && finishing_begin(); j++) {
            record(w, g->it[j], false, g->n_samples[j] / 16000.0, NULL, batch_now() - t0, err);
            finishing_end();
        }
        device_lost(w, err);
    } else if (g->n && rc != WHISPERC_ERR_ABORTED) {
        group_one_by_one(w, g, fp);
    }
    group_drop(g);
}

static bool run_failed(struct pool *p) {
    pthread_mutex_lock(&p->mu);
    bool failed = p->run->fatal[0] != '\0';
    pthread_mutex_unlock(&p->mu);
    return failed;
}

/* --batch-size: groups of items through whisperc_full_batch. With --read-threads, the next
 * group's files are read on other threads while this one is transcribed (a GPU worker would
 * otherwise wait for them); a group read but not started when the run stops is dropped. */
static void run_groups(struct worker *w, const struct whisperc_full_params *fp, int size) {
    const struct batch_config *cfg = w->pool->run->cfg;
    int readers = cfg->read_threads;
    struct group *cur = calloc(1, sizeof *cur), *next = calloc(1, sizeof *next);
    if (!cur || !next) {
        free(cur), free(next);
        pthread_mutex_lock(&w->pool->mu);
        snprintf(w->pool->run->fatal, sizeof w->pool->run->fatal, "out of memory");
        pthread_mutex_unlock(&w->pool->mu);
        return;
    }
    double t0 = batch_now();
    if (group_take(w, cur, fp, size, readers))
        group_read_all(cur);
    w->read_wait_s += batch_now() - t0;
    while (cur->n_idx) {
        pthread_t th;
        bool ahead = readers > 0 && group_take(w, next, fp, size, readers) &&
                     pthread_create(&th, NULL, group_read_main, next) == 0;
        group_run(w, cur, fp);
        t0 = batch_now(); /* the next group's files, if not read yet */
        if (ahead)
            pthread_join(th, NULL);
        else if (readers > 0 && next->n_idx)
            group_read_all(next); /* no thread for it: read now */
        else if (!group_take(w, next, fp, size, 1))
            next->n_idx = 0;
        else
            group_read_all(next);
        w->read_wait_s += batch_now() - t0;
        struct group *t = cur;
        cur = next, next = t;
        /* read ahead, not started: no line when the run stops, for a signal or a fault (a
         * spoiled GPU context would fail every item of it) */
        if (atomic_load(&stop_level) > 0 || run_failed(w->pool))
            group_drop(cur);
    }
    free(cur), free(next);
}

// ---------------------------------------------------------------------------------------------
// workers

static void on_progress(whisperc_state *st, int percent, void *user) {
    (void)st;
    atomic_store(&((struct worker *)user)->percent, percent);
}

static void on_log(whisperc_log_level level, const char *msg, void *user) {
    struct pool *p = user;
    if (level > WHISPERC_LOG_WARN)
        return;
    pthread_mutex_lock(&p->mu);
    progress_message(p->tty, "%s", msg);
    pthread_mutex_unlock(&p->mu);
}

/* Up to max items into idx; returns how many (0: none left, or the run stops). */
static int take_next(struct pool *p, int *idx, int max) {
    pthread_mutex_lock(&p->mu);
    int n = 0;
    while (n < max && atomic_load(&stop_level) == 0 && !p->run->fatal[0] &&
           p->next < p->run->n_todo)
        idx[n++] = p->run->todo[p->next++];
    pthread_mutex_unlock(&p->mu);
    return n;
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    struct pool *p = w->pool;
    const struct batch_run *r = p->run;
    struct whisperc_full_params fp;
    cli_full_params(&r->cfg->o, &fp);
    fp.n_threads = r->cfg->n_threads;
    fp.abort_fn = abort_requested;
    fp.progress_fn = on_progress;
    fp.progress_user_data = w;
    fp.log_fn = on_log;
    fp.log_user_data = p;
    int idx[1], group = r->cfg->o.batch_size > 1 ? r->cfg->o.batch_size : 1;
    if (group > 1) {
        fp.batch_size = group;
        w->staging_fd = open(r->staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        w->group_sync = staging_syncfs_works(w->staging_fd);
        run_groups(w, &fp, group);
        if (w->staging_fd >= 0)
            close(w->staging_fd);
        w->staging_fd = -1;
    } else {
        while (take_next(p, idx, 1) > 0)
            process(w, &r->items->v[idx[0]], &fp);
    }
    pthread_mutex_lock(&p->mu);
    p->n_running--;
    p->run->progress.decode_s += w->decode_s;
    p->run->progress.read_wait_s += w->read_wait_s;
    p->run->progress.write_s += w->write_s;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

// ---------------------------------------------------------------------------------------------
// the run

/* Waits for the workers, redrawing the progress; says once that a signal is being handled. */
static void supervise(struct pool *p) {
    struct batch_run *r = p->run;
    int announced = 0;
    pthread_mutex_lock(&p->mu);
    while (p->n_running > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += p->tty ? 1 : 5;
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
        int level = atomic_load(&stop_level);
        if (level > announced) {
            announced = level;
            progress_message(p->tty, "%s: %s",
                             atomic_load(&stop_signal) == SIGINT ? "interrupt" : "terminated",
                             announced == 1 ? "finishing the current items (Ctrl-C again to "
                                              "abort them)"
                                            : "aborting the current items");
        }
        if (p->quiet)
            continue;
        r->progress.in_flight = 0;
        for (int i = 0; i < r->cfg->jobs; i++)
            r->progress.in_flight += atomic_load(&p->w[i].percent) / 100.0;
        progress_show(&r->progress, p->tty, false);
    }
    pthread_mutex_unlock(&p->mu);
}

/* One state per worker, created up front so that running out of memory shows before work. */
static int start_workers(struct pool *p) {
    struct batch_run *r = p->run;
    for (int i = 0; i < r->cfg->jobs; i++) {
        struct worker *w = &p->w[i];
        w->pool = p;
        w->index = i;
        atomic_init(&w->percent, 0);
        char err[400];
        if (whisperc_state_new_v2(r->models[i % r->n_models], &w->st, err, sizeof err) !=
            WHISPERC_OK) {
            snprintf(r->fatal, sizeof r->fatal, "decoding state %d: %s", i + 1, err);
            return -1;
        }
    }
    /* params the model cannot take fail the run before its first item, not every item */
    struct whisperc_full_params fp;
    cli_full_params(&r->cfg->o, &fp);
    fp.n_threads = r->cfg->n_threads;
    if (whisperc_full_params_check(p->w[0].st, &fp) != WHISPERC_OK) {
        snprintf(r->fatal, sizeof r->fatal, "%s", whisperc_state_errmsg(p->w[0].st));
        return -1;
    }
    if (r->ready && r->ready(r, r->ready_ctx) != 0)
        return -1;
    /* counted running before it starts: a worker with nothing to do may end (and count itself
     * out) before pthread_create returns */
    for (int i = 0; i < r->cfg->jobs; i++) {
        pthread_mutex_lock(&p->mu);
        p->n_running++;
        pthread_mutex_unlock(&p->mu);
        if (pthread_create(&p->w[i].thread, NULL, worker_main, &p->w[i]) != 0) {
            pthread_mutex_lock(&p->mu); /* the workers started read fatal */
            p->n_running--;
            if (!r->fatal[0])
                snprintf(r->fatal, sizeof r->fatal, "cannot start worker %d", i + 1);
            pthread_mutex_unlock(&p->mu);
            return -1;
        }
        p->n_started++;
    }
    return 0;
}

int batch_run_items(struct batch_run *r) {
    struct pool p = {.run = r, .quiet = r->cfg->quiet};
    p.tty = isatty(STDERR_FILENO) && !p.quiet;
    p.w = calloc((size_t)r->cfg->jobs, sizeof *p.w);
    if (!p.w)
        return snprintf(r->fatal, sizeof r->fatal, "out of memory"), -1;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    struct sigaction sa = {.sa_handler = on_signal}, sa_alarm = {.sa_handler = on_alarm};
    struct sigaction old_int, old_term, old_alarm;
    sigemptyset(&sa.sa_mask);
    sigemptyset(&sa_alarm.sa_mask);
    atomic_store(&stop_level, 0);
    atomic_store(&stop_signal, 0);
    atomic_store(&stopping, 0);
    atomic_store(&stop_timeout_s, r->cfg->stop_timeout_s);
    sigaction(SIGALRM, &sa_alarm, &old_alarm);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    r->progress.t_start = batch_now();

    if (start_workers(&p) != 0)
        atomic_store(&stop_level, 2); /* let the started ones end at once */
    supervise(&p);
    /* every worker is done: a signal from here on (freeing GPU states can take a while) stops
     * nothing, and the stop timeout has nothing left to wait for */
    atomic_store(&stop_timeout_s, 0); /* nor does a late SIGTERM arm it again */
    alarm(0);
    r->signal = atomic_load(&stop_signal);
    for (int i = 0; i < p.n_started; i++) /* every thread created, ended early or not */
        pthread_join(p.w[i].thread, NULL);
    for (int i = 0; i < r->cfg->jobs; i++)
        whisperc_state_free(p.w[i].st);

    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGALRM, &old_alarm, NULL);
    if (!p.quiet)
        progress_show(&r->progress, p.tty, true);
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    free(p.w);
    return r->signal || r->fatal[0] ? -1 : 0;
}
