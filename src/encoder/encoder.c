/*
 * encoder.c — the audio encoder as a sequence of backend ops (no backend code here).
 * Mirrors openai-whisper model.py: AudioEncoder.forward and ResidualAttentionBlock.forward,
 * over one or several 30 s windows at once (encoder.h).
 */
#include "encoder/encoder.h"

#include <stdlib.h>
#include <string.h>

#include "libwhisperc.h"

int encoder_pass_cap(void) {
    const char *env = getenv("WHISPERC_ENCODE_MAX_PASS");
    int n = env && *env ? atoi(env) : 0;
    return n >= 1 && n <= ENCODER_PASS_LIMIT ? n : ENCODER_MAX_WINDOWS;
}

size_t encoder_mlp_floats(const struct encoder *e) {
    return (size_t)e->n_windows * (size_t)e->hp->n_audio_ctx * 4 * (size_t)e->hp->n_audio_state;
}

uint64_t encoder_memory_bytes(const struct wc_hparams *hp, int n_windows) {
    uint64_t n_ctx = (uint64_t)hp->n_audio_ctx, c = (uint64_t)hp->n_audio_state;
    uint64_t n_pad = 2 * n_ctx + 2, mels = (uint64_t)hp->n_mels;
    /* per window, as encoder_init below: input (host), mel_in, mel, conv1; x h q k v att;
     * mlp (h counted even where the backend's fused ops leave it out) */
    uint64_t per_window = 4 * n_ctx * mels + n_pad * (mels + c) + 6 * n_ctx * c + 4 * n_ctx * c;
    return per_window * (uint64_t)n_windows * sizeof(float);
}

int encoder_init(struct encoder *e, struct wc_stream *s, const struct wc_hparams *hp,
                 const struct wc_weights *w, int n_windows) {
    const struct wc_backend_ops *op = s->be->ops;
    memset(e, 0, sizeof *e);
    e->hp = hp;
    e->w = w;
    if (n_windows < 1) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "encoder: %d windows", n_windows);
        return s->err;
    }
    size_t n_ctx = (size_t)hp->n_audio_ctx, c = (size_t)hp->n_audio_state;
    size_t n_pad = 2 * n_ctx + 2; /* conv2 has stride 2; a zero row each side */
    size_t B = (size_t)n_windows, rows = B * n_ctx, f = sizeof(float);
    size_t mel_bytes = B * n_pad * (size_t)hp->n_mels * f;
    size_t window_bytes = 2 * n_ctx * (size_t)hp->n_mels * f;
    e->n_windows = n_windows;
    e->mel_in = op->alloc(s, B * window_bytes);
    e->mel = op->alloc(s, mel_bytes);
    e->conv1 = op->alloc(s, B * n_pad * c * f);
    e->x = op->alloc(s, rows * c * f);
    /* the normed rows, where a sub-block is not one fused op (encoder_block) */
    if (!(op->linear_merge_windows && op->norm_qkv && op->norm_mlp))
        e->h = op->alloc(s, rows * c * f);
    e->q = op->alloc(s, rows * c * f);
    e->k = op->alloc(s, rows * c * f);
    e->v = op->alloc(s, rows * c * f);
    e->att = op->alloc(s, rows * c * f);
    e->mlp = op->alloc(s, rows * 4 * c * f);
    e->input = op->host_alloc(s, B * window_bytes);
    if (s->err) {
        encoder_free(e, s);
        return s->err;
    }
    /* the zero rows of mel and conv1 stay zero for the life of the buffers (transpose and
     * conv1d never write them) */
    op->memset0(s, e->mel, mel_bytes);
    op->memset0(s, e->conv1, B * n_pad * c * f);
    return s->err;
}

void encoder_free(struct encoder *e, struct wc_stream *s) {
    const struct wc_backend_ops *op = s->be->ops;
    float **bufs[] = {&e->mel_in, &e->mel, &e->conv1, &e->x,   &e->h,
                      &e->q,      &e->k,   &e->v,     &e->att, &e->mlp};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        if (*bufs[i])
            op->release(s, *bufs[i]);
        *bufs[i] = NULL;
    }
    op->host_free(s, e->input);
    e->input = NULL;
    e->n_windows = 0;
}

