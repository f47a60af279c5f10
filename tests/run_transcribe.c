/*
 * run_transcribe.c — transcribes files with the library and prints one JSON line each, for
 * the dev-set and long-form checks (tests/check_transcripts.py).
 *
 *   run_transcribe MODEL [OPTIONS] FILE...           one line per file
 *   run_transcribe MODEL [OPTIONS] --concat FILE...  the files' samples appended at their own
 *                                                    (common) rate, then resampled: one line
 *   run_transcribe --write-wav OUT FILE...           that concatenation written to OUT (16 kHz
 *                                                    float WAV, exact samples) for CLI tests
 *   OPTIONS: -t N; --beam N (beam search, beam_size = best_of = N); --no-fallback (temperature
 *   0 only); --translate; --words (word timestamps); --vad (voice activity detection);
 *   --vad-model FILE (a Silero VAD file for --vad); --detect
 *   (language detection only: the top 5 per file); --device cpu|cuda|auto (default cpu, or
 *   $WHISPERC_TEST_DEVICE: the same checks on the GPU, tools/device/gpu-check.sh)
 */
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_reexec.h"
#include "frontend/audio.h"
#include "libwhisperc.h"

static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void print_result(const whisperc_state *st, const char *audio) {
    struct whisperc_timings t = {.size = sizeof t};
    whisperc_state_timings(st, &t);
    printf("{\"audio\": ");
    json_str(audio);
    printf(", \"language\": ");
    json_str(whisperc_full_language(st));
    printf(", \"text\": ");
    json_str(whisperc_full_text(st));
    printf(", \"seconds\": %.3f, \"segments\": [", t.total_ms / 1e3);
    for (int i = 0; i < whisperc_n_segments(st); i++) {
        printf("%s{\"start\": %.3f, \"end\": %.3f, \"text\": ", i ? ", " : "",
               whisperc_segment_t0_ms(st, i) / 1e3, whisperc_segment_t1_ms(st, i) / 1e3);
        json_str(whisperc_segment_text(st, i));
        printf(", \"temperature\": %.1f, \"tokens\": [", whisperc_segment_temperature(st, i));
        for (int j = 0; j < whisperc_segment_n_tokens(st, i); j++)
            printf("%s%d", j ? ", " : "", whisperc_segment_token_id(st, i, j));
        printf("], \"words\": [");
        for (int j = 0; j < whisperc_segment_n_words(st, i); j++) {
            printf("%s{\"word\": ", j ? ", " : "");
            json_str(whisperc_word_text(st, i, j));
            printf(", \"start\": %.3f, \"end\": %.3f, \"probability\": %.6f}",
                   whisperc_word_t0_ms(st, i, j) / 1e3, whisperc_word_t1_ms(st, i, j) / 1e3,
                   whisperc_word_p(st, i, j));
        }
        printf("]}");
    }
    printf("]}\n");
    fflush(stdout);
}

