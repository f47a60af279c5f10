/*
 * test_batch.c — whisperc_full_batch against whisperc_full, input by input: the same segments
 * (text, times, tokens, decoding details) and text, bit for bit, on LJSpeech dev clips of
 * different lengths plus one long input of many windows, with tiny.en, at batch sizes 4 and 8;
 * then with a logprob threshold that sends windows to the temperature fallback (best_of samples
 * decoded in the batch, on its lanes), with a first temperature above 0 (every window sampled),
 * and an abort; then under a max_memory_bytes budget that holds only a
 * batch of 2: batch size 8 falls back to 2 with warnings, with the same results; and under
 * ones that hold the state but not one lane, or 5 beams on the state's decoder but not one
 * window's 5 beams batched: the inputs run one by one, with the same results. Continuous
 * batching: the clips and the long input after them, at batch size 4, take fewer batched
 * steps than rounds (each until its longest window ends) would. Batch size 8 computes each
 * log-Mel when its input enters a lane, the others ahead on other threads (the prefetcher a
 * GPU uses; WHISPERC_MEL_PREFETCH), and its lanes wait for three to need a window before an
 * encoder pass (as on a GPU; WHISPERC_ENCODE_MIN_PASS); every other batched run queues its
 * encoder passes on a stream of their own while a step runs and starts their windows a fixed
 * number of steps later (a GPU's order; WHISPERC_ENCODE_STREAM=1). whisperc_full through the batch
 * decoder with one lane (a GPU's path, WHISPERC_DECODER=batch) gives the same results as the
 * single decoder. Beam search (5 beams) batched and through the batch decoder alone gives
 * the same results as whisperc_full's own beam search too, and so do word timestamps (with
 * max_len 1 too): words, times and probabilities; and VAD (inputs with no speech among them);
 * and, every prompt a prefill, several windows' prefills started together.
 * Skips (77)
 * without ../shared. `test_batch quick`: 5 clips and a shorter long input, one batch size a
 * configuration (a GPU check's); `test_batch sanitized` (CI's ASan + UBSan build): 4 clips, and
 * no second run of a path another covers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "libwhisperc.h"

#define MAX_CLIPS 10 /* LJ001-0001 … 0010, one input each */
#define MAX_LONG  14 /* the next 14 clips joined: one input of several windows */

static int N_CLIPS = MAX_CLIPS, N_LONG = MAX_LONG, N_INPUTS = MAX_CLIPS + 1;
/* test_batch sanitized (CI's ASan + UBSan build, 3-5x slower): the batched paths' memory, not
 * again the properties the release build's run checks (schedule, single-lane decoding) */
static bool SANITIZED;

struct seg {
    char *text;
    int64_t t0, t1;
    float temperature, avg_logprob, no_speech_prob, compression_ratio;
    int n_tokens;
    int *tokens;
    /* word timestamps: each word's text, "|"-joined, and its times and probability */
    char *words;
    int n_words;
    int64_t *word_t; /* [n_words][2] */
    float *word_p;
};

struct result {
    char *text;
    struct seg *seg;
    int n_seg;
};

static char *dup_str(const char *s) {
    char *d = malloc(strlen(s) + 1);
    strcpy(d, s);
    return d;
}

