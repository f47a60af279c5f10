/*
 * backend_cuda.c — the CUDA backend's model level: opening the device (driver and cuBLAS by
 * dlopen, primary context), the weights (uploaded once: matrices fp16, vectors fp32, all in one
 * arena) and the ops table. Streams are in stream_cuda.c, ops in ops_cuda.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/backend_cuda.h"
#include "gpu/cuda_internal.h"
#include "kernels/kernels.h"
#include "libwhisperc.h"
#include "util.h"

/* Weights come in chunks of this size (or one tensor's, if larger); no doubling, so a large
 * model wastes at most one chunk's tail. */
#define WEIGHT_CHUNK ((size_t)32 << 20)

/* The generators emit PTX 8.0 (sm_80 .. sm_90); newer GPUs JIT the sm_90 text. */
#define SM_MIN 80
#define SM_MAX 90

static int weights_alloc(struct cuda_model *m, size_t bytes, uint64_t *addr) {
    char why[192];
    m->cu.ctx_set_current(m->ctx);
    if (arena_alloc(&m->weights, bytes, addr, why, sizeof why)) {
        wc_errf(m->errmsg, sizeof m->errmsg, "cuda: no device memory for %zu MiB of weights: %s",
                mib_up(bytes), why);
        return WHISPERC_ERR_NO_MEMORY;
    }
    return 0;
}

static int model_check(struct cuda_model *m, CUresult r, const char *what) {
    return cuda_check(&m->cu, r, what, m->errmsg, sizeof m->errmsg) ? WHISPERC_ERR_BACKEND : 0;
}

/* n fp32 values from the host into fp16 at dst, rounded on the device by the f32_to_f16
 * kernel (the same rounding as the activations get), through a temporary device buffer. */
static int upload_f32_as_f16(struct cuda_model *m, uint64_t dst, const void *src, size_t n) {
    const struct cuda_kernel *k = NULL;
    uint64_t tmp = 0;
    if (n > KERNEL_EW_MAX_ELEMS) {
        wc_errf(m->errmsg, sizeof m->errmsg, "cuda: a weight of %zu values is too large", n);
        return WHISPERC_ERR_UNSUPPORTED;
    }
    int rc = cuda_kernel_find(m, CK_F32_TO_F16, 0, 0, 0, &k, m->errmsg, sizeof m->errmsg);
    if (!rc)
        rc = weights_alloc(m, n * sizeof(float), &tmp);
    if (!rc)
        rc = model_check(m, m->cu.memcpy_htod(tmp, src, n * sizeof(float)), "cuMemcpyHtoD");
    if (!rc) {
        CUdeviceptr out = dst, in = tmp;
        unsigned un = (unsigned)n;
        void *args[] = {&out, &in, &un};
        unsigned grid = (unsigned)((n + KERNEL_F16_PER_CTA - 1) / KERNEL_F16_PER_CTA);
        rc = model_check(
            m, m->cu.launch_kernel(k->fn, grid, 1, 1, KERNEL_EW_THREADS, 1, 1, 0, NULL, args, NULL),
            "cuLaunchKernel(f32_to_f16)");
        if (!rc) /* before tmp goes back to the arena */
            rc = model_check(m, m->cu.ctx_synchronize(), "f32_to_f16 (weights)");
    }
    if (tmp)
        arena_release(&m->weights, tmp);
    return rc;
}

/* Host to device, done when it returns: cuMemcpyHtoD from pageable memory returns once the
 * bytes are staged, its DMA maybe still running, and the states' non-blocking streams do not
 * wait for the legacy stream it uses. The sync also reports a failed copy here, at load. */
static int copy_weights(struct cuda_model *m, uint64_t dst, const void *src, size_t bytes) {
    int rc = model_check(m, m->cu.memcpy_htod(dst, src, bytes), "cuMemcpyHtoD");
    return rc ? rc : model_check(m, m->cu.ctx_synchronize(), "cuMemcpyHtoD (weights)");
}

/* A [rows][cols] matrix as fp16 on the device: fp16 sources copied as they are. */
static int upload_half(struct cuda_model *m, const void **out, const void *src,
                       enum wc_dtype src_dtype, size_t n) {
    uint64_t dst = 0;
    int rc = weights_alloc(m, n * 2, &dst);
    if (!rc && src_dtype == WC_F16)
        rc = copy_weights(m, dst, src, n * 2);
    else if (!rc)
        rc = upload_f32_as_f16(m, dst, src, n);
    if (rc && dst)
        arena_release(&m->weights, dst);
    *out = rc ? NULL : (const void *)(uintptr_t)dst;
    return rc;
}

