/*
 * backend_cuda.h — the CUDA backend (backend.h's ops on an NVIDIA GPU): fp16 weights, fp32
 * activations, cuBLAS for the matrix products, generated PTX kernels for the rest.
 */
#ifndef WC_BACKEND_CUDA_H
#define WC_BACKEND_CUDA_H

#include <stddef.h>

#include "backend.h"

/* Opens CUDA device `gpu_index` (driver and cuBLAS loaded with dlopen). Returns 0 and *out, or
 * a WHISPERC_ERR_* code with the reason in err ("no CUDA driver (...)", "no CUDA device 1 (1
 * found)", ...); WHISPERC_ERR_UNSUPPORTED when there is no usable driver, device or cuBLAS. */
int cuda_backend_new(int gpu_index, struct wc_backend **out, char *err, size_t err_size);

/* "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)" for a CUDA backend, "" for any other. */
const char *cuda_backend_device(const struct wc_backend *be);

/* Why the last upload_* call on a CUDA backend failed ("cuda: no device memory for ..."), ""
 * when none did or for any other backend (backend.h's upload calls return only a code). */
const char *cuda_backend_errmsg(const struct wc_backend *be);

#endif /* WC_BACKEND_CUDA_H */