/* The selected result of st. */
static void take_result(whisperc_state *st, struct result *r) {
    r->text = dup_str(whisperc_full_text(st));
    r->n_seg = whisperc_n_segments(st);
    r->seg = calloc((size_t)r->n_seg + 1, sizeof *r->seg);
    for (int i = 0; i < r->n_seg; i++) {
        struct seg *s = &r->seg[i];
        s->text = dup_str(whisperc_segment_text(st, i));
        s->t0 = whisperc_segment_t0_ms(st, i);
        s->t1 = whisperc_segment_t1_ms(st, i);
        s->temperature = whisperc_segment_temperature(st, i);
        s->avg_logprob = whisperc_segment_avg_logprob(st, i);
        s->no_speech_prob = whisperc_segment_no_speech_prob(st, i);
        s->compression_ratio = whisperc_segment_compression_ratio(st, i);
        s->n_tokens = whisperc_segment_n_tokens(st, i);
        s->tokens = malloc(((size_t)s->n_tokens + 1) * sizeof *s->tokens);
        for (int k = 0; k < s->n_tokens; k++)
            s->tokens[k] = whisperc_segment_token_id(st, i, k);
        s->n_words = whisperc_segment_n_words(st, i);
        s->word_t = malloc(((size_t)s->n_words + 1) * 2 * sizeof *s->word_t);
        s->word_p = malloc(((size_t)s->n_words + 1) * sizeof *s->word_p);
        size_t len = 1;
        for (int w = 0; w < s->n_words; w++)
            len += strlen(whisperc_word_text(st, i, w)) + 1;
        s->words = calloc(len, 1);
        for (int w = 0; w < s->n_words; w++) {
            strcat(strcat(s->words, whisperc_word_text(st, i, w)), "|");
            s->word_t[2 * w] = whisperc_word_t0_ms(st, i, w);
            s->word_t[2 * w + 1] = whisperc_word_t1_ms(st, i, w);
            s->word_p[w] = whisperc_word_p(st, i, w);
        }
    }
}

static void result_free(struct result *r) {
    for (int i = 0; i < r->n_seg; i++) {
        free(r->seg[i].text);
        free(r->seg[i].tokens);
        free(r->seg[i].words), free(r->seg[i].word_t), free(r->seg[i].word_p);
    }
    free(r->seg);
    free(r->text);
    memset(r, 0, sizeof *r);
}

/* 1 when a and b are the same, else prints the first difference. */
static int same_result(const char *what, int i, const struct result *a, const struct result *b) {
    if (strcmp(a->text, b->text) || a->n_seg != b->n_seg) {
        fprintf(stderr,
                "%s input %d: text or segments differ:\n  alone: (%d) %s\n  batch: (%d) %s\n", what,
                i, a->n_seg, a->text, b->n_seg, b->text);
        return 0;
    }
    for (int k = 0; k < a->n_seg; k++) {
        const struct seg *x = &a->seg[k], *y = &b->seg[k];
        int same = !strcmp(x->text, y->text) && x->t0 == y->t0 && x->t1 == y->t1 &&
                   x->temperature == y->temperature && x->avg_logprob == y->avg_logprob &&
                   x->no_speech_prob == y->no_speech_prob &&
                   x->compression_ratio == y->compression_ratio && x->n_tokens == y->n_tokens &&
                   !memcmp(x->tokens, y->tokens, (size_t)x->n_tokens * sizeof *x->tokens) &&
                   x->n_words == y->n_words && !strcmp(x->words, y->words) &&
                   !memcmp(x->word_t, y->word_t, (size_t)x->n_words * 2 * sizeof *x->word_t) &&
                   !memcmp(x->word_p, y->word_p, (size_t)x->n_words * sizeof *x->word_p);
        if (!same) {
            fprintf(stderr,
                    "%s input %d segment %d differs: alone [%lld %lld] T=%g lp=%.9g '%s' (%d "
                    "words), batch [%lld %lld] T=%g lp=%.9g '%s' (%d words)\n",
                    what, i, k, (long long)x->t0, (long long)x->t1, x->temperature, x->avg_logprob,
                    x->text, x->n_words, (long long)y->t0, (long long)y->t1, y->temperature,
                    y->avg_logprob, y->text, y->n_words);
            return 0;
        }
    }
    return 1;
}

/* After a whisperc_full_batch of n inputs: each input's result against alone[i] (freed), the
 * run's timings into *tm; 1 when all are the same. */
static int batch_same(whisperc_state *st, const char *what, struct result *alone, int n,
                      struct whisperc_timings *tm) {
    *tm = (struct whisperc_timings){.size = sizeof *tm};
    CHECK(whisperc_state_timings(st, tm) == WHISPERC_OK);
    int ok = 1;
    for (int i = 0; i < n; i++) {
        CHECK(whisperc_batch_select(st, i) == WHISPERC_OK);
        struct result r;
        take_result(st, &r);
        ok &= same_result(what, i, &alone[i], &r);
        result_free(&r);
        result_free(&alone[i]);
    }
    return ok;
}

