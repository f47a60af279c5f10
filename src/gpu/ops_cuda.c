/*
 * ops_cuda.c — backend.h's ops on the GPU. Products over many rows go through gemm_cuda.c
 * (cuBLAS or cuBLASLt, fp16 operands, fp32 accumulation); a step's through gemv kernels; the
 * rest are generated kernels (src/kernels), launched with the shapes kernels.h states.
 *
 * Generated kernels index with 32-bit integers, so every op checks that its element counts fit
 * in a u32 before it launches.
 */
#include <stdint.h>
#include <stdlib.h>

#include "gpu/cuda_internal.h"
#include "kernels/kernels.h"
#include "libwhisperc.h"

int cuda_fits_u32(struct wc_stream *s, const char *op, size_t n) {
    if (n <= KERNEL_EW_MAX_ELEMS)
        return 1;
    wc_stream_fail(s, WHISPERC_ERR_UNSUPPORTED, "cuda %s: %zu elements exceed 32-bit indexing", op,
                   n);
    return 0;
}

/* dst[i] = (half)src[i], i < n (dst: the stream's fp16 scratch). */
static void to_half(struct wc_stream *s, uint64_t dst, const float *src, size_t n) {
    const struct cuda_kernel *k = cuda_kernel_get(s, CK_F32_TO_F16, 0, 0, 0);
    CUdeviceptr out = dst, in = dptr(src);
    unsigned un = (unsigned)n;
    void *args[] = {&out, &in, &un};
    cuda_launch(s, k, ceil_div(n, KERNEL_F16_PER_CTA), 1, KERNEL_EW_THREADS, args);
}

void cuda_to_f16(struct wc_stream *s, void *dst, const float *src, size_t n) {
    if (cuda_op_begin(s) || !n || !cuda_fits_u32(s, "to_f16", n))
        return;
    to_half(s, dptr(dst), src, n);
}

/* Whether a gemv over w runs as gemv_tc (WHISPERC_CUDA_GEMV=tc; the choice depends on the
 * weight alone). It loads input rows, gain and bias 16 bytes at a time: a pointer that is not
 * 16-byte aligned fails the stream (-1) rather than fall back, which would make the bits depend
 * on an address. */
int cuda_use_gemv_tc(struct wc_stream *s, const struct wc_mat *w, const float *in, const float *g,
                     const float *lb) {
    const struct cuda_model *m = cuda_stream(s)->m;
    if (!m->gemv_tc || !kernel_gemv_tc_fits(m->sm, w->cols))
        return 0;
    if ((uintptr_t)in % 16 || (uintptr_t)g % 16 || (uintptr_t)lb % 16) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "cuda gemv_tc: input rows, gain and bias must be 16-byte aligned");
        return -1;
    }
    return 1;
}

/* gemv_tc's columns a CTA: kernel_gemv_tc_cols, or what WHISPERC_CUDA_GEMV forces */
static int gemv_tc_cols(struct wc_stream *s, int flags) {
    int forced = cuda_stream(s)->m->gemv_tc;
    return forced > 1 ? forced : kernel_gemv_tc_cols(flags);
}

/* The kernel a gemv over K = k_in launches, gemv_tc's (tc) or gemv_f16's, and the columns and
 * rows a CTA of it takes; gemv_tc's bits depend on neither. */
static const struct cuda_kernel *gemv_kernel(struct wc_stream *s, int tc, int k_in, int flags,
                                             int n_rows, size_t *cols, size_t *cta_rows) {
    if (!tc) {
        *cols = KERNEL_GEMV_COLS, *cta_rows = KERNEL_GEMV_MAX_ROWS;
        return cuda_kernel_get(s, CK_GEMV, k_in, flags, 0);
    }
    int tiles = kernel_gemv_tc_tiles(n_rows), c = gemv_tc_cols(s, flags);
    *cols = (size_t)c, *cta_rows = 8 * (size_t)tiles;
    return cuda_kernel_get(s, CK_GEMV_TC, k_in, flags, tiles | c << 8);
}

/* linear over n_rows <= KERNEL_GEMV_LAUNCH_ROWS in one gemv_f16 launch (bias, GELU, residual
 * fused; with g and lb, the layer norm ahead of it too; a CTA row per 8 rows); each row gets
 * the bits it gets alone. */
static void gemv(struct wc_stream *s, float *out, int ld_out, const float *in, const float *g,
                 const float *lb, const struct wc_mat *w, const float *b, int n_rows,
                 enum wc_act act, int accumulate) {
    int flags = (b ? KERNEL_GEMV_BIAS : 0) | (act == WC_ACT_GELU ? KERNEL_GEMV_GELU : 0) |
                (accumulate ? KERNEL_GEMV_ACCUMULATE : 0) | (g ? KERNEL_GEMV_NORM : 0);
    CUdeviceptr po = dptr(out), pi = dptr(in), pw = dptr(w->data), pb = dptr(b);
    CUdeviceptr pg = dptr(g), plb = dptr(lb);
    unsigned uld = (unsigned)ld_out, un = (unsigned)w->rows, urows = (unsigned)n_rows;
    void *args[] = {&po, &uld, &pi, &pw, &pb, &un, &urows, &pg, &plb};
    int tc = cuda_use_gemv_tc(s, w, in, g, lb);
    if (tc < 0)
        return;
    size_t cols, cta_rows;
    const struct cuda_kernel *k = gemv_kernel(s, tc, w->cols, flags, n_rows, &cols, &cta_rows);
    cuda_launch(s, k, ceil_div((size_t)w->rows, cols), ceil_div((size_t)n_rows, cta_rows),
                KERNEL_GEMV_THREADS, args);
}

