/*
 * writers_json.c — FILE.json. -oj: openai-whisper's transcribe() result (text, language,
 * segments with id, start, end, text, tokens (ids), temperature, avg_logprob,
 * compression_ratio, no_speech_prob, and words [{word, start, end, probability}] with word
 * timestamps), plus token_probs. -ojf (json_full) adds the model and the decoding parameters,
 * and its tokens are records {id, text, p, t0, t1} (as whisper.cpp's -ojf; t_dtw too with -dtw).
 * Times in seconds; null where there is none (a token time without alignment) or a number JSON
 * cannot hold (a disabled threshold, -inf). Strings go through batch_json.c's quoting (valid
 * UTF-8 out for any input).
 *
 * Beside them, whisper.cpp's -oj/-ojf sections, so that a script written for whisper.cpp's
 * JSON reads the same file: "systeminfo", its keys in "model" (vocab, audio and text
 * {ctx, state, head, layer}, mels, ftype) and "params" (model, language, translate), "result"
 * {language} and "transcription" [{timestamps {from, to} "hh:mm:ss,mmm", offsets {from, to} in
 * ms, text, -ojf: tokens [{text, timestamps, offsets (where timed), id, p, t_dtw}] with the
 * tokens that split a UTF-8 character merged, -di: speaker}].
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "batch_json.h"
#include "writers.h"

static void num(struct sbuf *b, const char *fmt, double v) {
    if (isfinite(v))
        sbuf_printf(b, fmt, v);
    else
        sbuf_adds(b, "null");
}

static void seconds(struct sbuf *b, int64_t ms) {
    if (ms < 0)
        sbuf_adds(b, "null");
    else
        sbuf_printf(b, "%.3f", (double)ms / 1000.0);
}

static void key_string(struct sbuf *b, const char *key, const char *v) {
    sbuf_printf(b, "\"%s\": ", key);
    if (v)
        json_add_string(b, v);
    else
        sbuf_adds(b, "null");
}

static void words(struct sbuf *b, const struct tr_segment *s) {
    sbuf_adds(b, ", \"words\": [");
    for (int j = 0; j < s->n_words; j++) {
        const struct tr_word *w = &s->words[j];
        sbuf_adds(b, j ? ", {" : "{");
        key_string(b, "word", w->text);
        sbuf_adds(b, ", \"start\": ");
        seconds(b, w->t0_ms);
        sbuf_adds(b, ", \"end\": ");
        seconds(b, w->t1_ms);
        sbuf_adds(b, ", \"probability\": ");
        num(b, "%.6f", w->p);
        sbuf_adds(b, "}");
    }
    sbuf_adds(b, "]");
}

/* with_dtw: whisper.cpp's t_dtw too, where the alignment enters a text token in centiseconds
 * of the input (-1 for a timestamp token, as whisper.cpp's for any id >= <|endoftext|>). */
static void token_records(struct sbuf *b, const struct tr_segment *s, bool with_dtw) {
    sbuf_adds(b, ", \"tokens\": [");
    for (int j = 0; j < s->n_tokens; j++) {
        const struct tr_token *t = &s->tokens[j];
        sbuf_printf(b, "%s{\"id\": %d, ", j ? ",\n       " : "\n       ", t->id);
        key_string(b, "text", t->text);
        sbuf_adds(b, ", \"p\": ");
        num(b, "%.6f", t->p);
        sbuf_adds(b, ", \"t0\": ");
        seconds(b, t->t0_ms);
        sbuf_adds(b, ", \"t1\": ");
        seconds(b, t->t1_ms);
        if (with_dtw)
            sbuf_printf(b, ", \"t_dtw\": %lld",
                        t->timestamp || t->t0_ms < 0 ? -1LL : (long long)((t->t0_ms + 5) / 10));
        sbuf_adds(b, "}");
    }
    sbuf_adds(b, "]");
}

