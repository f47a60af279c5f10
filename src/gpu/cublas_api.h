/*
 * cublas_api.h — the few cuBLAS entry points the CUDA backend uses, loaded with dlopen at run
 * time like the driver (cuda_api.h). Only cublas_api.h's types and enum values are used at
 * build time; no CUDA library is linked.
 */
#ifndef WC_CUBLAS_API_H
#define WC_CUBLAS_API_H

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

/* 0 if s == CUBLAS_STATUS_SUCCESS; otherwise -1 and "what: CUBLAS_STATUS_X (description)". */
int cublas_check(const struct cublas_api *api, cublasStatus_t s, const char *what, char *err,
                 size_t err_size);

#endif /* WC_CUBLAS_API_H */