/* The checks gemv's launch needs; fails the stream and returns 0 when one does not hold.
 * gemv's 16-byte weight loads need K % 8 == 0 and aligned rows (every Whisper width is a
 * multiple of 64, the arena aligns to 256). */
int cuda_gemv_args_ok(struct wc_stream *s, const char *op, int ld_out, const struct wc_mat *w,
                      int n_rows, enum wc_act act, int accumulate) {
    if (w->dtype != WC_F16 || ld_out < w->rows || (accumulate && act != WC_ACT_NONE) ||
        w->cols % 8 || (uintptr_t)w->data % 16) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "cuda %s: bad arguments (weight [%d][%d] dtype %d: K %% 8 == 0 and 16-byte "
                       "alignment needed; ld_out %d; accumulate %d with act %d)",
                       op, w->rows, w->cols, (int)w->dtype, ld_out, accumulate, (int)act);
        return 0;
    }
    return cuda_fits_u32(s, op, (size_t)n_rows * (size_t)w->cols) &&
           cuda_fits_u32(s, op, (size_t)n_rows * (size_t)ld_out) &&
           cuda_fits_u32(s, op, (size_t)w->rows * (size_t)w->cols);
}

void cuda_norm_linear(struct wc_stream *s, float *out, int ld_out, const float *in, const float *g,
                      const float *lb, const struct wc_mat *w, const float *b, int n_rows,
                      enum wc_act act, int accumulate) {
    if (cuda_op_begin(s) || n_rows <= 0)
        return;
    if (ld_out == 0)
        ld_out = w->rows;
    if (!cuda_gemv_args_ok(s, "norm_linear", ld_out, w, n_rows, act, accumulate))
        return;
    if (n_rows > KERNEL_GEMV_LAUNCH_ROWS || !kernel_gemv_norm_fits(w->cols) || !g || !lb) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "cuda norm_linear: %d rows of %d values (at most %d rows; a multiple of %d "
                       "values, gain and bias given)",
                       n_rows, w->cols, KERNEL_GEMV_LAUNCH_ROWS, KERNEL_LN_THREADS);
        return;
    }
    gemv(s, out, ld_out, in, g, lb, w, b, n_rows, act, accumulate);
}

/* in's rows layer-normed (gain g, bias lb) into fp16 at out16 ([n_rows][c] halves): what
 * layernorm then to_half give, in one pass, for a GEMM's operand. */
static void layernorm_half(struct wc_stream *s, uint64_t out16, const float *in, const float *g,
                           const float *lb, int n_rows, int c) {
    const struct cuda_kernel *k = cuda_kernel_get(s, CK_LAYERNORM, c, 1, 0);
    CUdeviceptr po = out16, pi = dptr(in), pg = dptr(g), pb = dptr(lb);
    unsigned urows = (unsigned)n_rows;
    void *args[] = {&po, &pi, &pg, &pb, &urows};
    cuda_launch(s, k, urows, 1, KERNEL_LN_THREADS, args);
}

/* norm_qkv over many rows without a scatter (the encoder's): the rows normed once, into fp16,
 * for three GEMMs (layernorm and three linears normed the same rows three times, in f32 and
 * again to fp16 for each). */
static void norm_qkv_gemm(struct wc_stream *s, float *const out[3], const float *in, const float *g,
                          const float *lb, const struct wc_mat *const w[3], const float *const b[3],
                          int n_rows, int c) {
    uint64_t h16 = cuda_scratch(s, CUDA_SCRATCH_HALF, (size_t)n_rows * (size_t)c * 2);
    if (!h16)
        return;
    layernorm_half(s, h16, in, g, lb, n_rows, c);
    for (int i = 0; i < 3; i++)
        cuda_gemm_bias(s, out[i], c, w[i], h16, n_rows, 0.0f, b[i]);
}

