/*
 * test_gpu_kernels.c — every generated CUDA kernel against its CPU twin on fresh random inputs
 * (suite gpu). Outputs are poisoned with NaN before each launch. Exits 77 without a CUDA driver
 * or device, so it runs in CI as a skip and on the lent H100/H200 for real.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common.h"
#include "cpu/vecmath.h"
#include "gpu/cuda_api.h"
#include "kernels/kernels.h"
#include "util.h"

static struct cuda_api api;
static struct test_rng rng = {777};
static char err[1024];

#define CU(call)                                                                                   \
    do {                                                                                           \
        if (cuda_check(&api, (call), #call, err, sizeof err)) {                                    \
            fprintf(stderr, "%s\n", err);                                                          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static float *rand_vec(size_t n, float scale) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        p[i] = scale * test_rng_normal(&rng);
    return p;
}

static CUdeviceptr dev_upload(const void *host, size_t bytes) {
    CUdeviceptr d;
    CU(api.mem_alloc(&d, bytes));
    CU(api.memcpy_htod(d, host, bytes));
    return d;
}

static CUdeviceptr dev_poisoned(size_t n_floats) {
    float *nan = malloc(n_floats * sizeof(float));
    for (size_t i = 0; i < n_floats; i++)
        nan[i] = NAN;
    CUdeviceptr d = dev_upload(nan, n_floats * sizeof(float));
    free(nan);
    return d;
}

static CUfunction load(char *ptx, const char *name, CUmodule *mod) {
    if (!ptx) {
        fprintf(stderr, "%s: generator failed\n", name);
        exit(1);
    }
    if (cuda_module_load_ptx(&api, ptx, mod, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", name, err);
        exit(1);
    }
    free(ptx);
    CUfunction f;
    CU(api.module_get_function(&f, *mod, name));
    return f;
}

static void launch2d(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned block, void **args) {
    CU(api.launch_kernel(f, grid_x, grid_y, 1, block, 1, 1, 0, NULL, args, NULL));
    CU(api.ctx_synchronize());
}

static void launch(CUfunction f, unsigned grid, unsigned block, void **args) {
    launch2d(f, grid, 1, block, args);
}

/* attn_gather / attn_rows f over n_rows rows and n_keys keys as the backend runs them
 * (kernels.h): ceil(n_keys / KERNEL_ATTN_SPLIT) key splits, their records (in a poisoned
 * buffer) joined by the last split CTA of each row and head; its counters start at zero and
 * must be zero again afterwards (the next launch, or a step graph's replay, relies on it), so
 * it runs again, the output and the records poisoned before each: 40 times when split, each
 * output bit for bit the first's (the join's memory ordering: whichever CTA ends last must
 * read every other's records). args: f's own; args[0] points at the output's address
 * ([n_rows][n_head d]); the last two (records, counters) are filled here. */
static void launch_split(CUfunction f, int n_head, int n_rows, int n_keys, int d, void **args,
                         int n_args, int split) {
    unsigned nz = (unsigned)((n_keys + split - 1) / split);
    size_t n_count = (size_t)n_rows * n_head;
    size_t n_part = (size_t)n_rows * n_head * nz * (d + 2);
    CUdeviceptr part = nz > 1 ? dev_poisoned(n_part) : 0;
    uint32_t *zeros = calloc(n_count, 4), *count_after = malloc(n_count * 4);
    CUdeviceptr count = nz > 1 ? dev_upload(zeros, n_count * 4) : 0;
    args[n_args - 2] = &part;
    args[n_args - 1] = &count;
    size_t n_out = n_count * (size_t)d, n_nan = n_out > n_part ? n_out : n_part;
    float *nan = malloc(n_nan * 4);
    for (size_t i = 0; i < n_nan; i++)
        nan[i] = NAN;
    float *first = malloc(n_out * 4), *again = malloc(n_out * 4);
    int n_rep = nz > 1 ? 40 : 2, n_diff = 0;
    for (int rep = 0; rep < n_rep; rep++) { /* the records too: a stale read fails */
        CU(api.memcpy_htod(*(CUdeviceptr *)args[0], nan, n_out * 4));
        if (nz > 1)
            CU(api.memcpy_htod(part, nan, n_part * 4));
        CU(api.launch_kernel(f, (unsigned)n_rows, (unsigned)n_head, nz, KERNEL_GATHER_THREADS, 1, 1,
                             0, NULL, args, NULL));
        CU(api.ctx_synchronize());
        CU(api.memcpy_dtoh(rep ? again : first, *(CUdeviceptr *)args[0], n_out * 4));
        n_diff += rep > 0 && memcmp(first, again, n_out * 4) != 0;
    }
    if (n_diff)
        fprintf(stderr, "split join: %d of %d runs differ from the first\n", n_diff, n_rep - 1);
    CHECK(n_diff == 0);
    free(first), free(again);
    if (nz > 1) {
        CU(api.memcpy_dtoh(count_after, count, n_count * 4));
        CHECK(memcmp(count_after, zeros, n_count * 4) == 0);
        api.mem_free(part);
        api.mem_free(count);
    }
    free(zeros), free(count_after), free(nan);
}

static void test_layernorm(int sm, struct wc_stream *s, int rows, int c) {
    char name[64];
    snprintf(name, sizeof name, "layernorm_c%d", c);
    CUmodule mod;
    CUfunction f = load(gen_layernorm(sm, c, 0), name, &mod);
    size_t n = (size_t)rows * c;
    float *x = rand_vec(n, 3.0f), *g = rand_vec((size_t)c, 1.0f), *b = rand_vec((size_t)c, 1.0f);
    float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    s->be->ops->layernorm(s, want, x, g, b, rows, c);
    CUdeviceptr dx = dev_upload(x, n * 4), dg = dev_upload(g, (size_t)c * 4);
    CUdeviceptr db = dev_upload(b, (size_t)c * 4), dout = dev_poisoned(n);
    unsigned urows = (unsigned)rows;
    void *args[] = {&dout, &dx, &dg, &db, &urows};
    launch(f, (unsigned)rows, KERNEL_LN_THREADS, args);
    CU(api.memcpy_dtoh(got, dout, n * 4));
    CHECK(check_close(name, got, want, n, 1e-6, 1e-5));
    void *args_inplace[] = {&dx, &dx, &dg, &db, &urows}; /* out == in */
    launch(f, (unsigned)rows, KERNEL_LN_THREADS, args_inplace);
    CU(api.memcpy_dtoh(got, dx, n * 4));
    CHECK(check_close("layernorm in place", got, want, n, 1e-6, 1e-5));
    /* the fp16 form: the f32 kernel's values (got), rounded, bit for bit */
    CUmodule mod_h;
    snprintf(name, sizeof name, "layernorm_c%d_h", c);
    CUfunction fh = load(gen_layernorm(sm, c, 1), name, &mod_h);
    CU(api.memcpy_htod(dx, x, n * 4));
    CU(api.memcpy_htod(dout, got, n * 4)); /* poison of a kind: the f32 values, not halves */
    launch(fh, (unsigned)rows, KERNEL_LN_THREADS, args);
    uint16_t *h = malloc(n * 2);
    CU(api.memcpy_dtoh(h, dout, n * 2));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += h[i] != wc_f32_to_f16(got[i]);
    printf("%s: %zu of %zu halves differ from the f32 kernel's values rounded\n", name, bad, n);
    CHECK(bad == 0);
    api.module_unload(mod_h);
    free(h);
    api.mem_free(dx), api.mem_free(dg), api.mem_free(db), api.mem_free(dout);
    api.module_unload(mod);
    free(x), free(g), free(b), free(want), free(got);
}

static void test_bias_gelu(int sm, int rows, int cols) {
    char name[64];
    snprintf(name, sizeof name, "bias_gelu_n%d", cols);
    CUmodule mod;
    CUfunction f = load(gen_bias_gelu(sm, cols), name, &mod);
    size_t n = (size_t)rows * cols;
    float *x = rand_vec(n, 4.0f), *b = rand_vec((size_t)cols, 1.0f);
    float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        want[i] = x[i] + b[i % (size_t)cols];
    vm_gelu(want, n);
    CUdeviceptr dx = dev_upload(x, n * 4), db = dev_upload(b, (size_t)cols * 4);
    unsigned un = (unsigned)n;
    void *args[] = {&dx, &db, &un};
    launch(f, (unsigned)((n + KERNEL_EW_THREADS - 1) / KERNEL_EW_THREADS), KERNEL_EW_THREADS, args);
    CU(api.memcpy_dtoh(got, dx, n * 4));
    CHECK(check_close(name, got, want, n, 1e-6, 1e-5));
    api.mem_free(dx), api.mem_free(db);
    api.module_unload(mod);
    free(x), free(b), free(want), free(got);
}

