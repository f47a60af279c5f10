/*
 * logit_filters.h — openai-whisper decoding.py's LogitFilters on one row of host logits:
 * SuppressBlank, SuppressTokens and ApplyTimestampRules, in that order.
 */
#ifndef WC_LOGIT_FILTERS_H
#define WC_LOGIT_FILTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wc_vocab;

struct logit_filters {
    const struct wc_vocab *vocab;
    bool suppress_blank;
    const int32_t *suppress; /* sorted ids, owned by the caller */
    int n_suppress;
    bool timestamps;                 /* ApplyTimestampRules on (not without_timestamps) */
    int max_initial_timestamp_index; /* < 0: none */
    int32_t blank_token;             /* tokenizer.encode(" ")[0] */
};

/* sampled: the tokens sampled so far in this window (after the initial tokens), n_sampled of
 * them. Modifies logits[n_vocab] in place (-INFINITY for forbidden tokens). */
void logit_filters_apply(const struct logit_filters *lf, float *logits, const int32_t *sampled,
                         int n_sampled);

struct wc_logit_rule;

/* The same filters for the backend's logits_greedy: the ranges and the timestamp test that
 * logit_filters_apply would apply after `sampled` (lf->suppress goes to the op as is). The
 * history is read here, on the host; the op does the O(n_vocab) work. */
void logit_filters_rule(const struct logit_filters *lf, const int32_t *sampled, int n_sampled,
                        struct wc_logit_rule *out);

/* Whether a and b suppress the same tokens (the same list, or lists alike: each window's
 * filters hold a list of their own), so that their rows can share one logits op. */
bool logit_filters_same_suppress(const struct logit_filters *a, const struct logit_filters *b);

/* The suppress set of DecodingTask._get_suppress_tokens(): the caller's ids (extra, n_extra:
 * its suppress_tokens), non-speech tokens (if non_speech != NULL) plus transcribe, translate,
 * sot, sot_prev, sot_lm and no_speech; sorted, unique. Returns the count, *out malloc'd; -1
 * when out of memory. */
int logit_filters_suppress_set(const struct wc_vocab *v, const int32_t *non_speech, int n_non,
                               const int32_t *extra, int n_extra, int32_t **out);

/* The text tokens (ids < eot) whose bytes `regex` (POSIX extended) matches as a whole, as
 * whisper.cpp's suppress_regex; ascending. Returns the count with *out malloc'd (NULL when
 * none), -1 when out of memory, -2 for a regex that does not compile (why in err). */
int logit_filters_regex_set(const struct wc_vocab *v, const char *regex, int32_t **out, char *err,
                            size_t err_size);

#endif /* WC_LOGIT_FILTERS_H */