static void segment(struct sbuf *b, const struct transcript *tr, int i, bool full, bool with_dtw) {
    const struct tr_segment *s = &tr->segments[i];
    sbuf_printf(b, "    {\"id\": %d, \"seek\": %d, \"start\": ", i, s->seek);
    seconds(b, s->t0_ms);
    sbuf_adds(b, ", \"end\": ");
    seconds(b, s->t1_ms);
    sbuf_adds(b, ", ");
    key_string(b, "text", s->text);
    if (full) {
        token_records(b, s, with_dtw);
    } else {
        sbuf_adds(b, ", \"tokens\": [");
        for (int j = 0; j < s->n_tokens; j++)
            sbuf_printf(b, "%s%d", j ? ", " : "", s->tokens[j].id);
        sbuf_adds(b, "], \"token_probs\": [");
        for (int j = 0; j < s->n_tokens; j++) {
            sbuf_adds(b, j ? ", " : "");
            num(b, "%.4f", s->tokens[j].p);
        }
        sbuf_adds(b, "]");
    }
    sbuf_adds(b, ", \"temperature\": ");
    num(b, "%.1f", s->temperature);
    sbuf_adds(b, ", \"avg_logprob\": ");
    num(b, "%.6f", s->avg_logprob);
    sbuf_adds(b, ", \"compression_ratio\": ");
    num(b, "%.6f", s->compression_ratio);
    sbuf_adds(b, ", \"no_speech_prob\": ");
    num(b, "%.6f", s->no_speech_prob);
    if (tr->diarized)
        sbuf_printf(b, ", \"speaker\": \"%s\"", cli_speaker_label(s->speaker, true));
    if (tr->has_words)
        words(b, s);
    sbuf_adds(b, "}");
}

static void model_info(struct sbuf *b, const struct run_info *ri) {
    const struct whisperc_model_dims *d = &ri->dims;
    sbuf_printf(b, "  \"systeminfo\": \"WHISPER_C = %s | BACKEND = %s\",\n", whisperc_version(),
                ri->backend ? ri->backend : "?");
    sbuf_adds(b, "  \"model\": {");
    key_string(b, "path", ri->model_path);
    sbuf_adds(b, ", ");
    key_string(b, "type", ri->model_type);
    sbuf_printf(b, ", \"multilingual\": %s, \"n_vocab\": %d, \"n_mels\": %d, ",
                ri->multilingual ? "true" : "false", d->n_vocab, d->n_mels);
    key_string(b, "backend", ri->backend);
    /* whisper.cpp's */
    sbuf_printf(b,
                ", \"vocab\": %d, \"audio\": {\"ctx\": %d, \"state\": %d, \"head\": %d, "
                "\"layer\": %d}, \"text\": {\"ctx\": %d, \"state\": %d, \"head\": %d, \"layer\": "
                "%d}, \"mels\": %d, \"ftype\": %d},\n",
                d->n_vocab, d->n_audio_ctx, d->n_audio_state, d->n_audio_head, d->n_audio_layer,
                d->n_text_ctx, d->n_text_state, d->n_text_head, d->n_text_layer, d->n_mels,
                d->ftype);
}

