/*
 * transcribe.c — see transcribe.h. Mirrors openai-whisper transcribe.py transcribe() with
 * clip_timestamps "0" and no hallucination_silence_threshold; word timestamps (word_timing.c)
 * and carry_initial_prompt as there.
 */
#include "decoder/transcribe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "decoder/decode_window.h"
#include "decoder/decoder.h"
#include "decoder/logit_filters.h"
#include "decoder/segment_wrap.h"
#include "decoder/word_split.h"
#include "decoder/word_timing.h"
#include "encoder/encoder.h"
#include "frontend/mel.h"
#include "model/languages.h"
#include "model/model_file.h"
#include "model/vocab.h"
#include "util.h"

#define INPUT_STRIDE   2    /* mel frames per audio token */
#define TIME_PRECISION 0.02 /* seconds per audio token */

/* Per-run working memory. */
struct run {
    struct transcribe_ctx *t;
    const struct mel_spec *mel;
    float *logits; /* host [max(2, n_group)][n_vocab] */
    struct logit_filters lf;
    int32_t *suppress;
    int32_t sot_seq[4];
    int n_sot_seq;
    struct wc_rng rng;
    int32_t *prefix, *hotwords; /* tokenizer.encode(" " + text.strip()), owned; NULL if none */
    int n_prefix, n_hotwords;
    int n_initial_prompt; /* initial_prompt tokens at the head of all_tokens */
    int32_t *prompt_buf;  /* carry_initial_prompt: initial prompt + recent text, owned */
    /* The encoder output and cross K/V hold language detection's window, mel[:, 0:3000]; the
     * first decode window is the same input when the audio is at least 30 s long. */
    bool detected_window_loaded;
    bool align_words; /* word timestamps: aligner set up */
    struct word_aligner aligner;
    char *err;
    size_t err_size;
};

static void segment_words_free(struct wc_segment *s) {
    for (int i = 0; i < s->n_words; i++)
        free(s->words[i].text);
    free(s->words);
    s->words = NULL;
    s->n_words = 0;
}

void segment_free(struct wc_segment *s) {
    free(s->text);
    free(s->tokens);
    free(s->token_p);
    free(s->token_t0);
    free(s->token_t1);
    segment_words_free(s);
}

void transcript_free(struct wc_transcript *t) {
    for (int i = 0; i < t->n_seg; i++)
        segment_free(&t->seg[i]);
    free(t->seg);
    free(t->all_tokens);
    free(t->text);
    memset(t, 0, sizeof *t);
}

static int push_tokens(struct wc_transcript *out, const int32_t *tok, int n) {
    if (n <= 0)
        return 0; /* memcpy from a NULL source is undefined even for 0 bytes */
    if (out->n_all + n > out->cap_all) {
        int cap = out->cap_all ? out->cap_all : 1024;
        while (cap < out->n_all + n)
            cap *= 2;
        int32_t *p = realloc(out->all_tokens, (size_t)cap * sizeof *p);
        if (!p)
            return WHISPERC_ERR_NO_MEMORY;
        out->all_tokens = p;
        out->cap_all = cap;
    }
    memcpy(out->all_tokens + out->n_all, tok, (size_t)n * sizeof *tok);
    out->n_all += n;
    return 0;
}

/* mel[:, seek:seek+size] padded with zeros (pad_or_trim pads with 0, not with the log-Mel of
 * silence) to the window's first n_frames frames, [n_mels][n_frames] at dst. */
static void window_copy(const struct mel_spec *mel, int seek, int size, float *dst, int n_frames) {
    int n_copy = size < n_frames ? size : n_frames;
    for (int m = 0; m < mel->n_mels; m++, dst += n_frames) {
        memcpy(dst, mel->data + (size_t)m * mel->n_frames + seek, (size_t)n_copy * sizeof *dst);
        memset(dst + n_copy, 0, (size_t)(n_frames - n_copy) * sizeof *dst);
    }
}

