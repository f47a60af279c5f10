/*
 * test_logits.c — the CPU backend's logits_greedy, logits_topk and logits_sample against the
 * decoder's host paths (logit_filters_apply, then decode_argmax and wc_logsumexp, wc_log_softmax
 * and wc_topk as beam search, or wc_sample as decode_window), bit for bit, on random rows in
 * every rule state: first step (suppress blank, max_initial_timestamp), after text, after one
 * timestamp, after a pair, without timestamps; with boosted timestamps (the probability test
 * firing), with exact ties (argmax = first maximum) and confident rows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common.h"
#include "decoder/decode_window.h"
#include "decoder/logit_filters.h"
#include "model/vocab.h"
#include "util.h"

#define N_VOCAB 51865 /* multilingual ids */

static struct test_rng rng = {4242};
static int n_forced_ts; /* rows where the timestamp test forbade the text */

static void fake_vocab(struct wc_vocab *v) {
    memset(v, 0, sizeof *v);
    v->n_vocab = N_VOCAB;
    v->multilingual = true;
    v->eot = 50257, v->sot = 50258, v->translate = 50358, v->transcribe = 50359;
    v->sot_lm = 50360, v->sot_prev = 50361, v->no_speech = 50362, v->no_timestamps = 50363;
    v->timestamp_begin = 50364;
}

/* logits ~ N(0, 3); ts_boost added to timestamps; n_ties copies of the row's text maximum, or
 * n_ties < 0: a confident row, one text logit 25 above the rest (log-probability ~ -1e-6) */
static void rand_row(float *x, const struct wc_vocab *v, float ts_boost, int n_ties) {
    for (int i = 0; i < N_VOCAB; i++)
        x[i] = 3.0f * test_rng_normal(&rng) + (i >= v->timestamp_begin ? ts_boost : 0.0f);
    int best = decode_argmax(x, v->timestamp_begin);
    for (int t = 0; t < n_ties; t++) {
        int j = (int)((test_rng_uniform(&rng) + 1.0f) * 0.5f * (N_VOCAB - 1));
        x[j] = x[best];
    }
    if (n_ties < 0)
        x[440] = x[best] + 25.0f;
}