/* -oj: whisper.cpp's three; -ojf: every decoding parameter besides */
static void params(struct sbuf *b, const struct run_info *ri, bool full) {
    const struct whisperc_full_params *p = ri->params;
    sbuf_adds(b, "  \"params\": {");
    key_string(b, "model", ri->model_path);
    if (!full) {
        sbuf_adds(b, ", ");
        key_string(b, "language", p->language ? p->language : "auto");
        sbuf_printf(b, ", \"translate\": %s},\n", p->translate ? "true" : "false");
        return;
    }
    sbuf_printf(b, ", \"strategy\": \"%s\", \"beam_size\": %d, \"best_of\": %d, ",
                p->strategy == WHISPERC_SAMPLING_BEAM_SEARCH ? "beam_search" : "greedy",
                p->beam_size, p->best_of);
    sbuf_printf(b, "\"n_threads\": %d, \"seed\": %llu, ", p->n_threads,
                (unsigned long long)p->seed);
    key_string(b, "language", p->language);
    sbuf_printf(b, ", \"translate\": %s, \"no_timestamps\": %s, \"temperatures\": [",
                p->translate ? "true" : "false", p->no_timestamps ? "true" : "false");
    for (int i = 0; i < p->n_temperatures && i < WHISPERC_MAX_TEMPERATURES; i++) {
        sbuf_adds(b, i ? ", " : "");
        num(b, "%.2f", p->temperatures[i]);
    }
    sbuf_adds(b, "], \"compression_ratio_threshold\": ");
    num(b, "%.3f", p->compression_ratio_threshold);
    sbuf_adds(b, ", \"logprob_threshold\": ");
    num(b, "%.3f", p->logprob_threshold);
    sbuf_adds(b, ", \"no_speech_threshold\": ");
    num(b, "%.3f", p->no_speech_threshold);
    sbuf_printf(b, ", \"condition_on_previous_text\": %s, ",
                p->condition_on_previous_text ? "true" : "false");
    key_string(b, "initial_prompt", p->initial_prompt);
    sbuf_adds(b, ", ");
    key_string(b, "prefix", p->prefix);
    sbuf_adds(b, ", ");
    key_string(b, "hotwords", p->hotwords);
    sbuf_printf(b, ", \"max_context\": %d, \"word_timestamps\": %s, ", p->max_context,
                p->word_timestamps ? "true" : "false");
    key_string(b, "alignment_heads", p->alignment_heads ? p->alignment_heads : "auto");
    sbuf_printf(b, ", \"max_len\": %d, \"split_on_word\": %s", p->max_len,
                p->split_on_word ? "true" : "false");
    sbuf_printf(b, ", \"offset_ms\": %d, \"duration_ms\": %d", p->offset_ms, p->duration_ms);
    /* openai-whisper's spelling: -1 the non-speech set */
    sbuf_printf(b, ", \"suppress_tokens\": [%s", p->suppress_non_speech ? "-1" : "");
    for (int i = 0; i < p->n_suppress_tokens; i++)
        sbuf_printf(b, "%s%d", i || p->suppress_non_speech ? ", " : "", (int)p->suppress_tokens[i]);
    sbuf_adds(b, "], ");
    key_string(b, "suppress_regex", p->suppress_regex);
    sbuf_printf(b, ", \"diarize\": %s, \"dtw_token_timestamps\": %s},\n",
                p->diarize ? "true" : "false", p->dtw_token_timestamps ? "true" : "false");
}

/* whisper.cpp's "timestamps" and "offsets" of a span */
static void cpp_times(struct sbuf *b, int64_t t0_ms, int64_t t1_ms) {
    char from[32], to[32];
    sbuf_printf(b, "\"timestamps\": {\"from\": \"%s\", \"to\": \"%s\"}, ",
                format_timestamp(from, t0_ms, ','), format_timestamp(to, t1_ms, ','));
    sbuf_printf(b, "\"offsets\": {\"from\": %lld, \"to\": %lld}, ",
                (long long)(t0_ms > 0 ? t0_ms : 0), (long long)(t1_ms > 0 ? t1_ms : 0));
}

/* Bytes still missing from the last UTF-8 character of s (0 when it is whole). */
static int utf8_missing(const char *s) {
    size_t n = strlen(s);
    for (size_t k = 1; k <= 4 && k <= n; k++) {
        unsigned char c = (unsigned char)s[n - k];
        if ((c & 0xc0) == 0x80)
            continue;
        int need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        return need > (int)k ? need - (int)k : 0;
    }
    return 0;
}

