/*
 * test_cpu_ops.c — every CPU backend op against a naive double-precision reference on fresh random
 * inputs, over the shapes and paths the model uses (matrix-vector and sgemm, f16 and f32 weights,
 * stride 1 and 2, causal and full attention), with 1 and 3 threads. Outputs are poisoned with NaN
 * before each op, so a value the op forgot to write fails.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common.h"
#include "cpu/cpu_internal.h"
#include "cpu/vecmath.h"
#include "libwhisperc.h"
#include "model/ggml_quant.h"
#include "util.h"

static struct test_rng rng = {12345};

static float *rand_vec(size_t n, float scale) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        p[i] = scale * test_rng_normal(&rng);
    return p;
}

static float *nan_vec(size_t n) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
    return p;
}

/* f32 -> f16 bits, truncating (the reference decodes the same bits, so rounding is irrelevant) */
static uint16_t to_f16(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t sign = (b >> 16) & 0x8000u;
    int exp = (int)((b >> 23) & 0xff) - 112;
    if (exp <= 0)
        return (uint16_t)sign;
    if (exp >= 31)
        return (uint16_t)(sign | 0x7bffu);
    return (uint16_t)(sign | ((uint32_t)exp << 10) | ((b >> 13) & 0x3ffu));
}

/* A weight matrix uploaded in `dtype`; *host gets the exact f32 values the backend holds. */
static void make_mat(struct wc_backend *be, struct wc_mat *m, int rows, int cols,
                     enum wc_dtype dtype, float **host) {
    size_t n = (size_t)rows * cols;
    float *w = rand_vec(n, 1.0f / sqrtf((float)cols));
    if (dtype == WC_F16) {
        uint16_t *h = malloc(n * 2);
        for (size_t i = 0; i < n; i++) {
            h[i] = to_f16(w[i]);
            w[i] = wc_f16_to_f32(h[i]);
        }
        CHECK(be->ops->upload_mat(be, m, h, WC_F16, rows, cols) == 0);
        free(h);
    } else {
        CHECK(be->ops->upload_mat(be, m, w, WC_F32, rows, cols) == 0);
    }
    *host = w;
}