static bool abort_now(void *user) {
    (*(int *)user)++;
    return true;
}

/* Every input alone, then batched at each size; returns the fallbacks the batched runs made. */
static int compare(whisperc_state *st, struct whisperc_full_params *fp, const float *const *pcm,
                   const int *n, const int *sizes, int n_sizes, const char *what) {
    struct result alone[MAX_CLIPS + 1];
    int alone_windows = 0;
    for (int i = 0; i < N_INPUTS; i++) {
        CHECK(whisperc_full(st, fp, pcm[i], n[i]) == WHISPERC_OK);
        take_result(st, &alone[i]);
        struct whisperc_timings tm = {.size = sizeof tm};
        CHECK(whisperc_state_timings(st, &tm) == WHISPERC_OK);
        alone_windows += tm.n_windows;
    }
    /* whisperc_full through the batch decoder, one window (a GPU's way: its steps replay as
     * graphs); the first time for each strategy only */
    static bool single_checked[2];
    if (!SANITIZED && !single_checked[fp->strategy == WHISPERC_SAMPLING_BEAM_SEARCH]) {
        single_checked[fp->strategy == WHISPERC_SAMPLING_BEAM_SEARCH] = true;
        setenv("WHISPERC_DECODER", "batch", 1);
        int ok = 1;
        for (int i = 0; i < N_INPUTS; i++) {
            CHECK(whisperc_full(st, fp, pcm[i], n[i]) == WHISPERC_OK);
            struct result r;
            take_result(st, &r);
            ok &= same_result("whisperc_full, batch decoder", i, &alone[i], &r);
            result_free(&r);
        }
        unsetenv("WHISPERC_DECODER");
        printf("%s, whisperc_full through the batch decoder: %d inputs %s\n", what, N_INPUTS,
               ok ? "identical" : "DIFFER");
        CHECK(ok);
    }
    int n_fallbacks = 0;
    static int n_calls;
    n_calls++;
    for (int b = 0; b < n_sizes; b++) {
        fp->batch_size = sizes[b];
        /* log-Mels computed ahead on other threads (a GPU's default) at every size but 8; at 8,
         * lanes wait for 3 to need a window before an encoder pass (a GPU's way); every other
         * run with the encoder's passes on a stream of their own, in the order a GPU runs them
         * (queued while a step runs, their windows started a fixed number of steps later: the same
         * transcripts) */
        bool apart = (n_calls + b) % 2 == 0;
        setenv("WHISPERC_MEL_PREFETCH", sizes[b] == 8 ? "0" : "1", 1);
        setenv("WHISPERC_ENCODE_MIN_PASS", sizes[b] == 8 ? "3" : "1", 1);
        setenv("WHISPERC_ENCODE_STREAM", apart ? "1" : "0", 1);
        int rc = whisperc_full_batch(st, fp, pcm, n, N_INPUTS);
        CHECK(rc == WHISPERC_OK);
        if (rc) {
            fprintf(stderr, "%s\n", whisperc_state_errmsg(st));
            continue;
        }
        CHECK(whisperc_batch_n_inputs(st) == N_INPUTS);
        struct whisperc_timings tm = {.size = sizeof tm};
        CHECK(whisperc_state_timings(st, &tm) == WHISPERC_OK);
        n_fallbacks += tm.n_fallbacks;
        int ok = 1;
        /* selected in a scrambled order, so that selecting back and forth is covered too */
        for (int s = 0; s < N_INPUTS; s++) {
            int i = (s * 5 + 3) % N_INPUTS;
            CHECK(whisperc_batch_select(st, i) == WHISPERC_OK);
            struct result r;
            take_result(st, &r);
            ok &= same_result(what, i, &alone[i], &r);
            result_free(&r);
        }
        printf("%s, batch_size %d%s: %d inputs %s (%d windows, %d fallbacks, %d batched steps, "
               "decode %.0f ms)\n",
               what, sizes[b], apart ? ", encoder passes beside the steps" : "", N_INPUTS,
               ok ? "identical" : "DIFFER", tm.n_windows, tm.n_fallbacks, tm.n_batch_steps,
               tm.decode_ms);
        CHECK(ok);
        /* each window encoded once, as alone: a fallback decodes again from the audio the
         * batch has, in its lanes where its best_of samples fit, else alone on the state's
         * decoder over the batch's K/V of the window */
        CHECK(tm.n_windows == alone_windows);
        CHECK(whisperc_batch_select(st, N_INPUTS) == WHISPERC_ERR_INVALID_ARG);
        CHECK(whisperc_batch_select(st, -1) == WHISPERC_ERR_INVALID_ARG);
    }
    for (int i = 0; i < N_INPUTS; i++)
        result_free(&alone[i]);
    unsetenv("WHISPERC_ENCODE_MIN_PASS"); /* the CPU's default (1) for the schedule test */
    unsetenv("WHISPERC_ENCODE_STREAM");
    return n_fallbacks;
}

