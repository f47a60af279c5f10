/*
 * beam_search.c — openai-whisper decoding.py BeamSearchDecoder (update, finalize) over the
 * batched decoder. Beams are decoder sequences; keeping, dropping and duplicating them
 * permutes the decoder's slot table (decoder_reorder), never the KV cache.
 *
 * Scores are float32 sums as in the reference's sum_logprobs tensor; candidates are ranked by
 * a stable sort (Python's sorted(reverse=True) keeps insertion order among equal scores).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "decoder/decode_window.h"
#include "decoder/decoder.h"
#include "decoder/hypothesis.h"
#include "decoder/logit_filters.h"
#include "libwhisperc.h"
#include "model/model_file.h"
#include "model/vocab.h"
#include "util.h"

struct cand {
    float score; /* sum of the source beam + lp */
    float lp;    /* log-probability of the token */
    int src;     /* source beam */
    int order;   /* insertion order, for a stable sort */
    int32_t token;
};

static int cmp_cand(const void *a, const void *b) {
    const struct cand *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->order - y->order;
}

struct beams {
    struct hyp_set cur, next, fin;
    int n_fin;
    struct cand *cands;
    struct wc_greedy_pick *top; /* [G][G + 1]: each row's best tokens */
};

static void beams_free(struct beams *b) {
    hyp_set_free(&b->cur);
    hyp_set_free(&b->next);
    hyp_set_free(&b->fin);
    free(b->cands);
    free(b->top);
}

/* b->top: the G + 1 best (token, log-probability) of each of n_src rows, filtered after
 * beam j's tokens. host: the rows on the host (filtered, log-softmaxed and ranked here); NULL:
 * the step's rows in the decoder's backend memory, through the backend's logits_topk (the same
 * bits on the CPU; only the picks come back from a GPU). */
static int rank_rows(struct beams *b, struct decoder *d, struct wc_stream *s,
                     const struct decode_opts *o, int n_vocab, float *host, int n_src) {
    int K = o->beam_size + 1, idx[WC_LOGIT_MAX_TOPK];
    if (host) {
        for (int j = 0; j < n_src; j++) {
            float *row = host + (size_t)j * n_vocab;
            const struct hyp *h = &b->cur.h[j];
            logit_filters_apply(o->filters, row, h->tok, h->n);
            wc_log_softmax(row, n_vocab);
            wc_topk(row, n_vocab, K, idx);
            for (int t = 0; t < K; t++)
                b->top[j * K + t] = (struct wc_greedy_pick){idx[t], row[idx[t]]};
        }
        return 0;
    }
    struct wc_logit_rule rules[WC_MAX_GROUP];
    for (int j = 0; j < n_src; j++)
        logit_filters_rule(o->filters, b->cur.h[j].tok, b->cur.h[j].n, &rules[j]);
    s->be->ops->logits_topk(s, b->top, d->logits, rules, o->filters->suppress,
                            o->filters->n_suppress, n_src, n_vocab, K);
    return wc_stream_sync(s);
}

/* BeamSearchDecoder.update for one step over n_src rows ranked by rank_rows (one per beam; the
 * first step has one, as every beam is still the prompt). src_of[g]: the beam new beam g
 * extends. */
static void update(struct beams *b, const struct decode_opts *o, const struct wc_vocab *v,
                   int n_src, int max_candidates, int *src_of) {
    int G = o->beam_size, K = G + 1, nc = 0;
    for (int j = 0; j < n_src; j++) {
        const struct hyp *h = &b->cur.h[j];
        for (int t = 0; t < K; t++, nc++) {
            const struct wc_greedy_pick *c = &b->top[j * K + t];
            b->cands[nc] = (struct cand){(float)h->sum + c->logprob, c->logprob, j, nc, c->token};
        }
    }
    qsort(b->cands, (size_t)nc, sizeof *b->cands, cmp_cand);
    int saved = 0;
    for (int i = 0; i < nc && saved < G; i++) {
        const struct cand *c = &b->cands[i];
        const struct hyp *from = &b->cur.h[c->src];
        if (c->token == v->eot) {
            /* newly finished, best first; kept while the candidate list has room */
            if (b->n_fin < max_candidates) {
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
        src_of[saved++] = c->src;
    }
    struct hyp_set t = b->cur;
    b->cur = b->next;
    b->next = t;
}

/* BeamSearchDecoder.finalize: too few finished, so the best unfinished beams join. */
static void finalize(struct beams *b, int G) {
    int order[WC_MAX_GROUP];
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

int beam_search(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v,
                const struct decode_opts *o, float *logits, int n_initial,
                struct decode_result *r) {
    int G = o->beam_size, n_ctx = d->hp->n_text_ctx, cap = o->sample_len + 1;
    /* round(beam_size * patience), Python's round: half to even */
    int max_candidates = (int)nearbyint((double)G * (o->patience > 0 ? o->patience : 1.0));
    if (max_candidates < 1)
        max_candidates = 1;
    int n_fin_cap = max_candidates > G ? max_candidates : G;
    struct beams b = {0};
    int rc = WHISPERC_ERR_NO_MEMORY;
    b.cands = malloc((size_t)G * (G + 1) * sizeof *b.cands);
    b.top = malloc((size_t)G * (G + 1) * sizeof *b.top);
    if (!b.cands || !b.top || hyp_set_init(&b.cur, G, cap) || hyp_set_init(&b.next, G, cap) ||
        hyp_set_init(&b.fin, n_fin_cap, cap))
        goto out;
    rc = 0;
    /* a step's logits stay in backend memory where the backend ranks them itself */
    bool on_backend = s->be->ops->logits_topk != NULL;
    for (int i = 0; i < o->sample_len; i++) {
        if (i > 0) {
            int32_t last[WC_MAX_GROUP];
            for (int g = 0; g < G; g++)
                last[g] = b.cur.h[g].tok[b.cur.h[g].n - 1];
            r->n_steps++;
            if ((rc = decoder_step(d, s, last, G, on_backend ? NULL : logits)))
                goto out;
        }
        /* the first step: the prompt's row, on the host */
        float *host = i == 0 || !on_backend ? logits : NULL;
        if ((rc = rank_rows(&b, d, s, o, v->n_vocab, host, i == 0 ? 1 : G)))
            goto out;
        int src_of[WC_MAX_GROUP];
        update(&b, o, v, i == 0 ? 1 : G, max_candidates, src_of);
        decoder_reorder(d, src_of, G);
        if (b.n_fin >= max_candidates || n_initial + i + 1 > n_ctx)
            break;
    }
    finalize(&b, G);
    const struct hyp *best = &b.fin.h[hyp_rank(b.fin.h, b.n_fin, o->length_penalty)];
    memcpy(r->tokens, best->tok, (size_t)best->n * sizeof *r->tokens);
    memcpy(r->logprobs, best->lp, (size_t)best->n * sizeof *r->logprobs);
    r->n_tokens = best->n;
    r->sum_logprob = best->sum;
out:
    beams_free(&b);
    return rc;
}
