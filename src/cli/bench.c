/*
 * bench.c — `whisper-c bench`: where the time goes (load, audio, mel, encoder, decoder per
 * token), the real-time factor, and optionally whisper.cpp's whisper-cli side by side on the
 * same 16 kHz audio, model and thread count. `--synthetic` times a fixed amount of work instead
 * (api_bench.h): one random window and N decoder steps, for any model size and backend.
 * Times are wall clock, GPU work synced at every stage boundary; --synthetic adds each stage's
 * time on the stream (CUDA events), the stream's idle fraction and the encoder's best batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api_bench.h"
#include "cli.h"
#include "encoder/encoder.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* The device's name, written into buf; on the CPU with the OpenBLAS kernels its products
 * run, which can decide the encoder's speed more than the CPU itself (libwhisperc.h
 * whisperc_blas_core). */
static const char *bench_device(const whisperc_model *m, char *buf, size_t n) {
    if (strcmp(whisperc_model_backend(m), "cpu") != 0)
        snprintf(buf, n, "%s", wc_bench_device(m));
    else
        snprintf(buf, n, "cpu (OpenBLAS %s kernels)", whisperc_blas_core());
    return buf;
}

static void print_run(const char *what, const struct whisperc_timings *t, double load_ms) {
    double proc = t->audio_ms + t->vad_ms + t->mel_ms + t->encode_ms + t->decode_ms;
    printf("%s\n", what);
    printf("  load     %10.1f ms\n", load_ms);
    printf("  audio    %10.1f ms   (decode + resample to 16 kHz)\n", t->audio_ms);
    if (t->vad_ms > 0.0)
        printf("  vad      %10.1f ms   (%.2f s of speech kept)\n", t->vad_ms, t->vad_seconds);
    printf("  mel      %10.1f ms\n", t->mel_ms);
    printf("  encoder  %10.1f ms   (%d windows, %.1f ms per window)\n", t->encode_ms, t->n_windows,
           t->n_windows ? t->encode_ms / t->n_windows : 0.0);
    printf("  decoder  %10.1f ms   (%d steps, %.2f ms per token, %d fallbacks)\n", t->decode_ms,
           t->n_decode_tokens, t->n_decode_tokens ? t->decode_ms / t->n_decode_tokens : 0.0,
           t->n_fallbacks);
    printf("  total    %10.1f ms   (RTF %.4f, %.1fx real time, audio %.2f s)\n", proc,
           proc / 1e3 / t->audio_seconds, t->audio_seconds * 1e3 / proc, t->audio_seconds);
}

