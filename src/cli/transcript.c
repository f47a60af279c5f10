/* transcript.c — see transcript.h. */
#include "transcript.h"

#include <stdlib.h>
#include <string.h>

static int fill_segment(struct tr_segment *s, const whisperc_state *st, int i, bool words) {
    s->text = whisperc_segment_text(st, i);
    s->t0_ms = whisperc_segment_t0_ms(st, i);
    s->t1_ms = whisperc_segment_t1_ms(st, i);
    s->seek = whisperc_segment_seek(st, i);
    s->temperature = whisperc_segment_temperature(st, i);
    s->avg_logprob = whisperc_segment_avg_logprob(st, i);
    s->compression_ratio = whisperc_segment_compression_ratio(st, i);
    s->no_speech_prob = whisperc_segment_no_speech_prob(st, i);
    s->speaker = whisperc_segment_speaker(st, i);
    int ts_begin = whisperc_token_timestamp_begin(st);
    s->n_tokens = whisperc_segment_n_tokens(st, i);
    s->tokens = calloc((size_t)s->n_tokens + 1, sizeof *s->tokens);
    if (!s->tokens)
        return -1;
    for (int j = 0; j < s->n_tokens; j++) {
        struct tr_token *t = &s->tokens[j];
        t->id = whisperc_segment_token_id(st, i, j);
        t->text = whisperc_token_text(st, t->id);
        t->p = whisperc_segment_token_p(st, i, j);
        t->t0_ms = whisperc_segment_token_t0_ms(st, i, j);
        t->t1_ms = whisperc_segment_token_t1_ms(st, i, j);
        t->timestamp = t->id >= ts_begin;
        if (!t->text)
            t->text = "";
    }
    if (!words)
        return 0;
    s->n_words = whisperc_segment_n_words(st, i);
    s->words = calloc((size_t)s->n_words + 1, sizeof *s->words);
    if (!s->words)
        return -1;
    for (int j = 0; j < s->n_words; j++) {
        struct tr_word *w = &s->words[j];
        w->text = whisperc_word_text(st, i, j);
        w->t0_ms = whisperc_word_t0_ms(st, i, j);
        w->t1_ms = whisperc_word_t1_ms(st, i, j);
        w->p = whisperc_word_p(st, i, j);
        if (!w->text)
            w->text = "";
    }
    return 0;
}

int cli_transcript_from_state(struct transcript *tr, const whisperc_state *st, bool has_words) {
    memset(tr, 0, sizeof *tr);
    struct whisperc_timings tm = {.size = sizeof tm};
    whisperc_state_timings(st, &tm);
    tr->text = whisperc_full_text(st) ? whisperc_full_text(st) : "";
    tr->language = whisperc_full_language(st) ? whisperc_full_language(st) : "";
    tr->language_prob = whisperc_full_language_prob(st);
    tr->duration_s = tm.audio_seconds;
    tr->has_words = has_words;
    int n = whisperc_n_segments(st);
    tr->segments = calloc((size_t)n + 1, sizeof *tr->segments);
    if (!tr->segments)
        return -1;
    tr->n_segments = n;
    for (int i = 0; i < n; i++) {
        tr->segments[i].text = "";
        if (fill_segment(&tr->segments[i], st, i, has_words) != 0) {
            cli_transcript_free(tr);
            return -1;
        }
        if (!tr->segments[i].text)
            tr->segments[i].text = "";
        tr->diarized |= tr->segments[i].speaker != -2;
    }
    return 0;
}

const char *cli_speaker_label(int speaker, bool id_only) {
    if (id_only)
        return speaker == 0 ? "0" : speaker == 1 ? "1" : "?";
    return speaker == 0 ? "(speaker 0)" : speaker == 1 ? "(speaker 1)" : "(speaker ?)";
}

void cli_transcript_free(struct transcript *tr) {
    for (int i = 0; i < tr->n_segments; i++) {
        free(tr->segments[i].tokens);
        free(tr->segments[i].words);
    }
    free(tr->segments);
    memset(tr, 0, sizeof *tr);
}
