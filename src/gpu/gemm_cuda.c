/*
 * gemm_cuda.c — the CUDA backend's matrix products over many rows (the encoder's, a prompt's):
 * cuBLAS GemmEx (fp16 operands, fp32 accumulation and output) followed by a generated epilogue
 * for bias/GELU/add, or, with WHISPERC_CUDA_GEMM=lt, cuBLASLt's matmul with the bias added in
 * the GEMM's own epilogue and fp16 written straight from it, which saves a pass over the rows
 * per product. A step's rows never come here (gemv, ops_cuda.c).
 *
 * cuBLAS is column-major: row-major w[n_out][k] is the k x n_out matrix A with lda = k, x16
 * [n_rows][k] is k x n_rows with ldb = k, and out [n_rows][ldc] is n_out x n_rows with ldc; so
 * C = Aᵀ·B, transa = T, transb = N, m = n_out, n = n_rows.
 */
#include <stdint.h>
#include <string.h>

#include "gpu/cuda_internal.h"
#include "kernels/kernels.h"
#include "libwhisperc.h"

/* cuBLASLt's workspace (what cuBLAS itself takes on Hopper): room for its split-K algorithms */
#define LT_WORKSPACE ((size_t)32 << 20)

void cuda_gemm(struct wc_stream *s, float *c, int ldc, const struct wc_mat *w, uint64_t x16,
               int n_rows, float beta) {
    struct cuda_stream *cs = cuda_stream(s);
    const float alpha = 1.0f;
    /* a step's rows (<= KERNEL_GEMV_LAUNCH_ROWS) take gemv; a GEMM in a step graph is refused
     * rather than captured, as a replay pass could not skip it */
    if (s->err || cuda_graph_refuse(cs, "a cuBLAS GEMM"))
        return;
    cublas_stream_check(s,
                        cs->m->blas.gemm_ex(cs->blas, CUBLAS_OP_T, CUBLAS_OP_N, w->rows, n_rows,
                                            w->cols, &alpha, w->data, CUDA_R_16F, w->cols,
                                            (const void *)(uintptr_t)x16, CUDA_R_16F, w->cols,
                                            &beta, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT_TENSOR_OP),
                        "cublasGemmEx");
}

void cuda_epilogue(struct wc_stream *s, float *x, int ld, const float *b, const float *add, int n,
                   int n_rows, int gelu, uint64_t out16) {
    int flags = (b ? KERNEL_EPI_BIAS : 0) | (gelu ? KERNEL_EPI_GELU : 0) |
                (add ? KERNEL_EPI_ADD : 0) | (out16 ? KERNEL_EPI_HALF : 0);
    if (!flags || s->err || !cuda_fits_u32(s, "epilogue", (size_t)n_rows * (size_t)n))
        return;
    const struct cuda_kernel *k = cuda_kernel_get(s, CK_BIAS_ACT, n, flags, 0);
    CUdeviceptr px = dptr(x), pb = dptr(b), padd = dptr(add), pout = out16;
    unsigned uld = (unsigned)ld, urows = (unsigned)n_rows;
    void *args[] = {&px, &uld, &pb, &padd, &urows, &pout};
    size_t per_cta = (size_t)KERNEL_EW_THREADS * (size_t)kernel_epi_per_thread(n);
    cuda_launch(s, k, ceil_div((size_t)n_rows * (size_t)n, per_cta), 1, KERNEL_EW_THREADS, args);
}

/* The largest power of two up to 256 that divides address p (cuBLASLt's heuristics pick
 * kernels for the alignment they are told). */
static int align_of(uint64_t p) {
    int a = 256;
    while (a > 1 && p % (uint64_t)a)
        a /= 2;
    return a;
}

static void lt_plan_free(const struct cublaslt_api *lt, struct cuda_lt_plan *p) {
    if (p->desc)
        lt->desc_destroy(p->desc);
    for (int i = 0; i < 3; i++)
        if (p->layout[i])
            lt->layout_destroy(p->layout[i]);
    memset(p, 0, sizeof *p);
}

