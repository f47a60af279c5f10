/*
 * test_mel.c — the log-Mel frontend (src/frontend/mel.c) against openai-whisper's
 * log_mel_spectrogram() dumps in ../shared/golden, plus a double-precision DFT reference on
 * synthetic signals (short ones exercise the reflection), thread-count invariance and bad
 * arguments.
 *
 * The filters come straight from the ggml model file (offset 48: i32 n_mel, i32 n_fft, floats), so
 * this test does not depend on the model loader.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "frontend/audio.h"
#include "frontend/mel.h"
#include "frontend/mel_prefetch.h"
#include "libwhisperc.h"

#define N_MELS 80

/* Mel filters of a whisper.cpp ggml file: after the 4-byte magic and 11 i32 hparams. */
static float *read_filters(const char *model_path) {
    FILE *f = fopen(model_path, "rb");
    int32_t dims[2] = {0, 0};
    float *filters = NULL;
    if (!f)
        return NULL;
    if (fseek(f, 48, SEEK_SET) == 0 && fread(dims, sizeof(int32_t), 2, f) == 2 &&
        dims[0] == N_MELS && dims[1] == WC_N_FFT_BINS) {
        filters = malloc(N_MELS * WC_N_FFT_BINS * sizeof(float));
        if (filters &&
            fread(filters, sizeof(float), N_MELS * WC_N_FFT_BINS, f) != N_MELS * WC_N_FFT_BINS) {
            free(filters);
            filters = NULL;
        }
    }
    fclose(f);
    if (!filters)
        fprintf(stderr, "%s: no %dx%d mel filters at offset 48 (found %d x %d)\n", model_path,
                N_MELS, WC_N_FFT_BINS, dims[0], dims[1]);
    return filters;
}

/* Max |a - b| over the first n_cols columns of two row-major [n_rows][*] arrays. */
static double max_abs_cols(const float *a, int lda, const float *b, int ldb, int n_rows,
                           int n_cols) {
    double m = 0.0;
    for (int r = 0; r < n_rows; r++) {
        double d = max_abs_diff(a + (size_t)r * lda, b + (size_t)r * ldb, (size_t)n_cols);
        if (d > m)
            m = d;
    }
    return m;
}

/* jfk.wav against <model>'s golden mel dumps; threads 1 and 4 must agree bit for bit. */
static void test_golden(const char *model, const float *samples, size_t n) {
    char rel[256];
    snprintf(rel, sizeof rel, "models/ggml-%s.bin", model);
    float *filters = read_filters(shared_path_or_skip(rel));
    CHECK(filters != NULL);
    if (!filters)
        return;
    char err[256] = "";
    /* Tolerance 1e-3 (STYLE.md §6): torch's STFT and sgemm round differently from FFTW and a
     * sequential sum; in quiet bins the log amplifies that, but far less than 1e-3. */
    const size_t pads[2] = {0, WC_CHUNK_SAMPLES};
    const char *golden[2] = {"jfk.mel.npy", "jfk.mel30.npy"};
    for (int g = 0; g < 2; g++) {
        struct npy ref;
        snprintf(rel, sizeof rel, "golden/%s/%s", model, golden[g]);
        if (npy_load(shared_path_or_skip(rel), &ref) != 0) {
            CHECK(0);
            continue;
        }
        struct mel_spec m1, m4;
        int rc1 = mel_compute(&m1, samples, n, pads[g], filters, N_MELS, 1, err, sizeof err);
        int rc4 = mel_compute(&m4, samples, n, pads[g], filters, N_MELS, 4, err, sizeof err);
        CHECK(rc1 == 0 && rc4 == 0);
        CHECK(ref.n_dims == 2 && ref.shape[0] == N_MELS);
        if (!rc1 && !rc4 && ref.n_dims == 2 && ref.shape[0] == N_MELS) {
            int cols = (int)ref.shape[1];
            CHECK(m1.n_mels == N_MELS && m1.n_frames == (int)((n + pads[g]) / WC_HOP_LENGTH));
            CHECK(cols <= m1.n_frames);
            if (cols > m1.n_frames)
                cols = m1.n_frames;
            double e =
                max_abs_cols(m1.data, m1.n_frames, ref.data, (int)ref.shape[1], N_MELS, cols);
            printf("%s %s: %d x %d frames, max abs error %.3g\n", model, golden[g], N_MELS, cols,
                   e);
            CHECK(e <= 1e-3);
            CHECK(memcmp(m1.data, m4.data, (size_t)N_MELS * m1.n_frames * sizeof(float)) == 0);
        }
        mel_free(&m1);
        mel_free(&m4);
        npy_free(&ref);
    }
    free(filters);
}

