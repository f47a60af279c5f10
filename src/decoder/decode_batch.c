/*
 * decode_batch.c — see decode_batch.h. Each lane runs decode_window's greedy loop
 * (sample_group with one sequence) one step at a time; the steps of all lanes still going
 * share one decoder_batch_step.
 */
#include "decoder/decode_batch.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "decoder/decoder_batch.h"
#include "decoder/hypothesis.h"
#include "decoder/logit_filters.h"
#include "libwhisperc.h"
#include "model/vocab.h"

struct lane {
    const struct decode_opts *o;
    struct hyp *h;
    int n_initial;
    int i_step; /* the next token's index in this window: sample_group's i */
    bool active;
};

/* Step i_step of one lane with its chosen token, as one iteration of sample_group at T = 0. */
static void take(struct lane *ln, const struct wc_vocab *v, int n_ctx, int next, float lp) {
    struct hyp *h = ln->h;
    h->sum += lp;
    if (next == v->eot) {
        h->done = true;
        ln->active = false;
        return;
    }
    h->tok[h->n] = next;
    h->lp[h->n++] = lp;
    if (ln->n_initial + ln->i_step + 1 > n_ctx || ln->i_step + 1 >= ln->o->sample_len)
        ln->active = false;
    ln->i_step++;
}

/* Lane k's prompt into the decoder, its no_speech_prob and its first token. */
static int start_lane(struct decoder_batch *db, struct wc_stream *s, const struct wc_vocab *v,
                      int k, struct lane *ln, int32_t *seq, float *logits,
                      struct decode_result *r) {
    const struct decode_opts *o = ln->o;
    int n_ctx = db->hp->n_text_ctx, n_vocab = v->n_vocab;
    if (o->temperature != 0.0f || o->beam_size > 0 || o->best_of > 1) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: batched decoding is greedy only");
        return s->err;
    }
    int sot_index, n_initial = decode_initial_tokens(o, n_ctx, o->sample_len, v, seq, &sot_index);
    if (n_initial + 1 > n_ctx) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: the prompt and prefix take %d of the %d text positions", n_initial,
                       n_ctx);
        return s->err;
    }
    int rows[2] = {n_initial - 1, sot_index};
    int n_rows = sot_index == n_initial - 1 ? 1 : 2;
    r->n_steps = 1;
    int rc = decoder_batch_prefill(db, s, k, seq, n_initial, rows, n_rows, logits);
    if (rc)
        return rc;
    const float *at_sot = logits + (size_t)(n_rows - 1) * n_vocab;
    r->no_speech_prob = exp(at_sot[v->no_speech] - decode_logsumexp(at_sot, n_vocab));
    ln->n_initial = n_initial;
    ln->active = o->sample_len > 0;
    if (ln->active) { /* the prompt's row is on the host already, for no_speech_prob */
        logit_filters_apply(o->filters, logits, ln->h->tok, ln->h->n);
        int next = decode_argmax(logits, n_vocab);
        take(ln, v, n_ctx, next, (float)(logits[next] - decode_logsumexp(logits, n_vocab)));
    }
    return 0;
}

/* The chosen tokens of a finished lane into its result. */
static int finish_lane(const struct wc_vocab *v, const struct hyp *h, struct decode_result *r) {
    r->tokens = malloc((size_t)(h->n + 1) * sizeof *r->tokens);
    r->logprobs = malloc((size_t)(h->n + 1) * sizeof *r->logprobs);
    if (!r->tokens || !r->logprobs)
        return WHISPERC_ERR_NO_MEMORY;
    if (h->n > 0) {
        memcpy(r->tokens, h->tok, (size_t)h->n * sizeof *r->tokens);
        memcpy(r->logprobs, h->lp, (size_t)h->n * sizeof *r->logprobs);
    }
    r->n_tokens = h->n;
    r->sum_logprob = h->sum;
    return decode_result_finish(v, r);
}

int decode_batch_greedy(struct decoder_batch *db, struct wc_stream *s, const struct wc_vocab *v,
                        const struct decode_opts *o, int n, float *logits,
                        struct decode_result *r) {
    int n_ctx = db->hp->n_text_ctx, n_vocab = v->n_vocab, cap = 0;
    for (int k = 0; k < n; k++) {
        memset(&r[k], 0, sizeof r[k]);
        cap = o[k].sample_len + 1 > cap ? o[k].sample_len + 1 : cap;
    }
    if (n < 1 || n > db->n_lanes) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: %d windows for %d lanes", n,
                       db->n_lanes);
        return s->err;
    }
    struct hyp_set hs;
    struct lane *lanes = calloc((size_t)n, sizeof *lanes);
    int *ids = malloc((size_t)n * sizeof *ids);
    int32_t *seq = malloc((size_t)(2 * n_ctx + 8) * sizeof *seq);
    int32_t *last = malloc((size_t)n * sizeof *last);
    /* each step's logits stay on the backend: only the picks come back */
    struct wc_greedy_pick *pick = malloc((size_t)n * sizeof *pick);
    const struct logit_filters **lf = malloc((size_t)n * sizeof *lf);
    const struct hyp **hk = malloc((size_t)n * sizeof *hk);
    if (hyp_set_init(&hs, n, cap)) {
        free(lanes), free(ids), free(seq), free(last), free(pick), free(lf), free(hk);
        return WHISPERC_ERR_NO_MEMORY;
    }
    int rc = lanes && ids && seq && last && pick && lf && hk ? 0 : WHISPERC_ERR_NO_MEMORY;
    decoder_batch_reset(db);
    for (int k = 0; k < n && !rc; k++) {
        lanes[k] = (struct lane){.o = &o[k], .h = &hs.h[k]};
        r[k].temperature = o[k].temperature;
        rc = start_lane(db, s, v, k, &lanes[k], seq, logits, &r[k]);
    }
    for (;;) {
        int n_active = 0;
        for (int k = 0; k < n && !rc; k++)
            if (lanes[k].active) {
                ids[n_active] = k;
                last[n_active++] = hs.h[k].tok[hs.h[k].n - 1];
            }
        if (rc || n_active == 0)
            break;
        rc = decoder_batch_step(db, s, ids, last, n_active, NULL);
        for (int a = 0; a < n_active; a++) {
            lf[a] = o[ids[a]].filters;
            hk[a] = &hs.h[ids[a]];
        }
        if (!rc)
            rc = decode_greedy_pick(s, db->logits, n_active, n_vocab, lf, hk, pick);
        for (int a = 0; a < n_active && !rc; a++) {
            r[ids[a]].n_steps++;
            take(&lanes[ids[a]], v, n_ctx, pick[a].token, pick[a].logprob);
        }
    }
    for (int k = 0; k < n && !rc; k++)
        rc = finish_lane(v, &hs.h[k], &r[k]);
    hyp_set_free(&hs);
    free(lanes), free(ids), free(seq), free(last), free(pick), free(lf), free(hk);
    return rc;
}
