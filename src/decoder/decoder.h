/*
 * decoder.h — Whisper's text decoder (openai-whisper model.py TextDecoder) over backend ops,
 * with a self-attention KV cache and cross-attention K/V computed once per 30 s window.
 *
 * Usage per window: decoder_set_audio(encoder output); decoder_reset(); then
 * decoder_forward() with the initial tokens (one batch), then one token at a time. Each call
 * appends its tokens' keys and values to the cache at positions n_past …
 */
#ifndef WC_DECODER_H
#define WC_DECODER_H

#include <stdint.h>

#include "backend.h"
#include "model/model_file.h"
#include "model/weights.h"

struct decoder {
    const struct wc_hparams *hp;
    const struct wc_weights *w;
    int n_past; /* tokens whose K/V are in the cache */
    /* backend memory, owned */
    float *k_cache, *v_cache; /* [n_text_layer][n_text_ctx][s] */
    float *xk, *xv;           /* [n_text_layer][n_audio_ctx][s] cross-attention K/V */
    float *x, *h, *q, *att;   /* [n_text_ctx][s] */
    float *mlp;               /* [n_text_ctx][4s] */
    float *logits;            /* [WC_DEC_MAX_LOGIT_ROWS][n_vocab] */
};

#define WC_DEC_MAX_LOGIT_ROWS 2

int decoder_init(struct decoder *d, struct wc_stream *s, const struct wc_hparams *hp,
                 const struct wc_weights *w);
void decoder_free(struct decoder *d, struct wc_stream *s);

/* Cross-attention keys and values of every layer from the encoder output [n_audio_ctx][s]. */
void decoder_set_audio(struct decoder *d, struct wc_stream *s, const float *audio_features);

static inline void decoder_reset(struct decoder *d) { d->n_past = 0; }

/* Runs tokens[0..n) at positions n_past.. and appends them to the cache. For each of the
 * n_rows row indices in rows[] (0 <= rows[i] < n, at most WC_DEC_MAX_LOGIT_ROWS), writes that
 * token's logits [n_vocab] to logits_host + i*n_vocab. Returns the stream's error (0 = ok). */
int decoder_forward(struct decoder *d, struct wc_stream *s, const int32_t *tokens, int n,
                    const int *rows, int n_rows, float *logits_host);

#endif /* WC_DECODER_H */