/* Continuous batching: every clip, then the long input, at batch size 4, with no fallback (so
 * that each window is decoded once, in the batch). Checks identity, that the batch decodes
 * exactly the tokens the inputs decode alone, and that its steps (one for all lanes) beat the
 * round-based schedule (every lane's window until the longest of the round ends, then all move
 * on): that schedule needs the longest clip of each round of clips only, then at least the
 * long input's steps; here the long input enters as soon as a lane frees up. */
static void test_schedule(whisperc_state *st, const float *const *pcm, const int *n) {
    const float *in[MAX_CLIPS + 1];
    int n_in[MAX_CLIPS + 1], calls[MAX_CLIPS + 1] = {0}, sum_tokens = 0;
    struct result alone[MAX_CLIPS + 1];
    struct whisperc_full_params fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    fp.language = "en";
    fp.n_temperatures = 1;
    for (int i = 0; i < N_INPUTS; i++) {
        in[i] = pcm[i];
        n_in[i] = n[i];
        CHECK(whisperc_full(st, &fp, in[i], n_in[i]) == WHISPERC_OK);
        take_result(st, &alone[i]);
        struct whisperc_timings tm = {.size = sizeof tm};
        CHECK(whisperc_state_timings(st, &tm) == WHISPERC_OK);
        calls[i] = tm.n_decode_tokens - tm.n_windows; /* a window: its prompt, then steps */
        sum_tokens += tm.n_decode_tokens;
    }
    const int B = 4;
    int round_based = calls[N_CLIPS];
    for (int i0 = 0; i0 + B <= N_CLIPS; i0 += B) {
        int longest = 0;
        for (int i = i0; i < i0 + B; i++)
            longest = calls[i] > longest ? calls[i] : longest;
        round_based += longest;
    }
    fp.batch_size = B;
    CHECK(whisperc_full_batch(st, &fp, in, n_in, N_INPUTS) == WHISPERC_OK);
    struct whisperc_timings tm;
    int ok = batch_same(st, "no fallback", alone, N_INPUTS, &tm);
    printf("no fallback, batch_size %d: %d inputs %s; %d batched steps (round-based: at least "
           "%d; the long input alone: %d), %d tokens (alone: %d)\n",
           B, N_INPUTS, ok ? "identical" : "DIFFER", tm.n_batch_steps, round_based, calls[N_CLIPS],
           tm.n_decode_tokens, sum_tokens);
    CHECK(ok);
    CHECK(tm.n_decode_tokens == sum_tokens);
    CHECK(tm.n_batch_steps >= calls[N_CLIPS]);
    CHECK(tm.n_batch_steps < round_based);
}

/* The warnings logged, one line each. */
/* VAD with word timestamps: clip 0 after 4 s of silence, 3 s of silence alone (no speech: no
 * segments) and the long input, at batch size 2, against whisperc_full (times mapped back to
 * each input's, words too). */
