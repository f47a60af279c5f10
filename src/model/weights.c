/*
 * weights.c — hands every tensor of a model file to the backend, which converts and stores it
 * in its own format (f32 host memory on the CPU, f16 device memory on CUDA). Block-quantized
 * matrices go as they are to a backend that holds them (the CPU), widened to f16 otherwise
 * (ggml_quant.h); either way they compute with the same values.
 */
#include "model/weights.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libwhisperc.h"
#include "model/ggml_quant.h"
#include "model/model_file.h"
#include "util.h"

struct upload_ctx {
    struct wc_backend *be;
    const struct wc_model_file *f;
    char *err;
    size_t err_size;
    int rc;
    bool keep_blocks; /* the backend holds quantized matrices as they are */
};

static const struct wc_tensor_view *find(struct upload_ctx *u, const char *name) {
    const struct wc_tensor_view *t = model_file_tensor(u->f, name);
    if (!t && !u->rc) { /* model_file_open validated the set, so this is a bug */
        u->rc = WHISPERC_ERR_MODEL_FORMAT;
        wc_errf(u->err, u->err_size, "%s: tensor %s missing", u->f->path, name);
    }
    return t;
}

/* name's data as the backend takes it, of type *dtype: f32 or f16, or quantized blocks as they
 * are where keep_blocks, else widened to halves in *tmp, which the caller frees. NULL (u->rc
 * set) when the tensor is missing or memory is not. */
static const void *data_of(struct upload_ctx *u, const char *name, bool keep_blocks,
                           const struct wc_tensor_view **t, enum wc_dtype *dtype, void **tmp) {
    *tmp = NULL;
    *t = find(u, name);
    if (!*t || u->rc)
        return NULL;
    *dtype = (*t)->dtype;
    if (!(*t)->qtype)
        return (*t)->data;
    if (keep_blocks) {
        *dtype = (enum wc_dtype)(*t)->qtype;
        return (*t)->data;
    }
    uint16_t *h = malloc((*t)->n_values * sizeof *h);
    if (!h) {
        u->rc = WHISPERC_ERR_NO_MEMORY;
        wc_errf(u->err, u->err_size, "%s: out of memory widening %s", u->f->path, name);
        return NULL;
    }
    ggml_dequantize_f16((*t)->qtype, (*t)->data, h, (*t)->n_values);
    return *tmp = h;
}

/* After an upload: the error named, or t's pages of the mapping released (the backend holds
 * its copy). */
static void uploaded(struct upload_ctx *u, const char *name, const struct wc_tensor_view *t) {
    if (u->rc)
        wc_errf(u->err, u->err_size, "%s: cannot upload %s to the %s backend", u->f->path, name,
                u->be->ops->name);
    else
        model_file_drop_pages(t);
}

static void up_mat(struct upload_ctx *u, struct wc_mat *out, const char *name) {
    const struct wc_tensor_view *t;
    enum wc_dtype dt;
    void *tmp;
    const void *src = data_of(u, name, u->keep_blocks, &t, &dt, &tmp);
    if (!src)
        return;
    u->rc = u->be->ops->upload_mat(u->be, out, src, dt, (int)t->shape[0], (int)t->shape[1]);
    free(tmp);
    uploaded(u, name, t);
}

static void up_conv(struct upload_ctx *u, struct wc_mat *out, const char *name) {
    const struct wc_tensor_view *t;
    enum wc_dtype dt;
    void *tmp;
    const void *src = data_of(u, name, false, &t, &dt, &tmp);
    if (!src)
        return;
    u->rc = u->be->ops->upload_conv(u->be, out, src, dt, (int)t->shape[0], (int)t->shape[1],
                                    (int)t->shape[2]);
    free(tmp);
    uploaded(u, name, t);
}

static void up_f32(struct upload_ctx *u, const float **out, const char *name) {
    const struct wc_tensor_view *t;
    enum wc_dtype dt;
    void *tmp;
    const void *src = data_of(u, name, false, &t, &dt, &tmp);
    if (!src)
        return;
    float *p = NULL;
    u->rc = u->be->ops->upload_f32(u->be, &p, src, dt, t->n_values);
    free(tmp);
    uploaded(u, name, t);
    *out = p;
}