/* t's encoder free for work on t->s: a batch's pass queued on t->s_enc waited for (its time
 * counted in encode_ms there), its error made t->s's. Returns 0 or that error. */
static int encoder_for_state(struct transcribe_ctx *t) {
    int rc = transcribe_encoder_idle(t);
    if (rc)
        wc_stream_fail(t->s, rc, "%s", t->s_enc->errmsg);
    return rc;
}

/* The window at seek through the encoder (its log-Mel straight into the encoder's input: each
 * pass before ended in a sync) and the cross-attention K/V. */
static int encode_window(struct run *r, int seek, int size) {
    struct transcribe_ctx *t = r->t;
    if (seek == 0 && size == WC_CHUNK_FRAMES && r->detected_window_loaded)
        return 0;
    r->detected_window_loaded = false;
    int rc = encoder_for_state(t);
    if (rc)
        return rc;
    double t0 = wc_now_ms();
    window_copy(r->mel, seek, size, encoder_input(t->enc, 0), 2 * t->hp->n_audio_ctx);
    encoder_forward_input(t->enc, t->s, 1, t->audio_features);
    decoder_set_audio(t->dec, t->s, t->audio_features);
    rc = wc_stream_sync(t->s);
    t->encode_ms += wc_now_ms() - t0;
    t->n_windows++;
    return rc;
}

static bool needs_fallback(const struct whisperc_full_params *p, const struct decode_result *d) {
    bool lp_on = isfinite(p->logprob_threshold);
    bool fallback = false;
    if (p->compression_ratio_threshold > 0 && d->compression_ratio > p->compression_ratio_threshold)
        fallback = true; /* too repetitive */
    if (lp_on && d->avg_logprob < p->logprob_threshold)
        fallback = true; /* too improbable */
    if (d->no_speech_prob > p->no_speech_threshold && lp_on &&
        d->avg_logprob < p->logprob_threshold)
        fallback = false; /* silence */
    return fallback;
}

/* DecodingOptions for temperatures[i_temp]. */
static struct decode_opts window_opts(struct run *r, const int32_t *prompt, int n_prompt,
                                      int i_temp) {
    const struct whisperc_full_params *p = r->t->p;
    return (struct decode_opts){
        .temperature = p->temperatures[i_temp],
        .sample_len = p->sample_len > 0 ? p->sample_len : r->t->hp->n_text_ctx / 2,
        .prompt = prompt,
        .n_prompt = n_prompt,
        .sot_sequence = r->sot_seq,
        .n_sot_sequence = r->n_sot_seq,
        .filters = &r->lf,
        .rng = &r->rng,
        /* as transcribe(): beam search at T = 0 only, best_of at T > 0 only */
        .beam_size = p->strategy == WHISPERC_SAMPLING_BEAM_SEARCH ? p->beam_size : 0,
        /* best_of has no use at T = 0 (decode_n_group), and the batched decoder refuses it
         * there (the CLI's -bo 5 with -bs 1) */
        .best_of = p->temperatures[i_temp] > 0.0f ? p->best_of : 1,
        .patience = p->patience,
        .length_penalty = p->length_penalty,
        .prefix = r->prefix,
        .n_prefix = r->n_prefix,
        .hotwords = r->hotwords,
        .n_hotwords = r->n_hotwords,
        .max_context = p->max_context,
        .abort_fn = p->abort_fn,
        .abort_user = p->abort_user_data,
    };
}

/* decode_with_fallback(): the first temperature from i_first whose result passes, else the
 * last one. With i_first > 0, res holds the result at temperatures[i_first - 1]. */