/* linear over the rows of n windows: one call where the backend merges windows, else one call
 * per window (the window's bits are then those it gets alone). */
static void enc_linear(const struct encoder *e, struct wc_stream *s, int n, float *out,
                       const float *in, const struct wc_mat *w, const float *b, enum wc_act act,
                       int accumulate) {
    const struct wc_backend_ops *op = s->be->ops;
    int n_ctx = e->hp->n_audio_ctx;
    if (op->linear_merge_windows) {
        op->linear(s, out, 0, in, w, b, n * n_ctx, act, accumulate);
        return;
    }
    size_t in_step = (size_t)n_ctx * (size_t)w->cols, out_step = (size_t)n_ctx * (size_t)w->rows;
    for (int i = 0; i < n; i++)
        op->linear(s, out + i * out_step, 0, in + i * in_step, w, b, n_ctx, act, accumulate);
}

/* x += attn(ln(x)) over n windows; attention sees only its own window. The fused ops take
 * every window's rows in one call: only where linears merge windows. */
static void encoder_attention(struct encoder *e, struct wc_stream *s, const struct wc_block_w *b,
                              int n) {
    const struct wc_backend_ops *op = s->be->ops;
    int n_ctx = e->hp->n_audio_ctx, c = e->hp->n_audio_state, rows = n * n_ctx;
    int merge = op->linear_merge_windows, n_head = e->hp->n_audio_head;
    if (merge && op->norm_self_attention) {
        const struct wc_mat *const w[4] = {&b->attn.q, &b->attn.k, &b->attn.v, &b->attn.o};
        const float *const bias[4] = {b->attn.q_b, NULL, b->attn.v_b, b->attn.o_b};
        float *const work[4] = {e->q, e->k, e->v, e->att};
        op->norm_self_attention(s, e->x, b->attn_ln_g, b->attn_ln_b, w, bias, n, n_ctx, n_head,
                                work);
        return;
    }
    if (merge && op->norm_qkv) {
        const struct wc_mat *const w[3] = {&b->attn.q, &b->attn.k, &b->attn.v};
        const float *const bias[3] = {b->attn.q_b, NULL, b->attn.v_b};
        op->norm_qkv(s, e->q, e->k, e->v, NULL, e->x, b->attn_ln_g, b->attn_ln_b, w, bias, rows);
    } else {
        op->layernorm(s, e->h, e->x, b->attn_ln_g, b->attn_ln_b, rows, c);
        enc_linear(e, s, n, e->q, e->h, &b->attn.q, b->attn.q_b, WC_ACT_NONE, 0);
        enc_linear(e, s, n, e->k, e->h, &b->attn.k, NULL, WC_ACT_NONE, 0);
        enc_linear(e, s, n, e->v, e->h, &b->attn.v, b->attn.v_b, WC_ACT_NONE, 0);
    }
    op->attention_windows(s, e->att, e->q, e->k, e->v, n, n_ctx, c, n_head);
    enc_linear(e, s, n, e->x, e->att, &b->attn.o, b->attn.o_b, WC_ACT_NONE, 1);
}

/* x += attn(ln(x)) ; x += mlp(ln(x)) — ResidualAttentionBlock without cross-attention, over n
 * windows. */