/* One call of n rows; each row checked against the host path. */
static void check_rows(struct wc_stream *s, const struct logit_filters *lf, int n,
                       const int32_t *const *hist, const int *n_hist, float ts_boost, int n_ties,
                       const char *what) {
    float *x = malloc((size_t)n * N_VOCAB * sizeof *x), *ref = malloc(N_VOCAB * sizeof *ref);
    struct wc_logit_rule rules[8];
    struct wc_greedy_pick got[8];
    for (int r = 0; r < n; r++) {
        rand_row(x + (size_t)r * N_VOCAB, lf->vocab, ts_boost, n_ties);
        logit_filters_rule(lf, hist[r], n_hist[r], &rules[r]);
    }
    float *orig = malloc((size_t)n * N_VOCAB * sizeof *orig);
    memcpy(orig, x, (size_t)n * N_VOCAB * sizeof *x);
    s->be->ops->logits_greedy(s, got, x, rules, lf->suppress, lf->n_suppress, n, N_VOCAB);
    CHECK(s->be->ops->sync(s) == 0);
    for (int r = 0; r < n; r++) {
        memcpy(ref, orig + (size_t)r * N_VOCAB, N_VOCAB * sizeof *ref);
        float text_max = ref[decode_argmax(ref, lf->vocab->timestamp_begin)];
        logit_filters_apply(lf, ref, hist[r], n_hist[r]);
        n_forced_ts += lf->timestamps && text_max > -INFINITY &&
                       ref[decode_argmax(ref, lf->vocab->timestamp_begin)] == -INFINITY &&
                       n_hist[r] > 0;
        int tok = decode_argmax(ref, N_VOCAB);
        float lp = (float)(ref[tok] - wc_logsumexp(ref, 0, N_VOCAB));
        if (got[r].token != tok || memcmp(&got[r].logprob, &lp, sizeof lp) != 0) {
            fprintf(stderr, "%s row %d: got (%d, %.9g), want (%d, %.9g)\n", what, r, got[r].token,
                    got[r].logprob, tok, lp);
            test_failures++;
        }
    }
    /* logits_topk against beam search's host path (the filters, wc_log_softmax, wc_topk):
     * 6 (5 beams + 1) and the most, 17 */
    for (int k = 6; k <= WC_LOGIT_MAX_TOPK; k += WC_LOGIT_MAX_TOPK - 6) {
        struct wc_greedy_pick top[8 * WC_LOGIT_MAX_TOPK];
        int idx[WC_LOGIT_MAX_TOPK];
        memcpy(x, orig, (size_t)n * N_VOCAB * sizeof *x);
        s->be->ops->logits_topk(s, top, x, rules, lf->suppress, lf->n_suppress, n, N_VOCAB, k);
        CHECK(s->be->ops->sync(s) == 0);
        for (int r = 0; r < n; r++) {
            memcpy(ref, orig + (size_t)r * N_VOCAB, N_VOCAB * sizeof *ref);
            logit_filters_apply(lf, ref, hist[r], n_hist[r]);
            wc_log_softmax(ref, N_VOCAB);
            wc_topk(ref, N_VOCAB, k, idx);
            for (int j = 0; j < k; j++) {
                const struct wc_greedy_pick *t = &top[r * k + j];
                if (t->token != idx[j] || memcmp(&t->logprob, &ref[idx[j]], sizeof(float))) {
                    fprintf(stderr, "%s topk %d row %d #%d: got (%d, %.9g), want (%d, %.9g)\n",
                            what, k, r, j, t->token, t->logprob, idx[j], ref[idx[j]]);
                    test_failures++;
                }
            }
        }
    }
    /* logits_sample against decode_window's wc_sample: two draws from each row at T = 0.6 (a
     * run sharing one weighing), then one from each at T = 1.3, each with its own uniform */
    struct wc_sample_draw draws[24];
    struct wc_greedy_pick drawn[24];
    int n_draws = 0;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < 2; i++)
            draws[n_draws++] = (struct wc_sample_draw){r, 0.6f, test_rng_uniform(&rng) * 0.5 + 0.5};
    for (int r = 0; r < n; r++)
        draws[n_draws++] = (struct wc_sample_draw){r, 1.3f, test_rng_uniform(&rng) * 0.5 + 0.5};
    memcpy(x, orig, (size_t)n * N_VOCAB * sizeof *x);
    s->be->ops->logits_sample(s, drawn, x, rules, lf->suppress, lf->n_suppress, n, N_VOCAB, draws,
                              n_draws);
    CHECK(s->be->ops->sync(s) == 0);
    float *w = malloc(N_VOCAB * sizeof *w);
    for (int j = 0; j < n_draws; j++) {
        const struct wc_sample_draw *d = &draws[j];
        memcpy(ref, orig + (size_t)d->row * N_VOCAB, N_VOCAB * sizeof *ref);
        logit_filters_apply(lf, ref, hist[d->row], n_hist[d->row]);
        struct wc_sample_weights sw;
        float lp;
        wc_sample_weigh(ref, N_VOCAB, d->temperature, w, &sw);
        int tok = wc_sample_draw(ref, N_VOCAB, w, &sw, d->u, &lp);
        if (drawn[j].token != tok || memcmp(&drawn[j].logprob, &lp, sizeof lp) != 0) {
            fprintf(stderr, "%s draw %d (row %d, T %.1f): got (%d, %.9g), want (%d, %.9g)\n", what,
                    j, d->row, d->temperature, drawn[j].token, drawn[j].logprob, tok, lp);
            test_failures++;
        }
    }
    free(w);
    free(x), free(ref), free(orig);
}

/* wc_sample's draws against the exact distribution softmax(x / T) (chi-square over a few
 * tokens, -inf ones never drawn) and its logprob against log_softmax(x) in double. */
