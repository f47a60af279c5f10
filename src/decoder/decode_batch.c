/*
 * decode_batch.c — see decode_batch.h. Each lane runs decode_window's greedy loop
 * (sample_group with one sequence) one step at a time; the steps of all running lanes share
 * one decoder_batch_step.
 */
#include "decoder/decode_batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "decoder/decoder_batch.h"
#include "decoder/hypothesis.h"
#include "decoder/logit_filters.h"
#include "libwhisperc.h"
#include "model/vocab.h"
#include "util.h"

enum lane_state { LANE_FREE = 0, LANE_RUNNING, LANE_ENDED };

struct decode_batch_lane {
    enum lane_state state;
    const struct decode_opts *o;
    struct hyp_set hs; /* one hypothesis, of o->sample_len + 1 tokens */
    struct decode_result r;
    int n_initial;
    int i_step; /* the next token's index in this window: sample_group's i */
};

int decode_batch_init(struct decode_batch *d, struct decoder_batch *db, struct wc_stream *s,
                      const struct wc_vocab *v) {
    size_t B = (size_t)db->n_lanes, n_ctx = (size_t)db->hp->n_text_ctx;
    *d = (struct decode_batch){
        .db = db,
        .s = s,
        .v = v,
        .lanes = calloc(B, sizeof *d->lanes),
        .logits = malloc(2 * (size_t)v->n_vocab * sizeof *d->logits),
        .seq = malloc((2 * n_ctx + 8) * sizeof *d->seq),
        .last = malloc(B * sizeof *d->last),
        .ids = malloc(B * sizeof *d->ids),
        .pick = malloc(B * sizeof *d->pick),
        .lf = malloc(B * sizeof *d->lf),
        .hk = malloc(B * sizeof *d->hk),
    };
    if (!d->lanes || !d->logits || !d->seq || !d->last || !d->ids || !d->pick || !d->lf || !d->hk) {
        decode_batch_free(d);
        return WHISPERC_ERR_NO_MEMORY;
    }
    return 0;
}

void decode_batch_free(struct decode_batch *d) {
    if (d->lanes)
        for (int k = 0; k < d->db->n_lanes; k++) {
            hyp_set_free(&d->lanes[k].hs);
            decode_result_free(&d->lanes[k].r);
        }
    free(d->lanes), free(d->logits), free(d->seq), free(d->last), free(d->ids), free(d->pick);
    free(d->lf), free(d->hk);
    memset(d, 0, sizeof *d);
}

/* Step i_step of one lane with its chosen token, as one iteration of sample_group at T = 0. */
static void take(struct decode_batch_lane *ln, const struct wc_vocab *v, int n_ctx, int next,
                 float lp) {
    struct hyp *h = ln->hs.h;
    h->sum += lp;
    if (next == v->eot) {
        h->done = true;
        ln->state = LANE_ENDED;
        return;
    }
    h->tok[h->n] = next;
    h->lp[h->n++] = lp;
    if (ln->n_initial + ln->i_step + 1 > n_ctx || ln->i_step + 1 >= ln->o->sample_len)
        ln->state = LANE_ENDED;
    ln->i_step++;
}

int decode_batch_start(struct decode_batch *d, int k, const struct decode_opts *o) {
    struct wc_stream *s = d->s;
    const struct wc_vocab *v = d->v;
    int n_ctx = d->db->hp->n_text_ctx, n_vocab = v->n_vocab;
    if (k < 0 || k >= d->db->n_lanes || d->lanes[k].state != LANE_FREE) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: lane %d is not free", k);
        return s->err;
    }
    if (o->temperature != 0.0f || o->beam_size > 0 || o->best_of > 1) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: batched decoding is greedy only");
        return s->err;
    }
    struct decode_batch_lane *ln = &d->lanes[k];
    hyp_set_free(&ln->hs);
    *ln = (struct decode_batch_lane){.o = o};
    ln->r.temperature = o->temperature;
    if (hyp_set_init(&ln->hs, 1, o->sample_len + 1))
        return WHISPERC_ERR_NO_MEMORY;
    int sot_index,
        n_initial = decode_initial_tokens(o, n_ctx, o->sample_len, v, d->seq, &sot_index);
    if (n_initial + 1 > n_ctx) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: the prompt and prefix take %d of the %d text positions", n_initial,
                       n_ctx);
        return s->err;
    }
    int rows[2] = {n_initial - 1, sot_index};
    int n_rows = sot_index == n_initial - 1 ? 1 : 2;
    ln->r.n_steps = 1;
    int rc = decoder_batch_prefill(d->db, s, k, d->seq, n_initial, rows, n_rows, d->logits);
    if (rc)
        return rc;
    const float *at_sot = d->logits + (size_t)(n_rows - 1) * n_vocab;
    ln->r.no_speech_prob = exp(at_sot[v->no_speech] - wc_logsumexp(at_sot, 0, n_vocab));
    ln->n_initial = n_initial;
    ln->state = o->sample_len > 0 ? LANE_RUNNING : LANE_ENDED;
    if (ln->state == LANE_RUNNING) { /* the prompt's row is on the host already */
        float *logits = d->logits;
        logit_filters_apply(o->filters, logits, ln->hs.h->tok, ln->hs.h->n);
        int next = decode_argmax(logits, n_vocab);
        take(ln, v, n_ctx, next, (float)(logits[next] - wc_logsumexp(logits, 0, n_vocab)));
    }
    return 0;
}

int decode_batch_step(struct decode_batch *d, int *n_stepped) {
    int n_ctx = d->db->hp->n_text_ctx, n = 0;
    for (int k = 0; k < d->db->n_lanes; k++) {
        struct decode_batch_lane *ln = &d->lanes[k];
        if (ln->state != LANE_RUNNING)
            continue;
        d->ids[n] = k;
        d->last[n] = ln->hs.h->tok[ln->hs.h->n - 1];
        d->lf[n] = ln->o->filters;
        d->hk[n++] = ln->hs.h;
    }
    if (n_stepped)
        *n_stepped = n;
    if (n == 0)
        return d->s->err;
    int rc = decoder_batch_step(d->db, d->s, d->ids, d->last, n, NULL);
    if (!rc) /* each step's logits stay on the backend: only the picks come back */
        rc = decode_greedy_pick(d->s, d->db->logits, n, d->v->n_vocab, d->lf, d->hk, d->pick);
    d->n_steps++;
    for (int a = 0; a < n && !rc; a++) {
        struct decode_batch_lane *ln = &d->lanes[d->ids[a]];
        ln->r.n_steps++;
        take(ln, d->v, n_ctx, d->pick[a].token, d->pick[a].logprob);
    }
    return rc;
}

bool decode_batch_ended(const struct decode_batch *d, int k) {
    return k >= 0 && k < d->db->n_lanes && d->lanes[k].state == LANE_ENDED;
}

int decode_batch_take(struct decode_batch *d, int k, struct decode_result *r) {
    struct decode_batch_lane *ln = &d->lanes[k];
    const struct hyp *h = ln->hs.h;
    *r = ln->r;
    memset(&ln->r, 0, sizeof ln->r);
    ln->state = LANE_FREE;
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
    return decode_result_finish(d->v, r);
}
