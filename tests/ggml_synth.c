/* ggml_synth.c — see ggml_synth.h. */
#include "ggml_synth.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h" /* wc_rng */

#define N_FFT_BINS 201
#define N_TOKENS   50257 /* as the real files store, .en and multilingual alike */

struct ggml_synth_opts ggml_synth_default_opts(void) {
    struct ggml_synth_opts o;
    memset(&o, 0, sizeof o);
    o.n_state = 64;
    o.n_head = 2;
    o.n_layer = 2;
    o.n_mels = 80;
    o.n_audio_ctx = 32;
    o.n_text_ctx = 16;
    o.f16 = 1;
    o.seed = 1;
    return o;
}

const char *ggml_synth_corruption_name(enum ggml_synth_corruption c) {
    static const char *const names[GGML_SYNTH_N_CORRUPTIONS] = {
        "ok",           "empty",        "bad_magic",      "trunc_header", "trunc_vocab",
        "trunc_tensor", "wrong_shape",  "wrong_vocab",    "bad_n_vocab",  "bad_n_mels",
        "bad_heads",    "bad_n_fft",    "missing_tensor", "dup_tensor",   "unknown_tensor",
        "trailing",     "quant_tensor", "quant_ftype",    "conv_bias_1d"};
    return (int)c >= 0 && c < GGML_SYNTH_N_CORRUPTIONS ? names[c] : "?";
}

/* ---------------------------------------------------------------------------------------- */

struct writer {
    FILE *fp;
    int failed;
    struct wc_rng rng;
    const struct ggml_synth_opts *o;
    float *buf;
    uint16_t *hbuf;
    size_t buf_cap;
    long last_tensor_data; /* offset and size of the last tensor's data, for truncation */
    size_t last_tensor_bytes;
};

static void put(struct writer *w, const void *p, size_t n) {
    if (!w->failed && n && fwrite(p, 1, n, w->fp) != n)
        w->failed = 1;
}

static void put_i32(struct writer *w, int32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                    (uint8_t)((uint32_t)v >> 24)};
    put(w, b, 4);
}

static float rng_normal(struct wc_rng *r) {
    double u1 = wc_rng_uniform(r), u2 = wc_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* IEEE half, round to nearest even. */
static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        int shift = 14 - e;
        uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* may carry into the exponent, up to inf: correct */
    return (uint16_t)(sign | h);
}

enum init { INIT_NORMAL, INIT_GAIN };

/* A block type's bytes a block of 32, its ggml_ftype and its scale for a spread of about 0.02
 * (the codes uniform: 16, 32 or 256 levels); 0 bytes for other types. */
static void block_format(int ttype, size_t *bytes, int *ftype, float *scale) {
    *bytes = 0;
    *scale = 0;
    switch (ttype) {
    case 2: *bytes = 18, *ftype = 2, *scale = 0.0043f; break;  /* q4_0 */
    case 3: *bytes = 20, *ftype = 3, *scale = 0.0043f; break;  /* q4_1 */
    case 6: *bytes = 22, *ftype = 8, *scale = 0.0022f; break;  /* q5_0 */
    case 7: *bytes = 24, *ftype = 9, *scale = 0.0022f; break;  /* q5_1 */
    case 8: *bytes = 34, *ftype = 7, *scale = 0.00027f; break; /* q8_0 */
    default: break;
    }
}

/* n values (a whole number of blocks) of block type ttype: random codes, a scale near `scale`
 * and, for the _1 types, a minimum that centres them. */
static void put_blocks(struct writer *w, int ttype, size_t n) {
    size_t bytes;
    int ftype;
    float scale;
    block_format(ttype, &bytes, &ftype, &scale);
    uint8_t b[64];
    for (size_t i = 0; i < n; i += 32) {
        for (size_t k = 0; k < bytes; k++)
            b[k] = (uint8_t)(wc_rng_uniform(&w->rng) * 256.0);
        float d = scale * (0.5f + (float)wc_rng_uniform(&w->rng));
        uint16_t h = f32_to_f16(d);
        memcpy(b, &h, 2);
        if (ttype == 3 || ttype == 7) {
            h = f32_to_f16(-(ttype == 3 ? 8.0f : 16.0f) * d);
            memcpy(b + 2, &h, 2);
        }
        put(w, b, bytes);
    }
    w->last_tensor_bytes = n / 32 * bytes;
}