static double gelu_ref(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

static void test_linear(struct wc_backend *be, struct wc_stream *s, int n_rows, int n_out, int k,
                        enum wc_dtype dtype, enum wc_act act, int accumulate, int bias,
                        int ld_extra) {
    struct wc_mat m;
    float *w;
    make_mat(be, &m, n_out, k, dtype, &w);
    float *in = rand_vec((size_t)n_rows * k, 1.0f);
    float *b = bias ? rand_vec((size_t)n_out, 0.5f) : NULL;
    int ld = n_out + ld_extra;
    float *out = accumulate ? rand_vec((size_t)n_rows * ld, 1.0f) : nan_vec((size_t)n_rows * ld);
    float *ref = malloc((size_t)n_rows * ld * sizeof(float));
    memcpy(ref, out, (size_t)n_rows * ld * sizeof(float));
    for (int t = 0; t < n_rows; t++)
        for (int n = 0; n < n_out; n++) {
            double acc = b ? b[n] : 0.0;
            for (int i = 0; i < k; i++)
                acc += (double)in[(size_t)t * k + i] * w[(size_t)n * k + i];
            if (act == WC_ACT_GELU)
                acc = gelu_ref(acc);
            ref[(size_t)t * ld + n] = (float)(accumulate ? ref[(size_t)t * ld + n] + acc : acc);
        }
    s->be->ops->linear(s, out, ld, in, &m, b, n_rows, act, accumulate);
    CHECK(wc_stream_sync(s) == 0);
    char name[128];
    snprintf(name, sizeof name, "linear rows=%d out=%d k=%d %s act=%d acc=%d bias=%d ld+%d", n_rows,
             n_out, k, dtype == WC_F16 ? "f16" : "f32", act, accumulate, bias, ld_extra);
    /* padding columns past n_out must stay untouched (NaN or the accumulate input) */
    for (int t = 0; t < n_rows; t++)
        for (int n = n_out; n < ld; n++) {
            out[(size_t)t * ld + n] = 0.0f;
            ref[(size_t)t * ld + n] = 0.0f;
        }
    CHECK(check_close(name, out, ref, (size_t)n_rows * ld, 1e-4, 1e-4));
    free(w), free(in), free(b), free(out), free(ref);
}

/* Up to ops->linear_exact_rows rows, each output row has the bits it has when computed alone
 * (batched decoding relies on it to match one file at a time exactly). */
static void test_linear_rows_exact(struct wc_backend *be, struct wc_stream *s, int n_rows,
                                   int n_out, int k, enum wc_dtype dtype) {
    struct wc_mat m;
    float *w;
    make_mat(be, &m, n_out, k, dtype, &w);
    float *in = rand_vec((size_t)n_rows * k, 1.0f);
    float *b = rand_vec((size_t)n_out, 0.5f);
    float *all = nan_vec((size_t)n_rows * n_out), *one = nan_vec((size_t)n_rows * n_out);
    s->be->ops->linear(s, all, 0, in, &m, b, n_rows, WC_ACT_GELU, 0);
    for (int t = 0; t < n_rows; t++)
        s->be->ops->linear(s, one + (size_t)t * n_out, 0, in + (size_t)t * k, &m, b, 1, WC_ACT_GELU,
                           0);
    CHECK(wc_stream_sync(s) == 0);
    char name[128];
    snprintf(name, sizeof name, "linear rows=%d out=%d k=%d %s: rows as alone", n_rows, n_out, k,
             dtype == WC_F16 ? "f16" : "f32");
    CHECK(check_close(name, all, one, (size_t)n_rows * n_out, 0.0, 0.0));
    free(w), free(in), free(b), free(all), free(one);
}

/* The f16 matrix-vector path (AVX2 + F16C) sums each output in one documented order whatever
 * the row count (linear.c dots_block_f16): two 8-lane accumulators over steps of 16, the last
 * step of 8 into the first, then the lanes of their sum as hsum256 adds them. Emulated here in
 * scalar fmaf, every output bit compared, for 1-8 rows and k with and without the last 8. */
static void test_linear_f16_order(struct wc_backend *be, struct wc_stream *s, int n_rows, int k) {
    const int n_out = 150; /* tasks of 64 columns, the last with a block of 6 */
    struct wc_mat m;
    float *w;
    make_mat(be, &m, n_out, k, WC_F16, &w);
    float *in = rand_vec((size_t)n_rows * k, 1.0f);
    float *out = nan_vec((size_t)n_rows * n_out), *ref = nan_vec((size_t)n_rows * n_out);
    s->be->ops->linear(s, out, 0, in, &m, NULL, n_rows, WC_ACT_NONE, 0);
    CHECK(wc_stream_sync(s) == 0);
    for (int t = 0; t < n_rows; t++)
        for (int n = 0; n < n_out; n++) {
            const float *x = in + (size_t)t * k, *wr = w + (size_t)n * k;
            float a0[8] = {0}, a1[8] = {0}, v[8];
            int i = 0;
            for (; i + 16 <= k; i += 16)
                for (int l = 0; l < 8; l++) {
                    a0[l] = fmaf(wr[i + l], x[i + l], a0[l]);
                    a1[l] = fmaf(wr[i + 8 + l], x[i + 8 + l], a1[l]);
                }
            for (; i < k; i += 8)
                for (int l = 0; l < 8; l++)
                    a0[l] = fmaf(wr[i + l], x[i + l], a0[l]);
            for (int l = 0; l < 8; l++)
                v[l] = a0[l] + a1[l];
            float h0 = v[0] + v[4], h1 = v[1] + v[5], h2 = v[2] + v[6], h3 = v[3] + v[7];
            ref[(size_t)t * n_out + n] = (h0 + h2) + (h1 + h3);
        }
    char name[96];
    snprintf(name, sizeof name, "linear f16 rows=%d k=%d: the documented order, bit for bit",
             n_rows, k);
    CHECK(check_close(name, out, ref, (size_t)n_rows * n_out, 0.0, 0.0));
    free(w), free(in), free(out), free(ref);
}

/* A block-quantized matrix held as blocks computes exactly what the same matrix widened to f16
 * at load does (model/weights.c may give the CPU either): linear over rows 1 … 9 and 40 (the
 * matrix-vector path, decoded in registers or once per row, and sgemm), and embed's rows. */
static void test_linear_quant(struct wc_backend *be, struct wc_stream *s, enum wc_dtype qtype) {
    const int n_out = 64, k = 384, n_vocab = 48; /* k: tiny's width */
    size_t bb = ggml_quant_block_bytes((int32_t)qtype), n = (size_t)n_out * k;
    uint8_t *blocks = malloc(n / 32 * bb);
    uint16_t *h = malloc(n * 2);
    for (size_t i = 0; i < n / 32 * bb; i++)
        blocks[i] = (uint8_t)((test_rng_uniform(&rng) + 1.0f) * 128.0f); /* [-1, 1) */
    for (size_t b = 0; b < n / 32; b++) { /* sane scales: d, and m for the _1 types */
        uint16_t d = wc_f32_to_f16(0.02f + 0.01f * test_rng_uniform(&rng));
        uint16_t m = wc_f32_to_f16(0.1f * test_rng_uniform(&rng));
        memcpy(blocks + b * bb, &d, 2);
        if (qtype == WC_Q4_1 || qtype == WC_Q5_1)
            memcpy(blocks + b * bb + 2, &m, 2);
    }
    ggml_dequantize_f16((int32_t)qtype, blocks, h, n);
    struct wc_mat mq, mh;
    CHECK(be->ops->upload_mat(be, &mq, blocks, qtype, n_out, k) == 0);
    CHECK(be->ops->upload_mat(be, &mh, h, WC_F16, n_out, k) == 0);
    float *b = rand_vec((size_t)n_out, 0.5f);
    const int rows[] = {1, 2, 4, 5, 8, 9, 40};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        float *in = rand_vec((size_t)rows[r] * k, 1.0f);
        float *oq = nan_vec((size_t)rows[r] * n_out), *oh = nan_vec((size_t)rows[r] * n_out);
        s->be->ops->linear(s, oq, 0, in, &mq, b, rows[r], WC_ACT_GELU, 0);
        s->be->ops->linear(s, oh, 0, in, &mh, b, rows[r], WC_ACT_GELU, 0);
        CHECK(wc_stream_sync(s) == 0);
        char name[96];
        snprintf(name, sizeof name, "linear q%d rows=%d: the bits of the widened f16 matrix",
                 (int)qtype, rows[r]);
        CHECK(check_close(name, oq, oh, (size_t)rows[r] * n_out, 0.0, 0.0));
        free(in), free(oq), free(oh);
    }
    /* embed reads a token's row: mq as a [n_vocab][c] table (its first n_vocab * c values) */
    struct wc_mat tq = mq, th = mh;
    tq.rows = th.rows = n_vocab, tq.cols = th.cols = n_out * k / n_vocab;
    float *pos = rand_vec((size_t)4 * tq.cols, 0.1f);
    float *eq = nan_vec((size_t)3 * tq.cols), *eh = nan_vec((size_t)3 * tq.cols);
    const int32_t tok[3] = {0, 17, n_vocab - 1};
    s->be->ops->embed(s, eq, tok, NULL, 3, &tq, pos, 1, tq.cols);
    s->be->ops->embed(s, eh, tok, NULL, 3, &th, pos, 1, th.cols);
    CHECK(wc_stream_sync(s) == 0);
    CHECK(check_close("embed of quantized rows", eq, eh, (size_t)3 * tq.cols, 0.0, 0.0));
    free(blocks), free(h), free(b), free(pos), free(eq), free(eh);
}

/* The AVX2 block decoder against the plain C one (model/ggml_quant.c) on blocks of random
 * bytes, their scales and minimums too (subnormal, huge: products past the largest half, which
 * round to inf; inf and NaN): the same bits, NaN for NaN. */