static void test_vad(whisperc_state *st, const float *const *pcm, const int *n) {
    int sil = 4 * 16000, quiet_n = 3 * 16000;
    float *padded = calloc((size_t)n[0] + (size_t)sil, sizeof *padded);
    float *quiet = calloc((size_t)quiet_n, sizeof *quiet);
    memcpy(padded + sil, pcm[0], (size_t)n[0] * sizeof *padded);
    const float *in[3] = {padded, quiet, pcm[N_CLIPS]};
    int nn[3] = {n[0] + sil, quiet_n, n[N_CLIPS]};
    struct whisperc_full_params fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    fp.language = "en";
    fp.vad = true;
    fp.word_timestamps = true;
    struct result alone[3];
    for (int i = 0; i < 3; i++) {
        CHECK(whisperc_full(st, &fp, in[i], nn[i]) == WHISPERC_OK);
        take_result(st, &alone[i]);
    }
    printf("vad alone: %d segments from %lld ms after 4 s of silence, %d in silence, %d in the "
           "long input\n",
           alone[0].n_seg, alone[0].n_seg ? (long long)alone[0].seg[0].t0 : -1LL, alone[1].n_seg,
           alone[2].n_seg);
    CHECK(alone[1].n_seg == 0 && alone[0].n_seg > 0 &&
          alone[0].seg[0].t0 >= 3500); /* VAD pads speech by 30 ms */
    fp.batch_size = 2;
    CHECK(whisperc_full_batch(st, &fp, in, nn, 3) == WHISPERC_OK);
    struct whisperc_timings tm;
    int ok = batch_same(st, "vad", alone, 3, &tm);
    printf("vad + word timestamps, batch_size 2: 3 inputs %s (%d batched steps, vad %.1f s of "
           "%.1f s)\n",
           ok ? "identical" : "DIFFER", tm.n_batch_steps, tm.vad_seconds, tm.audio_seconds);
    CHECK(ok && tm.n_batch_steps > 0);
    free(padded), free(quiet);
}

static void on_log(whisperc_log_level level, const char *msg, void *user) {
    char *buf = user;
    if (level == WHISPERC_LOG_WARN && strlen(buf) + strlen(msg) + 2 < 4096)
        strcat(strcat(buf, msg), "\n");
}

/* N from "... needs about N MiB ..." in msg, or -1. */
static long needs_mib(const char *msg) {
    const char *p = strstr(msg, "needs about ");
    return p ? strtol(p + strlen("needs about "), NULL, 10) : -1;
}

/* 2 inputs at batch size `size` on a state whose budget refuses even one window's lanes: each
 * has whisperc_full's result, run one by one with a warning that names `refusal`; a second call
 * goes the same way without a new warning (the refusal is kept). */
static void check_one_by_one(whisperc_state *st, struct whisperc_full_params *fp,
                             const float *const *pcm, const int *n, int size, const char *what,
                             const char *refusal, char *warnings) {
    char name[128];
    snprintf(name, sizeof name, "%s, one by one", what);
    int n_inputs = N_INPUTS;
    warnings[0] = '\0';
    N_INPUTS = 2;
    const int sizes[] = {size};
    compare(st, fp, pcm, n, sizes, 1, name);
    N_INPUTS = n_inputs;
    printf("warnings:\n%s", warnings);
    CHECK(strstr(warnings, refusal) != NULL);
    CHECK(strstr(warnings, "the inputs run one by one") != NULL);
    warnings[0] = '\0';
    CHECK(whisperc_full_batch(st, fp, pcm, n, 2) == WHISPERC_OK);
    CHECK(warnings[0] == '\0');
    CHECK(whisperc_batch_n_inputs(st) == 2);
}

/* A model whose max_memory_bytes holds it, a state and a batch of 2 but not of 4: batch size 8
 * falls back (8 -> 4 -> 2) with a warning each time, and every result stays whisperc_full's.
 * Then ones that hold the state but not one lane, and 5 beams on the state's own decoder but
 * not batched: one by one. */
