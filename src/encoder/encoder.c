/*
 * encoder.c — the audio encoder as a sequence of backend ops (no backend code here).
 * Mirrors openai-whisper model.py: AudioEncoder.forward and ResidualAttentionBlock.forward.
 */
#include "encoder/encoder.h"

#include <stdlib.h>
#include <string.h>

#include "libwhisperc.h"

uint64_t encoder_memory_bytes(const struct wc_hparams *hp) {
    uint64_t n_ctx = (uint64_t)hp->n_audio_ctx, c = (uint64_t)hp->n_audio_state;
    uint64_t n_in = 2 * n_ctx, mels = (uint64_t)hp->n_mels;
    /* mel, conv1; x h q k v att; mlp; mel_host: as encoder_init below */
    return ((n_in + 2) * (mels + c) + 6 * n_ctx * c + 4 * n_ctx * c + n_in * mels) * sizeof(float);
}

int encoder_init(struct encoder *e, struct wc_stream *s, const struct wc_hparams *hp,
                 const struct wc_weights *w) {
    const struct wc_backend_ops *op = s->be->ops;
    memset(e, 0, sizeof *e);
    e->hp = hp;
    e->w = w;
    size_t n_ctx = (size_t)hp->n_audio_ctx, c = (size_t)hp->n_audio_state;
    size_t n_in = 2 * n_ctx; /* conv2 has stride 2 */
    size_t f = sizeof(float);
    e->mel = op->alloc(s, (n_in + 2) * (size_t)hp->n_mels * f);
    e->conv1 = op->alloc(s, (n_in + 2) * c * f);
    e->x = op->alloc(s, n_ctx * c * f);
    e->h = op->alloc(s, n_ctx * c * f);
    e->q = op->alloc(s, n_ctx * c * f);
    e->k = op->alloc(s, n_ctx * c * f);
    e->v = op->alloc(s, n_ctx * c * f);
    e->att = op->alloc(s, n_ctx * c * f);
    e->mlp = op->alloc(s, n_ctx * 4 * c * f);
    e->mel_host = malloc(n_in * (size_t)hp->n_mels * f);
    if (!e->mel_host)
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "encoder: out of host memory");
    if (s->err) {
        encoder_free(e, s);
        return s->err;
    }
    /* The conv inputs' padding rows stay zero for the life of the buffers. */
    op->memset0(s, e->mel, (n_in + 2) * (size_t)hp->n_mels * f);
    op->memset0(s, e->conv1, (n_in + 2) * c * f);
    return s->err;
}

void encoder_free(struct encoder *e, struct wc_stream *s) {
    const struct wc_backend_ops *op = s->be->ops;
    float **bufs[] = {&e->mel, &e->conv1, &e->x, &e->h, &e->q, &e->k, &e->v, &e->att, &e->mlp};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        if (*bufs[i])
            op->release(s, *bufs[i]);
        *bufs[i] = NULL;
    }
    free(e->mel_host);
    e->mel_host = NULL;
}

/* x += attn(ln(x)) ; x += mlp(ln(x)) — ResidualAttentionBlock without cross-attention. */
static void encoder_block(struct encoder *e, struct wc_stream *s, const struct wc_block_w *b) {
    const struct wc_backend_ops *op = s->be->ops;
    int n = e->hp->n_audio_ctx, c = e->hp->n_audio_state;
    op->layernorm(s, e->h, e->x, b->attn_ln_g, b->attn_ln_b, n, c);
    op->linear(s, e->q, 0, e->h, &b->attn.q, b->attn.q_b, n, WC_ACT_NONE, 0);
    op->linear(s, e->k, 0, e->h, &b->attn.k, NULL, n, WC_ACT_NONE, 0);
    op->linear(s, e->v, 0, e->h, &b->attn.v, b->attn.v_b, n, WC_ACT_NONE, 0);
    op->attention(s, e->att, e->q, e->k, e->v, c, n, n, c, e->hp->n_audio_head, -1);
    op->linear(s, e->x, 0, e->att, &b->attn.o, b->attn.o_b, n, WC_ACT_NONE, 1);

    op->layernorm(s, e->h, e->x, b->mlp_ln_g, b->mlp_ln_b, n, c);
    op->linear(s, e->mlp, 0, e->h, &b->mlp0, b->mlp0_b, n, WC_ACT_GELU, 0);
    op->linear(s, e->x, 0, e->mlp, &b->mlp2, b->mlp2_b, n, WC_ACT_NONE, 1);
}

void encoder_forward(struct encoder *e, struct wc_stream *s, const float *mel_window, int n_frames,
                     float *out) {
    const struct wc_backend_ops *op = s->be->ops;
    const struct wc_hparams *hp = e->hp;
    int n_mels = hp->n_mels, n_in = 2 * hp->n_audio_ctx, c = hp->n_audio_state;
    if (s->err)
        return;
    /* [n_mels][frames] -> time-major [frames][n_mels], the layout every op uses. */
    for (int t = 0; t < n_in; t++)
        for (int m = 0; m < n_mels; m++)
            e->mel_host[(size_t)t * n_mels + m] = mel_window[(size_t)m * n_frames + t];
    op->upload(s, e->mel + n_mels, e->mel_host, (size_t)n_in * n_mels * sizeof(float));

    op->conv1d(s, e->conv1 + c, e->mel + n_mels, &e->w->conv1, e->w->conv1_b, NULL, n_mels, c, n_in,
               1, WC_ACT_GELU);
    op->conv1d(s, e->x, e->conv1 + c, &e->w->conv2, e->w->conv2_b, e->w->enc_pos, c, c, n_in, 2,
               WC_ACT_GELU);
    for (int i = 0; i < hp->n_audio_layer; i++)
        encoder_block(e, s, &e->w->enc[i]);
    op->layernorm(s, out, e->x, e->w->ln_post_g, e->w->ln_post_b, hp->n_audio_ctx, c);
}