static void test_quant_decode(enum wc_dtype qtype) {
    const int rows = 3, cols[2] = {384, 1536};
    for (int c = 0; c < 2; c++) {
        size_t n = (size_t)rows * cols[c], bytes = n / 32 * ggml_quant_block_bytes((int32_t)qtype);
        uint8_t *b = malloc(bytes);
        for (size_t i = 0; i < bytes; i++)
            b[i] = (uint8_t)((test_rng_uniform(&rng) + 1.0f) * 128.0f);
        struct wc_mat m = {b, rows, cols[c], qtype};
        float *fast = nan_vec(n), *plain = nan_vec(n);
        cpu_quant_rows_f32(1, fast, &m, 0, rows);
        cpu_quant_rows_f32(0, plain, &m, 0, rows);
        size_t differ = 0;
        for (size_t i = 0; i < n; i++)
            differ += isnan(fast[i]) ? !isnan(plain[i]) : memcmp(&fast[i], &plain[i], 4) != 0;
        printf("quant decode q%d, %d columns: %zu of %zu values differ\n", (int)qtype, cols[c],
               differ, n);
        CHECK(differ == 0);
        free(b), free(fast), free(plain);
    }
}

static void test_conv(struct wc_backend *be, struct wc_stream *s, int c_in, int c_out, int t_in,
                      int stride, int with_add) {
    struct wc_mat m;
    size_t nw = (size_t)c_out * c_in * 3;
    float *w = rand_vec(nw, 1.0f / sqrtf(3.0f * c_in));
    CHECK(be->ops->upload_conv(be, &m, w, WC_F32, c_out, c_in, 3) == 0);
    float *b = rand_vec((size_t)c_out, 0.5f);
    int t_out = (t_in - 1) / stride + 1;
    float *add = with_add ? rand_vec((size_t)t_out * c_out, 1.0f) : NULL;
    float *in = rand_vec((size_t)(t_in + 2) * c_in, 1.0f);
    memset(in, 0, (size_t)c_in * sizeof(float));
    memset(in + (size_t)(t_in + 1) * c_in, 0, (size_t)c_in * sizeof(float));
    float *out = nan_vec((size_t)t_out * c_out);
    float *ref = malloc((size_t)t_out * c_out * sizeof(float));
    for (int t = 0; t < t_out; t++)
        for (int o = 0; o < c_out; o++) {
            double acc = b[o];
            for (int i = 0; i < c_in; i++)
                for (int k = 0; k < 3; k++) {
                    int ti = t * stride + k - 1;
                    if (ti >= 0 && ti < t_in)
                        acc += (double)w[((size_t)o * c_in + i) * 3 + k] *
                               in[(size_t)(ti + 1) * c_in + i];
                }
            acc = gelu_ref(acc);
            if (add)
                acc += add[(size_t)t * c_out + o];
            ref[(size_t)t * c_out + o] = (float)acc;
        }
    s->be->ops->conv1d(s, out, in + c_in, &m, b, add, c_in, c_out, t_in, stride, WC_ACT_GELU);
    CHECK(wc_stream_sync(s) == 0);
    char name[96];
    snprintf(name, sizeof name, "conv1d c_in=%d c_out=%d t_in=%d stride=%d add=%d", c_in, c_out,
             t_in, stride, with_add);
    CHECK(check_close(name, out, ref, (size_t)t_out * c_out, 1e-4, 1e-4));
    free(w), free(b), free(add), free(in), free(out), free(ref);
}

static void test_layernorm(struct wc_stream *s, int n_rows, int c) {
    float *in = rand_vec((size_t)n_rows * c, 3.0f), *g = rand_vec((size_t)c, 1.0f);
    float *b = rand_vec((size_t)c, 1.0f), *out = nan_vec((size_t)n_rows * c);
    float *ref = malloc((size_t)n_rows * c * sizeof(float));
    for (int t = 0; t < n_rows; t++) {
        const float *x = in + (size_t)t * c;
        double mean = 0, var = 0;
        for (int i = 0; i < c; i++)
            mean += x[i];
        mean /= c;
        for (int i = 0; i < c; i++)
            var += (x[i] - mean) * (x[i] - mean);
        var /= c;
        for (int i = 0; i < c; i++)
            ref[(size_t)t * c + i] = (float)((x[i] - mean) / sqrt(var + 1e-5) * g[i] + b[i]);
    }
    s->be->ops->layernorm(s, out, in, g, b, n_rows, c);
    CHECK(wc_stream_sync(s) == 0);
    CHECK(check_close("layernorm", out, ref, (size_t)n_rows * c, 1e-5, 1e-5));
    s->be->ops->layernorm(s, in, in, g, b, n_rows, c); /* in place */
    CHECK(check_close("layernorm in place", in, ref, (size_t)n_rows * c, 1e-5, 1e-5));
    free(in), free(g), free(b), free(out), free(ref);
}

/* One head of one query in double: out[:d] = softmax(q.k[row]/sqrt(d)) . v[row] over n rows,
 * row(j) = rows ? rows[j] : j; k, v rows ld floats apart (already offset to the head). */
static void naive_head(float *out, const float *q, const float *k, const float *v,
                       const int32_t *rows, int ld, int n, int d) {
    double *p = malloc((size_t)n * sizeof(double)), mx = -INFINITY, sum = 0;
    for (int j = 0; j < n; j++) {
        const float *kj = k + (size_t)(rows ? rows[j] : j) * ld;
        double acc = 0;
        for (int i = 0; i < d; i++)
            acc += (double)q[i] * kj[i];
        p[j] = acc / sqrt((double)d);
        mx = p[j] > mx ? p[j] : mx;
    }
    for (int j = 0; j < n; j++)
        sum += (p[j] = exp(p[j] - mx));
    for (int i = 0; i < d; i++) {
        double acc = 0;
        for (int j = 0; j < n; j++)
            acc += p[j] / sum * v[(size_t)(rows ? rows[j] : j) * ld + i];
        out[i] = (float)acc;
    }
    free(p);
}

/* With kv half, K and V also go in as f16 (the batch decoder's cross-attention), compared with
 * the f32 call on their widened values: bit for bit where a call takes the few-query path. */