/* n values from element off of the buffers (off 1: 4-byte aligned only, one at a time); the
 * host's rounding to nearest even, bit for bit, and nothing before off written */
static void test_f32_to_f16(int sm, size_t n, size_t off) {
    CUmodule mod;
    CUfunction f = load(gen_f32_to_f16(sm), "f32_to_f16", &mod);
    size_t all = n + off;
    float *x = rand_vec(all, 10.0f);
    uint16_t *h = malloc(all * 2);
    CUdeviceptr dx = dev_upload(x, all * 4), dh;
    CU(api.mem_alloc(&dh, all * 2));
    CU(api.memset_d8(dh, 0xff, all * 2)); /* NaN halves */
    CUdeviceptr out = dh + off * 2, in = dx + off * 4;
    unsigned un = (unsigned)n;
    void *args[] = {&out, &in, &un};
    launch(f, (unsigned)((n + KERNEL_F16_PER_CTA - 1) / KERNEL_F16_PER_CTA), KERNEL_EW_THREADS,
           args);
    CU(api.memcpy_dtoh(h, dh, all * 2));
    size_t bad = 0;
    for (size_t i = 0; i < all; i++)
        bad += h[i] != (i < off ? 0xffff : wc_f32_to_f16(x[i]));
    printf("f32_to_f16 n=%zu from element %zu: %zu differ from the host's rounding\n", n, off, bad);
    CHECK(bad == 0);
    api.mem_free(dx), api.mem_free(dh);
    api.module_unload(mod);
    free(x), free(h);
}

static void test_embed(int sm, struct wc_backend *be, struct wc_stream *s, int c) {
    char name[64];
    snprintf(name, sizeof name, "embed_c%d", c);
    CUmodule mod;
    CUfunction f = load(gen_embed(sm, c), name, &mod);
    int n_vocab = 1000, n_ctx = 64, t_len = 7, pos0 = 0; /* positions given */
    float *e = rand_vec((size_t)n_vocab * c, 0.5f), *pos = rand_vec((size_t)n_ctx * c, 0.5f);
    uint16_t *eh = malloc((size_t)n_vocab * c * 2);
    for (size_t i = 0; i < (size_t)n_vocab * c; i++) { /* f16 bits of small normal values */
        uint32_t bits;
        memcpy(&bits, &e[i], 4);
        int ex = (int)((bits >> 23) & 0xff) - 112;
        eh[i] = ex <= 0 ? 0
                        : (uint16_t)(((bits >> 16) & 0x8000u) | ((uint32_t)ex << 10) |
                                     ((bits >> 13) & 0x3ffu));
    }
    int32_t tokens[7] = {0, 999, 5, 5, 123, 42, 777}, positions[7] = {11, 63, 0, 12, 5, 5, 40};
    struct wc_mat m;
    CHECK(be->ops->upload_mat(be, &m, eh, WC_F16, n_vocab, c) == 0);
    float *want = malloc((size_t)t_len * c * 4), *got = malloc((size_t)t_len * c * 4);
    s->be->ops->embed(s, want, tokens, positions, t_len, &m, pos, pos0, c);
    CUdeviceptr dout = dev_poisoned((size_t)t_len * c), dtok = dev_upload(tokens, sizeof tokens);
    CUdeviceptr dposi = dev_upload(positions, sizeof positions);
    CUdeviceptr demb = dev_upload(eh, (size_t)n_vocab * c * 2);
    CUdeviceptr dpos = dev_upload(pos, (size_t)n_ctx * c * 4);
    void *args[] = {&dout, &dtok, &demb, &dpos, &dposi};
    launch(f, (unsigned)t_len, KERNEL_LN_THREADS, args);
    CU(api.memcpy_dtoh(got, dout, (size_t)t_len * c * 4));
    CHECK(check_close(name, got, want, (size_t)t_len * c, 0, 0));
    api.mem_free(dout), api.mem_free(dtok), api.mem_free(demb), api.mem_free(dpos);
    api.mem_free(dposi);
    api.module_unload(mod);
    free(e), free(pos), free(eh), free(want), free(got);
}

// ---- GEMM epilogue, im2col, attention ----

/* x [rows][ld], only columns < n change: the columns past n must come back untouched. */
static void test_bias_act(int sm, int rows, int n, int ld, int flags) {
    char name[64];
    snprintf(name, sizeof name, "bias_act_n%d_f%d", n, flags);
    CUmodule mod;
    CUfunction f = load(gen_bias_act(sm, n, flags), name, &mod);
    size_t nx = (size_t)rows * ld, na = (size_t)rows * n;
    float *x = rand_vec(nx, 4.0f), *b = rand_vec((size_t)n, 1.0f), *add = rand_vec(na, 1.0f);
    float *want = malloc(nx * sizeof(float)), *got = malloc(nx * sizeof(float));
    memcpy(want, x, nx * sizeof(float));
    for (int r = 0; r < rows; r++) {
        float *w = want + (size_t)r * ld;
        for (int i = 0; flags & KERNEL_EPI_BIAS && i < n; i++)
            w[i] += b[i];
        if (flags & KERNEL_EPI_GELU)
            vm_gelu(w, (size_t)n);
        for (int i = 0; flags & KERNEL_EPI_ADD && i < n; i++)
            w[i] += add[(size_t)r * n + i];
    }
    CUdeviceptr dx = dev_upload(x, nx * 4), db = dev_upload(b, (size_t)n * 4);
    CUdeviceptr dadd = dev_upload(add, na * 4);
    unsigned uld = (unsigned)ld, urows = (unsigned)rows;
    CUdeviceptr none = 0;
    void *args[] = {&dx, &uld, &db, &dadd, &urows, &none};
    size_t per_cta = (size_t)KERNEL_EW_THREADS * (size_t)kernel_epi_per_thread(n);
    unsigned grid = (unsigned)((na + per_cta - 1) / per_cta);
    launch(f, grid, KERNEL_EW_THREADS, args);
    CU(api.memcpy_dtoh(got, dx, nx * 4));
    char what[96];
    snprintf(what, sizeof what, "%s rows=%d ld=%d", name, rows, ld);
    CHECK(check_close(what, got, want, nx, 1e-6, 1e-5));
    /* the fp16 form into [rows][n]: the in-place kernel's values (got) rounded, bit for bit,
     * and x left as it was */
    CUmodule mod_h;
    snprintf(name, sizeof name, "bias_act_n%d_f%d", n, flags | KERNEL_EPI_HALF);
    CUfunction fh = load(gen_bias_act(sm, n, flags | KERNEL_EPI_HALF), name, &mod_h);
    CU(api.memcpy_htod(dx, x, nx * 4));
    CUdeviceptr dh = dev_poisoned(na); /* twice the halves' bytes */
    void *args_h[] = {&dx, &uld, &db, &dadd, &urows, &dh};
    launch(fh, grid, KERNEL_EW_THREADS, args_h);
    uint16_t *h = malloc(na * 2);
    float *x_after = malloc(nx * 4);
    CU(api.memcpy_dtoh(h, dh, na * 2));
    CU(api.memcpy_dtoh(x_after, dx, nx * 4));
    size_t bad = 0;
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < n; i++)
            bad += h[(size_t)r * n + i] != wc_f32_to_f16(got[(size_t)r * ld + i]);
    printf("%s rows=%d ld=%d: %zu of %zu halves differ from the f32 kernel's values rounded\n",
           name, rows, ld, bad, na);
    CHECK(bad == 0 && memcmp(x_after, x, nx * 4) == 0);
    api.module_unload(mod_h);
    api.mem_free(dh);
    free(h), free(x_after);
    api.mem_free(dx), api.mem_free(db), api.mem_free(dadd);
    api.module_unload(mod);
    free(x), free(b), free(add), free(want), free(got);
}

