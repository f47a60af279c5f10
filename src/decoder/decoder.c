/*
 * decoder.c — the text decoder as a sequence of backend ops (no backend code here).
 * Mirrors openai-whisper model.py: TextDecoder.forward with kv_cache, ResidualAttentionBlock
 * with cross-attention, logits = ln(x) @ token_embedding.T.
 */
#include "decoder/decoder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libwhisperc.h"

static void release_all(struct decoder *d, struct wc_stream *s) {
    const struct wc_backend_ops *op = s->be->ops;
#define RELEASE(p)                                                                                 \
    do {                                                                                           \
        if (p)                                                                                     \
            op->release(s, p);                                                                     \
        (p) = NULL;                                                                                \
    } while (0)
    RELEASE(d->k_cache);
    RELEASE(d->v_cache);
    RELEASE(d->xk);
    RELEASE(d->xv);
    RELEASE(d->x);
    RELEASE(d->h);
    RELEASE(d->q);
    RELEASE(d->att);
    RELEASE(d->mlp);
    RELEASE(d->logits);
    RELEASE(d->slots);
#undef RELEASE
    free(d->slots_host);
    free(d->slots_tmp);
    d->slots_host = d->slots_tmp = NULL;
    d->n_group_max = 0;
    d->has_audio = false;
}

uint64_t decoder_memory_bytes(const struct wc_hparams *hp, int n_group) {
    uint64_t L = (uint64_t)hp->n_text_layer, c = (uint64_t)hp->n_text_state;
    uint64_t n_ctx = (uint64_t)hp->n_text_ctx, n_audio = (uint64_t)hp->n_audio_ctx;
    uint64_t g = (uint64_t)n_group, rows = n_ctx > g ? n_ctx : g, n_logits = g > 2 ? g : 2;
    /* as alloc_group below: k/v caches; xk, xv; x h q att; mlp; logits; 3 slot tables */
    return (2 * L * n_ctx * g * c + 2 * L * n_audio * c + 4 * rows * c + rows * 4 * c +
            n_logits * (uint64_t)hp->n_vocab) *
               sizeof(float) +
           3 * g * n_ctx * sizeof(int32_t);
}

/* Everything sized by the group: caches, scratch, logits, slot tables. */
static int alloc_group(struct decoder *d, struct wc_stream *s, int g) {
    const struct wc_backend_ops *op = s->be->ops;
    const struct wc_hparams *hp = d->hp;
    size_t L = (size_t)hp->n_text_layer, c = (size_t)hp->n_text_state, f = sizeof(float);
    size_t n_ctx = (size_t)hp->n_text_ctx, n_audio = (size_t)hp->n_audio_ctx;
    size_t rows = n_ctx > (size_t)g ? n_ctx : (size_t)g;
    size_t n_logits = g > 2 ? (size_t)g : 2;
    d->k_cache = op->alloc(s, L * n_ctx * g * c * f);
    d->v_cache = op->alloc(s, L * n_ctx * g * c * f);
    d->xk = op->alloc(s, L * n_audio * c * f);
    d->xv = op->alloc(s, L * n_audio * c * f);
    d->x = op->alloc(s, rows * c * f);
    d->h = op->alloc(s, rows * c * f);
    d->q = op->alloc(s, rows * c * f);
    d->att = op->alloc(s, rows * c * f);
    d->mlp = op->alloc(s, rows * 4 * c * f);
    d->logits = op->alloc(s, n_logits * (size_t)hp->n_vocab * f);
    d->slots = op->alloc(s, (size_t)g * n_ctx * sizeof(int32_t));
    d->slots_host = malloc((size_t)g * n_ctx * sizeof(int32_t));
    d->slots_tmp = malloc((size_t)g * n_ctx * sizeof(int32_t));
    if (!s->err && (!d->slots_host || !d->slots_tmp))
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "decoder: out of memory for %d sequences", g);
    if (s->err) {
        release_all(d, s);
        return s->err;
    }
    d->n_group_max = g;
    return 0;
}

int decoder_init(struct decoder *d, struct wc_stream *s, const struct wc_hparams *hp,
                 const struct wc_weights *w) {
    memset(d, 0, sizeof *d);
    d->hp = hp;
    d->w = w;
    return alloc_group(d, s, 1);
}

void decoder_free(struct decoder *d, struct wc_stream *s) { release_all(d, s); }