static int decode_with_fallback(struct run *r, const int32_t *prompt, int n_prompt, int i_first,
                                struct decode_result *res) {
    struct transcribe_ctx *t = r->t;
    double t0 = wc_now_ms();
    int rc = 0;
    for (int i = i_first; i < t->p->n_temperatures; i++) {
        if (i > 0) {
            decode_result_free(res);
            t->n_fallbacks++;
        }
        struct decode_opts o = window_opts(r, prompt, n_prompt, i);
        rc = decode_window(t->dec, t->s, t->vocab, &o, r->logits, res);
        t->n_decode_steps += res->n_steps;
        if (rc || !needs_fallback(t->p, res))
            break;
    }
    t->decode_ms += wc_now_ms() - t0;
    if (rc == WHISPERC_ERR_ABORTED)
        wc_errf(r->err, r->err_size, "aborted by the caller");
    else if (rc)
        wc_errf(r->err, r->err_size, "decoder: %s", t->s->errmsg[0] ? t->s->errmsg : "failed");
    return rc;
}

static int add_segment(struct run *r, struct wc_transcript *out, double start, double end,
                       const struct decode_result *d, int from, int to, int seek) {
    if (out->n_seg == out->cap_seg) {
        int cap = out->cap_seg ? 2 * out->cap_seg : 64;
        struct wc_segment *p = realloc(out->seg, (size_t)cap * sizeof *p);
        if (!p)
            return WHISPERC_ERR_NO_MEMORY;
        out->seg = p;
        out->cap_seg = cap;
    }
    struct wc_segment *s = &out->seg[out->n_seg];
    memset(s, 0, sizeof *s);
    s->t0 = start;
    s->t1 = end;
    s->seek = seek;
    s->temperature = d->temperature;
    s->avg_logprob = (float)d->avg_logprob;
    s->compression_ratio = (float)d->compression_ratio;
    s->no_speech_prob = (float)d->no_speech_prob;
    int n = to - from;
    s->tokens = malloc((size_t)(n > 0 ? n : 1) * sizeof *s->tokens);
    s->token_p = malloc((size_t)(n > 0 ? n : 1) * sizeof *s->token_p);
    /* text of the tokens below EOT (tokenizer.decode drops the rest) */
    s->text = s->tokens ? vocab_decode(r->t->vocab, d->tokens + from, n) : NULL;
    if (!s->tokens || !s->token_p || !s->text) {
        free(s->tokens);
        free(s->token_p);
        free(s->text);
        return WHISPERC_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        s->tokens[i] = d->tokens[from + i];
        s->token_p[i] = expf(d->logprobs[from + i]);
    }
    s->n_tokens = n;
    out->n_seg++;
    return 0;
}

/* After a window's segments are cut (and their words timed): an instantaneous or blank
 * segment is kept but emptied, then the tokens join all_tokens (the next window's prompt). */
static int finish_segments(struct wc_transcript *out, int first) {
    int rc = 0;
    for (int i = first; i < out->n_seg && !rc; i++) {
        struct wc_segment *s = &out->seg[i];
        char *stripped = strdup(s->text);
        if (!stripped)
            return WHISPERC_ERR_NO_MEMORY;
        bool blank = wc_py_strip(stripped)[0] == '\0';
        free(stripped);
        if (s->t0 == s->t1 || blank) {
            s->text[0] = '\0';
            s->n_tokens = 0;
            segment_words_free(s);
        }
        rc = push_tokens(out, s->tokens, s->n_tokens);
    }
    return rc;
}