/* audio.py's recipe in double precision with a plain DFT: the reference for synthetic inputs. */
static void mel_reference(double *out, const float *x, size_t n, size_t pad, const float *filters,
                          int n_frames) {
    size_t n_total = n + pad;
    double *power = malloc(WC_N_FFT_BINS * sizeof(double));
    double cos_t[WC_N_FFT], sin_t[WC_N_FFT];
    for (int i = 0; i < WC_N_FFT; i++) {
        cos_t[i] = cos(2.0 * M_PI * i / WC_N_FFT);
        sin_t[i] = sin(2.0 * M_PI * i / WC_N_FFT);
    }
    double max_log = -INFINITY;
    for (int t = 0; t < n_frames; t++) {
        for (int k = 0; k < WC_N_FFT_BINS; k++) {
            double re = 0.0, im = 0.0;
            for (int i = 0; i < WC_N_FFT; i++) {
                long long idx = (long long)t * WC_HOP_LENGTH + i - WC_N_FFT / 2;
                if (idx < 0)
                    idx = -idx;
                if (idx >= (long long)n_total)
                    idx = 2 * ((long long)n_total - 1) - idx;
                double v = (size_t)idx < n ? x[idx] : 0.0;
                v *= 0.5 - 0.5 * cos_t[i];
                re += v * cos_t[k * i % WC_N_FFT];
                im -= v * sin_t[k * i % WC_N_FFT];
            }
            power[k] = re * re + im * im;
        }
        for (int m = 0; m < N_MELS; m++) {
            double acc = 0.0;
            for (int k = 0; k < WC_N_FFT_BINS; k++)
                acc += filters[m * WC_N_FFT_BINS + k] * power[k];
            double v = log10(acc < 1e-10 ? 1e-10 : acc);
            out[(size_t)m * n_frames + t] = v;
            max_log = v > max_log ? v : max_log;
        }
    }
    for (size_t i = 0; i < (size_t)N_MELS * n_frames; i++)
        out[i] = ((out[i] < max_log - 8.0 ? max_log - 8.0 : out[i]) + 4.0) / 4.0;
    free(power);
}

/* Random and sine signals of awkward lengths (one frame, reflection past both ends, a partial
 * block, padding) against mel_reference; every thread count gives the same bits. */
static void test_synthetic(const float *filters) {
    const size_t lens[][2] = {{201, 0}, {250, 0}, {1000, 0}, {700, 3000}, {16000, 1234}};
    struct test_rng rng = {42};
    char err[256];
    for (size_t c = 0; c < sizeof lens / sizeof lens[0]; c++) {
        size_t n = lens[c][0], pad = lens[c][1];
        float *x = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            x[i] = 0.3f * test_rng_uniform(&rng) + 0.5f * (float)sin(0.07 * (double)i);
        struct mel_spec m, m3;
        int rc = mel_compute(&m, x, n, pad, filters, N_MELS, 1, err, sizeof err);
        int rc3 = mel_compute(&m3, x, n, pad, filters, N_MELS, 3, err, sizeof err);
        CHECK(rc == 0 && rc3 == 0);
        int n_frames = (int)((n + pad) / WC_HOP_LENGTH);
        if (!rc && !rc3) {
            CHECK(m.n_frames == n_frames && m3.n_frames == n_frames);
            double *ref = malloc((size_t)N_MELS * n_frames * sizeof(double));
            mel_reference(ref, x, n, pad, filters, n_frames);
            double e = 0.0;
            for (size_t i = 0; i < (size_t)N_MELS * n_frames; i++)
                e = fmax(e, fabs(m.data[i] - ref[i]));
            printf("synthetic %zu + %zu samples: max abs error vs double DFT %.3g\n", n, pad, e);
            CHECK(e <= 1e-4); /* float FFT vs double DFT: a few ulp of a log10 around 1 */
            CHECK(memcmp(m.data, m3.data, (size_t)N_MELS * n_frames * sizeof(float)) == 0);
            free(ref);
        }
        mel_free(&m);
        mel_free(&m3);
        free(x);
    }
}