/* `in` has t_in rows between two zero rows (backend.h conv1d); out is fp16 [t_out][3 c_in]. */
static void test_im2col(int sm, int c_in, int stride, int t_in) {
    char name[64];
    snprintf(name, sizeof name, "im2col_c%d_s%d", c_in, stride);
    CUmodule mod;
    CUfunction f = load(gen_im2col(sm, c_in, stride), name, &mod);
    int t_out = (t_in - 1) / stride + 1;
    size_t n_in = (size_t)(t_in + 2) * c_in, n_out = (size_t)t_out * 3 * c_in;
    float *in = rand_vec(n_in, 2.0f), *want = malloc(n_out * 4), *got = malloc(n_out * 4);
    memset(in, 0, (size_t)c_in * 4);
    memset(in + (size_t)(t_in + 1) * c_in, 0, (size_t)c_in * 4);
    const float *row0 = in + c_in;
    for (int t = 0; t < t_out; t++)
        for (int ci = 0; ci < c_in; ci++)
            for (int k = 0; k < 3; k++)
                want[((size_t)t * c_in + ci) * 3 + k] =
                    row0[(ptrdiff_t)(t * stride + k - 1) * c_in + ci];
    uint16_t *h = malloc(n_out * 2);
    CUdeviceptr din = dev_upload(in, n_in * 4), dout;
    CUdeviceptr drow0 = din + (CUdeviceptr)c_in * 4;
    CU(api.mem_alloc(&dout, n_out * 2));
    CU(api.memset_d8(dout, 0xff, n_out * 2)); /* NaN halves */
    unsigned ut = (unsigned)t_out;
    void *args[] = {&dout, &drow0, &ut};
    launch(f, ut, KERNEL_LN_THREADS, args);
    CU(api.memcpy_dtoh(h, dout, n_out * 2));
    for (size_t i = 0; i < n_out; i++)
        got[i] = wc_f16_to_f32(h[i]);
    char what[96];
    snprintf(what, sizeof what, "%s t_in=%d", name, t_in);
    /* the exact fp32 values, rounded to nearest f16: within half an ulp (2^-11 relative) */
    CHECK(check_close(what, got, want, n_out, 1e-7, 1.0 / 2048));
    api.mem_free(din), api.mem_free(dout);
    api.module_unload(mod);
    free(in), free(want), free(got), free(h);
}

/* Scores of N(0,1) q and k over sqrt(d) are O(1): softmax weights are spread and the output is
 * a mean of many v rows, so fp32 noise stays near 1e-7 relative (atol covers outputs that cancel
 * to ~0). ld_kv > c exercises the KV cache's wider rows. */
/* n random K or V values; with half, rounded to f16, *h their halves (malloc'd): the CPU twin
 * and the kernel then read the same values. */
static float *rand_kv(size_t n, int half, uint16_t **h) {
    float *x = rand_vec(n, 1.0f);
    *h = half ? test_round_f16(x, n) : NULL;
    return x;
}

/* The K/V a kernel reads: f32 x, or the halves h (n values). */
static CUdeviceptr kv_upload(const float *x, const uint16_t *h, size_t n) {
    return h ? dev_upload(h, n * 2) : dev_upload(x, n * 4);
}

static void test_attention(int sm, struct wc_stream *s, int n_head, int d, int t_len, int s_len,
                           int ld_kv, int causal_pos0, int tc, int kv_half) {
    int causal = causal_pos0 >= 0, c = n_head * d;
    char name[64];
    snprintf(name, sizeof name, "attn%s_h%d_d%d%s%s", tc ? "_tc" : "", n_head, d,
             causal ? "_causal" : "", kv_half ? "_kvh" : "");
    CUmodule mod;
    CUfunction f =
        load(tc ? gen_attention_tc(sm, n_head, d, kv_half) : gen_attention(sm, n_head, d, causal),
             name, &mod);
    size_t nq = (size_t)t_len * c, nkv = (size_t)s_len * ld_kv;
    uint16_t *kh, *vh;
    float *q = rand_vec(nq, 1.0f), *kk = rand_kv(nkv, kv_half, &kh),
          *v = rand_kv(nkv, kv_half, &vh);
    float *want = malloc(nq * 4), *got = malloc(nq * 4);
    s->be->ops->attention(s, want, q, kk, v, WC_F32, ld_kv, t_len, s_len, c, n_head, causal_pos0);
    CHECK(wc_stream_sync(s) == 0);
    CUdeviceptr dq = dev_upload(q, nq * 4), dk = kv_upload(kk, kh, nkv);
    CUdeviceptr dv = kv_upload(v, vh, nkv), dout = dev_poisoned(nq);
    unsigned uld = (unsigned)ld_kv, ut = (unsigned)t_len, us = (unsigned)s_len;
    int pos0 = causal_pos0;
    void *args[] = {&dout, &dq, &dk, &dv, &uld, &ut, &us, &pos0};
    launch2d(f, (ut + KERNEL_ATTN_BQ - 1) / KERNEL_ATTN_BQ, (unsigned)n_head, KERNEL_ATTN_THREADS,
             args);
    CU(api.memcpy_dtoh(got, dout, nq * 4));
    char what[128];
    snprintf(what, sizeof what, "%s t=%d s=%d ld=%d pos0=%d", name, t_len, s_len, ld_kv,
             causal_pos0);
    /* tensor cores: q, k, v and the weights rounded to fp16 (2^-11 relative each) */
    CHECK(check_close(what, got, want, nq, tc ? 1e-3 : 1e-6, tc ? 1e-2 : 1e-5));
    api.mem_free(dq), api.mem_free(dk), api.mem_free(dv), api.mem_free(dout);
    api.module_unload(mod);
    free(q), free(kk), free(v), free(kh), free(vh), free(want), free(got);
}

/* k, v: n_rows rows of c; each sequence's slot row holds random rows (repeats allowed, as
 * beams sharing a prefix), ld_slots > n_kv. per_seq: each sequence its own key count. */
static void test_attention_gather(int sm, struct wc_stream *s, int n_head, int d, int n_seq,
                                  int n_kv, int per_seq) {
    int c = n_head * d, ld_slots = n_kv + 5, n_rows = 2 * n_kv + 3;
    char name[64];
    snprintf(name, sizeof name, "attn_gather_h%d_d%d", n_head, d);
    CUmodule mod;
    CUfunction f = load(gen_attention_gather(sm, n_head, d), name, &mod);
    size_t nq = (size_t)n_seq * c, nkv = (size_t)n_rows * c;
    float *q = rand_vec(nq, 1.0f), *kk = rand_vec(nkv, 1.0f), *v = rand_vec(nkv, 1.0f);
    int32_t *slots = malloc((size_t)n_seq * ld_slots * sizeof(int32_t));
    int32_t *counts = malloc((size_t)n_seq * sizeof(int32_t));
    for (size_t i = 0; i < (size_t)n_seq * ld_slots; i++)
        slots[i] = (int32_t)((test_rng_uniform(&rng) + 1.0f) * 0.5f * (float)n_rows) % n_rows;
    for (int g = 0; g < n_seq; g++) /* 1..n_kv, the first sequence the longest */
        counts[g] =
            g == 0 ? n_kv : 1 + (int32_t)((test_rng_uniform(&rng) + 1.0f) * 0.5f * n_kv) % n_kv;
    float *want = malloc(nq * 4), *got = malloc(nq * 4);
    s->be->ops->attention_gather(s, want, q, kk, v, slots, ld_slots, per_seq ? counts : NULL, n_seq,
                                 n_kv, c, n_head);
    CHECK(wc_stream_sync(s) == 0);
    CUdeviceptr dq = dev_upload(q, nq * 4), dk = dev_upload(kk, nkv * 4);
    CUdeviceptr dv = dev_upload(v, nkv * 4), dout = dev_poisoned(nq);
    CUdeviceptr dslots = dev_upload(slots, (size_t)n_seq * ld_slots * sizeof(int32_t));
    CUdeviceptr dcounts = dev_upload(counts, (size_t)n_seq * sizeof(int32_t));
    CUdeviceptr pcounts = per_seq ? dcounts : 0;
    unsigned uld = (unsigned)ld_slots, useq = (unsigned)n_seq, ukv = (unsigned)n_kv;
    void *args[] = {&dout, &dq, &dk, &dv, &dslots, &uld, &pcounts, &useq, &ukv, NULL, NULL};
    launch_split(f, n_head, n_seq, n_kv, d, args, 11, KERNEL_ATTN_SPLIT);
    CU(api.memcpy_dtoh(got, dout, nq * 4));
    char what[128];
    snprintf(what, sizeof what, "%s n_seq=%d n_kv=%d%s", name, n_seq, n_kv,
             per_seq ? " per sequence" : "");
    CHECK(check_close(what, got, want, nq, 1e-6, 1e-5));
    /* each sequence alone, with its own count as the launch's n_kv (fewer splits): the bits
     * it had among the others, as a decoder step alone and batched */
    int same = 1;
    for (int g = 0; per_seq && g < n_seq; g++) {
        CUdeviceptr gout = dev_poisoned((size_t)c), gq = dq + (size_t)g * c * 4;
        CUdeviceptr gslots = dslots + (size_t)g * ld_slots * sizeof(int32_t), none = 0;
        unsigned one = 1, gkv = (unsigned)counts[g];
        void *gargs[] = {&gout, &gq, &dk, &dv, &gslots, &uld, &none, &one, &gkv, NULL, NULL};
        launch_split(f, n_head, 1, counts[g], d, gargs, 11, KERNEL_ATTN_SPLIT);
        float *row = malloc((size_t)c * 4);
        CU(api.memcpy_dtoh(row, gout, (size_t)c * 4));
        same &= memcmp(row, got + (size_t)g * c, (size_t)c * 4) == 0;
        free(row);
        api.mem_free(gout);
    }
    if (per_seq) {
        printf("%s: each sequence alone has the same bits: %s\n", what, same ? "OK" : "NOT OK");
        CHECK(same);
    }
    api.mem_free(dq), api.mem_free(dk), api.mem_free(dv), api.mem_free(dout);
    api.mem_free(dslots), api.mem_free(dcounts);
    api.module_unload(mod);
    free(q), free(kk), free(v), free(slots), free(counts), free(want), free(got);
}