/* Appends every file's samples at their native rate, then resamples once. */
static float *concat(char **files, int n, int *n_out) {
    float *all = NULL;
    size_t n_all = 0;
    int rate = 0;
    char err[512];
    for (int i = 0; i < n; i++) {
        float *x;
        size_t nx;
        int r;
        if (audio_read(files[i], &x, &nx, &r, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            exit(1);
        }
        if (rate && r != rate) {
            fprintf(stderr, "%s: rate %d differs from %d\n", files[i], r, rate);
            exit(1);
        }
        rate = r;
        all = realloc(all, (n_all + nx) * sizeof *all);
        memcpy(all + n_all, x, nx * sizeof *x);
        n_all += nx;
        free(x);
    }
    fprintf(stderr, "concatenated %zu samples at %d Hz (%.1f s)\n", n_all, rate,
            (double)n_all / rate);
    float *out;
    size_t n16;
    if (audio_resample(all, n_all, rate, &out, &n16, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    free(all);
    *n_out = (int)n16;
    return out;
}

/* {"audio": ..., "detect_top5": [["de", 0.91], ...]} */
static int print_detect(whisperc_state *st, const struct whisperc_full_params *p,
                        const char *audio) {
    float *pcm = NULL, probs[128];
    int n = 0, top[5];
    char err[512];
    if (whisperc_load_audio(audio, &pcm, &n, err, sizeof err) != WHISPERC_OK ||
        whisperc_detect_language(st, p, pcm, n, probs, 128, NULL) != WHISPERC_OK) {
        fprintf(stderr, "%s: %s\n", audio, pcm ? whisperc_state_errmsg(st) : err);
        free(pcm);
        return 1;
    }
    free(pcm);
    for (int k = 0; k < 5; k++) {
        top[k] = -1;
        for (int i = 0; i < whisperc_lang_count(); i++) {
            int taken = 0;
            for (int j = 0; j < k; j++)
                taken |= top[j] == i;
            if (!taken && (top[k] < 0 || probs[i] > probs[top[k]]))
                top[k] = i;
        }
    }
    printf("{\"audio\": ");
    json_str(audio);
    printf(", \"detect_top5\": [");
    for (int k = 0; k < 5; k++)
        printf("%s[\"%s\", %.6f]", k ? ", " : "", whisperc_lang_code(top[k]), probs[top[k]]);
    printf("]}\n");
    return 0;
}

/* The 16 kHz concatenation as a float WAV: the CLI then reads exactly these samples. */
static int write_wav(const char *path, char **files, int n) {
    int n16;
    float *pcm = concat(files, n, &n16);
    SF_INFO info = {.samplerate = 16000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    sf_count_t w = f ? sf_writef_float(f, pcm, n16) : 0;
    int rc = f && sf_close(f) == 0 && w == n16 ? 0 : 1;
    if (rc)
        fprintf(stderr, "%s: cannot write: %s\n", path, sf_strerror(NULL));
    free(pcm);
    return rc;
}

/* "cpu", "cuda", "auto" -> device; -1 if none of them. */
static int parse_device(const char *s) {
    if (strcmp(s, "cpu") == 0)
        return WHISPERC_DEVICE_CPU;
    if (strcmp(s, "cuda") == 0)
        return WHISPERC_DEVICE_CUDA;
    if (strcmp(s, "auto") == 0)
        return WHISPERC_DEVICE_AUTO;
    return -1;
}

int main(int argc, char **argv) {
    cli_blas_reexec(argv); /* as whisper-c: the dev set on OpenBLAS's Prescott kernels is slow */
    if (argc >= 4 && strcmp(argv[1], "--write-wav") == 0)
        return write_wav(argv[2], argv + 3, argc - 3);
    if (argc < 3) {
        fprintf(
            stderr,
            "usage: run_transcribe MODEL [-t N] [--beam N] [--no-fallback] [--translate] "
            "[--words] [--vad] [--vad-model FILE] [--device cpu|cuda|auto] [--detect | --concat] "
            "FILE...\n");
        return 2;
    }
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    struct whisperc_model_params mp = whisperc_model_default_params();
    /* The CPU unless asked: the golden checks are the CPU reference's; "auto" would make the
     * result depend on the machine. */
    const char *device = getenv("WHISPERC_TEST_DEVICE");
    if (!device || !device[0])
        device = "cpu";
    int i = 2, do_concat = 0, do_detect = 0;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--device") == 0) {
            device = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "-t") == 0) {
            p.n_threads = atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--beam") == 0) { /* beam_size = best_of */
            int n_threads = p.n_threads;
            p = whisperc_full_default_params(WHISPERC_SAMPLING_BEAM_SEARCH);
            p.n_threads = n_threads;
            p.beam_size = p.best_of = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--no-fallback") == 0) {
            p.n_temperatures = 1;
        } else if (strcmp(argv[i], "--translate") == 0) {
            p.translate = true;
        } else if (strcmp(argv[i], "--words") == 0) {
            p.word_timestamps = true;
        } else if (strcmp(argv[i], "--vad") == 0) {
            p.vad = true;
        } else if (i + 1 < argc && strcmp(argv[i], "--vad-model") == 0) {
            p.vad_model_path = argv[++i];
        } else if (strcmp(argv[i], "--detect") == 0) {
            do_detect = 1;
        } else if (strcmp(argv[i], "--concat") == 0) {
            do_concat = 1;
        } else {
            fprintf(stderr, "run_transcribe: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (parse_device(device) < 0) {
        fprintf(stderr, "run_transcribe: device %s: expected cpu, cuda or auto\n", device);
        return 2;
    }
    mp.device = (whisperc_device)parse_device(device);
    whisperc_model *m;
    whisperc_state *st;
    char err[512];
    if (whisperc_model_load(argv[1], &mp, &m, err, sizeof err) || whisperc_state_new(m, &st)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int rc = 0;
    if (do_concat) {
        int n;
        float *pcm = concat(argv + i, argc - i, &n);
        if (whisperc_full(st, &p, pcm, n) == WHISPERC_OK)
            print_result(st, "concat");
        else
            rc = 1, fprintf(stderr, "%s\n", whisperc_state_errmsg(st));
        free(pcm);
    } else if (do_detect) {
        for (; i < argc; i++)
            rc |= print_detect(st, &p, argv[i]);
    } else {
        for (; i < argc; i++) {
            if (whisperc_full_file(st, &p, argv[i]) == WHISPERC_OK)
                print_result(st, argv[i]);
            else
                rc = 1, fprintf(stderr, "%s\n", whisperc_state_errmsg(st));
        }
    }
    whisperc_state_free(st);
    whisperc_model_free(m);
    return rc;
}