/* Frames wholly inside the padding skip the FFT (their column is computed once): the same bits as
 * passing the padding as explicit zero samples, which computes every frame. */
static void test_padding_frames(const float *filters) {
    const size_t lens[][2] = {{16000, 480000}, {3000, 1000}, {401, 560}};
    struct test_rng rng = {7};
    char err[256];
    for (size_t c = 0; c < sizeof lens / sizeof lens[0]; c++) {
        size_t n = lens[c][0], pad = lens[c][1];
        float *x = calloc(n + pad, sizeof(float));
        for (size_t i = 0; i < n; i++)
            x[i] = 1e-5f * test_rng_uniform(&rng); /* quiet: the max - 8 clamp hides nothing */
        struct mel_spec skip, full;
        int rc = mel_compute(&skip, x, n, pad, filters, N_MELS, 2, err, sizeof err);
        int rc_full = mel_compute(&full, x, n + pad, 0, filters, N_MELS, 1, err, sizeof err);
        CHECK(rc == 0 && rc_full == 0 && skip.n_frames == full.n_frames);
        if (!rc && !rc_full && skip.n_frames == full.n_frames)
            CHECK(memcmp(skip.data, full.data, (size_t)N_MELS * skip.n_frames * sizeof(float)) ==
                  0);
        mel_free(&skip);
        mel_free(&full);
        free(x);
    }
}

/* The prefetcher's inputs: random signals of assorted lengths; input `fail` is refused. */
struct pf_inputs {
    const float *filters;
    float *x[12];
    size_t n[12];
    int fail;
};

static int pf_mel(void *user, int i, struct mel_spec *out, char *err, size_t err_size) {
    struct pf_inputs *in = user;
    if (i == in->fail) {
        snprintf(err, err_size, "input %d refused", i);
        return WHISPERC_ERR_INVALID_ARG;
    }
    return mel_compute(out, in->x[i], in->n[i], 1600, in->filters, N_MELS, 1, err, err_size);
}

/* Log-Mels taken from the prefetcher are those computed directly, whatever the threads, the
 * bounds, the order of takes; an error comes back with its input; untaken ones are freed. */
