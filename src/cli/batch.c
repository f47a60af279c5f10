/*
 * batch.c — `whisper-c batch` (see batch.h for the files and the output layout, docs/batch.md
 * for its use). This file is the sequence: items from the inputs, this shard's share, the lock
 * on the output directory, the resume plan from the results file, the models, the run, the
 * summary.
 *
 * Resume: an item is done when its results file has an "ok" line for its id and every chosen
 * output exists. At the start of a run the results file is compacted (temp file + rename): one
 * line per id, the ok line if there is one; lines of ids that run again (failed ones under
 * --retry-failed, ok ones whose outputs are gone) are removed, so that the file ends with
 * exactly one line per finished id. Lines of ids outside this run's inputs are kept.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch.h"
#include "cli.h"

enum { TODO = 0, DONE = 1, FAILED_BEFORE = 2 };

struct session {
    char tag[64];       /* "all", or "shard-K-of-N" */
    char results[4200]; /* DIR/results.jsonl or DIR/results.shard-K-of-N.jsonl */
    char meta[4200];    /* DIR/.batch */
    char staging[4300]; /* DIR/.batch/<tag>: outputs being written, compaction temp */
    char lock[4300];    /* DIR/.batch/<tag>.lock */
    int lock_fd;
};

#define ERR(...) fprintf(stderr, "whisper-c batch: " __VA_ARGS__)

/* All items of the inputs, ids checked unique over the whole set (so that every shard agrees),
 * then this shard's share; index maps id → position in the share. */
static int collect(const struct batch_config *c, struct batch_items *it, struct strmap *index) {
    char err[1024];
    int rc = 0;
    for (int i = 0; i < c->n_inputs && rc == 0; i++)
        rc = items_add_input(it, c->inputs[i], err, sizeof err);
    for (int i = 0; i < c->n_manifests && rc == 0; i++)
        rc = items_add_manifest(it, c->manifests[i], err, sizeof err);
    if (rc == 0)
        rc = items_index(it, index, err, sizeof err);
    const char *exts[OUT_N_FORMATS];
    int n_exts = 0;
    for (int f = 0; f < OUT_N_FORMATS; f++)
        if (c->formats[f])
            exts[n_exts++] = out_format_ext((enum out_format)f);
    if (rc == 0 && !c->merge)
        rc = items_check_outputs(it, exts, n_exts, err, sizeof err);
    if (rc) {
        ERR("%s\n", err);
        return -1;
    }
    if (it->n == 0 && !c->merge) {
        ERR("no audio files in the inputs\n");
        return -1;
    }
    if (c->shard_n > 1 && !c->merge) {
        strmap_free(index);
        items_keep_shard(it, c->shard_k, c->shard_n);
        if (items_index(it, index, err, sizeof err) != 0)
            return ERR("%s\n", err), -1;
    }
    return 0;
}

/* Empties the staging directory that a killed run of this tag may have left. */
static int clean_staging(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? mkdir(dir, 0777) : -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            char p[4600];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    }
    closedir(d);
    return 0;
}

/* Creates DIR, takes this tag's lock (one run per shard and directory), cleans staging. */
static int open_session(const struct batch_config *c, struct session *s) {
    const char *dir = c->out_dir;
    if (c->shard_n > 0) /* --shard K/1 too: a generic job script's, which --merge then reads */
        snprintf(s->tag, sizeof s->tag, "shard-%d-of-%d", c->shard_k, c->shard_n);
    else
        snprintf(s->tag, sizeof s->tag, "all");
    if (c->shard_n > 0)
        snprintf(s->results, sizeof s->results, "%s/results.%s.jsonl", dir, s->tag);
    else
        snprintf(s->results, sizeof s->results, "%s/results.jsonl", dir);
    snprintf(s->meta, sizeof s->meta, "%s/.batch", dir);
    snprintf(s->staging, sizeof s->staging, "%s/%s", s->meta, s->tag);
    snprintf(s->lock, sizeof s->lock, "%s/%s.lock", s->meta, s->tag);
    s->lock_fd = -1;
    if (strlen(dir) > 3800)
        return ERR("%s: path too long\n", dir), -1;
    if (batch_mkdirs(dir, 0) != 0)
        return ERR("%s: cannot create: %s\n", dir, strerror(errno)), -1;
    /* A run that ends unlinks its lock and removes .batch: a run starting meanwhile may find
     * .batch gone (ENOENT: again), or lock the unlinked file (its inode no longer the path's:
     * again, or two runs would hold "the" lock). Holding the lock file that is linked keeps
     * .batch from being removed. */
    for (int tries = 0;; tries++) {
        if (mkdir(s->meta, 0777) != 0 && errno != EEXIST)
            return ERR("%s: cannot create: %s\n", s->meta, strerror(errno)), -1;
        s->lock_fd = open(s->lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (s->lock_fd < 0 && errno == ENOENT && tries < 100)
            continue;
        if (s->lock_fd < 0)
            return ERR("%s: cannot create: %s\n", s->lock, strerror(errno)), -1;
        if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK) {
                ERR("%s: another whisper-c batch run (%s) is writing here; wait for it or use "
                    "another --shard or -o\n",
                    dir, s->tag);
                close(s->lock_fd);
                s->lock_fd = -1; /* not ours: close_session must leave it alone */
                return -1;
            }
            ERR("warning: %s: cannot lock (%s); make sure no other run uses this shard\n", s->lock,
                strerror(errno));
            break;
        }
        struct stat held, linked;
        if (fstat(s->lock_fd, &held) == 0 && stat(s->lock, &linked) == 0 &&
            held.st_dev == linked.st_dev && held.st_ino == linked.st_ino)
            break;
        close(s->lock_fd); /* the file an ending run unlinked */
        s->lock_fd = -1;
        if (tries >= 100)
            return ERR("%s: the lock file keeps being replaced\n", s->lock), -1;
    }
    if (clean_staging(s->staging) != 0)
        return ERR("%s: %s\n", s->staging, strerror(errno)), -1;
    return 0;
}