int decoder_reserve(struct decoder *d, struct wc_stream *s, int n_group) {
    if (n_group <= d->n_group_max)
        return 0;
    /* The cross-attention K/V belong to the window: reserve before decoder_set_audio. */
    release_all(d, s);
    decoder_borrow_audio(d, NULL, NULL, WC_F32);
    d->n_past = 0;
    return alloc_group(d, s, n_group);
}

void decoder_borrow_audio(struct decoder *d, const void *k, const void *v, enum wc_dtype dt) {
    d->borrowed_k = k;
    d->borrowed_v = k ? v : NULL;
    d->borrowed_dtype = dt;
}

void decoder_set_audio(struct decoder *d, struct wc_stream *s, const float *audio_features) {
    const struct wc_backend_ops *op = s->be->ops;
    decoder_borrow_audio(d, NULL, NULL, WC_F32);
    int n_audio = d->hp->n_audio_ctx;
    size_t layer = (size_t)n_audio * d->hp->n_text_state;
    for (int l = 0; l < d->hp->n_text_layer; l++) {
        const struct wc_attn_w *a = &d->w->dec[l].cross;
        op->linear(s, d->xk + l * layer, 0, audio_features, &a->k, NULL, n_audio, WC_ACT_NONE, 0);
        op->linear(s, d->xv + l * layer, 0, audio_features, &a->v, a->v_b, n_audio, WC_ACT_NONE, 0);
    }
    d->has_audio = true;
}

/* A forward pass reads the window's cross-attention K/V: fails the stream when there are none
 * (decoder_reserve reallocated them after decoder_set_audio, or it was never called), which
 * would otherwise read uninitialised memory. */
static int audio_ready(struct decoder *d, struct wc_stream *s) {
    if (!s->err && !d->has_audio && !d->borrowed_k)
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: no audio (decoder_set_audio comes after decoder_reserve)");
    return s->err;
}

/* Where decoder_align wants one layer's cross-attention logits (NULL: not wanted). */
struct align_out {
    const struct wc_align_head *heads;
    int n_heads;
    float *scores;  /* backend scratch [n][n_audio_ctx] */
    float *qk_host; /* [n_heads][n][n_audio_ctx] */
};

/* One ResidualAttentionBlock over n rows of d->x. Self-attention: n_seq == 0 means n prompt
 * tokens at positions n_past… (slots (pos, 0), causal); n_seq > 0 means one token for each
 * of n = n_seq sequences at position n_past (slots (n_past, g), gathered history). */
static void decoder_block(struct decoder *d, struct wc_stream *s, int l, int n, int n_seq,
                          const struct align_out *al) {
    const struct wc_backend_ops *op = s->be->ops;
    const struct wc_block_w *b = &d->w->dec[l];
    const struct wc_hparams *hp = d->hp;
    int c = hp->n_text_state, n_head = hp->n_text_head, pos0 = d->n_past;
    int ld = d->n_group_max * c; /* floats from one position to the next in the cache */
    float *kc = d->k_cache + (size_t)l * hp->n_text_ctx * ld;
    float *vc = d->v_cache + (size_t)l * hp->n_text_ctx * ld;
    size_t xoff = (size_t)l * hp->n_audio_ctx * c;
    const void *xk = d->xk + xoff, *xv = d->xv + xoff;
    enum wc_dtype xdt = WC_F32;
    if (d->borrowed_k) {
        xdt = d->borrowed_dtype;
        size_t at = xoff * (xdt == WC_F16 ? 2 : sizeof(float));
        xk = (const char *)d->borrowed_k + at, xv = (const char *)d->borrowed_v + at;
    }

    /* self-attention: new keys/values go straight into their cache slots */
    op->layernorm(s, d->h, d->x, b->attn_ln_g, b->attn_ln_b, n, c);
    op->linear(s, d->q, 0, d->h, &b->attn.q, b->attn.q_b, n, WC_ACT_NONE, 0);
    int ld_new = n_seq ? c : ld; /* a step's n_seq slots are adjacent; prompt rows are not */
    op->linear(s, kc + (size_t)pos0 * ld, ld_new, d->h, &b->attn.k, NULL, n, WC_ACT_NONE, 0);
    op->linear(s, vc + (size_t)pos0 * ld, ld_new, d->h, &b->attn.v, b->attn.v_b, n, WC_ACT_NONE, 0);
    if (n_seq)
        op->attention_gather(s, d->att, d->q, kc, vc, d->slots, hp->n_text_ctx, NULL, n_seq,
                             pos0 + 1, c, n_head);
    else
        op->attention(s, d->att, d->q, kc, vc, WC_F32, ld, n, pos0 + n, c, n_head, pos0);
    op->linear(s, d->x, 0, d->att, &b->attn.o, b->attn.o_b, n, WC_ACT_NONE, 1);

    /* cross-attention over the window's audio features */
    op->layernorm(s, d->h, d->x, b->cross_ln_g, b->cross_ln_b, n, c);
    op->linear(s, d->q, 0, d->h, &b->cross.q, b->cross.q_b, n, WC_ACT_NONE, 0);
    op->attention(s, d->att, d->q, xk, xv, xdt, c, n, hp->n_audio_ctx, c, n_head, -1);
    for (int i = 0; al && i < al->n_heads; i++) {
        if (al->heads[i].layer != l)
            continue;
        size_t n_scores = (size_t)n * hp->n_audio_ctx;
        op->attention_scores(s, al->scores, d->q, xk, xdt, c, n, hp->n_audio_ctx, c, n_head,
                             al->heads[i].head);
        op->download(s, al->qk_host + i * n_scores, al->scores, n_scores * sizeof(float));
    }
    op->linear(s, d->x, 0, d->att, &b->cross.o, b->cross.o_b, n, WC_ACT_NONE, 1);

    if (op->norm_mlp) { /* the same bits in fewer launches and passes (backend.h) */
        op->norm_mlp(s, d->x, b->mlp_ln_g, b->mlp_ln_b, &b->mlp0, b->mlp0_b, &b->mlp2, b->mlp2_b, n,
                     d->mlp);
        return;
    }
    op->layernorm(s, d->h, d->x, b->mlp_ln_g, b->mlp_ln_b, n, c);
    op->linear(s, d->mlp, 0, d->h, &b->mlp0, b->mlp0_b, n, WC_ACT_GELU, 0);
    op->linear(s, d->x, 0, d->mlp, &b->mlp2, b->mlp2_b, n, WC_ACT_NONE, 1);
}