static void test_attention_dt(struct wc_stream *s, int t_len, int s_len, int c, int n_head,
                              int ld_extra, int causal_pos0, int half) {
    int ld = c + ld_extra, d = c / n_head;
    float *q = rand_vec((size_t)t_len * c, 1.0f);
    float *k = rand_vec((size_t)s_len * ld, 1.0f), *v = rand_vec((size_t)s_len * ld, 1.0f);
    uint16_t *kh = half ? test_round_f16(k, (size_t)s_len * ld) : NULL;
    uint16_t *vh = half ? test_round_f16(v, (size_t)s_len * ld) : NULL;
    float *out = nan_vec((size_t)t_len * c), *ref = malloc((size_t)t_len * c * sizeof(float));
    for (int h = 0; h < n_head; h++)
        for (int t = 0; t < t_len; t++) {
            int n = causal_pos0 >= 0 && causal_pos0 + t + 1 < s_len ? causal_pos0 + t + 1 : s_len;
            naive_head(ref + (size_t)t * c + h * d, q + (size_t)t * c + h * d, k + h * d, v + h * d,
                       NULL, ld, n, d);
        }
    s->be->ops->attention(s, out, q, k, v, WC_F32, ld, t_len, s_len, c, n_head, causal_pos0);
    CHECK(wc_stream_sync(s) == 0);
    char name[96];
    snprintf(name, sizeof name, "attention t=%d s=%d c=%d heads=%d ld+%d causal=%d%s", t_len, s_len,
             c, n_head, ld_extra, causal_pos0, half ? " f16 K/V" : "");
    CHECK(check_close(name, out, ref, (size_t)t_len * c, 1e-5, 1e-4));
    if (half) {
        float *got = nan_vec((size_t)t_len * c);
        s->be->ops->attention(s, got, q, kh, vh, WC_F16, ld, t_len, s_len, c, n_head, -1);
        CHECK(wc_stream_sync(s) == 0);
        if (t_len <= 8)
            CHECK(memcmp(got, out, (size_t)t_len * c * sizeof(float)) == 0);
        CHECK(check_close(name, got, ref, (size_t)t_len * c, 1e-5, 1e-4));
        /* f16 keys are cross-attention's: under a causal mask they are refused */
        s->be->ops->attention(s, got, q, kh, vh, WC_F16, ld, t_len, s_len, c, n_head, 0);
        CHECK(wc_stream_sync(s) == WHISPERC_ERR_INVALID_ARG);
        s->err = 0, s->errmsg[0] = '\0';
        free(got);
    }
    free(q), free(k), free(v), free(out), free(ref), free(kh), free(vh);
}

/* A decoder step's queries without a mask (beams over one window's audio): each has the bits it
 * has alone, in groups (attention.c) or not; f16 K/V too. */
static void test_attention_queries_alone(struct wc_stream *s, int t_len, int s_len, int c,
                                         int n_head, int ld_extra, enum wc_dtype dt) {
    int ld = c + ld_extra;
    float *q = rand_vec((size_t)t_len * c, 1.0f);
    float *k = rand_vec((size_t)s_len * ld, 1.0f), *v = rand_vec((size_t)s_len * ld, 1.0f);
    uint16_t *kh = dt == WC_F16 ? test_round_f16(k, (size_t)s_len * ld) : NULL;
    uint16_t *vh = dt == WC_F16 ? test_round_f16(v, (size_t)s_len * ld) : NULL;
    const void *kx = kh ? (const void *)kh : k, *vx = vh ? (const void *)vh : v;
    float *all = nan_vec((size_t)t_len * c), *one = nan_vec((size_t)t_len * c);
    s->be->ops->attention(s, all, q, kx, vx, dt, ld, t_len, s_len, c, n_head, -1);
    for (int t = 0; t < t_len; t++)
        s->be->ops->attention(s, one + (size_t)t * c, q + (size_t)t * c, kx, vx, dt, ld, 1, s_len,
                              c, n_head, -1);
    CHECK(wc_stream_sync(s) == 0);
    char name[128];
    snprintf(name, sizeof name, "attention t=%d s=%d c=%d heads=%d ld+%d%s: queries as alone",
             t_len, s_len, c, n_head, ld_extra, kh ? " f16 K/V" : "");
    CHECK(check_close(name, all, one, (size_t)t_len * c, 0.0, 0.0));
    free(q), free(k), free(v), free(kh), free(vh), free(all), free(one);
}

static void test_attention(struct wc_stream *s, int t_len, int s_len, int c, int n_head,
                           int ld_extra, int causal_pos0) {
    test_attention_dt(s, t_len, s_len, c, n_head, ld_extra, causal_pos0, 0);
}

/* n_seq queries over n_kv cache rows picked at random (with repeats) from n_slots; with
 * per_seq, sequence g sees its own count of keys (1..n_kv), and must get the bits a call for
 * g alone with that count gives (what the batched decoder relies on). */