void cuda_lt_free(struct cuda_stream *cs) {
    const struct cublaslt_api *lt = &cs->m->lt;
    for (int i = 0; i < CUDA_LT_PLANS; i++)
        lt_plan_free(lt, &cs->lt_plan[i]);
    if (cs->lt)
        lt->destroy(cs->lt);
    cs->lt = NULL;
}

/* Builds plan p for its key (desc with transposes and epilogue; layouts of A, B and C = D) and
 * asks the heuristics for an algorithm: 0, or -1: none for the shape (p->ok stays 0, the
 * stream runs cuBLAS), or a call failed (the stream failed). */
static int lt_plan_make(struct wc_stream *s, struct cuda_lt_plan *p) {
    struct cuda_stream *cs = cuda_stream(s);
    const struct cublaslt_api *lt = &cs->m->lt;
    const struct cuda_lt_key *key = &p->key;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epi = key->bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    cudaDataType_t ct = key->half ? CUDA_R_16F : CUDA_R_32F;
    uint64_t ws = LT_WORKSPACE, m = (uint64_t)key->m, n = (uint64_t)key->n, k = (uint64_t)key->k;
    uint32_t align = (uint32_t)key->align;
    /* the heuristics assume 256-byte alignment unless told, and read the bias pointer's: an
     * address aligned as the key says stands in for it */
    const void *bias_align = (const void *)(uintptr_t)key->align;
    static const cublasLtMatmulPreferenceAttributes_t aligns[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    int n_res = 0;
    cublasStatus_t st = lt->desc_create(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    st = st ? st : lt->desc_set(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    st = st ? st : lt->desc_set(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    st = st ? st : lt->desc_set(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    if (key->bias)
        st = st ? st
                : lt->desc_set(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_align,
                               sizeof bias_align);
    st = st ? st : lt->layout_create(&p->layout[0], CUDA_R_16F, k, m, (int64_t)k);
    st = st ? st : lt->layout_create(&p->layout[1], CUDA_R_16F, k, n, (int64_t)k);
    st = st ? st : lt->layout_create(&p->layout[2], ct, m, n, key->ldc);
    st = st ? st : lt->pref_create(&pref);
    st = st ? st : lt->pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    for (int i = 0; i < 4; i++)
        st = st ? st : lt->pref_set(pref, aligns[i], &align, sizeof align);
    st = st ? st
            : lt->heuristic(cs->lt, p->desc, p->layout[0], p->layout[1], p->layout[2], p->layout[2],
                            pref, 1, &res, &n_res);
    if (pref)
        lt->pref_destroy(pref);
    int none = st == CUBLAS_STATUS_NOT_SUPPORTED ||
               (!st && (n_res < 1 || res.state != CUBLAS_STATUS_SUCCESS || res.workspaceSize > ws));
    if (st || none) {
        struct cuda_lt_plan keep = *p;
        lt_plan_free(lt, p);
        p->key = keep.key;
        p->used = keep.used;
        p->tried = 1; /* not asked again */
        if (!none)
            cublas_stream_check(s, st, "cuBLASLt matmul plan");
        return -1;
    }
    p->algo = res.algo;
    p->tried = p->ok = 1;
    return 0;
}

/* The stream's plan for key: found, or made in the slot used longest ago. */
static struct cuda_lt_plan *lt_plan(struct wc_stream *s, const struct cuda_lt_key *key) {
    struct cuda_stream *cs = cuda_stream(s);
    for (int i = 0; i < CUDA_LT_PLANS; i++)
        if (cs->lt_plan[i].tried && !memcmp(&cs->lt_plan[i].key, key, sizeof *key)) {
            cs->lt_plan[i].used = ++cs->lt_clock;
            return &cs->lt_plan[i];
        }
    struct cuda_lt_plan *p = &cs->lt_plan[0];
    for (int i = 1; i < CUDA_LT_PLANS; i++)
        if (cs->lt_plan[i].used < p->used)
            p = &cs->lt_plan[i];
    lt_plan_free(&cs->m->lt, p);
    p->key = *key;
    p->used = ++cs->lt_clock;
    lt_plan_make(s, p);
    return p;
}

/* out (fp32, or fp16 with half) = w · x16 + b + beta·out through cuBLASLt: 1 when queued, 0
 * when the stream does not use it (or its heuristics have no algorithm for the shape: the
 * caller runs cuBLAS and the epilogue instead), -1 on a failed call (stream failed). */
static int gemm_lt(struct wc_stream *s, void *out, int ldc, int half, const struct wc_mat *w,
                   uint64_t x16, int n_rows, float beta, const float *b) {
    struct cuda_stream *cs = cuda_stream(s);
    if (!cs->m->gemm_lt || s->err)
        return s->err ? -1 : 0;
    if (cuda_graph_refuse(cs, "a cuBLASLt GEMM"))
        return -1;
    if (!cs->lt && cublas_stream_check(s, cs->m->lt.create(&cs->lt), "cublasLtCreate"))
        return -1;
    uint64_t ws = cuda_scratch(s, CUDA_SCRATCH_LT, LT_WORKSPACE);
    if (!ws)
        return -1;
    uint64_t pw = dptr(w->data), po = dptr(out), pb = dptr(b);
    int align = align_of(pw | x16 | po | pb); /* pb: 0 without a bias */
    struct cuda_lt_key key = {w->rows, n_rows, w->cols, ldc, half, b != NULL, beta != 0.0f, align};
    const struct cuda_lt_plan *p = lt_plan(s, &key);
    if (!p->ok)
        return s->err ? -1 : 0;
    const struct cublaslt_api *lt = &cs->m->lt;
    const float alpha = 1.0f;
    const void *bias = b;
    if (b && cublas_stream_check(
                 s, lt->desc_set(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
                 "cublasLtMatmulDescSetAttribute"))
        return -1;
    return cublas_stream_check(s,
                               lt->matmul(cs->lt, p->desc, &alpha, w->data, p->layout[0],
                                          (const void *)(uintptr_t)x16, p->layout[1], &beta, out,
                                          p->layout[2], out, p->layout[2], &p->algo,
                                          (void *)(uintptr_t)ws, LT_WORKSPACE,
                                          (cudaStream_t)cs->stream),
                               "cublasLtMatmul")
               ? -1
               : 1;
}

void cuda_gemm_bias(struct wc_stream *s, float *out, int ldc, const struct wc_mat *w, uint64_t x16,
                    int n_rows, float beta, const float *b) {
    if (gemm_lt(s, out, ldc, 0, w, x16, n_rows, beta, b))
        return;
    cuda_gemm(s, out, ldc, w, x16, n_rows, beta);
    cuda_epilogue(s, out, ldc, b, NULL, w->rows, n_rows, 0, 0);
}

void cuda_gemm_half(struct wc_stream *s, uint64_t out16, float *work, const struct wc_mat *w,
                    uint64_t x16, int n_rows, const float *b) {
    size_t n = (size_t)n_rows * (size_t)w->rows;
    /* cuBLASLt writes fp16 itself where there is no bias (with fp16 output its bias would be
     * fp16); with a bias, the f32 rows and the bias from its epilogue, then to fp16 */
    int lt = gemm_lt(s, b ? (void *)work : (void *)(uintptr_t)out16, w->rows, !b, w, x16, n_rows,
                     0.0f, b);
    if (lt > 0 && b)
        cuda_to_f16(s, (void *)(uintptr_t)out16, work, n);
    if (lt)
        return;
    /* cuBLAS: the f32 product, then the bias added and the sum rounded in one pass */
    cuda_gemm(s, work, w->rows, w, x16, n_rows, 0.0f);
    if (b)
        cuda_epilogue(s, work, w->rows, b, NULL, w->rows, n_rows, 0, out16);
    else
        cuda_to_f16(s, (void *)(uintptr_t)out16, work, n);
}

/* backend.h linear_windows. The input goes to fp16 once for every projection; a projection is
 * one GEMM over all the windows' rows (cuBLAS, or cuBLASLt with its bias, as cuda_gemm_half
 * does for one block), then each window's block is rounded to fp16, with the bias in the same
 * pass, into its destination: a window alone gets the bits of cuda_linear then to_f16. F32
 * outputs, and blocks short enough that cuda_linear takes gemv (other bits), go window by
 * window through cuda_linear, as the caller's ops would. */
void cuda_linear_windows(struct wc_stream *s, void *const *dst, enum wc_dtype dtype,
                         const float *in, int n_win, int n_rows, const struct wc_mat *const *w,
                         const float *const *b, int n_w, float *work, size_t work_floats) {
    if (cuda_op_begin(s) || n_win <= 0 || n_rows <= 0 || n_w <= 0)
        return;
    int c_in = w[0]->cols, most = 0;
    for (int j = 0; j < n_w; j++) {
        if (w[j]->dtype != WC_F16 || w[j]->cols != c_in || (dtype != WC_F16 && dtype != WC_F32)) {
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                           "cuda linear_windows: weight %d [%d][%d] (dtype %d) after [%d][%d], "
                           "output dtype %d",
                           j, w[j]->rows, w[j]->cols, (int)w[j]->dtype, w[0]->rows, c_in,
                           (int)dtype);
            return;
        }
        most = w[j]->rows > most ? w[j]->rows : most;
    }
    size_t rows = (size_t)n_win * (size_t)n_rows, n_in = rows * (size_t)c_in;
    /* the per-window path needs one block of room, the merged GEMM all of them */
    int merged = dtype == WC_F16 && n_rows > KERNEL_GEMV_LAUNCH_ROWS;
    size_t need = (merged ? rows : (size_t)n_rows) * (size_t)most;
    if (dtype == WC_F16 && work_floats < need) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "cuda linear_windows: work of %zu floats for %d x %d rows of %d (%zu)",
                       work_floats, n_win, n_rows, most, need);
        return;
    }
    if (!merged) {
        for (int j = 0; j < n_w; j++)
            for (int i = 0; i < n_win; i++) {
                void *d = dst[(size_t)j * n_win + i];
                cuda_linear(s, dtype == WC_F32 ? d : work, 0, in + (size_t)i * n_rows * c_in, w[j],
                            b[j], n_rows, WC_ACT_NONE, 0);
                if (dtype == WC_F16)
                    cuda_to_f16(s, d, work, (size_t)n_rows * (size_t)w[j]->rows);
            }
        return;
    }
    if (rows > INT32_MAX || !cuda_fits_u32(s, "linear_windows", n_in) ||
        !cuda_fits_u32(s, "linear_windows", rows * (size_t)most))
        return;
    uint64_t x16 = cuda_scratch(s, CUDA_SCRATCH_HALF, n_in * 2);
    if (!x16)
        return;
    cuda_to_f16(s, (void *)(uintptr_t)x16, in, n_in);
    for (int j = 0; j < n_w && !s->err; j++) {
        int n_out = w[j]->rows;
        size_t block = (size_t)n_rows * (size_t)n_out;
        int lt = gemm_lt(s, work, n_out, 0, w[j], x16, (int)rows, 0.0f, b[j]);
        if (lt < 0)
            return;
        if (!lt)
            cuda_gemm(s, work, n_out, w[j], x16, (int)rows, 0.0f);
        for (int i = 0; i < n_win; i++) {
            void *d = dst[(size_t)j * n_win + i];
            if (lt || !b[j])
                cuda_to_f16(s, d, work + i * block, block);
            else
                cuda_epilogue(s, work + i * block, n_out, b[j], NULL, n_out, n_rows, 0, dptr(d));
        }
    }
}