void cuda_norm_qkv(struct wc_stream *s, float *q_out, float *k_dst, float *v_dst,
                   const int32_t *dst_row, const float *in, const float *g, const float *lb,
                   const struct wc_mat *const w[3], const float *const b[3], int n_rows) {
    if (cuda_op_begin(s) || n_rows <= 0)
        return;
    int c = w[0]->cols;
    for (int i = 0; i < 3; i++)
        if (!cuda_gemv_args_ok(s, "norm_qkv", c, w[i], n_rows, WC_ACT_NONE, 0))
            return;
    int gemv_rows = n_rows <= KERNEL_GEMV_LAUNCH_ROWS;
    if ((gemv_rows && !kernel_gemv_norm_fits(c)) || (dst_row && !gemv_rows) || !g || !lb ||
        w[0]->rows != c || w[1]->rows != c || w[2]->rows != c || w[1]->cols != c ||
        w[2]->cols != c) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "cuda norm_qkv: %d rows of %d values (at most %d rows with a scatter; "
                       "square weights of a multiple of %d; gain and bias given)",
                       n_rows, c, KERNEL_GEMV_LAUNCH_ROWS, KERNEL_LN_THREADS);
        return;
    }
    float *const out[3] = {q_out, k_dst, v_dst};
    if (!dst_row && !gemv_rows) {
        norm_qkv_gemm(s, out, in, g, lb, w, b, n_rows, c);
        return;
    }
    if (!dst_row) { /* a few rows into plain outputs: norm_linear's kernel, each its bits */
        for (int i = 0; i < 3; i++)
            gemv(s, out[i], c, in, g, lb, w[i], b[i], n_rows, WC_ACT_NONE, 0);
        return;
    }
    int flags = KERNEL_GEMV_NORM | KERNEL_GEMV_QKV, tc = cuda_use_gemv_tc(s, w[0], in, g, lb);
    if (tc < 0)
        return;
    size_t cols, cta_rows;
    const struct cuda_kernel *k = gemv_kernel(s, tc, c, flags, n_rows, &cols, &cta_rows);
    CUdeviceptr pq = dptr(q_out), pi = dptr(in), pg = dptr(g), plb = dptr(lb), pr = dptr(dst_row);
    CUdeviceptr pk = dptr(k_dst), pv = dptr(v_dst), pw[3], pb[3];
    for (int i = 0; i < 3; i++)
        pw[i] = dptr(w[i]->data), pb[i] = dptr(b[i]);
    unsigned uc = (unsigned)c, urows = (unsigned)n_rows;
    void *args[] = {&pq,  &uc,    &pi,    &pw[0], &pb[0], &uc, &urows, &pg,
                    &plb, &pw[1], &pw[2], &pb[1], &pb[2], &pk, &pv,    &pr};
    cuda_launch(s, k, 3 * ceil_div((size_t)c, cols), ceil_div((size_t)n_rows, cta_rows),
                KERNEL_GEMV_THREADS, args);
}

void cuda_norm_mlp(struct wc_stream *s, float *x, const float *g, const float *lb,
                   const struct wc_mat *w0, const float *b0, const struct wc_mat *w2,
                   const float *b2, int n_rows, float *work) {
    if (cuda_op_begin(s) || n_rows <= 0)
        return;
    int c = w0->cols, hidden = w0->rows, gemv_rows = n_rows <= KERNEL_GEMV_LAUNCH_ROWS;
    if (!cuda_gemv_args_ok(s, "norm_mlp", hidden, w0, n_rows, WC_ACT_GELU, 0) ||
        !cuda_gemv_args_ok(s, "norm_mlp", c, w2, n_rows, WC_ACT_NONE, 1))
        return;
    if (w2->cols != hidden || w2->rows != c || !g || !lb ||
        (gemv_rows && !kernel_gemv_norm_fits(c))) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "cuda norm_mlp: weights [%d][%d] then [%d][%d] (a multiple of %d values; "
                       "gain and bias given)",
                       w0->rows, w0->cols, w2->rows, w2->cols, KERNEL_LN_THREADS);
        return;
    }
    if (gemv_rows) { /* norm_linear then linear, as the unfused ops issue them */
        gemv(s, work, hidden, x, g, lb, w0, b0, n_rows, WC_ACT_GELU, 0);
        gemv(s, x, c, work, NULL, NULL, w2, b2, n_rows, WC_ACT_NONE, 1);
        return;
    }
    size_t n_hidden = (size_t)n_rows * (size_t)hidden;
    if (!cuda_fits_u32(s, "norm_mlp", n_hidden))
        return;
    /* one fp16 buffer for both GEMMs' operands: the normed rows, then (once fc1 has read them,
     * in stream order) the hidden layer after its bias and GELU */
    size_t n_in = (size_t)n_rows * (size_t)c;
    uint64_t h16 = cuda_scratch(s, CUDA_SCRATCH_HALF, 2 * (n_hidden > n_in ? n_hidden : n_in));
    if (!h16)
        return;
    layernorm_half(s, h16, x, g, lb, n_rows, c);
    cuda_gemm(s, work, hidden, w0, h16, n_rows, 0.0f);
    cuda_epilogue(s, work, hidden, b0, NULL, hidden, n_rows, 1, h16);
    cuda_gemm_bias(s, x, c, w2, h16, n_rows, 1.0f, b2);
}