/* Splits a window's tokens into segments at consecutive timestamps and returns the new seek. */
static int split_segments(struct run *r, struct wc_transcript *out, const struct decode_result *d,
                          int seek, int segment_size, int *new_seek, bool *single_ending_out) {
    int tb = r->t->vocab->timestamp_begin, n = d->n_tokens, rc = 0;
    const int32_t *tok = d->tokens;
    double time_offset = (double)(seek * 160) / 16000.0; /* seek * HOP_LENGTH / SAMPLE_RATE */
    /* timestamp_tokens[-2:] == [False, True] */
    bool single_ending = n >= 2 && tok[n - 2] < tb && tok[n - 1] >= tb;
    *single_ending_out = single_ending;

    int last_slice = 0, n_consecutive = 0;
    for (int i = 1; i < n && !rc; i++) {
        if (tok[i - 1] >= tb && tok[i] >= tb) { /* consecutive timestamps end a segment */
            rc = add_segment(r, out, time_offset + (tok[last_slice] - tb) * TIME_PRECISION,
                             time_offset + (tok[i - 1] - tb) * TIME_PRECISION, d, last_slice, i,
                             seek);
            last_slice = i;
            n_consecutive++;
        }
    }
    if (rc)
        return rc;
    if (n_consecutive > 0) {
        if (single_ending) {
            rc = add_segment(r, out, time_offset + (tok[last_slice] - tb) * TIME_PRECISION,
                             time_offset + (tok[n - 1] - tb) * TIME_PRECISION, d, last_slice, n,
                             seek);
            *new_seek = seek + segment_size; /* no speech after the last timestamp */
        } else {
            /* ignore the unfinished segment and seek to the last timestamp */
            *new_seek = seek + (tok[last_slice - 1] - tb) * INPUT_STRIDE;
        }
        return rc;
    }
    double duration = (double)(segment_size * 160) / 16000.0;
    int last_ts = -1;
    for (int i = 0; i < n; i++)
        if (tok[i] >= tb)
            last_ts = tok[i];
    if (last_ts >= 0 && last_ts != tb)
        duration = (last_ts - tb) * TIME_PRECISION; /* a timestamp but no pair: use the last */
    *new_seek = seek + segment_size;
    return add_segment(r, out, time_offset, time_offset + duration, d, 0, n, seek);
}

/* tokenizer.encode(" " + text.strip()) into *out (malloc'd); 0 tokens and NULL for NULL or "".
 * Returns the count, or -1 when out of memory. */
static int encode_text(const struct wc_vocab *v, const char *text, int32_t **out) {
    *out = NULL;
    if (!text || !text[0])
        return 0;
    size_t len = strlen(text);
    char *buf = malloc(len + 2);
    if (!buf)
        return -1;
    buf[0] = ' ';
    memcpy(buf + 1, text, len + 1);
    wc_py_strip(buf + 1);
    int n = vocab_encode(v, buf, out);
    free(buf);
    return n;
}

/* round(max_initial_timestamp / precision), precision = 30 s / n_audio_ctx; -1: no limit
 * (`if options.max_initial_timestamp:`). Held to the last timestamp token: a larger value
 * (or inf) allows them all, and the index plus the first timestamp's id stays an int. */
static int initial_timestamp_index(float mit, const struct wc_hparams *hp,
                                   const struct wc_vocab *v) {
    if (!(mit > 0))
        return -1;
    double idx = nearbyint(mit / (30.0 / hp->n_audio_ctx)),
           last = v->n_vocab - v->timestamp_begin - 1;
    return idx < last ? (int)idx : (int)last;
}

