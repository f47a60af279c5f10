/*
 * beam_search.c — see beam_search.h; and beam_search() (decode_window.h): the state machine
 * over struct decoder, whose beams are decoder sequences: keeping, dropping and duplicating
 * them permutes the decoder's slot table (decoder_reorder), never the KV cache.
 *
 * Scores are float32 sums as in the reference's sum_logprobs tensor; candidates are ranked by
 * a stable sort (Python's sorted(reverse=True) keeps insertion order among equal scores).
 */
#include "decoder/beam_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "decoder/decoder.h"
#include "decoder/logit_filters.h"
#include "libwhisperc.h"
#include "model/vocab.h"
#include "util.h"

struct beam_cand {
    float score; /* sum of the source beam + lp */
    float lp;    /* log-probability of the token */
    int src;     /* source beam */
    int order;   /* insertion order, for a stable sort */
    int32_t token;
};

static int cmp_cand(const void *a, const void *b) {
    const struct beam_cand *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->order - y->order;
}

void beam_free(struct beam_state *b) {
    hyp_set_free(&b->cur);
    hyp_set_free(&b->next);
    hyp_set_free(&b->fin);
    free(b->cands);
    free(b->top);
    memset(b, 0, sizeof *b);
}

int beam_init(struct beam_state *b, const struct decode_opts *o, int n_initial, int n_ctx) {
    int G = o->beam_size, cap = o->sample_len + 1;
    /* round(beam_size * patience), Python's round: half to even */
    int max_candidates = (int)nearbyint((double)G * (o->patience > 0 ? o->patience : 1.0));
    if (max_candidates < 1)
        max_candidates = 1;
    int n_fin_cap = max_candidates > G ? max_candidates : G;
    *b = (struct beam_state){.o = o,
                             .G = G,
                             .K = G + 1,
                             .max_candidates = max_candidates,
                             .n_initial = n_initial,
                             .n_ctx = n_ctx};
    b->cands = malloc((size_t)G * (G + 1) * sizeof *b->cands);
    b->top = malloc((size_t)G * (G + 1) * sizeof *b->top);
    if (!b->cands || !b->top || hyp_set_init(&b->cur, G, cap) || hyp_set_init(&b->next, G, cap) ||
        hyp_set_init(&b->fin, n_fin_cap, cap)) {
        beam_free(b);
        return WHISPERC_ERR_NO_MEMORY;
    }
    return 0;
}

void beam_rank_host(struct beam_state *b, int j, float *row, int n_vocab) {
    int idx[WC_LOGIT_MAX_TOPK];
    const struct hyp *h = &b->cur.h[j];
    logit_filters_apply(b->o->filters, row, h->tok, h->n);
    wc_log_softmax(row, n_vocab);
    wc_topk(row, n_vocab, b->K, idx);
    for (int t = 0; t < b->K; t++)
        b->top[j * b->K + t] = (struct wc_greedy_pick){idx[t], row[idx[t]]};
}

void beam_rule(const struct beam_state *b, int j, struct wc_logit_rule *out) {
    logit_filters_rule(b->o->filters, b->cur.h[j].tok, b->cur.h[j].n, out);
}

bool beam_update(struct beam_state *b, const struct wc_greedy_pick *top, int32_t eot) {
    int G = b->G, K = b->K, nc = 0, n_src = beam_rows(b);
    for (int j = 0; j < n_src; j++) {
        const struct hyp *h = &b->cur.h[j];
        for (int t = 0; t < K; t++, nc++) {
            const struct wc_greedy_pick *c = &top[j * K + t];
            b->cands[nc] =
                (struct beam_cand){(float)h->sum + c->logprob, c->logprob, j, nc, c->token};
        }
    }
    qsort(b->cands, (size_t)nc, sizeof *b->cands, cmp_cand);
    int saved = 0;
    for (int i = 0; i < nc && saved < G; i++) {
        const struct beam_cand *c = &b->cands[i];
        const struct hyp *from = &b->cur.h[c->src];
        if (c->token == eot) {
            /* newly finished, best first; kept while the candidate list has room */
            if (b->n_fin < b->max_candidates) {
                struct hyp *f = &b->fin.h[b->n_fin++];
                hyp_copy(f, from);
                f->sum = c->score;
                f->done = true;
            }
            continue;
        }
        struct hyp *nh = &b->next.h[saved];
        hyp_copy(nh, from);
        nh->tok[nh->n] = c->token;
        nh->lp[nh->n++] = c->lp;
        nh->sum = c->score;
        b->src_of[saved++] = c->src;
    }
    for (int g = saved; g < G; g++) /* not reached with G + 1 picks a row; kept defined */
        b->src_of[g] = g < n_src ? g : 0;
    struct hyp_set t = b->cur;
    b->cur = b->next;
    b->next = t;
    int i = b->i_step++;
    return b->n_fin >= b->max_candidates || b->n_initial + i + 1 > b->n_ctx ||
           i + 1 >= b->o->sample_len;
}

