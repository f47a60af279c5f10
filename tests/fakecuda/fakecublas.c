/*
 * fakecublas.c — a stand-in libcublas.so.13 for tests without a GPU, beside fakecuda.c: the
 * entry points whisper-c resolves (src/gpu/cublas_api.c). A GEMM computes nothing; it checks
 * that every operand, as its shape and leading dimension span it, lies inside one device
 * allocation, and fails once the context has a sticky fault.
 */
#include <cublas_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fakecuda.h"

struct cublasContext {
    cudaStream_t stream;
};

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) {
    *h = calloc(1, sizeof **h);
    return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
    (void)h, (void)mode;
    return CUBLAS_STATUS_SUCCESS;
}

static size_t type_size(cudaDataType t) {
    switch (t) {
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    case CUDA_R_32F: return 4;
    case CUDA_R_64F: return 8;
    default: return 0;
    }
}

/* A column-major rows x cols operand with leading dimension ld. */
static int operand_ok(const void *p, cudaDataType t, int rows, int cols, int ld, const char *what) {
    size_t es = type_size(t);
    if (!es || ld < rows || ld < 1)
        return fprintf(stderr, "fakecuda: cublasGemmEx: %s: bad type or ld %d < rows %d\n", what,
                       ld, rows),
               0;
    size_t n = ((size_t)ld * (size_t)(cols - 1) + (size_t)rows) * es;
    return fakecuda_range_ok(p, n, what);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType at,
                            int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                            void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo) {
    (void)h, (void)alpha, (void)beta, (void)compute, (void)algo;
    if (fakecuda_sticky())
        return CUBLAS_STATUS_EXECUTION_FAILED;
    if (m < 0 || n < 0 || k < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || k == 0)
        return CUBLAS_STATUS_SUCCESS;
    int ok = operand_ok(A, at, ta == CUBLAS_OP_N ? m : k, ta == CUBLAS_OP_N ? k : m, lda,
                        "cublasGemmEx A") &&
             operand_ok(B, bt, tb == CUBLAS_OP_N ? k : n, tb == CUBLAS_OP_N ? n : k, ldb,
                        "cublasGemmEx B") &&
             operand_ok(C, ct, m, n, ldc, "cublasGemmEx C");
    return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

const char *cublasGetStatusName(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

const char *cublasGetStatusString(cublasStatus_t s) {
    return s == CUBLAS_STATUS_SUCCESS ? "success" : "failed (fakecuda)";
}
