/*
 * test_model_file.c — the ggml model loader (src/model/model_file.c) and the language table
 * (src/model/languages.c): the real tiny.en and base files from ../shared (skipped when
 * absent), synthetic files from ggml_synth.c, every corruption it can make, truncations and
 * byte flips at random offsets.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "ggml_synth.h"
#include "libwhisperc.h"
#include "model/alignment_heads.h"
#include "model/ggml_quant.h"
#include "model/languages.h"
#include "model/model_file.h"
#include "util.h"

static char tmp_dir[256];

static const char *tmp_path(const char *name) {
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", tmp_dir, name);
    return buf;
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* Opening must fail with `rc`, *out NULL, and err one line naming the file and containing
 * `needle`. */
static void expect_fail(const char *path, int rc_want, const char *needle) {
    struct wc_model_file *f = (struct wc_model_file *)&f; /* poison: must become NULL */
    char err[512] = "";
    int rc = model_file_open(path, &f, err, sizeof err);
    int ok = rc == rc_want && f == NULL && strstr(err, path) != NULL && !strchr(err, '\n') &&
             (!needle || strstr(err, needle) != NULL);
    if (!ok) {
        fprintf(stderr, "%s: expected rc %d containing \"%s\", got rc %d: %s\n", path, rc_want,
                needle ? needle : "", rc, err);
        test_failures++;
    } else {
        printf("  rc %d: %s\n", rc, err);
    }
    if (rc == 0)
        model_file_close(f);
}

static void check_shape(const struct wc_model_file *f, const char *name, int n_dims, int64_t d0,
                        int64_t d1, int64_t d2, enum wc_dtype dtype) {
    const struct wc_tensor_view *t = model_file_tensor(f, name);
    if (!t) {
        fprintf(stderr, "%s: tensor %s not found\n", f->path, name);
        test_failures++;
        return;
    }
    int64_t want[3] = {d0, d1, d2};
    int ok = t->n_dims == n_dims && t->dtype == dtype && strcmp(t->name, name) == 0;
    size_t n = 1;
    for (int i = 0; i < n_dims && i < 3; i++) {
        ok = ok && t->shape[i] == want[i];
        n *= (size_t)want[i];
    }
    ok = ok && t->n_bytes == n * (dtype == WC_F16 ? 2 : 4);
    ok = ok && (const uint8_t *)t->data >= f->map &&
         (const uint8_t *)t->data + t->n_bytes <= f->map + f->map_size;
    if (!ok) {
        fprintf(stderr, "%s: tensor %s: n_dims %d shape [%lld,%lld,%lld] dtype %d bytes %zu\n",
                f->path, name, t->n_dims, (long long)t->shape[0], (long long)t->shape[1],
                (long long)t->shape[2], (int)t->dtype, t->n_bytes);
        test_failures++;
    }
}

/* Every tensor view is inside the map, no two overlap, and file order is increasing. */
static void check_views(const struct wc_model_file *f) {
    const uint8_t *prev_end = NULL;
    for (int i = 0; i < f->n_tensors; i++) {
        const struct wc_tensor_view *t = &f->tensors[i];
        const uint8_t *d = t->data;
        CHECK(d >= f->map && d + t->n_bytes <= f->map + f->map_size);
        CHECK(!prev_end || d > prev_end);
        prev_end = d + t->n_bytes;
        CHECK(model_file_tensor(f, t->name) == t);
    }
    CHECK(prev_end == f->map + f->map_size); /* the file is fully consumed */
}

