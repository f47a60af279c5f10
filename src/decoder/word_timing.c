/*
 * word_timing.c — timing.py add_word_timestamps and find_alignment over the decoder (no backend
 * code here). The heuristics after the alignment (median word duration, long words cut at
 * sentence ends and after pauses, segment bounds preferred to over-long words) are the
 * reference's, in its order, so that the words and times match it.
 */
#include "decoder/word_timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder.h"
#include "decoder/dtw.h"
#include "decoder/transcribe.h"
#include "decoder/word_split.h"
#include "libwhisperc.h"
#include "model/vocab.h"
#include "util.h"

#define TOKENS_PER_SECOND 50.0 /* audio tokens (encoder frames) per second */

static const char *const default_prepend = "\"'\xe2\x80\x9c\xc2\xbf([{-";
static const char *const default_append = "\"'.\xe3\x80\x82,\xef\xbc\x8c!\xef\xbc\x81?\xef\xbc\x9f:"
                                          "\xef\xbc\x9a\xe2\x80\x9d)]}\xe3\x80\x81";
static const char *const sentence_end_marks = ".\xe3\x80\x82!\xef\xbc\x81?\xef\xbc\x9f";

int word_aligner_init(struct word_aligner *a, const struct wc_hparams *hp,
                      const struct wc_vocab *vocab, struct decoder *dec, struct wc_stream *s,
                      const char *preset, const char *prepend, const char *append, char *err,
                      size_t err_size) {
    memset(a, 0, sizeof *a);
    a->n_heads = alignment_heads(hp, preset, &a->heads);
    if (a->n_heads == -2) {
        wc_errf(err, err_size, "out of memory");
        return WHISPERC_ERR_NO_MEMORY;
    }
    if (a->n_heads < 0) {
        wc_errf(err, err_size, "alignment heads '%s': not an official model of this shape", preset);
        return WHISPERC_ERR_INVALID_ARG;
    }
    a->hp = hp;
    a->vocab = vocab;
    a->dec = dec;
    a->s = s;
    a->prepend = prepend ? prepend : default_prepend;
    a->append = append ? append : default_append;
    a->on_spaces = true;
    return 0;
}

void word_aligner_free(struct word_aligner *a) {
    free(a->heads);
    a->heads = NULL;
}

/* Python's round(x, 2): the nearest multiple of 0.01 to the exact binary value, ties to even,
 * which is what printf's correctly rounded conversion does. */
static double round2(double x) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f", x);
    return strtod(buf, NULL);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* np.median of the non-zero durations, at most 0.7 s; 0 when there are none */
static double median_duration(const struct wt_word *w, int n) {
    double *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d), med = 0;
    int k = 0;
    if (!d)
        return -1;
    for (int i = 0; i < n; i++)
        if (w[i].end - w[i].start != 0)
            d[k++] = w[i].end - w[i].start;
    if (k > 0) {
        qsort(d, (size_t)k, sizeof *d, cmp_double);
        med = k % 2 ? d[k / 2] : (d[k / 2 - 1] + d[k / 2]) / 2;
    }
    free(d);
    return med < 0.7 ? med : 0.7;
}

/* find_alignment: words (the final EOT's dropped) with start, end and probability. Returns the
 * count (0: nothing to align), or a negative WHISPERC_ERR_* code. */
static int find_alignment(struct word_aligner *a, const int32_t *text, int n_text,
                          const int32_t *sot, int n_sot, int num_frames, struct wt_word **out,
                          double *tok_time) {
    const struct wc_vocab *v = a->vocab;
    int n_tok = n_sot + n_text + 2, n_audio = a->hp->n_audio_ctx, rc = 0, n_jump = 0;
    int n_frames = num_frames / 2 > 0 ? num_frames / 2 : 1;
    *out = NULL;
    if (n_text == 0)
        return 0;
    int32_t *tok = malloc((size_t)n_tok * sizeof *tok);
    float *qk = malloc((size_t)a->n_heads * n_tok * n_audio * sizeof *qk);
    float *p = malloc((size_t)n_text * sizeof *p);
    int *jump = malloc(((size_t)n_text + 1 + n_frames) * sizeof *jump);
    struct wt_word *w = NULL;
    int n_w = 0;
    if (!tok || !qk || !p || !jump) {
        rc = WHISPERC_ERR_NO_MEMORY;
        goto done;
    }
    memcpy(tok, sot, (size_t)n_sot * sizeof *tok);
    tok[n_sot] = v->no_timestamps;
    memcpy(tok + n_sot + 1, text, (size_t)n_text * sizeof *tok);
    tok[n_tok - 1] = v->eot;
    rc = decoder_align(a->dec, a->s, tok, n_tok, a->heads, a->n_heads, qk, n_sot, text, n_text,
                       v->eot, p);
    if (rc)
        goto done;
    if (alignment_dtw(qk, a->n_heads, n_tok, n_audio, n_frames, n_sot, n_text + 1, jump, &n_jump) ||
        (n_w = split_to_words(v, tok + n_sot + 1, n_text + 1, a->on_spaces, &w)) < 0) {
        rc = WHISPERC_ERR_NO_MEMORY;
        goto done;
    }
    for (int k = 0; k <= n_text; k++) /* where the path enters each token's row */
        tok_time[k] = jump[k < n_jump ? k : n_jump - 1] / TOKENS_PER_SECOND;
    /* word_boundaries = [0, cumsum(len(tokens))]; the last word (EOT) only closes the others */
    for (int i = 0, b = 0; i < n_w - 1; i++) {
        int e = b + w[i].n_tokens;
        int jb = b < n_jump ? b : n_jump - 1, je = e < n_jump ? e : n_jump - 1;
        w[i].start = jump[jb] / TOKENS_PER_SECOND;
        w[i].end = jump[je] / TOKENS_PER_SECOND;
        double sum = 0;
        for (int k = b; k < e && k < n_text; k++)
            sum += p[k];
        w[i].prob = sum / (e - b);
        b = e;
    }
    if (n_w >= 1) {
        free(w[n_w - 1].text);
        n_w--;
    }
done:
    free(tok);
    free(qk);
    free(p);
    free(jump);
    if (rc) {
        words_free(w, n_w);
        return -rc;
    }
    *out = w;
    return n_w;
}

