/*
 * test_decoder_feed.c — a short prompt fed to the batch decoder as step rows (several rows of
 * one lane in one step, decode_batch.h) gives exactly what decoder_batch_prefill gives: the
 * logits of its last and SOT rows, the next step's logits and the KV cache, bit for bit, on a
 * random-weight model. Prompts of 1, 4 and the backend's longest fed length, their rows
 * interleaved with each other's and with a lane in the middle of its window. Also: a step of
 * more than max_rows rows, or one that would run a lane past the context, is refused with the
 * lanes' positions unchanged. Then decode_batch against decode_window, whole windows of greedy
 * and beam decoding and of best_of samples, several slots starting at once, some prompts
 * waiting for room, some windows for decoder lanes. On the CPU
 * always; on CUDA too where a device is (bits there rest on cuda_attention's short-prompt path,
 * backend.h attention_exact_rows).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_internal.h"
#include "backend.h"
#include "common.h"
#include "decoder/decode_batch.h"
#include "decoder/decoder.h"
#include "decoder/decoder_batch.h"
#include "decoder/logit_filters.h"
#include "ggml_synth.h"
#include "model/vocab.h"

static struct test_rng rng = {77};

#define N_LANES 8
#define N_FED   3 /* lanes 0..2 start a window; lane 3 is in the middle of one */

struct run {
    float *first;  /* [N_FED + 1][n_vocab]: each fed lane's last prompt row, then lane 3's step */
    float *sot;    /* [N_FED][n_vocab]: each fed lane's SOT row (its first) */
    float *second; /* [N_FED + 1][n_vocab]: the step after, lanes 0..3 */
    float *kv;     /* k_cache then v_cache */
};

static const int32_t base_prompt[DECODE_BATCH_FEED_MAX] = {50257, 50258, 50359, 50363,
                                                           440,   1000,  2000,  3000};
static const int32_t running[5] = {50257, 50362, 300, 301, 302}; /* lane 3's window so far */

static void download(struct wc_stream *s, float *dst, const float *src, size_t n) {
    s->be->ops->download(s, dst, src, n * sizeof(float));
    CHECK(wc_stream_sync(s) == 0);
}

/* prefill: each fed lane's prompt by decoder_batch_prefill, lane 3's step alone; else the
 * prompts and lane 3's step as the rows of one step, interleaved */
static void run(struct decoder_batch *db, struct wc_stream *s, const int *n_prompt, int prefill,
                struct run *out) {
    int n_vocab = db->hp->n_vocab;
    size_t nv = (size_t)n_vocab;
    decoder_batch_reset(db);
    float *host = malloc(2 * nv * sizeof(float));
    CHECK(decoder_batch_prefill(db, s, 3, running, 4, NULL, 0, host) == 0);
    if (prefill) {
        for (int k = 0; k < N_FED; k++) {
            int rows[2] = {n_prompt[k] - 1, 0};
            CHECK(decoder_batch_prefill(db, s, k, base_prompt, n_prompt[k], rows, 2, host) == 0);
            memcpy(out->first + k * nv, host, nv * sizeof(float));
            memcpy(out->sot + k * nv, host + nv, nv * sizeof(float));
        }
        int lane = 3;
        CHECK(decoder_batch_step(db, s, &lane, &running[4], 1, NULL) == 0);
        download(s, out->first + N_FED * nv, db->logits, nv);
    } else {
        int lanes[N_FED * DECODE_BATCH_FEED_MAX + 1], n = 0, at_last[N_FED], at_sot[N_FED];
        int32_t tok[N_FED * DECODE_BATCH_FEED_MAX + 1];
        for (int k = 0; k < N_FED; k++)
            decoder_batch_clear(db, k);
        lanes[n] = 3, tok[n++] = running[4];
        for (int p = 0; p < DECODE_BATCH_FEED_MAX; p++) /* token p of every prompt in turn */
            for (int k = 0; k < N_FED; k++) {
                if (p >= n_prompt[k])
                    continue;
                if (p == 0)
                    at_sot[k] = n;
                if (p == n_prompt[k] - 1)
                    at_last[k] = n;
                lanes[n] = k, tok[n++] = base_prompt[p];
            }
        CHECK(n <= db->max_rows);
        CHECK(decoder_batch_step(db, s, lanes, tok, n, NULL) == 0);
        float *all = malloc((size_t)n * nv * sizeof(float));
        download(s, all, db->logits, (size_t)n * nv);
        for (int k = 0; k < N_FED; k++) {
            memcpy(out->first + k * nv, all + at_last[k] * nv, nv * sizeof(float));
            memcpy(out->sot + k * nv, all + at_sot[k] * nv, nv * sizeof(float));
        }
        memcpy(out->first + N_FED * nv, all, nv * sizeof(float));
        free(all);
    }
    int lanes[N_FED + 1] = {2, 0, 3, 1};
    int32_t tok[N_FED + 1] = {700, 701, 702, 703};
    CHECK(decoder_batch_step(db, s, lanes, tok, N_FED + 1, NULL) == 0);
    float *rows = malloc((N_FED + 1) * nv * sizeof(float));
    download(s, rows, db->logits, (N_FED + 1) * nv);
    for (int r = 0; r < N_FED + 1; r++) /* by lane */
        memcpy(out->second + lanes[r] * nv, rows + r * nv, nv * sizeof(float));
    free(rows);
    size_t n_cache = (size_t)db->hp->n_text_layer * db->n_slots * db->hp->n_text_state;
    download(s, out->kv, db->k_cache, n_cache);
    download(s, out->kv + n_cache, db->v_cache, n_cache);
    free(host);
}