static int test_real_tiny_en(void) {
    const char *path = shared_path("models/ggml-tiny.en.bin");
    if (!file_exists(path)) {
        fprintf(stderr, "SKIP: %s not found\n", path);
        return 0;
    }
    struct wc_model_file *f = NULL;
    char err[512] = "";
    int rc = model_file_open(path, &f, err, sizeof err);
    CHECK(rc == 0);
    if (rc) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const struct wc_hparams *hp = &f->hp;
    CHECK(hp->n_vocab == 51864 && hp->n_audio_ctx == 1500 && hp->n_audio_state == 384);
    CHECK(hp->n_audio_head == 6 && hp->n_audio_layer == 4 && hp->n_text_ctx == 448);
    CHECK(hp->n_text_state == 384 && hp->n_text_head == 6 && hp->n_text_layer == 4);
    CHECK(hp->n_mels == 80 && hp->ftype == 1);
    CHECK(f->n_fft_bins == 201);
    CHECK(f->n_tokens == 50257);
    CHECK(f->token_len[0] == 1 && f->token_bytes[0][0] == '!');
    CHECK(f->token_len[50256] == 13 && memcmp(f->token_bytes[50256], "<|endoftext|>", 13) == 0);
    CHECK(f->n_tensors == 167);
    CHECK(strcmp(model_file_type_name(hp), "tiny") == 0);
    CHECK(strcmp(f->path, path) == 0);
    float mx = 0;
    int neg = 0;
    for (int i = 0; i < 80 * 201; i++) {
        mx = f->mel_filters[i] > mx ? f->mel_filters[i] : mx;
        neg += f->mel_filters[i] < 0;
    }
    CHECK(neg == 0 && mx > 0.02f && mx < 0.03f);
    check_shape(f, "encoder.conv1.weight", 3, 384, 80, 3, WC_F16);
    check_shape(f, "encoder.conv1.bias", 2, 384, 1, 0, WC_F32);
    check_shape(f, "encoder.conv2.weight", 3, 384, 384, 3, WC_F16);
    check_shape(f, "encoder.positional_embedding", 2, 1500, 384, 0, WC_F32);
    check_shape(f, "encoder.blocks.3.mlp.0.weight", 2, 1536, 384, 0, WC_F16);
    check_shape(f, "encoder.blocks.3.mlp.2.weight", 2, 384, 1536, 0, WC_F16);
    check_shape(f, "encoder.ln_post.bias", 1, 384, 0, 0, WC_F32);
    check_shape(f, "decoder.token_embedding.weight", 2, 51864, 384, 0, WC_F16);
    check_shape(f, "decoder.positional_embedding", 2, 448, 384, 0, WC_F32);
    check_shape(f, "decoder.blocks.0.cross_attn.key.weight", 2, 384, 384, 0, WC_F16);
    check_shape(f, "decoder.blocks.3.cross_attn_ln.weight", 1, 384, 0, 0, WC_F32);
    check_shape(f, "decoder.ln.weight", 1, 384, 0, 0, WC_F32);
    CHECK(model_file_tensor(f, "decoder.blocks.0.attn.key.bias") == NULL);
    CHECK(model_file_tensor(f, "decoder.blocks.4.attn.query.weight") == NULL);
    CHECK(model_file_tensor(f, "") == NULL);
    CHECK(model_file_tensor(f, NULL) == NULL);
    check_views(f);
    /* encoder.ln_post.weight values look like layer-norm gains (mean 1.28 in tiny.en) */
    const struct wc_tensor_view *t = model_file_tensor(f, "encoder.ln_post.weight");
    if (t) {
        float g[384];
        wc_to_f32(g, t->data, 0, 384);
        double mean = 0;
        for (int i = 0; i < 384; i++)
            mean += g[i] / 384.0;
        CHECK(isfinite(mean) && mean > 0.1 && mean < 10);
    }
    model_file_close(f);
    return 1;
}

static int test_real_base(void) {
    const char *path = shared_path("models/ggml-base.bin");
    if (!file_exists(path)) {
        fprintf(stderr, "SKIP: %s not found\n", path);
        return 0;
    }
    struct wc_model_file *f = NULL;
    char err[512] = "";
    int rc = model_file_open(path, &f, err, sizeof err);
    CHECK(rc == 0);
    if (rc) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const struct wc_hparams *hp = &f->hp;
    CHECK(hp->n_vocab == 51865 && hp->n_audio_state == 512 && hp->n_audio_head == 8);
    CHECK(hp->n_audio_layer == 6 && hp->n_text_layer == 6 && hp->n_mels == 80);
    CHECK(f->n_tokens == 50257);
    CHECK(f->token_len[50256] == 0); /* multilingual.tiktoken's last rank: an empty string */
    CHECK(f->n_tensors == 245);
    CHECK(strcmp(model_file_type_name(hp), "base") == 0);
    check_shape(f, "encoder.conv1.weight", 3, 512, 80, 3, WC_F16);
    check_shape(f, "encoder.conv2.bias", 2, 512, 1, 0, WC_F32);
    check_shape(f, "decoder.token_embedding.weight", 2, 51865, 512, 0, WC_F16);
    check_shape(f, "decoder.blocks.5.mlp.2.weight", 2, 512, 2048, 0, WC_F16);
    check_shape(f, "decoder.blocks.5.cross_attn.value.bias", 1, 512, 0, 0, WC_F32);
    check_views(f);
    model_file_close(f);
    return 1;
}