/* BeamSearchDecoder.finalize: too few finished, so the best unfinished beams join. */
static void finalize(struct beam_state *b) {
    int G = b->G, order[WC_MAX_GROUP];
    for (int i = 0; i < G; i++)
        order[i] = i;
    /* descending sum; equal sums: the higher index first, as reversed np.argsort */
    for (int i = 1; i < G; i++)
        for (int j = i; j > 0 && b->cur.h[order[j]].sum >= b->cur.h[order[j - 1]].sum; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < G && b->n_fin < G; i++)
        hyp_copy(&b->fin.h[b->n_fin++], &b->cur.h[order[i]]);
}

void beam_result(struct beam_state *b, struct decode_result *r) {
    finalize(b);
    const struct hyp *best = &b->fin.h[hyp_rank(b->fin.h, b->n_fin, b->o->length_penalty)];
    memcpy(r->tokens, best->tok, (size_t)best->n * sizeof *r->tokens);
    memcpy(r->logprobs, best->lp, (size_t)best->n * sizeof *r->logprobs);
    r->n_tokens = best->n;
    r->sum_logprob = best->sum;
}

/* b->top from the decoder's n_src rows: on the host (host != NULL) or, where the backend
 * ranks rows itself, through logits_topk on the step's rows in backend memory (the same bits
 * on the CPU; only the picks come back from a GPU). */
static int rank_rows(struct beam_state *b, struct decoder *d, struct wc_stream *s, int n_vocab,
                     float *host, int n_src) {
    if (host) {
        for (int j = 0; j < n_src; j++)
            beam_rank_host(b, j, host + (size_t)j * n_vocab, n_vocab);
        return 0;
    }
    struct wc_logit_rule rules[WC_MAX_GROUP];
    for (int j = 0; j < n_src; j++)
        beam_rule(b, j, &rules[j]);
    const struct logit_filters *f = b->o->filters;
    s->be->ops->logits_topk(s, b->top, d->logits, rules, f->suppress, f->n_suppress, n_src, n_vocab,
                            b->K);
    return wc_stream_sync(s);
}

int beam_search(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v,
                const struct decode_opts *o, float *logits, int n_initial,
                struct decode_result *r) {
    struct beam_state b;
    int G = o->beam_size, rc = beam_init(&b, o, n_initial, d->hp->n_text_ctx);
    if (rc)
        return rc;
    /* a step's logits stay in backend memory where the backend ranks them itself */
    bool on_backend = s->be->ops->logits_topk != NULL;
    for (bool ended = o->sample_len <= 0; !ended;) {
        if (b.i_step > 0) {
            if (decode_aborted(o)) {
                rc = WHISPERC_ERR_ABORTED;
                goto out;
            }
            int32_t last[WC_MAX_GROUP];
            for (int g = 0; g < G; g++)
                last[g] = beam_last(&b, g);
            r->n_steps++;
            if ((rc = decoder_step(d, s, last, G, on_backend ? NULL : logits)))
                goto out;
        }
        /* ranked by the backend where it can, the first step too: decoder_forward left the
         * prompt's last row in d->logits */
        float *host = on_backend ? NULL : logits;
        if ((rc = rank_rows(&b, d, s, v->n_vocab, host, beam_rows(&b))))
            goto out;
        ended = beam_update(&b, b.top, v->eot);
        decoder_reorder(d, b.src_of, G);
    }
    beam_result(&b, r);
out:
    beam_free(&b);
    return rc;
}
