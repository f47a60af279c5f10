/*
 * api_bench.c — see api_bench.h. Drives the encoder and decoder of a state directly (as
 * decoder/transcribe.c does), without the logit filters, timestamps or fallbacks, so the
 * amount of work depends on the model's shape only.
 */
#include "api_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "decoder/decode_window.h"
#ifdef WC_HAVE_CUDA
#include "gpu/backend_cuda.h"
#endif
#include "util.h"

#define BENCH_FRAMES 3000 /* one 30 s window of 10 ms frames */

const char *wc_bench_device(const whisperc_model *m) {
#ifdef WC_HAVE_CUDA
    if (m && strcmp(m->be->ops->name, "cuda") == 0)
        return cuda_backend_device(m->be);
#endif
    return m ? m->be->ops->name : NULL;
}

/* splitmix64: a fixed-seed input that needs no library RNG state. */
static uint64_t next_u64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int32_t argmax(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

static whisperc_status bench_fail(whisperc_state *st, int rc, const char *stage) {
    snprintf(st->errmsg, sizeof st->errmsg, "bench %s: %s", stage,
             st->s->errmsg[0] ? st->s->errmsg : whisperc_status_str(rc));
    return rc;
}

static int bench_threads(whisperc_state *st, int n_threads) {
    if (n_threads > 0 && n_threads != st->n_threads) {
        int rc = st->s->be->ops->stream_set_threads(st->s, n_threads);
        if (rc)
            return bench_fail(st, rc, "threads");
        st->n_threads = n_threads;
    }
    return 0;
}

/* n_windows seeded random log-Mel windows [n_mels][BENCH_FRAMES], one allocation; NULL if out
 * of memory. */
static float *random_windows(const struct wc_hparams *hp, int n_windows, uint64_t seed) {
    size_t n_mel = (size_t)n_windows * hp->n_mels * BENCH_FRAMES;
    float *mel = malloc(n_mel * sizeof *mel);
    for (size_t i = 0; mel && i < n_mel; i++) /* top 24 bits -> [-1, 1), a log-Mel's range */
        mel[i] = (float)(next_u64(&seed) >> 40) / (float)(1 << 23) - 1.0f;
    return mel;
}

whisperc_status wc_bench_encoder(whisperc_state *st, int n_threads, int n_windows, uint64_t seed,
                                 struct wc_bench_encoder_times *out) {
    if (!st || !out || n_windows < 1 || n_windows > 64)
        return WHISPERC_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    st->errmsg[0] = '\0';
    const struct wc_hparams *hp = &st->m->file->hp;
    struct wc_stream *s = st->s;
    int per_pass = n_windows < ENCODER_MAX_WINDOWS ? n_windows : ENCODER_MAX_WINDOWS;
    int rc = bench_threads(st, n_threads);
    if (!rc)
        rc = api_encoder_reserve(st, per_pass);
    if (rc)
        return rc;
    float *mel = random_windows(hp, n_windows, seed);
    const float **wins = malloc((size_t)n_windows * sizeof *wins);
    if (!mel || !wins) {
        free(mel);
        free(wins);
        return WHISPERC_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n_windows; i++)
        wins[i] = mel + (size_t)i * hp->n_mels * BENCH_FRAMES;
    double t0 = wc_now_ms();
    for (int i = 0; i < n_windows && !s->err; i++) {
        encoder_forward(&st->enc, s, wins[i], BENCH_FRAMES, st->audio_features);
        wc_stream_sync(s); /* as transcribe() waits for each window before decoding it */
    }
    rc = wc_stream_sync(s);
    out->alone_ms = wc_now_ms() - t0;
    t0 = wc_now_ms();
    for (int i = 0; i < n_windows && !rc; i += per_pass) {
        int n = n_windows - i < per_pass ? n_windows - i : per_pass;
        encoder_forward_batch(&st->enc, s, wins + i, BENCH_FRAMES, n, st->audio_features);
        rc = wc_stream_sync(s);
    }
    out->batch_ms = wc_now_ms() - t0;
    out->n_windows = n_windows;
    out->n_per_pass = per_pass;
    free(mel);
    free(wins);
    return rc ? bench_fail(st, rc, "encoder") : WHISPERC_OK;
}

whisperc_status wc_bench_window(whisperc_state *st, int n_threads, int n_tokens, int n_seq,
                                uint64_t seed, struct wc_bench_times *out) {
    if (!st || !out || n_tokens < 0 || n_seq < 1 || n_seq > WC_MAX_GROUP)
        return WHISPERC_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    st->errmsg[0] = '\0';
    const struct wc_hparams *hp = &st->m->file->hp;
    const struct wc_vocab *v = &st->m->vocab;
    struct wc_stream *s = st->s;
    int rc = bench_threads(st, n_threads);
    if (rc)
        return rc;
    float *mel = random_windows(hp, 1, seed);
    float *logits = malloc((size_t)(n_seq < 2 ? 2 : n_seq) * v->n_vocab * sizeof *logits);
    if (!mel || !logits) {
        free(mel);
        free(logits);
        return WHISPERC_ERR_NO_MEMORY;
    }

    double t0 = wc_now_ms();
    encoder_forward(&st->enc, s, mel, BENCH_FRAMES, st->audio_features);
    rc = wc_stream_sync(s);
    out->encode_ms = wc_now_ms() - t0;
    if (rc) {
        free(mel);
        free(logits);
        return bench_fail(st, rc, "encoder");
    }

    t0 = wc_now_ms();
    rc = decoder_reserve(&st->dec, s, n_seq);
    if (!rc) {
        decoder_set_audio(&st->dec, s, st->audio_features);
        rc = wc_stream_sync(s);
    }
    out->cross_ms = wc_now_ms() - t0;

    int32_t prompt[4], tok[WC_MAX_GROUP];
    int n = 0;
    prompt[n++] = v->sot;
    if (v->multilingual)
        prompt[n++] = vocab_lang_token(v, 0); /* "en" */
    prompt[n++] = v->transcribe;
    prompt[n++] = v->no_timestamps;
    out->n_prompt = n;
    out->n_seq = n_seq;
    if (!rc) {
        t0 = wc_now_ms();
        decoder_reset(&st->dec);
        int row = n - 1;
        rc = decoder_forward(&st->dec, s, prompt, n, &row, 1, logits);
        out->prompt_ms = wc_now_ms() - t0;
    }
    /* every sequence continues the prompt's one row of logits */
    for (int g = 0; !rc && g < n_seq; g++)
        tok[g] = argmax(logits, v->n_vocab);
    /* each step's argmax as greedy decoding takes it: the backend's logits_greedy (no rule
     * here), so that only the picks cross to the host, not n_seq rows of logits */
    struct wc_logit_rule rules[WC_MAX_GROUP];
    struct wc_greedy_pick picks[WC_MAX_GROUP];
    memset(rules, 0, sizeof rules);
    t0 = wc_now_ms();
    for (int i = 0; !rc && i < n_tokens && st->dec.n_past < hp->n_text_ctx; i++) {
        rc = decoder_step(&st->dec, s, tok, n_seq, NULL);
        if (!rc) {
            s->be->ops->logits_greedy(s, picks, st->dec.logits, rules, NULL, 0, n_seq, v->n_vocab);
            rc = wc_stream_sync(s);
        }
        for (int g = 0; !rc && g < n_seq; g++)
            tok[g] = picks[g].token;
        out->n_steps += !rc;
    }
    out->steps_ms = wc_now_ms() - t0;
    free(mel);
    free(logits);
    return rc ? bench_fail(st, rc, "decoder") : WHISPERC_OK;
}