void cuda_linear(struct wc_stream *s, float *out, int ld_out, const float *in,
                 const struct wc_mat *w, const float *b, int n_rows, enum wc_act act,
                 int accumulate) {
    if (cuda_op_begin(s) || n_rows <= 0)
        return;
    if (ld_out == 0)
        ld_out = w->rows;
    if (n_rows <= KERNEL_GEMV_LAUNCH_ROWS) {
        /* no cuBLAS fallback for a weight gemv cannot take: its bits depend on the row count,
         * which would break linear_exact_rows without a word */
        if (cuda_gemv_args_ok(s, "linear", ld_out, w, n_rows, act, accumulate))
            gemv(s, out, ld_out, in, NULL, NULL, w, b, n_rows, act, accumulate);
        return;
    }
    if (w->dtype != WC_F16 || ld_out < w->rows || (accumulate && act != WC_ACT_NONE)) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "cuda linear: bad arguments (dtype %d, ld_out %d < %d, accumulate %d with "
                       "act %d)",
                       (int)w->dtype, ld_out, w->rows, accumulate, (int)act);
        return;
    }
    size_t n_in = (size_t)n_rows * (size_t)w->cols;
    if (!cuda_fits_u32(s, "linear", n_in) ||
        !cuda_fits_u32(s, "linear", (size_t)n_rows * (size_t)ld_out) ||
        !cuda_fits_u32(s, "linear", (size_t)w->rows * (size_t)w->cols))
        return;
    uint64_t x16 = cuda_scratch(s, CUDA_SCRATCH_HALF, n_in * 2);
    if (!x16)
        return;
    to_half(s, x16, in, n_in);
    /* with accumulate, out = out + W·in, and the bias adds after: the same sum */
    if (act == WC_ACT_GELU) {
        cuda_gemm(s, out, ld_out, w, x16, n_rows, accumulate ? 1.0f : 0.0f);
        cuda_epilogue(s, out, ld_out, b, NULL, w->rows, n_rows, 1, 0);
    } else
        cuda_gemm_bias(s, out, ld_out, w, x16, n_rows, accumulate ? 1.0f : 0.0f, b);
}

void cuda_conv1d(struct wc_stream *s, float *out, const float *in, const struct wc_mat *w,
                 const float *b, const float *add, int c_in, int c_out, int t_in, int stride,
                 enum wc_act act) {
    if (cuda_op_begin(s) || t_in <= 0)
        return;
    if (w->dtype != WC_F16 || w->rows != c_out || w->cols != 3 * c_in || stride < 1) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "cuda conv1d: weight [%d][%d] for c_in %d, c_out %d, stride %d", w->rows,
                       w->cols, c_in, c_out, stride);
        return;
    }
    int t_out = (t_in - 1) / stride + 1;
    size_t n_col = (size_t)t_out * (size_t)c_in * 3;
    if (!cuda_fits_u32(s, "conv1d", n_col) ||
        !cuda_fits_u32(s, "conv1d", (size_t)t_out * (size_t)c_out) ||
        !cuda_fits_u32(s, "conv1d", ((size_t)t_in + 2) * (size_t)c_in))
        return;
    uint64_t col = cuda_scratch(s, CUDA_SCRATCH_HALF, n_col * 2);
    if (!col)
        return;
    const struct cuda_kernel *k = cuda_kernel_get(s, CK_IM2COL, c_in, stride, 0);
    CUdeviceptr pcol = col, pin = dptr(in);
    unsigned ut_out = (unsigned)t_out;
    void *args[] = {&pcol, &pin, &ut_out};
    cuda_launch(s, k, ut_out, 1, KERNEL_LN_THREADS, args);
    cuda_gemm(s, out, c_out, w, col, t_out, 0.0f);
    cuda_epilogue(s, out, c_out, b, add, c_out, t_out, act == WC_ACT_GELU, 0);
}

void cuda_layernorm(struct wc_stream *s, float *out, const float *in, const float *g,
                    const float *b, int n_rows, int c) {
    if (cuda_op_begin(s) || n_rows <= 0 ||
        !cuda_fits_u32(s, "layernorm", (size_t)n_rows * (size_t)c))
        return;
    const struct cuda_kernel *k = cuda_kernel_get(s, CK_LAYERNORM, c, 0, 0);
    CUdeviceptr po = dptr(out), pi = dptr(in), pg = dptr(g), pb = dptr(b);
    unsigned urows = (unsigned)n_rows;
    void *args[] = {&po, &pi, &pg, &pb, &urows};
    cuda_launch(s, k, urows, 1, KERNEL_LN_THREADS, args);
}