/* The per-segment corrections of add_word_timestamps, after s->words are set. */
static void fix_segment_bounds(struct word_aligner *a, struct wc_segment *s, double med,
                               double max_d) {
    struct wc_word *w = s->words;
    int n = s->n_words;
    if (n == 0)
        return;
    /* the first and second word after a pause no longer than twice the median */
    if (w[0].t1 - a->last_speech > med * 4 &&
        (w[0].t1 - w[0].t0 > max_d || (n > 1 && w[1].t1 - w[0].t0 > max_d * 2))) {
        if (n > 1 && w[1].t1 - w[1].t0 > max_d) {
            double boundary = fmax(w[1].t1 / 2, w[1].t1 - max_d);
            w[0].t1 = w[1].t0 = boundary;
        }
        w[0].t0 = fmax(0, w[0].t1 - max_d);
    }
    /* prefer the segment's own timestamps to an over-long first or last word */
    if (s->t0 < w[0].t1 && s->t0 - 0.5 > w[0].t0)
        w[0].t0 = fmax(0, fmin(w[0].t1 - med, s->t0));
    else
        s->t0 = w[0].t0;
    if (s->t1 > w[n - 1].t0 && s->t1 + 0.5 < w[n - 1].t1)
        w[n - 1].t1 = fmax(w[n - 1].t0 + med, s->t1);
    else
        s->t1 = w[n - 1].t1;
    a->last_speech = s->t1;
}

/* Each token's span: a text token from where the path enters its row to where it enters the
 * next one; a timestamp token at its own time; another special where the previous ended. */
static int token_times(struct word_aligner *a, struct wc_segment *s, const double *tok_time,
                       double time_offset) {
    const struct wc_vocab *v = a->vocab;
    s->token_t0 = malloc((size_t)(s->n_tokens > 0 ? s->n_tokens : 1) * sizeof *s->token_t0);
    s->token_t1 = malloc((size_t)(s->n_tokens > 0 ? s->n_tokens : 1) * sizeof *s->token_t1);
    if (!s->token_t0 || !s->token_t1)
        return WHISPERC_ERR_NO_MEMORY;
    double prev = s->t0;
    for (int k = 0, g = 0; k < s->n_tokens; k++) {
        int id = s->tokens[k];
        if (id < v->eot) {
            s->token_t0[k] = round2(time_offset + tok_time[g]);
            s->token_t1[k] = round2(time_offset + tok_time[g + 1]);
            g++;
        } else {
            s->token_t0[k] = s->token_t1[k] =
                id >= v->timestamp_begin ? time_offset + (id - v->timestamp_begin) * 0.02 : prev;
        }
        prev = s->token_t1[k];
    }
    return 0;
}

/* dtw_token_timestamps alone: each segment's token times, n_text[i] text tokens each, and
 * nothing else of the segments changed. */
static int time_tokens_only(struct word_aligner *a, struct wc_segment *seg, int n_seg,
                            const int *n_text, const double *tok_time) {
    double time_offset = (double)(seg[0].seek * 160) / 16000.0;
    for (int i = 0, base = 0; i < n_seg; base += n_text[i++])
        if (token_times(a, &seg[i], tok_time + base, time_offset))
            return WHISPERC_ERR_NO_MEMORY;
    return 0;
}