/* Removes what the run kept beside the outputs: staging, lock, .batch when empty. Only
 * after taking the lock: lock_fd >= 0. */
static void close_session(struct session *s) {
    if (s->lock_fd < 0)
        return;
    clean_staging(s->staging);
    rmdir(s->staging);
    unlink(s->lock); /* while still holding it, so that no other run holds a stale inode */
    close(s->lock_fd);
    rmdir(s->meta);
}

static bool outputs_exist(const struct batch_config *c, const char *id) {
    for (int f = 0; f < OUT_N_FORMATS; f++) {
        char p[8400];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s.%s", c->out_dir, id, out_format_ext((enum out_format)f));
        if (c->formats[f] && (stat(p, &st) != 0 || !S_ISREG(st.st_mode)))
            return false;
    }
    return true;
}

/* Marks each item DONE, FAILED_BEFORE or TODO from the results lines; drops the lines of the
 * items that run again. Returns whether a line was dropped. */
static bool mark_items(const struct batch_config *c, struct results *res,
                       const struct strmap *index, char *state) {
    bool changed = false;
    for (int i = 0; i < res->n; i++) {
        struct result_line *l = &res->v[i];
        int k = strmap_get(index, l->id);
        if (k < 0)
            continue; /* not an input of this run: kept as it is */
        if (l->ok ? outputs_exist(c, l->id) : !c->retry_failed)
            state[k] = l->ok ? DONE : FAILED_BEFORE;
        else
            changed = l->drop = true;
    }
    return changed;
}

/* Reads the results file and lists the items to run; *res keeps its lines, those of the items
 * that run again marked to drop, and *rewrite says whether the file needs writing again
 * (commit_plan, once the run can start: a --retry-failed whose model or decoding states then
 * fail must not lose the failures' lines). */
static int plan(const struct batch_config *c, struct session *s, const struct batch_items *it,
                const struct strmap *index, struct batch_run *run, struct results *res,
                bool *rewrite) {
    char err[1024], dups[256];
    int n_bad = 0, n_dup = 0, rc = -1;
    *rewrite = false;
    char *state = calloc((size_t)it->n + 1, 1);
    int *todo = malloc(((size_t)it->n + 1) * sizeof *todo);
    if (!state || !todo) {
        ERR("out of memory\n");
        goto done;
    }
    if (results_load(s->results, 0, res, &n_bad, rewrite, err, sizeof err) != 0) {
        ERR("%s\n", err);
        goto done;
    }
    int n_lines = res->n;
    if (n_bad)
        ERR("%s: %d unreadable line(s) dropped (from a killed run?)\n", s->results, n_bad);
    if (results_dedupe(res, &n_dup, dups, sizeof dups) != 0) {
        ERR("out of memory\n");
        goto done;
    }
    *rewrite |= res->n != n_lines;
    *rewrite |= mark_items(c, res, index, state);
    struct batch_progress *p = &run->progress;
    p->n_items = it->n;
    for (int i = 0; i < it->n; i++) {
        p->n_done_before += state[i] == DONE;
        p->n_failed_before += state[i] == FAILED_BEFORE;
        if (state[i] == TODO)
            todo[run->n_todo++] = i;
    }
    p->n_todo = run->n_todo;
    run->todo = todo;
    todo = NULL;
    rc = 0;
done:
    free(state);
    free(todo);
    return rc;
}

struct commit {
    struct session *s;
    struct results *res;
    bool rewrite;
};

/* batch_run.ready: writes the results file again where plan said so (the lines then no longer
 * needed freed), and opens it for appending. */
