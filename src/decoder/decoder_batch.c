/*
 * decoder_batch.c — see decoder_batch.h. The same ops as decoder.c's decoder_block, on a cache
 * with a region of n_text_ctx rows, one position and one cross-attention K/V per lane.
 */
#include "decoder/decoder_batch.h"

#include <stdlib.h>
#include <string.h>

#include "libwhisperc.h"

static void release_all(struct decoder_batch *db, struct wc_stream *s) {
    if (s->be->ops->step_graph_reset) /* recorded steps point into these buffers */
        s->be->ops->step_graph_reset(s);
    float **bufs[] = {&db->k_cache, &db->v_cache, &db->x,   &db->h,
                      &db->q,       &db->att,     &db->mlp, &db->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        if (*bufs[i])
            s->be->ops->release(s, *bufs[i]);
        *bufs[i] = NULL;
    }
    void **kv[] = {&db->xk, &db->xv}; /* of the backend's cross_kv dtype */
    for (size_t i = 0; i < 2; i++) {
        if (*kv[i])
            s->be->ops->release(s, *kv[i]);
        *kv[i] = NULL;
    }
    if (db->step_idx)
        s->be->ops->release(s, db->step_idx);
    db->step_idx = NULL;
    free(db->step_host);
    free(db->slots_host);
    free(db->slots_tmp);
    free(db->pos_host);
    free(db->n_past);
    free(db->region_of);
    db->step_host = db->slots_host = db->slots_tmp = db->pos_host = NULL;
    db->n_past = db->region_of = NULL;
    db->n_lanes = 0;
}

/* The buffers decoder_batch_init allocates for n_lanes lanes, in bytes: one place for both it
 * and decoder_batch_bytes (the memory budget). */
struct batch_sizes {
    size_t cache, cross, act, mlp, logits, idx, slots, lanes;
};
static struct batch_sizes batch_sizes(const struct wc_hparams *hp, enum wc_dtype cross_kv,
                                      int n_lanes, int n_regions) {
    size_t L = (size_t)hp->n_text_layer, c = (size_t)hp->n_text_state, f = sizeof(float);
    size_t n_ctx = (size_t)hp->n_text_ctx, n_audio = (size_t)hp->n_audio_ctx, B = (size_t)n_lanes;
    size_t R = (size_t)decoder_batch_max_rows(n_lanes); /* a step's rows */
    size_t rows = n_ctx > R ? n_ctx : R, n_logits = R;
    size_t fx = cross_kv == WC_F16 ? 2 : f, mlp_rows = 4 * rows > n_audio ? 4 * rows : n_audio;
    return (struct batch_sizes){
        .cache = L * B * n_ctx * c * f,                    /* k_cache, v_cache */
        .cross = (size_t)n_regions * L * n_audio * c * fx, /* xk, xv */
        .act = rows * c * f,                               /* x, h, q, att */
        .mlp = mlp_rows * c * f, /* also one layer's f32 cross K or V (set_audio) */
        .logits = n_logits * (size_t)hp->n_vocab * f,
        .idx = (3 + n_ctx) * R * sizeof(int32_t), /* step_idx and its host copy step_host */
        .slots = B * n_ctx * sizeof(int32_t),     /* slots_host, slots_tmp */
        .lanes = R * sizeof(int32_t),             /* pos_host, n_past, region_of */
    };
}

uint64_t decoder_batch_bytes(const struct wc_hparams *hp, enum wc_dtype cross_kv, int n_lanes,
                             int n_regions) {
    if (n_lanes < 1 || n_regions < 1)
        return 0;
    struct batch_sizes z = batch_sizes(hp, cross_kv, n_lanes, n_regions);
    return 2 * (uint64_t)z.cache + 2 * (uint64_t)z.cross + 4 * (uint64_t)z.act + z.mlp + z.logits +
           2 * (uint64_t)z.idx + 2 * (uint64_t)z.slots + 3 * (uint64_t)z.lanes;
}