/* shape in PyTorch order; ttype 0 f32, 1 f16, a block type of block_format, other values
 * written as f16-sized data. */
static void tensor(struct writer *w, const char *name, int n_dims, const int64_t *shape, int ttype,
                   enum init init) {
    put_i32(w, n_dims);
    put_i32(w, (int32_t)strlen(name));
    put_i32(w, ttype);
    for (int i = n_dims - 1; i >= 0; i--) /* ggml order: innermost first */
        put_i32(w, (int32_t)shape[i]);
    put(w, name, strlen(name));
    size_t n = 1;
    for (int i = 0; i < n_dims; i++)
        n *= (size_t)shape[i];
    if (n > w->buf_cap) {
        free(w->buf);
        free(w->hbuf);
        w->buf = malloc(n * sizeof *w->buf);
        w->hbuf = malloc(n * sizeof *w->hbuf);
        w->buf_cap = w->buf && w->hbuf ? n : 0;
        if (!w->buf_cap) {
            w->failed = 1;
            errno = ENOMEM;
            return;
        }
    }
    for (size_t i = 0; i < n; i++)
        w->buf[i] = (init == INIT_GAIN ? 1.0f : 0.0f) + 0.02f * rng_normal(&w->rng);
    if (!w->failed)
        w->last_tensor_data = ftell(w->fp);
    size_t block_bytes;
    int ftype;
    float scale;
    block_format(ttype, &block_bytes, &ftype, &scale);
    if (block_bytes) {
        put_blocks(w, ttype, n);
    } else if (ttype == 0) {
        put(w, w->buf, n * 4);
        w->last_tensor_bytes = n * 4;
    } else {
        for (size_t i = 0; i < n; i++)
            w->hbuf[i] = f32_to_f16(w->buf[i]);
        put(w, w->hbuf, n * 2);
        w->last_tensor_bytes = n * 2;
    }
}

static void vec(struct writer *w, const char *name, int64_t n, enum init init) {
    int64_t s[1] = {n};
    tensor(w, name, 1, s, 0, init);
}

static void mat(struct writer *w, const char *name, int64_t rows, int64_t cols) {
    int64_t s[2] = {rows, cols};
    tensor(w, name, 2, s, w->o->quant ? w->o->quant : w->o->f16 ? 1 : 0, INIT_NORMAL);
}

static void attn(struct writer *w, const char *p, const char *a, int64_t s) {
    char n[128];
    snprintf(n, sizeof n, "%s.%s.query.weight", p, a);
    mat(w, n, s, s);
    snprintf(n, sizeof n, "%s.%s.query.bias", p, a);
    vec(w, n, s, INIT_NORMAL);
    snprintf(n, sizeof n, "%s.%s.key.weight", p, a);
    mat(w, n, s, s);
    snprintf(n, sizeof n, "%s.%s.value.weight", p, a);
    mat(w, n, s, s);
    snprintf(n, sizeof n, "%s.%s.value.bias", p, a);
    vec(w, n, s, INIT_NORMAL);
    snprintf(n, sizeof n, "%s.%s.out.weight", p, a);
    mat(w, n, s, s);
    snprintf(n, sizeof n, "%s.%s.out.bias", p, a);
    vec(w, n, s, INIT_NORMAL);
    snprintf(n, sizeof n, "%s.%s_ln.weight", p, a);
    vec(w, n, s, INIT_GAIN);
    snprintf(n, sizeof n, "%s.%s_ln.bias", p, a);
    vec(w, n, s, INIT_NORMAL);
}

static void mlp(struct writer *w, const char *p, int64_t s) {
    char n[128];
    snprintf(n, sizeof n, "%s.mlp.0.weight", p);
    mat(w, n, 4 * s, s);
    snprintf(n, sizeof n, "%s.mlp.0.bias", p);
    vec(w, n, 4 * s, INIT_NORMAL);
    snprintf(n, sizeof n, "%s.mlp.2.weight", p);
    mat(w, n, s, 4 * s);
    snprintf(n, sizeof n, "%s.mlp.2.bias", p);
    vec(w, n, s, INIT_NORMAL);
    snprintf(n, sizeof n, "%s.mlp_ln.weight", p);
    vec(w, n, s, INIT_GAIN);
    snprintf(n, sizeof n, "%s.mlp_ln.bias", p);
    vec(w, n, s, INIT_NORMAL);
}

