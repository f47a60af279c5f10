/*
 * main.c — the whisper-c command: `transcribe`, `batch` (batch.c), `bench` and `ptx`.
 * Transcription goes through libwhisperc.h only; `ptx` (ptx_cmd.c) reaches into the library's
 * kernel generators.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "blas_reexec.h"
#include "cli.h"
#include "libwhisperc.h"
#include "options.h"
#include "print.h"
#include "writers.h"

/* SIGINT/SIGTERM during `transcribe` end the process at once, from the handler: until the
 * outputs of a file are written nothing is on disk, and the run may be stuck where it cannot be
 * aborted (libsndfile looping on a corrupt header, a long window). Only while outputs are being
 * written (temporary file, then rename) does the handler leave it to the loop below, which stops
 * once they are whole. */
static atomic_int stop_signal, writing_outputs; /* atomics: the handler runs on any thread */
static _Atomic(const char *) current_file;      /* the file being transcribed, for the message */

static void write_str(const char *s) {
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

static void on_stop_signal(int sig) {
    atomic_store(&stop_signal, sig);
    if (atomic_load(&writing_outputs))
        return;
    /* `timeout` signals the process and its group: two handlers may run at once in two
     * threads. One writes the message and exits; the other waits for that exit. */
    static atomic_flag exiting = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&exiting))
        for (;;)
            pause();
    const char *file = atomic_load(&current_file);
    write_str("whisper-c: ");
    if (file) {
        write_str(file);
        write_str(": ");
    }
    write_str(sig == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM");
    write_str(file ? "; no output written for it\n" : "\n");
    _exit(128 + sig);
}

/* 0, or 1 with one line when the results printed on standard output were not all written (a
 * full disk, /dev/full, a closed pipe): the exit status must say so. */
static int stdout_check(void) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return 0;
    fprintf(stderr, "whisper-c: standard output: cannot write%s%s\n", errno ? ": " : "",
            errno ? strerror(errno) : "");
    return 1;
}

static bool stop_requested(void *user) {
    (void)user;
    return atomic_load(&stop_signal) != 0;
}

static void log_to_stderr(whisperc_log_level level, const char *msg, void *user) {
    (void)user;
    if (level <= WHISPERC_LOG_WARN)
        fprintf(stderr, "whisper-c: %s\n", msg);
}

static void print_progress(whisperc_state *st, int percent, void *user) {
    (void)st;
    (void)user;
    fprintf(stderr, "whisper-c: progress = %3d%%\n", percent);
}

void cli_full_params(const struct cli_options *o, struct whisperc_full_params *fp) {
    *fp = whisperc_full_default_params(o->beam_size > 1 ? WHISPERC_SAMPLING_BEAM_SEARCH
                                                        : WHISPERC_SAMPLING_GREEDY);
    fp->beam_size = o->beam_size;
    fp->best_of = o->best_of;
    if (o->n_threads > 0)
        fp->n_threads = o->n_threads;
    fp->language = o->language;
    fp->translate = o->translate;
    fp->no_timestamps = o->no_timestamps;
    fp->initial_prompt = o->prompt;
    fp->carry_initial_prompt = o->carry_initial_prompt;
    fp->prefix = o->prefix;
    fp->hotwords = o->hotwords;
    fp->max_context = o->max_context;
    fp->condition_on_previous_text = !o->no_context;
    fp->seed = o->seed;
    fp->vad = o->vad;
    fp->vad_threshold = o->vad_threshold;
    fp->vad_min_speech_duration_ms = o->vad_min_speech_ms;
    fp->vad_min_silence_duration_ms = o->vad_min_silence_ms;
    fp->vad_speech_pad_ms = o->vad_pad_ms;
    fp->vad_model_path = o->vad_model;
    fp->max_audio_s = o->max_duration_s;
    /* openai-whisper's temperatures: arange(temperature, 1.0 + 1e-6, increment); the API's
     * own list (those of 0 and 0.2) unless another is asked for */
    if (o->no_fallback || o->temperature_inc <= 0.0f || o->temperature != 0.0f ||
        o->temperature_inc != 0.2f) /* cli_parse refused a list longer than the params hold */
        fp->n_temperatures = cli_temperatures(o, fp->temperatures, WHISPERC_MAX_TEMPERATURES);
    fp->logprob_threshold = o->logprob_thold;
    fp->no_speech_threshold = o->no_speech_thold;
    fp->compression_ratio_threshold = o->compression_ratio_thold;
    fp->word_timestamps = o->word_timestamps;
    fp->max_len = o->max_len;
    fp->offset_ms = o->offset_ms;
    fp->duration_ms = o->duration_ms;
    fp->split_on_word = o->split_on_word;
    fp->alignment_heads = o->alignment_heads;
    fp->dtw_token_timestamps = o->dtw_token_timestamps;
    fp->suppress_tokens = o->suppress_tokens;
    fp->n_suppress_tokens = o->n_suppress_tokens;
    fp->suppress_non_speech = !o->allow_non_speech || o->suppress_nst;
    fp->suppress_regex = o->suppress_regex;
    fp->diarize = o->diarize;
    fp->log_fn = log_to_stderr;
}