int decoder_batch_init(struct decoder_batch *db, struct wc_stream *s, const struct wc_hparams *hp,
                       const struct wc_weights *w, int n_lanes, int n_regions) {
    const struct wc_backend_ops *op = s->be->ops;
    memset(db, 0, sizeof *db);
    if (op->step_graph_reset) /* steps recorded for another decoder's buffers */
        op->step_graph_reset(s);
    if (n_lanes < 1 || n_regions < 1 || n_regions > n_lanes) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: %d lanes over %d audio regions",
                       n_lanes, n_regions);
        return s->err;
    }
    db->hp = hp;
    db->w = w;
    db->n_regions = n_regions;
    db->xkv = s->be->cross_kv;
    struct batch_sizes z = batch_sizes(hp, db->xkv, n_lanes, n_regions);
    db->n_slots = n_lanes * hp->n_text_ctx;
    db->k_cache = op->alloc(s, z.cache);
    db->v_cache = op->alloc(s, z.cache);
    db->xk = op->alloc(s, z.cross);
    db->xv = op->alloc(s, z.cross);
    db->x = op->alloc(s, z.act);
    db->h = op->alloc(s, z.act);
    db->q = op->alloc(s, z.act);
    db->att = op->alloc(s, z.act);
    db->mlp = op->alloc(s, z.mlp);
    db->mlp_floats = z.mlp / sizeof(float);
    db->logits = op->alloc(s, z.logits);
    db->step_idx = op->alloc(s, z.idx);
    db->step_host = calloc(1, z.idx);
    db->slots_host = calloc(1, z.slots);
    db->slots_tmp = calloc(1, z.slots);
    db->pos_host = calloc(1, z.lanes);
    db->n_past = calloc(1, z.lanes);
    db->region_of = calloc(1, z.lanes);
    if (!s->err && (!db->step_host || !db->slots_host || !db->slots_tmp || !db->pos_host ||
                    !db->n_past || !db->region_of))
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "decoder: out of memory for %d lanes", n_lanes);
    if (s->err) {
        release_all(db, s);
        return s->err;
    }
    db->n_lanes = n_lanes;
    db->max_rows = decoder_batch_max_rows(n_lanes);
    for (int i = 0; i < db->n_slots; i++) /* lane k's position p is row k * n_ctx + p */
        db->slots_host[i] = i;
    for (int i = 0; i < n_lanes; i++) /* spread evenly until decoder_batch_assign */
        db->region_of[i] = (int)((int64_t)i * n_regions / n_lanes);
    return 0;
}

void decoder_batch_free(struct decoder_batch *db, struct wc_stream *s) { release_all(db, s); }

void decoder_batch_reset(struct decoder_batch *db) {
    for (int i = 0; i < db->n_lanes; i++)
        db->n_past[i] = 0;
}

void decoder_batch_clear(struct decoder_batch *db, int lane) {
    if (lane >= 0 && lane < db->n_lanes)
        db->n_past[lane] = 0;
}

/* Layer `layer`'s cross-attention keys (or values) of audio region `audio` */
static void *audio_kv(struct decoder_batch *db, void *kv, int audio, int layer) {
    size_t layer_n = (size_t)db->hp->n_audio_ctx * db->hp->n_text_state;
    size_t esz = db->xkv == WC_F16 ? 2 : sizeof(float);
    return (char *)kv + ((size_t)audio * db->hp->n_text_layer + layer) * layer_n * esz;
}

/* One layer's cross K (or V) = audio_features . w (+ b), stored in the decoder's cross_kv: f16
 * ones made in f32 first, in work (one window's floats) or else db->mlp (free between steps),
 * and narrowed. */
