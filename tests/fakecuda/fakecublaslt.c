/*
 * fakecublaslt.c — a stand-in libcublasLt.so.13 beside fakecublas.c: the entry points
 * whisper-c resolves (src/gpu/cublas_api.c). Descriptors hold what is set on them; the
 * heuristics check that the shapes agree under the transposes set and offer one algorithm
 * (none with FAKECUDA_LT_NOALGO=1, so the fallback to cuBLAS runs), which remembers the
 * alignment asked for (and the bias pointer's, which cuBLASLt reads from the descriptor); a
 * matmul computes nothing, and checks that A, B, C = D, the bias and the workspace each lie
 * inside one device allocation and are as aligned as the algorithm was chosen for, and fails
 * once the context has a sticky fault.
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

struct pref_fake {
    uint32_t align; /* the least of the MIN_ALIGNMENT_*_BYTES set; 256 (cuBLASLt's) if none */
};

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    struct pref_fake *f = calloc(1, sizeof *f);
    if (!f)
        return CUBLAS_STATUS_ALLOC_FAILED;
    f->align = 256;
    *p = (cublasLtMatmulPreference_t)f;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    free(p);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t a,
                                                    const void *buf, size_t n) {
    struct pref_fake *f = (void *)p;
    uint32_t v;
    switch (a) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        return n == 8 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
        if (n != 4)
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&v, buf, 4);
        f->align = v < f->align ? v : f->align;
        return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

static size_t type_size(cudaDataType t) { return t == CUDA_R_16F ? 2 : 4; }

/* The largest power of two up to 256 dividing p */
static uint64_t align_of(const void *p) {
    uint64_t a = 256;
    while (a > 1 && (uintptr_t)p % a)
        a /= 2;
    return a;
}

typedef struct cublasLtMatrixLayoutOpaque_fake layout_t;

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd,
                                              cublasLtMatmulPreference_t p, int n,
                                              cublasLtMatmulHeuristicResult_t *res, int *n_res) {
    (void)h;
    const char *no = getenv("FAKECUDA_LT_NOALGO");
    const struct cublasLtMatmulDescOpaque_fake *f = (const void *)d;
    const layout_t *la = (const void *)a, *lb = (const void *)b, *lc = (const void *)c;
    /* op(A) is m x k, op(B) k x n, C m x n */
    uint64_t am = f->transa == CUBLAS_OP_N ? la->rows : la->cols;
    uint64_t ak = f->transa == CUBLAS_OP_N ? la->cols : la->rows;
    uint64_t bk = f->transb == CUBLAS_OP_N ? lb->rows : lb->cols;
    uint64_t bn = f->transb == CUBLAS_OP_N ? lb->cols : lb->rows;
    if (n < 1 || (const void *)c != (const void *)dd || ak != bk || lc->rows != am ||
        lc->cols != bn) {
        fprintf(stderr, "fakecuda: cublasLtMatmulAlgoGetHeuristic: shapes do not agree\n");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    memset(res, 0, sizeof *res);
    uint64_t algo[2] = {((const struct pref_fake *)(const void *)p)->align, align_of(f->bias)};
    memcpy(&res->algo, algo, sizeof algo);
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
    (void)h, (void)alpha, (void)beta, (void)stream, (void)dd;
    const struct cublasLtMatmulDescOpaque_fake *f = (const void *)d;
    if (fakecuda_sticky())
        return CUBLAS_STATUS_EXECUTION_FAILED;
    const layout_t *lc = (const void *)c;
    int bias = f->epilogue == CUBLASLT_EPILOGUE_BIAS;
    uint64_t want[2];
    memcpy(want, algo, sizeof want);
    const void *ptrs[] = {A, B, C, D};
    for (int i = 0; i < 4; i++)
        if (align_of(ptrs[i]) < want[0]) {
            fprintf(stderr, "fakecuda: cublasLtMatmul: operand %d less aligned than %d bytes\n", i,
                    (int)want[0]);
            return CUBLAS_STATUS_INVALID_VALUE;
        }
    if (bias && align_of(f->bias) < want[1]) {
        fprintf(stderr,
                "fakecuda: cublasLtMatmul: the bias less aligned than the heuristics saw\n");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    int ok = operand_ok(A, (const void *)a, "cublasLtMatmul A") &&
             operand_ok(B, (const void *)b, "cublasLtMatmul B") &&
             operand_ok(C, lc, "cublasLtMatmul C") && operand_ok(D, lc, "cublasLtMatmul D") &&
             (!bias ||
              fakecuda_range_ok(f->bias, lc->rows * type_size(lc->type), "cublasLtMatmul bias")) &&
             (!ws_bytes || fakecuda_range_ok(ws, ws_bytes, "cublasLtMatmul workspace"));
    return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