static int setup(struct run *r, struct wc_transcript *out) {
    struct transcribe_ctx *t = r->t;
    const struct wc_vocab *v = t->vocab;
    const struct whisperc_full_params *p = t->p;
    /* sequences decoded side by side: beams at T = 0, best_of samples at T > 0 */
    int n_group = p->strategy == WHISPERC_SAMPLING_BEAM_SEARCH ? p->beam_size : 1;
    if (p->best_of > n_group)
        n_group = p->best_of;
    int rc = decoder_reserve(t->dec, t->s, n_group);
    if (rc)
        return rc;
    r->logits = malloc((size_t)(n_group > 2 ? n_group : 2) * v->n_vocab * sizeof *r->logits);
    int n_sup = logit_filters_suppress_set(v, p->suppress_non_speech ? t->non_speech : NULL,
                                           t->n_non_speech, t->suppress_extra, t->n_suppress_extra,
                                           &r->suppress);
    if (!r->logits || n_sup < 0)
        return WHISPERC_ERR_NO_MEMORY;
    r->lf = (struct logit_filters){
        .vocab = v,
        .suppress_blank = p->suppress_blank,
        .suppress = r->suppress,
        .n_suppress = n_sup,
        .timestamps = !p->no_timestamps,
        .max_initial_timestamp_index = initial_timestamp_index(p->max_initial_timestamp, t->hp, v),
    };
    int32_t *blank = NULL; /* tokenizer.encode(" ") */
    if (vocab_encode(v, " ", &blank) < 1) {
        free(blank);
        return WHISPERC_ERR_NO_MEMORY;
    }
    r->lf.blank_token = blank[0];
    free(blank);
    r->rng.s = p->seed;
    out->i_language = -1;
    out->language_prob = 1.0f;
    int32_t *tok = NULL;
    int n = encode_text(v, p->initial_prompt, &tok);
    if (n < 0)
        return WHISPERC_ERR_NO_MEMORY;
    rc = push_tokens(out, tok, n);
    free(tok);
    r->n_initial_prompt = n;
    r->n_prefix = encode_text(v, p->prefix, &r->prefix);
    r->n_hotwords = encode_text(v, p->hotwords, &r->hotwords);
    r->prompt_buf = malloc(((size_t)t->hp->n_text_ctx + (size_t)n) * sizeof *r->prompt_buf);
    if (!rc && (r->n_prefix < 0 || r->n_hotwords < 0 || !r->prompt_buf))
        rc = WHISPERC_ERR_NO_MEMORY;
    if (!rc && (p->word_timestamps || p->max_len > 0 || p->dtw_token_timestamps)) {
        rc =
            word_aligner_init(&r->aligner, t->hp, v, t->dec, t->s, p->alignment_heads,
                              p->prepend_punctuations, p->append_punctuations, r->err, r->err_size);
        r->align_words = rc == 0;
        /* dtw_token_timestamps alone: token times, the segments left as decoded */
        r->aligner.tokens_only = !p->word_timestamps && p->max_len == 0;
    }
    return rc;
}

int transcribe_encoder_idle(struct transcribe_ctx *t) {
    if (!t->enc_queued)
        return 0;
    double t0 = wc_now_ms();
    int rc = wc_stream_sync(t->s_enc);
    t->encode_ms += wc_now_ms() - t0;
    t->enc_queued = false;
    return rc;
}

int transcribe_detect_language(struct transcribe_ctx *t, const struct mel_spec *mel, float *logits,
                               float *probs) {
    /* detection sees pad_or_trim(mel, N_FRAMES): the padded log-Mel, not zeros */
    if (encoder_for_state(t))
        return -1;
    double t0 = wc_now_ms();
    encoder_forward(t->enc, t->s, mel->data, mel->n_frames, t->audio_features);
    decoder_set_audio(t->dec, t->s, t->audio_features);
    int lang = wc_stream_sync(t->s) ? -1 : detect_language(t->dec, t->s, t->vocab, logits, probs);
    t->encode_ms += wc_now_ms() - t0;
    t->n_windows++;
    return lang;
}

/* Language (detected on the first 30 s if not given) and the SOT sequence. */
static int choose_language(struct run *r, struct wc_transcript *out) {
    struct transcribe_ctx *t = r->t;
    const struct wc_vocab *v = t->vocab;
    int lang = t->i_language;
    if (v->multilingual && lang < 0) {
        float *probs = malloc((size_t)v->n_languages * sizeof *probs);
        if (!probs)
            return WHISPERC_ERR_NO_MEMORY;
        lang = transcribe_detect_language(t, r->mel, r->logits, probs);
        if (lang >= 0)
            out->language_prob = probs[lang];
        r->detected_window_loaded = lang >= 0;
        free(probs);
        if (lang < 0) {
            wc_errf(r->err, r->err_size, "language detection: %s", t->s->errmsg);
            return t->s->err ? t->s->err : WHISPERC_ERR_BACKEND;
        }
    }
    r->n_sot_seq = 0;
    r->sot_seq[r->n_sot_seq++] = v->sot;
    if (v->multilingual) {
        out->i_language = lang;
        r->sot_seq[r->n_sot_seq++] = v->sot + 1 + lang;
        r->sot_seq[r->n_sot_seq++] = t->p->translate ? v->translate : v->transcribe;
    }
    if (t->p->no_timestamps)
        r->sot_seq[r->n_sot_seq++] = v->no_timestamps;
    r->aligner.on_spaces = words_split_on_spaces(v->multilingual ? lang_code(lang) : NULL);
    return 0;
}