void cuda_embed(struct wc_stream *s, float *out, const int32_t *tokens, const int32_t *positions,
                int t_len, const struct wc_mat *tok_emb, const float *pos_emb, int pos0, int c) {
    if (cuda_op_begin(s) || t_len <= 0)
        return;
    if (tok_emb->dtype != WC_F16 || tok_emb->cols != c || pos0 < 0 ||
        !cuda_fits_u32(s, "embed", (size_t)tok_emb->rows * (size_t)c)) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "cuda embed: bad table or position");
        return;
    }
    /* tokens then positions, uploaded together */
    int32_t *idx = malloc(2 * (size_t)t_len * sizeof(int32_t));
    if (!idx) {
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "cuda embed: out of host memory");
        return;
    }
    for (int t = 0; t < t_len; t++) { /* an id or position past the table would read outside it */
        int pos = positions ? positions[t] : pos0 + t;
        if (tokens[t] < 0 || tokens[t] >= tok_emb->rows || pos < 0 ||
            !cuda_fits_u32(s, "embed", ((size_t)pos + 1) * (size_t)c)) {
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                           "cuda embed: token %d outside [0, %d) or position %d", tokens[t],
                           tok_emb->rows, pos);
            free(idx);
            return;
        }
        idx[t] = tokens[t];
        idx[t_len + t] = pos;
    }
    size_t bytes = 2 * (size_t)t_len * sizeof(int32_t);
    uint64_t didx = cuda_scratch(s, CUDA_SCRATCH_TOKENS, bytes);
    if (didx)
        cuda_upload(s, (void *)(uintptr_t)didx, idx, bytes);
    free(idx);
    if (!didx)
        return;
    const struct cuda_kernel *k = cuda_kernel_get(s, CK_EMBED, c, 0, 0);
    CUdeviceptr po = dptr(out), pt = didx, pe = dptr(tok_emb->data), pp = dptr(pos_emb);
    CUdeviceptr ppos = didx + (size_t)t_len * sizeof(int32_t);
    void *args[] = {&po, &pt, &pe, &pp, &ppos};
    cuda_launch(s, k, (unsigned)t_len, 1, KERNEL_LN_THREADS, args);
}

void cuda_rows_scatter(struct wc_stream *s, float *dst, const float *src, const int32_t *dst_row,
                       int n_rows, int c) {
    /* the kernel indexes dst in u32 elements: the caller's rows must stay below 2^32 / c */
    if (cuda_op_begin(s) || n_rows <= 0 ||
        !cuda_fits_u32(s, "rows_scatter", (size_t)n_rows * (size_t)c))
        return;
    const struct cuda_kernel *k = cuda_kernel_get(s, CK_SCATTER, c, 0, 0);
    CUdeviceptr pd = dptr(dst), ps = dptr(src), pr = dptr(dst_row);
    void *args[] = {&pd, &ps, &pr};
    cuda_launch(s, k, (unsigned)n_rows, 1, KERNEL_LN_THREADS, args);
}

void cuda_transpose(struct wc_stream *s, float *out, const float *in, int rows, int cols) {
    if (cuda_op_begin(s) || rows <= 0 || cols <= 0 ||
        !cuda_fits_u32(s, "transpose", (size_t)rows * (size_t)cols))
        return;
    const struct cuda_kernel *k = cuda_kernel_get(s, CK_TRANSPOSE, 0, 0, 0);
    CUdeviceptr po = dptr(out), pi = dptr(in);
    unsigned ur = (unsigned)rows, uc = (unsigned)cols;
    void *args[] = {&po, &pi, &ur, &uc};
    cuda_launch(s, k, ceil_div((size_t)cols, 32), ceil_div((size_t)rows, 32), KERNEL_EW_THREADS,
                args);
}

/* Whether heads of d take attn_tc (sm_80+, d 16, 32, 64 or 128, not switched off). */
static bool attn_tc_fits(const struct cuda_model *m, int d) {
    return m->sm >= 80 && d % 16 == 0 && d <= 128 && 256 % d == 0 && !m->attn_simt;
}

/* d_head = c / n_head, or 0 (stream failed) when c does not split evenly. */
static int head_dim(struct wc_stream *s, const char *op, int c, int n_head) {
    if (n_head > 0 && c > 0 && c % n_head == 0)
        return c / n_head;
    wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "cuda %s: %d columns over %d heads", op, c, n_head);
    return 0;
}

