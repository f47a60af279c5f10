/*
 * test_vad.c — the voice activity detector (src/frontend/vad.c): whisper.cpp's segment rules on
 * hand-made probabilities (exact samples), then the detector on synthetic signals (digital
 * silence, stationary noise at several levels, a steady tone, tone bursts in noise) and on the
 * dev set's 16 kHz speech clips placed between seconds of silence and of noise.
 *
 * Usage: test_vad [FILE.wav]: with a file, prints its speech segments (seconds) and checks
 * nothing else, a debugging aid for docs/vad.md's figures.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "decoder/transcribe.h"
#include "decoder/transcript_remap.h"
#include "frontend/audio.h"
#include "frontend/vad.h"

#define SR 16000

static const struct vad_params defaults = {0.5f, 250, 100, 30, 1}; /* whisper.cpp's */

static size_t detect(const float *x, size_t n, struct vad_span **s) {
    size_t n_s = 0;
    char err[256] = "";
    int rc = vad_detect(NULL, x, n, &defaults, s, &n_s, err, sizeof err);
    if (rc)
        fprintf(stderr, "vad_detect: %s\n", err);
    CHECK(rc == 0);
    return n_s;
}

static void print_spans(const char *what, const struct vad_span *s, size_t n) {
    printf("%s: %zu segment(s)", what, n);
    for (size_t i = 0; i < n; i++)
        printf(" [%.2f, %.2f]", s[i].start / (double)SR, s[i].end / (double)SR);
    printf("\n");
}

// ---- segment rules on hand-made probabilities (10 ms frames of 160 samples)

/* probs: frames [a, b) at p, the rest 0. */
static void fill(float *probs, size_t a, size_t b, float p) {
    for (size_t i = a; i < b; i++)
        probs[i] = p;
}

static void test_rules(void) {
    enum { N = 1000 };
    float probs[N];
    struct vad_span *s = NULL;
    size_t n = 0;
    const size_t h = VAD_HOP_SAMPLES, pad = 30 * 16;

    /* One 1 s segment: frames 100..199 → samples [16000, 32000), padded by 480 each side. */
    fill(probs, 0, N, 0.0f);
    fill(probs, 100, 200, 0.9f);
    CHECK(vad_segments_from_probs(probs, N, h, N * h, &defaults, &s, &n) == 0);
    CHECK(n == 1 && s[0].start == 100 * h - pad && s[0].end == 200 * h + pad);
    free(s);

    /* 240 ms of speech is under min_speech (250 ms): dropped. */
    fill(probs, 0, N, 0.0f);
    fill(probs, 100, 124, 0.9f);
    CHECK(vad_segments_from_probs(probs, N, h, N * h, &defaults, &s, &n) == 0);
    CHECK(n == 0 && s == NULL);
    free(s);

    /* A 90 ms pause is under min_silence (100 ms): one segment. A 200 ms pause: two, and the
     * 30 ms pads do not meet. */
    fill(probs, 0, N, 0.0f);
    fill(probs, 100, 200, 0.9f);
    fill(probs, 209, 300, 0.9f);
    fill(probs, 320, 400, 0.9f);
    CHECK(vad_segments_from_probs(probs, N, h, N * h, &defaults, &s, &n) == 0);
    CHECK(n == 2 && s[0].start == 100 * h - pad && s[0].end == 300 * h + pad);
    CHECK(n == 2 && s[1].start == 320 * h - pad && s[1].end == 400 * h + pad);
    free(s);

    /* Hysteresis: 0.4 is under the threshold but over threshold - 0.15, so it ends nothing. */
    fill(probs, 0, N, 0.0f);
    fill(probs, 100, 200, 0.9f);
    fill(probs, 200, 500, 0.4f);
    fill(probs, 500, 600, 0.9f);
    CHECK(vad_segments_from_probs(probs, N, h, N * h, &defaults, &s, &n) == 0);
    CHECK(n == 1 && s[0].start == 100 * h - pad && s[0].end == 600 * h + pad);
    free(s);

    /* Padding clipped at both ends of the signal; speech running to the end ends there. */
    fill(probs, 0, N, 0.9f);
    CHECK(vad_segments_from_probs(probs, N, h, N * h - 7, &defaults, &s, &n) == 0);
    CHECK(n == 1 && s[0].start == 0 && s[0].end == N * h - 7);
    free(s);

    /* A pause of 150 ms between long segments with pad 100 ms: shared half and half. */
    struct vad_params p = defaults;
    p.speech_pad_ms = 100;
    fill(probs, 0, N, 0.0f);
    fill(probs, 100, 200, 0.9f);
    fill(probs, 215, 300, 0.9f);
    CHECK(vad_segments_from_probs(probs, N, h, N * h, &p, &s, &n) == 0);
    CHECK(n == 2 && s[0].end == 200 * h + 15 * h / 2 && s[1].start == s[0].end);
    free(s);
}