static void test_sample(float temperature) {
    enum { N = 7, DRAWS = 200000 };
    const float x[N] = {1.5f, -INFINITY, 0.25f, 2.0f, -1.0f, -INFINITY, 1.9f};
    double p[N], z = 0, zt = 0, mx = 2.0;
    for (int i = 0; i < N; i++) {
        z += exp(x[i] - mx);
        zt += (p[i] = exp((x[i] - mx) / temperature));
    }
    long count[N] = {0};
    float w[N];
    struct wc_rng rng = {42};
    int lp_bad = 0;
    for (int d = 0; d < DRAWS; d++) {
        float lp;
        int t = wc_sample(x, N, temperature, &rng, w, &lp);
        count[t]++;
        lp_bad += fabs(lp - (x[t] - mx - log(z))) > 1e-6;
    }
    double chi2 = 0;
    for (int i = 0; i < N; i++)
        if (p[i] > 0)
            chi2 += pow(count[i] - DRAWS * p[i] / zt, 2) / (DRAWS * p[i] / zt);
    /* 4 degrees of freedom: P(chi2 > 25) < 1e-4 */
    bool ok = chi2 < 25 && !count[1] && !count[5] && !lp_bad;
    printf("%s wc_sample T=%.2f: chi2 %.2f over %d draws, %d logprobs off\n", ok ? "ok  " : "FAIL",
           temperature, chi2, DRAWS, lp_bad);
    CHECK(ok);
}

int main(void) {
    test_sample(1.0f);
    test_sample(0.4f);
    test_sample(1.7f);
    struct wc_backend *be;
    struct wc_stream *s;
    char err[256];
    CHECK(cpu_backend_new(&be, err, sizeof err) == 0);
    CHECK(be->ops->stream_new(be, 1, 0, &s, NULL, 0) == 0);
    struct wc_vocab v;
    fake_vocab(&v);
    const int32_t non_speech[] = {1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61};
    int32_t *sup;
    int n_sup = logit_filters_suppress_set(&v, non_speech, 17, NULL, 0, &sup);
    CHECK(n_sup > 0);
    int tb = v.timestamp_begin;
    /* histories: first step, text, text + one timestamp, a pair, a pair then text, ts then
     * text then one timestamp (a segment's end) */
    const int32_t h_text[] = {440, 1002, 13}, h_one[] = {tb + 3, 440, 1002, tb + 40};
    const int32_t h_pair[] = {tb, 440, tb + 40, tb + 40},
                  h_after[] = {tb, 440, tb + 40, tb + 40, 77};
    const int32_t h_first_ts[] = {tb + 2};
    const int32_t *hist[] = {NULL, h_text, h_one, h_pair, h_after, h_first_ts};
    const int n_hist[] = {0, 3, 4, 4, 5, 1};
    for (int variant = 0; variant < 4; variant++) {
        struct logit_filters lf = {
            .vocab = &v,
            .suppress_blank = variant != 1,
            .suppress = variant == 2 ? NULL : sup,
            .n_suppress = variant == 2 ? 0 : n_sup,
            .timestamps = variant != 3,
            .max_initial_timestamp_index = variant == 1 ? -1 : 50,
            .blank_token = 220,
        };
        const float boosts[] = {0.0f, 6.0f, 9.0f, 12.0f};
        for (int b = 0; b < 4; b++)
            for (int ties = 0; ties <= 3; ties += 3)
                for (int rep = 0; rep < 1; rep++) {
                    for (int h = 0; h < 6; h++)
                        check_rows(s, &lf, 1, &hist[h], &n_hist[h], boosts[b], ties, "one row");
                    check_rows(s, &lf, 6, hist, n_hist, boosts[b], ties, "six rows");
                }
        check_rows(s, &lf, 6, hist, n_hist, 0.0f, -1, "confident rows");
    }
    printf("timestamp test forbade the text in %d rows\n", n_forced_ts);
    CHECK(n_forced_ts > 0);
    free(sup);
    be->ops->stream_free(s);
    be->ops->backend_free(be);
    printf("%s\n", test_failures ? "FAILED" : "OK");
    return TEST_RESULT();
}
