/*
 * cublas_api.h — the few cuBLAS entry points the CUDA backend uses, loaded with dlopen at run
 * time like the driver (cuda_api.h). Only cublas_api.h's types and enum values are used at
 * build time; no CUDA library is linked.
 */
#ifndef WC_CUBLAS_API_H
#define WC_CUBLAS_API_H

#include <cublasLt.h>
#include <cublas_api.h>
#include <stddef.h>

struct cublas_api {
    void *lib; /* dlopen handle of libcublas.so.13 (or .12, .11) */
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                              const void *, const void *, cudaDataType, int, const void *,
                              cudaDataType, int, const void *, void *, cudaDataType, int,
                              cublasComputeType_t, cublasGemmAlgo_t);
    /* Optional (cuBLAS >= 11.4); NULL when the library lacks them. */
    const char *(*get_status_name)(cublasStatus_t);
    const char *(*get_status_string)(cublasStatus_t);
};

/* Loads the newest cuBLAS found (libcublas.so.13, .12, .11) and resolves the entry points.
 * Returns 0, or -1 with a one-line reason in err; *api is then unloaded. */
int cublas_api_load(struct cublas_api *api, char *err, size_t err_size);
void cublas_api_unload(struct cublas_api *api);

/* cuBLASLt's matmul with an epilogue (the bias added in the GEMM's own epilogue, fp16 outputs),
 * for the encoder's GEMMs (WHISPERC_CUDA_GEMM=lt). */
struct cublaslt_api {
    void *lib; /* dlopen handle of libcublasLt.so.13 (or .12, .11) */
    cublasStatus_t (*create)(cublasLtHandle_t *);
    cublasStatus_t (*destroy)(cublasLtHandle_t);
    cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType_t);
    cublasStatus_t (*desc_destroy)(cublasLtMatmulDesc_t);
    cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void *,
                               size_t);
    cublasStatus_t (*layout_create)(cublasLtMatrixLayout_t *, cudaDataType, uint64_t, uint64_t,
                                    int64_t);
    cublasStatus_t (*layout_destroy)(cublasLtMatrixLayout_t);
    cublasStatus_t (*pref_create)(cublasLtMatmulPreference_t *);
    cublasStatus_t (*pref_destroy)(cublasLtMatmulPreference_t);
    cublasStatus_t (*pref_set)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                               const void *, size_t);
    cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                cublasLtMatmulHeuristicResult_t *, int *);
    cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
                             cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t,
                             const void *, const void *, cublasLtMatrixLayout_t, void *,
                             cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,
                             cudaStream_t);
};

/* Loads cuBLASLt as cublas_api_load loads cuBLAS: 0, or -1 with a one-line reason in err. */
int cublaslt_api_load(struct cublaslt_api *api, char *err, size_t err_size);
void cublaslt_api_unload(struct cublaslt_api *api);

/* 0 if s == CUBLAS_STATUS_SUCCESS; otherwise -1 and "what: CUBLAS_STATUS_X (description)". */
int cublas_check(const struct cublas_api *api, cublasStatus_t s, const char *what, char *err,
                 size_t err_size);

#endif /* WC_CUBLAS_API_H */