/* The refusals: more rows than max_rows; a lane run past its context, positions kept. */
static void test_refusals(struct decoder_batch *db, struct wc_stream *s) {
    int n_ctx = db->hp->n_text_ctx, n = db->max_rows + 1;
    int *lanes = calloc((size_t)n, sizeof *lanes);
    int32_t *tok = calloc((size_t)n_ctx, sizeof *tok);
    decoder_batch_reset(db);
    CHECK(decoder_batch_step(db, s, lanes, tok, n, NULL) == WHISPERC_ERR_INVALID_ARG);
    s->err = 0;
    CHECK(decoder_batch_prefill(db, s, 0, tok, n_ctx - 2, NULL, 0, NULL) == 0);
    int over[4] = {1, 0, 0, 0}; /* lane 0 at n_ctx - 2, n_ctx - 1, then past its context */
    CHECK(decoder_batch_step(db, s, over, tok, 4, NULL) == WHISPERC_ERR_INVALID_ARG);
    CHECK(db->n_past[0] == n_ctx - 2 && db->n_past[1] == 0);
    s->err = 0;
    free(lanes), free(tok);
}

#define N_WIN 6

enum mode { GREEDY, BEAMS, SAMPLES };

/* decode_batch against decode_window, window by window: N_WIN slots start, greedy or with 3
 * beams each, or (SAMPLES) half of them greedy and half 3 samples at T = 0.7, as temperature
 * fallbacks do, on fewer decoder lanes than all of them want at once, so that some start only
 * when others end; their prompts (4 tokens, one of 10 with previous text: a prefill) do not
 * all fit in the first greedy step, so some wait. Each result (tokens, logprobs, sum,
 * no_speech_prob, steps) must be decode_window's for that window alone, bit for bit (samples:
 * each window drawing from its own rng, seeded alike). */