static int commit_plan(struct batch_run *run, void *ctx) {
    struct commit *cm = ctx;
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s/results.tmp", cm->s->staging);
    int rc = cm->rewrite
                 ? results_write(cm->res, cm->s->results, tmp, run->fatal, sizeof run->fatal)
                 : 0;
    results_free(cm->res);
    if (rc)
        return -1;
    run->results_fd = open(cm->s->results, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (run->results_fd < 0)
        return snprintf(run->fatal, sizeof run->fatal, "%.400s: cannot open: %s", cm->s->results,
                        strerror(errno)),
               -1;
    return 0;
}

/* One model for the CPU workers, or one per --gpus device. */
static int load_models(const struct batch_config *c, whisperc_model **models, int *n) {
    if (!c->n_gpus) {
        *n = 1;
        return cli_load_model(&c->o, &models[0]);
    }
    for (*n = 0; *n < c->n_gpus; ++*n) {
        struct cli_options o = c->o;
        o.device = WHISPERC_DEVICE_CUDA;
        o.gpu_index = c->gpus[*n];
        if (cli_load_model(&o, &models[*n]) != 0)
            return ERR("--gpus: cannot use CUDA device %d\n", c->gpus[*n]), -1;
    }
    return 0;
}

static void say_plan(const struct batch_config *c, const struct session *s,
                     const struct batch_run *r) {
    const struct batch_progress *p = &r->progress;
    if (c->quiet)
        return;
    char shard[64] = "";
    if (c->shard_n > 0)
        snprintf(shard, sizeof shard, " in shard %d/%d", c->shard_k, c->shard_n);
    ERR("%d item(s)%s: %d done before, %d failed before%s, %d to run; results in %s\n", p->n_items,
        shard, p->n_done_before, p->n_failed_before,
        p->n_failed_before && !c->retry_failed ? " (skipped; --retry-failed runs them)" : "",
        r->n_todo, s->results);
    if (r->n_todo && c->n_gpus)
        ERR("%d worker(s), one per GPU\n", c->jobs);
    else if (r->n_todo)
        ERR("%d worker(s) x %d thread(s)\n", c->jobs, c->n_threads);
}

/* The exit status after a run, with the closing line. */
static int finish(const struct batch_config *c, const struct batch_run *r, int run_rc) {
    const struct batch_progress *p = &r->progress;
    int n_failed = p->n_failed + p->n_failed_before;
    if (r->fatal[0])
        ERR("%s\n", r->fatal);
    if (r->signal) {
        int left = p->n_todo - p->n_ok - p->n_failed;
        ERR("stopped by %s with %d item(s) not finished; run the same command again to resume\n",
            r->signal == SIGINT ? "SIGINT" : "SIGTERM", left);
        return 128 + r->signal;
    }
    if (run_rc != 0 || r->fatal[0])
        return 1;
    if (!c->quiet) {
        ERR("%d ok (%d this run), %d failed (%d this run); %.2f h audio in %.0f s\n",
            p->n_done_before + p->n_ok, p->n_ok, n_failed, p->n_failed, p->audio_s / 3600,
            batch_now() - p->t_start);
        if (p->n_ok + p->n_failed) /* where the workers' time went */
            ERR("workers' time: transcribing %.1f s, waiting for files %.1f s, writing %.1f s\n",
                p->decode_s, p->read_wait_s, p->write_s);
    }
    return n_failed ? 1 : 0;
}

int cmd_batch(int argc, char **argv) {
    struct batch_config c;
    int rc = batch_parse(&c, argc, argv);
    if (rc)
        return rc == 1 ? 0 : rc;
    struct batch_items items = {0};
    struct strmap index = {0};
    struct session s = {.lock_fd = -1};
    struct batch_run run = {.cfg = &c, .items = &items, .results_fd = -1};
    struct results res = {0};
    whisperc_model *models[BATCH_MAX_GPUS] = {0};
    rc = 1;
    if (collect(&c, &items, &index) != 0)
        goto done;
    if (c.merge) {
        rc = batch_merge(&c, c.n_inputs || c.n_manifests ? &items : NULL);
        goto done;
    }
    bool rewrite = false;
    if (open_session(&c, &s) != 0 || plan(&c, &s, &items, &index, &run, &res, &rewrite) != 0)
        goto done;
    say_plan(&c, &s, &run);
    run.staging = s.staging;
    run.models = models;
    run.progress.t_start = batch_now();
    struct commit cm = {.s = &s, .res = &res, .rewrite = rewrite};
    run.ready = commit_plan;
    run.ready_ctx = &cm;
    if (run.n_todo == 0) {
        rc = commit_plan(&run, &cm) == 0 ? finish(&c, &run, 0) : (ERR("%s\n", run.fatal), 1);
    } else if (load_models(&c, models, &run.n_models) == 0) { /* else the results as they were */
        rc = finish(&c, &run, batch_run_items(&run));
    }
done:
    results_free(&res);
    for (int i = 0; i < BATCH_MAX_GPUS; i++)
        whisperc_model_free(models[i]);
    if (run.results_fd >= 0)
        close(run.results_fd);
    close_session(&s);
    free((void *)run.todo);
    strmap_free(&index);
    items_free(&items);
    return rc;
}