static void cross_proj(struct decoder_batch *db, struct wc_stream *s, void *dst,
                       const float *audio_features, const struct wc_mat *w, const float *b,
                       float *work) {
    const struct wc_backend_ops *op = s->be->ops;
    int n_audio = db->hp->n_audio_ctx;
    float *f32 = db->xkv == WC_F16 ? (work ? work : db->mlp) : dst;
    op->linear(s, f32, 0, audio_features, w, b, n_audio, WC_ACT_NONE, 0);
    if (db->xkv == WC_F16)
        op->to_f16(s, dst, f32, (size_t)n_audio * db->hp->n_text_state);
}

void decoder_batch_audio(struct decoder_batch *db, int audio, const void **k, const void **v) {
    *k = audio_kv(db, db->xk, audio, 0);
    *v = audio_kv(db, db->xv, audio, 0);
}

void decoder_batch_assign(struct decoder_batch *db, int lane, int audio) {
    if (lane >= 0 && lane < db->n_lanes && audio >= 0 && audio < db->n_regions)
        db->region_of[lane] = audio;
}

void decoder_batch_set_audio(struct decoder_batch *db, struct wc_stream *s, int n, const int *audio,
                             const float *audio_features, float *work, size_t work_floats) {
    const struct wc_backend_ops *op = s->be->ops;
    int n_layer = db->hp->n_text_layer, n_audio = db->hp->n_audio_ctx;
    size_t per = (size_t)n_audio * db->hp->n_text_state; /* a window's features */
    if (!op->linear_windows) { /* (work, if given, is free: a stream of the caller's own) */
        float *one = work && work_floats >= per ? work : NULL;
        for (int i = 0; i < n; i++)
            for (int l = 0; l < n_layer; l++) {
                const struct wc_attn_w *a = &db->w->dec[l].cross;
                const float *in = audio_features + i * per;
                cross_proj(db, s, audio_kv(db, db->xk, audio[i], l), in, &a->k, NULL, one);
                cross_proj(db, s, audio_kv(db, db->xv, audio[i], l), in, &a->v, a->v_b, one);
            }
        return;
    }
    if (!work && n > 1) { /* db->mlp holds one window's */
        for (int i = 0; i < n; i++)
            decoder_batch_set_audio(db, s, 1, audio + i, audio_features + i * per, NULL, 0);
        return;
    }
    if (!work)
        work = db->mlp, work_floats = db->mlp_floats;
    /* projection j: layer j / 2's K (j even) or V; dst[j n + i]: window i's */
    int n_w = 2 * n_layer;
    const struct wc_mat **w = malloc((size_t)n_w * sizeof *w);
    const float **b = malloc((size_t)n_w * sizeof *b);
    void **dst = malloc((size_t)n_w * (size_t)n * sizeof *dst);
    if (w && b && dst) {
        for (int j = 0; j < n_w; j++) {
            const struct wc_attn_w *a = &db->w->dec[j / 2].cross;
            w[j] = j % 2 ? &a->v : &a->k;
            b[j] = j % 2 ? a->v_b : NULL;
            for (int i = 0; i < n; i++)
                dst[(size_t)j * n + i] = audio_kv(db, j % 2 ? db->xv : db->xk, audio[i], j / 2);
        }
        op->linear_windows(s, dst, db->xkv, audio_features, n, n_audio, w, b, n_w, work,
                           work_floats);
    } else {
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY,
                       "decoder: out of memory for %d windows' cross K/V", n);
    }
    free(w);
    free(b);
    free(dst);
}

void decoder_batch_reorder(struct decoder_batch *db, const int *lanes, const int *src, int n) {
    size_t n_ctx = (size_t)db->hp->n_text_ctx;
    for (int i = 0; i < n; i++)
        memcpy(db->slots_tmp + i * n_ctx, db->slots_host + (size_t)src[i] * n_ctx,
               (size_t)db->n_past[src[i]] * sizeof(int32_t));
    int *past = db->pos_host; /* free between steps: each step fills it again */
    for (int i = 0; i < n; i++)
        past[i] = db->n_past[src[i]];
    for (int i = 0; i < n; i++) {
        memcpy(db->slots_host + (size_t)lanes[i] * n_ctx, db->slots_tmp + i * n_ctx,
               (size_t)past[i] * sizeof(int32_t));
        db->n_past[lanes[i]] = past[i];
    }
}

