/*
 * batch_merge.c — `whisper-c batch --merge DIR`: joins the shard summaries
 * DIR/results.shard-K-of-N.jsonl into DIR/results.jsonl, one line per id sorted by id (an ok
 * line wins over a failed one), and says what is missing: shard files absent from 0..N-1, and,
 * when the inputs are given again, ids that no shard has. Run it after every shard finished.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "batch_map.h"

#define MAX_SHARD_FILES 100000
#define MAX_LISTED      10 /* ids named in a message; the rest are counted */

struct shard_file {
    char *name;
    int k, n;
};

static int cmp_shard(const void *a, const void *b) {
    const struct shard_file *x = a, *y = b;
    return x->n != y->n ? (x->n > y->n) - (x->n < y->n) : (x->k > y->k) - (x->k < y->k);
}

static int cmp_line(const void *a, const void *b) {
    return strcmp(((const struct result_line *)a)->id, ((const struct result_line *)b)->id);
}

/* The shard summaries in dir, sorted by N then K. */
static struct shard_file *find_shard_files(const char *dir, int *n_out) {
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    struct shard_file *v = calloc(MAX_SHARD_FILES, sizeof *v);
    int n = 0;
    struct dirent *e;
    while (v && (e = readdir(d)) != NULL && n < MAX_SHARD_FILES) {
        int k, count, end = 0;
        if (sscanf(e->d_name, "results.shard-%d-of-%d.jsonl%n", &k, &count, &end) == 2 && end > 0 &&
            e->d_name[end] == '\0' && k >= 0 && k < count &&
            (v[n].name = strdup(e->d_name)) != NULL) {
            v[n].k = k;
            v[n++].n = count;
        }
    }
    closedir(d);
    if (v)
        qsort(v, (size_t)n, sizeof *v, cmp_shard);
    *n_out = n;
    return v;
}

/* Names the shards of each N that have no file; returns how many. */
static int report_missing_shards(const struct shard_file *f, int n) {
    int missing = 0;
    for (int i = 0; i < n;) {
        int count = f[i].n, j = i, want = 0;
        for (; j < n && f[j].n == count; j++, want++)
            for (; want < f[j].k; want++, missing++)
                fprintf(stderr, "whisper-c batch: merge: shard %d/%d has no results file\n", want,
                        count);
        for (; want < count; want++, missing++)
            fprintf(stderr, "whisper-c batch: merge: shard %d/%d has no results file\n", want,
                    count);
        if (i > 0)
            fprintf(stderr, "whisper-c batch: merge: shard files of more than one N (%d and %d)\n",
                    f[0].n, count);
        i = j;
    }
    return missing;
}

/* Ids of expect that results lacks (the first few named); *failed: those whose line says failed. */
static int report_missing_ids(const struct results *r, const struct batch_items *expect,
                              int *failed) {
    struct strmap have = {0};
    for (int i = 0; i < r->n; i++)
        if (strmap_put(&have, r->v[i].id, i) == -2)
            return strmap_free(&have), -1;
    int missing = 0;
    *failed = 0;
    for (int i = 0; i < expect->n; i++) {
        int k = strmap_get(&have, expect->v[i].id);
        *failed += k >= 0 && !r->v[k].ok;
        if (k < 0 && ++missing <= MAX_LISTED)
            fprintf(stderr, "whisper-c batch: merge: no result for %s (%s)\n", expect->v[i].id,
                    expect->v[i].path);
    }
    if (missing > MAX_LISTED)
        fprintf(stderr, "whisper-c batch: merge: … %d more ids without a result\n",
                missing - MAX_LISTED);
    strmap_free(&have);
    return missing;
}

static int load_all(const char *dir, const struct shard_file *f, int n, struct results *r,
                    char *err, size_t es) {
    for (int i = 0; i < n; i++) {
        char path[4200];
        int n_bad;
        bool rewrite;
        snprintf(path, sizeof path, "%s/%s", dir, f[i].name);
        if (results_load(path, i, r, &n_bad, &rewrite, err, es) != 0)
            return -1;
        if (n_bad)
            fprintf(stderr, "whisper-c batch: merge: %s: %d unreadable line(s) left out\n", path,
                    n_bad);
    }
    return 0;
}

int batch_merge(const struct batch_config *c, const struct batch_items *expect) {
    int n_files = 0, rc = 1, n_dup = 0, n_failed = 0, inputs_failed = 0;
    struct shard_file *f = find_shard_files(c->out_dir, &n_files);
    struct results r = {0};
    char err[1024], dups[512], path[4200], tmp[4200];
    if (!f || n_files == 0) {
        fprintf(stderr, "whisper-c batch: merge: %s: no results.shard-K-of-N.jsonl files\n",
                c->out_dir);
        goto done;
    }
    int missing_shards = report_missing_shards(f, n_files);
    int loaded = load_all(c->out_dir, f, n_files, &r, err, sizeof err);
    if (loaded != 0 || results_dedupe(&r, &n_dup, dups, sizeof dups) != 0) {
        fprintf(stderr, "whisper-c batch: merge: %s\n", loaded ? err : "out of memory");
        goto done;
    }
    if (n_dup)
        fprintf(stderr, "whisper-c batch: merge: %d id(s) finished in two shard files: %s%s\n",
                n_dup, dups, n_dup > 5 ? ", …" : "");
    qsort(r.v, (size_t)r.n, sizeof *r.v, cmp_line);
    int missing_ids = expect ? report_missing_ids(&r, expect, &inputs_failed) : 0;
    snprintf(path, sizeof path, "%s/results.jsonl", c->out_dir);
    snprintf(tmp, sizeof tmp, "%s/.results.jsonl.merge-%ld", c->out_dir, (long)getpid());
    if (missing_ids < 0 || results_write(&r, path, tmp, err, sizeof err) != 0) {
        fprintf(stderr, "whisper-c batch: merge: %s\n", missing_ids < 0 ? "out of memory" : err);
        goto done;
    }
    for (int i = 0; i < r.n; i++)
        n_failed += !r.v[i].ok;
    if (!c->quiet) {
        fprintf(stderr,
                "whisper-c batch: merged %d shard file(s) into %s: %d item(s), %d ok, %d failed",
                n_files, path, r.n, r.n - n_failed, n_failed);
        if (expect)
            fprintf(stderr, ", %d of %d input(s) without a result", missing_ids, expect->n);
        fputc('\n', stderr);
    }
    /* with the inputs: whether each has an ok line (other ids' lines and a shard with nothing to
     * do, hence no file, do not count); without: any failed line or missing shard file */
    rc = expect ? inputs_failed || missing_ids : n_failed || missing_shards;
done:
    for (int i = 0; f && i < n_files; i++)
        free(f[i].name);
    free(f);
    results_free(&r);
    return rc;
}
