/*
 * api_results.c — accessors for the results of whisperc_full*() (include/libwhisperc.h).
 * Every index is bounds-checked: out of range gives NULL or 0, never a crash.
 */
#include <string.h>

#include "api_internal.h"
#include "model/languages.h"

/* Segments are readable from the new-segment callback on, before has_result: the transcript
 * only grows during whisperc_full and is emptied when a run fails. */
static const struct wc_segment *segment(const whisperc_state *st, int i) {
    if (!st || i < 0 || i >= st->tr.n_seg)
        return NULL;
    return &st->tr.seg[i];
}

int whisperc_n_segments(const whisperc_state *st) { return st ? st->tr.n_seg : 0; }

const char *whisperc_segment_text(const whisperc_state *st, int i) {
    const struct wc_segment *s = segment(st, i);
    return s ? s->text : NULL;
}

/* Seconds (multiples of 0.02 plus a window offset of 0.01 steps) to whole milliseconds. */
static int64_t to_ms(double seconds) { return (int64_t)(seconds * 1000.0 + 0.5); }

int64_t whisperc_segment_t0_ms(const whisperc_state *st, int i) {
    const struct wc_segment *s = segment(st, i);
    return s ? to_ms(s->t0) : 0;
}

int64_t whisperc_segment_t1_ms(const whisperc_state *st, int i) {
    const struct wc_segment *s = segment(st, i);
    return s ? to_ms(s->t1) : 0;
}

int whisperc_segment_seek(const whisperc_state *st, int i) {
    const struct wc_segment *s = segment(st, i);
    return s ? s->seek : -1;
}

int whisperc_segment_speaker(const whisperc_state *st, int i) {
    const struct wc_segment *s = segment(st, i);
    return s ? audio_louder_channel(&st->loudness, to_ms(s->t0), to_ms(s->t1)) : -2;
}

float whisperc_segment_temperature(const whisperc_state *st, int i) {
    const struct wc_segment *s = segment(st, i);
    return s ? s->temperature : 0.0f;
}

float whisperc_segment_avg_logprob(const whisperc_state *st, int i) {
    const struct wc_segment *s = segment(st, i);
    return s ? s->avg_logprob : 0.0f;
}

float whisperc_segment_compression_ratio(const whisperc_state *st, int i) {
    const struct wc_segment *s = segment(st, i);
    return s ? s->compression_ratio : 0.0f;
}

float whisperc_segment_no_speech_prob(const whisperc_state *st, int i) {
    const struct wc_segment *s = segment(st, i);
    return s ? s->no_speech_prob : 0.0f;
}

int whisperc_segment_n_tokens(const whisperc_state *st, int i) {
    const struct wc_segment *s = segment(st, i);
    return s ? s->n_tokens : 0;
}

int whisperc_segment_token_id(const whisperc_state *st, int i, int j) {
    const struct wc_segment *s = segment(st, i);
    return s && j >= 0 && j < s->n_tokens ? s->tokens[j] : -1;
}

float whisperc_segment_token_p(const whisperc_state *st, int i, int j) {
    const struct wc_segment *s = segment(st, i);
    return s && j >= 0 && j < s->n_tokens ? s->token_p[j] : 0.0f;
}

int64_t whisperc_segment_token_t0_ms(const whisperc_state *st, int i, int j) {
    const struct wc_segment *s = segment(st, i);
    return s && s->token_t0 && j >= 0 && j < s->n_tokens ? to_ms(s->token_t0[j]) : -1;
}

int64_t whisperc_segment_token_t1_ms(const whisperc_state *st, int i, int j) {
    const struct wc_segment *s = segment(st, i);
    return s && s->token_t1 && j >= 0 && j < s->n_tokens ? to_ms(s->token_t1[j]) : -1;
}

static const struct wc_word *word(const whisperc_state *st, int i, int j) {
    const struct wc_segment *s = segment(st, i);
    return s && j >= 0 && j < s->n_words ? &s->words[j] : NULL;
}

int whisperc_segment_n_words(const whisperc_state *st, int i) {
    const struct wc_segment *s = segment(st, i);
    return s ? s->n_words : 0;
}

const char *whisperc_word_text(const whisperc_state *st, int i, int j) {
    const struct wc_word *w = word(st, i, j);
    return w ? w->text : NULL;
}

int64_t whisperc_word_t0_ms(const whisperc_state *st, int i, int j) {
    const struct wc_word *w = word(st, i, j);
    return w ? to_ms(w->t0) : 0;
}

int64_t whisperc_word_t1_ms(const whisperc_state *st, int i, int j) {
    const struct wc_word *w = word(st, i, j);
    return w ? to_ms(w->t1) : 0;
}

float whisperc_word_p(const whisperc_state *st, int i, int j) {
    const struct wc_word *w = word(st, i, j);
    return w ? w->p : 0.0f;
}

const char *whisperc_token_text(const whisperc_state *st, int id) {
    if (!st || id < 0 || id >= st->m->vocab.n_vocab)
        return NULL;
    return st->m->vocab.text[id];
}

int whisperc_token_timestamp_begin(const whisperc_state *st) {
    return st ? st->m->vocab.timestamp_begin : -1;
}

const char *whisperc_full_language(const whisperc_state *st) {
    if (!st || !st->has_result)
        return NULL;
    return st->tr.i_language >= 0 ? lang_code(st->tr.i_language) : "en";
}

float whisperc_full_language_prob(const whisperc_state *st) {
    return st && st->has_result ? st->tr.language_prob : 0.0f;
}

const char *whisperc_full_text(const whisperc_state *st) {
    return st && st->has_result ? st->tr.text : NULL;
}

whisperc_status whisperc_state_timings(const whisperc_state *st, struct whisperc_timings *out) {
    if (!st || !out || out->size < sizeof(size_t))
        return WHISPERC_ERR_INVALID_ARG;
    size_t n = out->size < sizeof st->timings ? out->size : sizeof st->timings;
    memcpy(out, &st->timings, n);
    out->size = n;
    return WHISPERC_OK;
}

int whisperc_lang_count(void) { return WC_N_LANGUAGES; }
const char *whisperc_lang_code(int i) { return lang_code(i); }
const char *whisperc_lang_name(int i) { return lang_name(i); }
int whisperc_lang_index(const char *s) { return s ? lang_index(s) : -1; }