static void conv_bias(struct writer *w, const char *name, int64_t s) {
    if (w->o->corrupt == GGML_SYNTH_CONV_BIAS_1D) {
        vec(w, name, s, INIT_NORMAL);
    } else {
        int64_t sh[2] = {s, 1}; /* ggml ne = (1, n_state) */
        tensor(w, name, 2, sh, 0, INIT_NORMAL);
    }
}

/* Token i's bytes: ids < 256 a single byte; then bijective base-26 lower-case strings (two or
 * more letters, all distinct); the last stored token is "<|endoftext|>" for .en files and the
 * empty string for multilingual ones, as in the real files. */
static size_t token_text(char *dst, int i, int multilingual) {
    if (i == N_TOKENS - 1) {
        if (multilingual)
            return 0;
        memcpy(dst, "<|endoftext|>", 13);
        return 13;
    }
    if (i < 256) {
        dst[0] = (char)i;
        return 1;
    }
    char tmp[16];
    size_t n = 0;
    for (unsigned v = (unsigned)i; v > 0; v = (v - 1) / 26)
        tmp[n++] = (char)('a' + (v - 1) % 26);
    for (size_t k = 0; k < n; k++)
        dst[k] = tmp[n - 1 - k];
    return n;
}

/* Magic, hparams, mel filters, vocabulary. Returns the offset of the vocabulary. */
static long write_header(struct writer *w) {
    const struct ggml_synth_opts *o = w->o;
    enum ggml_synth_corruption c = o->corrupt;
    int n_text_layer = o->n_text_layer > 0 ? o->n_text_layer : o->n_layer;
    int n_vocab = o->multilingual ? (o->n_languages == 100 ? 51866 : 51865) : 51864;
    int n_mels = c == GGML_SYNTH_BAD_N_MELS ? 81 : o->n_mels;

    size_t block_bytes;
    int ftype = o->f16 ? 1 : 0;
    float scale;
    block_format(o->quant, &block_bytes, &ftype, &scale);
    if (block_bytes)
        ftype += 2000;
    if (c == GGML_SYNTH_QUANT_FTYPE)
        ftype = 2012;
    put_i32(w, c == GGML_SYNTH_BAD_MAGIC ? 0x67676d6d : 0x67676d6c);
    int32_t hp[11] = {c == GGML_SYNTH_BAD_N_VOCAB ? 51000 : n_vocab,
                      o->n_audio_ctx,
                      o->n_state,
                      c == GGML_SYNTH_BAD_HEADS ? o->n_head + 1 : o->n_head,
                      o->n_layer,
                      o->n_text_ctx,
                      o->n_state,
                      o->n_head,
                      n_text_layer,
                      n_mels,
                      ftype};
    for (int i = 0; i < 11; i++)
        put_i32(w, hp[i]);

    /* mel filters: triangles on a linear grid, peak 0.02 (the real ones peak near 0.026) */
    int n_fft = c == GGML_SYNTH_BAD_N_FFT ? 200 : N_FFT_BINS;
    put_i32(w, n_mels);
    put_i32(w, n_fft);
    double width = (double)(N_FFT_BINS - 1) / (n_mels + 1);
    for (int m = 0; m < n_mels; m++)
        for (int k = 0; k < n_fft; k++) {
            double t = 1.0 - fabs(k - (m + 1) * width) / width;
            float v = t > 0 ? (float)(0.02 * t) : 0.0f;
            put(w, &v, 4);
        }

    long vocab_at = w->failed ? 0 : ftell(w->fp);
    int n_tokens = c == GGML_SYNTH_WRONG_VOCAB ? 50000 : N_TOKENS;
    put_i32(w, n_tokens);
    for (int i = 0; i < n_tokens; i++) {
        char t[32];
        size_t len = token_text(t, i, o->multilingual);
        put_i32(w, (int32_t)len);
        put(w, t, len);
    }
    return vocab_at;
}