static int cuda_upload_mat(struct wc_backend *be, struct wc_mat *out, const void *src,
                           enum wc_dtype src_dtype, int rows, int cols) {
    int rc = upload_half(be->impl, &out->data, src, src_dtype, (size_t)rows * (size_t)cols);
    out->rows = rows;
    out->cols = cols;
    out->dtype = WC_F16;
    return rc;
}

/* PyTorch's [c_out][c_in][k] is already [c_out][c_in*k] in im2col's column order. */
static int cuda_upload_conv(struct wc_backend *be, struct wc_mat *out, const void *src,
                            enum wc_dtype src_dtype, int c_out, int c_in, int k_width) {
    size_t n = (size_t)c_out * (size_t)c_in * (size_t)k_width;
    int rc = upload_half(be->impl, &out->data, src, src_dtype, n);
    out->rows = c_out;
    out->cols = c_in * k_width;
    out->dtype = WC_F16;
    return rc;
}

static int cuda_upload_f32(struct wc_backend *be, float **out, const void *src,
                           enum wc_dtype src_dtype, size_t n) {
    struct cuda_model *m = be->impl;
    *out = NULL;
    float *host = malloc((n ? n : 1) * sizeof(float));
    if (!host) {
        wc_errf(m->errmsg, sizeof m->errmsg, "cuda: out of host memory");
        return WHISPERC_ERR_NO_MEMORY;
    }
    wc_to_f32(host, src, src_dtype == WC_F16, n);
    uint64_t dst = 0;
    int rc = weights_alloc(m, n * sizeof(float), &dst);
    if (!rc && n)
        rc = copy_weights(m, dst, host, n * sizeof(float));
    free(host);
    if (rc && dst)
        arena_release(&m->weights, dst);
    if (!rc)
        *out = (float *)(uintptr_t)dst;
    return rc;
}

static void cuda_backend_free(struct wc_backend *be) {
    if (!be)
        return;
    struct cuda_model *m = be->impl;
    if (m) {
        CUcontext caller = m->ctx;
        if (m->ctx) {
            m->cu.ctx_get_current(&caller);
            m->cu.ctx_set_current(m->ctx);
            m->cu.ctx_synchronize();
            arena_free(&m->weights);
        }
        cuda_kernel_cache_free(m); /* modules need the context, which is still retained */
        if (m->ctx && caller != m->ctx)
            m->cu.ctx_set_current(caller);
        if (m->ctx)
            m->cu.primary_ctx_release(m->dev.dev);
        cublas_api_unload(&m->blas);
        cublaslt_api_unload(&m->lt);
        cuda_api_unload(&m->cu);
        free(m);
    }
    free(be);
}

/* The caller's current context (NULL: none; ours where the driver cannot say), ours made
 * current: the call's callbacks run with it from the start, as the header says. */
static void *cuda_thread_enter(struct wc_backend *be) {
    struct cuda_model *m = be->impl;
    CUcontext c = NULL;
    if (m->cu.ctx_get_current(&c) != CUDA_SUCCESS)
        c = m->ctx;
    if (c != m->ctx)
        m->cu.ctx_set_current(m->ctx);
    return c;
}

static void cuda_thread_leave(struct wc_backend *be, void *held) {
    struct cuda_model *m = be->impl;
    CUcontext now = NULL;
    if (m->cu.ctx_get_current(&now) == CUDA_SUCCESS && now != (CUcontext)held)
        m->cu.ctx_set_current((CUcontext)held);
}

