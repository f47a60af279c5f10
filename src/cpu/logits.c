/*
 * logits.c — cpu_logits_greedy and cpu_logits_topk (backend.h): masking, ApplyTimestampRules'
 * probability test, then argmax and log-softmax (greedy) or log-softmax and the top k (beam
 * search) on host rows. The arithmetic is the decoder's own (decoder/logit_filters.c
 * timestamp_rules, decode_window.c decode_argmax, util.c wc_logsumexp, wc_log_softmax,
 * wc_topk, wc_sample_weigh, wc_sample_draw), operation for operation, so a step gives the same
 * bits whichever path the decoder takes; tests/test_logits.c holds it to that. cpu_logits_sample
 * masks its rows, then weighs a row once for a run of draws from it at one temperature. Rows go to
 * the stream's threads, one a task (each row's arithmetic is its own: the bits do not depend on the
 * thread).
 */
#include <math.h>
#include <stdlib.h>

#include "cpu/cpu_internal.h"
#include "cpu/pool.h"
#include "libwhisperc.h"
#include "util.h"

static void forbid(float *x, int from, int to) {
    for (int i = from < 0 ? 0 : from; i < to; i++)
        x[i] = -INFINITY;
}

static float max_of(const float *x, int from, int to) {
    float m = -INFINITY;
    for (int i = from; i < to; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

/* The row as logit_filters_apply leaves it: suppressed tokens, the rule's ranges, its
 * timestamp test. */
static void mask_row(float *x, const struct wc_logit_rule *r, const int32_t *suppress,
                     int n_suppress, int n_vocab) {
    for (int i = 0; i < n_suppress; i++)
        x[suppress[i]] = -INFINITY;
    for (int i = 0; i < r->n_ranges; i++)
        forbid(x, r->lo[i], r->hi[i] < n_vocab ? r->hi[i] : n_vocab);
    int tb = r->ts_begin;
    if (tb > 0 && tb < n_vocab && wc_logsumexp(x, tb, n_vocab) > (double)max_of(x, 0, tb))
        forbid(x, 0, tb);
}

static void pick_row(struct wc_greedy_pick *out, float *x, const struct wc_logit_rule *r,
                     const int32_t *suppress, int n_suppress, int n_vocab) {
    mask_row(x, r, suppress, n_suppress, n_vocab);
    int best = 0; /* the first maximum, as torch.argmax */
    for (int i = 1; i < n_vocab; i++)
        if (x[i] > x[best])
            best = i;
    out->token = best;
    /* every token masked: token 0 with log-probability -inf (not -inf - -inf = NaN) */
    out->logprob =
        x[best] == -INFINITY ? -INFINITY : (float)(x[best] - wc_logsumexp(x, 0, n_vocab));
}

/* The arguments both ops share: 0, or the stream failed with why. */
static int check_args(struct wc_stream *s, const char *op, const struct wc_logit_rule *rules,
                      const int32_t *suppress, int n_suppress, int n_rows, int n_vocab) {
    if (s->err)
        return -1;
    for (int i = 0; i < n_suppress; i++)
        if (suppress[i] < 0 || suppress[i] >= n_vocab) {
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "%s: suppressed token %d outside [0, %d)",
                           op, suppress[i], n_vocab);
            return -1;
        }
    for (int r = 0; r < n_rows; r++)
        if (rules[r].n_ranges < 0 || rules[r].n_ranges > WC_LOGIT_MAX_RANGES) {
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "%s: %d ranges", op, rules[r].n_ranges);
            return -1;
        }
    return 0;
}

/* One call's rows, for the pool's tasks. */
struct rows_job {
    struct wc_greedy_pick *out;
    float *logits;
    const struct wc_logit_rule *rules;
    const int32_t *suppress;
    int n_suppress, n_vocab, k; /* k 0: the greedy pick */
};

static void topk_row(struct wc_greedy_pick *out, float *x, const struct wc_logit_rule *r,
                     const int32_t *suppress, int n_suppress, int n_vocab, int k) {
    int idx[WC_LOGIT_MAX_TOPK];
    mask_row(x, r, suppress, n_suppress, n_vocab);
    wc_log_softmax(x, n_vocab);
    wc_topk(x, n_vocab, k, idx);
    for (int j = 0; j < k; j++)
        out[j] = (struct wc_greedy_pick){idx[j], x[idx[j]]};
}

static void row_task(void *ctx, int r, int thread) {
    const struct rows_job *j = ctx;
    (void)thread;
    float *x = j->logits + (size_t)r * j->n_vocab;
    if (j->k)
        topk_row(j->out + (size_t)r * j->k, x, &j->rules[r], j->suppress, j->n_suppress, j->n_vocab,
                 j->k);
    else
        pick_row(&j->out[r], x, &j->rules[r], j->suppress, j->n_suppress, j->n_vocab);
}

static void run_rows(struct wc_stream *s, const struct rows_job *j, int n_rows) {
    if (n_rows == 1)
        row_task((void *)j, 0, 0);
    else
        pool_run(cpu_stream(s)->pool, row_task, (void *)j, n_rows);
}

void cpu_logits_greedy(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                       const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                       int n_rows, int n_vocab) {
    if (check_args(s, "logits_greedy", rules, suppress, n_suppress, n_rows, n_vocab))
        return;
    struct rows_job j = {out, logits, rules, suppress, n_suppress, n_vocab, 0};
    run_rows(s, &j, n_rows);
}

void cpu_logits_topk(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                     const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                     int n_rows, int n_vocab, int k) {
    if (check_args(s, "logits_topk", rules, suppress, n_suppress, n_rows, n_vocab))
        return;
    if (k < 1 || k > WC_LOGIT_MAX_TOPK || k > n_vocab) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "logits_topk: k %d", k);
        return;
    }
    struct rows_job j = {out, logits, rules, suppress, n_suppress, n_vocab, k};
    run_rows(s, &j, n_rows);
}

/* The rows' masks, then the draws in order; a run of draws from one row at one temperature
 * (a window's first step: its samples from the prompt's row) shares one weighing. */
void cpu_logits_sample(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                       const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                       int n_rows, int n_vocab, const struct wc_sample_draw *draws, int n_draws) {
    if (check_args(s, "logits_sample", rules, suppress, n_suppress, n_rows, n_vocab))
        return;
    if (!wc_sample_draws_ok(draws, n_draws, n_rows)) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "logits_sample: a draw's row, temperature or uniform out of range");
        return;
    }
    float *w = malloc((size_t)n_vocab * sizeof *w);
    if (!w) {
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "logits_sample: out of memory");
        return;
    }
    for (int r = 0; r < n_rows; r++)
        mask_row(logits + (size_t)r * n_vocab, &rules[r], suppress, n_suppress, n_vocab);
    struct wc_sample_weights sw = {0};
    for (int j = 0; j < n_draws; j++) {
        const struct wc_sample_draw *d = &draws[j];
        const float *x = logits + (size_t)d->row * n_vocab;
        if (j == 0 || d->row != draws[j - 1].row || d->temperature != draws[j - 1].temperature)
            wc_sample_weigh(x, n_vocab, d->temperature, w, &sw);
        if (sw.max == -INFINITY) { /* every token masked: as logits_greedy, no NaN leaves */
            out[j] = (struct wc_greedy_pick){0, -INFINITY};
            continue;
        }
        out[j].token = wc_sample_draw(x, n_vocab, w, &sw, d->u, &out[j].logprob);
    }
    free(w);
}