static void test_decode_batch(whisperc_state *st, enum mode mode) {
    struct wc_stream *s = st->s;
    const struct wc_backend_ops *op = s->be->ops;
    const struct wc_hparams *hp = &st->m->file->hp;
    const struct wc_vocab *v = &st->m->vocab;
    int G = mode == GREEDY ? 1 : 3, n_vocab = v->n_vocab;
    bool samples[N_WIN] = {0};
    struct wc_rng draws[N_WIN];
    size_t nf = (size_t)hp->n_audio_ctx * hp->n_audio_state;
    struct logit_filters lf = {
        .vocab = v, .suppress_blank = true, .max_initial_timestamp_index = -1, .blank_token = 220};
    int32_t sot_seq[4] = {v->sot, vocab_lang_token(v, 0), v->transcribe, v->no_timestamps};
    int32_t prev[5] = {400, 401, 402, 403, 404};
    struct decode_opts o[N_WIN];
    float *feat[N_WIN], *host = malloc(nf * sizeof(float));
    for (int k = 0; k < N_WIN; k++) {
        o[k] = (struct decode_opts){.sample_len = 12,
                                    .sot_sequence = sot_seq,
                                    .n_sot_sequence = 4,
                                    .filters = &lf,
                                    .beam_size = mode == BEAMS ? G : 0,
                                    .patience = 1.0f,
                                    .length_penalty = -1.0f,
                                    .max_context = -1};
        if (k == 4)
            o[k].prompt = prev, o[k].n_prompt = 5;
        samples[k] = mode == SAMPLES && (k == 1 || k == 4 || k == 5);
        if (samples[k])
            o[k].temperature = 0.7f, o[k].best_of = G, o[k].rng = &draws[k];
        for (size_t i = 0; i < nf; i++)
            host[i] = test_rng_uniform(&rng);
        feat[k] = op->alloc(s, nf * sizeof(float));
        op->upload(s, feat[k], host, nf * sizeof(float));
    }
    struct decode_result ref[N_WIN], got[N_WIN];
    memset(got, 0, sizeof got);
    float *logits = malloc((size_t)(G > 2 ? G : 2) * n_vocab * sizeof(float));
    /* SAMPLES: 3 greedy windows and 3 of 3 samples want 12 lanes; there are 8 */
    int n_lanes = mode == SAMPLES ? 8 : N_WIN * G;
    struct decoder_batch db;
    struct decode_batch d;
    CHECK(decoder_batch_init(&db, s, hp, &st->m->w, n_lanes, N_WIN) == 0);
    CHECK(decode_batch_init(&d, &db, s, v, mode == BEAMS ? G : 0) == 0);
    for (int k = 0; k < N_WIN; k++)
        decoder_batch_set_audio(&db, s, 1, &k, feat[k], NULL, 0);
    CHECK(decoder_reserve(&st->dec, s, G) == 0);
    for (int k = 0; k < N_WIN; k++) {
        draws[k].s = 1000 + k;
        /* alone over the batch's own K/V where they are fp16 (a GPU's cross_kv: the single
         * decoder's would be fp32, other bits), else over its own */
        const void *xk, *xv;
        decoder_batch_audio(&db, k, &xk, &xv);
        if (db.xkv == WC_F16)
            decoder_borrow_audio(&st->dec, xk, xv, db.xkv);
        else
            decoder_set_audio(&st->dec, s, feat[k]);
        CHECK(decode_window(&st->dec, s, v, &o[k], logits, &ref[k]) == 0);
    }
    decoder_borrow_audio(&st->dec, NULL, NULL, WC_F32);
    bool started[N_WIN] = {0};
    int n_rows = 1, left = N_WIN, n_waited = 0;
    for (int k = 0; k < N_WIN; k++)
        draws[k].s = 1000 + k;
    while (left > 0 && n_rows > 0) {
        for (int k = 0; k < N_WIN; k++) { /* in order: one that waits for lanes stops the rest */
            if (started[k])
                continue;
            if (decode_n_group(&o[k]) > decode_batch_lanes_free(&d)) {
                n_waited++;
                break;
            }
            CHECK(decode_batch_start(&d, k, &o[k]) == 0);
            started[k] = true;
        }
        CHECK(decode_batch_step(&d, &n_rows) == 0);
        for (int k = 0; k < N_WIN; k++)
            if (decode_batch_ended(&d, k)) {
                CHECK(decode_batch_take(&d, k, &got[k]) == 0);
                left--;
            }
    }
    CHECK(mode != SAMPLES || n_waited > 0);
    CHECK(decode_batch_lanes_free(&d) == n_lanes);
    int ok = left == 0, n_tokens = 0;
    for (int k = 0; k < N_WIN && ok; k++) {
        const struct decode_result *a = &ref[k], *b = &got[k];
        n_tokens += a->n_tokens;
        ok = a->n_tokens == b->n_tokens && a->n_steps == b->n_steps &&
             a->sum_logprob == b->sum_logprob && a->no_speech_prob == b->no_speech_prob &&
             memcmp(a->tokens, b->tokens, (size_t)a->n_tokens * sizeof *a->tokens) == 0 &&
             memcmp(a->logprobs, b->logprobs, (size_t)a->n_tokens * sizeof *a->logprobs) == 0;
        if (!ok)
            printf("  window %d: %d tokens, %d steps, sum %.9g, no_speech %.9g alone; %d, %d, "
                   "%.9g, %.9g batched\n",
                   k, a->n_tokens, a->n_steps, a->sum_logprob, a->no_speech_prob, b->n_tokens,
                   b->n_steps, b->sum_logprob, b->no_speech_prob);
    }
    printf("  %-44s %s (%d tokens, %d batched steps)\n",
           mode == BEAMS     ? "decode_batch, 3 beams, = decode_window"
           : mode == SAMPLES ? "decode_batch, greedy + 3 samples, = alone"
                             : "decode_batch, greedy, = decode_window",
           ok ? "same" : "DIFFER", n_tokens, d.n_steps);
    CHECK(ok);
    for (int k = 0; k < N_WIN; k++) {
        decode_result_free(&ref[k]), decode_result_free(&got[k]);
        op->release(s, feat[k]);
    }
    decode_batch_free(&d);
    decoder_batch_free(&db, s);
    free(host), free(logits);
}

static int same(const char *what, const float *a, const float *b, size_t n) {
    int ok = memcmp(a, b, n * sizeof(float)) == 0;
    printf("  %-44s %s\n", what, ok ? "same bits" : "DIFFER");
    return ok;
}