/* What one decoder_block call runs on: n rows of db->x that are either one lane's prompt
 * (lanes == NULL: rows at positions 0..n-1 of lane `lane`, in cache rows base..base+n-1) or
 * a step's rows, row k a token of lane lanes[k] (db->step_idx filled: positions, tables). */
struct block_rows {
    int n, base;
    int lane;
    const int *lanes;
};

/* linear over n rows; a step splits them so that each row gets its lone-row bits */
static void linear_rows(struct wc_stream *s, const struct block_rows *br, float *out,
                        const float *in, const struct wc_mat *w, const float *b, enum wc_act act,
                        int accumulate) {
    int chunk = br->lanes ? s->be->ops->linear_exact_rows : br->n;
    for (int r = 0; r < br->n; r += chunk) {
        int m = br->n - r < chunk ? br->n - r : chunk;
        s->be->ops->linear(s, out + (size_t)r * w->rows, 0, in + (size_t)r * w->cols, w, b, m, act,
                           accumulate);
    }
}

/* A layer norm of db->x and the projections that read it: where the backend fuses them
 * (norm_linear, over at most linear_exact_rows rows a call) each projection normalises its own
 * input, one launch instead of two; else the norm runs once into db->h. The bits are the same
 * either way (backend.h). */
struct pre_norm {
    const float *g, *b;
    int fused;
};

static struct pre_norm pre_norm(struct decoder_batch *db, struct wc_stream *s,
                                const struct block_rows *br, const float *g, const float *b) {
    const struct wc_backend_ops *op = s->be->ops;
    struct pre_norm pn = {g, b, op->norm_linear && (br->lanes || br->n <= op->linear_exact_rows)};
    if (!pn.fused)
        op->layernorm(s, db->h, db->x, g, b, br->n, db->hp->n_text_state);
    return pn;
}

/* out = act(LN(db->x) . w + b) over br's rows (linear_rows's split) */
static void proj(struct wc_stream *s, const struct decoder_batch *db, const struct block_rows *br,
                 const struct pre_norm *pn, float *out, const struct wc_mat *w, const float *b,
                 enum wc_act act) {
    if (!pn->fused) {
        linear_rows(s, br, out, db->h, w, b, act, 0);
        return;
    }
    int chunk = s->be->ops->linear_exact_rows;
    for (int r = 0; r < br->n; r += chunk) {
        int m = br->n - r < chunk ? br->n - r : chunk;
        s->be->ops->norm_linear(s, out + (size_t)r * w->rows, 0, db->x + (size_t)r * w->cols, pn->g,
                                pn->b, w, b, m, act, 0);
    }
}

/* A step's projections that follow one another (links), through the backend's step_chain:
 * 1 where it took them, 0 where the caller issues them as ops (the same bits either way). */
static int chained(struct wc_stream *s, const struct block_rows *br,
                   const struct wc_chain_link *links, int n_links) {
    const struct wc_backend_ops *op = s->be->ops;
    return br->lanes && op->step_chain && op->norm_linear && op->norm_qkv &&
           br->n <= op->linear_exact_rows && op->step_chain(s, links, n_links, br->n) == 0;
}

/* A step's q, k and v of block b as one norm_qkv link (k and v into the lanes' cache rows) */
static struct wc_chain_link qkv_link(const struct decoder_batch *db, const struct wc_block_w *b,
                                     int l) {
    size_t layer = (size_t)l * db->n_slots * db->hp->n_text_state;
    return (struct wc_chain_link){.out = db->q,
                                  .in = db->x,
                                  .g = b->attn_ln_g,
                                  .lb = b->attn_ln_b,
                                  .w = {&b->attn.q, &b->attn.k, &b->attn.v},
                                  .b = {b->attn.q_b, NULL, b->attn.v_b},
                                  .k_dst = db->k_cache + layer,
                                  .v_dst = db->v_cache + layer,
                                  .dst_row = db->step_idx + 2 * db->max_rows};
}