/* prefix is e.g. "decoder.blocks.3.attn" */
static void up_attn(struct upload_ctx *u, struct wc_attn_w *a, const char *prefix) {
    char n[128];
    snprintf(n, sizeof n, "%s.query.weight", prefix);
    up_mat(u, &a->q, n);
    snprintf(n, sizeof n, "%s.query.bias", prefix);
    up_f32(u, &a->q_b, n);
    snprintf(n, sizeof n, "%s.key.weight", prefix);
    up_mat(u, &a->k, n);
    snprintf(n, sizeof n, "%s.value.weight", prefix);
    up_mat(u, &a->v, n);
    snprintf(n, sizeof n, "%s.value.bias", prefix);
    up_f32(u, &a->v_b, n);
    snprintf(n, sizeof n, "%s.out.weight", prefix);
    up_mat(u, &a->o, n);
    snprintf(n, sizeof n, "%s.out.bias", prefix);
    up_f32(u, &a->o_b, n);
}

static void up_block(struct upload_ctx *u, struct wc_block_w *b, const char *side, int i,
                     int cross) {
    char p[96], n[128];
    snprintf(p, sizeof p, "%s.blocks.%d", side, i);
    snprintf(n, sizeof n, "%s.attn", p);
    up_attn(u, &b->attn, n);
    snprintf(n, sizeof n, "%s.attn_ln.weight", p);
    up_f32(u, &b->attn_ln_g, n);
    snprintf(n, sizeof n, "%s.attn_ln.bias", p);
    up_f32(u, &b->attn_ln_b, n);
    if (cross) {
        snprintf(n, sizeof n, "%s.cross_attn", p);
        up_attn(u, &b->cross, n);
        snprintf(n, sizeof n, "%s.cross_attn_ln.weight", p);
        up_f32(u, &b->cross_ln_g, n);
        snprintf(n, sizeof n, "%s.cross_attn_ln.bias", p);
        up_f32(u, &b->cross_ln_b, n);
    }
    snprintf(n, sizeof n, "%s.mlp.0.weight", p);
    up_mat(u, &b->mlp0, n);
    snprintf(n, sizeof n, "%s.mlp.0.bias", p);
    up_f32(u, &b->mlp0_b, n);
    snprintf(n, sizeof n, "%s.mlp.2.weight", p);
    up_mat(u, &b->mlp2, n);
    snprintf(n, sizeof n, "%s.mlp.2.bias", p);
    up_f32(u, &b->mlp2_b, n);
    snprintf(n, sizeof n, "%s.mlp_ln.weight", p);
    up_f32(u, &b->mlp_ln_g, n);
    snprintf(n, sizeof n, "%s.mlp_ln.bias", p);
    up_f32(u, &b->mlp_ln_b, n);
}

int weights_upload(struct wc_weights *w, struct wc_backend *be, const struct wc_model_file *f,
                   bool keep_quant, char *err, size_t err_size) {
    memset(w, 0, sizeof *w);
    const struct wc_hparams *hp = &f->hp;
    w->enc = calloc((size_t)hp->n_audio_layer, sizeof *w->enc);
    w->dec = calloc((size_t)hp->n_text_layer, sizeof *w->dec);
    if (!w->enc || !w->dec) {
        weights_free(w);
        wc_errf(err, err_size, "%s: out of memory", f->path);
        return WHISPERC_ERR_NO_MEMORY;
    }
    struct upload_ctx u = {be, f, err, err_size, 0, keep_quant && be->ops->holds_quant};
    up_conv(&u, &w->conv1, "encoder.conv1.weight");
    up_f32(&u, &w->conv1_b, "encoder.conv1.bias");
    up_conv(&u, &w->conv2, "encoder.conv2.weight");
    up_f32(&u, &w->conv2_b, "encoder.conv2.bias");
    up_f32(&u, &w->enc_pos, "encoder.positional_embedding");
    for (int i = 0; i < hp->n_audio_layer && !u.rc; i++)
        up_block(&u, &w->enc[i], "encoder", i, 0);
    up_f32(&u, &w->ln_post_g, "encoder.ln_post.weight");
    up_f32(&u, &w->ln_post_b, "encoder.ln_post.bias");
    up_mat(&u, &w->tok_emb, "decoder.token_embedding.weight");
    up_f32(&u, &w->dec_pos, "decoder.positional_embedding");
    for (int i = 0; i < hp->n_text_layer && !u.rc; i++)
        up_block(&u, &w->dec[i], "decoder", i, 1);
    up_f32(&u, &w->dec_ln_g, "decoder.ln.weight");
    up_f32(&u, &w->dec_ln_b, "decoder.ln.bias");
    if (u.rc)
        weights_free(w);
    return u.rc;
}

void weights_free(struct wc_weights *w) {
    free(w->enc);
    free(w->dec);
    memset(w, 0, sizeof *w);
}
