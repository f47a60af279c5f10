/*
 * decode_window.h — decode one 30 s window at one temperature: openai-whisper decoding.py
 * DecodingTask.run: greedy or beam search at T = 0, best_of samples at T > 0, ranked by
 * MaximumLikelihoodRanker; returns the chosen tokens, their log-probabilities, avg_logprob,
 * no_speech_prob and compression ratio.
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

#define WC_MAX_GROUP 16 /* most beams or best_of samples */

struct decode_opts {
    float temperature;
    int sample_len;        /* max tokens to sample */
    const int32_t *prompt; /* previous text (DecodingOptions.prompt), may be NULL */
    int n_prompt;
    const int32_t *sot_sequence; /* sot [, language, task] [, no_timestamps] */
    int n_sot_sequence;
    const struct logit_filters *filters;
    struct wc_rng *rng;    /* used when temperature > 0 */
    int beam_size;         /* > 0 at temperature 0: beam search with this many beams */
    int best_of;           /* temperature > 0: this many samples (>= 1), the best one is kept */
    float patience;        /* beam search ends with round(beam_size * patience) finished ones */
    float length_penalty;  /* ranking: < 0: sum_logprob / length, else Google NMT's penalty */
    const int32_t *prefix; /* DecodingOptions.prefix: forced after the sot sequence, or NULL */
    int n_prefix;
    const int32_t *hotwords; /* faster-whisper: before the previous text (not with a prefix) */
    int n_hotwords;
    int max_context; /* most previous-text tokens in the prompt; < 0: n_text_ctx / 2 - 1 */
    /* asked before each decoder step after the prompt's: true ends the decoding with
     * WHISPERC_ERR_ABORTED (a window of a large model on a CPU decodes for many seconds, too
     * long to wait for a SIGTERM's abort); NULL: never */
    bool (*abort_fn)(void *user);
    void *abort_user;
};

/* o's abort callback, where it has one. */
static inline bool decode_aborted(const struct decode_opts *o) {
    return o->abort_fn && o->abort_fn(o->abort_user);
}

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

/* Sequences decoded side by side for these options (the decoder must have room for them). */
int decode_n_group(const struct decode_opts *o);

/* The decoder must hold this window's audio (decoder_set_audio, or borrowed:
 * decoder_borrow_audio). logits: host scratch of
 * max(2, decode_n_group(o)) * n_vocab floats. Returns 0 or a WHISPERC_ERR_* code (message in
 * the stream). */
int decode_window(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v,
                  const struct decode_opts *o, float *logits, struct decode_result *r);
void decode_result_free(struct decode_result *r);

/* len(utf8) / len(zlib.compress(utf8)), as openai-whisper utils.compression_ratio. */
double compression_ratio(const char *text);

/* Beam search (beam_search.c); the prompt's logits are in logits[0..n_vocab). */
int beam_search(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v,
                const struct decode_opts *o, float *logits, int sample_begin,
                struct decode_result *r);

/* Shared with decode_batch.c, which must decode exactly as decode_window does. */
/* The prompt, as DecodingTask._get_initial_tokens: out needs 2 * n_text_ctx + 8 tokens;
 * returns the length, *sot_index set. A length past n_text_ctx - 1 (a prefix too long: the
 * caller's error) is returned with the prefix not written. */
int decode_initial_tokens(const struct decode_opts *o, int n_text_ctx, int sample_len,
                          const struct wc_vocab *v, int32_t *out, int *sot_index);
int decode_argmax(const float *x, int n); /* the first maximum, as torch.argmax */
struct hyp;
struct wc_greedy_pick;
struct wc_logit_rule;
/* Greedy's next token for n rows of logits in backend memory ([n][n_vocab], left undefined):
 * row k filtered by lf[k] after the history h[k], through the backend's logits_greedy (one
 * call for every run of rows that share a suppress list: in practice one), so that only the
 * picks cross to the host; rules: room for n rows' rules. Syncs; returns the stream's error. */
int decode_greedy_pick(struct wc_stream *s, float *logits, int n, int n_vocab,
                       const struct logit_filters *const *lf, const struct hyp *const *h,
                       struct wc_logit_rule *rules, struct wc_greedy_pick *out);
/* The same, queued: out is filled by the caller's next sync. */
void decode_greedy_queue(struct wc_stream *s, float *logits, int n, int n_vocab,
                         const struct logit_filters *const *lf, const struct hyp *const *h,
                         struct wc_logit_rule *rules, struct wc_greedy_pick *out);

/* r's text, avg_logprob and compression ratio from its tokens and sum_logprob. */
int decode_result_finish(const struct wc_vocab *v, struct decode_result *r);

/* Language identification as decoding.py detect_language: logits after <|startoftranscript|>
 * restricted to the language tokens, softmax. probs[i] for language index i < n_languages.
 * Returns the most probable language index, or -1 on error. */
int detect_language(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v, float *logits,
                    float *probs);

#endif /* WC_DECODE_WINDOW_H */
