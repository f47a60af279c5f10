/*
 * batch_options.c — the command line of `whisper-c batch`. Its own options are taken out
 * first; the rest (model, language, threads, output formats, …) and the inputs go to
 * options.c's cli_parse, so they mean exactly what they mean for `transcribe`.
 */
#define _GNU_SOURCE /* sched_getaffinity: the cores this process may use (Slurm, taskset) */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"

void batch_usage(void) {
    printf(
        "usage: whisper-c batch [options] -o DIR INPUT...\n"
        "       whisper-c batch [options] -o DIR --manifest FILE\n"
        "       whisper-c batch --merge DIR [INPUT... | --manifest FILE]\n"
        "\n"
        "Transcribes many files with one model loaded once, into DIR/<id>.<ext> plus a summary\n"
        "line per file in DIR/results.jsonl. Rerunning the same command resumes: finished items\n"
        "are skipped, a killed run loses only the items it was working on. See docs/batch.md.\n"
        "\n"
        "INPUT is an audio file, a directory (searched recursively for audio files) or a quoted\n"
        "glob ('data/*/*.flac'). The id of a file is its path below the directory or glob root\n"
        "without the extension, or the manifest's id column.\n"
        "\n"
        "batch options:\n"
        "  -o,  --output-dir DIR   where the outputs and results.jsonl go (created)\n"
        "       --manifest FILE    .txt (one path per line), .csv/.tsv (a header with a path\n"
        "                          column and optionally id), .jsonl ({\"path\": …, \"id\": …});\n"
        "                          '-' reads a text list from standard input; repeatable\n"
        "  -j,  --jobs N           workers, each with its own decoding state (default: one per\n"
        "                          4 cores, or cores / -t); -t defaults to cores / jobs\n"
        "       --gpus LIST        one worker per CUDA device, e.g. 0,1 (instead of --jobs)\n"
        "       --batch-size N     each worker transcribes up to N items at once in one state\n"
        "                          (whisperc_full_batch: the decoder steps them together; the\n"
        "                          same outputs; beam search too: each item's beams step\n"
        "                          together with the others'; -wt, -ml and --vad too). 1..64\n"
        "       --read-threads N   with --batch-size: N threads per worker read the next group's\n"
        "                          files while the current one is transcribed (default: 8 with\n"
        "                          --gpus, 0 on the CPU, whose workers use every core); 0..64\n"
        "       --shard K/N        only the items whose id hashes to K (0 <= K < N); results go\n"
        "                          to DIR/results.shard-K-of-N.jsonl\n"
        "       --merge DIR        join DIR/results.shard-*.jsonl into DIR/results.jsonl; with\n"
        "                          inputs, also report the ids no shard has\n"
        "       --retry-failed     run the items that failed before again (skipped otherwise)\n"
        "       --stop-timeout S   after SIGTERM (or a second SIGINT) the running items are\n"
        "                          aborted; if they have not stopped S seconds later the run\n"
        "                          ends at once, resumable (default 5; 0: wait for them)\n"
        "       --formats LIST     txt,srt,vtt,json,csv,tsv,lrc,score.txt (default txt,json);\n"
        "                          or -otxt -osrt -ovtt -oj -ojf -ocsv -otsv -olrc -ls\n"
        "  -q,  --quiet            no progress, no summary; errors only\n"
        "transcription options, as for `whisper-c transcribe`:\n"
        "  -m FILE  -l LANG  -tr  -t N  -bs N  -bo N  --prompt TEXT  -nt  -nf  --seed N\n"
        "  -tp N  -tpi N  -lpt N  -nth N  --compression-ratio-threshold N\n"
        "  -wt  -ml N  -sow  --alignment-heads NAME  --max-line-width N  --max-line-count N\n"
        "  --max-words-per-line N  --highlight-words  -ot N  -d N  --vad (-vt -vspd -vsd -vp -vm)\n"
        "  --suppress-regex RE  --suppress-tokens LIST  -di\n"
        "  --device auto|cpu|cuda  --max-memory MIB  --quant-weights auto|widen|keep\n"
        "\n"
        "Exit status: 0 every item ok, 1 some failed (or an error), 2 usage, 130/143 interrupted\n"
        "by SIGINT/SIGTERM (resumable).\n");
}

