/*
 * decode_window.h — decode one 30 s window at one temperature: openai-whisper decoding.py
 * DecodingTask.run with n_group = 1 (greedy at T = 0, one sample at T > 0), returning the
 * sampled tokens, their log-probabilities, avg_logprob, no_speech_prob and compression ratio.
 */
#ifndef WC_DECODE_WINDOW_H
#define WC_DECODE_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

struct decoder;
struct wc_stream;
struct wc_vocab;
struct logit_filters;

struct decode_opts {
    float temperature;
    int sample_len;               /* max tokens to sample */
    const int32_t *prompt;        /* previous text (DecodingOptions.prompt), may be NULL */
    int n_prompt;
    const int32_t *sot_sequence;  /* sot [, language, task] [, no_timestamps] */
    int n_sot_sequence;
    const struct logit_filters *filters;
    struct wc_rng *rng; /* used when temperature > 0 */
};

struct decode_result {
    int32_t *tokens; /* sampled tokens before EOT, owned (decode_result_free) */
    float *logprobs; /* log-probability of each token when it was sampled */
    int n_tokens;
    double sum_logprob;
    double avg_logprob;
    double no_speech_prob;
    double compression_ratio;
    float temperature;
    int n_steps; /* decoder forward calls made */
    char *text;  /* decode(tokens).strip(), owned */
};

/* The decoder must hold this window's audio (decoder_set_audio). logits: host scratch of
 * 2 * n_vocab floats. Returns 0 or a WHISPERC_ERR_* code (message in the stream). */
int decode_window(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v,
                  const struct decode_opts *o, float *logits, struct decode_result *r);
void decode_result_free(struct decode_result *r);

/* len(utf8) / len(zlib.compress(utf8)), as openai-whisper utils.compression_ratio. */
double compression_ratio(const char *text);

/* Language identification as decoding.py detect_language: logits after <|startoftranscript|>
 * restricted to the language tokens, softmax. probs[i] for language index i < n_languages.
 * Returns the most probable language index, or -1 on error. */
int detect_language(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v,
                    float *logits, float *probs);

#endif /* WC_DECODE_WINDOW_H */