/* Block l's ops on a step as chain links (backend.h step_chain), named for what
 * decoder_block issues: its norm and q/k/v (k and v into the lanes' cache rows), the
 * self-attention, its output projection, the cross query, the cross-attention, its output
 * projection, fc1 and fc2. */
struct block_links {
    struct wc_chain_link qkv, gather, attn_out, cross_q, cross, cross_out, fc1, fc2;
};

static struct block_links block_links(struct decoder_batch *db, int l) {
    const struct wc_block_w *b = &db->w->dec[l];
    const struct wc_hparams *hp = db->hp;
    int c = hp->n_text_state;
    size_t layer = (size_t)l * db->n_slots * c;
    size_t audio_stride = (size_t)hp->n_text_layer * hp->n_audio_ctx * c;
    return (struct block_links){
        .qkv = qkv_link(db, b, l),
        /* the key bound is the context, not this step's longest row: each row stops at its own
         * count (n_kv_seq), and a step's launches stay the same from one step to the next (a
         * CUDA graph can replay them) */
        .gather = {.kind = WC_LINK_GATHER,
                   .out = db->att,
                   .in = db->q,
                   .attn = {.k = db->k_cache + layer,
                            .v = db->v_cache + layer,
                            .slots = db->step_idx + 3 * db->max_rows,
                            .ld_slots = hp->n_text_ctx,
                            .n_kv_seq = db->step_idx,
                            .n_kv = hp->n_text_ctx,
                            .c = c,
                            .n_head = hp->n_text_head}},
        .attn_out =
            {.out = db->x, .in = db->att, .w = {&b->attn.o}, .b = {b->attn.o_b}, .accumulate = 1},
        .cross_q = {.out = db->q,
                    .in = db->x,
                    .g = b->cross_ln_g,
                    .lb = b->cross_ln_b,
                    .w = {&b->cross.q},
                    .b = {b->cross.q_b}},
        .cross = {.kind = WC_LINK_ROWS,
                  .out = db->att,
                  .in = db->q,
                  .attn = {.k = audio_kv(db, db->xk, 0, l),
                           .v = audio_kv(db, db->xv, 0, l),
                           .kv_dtype = db->xkv,
                           .ld_kv = c,
                           .s_len = hp->n_audio_ctx,
                           .lane_stride = audio_stride,
                           .lane_of_row = db->step_idx + db->max_rows,
                           .c = c,
                           .n_head = hp->n_text_head}},
        .cross_out =
            {.out = db->x, .in = db->att, .w = {&b->cross.o}, .b = {b->cross.o_b}, .accumulate = 1},
        .fc1 = {.out = db->mlp,
                .in = db->x,
                .g = b->mlp_ln_g,
                .lb = b->mlp_ln_b,
                .w = {&b->mlp0},
                .b = {b->mlp0_b},
                .act = WC_ACT_GELU},
        .fc2 = {.out = db->x, .in = db->mlp, .w = {&b->mlp2}, .b = {b->mlp2_b}, .accumulate = 1}};
}

/* A step's block as one chain where the backend takes it (1; else 0, nothing issued). */
static int block_chained(struct wc_stream *s, const struct block_rows *br,
                         const struct block_links *bl) {
    const struct wc_chain_link links[] = {bl->qkv,   bl->gather,    bl->attn_out, bl->cross_q,
                                          bl->cross, bl->cross_out, bl->fc1,      bl->fc2};
    return chained(s, br, links, (int)(sizeof links / sizeof links[0]));
}

/* Block l over br's rows. qkv_done: the chain that ended block l - 1 made this block's q, k and
 * v. Returns 1 when this block's last chain made block l + 1's (so must the next call be told). */
