/*
 * batch.h — `whisper-c batch`: many files, one model, N workers, resumable (docs/batch.md).
 *
 *   batch.c           the command: inputs → items → resume plan → run → summary
 *   batch_options.c   its command line (transcription options parsed by options.c)
 *   batch_items.c     inputs, ids, shards          batch_manifest.c  manifest formats
 *   batch_results.c   results.jsonl: load, compact, append, merge
 *   batch_run.c       worker threads, signals      batch_progress.c  progress bar, ETA
 *   batch_json.c      JSON lines                   batch_map.c       id → index
 *
 * Output directory layout:
 *   DIR/<id>.txt, .json, …               one per item and format, written atomically
 *   DIR/results.jsonl                    one line per finished item (unsharded runs, merges)
 *   DIR/results.shard-K-of-N.jsonl       the same for shard K of N
 *   DIR/.batch/<tag>.lock, <tag>/        a run's lock and staging area, removed at its end
 */
#ifndef WC_CLI_BATCH_H
#define WC_CLI_BATCH_H

#include <stdbool.h>

#include "batch_items.h"
#include "batch_json.h"
#include "libwhisperc.h"
#include "options.h"
#include "writers.h"

#define BATCH_MAX_MANIFESTS 64
#define BATCH_MAX_GPUS      64
#define BATCH_MAX_GROUP     64 /* --batch-size: as options.c accepts it */

struct batch_config {
    struct cli_options o; /* model, language, threads, … as `transcribe` */
    const char *out_dir;  /* -o */
    const char *inputs[CLI_MAX_FILES];
    int n_inputs;
    const char *manifests[BATCH_MAX_MANIFESTS];
    int n_manifests;
    int jobs;             /* workers */
    int n_threads;        /* CPU threads per worker */
    int shard_k, shard_n; /* --shard K/N; shard_n 0: not given (one results.jsonl) */
    int gpus[BATCH_MAX_GPUS];
    int n_gpus;
    int stop_timeout_s; /* --stop-timeout: an abort may take this long, then the run ends */
    int read_threads;   /* --read-threads: threads reading a worker's next group ahead; 0 none */
    bool formats[OUT_N_FORMATS]; /* by enum out_format */
    bool retry_failed, quiet, merge;
};

/* batch_options.c: parses argv after "batch". Returns 0, 1 after --help, 2 on a usage error
 * (printed). */
int batch_parse(struct batch_config *c, int argc, char **argv);
void batch_usage(void);

// ---- results files (batch_results.c) -------------------------------------------------------

struct result_line {
    char *id;
    char *text; /* the JSON object, without its newline */
    bool ok;    /* "status": "ok" */
    bool drop;  /* leave out when writing */
    int source; /* which file it came from (merge) */
};

struct results {
    struct result_line *v;
    int n, cap;
};

/* Appends the lines of a results file (a missing file adds none). Lines that do not parse are
 * dropped (a run killed mid-write leaves at most a partial last line) and counted in
 * *n_dropped. *rewrite is set when the file must be rewritten to be appended to safely. */
int results_load(const char *path, int source, struct results *r, int *n_dropped, bool *rewrite,
                 char *err, size_t err_size);
/* One line per id: the last "ok" line if any, else the last line; first-appearance order.
 * Ids with ok lines from two sources are counted in *n_dup, the first few named in dup_ids. */
int results_dedupe(struct results *r, int *n_dup, char *dup_ids, size_t dup_size);
/* Writes the lines not dropped to path through tmp (same directory) and rename. */
int results_write(const struct results *r, const char *path, const char *tmp, char *err,
                  size_t err_size);
void results_free(struct results *r);

/* The summary line of one item, newline included. duration < 0 or language NULL: null. */
void results_format(struct sbuf *b, const struct batch_item *item, bool ok, double duration_s,
                    const char *language, double seconds, const char *error);
/* Appends a whole line with one write() and, if sync, syncs it. Returns 0 or -1 (errno); a
 * write that fails part way is truncated back (where ftruncate can), a failed sync leaves
 * the line written. */
int results_append(int fd, const struct sbuf *line, bool sync);

// ---- the run (batch_run.c, batch_progress.c) -----------------------------------------------

struct batch_progress {
    int n_items;                /* in this shard */
    int n_done_before;          /* finished ok by earlier runs */
    int n_failed_before;        /* failed earlier, not retried */
    int n_todo, n_ok, n_failed; /* this run */
    double audio_s, busy_s;     /* audio transcribed, and worker time spent, this run */
    /* workers' time this run, summed: transcribing (whisperc_full_file / _batch), waiting for
     * a group's files to be read, writing outputs and lines (the closing line shows them) */
    double decode_s, read_wait_s, write_s;
    double in_flight;    /* fraction of the current items done, summed over workers */
    double t_start;      /* monotonic seconds */
    double last_plain_s; /* when the last plain line was printed, from t_start */
};

struct batch_run {
    const struct batch_config *cfg;
    const struct batch_items *items;
    const int *todo; /* indices into items, in order */
    int n_todo;
    whisperc_model **models; /* worker w uses models[w % n_models] */
    int n_models;
    const char *staging; /* DIR/.batch/<tag> */
    int results_fd;
    struct batch_progress progress;
    int signal; /* SIGINT or SIGTERM if one stopped the run */
    char fatal[512];
    /* Called once every worker's state exists, before any item starts (batch.c writes the
     * results file again there and opens it, so that a run that cannot start leaves it as it
     * was): nonzero, with fatal filled, stops the run. */
    int (*ready)(struct batch_run *r, void *ctx);
    void *ready_ctx;
};

/* Runs the to-do items on cfg->jobs workers. Returns 0 when every item ran (some may have
 * failed), or -1 when a signal or a fatal error (results file unwritable) stopped the run. */
int batch_run_items(struct batch_run *r);

double batch_now(void); /* monotonic seconds */
/* mkdir -p path, creating only the components after its first `from` bytes; 0 or -1 (errno). */
int batch_mkdirs(const char *path, size_t from);
/* Redraws the bar (TTY) or prints a line (not a TTY, at most every 30 s unless final). */
void progress_show(struct batch_progress *p, bool tty, bool final);
/* Prints a message line above the bar. */
void progress_message(bool tty, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// ---- merge (batch_merge.c) -----------------------------------------------------------------

/* Joins DIR/results.shard-*-of-*.jsonl into DIR/results.jsonl; with expect (all items of the
 * inputs), reports the ids no shard has. Returns the exit code. */
int batch_merge(const struct batch_config *c, const struct batch_items *expect);

#endif /* WC_CLI_BATCH_H */