static const struct wc_backend_ops cuda_ops = {
    .name = "cuda",
    /* up to KERNEL_GEMV_LAUNCH_ROWS (1,024) rows go through gemv_tc (or gemv_f16), whose
     * summation order does not depend on the row count (cuBLAS, beyond, may choose another
     * algorithm for another n_rows) */
    .linear_exact_rows = KERNEL_GEMV_LAUNCH_ROWS,
    /* short prompts run one attn_rows launch per query (cuda_attention), a gather's arithmetic */
    .attention_exact_rows = KERNEL_ROWS_MAX_QUERIES,
    /* one cuBLAS GEMM over B x 1500 encoder rows: B times the tiles at 1500x512x512 (base) */
    .linear_merge_windows = 1,
    .host_cores_free = 1,
    .backend_free = cuda_backend_free,
    .thread_enter = cuda_thread_enter,
    .thread_leave = cuda_thread_leave,
    .upload_mat = cuda_upload_mat,
    .upload_conv = cuda_upload_conv,
    .upload_f32 = cuda_upload_f32,
    .stream_new = cuda_stream_new,
    .stream_free = cuda_stream_free,
    .stream_set_threads = cuda_stream_set_threads,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .upload = cuda_upload,
    .download = cuda_download,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .upload_async = cuda_upload_async,
    .memset0 = cuda_memset0,
    .sync = cuda_sync,
    .conv1d = cuda_conv1d,
    .layernorm = cuda_layernorm,
    .linear = cuda_linear,
    .norm_linear = cuda_norm_linear,
    .norm_qkv = cuda_norm_qkv,
    .norm_mlp = cuda_norm_mlp,
    .linear_windows = cuda_linear_windows,
    .step_chain = cuda_step_chain,
    .attention = cuda_attention,
    .attention_windows = cuda_attention_windows,
    .norm_self_attention = cuda_norm_self_attention,
    .attention_gather = cuda_attention_gather,
    .attention_rows = cuda_attention_rows,
    .attention_scores = cuda_attention_scores,
    .embed = cuda_embed,
    .rows_scatter = cuda_rows_scatter,
    .to_f16 = cuda_to_f16,
    .transpose = cuda_transpose,
    .logits_greedy = cuda_logits_greedy,
    .logits_topk = cuda_logits_topk,
    .logits_sample = cuda_logits_sample,
    .timer_mark = cuda_timer_mark,
    .timer_elapsed_ms = cuda_timer_elapsed_ms,
    .step_graph_begin = cuda_step_graph_begin,
    .step_graph_end = cuda_step_graph_end,
    .step_graph_reset = cuda_step_graph_reset,
    .step_graph_state = cuda_step_graph_state,
};

const char *cuda_backend_device(const struct wc_backend *be) {
    if (!be || be->ops != &cuda_ops)
        return "";
    return ((const struct cuda_model *)be->impl)->device_desc;
}

const char *cuda_backend_errmsg(const struct wc_backend *be) {
    if (!be || be->ops != &cuda_ops)
        return "";
    return ((const struct cuda_model *)be->impl)->errmsg;
}

/* Driver, device, context, cuBLAS; fills err and returns a WHISPERC_ERR_* code on failure. */
static int open_device(struct cuda_model *m, int gpu_index, char *err, size_t err_size) {
    char why[512];
    if (cuda_api_load(&m->cu, why, sizeof why)) {
        wc_errf(err, err_size, "CUDA unavailable: %s", why);
        return WHISPERC_ERR_UNSUPPORTED;
    }
    if (cuda_device_open(&m->cu, gpu_index, &m->dev, why, sizeof why)) {
        wc_errf(err, err_size, "CUDA unavailable: %s", why);
        return WHISPERC_ERR_UNSUPPORTED;
    }
    if (m->dev.sm < SM_MIN) {
        wc_errf(err, err_size,
                "CUDA device %d (%s) has compute capability %d.%d; whisper-c's kernels need "
                "%d.%d or newer",
                gpu_index, m->dev.name, m->dev.sm / 10, m->dev.sm % 10, SM_MIN / 10, SM_MIN % 10);
        return WHISPERC_ERR_UNSUPPORTED;
    }
    m->sm = m->dev.sm > SM_MAX ? SM_MAX : m->dev.sm;
    if (cublas_api_load(&m->blas, why, sizeof why)) {
        wc_errf(err, err_size, "CUDA unavailable: %s", why);
        return WHISPERC_ERR_UNSUPPORTED;
    }
    /* the context is tried here, and the caller's put back: ops make ours current */
    CUcontext caller = NULL;
    m->cu.ctx_get_current(&caller);
    if (cuda_check(&m->cu, m->cu.primary_ctx_retain(&m->ctx, m->dev.dev),
                   "cuDevicePrimaryCtxRetain", why, sizeof why) ||
        cuda_check(&m->cu, m->cu.ctx_set_current(m->ctx), "cuCtxSetCurrent", why, sizeof why)) {
        wc_errf(err, err_size, "CUDA device %d (%s): %s", gpu_index, m->dev.name, why);
        return WHISPERC_ERR_BACKEND;
    }
    m->cu.ctx_set_current(caller);
    snprintf(m->device_desc, sizeof m->device_desc, "%s (sm_%d, %.1f GiB)", m->dev.name, m->dev.sm,
             (double)m->dev.total_mem / (1024.0 * 1024.0 * 1024.0));
    return 0;
}