static void test_prefetch(const float *filters) {
    struct pf_inputs in = {.filters = filters, .fail = -1};
    struct test_rng rng = {3};
    size_t bytes[12];
    for (int i = 0; i < 12; i++) {
        in.n[i] = 400 + (size_t)(i * 7919 % 24000);
        in.x[i] = malloc(in.n[i] * sizeof(float));
        for (size_t k = 0; k < in.n[i]; k++)
            in.x[i][k] = 0.2f * test_rng_uniform(&rng);
        bytes[i] = (size_t)N_MELS * ((in.n[i] + 1600) / WC_HOP_LENGTH) * sizeof(float);
    }
    const struct {
        int threads, ahead;
        size_t max_bytes;
        int order; /* 0 in order, 1 with a skip ahead (0, 2, 1, 3, ...), 2 only half taken */
    } cases[] = {{3, 4, 1 << 30, 0},
                 {1, 1, 0, 0},
                 {0, 4, 1 << 30, 0},
                 {2, 12, 200000, 1},
                 {4, 3, 1 << 30, 2}};
    char err[256];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct mel_prefetch *p = NULL;
        CHECK(mel_prefetch_new(&p, 12, bytes, cases[c].threads, cases[c].ahead, cases[c].max_bytes,
                               pf_mel, &in) == 0);
        if (!p)
            continue;
        int n_take = cases[c].order == 2 ? 6 : 12;
        for (int k = 0; k < n_take; k++) {
            int i = cases[c].order == 1 && k % 4 == 1   ? k + 1
                    : cases[c].order == 1 && k % 4 == 2 ? k - 1
                                                        : k;
            struct mel_spec got, want;
            CHECK(mel_prefetch_take(p, i, &got, err, sizeof err) == 0);
            CHECK(pf_mel(&in, i, &want, err, sizeof err) == 0);
            CHECK(got.n_frames == want.n_frames && got.data &&
                  memcmp(got.data, want.data, (size_t)N_MELS * want.n_frames * sizeof(float)) == 0);
            mel_free(&got);
            mel_free(&want);
        }
        struct mel_spec again;
        CHECK(mel_prefetch_take(p, 0, &again, err, sizeof err) == WHISPERC_ERR_INVALID_ARG);
        CHECK(strstr(err, "taken twice") && !again.data);
        mel_prefetch_free(p);
    }
    in.fail = 5;
    struct mel_prefetch *p = NULL;
    CHECK(mel_prefetch_new(&p, 12, bytes, 2, 4, 1 << 30, pf_mel, &in) == 0);
    for (int i = 0; p && i <= 5; i++) {
        struct mel_spec got;
        int rc = mel_prefetch_take(p, i, &got, err, sizeof err);
        CHECK(i < 5 ? rc == 0 : rc == WHISPERC_ERR_INVALID_ARG && strstr(err, "input 5 refused"));
        mel_free(&got);
    }
    mel_prefetch_free(p); /* with inputs after the error computed and never taken */
    mel_prefetch_free(NULL);
    for (int i = 0; i < 12; i++)
        free(in.x[i]);
}

static void test_bad_args(const float *filters) {
    float x[400] = {0};
    struct mel_spec m;
    char err[256] = "";
    CHECK(mel_compute(&m, x, 100, 0, filters, N_MELS, 1, err, sizeof err) ==
          WHISPERC_ERR_INVALID_ARG);
    CHECK(strstr(err, "shorter than one hop") != NULL);
    CHECK(m.data == NULL && m.n_frames == 0);
    CHECK(mel_compute(&m, x, 400, 0, filters, N_MELS, 0, err, sizeof err) ==
          WHISPERC_ERR_INVALID_ARG);
    CHECK(strstr(err, "n_threads") != NULL);
    CHECK(mel_compute(&m, x, 400, 0, NULL, N_MELS, 1, err, sizeof err) == WHISPERC_ERR_INVALID_ARG);
    CHECK(strstr(err, "filters is NULL") != NULL);
    CHECK(mel_compute(&m, x, 400, SIZE_MAX, filters, N_MELS, 1, err, sizeof err) ==
          WHISPERC_ERR_INVALID_ARG);
    CHECK(strstr(err, "too long") != NULL);
    /* all padding: silence, every value (-10 + 4) / 4 after the clamp */
    CHECK(mel_compute(&m, NULL, 0, 480, filters, N_MELS, 2, err, sizeof err) == 0);
    CHECK(m.n_frames == 3 && m.data && m.data[0] == -1.5f);
    mel_free(&m);
    mel_free(&m); /* twice is harmless */
}

int main(void) {
    const char *wav = shared_path_or_skip("audio/jfk/jfk.wav");
    float *samples = NULL;
    size_t n = 0;
    char err[512] = "";
    int rc = audio_load(wav, &samples, &n, err, sizeof err);
    if (rc) {
        fprintf(stderr, "audio_load: %s\n", err);
        return 1;
    }
    CHECK(n == 176000);
    test_golden("tiny.en", samples, n);
    test_golden("base", samples, n);
    free(samples);

    float *filters = read_filters(shared_path_or_skip("models/ggml-tiny.en.bin"));
    CHECK(filters != NULL);
    if (filters) {
        test_synthetic(filters);
        test_padding_frames(filters);
        test_prefetch(filters);
        test_bad_args(filters);
    }
    free(filters);
    printf("%s\n", test_failures ? "FAILED" : "OK");
    return TEST_RESULT();
}
