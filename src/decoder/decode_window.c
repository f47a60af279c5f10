/*
 * decode_window.c — see decode_window.h. Mirrors openai-whisper decoding.py: DecodingTask
 * (_get_initial_tokens, _main_loop, run), GreedyDecoder and detect_language.
 */
#include "decoder/decode_window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "backend.h"
#include "decoder/decoder.h"
#include "decoder/hypothesis.h"
#include "decoder/logit_filters.h"
#include "libwhisperc.h"
#include "model/vocab.h"
#include "util.h"

double compression_ratio(const char *text) {
    size_t n = strlen(text);
    uLongf cap = compressBound((uLong)n);
    unsigned char *buf = malloc(cap);
    if (!buf)
        return 0.0;
    double r = 0.0;
    /* Python's zlib.compress(data) is compress2 at Z_DEFAULT_COMPRESSION */
    if (compress2(buf, &cap, (const Bytef *)text, (uLong)n, Z_DEFAULT_COMPRESSION) == Z_OK)
        r = (double)n / (double)cap;
    free(buf);
    return r;
}

int decode_argmax(const float *x, int n) {
    int best = 0; /* first maximum, as torch.argmax */
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

int decode_greedy_pick(struct wc_stream *s, float *logits, int n, int n_vocab,
                       const struct logit_filters *const *lf, const struct hyp *const *h,
                       struct wc_logit_rule *rules, struct wc_greedy_pick *out) {
    decode_greedy_queue(s, logits, n, n_vocab, lf, h, rules, out);
    return wc_stream_sync(s);
}

void decode_greedy_queue(struct wc_stream *s, float *logits, int n, int n_vocab,
                         const struct logit_filters *const *lf, const struct hyp *const *h,
                         struct wc_logit_rule *rules, struct wc_greedy_pick *out) {
    /* one call per run of rows that share a suppress list (in practice: one call; a batch
     * step's rows in one, not in runs of WC_MAX_GROUP: each call is two launches, an upload and
     * a download on a GPU) */
    for (int r0 = 0, m; r0 < n; r0 += m) {
        const struct logit_filters *f = lf[r0];
        for (m = 0; r0 + m < n; m++) {
            const struct logit_filters *g = lf[r0 + m];
            if (!logit_filters_same_suppress(f, g))
                break;
            logit_filters_rule(g, h[r0 + m]->tok, h[r0 + m]->n, &rules[r0 + m]);
        }
        s->be->ops->logits_greedy(s, out + r0, logits + (size_t)r0 * n_vocab, rules + r0,
                                  f->suppress, f->n_suppress, m, n_vocab);
    }
}

/* Appends n tokens; src may be NULL when n is 0 (memcpy from NULL is undefined even then). */
static int append_tokens(int32_t *out, int n_out, const int32_t *src, int n) {
    if (n > 0)
        memcpy(out + n_out, src, (size_t)n * sizeof *out);
    return n_out + n;
}

/* [sot_prev [+ hotwords] + prompt[-(n_ctx/2 - 1):]] + sot_sequence [+ prefix], as
 * DecodingTask._get_initial_tokens (hotwords as faster-whisper's get_prompt); returns the
 * length, *sot_index set. */
int decode_initial_tokens(const struct decode_opts *o, int n_text_ctx, int sample_len,
                          const struct wc_vocab *v, int32_t *out, int *sot_index) {
    int n = 0, half = n_text_ctx / 2;
    int keep = o->prompt ? o->n_prompt : 0;
    keep = keep < half - 1 ? keep : half - 1;
    if (o->max_context >= 0 && keep > o->max_context)
        keep = o->max_context;
    int n_hot = o->hotwords && !o->prefix ? o->n_hotwords : 0;
    n_hot = n_hot >= half ? half - 1 : n_hot;
    /* half - 1 hotwords and half - 1 previous tokens, with sot_prev and the SOT sequence, can
     * pass n_ctx - 1 (faster-whisper's arithmetic, which then fails): the oldest previous
     * tokens give way */
    int room = n_text_ctx - 2 - o->n_sot_sequence - n_hot;
    if (n_hot > 0 && keep > room)
        keep = room > 0 ? room : 0;
    if (keep > 0 || n_hot > 0) {
        out[n++] = v->sot_prev;
        n = append_tokens(out, n, o->hotwords, n_hot);
        n = append_tokens(out, n, o->prompt ? o->prompt + (o->n_prompt - keep) : NULL, keep);
    }
    *sot_index = n;
    n = append_tokens(out, n, o->sot_sequence, o->n_sot_sequence);
    if (o->prefix && o->n_prefix > 0) {
        /* prefix_tokens[-(n_ctx // 2 - sample_len):], Python's -0 meaning all of them */
        int max_prefix = half - sample_len, take = o->n_prefix;
        if (max_prefix > 0 && take > max_prefix)
            take = max_prefix;
        else if (max_prefix < 0)
            take = -max_prefix < take ? take + max_prefix : 0;
        if (n + take + 1 > n_text_ctx) /* the reference's [-0:] takes all: out has no room */
            return n + take;
        n = append_tokens(out, n, o->prefix + (o->n_prefix - take), take);
    }
    return n;
}

int decode_result_finish(const struct wc_vocab *v, struct decode_result *r) {
    r->avg_logprob = r->sum_logprob / (r->n_tokens + 1); /* + 1 for the EOT */
    r->text = vocab_decode_all(v, r->tokens, r->n_tokens);
    if (!r->text)
        return WHISPERC_ERR_NO_MEMORY;
    wc_py_strip(r->text);
    r->compression_ratio = compression_ratio(r->text);
    return 0;
}

int decode_n_group(const struct decode_opts *o) {
    if (o->temperature == 0.0f)
        return o->beam_size > 0 ? o->beam_size : 1;
    return o->best_of > 0 ? o->best_of : 1;
}

/* The draws of n hypotheses h at o->temperature through the backend's logits_sample, a
 * uniform each from the window's generator in order (wc_sample's); the first step's from the
 * prompt's one row of logits, later ones row k for hypothesis k. */
static int sample_pick(struct wc_stream *s, float *logits, int n, bool first, int n_vocab,
                       const struct decode_opts *o, const struct hyp *const *h,
                       struct wc_greedy_pick *out) {
    struct wc_logit_rule rules[WC_MAX_GROUP];
    struct wc_sample_draw draws[WC_MAX_GROUP];
    int n_rows = first ? 1 : n;
    for (int r = 0; r < n_rows; r++)
        logit_filters_rule(o->filters, h[r]->tok, h[r]->n, &rules[r]);
    for (int k = 0; k < n; k++)
        draws[k] = (struct wc_sample_draw){first ? 0 : k, o->temperature, wc_rng_uniform(o->rng)};
    s->be->ops->logits_sample(s, out, logits, rules, o->filters->suppress, o->filters->n_suppress,
                              n_rows, n_vocab, draws, n);
    return wc_stream_sync(s);
}

/* Greedy (T = 0) or best_of samples (T > 0), as GreedyDecoder: every unfinished sequence
 * takes one token per step; finished ones leave the batch (the decoder's slot table is
 * compacted), and the ranker picks the best at the end. weights: wc_sample's scratch. */
static int sample_group(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v,
                        const struct decode_opts *o, float *logits, float *weights, int n_initial,
                        struct hyp_set *hs, int *n_steps) {
    int n_vocab = v->n_vocab, G = hs->n, n_ctx = d->hp->n_text_ctx;
    int rows[WC_MAX_GROUP]; /* rows[k]: the hypothesis in decoder sequence k */
    int32_t last[WC_MAX_GROUP];
    /* each step's logits stay on the backend, only its picks come back: greedy's, or the
     * samples' draws (logits_sample, as the batch decoder's: the same bits on a GPU) */
    bool on_backend = o->temperature == 0.0f || s->be->ops->logits_sample;
    struct wc_greedy_pick pick[WC_MAX_GROUP];
    const struct logit_filters *lf[WC_MAX_GROUP];
    const struct hyp *hk[WC_MAX_GROUP];
    struct wc_logit_rule rules[WC_MAX_GROUP];
    int n_active = G;
    for (int g = 0; g < G; g++)
        rows[g] = g;
    for (int i = 0; i < o->sample_len && n_active > 0; i++) {
        int rc = 0;
        if (i > 0) {
            if (decode_aborted(o))
                return WHISPERC_ERR_ABORTED;
            for (int k = 0; k < n_active; k++)
                last[k] = hs->h[rows[k]].tok[hs->h[rows[k]].n - 1];
            (*n_steps)++;
            rc = decoder_step(d, s, last, n_active, on_backend ? NULL : logits);
        }
        /* picks through the backend, the first one too, from the prompt's last row that
         * decoder_forward left in d->logits: every pick of a window made alike (on a GPU the
         * op's logprob may differ from the host's in the last bits) */
        for (int k = 0; on_backend && k < n_active; k++) {
            lf[k] = o->filters;
            hk[k] = &hs->h[rows[k]];
        }
        if (!rc && on_backend && o->temperature == 0.0f)
            rc = decode_greedy_pick(s, d->logits, n_active, n_vocab, lf, hk, rules, pick);
        else if (!rc && on_backend)
            rc = sample_pick(s, d->logits, n_active, i == 0, n_vocab, o, hk, pick);
        if (rc)
            return rc;
        /* the first step's sequences all continue the prompt: its one row of logits */
        for (int k = 1; !on_backend && i == 0 && k < n_active; k++)
            memcpy(logits + (size_t)k * n_vocab, logits, (size_t)n_vocab * sizeof *logits);
        int src[WC_MAX_GROUP], n_keep = 0;
        for (int k = 0; k < n_active; k++) {
            struct hyp *h = &hs->h[rows[k]];
            int next;
            float lp;
            if (on_backend) {
                next = pick[k].token;
                lp = pick[k].logprob;
            } else {
                float *row = logits + (size_t)k * n_vocab;
                logit_filters_apply(o->filters, row, h->tok, h->n);
                if (o->temperature == 0.0f) {
                    next = decode_argmax(row, n_vocab);
                    lp = (float)(row[next] - wc_logsumexp(row, 0, n_vocab));
                } else {
                    next = wc_sample(row, n_vocab, o->temperature, o->rng, weights, &lp);
                }
            }
            h->sum += lp;
            if (next == v->eot) {
                h->done = true;
                continue;
            }
            h->tok[h->n] = next;
            h->lp[h->n++] = lp;
            src[n_keep++] = k;
        }
        if (n_initial + i + 1 > n_ctx)
            break;
        if (n_keep < n_active) {
            decoder_reorder(d, src, n_keep);
            for (int k = 0; k < n_keep; k++)
                rows[k] = rows[src[k]];
        }
        n_active = n_keep;
    }
    return 0;
}

int decode_window(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v,
                  const struct decode_opts *o, float *logits, struct decode_result *r) {
    int n_ctx = d->hp->n_text_ctx, n_vocab = v->n_vocab, G = decode_n_group(o);
    memset(r, 0, sizeof *r);
    r->temperature = o->temperature;
    if (G > d->n_group_max || G > WC_MAX_GROUP) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: %d sequences, room for %d", G,
                       d->n_group_max < WC_MAX_GROUP ? d->n_group_max : WC_MAX_GROUP);
        return s->err;
    }
    int32_t *seq = malloc((size_t)(2 * n_ctx + 8) * sizeof *seq);
    r->tokens = malloc((size_t)(o->sample_len + 1) * sizeof *r->tokens);
    r->logprobs = malloc((size_t)(o->sample_len + 1) * sizeof *r->logprobs);
    if (!seq || !r->tokens || !r->logprobs) {
        free(seq);
        return WHISPERC_ERR_NO_MEMORY;
    }
    int sot_index, n_initial = decode_initial_tokens(o, n_ctx, o->sample_len, v, seq, &sot_index);
    if (n_initial + 1 > n_ctx) {
        free(seq);
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: the prompt and prefix take %d of the %d text positions", n_initial,
                       n_ctx);
        return s->err;
    }

    /* the prompt, once for every sequence; no_speech_prob from the raw logits at the sot */
    decoder_reset(d);
    int rows[2] = {n_initial - 1, sot_index};
    int n_rows = sot_index == n_initial - 1 ? 1 : 2;
    r->n_steps = 1;
    int rc = decoder_forward(d, s, seq, n_initial, rows, n_rows, logits);
    free(seq);
    if (rc)
        return rc;
    const float *at_sot = logits + (size_t)(n_rows - 1) * n_vocab;
    r->no_speech_prob = exp(at_sot[v->no_speech] - wc_logsumexp(at_sot, 0, n_vocab));

    if (o->temperature == 0.0f && o->beam_size > 0) {
        rc = beam_search(d, s, v, o, logits, n_initial, r);
        return rc ? rc : decode_result_finish(v, r);
    }
    struct hyp_set hs;
    /* wc_sample's scratch, for a backend without logits_sample (sample_group draws on the host) */
    bool host_draws = o->temperature > 0.0f && !s->be->ops->logits_sample;
    float *weights = host_draws ? malloc((size_t)n_vocab * sizeof *weights) : NULL;
    if ((host_draws && !weights) || hyp_set_init(&hs, G, o->sample_len + 1)) {
        free(weights);
        return WHISPERC_ERR_NO_MEMORY;
    }
    rc = sample_group(d, s, v, o, logits, weights, n_initial, &hs, &r->n_steps);
    free(weights);
    if (!rc) {
        const struct hyp *best = &hs.h[hyp_rank(hs.h, G, o->length_penalty)];
        memcpy(r->tokens, best->tok, (size_t)best->n * sizeof *r->tokens);
        memcpy(r->logprobs, best->lp, (size_t)best->n * sizeof *r->logprobs);
        r->n_tokens = best->n;
        r->sum_logprob = best->sum;
        rc = decode_result_finish(v, r);
    }
    hyp_set_free(&hs);
    return rc;
}