/* n_rows queries, each over its lane's s_len keys (rows ld_kv apart, lanes lane_stride apart). */
static void test_attention_rows(int sm, struct wc_stream *s, int n_head, int d, int n_rows,
                                int n_lanes, int s_len, int ld_kv, int kv_half, int tc) {
    int c = n_head * d;
    size_t lane_stride = (size_t)s_len * ld_kv + 32;
    char name[64];
    if (tc)
        snprintf(name, sizeof name, "attn_rows_tc_h%d_d%d", n_head, d);
    else
        snprintf(name, sizeof name, "attn_rows_h%d_d%d%s", n_head, d, kv_half ? "_kvh" : "");
    CUmodule mod;
    CUfunction f =
        load(tc ? gen_attention_rows_tc(sm, n_head, d) : gen_attention_rows(sm, n_head, d, kv_half),
             name, &mod);
    size_t nq = (size_t)n_rows * c, nkv = lane_stride * n_lanes;
    uint16_t *kh, *vh;
    float *q = rand_vec(nq, 1.0f), *kk = rand_kv(nkv, kv_half, &kh),
          *v = rand_kv(nkv, kv_half, &vh);
    int32_t *lane_of = malloc((size_t)n_rows * sizeof(int32_t));
    for (int g = 0; g < n_rows; g++)
        lane_of[g] = (n_lanes - 1 - g % n_lanes + g / n_lanes) % n_lanes;
    float *want = malloc(nq * 4), *got = malloc(nq * 4);
    s->be->ops->attention_rows(s, want, q, kk, v, WC_F32, ld_kv, lane_stride, lane_of, n_rows,
                               s_len, c, n_head);
    CHECK(wc_stream_sync(s) == 0);
    CUdeviceptr dq = dev_upload(q, nq * 4), dk = kv_upload(kk, kh, nkv);
    CUdeviceptr dv = kv_upload(v, vh, nkv), dout = dev_poisoned(nq);
    CUdeviceptr dl = dev_upload(lane_of, (size_t)n_rows * sizeof(int32_t));
    unsigned uld = (unsigned)ld_kv, urows = (unsigned)n_rows, us = (unsigned)s_len;
    uint64_t stride = lane_stride;
    void *args[] = {&dout, &dq, &dk, &dv, &uld, &stride, &dl, &urows, &us, NULL, NULL};
    launch_split(f, n_head, n_rows, s_len, d, args, 11,
                 tc ? KERNEL_ROWS_TC_SPLIT : KERNEL_ATTN_SPLIT);
    CU(api.memcpy_dtoh(got, dout, nq * 4));
    char what[128];
    snprintf(what, sizeof what, "%s rows=%d lanes=%d s=%d ld=%d", name, n_rows, n_lanes, s_len,
             ld_kv);
    CHECK(check_close(what, got, want, nq, 1e-6, 1e-5));
    api.mem_free(dq), api.mem_free(dk), api.mem_free(dv), api.mem_free(dout), api.mem_free(dl);
    api.module_unload(mod);
    free(q), free(kk), free(v), free(kh), free(vh), free(lane_of), free(want), free(got);
}

/* gemv_f16 against the CPU's linear on the same fp16 weights (n_rows, out rows ld apart; past 8
 * rows several CTA rows), then each row alone (n_rows 1, pointers moved to the row): bit for bit
 * what the launch over all rows gave it, which is what lets the CUDA backend declare
 * linear_exact_rows = KERNEL_GEMV_LAUNCH_ROWS. With KERNEL_GEMV_NORM: against the CPU's
 * layernorm then linear, and bit for bit what layernorm_c<K> then the kernel without the flag
 * give (backend.h norm_linear). tc: gemv_tc (WHISPERC_CUDA_GEMV=tc) with the tiles the backend
 * picks for n_rows and the columns for flags; alone is then its one-tile kernel, and every
 * other tile count and column width gives the launch's bits too. */
