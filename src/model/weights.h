/*
 * weights.h — the model's tensors as a backend holds them, grouped as openai-whisper's modules.
 *
 * Every pointer and wc_mat here is backend memory owned by the backend that uploaded it (freed
 * with the backend); weights_free() only frees the host-side block arrays. Shapes use
 * ModelDimensions names: s = n_audio_state (encoder) or n_text_state (decoder).
 */
#ifndef WC_WEIGHTS_H
#define WC_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"

struct wc_model_file;

struct wc_attn_w {
    struct wc_mat q, k, v, o;     /* [s][s] each */
    const float *q_b, *v_b, *o_b; /* [s]; key has no bias */
};

struct wc_block_w {
    const float *attn_ln_g, *attn_ln_b; /* [s] */
    struct wc_attn_w attn;
    const float *cross_ln_g, *cross_ln_b; /* [s], decoder only */
    struct wc_attn_w cross;               /* decoder only */
    const float *mlp_ln_g, *mlp_ln_b;     /* [s] */
    struct wc_mat mlp0;                   /* [4s][s] */
    const float *mlp0_b;                  /* [4s] */
    struct wc_mat mlp2;                   /* [s][4s] */
    const float *mlp2_b;                  /* [s] */
};

struct wc_weights {
    /* encoder */
    struct wc_mat conv1;    /* [n_audio_state][n_mels][3] */
    const float *conv1_b;   /* [n_audio_state] */
    struct wc_mat conv2;    /* [n_audio_state][n_audio_state][3] */
    const float *conv2_b;   /* [n_audio_state] */
    const float *enc_pos;   /* [n_audio_ctx][n_audio_state] sinusoids */
    struct wc_block_w *enc; /* [n_audio_layer], host array */
    const float *ln_post_g, *ln_post_b;
    /* decoder */
    struct wc_mat tok_emb;  /* [n_vocab][n_text_state], also the output projection */
    const float *dec_pos;   /* [n_text_ctx][n_text_state] learned */
    struct wc_block_w *dec; /* [n_text_layer], host array */
    const float *dec_ln_g, *dec_ln_b;
};

/* Uploads every tensor of a validated model file; quantized matrices as their blocks when
 * keep_quant and the backend holds them (ops->holds_quant), widened to f16 otherwise (the
 * same values). Returns 0 or a WHISPERC_ERR_* code. */
int weights_upload(struct wc_weights *w, struct wc_backend *be, const struct wc_model_file *f,
                   bool keep_quant, char *err, size_t err_size);
void weights_free(struct wc_weights *w);

#endif /* WC_WEIGHTS_H */