int cli_load_model(const struct cli_options *o, whisperc_model **model) {
    struct whisperc_model_params mp = whisperc_model_default_params();
    mp.device = o->device;
    mp.gpu_index = o->gpu_index;
    mp.log_fn = log_to_stderr;
    mp.max_memory_bytes = o->max_memory_bytes;
    mp.quant_weights = o->quant_weights;
    char err[512];
    const char *path = o->model ? o->model : default_model_path();
    /* a VAD file that will not load is refused now, not at every input */
    if (o->vad && o->vad_model && whisperc_vad_model_check(o->vad_model, err, sizeof err)) {
        fprintf(stderr, "whisper-c: %s\n", err);
        return 1;
    }
    if (whisperc_model_load(path, &mp, model, err, sizeof err) != WHISPERC_OK) {
        fprintf(stderr, "whisper-c: %s\n", err);
        if (!o->model)
            fprintf(stderr, "whisper-c: (default model path; use -m FILE or set "
                            "WHISPERC_MODEL)\n");
        return 1;
    }
    return 0;
}

int cli_write_outputs(const struct cli_options *o, const bool *want, const whisperc_state *st,
                      const whisperc_model *model, const struct whisperc_full_params *fp,
                      double duration_s, bool sync, const char *base, char *err, size_t err_size) {
    bool any = false;
    for (int f = 0; f < OUT_N_FORMATS; f++)
        any |= want[f];
    if (!any)
        return 0;
    struct run_info run = {
        .model_path = o->model ? o->model : default_model_path(),
        .model_type = whisperc_model_type(model),
        .backend = whisperc_model_backend(model),
        .multilingual = whisperc_model_is_multilingual(model),
        .dims = {.size = sizeof run.dims},
        .params = fp,
    };
    whisperc_model_dims(model, &run.dims);
    const struct writer_opts wo = {
        .max_line_width = o->max_line_width,
        .max_line_count = o->max_line_count,
        .max_words_per_line = o->max_words_per_line,
        .highlight_words = o->highlight_words,
        .srt_index_offset = o->offset_n,
        .json_full = o->out_json_full,
        .run = &run,
        .no_sync = !sync,
    };
    struct transcript tr;
    if (cli_transcript_from_state(&tr, st, o->word_timestamps) != 0) {
        snprintf(err, err_size, "%s: out of memory for the outputs", base);
        return ENOMEM;
    }
    if (duration_s >= 0)
        tr.duration_s = duration_s;
    int rc = 0;
    if (strcmp(base, "-") == 0) /* -of -, or standard input without -of */
        rc = write_output_stdout(&tr, want, &wo, err, err_size);
    for (int f = 0; f < OUT_N_FORMATS && rc == 0 && strcmp(base, "-") != 0; f++)
        if (want[f])
            rc = write_output(&tr, (enum out_format)f, &wo, base, err, err_size);
    cli_transcript_free(&tr);
    return rc;
}

/* The 16 kHz samples of a file, or of standard input for "-", with the limits of the model's
 * whisperc_full_file; err names the input. */
static whisperc_status load_input(const whisperc_model *m, const struct whisperc_full_params *fp,
                                  const char *path, float **pcm, int *n, char *err,
                                  size_t err_size) {
    if (strcmp(path, "-") != 0)
        return whisperc_model_load_audio(m, fp, path, pcm, n, err, err_size);
    if (isatty(STDIN_FILENO)) { /* it would wait for audio typed in */
        snprintf(err, err_size, "-: standard input is a terminal; pipe the audio into it");
        return WHISPERC_ERR_IO;
    }
    return whisperc_decode_audio_fd(m, fp, STDIN_FILENO, "-", pcm, n, err, err_size);
}

/* One input transcribed into the state: a file through whisperc_full_file (which times its
 * decoding), standard input ("-") read and decoded here. On failure err holds one line naming
 * the input. */