void decode_result_free(struct decode_result *r) {
    free(r->tokens);
    free(r->logprobs);
    free(r->text);
    memset(r, 0, sizeof *r);
}

/* ---- hypotheses (hypothesis.h) ---- */

int hyp_set_init(struct hyp_set *s, int n, int cap) {
    s->n = n;
    s->cap = cap;
    s->h = calloc((size_t)n, sizeof *s->h);
    s->tok_mem = malloc((size_t)n * cap * sizeof *s->tok_mem);
    s->lp_mem = malloc((size_t)n * cap * sizeof *s->lp_mem);
    if (!s->h || !s->tok_mem || !s->lp_mem) {
        hyp_set_free(s);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        s->h[i].tok = s->tok_mem + (size_t)i * cap;
        s->h[i].lp = s->lp_mem + (size_t)i * cap;
    }
    return 0;
}

void hyp_set_free(struct hyp_set *s) {
    free(s->h);
    free(s->tok_mem);
    free(s->lp_mem);
    memset(s, 0, sizeof *s);
}

void hyp_copy(struct hyp *dst, const struct hyp *src) {
    memcpy(dst->tok, src->tok, (size_t)src->n * sizeof *dst->tok);
    memcpy(dst->lp, src->lp, (size_t)src->n * sizeof *dst->lp);
    dst->n = src->n;
    dst->sum = src->sum;
    dst->done = src->done;
}

