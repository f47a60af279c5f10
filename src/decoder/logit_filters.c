/*
 * logit_filters.c — see logit_filters.h. Follows openai-whisper decoding.py (SuppressBlank,
 * SuppressTokens, ApplyTimestampRules) rule for rule.
 */
#include "decoder/logit_filters.h"

#include <locale.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "model/vocab.h"
#include "util.h"

static void forbid(float *logits, int from, int to) {
    for (int i = from; i < to; i++)
        logits[i] = -INFINITY;
}

static void timestamp_rules(const struct logit_filters *lf, float *logits, const int32_t *seq,
                            int n) {
    const struct wc_vocab *v = lf->vocab;
    int tb = v->timestamp_begin, n_vocab = v->n_vocab;

    /* <|notimestamps|> is handled by without_timestamps */
    logits[v->no_timestamps] = -INFINITY;

    /* timestamps come in pairs, except directly before EOT */
    bool last_ts = n >= 1 && seq[n - 1] >= tb;
    bool penult_ts = n < 2 || seq[n - 2] >= tb;
    if (last_ts) {
        if (penult_ts)
            forbid(logits, tb, n_vocab); /* has to be non-timestamp */
        else
            forbid(logits, 0, v->eot); /* cannot be normal text */
    }

    /* timestamps never decrease; a segment never has zero length */
    int last_timestamp = -1;
    for (int i = n - 1; i >= 0; i--)
        if (seq[i] >= tb) {
            last_timestamp = seq[i];
            break;
        }
    if (last_timestamp >= 0) {
        int limit = (last_ts && !penult_ts) ? last_timestamp : last_timestamp + 1;
        forbid(logits, tb, limit);
    }

    if (n == 0) {
        /* the first sampled token is a timestamp, at most max_initial_timestamp */
        forbid(logits, 0, tb);
        if (lf->max_initial_timestamp_index >= 0)
            forbid(logits, tb + lf->max_initial_timestamp_index + 1, n_vocab);
    }

    /* if the timestamps together are more probable than any text token, sample a timestamp.
     * Compared before normalisation: log_softmax shifts both sides by the same log Z. */
    double ts_lse = wc_logsumexp(logits, tb, n_vocab);
    float text_max = -INFINITY;
    for (int i = 0; i < tb; i++)
        text_max = logits[i] > text_max ? logits[i] : text_max;
    if (ts_lse > (double)text_max)
        forbid(logits, 0, tb);
}

void logit_filters_apply(const struct logit_filters *lf, float *logits, const int32_t *sampled,
                         int n_sampled) {
    const struct wc_vocab *v = lf->vocab;
    if (lf->suppress_blank && n_sampled == 0) {
        logits[lf->blank_token] = -INFINITY;
        logits[v->eot] = -INFINITY;
    }
    for (int i = 0; i < lf->n_suppress; i++)
        logits[lf->suppress[i]] = -INFINITY;
    if (lf->timestamps)
        timestamp_rules(lf, logits, sampled, n_sampled);
}

static void add_range(struct wc_logit_rule *r, int lo, int hi) {
    r->lo[r->n_ranges] = lo;
    r->hi[r->n_ranges++] = hi;
}

/* logit_filters_apply's decisions, rule for rule, as ranges (at most 7) */
void logit_filters_rule(const struct logit_filters *lf, const int32_t *seq, int n,
                        struct wc_logit_rule *out) {
    const struct wc_vocab *v = lf->vocab;
    int tb = v->timestamp_begin, n_vocab = v->n_vocab;
    *out = (struct wc_logit_rule){0};
    if (lf->suppress_blank && n == 0) {
        add_range(out, lf->blank_token, lf->blank_token + 1);
        add_range(out, v->eot, v->eot + 1);
    }
    if (!lf->timestamps)
        return;
    add_range(out, v->no_timestamps, v->no_timestamps + 1);
    bool last_ts = n >= 1 && seq[n - 1] >= tb;
    bool penult_ts = n < 2 || seq[n - 2] >= tb;
    if (last_ts)
        add_range(out, penult_ts ? tb : 0, penult_ts ? n_vocab : v->eot);
    int last_timestamp = -1;
    for (int i = n - 1; i >= 0; i--)
        if (seq[i] >= tb) {
            last_timestamp = seq[i];
            break;
        }
    if (last_timestamp >= 0)
        add_range(out, tb, (last_ts && !penult_ts) ? last_timestamp : last_timestamp + 1);
    if (n == 0) {
        add_range(out, 0, tb);
        if (lf->max_initial_timestamp_index >= 0)
            add_range(out, tb + lf->max_initial_timestamp_index + 1, n_vocab);
    }
    out->ts_begin = tb;
}

bool logit_filters_same_suppress(const struct logit_filters *a, const struct logit_filters *b) {
    return a->n_suppress == b->n_suppress &&
           (a->suppress == b->suppress || a->n_suppress == 0 ||
            memcmp(a->suppress, b->suppress, (size_t)a->n_suppress * sizeof *a->suppress) == 0);
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int logit_filters_suppress_set(const struct wc_vocab *v, const int32_t *non_speech, int n_non,
                               const int32_t *extra, int n_extra, int32_t **out) {
    int32_t *s = malloc(((size_t)(non_speech ? n_non : 0) + (size_t)n_extra + 6) * sizeof *s);
    if (!s)
        return -1;
    int n = 0;
    for (int i = 0; i < n_extra; i++)
        s[n++] = extra[i];
    for (int i = 0; non_speech && i < n_non; i++)
        s[n++] = non_speech[i];
    s[n++] = v->transcribe;
    s[n++] = v->translate;
    s[n++] = v->sot;
    s[n++] = v->sot_prev;
    s[n++] = v->sot_lm;
    s[n++] = v->no_speech; /* its probability is collected separately */
    qsort(s, (size_t)n, sizeof *s, cmp_i32);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || s[m - 1] != s[i])
            s[m++] = s[i];
    *out = s;
    return m;
}

int logit_filters_regex_set(const struct wc_vocab *v, const char *regex, int32_t **out, char *err,
                            size_t err_size) {
    *out = NULL;
    /* Bytes, as whisper.cpp's std::regex on std::string: the C locale, whatever the host
     * program's (a token may be part of a UTF-8 character); uselocale is the thread's own. */
    locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (c_locale == (locale_t)0)
        return -1;
    locale_t old = uselocale(c_locale);
    regex_t re;
    int rc = regcomp(&re, regex, REG_EXTENDED);
    if (rc) {
        char why[160];
        regerror(rc, &re, why, sizeof why);
        snprintf(err, err_size, "suppress_regex '%s': %s", regex, why);
        uselocale(old);
        freelocale(c_locale);
        return -2;
    }
    int n = 0, cap = 0;
    int32_t *ids = NULL;
    for (int id = 0; id < v->eot && id < v->n_vocab; id++) {
        /* whisper.cpp's std::regex_match: the whole token, NUL bytes included. POSIX picks
         * the longest of the leftmost matches, so a match of the whole is found if any is. */
        regmatch_t m = {.rm_so = 0, .rm_eo = v->text_len[id]};
        if (regexec(&re, v->text[id], 1, &m, REG_STARTEND) != 0 || m.rm_so != 0 ||
            m.rm_eo != v->text_len[id])
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            int32_t *grown = realloc(ids, (size_t)cap * sizeof *ids);
            if (!grown) {
                free(ids);
                n = -1;
                break;
            }
            ids = grown;
        }
        ids[n++] = id;
    }
    regfree(&re);
    uselocale(old);
    freelocale(c_locale);
    *out = n < 0 ? NULL : ids;
    return n;
}
