/*
 * model_file.c — see model_file.h.
 *
 * The file is mapped read-only and parsed once. Every tensor the file may hold is listed up
 * front from the hparams (name, PyTorch-order shape); the list, sorted by name, is both the
 * validator (unknown, duplicate, missing, wrong shape) and the index model_file_tensor()
 * searches. Tensor names point into that list, so a tensor view owns no allocation of its own.
 */
#include "model/model_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libwhisperc.h"
#include "model/ggml_quant.h"
#include "util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "model_file.c reads little-endian data in place: big-endian hosts are not supported"
#endif

#define GGML_MAGIC    0x67676d6cu
#define N_FFT_BINS    201
#define MAX_LAYERS    64
#define MAX_STATE     8192
#define MAX_HEADS     256
#define MAX_AUDIO_CTX 1500 /* 30 s of audio after the stride-2 conv */
#define MAX_TEXT_CTX  4096
#define MAX_TOKEN_LEN 4096
#define MAX_NAME_LEN  255
#define EOT_GPT2      50256 /* len(gpt2.tiktoken); multilingual models add one */

/* The tensor types read (model/ggml_quant.h widens the block types). */
#define SUPPORTED_TYPES "f32, f16, q4_0, q4_1, q5_0, q5_1 and q8_0"

/* One tensor the hparams call for. */
struct exp_tensor {
    char name[128];
    int n_dims;
    int64_t shape[4]; /* PyTorch order */
    int conv_bias;    /* shape [n][1]; [n] is accepted too */
    int order;        /* position in the state dict, for reporting the first missing one */
    int file_index;   /* index into tensors[], -1 until seen */
};

/* The public struct is the first member, so a wc_model_file pointer is also a priv pointer. */
struct priv {
    struct wc_model_file pub;
    struct exp_tensor *exp; /* sorted by name */
    int n_exp;
};

/* ---------------------------------------------------------------------------------------- */
/* Reading                                                                                  */

struct rd {
    const uint8_t *p;
    size_t size, pos;
    const char *path;
    char *err;
    size_t err_size;
};

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Checks that n more bytes exist; else writes "truncated" naming `what`. */
static int rd_need(struct rd *r, size_t n, const char *what) {
    if (r->size - r->pos >= n)
        return 0;
    wc_errf(r->err, r->err_size,
            "%s: truncated: the file ends inside %s (needs %zu bytes at offset %zu, file is %zu "
            "bytes)",
            r->path, what, n, r->pos, r->size);
    return -1;
}

static int rd_u32(struct rd *r, uint32_t *v, const char *what) {
    if (rd_need(r, 4, what))
        return -1;
    *v = le32(r->p + r->pos);
    r->pos += 4;
    return 0;
}

static int rd_i32(struct rd *r, int32_t *v, const char *what) {
    uint32_t u;
    if (rd_u32(r, &u, what))
        return -1;
    memcpy(v, &u, sizeof *v);
    return 0;
}