/* 16 kHz mono s16 WAV of the samples, for whisper-cli. */
static int write_wav16(const char *path, const float *pcm, int n) {
    SF_INFO info = {.samplerate = 16000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    if (!f)
        return -1;
    sf_command(f, SFC_SET_CLIPPING, NULL, SF_TRUE);
    sf_count_t w = sf_writef_float(f, pcm, n);
    return sf_close(f) == 0 && w == n ? 0 : -1;
}

/* Runs argv with stdout to /dev/null and stderr into buf; returns the exit status. */
static int run_capture(char *const argv[], char *buf, size_t cap) {
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(fds[1], 2);
        close(fds[0]);
        execv(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t r;
    while ((r = read(fds[0], buf + len, cap - 1 - len)) > 0 && len + 1 < cap)
        len += (size_t)r;
    while (r > 0) /* drain the rest */
        r = read(fds[0], buf, cap > 1 ? 1 : cap);
    buf[len] = '\0';
    close(fds[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* whisper_print_timings:   encode time =   208.54 ms / ... */
static double wcpp_time(const char *log, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "%s time =", name);
    const char *p = strstr(log, key);
    return p ? strtod(p + strlen(key), NULL) : -1.0;
}

static double compare_whisper_cpp(const struct cli_options *o, const whisperc_model *m,
                                  const float *pcm, int n, int n_threads) {
    char wav[] = "/tmp/whisper-c-bench-XXXXXX.wav";
    int fd = mkstemps(wav, 4);
    if (fd < 0 || (close(fd), write_wav16(wav, pcm, n)) != 0) {
        fprintf(stderr, "whisper-c: cannot write a temporary WAV for whisper.cpp\n");
        return -1;
    }
    char threads[16], bs[16], bo[16];
    snprintf(threads, sizeof threads, "%d", n_threads);
    snprintf(bs, sizeof bs, "%d", o->beam_size); /* the same decoding as ours */
    snprintf(bo, sizeof bo, "%d", o->best_of);
    bool detect = strcasecmp(o->language, "auto") == 0; /* whisper.cpp's: "auto" only */
    const char *lang = detect ? (whisperc_model_is_multilingual(m) ? "auto" : "en") : o->language;
    const char *model = o->model ? o->model : default_model_path();
    char *argv[] = {(char *)o->whisper_cpp,
                    "-m",
                    (char *)model,
                    "-f",
                    wav,
                    "-t",
                    threads,
                    "-bs",
                    bs,
                    "-bo",
                    bo,
                    "-l",
                    (char *)lang,
                    NULL};
    static char log[1 << 16];
    double t0 = now_ms();
    int rc = run_capture(argv, log, sizeof log);
    double wall = now_ms() - t0;
    unlink(wav);
    if (rc != 0) {
        fprintf(stderr, "whisper-c: %s exited with %d:\n%s\n", o->whisper_cpp, rc, log);
        return -1;
    }
    double total = wcpp_time(log, "total"), load = wcpp_time(log, "load");
    printf("whisper.cpp (%s, -t %s -bs %s -bo %s -l %s, 16 kHz WAV)\n", o->whisper_cpp, threads, bs,
           bo, lang);
    printf("  load     %10.1f ms\n", load);
    printf("  mel      %10.1f ms\n", wcpp_time(log, "mel"));
    printf("  encoder  %10.1f ms\n", wcpp_time(log, "encode"));
    printf("  decoder  %10.1f ms   (decode + batchd + prompt + sample)\n",
           wcpp_time(log, "decode") + wcpp_time(log, "batchd") + wcpp_time(log, "prompt") +
               wcpp_time(log, "sample"));
    printf("  total    %10.1f ms   (%.1f ms without load; process wall time %.1f ms)\n", total,
           total - load, wall);
    return total - load;
}

/* ---- --synthetic ---- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The minimum and median of v[0..n) (sorted in place). */
struct stat2 {
    double min, median;
};
static struct stat2 stats(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (struct stat2){v[0], v[n / 2]};
}

/* "  name   host (median)   stream note": host min and median, stream min over the runs
 * (host[] and dev[] are sorted in place; a stream time is NaN on a backend that does not
 * time, printed "-"). */
static void print_stage(const char *name, double *host, double *dev, int n, const char *note) {
    struct stat2 h = stats(host, n), d = stats(dev, n);
    char ds[32] = "        -";
    if (!isnan(d.min))
        snprintf(ds, sizeof ds, "%9.2f", d.min);
    printf("  %-10s %9.2f  %9.2f  %s%s\n", name, h.min, h.median, ds, note);
}

/* The encoder over n_windows windows in passes of 1 (alone), 2, 4, ... up to the largest
 * pass the state takes, after one warm-up of each (GPU: GEMM shapes, arena): ms per window.
 * Batch 1 is what transcribe() does; the best batch is what whisperc_full_batch can reach. */
static int bench_encoder_batch(const struct cli_options *o, whisperc_state *st, int n_windows) {
    int runs = o->runs, rc = 0,
        cap = n_windows < encoder_pass_cap() ? n_windows : encoder_pass_cap();
    double *t = calloc((size_t)runs * 2, sizeof *t); /* [host, stream][run] */
    double one = 0, best = 0, best_dev = 0;
    int best_pass = 1;
    if (!t)
        rc = WHISPERC_ERR_NO_MEMORY;
    if (!rc)
        printf("encoder, %d windows (ms per window: host wall clock, stream from timer marks "
               "around each pass; best of %d run(s))\n  %-10s %9s  %9s  %9s\n",
               n_windows, runs, "batch", "host ms", "median", "stream ms");
    /* 1, 2, 4, ... and cap itself */
    for (int pass = 1; !rc && pass <= cap; pass = pass * 2 > cap && pass < cap ? cap : pass * 2) {
        struct wc_bench_encoder_times e = {0};
        for (int r = -1; !rc && r < runs; r++) {
            rc = wc_bench_encoder(st, o->n_threads, n_windows, pass, 100 + (uint64_t)r, &e);
            if (r >= 0) {
                t[r] = e.ms / e.n_windows;
                t[runs + r] = e.dev_ms / e.n_windows;
            }
        }
        if (rc)
            break;
        char name[32];
        snprintf(name, sizeof name, pass == 1 ? "1 (alone)" : "%d", pass);
        print_stage(name, t, t + runs, runs, "");
        if (pass == 1)
            one = t[0];
        if (pass == 1 || t[0] < best) {
            best = t[0];
            best_dev = t[runs];
            best_pass = pass;
        }
    }
    if (rc) {
        fprintf(stderr, "whisper-c: %s\n",
                whisperc_state_errmsg(st)[0] ? whisperc_state_errmsg(st) : whisperc_status_str(rc));
    } else {
        printf("  best batch %d: %.2f ms per window host, %.2f stream (%.2fx batch 1)\n", best_pass,
               best, best_dev, one / best);
    }
    free(t);
    return rc;
}

/* The batch decoder's steps (whisperc_full_batch's), n_lanes lanes, fastest of o->runs, and
 * whether they ran as step graphs (WHISPERC_NO_CUDA_GRAPH=1 for the same without). */
static int bench_batch_steps(const struct cli_options *o, whisperc_state *st, int n_lanes) {
    struct wc_bench_batch_times best = {0}, x;
    for (int r = 0; r < o->runs; r++) {
        int rc = wc_bench_batch_steps(st, n_lanes, o->n_tokens, 100 + (uint64_t)r, &x);
        if (rc) {
            fprintf(stderr, "whisper-c: %s\n", whisperc_state_errmsg(st));
            return rc;
        }
        if (r == 0 || x.steps_ms < best.steps_ms)
            best = x;
    }
    int steps = best.n_steps ? best.n_steps : 1;
    printf("batch decoder steps (whisperc_full_batch's), %d lanes x %d steps, best of %d run(s):\n",
           n_lanes, best.n_steps, o->runs);
    printf("  %-10s host %.3f ms, stream %.3f ms (forward and pick)\n", "batch step",
           best.steps_ms / steps, best.steps_dev_ms / steps);
    printf("  %-10s %s\n", "graphs", best.graph_why);
    return 0;
}

/* --throughput: batched windows with a fixed number of tokens each (api_bench.h). */
static int bench_throughput(const struct cli_options *o, whisperc_state *st) {
    int lanes = o->batch_size ? o->batch_size : 64;
    struct wc_bench_throughput_times t;
    int rc = wc_bench_throughput(st, o->n_threads, lanes, o->throughput, o->n_tokens, o->n_context,
                                 7, &t);
    if (rc) {
        fprintf(stderr, "whisper-c: %s\n", whisperc_state_errmsg(st));
        return rc;
    }
    double steps = t.n_steps ? (double)t.n_steps : 1.0, per = t.wall_ms / t.n_windows;
    printf("batched throughput: %d windows of random log-Mel, %d lanes, %d decoder steps each "
           "(argmax,\nnever stopping), encoder passes of %d, after a warm-up wave; host wall "
           "clock, synced per stage\n",
           t.n_windows, t.n_lanes, (int)(t.n_steps / (t.n_waves ? t.n_waves : 1)), t.per_pass);
    printf("  %-10s %9.1f ms  (%.2f ms a window, its cross K/V included)\n", "encoder", t.encode_ms,
           t.encode_ms / t.n_windows);
    printf("  %-10s %9.1f ms  (each lane's prompt of %d tokens and first pick)\n", "prompts",
           t.prompt_ms, t.n_prompt);
    printf("  %-10s %9.1f ms  (%ld steps in %d waves, %.3f ms a step, %ld tokens)\n", "decoder",
           t.steps_ms, t.n_steps, t.n_waves, t.steps_ms / steps, t.n_tokens);
    printf("  %-10s %9.1f ms  (%.2f ms a window: %.0fx real time)\n", "total", t.wall_ms, per,
           30e3 / per);
    return 0;
}

static int bench_synthetic(const struct cli_options *o, whisperc_model *m, double load_ms) {
    whisperc_state *st = NULL;
    int n_seq = o->beam_size, runs = o->runs, rc = whisperc_state_new(m, &st);
    struct wc_bench_times *w = calloc((size_t)runs, sizeof *w);
    double *t = calloc((size_t)runs * 12, sizeof *t); /* [stage][host, stream][run] */
    struct wc_bench_times warm = {0};
    if (!rc && (!t || !w))
        rc = WHISPERC_ERR_NO_MEMORY;
    double t0 = now_ms();
    if (!rc) /* warm-up: the first window pays for kernel loading and allocator growth */
        rc = wc_bench_window(st, o->n_threads, o->n_tokens, n_seq, 1, &warm);
    double warm_ms = now_ms() - t0;
    int best = 0; /* the run with the fastest window: per step, RTF and idle come from it */
    for (int r = 0; !rc && r < runs; r++) {
        rc = wc_bench_window(st, o->n_threads, o->n_tokens, n_seq, 2 + (uint64_t)r, &w[r]);
        if (w[r].wall_ms < w[best].wall_ms)
            best = r;
    }
    if (rc) {
        fprintf(stderr, "whisper-c: %s\n",
                st && whisperc_state_errmsg(st)[0] ? whisperc_state_errmsg(st)
                                                   : whisperc_status_str(rc));
    } else {
        for (int r = 0; r < runs; r++) {
            const struct wc_bench_times *x = &w[r];
            double host[6] = {x->encode_ms,
                              x->cross_ms,
                              x->prompt_ms,
                              x->steps_ms,
                              x->encode_ms + x->cross_ms + x->prompt_ms + x->steps_ms,
                              0};
            double dev[6] = {x->encode_dev_ms,
                             x->cross_dev_ms,
                             x->prompt_dev_ms,
                             x->steps_dev_ms + x->pick_dev_ms,
                             x->encode_dev_ms + x->cross_dev_ms + x->prompt_dev_ms +
                                 x->steps_dev_ms + x->pick_dev_ms,
                             0};
            for (int k = 0; k < 5; k++) {
                t[(2 * k) * runs + r] = host[k];
                t[(2 * k + 1) * runs + r] = dev[k];
            }
        }
        const struct wc_bench_times *b = &w[best];
        double busy = b->encode_dev_ms + b->cross_dev_ms + b->prompt_dev_ms + b->steps_dev_ms +
                      b->pick_dev_ms;
        double idle = 1.0 - busy / b->wall_ms;
        idle = idle < 0.0 ? 0.0 : idle; /* the clocks differ by microseconds */
        int steps = b->n_steps ? b->n_steps : 1;
        char note[96], threads[32] = "default threads";
        if (o->n_threads > 0)
            snprintf(threads, sizeof threads, "%d threads", o->n_threads);
        char device[160];
        printf("whisper-c %s bench --synthetic (%s, %s backend: %s, %s)\n", whisperc_version(),
               whisperc_model_type(m), whisperc_model_backend(m),
               bench_device(m, device, sizeof device), threads);
        printf("one 30 s window of random log-Mel, %d decoder steps x %d sequence(s), best of %d "
               "run(s)\nhost: wall clock, the stream synced at each stage end; stream: from a "
               "timer mark\nbefore a stage's first op to one after its last (CUDA events; CPU: "
               "the clock as ops return)\n",
               b->n_steps, n_seq, runs);
        printf("  %-10s %s\n", "device", device);
        printf("  %-10s %9.1f ms\n", "load", load_ms);
        printf("  %-10s %9.1f ms  (one window first, not counted: kernel loads, allocations)\n",
               "warm-up", warm_ms);
        printf("  %-10s %9s  %9s  %9s\n", "stage", "host ms", "median", "stream ms");
        print_stage("encoder", t, t + runs, runs, "");
        print_stage("cross K/V", t + 2 * runs, t + 3 * runs, runs, "");
        snprintf(note, sizeof note, "  (%d tokens)", b->n_prompt);
        print_stage("prompt", t + 4 * runs, t + 5 * runs, runs, note);
        snprintf(note, sizeof note, "  (%d steps)", b->n_steps);
        print_stage("decoder", t + 6 * runs, t + 7 * runs, runs, note);
        print_stage("window", t + 8 * runs, t + 9 * runs, runs, "");
        printf("  %-10s host %.3f ms, stream %.3f ms (forward %.3f + pick %.3f); host - stream "
               "%.3f ms:\n  %-10s host time outside the stream's intervals (calls before the "
               "first op runs, sync wake-up)\n",
               "per step", b->steps_ms / steps, (b->steps_dev_ms + b->pick_dev_ms) / steps,
               b->steps_dev_ms / steps, b->pick_dev_ms / steps,
               (b->steps_ms - b->steps_dev_ms - b->pick_dev_ms) / steps, "");
        printf("  %-10s %.6f  (%.1fx real time: the window's host time / 30 s of audio)\n", "RTF",
               b->wall_ms / 30e3, 30e3 / b->wall_ms);
        printf("  %-10s %.3f  (1 - busy / wall: busy %.2f ms = the stream intervals of encoder, "
               "cross K/V,\n  %-10s prompt and each step's forward and pick; wall %.2f ms = host "
               "time from the encoder's\n  %-10s first mark to the last step's sync; gaps between "
               "a stage's ops count as busy)\n",
               "idle", idle, busy, "", b->wall_ms, "");
    }
    int n_windows = o->batch_size;
    if (!n_windows && strcmp(whisperc_model_backend(m), "cpu") != 0)
        n_windows = encoder_pass_cap(); /* on a GPU the encoder batch is part of the answer */
    if (!rc)
        rc = bench_batch_steps(o, st, n_seq);
    if (!rc && n_windows)
        rc = bench_encoder_batch(o, st, n_windows);
    if (!rc && o->throughput)
        rc = bench_throughput(o, st);
    free(t);
    free(w);
    whisperc_state_free(st);
    return rc ? 1 : 0;
}

/* --batch-size: every file alone (timings summed), then all through whisperc_full_batch; the
 * fastest of o->runs each. The transcripts are the same (tests/test_batch.c checks it). */
static int bench_batch(const struct cli_options *o, whisperc_model *m,
                       struct whisperc_full_params *fp) {
    float **pcm = calloc((size_t)o->n_files, sizeof *pcm);
    int *n = calloc((size_t)o->n_files, sizeof *n), rc = pcm && n ? 0 : 1;
    char err[512];
    for (int i = 0; !rc && i < o->n_files; i++)
        if (whisperc_load_audio(o->files[i], &pcm[i], &n[i], err, sizeof err) != WHISPERC_OK) {
            fprintf(stderr, "whisper-c: %s\n", err);
            rc = 1;
        }
    whisperc_state *st = NULL;
    if (!rc)
        rc = whisperc_state_new(m, &st);
    struct whisperc_timings best[2], t = {.size = sizeof t};
    for (int mode = 0; !rc && mode < 2; mode++)
        for (int r = 0; !rc && r < o->runs; r++) {
            struct whisperc_timings sum = {.size = sizeof sum};
            if (mode == 1) {
                fp->batch_size = o->batch_size;
                rc = whisperc_full_batch(st, fp, (const float *const *)pcm, n, o->n_files);
                whisperc_state_timings(st, &sum);
            }
            for (int i = 0; mode == 0 && !rc && i < o->n_files; i++) {
                rc = whisperc_full(st, fp, pcm[i], n[i]);
                whisperc_state_timings(st, &t);
                sum.mel_ms += t.mel_ms;
                sum.encode_ms += t.encode_ms;
                sum.decode_ms += t.decode_ms;
                sum.n_windows += t.n_windows;
                sum.n_decode_tokens += t.n_decode_tokens;
                sum.n_fallbacks += t.n_fallbacks;
                sum.audio_seconds += t.audio_seconds;
            }
            double total = sum.mel_ms + sum.encode_ms + sum.decode_ms;
            if (r == 0 || total < best[mode].mel_ms + best[mode].encode_ms + best[mode].decode_ms)
                best[mode] = sum;
        }
    if (rc) {
        fprintf(stderr, "whisper-c: %s\n", st ? whisperc_state_errmsg(st) : "out of memory");
    } else {
        char what[256];
        snprintf(what, sizeof what,
                 "whisper-c %s (%s, %s backend, %d threads), %d files one by one",
                 whisperc_version(), whisperc_model_type(m), whisperc_model_backend(m),
                 fp->n_threads, o->n_files);
        print_run(what, &best[0], 0.0);
        snprintf(what, sizeof what, "the same files, whisperc_full_batch with batch size %d",
                 o->batch_size);
        print_run(what, &best[1], 0.0);
        /* where a batched run's decoder time goes: steps (each one token for every lane
         * decoding), and whether they replayed as step graphs */
        const struct whisperc_timings *b = &best[1];
        char why[640];
        wc_bench_graphs(st, why, sizeof why);
        double per = b->n_batch_steps ? 1.0 / b->n_batch_steps : 0.0;
        printf("  batch    %6d steps   (%.2f ms a step with the prompts", b->n_batch_steps,
               b->decode_ms * per);
        printf(", %.1f windows a step%s", b->n_decode_tokens * per,
               o->beam_size > 1 ? " (each its beams)" : "");
        printf(")\n");
        printf("  graphs   %s\n", why);
        double alone = best[0].mel_ms + best[0].encode_ms + best[0].decode_ms;
        double batch = best[1].mel_ms + best[1].encode_ms + best[1].decode_ms;
        printf("speed-up: %.2fx overall, %.2fx in the decoder\n", alone / batch,
               best[0].decode_ms / best[1].decode_ms);
    }
    for (int i = 0; pcm && i < o->n_files; i++)
        free(pcm[i]);
    free(pcm);
    free(n);
    whisperc_state_free(st);
    return rc ? 1 : 0;
}

/* ---- a file ---- */

int cmd_bench(int argc, char **argv) {
    struct cli_options o;
    int rc = cli_parse(&o, argc, argv, true);
    if (rc == 0)
        rc = cli_check_stdin(&o, true);
    if (rc)
        return rc == 1 ? 0 : rc;
    whisperc_model *m = NULL;
    whisperc_state *st = NULL;
    double t0 = now_ms();
    if (cli_load_model(&o, &m))
        return 1;
    double load_ms = now_ms() - t0;
    if (o.synthetic) {
        rc = bench_synthetic(&o, m, load_ms);
        whisperc_model_free(m);
        return rc;
    }
    struct whisperc_full_params fp;
    cli_full_params(&o, &fp);
    if (o.batch_size) {
        rc = bench_batch(&o, m, &fp);
        whisperc_model_free(m);
        return rc;
    }
    char err[512];
    float *pcm = NULL;
    int n = 0;
    t0 = now_ms();
    if (whisperc_load_audio(o.files[0], &pcm, &n, err, sizeof err) != WHISPERC_OK) {
        fprintf(stderr, "whisper-c: %s\n", err);
        whisperc_model_free(m);
        return 1;
    }
    double audio_ms = now_ms() - t0;
    rc = whisperc_state_new_v2(m, &st, err, sizeof err);
    if (rc)
        fprintf(stderr, "whisper-c: %s\n", err);
    /* On a GPU the first run loads kernels and grows the arenas: not what the runs measure. */
    bool warm_up = strcmp(whisperc_model_backend(m), "cpu") != 0;
    double warm_ms = 0;
    if (!rc && warm_up) {
        t0 = now_ms();
        rc = whisperc_full(st, &fp, pcm, n);
        warm_ms = now_ms() - t0;
    }
    struct whisperc_timings best = {.size = sizeof best}, t = {.size = sizeof t};
    for (int r = 0; !rc && r < o.runs; r++) {
        rc = whisperc_full(st, &fp, pcm, n);
        whisperc_state_timings(st, &t);
        t.audio_ms = audio_ms;
        if (r == 0 || t.total_ms < best.total_ms)
            best = t;
    }
    if (rc && st) {
        fprintf(stderr, "whisper-c: %s\n", whisperc_state_errmsg(st));
    } else {
        char what[512];
        snprintf(what, sizeof what, "whisper-c %s (%s, %s backend, %d threads, -bs %d -bo %d): %s",
                 whisperc_version(), whisperc_model_type(m), whisperc_model_backend(m),
                 fp.n_threads, o.beam_size, o.best_of, o.files[0]);
        print_run(what, &best, load_ms);
        char device[160];
        printf("  device   %s\n", bench_device(m, device, sizeof device));
        if (warm_up)
            printf("  warm-up  %10.1f ms   (one run before the timed ones, not counted)\n",
                   warm_ms);
        if (o.whisper_cpp) {
            double ours = best.mel_ms + best.encode_ms + best.decode_ms;
            double theirs = compare_whisper_cpp(&o, m, pcm, n, fp.n_threads);
            if (theirs > 0)
                printf("speed-up (without load and audio decoding): %.2fx\n", theirs / ours);
            else
                rc = 1;
        }
    }
    free(pcm);
    whisperc_state_free(st);
    whisperc_model_free(m);
    return rc ? 1 : 0;
}