static void encoder_block(struct encoder *e, struct wc_stream *s, const struct wc_block_w *b,
                          int n) {
    const struct wc_backend_ops *op = s->be->ops;
    int n_ctx = e->hp->n_audio_ctx, c = e->hp->n_audio_state, rows = n * n_ctx;
    encoder_attention(e, s, b, n);
    if (op->linear_merge_windows && op->norm_mlp) {
        op->norm_mlp(s, e->x, b->mlp_ln_g, b->mlp_ln_b, &b->mlp0, b->mlp0_b, &b->mlp2, b->mlp2_b,
                     rows, e->mlp);
        return;
    }
    op->layernorm(s, e->h, e->x, b->mlp_ln_g, b->mlp_ln_b, rows, c);
    enc_linear(e, s, n, e->mlp, e->h, &b->mlp0, b->mlp0_b, WC_ACT_GELU, 0);
    enc_linear(e, s, n, e->x, e->mlp, &b->mlp2, b->mlp2_b, WC_ACT_NONE, 1);
}

float *encoder_input(struct encoder *e, int i) {
    return e->input + (size_t)i * 2 * e->hp->n_audio_ctx * e->hp->n_mels;
}

void encoder_forward_input(struct encoder *e, struct wc_stream *s, int n, float *out) {
    const struct wc_backend_ops *op = s->be->ops;
    const struct wc_hparams *hp = e->hp;
    int n_mels = hp->n_mels, n_ctx = hp->n_audio_ctx, n_in = 2 * n_ctx, c = hp->n_audio_state;
    size_t mel_step = (size_t)(n_in + 2) * n_mels, conv_step = (size_t)(n_in + 2) * c;
    size_t in_step = (size_t)n_in * n_mels;
    if (s->err)
        return;
    if (n < 1 || n > e->n_windows) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "encoder: %d windows (room for 1..%d)", n,
                       e->n_windows);
        return;
    }
    /* The windows [n_mels][n_in] up in one copy from the host memory the copy engine reads,
     * then each time-major [n_in][n_mels], the layout every op uses, between its zero rows:
     * the transpose is the backend's (on a GPU a few microseconds, where the host's strided
     * loop took ~0.2 ms a window that the GPU waited for). */
    op->upload_async(s, e->mel_in, e->input, (size_t)n * in_step * sizeof(float));
    for (int i = 0; i < n; i++)
        op->transpose(s, e->mel + i * mel_step + n_mels, e->mel_in + i * in_step, n_mels, n_in);

    for (int i = 0; i < n; i++) {
        float *conv1 = e->conv1 + i * conv_step + c;
        op->conv1d(s, conv1, e->mel + i * mel_step + n_mels, &e->w->conv1, e->w->conv1_b, NULL,
                   n_mels, c, n_in, 1, WC_ACT_GELU);
        op->conv1d(s, e->x + (size_t)i * n_ctx * c, conv1, &e->w->conv2, e->w->conv2_b,
                   e->w->enc_pos, c, c, n_in, 2, WC_ACT_GELU);
    }
    for (int l = 0; l < hp->n_audio_layer; l++)
        encoder_block(e, s, &e->w->enc[l], n);
    op->layernorm(s, out, e->x, e->w->ln_post_g, e->w->ln_post_b, n * n_ctx, c);
}

void encoder_forward_batch(struct encoder *e, struct wc_stream *s, const float *const *mel_windows,
                           int n_frames, int n, float *out) {
    int n_mels = e->hp->n_mels, n_in = 2 * e->hp->n_audio_ctx;
    if (s->err)
        return;
    if (n < 1 || n > e->n_windows || n_frames < n_in) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "encoder: %d windows of %d frames (room for 1..%d of >= %d)", n, n_frames,
                       e->n_windows, n_in);
        return;
    }
    /* a pass queued before may still be reading the inputs (encoder_input); an idle stream
     * syncs at once */
    if (s->be->ops->sync(s))
        return;
    for (int i = 0; i < n; i++)
        for (int m = 0; m < n_mels; m++)
            memcpy(encoder_input(e, i) + (size_t)m * n_in, mel_windows[i] + (size_t)m * n_frames,
                   (size_t)n_in * sizeof(float));
    encoder_forward_input(e, s, n, out);
}

void encoder_forward(struct encoder *e, struct wc_stream *s, const float *mel_window, int n_frames,
                     float *out) {
    encoder_forward_batch(e, s, &mel_window, n_frames, 1, out);
}