/* "[512,80,3]" */
static void fmt_shape(char *dst, size_t dst_size, int n_dims, const int64_t *shape) {
    size_t n = 0;
    n += (size_t)snprintf(dst + n, dst_size - n, "[");
    for (int i = 0; i < n_dims && n < dst_size; i++)
        n += (size_t)snprintf(dst + n, dst_size - n, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (n < dst_size)
        snprintf(dst + n, dst_size - n, "]");
}

/* ggml type names, by ggml_type value. */
static const char *ggml_type_name(int32_t t) {
    static const char *const names[] = {
        "f32",     "f16",    "q4_0",    "q4_1",  "q4_2",   "q4_3",  "q5_0",  "q5_1",
        "q8_0",    "q8_1",   "q2_K",    "q3_K",  "q4_K",   "q5_K",  "q6_K",  "q8_K",
        "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s", "iq4_xs",
        "i8",      "i16",    "i32",     "i64",   "f64",    "iq1_m", "bf16"};
    if (t >= 0 && (size_t)t < sizeof names / sizeof names[0])
        return names[t];
    return NULL;
}

/* ggml_ftype names (the hparams' ftype modulo the quantization version factor 1000). */
static const char *ggml_ftype_name(int32_t ft) {
    switch (ft) {
    case 0: return "f32";
    case 1: return "f16";
    case 2: return "q4_0";
    case 3: return "q4_1";
    case 4: return "q4_1 with f16";
    case 7: return "q8_0";
    case 8: return "q5_0";
    case 9: return "q5_1";
    case 10: return "q2_K";
    case 11: return "q3_K";
    case 12: return "q4_K";
    case 13: return "q5_K";
    case 14: return "q6_K";
    case 24: return "bf16";
    default: return "unknown";
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Hyperparameters                                                                          */

static int check_range(struct rd *r, const char *name, int32_t v, int32_t lo, int32_t hi) {
    if (v >= lo && v <= hi)
        return 0;
    wc_errf(r->err, r->err_size, "%s: hparams: %s is %d, expected %d to %d", r->path, name, (int)v,
            (int)lo, (int)hi);
    return -1;
}

static int check_hparams(struct rd *r, const struct wc_hparams *hp, int *rc) {
    *rc = WHISPERC_ERR_MODEL_FORMAT;
    if (hp->n_mels != 80 && hp->n_mels != 128) {
        wc_errf(r->err, r->err_size, "%s: hparams: n_mels is %d, expected 80 or 128", r->path,
                (int)hp->n_mels);
        return -1;
    }
    if (check_range(r, "n_audio_layer", hp->n_audio_layer, 1, MAX_LAYERS) ||
        check_range(r, "n_text_layer", hp->n_text_layer, 1, MAX_LAYERS) ||
        check_range(r, "n_audio_state", hp->n_audio_state, 1, MAX_STATE) ||
        check_range(r, "n_text_state", hp->n_text_state, 1, MAX_STATE) ||
        check_range(r, "n_audio_head", hp->n_audio_head, 1, MAX_HEADS) ||
        check_range(r, "n_text_head", hp->n_text_head, 1, MAX_HEADS) ||
        check_range(r, "n_audio_ctx", hp->n_audio_ctx, 1, MAX_AUDIO_CTX) ||
        check_range(r, "n_text_ctx", hp->n_text_ctx, 1, MAX_TEXT_CTX))
        return -1;
    if (hp->n_audio_state % hp->n_audio_head) {
        wc_errf(r->err, r->err_size,
                "%s: hparams: n_audio_head %d does not divide n_audio_state %d", r->path,
                (int)hp->n_audio_head, (int)hp->n_audio_state);
        return -1;
    }
    if (hp->n_text_state % hp->n_text_head) {
        wc_errf(r->err, r->err_size, "%s: hparams: n_text_head %d does not divide n_text_state %d",
                r->path, (int)hp->n_text_head, (int)hp->n_text_state);
        return -1;
    }
    /* heads of at most 256 values (the CPU's in-place attention keeps a head's row on the
     * stack: src/cpu/attention.c ATT_MAX_D; every Whisper size has 64) */
    if (hp->n_audio_state / hp->n_audio_head > 256 || hp->n_text_state / hp->n_text_head > 256) {
        wc_errf(r->err, r->err_size,
                "%s: hparams: attention heads of %d (audio) and %d (text) values; whisper-c "
                "takes at most 256 (Whisper's have 64)",
                r->path, (int)(hp->n_audio_state / hp->n_audio_head),
                (int)(hp->n_text_state / hp->n_text_head));
        *rc = WHISPERC_ERR_UNSUPPORTED;
        return -1;
    }
    /* The decoder's cross-attention projects the encoder output with n_text_state x
     * n_text_state matrices (openai-whisper model.py), so the two widths must agree. */
    if (hp->n_audio_state != hp->n_text_state) {
        wc_errf(r->err, r->err_size, "%s: hparams: n_audio_state %d differs from n_text_state %d",
                r->path, (int)hp->n_audio_state, (int)hp->n_text_state);
        return -1;
    }
    /* 51864: .en (gpt2 ranks, eot 50256, 99 languages); 51865: multilingual, 99 languages;
     * 51866: multilingual, 100 languages (large-v3). */
    if (hp->n_vocab < 51864 || hp->n_vocab > 51866) {
        wc_errf(r->err, r->err_size,
                "%s: hparams: n_vocab is %d, expected 51864 (.en), 51865 or 51866 (multilingual)",
                r->path, (int)hp->n_vocab);
        return -1;
    }
    if (hp->ftype < 0) {
        wc_errf(r->err, r->err_size, "%s: hparams: ftype is %d", r->path, (int)hp->ftype);
        return -1;
    }
    /* whisper.cpp's quantize writes ftype = 1000 * quantization version + ggml_ftype; files of
     * versions 0 and 1 (ggml before mid-2023) lay their blocks out differently. */
    int32_t ft = hp->ftype % 1000, version = hp->ftype / 1000;
    bool known = ft == 0 || ft == 1 || ft == 2 || ft == 3 || ft == 7 || ft == 8 || ft == 9;
    if (!known || (ft > 1 && version != 2)) {
        *rc = WHISPERC_ERR_UNSUPPORTED;
        wc_errf(r->err, r->err_size,
                "%s: ftype %d (%s, quantization version %d) is not supported; whisper-c "
                "reads " SUPPORTED_TYPES " files (quantization version 2)",
                r->path, (int)hp->ftype, ggml_ftype_name(ft), (int)version);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The expected tensors                                                                     */

static void add(struct exp_tensor *e, int *n, int n_dims, int64_t d0, int64_t d1, int64_t d2,
                const char *fmt_prefix, int layer, const char *suffix) {
    struct exp_tensor *t = &e[(*n)++];
    memset(t, 0, sizeof *t);
    if (layer >= 0)
        snprintf(t->name, sizeof t->name, "%s.%d.%s", fmt_prefix, layer, suffix);
    else
        snprintf(t->name, sizeof t->name, "%s%s", fmt_prefix, suffix);
    t->n_dims = n_dims;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->shape[2] = d2;
    t->order = *n - 1;
    t->file_index = -1;
}

/* attn or cross_attn of one block: query, key (no bias), value, out, and its layer norm. */
static void add_attn(struct exp_tensor *e, int *n, const char *blocks, int i, const char *attn,
                     int64_t s) {
    static const char *const parts[] = {"query.weight", "query.bias", "key.weight", "value.weight",
                                        "value.bias",   "out.weight", "out.bias"};
    char sfx[48];
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
        snprintf(sfx, sizeof sfx, "%s.%s", attn, parts[k]);
        int is_w = strstr(parts[k], "weight") != NULL;
        add(e, n, is_w ? 2 : 1, s, is_w ? s : 0, 0, blocks, i, sfx);
    }
    snprintf(sfx, sizeof sfx, "%s_ln.weight", attn);
    add(e, n, 1, s, 0, 0, blocks, i, sfx);
    snprintf(sfx, sizeof sfx, "%s_ln.bias", attn);
    add(e, n, 1, s, 0, 0, blocks, i, sfx);
}

static void add_mlp(struct exp_tensor *e, int *n, const char *blocks, int i, int64_t s) {
    add(e, n, 2, 4 * s, s, 0, blocks, i, "mlp.0.weight");
    add(e, n, 1, 4 * s, 0, 0, blocks, i, "mlp.0.bias");
    add(e, n, 2, s, 4 * s, 0, blocks, i, "mlp.2.weight");
    add(e, n, 1, s, 0, 0, blocks, i, "mlp.2.bias");
    add(e, n, 1, s, 0, 0, blocks, i, "mlp_ln.weight");
    add(e, n, 1, s, 0, 0, blocks, i, "mlp_ln.bias");
}

static int exp_cmp(const void *a, const void *b) {
    return strcmp(((const struct exp_tensor *)a)->name, ((const struct exp_tensor *)b)->name);
}

static int exp_key_cmp(const void *key, const void *elt) {
    return strcmp((const char *)key, ((const struct exp_tensor *)elt)->name);
}

/* The state dict of openai-whisper's Whisper(dims), sorted by name. NULL when out of memory. */
static struct exp_tensor *expected_tensors(const struct wc_hparams *hp, int *n_out) {
    int cap = 5 + 15 * hp->n_audio_layer + 2 + 2 + 24 * hp->n_text_layer + 2;
    struct exp_tensor *e = malloc((size_t)cap * sizeof *e);
    if (!e)
        return NULL;
    int n = 0;
    int64_t sa = hp->n_audio_state, st = hp->n_text_state;
    add(e, &n, 3, sa, hp->n_mels, 3, "encoder.", -1, "conv1.weight");
    add(e, &n, 2, sa, 1, 0, "encoder.", -1, "conv1.bias");
    e[n - 1].conv_bias = 1;
    add(e, &n, 3, sa, sa, 3, "encoder.", -1, "conv2.weight");
    add(e, &n, 2, sa, 1, 0, "encoder.", -1, "conv2.bias");
    e[n - 1].conv_bias = 1;
    add(e, &n, 2, hp->n_audio_ctx, sa, 0, "encoder.", -1, "positional_embedding");
    for (int i = 0; i < hp->n_audio_layer; i++) {
        add_attn(e, &n, "encoder.blocks", i, "attn", sa);
        add_mlp(e, &n, "encoder.blocks", i, sa);
    }
    add(e, &n, 1, sa, 0, 0, "encoder.", -1, "ln_post.weight");
    add(e, &n, 1, sa, 0, 0, "encoder.", -1, "ln_post.bias");
    add(e, &n, 2, hp->n_vocab, st, 0, "decoder.", -1, "token_embedding.weight");
    add(e, &n, 2, hp->n_text_ctx, st, 0, "decoder.", -1, "positional_embedding");
    for (int i = 0; i < hp->n_text_layer; i++) {
        add_attn(e, &n, "decoder.blocks", i, "attn", st);
        add_attn(e, &n, "decoder.blocks", i, "cross_attn", st);
        add_mlp(e, &n, "decoder.blocks", i, st);
    }
    add(e, &n, 1, st, 0, 0, "decoder.", -1, "ln.weight");
    add(e, &n, 1, st, 0, 0, "decoder.", -1, "ln.bias");
    qsort(e, (size_t)n, sizeof *e, exp_cmp);
    *n_out = n;
    return e;
}

/* ---------------------------------------------------------------------------------------- */
/* Sections                                                                                 */

static int read_mel(struct rd *r, struct wc_model_file *f) {
    int32_t n_mel, n_fft;
    if (rd_i32(r, &n_mel, "the mel filter header") || rd_i32(r, &n_fft, "the mel filter header"))
        return WHISPERC_ERR_MODEL_FORMAT;
    if (n_mel != f->hp.n_mels || n_fft != N_FFT_BINS) {
        wc_errf(r->err, r->err_size, "%s: mel filters are %dx%d, expected %dx%d", r->path,
                (int)n_mel, (int)n_fft, (int)f->hp.n_mels, N_FFT_BINS);
        return WHISPERC_ERR_MODEL_FORMAT;
    }
    size_t n = (size_t)n_mel * N_FFT_BINS;
    if (rd_need(r, n * sizeof(float), "the mel filters"))
        return WHISPERC_ERR_MODEL_FORMAT;
    f->mel_filters = malloc(n * sizeof(float));
    if (!f->mel_filters) {
        wc_errf(r->err, r->err_size, "%s: out of memory", r->path);
        return WHISPERC_ERR_NO_MEMORY;
    }
    wc_to_f32(f->mel_filters, r->p + r->pos, 0, n);
    r->pos += n * sizeof(float);
    f->n_fft_bins = N_FFT_BINS;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(f->mel_filters[i])) {
            wc_errf(r->err, r->err_size, "%s: mel filter [%zu][%zu] is not finite", r->path,
                    i / N_FFT_BINS, i % N_FFT_BINS);
            return WHISPERC_ERR_MODEL_FORMAT;
        }
    return 0;
}

static int read_vocab(struct rd *r, struct wc_model_file *f) {
    int32_t n_tokens;
    if (rd_i32(r, &n_tokens, "the vocabulary header"))
        return WHISPERC_ERR_MODEL_FORMAT;
    /* Every BPE rank below <|endoftext|> must be stored; a file may also store the text of
     * <|endoftext|> itself (ggml .en files do, as do conversions from Hugging Face). */
    int32_t eot = EOT_GPT2 + (f->hp.n_vocab >= 51865 ? 1 : 0);
    if (n_tokens < eot || n_tokens > eot + 1) {
        wc_errf(r->err, r->err_size,
                "%s: the vocabulary has %d tokens, expected %d or %d for n_vocab %d", r->path,
                (int)n_tokens, (int)eot, (int)eot + 1, (int)f->hp.n_vocab);
        return WHISPERC_ERR_MODEL_FORMAT;
    }
    f->token_bytes = malloc((size_t)n_tokens * sizeof *f->token_bytes);
    f->token_len = malloc((size_t)n_tokens * sizeof *f->token_len);
    if (!f->token_bytes || !f->token_len) {
        wc_errf(r->err, r->err_size, "%s: out of memory", r->path);
        return WHISPERC_ERR_NO_MEMORY;
    }
    f->n_tokens = n_tokens;
    for (int32_t i = 0; i < n_tokens; i++) {
        uint32_t len;
        if (rd_u32(r, &len, "the vocabulary"))
            return WHISPERC_ERR_MODEL_FORMAT;
        if (len > MAX_TOKEN_LEN) {
            wc_errf(r->err, r->err_size, "%s: vocabulary token %d has length %u (at most %d)",
                    r->path, (int)i, (unsigned)len, MAX_TOKEN_LEN);
            return WHISPERC_ERR_MODEL_FORMAT;
        }
        if (rd_need(r, len, "the vocabulary"))
            return WHISPERC_ERR_MODEL_FORMAT;
        f->token_bytes[i] = r->p + r->pos;
        f->token_len[i] = len;
        r->pos += len;
    }
    return 0;
}

static int read_tensors(struct rd *r, struct priv *pv) {
    struct wc_model_file *f = &pv->pub;
    f->tensors = calloc((size_t)pv->n_exp, sizeof *f->tensors);
    if (!f->tensors) {
        wc_errf(r->err, r->err_size, "%s: out of memory", r->path);
        return WHISPERC_ERR_NO_MEMORY;
    }
    char what[64], pname[96];
    while (r->pos < r->size) {
        size_t start = r->pos;
        int idx = f->n_tensors;
        if (r->size - r->pos < 12) {
            wc_errf(r->err, r->err_size,
                    "%s: %zu trailing bytes after the last tensor (offset %zu), too few for a "
                    "tensor header",
                    r->path, r->size - r->pos, r->pos);
            return WHISPERC_ERR_MODEL_FORMAT;
        }
        int32_t n_dims, name_len, ttype;
        snprintf(what, sizeof what, "the header of tensor #%d", idx);
        if (rd_i32(r, &n_dims, what) || rd_i32(r, &name_len, what) || rd_i32(r, &ttype, what))
            return WHISPERC_ERR_MODEL_FORMAT;
        if (n_dims < 1 || n_dims > 4 || name_len < 1 || name_len > MAX_NAME_LEN) {
            wc_errf(r->err, r->err_size,
                    "%s: tensor #%d at offset %zu: bad header (n_dims %d, name length %d)", r->path,
                    idx, start, (int)n_dims, (int)name_len);
            return WHISPERC_ERR_MODEL_FORMAT;
        }
        int32_t ne[4];
        for (int i = 0; i < n_dims; i++)
            if (rd_i32(r, &ne[i], what))
                return WHISPERC_ERR_MODEL_FORMAT;
        snprintf(what, sizeof what, "the name of tensor #%d", idx);
        if (rd_need(r, (size_t)name_len, what))
            return WHISPERC_ERR_MODEL_FORMAT;
        const uint8_t *name = r->p + r->pos;
        r->pos += (size_t)name_len;
        wc_printable(pname, sizeof pname, name, (size_t)name_len);
        if (memchr(name, 0, (size_t)name_len)) {
            wc_errf(r->err, r->err_size, "%s: tensor #%d: name \"%s\" contains a NUL byte", r->path,
                    idx, pname);
            return WHISPERC_ERR_MODEL_FORMAT;
        }
        size_t block_bytes = ggml_quant_block_bytes(ttype);
        if (ttype != WC_F32 && ttype != WC_F16 && !block_bytes) {
            const char *tn = ggml_type_name(ttype);
            if (ttype >= 0 && ttype < 64) {
                if (tn)
                    wc_errf(r->err, r->err_size,
                            "%s: tensor %s has type %s; supported: " SUPPORTED_TYPES, r->path,
                            pname, tn);
                else
                    wc_errf(r->err, r->err_size,
                            "%s: tensor %s has ggml type %d; supported: " SUPPORTED_TYPES, r->path,
                            pname, (int)ttype);
                return WHISPERC_ERR_UNSUPPORTED;
            }
            wc_errf(r->err, r->err_size, "%s: tensor %s: invalid type %d", r->path, pname,
                    (int)ttype);
            return WHISPERC_ERR_MODEL_FORMAT;
        }
        char key[MAX_NAME_LEN + 1];
        memcpy(key, name, (size_t)name_len);
        key[name_len] = '\0';
        struct exp_tensor *e =
            bsearch(key, pv->exp, (size_t)pv->n_exp, sizeof *pv->exp, exp_key_cmp);
        if (!e) {
            wc_errf(r->err, r->err_size, "%s: unknown tensor %s (tensor #%d at offset %zu)",
                    r->path, pname, idx, start);
            return WHISPERC_ERR_MODEL_FORMAT;
        }
        if (e->file_index >= 0) {
            wc_errf(r->err, r->err_size, "%s: duplicate tensor %s (tensor #%d and #%d)", r->path,
                    e->name, e->file_index, idx);
            return WHISPERC_ERR_MODEL_FORMAT;
        }
        /* ggml order (ne[0] innermost) reversed to PyTorch order */
        int64_t shape[4] = {0, 0, 0, 0};
        for (int i = 0; i < n_dims; i++)
            shape[i] = ne[n_dims - 1 - i];
        int ok = n_dims == e->n_dims;
        for (int i = 0; ok && i < n_dims; i++)
            ok = shape[i] == e->shape[i];
        if (!ok && e->conv_bias) /* [n] as well as ggml's [n][1] */
            ok = n_dims == 1 && shape[0] == e->shape[0];
        const char *tname = ggml_type_name(ttype);
        if (!ok) {
            char se[64], sf[64];
            fmt_shape(se, sizeof se, e->n_dims, e->shape);
            fmt_shape(sf, sizeof sf, n_dims, shape);
            wc_errf(r->err, r->err_size, "%s: tensor %s (%s): expected %s, found %s", r->path,
                    e->name, tname, se, sf);
            return WHISPERC_ERR_MODEL_FORMAT;
        }
        /* The shape matched the hparams, which are bounded, so this cannot overflow. */
        size_t n_values = 1;
        for (int i = 0; i < n_dims; i++)
            n_values *= (size_t)shape[i];
        size_t n_bytes = n_values * (ttype == WC_F16 ? 2 : 4);
        if (block_bytes) { /* whole blocks a row (ggml quantizes along ne[0]) */
            if (ne[0] % GGML_QUANT_BLOCK) {
                wc_errf(r->err, r->err_size,
                        "%s: tensor %s: %s rows of %d values are not whole blocks of %d", r->path,
                        e->name, tname, (int)ne[0], GGML_QUANT_BLOCK);
                return WHISPERC_ERR_MODEL_FORMAT;
            }
            n_bytes = n_values / GGML_QUANT_BLOCK * block_bytes;
        }
        if (r->size - r->pos < n_bytes) {
            wc_errf(r->err, r->err_size,
                    "%s: tensor %s: data (%zu bytes at offset %zu) runs past the end of the "
                    "file (%zu bytes)",
                    r->path, e->name, n_bytes, r->pos, r->size);
            return WHISPERC_ERR_MODEL_FORMAT;
        }
        struct wc_tensor_view *t = &f->tensors[idx];
        t->name = e->name;
        t->dtype = ttype == WC_F32 ? WC_F32 : WC_F16;
        t->qtype = block_bytes ? ttype : 0;
        t->n_dims = n_dims;
        memcpy(t->shape, shape, sizeof shape);
        t->data = r->p + r->pos;
        t->n_bytes = n_bytes;
        t->n_values = n_values;
        r->pos += n_bytes;
        e->file_index = idx;
        f->n_tensors++;
    }
    if (f->n_tensors != pv->n_exp) {
        const struct exp_tensor *first = NULL; /* in state-dict order */
        for (int i = 0; i < pv->n_exp; i++)
            if (pv->exp[i].file_index < 0 && (!first || pv->exp[i].order < first->order))
                first = &pv->exp[i];
        wc_errf(r->err, r->err_size, "%s: tensor %s missing (%d of %d tensors missing)", r->path,
                first ? first->name : "?", pv->n_exp - f->n_tensors, pv->n_exp);
        return WHISPERC_ERR_MODEL_FORMAT;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* API                                                                                      */

int model_file_open(const char *path, struct wc_model_file **out, char *err, size_t err_size) {
    if (out)
        *out = NULL;
    if (!path || !out) {
        wc_errf(err, err_size, "model_file_open: path and out must not be NULL");
        return WHISPERC_ERR_INVALID_ARG;
    }
    struct priv *pv = calloc(1, sizeof *pv);
    char *path_copy = malloc(strlen(path) + 1);
    if (!pv || !path_copy) {
        free(pv);
        free(path_copy);
        wc_errf(err, err_size, "%s: out of memory", path);
        return WHISPERC_ERR_NO_MEMORY;
    }
    strcpy(path_copy, path);
    struct wc_model_file *f = &pv->pub;
    f->path = path_copy;

    int rc = 0;
    /* O_NONBLOCK: a FIFO with no writer must not block the open; it is refused below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        wc_errf(err, err_size, "%s: cannot open: %s", path, strerror(errno));
        rc = WHISPERC_ERR_IO;
        goto fail;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        wc_errf(err, err_size, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        rc = WHISPERC_ERR_IO;
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        wc_errf(err, err_size, "%s: not a regular file", path);
        close(fd);
        rc = WHISPERC_ERR_IO;
        goto fail;
    }
    if (st.st_size == 0) {
        wc_errf(err, err_size, "%s: the file is empty", path);
        close(fd);
        rc = WHISPERC_ERR_MODEL_FORMAT;
        goto fail;
    }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
        wc_errf(err, err_size, "%s: the file is too large to map", path);
        close(fd);
        rc = WHISPERC_ERR_IO;
        goto fail;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED) {
        wc_errf(err, err_size, "%s: cannot map: %s", path, strerror(map_errno));
        rc = map_errno == ENOMEM ? WHISPERC_ERR_NO_MEMORY : WHISPERC_ERR_IO;
        goto fail;
    }
    f->map = map;
    f->map_size = (size_t)st.st_size;

    struct rd r = {f->map, f->map_size, 0, path, err, err_size};
    uint32_t magic;
    if (f->map_size < 4 || (magic = le32(f->map)) != GGML_MAGIC) {
        if (f->map_size < 4)
            wc_errf(err, err_size, "%s: not a ggml model file (%zu bytes)", path, f->map_size);
        else
            wc_errf(err, err_size, "%s: not a ggml model file (magic 0x%08x, expected 0x%08x)",
                    path, (unsigned)magic, GGML_MAGIC);
        rc = WHISPERC_ERR_MODEL_FORMAT;
        goto fail;
    }
    r.pos = 4;
    int32_t hv[11];
    for (int i = 0; i < 11; i++)
        if (rd_i32(&r, &hv[i], "the hparams")) {
            rc = WHISPERC_ERR_MODEL_FORMAT;
            goto fail;
        }
    f->hp = (struct wc_hparams){hv[0], hv[1], hv[2], hv[3], hv[4], hv[5],
                                hv[6], hv[7], hv[8], hv[9], hv[10]};
    if (check_hparams(&r, &f->hp, &rc))
        goto fail;
    if ((rc = read_mel(&r, f)) || (rc = read_vocab(&r, f)))
        goto fail;
    pv->exp = expected_tensors(&f->hp, &pv->n_exp);
    if (!pv->exp) {
        wc_errf(err, err_size, "%s: out of memory", path);
        rc = WHISPERC_ERR_NO_MEMORY;
        goto fail;
    }
    if ((rc = read_tensors(&r, pv)))
        goto fail;
    *out = f;
    return 0;

fail:
    model_file_close(f);
    return rc;
}

const struct wc_tensor_view *model_file_tensor(const struct wc_model_file *f, const char *name) {
    if (!f || !name)
        return NULL;
    const struct priv *pv = (const struct priv *)f;
    if (!pv->exp)
        return NULL;
    const struct exp_tensor *e =
        bsearch(name, pv->exp, (size_t)pv->n_exp, sizeof *pv->exp, exp_key_cmp);
    return e && e->file_index >= 0 ? &f->tensors[e->file_index] : NULL;
}

void model_file_drop_pages(const struct wc_tensor_view *t) {
    long page = sysconf(_SC_PAGESIZE);
    if (!t || page <= 0)
        return;
    uintptr_t p = (uintptr_t)page, a = ((uintptr_t)t->data + p - 1) / p * p;
    uintptr_t end = ((uintptr_t)t->data + t->n_bytes) / p * p; /* whole pages of t's only */
    if (a < end) /* advice: a failure changes nothing */
        (void)madvise((void *)a, end - a, MADV_DONTNEED);
}

void model_file_close(struct wc_model_file *f) {
    if (!f)
        return;
    struct priv *pv = (struct priv *)f;
    if (f->map)
        munmap((void *)f->map, f->map_size);
    free(f->path);
    free(f->mel_filters);
    free(f->token_bytes);
    free(f->token_len);
    free(f->tensors);
    free(pv->exp);
    free(pv);
}

/* The official sizes (openai-whisper's _MODELS); heads = state / 64. */
static const struct {
    const char *name;
    int32_t n_audio_layer, n_audio_state, n_mels, n_text_layer, n_vocab_multilingual;
} model_types[] = {
    {"tiny", 4, 384, 80, 4, 51865},
    {"base", 6, 512, 80, 6, 51865},
    {"small", 12, 768, 80, 12, 51865},
    {"medium", 24, 1024, 80, 24, 51865},
    {"large", 32, 1280, 80, 32, 51865},
    {"large-v3", 32, 1280, 128, 32, 51866},
    {"large-v3-turbo", 32, 1280, 128, 4, 51866},
};

const char *model_file_type_name(const struct wc_hparams *hp) {
    if (!hp)
        return "custom";
    for (size_t i = 0; i < sizeof model_types / sizeof model_types[0]; i++)
        if (hp->n_audio_layer == model_types[i].n_audio_layer &&
            hp->n_audio_state == model_types[i].n_audio_state &&
            hp->n_mels == model_types[i].n_mels &&
            hp->n_text_layer == model_types[i].n_text_layer &&
            hp->n_text_state == hp->n_audio_state)
            return model_types[i].name;
    return "custom";
}

const char *const model_size_names[] = {
    "tiny.en", "tiny",     "base.en",  "base",     "small.en",       "small", "medium.en",
    "medium",  "large-v1", "large-v2", "large-v3", "large-v3-turbo", NULL};

int model_size_hparams(const char *name, struct wc_hparams *hp) {
    char base[32];
    size_t n = strlen(name);
    int english = n > 3 && strcmp(name + n - 3, ".en") == 0;
    if (n - (english ? 3 : 0) >= sizeof base)
        return -1;
    memcpy(base, name, n - (english ? 3 : 0));
    base[n - (english ? 3 : 0)] = '\0';
    if (strcmp(base, "large-v1") == 0 || strcmp(base, "large-v2") == 0)
        base[5] = '\0';
    for (size_t i = 0; i < sizeof model_types / sizeof model_types[0]; i++) {
        if (strcmp(base, model_types[i].name) != 0)
            continue;
        if (english && model_types[i].n_audio_state >= 1280)
            return -1; /* there is no large .en */
        int32_t c = model_types[i].n_audio_state;
        *hp = (struct wc_hparams){
            .n_vocab = english ? 51864 : model_types[i].n_vocab_multilingual,
            .n_audio_ctx = 1500,
            .n_audio_state = c,
            .n_audio_head = c / 64,
            .n_audio_layer = model_types[i].n_audio_layer,
            .n_text_ctx = 448,
            .n_text_state = c,
            .n_text_head = c / 64,
            .n_text_layer = model_types[i].n_text_layer,
            .n_mels = model_types[i].n_mels,
            .ftype = 1,
        };
        return 0;
    }
    return -1;
}