static void test_attention_gather(struct wc_stream *s, int n_seq, int n_kv, int n_slots, int c,
                                  int n_head, int per_seq) {
    int d = c / n_head, ld_slots = n_kv + 3;
    float *q = rand_vec((size_t)n_seq * c, 1.0f);
    float *k = rand_vec((size_t)n_slots * c, 1.0f), *v = rand_vec((size_t)n_slots * c, 1.0f);
    float *out = nan_vec((size_t)n_seq * c), *ref = malloc((size_t)n_seq * c * sizeof(float));
    int32_t *slots = malloc((size_t)n_seq * ld_slots * sizeof *slots);
    int32_t *counts = malloc((size_t)n_seq * sizeof *counts);
    for (size_t i = 0; i < (size_t)n_seq * ld_slots; i++)
        slots[i] = (int32_t)((test_rng_uniform(&rng) + 1.0f) * 0.5f * (n_slots - 1) + 0.5f);
    for (int g = 0; g < n_seq; g++)
        counts[g] =
            per_seq ? 1 + (int)((test_rng_uniform(&rng) + 1.0f) * 0.5f * (n_kv - 1) + 0.5f) : n_kv;
    if (per_seq)
        counts[n_seq - 1] = n_kv;
    for (int h = 0; h < n_head; h++)
        for (int g = 0; g < n_seq; g++)
            naive_head(ref + (size_t)g * c + h * d, q + (size_t)g * c + h * d, k + h * d, v + h * d,
                       slots + (size_t)g * ld_slots, c, counts[g], d);
    s->be->ops->attention_gather(s, out, q, k, v, slots, ld_slots, per_seq ? counts : NULL, n_seq,
                                 n_kv, c, n_head);
    CHECK(wc_stream_sync(s) == 0);
    char name[128];
    snprintf(name, sizeof name, "attention_gather seqs=%d kv=%d%s slots=%d c=%d heads=%d", n_seq,
             n_kv, per_seq ? " (per sequence)" : "", n_slots, c, n_head);
    CHECK(check_close(name, out, ref, (size_t)n_seq * c, 1e-5, 1e-4));
    for (int g = 0; per_seq && g < n_seq; g++) {
        float *alone = nan_vec((size_t)c);
        s->be->ops->attention_gather(s, alone, q + (size_t)g * c, k, v,
                                     slots + (size_t)g * ld_slots, ld_slots, NULL, 1, counts[g], c,
                                     n_head);
        CHECK(wc_stream_sync(s) == 0);
        CHECK(memcmp(alone, out + (size_t)g * c, (size_t)c * sizeof(float)) == 0);
        free(alone);
    }
    free(q), free(k), free(v), free(out), free(ref), free(slots), free(counts);
}

/* A short prompt's causal attention (t_len <= attention_exact_rows queries at positions
 * pos0..) has attention_gather's bits over the same keys (rows mult * c floats apart): what
 * lets the batch decoder feed a prompt as step rows (decode_batch.h). */
static void test_prompt_attention(struct wc_stream *s, int t_len, int pos0, int c, int n_head,
                                  int mult) {
    int s_len = pos0 + t_len;
    size_t nq = (size_t)t_len * c, nkv = (size_t)s_len * mult * c;
    float *q = rand_vec(nq, 1.0f), *k = rand_vec(nkv, 1.0f), *v = rand_vec(nkv, 1.0f);
    float *out = nan_vec(nq), *gat = nan_vec(nq);
    int32_t *slots = malloc((size_t)s_len * sizeof *slots);
    for (int j = 0; j < s_len; j++)
        slots[j] = j * mult;
    CHECK(t_len <= s->be->ops->attention_exact_rows);
    s->be->ops->attention(s, out, q, k, v, WC_F32, mult * c, t_len, s_len, c, n_head, pos0);
    for (int t = 0; t < t_len; t++)
        s->be->ops->attention_gather(s, gat + (size_t)t * c, q + (size_t)t * c, k, v, slots, s_len,
                                     NULL, 1, pos0 + t + 1, c, n_head);
    CHECK(wc_stream_sync(s) == 0);
    int ok = memcmp(out, gat, nq * sizeof(float)) == 0;
    printf("prompt attention t=%d pos0=%d c=%d heads=%d ld=%dc: %s\n", t_len, pos0, c, n_head, mult,
           ok ? "the gather's bits" : "DIFFERS");
    CHECK(ok);
    free(q), free(k), free(v), free(out), free(gat), free(slots);
}

/* Cross-attention of n_rows rows over n_lanes lanes' own K/V (rows ld_kv apart, lanes
 * lane_stride apart): row g must have exactly the bits `attention` gives it alone. beams > 0:
 * rows in runs of `beams` on one lane (a window's beams, which share a task: attention.c's
 * groups), else the lanes mixed. */
static void test_attention_rows(struct wc_stream *s, int n_rows, int n_lanes, int s_len, int c,
                                int n_head, int ld_extra, enum wc_dtype dt, int beams) {
    int ld = c + ld_extra, d = c / n_head;
    size_t lane_stride = (size_t)s_len * ld + 17;
    float *q = rand_vec((size_t)n_rows * c, 1.0f);
    float *k = rand_vec(lane_stride * n_lanes, 1.0f), *v = rand_vec(lane_stride * n_lanes, 1.0f);
    uint16_t *kh = dt == WC_F16 ? test_round_f16(k, lane_stride * n_lanes) : NULL;
    uint16_t *vh = dt == WC_F16 ? test_round_f16(v, lane_stride * n_lanes) : NULL;
    const void *kx = kh ? (const void *)kh : k, *vx = vh ? (const void *)vh : v;
    size_t esz = kh ? sizeof *kh : sizeof *k;
    float *out = nan_vec((size_t)n_rows * c), *ref = malloc((size_t)n_rows * c * sizeof(float));
    int32_t *lane_of = malloc((size_t)n_rows * sizeof *lane_of);
    for (int g = 0; g < n_rows; g++)
        lane_of[g] = beams ? g / beams % n_lanes : (g * 5 + 3) % n_lanes;
    for (int h = 0; h < n_head; h++)
        for (int g = 0; g < n_rows; g++) {
            size_t base = (size_t)lane_of[g] * lane_stride + (size_t)h * d;
            naive_head(ref + (size_t)g * c + h * d, q + (size_t)g * c + h * d, k + base, v + base,
                       NULL, ld, s_len, d);
        }
    s->be->ops->attention_rows(s, out, q, kx, vx, dt, ld, lane_stride, lane_of, n_rows, s_len, c,
                               n_head);
    CHECK(wc_stream_sync(s) == 0);
    char name[128];
    snprintf(name, sizeof name,
             "attention_rows rows=%d lanes=%d beams=%d s=%d c=%d heads=%d ld+%d%s", n_rows, n_lanes,
             beams, s_len, c, n_head, ld_extra, kh ? " f16 K/V" : "");
    CHECK(check_close(name, out, ref, (size_t)n_rows * c, 1e-5, 1e-4));
    for (int g = 0; g < n_rows; g++) {
        float *alone = nan_vec((size_t)c);
        size_t base = (size_t)lane_of[g] * lane_stride * esz;
        s->be->ops->attention(s, alone, q + (size_t)g * c, (const char *)kx + base,
                              (const char *)vx + base, dt, ld, 1, s_len, c, n_head, -1);
        CHECK(wc_stream_sync(s) == 0);
        CHECK(memcmp(alone, out + (size_t)g * c, (size_t)c * sizeof(float)) == 0);
        if (kh) { /* and the f32 op on the widened values */
            s->be->ops->attention(s, alone, q + (size_t)g * c, k + lane_of[g] * lane_stride,
                                  v + lane_of[g] * lane_stride, WC_F32, ld, 1, s_len, c, n_head,
                                  -1);
            CHECK(wc_stream_sync(s) == 0);
            CHECK(memcmp(alone, out + (size_t)g * c, (size_t)c * sizeof(float)) == 0);
        }
        free(alone);
    }
    free(q), free(k), free(v), free(out), free(ref), free(lane_of), free(kh), free(vh);
}