/* whisper.cpp's header-only test models: valid up to the (absent) tensors. */
static int test_header_only(void) {
    int ran = 0;
    const char *rels[] = {"reference/for-tests-ggml-tiny.bin",
                          "reference/for-tests-ggml-tiny.en.bin"};
    for (int i = 0; i < 2; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s", shared_path(rels[i]));
        if (!file_exists(path)) {
            fprintf(stderr, "SKIP: %s not found\n", path);
            continue;
        }
        expect_fail(path, WHISPERC_ERR_MODEL_FORMAT,
                    "tensor encoder.conv1.weight missing (167 of 167 tensors missing)");
        ran = 1;
    }
    return ran;
}

/* A synthetic file written to path and opened (NULL, a failure counted, if it does not open). */
static struct wc_model_file *write_and_open(const char *path, const struct ggml_synth_opts *o,
                                            const char *what, size_t k) {
    CHECK(ggml_synth_write(path, o) == 0);
    struct wc_model_file *f = NULL;
    char err[512] = "";
    int rc = model_file_open(path, &f, err, sizeof err);
    CHECK(rc == 0);
    if (rc)
        fprintf(stderr, "%s case %zu: %s\n", what, k, err);
    return rc ? NULL : f;
}

/* One block of each type, built by hand, widened: the layouts as ggml-common.h declares them
 * (scale, [minimum], [fifth bits], codes) and the values ggml's dequantize_row_* compute. */