static void test_gemv(int sm, struct wc_backend *be, struct wc_stream *s, int n, int k_in,
                      int n_rows, int flags, int ld_pad, int tc) {
    char name[64];
    int tiles = kernel_gemv_tc_tiles(n_rows), tc_cols = kernel_gemv_tc_cols(flags);
    if (tc)
        snprintf(name, sizeof name, "gemv_tc_k%d_c%d_n%d_f%d", k_in, tc_cols, tiles, flags);
    else
        snprintf(name, sizeof name, "gemv_f16_k%d_f%d", k_in, flags);
    CUmodule mod, mod1 = NULL;
    CUfunction f =
        load(tc ? gen_gemv_tc(sm, k_in, flags, tiles, tc_cols) : gen_gemv_f16(sm, k_in, flags),
             name, &mod);
    int ld = n + ld_pad;
    size_t nw = (size_t)n * k_in, nin = (size_t)n_rows * k_in, nout = (size_t)n_rows * ld;
    float *wf = rand_vec(nw, 1.0f / sqrtf((float)k_in)), *in = rand_vec(nin, 1.0f);
    float *b = rand_vec((size_t)n, 0.5f), *out0 = rand_vec(nout, 1.0f);
    uint16_t *wh = malloc(nw * 2);
    for (size_t i = 0; i < nw; i++) { /* f16 bits of small normal values, as test_embed */
        uint32_t bits;
        memcpy(&bits, &wf[i], 4);
        int ex = (int)((bits >> 23) & 0xff) - 112;
        wh[i] = ex <= 0 ? 0
                        : (uint16_t)(((bits >> 16) & 0x8000u) | ((uint32_t)ex << 10) |
                                     ((bits >> 13) & 0x3ffu));
    }
    struct wc_mat m;
    CHECK(be->ops->upload_mat(be, &m, wh, WC_F16, n, k_in) == 0);
    float *want = malloc(nout * 4), *got = malloc(nout * 4), *alone = malloc(nout * 4);
    float *g = rand_vec((size_t)k_in, 1.0f), *lb = rand_vec((size_t)k_in, 1.0f);
    float *normed = malloc(nin * 4);
    int norm = flags & KERNEL_GEMV_NORM;
    if (norm) /* off-centre rows, as a residual stream is */
        for (size_t i = 0; i < nin; i++)
            in[i] = 3.0f * in[i] + 0.5f;
    memcpy(want, out0, nout * 4);
    int acc = flags & KERNEL_GEMV_ACCUMULATE;
    if (norm)
        s->be->ops->layernorm(s, normed, in, g, lb, n_rows, k_in);
    s->be->ops->linear(s, want, ld, norm ? normed : in, &m, flags & KERNEL_GEMV_BIAS ? b : NULL,
                       n_rows, flags & KERNEL_GEMV_GELU ? WC_ACT_GELU : WC_ACT_NONE, acc);
    CHECK(wc_stream_sync(s) == 0);
    /* accumulate, or padding that must stay untouched: start from out0; else from NaN */
    for (size_t i = 0; !acc && i < nout; i++)
        if ((int)(i % (size_t)ld) < n)
            out0[i] = NAN;
    CUdeviceptr dw = dev_upload(wh, nw * 2), din = dev_upload(in, nin * 4);
    CUdeviceptr db = dev_upload(b, (size_t)n * 4), dout = dev_upload(out0, nout * 4);
    CUdeviceptr dg = dev_upload(g, (size_t)k_in * 4), dlb = dev_upload(lb, (size_t)k_in * 4);
    unsigned uld = (unsigned)ld, un = (unsigned)n, urows = (unsigned)n_rows;
    int cols = tc ? tc_cols : KERNEL_GEMV_COLS;
    int cta_rows = tc ? 8 * tiles : KERNEL_GEMV_MAX_ROWS;
    unsigned grid = (unsigned)((n + cols - 1) / cols);
    unsigned grid_y = (unsigned)((n_rows + cta_rows - 1) / cta_rows);
    void *args[] = {&dout, &uld, &din, &dw, &db, &un, &urows, &dg, &dlb};
    launch2d(f, grid, grid_y, KERNEL_GEMV_THREADS, args);
    CU(api.memcpy_dtoh(got, dout, nout * 4));
    char what[128];
    snprintf(what, sizeof what, "%s n=%d rows=%d ld=%d", name, n, n_rows, ld);
    /* the same fp16 weights and fp32 activations on both sides: only the summation order
     * differs (fp32 over k_in terms) */
    double ss = 0;
    for (size_t i = 0; i < nout; i++)
        ss += (double)want[i] * want[i];
    CHECK(check_close(what, got, want, nout, 1e-4 * sqrt(ss / (double)nout), 1e-3));
    /* each row alone */
    CU(api.memcpy_htod(dout, out0, nout * 4));
    unsigned one = 1;
    CUfunction f1 = f;
    if (tc && tiles != 1) {
        snprintf(what, sizeof what, "gemv_tc_k%d_c%d_n1_f%d", k_in, tc_cols, flags);
        f1 = load(gen_gemv_tc(sm, k_in, flags, 1, tc_cols), what, &mod1);
    }
    for (int r = 0; r < n_rows; r++) {
        CUdeviceptr din_r = din + (size_t)r * k_in * 4, dout_r = dout + (size_t)r * ld * 4;
        void *args1[] = {&dout_r, &uld, &din_r, &dw, &db, &un, &one, &dg, &dlb};
        launch(f1, grid, KERNEL_GEMV_THREADS, args1);
    }
    CU(api.memcpy_dtoh(alone, dout, nout * 4));
    snprintf(what, sizeof what, "%s n=%d: %d rows alone are bit-identical", name, n, n_rows);
    int same = memcmp(alone, got, nout * 4) == 0;
    printf("%s: %s\n", what, same ? "OK" : "NOT OK");
    CHECK(same);
    for (int i = 0; tc && i < 6; i++) { /* the other tile counts and column widths */
        int t = 1 << (i % 3), c = 16 << (i / 3);
        if ((t == tiles || t == 1) && c == tc_cols)
            continue;
        CUmodule mod_t;
        snprintf(what, sizeof what, "gemv_tc_k%d_c%d_n%d_f%d", k_in, c, t, flags);
        CUfunction ft = load(gen_gemv_tc(sm, k_in, flags, t, c), what, &mod_t);
        CU(api.memcpy_htod(dout, out0, nout * 4));
        launch2d(ft, (unsigned)((n + c - 1) / c), (unsigned)((n_rows + 8 * t - 1) / (8 * t)),
                 KERNEL_GEMV_THREADS, args);
        CU(api.memcpy_dtoh(alone, dout, nout * 4));
        same = memcmp(alone, got, nout * 4) == 0;
        printf("%s n=%d rows=%d: the bits of %s: %s\n", what, n, n_rows, name,
               same ? "OK" : "NOT OK");
        CHECK(same);
        api.module_unload(mod_t);
    }
    if (norm) { /* layernorm_c<K>, then the kernel without the norm, from the same out0 */
        CUmodule ln_mod, plain_mod;
        snprintf(what, sizeof what, "layernorm_c%d", k_in);
        CUfunction ln = load(gen_layernorm(sm, k_in, 0), what, &ln_mod);
        int pf = flags & ~KERNEL_GEMV_NORM;
        if (tc) /* the fused kernel's columns and grid */
            snprintf(what, sizeof what, "gemv_tc_k%d_c%d_n%d_f%d", k_in, tc_cols, tiles, pf);
        else
            snprintf(what, sizeof what, "gemv_f16_k%d_f%d", k_in, pf);
        CUfunction plain =
            load(tc ? gen_gemv_tc(sm, k_in, pf, tiles, tc_cols) : gen_gemv_f16(sm, k_in, pf), what,
                 &plain_mod);
        CUdeviceptr dh = dev_poisoned(nin);
        void *ln_args[] = {&dh, &din, &dg, &dlb, &urows};
        launch(ln, (unsigned)n_rows, KERNEL_LN_THREADS, ln_args);
        CU(api.memcpy_htod(dout, out0, nout * 4));
        void *plain_args[] = {&dout, &uld, &dh, &dw, &db, &un, &urows};
        launch2d(plain, grid, grid_y, KERNEL_GEMV_THREADS, plain_args);
        CU(api.memcpy_dtoh(alone, dout, nout * 4));
        same = memcmp(alone, got, nout * 4) == 0;
        printf("%s n=%d rows=%d: the bits of layernorm then gemv: %s\n", name, n, n_rows,
               same ? "OK" : "NOT OK");
        CHECK(same);
        api.mem_free(dh);
        api.module_unload(ln_mod), api.module_unload(plain_mod);
    }
    api.mem_free(dw), api.mem_free(din), api.mem_free(db), api.mem_free(dout);
    api.mem_free(dg), api.mem_free(dlb);
    api.module_unload(mod);
    if (mod1)
        api.module_unload(mod1);
    free(wf), free(in), free(b), free(out0), free(wh), free(want), free(got), free(alone);
    free(g), free(lb), free(normed);
}

static void test_attention_scores(int sm, struct wc_stream *s, int n_head, int d, int t_len,
                                  int s_len, int ld_k, int head) {
    int c = n_head * d;
    char name[64];
    snprintf(name, sizeof name, "attn_scores_h%d_d%d", n_head, d);
    CUmodule mod;
    CUfunction f = load(gen_attention_scores(sm, n_head, d, 0), name, &mod);
    size_t nq = (size_t)t_len * c, nk = (size_t)s_len * ld_k, no = (size_t)t_len * s_len;
    float *q = rand_vec(nq, 1.0f), *kk = rand_vec(nk, 1.0f);
    float *want = malloc(no * 4), *got = malloc(no * 4);
    s->be->ops->attention_scores(s, want, q, kk, WC_F32, ld_k, t_len, s_len, c, n_head, head);
    CHECK(wc_stream_sync(s) == 0);
    CUdeviceptr dq = dev_upload(q, nq * 4), dk = dev_upload(kk, nk * 4), dout = dev_poisoned(no);
    unsigned uld = (unsigned)ld_k, ut = (unsigned)t_len, us = (unsigned)s_len;
    unsigned uhead = (unsigned)head;
    void *args[] = {&dout, &dq, &dk, &uld, &ut, &us, &uhead};
    launch2d(f, ut, (us + 127) / 128, 128, args);
    CU(api.memcpy_dtoh(got, dout, no * 4));
    char what[128];
    snprintf(what, sizeof what, "%s t=%d s=%d head=%d", name, t_len, s_len, head);
    /* dot products of 64 N(0,1) pairs: summation order differs from sgemm's, so a score that
     * cancels to ~0 carries ~1e-7 * sum|q k| / 8 of absolute noise */
    CHECK(check_close(what, got, want, no, 1e-6, 1e-5));
    /* f16 keys (_kvh): the f32 kernel's bits on the widened keys */
    uint16_t *kh = test_round_f16(kk, nk); /* kk now holds the widened values */
    CU(api.memcpy_htod(dk, kk, nk * 4));
    launch2d(f, ut, (us + 127) / 128, 128, args);
    CU(api.memcpy_dtoh(want, dout, no * 4));
    CUmodule mod_h;
    snprintf(name, sizeof name, "attn_scores_h%d_d%d_kvh", n_head, d);
    CUfunction fh = load(gen_attention_scores(sm, n_head, d, 1), name, &mod_h);
    CUdeviceptr dkh = dev_upload(kh, nk * 2), dout_h = dev_poisoned(no);
    void *args_h[] = {&dout_h, &dq, &dkh, &uld, &ut, &us, &uhead};
    launch2d(fh, ut, (us + 127) / 128, 128, args_h);
    CU(api.memcpy_dtoh(got, dout_h, no * 4));
    int same = memcmp(got, want, no * 4) == 0;
    printf("%s t=%d s=%d head=%d: the f32 kernel's bits on widened keys: %s\n", name, t_len, s_len,
           head, same ? "OK" : "NOT OK");
    CHECK(same);
    api.mem_free(dkh), api.mem_free(dout_h);
    api.module_unload(mod_h);
    free(kh);
    api.mem_free(dq), api.mem_free(dk), api.mem_free(dout);
    api.module_unload(mod);
    free(q), free(kk), free(want), free(got);
}