// ---- gathering and the time map back (src/decoder/transcript_remap.c)

static int near(double a, double b) { return fabs(a - b) < 1e-9; }

static void test_time_map(void) {
    /* Spans [1 s, 2 s) and [5 s, 5.5 s) of a 6 s input, gathered with a 0.1 s gap: the
     * gathered audio is [0, 1) speech, [1, 1.1) gap, [1.1, 1.6) speech. */
    const struct vad_span spans[] = {{SR, 2 * SR}, {5 * SR, 5 * SR + SR / 2}};
    float *pcm = malloc(6 * SR * sizeof *pcm);
    for (size_t i = 0; pcm && i < 6 * SR; i++)
        pcm[i] = (float)i;
    float *g = NULL;
    size_t n_g = 0;
    CHECK(vad_gather(pcm, spans, 2, SR / 10, &g, &n_g) == 0);
    CHECK(n_g == SR + SR / 10 + SR / 2);
    if (g && n_g == SR + SR / 10 + SR / 2) {
        CHECK(g[0] == (float)SR && g[SR - 1] == (float)(2 * SR - 1));
        CHECK(g[SR] == 0.0f && g[SR + SR / 10 - 1] == 0.0f);
        CHECK(g[SR + SR / 10] == (float)(5 * SR) && g[n_g - 1] == (float)(5 * SR + SR / 2 - 1));
    }
    free(g);
    free(pcm);

    struct time_map m;
    CHECK(time_map_from_spans(&m, spans, 2, SR / 10, SR) == 0);
    CHECK(near(time_map_start(&m, 0.0), 1.0) && near(time_map_end(&m, 0.5), 1.5));
    /* in the gap: a start goes to the next speech, an end stays at the end of the last one */
    CHECK(near(time_map_start(&m, 1.05), 5.0) && near(time_map_end(&m, 1.05), 2.0));
    CHECK(near(time_map_start(&m, 1.3), 5.2) && near(time_map_end(&m, 1.6), 5.5));
    CHECK(near(time_map_end(&m, 30.0), 5.5)); /* past the end */

    /* A segment over both spans, its words and tokens; a timestamp token at the end of the
     * first span stays there; a segment wholly in the gap becomes a point. */
    struct wc_word words[2] = {{.t0 = 0.2, .t1 = 0.98}, {.t0 = 1.02, .t1 = 1.5}};
    double tok_t0[3] = {0.0, 1.0, 1.1}, tok_t1[3] = {0.0, 1.0, 1.4};
    struct wc_segment seg[2] = {
        {.t0 = 0.0,
         .t1 = 1.6,
         .words = words,
         .n_words = 2,
         .n_tokens = 3,
         .token_t0 = tok_t0,
         .token_t1 = tok_t1},
        {.t0 = 1.02, .t1 = 1.08},
    };
    segments_remap(seg, 2, &m);
    CHECK(near(seg[0].t0, 1.0) && near(seg[0].t1, 5.5));
    CHECK(near(words[0].t0, 1.2) && near(words[0].t1, 1.98));
    CHECK(near(words[1].t0, 5.0) && near(words[1].t1, 5.4));
    CHECK(near(tok_t0[1], 2.0) && near(tok_t1[1], 2.0));
    CHECK(near(tok_t0[2], 5.0) && near(tok_t1[2], 5.3));
    CHECK(near(seg[1].t0, 5.0) && near(seg[1].t1, 5.0));
    time_map_free(&m);
    time_map_free(&m); /* twice is harmless */
}

// ---- synthetic signals

static float *noise(size_t n, double rms, uint64_t seed) {
    struct test_rng r = {seed};
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; x && i < n; i++)
        x[i] = (float)(rms * test_rng_normal(&r));
    return x;
}

static void add_tone(float *x, size_t a, size_t b, double hz, double amp) {
    for (size_t i = a; i < b; i++)
        x[i] += (float)(amp * sin(2.0 * M_PI * hz * (double)i / SR));
}