static void test_dequantize(void) {
    uint8_t b[34];
    uint16_t out[32];
    float want[32];
    const uint16_t half_0_5 = 0x3800, half_0_25 = 0x3400, half_m1 = 0xbc00;
    /* q4_0: byte j = code j | code (j + 16) << 4; value (code - 8) * d */
    memcpy(b, &half_0_5, 2);
    for (int j = 0; j < 16; j++) {
        b[2 + j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = (float)(j - 8) * 0.5f;
        want[j + 16] = (float)(15 - j - 8) * 0.5f;
    }
    CHECK(ggml_quant_block_bytes(GGML_Q4_0) == 18);
    ggml_dequantize_f16(GGML_Q4_0, b, out, 32);
    for (int j = 0; j < 32; j++)
        CHECK(wc_f16_to_f32(out[j]) == want[j]);
    /* q4_1: value code * d + m */
    memcpy(b, &half_0_25, 2);
    memcpy(b + 2, &half_m1, 2);
    for (int j = 0; j < 16; j++) {
        b[4 + j] = (uint8_t)((j + 1) % 16 | j << 4);
        want[j] = (float)((j + 1) % 16) * 0.25f - 1.0f;
        want[j + 16] = (float)j * 0.25f - 1.0f;
    }
    CHECK(ggml_quant_block_bytes(GGML_Q4_1) == 20);
    ggml_dequantize_f16(GGML_Q4_1, b, out, 32);
    for (int j = 0; j < 32; j++)
        CHECK(wc_f16_to_f32(out[j]) == want[j]);
    /* q5_0: the fifth bit of value j is bit j of the little-endian u32 after d; (code - 16) * d */
    uint32_t qh = 0xa5c3f00fu;
    memcpy(b, &half_0_5, 2);
    for (int k = 0; k < 4; k++)
        b[2 + k] = (uint8_t)(qh >> (8 * k));
    for (int j = 0; j < 16; j++) {
        b[6 + j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = (float)((j | (int)((qh >> j) & 1u) << 4) - 16) * 0.5f;
        want[j + 16] = (float)(((15 - j) | (int)((qh >> (j + 16)) & 1u) << 4) - 16) * 0.5f;
    }
    CHECK(ggml_quant_block_bytes(GGML_Q5_0) == 22);
    ggml_dequantize_f16(GGML_Q5_0, b, out, 32);
    for (int j = 0; j < 32; j++)
        CHECK(wc_f16_to_f32(out[j]) == want[j]);
    /* q5_1: d, m, fifth bits, codes; code * d + m */
    memcpy(b, &half_0_25, 2);
    memcpy(b + 2, &half_m1, 2);
    for (int k = 0; k < 4; k++)
        b[4 + k] = (uint8_t)(qh >> (8 * k));
    for (int j = 0; j < 16; j++) {
        b[8 + j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = (float)(j | (int)((qh >> j) & 1u) << 4) * 0.25f - 1.0f;
        want[j + 16] = (float)((15 - j) | (int)((qh >> (j + 16)) & 1u) << 4) * 0.25f - 1.0f;
    }
    CHECK(ggml_quant_block_bytes(GGML_Q5_1) == 24);
    ggml_dequantize_f16(GGML_Q5_1, b, out, 32);
    for (int j = 0; j < 32; j++)
        CHECK(wc_f16_to_f32(out[j]) == want[j]);
    /* q8_0: signed bytes * d; the product rounds to half (127 * 0.1 is not a half) */
    const uint16_t half_0_1 = 0x2e66; /* 0.0999755859375 */
    memcpy(b, &half_0_1, 2);
    for (int j = 0; j < 32; j++)
        b[2 + j] = (uint8_t)(int8_t)(j * 8 - 128);
    CHECK(ggml_quant_block_bytes(GGML_Q8_0) == 34);
    ggml_dequantize_f16(GGML_Q8_0, b, out, 32);
    for (int j = 0; j < 32; j++)
        CHECK(out[j] == wc_f32_to_f16((float)(j * 8 - 128) * wc_f16_to_f32(half_0_1)));
    CHECK(wc_f16_to_f32(out[0]) == -12.796875f); /* -128 * 0.0999755859375 = -12.796875 */
    CHECK(ggml_quant_block_bytes(0) == 0 && ggml_quant_block_bytes(1) == 0 &&
          ggml_quant_block_bytes(12) == 0 && ggml_quant_block_bytes(9) == 0);
}

/* Synthetic files with each block type: the matrices quantized, what whisper.cpp's quantize
 * leaves alone not, sizes right, and the values of about the spread ggml_synth promises. */
static void test_synthetic_quant(void) {
    static const struct {
        int type, ftype;
    } types[] = {{GGML_Q4_0, 2002},
                 {GGML_Q4_1, 2003},
                 {GGML_Q5_0, 2008},
                 {GGML_Q5_1, 2009},
                 {GGML_Q8_0, 2007}};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        struct ggml_synth_opts o = ggml_synth_default_opts();
        o.quant = types[k].type;
        o.seed = 7 + k;
        const char *path = tmp_path("quant.bin");
        struct wc_model_file *f = write_and_open(path, &o, "quantized", k);
        if (!f)
            continue;
        CHECK(f->hp.ftype == types[k].ftype);
        check_views(f);
        const char *quantized[] = {
            "decoder.token_embedding.weight", "encoder.blocks.0.attn.key.weight",
            "decoder.blocks.1.cross_attn.out.weight", "decoder.blocks.0.mlp.2.weight"};
        for (size_t i = 0; i < sizeof quantized / sizeof quantized[0]; i++) {
            const struct wc_tensor_view *t = model_file_tensor(f, quantized[i]);
            CHECK(t && t->qtype == types[k].type && t->dtype == WC_F16);
            if (t)
                CHECK(t->n_bytes == t->n_values / 32 * ggml_quant_block_bytes(t->qtype));
        }
        const struct wc_tensor_view *conv = model_file_tensor(f, "encoder.conv2.weight");
        const struct wc_tensor_view *pos = model_file_tensor(f, "decoder.positional_embedding");
        CHECK(conv && conv->qtype == 0 && conv->dtype == WC_F16 && conv->n_values == 64 * 64 * 3);
        CHECK(pos && pos->qtype == 0 && pos->dtype == WC_F32 && pos->n_bytes == 16 * 64 * 4);
        const struct wc_tensor_view *w = model_file_tensor(f, "decoder.blocks.0.mlp.0.weight");
        uint16_t *h = w ? malloc(w->n_values * sizeof *h) : NULL;
        if (h) {
            ggml_dequantize_f16(w->qtype, w->data, h, w->n_values);
            double ss = 0;
            int finite = 1;
            for (size_t i = 0; i < w->n_values; i++) {
                float v = wc_f16_to_f32(h[i]);
                finite = finite && isfinite(v);
                ss += (double)v * v;
            }
            double rms = sqrt(ss / (double)w->n_values);
            CHECK(finite && rms > 0.01 && rms < 0.04);
            free(h);
        }
        model_file_close(f);
        /* a quantized tensor cut short */
        o.corrupt = GGML_SYNTH_TRUNC_TENSOR;
        CHECK(ggml_synth_write(path, &o) == 0);
        expect_fail(path, WHISPERC_ERR_MODEL_FORMAT, "runs past the end of the file");
        unlink(path);
    }
    /* whisper.cpp's quantize before quantization version 2 laid blocks out differently */
    struct ggml_synth_opts o = ggml_synth_default_opts();
    CHECK(ggml_synth_write(tmp_path("old.bin"), &o) == 0);
    FILE *fp = fopen(tmp_path("old.bin"), "r+b");
    CHECK(fp != NULL);
    if (fp) {
        int32_t ftype = 1007; /* q8_0, version 1 */
        CHECK(fseek(fp, 4 + 10 * 4, SEEK_SET) == 0 && fwrite(&ftype, 4, 1, fp) == 1);
        fclose(fp);
        expect_fail(tmp_path("old.bin"), WHISPERC_ERR_UNSUPPORTED, "quantization version 1");
    }
    unlink(tmp_path("old.bin"));
}

static void test_synthetic_valid(void) {
    struct {
        int multilingual, n_languages, f16, n_mels, n_text_layer;
        enum ggml_synth_corruption c;
        int n_vocab;
    } cases[] = {
        {0, 0, 1, 80, 0, GGML_SYNTH_OK, 51864},
        {1, 0, 0, 80, 0, GGML_SYNTH_OK, 51865},
        {1, 100, 1, 128, 1, GGML_SYNTH_OK, 51866},
        {0, 0, 1, 80, 3, GGML_SYNTH_CONV_BIAS_1D, 51864},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct ggml_synth_opts o = ggml_synth_default_opts();
        o.multilingual = cases[k].multilingual;
        o.n_languages = cases[k].n_languages;
        o.f16 = cases[k].f16;
        o.n_mels = cases[k].n_mels;
        o.n_text_layer = cases[k].n_text_layer;
        o.corrupt = cases[k].c;
        o.seed = 42 + k;
        const char *path = tmp_path("valid.bin");
        struct wc_model_file *f = write_and_open(path, &o, "synthetic", k);
        if (!f)
            continue;
        int n_text_layer = o.n_text_layer ? o.n_text_layer : o.n_layer;
        CHECK(f->hp.n_vocab == cases[k].n_vocab);
        CHECK(f->hp.n_audio_state == 64 && f->hp.n_audio_head == 2 && f->hp.n_audio_layer == 2);
        CHECK(f->hp.n_text_layer == n_text_layer && f->hp.n_mels == o.n_mels);
        CHECK(f->hp.n_audio_ctx == 32 && f->hp.n_text_ctx == 16 && f->hp.ftype == o.f16);
        CHECK(f->n_tokens == 50257);
        CHECK(f->n_tensors == 5 + 15 * 2 + 2 + 2 + 24 * n_text_layer + 2);
        CHECK(strcmp(model_file_type_name(&f->hp), "custom") == 0);
        enum wc_dtype md = o.f16 ? WC_F16 : WC_F32;
        check_shape(f, "encoder.conv1.weight", 3, 64, o.n_mels, 3, md);
        if (o.corrupt == GGML_SYNTH_CONV_BIAS_1D)
            check_shape(f, "encoder.conv1.bias", 1, 64, 0, 0, WC_F32);
        else
            check_shape(f, "encoder.conv1.bias", 2, 64, 1, 0, WC_F32);
        check_shape(f, "encoder.positional_embedding", 2, 32, 64, 0, WC_F32);
        check_shape(f, "decoder.token_embedding.weight", 2, cases[k].n_vocab, 64, 0, md);
        check_shape(f, "decoder.positional_embedding", 2, 16, 64, 0, WC_F32);
        check_views(f);
        /* the weights look like what ggml_synth promises */
        const struct wc_tensor_view *g = model_file_tensor(f, "encoder.blocks.1.mlp_ln.weight");
        const struct wc_tensor_view *w = model_file_tensor(f, "decoder.blocks.0.mlp.0.weight");
        if (g && w) {
            float gv[64];
            wc_to_f32(gv, g->data, 0, 64);
            size_t n = w->n_bytes / (w->dtype == WC_F16 ? 2 : 4);
            float *wv = malloc(n * sizeof *wv);
            if (wv) {
                wc_to_f32(wv, w->data, w->dtype == WC_F16, n);
                double gm = 0, ws = 0;
                for (int i = 0; i < 64; i++)
                    gm += gv[i] / 64.0;
                for (size_t i = 0; i < n; i++)
                    ws += (double)wv[i] * wv[i];
                ws = sqrt(ws / (double)n);
                CHECK(fabs(gm - 1.0) < 0.02);
                CHECK(ws > 0.015 && ws < 0.025);
                free(wv);
            }
        }
        model_file_close(f);
    }
    /* the same seed writes the same bytes */
    struct ggml_synth_opts o = ggml_synth_default_opts();
    char a[512], b[512];
    snprintf(a, sizeof a, "%s", tmp_path("seed_a.bin"));
    snprintf(b, sizeof b, "%s", tmp_path("seed_b.bin"));
    CHECK(ggml_synth_write(a, &o) == 0 && ggml_synth_write(b, &o) == 0);
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    CHECK(fa && fb);
    if (fa && fb) {
        int same = 1, ca, cb;
        do {
            ca = getc(fa);
            cb = getc(fb);
            same = same && ca == cb;
        } while (same && ca != EOF);
        CHECK(same);
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    unlink(a);
    unlink(b);
}

static void test_corruptions(void) {
    struct {
        enum ggml_synth_corruption c;
        int rc;
        const char *needle;
    } cases[] = {
        {GGML_SYNTH_EMPTY, WHISPERC_ERR_MODEL_FORMAT, "empty"},
        {GGML_SYNTH_BAD_MAGIC, WHISPERC_ERR_MODEL_FORMAT, "magic 0x67676d6d"},
        {GGML_SYNTH_TRUNC_HEADER, WHISPERC_ERR_MODEL_FORMAT,
         "truncated: the file ends inside the hparams"},
        {GGML_SYNTH_TRUNC_VOCAB, WHISPERC_ERR_MODEL_FORMAT, "inside the vocabulary"},
        {GGML_SYNTH_TRUNC_TENSOR, WHISPERC_ERR_MODEL_FORMAT,
         "tensor decoder.ln.bias: data (256 bytes at offset"},
        {GGML_SYNTH_WRONG_SHAPE, WHISPERC_ERR_MODEL_FORMAT,
         "tensor encoder.conv1.weight (f16): expected [64,80,3], found [64,80,2]"},
        {GGML_SYNTH_WRONG_VOCAB, WHISPERC_ERR_MODEL_FORMAT, "vocabulary has 50000 tokens"},
        {GGML_SYNTH_BAD_N_VOCAB, WHISPERC_ERR_MODEL_FORMAT, "n_vocab is 51000"},
        {GGML_SYNTH_BAD_N_MELS, WHISPERC_ERR_MODEL_FORMAT, "n_mels is 81"},
        {GGML_SYNTH_BAD_HEADS, WHISPERC_ERR_MODEL_FORMAT, "n_audio_head 3 does not divide"},
        {GGML_SYNTH_BAD_N_FFT, WHISPERC_ERR_MODEL_FORMAT, "mel filters are 80x200"},
        {GGML_SYNTH_MISSING_TENSOR, WHISPERC_ERR_MODEL_FORMAT,
         "tensor decoder.ln.bias missing (1 of 89 tensors missing)"},
        {GGML_SYNTH_DUP_TENSOR, WHISPERC_ERR_MODEL_FORMAT, "duplicate tensor decoder.ln.bias"},
        {GGML_SYNTH_UNKNOWN_TENSOR, WHISPERC_ERR_MODEL_FORMAT,
         "unknown tensor decoder.extra.weight"},
        {GGML_SYNTH_TRAILING, WHISPERC_ERR_MODEL_FORMAT, "5 trailing bytes"},
        {GGML_SYNTH_QUANT_TENSOR, WHISPERC_ERR_UNSUPPORTED,
         "tensor decoder.blocks.0.mlp.0.weight has type q4_K; supported: f32, f16, q4_0"},
        {GGML_SYNTH_QUANT_FTYPE, WHISPERC_ERR_UNSUPPORTED,
         "ftype 2012 (q4_K, quantization version 2) is not supported"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct ggml_synth_opts o = ggml_synth_default_opts();
        o.corrupt = cases[k].c;
        char name[64];
        snprintf(name, sizeof name, "corrupt_%s.bin", ggml_synth_corruption_name(cases[k].c));
        char path[512];
        snprintf(path, sizeof path, "%s", tmp_path(name));
        CHECK(ggml_synth_write(path, &o) == 0);
        expect_fail(path, cases[k].rc, cases[k].needle);
        unlink(path);
    }
}

static void test_io_errors(void) {
    expect_fail(tmp_path("does-not-exist.bin"), WHISPERC_ERR_IO, "No such file or directory");
    expect_fail(tmp_dir, WHISPERC_ERR_IO, "not a regular file");
    /* NULL and tiny error buffers are fine */
    struct wc_model_file *f = NULL;
    CHECK(model_file_open(tmp_path("does-not-exist.bin"), &f, NULL, 0) == WHISPERC_ERR_IO);
    CHECK(f == NULL);
    char small[8];
    CHECK(model_file_open(tmp_path("does-not-exist.bin"), &f, small, sizeof small) ==
          WHISPERC_ERR_IO);
    CHECK(strlen(small) < sizeof small);
    CHECK(model_file_open(NULL, &f, NULL, 0) == WHISPERC_ERR_INVALID_ARG);
    model_file_close(NULL);
}

/* Truncations and single-byte changes at random places: an error (never a crash, never a
 * multi-line message) or, for changes inside data, success. */
static void test_fuzz(void) {
    struct ggml_synth_opts o = ggml_synth_default_opts();
    o.n_layer = 1;
    o.f16 = 1;
    const char *src = tmp_path("fuzz_src.bin");
    char src_path[512];
    snprintf(src_path, sizeof src_path, "%s", src);
    CHECK(ggml_synth_write(src_path, &o) == 0);
    FILE *fp = fopen(src_path, "rb");
    CHECK(fp != NULL);
    if (!fp)
        return;
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)size);
    CHECK(buf && fread(buf, 1, (size_t)size, fp) == (size_t)size);
    fclose(fp);
    if (!buf)
        return;
    /* offset of the tensor section: header 4+44, filters 8+80*201*4, then the vocabulary */
    long vocab_at = 4 + 44 + 8 + 80 * 201 * 4, tensors_at = vocab_at + 4;
    for (long i = 0; i < 50257; i++) {
        uint32_t len = (uint32_t)buf[tensors_at] | ((uint32_t)buf[tensors_at + 1] << 8);
        tensors_at += 4 + (long)len;
    }
    struct test_rng rng = {12345};
    char path[512];
    snprintf(path, sizeof path, "%s", tmp_path("fuzz.bin"));
    for (int it = 0; it < 160; it++) {
        long cut = size;
        long flip = -1;
        if (it < 40) { /* truncate: near the start, in the tensors, anywhere */
            if (it < 15)
                cut = it * 7;
            else if (it < 30)
                cut = tensors_at + (long)((test_rng_uniform(&rng) + 1) * 0.5 * 2000);
            else
                cut = (long)((test_rng_uniform(&rng) + 1) * 0.5 * (double)(size - 1));
        } else if (it < 100) { /* flip a byte in the header, filters' neighbourhood, vocab */
            flip = (long)((test_rng_uniform(&rng) + 1) * 0.5 * 120);
            if (it >= 70)
                flip = vocab_at + (long)((test_rng_uniform(&rng) + 1) * 0.5 * 64);
        } else { /* flip a byte in the tensor headers region */
            flip = tensors_at + (long)((test_rng_uniform(&rng) + 1) * 0.5 * 4096);
        }
        FILE *out = fopen(path, "wb");
        CHECK(out != NULL);
        if (!out)
            break;
        if (flip >= 0)
            buf[flip] ^= 0x5a;
        CHECK(fwrite(buf, 1, (size_t)cut, out) == (size_t)cut);
        fclose(out);
        if (flip >= 0)
            buf[flip] ^= 0x5a;
        struct wc_model_file *f = NULL;
        char err[512] = "";
        int rc = model_file_open(path, &f, err, sizeof err);
        if (cut < size) {
            CHECK(rc == WHISPERC_ERR_MODEL_FORMAT);
        }
        if (rc) {
            CHECK(f == NULL && !strchr(err, '\n') && strstr(err, path) != NULL);
        } else {
            CHECK(f != NULL);
            model_file_close(f);
        }
    }
    unlink(path);
    unlink(src_path);
    free(buf);
}

static void test_type_names(void) {
    struct wc_hparams hp = {51865, 1500, 384, 6, 4, 448, 384, 6, 4, 80, 1};
    CHECK(strcmp(model_file_type_name(&hp), "tiny") == 0);
    struct {
        int layers, state, mels, text_layers;
        const char *name;
    } t[] = {
        {4, 384, 80, 4, "tiny"},
        {6, 512, 80, 6, "base"},
        {12, 768, 80, 12, "small"},
        {24, 1024, 80, 24, "medium"},
        {32, 1280, 80, 32, "large"},
        {32, 1280, 128, 32, "large-v3"},
        {32, 1280, 128, 4, "large-v3-turbo"},
        {32, 1280, 80, 4, "custom"},
        {6, 384, 80, 6, "custom"},
        {4, 384, 128, 4, "custom"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        hp.n_audio_layer = t[i].layers;
        hp.n_text_layer = t[i].text_layers;
        hp.n_audio_state = hp.n_text_state = t[i].state;
        hp.n_mels = t[i].mels;
        const char *got = model_file_type_name(&hp);
        if (strcmp(got, t[i].name) != 0) {
            fprintf(stderr, "type name %d/%d/%d/%d: got %s, want %s\n", t[i].layers, t[i].state,
                    t[i].mels, t[i].text_layers, got, t[i].name);
            test_failures++;
        }
    }
    CHECK(strcmp(model_file_type_name(NULL), "custom") == 0);

    /* every official size name gives hparams that name it back */
    for (int i = 0; model_size_names[i]; i++) {
        struct wc_hparams h;
        CHECK(model_size_hparams(model_size_names[i], &h) == 0);
        const char *want = model_size_names[i], *got = model_file_type_name(&h);
        size_t n = strcspn(want, ".");
        if (strncmp(want, "large-v1", 8) == 0 || strncmp(want, "large-v2", 8) == 0)
            n = 5;
        CHECK(strlen(got) == n && strncmp(got, want, n) == 0);
        CHECK(h.n_vocab == (strstr(want, ".en") ? 51864 : n == 8 || n == 14 ? 51866 : 51865));
    }
    /* a file of tiny's layers and widths with 4 text heads, not 6: tiny's list names heads 4 and
     * 5, outside it; the last half's heads instead, every one inside */
    hp = (struct wc_hparams){51865, 1500, 384, 6, 4, 448, 384, 4, 4, 80, 1};
    struct wc_align_head *heads = NULL;
    int n_heads = alignment_heads(&hp, NULL, &heads);
    CHECK(n_heads == 2 * 4);
    for (int i = 0; i < n_heads; i++)
        CHECK(heads[i].layer >= 2 && heads[i].layer < 4 && heads[i].head >= 0 && heads[i].head < 4);
    free(heads);
    hp.n_text_head = 6; /* tiny's own: its list */
    n_heads = alignment_heads(&hp, NULL, &heads);
    CHECK(n_heads > 0 && n_heads < 2 * 6);
    free(heads);
    struct wc_hparams h;
    CHECK(model_size_hparams("large.en", &h) == -1);
    CHECK(model_size_hparams("huge", &h) == -1);
    CHECK(model_size_hparams("", &h) == -1);
}

static void test_languages(void) {
    CHECK(WC_N_LANGUAGES == 100);
    CHECK(strcmp(lang_code(0), "en") == 0 && strcmp(lang_name(0), "english") == 0);
    CHECK(strcmp(lang_code(1), "zh") == 0);
    CHECK(strcmp(lang_code(98), "su") == 0 && strcmp(lang_name(98), "sundanese") == 0);
    CHECK(strcmp(lang_code(99), "yue") == 0 && strcmp(lang_name(99), "cantonese") == 0);
    CHECK(lang_code(100) == NULL && lang_code(-1) == NULL && lang_name(100) == NULL);
    for (int i = 0; i < WC_N_LANGUAGES; i++) {
        CHECK(lang_index(lang_code(i)) == i);
        CHECK(lang_index(lang_name(i)) == i);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(lang_code(i), lang_code(j)) != 0);
    }
    CHECK(lang_index("EN") == 0 && lang_index("English") == 0 && lang_index("eNgLiSh") == 0);
    CHECK(lang_index("de") == 2 && lang_index("ja") == 7);
    CHECK(lang_index("haitian creole") == lang_index("ht"));
    CHECK(lang_index("Haitian") == lang_index("ht"));
    CHECK(lang_index("castilian") == lang_index("es"));
    CHECK(lang_index("mandarin") == lang_index("zh"));
    CHECK(lang_index("burmese") == lang_index("my"));
    CHECK(lang_index("valencian") == lang_index("ca"));
    CHECK(lang_index("flemish") == lang_index("nl"));
    CHECK(lang_index("letzeburgesch") == lang_index("lb"));
    CHECK(lang_index("pushto") == lang_index("ps"));
    CHECK(lang_index("panjabi") == lang_index("pa"));
    CHECK(lang_index("moldavian") == lang_index("ro") &&
          lang_index("moldovan") == lang_index("ro"));
    CHECK(lang_index("sinhalese") == lang_index("si"));
    CHECK(lang_index("jw") == 97 && lang_index("haw") == 93);
    CHECK(lang_index("xx") == -1 && lang_index("") == -1 && lang_index(NULL) == -1);
    CHECK(lang_index("en ") == -1 && lang_index("engl") == -1);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/test_model_file.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        fprintf(stderr, "mkdtemp %s: %s\n", tmp_dir, strerror(errno));
        return 1;
    }
    int real = 0;
    real += test_real_tiny_en();
    real += test_real_base();
    real += test_header_only();
    if (!real)
        fprintf(stderr, "note: no shared model files found; real-file checks skipped\n");
    test_synthetic_valid();
    test_dequantize();
    test_synthetic_quant();
    test_corruptions();
    test_io_errors();
    test_fuzz();
    test_type_names();
    test_languages();
    rmdir(tmp_dir);
    printf("test_model_file: %s\n", test_failures ? "FAILED" : "OK");
    return TEST_RESULT();
}