/* A random rule: up to 8 ranges (some empty, some past V), the timestamp test at tb or off. */
static void rand_rule(struct wc_logit_rule *r, int n_vocab, int tb) {
    memset(r, 0, sizeof *r);
    r->n_ranges = (int)((test_rng_uniform(&rng) + 1.0f) * 4.5f) % (WC_LOGIT_MAX_RANGES + 1);
    for (int j = 0; j < r->n_ranges; j++) {
        int lo = (int)((test_rng_uniform(&rng) + 1.0f) * 0.5f * (float)(n_vocab + 100)) - 50;
        int len = (int)((test_rng_uniform(&rng) + 1.0f) * 800.0f) - 100;
        r->lo[j] = lo < 0 ? 0 : lo;
        r->hi[j] = lo + len;
    }
    r->ts_begin = test_rng_uniform(&rng) < 0.5f ? tb : 0;
}

/* rules as kernels.h packs them (the backend's ops_logits_cuda.c does the same) */
static void pack_rules(uint32_t *w, const struct wc_logit_rule *rules, int n_rows, int n_vocab) {
    memset(w, 0, (size_t)n_rows * KERNEL_LOGITS_RULE_WORDS * 4);
    for (int r = 0; r < n_rows; r++, w += KERNEL_LOGITS_RULE_WORDS) {
        for (int j = 0; j < rules[r].n_ranges; j++) {
            int lo = rules[r].lo[j], hi = rules[r].hi[j] > n_vocab ? n_vocab : rules[r].hi[j];
            w[j] = (uint32_t)lo;
            w[KERNEL_LOGITS_RANGES + j] = hi > lo ? (uint32_t)(hi - lo) : 0;
        }
        int tb = rules[r].ts_begin;
        w[2 * KERNEL_LOGITS_RANGES] = (uint32_t)(tb > 0 && tb < n_vocab ? tb : n_vocab);
    }
}

/* Random logits rows (N(0, 3), timestamps boosted in some rows so that the timestamp test
 * fires both ways, a planted tie for the maximum in every third), random rules, a suppress list
 * and all of them on the device as logits_part reads them. */
struct logits_case {
    int n_vocab, n_rows, n_sup;
    size_t n;
    float *x;
    int32_t *sup;
    struct wc_logit_rule *rules;
    CUdeviceptr dx, drules, dmask;
};

static struct logits_case logits_case(int n_vocab, int n_rows) {
    struct logits_case c = {.n_vocab = n_vocab, .n_rows = n_rows, .n_sup = 90};
    int tb = n_vocab > 3000 ? n_vocab - 1501 : n_vocab / 2, n_words = (n_vocab + 31) / 32;
    c.n = (size_t)n_rows * n_vocab;
    c.x = rand_vec(c.n, 3.0f);
    for (int r = 0; r < n_rows; r++) {
        float *row = c.x + (size_t)r * n_vocab, boost = (float)(r % 4) * 3.0f;
        for (int i = tb; i < n_vocab; i++)
            row[i] += boost;
        if (r % 3 == 1) { /* a tie for the maximum: the first index wins */
            int best = 0;
            for (int i = 1; i < n_vocab; i++)
                best = row[i] > row[best] ? i : best;
            row[(best + 7919) % n_vocab] = row[best];
        }
    }
    c.sup = malloc((size_t)c.n_sup * sizeof *c.sup);
    uint32_t *mask = calloc((size_t)n_words, 4);
    for (int i = 0, id = -1; i < c.n_sup; i++) { /* sorted, unique, below V */
        id += 1 + (int)((test_rng_uniform(&rng) + 1.0f) * 0.5f * (float)(n_vocab / c.n_sup - 1));
        c.sup[i] = id;
    }
    for (int i = 0; i < c.n_sup; i++)
        mask[c.sup[i] / 32] |= 1u << (c.sup[i] % 32);
    c.rules = malloc((size_t)n_rows * sizeof *c.rules);
    for (int r = 0; r < n_rows; r++)
        rand_rule(&c.rules[r], n_vocab, tb);
    uint32_t *packed = malloc((size_t)n_rows * KERNEL_LOGITS_RULE_WORDS * 4);
    pack_rules(packed, c.rules, n_rows, n_vocab);
    c.dx = dev_upload(c.x, c.n * 4);
    c.drules = dev_upload(packed, (size_t)n_rows * KERNEL_LOGITS_RULE_WORDS * 4);
    c.dmask = dev_upload(mask, (size_t)n_words * 4);
    free(mask), free(packed);
    return c;
}

static void logits_case_free(struct logits_case *c) {
    api.mem_free(c->dx), api.mem_free(c->drules), api.mem_free(c->dmask);
    free(c->x), free(c->sup), free(c->rules);
}

/* k = 0: logits_part_v<V> then logits_pick_v<V> against the CPU's logits_greedy; k > 0:
 * logits_topk_part_v<V>_k<k> then logits_topk_pick_v<V>_k<k> against its logits_topk. Tokens
 * equal, logprob within 1e-5 relative (random N(0, 3) rows have no near-ties; exact ties,
 * planted, must go to the first index, often in another chunk). */
static void test_logits(int sm, struct wc_stream *s, int n_vocab, int n_rows, int k) {
    char name[64], pick_name[64];
    if (k) {
        snprintf(name, sizeof name, "logits_topk_part_v%d_k%d", n_vocab, k);
        snprintf(pick_name, sizeof pick_name, "logits_topk_pick_v%d_k%d", n_vocab, k);
    } else {
        snprintf(name, sizeof name, "logits_part_v%d", n_vocab);
        snprintf(pick_name, sizeof pick_name, "logits_pick_v%d", n_vocab);
    }
    CUmodule mod, pick_mod;
    CUfunction f =
        load(k ? gen_logits_topk_part(sm, n_vocab, k) : gen_logits_part(sm, n_vocab), name, &mod);
    CUfunction fp = load(k ? gen_logits_topk_pick(sm, n_vocab, k) : gen_logits_pick(sm, n_vocab),
                         pick_name, &pick_mod);
    unsigned n_part = (unsigned)((n_vocab + KERNEL_LOGITS_CHUNK - 1) / KERNEL_LOGITS_CHUNK);
    int n_out = n_rows * (k ? k : 1);
    size_t rec_bytes = k ? KERNEL_LOGITS_TOPK_RECORD(k) : KERNEL_LOGITS_RECORD;
    struct logits_case c = logits_case(n_vocab, n_rows);
    float *cpu = malloc(c.n * 4);
    struct wc_greedy_pick *want = malloc((size_t)n_out * sizeof *want);
    struct wc_greedy_pick *got = malloc((size_t)n_out * sizeof *got);
    memcpy(cpu, c.x, c.n * 4);
    if (k)
        s->be->ops->logits_topk(s, want, cpu, c.rules, c.sup, c.n_sup, n_rows, n_vocab, k);
    else
        s->be->ops->logits_greedy(s, want, cpu, c.rules, c.sup, c.n_sup, n_rows, n_vocab);
    CHECK(wc_stream_sync(s) == 0);
    CUdeviceptr dout = dev_poisoned((size_t)n_out * 2);
    CUdeviceptr dpart = dev_poisoned((size_t)n_rows * n_part * rec_bytes / 4);
    void *args[] = {&dpart, &c.dx, &c.drules, &c.dmask};
    launch2d(f, (unsigned)n_rows, n_part, KERNEL_LOGITS_THREADS, args);
    void *pick_args[] = {&dout, &dpart, &c.drules};
    launch(fp, (unsigned)n_rows, KERNEL_LOGITS_PICK_WARP, pick_args);
    CU(api.memcpy_dtoh(got, dout, (size_t)n_out * sizeof *got));
    int bad = 0;
    for (int r = 0; r < n_out; r++) {
        double d = fabs((double)got[r].logprob - want[r].logprob);
        /* -inf: every token masked (topk: fewer than k unmasked, the token is then free) */
        int same = got[r].logprob == want[r].logprob;
        int free_token = k && same && want[r].logprob == -INFINITY;
        if ((got[r].token != want[r].token && !free_token) ||
            !(same || d <= 1e-7 + 1e-5 * fabs(want[r].logprob))) {
            if (bad++ < 5)
                fprintf(stderr, "%s pick %d: got (%d, %.9g), want (%d, %.9g)\n", name, r,
                        got[r].token, got[r].logprob, want[r].token, want[r].logprob);
        }
    }
    printf("%s (%d rows): %s\n", name, n_rows, bad ? "NOT OK" : "OK");
    CHECK(bad == 0);
    api.mem_free(dout), api.mem_free(dpart);
    api.module_unload(mod), api.module_unload(pick_mod);
    logits_case_free(&c);
    free(cpu), free(want), free(got);
}