/* The tensors, in the real files' order. */
static void write_tensors(struct writer *w) {
    const struct ggml_synth_opts *o = w->o;
    enum ggml_synth_corruption c = o->corrupt;
    int n_text_layer = o->n_text_layer > 0 ? o->n_text_layer : o->n_layer;
    int n_vocab = o->multilingual ? (o->n_languages == 100 ? 51866 : 51865) : 51864;
    int64_t s = o->n_state;
    char p[64];

    int64_t pos_a[2] = {o->n_audio_ctx, s};
    tensor(w, "encoder.positional_embedding", 2, pos_a, 0, INIT_NORMAL);
    int64_t conv1[3] = {s, o->n_mels, c == GGML_SYNTH_WRONG_SHAPE ? 2 : 3};
    tensor(w, "encoder.conv1.weight", 3, conv1, o->f16 ? 1 : 0, INIT_NORMAL);
    conv_bias(w, "encoder.conv1.bias", s);
    int64_t conv2[3] = {s, s, 3};
    tensor(w, "encoder.conv2.weight", 3, conv2, o->f16 ? 1 : 0, INIT_NORMAL);
    conv_bias(w, "encoder.conv2.bias", s);
    for (int i = 0; i < o->n_layer; i++) {
        snprintf(p, sizeof p, "encoder.blocks.%d", i);
        attn(w, p, "attn", s);
        mlp(w, p, s);
    }
    vec(w, "encoder.ln_post.weight", s, INIT_GAIN);
    vec(w, "encoder.ln_post.bias", s, INIT_NORMAL);

    int64_t pos_t[2] = {o->n_text_ctx, s};
    tensor(w, "decoder.positional_embedding", 2, pos_t, 0, INIT_NORMAL);
    mat(w, "decoder.token_embedding.weight", n_vocab, s);
    for (int i = 0; i < n_text_layer; i++) {
        snprintf(p, sizeof p, "decoder.blocks.%d", i);
        attn(w, p, "attn", s);
        attn(w, p, "cross_attn", s);
        if (i == 0 && c == GGML_SYNTH_QUANT_TENSOR) {
            int64_t sh[2] = {4 * s, s};
            snprintf(p, sizeof p, "decoder.blocks.%d.mlp.0.weight", i);
            tensor(w, p, 2, sh, 12, INIT_NORMAL);
            continue; /* the loader stops there */
        }
        mlp(w, p, s);
    }
    vec(w, "decoder.ln.weight", s, INIT_GAIN);
    if (c == GGML_SYNTH_UNKNOWN_TENSOR)
        vec(w, "decoder.extra.weight", s, INIT_NORMAL);
    if (c != GGML_SYNTH_MISSING_TENSOR)
        vec(w, "decoder.ln.bias", s, INIT_NORMAL);
    if (c == GGML_SYNTH_DUP_TENSOR)
        vec(w, "decoder.ln.bias", s, INIT_NORMAL);
    if (c == GGML_SYNTH_TRAILING)
        put(w, "\x01\x02\x03\x04\x05", 5);
}

int ggml_synth_write(const char *path, const struct ggml_synth_opts *o) {
    if (!path || !o || o->n_state < 1 || o->n_head < 1 || o->n_layer < 1 || o->n_mels < 1 ||
        o->n_audio_ctx < 1 || o->n_text_ctx < 1 || (int)o->corrupt < 0 ||
        (o->quant && (o->n_state % 32 || (o->quant != 2 && o->quant != 3 && o->quant != 6 &&
                                          o->quant != 7 && o->quant != 8))) ||
        o->corrupt >= GGML_SYNTH_N_CORRUPTIONS) {
        errno = EINVAL;
        return -1;
    }
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    if (o->corrupt == GGML_SYNTH_EMPTY)
        return fclose(fp) == 0 ? 0 : -1;

    struct writer w;
    memset(&w, 0, sizeof w);
    w.fp = fp;
    w.o = o;
    w.rng.s = o->seed;
    w.last_tensor_data = -1;

    errno = 0;
    long vocab_at = write_header(&w);
    write_tensors(&w);
    free(w.buf);
    free(w.hbuf);
    if (fflush(fp) != 0)
        w.failed = 1;
    int saved_errno = errno;
    long cut = -1;
    switch (o->corrupt) {
    case GGML_SYNTH_TRUNC_HEADER: cut = 20; break;
    case GGML_SYNTH_TRUNC_VOCAB: cut = vocab_at + 1000; break;
    case GGML_SYNTH_TRUNC_TENSOR: cut = w.last_tensor_data + (long)w.last_tensor_bytes / 2; break;
    default: break;
    }
    if (!w.failed && cut >= 0 && ftruncate(fileno(fp), cut) != 0)
        w.failed = 1;
    if (w.failed && !saved_errno)
        saved_errno = EIO;
    if (fclose(fp) != 0 && !w.failed) {
        w.failed = 1;
        saved_errno = errno;
    }
    if (w.failed) {
        errno = saved_errno;
        return -1;
    }
    return 0;
}

