/*
 * decoder.c — the text decoder as a sequence of backend ops (no backend code here).
 * Mirrors openai-whisper model.py: TextDecoder.forward with kv_cache, ResidualAttentionBlock
 * with cross-attention, logits = ln(x) @ token_embedding.T.
 */
#include "decoder/decoder.h"

#include <string.h>

#include "libwhisperc.h"

int decoder_init(struct decoder *d, struct wc_stream *s, const struct wc_hparams *hp,
                 const struct wc_weights *w) {
    const struct wc_backend_ops *op = s->be->ops;
    memset(d, 0, sizeof *d);
    d->hp = hp;
    d->w = w;
    size_t L = (size_t)hp->n_text_layer, c = (size_t)hp->n_text_state, f = sizeof(float);
    size_t n_ctx = (size_t)hp->n_text_ctx, n_audio = (size_t)hp->n_audio_ctx;
    d->k_cache = op->alloc(s, L * n_ctx * c * f);
    d->v_cache = op->alloc(s, L * n_ctx * c * f);
    d->xk = op->alloc(s, L * n_audio * c * f);
    d->xv = op->alloc(s, L * n_audio * c * f);
    d->x = op->alloc(s, n_ctx * c * f);
    d->h = op->alloc(s, n_ctx * c * f);
    d->q = op->alloc(s, n_ctx * c * f);
    d->att = op->alloc(s, n_ctx * c * f);
    d->mlp = op->alloc(s, n_ctx * 4 * c * f);
    d->logits = op->alloc(s, WC_DEC_MAX_LOGIT_ROWS * (size_t)hp->n_vocab * f);
    if (s->err)
        decoder_free(d, s);
    return s->err;
}

void decoder_free(struct decoder *d, struct wc_stream *s) {
    const struct wc_backend_ops *op = s->be->ops;
    float **bufs[] = {&d->k_cache, &d->v_cache, &d->xk, &d->xv,   &d->x,
                      &d->h,       &d->q,       &d->att, &d->mlp, &d->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        if (*bufs[i])
            op->release(s, *bufs[i]);
        *bufs[i] = NULL;
    }
}

void decoder_set_audio(struct decoder *d, struct wc_stream *s, const float *audio_features) {
    const struct wc_backend_ops *op = s->be->ops;
    int n_audio = d->hp->n_audio_ctx;
    size_t layer = (size_t)n_audio * d->hp->n_text_state;
    for (int l = 0; l < d->hp->n_text_layer; l++) {
        const struct wc_attn_w *a = &d->w->dec[l].cross;
        op->linear(s, d->xk + l * layer, 0, audio_features, &a->k, NULL, n_audio, WC_ACT_NONE, 0);
        op->linear(s, d->xv + l * layer, 0, audio_features, &a->v, a->v_b, n_audio, WC_ACT_NONE,
                   0);
    }
}

/* One ResidualAttentionBlock on n new tokens at positions n_past… */
static void decoder_block(struct decoder *d, struct wc_stream *s, int l, int n) {
    const struct wc_backend_ops *op = s->be->ops;
    const struct wc_block_w *b = &d->w->dec[l];
    const struct wc_hparams *hp = d->hp;
    int c = hp->n_text_state, n_head = hp->n_text_head, pos0 = d->n_past;
    float *kc = d->k_cache + (size_t)l * hp->n_text_ctx * c;
    float *vc = d->v_cache + (size_t)l * hp->n_text_ctx * c;
    size_t xoff = (size_t)l * hp->n_audio_ctx * c;

    /* self-attention: new keys/values go straight into the cache rows pos0… */
    op->layernorm(s, d->h, d->x, b->attn_ln_g, b->attn_ln_b, n, c);
    op->linear(s, d->q, 0, d->h, &b->attn.q, b->attn.q_b, n, WC_ACT_NONE, 0);
    op->linear(s, kc + (size_t)pos0 * c, 0, d->h, &b->attn.k, NULL, n, WC_ACT_NONE, 0);
    op->linear(s, vc + (size_t)pos0 * c, 0, d->h, &b->attn.v, b->attn.v_b, n, WC_ACT_NONE, 0);
    op->attention(s, d->att, d->q, kc, vc, c, n, pos0 + n, c, n_head, pos0);
    op->linear(s, d->x, 0, d->att, &b->attn.o, b->attn.o_b, n, WC_ACT_NONE, 1);

    /* cross-attention over the window's audio features */
    op->layernorm(s, d->h, d->x, b->cross_ln_g, b->cross_ln_b, n, c);
    op->linear(s, d->q, 0, d->h, &b->cross.q, b->cross.q_b, n, WC_ACT_NONE, 0);
    op->attention(s, d->att, d->q, d->xk + xoff, d->xv + xoff, c, n, hp->n_audio_ctx, c, n_head,
                  -1);
    op->linear(s, d->x, 0, d->att, &b->cross.o, b->cross.o_b, n, WC_ACT_NONE, 1);

    op->layernorm(s, d->h, d->x, b->mlp_ln_g, b->mlp_ln_b, n, c);
    op->linear(s, d->mlp, 0, d->h, &b->mlp0, b->mlp0_b, n, WC_ACT_GELU, 0);
    op->linear(s, d->x, 0, d->mlp, &b->mlp2, b->mlp2_b, n, WC_ACT_NONE, 1);
}

int decoder_forward(struct decoder *d, struct wc_stream *s, const int32_t *tokens, int n,
                    const int *rows, int n_rows, float *logits_host) {
    const struct wc_backend_ops *op = s->be->ops;
    const struct wc_hparams *hp = d->hp;
    int c = hp->n_text_state;
    if (s->err)
        return s->err;
    if (n < 1 || d->n_past + n > hp->n_text_ctx || n_rows < 0 || n_rows > WC_DEC_MAX_LOGIT_ROWS) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: %d tokens at position %d exceed the text context of %d", n,
                       d->n_past, hp->n_text_ctx);
        return s->err;
    }
    op->embed(s, d->x, tokens, n, &d->w->tok_emb, d->w->dec_pos, d->n_past, c);
    for (int l = 0; l < hp->n_text_layer; l++)
        decoder_block(d, s, l, n);
    d->n_past += n;

    /* Final norm and the output projection only for the rows the caller needs. */
    for (int i = 0; i < n_rows; i++) {
        float *row = d->h + (size_t)i * c;
        op->layernorm(s, row, d->x + (size_t)rows[i] * c, d->w->dec_ln_g, d->w->dec_ln_b, 1, c);
        op->linear(s, d->logits + (size_t)i * hp->n_vocab, 0, row, &d->w->tok_emb, NULL, 1,
                   WC_ACT_NONE, 0);
    }
    if (n_rows > 0)
        op->download(s, logits_host, d->logits, (size_t)n_rows * hp->n_vocab * sizeof(float));
    return wc_stream_sync(s);
}