static whisperc_status transcribe_input(whisperc_state *st, const whisperc_model *m,
                                        const struct whisperc_full_params *fp, const char *path,
                                        char *err, size_t err_size) {
    whisperc_status rc;
    if (strcmp(path, "-") == 0) {
        float *pcm = NULL;
        int n = 0;
        rc = load_input(m, fp, path, &pcm, &n, err, err_size);
        if (rc == WHISPERC_OK)
            rc = whisperc_full(st, fp, pcm, n);
        free(pcm);
        if (rc == WHISPERC_OK || err[0])
            return rc;
    } else {
        rc = whisperc_full_file(st, fp, path);
        if (rc == WHISPERC_OK)
            return rc;
    }
    const char *msg = whisperc_state_errmsg(st);
    /* audio errors name the file already; the others get it, parameters' included: an offset
     * past the end, say, is one file's */
    if (strncmp(msg, path, strlen(path)) == 0)
        snprintf(err, err_size, "%s", msg);
    else
        snprintf(err, err_size, "%s: %s", path, msg);
    return rc;
}

/* -dl: "FILE: de 0.915, nn 0.014, ..." and nothing else. */
static int detect_languages(const struct cli_options *o, const whisperc_model *m,
                            whisperc_state *st, const struct whisperc_full_params *fp) {
    int failed = 0;
    for (int f = 0; f < o->n_files; f++) {
        float *pcm = NULL, probs[128] = {0};
        int n = 0, shown[5];
        char err[512];
        whisperc_status rc = load_input(m, fp, o->files[f], &pcm, &n, err, sizeof err);
        if (rc == WHISPERC_OK &&
            whisperc_detect_language(st, fp, pcm, n, probs, 128, NULL) != WHISPERC_OK)
            snprintf(err, sizeof err, "%s: %s", o->files[f], whisperc_state_errmsg(st)), rc = 1;
        free(pcm);
        if (rc != WHISPERC_OK) {
            fprintf(stderr, "whisper-c: %s\n", err);
            failed = 1;
            continue;
        }
        printf("%s:", o->files[f]);
        for (int k = 0; k < 5; k++) {
            int best = -1;
            for (int i = 0; i < whisperc_lang_count() && i < 128; i++) {
                bool taken = false;
                for (int j = 0; j < k; j++)
                    taken |= shown[j] == i;
                if (!taken && (best < 0 || probs[i] > probs[best]))
                    best = i;
            }
            shown[k] = best;
            printf("%s %s %.3f", k ? "," : "", whisperc_lang_code(best), probs[best]);
        }
        printf("\n");
        fflush(stdout); /* each file's line out as it is done */
    }
    return failed | stdout_check();
}