static void run_free(struct run *r) {
    free(r->logits);
    free(r->suppress);
    free(r->prefix);
    free(r->hotwords);
    free(r->prompt_buf);
    if (r->align_words)
        word_aligner_free(&r->aligner);
}

/* carry_initial_prompt: initial_prompt_tokens + all_tokens[max(n_init, reset):][-remaining:]
 * with remaining = n_text_ctx // 2 - 1 - n_init, Python's slicing included (-0: everything). */
static int carried_prompt(struct run *r, const struct wc_transcript *out, int reset_since,
                          const int32_t **prompt) {
    int n_init = r->n_initial_prompt, from = n_init > reset_since ? n_init : reset_since;
    int n_rest = out->n_all - from, remaining = r->t->hp->n_text_ctx / 2 - 1 - n_init;
    int skip = remaining > 0 ? (n_rest > remaining ? n_rest - remaining : 0)
                             : (-remaining < n_rest ? -remaining : n_rest);
    if (n_rest - skip > r->t->hp->n_text_ctx / 2) /* the decoder keeps no more than that */
        skip = n_rest - r->t->hp->n_text_ctx / 2;
    if (n_init > 0) /* all_tokens may be NULL yet: no memcpy from it */
        memcpy(r->prompt_buf, out->all_tokens, (size_t)n_init * sizeof *r->prompt_buf);
    if (n_rest - skip > 0)
        memcpy(r->prompt_buf + n_init, out->all_tokens + from + skip,
               (size_t)(n_rest - skip) * sizeof *r->prompt_buf);
    *prompt = r->prompt_buf;
    return n_init + n_rest - skip;
}

/* Word timestamps for the window's new segments out->seg[first..]; as transcribe() does
 * then, a window that does not end on a lone timestamp resumes after its last word. */
static int time_words(struct run *r, struct wc_transcript *out, int first, int seek0,
                      int segment_size, bool single_ending, int *seek) {
    int n_sot = r->n_sot_seq - (r->t->p->no_timestamps ? 1 : 0); /* tokenizer.sot_sequence */
    int rc = add_word_timestamps(&r->aligner, out->seg + first, out->n_seg - first, r->sot_seq,
                                 n_sot, segment_size, r->err, r->err_size);
    double end, time_offset = (double)(seek0 * 160) / 16000.0;
    if (rc || !segments_get_end(out->seg + first, out->n_seg - first, &end))
        return rc;
    /* only asked-for word timestamps move the seek, as in transcribe(); max_len alone keeps
     * the decoding of a run without it */
    if (r->t->p->word_timestamps && !single_ending && end > time_offset)
        *seek = (int)nearbyint(end * 100.0); /* round(last_word_end * FRAMES_PER_SECOND) */
    r->aligner.last_speech = end;
    return 0;
}

/* ---- one file's transcribe() loop as a state machine (transcribe_job_*) ---- */

struct transcribe_job {
    struct run r;
    struct wc_transcript *out;
    int content_frames, seek, prompt_reset_since, n_initial_prompt;
    /* the current window */
    int segment_size;
    const int32_t *prompt; /* into out->all_tokens or r.prompt_buf */
    int n_prompt;
    int i_temp;               /* the temperature its decoding in hand was made at */
    struct decode_opts retry; /* transcribe_job_retry's options */
};