/* Final norm and the output projection for n rows of d->x (at row indices rows[], or 0..n). */
static int logits_out(struct decoder *d, struct wc_stream *s, const int *rows, int n,
                      float *logits_host) {
    const struct wc_backend_ops *op = s->be->ops;
    int c = d->hp->n_text_state, n_vocab = d->hp->n_vocab;
    if (rows) {
        for (int i = 0; i < n; i++)
            op->layernorm(s, d->h + (size_t)i * c, d->x + (size_t)rows[i] * c, d->w->dec_ln_g,
                          d->w->dec_ln_b, 1, c);
    } else {
        op->layernorm(s, d->h, d->x, d->w->dec_ln_g, d->w->dec_ln_b, n, c);
    }
    op->linear(s, d->logits, 0, d->h, &d->w->tok_emb, NULL, n, WC_ACT_NONE, 0);
    if (!logits_host) /* kept in backend memory (d->logits) for the caller's next op */
        return s->err;
    if (n > 0)
        op->download(s, logits_host, d->logits, (size_t)n * n_vocab * sizeof(float));
    return wc_stream_sync(s);
}

int decoder_forward(struct decoder *d, struct wc_stream *s, const int32_t *tokens, int n,
                    const int *rows, int n_rows, float *logits_host) {
    int c = d->hp->n_text_state, n_ctx = d->hp->n_text_ctx;
    if (audio_ready(d, s))
        return s->err;
    if (n < 1 || d->n_past + n > n_ctx || n_rows < 0 || n_rows > 2) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: %d tokens at position %d exceed the text context of %d", n,
                       d->n_past, n_ctx);
        return s->err;
    }
    s->be->ops->embed(s, d->x, tokens, NULL, n, &d->w->tok_emb, d->w->dec_pos, d->n_past, c);
    for (int l = 0; l < d->hp->n_text_layer; l++)
        decoder_block(d, s, l, n, 0, NULL);
    /* the prompt is every sequence's history */
    for (int g = 0; g < d->n_group_max; g++)
        for (int p = d->n_past; p < d->n_past + n; p++)
            d->slots_host[(size_t)g * n_ctx + p] = p * d->n_group_max;
    d->n_past += n;
    return logits_out(d, s, rows, n_rows, logits_host);
}