static int decoder_block(struct decoder_batch *db, struct wc_stream *s, int l,
                         const struct block_rows *br, int qkv_done) {
    const struct wc_backend_ops *op = s->be->ops;
    const struct wc_block_w *b = &db->w->dec[l];
    const struct wc_hparams *hp = db->hp;
    int c = hp->n_text_state, n_head = hp->n_text_head, n = br->n;
    float *kc = db->k_cache + (size_t)l * db->n_slots * c;
    float *vc = db->v_cache + (size_t)l * db->n_slots * c;
    const struct block_links bl = block_links(db, l);
    if (!qkv_done && br->lanes && block_chained(s, br, &bl))
        return 0;

    /* self-attention: a prompt's keys and values go straight into its lane's rows; a step's
     * are made for all its rows together in db->mlp (free until the MLP below), then copied
     * to each row's own lane (db->step_idx: n_kv, lane_of, dst_row, table), or written there
     * by the backend's norm_qkv */
    const int32_t *dst_row = db->step_idx + 2 * db->max_rows;
    if (!qkv_done && br->lanes && op->norm_qkv) { /* all of that in one op (the same bits) */
        const struct wc_mat *const w3[3] = {&b->attn.q, &b->attn.k, &b->attn.v};
        const float *const b3[3] = {b->attn.q_b, NULL, b->attn.v_b};
        for (int r = 0; r < n; r += op->linear_exact_rows) {
            int m = n - r < op->linear_exact_rows ? n - r : op->linear_exact_rows;
            op->norm_qkv(s, db->q + (size_t)r * c, kc, vc, dst_row + r, db->x + (size_t)r * c,
                         b->attn_ln_g, b->attn_ln_b, w3, b3, m);
        }
    } else if (!qkv_done) {
        float *k_new = br->lanes ? db->mlp : kc + (size_t)br->base * c;
        float *v_new = br->lanes ? db->mlp + (size_t)n * c : vc + (size_t)br->base * c;
        struct pre_norm pn = pre_norm(db, s, br, b->attn_ln_g, b->attn_ln_b);
        proj(s, db, br, &pn, db->q, &b->attn.q, b->attn.q_b, WC_ACT_NONE);
        proj(s, db, br, &pn, k_new, &b->attn.k, NULL, WC_ACT_NONE);
        proj(s, db, br, &pn, v_new, &b->attn.v, b->attn.v_b, WC_ACT_NONE);
        if (br->lanes) {
            op->rows_scatter(s, kc, k_new, dst_row, n, c);
            op->rows_scatter(s, vc, v_new, dst_row, n, c);
        }
    }
    if (!br->lanes) {
        op->attention(s, db->att, db->q, kc + (size_t)br->base * c, vc + (size_t)br->base * c,
                      WC_F32, c, n, n, c, n_head, 0);
    } else {
        const struct wc_chain_attn *a = &bl.gather.attn;
        op->attention_gather(s, bl.gather.out, bl.gather.in, a->k, a->v, a->slots, a->ld_slots,
                             a->n_kv_seq, n, a->n_kv, c, n_head);
    }
    /* the output projection, then the cross-attention's norm and query: one chain on a step */
    const struct wc_chain_link out_q[] = {bl.attn_out, bl.cross_q};
    struct pre_norm pn;
    if (!chained(s, br, out_q, 2)) {
        linear_rows(s, br, db->x, db->att, &b->attn.o, b->attn.o_b, WC_ACT_NONE, 1);
        pn = pre_norm(db, s, br, b->cross_ln_g, b->cross_ln_b);
        proj(s, db, br, &pn, db->q, &b->cross.q, b->cross.q_b, WC_ACT_NONE);
    }

    /* cross-attention, each row over its own lane's audio */
    if (!br->lanes) {
        int audio = db->region_of[br->lane];
        op->attention(s, db->att, db->q, audio_kv(db, db->xk, audio, l),
                      audio_kv(db, db->xv, audio, l), db->xkv, c, n, hp->n_audio_ctx, c, n_head,
                      -1);
    } else {
        const struct wc_chain_attn *a = &bl.cross.attn;
        op->attention_rows(s, bl.cross.out, bl.cross.in, a->k, a->v, a->kv_dtype, a->ld_kv,
                           a->lane_stride, a->lane_of_row, n, a->s_len, c, n_head);
    }
    /* on a step, one chain: the output projection, the MLP, and the next block's q, k, v */
    struct wc_chain_link out_mlp[] = {bl.cross_out, bl.fc1, bl.fc2, {0}};
    int next = l + 1 < hp->n_text_layer;
    if (next)
        out_mlp[3] = qkv_link(db, &db->w->dec[l + 1], l + 1);
    if (chained(s, br, out_mlp, 3 + next))
        return next;
    linear_rows(s, br, db->x, db->att, &b->cross.o, b->cross.o_b, WC_ACT_NONE, 1);

    /* a prompt's rows in one op where the backend has it: the bits of the three ops below (all
     * rows at once, as linear_rows takes a prompt), in fewer launches and passes (backend.h) */
    if (!br->lanes && op->norm_mlp) {
        op->norm_mlp(s, db->x, b->mlp_ln_g, b->mlp_ln_b, &b->mlp0, b->mlp0_b, &b->mlp2, b->mlp2_b,
                     n, db->mlp);
        return 0;
    }
    pn = pre_norm(db, s, br, b->mlp_ln_g, b->mlp_ln_b);
    proj(s, db, br, &pn, db->mlp, &b->mlp0, b->mlp0_b, WC_ACT_GELU);
    linear_rows(s, br, db->x, db->mlp, &b->mlp2, b->mlp2_b, WC_ACT_NONE, 1);
    return 0;
}