void cuda_attention(struct wc_stream *s, float *out, const float *q, const void *k, const void *v,
                    enum wc_dtype kv_dtype, int ld_kv, int t_len, int s_len, int c, int n_head,
                    int causal_pos0) {
    if (cuda_op_begin(s) || t_len <= 0)
        return;
    int d = head_dim(s, "attention", c, n_head);
    if (!d || !cuda_fits_u32(s, "attention", (size_t)t_len * (size_t)c) ||
        !cuda_fits_u32(s, "attention", (size_t)s_len * (size_t)ld_kv))
        return;
    int causal = causal_pos0 >= 0;
    if (causal && kv_dtype == WC_F32 && t_len <= KERNEL_ROWS_MAX_QUERIES && d % 32 == 0 &&
        d <= 128) {
        /* a short prompt: query t over its causal_pos0 + t + 1 keys in a launch of its own,
         * attention_gather's arithmetic (attention_exact_rows), so that a prompt has the bits
         * of one-token steps and the batch decoder may feed it to a lane as steps */
        for (int t = 0; t < t_len; t++) {
            int n_keys = causal_pos0 + t + 1 < s_len ? causal_pos0 + t + 1 : s_len;
            cuda_attention_rows(s, out + (size_t)t * c, q + (size_t)t * c, k, v, WC_F32, ld_kv, 0,
                                NULL, 1, n_keys, c, n_head);
        }
        return;
    }
    if (!causal && t_len <= KERNEL_ROWS_MAX_QUERIES && d % 32 == 0 && d <= 128) {
        /* a decoder step's cross-attention: the kernel of attention_rows, whose rows then have
         * the bits a batched step gives them (backend.h); one CTA per query is faster too */
        cuda_attention_rows(s, out, q, k, v, kv_dtype, ld_kv, 0, NULL, t_len, s_len, c, n_head);
        return;
    }
    int half = kv_dtype == WC_F16;
    /* the encoder's self-attention and a prompt's cross-attention on tensor cores (fp16
     * operands, fp32 accumulate: relative error ~1e-3, as openai-whisper in fp16); the same
     * parameters and launch shape as attn_h */
    const struct cuda_model *m = cuda_stream(s)->m;
    bool tc = !causal && attn_tc_fits(m, d);
    if (half && !tc) { /* f16 K/V only where the backend chose them (cross_kv) */
        wc_stream_fail(s, WHISPERC_ERR_UNSUPPORTED,
                       "cuda attention: f16 keys need the tensor-core kernel (unmasked, sm_80+)");
        return;
    }
    /* attn_tc_kvh copies rows in 16-byte chunks (cp.async) */
    if (half && ((ld_kv % 8) || ((dptr(k) | dptr(v)) % 16))) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "cuda attention: f16 keys need 16-byte aligned rows (ld_kv %d)", ld_kv);
        return;
    }
    const struct cuda_kernel *kn =
        tc ? cuda_kernel_get(s, CK_ATTN_TC, n_head, d, half ? KERNEL_TC_KV_HALF : 0)
           : cuda_kernel_get(s, CK_ATTENTION, n_head, d, causal);
    CUdeviceptr po = dptr(out), pq = dptr(q), pk = dptr(k), pv = dptr(v);
    unsigned uld = (unsigned)ld_kv, ut = (unsigned)t_len, us = (unsigned)s_len;
    int pos0 = causal_pos0;
    void *args[] = {&po, &pq, &pk, &pv, &uld, &ut, &us, &pos0};
    cuda_launch(s, kn, ceil_div((size_t)t_len, KERNEL_ATTN_BQ), (unsigned)n_head,
                KERNEL_ATTN_THREADS, args);
}

/* A decoder step's attention kernel kn over n_rows rows and up to n_keys keys in key splits
 * (kernels.h: KERNEL_ATTN_SPLIT keys a CTA), joined in the kernel by the last split of each
 * row and head. args: the kernel's own, its last two (the split records' and the counters'
 * addresses) filled here. The records are sized for max_keys (gather: the cache's slots), so
 * they do not grow from step to step under a step graph; the counters are zeroed when made,
 * outside any recording (a growing scratch refuses one), and every launch leaves them zero. */
void cuda_attention_windows(struct wc_stream *s, float *out, const float *q, const float *k,
                            const float *v, int n_win, int t_len, int c, int n_head) {
    if (cuda_op_begin(s) || n_win <= 0 || t_len <= 0)
        return;
    int d = head_dim(s, "attention_windows", c, n_head);
    const struct cuda_model *m = cuda_stream(s)->m;
    size_t n_rows = (size_t)n_win * (size_t)t_len;
    if (!d || !cuda_fits_u32(s, "attention_windows", n_rows * (size_t)c))
        return;
    /* where a window takes attn_tc: one launch, grid z the window (its bits those of its own
     * launch); elsewhere (a short window, the SIMT kernel) one attention a window */
    if (t_len <= KERNEL_ROWS_MAX_QUERIES || !attn_tc_fits(m, d)) {
        for (int i = 0; i < n_win; i++) {
            size_t o = (size_t)i * (size_t)t_len * (size_t)c;
            cuda_attention(s, out + o, q + o, k + o, v + o, WC_F32, c, t_len, t_len, c, n_head, -1);
        }
        return;
    }
    /* K and V to fp16 first, into the fp16 scratch (free between the q/k/v GEMMs and the output
     * projection's input): attn_tc_..._kvh reads half the bytes and stages tiles by cp.async
     * (three CTAs an SM, against two), and since the f32 kernel rounds K and V to fp16 as it
     * stages them, the bits are the f32 kernel's (which WHISPERC_CUDA_ATTN=tc32 runs instead) */
    CUdeviceptr pk = dptr(k), pv = dptr(v);
    int flags = 0;
    if (!m->attn_kv32) {
        uint64_t kv16 = cuda_scratch(s, CUDA_SCRATCH_HALF, 2 * n_rows * (size_t)c * 2);
        if (!kv16)
            return;
        pk = kv16, pv = kv16 + n_rows * (size_t)c * 2, flags = KERNEL_TC_KV_HALF;
        to_half(s, pk, k, n_rows * (size_t)c);
        to_half(s, pv, v, n_rows * (size_t)c);
    }
    const struct cuda_kernel *kn = cuda_kernel_get(s, CK_ATTN_TC, n_head, d, flags);
    CUdeviceptr po = dptr(out), pq = dptr(q);
    unsigned uld = (unsigned)c, ut = (unsigned)t_len;
    int pos0 = -1;
    void *args[] = {&po, &pq, &pk, &pv, &uld, &ut, &ut, &pos0};
    cuda_launch_3d(s, kn, ceil_div((size_t)t_len, KERNEL_ATTN_BQ), (unsigned)n_head,
                   (unsigned)n_win, KERNEL_ATTN_THREADS, args);
}

