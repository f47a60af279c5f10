/*
 * hypothesis.h — candidate token sequences of one window's decoding (beams, best_of samples),
 * and openai-whisper's MaximumLikelihoodRanker that picks the final one. Private to the
 * decoder (decode_window.c, beam_search.c, decode_batch.c).
 */
#ifndef WC_HYPOTHESIS_H
#define WC_HYPOTHESIS_H

#include <stdbool.h>
#include <stdint.h>

struct hyp {
    int32_t *tok; /* sampled tokens, EOT excluded; capacity cap (owned by the hyp_set) */
    float *lp;    /* log-probability of each token when it was chosen */
    int n;
    double sum; /* sum of log-probabilities, the EOT's included */
    bool done;  /* ended with EOT */
};

struct hyp_set {
    struct hyp *h;
    int n, cap;
    int32_t *tok_mem;
    float *lp_mem;
};

/* n hypotheses of up to cap tokens each; returns 0 or -1 (out of memory). */
int hyp_set_init(struct hyp_set *s, int n, int cap);
void hyp_set_free(struct hyp_set *s);

/* dst = src (tokens, log-probabilities, sum, done); both from sets of the same cap. */
void hyp_copy(struct hyp *dst, const struct hyp *src);

/* Index of the best of n hypotheses: sum / length (length_penalty < 0), else
 * sum / ((5 + length) / 6) ** length_penalty; the first of equal scores. */
int hyp_rank(const struct hyp *h, int n, float length_penalty);

#endif /* WC_HYPOTHESIS_H */