static int cmd_transcribe(int argc, char **argv) {
    struct cli_options o;
    int rc = cli_parse(&o, argc, argv, false);
    if (rc == 0)
        rc = cli_check_stdin(&o, false);
    if (rc == 0 && (o.batch_size || o.runs != 1 || o.n_tokens != 100 || o.whisper_cpp)) {
        fprintf(stderr,
                "whisper-c: %s is a bench option (many files at a time: whisper-c batch "
                "--batch-size N)\n",
                o.batch_size    ? "--batch-size"
                : o.runs != 1   ? "--runs"
                : o.whisper_cpp ? "--compare-whisper-cpp"
                                : "--tokens");
        rc = 2;
    }
    if (rc)
        return rc == 1 ? 0 : rc;
    whisperc_model *model = NULL;
    whisperc_state *st = NULL;
    if (cli_load_model(&o, &model))
        return 1;
    char err[512];
    if (whisperc_state_new_v2(model, &st, err, sizeof err) != WHISPERC_OK) {
        fprintf(stderr, "whisper-c: %s\n", err);
        whisperc_model_free(model);
        return 1;
    }
    struct whisperc_full_params fp;
    cli_full_params(&o, &fp);
    /* params the model cannot take are refused once, before any input is read */
    if (!o.detect_language && whisperc_full_params_check(st, &fp) != WHISPERC_OK) {
        fprintf(stderr, "whisper-c: %s\n", whisperc_state_errmsg(st));
        whisperc_state_free(st);
        whisperc_model_free(model);
        return 2;
    }
    if (o.detect_language) {
        int failed = detect_languages(&o, model, st, &fp);
        whisperc_state_free(st);
        whisperc_model_free(model);
        return failed;
    }
    struct print_opts po = {.out = stdout,
                            .colors = print_use_colors(o.print_colors, stdout),
                            .confidence = o.print_confidence,
                            .special = o.print_special,
                            .no_timestamps = o.no_timestamps};
    /* -np too: whisper.cpp's prints only the results; none where a format goes to stdout */
    bool writes = o.out_json_full;
    for (int f = 0; f < OUT_N_FORMATS; f++)
        writes |= o.out[f];
    const char *base0 = cli_output_base(&o, 0);
    if (!(writes && strcmp(base0, "-") == 0)) {
        fp.new_segment_fn = print_new_segments;
        fp.new_segment_user_data = &po;
    }
    if (o.print_progress)
        fp.progress_fn = print_progress;
    fp.abort_fn = stop_requested;
    /* SA_RESTART: while outputs are written the handler returns, and a write it interrupted
     * (to a pipe) goes on instead of failing with EINTR */
    struct sigaction sa = {.sa_handler = on_stop_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask); /* neither interrupts the handler on its own thread (see there) */
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int failed = 0;
    for (int i = 0; i < o.n_files && !atomic_load(&stop_signal); i++) {
        atomic_store(&current_file, o.files[i]);
        char msg[1024] = "";
        if (writes && output_dir_check(cli_output_base(&o, i), msg, sizeof msg)) {
            atomic_store(&current_file, NULL);
            fprintf(stderr, "whisper-c: %s\n", msg);
            failed = 1;
            continue;
        }
        whisperc_status rc = transcribe_input(st, model, &fp, o.files[i], msg, sizeof msg);
        if (po.line_open) /* -nt's run-on text ends with its file */
            fputc('\n', stdout), po.line_open = false;
        int sig = atomic_load(&stop_signal);
        if (sig) {
            fprintf(stderr, "whisper-c: %s: stopped by %s; no output written for it\n", o.files[i],
                    sig == SIGINT ? "SIGINT" : "SIGTERM");
            break;
        }
        if (rc != WHISPERC_OK) {
            atomic_store(&current_file, NULL);
            fprintf(stderr, "whisper-c: %s\n", msg);
            failed = 1;
            if (rc == WHISPERC_ERR_DEVICE && i + 1 < o.n_files) {
                fprintf(stderr,
                        "whisper-c: the GPU failed and cannot be used again by this process; "
                        "%d more file(s) not transcribed\n",
                        o.n_files - i - 1);
                break;
            }
            continue;
        }
        if (o.diarize && whisperc_n_segments(st) > 0 && whisperc_segment_speaker(st, 0) == -2)
            fprintf(stderr, "whisper-c: %s: not a two-channel recording; -di labels no speakers\n",
                    o.files[i]);
        if (strcasecmp(o.language, "auto") == 0 && whisperc_model_is_multilingual(model) &&
            !o.no_prints) /* as whisper.cpp: say what was detected */
            fprintf(stderr, "whisper-c: %s: auto-detected language: %s (p = %.2f)\n", o.files[i],
                    whisperc_full_language(st), whisperc_full_language_prob(st));
        char err[1024];
        atomic_store(&writing_outputs, 1);
        int wrc = cli_write_outputs(&o, o.out, st, model, &fp, -1, true, cli_output_base(&o, i),
                                    err, sizeof err);
        atomic_store(&current_file, NULL); /* first: its outputs are whole */
        atomic_store(&writing_outputs, 0);
        if (wrc != 0) {
            fprintf(stderr, "whisper-c: %s\n", err);
            failed = 1;
            if (strcmp(cli_output_base(&o, i), "-") == 0) /* said: not again at the end */
                clearerr(stdout);
        }
    }
    whisperc_state_free(st);
    whisperc_model_free(model);
    failed |= stdout_check();
    int sig = atomic_load(&stop_signal);
    return sig ? 128 + sig : failed;
}

int main(int argc, char **argv) {
    cli_blas_reexec(argv);
    /* past RLIMIT_FSIZE a write fails with EFBIG, reported and cleaned up, instead of a kill
     * that would leave a temporary file behind */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) { /* a usage error: on stderr, as every other */
        fprintf(stderr, "usage: whisper-c transcribe|batch|bench|ptx [options] ... (whisper-c "
                        "--help says more)\n");
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        cli_usage("whisper-c");
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("whisper-c %s\n", whisperc_version());
        return 0;
    }
    if (strcmp(argv[1], "transcribe") == 0)
        return cmd_transcribe(argc - 2, argv + 2);
    if (strcmp(argv[1], "batch") == 0)
        return cmd_batch(argc - 2, argv + 2);
    if (strcmp(argv[1], "bench") == 0)
        return cmd_bench(argc - 2, argv + 2);
    if (strcmp(argv[1], "ptx") == 0)
        return cmd_ptx(argc - 2, argv + 2);
    fprintf(stderr, "whisper-c: unknown command '%s' (try: whisper-c transcribe FILE)\n", argv[1]);
    return 2;
}