void cuda_norm_self_attention(struct wc_stream *s, float *x, const float *g, const float *lb,
                              const struct wc_mat *const w[4], const float *const b[4], int n_win,
                              int t_len, int n_head, float *const work[4]) {
    if (cuda_op_begin(s) || n_win <= 0 || t_len <= 0)
        return;
    int c = w[0]->cols, d = head_dim(s, "norm_self_attention", c, n_head);
    size_t n_rows = (size_t)n_win * (size_t)t_len, n = n_rows * (size_t)c;
    if (!d || !cuda_fits_u32(s, "norm_self_attention", n))
        return;
    for (int i = 0; i < 4; i++)
        if (w[i]->dtype != WC_F16 || w[i]->rows != c || w[i]->cols != c) {
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                           "cuda norm_self_attention: weight %d is [%d][%d], not [%d][%d] f16", i,
                           w[i]->rows, w[i]->cols, c, c);
            return;
        }
    if (!g || !lb) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "cuda norm_self_attention: no layer norm");
        return;
    }
    int rows = (int)n_rows;
    const struct cuda_model *m = cuda_stream(s)->m;
    if (t_len <= KERNEL_ROWS_MAX_QUERIES || !attn_tc_fits(m, d) || m->attn_kv32 ||
        rows <= KERNEL_GEMV_LAUNCH_ROWS) { /* the ops it stands for */
        cuda_norm_qkv(s, work[0], work[1], work[2], NULL, x, g, lb, w, b, rows);
        cuda_attention_windows(s, work[3], work[0], work[1], work[2], n_win, t_len, c, n_head);
        cuda_linear(s, x, c, work[3], w[3], b[3], rows, WC_ACT_NONE, 1);
        return;
    }
    /* one fp16 scratch of three parts: the normed rows (then, once the GEMMs have read them,
     * the attention's output), K and V */
    uint64_t h16 = cuda_scratch(s, CUDA_SCRATCH_HALF, 3 * n * 2);
    if (!h16)
        return;
    uint64_t k16 = h16 + n * 2, v16 = k16 + n * 2;
    layernorm_half(s, h16, x, g, lb, rows, c);
    cuda_gemm_bias(s, work[0], c, w[0], h16, rows, 0.0f, b[0]);
    cuda_gemm_half(s, k16, work[1], w[1], h16, rows, b[1]);
    cuda_gemm_half(s, v16, work[2], w[2], h16, rows, b[2]);
    const struct cuda_kernel *kn =
        cuda_kernel_get(s, CK_ATTN_TC, n_head, d, KERNEL_TC_KV_HALF | KERNEL_TC_OUT_HALF);
    CUdeviceptr po = h16, pq = dptr(work[0]), pk = k16, pv = v16;
    unsigned uld = (unsigned)c, ut = (unsigned)t_len;
    int pos0 = -1;
    void *args[] = {&po, &pq, &pk, &pv, &uld, &ut, &ut, &pos0};
    cuda_launch_3d(s, kn, ceil_div((size_t)t_len, KERNEL_ATTN_BQ), (unsigned)n_head,
                   (unsigned)n_win, KERNEL_ATTN_THREADS, args);
    cuda_gemm_bias(s, x, c, w[3], h16, rows, 1.0f, b[3]);
}

static void attention_split(struct wc_stream *s, const struct cuda_kernel *kn, void **args,
                            int n_args, int n_rows, int n_keys, int max_keys, int n_head, int d,
                            int split) {
    unsigned nz = (unsigned)ceil_div((size_t)n_keys, (size_t)split);
    size_t zmax = ceil_div((size_t)(max_keys > n_keys ? max_keys : n_keys), (size_t)split);
    CUdeviceptr part = 0, count = 0;
    if (nz > 1) {
        part = cuda_scratch(s, CUDA_SCRATCH_ATTN,
                            (size_t)n_rows * (size_t)n_head * zmax * (size_t)(d + 2) * 4);
        count = cuda_scratch_zeroed(s, CUDA_SCRATCH_COUNT, (size_t)n_rows * (size_t)n_head * 4);
        if (!part || !count)
            return;
    }
    args[n_args - 2] = &part;
    args[n_args - 1] = &count;
    cuda_launch_3d(s, kn, (unsigned)n_rows, (unsigned)n_head, nz, KERNEL_GATHER_THREADS, args);
}