/* An allocation failed: the stream's message where it has one (which memory, how much: a
 * GPU's device memory), else the host's. */
static void no_memory(struct run *r) {
    const struct wc_stream *s = r->t->s;
    if (s->err == WHISPERC_ERR_NO_MEMORY && s->errmsg[0])
        wc_errf(r->err, r->err_size, "%s", s->errmsg);
    else
        wc_errf(r->err, r->err_size, "out of memory");
}

int transcribe_job_start(struct transcribe_ctx *t, const struct mel_spec *mel,
                         struct wc_transcript *out, char *err, size_t err_size,
                         struct transcribe_job **job) {
    memset(out, 0, sizeof *out);
    struct transcribe_job *j = calloc(1, sizeof *j);
    *job = j;
    if (!j) {
        wc_errf(err, err_size, "out of memory");
        return WHISPERC_ERR_NO_MEMORY;
    }
    j->r = (struct run){.t = t, .mel = mel, .err = err, .err_size = err_size};
    j->out = out;
    j->content_frames = mel->n_frames - WC_CHUNK_FRAMES;
    int rc = setup(&j->r, out);
    if (!rc)
        rc = choose_language(&j->r, out);
    j->n_initial_prompt = out->n_all;
    if (rc == WHISPERC_ERR_NO_MEMORY)
        no_memory(&j->r);
    return rc;
}

bool transcribe_job_done(const struct transcribe_job *j) { return j->seek >= j->content_frames; }

/* The next window's size and prompt. */
static void job_window(struct transcribe_job *j) {
    int left = j->content_frames - j->seek;
    j->segment_size = left < WC_CHUNK_FRAMES ? left : WC_CHUNK_FRAMES;
    j->prompt = j->out->all_tokens + j->prompt_reset_since;
    j->n_prompt = j->out->n_all - j->prompt_reset_since;
    if (j->r.t->p->carry_initial_prompt)
        j->n_prompt = carried_prompt(&j->r, j->out, j->prompt_reset_since, &j->prompt);
}

void transcribe_job_window(struct transcribe_job *j, float *mel_window, int n_frames,
                           struct decode_opts *o) {
    job_window(j);
    /* the caller encodes the window: language detection's encoding in t's decoder is no longer
     * this job's to reuse (a batch detects the next inputs' languages there meanwhile) */
    j->r.detected_window_loaded = false;
    window_copy(j->r.mel, j->seek, j->segment_size, mel_window, n_frames);
    *o = window_opts(&j->r, j->prompt, j->n_prompt, 0);
    j->i_temp = 0;
}

bool transcribe_job_retry(struct transcribe_job *j, struct decode_result *d, int max_group,
                          const struct decode_opts **o) {
    struct transcribe_ctx *t = j->r.t;
    if (j->i_temp + 1 >= t->p->n_temperatures || !needs_fallback(t->p, d))
        return false;
    struct decode_opts next = window_opts(&j->r, j->prompt, j->n_prompt, j->i_temp + 1);
    if (decode_n_group(&next) > max_group)
        return false;
    decode_result_free(d); /* as decode_with_fallback drops each result it does not keep */
    t->n_fallbacks++;
    j->i_temp++;
    j->retry = next;
    *o = &j->retry;
    return true;
}