/* wc_f32_to_f16 (the CPU's to_f16): every finite half back to itself, the midpoints between
 * neighbours to the even one, a float either side of them to the nearer, and the range's end. */
static void test_to_f16(struct wc_stream *s) {
    int bad = 0;
    for (uint32_t h = 0; h < 0x7c00u; h++) {
        for (uint32_t sign = 0; sign <= 0x8000u; sign += 0x8000u) {
            float x = wc_f16_to_f32((uint16_t)(h | sign));
            bad += wc_f32_to_f16(x) != (h | sign);
        }
        if (h + 1 == 0x7c00u)
            break;
        float a = wc_f16_to_f32((uint16_t)h), b = wc_f16_to_f32((uint16_t)(h + 1));
        float mid = (a + b) / 2; /* exact: a half has 11 significant bits */
        bad += wc_f32_to_f16(mid) != ((h & 1) ? h + 1 : h);
        bad += wc_f32_to_f16(nextafterf(mid, 0.0f)) != h;
        bad += wc_f32_to_f16(nextafterf(mid, INFINITY)) != h + 1;
        bad += wc_f32_to_f16(-nextafterf(mid, INFINITY)) != ((h + 1) | 0x8000u);
    }
    bad += wc_f32_to_f16(65520.0f) != 0x7c00u;
    bad += wc_f32_to_f16(nextafterf(65520.0f, 0.0f)) != 0x7bffu;
    bad += wc_f32_to_f16(INFINITY) != 0x7c00u || wc_f32_to_f16(-INFINITY) != 0xfc00u;
    bad += (wc_f32_to_f16(NAN) & 0x7fffu) <= 0x7c00u;
    bad += wc_f32_to_f16(1e-9f) != 0 || wc_f32_to_f16(-1e-9f) != 0x8000u;
    float src[5] = {1.0f, -2.5f, 65504.0f, 1e5f, 0.1f};
    uint16_t dst[5];
    s->be->ops->to_f16(s, dst, src, 5);
    CHECK(wc_stream_sync(s) == 0);
    bad += dst[0] != 0x3c00u || dst[1] != 0xc100u || dst[2] != 0x7bffu || dst[3] != 0x7c00u ||
           dst[4] != 0x2e66u;
    printf("%s to_f16: %d wrong\n", bad ? "FAIL" : "ok  ", bad);
    CHECK(bad == 0);
}

/* One head's pre-softmax logits, keys ld_k floats apart (word alignment). */
static void test_attention_scores(struct wc_stream *s, int t_len, int s_len, int c, int n_head,
                                  int head, int ld_extra) {
    int ld = c + ld_extra, d = c / n_head;
    float *q = rand_vec((size_t)t_len * c, 1.0f), *k = rand_vec((size_t)s_len * ld, 1.0f);
    float *out = nan_vec((size_t)t_len * s_len), *ref = malloc((size_t)t_len * s_len * sizeof *ref);
    for (int t = 0; t < t_len; t++)
        for (int j = 0; j < s_len; j++) {
            double acc = 0;
            for (int i = 0; i < d; i++)
                acc += (double)q[(size_t)t * c + head * d + i] * k[(size_t)j * ld + head * d + i];
            ref[(size_t)t * s_len + j] = (float)(acc / sqrt((double)d));
        }
    s->be->ops->attention_scores(s, out, q, k, WC_F32, ld, t_len, s_len, c, n_head, head);
    CHECK(wc_stream_sync(s) == 0);
    char name[96];
    snprintf(name, sizeof name, "attention_scores t=%d s=%d c=%d heads=%d head=%d ld+%d", t_len,
             s_len, c, n_head, head, ld_extra);
    CHECK(check_close(name, out, ref, (size_t)t_len * s_len, 1e-5, 1e-4));
    /* f16 keys: the f32 path's bits on the widened values */
    size_t nk = (size_t)s_len * ld;
    uint16_t *kh = test_round_f16(k, nk);
    float *out_h = nan_vec((size_t)t_len * s_len);
    s->be->ops->attention_scores(s, out, q, k, WC_F32, ld, t_len, s_len, c, n_head, head);
    s->be->ops->attention_scores(s, out_h, q, kh, WC_F16, ld, t_len, s_len, c, n_head, head);
    CHECK(wc_stream_sync(s) == 0);
    int same = memcmp(out, out_h, (size_t)t_len * s_len * sizeof *out) == 0;
    printf("%s f16 keys = f32 on their values: %s\n", name, same ? "OK" : "NOT OK");
    CHECK(same);
    free(kh), free(out_h);
    free(q), free(k), free(out), free(ref);
}