/* logits_part_v<V>, then logits_sample_part_v<V> and logits_sample_pick_v<V> against the CPU's
 * logits_sample: n_draws draws over the rows (the first three from row 0, as a window's first
 * step), T from 0.2 to 1.8, u at random but for one 0 and one just below 1. A token differs
 * from the CPU's only where the CPU's cumulative weight at the boundary between the two lies
 * within 1e-5 of the target (relative to the total: ex2.approx against expf); logprob within
 * 1e-5 relative. */
static void test_logits_sample(int sm, struct wc_stream *s, int n_vocab, int n_rows, int n_draws) {
    char name[3][64];
    snprintf(name[0], sizeof name[0], "logits_part_v%d", n_vocab);
    snprintf(name[1], sizeof name[1], "logits_sample_part_v%d", n_vocab);
    snprintf(name[2], sizeof name[2], "logits_sample_pick_v%d", n_vocab);
    CUmodule mod[3];
    CUfunction f[3] = {load(gen_logits_part(sm, n_vocab), name[0], &mod[0]),
                       load(gen_logits_sample_part(sm, n_vocab), name[1], &mod[1]),
                       load(gen_logits_sample_pick(sm, n_vocab), name[2], &mod[2])};
    unsigned n_part = (unsigned)((n_vocab + KERNEL_LOGITS_CHUNK - 1) / KERNEL_LOGITS_CHUNK);
    struct logits_case c = logits_case(n_vocab, n_rows);
    struct wc_sample_draw *draws = malloc((size_t)n_draws * sizeof *draws);
    for (int j = 0; j < n_draws; j++) {
        draws[j].row = j < 3 ? 0 : (j - 3) % n_rows;
        draws[j].temperature = 0.2f + 0.2f * (float)(j % 9);
        draws[j].u = j == 1 ? 0.0 : j == 2 ? 1.0 - 0x1p-53 : 0.5 + 0.5 * test_rng_uniform(&rng);
    }
    float *cpu = malloc(c.n * 4);
    struct wc_greedy_pick *want = malloc((size_t)n_draws * sizeof *want);
    struct wc_greedy_pick *got = malloc((size_t)n_draws * sizeof *got);
    memcpy(cpu, c.x, c.n * 4);
    s->be->ops->logits_sample(s, want, cpu, c.rules, c.sup, c.n_sup, n_rows, n_vocab, draws,
                              n_draws);
    CHECK(wc_stream_sync(s) == 0);
    CUdeviceptr ddraws = dev_upload(draws, (size_t)n_draws * sizeof *draws);
    CUdeviceptr dpart = dev_poisoned((size_t)n_rows * n_part * KERNEL_LOGITS_RECORD / 4);
    CUdeviceptr dw = dev_poisoned((size_t)n_draws * n_part * 2), dout = dev_poisoned(2 * n_draws);
    void *args[] = {&dpart, &c.dx, &c.drules, &c.dmask};
    launch2d(f[0], (unsigned)n_rows, n_part, KERNEL_LOGITS_THREADS, args);
    void *wargs[] = {&dw, &dpart, &c.dx, &c.drules, &c.dmask, &ddraws};
    launch2d(f[1], (unsigned)n_draws, n_part, KERNEL_LOGITS_THREADS, wargs);
    void *dargs[] = {&dout, &dw, &dpart, &c.dx, &c.drules, &c.dmask, &ddraws};
    launch(f[2], (unsigned)n_draws, KERNEL_LOGITS_THREADS, dargs);
    CU(api.memcpy_dtoh(got, dout, (size_t)n_draws * sizeof *got));
    int bad = 0, near = 0;
    for (int j = 0; j < n_draws; j++) {
        const float *row = cpu + (size_t)draws[j].row * n_vocab; /* masked by the CPU */
        int same = got[j].token == want[j].token;
        if (!same) {
            same = test_draws_at_boundary(row, n_vocab, draws[j].temperature, draws[j].u,
                                          got[j].token, want[j].token);
            near += same;
        }
        double d = fabs((double)got[j].logprob - want[j].logprob);
        if (!same || (got[j].token == want[j].token && got[j].logprob != want[j].logprob &&
                      !(d <= 1e-7 + 1e-5 * fabs(want[j].logprob)))) {
            if (bad++ < 5)
                fprintf(stderr,
                        "%s draw %d (row %d, T %.1f, u %.17g): got (%d, %.9g), want "
                        "(%d, %.9g)\n",
                        name[2], j, draws[j].row, draws[j].temperature, draws[j].u, got[j].token,
                        got[j].logprob, want[j].token, want[j].logprob);
        }
    }
    printf("%s (%d draws from %d rows, %d at a boundary): %s\n", name[2], n_draws, n_rows, near,
           bad ? "NOT OK" : "OK");
    CHECK(bad == 0);
    api.mem_free(ddraws), api.mem_free(dpart), api.mem_free(dw), api.mem_free(dout);
    for (int i = 0; i < 3; i++)
        api.module_unload(mod[i]);
    logits_case_free(&c);
    free(draws), free(cpu), free(want), free(got);
}