static void test_synthetic(void) {
    const size_t n = 12 * SR;
    struct vad_span *s = NULL;

    float *x = calloc(n, sizeof *x);
    CHECK(detect(x, n, &s) == 0); /* digital silence */
    free(s);
    free(x);

    /* Stationary noise at any level is the floor, not speech. */
    const double levels_db[] = {-70, -50, -30, -10};
    for (int i = 0; i < 4; i++) {
        x = noise(n, pow(10.0, levels_db[i] / 20.0), 1 + (uint64_t)i);
        size_t k = detect(x, n, &s);
        char what[64];
        snprintf(what, sizeof what, "noise %.0f dBFS", levels_db[i]);
        print_spans(what, s, k);
        CHECK(k == 0);
        free(s);
        free(x);
    }

    /* A steady tone from start to end is stationary too. */
    x = calloc(n, sizeof *x);
    add_tone(x, 0, n, 440.0, 0.3);
    size_t k = detect(x, n, &s);
    print_spans("steady tone", s, k);
    CHECK(k == 0);
    free(s);
    free(x);

    /* Tone bursts 20 dB over -50 dBFS noise: 1 s at 3 s and 0.5 s at 7 s are speech-like and
     * found to within a frame plus the pad; 0.15 s at 10 s is under min_speech. */
    x = noise(n, pow(10.0, -50.0 / 20.0), 9);
    double amp = pow(10.0, -30.0 / 20.0) * sqrt(2.0);
    add_tone(x, 3 * SR, 4 * SR, 300.0, amp);
    add_tone(x, 7 * SR, 7 * SR + SR / 2, 1000.0, amp);
    add_tone(x, 10 * SR, 10 * SR + 3 * SR / 20, 500.0, amp);
    k = detect(x, n, &s);
    print_spans("tone bursts in noise", s, k);
    CHECK(k == 2);
    const size_t tol = 30 * 16 + 2 * VAD_WIN_SAMPLES; /* pad + the window's reach */
    if (k == 2) {
        CHECK(labs((long)s[0].start - 3 * SR) <= (long)tol);
        CHECK(labs((long)s[0].end - 4 * SR) <= (long)tol);
        CHECK(labs((long)s[1].start - 7 * SR) <= (long)tol);
        CHECK(labs((long)s[1].end - (7 * SR + SR / 2)) <= (long)tol);
    }
    free(s);
    free(x);
}

// ---- real speech

/* Each 16 kHz dev clip between 4 s of -50 dBFS noise and 4 s of digital silence: every segment
 * lies within the clip (+-0.1 s) and they cover most of it. */
static void test_speech(void) {
    const char *clips[] = {
        "audio/jfk/jfk.wav",
        "audio/librivox/sense_and_sensibility_01_austen_64kb-0870.wav",
        "audio/librivox/sense_and_sensibility_01_austen_64kb-0880.wav",
        "audio/librivox/sense_and_sensibility_01_austen_64kb-0930.wav",
    };
    for (size_t c = 0; c < sizeof clips / sizeof *clips; c++) {
        const char *path = shared_path(clips[c]);
        if (access(path, R_OK) != 0) {
            fprintf(stderr, "SKIP speech: %s missing\n", path);
            continue;
        }
        float *clip = NULL;
        size_t n_clip = 0;
        char err[256];
        CHECK(audio_load(path, &clip, &n_clip, err, sizeof err) == 0);
        const size_t lead = 4 * SR, n = lead + n_clip + 4 * SR;
        float *x = noise(n, pow(10.0, -50.0 / 20.0), 100 + c);
        memset(x + lead + n_clip, 0, 4 * SR * sizeof *x);
        memcpy(x + lead, clip, n_clip * sizeof *x);
        struct vad_span *s = NULL;
        size_t k = detect(x, n, &s);
        print_spans(clips[c], s, k);
        CHECK(k >= 1);
        size_t covered = 0;
        for (size_t i = 0; i < k; i++) {
            CHECK(s[i].start + SR / 10 >= lead && s[i].end <= lead + n_clip + SR / 10);
            covered += s[i].end - s[i].start;
        }
        CHECK(covered >= n_clip * 6 / 10);
        free(s);
        free(x);
        free(clip);
    }
}

static int print_file(const char *path) {
    float *x = NULL;
    size_t n = 0;
    char err[256];
    if (audio_load(path, &x, &n, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct vad_span *s = NULL;
    size_t k = detect(x, n, &s);
    print_spans(path, s, k);
    free(s);
    free(x);
    return TEST_RESULT();
}

int main(int argc, char **argv) {
    if (argc > 1)
        return print_file(argv[1]);
    test_rules();
    test_time_map();
    test_synthetic();
    test_speech();
    if (!test_failures)
        printf("vad: OK\n");
    return TEST_RESULT();
}