int ggml_synth_write_temp(char *path_template, const struct ggml_synth_opts *o) {
    int fd = mkstemp(path_template);
    if (fd < 0)
        return -1;
    close(fd);
    return ggml_synth_write(path_template, o);
}

/* A 16 kHz Silero VAD file in tools/convert-silero-vad's layout, every weight 0. */
int ggml_synth_write_silero(const char *path) {
    static const int32_t head[] = {512, 64, 4,  129, 128, 3,   128, 64,  3, 64,
                                   64,  3,  64, 128, 3,   128, 128, 128, 1};
    static const struct {
        const char *name;
        int n_dims, ne[3], f16;
    } t[] = {{"_model.encoder.0.reparam_conv.weight", 3, {3, 129, 128}, 1},
             {"_model.encoder.0.reparam_conv.bias", 1, {128, 1, 1}, 0},
             {"_model.encoder.1.reparam_conv.weight", 3, {3, 128, 64}, 1},
             {"_model.encoder.1.reparam_conv.bias", 1, {64, 1, 1}, 0},
             {"_model.encoder.2.reparam_conv.weight", 3, {3, 64, 64}, 1},
             {"_model.encoder.2.reparam_conv.bias", 1, {64, 1, 1}, 0},
             {"_model.encoder.3.reparam_conv.weight", 3, {3, 64, 128}, 1},
             {"_model.encoder.3.reparam_conv.bias", 1, {128, 1, 1}, 0},
             {"_model.decoder.rnn.weight_ih", 2, {128, 512, 1}, 0},
             {"_model.decoder.rnn.weight_hh", 2, {128, 512, 1}, 0},
             {"_model.decoder.rnn.bias_ih", 1, {512, 1, 1}, 0},
             {"_model.decoder.rnn.bias_hh", 1, {512, 1, 1}, 0},
             {"_model.decoder.decoder.2.weight", 1, {128, 1, 1}, 1},
             {"_model.decoder.decoder.2.bias", 0, {1, 1, 1}, 0},
             {"_model.stft.forward_basis_buffer", 3, {256, 1, 258}, 1}};
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    const uint32_t magic = 0x67676d6c;
    const int32_t len = 10, version[3] = {5, 1, 2};
    static const char zeros[4096];
    fwrite(&magic, 4, 1, f);
    fwrite(&len, 4, 1, f);
    fwrite("silero-16k", 1, 10, f);
    fwrite(version, 4, 3, f);
    fwrite(head, 4, sizeof head / 4, f);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int32_t h[3] = {t[i].n_dims, (int32_t)strlen(t[i].name), t[i].f16};
        fwrite(h, 4, 3, f);
        fwrite(t[i].ne, 4, (size_t)t[i].n_dims, f);
        fwrite(t[i].name, 1, strlen(t[i].name), f);
        size_t bytes = (size_t)t[i].ne[0] * t[i].ne[1] * t[i].ne[2] * (t[i].f16 ? 2 : 4);
        for (; bytes > 0; bytes -= bytes < sizeof zeros ? bytes : sizeof zeros)
            fwrite(zeros, 1, bytes < sizeof zeros ? bytes : sizeof zeros, f);
    }
    int failed = ferror(f);
    return fclose(f) == 0 && !failed ? 0 : -1;
}
