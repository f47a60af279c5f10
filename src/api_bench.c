/*
 * api_bench.c — see api_bench.h. Drives the encoder and decoder of a state directly (as
 * decoder/transcribe.c does), without the logit filters, timestamps or fallbacks, so the
 * amount of work depends on the model's shape only.
 */
#include "api_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "decoder/decode_batch.h"
#include "decoder/decode_window.h"
#include "decoder/decoder_batch.h"
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

/* Stage marks (backend.h timer_mark) where the backend times; nothing otherwise. */
static void mark(struct wc_stream *s, int slot) {
    if (s->be->ops->timer_mark && s->be->ops->timer_elapsed_ms)
        s->be->ops->timer_mark(s, slot);
}

/* Milliseconds between two marks, after a sync; NaN where the backend does not time. */
static double elapsed(struct wc_stream *s, int a, int b) {
    if (!s->be->ops->timer_mark || !s->be->ops->timer_elapsed_ms)
        return NAN;
    return s->be->ops->timer_elapsed_ms(s, a, b);
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

/* The synthetic window's prompt: n_context > 0 tokens of previous text as a long-form window's
 * (<|startofprev|> and ordinary text tokens), then <|startoftranscript|> (<|en|>)
 * <|transcribe|> <|notimestamps|> into prompt[n_context + 5]; returns its length. */
static int bench_prompt(const struct wc_vocab *v, int n_context, int32_t *prompt) {
    int n = 0;
    if (n_context > 0)
        prompt[n++] = v->sot_prev;
    for (int i = 0; i < n_context; i++)
        prompt[n++] = 220 + (i * 37) % 10000; /* text tokens, nothing special */
    prompt[n++] = v->sot;
    if (v->multilingual)
        prompt[n++] = vocab_lang_token(v, 0); /* "en" */
    prompt[n++] = v->transcribe;
    prompt[n++] = v->no_timestamps;
    return n;
}

whisperc_status wc_bench_encoder(whisperc_state *st, int n_threads, int n_windows, int per_pass,
                                 uint64_t seed, struct wc_bench_encoder_times *out) {
    if (!st || !out || n_windows < 1 || n_windows > 64 || per_pass < 1 ||
        per_pass > encoder_pass_cap())
        return WHISPERC_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    st->errmsg[0] = '\0';
    const struct wc_hparams *hp = &st->m->file->hp;
    struct wc_stream *s = st->s;
    int rc = bench_threads(st, n_threads);
    if (!rc && per_pass > 1)
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
    for (int i = 0; i < n_windows && !rc; i += per_pass) {
        int n = n_windows - i < per_pass ? n_windows - i : per_pass;
        mark(s, 0);
        if (per_pass == 1) /* as transcribe() encodes: one window, waited for */
            encoder_forward(&st->enc, s, wins[i], BENCH_FRAMES, st->audio_features);
        else
            encoder_forward_batch(&st->enc, s, wins + i, BENCH_FRAMES, n, st->audio_features);
        mark(s, 1);
        rc = wc_stream_sync(s);
        out->dev_ms += rc ? 0.0 : elapsed(s, 0, 1);
        rc = s->err;
    }
    out->ms = wc_now_ms() - t0;
    out->n_windows = n_windows;
    out->per_pass = per_pass;
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
    const struct wc_backend_ops *op = s->be->ops;
    int rc = bench_threads(st, n_threads);
    if (rc)
        return rc;
    float *mel = random_windows(hp, 1, seed);
    if (!mel)
        return WHISPERC_ERR_NO_MEMORY;
    /* no ranges, no timestamp test, no suppress list: logits_greedy is the argmax */
    struct wc_logit_rule rules[WC_MAX_GROUP];
    struct wc_greedy_pick pick[WC_MAX_GROUP];
    memset(rules, 0, sizeof rules);

    double start = wc_now_ms(), t0 = start;
    mark(s, 0);
    encoder_forward(&st->enc, s, mel, BENCH_FRAMES, st->audio_features);
    mark(s, 1);
    rc = wc_stream_sync(s);
    out->encode_ms = wc_now_ms() - t0;
    out->encode_dev_ms = rc ? NAN : elapsed(s, 0, 1);
    free(mel);
    if (rc)
        return bench_fail(st, rc, "encoder");

    t0 = wc_now_ms();
    rc = decoder_reserve(&st->dec, s, n_seq);
    if (!rc) {
        mark(s, 0);
        decoder_set_audio(&st->dec, s, st->audio_features);
        mark(s, 1);
        rc = wc_stream_sync(s);
        out->cross_dev_ms = rc ? NAN : elapsed(s, 0, 1);
    }
    out->cross_ms = wc_now_ms() - t0;

    int32_t prompt[5], tok[WC_MAX_GROUP];
    int n = bench_prompt(v, 0, prompt);
    out->n_prompt = n;
    out->n_seq = n_seq;
    if (!rc) {
        t0 = wc_now_ms();
        decoder_reset(&st->dec);
        int row = n - 1;
        mark(s, 0);
        decoder_forward(&st->dec, s, prompt, n, &row, 1, NULL); /* logits stay in st->dec */
        op->logits_greedy(s, pick, st->dec.logits, rules, NULL, 0, 1, v->n_vocab);
        mark(s, 1);
        rc = wc_stream_sync(s);
        out->prompt_ms = wc_now_ms() - t0;
        out->prompt_dev_ms = rc ? NAN : elapsed(s, 0, 1);
    }
    /* every sequence continues the prompt's one row of logits */
    for (int g = 0; !rc && g < n_seq; g++)
        tok[g] = pick[0].token;
    t0 = wc_now_ms();
    for (int i = 0; !rc && i < n_tokens && st->dec.n_past < hp->n_text_ctx; i++) {
        mark(s, 0);
        decoder_step(&st->dec, s, tok, n_seq, NULL);
        mark(s, 1);
        op->logits_greedy(s, pick, st->dec.logits, rules, NULL, 0, n_seq, v->n_vocab);
        mark(s, 2);
        rc = wc_stream_sync(s);
        if (!rc) {
            out->steps_dev_ms += elapsed(s, 0, 1);
            out->pick_dev_ms += elapsed(s, 1, 2);
            rc = s->err;
        }
        for (int g = 0; !rc && g < n_seq; g++)
            tok[g] = pick[g].token;
        out->n_steps += !rc;
    }
    out->steps_ms = wc_now_ms() - t0;
    out->wall_ms = wc_now_ms() - start;
    return rc ? bench_fail(st, rc, "decoder") : WHISPERC_OK;
}

/* The lanes' prompt (as wc_bench_window's) and first picks, then the timed steps. */
static int batch_steps(whisperc_state *st, struct decoder_batch *db, int n_lanes, int n_tokens,
                       struct wc_bench_batch_times *out) {
    const struct wc_hparams *hp = &st->m->file->hp;
    const struct wc_vocab *v = &st->m->vocab;
    struct wc_stream *s = st->s;
    const struct wc_backend_ops *op = s->be->ops;
    struct wc_logit_rule rules[WC_MAX_GROUP];
    struct wc_greedy_pick pick[WC_MAX_GROUP];
    int32_t prompt[5], tok[WC_MAX_GROUP];
    int lanes[WC_MAX_GROUP], n = bench_prompt(v, 0, prompt), rc = 0;
    memset(rules, 0, sizeof rules);
    for (int k = 0; !rc && k < n_lanes; k++) {
        int row = n - 1;
        decoder_batch_set_audio(db, s, 1, &k, st->audio_features, NULL, 0);
        rc = decoder_batch_prefill(db, s, k, prompt, n, &row, 1, NULL);
        op->logits_greedy(s, &pick[k], db->logits, rules, NULL, 0, 1, v->n_vocab);
        rc = rc ? rc : wc_stream_sync(s);
        tok[k] = pick[k].token;
        lanes[k] = k;
    }
    /* warm-up, not timed: two steps (a backend with step graphs runs the first plain and
     * records the second) */
    int max_steps = hp->n_text_ctx - n - 3;
    for (int i = 0; !rc && i < 2; i++) {
        rc = decoder_batch_step(db, s, lanes, tok, n_lanes, NULL);
        op->logits_greedy(s, pick, db->logits, rules, NULL, 0, n_lanes, v->n_vocab);
        rc = rc ? rc : wc_stream_sync(s);
        for (int k = 0; !rc && k < n_lanes; k++)
            tok[k] = pick[k].token;
    }
    double t0 = wc_now_ms();
    for (int i = 0; !rc && i < n_tokens && i < max_steps; i++) {
        mark(s, 0);
        decoder_batch_step(db, s, lanes, tok, n_lanes, NULL);
        op->logits_greedy(s, pick, db->logits, rules, NULL, 0, n_lanes, v->n_vocab);
        mark(s, 1);
        rc = wc_stream_sync(s);
        if (!rc)
            out->steps_dev_ms += elapsed(s, 0, 1);
        for (int k = 0; !rc && k < n_lanes; k++)
            tok[k] = pick[k].token;
        out->n_steps += !rc;
    }
    out->steps_ms = wc_now_ms() - t0;
    return rc;
}

whisperc_status wc_bench_batch_steps(whisperc_state *st, int n_lanes, int n_tokens, uint64_t seed,
                                     struct wc_bench_batch_times *out) {
    if (!st || !out || n_tokens < 0 || n_lanes < 1 || n_lanes > WC_MAX_GROUP)
        return WHISPERC_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->n_lanes = n_lanes;
    st->errmsg[0] = '\0';
    const struct wc_hparams *hp = &st->m->file->hp;
    struct wc_stream *s = st->s;
    float *mel = random_windows(hp, 1, seed);
    if (!mel)
        return WHISPERC_ERR_NO_MEMORY;
    encoder_forward(&st->enc, s, mel, BENCH_FRAMES, st->audio_features);
    int rc = wc_stream_sync(s);
    free(mel);
    if (rc)
        return bench_fail(st, rc, "encoder");
    struct decoder_batch db;
    rc = decoder_batch_init(&db, s, hp, &st->m->w, n_lanes, n_lanes);
    if (rc)
        return bench_fail(st, rc, "batch decoder");
    rc = batch_steps(st, &db, n_lanes, n_tokens, out);
    decoder_batch_free(&db, s);
    out->graph = wc_bench_graphs(st, out->graph_why, sizeof out->graph_why);
    return rc ? bench_fail(st, rc, "batch decoder") : WHISPERC_OK;
}

/* One wave: m lanes' windows encoded (the same random windows for every wave: the work, not
 * the text, is measured), their K/V and prompts, then n_steps steps. Stage times added to
 * out when timed. */
struct wave {
    struct decoder_batch *db;
    const float **wins;
    const int32_t *prompt;
    int n_prompt, per_pass;
    struct wc_logit_rule *rules;
    struct wc_greedy_pick *pick;
    int32_t *tok;
    int *lanes;
    int32_t *row_tok; /* [max_rows]: the prompts' rows */
    int *row_lanes;
};

/* The m lanes' prompts and first picks into w->pick: fed as step rows where the batch
 * decoder feeds them (decode_batch.h), as many lanes a step as max_rows holds, the rows in
 * token-major order so that the last tokens' rows are adjacent; else a prefill per lane. */
static int wave_prompts(whisperc_state *st, const struct wave *w, int m) {
    struct wc_stream *s = st->s;
    const struct wc_backend_ops *op = s->be->ops;
    struct decoder_batch *db = w->db;
    int n_vocab = st->m->vocab.n_vocab, n = w->n_prompt, rc = 0;
    if (n > decode_batch_feed_max(op)) {
        for (int k = 0; k < m && !rc; k++) {
            int row = n - 1;
            rc = decoder_batch_prefill(db, s, k, w->prompt, n, &row, 1, NULL);
            op->logits_greedy(s, &w->pick[k], db->logits, w->rules, NULL, 0, 1, n_vocab);
        }
        return rc ? rc : wc_stream_sync(s);
    }
    for (int k0 = 0, q; k0 < m && !rc; k0 += q) {
        q = db->max_rows / n < m - k0 ? db->max_rows / n : m - k0;
        for (int p = 0, r = 0; p < n; p++)
            for (int k = k0; k < k0 + q; k++, r++) {
                if (p == 0)
                    decoder_batch_clear(db, k);
                w->row_lanes[r] = k;
                w->row_tok[r] = w->prompt[p];
            }
        rc = decoder_batch_step(db, s, w->row_lanes, w->row_tok, n * q, NULL);
        op->logits_greedy(s, &w->pick[k0], db->logits + (size_t)(n - 1) * q * n_vocab, w->rules,
                          NULL, 0, q, n_vocab);
        rc = rc ? rc : wc_stream_sync(s);
    }
    return rc;
}

static int run_wave(whisperc_state *st, const struct wave *w, int m, int n_steps,
                    struct wc_bench_throughput_times *out) {
    struct wc_stream *s = st->s;
    const struct wc_backend_ops *op = s->be->ops;
    int n_vocab = st->m->vocab.n_vocab, rc = 0;
    double t0 = wc_now_ms();
    for (int i = 0; i < m && !rc; i += w->per_pass) {
        int k = m - i < w->per_pass ? m - i : w->per_pass;
        encoder_forward_batch(&st->enc, s, w->wins, BENCH_FRAMES, k, st->audio_features);
        int audio[ENCODER_PASS_LIMIT];
        for (int j = 0; j < k; j++)
            audio[j] = i + j;
        decoder_batch_set_audio(w->db, s, k, audio, st->audio_features, st->enc.mlp,
                                encoder_mlp_floats(&st->enc));
        rc = wc_stream_sync(s);
    }
    double t1 = wc_now_ms();
    rc = rc ? rc : wave_prompts(st, w, m);
    for (int k = 0; k < m; k++) {
        w->lanes[k] = k;
        w->tok[k] = w->pick[k].token;
    }
    double t2 = wc_now_ms();
    for (int i = 0; i < n_steps && !rc; i++) {
        decoder_batch_step(w->db, s, w->lanes, w->tok, m, NULL);
        op->logits_greedy(s, w->pick, w->db->logits, w->rules, NULL, 0, m, n_vocab);
        rc = wc_stream_sync(s);
        for (int k = 0; k < m; k++)
            w->tok[k] = w->pick[k].token;
    }
    double t3 = wc_now_ms();
    if (out && !rc) {
        out->encode_ms += t1 - t0;
        out->prompt_ms += t2 - t1;
        out->steps_ms += t3 - t2;
        out->n_steps += n_steps;
        out->n_tokens += (long)n_steps * m;
        out->n_waves++;
    }
    return rc;
}

whisperc_status wc_bench_throughput(whisperc_state *st, int n_threads, int n_lanes, int n_windows,
                                    int n_tokens, int n_context, uint64_t seed,
                                    struct wc_bench_throughput_times *out) {
    if (!st || !out || n_lanes < 1 || n_lanes > 64 || n_windows < 1 || n_tokens < 0 ||
        n_context < 0 || n_context > st->m->file->hp.n_text_ctx / 2 - 1)
        return WHISPERC_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    st->errmsg[0] = '\0';
    const struct wc_hparams *hp = &st->m->file->hp;
    const struct wc_vocab *v = &st->m->vocab;
    struct wc_stream *s = st->s;
    int cap = s->be->ops->linear_merge_windows ? encoder_pass_cap() : 2;
    int per_pass = n_lanes < cap ? n_lanes : cap;
    int rc = bench_threads(st, n_threads);
    if (!rc)
        rc = api_encoder_reserve(st, per_pass);
    if (rc)
        return rc;
    int32_t *prompt = malloc(((size_t)n_context + 5) * sizeof *prompt);
    if (!prompt)
        return WHISPERC_ERR_NO_MEMORY;
    int n = bench_prompt(v, n_context, prompt);
    out->n_prompt = n;
    int n_steps = n_tokens < hp->n_text_ctx - n ? n_tokens : hp->n_text_ctx - n;
    float *mel = random_windows(hp, per_pass, seed);
    struct decoder_batch db = {0};
    struct wave w = {
        .db = &db,
        .wins = malloc((size_t)per_pass * sizeof *w.wins),
        .prompt = prompt,
        .n_prompt = n,
        .per_pass = per_pass,
        .rules = calloc((size_t)n_lanes, sizeof *w.rules), /* none: the argmax */
        .pick = malloc((size_t)n_lanes * sizeof *w.pick),
        .tok = malloc((size_t)n_lanes * sizeof *w.tok),
        .lanes = malloc((size_t)n_lanes * sizeof *w.lanes),
        .row_tok = malloc((size_t)decoder_batch_max_rows(n_lanes) * sizeof *w.row_tok),
        .row_lanes = malloc((size_t)decoder_batch_max_rows(n_lanes) * sizeof *w.row_lanes),
    };
    if (!mel || !w.wins || !w.rules || !w.pick || !w.tok || !w.lanes || !w.row_tok ||
        !w.row_lanes) {
        rc = WHISPERC_ERR_NO_MEMORY;
    } else {
        for (int i = 0; i < per_pass; i++)
            w.wins[i] = mel + (size_t)i * hp->n_mels * BENCH_FRAMES;
        rc = decoder_batch_init(&db, s, hp, &st->m->w, n_lanes, n_lanes);
    }
    int first = n_windows < n_lanes ? n_windows : n_lanes;
    if (!rc) /* warm-up */
        rc = run_wave(st, &w, first, n_steps < 2 ? n_steps : 2, NULL);
    double t0 = wc_now_ms();
    for (int done = 0; !rc && done < n_windows;) {
        int m = n_windows - done < n_lanes ? n_windows - done : n_lanes;
        rc = run_wave(st, &w, m, n_steps, out);
        done += m;
    }
    out->wall_ms = wc_now_ms() - t0;
    out->n_windows = n_windows;
    out->n_lanes = n_lanes;
    out->per_pass = per_pass;
    if (db.n_lanes)
        decoder_batch_free(&db, s);
    free(mel), free(w.wins), free(w.rules), free(w.pick), free(w.tok), free(w.lanes);
    free(w.row_tok), free(w.row_lanes), free(prompt);
    return rc ? bench_fail(st, rc, "batched throughput") : WHISPERC_OK;
}

int wc_bench_graphs(const whisperc_state *st, char *why, size_t why_size) {
    const struct wc_backend_ops *op = st->s->be->ops;
    if (op->step_graph_state)
        return op->step_graph_state(st->s, why, why_size);
    snprintf(why, why_size, "none on the %s backend", op->name);
    return 0;
}