/* Rows at pos0 + t, then rows at their own positions (a batched decoder step). */
static void test_embed(struct wc_backend *be, struct wc_stream *s) {
    int n_vocab = 300, c = 64, n_ctx = 20, pos0 = 5;
    struct wc_mat m;
    float *emb;
    make_mat(be, &m, n_vocab, c, WC_F16, &emb);
    float *pos = rand_vec((size_t)n_ctx * c, 1.0f);
    int32_t tokens[3] = {0, 299, 17}, positions[3] = {19, 0, 7};
    float *out = nan_vec(3 * (size_t)c), ref[3 * 64];
    for (int with_pos = 0; with_pos < 2; with_pos++) {
        for (int t = 0; t < 3; t++) {
            int p = with_pos ? positions[t] : pos0 + t;
            for (int i = 0; i < c; i++)
                ref[t * c + i] = emb[(size_t)tokens[t] * c + i] + pos[(size_t)p * c + i];
        }
        s->be->ops->embed(s, out, tokens, with_pos ? positions : NULL, 3, &m, pos, pos0, c);
        CHECK(wc_stream_sync(s) == 0);
        CHECK(check_close(with_pos ? "embed (positions)" : "embed", out, ref, 3 * (size_t)c, 0, 0));
    }
    free(emb), free(pos), free(out);
}

/* rows_scatter: source row r lands in dst row dst_row[r], every other dst row untouched. */
static void test_rows_scatter(struct wc_stream *s) {
    int c = 96, n_dst = 12;
    int32_t rows[5] = {11, 0, 4, 7, 3};
    float *src = rand_vec(5 * (size_t)c, 1.0f), *dst = nan_vec((size_t)n_dst * c);
    s->be->ops->rows_scatter(s, dst, src, rows, 5, c);
    CHECK(wc_stream_sync(s) == 0);
    for (int d = 0; d < n_dst; d++) {
        int from = -1;
        for (int r = 0; r < 5; r++)
            from = rows[r] == d ? r : from;
        for (int i = 0; i < c; i++)
            CHECK(from < 0 ? isnan(dst[(size_t)d * c + i])
                           : dst[(size_t)d * c + i] == src[(size_t)from * c + i]);
    }
    free(src), free(dst);
}

/* attention_windows: each window what `attention` gives it alone, bit for bit. */
static void test_attention_windows(struct wc_stream *s) {
    int n_win = 3, t_len = 40, c = 128, n_head = 2;
    size_t n = (size_t)n_win * t_len * c, nw = (size_t)t_len * c;
    float *q = rand_vec(n, 1.0f), *k = rand_vec(n, 1.0f), *v = rand_vec(n, 1.0f);
    float *out = nan_vec(n), *alone = nan_vec(n);
    s->be->ops->attention_windows(s, out, q, k, v, n_win, t_len, c, n_head);
    for (int i = 0; i < n_win; i++)
        s->be->ops->attention(s, alone + i * nw, q + i * nw, k + i * nw, v + i * nw, WC_F32, c,
                              t_len, t_len, c, n_head, -1);
    CHECK(wc_stream_sync(s) == 0);
    CHECK(memcmp(out, alone, n * sizeof(float)) == 0);
    free(q), free(k), free(v), free(out), free(alone);
}

/* transpose: every element where it belongs, at sizes that leave partial 32 x 32 blocks. */
static void test_transpose(struct wc_stream *s) {
    const int shapes[][2] = {{80, 3000}, {5, 37}, {33, 1}, {1, 64}};
    for (int i = 0; i < 4; i++) {
        int rows = shapes[i][0], cols = shapes[i][1];
        size_t n = (size_t)rows * cols;
        float *in = rand_vec(n, 1.0f), *out = nan_vec(n);
        s->be->ops->transpose(s, out, in, rows, cols);
        CHECK(wc_stream_sync(s) == 0);
        int ok = 1;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                ok &= out[(size_t)c * rows + r] == in[(size_t)r * cols + c];
        CHECK(ok);
        free(in), free(out);
    }
}

/* The vectorized GELU against erfc in double, over the whole useful range. */
static void test_gelu(void) {
    int n = 240001;
    float *x = malloc((size_t)n * sizeof(float));
    for (int i = 0; i < n; i++)
        x[i] = -12.0f + 24.0f * (float)i / (float)(n - 1);
    float *y = malloc((size_t)n * sizeof(float));
    memcpy(y, x, (size_t)n * sizeof(float));
    vm_gelu(y, (size_t)n);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double v = x[i], want = 0.5 * v * erfc(-v / sqrt(2.0));
        double e = fabs(y[i] - want) / fmax(fabs(want), 1e-12);
        worst = e > worst ? e : worst;
    }
    printf("gelu on [-12, 12]: max relative error %.3g (|ref| floored at 1e-12)\n", worst);
    CHECK(worst < 1e-5);
    float nan = NAN;
    vm_gelu(&nan, 1);
    CHECK(isnan(nan));
    float row[40];
    for (int i = 0; i < 40; i++)
        row[i] = (float)i / 10.0f;
    row[33] = NAN;
    vm_softmax(row, 40, 40); /* a NaN score must not come out as a probability */
    CHECK(isnan(row[33]));
    free(x);
    free(y);
}

/* wc_logsumexp (vm_max_sum_exp: float terms summed in double) against exp in double: rows of a
 * vocabulary's length with a tail shorter than a vector, forbidden (-inf) tokens, a confident
 * row (the max's log-probability, ~ -1.7e-7, must keep its digits), one NaN, all -inf, empty. */
static void test_logsumexp(void) {
    int n = 51865;
    float *x = malloc((size_t)n * sizeof(float));
    uint64_t rng = 42;
    double worst = 0, worst_small = 0;
    for (int kind = 0; kind < 3; kind++) {
        for (int i = 0; i < n; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (float)((double)(rng >> 40) / (double)(1ull << 24) * 12.0 - 6.0);
            if (kind == 1 && i % 7 == 3)
                x[i] = -INFINITY;
        }
        if (kind == 2)
            x[1000] = 30.0f; /* ~25 above the rest */
        for (int from = 0; from < 3; from++) {
            double m = -INFINITY, sum = 0;
            for (int i = from; i < n; i++)
                m = x[i] > m ? x[i] : m;
            for (int i = from; i < n; i++)
                sum += exp((double)x[i] - m);
            double want = m + log(sum), got = wc_logsumexp(x, from, n);
            worst = fmax(worst, fabs(got - want));
            if (kind == 2) /* the confident token's log-probability, relative */
                worst_small = fmax(worst_small,
                                   fabs((x[1000] - got) - (x[1000] - want)) / fabs(x[1000] - want));
        }
    }
    printf("logsumexp over %d values: max abs error %.3g; a confident row's log-probability "
           "(~%.2g) relative error %.3g\n",
           n, worst, (double)x[1000] - wc_logsumexp(x, 0, n), worst_small);
    CHECK(worst < 1e-6);
    CHECK(worst_small < 1e-3);
    x[77] = NAN;
    CHECK(isnan(wc_logsumexp(x, 0, n)));
    for (int i = 0; i < 20; i++)
        x[i] = -INFINITY;
    CHECK(wc_logsumexp(x, 0, 20) == -INFINITY);
    CHECK(wc_logsumexp(x, 5, 5) == -INFINITY);
    x[19] = 2.5f; /* one finite value: exactly itself */
    CHECK(wc_logsumexp(x, 0, 20) == 2.5);
    free(x);
}

