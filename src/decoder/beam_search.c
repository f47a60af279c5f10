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

#include "decoder/decode_window.h"
#include "decoder/decoder.h"
#include "decoder/hypothesis.h"
#include "decoder/logit_filters.h"
#include "libwhisperc.h"
#include "model/model_file.h"
#include "model/vocab.h"

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

/* log_softmax in place, float32 results. */
static void log_softmax(float *x, int n) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += exp((double)x[i] - m);
    double lse = m + log(sum);
    for (int i = 0; i < n; i++)
        x[i] = (float)(x[i] - lse);
}

/* idx[0..k): the k largest of x, descending; equal values by lower index (k small). */
static void topk(const float *x, int n, int k, int *idx) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m == k && !(x[i] > x[idx[k - 1]]))
            continue;
        int j = m < k ? m++ : k - 1;
        while (j > 0 && x[i] > x[idx[j - 1]]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
}

struct beams {
    struct hyp_set cur, next, fin;
    int n_fin;
    struct cand *cands;
    int *top;
};

static void beams_free(struct beams *b) {
    hyp_set_free(&b->cur);
    hyp_set_free(&b->next);
    hyp_set_free(&b->fin);
    free(b->cands);
    free(b->top);
}

/* BeamSearchDecoder.update for one step over n_src rows of logits (one per beam; the first
 * step has one, as every beam is still the prompt). src_of[g]: the beam new beam g extends. */
static void update(struct beams *b, const struct decode_opts *o, const struct wc_vocab *v,
                   float *logits, int n_src, int max_candidates, int *src_of) {
    int G = o->beam_size, K = G + 1, n_vocab = v->n_vocab, nc = 0;
    for (int j = 0; j < n_src; j++) {
        float *row = logits + (size_t)j * n_vocab;
        struct hyp *h = &b->cur.h[j];
        logit_filters_apply(o->filters, row, h->tok, h->n);
        log_softmax(row, n_vocab);
        topk(row, n_vocab, K, b->top);
        for (int t = 0; t < K; t++, nc++)
            b->cands[nc] =
                (struct cand){(float)h->sum + row[b->top[t]], row[b->top[t]], j, nc, b->top[t]};
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
    b.top = malloc((size_t)(G + 1) * sizeof *b.top);
    if (!b.cands || !b.top || hyp_set_init(&b.cur, G, cap) || hyp_set_init(&b.next, G, cap) ||
        hyp_set_init(&b.fin, n_fin_cap, cap))
        goto out;
    rc = 0;
    for (int i = 0; i < o->sample_len; i++) {
        if (i > 0) {
            int32_t last[WC_MAX_GROUP];
            for (int g = 0; g < G; g++)
                last[g] = b.cur.h[g].tok[b.cur.h[g].n - 1];
            r->n_steps++;
            if ((rc = decoder_step(d, s, last, G, logits)))
                goto out;
        }
        int src_of[WC_MAX_GROUP];
        update(&b, o, v, logits, i == 0 ? 1 : G, max_candidates, src_of);
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