/* Final norm and the output projection of n rows of db->x (at rows[], or 0..n). */
static int logits_out(struct decoder_batch *db, struct wc_stream *s, const struct block_rows *br,
                      const int *rows, int n, float *logits_host) {
    const struct wc_backend_ops *op = s->be->ops;
    int c = db->hp->n_text_state, n_vocab = db->hp->n_vocab;
    struct block_rows out_rows = *br;
    out_rows.n = n;
    if (rows) {
        for (int i = 0; i < n; i++)
            op->layernorm(s, db->h + (size_t)i * c, db->x + (size_t)rows[i] * c, db->w->dec_ln_g,
                          db->w->dec_ln_b, 1, c);
        linear_rows(s, &out_rows, db->logits, db->h, &db->w->tok_emb, NULL, WC_ACT_NONE, 0);
    } else {
        struct pre_norm pn = pre_norm(db, s, &out_rows, db->w->dec_ln_g, db->w->dec_ln_b);
        proj(s, db, &out_rows, &pn, db->logits, &db->w->tok_emb, NULL, WC_ACT_NONE);
    }
    if (!logits_host) /* kept in backend memory (db->logits) for the caller's next op */
        return s->err;
    if (n > 0)
        op->download(s, logits_host, db->logits, (size_t)n * n_vocab * sizeof(float));
    return wc_stream_sync(s);
}

int decoder_batch_prefill(struct decoder_batch *db, struct wc_stream *s, int lane,
                          const int32_t *tokens, int n, const int *rows, int n_rows,
                          float *logits_host) {
    int c = db->hp->n_text_state, n_ctx = db->hp->n_text_ctx;
    if (s->err)
        return s->err;
    if (lane < 0 || lane >= db->n_lanes || n < 1 || n > n_ctx || n_rows < 0 || n_rows > 2) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: cannot start lane %d of %d with %d tokens (context %d)", lane,
                       db->n_lanes, n, n_ctx);
        return s->err;
    }
    struct block_rows br = {.n = n, .base = lane * n_ctx, .lane = lane};
    for (int p = 0; p < n_ctx; p++) /* the lane's own rows again, after a reorder */
        db->slots_host[(size_t)lane * n_ctx + p] = lane * n_ctx + p;
    s->be->ops->embed(s, db->x, tokens, NULL, n, &db->w->tok_emb, db->w->dec_pos, 0, c);
    for (int l = 0; l < db->hp->n_text_layer; l++)
        decoder_block(db, s, l, &br, 0);
    db->n_past[lane] = n;
    return logits_out(db, s, &br, rows, n_rows, logits_host);
}