int main(void) {
    test_gelu();
    test_logsumexp();
    struct wc_backend *be = NULL;
    char err[256];
    CHECK(cpu_backend_new(&be, err, sizeof err) == 0);
    for (int threads = 1; threads <= 3; threads += 2) {
        struct wc_stream *s = NULL;
        CHECK(be->ops->stream_new(be, threads, 0, &s, NULL, 0) == 0);
        printf("-- %d thread(s)\n", threads);
        const enum wc_dtype dts[2] = {WC_F16, WC_F32};
        for (int di = 0; di < 2; di++) {
            test_linear(be, s, 1, 200, 64, dts[di], WC_ACT_NONE, 0, 1, 0);
            test_linear(be, s, 1, 131, 72, dts[di], WC_ACT_NONE, 1, 0, 0);
            test_linear(be, s, 3, 96, 64, dts[di], WC_ACT_GELU, 0, 1, 5);
            test_linear(be, s, 8, 70, 40, dts[di], WC_ACT_NONE, 1, 1, 0);
            test_linear(be, s, 9, 96, 64, dts[di], WC_ACT_GELU, 0, 1, 0);
            test_linear(be, s, 40, 130, 96, dts[di], WC_ACT_NONE, 1, 1, 3);
            test_linear(be, s, 100, 256, 64, dts[di], WC_ACT_NONE, 0, 0, 0);
            for (int n = 2; n <= be->ops->linear_exact_rows; n++)
                test_linear_rows_exact(be, s, n, 150, 392, dts[di]);
        }
        const enum wc_dtype qts[5] = {WC_Q4_0, WC_Q4_1, WC_Q5_0, WC_Q5_1, WC_Q8_0};
        struct cpu_backend *cb = be->impl;
        int fast = cb->has_avx2_f16c;
        for (int n = 1; n <= CPU_GEMV_MAX_ROWS && fast; n++) {
            test_linear_f16_order(be, s, n, 384);
            test_linear_f16_order(be, s, n, 392);
        }
        for (int q = 0; q < 5 && fast && threads == 1; q++)
            test_quant_decode(qts[q]);
        for (int pass = 0; pass < 1 + fast; pass++) { /* AVX2, then the scalar reads */
            cb->has_avx2_f16c = pass == 0 ? fast : 0;
            for (int q = 0; q < 5; q++)
                test_linear_quant(be, s, qts[q]);
        }
        cb->has_avx2_f16c = fast;
        test_conv(be, s, 80, 64, 30, 1, 0);
        test_conv(be, s, 64, 48, 30, 2, 1);
        test_conv(be, s, 16, 40, 7, 2, 0);
        test_layernorm(s, 37, 384);
        test_attention(s, 70, 70, 128, 2, 0, -1);
        test_attention(s, 1, 100, 128, 4, 0, -1);
        test_attention(s, 1, 9, 64, 1, 192, 8);
        test_attention(s, 5, 12, 128, 2, 384, 7);
        test_attention(s, 40, 40, 64, 2, 64, 0);
        test_attention_dt(s, 70, 300, 128, 2, 0, -1, 1);
        test_attention_dt(s, 3, 1500, 384, 6, 64, -1, 1);
        for (int dt = WC_F32; dt <= WC_F16; dt++)
            for (int t = 2; t <= be->ops->attention_exact_rows; t++)
                test_attention_queries_alone(s, t, t == 5 ? 1500 : 61, t % 2 ? 384 : 512,
                                             t % 2 ? 6 : 8, t == 3 ? 16 : 0, (enum wc_dtype)dt);
        test_to_f16(s);
        test_prompt_attention(s, 1, 0, 128, 2, 1);
        test_prompt_attention(s, 4, 0, 384, 6, 1);
        test_prompt_attention(s, be->ops->attention_exact_rows, 0, 128, 2, 1);
        test_prompt_attention(s, 3, 70, 128, 2, 5);
        test_attention_gather(s, 1, 1, 1, 64, 1, 0);
        test_attention_gather(s, 5, 37, 200, 128, 2, 0);
        test_attention_gather(s, 3, 300, 1500, 384, 6, 0);
        test_attention_gather(s, 8, 40, 300, 384, 6, 1);
        test_attention_gather(s, 1, 1, 1, 64, 1, 1);
        test_rows_scatter(s);
        test_transpose(s);
        test_attention_windows(s);
        for (int dt = WC_F32; dt <= WC_F16; dt++) {
            test_attention_rows(s, 1, 1, 1, 64, 1, 0, dt, 0);
            test_attention_rows(s, 8, 3, 150, 384, 6, 0, dt, 0);
            test_attention_rows(s, 5, 5, 37, 128, 2, 64, dt, 0);
            test_attention_rows(s, 15, 3, 150, 384, 6, 0, dt, 5);
            test_attention_rows(s, 16, 2, 77, 512, 8, 32, dt, 8);
            test_attention_rows(s, 7, 4, 40, 256, 2, 0, dt, 2);
        }
        test_attention_scores(s, 1, 1, 64, 1, 0, 0);
        test_attention_scores(s, 37, 1500, 384, 6, 5, 0);
        test_attention_scores(s, 230, 300, 512, 8, 3, 17);
        test_embed(be, s);
        be->ops->stream_free(s);
    }
    be->ops->backend_free(be);
    return TEST_RESULT();
}