int cuda_backend_new(int gpu_index, struct wc_backend **out, char *err, size_t err_size) {
    *out = NULL;
    struct wc_backend *be = calloc(1, sizeof *be);
    struct cuda_model *m = calloc(1, sizeof *m);
    if (!be || !m || cuda_kernel_cache_init(m)) {
        free(be);
        free(m);
        wc_errf(err, err_size, "cuda backend: out of memory");
        return WHISPERC_ERR_NO_MEMORY;
    }
    be->ops = &cuda_ops;
    be->impl = m;
    arena_init(
        &m->weights,
        &(struct arena_chunk_ops){.alloc = cuda_chunk_alloc, .free = cuda_chunk_free, .ctx = m},
        WEIGHT_CHUNK, 0);
    const char *sync = getenv("WHISPERC_CUDA_SYNC");
    m->sync_each_op = sync && sync[0] == '1';
    const char *attn = getenv("WHISPERC_CUDA_ATTN");
    m->attn_simt = attn && strcmp(attn, "simt") == 0;
    m->attn_kv32 = attn && strcmp(attn, "tc32") == 0;
    /* a step's cross-attention on tensor cores unless asked for a warp a key (=kvh) */
    const char *rows = getenv("WHISPERC_CUDA_ROWS");
    m->rows_tc = !(rows && strcmp(rows, "kvh") == 0);
    const char *no_graph = getenv("WHISPERC_NO_CUDA_GRAPH");
    m->no_graphs = no_graph && no_graph[0] == '1';
    int rc = open_device(m, gpu_index, err, err_size);
    if (rc) {
        cuda_backend_free(be);
        return rc;
    }
    const char *pdl = getenv("WHISPERC_CUDA_PDL");
    m->dep_launch = m->sm >= 90 && m->cu.launch_kernel_ex && !(pdl && pdl[0] == '0');
    const char *gemv = getenv("WHISPERC_CUDA_GEMV");
    if (m->sm >= 80)
        m->gemv_tc = !gemv || strcmp(gemv, "tc") == 0 ? 1
                     : strcmp(gemv, "tc16") == 0      ? 16
                     : strcmp(gemv, "tc32") == 0      ? 32
                                                      : 0; /* f16 (or anything else) */
    /* a step's chains of projections as cooperative kernels, where asked for and possible */
    const char *chain = getenv("WHISPERC_CUDA_CHAIN");
    int chains = !chain ? 0 : strcmp(chain, "block") == 0 ? 2 : chain[0] == '1';
    if (chains && m->gemv_tc == 1 && m->cu.launch_kernel_ex && m->cu.occupancy_max_blocks &&
        m->cu.device_get_attribute(&m->n_sm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                   m->dev.dev) == CUDA_SUCCESS &&
        m->n_sm > 0)
        m->chain = chains;
    /* at most this many CTAs a chain (an experiment's knob: a grid barrier's cost grows with
     * the CTAs that meet at it) */
    const char *ctas = getenv("WHISPERC_CUDA_CHAIN_CTAS");
    m->chain_ctas = ctas ? atoi(ctas) : 0;
    /* cuBLASLt where asked for and found (its absence is no error: cuBLAS does the work) */
    const char *gemm = getenv("WHISPERC_CUDA_GEMM");
    if (gemm && strcmp(gemm, "lt") == 0)
        m->gemm_lt = cublaslt_api_load(&m->lt, m->lt_why, sizeof m->lt_why) == 0;
    /* f16 cross-attention K/V: attn_rows_..._kvh for steps, attn_tc_..._kvh for prompts (the
     * simt kernel has no f16 form) */
    bool kv_half = wc_env_f16("WHISPERC_CROSS_KV", 1) && !m->attn_simt && m->sm >= 80;
    be->cross_kv = kv_half ? WC_F16 : WC_F32;
    *out = be;
    return 0;
}