int main(void) {
    if (cuda_api_load(&api, err, sizeof err)) {
        printf("SKIP: %s\n", err);
        return TEST_SKIP;
    }
    struct cuda_device dev;
    if (cuda_device_open(&api, 0, &dev, err, sizeof err)) {
        printf("SKIP: %s\n", err);
        return TEST_SKIP;
    }
    if (dev.sm < 80) { /* the backend refuses these too: mma.sync m16n8k16 and PTX for sm_80+ */
        printf("SKIP: %s is sm_%d; the kernels need sm_80 or newer\n", dev.name, dev.sm);
        cuda_api_unload(&api);
        return TEST_SKIP;
    }
    int sm = dev.sm > 90 ? 90 : dev.sm; /* PTX for the newest target the generators know */
    printf("device: %s (sm_%d, %.1f GiB), kernels for sm_%d\n", dev.name, dev.sm,
           dev.total_mem / 1073741824.0, sm);
    CUcontext ctx;
    CU(api.primary_ctx_retain(&ctx, dev.dev));
    CU(api.ctx_set_current(ctx));

    struct wc_backend *be;
    struct wc_stream *s;
    CHECK(cpu_backend_new(&be, err, sizeof err) == 0);
    CHECK(be->ops->stream_new(be, 2, 0, &s, NULL, 0) == 0);
    const int widths[] = {384, 512, 768, 1024, 1280};
    for (int i = 0; i < 5; i++) {
        test_layernorm(sm, s, 37, widths[i]);
        test_bias_gelu(sm, 5, widths[i]);
        test_bias_gelu(sm, 3, 4 * widths[i]);
        test_embed(sm, be, s, widths[i]);
    }
    test_f32_to_f16(sm, 100003, 0);
    test_f32_to_f16(sm, 4099, 1);

    for (int flags = 0; flags < 8; flags++) {
        test_bias_act(sm, 37, 384, 384, flags);
        test_bias_act(sm, 5, 1280, 3 * 1280, flags); /* rows wider than N: the rest untouched */
        /* rows 4-byte aligned only (ld % 4): element by element there, 16 bytes in row 0 */
        test_bias_act(sm, 7, 512, 513, flags);
        test_bias_act(sm, 7, 390, 390, flags); /* N % 4: one element a thread */
    }
    test_bias_act(sm, 1500, 5120, 5120, KERNEL_EPI_BIAS | KERNEL_EPI_GELU);
    test_bias_act(sm, 1500, 1280, 1280, KERNEL_EPI_BIAS | KERNEL_EPI_GELU | KERNEL_EPI_ADD);
    test_bias_act(sm, 1, 512, 512, KERNEL_EPI_BIAS | KERNEL_EPI_ADD);

    test_im2col(sm, 80, 1, 3000);
    test_im2col(sm, 128, 1, 3000);
    test_im2col(sm, 80, 1, 7);
    test_im2col(sm, 384, 2, 3000);
    test_im2col(sm, 1280, 2, 3000);
    test_im2col(sm, 512, 2, 6);
    test_im2col(sm, 512, 2, 7); /* the last tap reads the zero row after `in` */

    /* encoder (1500 x 1500), ragged blocks, wide KV rows, one key, cross-attention: on CUDA
     * cores, then the tensor-core variant (pos0 is ignored: pass -1) */
    for (int tc = 0; tc < 2; tc++) {
        test_attention(sm, s, 6, 64, 1500, 1500, 384, -1, tc, 0);
        test_attention(sm, s, 20, 64, 1500, 1500, 1280, -1, tc, 0);
        test_attention(sm, s, 8, 64, 37, 100, 512 + 64, -1, tc, 0);
        test_attention(sm, s, 8, 64, 1, 1, 512, -1, tc, 0);
        test_attention(sm, s, 8, 64, 3, 1500, 512, -1, tc, 0);
        test_attention(sm, s, 8, 64, 65, 1, 512, -1, tc, 0);
    }
    /* decoder self-attention over its cache: a prompt, two query blocks, one step */
    test_attention(sm, s, 8, 64, 1, 1, 512, 0, 0, 0);
    test_attention(sm, s, 8, 64, 5, 5, 1024, 0, 0, 0);
    test_attention(sm, s, 20, 64, 70, 83, 1280, 13, 0, 0);
    test_attention(sm, s, 8, 64, 1, 201, 512, 200, 0, 0);
    test_attention(sm, s, 8, 64, 130, 448, 512, 318, 0, 0);

    for (int per_seq = 0; per_seq < 2; per_seq++) {
        test_attention_gather(sm, s, 8, 64, 1, 1, per_seq);
        test_attention_gather(sm, s, 8, 64, 5, 3, per_seq); /* fewer keys than warps */
        test_attention_gather(sm, s, 8, 64, 5, 37, per_seq);
        test_attention_gather(sm, s, 20, 64, 2, 448, per_seq);
        test_attention_gather(sm, s, 6, 64, 8, 200, per_seq);
    }
    /* decoder steps' cross-attention: 1..8 lanes over 1500 frames, ragged key counts */
    test_attention_rows(sm, s, 8, 64, 1, 1, 1500, 512, 0, 0);
    test_attention_rows(sm, s, 6, 64, 8, 8, 1500, 384, 0, 0);
    test_attention_rows(sm, s, 20, 64, 5, 3, 1500, 1280, 0, 0);
    test_attention_rows(sm, s, 8, 64, 3, 2, 37, 512 + 64, 0, 0);
    test_attention_rows(sm, s, 8, 64, 2, 2, 1, 512, 0, 0);
    /* f16 K/V (the batch decoder's cross-attention): attn_rows_kvh, attn_tc_kvh */
    test_attention_rows(sm, s, 8, 64, 1, 1, 1500, 512, 1, 0);
    test_attention_rows(sm, s, 20, 64, 5, 3, 1500, 1280, 1, 0);
    test_attention_rows(sm, s, 8, 64, 3, 2, 37, 512 + 64, 1, 0);
    /* on tensor cores (attn_rows_tc, the default; WHISPERC_CUDA_ROWS=kvh: attn_rows_kvh): 8 lanes
     * of 64 rows, ragged and single keys */
    test_attention_rows(sm, s, 8, 64, 1, 1, 1500, 512, 1, 1);
    test_attention_rows(sm, s, 20, 64, 64, 64, 1500, 1280, 1, 1);
    test_attention_rows(sm, s, 8, 64, 3, 2, 37, 512 + 64, 1, 1);
    test_attention_rows(sm, s, 6, 64, 2, 2, 1, 384, 1, 1);
    test_attention(sm, s, 6, 64, 30, 1500, 384, -1, 1, 1);
    test_attention(sm, s, 20, 64, 65, 1500, 1280, -1, 1, 1);
    test_attention(sm, s, 8, 64, 37, 100, 512 + 64, -1, 1, 1);

    /* decoder-step linears: every Whisper K shape class (one partial tile, tile + rest, whole
     * tiles), ragged N, 1..8 rows, every flag combination the decoder uses */
    const int GB = KERNEL_GEMV_BIAS, GG = KERNEL_GEMV_GELU, GA = KERNEL_GEMV_ACCUMULATE;
    const int gemv_flags[] = {0, GB, GB | GA, GB | GG, GA};
    for (int i = 0; i < 5; i++) {
        test_gemv(sm, be, s, 384, 384, 8, gemv_flags[i], 0, 0);
        test_gemv(sm, be, s, 1000, 1536, 5, gemv_flags[i], 3, 0);
    }
    test_gemv(sm, be, s, 2048, 512, 8, GB | GG, 0, 0);
    test_gemv(sm, be, s, 1280, 5120, 8, GB | GA, 0, 0);
    test_gemv(sm, be, s, 512, 2048, 3, GB | GA, 512, 0); /* into a KV cache row */
    test_gemv(sm, be, s, 1280, 1280, 1, GB, 0, 0);
    test_gemv(sm, be, s, 51865, 384, 8, 0, 0, 0); /* logits */
    test_gemv(sm, be, s, 33, 8, 2, GB, 0, 0);     /* tiny K: a partial step only */
    test_gemv(sm, be, s, 512, 512, 21, GB, 0, 0); /* three CTA rows, the last partial */
    test_gemv(sm, be, s, 2048, 512, KERNEL_GEMV_LAUNCH_ROWS, GB | GG, 0, 0);
    /* on tensor cores (WHISPERC_CUDA_GEMV=tc): every tile count, ragged N, K with a warp short
     * of a chunk (384), large-v3's fc2 and logits */
    for (int i = 0; sm >= 80 && i < 5; i++) {
        test_gemv(sm, be, s, 384, 384, 8, gemv_flags[i], 0, 1);
        test_gemv(sm, be, s, 1000, 1536, 13, gemv_flags[i], 3, 1);
        test_gemv(sm, be, s, 520, 512, KERNEL_GEMV_LAUNCH_ROWS, gemv_flags[i], 0, 1);
    }
    if (sm >= 80) {
        test_gemv(sm, be, s, 1280, 5120, 21, GB | GA, 0, 1);
        test_gemv(sm, be, s, 512, 2048, 3, GB | GA, 512, 1); /* into a KV cache row */
        test_gemv(sm, be, s, 51866, 1280, 5, 0, 0, 1);       /* logits */
        test_gemv(sm, be, s, 40, 32, 2, GB, 0, 1);           /* K: one chunk, 7 warps idle */
    }
    /* with the layer norm fused: q/v, k and logits, fc1; every Whisper width class */
    const int GN = KERNEL_GEMV_NORM;
    test_gemv(sm, be, s, 384, 384, 8, GN | GB, 0, 0);
    test_gemv(sm, be, s, 512, 512, 21, GN, 0, 0);
    test_gemv(sm, be, s, 2048, 512, KERNEL_GEMV_LAUNCH_ROWS, GN | GB | GG, 0, 0);
    test_gemv(sm, be, s, 1280, 1280, 3, GN | GB, 0, 0); /* a tile and a rest */
    test_gemv(sm, be, s, 1024, 1024, 1, GN | GB, 0, 0);
    test_gemv(sm, be, s, 51865, 768, 5, GN, 0, 0); /* logits */
    for (int i = 0; sm >= 80 && i < 3; i++) {      /* on tensor cores */
        const int tc_norm[] = {GN | GB, GN, GN | GB | GG};
        test_gemv(sm, be, s, 384, 384, 8, tc_norm[i], 0, 1);
        test_gemv(sm, be, s, 520, 512, 21, tc_norm[i], 0, 1);
        test_gemv(sm, be, s, 1280, 1280, KERNEL_GEMV_LAUNCH_ROWS, tc_norm[i], 0, 1);
    }
    if (sm >= 80)
        test_gemv(sm, be, s, 51866, 1280, 13, GN, 0, 1); /* logits */

    test_attention_scores(sm, s, 8, 64, 1, 1500, 512, 3);
    test_attention_scores(sm, s, 20, 64, 5, 1500, 1280, 19);
    test_attention_scores(sm, s, 8, 64, 3, 1, 512, 0);
    test_attention_scores(sm, s, 6, 64, 7, 130, 2 * 384, 5);

    test_logits(sm, s, 51865, 1, 0);
    test_logits(sm, s, 51865, 64, 0);
    test_logits(sm, s, 51864, 37, 0);
    test_logits(sm, s, 51866, 5, 0); /* large-v3 */
    test_logits(sm, s, 300, 9, 0);   /* one partial chunk */
    test_logits(sm, s, 4096, 3, 0);  /* two whole chunks */
    test_logits(sm, s, 51865, 5, 6); /* beam search: 5 beams */
    test_logits(sm, s, 51866, 16, KERNEL_LOGITS_MAX_TOPK);
    test_logits(sm, s, 300, 9, 6);
    test_logits(sm, s, 4096, 1, 1);
    test_logits_sample(sm, s, 51865, 5, 12);
    test_logits_sample(sm, s, 51866, 64, 80); /* large-v3, a batch of 64 lanes */
    test_logits_sample(sm, s, 300, 3, 9);     /* one partial chunk */
    test_logits_sample(sm, s, 4096, 2, 5);    /* two whole chunks */
    be->ops->stream_free(s);
    be->ops->backend_free(be);
    api.primary_ctx_release(dev.dev);
    cuda_api_unload(&api);
    return TEST_RESULT();
}