/* -ojf's tokens, as whisper.cpp's: those that split a character merged into one record */
static void cpp_tokens(struct sbuf *b, const struct tr_segment *s, bool with_dtw) {
    sbuf_adds(b, ", \"tokens\": [");
    struct sbuf text = {0};
    for (int j = 0, n = 0; j < s->n_tokens; n++) {
        const struct tr_token *t = &s->tokens[j];
        int64_t t1 = t->t1_ms;
        text.n = 0;
        sbuf_adds(&text, t->text ? t->text : "");
        for (j++; j < s->n_tokens && !text.oom && utf8_missing(text.p) > 0; j++) {
            sbuf_adds(&text, s->tokens[j].text ? s->tokens[j].text : "");
            t1 = s->tokens[j].t1_ms >= 0 ? s->tokens[j].t1_ms : t1;
        }
        sbuf_adds(b, n ? ",\n       {" : "\n       {");
        key_string(b, "text", text.oom ? "" : text.p);
        sbuf_adds(b, ", ");
        if (t->t0_ms >= 0 && t1 >= 0)
            cpp_times(b, t->t0_ms, t1);
        sbuf_printf(b, "\"id\": %d, \"p\": ", t->id);
        num(b, "%g", t->p);
        sbuf_printf(b, ", \"t_dtw\": %lld}",
                    !with_dtw || t->timestamp || t->t0_ms < 0 ? -1LL
                                                              : (long long)((t->t0_ms + 5) / 10));
    }
    b->oom |= text.oom;
    sbuf_free(&text);
    sbuf_adds(b, "]");
}

static void cpp_transcription(struct sbuf *b, const struct transcript *tr, bool full,
                              bool with_dtw) {
    sbuf_adds(b, "  \"result\": {");
    key_string(b, "language", tr->language);
    sbuf_adds(b, "},\n  \"transcription\": [\n");
    for (int i = 0; i < tr->n_segments; i++) {
        const struct tr_segment *s = &tr->segments[i];
        sbuf_adds(b, "    {");
        cpp_times(b, s->t0_ms, s->t1_ms);
        key_string(b, "text", s->text);
        if (full)
            cpp_tokens(b, s, with_dtw);
        if (tr->diarized)
            sbuf_printf(b, ", \"speaker\": \"%s\"", cli_speaker_label(s->speaker, true));
        sbuf_adds(b, i + 1 < tr->n_segments ? "},\n" : "}\n");
    }
    sbuf_adds(b, "  ]\n");
}

int write_json(FILE *f, const struct transcript *tr, const struct writer_opts *wo) {
    struct sbuf b = {0};
    const bool full = wo->json_full;
    const bool with_dtw =
        full && wo->run && wo->run->params && wo->run->params->dtw_token_timestamps;
    sbuf_adds(&b, "{\n");
    if (wo->run) {
        model_info(&b, wo->run);
        if (wo->run->params)
            params(&b, wo->run, full);
    }
    sbuf_adds(&b, "  ");
    key_string(&b, "text", tr->text);
    sbuf_adds(&b, ",\n  ");
    key_string(&b, "language", tr->language);
    sbuf_adds(&b, ",\n  \"language_probability\": ");
    num(&b, "%.6f", tr->language_prob);
    sbuf_adds(&b, ",\n  \"duration\": ");
    num(&b, "%.3f", tr->duration_s);
    sbuf_adds(&b, ",\n  \"segments\": [\n");
    for (int i = 0; i < tr->n_segments; i++) {
        segment(&b, tr, i, full, with_dtw);
        sbuf_adds(&b, i + 1 < tr->n_segments ? ",\n" : "\n");
    }
    sbuf_adds(&b, "  ],\n");
    cpp_transcription(&b, tr, full, with_dtw);
    sbuf_adds(&b, "}\n");
    if (b.oom) {
        sbuf_free(&b);
        errno = ENOMEM;
        return -1;
    }
    fwrite(b.p, 1, b.n, f);
    sbuf_free(&b);
    return 0;
}