/* The index in s->tokens of its i-th text token. */
static int text_token_index(const struct wc_segment *s, int eot, int i) {
    for (int k = 0; k < s->n_tokens; k++)
        if (s->tokens[k] < eot && i-- == 0)
            return k;
    return s->n_tokens;
}

/* Hands the aligned words to the segments, n_text[i] text tokens each; tok_time: the start of
 * every text token of the window (and the end of the last). */
static int assign_words(struct word_aligner *a, struct wc_segment *seg, int n_seg,
                        const int *n_text, struct wt_word *w, int n_w, double med,
                        const double *tok_time) {
    double max_d = med * 2, time_offset = (double)(seg[0].seek * 160) / 16000.0;
    int wi = 0, eot = a->vocab->eot;
    for (int i = 0, base = 0; i < n_seg; base += n_text[i++]) {
        struct wc_segment *s = &seg[i];
        s->words = malloc((size_t)(n_w > 0 ? n_w : 1) * sizeof *s->words);
        if (!s->words || token_times(a, s, tok_time + base, time_offset))
            return WHISPERC_ERR_NO_MEMORY;
        for (int saved = 0; wi < n_w && saved < n_text[i]; wi++) {
            if (w[wi].text[0]) {
                s->words[s->n_words++] = (struct wc_word){
                    .text = w[wi].text,
                    .t0 = round2(time_offset + w[wi].start),
                    .t1 = round2(time_offset + w[wi].end),
                    .p = (float)w[wi].prob,
                    .tok0 = text_token_index(s, eot, saved),
                    .tok_end = text_token_index(s, eot, saved + w[wi].n_tokens - 1) + 1,
                };
                w[wi].text = NULL; /* moved */
            }
            saved += w[wi].n_tokens;
        }
        fix_segment_bounds(a, s, med, max_d);
    }
    return 0;
}

int add_word_timestamps(struct word_aligner *a, struct wc_segment *seg, int n_seg,
                        const int32_t *sot, int n_sot, int num_frames, char *err, size_t err_size) {
    if (n_seg == 0)
        return 0;
    int total = 0, rc = 0;
    int *n_text = calloc((size_t)n_seg, sizeof *n_text);
    for (int i = 0; i < n_seg; i++)
        total += seg[i].n_tokens;
    int32_t *text = malloc((size_t)(total > 0 ? total : 1) * sizeof *text);
    if (!n_text || !text) {
        free(n_text);
        free(text);
        wc_errf(err, err_size, "out of memory");
        return WHISPERC_ERR_NO_MEMORY;
    }
    total = 0;
    for (int i = 0; i < n_seg; i++)
        for (int k = 0; k < seg[i].n_tokens; k++)
            if (seg[i].tokens[k] < a->vocab->eot) {
                text[total++] = seg[i].tokens[k];
                n_text[i]++;
            }
    struct wt_word *w = NULL;
    double *tok_time = malloc(((size_t)total + 1) * sizeof *tok_time);
    int n_w = tok_time ? find_alignment(a, text, total, sot, n_sot, num_frames, &w, tok_time)
                       : -WHISPERC_ERR_NO_MEMORY;
    double med = n_w >= 0 ? median_duration(w, n_w) : 0;
    if (n_w < 0 || med < 0) {
        rc = n_w < 0 ? -n_w : WHISPERC_ERR_NO_MEMORY;
        wc_errf(err, err_size, "word timestamps: %s",
                a->s->errmsg[0] ? a->s->errmsg : "out of memory");
        goto done;
    }
    if (a->tokens_only) {
        if (time_tokens_only(a, seg, n_seg, n_text, tok_time)) {
            rc = WHISPERC_ERR_NO_MEMORY;
            wc_errf(err, err_size, "out of memory");
        }
        goto done;
    }
    /* truncate long words at sentence boundaries */
    for (int i = 1; i < n_w && med > 0; i++) {
        if (w[i].end - w[i].start <= med * 2)
            continue;
        if (strstr(sentence_end_marks, w[i].text))
            w[i].end = w[i].start + med * 2;
        else if (strstr(sentence_end_marks, w[i - 1].text))
            w[i].start = w[i].end - med * 2;
    }
    if (merge_punctuations(w, n_w, a->prepend, a->append) ||
        assign_words(a, seg, n_seg, n_text, w, n_w, med, tok_time)) {
        rc = WHISPERC_ERR_NO_MEMORY;
        wc_errf(err, err_size, "out of memory");
    }
done:
    words_free(w, n_w > 0 ? n_w : 0);
    free(tok_time);
    free(n_text);
    free(text);
    return rc;
}

bool segments_get_end(const struct wc_segment *seg, int n_seg, double *end) {
    if (n_seg == 0)
        return false;
    for (int i = n_seg - 1; i >= 0; i--)
        if (seg[i].n_words > 0) {
            *end = seg[i].words[seg[i].n_words - 1].t1;
            return true;
        }
    *end = seg[n_seg - 1].t1;
    return true;
}
