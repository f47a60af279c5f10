/*
 * transcribe.h — long-form transcription as openai-whisper transcribe.py transcribe():
 * 30 s windows over the log-Mel, seeking by the last timestamp, temperature fallback,
 * no-speech skipping, conditioning on previous text, segments with timestamps.
 */
#ifndef WC_TRANSCRIBE_H
#define WC_TRANSCRIBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libwhisperc.h"

struct decoder;
struct encoder;
struct mel_spec;
struct wc_hparams;
struct wc_stream;
struct wc_vocab;

struct wc_word {
    char *text;        /* owned */
    double t0, t1;     /* seconds */
    float p;           /* mean probability of its tokens */
    int tok0, tok_end; /* its tokens: the segment's tokens[tok0 .. tok_end) */
};

struct wc_segment {
    double t0, t1;   /* seconds */
    char *text;      /* owned; "" for cleared (instantaneous or blank) segments */
    int32_t *tokens; /* owned, timestamp tokens included */
    float *token_p;  /* owned, probability of each token when sampled */
    int n_tokens;
    int seek; /* mel frame where its window started */
    float temperature, avg_logprob, compression_ratio, no_speech_prob;
    struct wc_word *words; /* owned, with word timestamps */
    int n_words;
    double *token_t0, *token_t1; /* owned, with word timestamps: each token's span from the
                                    alignment (a timestamp token's own time), else NULL */
};

struct wc_transcript {
    struct wc_segment *seg; /* owned */
    int n_seg, cap_seg;
    int32_t *all_tokens; /* owned: the initial prompt then every segment's tokens */
    int n_all, cap_all;
    char *text;          /* owned: decode(all_tokens after the initial prompt) */
    int i_language;      /* language index (languages.h), -1 for English-only models */
    float language_prob; /* detected probability, 1 when given */
};

void transcript_free(struct wc_transcript *t);
void segment_free(struct wc_segment *s); /* its buffers; the struct itself is the caller's */

struct transcribe_ctx {
    const struct wc_hparams *hp;
    const struct wc_vocab *vocab;
    struct wc_stream *s;
    struct encoder *enc;
    struct decoder *dec;
    float *audio_features; /* backend [enc->n_windows][n_audio_ctx][n_audio_state] */
    /* NULL, or a background stream a batch's encoder passes run on, beside the steps on s
     * (transcribe_batch.c); enc_queued: a pass is queued there, not yet waited for, and owns
     * enc, audio_features and the encoder's host input until transcribe_encoder_idle */
    struct wc_stream *s_enc;
    bool enc_queued;
    const struct whisperc_full_params *p;
    const int32_t *non_speech; /* vocab_non_speech_tokens */
    int n_non_speech;
    const int32_t *suppress_extra; /* more ids never sampled (params' suppress_tokens, regex) */
    int n_suppress_extra;
    int i_language; /* requested language index, -1 to detect (multilingual) */
    /* Called after each window; returns true to abort. */
    bool (*on_window)(void *user, int n_new_segments, int percent);
    void *user;
    /* statistics, accumulated */
    double encode_ms, decode_ms;
    int n_windows, n_decode_steps, n_fallbacks;
    int n_batch_steps; /* transcribe_batch's decoder steps, one for all its lanes */
};

/* Waits for the encoder pass queued on t->s_enc, if any, so that t's encoder is free for
 * another (t->enc_queued false after it). Returns 0 or the error of s_enc, whose message names
 * it. */
int transcribe_encoder_idle(struct transcribe_ctx *t);

/* Transcribes a log-Mel computed over the audio plus 30 s of zero padding (mel_compute with
 * pad 480000). Returns 0 or a WHISPERC_ERR_* code with err filled. */
int transcribe(struct transcribe_ctx *t, const struct mel_spec *mel, struct wc_transcript *out,
               char *err, size_t err_size);

/* ---- the same, one window at a time, for transcribe_batch.c ----
 * transcribe() is: transcribe_job_start; while not transcribe_job_done: transcribe_job_window,
 * decode the window at temperatures[0] (and, while transcribe_job_retry says so, again at the
 * next ones), transcribe_job_decoded; then transcribe_job_end. The
 * job keeps pointers to t, mel and out until transcribe_job_free. */
struct transcribe_job;
struct decode_opts;
struct decode_result;

/* Setup and the language (detected on t's own encoder and decoder if not given). *job is set
 * (free it with transcribe_job_free even on error). Returns 0 or a WHISPERC_ERR_* code, err
 * filled. */
int transcribe_job_start(struct transcribe_ctx *t, const struct mel_spec *mel,
                         struct wc_transcript *out, char *err, size_t err_size,
                         struct transcribe_job **job);
bool transcribe_job_done(const struct transcribe_job *j);
/* The next window: the first n_frames (<= 3000; the encoder's 2 * n_audio_ctx) of its
 * log-Mel, zero-padded, into mel_window [n_mels][n_frames], and its decoding options at
 * temperatures[0] into *o (pointing into the job: valid until the next call). */
void transcribe_job_window(struct transcribe_job *j, float *mel_window, int n_frames,
                           struct decode_opts *o);
/* A batch's way to fall back: if the window's decoding d (at the temperature of the options
 * last given) needs the next temperature, and that decodes at most max_group sequences
 * (decode_n_group), d is freed, the fallback counted, *o points to the options for it (valid
 * until the next call) and true is returned: the caller decodes the window again (its audio
 * as before). Else false, d untouched. */
bool transcribe_job_retry(struct transcribe_job *j, struct decode_result *d, int max_group,
                          const struct decode_opts **o);
/* The window's decoding with those options, consumed (freed). If it still needs a
 * temperature fallback, it is re-decoded alone on t's decoder at the next temperatures: over
 * the cross-attention K/V the decoder borrows (decoder_borrow_audio: the batch's, so the bits
 * are the batch's), else over the window encoded again; then its segments are cut and the seek
 * advanced. Returns 0 or a WHISPERC_ERR_* code, err filled. */
int transcribe_job_decoded(struct transcribe_job *j, struct decode_result *d);
/* The transcript's text, once done. */
int transcribe_job_end(struct transcribe_job *j);
void transcribe_job_free(struct transcribe_job *j); /* NULL is a no-op */

/* Language identification on the first 30 s of the log-Mel, as transcribe() does it: the
 * window is encoded (left in t->audio_features and the decoder's cross-attention) and
 * probs[n_languages] filled. logits: host scratch of 2 * n_vocab floats. Returns the most
 * probable language index, or -1 with the error in t->s. Multilingual models only. */
int transcribe_detect_language(struct transcribe_ctx *t, const struct mel_spec *mel, float *logits,
                               float *probs);

#endif /* WC_TRANSCRIBE_H */