static void test_backend(const char *path, whisperc_device dev) {
    struct whisperc_model_params mp = whisperc_model_default_params();
    mp.device = dev;
    char err[512];
    whisperc_model *m = NULL;
    whisperc_state *st = NULL;
    if (whisperc_model_load(path, &mp, &m, err, sizeof err)) {
        if (dev == WHISPERC_DEVICE_CUDA) {
            printf("cuda: %s (skipped)\n", err);
            return;
        }
        fprintf(stderr, "%s\n", err);
        test_failures++;
        return;
    }
    CHECK(whisperc_state_new(m, &st) == 0);
    struct wc_stream *s = st->s;
    const struct wc_backend_ops *op = s->be->ops;
    const struct wc_hparams *hp = &m->file->hp;
    int feed = DECODE_BATCH_FEED_MAX;
    feed = op->attention_exact_rows < feed ? op->attention_exact_rows : feed;
    feed = op->linear_exact_rows < feed ? op->linear_exact_rows : feed;
    int n_prompt[N_FED] = {1, 4 < feed ? 4 : feed, feed};
    printf("%s: prompts of %d, %d, %d tokens fed\n", op->name, n_prompt[0], n_prompt[1],
           n_prompt[2]);
    struct decoder_batch db;
    CHECK(decoder_batch_init(&db, s, hp, &m->w, N_LANES, N_LANES) == 0);
    size_t nf = (size_t)hp->n_audio_ctx * hp->n_audio_state, nv = (size_t)hp->n_vocab;
    float *feat_host = malloc(nf * sizeof(float));
    for (size_t i = 0; i < nf; i++)
        feat_host[i] = test_rng_uniform(&rng);
    float *feat = op->alloc(s, nf * sizeof(float));
    op->upload(s, feat, feat_host, nf * sizeof(float));
    for (int k = 0; k < N_LANES; k++)
        decoder_batch_set_audio(&db, s, 1, &k, feat, NULL, 0);
    size_t n_cache = (size_t)hp->n_text_layer * db.n_slots * hp->n_text_state;
    struct run r[2];
    for (int i = 0; i < 2; i++) {
        r[i].first = malloc((N_FED + 1) * nv * sizeof(float));
        r[i].sot = malloc(N_FED * nv * sizeof(float));
        r[i].second = malloc((N_FED + 1) * nv * sizeof(float));
        r[i].kv = malloc(2 * n_cache * sizeof(float));
        run(&db, s, n_prompt, i == 0, &r[i]);
    }
    CHECK(same("last prompt rows' logits (and lane 3's step)", r[0].first, r[1].first,
               (N_FED + 1) * nv));
    CHECK(same("SOT rows' logits", r[0].sot, r[1].sot, N_FED * nv));
    CHECK(same("the next step's logits", r[0].second, r[1].second, (N_FED + 1) * nv));
    /* the cache rows the lanes wrote (the rest was never written in either run) */
    int ok = 1, n_ctx = hp->n_text_ctx;
    for (int kv = 0; kv < 2; kv++)
        for (int l = 0; l < hp->n_text_layer; l++)
            for (int lane = 0; lane <= N_FED; lane++) {
                size_t off = kv * n_cache +
                             ((size_t)l * db.n_slots + (size_t)lane * n_ctx) * hp->n_text_state;
                size_t len = (size_t)db.n_past[lane] * hp->n_text_state;
                ok &= memcmp(r[0].kv + off, r[1].kv + off, len * sizeof(float)) == 0;
            }
    printf("  %-44s %s\n", "KV cache rows", ok ? "same bits" : "DIFFER");
    CHECK(ok);
    test_refusals(&db, s);
    decoder_batch_free(&db, s);
    test_decode_batch(st, GREEDY);
    test_decode_batch(st, SAMPLES);
    if (op->logits_topk)
        test_decode_batch(st, BEAMS);
    for (int i = 0; i < 2; i++)
        free(r[i].first), free(r[i].sot), free(r[i].second), free(r[i].kv);
    op->release(s, feat);
    free(feat_host);
    whisperc_state_free(st);
    whisperc_model_free(m);
}

int main(void) {
    char path[] = "/tmp/wc_decoder_feed_XXXXXX";
    struct ggml_synth_opts o = ggml_synth_default_opts();
    o.n_state = 128;
    o.n_head = 2;
    o.n_layer = 2;
    o.n_audio_ctx = 64;
    o.n_text_ctx = 96; /* a step's gather bound: two key splits on CUDA, a prompt's one */
    o.multilingual = 1;
    o.seed = 11;
    CHECK(ggml_synth_write_temp(path, &o) == 0);
    test_backend(path, WHISPERC_DEVICE_CPU);
    test_backend(path, WHISPERC_DEVICE_CUDA);
    unlink(path);
    return TEST_RESULT();
}