void cuda_attention_gather(struct wc_stream *s, float *out, const float *q, const float *k,
                           const float *v, const int32_t *slots, int ld_slots,
                           const int32_t *n_kv_seq, int n_seq, int n_kv, int c, int n_head) {
    if (cuda_op_begin(s) || n_seq <= 0)
        return;
    int d = head_dim(s, "attention_gather", c, n_head);
    if (!d || !cuda_fits_u32(s, "attention_gather", (size_t)n_seq * (size_t)ld_slots))
        return;
    if (n_kv < 1 || n_kv > ld_slots) { /* the kernel clamps per-sequence counts to [1, n_kv] */
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "cuda attention_gather: %d keys, %d slots",
                       n_kv, ld_slots);
        return;
    }
    const struct cuda_kernel *kn = cuda_kernel_get(s, CK_GATHER, n_head, d, 0);
    CUdeviceptr po = dptr(out), pq = dptr(q), pk = dptr(k), pv = dptr(v), ps = dptr(slots);
    CUdeviceptr pn = dptr(n_kv_seq);
    unsigned uld = (unsigned)ld_slots, useq = (unsigned)n_seq, ukv = (unsigned)n_kv;
    void *args[] = {&po, &pq, &pk, &pv, &ps, &uld, &pn, &useq, &ukv, NULL, NULL};
    attention_split(s, kn, args, 11, n_seq, n_kv, ld_slots, n_head, d, KERNEL_ATTN_SPLIT);
}

int cuda_rows_use_tc(const struct cuda_model *m, enum wc_dtype kv_dtype, int d, int ld_kv,
                     size_t lane_stride, const void *k, const void *v) {
    return kv_dtype == WC_F16 && m->rows_tc && kernel_rows_tc_fits(m->sm, d) && ld_kv % 8 == 0 &&
           lane_stride % 8 == 0 && (dptr(k) | dptr(v)) % 16 == 0;
}

void cuda_attention_rows(struct wc_stream *s, float *out, const float *q, const void *k,
                         const void *v, enum wc_dtype kv_dtype, int ld_kv, size_t lane_stride,
                         const int32_t *lane_of_row, int n_rows, int s_len, int c, int n_head) {
    if (cuda_op_begin(s) || n_rows <= 0)
        return;
    int d = head_dim(s, "attention_rows", c, n_head), half = kv_dtype == WC_F16;
    size_t esz = half ? 2 : 4;
    if (!d || !cuda_fits_u32(s, "attention_rows", (size_t)n_rows * (size_t)c) ||
        !cuda_fits_u32(s, "attention_rows", (size_t)s_len * (size_t)ld_kv * esz))
        return;
    if (s_len < 1) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "cuda attention_rows: %d keys", s_len);
        return;
    }
    int tc = cuda_rows_use_tc(cuda_stream(s)->m, kv_dtype, d, ld_kv, lane_stride, k, v);
    const struct cuda_kernel *kn = tc ? cuda_kernel_get(s, CK_ROWS_TC, n_head, d, 0)
                                      : cuda_kernel_get(s, CK_ROWS, n_head, d, half);
    CUdeviceptr po = dptr(out), pq = dptr(q), pk = dptr(k), pv = dptr(v);
    CUdeviceptr pl = dptr(lane_of_row);
    unsigned uld = (unsigned)ld_kv, urows = (unsigned)n_rows, us = (unsigned)s_len;
    uint64_t stride = lane_stride;
    void *args[] = {&po, &pq, &pk, &pv, &uld, &stride, &pl, &urows, &us, NULL, NULL};
    attention_split(s, kn, args, 11, n_rows, s_len, s_len, n_head, d,
                    tc ? KERNEL_ROWS_TC_SPLIT : KERNEL_ATTN_SPLIT);
}

void cuda_attention_scores(struct wc_stream *s, float *out, const float *q, const void *k,
                           enum wc_dtype k_dtype, int ld_k, int t_len, int s_len, int c, int n_head,
                           int head) {
    if (cuda_op_begin(s) || t_len <= 0 || s_len <= 0)
        return;
    int d = head_dim(s, "attention_scores", c, n_head);
    if (!d)
        return;
    if (head < 0 || head >= n_head ||
        !cuda_fits_u32(s, "attention_scores", (size_t)t_len * s_len) ||
        !cuda_fits_u32(s, "attention_scores", (size_t)s_len * (size_t)ld_k)) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "cuda attention_scores: head %d of %d", head,
                       n_head);
        return;
    }
    const struct cuda_kernel *kn = cuda_kernel_get(s, CK_SCORES, n_head, d, k_dtype == WC_F16);
    CUdeviceptr po = dptr(out), pq = dptr(q), pk = dptr(k);
    unsigned uld = (unsigned)ld_k, ut = (unsigned)t_len, us = (unsigned)s_len;
    unsigned uhead = (unsigned)head;
    void *args[] = {&po, &pq, &pk, &uld, &ut, &us, &uhead};
    cuda_launch(s, kn, ut, ceil_div((size_t)s_len, 128), 128, args);
}
