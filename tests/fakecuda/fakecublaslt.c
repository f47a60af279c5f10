/*
 * fakecublaslt.c — a stand-in libcublasLt.so.13 beside fakecublas.c: the entry points
 * whisper-c resolves (src/gpu/cublas_api.c). Descriptors hold what is set on them; the
 * heuristics offer one algorithm (none with FAKECUDA_LT_NOALGO=1, so the fallback to cuBLAS
 * runs); a matmul computes nothing, and checks that A, B, C = D, the bias and the workspace
 * each lie inside one device allocation, and fails once the context has a sticky fault.
 */
#include <cublasLt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakecuda.h"

struct cublasLtContext {
    int unused;
};
struct cublasLtMatmulDescOpaque_fake {
    int32_t transa, transb;
    uint32_t epilogue;
    const void *bias;
};
struct cublasLtMatrixLayoutOpaque_fake {
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld;
};

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
    *h = calloc(1, sizeof(struct cublasLtContext));
    return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t ct,
                                        cudaDataType_t st) {
    if (ct != CUBLAS_COMPUTE_32F || st != CUDA_R_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    *d = calloc(1, sizeof(struct cublasLtMatmulDescOpaque_fake));
    return *d ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
    free(d);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t a, const void *buf,
                                              size_t n) {
    struct cublasLtMatmulDescOpaque_fake *f = (void *)d;
    switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
        return n == 4                ? memcpy(&f->transa, buf, 4),
               CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_DESC_TRANSB:
        return n == 4                ? memcpy(&f->transb, buf, 4),
               CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        return n == 4                ? memcpy(&f->epilogue, buf, 4),
               CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        return n == sizeof f->bias   ? memcpy(&f->bias, buf, n),
               CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    if ((t != CUDA_R_16F && t != CUDA_R_32F) || ld < (int64_t)rows || ld < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    struct cublasLtMatrixLayoutOpaque_fake *f = calloc(1, sizeof *f);
    if (!f)
        return CUBLAS_STATUS_ALLOC_FAILED;
    *f = (struct cublasLtMatrixLayoutOpaque_fake){t, rows, cols, ld};
    *l = (cublasLtMatrixLayout_t)f;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
    free(l);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    *p = calloc(1, sizeof(cublasLtMatmulPreferenceOpaque_t));
    return *p ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    free(p);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t a,
                                                    const void *buf, size_t n) {
    (void)p, (void)a, (void)buf, (void)n;
    return CUBLAS_STATUS_SUCCESS;
}

static size_t type_size(cudaDataType t) { return t == CUDA_R_16F ? 2 : 4; }

typedef struct cublasLtMatrixLayoutOpaque_fake layout_t;

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd,
                                              cublasLtMatmulPreference_t p, int n,
                                              cublasLtMatmulHeuristicResult_t *res, int *n_res) {
    (void)h, (void)d, (void)p;
    const char *no = getenv("FAKECUDA_LT_NOALGO");
    const layout_t *la = (const void *)a, *lb = (const void *)b, *lc = (const void *)c;
    if (n < 1 || (const void *)c != (const void *)dd || la->rows != lb->rows ||
        lc->rows != la->cols || lc->cols != lb->cols)
        return CUBLAS_STATUS_INVALID_VALUE;
    memset(res, 0, sizeof *res);
    *n_res = no && no[0] == '1' ? 0 : 1;
    return CUBLAS_STATUS_SUCCESS;
}

/* A column-major layout's span from p, inside one allocation. */
static int operand_ok(const void *p, const layout_t *l, const char *what) {
    size_t n = ((size_t)l->ld * (size_t)(l->cols - 1) + (size_t)l->rows) * type_size(l->type);
    return fakecuda_range_ok(p, n, what);
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t a, const void *B,
                              cublasLtMatrixLayout_t b, const void *beta, const void *C,
                              cublasLtMatrixLayout_t c, void *D, cublasLtMatrixLayout_t dd,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes,
                              cudaStream_t stream) {
    (void)h, (void)alpha, (void)beta, (void)algo, (void)stream, (void)dd;
    const struct cublasLtMatmulDescOpaque_fake *f = (const void *)d;
    if (fakecuda_sticky())
        return CUBLAS_STATUS_EXECUTION_FAILED;
    const layout_t *lc = (const void *)c;
    int bias = f->epilogue == CUBLASLT_EPILOGUE_BIAS;
    int ok = operand_ok(A, (const void *)a, "cublasLtMatmul A") &&
             operand_ok(B, (const void *)b, "cublasLtMatmul B") &&
             operand_ok(C, lc, "cublasLtMatmul C") && operand_ok(D, lc, "cublasLtMatmul D") &&
             (!bias ||
              fakecuda_range_ok(f->bias, lc->rows * type_size(lc->type), "cublasLtMatmul bias")) &&
             (!ws_bytes || fakecuda_range_ok(ws, ws_bytes, "cublasLtMatmul workspace"));
    return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