int hyp_rank(const struct hyp *h, int n, float length_penalty) {
    int best = 0;
    double best_score = -INFINITY;
    for (int i = 0; i < n; i++) {
        double penalty =
            length_penalty < 0 ? (double)h[i].n : pow((5.0 + h[i].n) / 6.0, (double)length_penalty);
        double score = h[i].sum / penalty; /* np.argmax: the first of equal maxima */
        if (i == 0 || score > best_score) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

int detect_language(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v, float *logits,
                    float *probs) {
    int32_t sot = v->sot;
    int row = 0;
    decoder_reset(d);
    if (decoder_forward(d, s, &sot, 1, &row, 1, logits))
        return -1;
    /* softmax over the language tokens only (every other logit is -inf) */
    float m = -INFINITY;
    for (int i = 0; i < v->n_languages; i++)
        m = logits[v->sot + 1 + i] > m ? logits[v->sot + 1 + i] : m;
    double total = 0;
    for (int i = 0; i < v->n_languages; i++)
        total += exp((double)logits[v->sot + 1 + i] - m);
    int best = 0;
    for (int i = 0; i < v->n_languages; i++) {
        probs[i] = (float)(exp((double)logits[v->sot + 1 + i] - m) / total);
        if (logits[v->sot + 1 + i] > logits[v->sot + 1 + best])
            best = i;
    }
    return best;
}