/* A step's ops, after decoder_batch_step filled db->step_host and db->pos_host: the same
 * launches on the same buffers for every step of n rows, so a backend may replay them. */
static void step_ops(struct decoder_batch *db, struct wc_stream *s, const int *lanes,
                     const int32_t *tokens, int n) {
    const struct wc_backend_ops *op = s->be->ops;
    int c = db->hp->n_text_state, n_ctx = db->hp->n_text_ctx;
    op->embed(s, db->x, tokens, db->pos_host, n, &db->w->tok_emb, db->w->dec_pos, 0, c);
    op->upload(s, db->step_idx, db->step_host,
               ((size_t)3 * db->max_rows + (size_t)n * n_ctx) * sizeof(int32_t));
    struct block_rows br = {.n = n, .lanes = lanes};
    for (int l = 0, qkv_done = 0; l < db->hp->n_text_layer; l++)
        qkv_done = decoder_block(db, s, l, &br, qkv_done);
    logits_out(db, s, &br, NULL, n, NULL);
}

int decoder_batch_step(struct decoder_batch *db, struct wc_stream *s, const int *lanes,
                       const int32_t *tokens, int n, float *logits_host) {
    const struct wc_backend_ops *op = s->be->ops;
    int n_ctx = db->hp->n_text_ctx;
    if (s->err)
        return s->err;
    if (n < 1 || n > db->max_rows) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: %d rows in a step of at most %d", n,
                       db->max_rows);
        return s->err;
    }
    int32_t *n_kv = db->step_host, *lane_of = n_kv + db->max_rows,
            *dst_row = lane_of + db->max_rows;
    int32_t *table = dst_row + db->max_rows;
    for (int k = 0; k < n; k++) {
        int lane = lanes[k], pos = lane >= 0 && lane < db->n_lanes ? db->n_past[lane] : -1;
        if (pos < 0 || pos >= n_ctx) {
            for (int i = 0; i < k; i++) /* the positions taken so far, back */
                db->n_past[lanes[i]]--;
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                           "decoder: lane %d at position %d cannot step (context %d)", lane, pos,
                           n_ctx);
            return s->err;
        }
        /* a lane writes only its own rows; its table row up to pos is its own (or what
         * decoder_batch_reorder gave it) with, at pos, this row, made by this step (the K/V
         * are scattered before the attention reads them) */
        dst_row[k] = db->slots_host[(size_t)lane * n_ctx + pos] = lane * n_ctx + pos;
        db->pos_host[k] = pos;
        n_kv[k] = pos + 1;
        lane_of[k] = db->region_of[lane]; /* its audio region */
        memcpy(table + (size_t)k * n_ctx, db->slots_host + (size_t)lane * n_ctx,
               (size_t)(pos + 1) * sizeof(int32_t));
        db->n_past[lane]++; /* a lane's next row in this step is its next position */
    }
    /* one recording per row count (backend.h step_graph_*); the ops are issued again when
     * a recording fails, as none of them ran */
    if (op->step_graph_begin && op->step_graph_begin(s, n)) {
        step_ops(db, s, lanes, tokens, n);
        if (op->step_graph_end(s, n))
            step_ops(db, s, lanes, tokens, n);
    } else {
        step_ops(db, s, lanes, tokens, n);
    }
    if (!logits_host) /* kept in backend memory (db->logits) for the caller's next op */
        return s->err;
    op->download(s, logits_host, db->logits, (size_t)n * db->hp->n_vocab * sizeof(float));
    return wc_stream_sync(s);
}