/* The window's final decoding in: skip silence or cut segments, advance the seek, report. */
static int job_window_end(struct transcribe_job *j, struct decode_result *d) {
    struct run *r = &j->r;
    struct transcribe_ctx *t = r->t;
    const struct whisperc_full_params *p = t->p;
    struct wc_transcript *out = j->out;
    int n_before = out->n_seg, rc = 0;
    /* no voice activity: skip the window unless the text is probable enough */
    bool skip = d->no_speech_prob > p->no_speech_threshold;
    if (isfinite(p->logprob_threshold) && d->avg_logprob > p->logprob_threshold)
        skip = false;
    if (skip) {
        j->seek += j->segment_size;
    } else {
        bool single_ending = false;
        int seek0 = j->seek;
        rc = split_segments(r, out, d, j->seek, j->segment_size, &j->seek, &single_ending);
        if (!rc && r->align_words)
            rc = time_words(r, out, n_before, seek0, j->segment_size, single_ending, &j->seek);
    }
    if (!rc)
        rc = finish_segments(out, n_before);
    if (!rc && p->max_len > 0 && r->align_words)
        rc = wrap_segments(out, n_before, p->max_len, p->split_on_word, t->vocab);
    if (!rc && !skip && (!p->condition_on_previous_text || d->temperature > 0.5f))
        j->prompt_reset_since = out->n_all; /* no prompt after a high temperature */
    decode_result_free(d);
    int done = j->seek < j->content_frames ? j->seek : j->content_frames;
    if (!rc && t->on_window &&
        t->on_window(t->user, out->n_seg - n_before, (int)(100.0 * done / j->content_frames))) {
        rc = WHISPERC_ERR_ABORTED;
        wc_errf(r->err, r->err_size, "aborted by the caller");
    }
    if (rc == WHISPERC_ERR_NO_MEMORY)
        no_memory(r);
    return rc;
}

int transcribe_job_decoded(struct transcribe_job *j, struct decode_result *d) {
    struct run *r = &j->r;
    int rc = 0;
    if (needs_fallback(r->t->p, d) && j->i_temp + 1 < r->t->p->n_temperatures) {
        /* the rest of the fallback runs this window alone, on the state's own decoder, over
         * the batch's K/V of the window where it lends them: no second encoder pass, and the
         * batch's bits (a GPU's batch keeps them in fp16, the decoder's own are fp32) */
        if (!r->t->dec->borrowed_k) {
            rc = encode_window(r, j->seek, j->segment_size);
            if (rc)
                wc_errf(r->err, r->err_size, "encoder: %s", r->t->s->errmsg);
        }
        if (!rc)
            rc = decode_with_fallback(r, j->prompt, j->n_prompt, j->i_temp + 1, d);
    }
    if (rc) {
        decode_result_free(d);
        return rc;
    }
    return job_window_end(j, d);
}

/* One window alone: encode, decode with fallback, then as every window ends. */
static int job_step(struct transcribe_job *j) {
    struct run *r = &j->r;
    job_window(j);
    int rc = encode_window(r, j->seek, j->segment_size);
    if (rc) {
        wc_errf(r->err, r->err_size, "encoder: %s", r->t->s->errmsg);
        return rc;
    }
    struct decode_result d;
    rc = decode_with_fallback(r, j->prompt, j->n_prompt, 0, &d);
    if (rc) {
        decode_result_free(&d);
        return rc;
    }
    return job_window_end(j, &d);
}

int transcribe_job_end(struct transcribe_job *j) {
    struct wc_transcript *out = j->out;
    out->text = vocab_decode_all(j->r.t->vocab, out->all_tokens + j->n_initial_prompt,
                                 out->n_all - j->n_initial_prompt);
    if (out->text)
        return 0;
    wc_errf(j->r.err, j->r.err_size, "out of memory");
    return WHISPERC_ERR_NO_MEMORY;
}

void transcribe_job_free(struct transcribe_job *j) {
    if (!j)
        return;
    run_free(&j->r);
    free(j);
}

int transcribe(struct transcribe_ctx *t, const struct mel_spec *mel, struct wc_transcript *out,
               char *err, size_t err_size) {
    struct transcribe_job *j = NULL;
    int rc = transcribe_job_start(t, mel, out, err, err_size, &j);
    while (!rc && !transcribe_job_done(j))
        rc = job_step(j);
    if (!rc)
        rc = transcribe_job_end(j);
    transcribe_job_free(j);
    return rc;
}