static void test_memory_fallback(const char *model_path, const float *const *pcm, const int *n) {
    /* the model with a state of one sequence: what the state's refusal names */
    struct whisperc_model_params mp = whisperc_model_default_params();
    mp.device = WHISPERC_DEVICE_CPU;
    char err[512] = "";
    whisperc_model *model = NULL;
    whisperc_state *st = NULL;
    mp.max_memory_bytes = 1 << 20;
    CHECK(whisperc_model_load(model_path, &mp, &model, err, sizeof err) == WHISPERC_ERR_NO_MEMORY);
    long model_mib = needs_mib(err);
    mp.max_memory_bytes = (int64_t)(model_mib + 1) << 20;
    CHECK(whisperc_model_load(model_path, &mp, &model, err, sizeof err) == WHISPERC_OK);
    CHECK(whisperc_state_new_v2(model, &st, err, sizeof err) == WHISPERC_ERR_NO_MEMORY);
    long base_mib = needs_mib(err);
    whisperc_model_free(model);
    CHECK(model_mib > 0 && base_mib > model_mib);
    /* tiny.en's batch decoder: per lane, the self-attention pool (4 layers x 448 rows) and the
     * cross-attention K/V (4 layers x 1500 rows) of 384 floats each, a row of logits (from 3
     * lanes), its step indices (twice), slot rows (twice) and position; once, the activations of
     * 448 rows and two rows of logits on the host (src/decoder/decoder_batch.c batch_sizes) */
    int64_t lane =
        (2 * 4 * 448 * 384 + 2 * 4 * 1500 * 384 + 51864) * 4 + (2 * 451 + 2 * 448 + 2) * 4;
    int64_t once = 8 * 448 * 384 * 4 + 2 * 51864 * 4;
    /* a batch of 2 or more encodes 2 windows at a time on the CPU (src/api_batch.c): the
     * encoder's second window (encoder_memory_bytes: 3002 padded mel and conv rows, 10 x 1500
     * rows of activations) and its encoder output, with half a lane to spare: less than 2
     * lanes, so a batch of 4 still does not fit */
    int64_t enc_window = (3002 * (80 + 384) + 10 * 1500 * 384 + 3002 * 80) * 4;
    mp.max_memory_bytes =
        ((int64_t)(base_mib + 1) << 20) + once + 2 * lane + enc_window + 1500 * 384 * 4 + lane / 2;
    CHECK(whisperc_model_load(model_path, &mp, &model, err, sizeof err) == WHISPERC_OK);
    CHECK(whisperc_state_new(model, &st) == WHISPERC_OK);
    if (!st)
        return;

    char warnings[4096] = "";
    struct whisperc_full_params fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    fp.language = "en";
    fp.log_fn = on_log;
    fp.log_user_data = warnings;
    int n_inputs = N_INPUTS;
    N_INPUTS = 4; /* enough for two batches of 2 */
    const int sizes[] = {8};
    compare(st, &fp, pcm, n, sizes, 1, "max_memory_bytes for a batch of 2");
    N_INPUTS = n_inputs;
    printf("warnings:\n%s", warnings);
    CHECK(strstr(warnings, "batch of 8 does not fit in memory") != NULL);
    CHECK(strstr(warnings, "; using 4\n") != NULL);
    CHECK(strstr(warnings, "batch of 4 does not fit in memory") != NULL);
    CHECK(strstr(warnings, "; using 2\n") != NULL);
    CHECK(strstr(warnings, "batch of 2 does not fit") == NULL);
    /* a refused size is not tried again on this state: no new warning */
    warnings[0] = '\0';
    fp.batch_size = 8;
    CHECK(whisperc_full_batch(st, &fp, pcm, n, 2) == WHISPERC_OK);
    CHECK(warnings[0] == '\0');
    whisperc_state_free(st);
    whisperc_model_free(model);

    /* a budget that holds the state (one sequence) but not one lane: greedy one by one; then
     * on the same state, beam search (5 sequences) is refused: what that needs */
    mp.max_memory_bytes = (int64_t)(base_mib + 1) << 20;
    CHECK(whisperc_model_load(model_path, &mp, &model, err, sizeof err) == WHISPERC_OK);
    CHECK(whisperc_state_new(model, &st) == WHISPERC_OK);
    if (!st)
        return;
    check_one_by_one(st, &fp, pcm, n, 8, "max_memory_bytes for no lane", "batch of 1: ", warnings);
    struct whisperc_full_params beams = whisperc_full_default_params(WHISPERC_SAMPLING_BEAM_SEARCH);
    beams.language = "en";
    beams.log_fn = on_log;
    beams.log_user_data = warnings;
    CHECK(whisperc_full(st, &beams, pcm[0], n[0]) == WHISPERC_ERR_NO_MEMORY);
    long beams_mib = needs_mib(whisperc_state_errmsg(st));
    whisperc_state_free(st);
    whisperc_model_free(model);
    CHECK(beams_mib > base_mib);

    /* a budget that holds the state's own decoder for 5 beams (whisperc_full's beam search)
     * but not a batch decoder for one window's 5 beams: beam search one by one */
    mp.max_memory_bytes = (int64_t)(beams_mib + 1) << 20;
    CHECK(whisperc_model_load(model_path, &mp, &model, err, sizeof err) == WHISPERC_OK);
    CHECK(whisperc_state_new(model, &st) == WHISPERC_OK);
    if (!st)
        return;
    check_one_by_one(st, &beams, pcm, n, 2, "max_memory_bytes for 5 beams",
                     "batch of 1 with 5 beams", warnings);
    whisperc_state_free(st);
    whisperc_model_free(model);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* quick: 6 inputs, one batch size a configuration (a GPU check's); sanitized: 4 inputs,
     * and no second run of a path another covers (the sampling of T 0.3, max_len 1, prompts
     * prefilled, whisperc_full through the batch decoder, the schedule's test) */
    bool sanitized = argc > 1 && !strcmp(argv[1], "sanitized");
    bool quick = sanitized || (argc > 1 && !strcmp(argv[1], "quick"));
    SANITIZED = sanitized;
    if (quick) {
        N_CLIPS = sanitized ? 3 : 5; /* test_memory_fallback takes 4 inputs */
        N_LONG = 6;
        N_INPUTS = N_CLIPS + 1;
    }
    char *model_path = dup_str(shared_path_or_skip("models/ggml-tiny.en.bin")); /* static */
    float *pcm[MAX_CLIPS + 1];
    int n[MAX_CLIPS + 1];
    for (int i = 0; i < N_CLIPS; i++)
        pcm[i] = ljspeech_clips(i, 1, &n[i]);
    pcm[N_CLIPS] = ljspeech_clips(N_CLIPS, N_LONG, &n[N_CLIPS]);
    printf("long input: %.1f s\n", n[N_CLIPS] / 16000.0);

    whisperc_model *model = NULL;
    struct whisperc_model_params mp = whisperc_model_default_params();
    /* WHISPERC_TEST_DEVICE=cuda: the same on the GPU (tools/device/gpu-check.sh compare), where
     * an encoder pass of several windows is one GEMM, whose bits may differ from a window's
     * alone: what the identity checks then say is measured there */
    const char *device = getenv("WHISPERC_TEST_DEVICE");
    bool cuda = device && !strcmp(device, "cuda");
    mp.device = cuda ? WHISPERC_DEVICE_CUDA : WHISPERC_DEVICE_CPU;
    printf("device: %s\n", cuda ? "cuda" : "cpu");
    char err[256];
    whisperc_state *st = NULL;
    if (whisperc_model_load(model_path, &mp, &model, err, sizeof err) ||
        whisperc_state_new(model, &st)) {
        fprintf(stderr, "%s: cannot load: %s\n", model_path, err);
        return 1;
    }
    struct whisperc_full_params fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    fp.language = "en";
    const float *const *in = (const float *const *)pcm;

    const int sizes[] = {4, 8}, quick_size[] = {3};
    compare(st, &fp, in, n, quick ? quick_size : sizes, quick ? 1 : 2, "defaults");
    /* a threshold most windows miss: fallbacks (5 samples at T > 0) inside the batched run: in
     * the batch at batch size 8 (5 of its 8 decoder lanes while one runs), alone at 4 (more
     * samples than lanes); two temperatures keep it quick */
    fp.logprob_threshold = -0.15f;
    fp.n_temperatures = 2;
    fp.temperatures[1] = 0.4f;
    fp.best_of = 5; /* the CLI's -bo; the API's default for greedy is 1 */
    const int fallback_sizes[] = {8, 4}, fallback_quick[] = {5};
    CHECK(compare(st, &fp, in, n, quick ? fallback_quick : fallback_sizes, quick ? 1 : 2,
                  "logprob_threshold -0.15, T 0 and 0.4") > 0);

    /* every window sampled (3 samples at T = 0.3), and those that fall back greedy at T = 0
     * (best_of has no use there: the batch must not ask for it) */
    fp.temperatures[0] = 0.3f;
    fp.temperatures[1] = 0.0f;
    fp.best_of = 3;
    const int sample_sizes[] = {4}, sample_quick[] = {2};
    if (!sanitized)
        compare(st, &fp, in, n, quick ? sample_quick : sample_sizes, 1, "T 0.3 then 0, best_of 3");
    fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    fp.language = "en";

    if (!sanitized) /* its rounds of 4 clips */
        test_schedule(st, in, n);

    /* word timestamps (their alignment on the state's decoder over the window's audio region,
     * as each window ends), then max_len 1 with them (a word a segment) */
    fp.word_timestamps = true;
    const int word_sizes[] = {4}, word_quick[] = {3};
    compare(st, &fp, in, n, quick ? word_quick : word_sizes, 1, "word timestamps");
    fp.max_len = 1;
    fp.split_on_word = true;
    if (!sanitized)
        compare(st, &fp, in, n, quick ? word_quick : word_sizes, 1, "word timestamps, max_len 1");
    fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    fp.language = "en";
    test_vad(st, in, n);

    /* beam search (5 beams, the CLI's default): each window's beams are 5 lanes of the batch
     * decoder, the windows of several inputs stepped together; fallbacks at T > 0 (best_of 5)
     * on 5 lanes likewise */
    fp = whisperc_full_default_params(WHISPERC_SAMPLING_BEAM_SEARCH);
    fp.language = "en";
    const int beam_sizes[] = {3}, beam_quick[] = {2};
    compare(st, &fp, in, n, quick ? beam_quick : beam_sizes, 1, "beam search 5");
    /* every prompt a prefill (WHISPERC_BATCH_PROMPT=prefill): the windows an encoder pass
     * starts are prefilled together, their first picks synced once (decode_batch_start_n) */
    setenv("WHISPERC_BATCH_PROMPT", "prefill", 1);
    if (!sanitized)
        compare(st, &fp, in, n, quick ? beam_quick : beam_sizes, 1,
                "beam search 5, prompts prefilled together");
    fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    fp.language = "en";
    compare(st, &fp, in, n, quick ? beam_quick : beam_sizes, 1,
            "greedy, prompts prefilled together");
    unsetenv("WHISPERC_BATCH_PROMPT");

    /* bad calls: no inputs, a bad batch size, a bad input named */
    fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    CHECK(whisperc_full_batch(st, &fp, in, n, 0) == WHISPERC_ERR_INVALID_ARG);
    fp.batch_size = 0;
    CHECK(whisperc_full_batch(st, &fp, in, n, 2) == WHISPERC_ERR_INVALID_ARG);
    fp.batch_size = 4;
    int bad_n[2] = {n[0], 0};
    CHECK(whisperc_full_batch(st, &fp, in, bad_n, 2) == WHISPERC_ERR_INVALID_ARG);
    CHECK(strstr(whisperc_state_errmsg(st), "input 1") != NULL);
    CHECK(whisperc_batch_n_inputs(st) == 0);
    CHECK(whisperc_n_segments(st) == 0);
    /* the abort callback (asked after every step) ends the batched run, with no results */
    int n_calls = 0;
    fp.abort_fn = abort_now;
    fp.abort_user_data = &n_calls;
    CHECK(whisperc_full_batch(st, &fp, in, n, 3) == WHISPERC_ERR_ABORTED);
    CHECK(n_calls == 1);
    CHECK(whisperc_batch_n_inputs(st) == 0);

    whisperc_state_free(st);
    whisperc_model_free(model);
    if (!cuda) /* max_memory_bytes budgets host memory (a GPU's arena refuses by itself) */
        test_memory_fallback(model_path, in, n);
    free(model_path);
    for (int i = 0; i < N_INPUTS; i++)
        free(pcm[i]);
    return TEST_RESULT();
}