int decoder_step(struct decoder *d, struct wc_stream *s, const int32_t *tokens, int n_seq,
                 float *logits_host) {
    const struct wc_backend_ops *op = s->be->ops;
    int c = d->hp->n_text_state, n_ctx = d->hp->n_text_ctx, pos = d->n_past;
    if (audio_ready(d, s))
        return s->err;
    if (n_seq < 1 || n_seq > d->n_group_max || pos >= n_ctx) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: %d sequences at position %d (room for %d, context %d)", n_seq, pos,
                       d->n_group_max, n_ctx);
        return s->err;
    }
    for (int g = 0; g < n_seq; g++) {
        op->embed(s, d->x + (size_t)g * c, tokens + g, NULL, 1, &d->w->tok_emb, d->w->dec_pos, pos,
                  c);
        d->slots_host[(size_t)g * n_ctx + pos] = pos * d->n_group_max + g;
    }
    op->upload(s, d->slots, d->slots_host, (size_t)n_seq * n_ctx * sizeof(int32_t));
    for (int l = 0; l < d->hp->n_text_layer; l++)
        decoder_block(d, s, l, n_seq, n_seq, NULL);
    d->n_past++;
    return logits_out(d, s, NULL, n_seq, logits_host);
}

void decoder_reorder(struct decoder *d, const int *src, int n_seq) {
    size_t n_ctx = (size_t)d->hp->n_text_ctx, bytes = (size_t)d->n_past * sizeof(int32_t);
    for (int g = 0; g < n_seq; g++)
        memcpy(d->slots_tmp + g * n_ctx, d->slots_host + (size_t)src[g] * n_ctx, bytes);
    for (int g = 0; g < n_seq; g++)
        memcpy(d->slots_host + g * n_ctx, d->slots_tmp + g * n_ctx, bytes);
}

/* softmax(logits[0 : n_softmax])[target] */
static float target_prob(const float *logits, int n_softmax, int target) {
    float mx = -INFINITY;
    for (int j = 0; j < n_softmax; j++)
        mx = logits[j] > mx ? logits[j] : mx;
    double sum = 0;
    for (int j = 0; j < n_softmax; j++)
        sum += exp((double)logits[j] - mx);
    return (float)(exp((double)logits[target] - mx) / sum);
}

#define ALIGN_LOGIT_ROWS 16 /* rows of logits per output projection */

int decoder_align(struct decoder *d, struct wc_stream *s, const int32_t *tokens, int n,
                  const struct wc_align_head *heads, int n_heads, float *qk_host, int row0,
                  const int32_t *targets, int n_targets, int n_softmax, float *p_out) {
    const struct wc_backend_ops *op = s->be->ops;
    const struct wc_hparams *hp = d->hp;
    int c = hp->n_text_state, n_vocab = hp->n_vocab;
    if (audio_ready(d, s))
        return s->err;
    if (n < 1 || n > hp->n_text_ctx || row0 < 0 || row0 + n_targets > n || n_softmax > n_vocab) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: cannot align %d tokens", n);
        return s->err;
    }
    struct align_out al = {heads, n_heads,
                           op->alloc(s, (size_t)n * hp->n_audio_ctx * sizeof(float)), qk_host};
    float *logits = op->alloc(s, (size_t)ALIGN_LOGIT_ROWS * n_vocab * sizeof(float));
    float *logits_host = malloc((size_t)ALIGN_LOGIT_ROWS * n_vocab * sizeof(float));
    if (!s->err && !logits_host)
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "decoder: out of memory for alignment");
    d->n_past = 0;
    op->embed(s, d->x, tokens, NULL, n, &d->w->tok_emb, d->w->dec_pos, 0, c);
    for (int l = 0; l < hp->n_text_layer; l++)
        decoder_block(d, s, l, n, 0, &al);
    d->n_past = n; /* the cache holds these tokens now; the slot table is left as it was */
    for (int r = 0; r < n_targets && !s->err; r += ALIGN_LOGIT_ROWS) {
        int m = n_targets - r < ALIGN_LOGIT_ROWS ? n_targets - r : ALIGN_LOGIT_ROWS;
        op->layernorm(s, d->h, d->x + (size_t)(row0 + r) * c, d->w->dec_ln_g, d->w->dec_ln_b, m, c);
        op->linear(s, logits, 0, d->h, &d->w->tok_emb, NULL, m, WC_ACT_NONE, 0);
        op->download(s, logits_host, logits, (size_t)m * n_vocab * sizeof(float));
        if (wc_stream_sync(s))
            break;
        for (int i = 0; i < m; i++)
            p_out[r + i] =
                target_prob(logits_host + (size_t)i * n_vocab, n_softmax, targets[r + i]);
    }
    int rc = wc_stream_sync(s);
    if (al.scores)
        op->release(s, al.scores);
    if (logits)
        op->release(s, logits);
    free(logits_host);
    return rc;
}