static int usage_error(const char *fmt, const char *arg) {
    fputs("whisper-c batch: ", stderr);
    fprintf(stderr, fmt, arg ? arg : "");
    fputs(" (see whisper-c batch --help)\n", stderr);
    return 2;
}

static int parse_count(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_shard(struct batch_config *c, const char *s) {
    char k[32], *slash = s ? strchr(s, '/') : NULL;
    if (!slash || (size_t)(slash - s) >= sizeof k)
        return usage_error("--shard needs K/N with 0 <= K < N, got '%s'", s);
    memcpy(k, s, (size_t)(slash - s));
    k[slash - s] = '\0';
    if (parse_count(slash + 1, 1, 1000000, &c->shard_n) ||
        parse_count(k, 0, c->shard_n - 1, &c->shard_k))
        return usage_error("--shard needs K/N with 0 <= K < N (K counts from 0), got '%s'", s);
    return 0;
}

static int parse_gpus(struct batch_config *c, const char *s) {
    for (const char *p = s; p && *p;) {
        char one[16];
        size_t n = strcspn(p, ",");
        int g;
        snprintf(one, sizeof one, "%.*s", (int)(n < 15 ? n : 15), p);
        if (n >= 15 || parse_count(one, 0, 63, &g) || c->n_gpus == BATCH_MAX_GPUS)
            return usage_error("--gpus needs device numbers 0..63 like 0,1, got '%s'", s);
        for (int i = 0; i < c->n_gpus; i++)
            if (c->gpus[i] == g)
                return usage_error("--gpus names a device twice: '%s'", s);
        c->gpus[c->n_gpus++] = g;
        p += n + (p[n] == ',');
    }
    return c->n_gpus ? 0 : usage_error("--gpus needs device numbers like 0,1%s", NULL);
}

static int parse_formats(struct batch_config *c, const char *s) {
    for (const char *p = s; p && *p;) {
        size_t n = strcspn(p, ",");
        int f = 0;
        while (f < OUT_N_FORMATS && !(strlen(out_format_ext((enum out_format)f)) == n &&
                                      !strncmp(p, out_format_ext((enum out_format)f), n)))
            f++;
        if (f == OUT_N_FORMATS)
            return usage_error("--formats takes txt, srt, vtt, json, csv, tsv, lrc, score.txt "
                               "separated by commas, got '%s'",
                               s);
        c->formats[f] = true;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* One of batch's own options at argv[*i]: 1 if taken (its value too), 0 if not, 2 error. */
static int take_batch_option(struct batch_config *c, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    int rc = 0;
    if (!strcmp(a, "--retry-failed"))
        return c->retry_failed = true, 1;
    if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
        return c->quiet = true, 1;
    if (!strcmp(a, "-o") || !strcmp(a, "--output-dir") || !strcmp(a, "--merge")) {
        c->merge |= !strcmp(a, "--merge");
        if (v && c->out_dir && strcmp(c->out_dir, v) != 0)
            rc = usage_error("two output directories: %s", v);
        c->out_dir = v;
    } else if (!strcmp(a, "--manifest")) {
        if (c->n_manifests == BATCH_MAX_MANIFESTS)
            rc = usage_error("too many --manifest%s", NULL);
        else
            c->manifests[c->n_manifests++] = v;
    } else if (!strcmp(a, "-j") || !strcmp(a, "--jobs")) {
        if (v && parse_count(v, 1, 1024, &c->jobs))
            rc = usage_error("--jobs needs a number in 1..1024, got '%s'", v);
    } else if (!strcmp(a, "--read-threads")) {
        if (v && parse_count(v, 0, 64, &c->read_threads))
            rc = usage_error("--read-threads needs a number in 0..64, got '%s'", v);
    } else if (!strcmp(a, "--stop-timeout")) {
        if (v && parse_count(v, 0, 86400, &c->stop_timeout_s))
            rc = usage_error("--stop-timeout needs a number of seconds in 0..86400, got '%s'", v);
    } else if (!strcmp(a, "--shard"))
        rc = v ? parse_shard(c, v) : 0;
    else if (!strcmp(a, "--gpus"))
        rc = v ? parse_gpus(c, v) : 0;
    else if (!strcmp(a, "--formats"))
        rc = v ? parse_formats(c, v) : 0;
    else
        return 0;
    if (!v)
        return usage_error("%s needs a value", a);
    ++*i;
    return rc ? rc : 1;
}

/* The cores this process may run on. */
static int n_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Checks what cli_parse accepted, picks formats, workers and threads. */
static int finish(struct batch_config *c) {
    const struct cli_options *o = &c->o;
    if (o->n_output_base)
        return usage_error("-of does not apply to batch; outputs go to -o DIR%s", NULL);
    if (!c->out_dir)
        return usage_error("no output directory (-o DIR)%s", NULL);
    if (!c->merge && c->n_inputs == 0 && c->n_manifests == 0)
        return usage_error("no input (a file, directory, glob or --manifest FILE)%s", NULL);
    if (c->n_gpus && c->jobs)
        return usage_error("--gpus runs one worker per device; leave out --jobs%s", NULL);
    if (o->diarize && o->batch_size > 1)
        return usage_error("-di measures each file's channels as whisperc_full_file reads it; "
                           "--batch-size decodes files read ahead: use one or the other%s",
                           NULL);
    if (o->print_colors != COLORS_NEVER || o->print_special)
        return usage_error("-pc, --print-confidence and -ps style the segments printed by "
                           "transcribe; batch prints none%s",
                           NULL);
    bool any = false;
    for (int f = 0; f < OUT_N_FORMATS; f++)
        any |= (c->formats[f] |= o->out[f]);
    if (!any)
        c->formats[OUT_TXT] = c->formats[OUT_JSON] = true;
    int cores = n_cores();
    if (c->n_gpus)
        c->jobs = c->n_gpus;
    else if (!c->jobs)
        c->jobs = o->n_threads ? cores / o->n_threads : cores / 4;
    if (c->jobs < 1)
        c->jobs = 1;
    c->n_threads = o->n_threads ? o->n_threads : cores / c->jobs > 0 ? cores / c->jobs : 1;
    if (c->read_threads < 0) /* a GPU worker leaves the cores idle; CPU workers use them all */
        c->read_threads = c->n_gpus ? (cores < 8 ? cores : 8) : 0;
    return 0;
}

int batch_parse(struct batch_config *c, int argc, char **argv) {
    memset(c, 0, sizeof *c);
    c->stop_timeout_s = 5;
    c->read_threads = -1; /* the default, picked in finish() */
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest)
        return usage_error("out of memory%s", NULL);
    int n_rest = 0, rc = 0;
    for (int i = 0; i < argc && rc == 0; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            batch_usage();
            rc = 1;
        } else if ((rc = take_batch_option(c, argc, argv, &i)) == 1)
            rc = 0;
        else if (rc == 0)
            rest[n_rest++] = argv[i];
    }
    /* cli_parse wants at least one file, and a manifest may be the only input: a sentinel
     * file goes last, recognised by its address (a value-less option would swallow it). */
    static char sentinel[] = "-";
    rest[n_rest++] = sentinel;
    if (rc == 0 && (rc = cli_parse(&c->o, n_rest, rest, false)) == 0) {
        int n = c->o.n_files;
        if (n == 0 || c->o.files[n - 1] != sentinel)
            rc = usage_error("%s needs a value", rest[n_rest - 2]);
        for (int i = 0; i < n - 1 && rc == 0; i++)
            c->inputs[c->n_inputs++] = c->o.files[i];
        rc = rc ? rc : finish(c);
    }
    free(rest);
    return rc;
}
