/*
 * stream_cuda.c — the CUDA backend's streams: one CUstream, cuBLAS handle and activation arena
 * per state; copies and memsets queued on the stream; errors made sticky (backend.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_internal.h"
#include "libwhisperc.h"
#include "util.h"

/* Activation chunks: the first large enough for a small model's encoder, each later one at
 * least doubling the total, so a state reserves memory a handful of times in its life. */
#define ACT_MIN_CHUNK ((size_t)64 << 20)

int cuda_stream_check(struct wc_stream *s, CUresult r, const char *what) {
    if (r == CUDA_SUCCESS)
        return 0;
    char msg[sizeof s->errmsg];
    cuda_check(&cuda_stream(s)->m->cu, r, what, msg, sizeof msg);
    wc_stream_fail(s, WHISPERC_ERR_BACKEND, "cuda: %s", msg);
    return s->err;
}

int cublas_stream_check(struct wc_stream *s, cublasStatus_t st, const char *what) {
    if (st == CUBLAS_STATUS_SUCCESS)
        return 0;
    char msg[sizeof s->errmsg];
    cublas_check(&cuda_stream(s)->m->blas, st, what, msg, sizeof msg);
    wc_stream_fail(s, WHISPERC_ERR_BACKEND, "cuda: %s", msg);
    return s->err;
}

int cuda_op_begin(struct wc_stream *s) {
    if (s->err)
        return s->err;
    struct cuda_model *m = cuda_stream(s)->m;
    return cuda_stream_check(s, m->cu.ctx_set_current(m->ctx), "cuCtxSetCurrent");
}

int cuda_chunk_alloc(void *ctx, size_t bytes, uint64_t *addr, char *err, size_t err_size) {
    struct cuda_model *m = ctx;
    CUdeviceptr p = 0;
    char what[64];
    snprintf(what, sizeof what, "cuMemAlloc(%zu MiB)", bytes >> 20);
    if (cuda_check(&m->cu, m->cu.mem_alloc(&p, bytes), what, err, err_size))
        return -1;
    *addr = (uint64_t)p;
    return 0;
}

void cuda_chunk_free(void *ctx, uint64_t addr) {
    struct cuda_model *m = ctx;
    m->cu.mem_free((CUdeviceptr)addr);
}

void cuda_stream_free(struct wc_stream *s) {
    if (!s)
        return;
    struct cuda_stream *cs = s->impl;
    if (cs) {
        const struct cuda_api *cu = &cs->m->cu;
        cu->ctx_set_current(cs->m->ctx);
        if (cs->stream) /* queued work may still use the arena */
            cu->stream_synchronize(cs->stream);
        if (cs->blas)
            cs->m->blas.destroy(cs->blas);
        for (int i = 0; i < WC_TIMER_SLOTS; i++)
            if (cs->timer[i])
                cu->event_destroy(cs->timer[i]);
        arena_free(&cs->arena);
        if (cs->stream)
            cu->stream_destroy(cs->stream);
        free(cs->mask_host);
        free(cs);
    }
    free(s);
}

/* The thread count is the CPU backend's; the GPU has no use for it. */
int cuda_stream_set_threads(struct wc_stream *s, int n_threads) {
    (void)s;
    (void)n_threads;
    return 0;
}

int cuda_stream_new(struct wc_backend *be, int n_threads, struct wc_stream **out) {
    (void)n_threads;
    *out = NULL;
    struct cuda_model *m = be->impl;
    struct wc_stream *s = calloc(1, sizeof *s);
    struct cuda_stream *cs = calloc(1, sizeof *cs);
    if (!s || !cs) {
        free(s);
        free(cs);
        return WHISPERC_ERR_NO_MEMORY;
    }
    s->be = be;
    s->impl = cs;
    cs->m = m;
    arena_init(
        &cs->arena,
        &(struct arena_chunk_ops){.alloc = cuda_chunk_alloc, .free = cuda_chunk_free, .ctx = m},
        ACT_MIN_CHUNK, 1);
    /* A non-blocking stream: no implicit sync with the legacy default stream that weight
     * uploads use (they finish before load returns). */
    if (!cuda_op_begin(s) &&
        !cuda_stream_check(s, m->cu.stream_create(&cs->stream, CU_STREAM_NON_BLOCKING),
                           "cuStreamCreate") &&
        !cublas_stream_check(s, m->blas.create(&cs->blas), "cublasCreate") &&
        !cublas_stream_check(s, m->blas.set_stream(cs->blas, cs->stream), "cublasSetStream"))
        /* fp16 inputs with fp32 accumulation use tensor cores in the default math mode;
         * CUBLAS_DEFAULT_MATH keeps cuBLAS from lowering fp32 GEMMs to TF32 behind our back */
        cublas_stream_check(s, m->blas.set_math_mode(cs->blas, CUBLAS_DEFAULT_MATH),
                            "cublasSetMathMode");
    int rc = s->err;
    if (rc) { /* stream_new returns only the code (backend.h); the message goes with s */
        cuda_stream_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void *cuda_alloc(struct wc_stream *s, size_t bytes) {
    if (s->err)
        return NULL;
    struct cuda_stream *cs = cuda_stream(s);
    uint64_t addr = 0;
    char err[sizeof s->errmsg];
    if (cuda_op_begin(s))
        return NULL;
    if (arena_alloc(&cs->arena, bytes, &addr, err, sizeof err)) {
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY,
                       "cuda: no device memory for %zu MiB of activations (%zu MiB held): %s",
                       bytes >> 20, cs->arena.reserved >> 20, err);
        return NULL;
    }
    return (void *)(uintptr_t)addr;
}

/* Works after an error too, so that cleanup paths give everything back. Reuse is safe without
 * a sync: the next user of the block is queued on the same stream, after the last reader. */
void cuda_release(struct wc_stream *s, void *p) {
    struct cuda_stream *cs = cuda_stream(s);
    uint64_t a = (uint64_t)(uintptr_t)p;
    for (int i = 0; a && i < CUDA_N_SCRATCH; i++)
        if (a == cs->scratch[i].addr) {
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                           "cuda: release of the stream's own scratch");
            return;
        }
    if (a && arena_release(&cs->arena, a))
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "cuda: release of %p, which this stream did not allocate", p);
}

void cuda_upload(struct wc_stream *s, void *dst, const void *host_src, size_t bytes) {
    if (!bytes || cuda_op_begin(s))
        return;
    /* from pageable memory the driver stages the data before returning: host_src may be
     * reused at once */
    cuda_stream_check(
        s,
        cuda_stream(s)->m->cu.memcpy_htod_async(dptr(dst), host_src, bytes, cuda_stream(s)->stream),
        "cuMemcpyHtoDAsync");
}

void cuda_download(struct wc_stream *s, void *host_dst, const void *src, size_t bytes) {
    if (!bytes || cuda_op_begin(s))
        return;
    /* host_dst holds the data once sync() returns (backend.h), as with any op */
    cuda_stream_check(
        s,
        cuda_stream(s)->m->cu.memcpy_dtoh_async(host_dst, dptr(src), bytes, cuda_stream(s)->stream),
        "cuMemcpyDtoHAsync");
}

void cuda_memset0(struct wc_stream *s, void *dst, size_t bytes) {
    if (!bytes || cuda_op_begin(s))
        return;
    cuda_stream_check(
        s, cuda_stream(s)->m->cu.memset_d8_async(dptr(dst), 0, bytes, cuda_stream(s)->stream),
        "cuMemsetD8Async");
}

/* A kernel fault shows up here, not at its launch (set WHISPERC_CUDA_SYNC=1 to find which). */
int cuda_sync(struct wc_stream *s) {
    if (cuda_op_begin(s))
        return s->err;
    cuda_stream_check(s, cuda_stream(s)->m->cu.stream_synchronize(cuda_stream(s)->stream),
                      "cuStreamSynchronize");
    return s->err;
}

/* Timing events (CU_EVENT_DEFAULT: with timing; a host waiting on one spins, as sync does). */
void cuda_timer_mark(struct wc_stream *s, int slot) {
    struct cuda_stream *cs = cuda_stream(s);
    const struct cuda_api *cu = &cs->m->cu;
    if (slot < 0 || slot >= WC_TIMER_SLOTS || cuda_op_begin(s))
        return;
    if (!cs->timer[slot] &&
        cuda_stream_check(s, cu->event_create(&cs->timer[slot], CU_EVENT_DEFAULT), "cuEventCreate"))
        return;
    cuda_stream_check(s, cu->event_record(cs->timer[slot], cs->stream), "cuEventRecord");
}

double cuda_timer_elapsed_ms(struct wc_stream *s, int a, int b) {
    struct cuda_stream *cs = cuda_stream(s);
    const struct cuda_api *cu = &cs->m->cu;
    float ms = 0;
    if (a < 0 || b < 0 || a >= WC_TIMER_SLOTS || b >= WC_TIMER_SLOTS || !cs->timer[a] ||
        !cs->timer[b] || cuda_op_begin(s))
        return NAN;
    /* both events are done after a sync; waiting on the later one keeps a misuse correct */
    if (cuda_stream_check(s, cu->event_synchronize(cs->timer[b]), "cuEventSynchronize") ||
        cuda_stream_check(s, cu->event_elapsed_time(&ms, cs->timer[a], cs->timer[b]),
                          "cuEventElapsedTime"))
        return NAN;
    return ms;
}

uint64_t cuda_scratch(struct wc_stream *s, int which, size_t bytes) {
    static const char *const what[CUDA_N_SCRATCH] = {"fp16 scratch", "token ids", "logit rules"};
    struct cuda_stream *cs = cuda_stream(s);
    struct cuda_scratch *sc = &cs->scratch[which];
    if (s->err)
        return 0;
    if (sc->bytes >= bytes)
        return sc->addr;
    if (sc->addr)
        arena_release(&cs->arena, sc->addr);
    *sc = (struct cuda_scratch){0, 0};
    char err[sizeof s->errmsg];
    if (arena_alloc(&cs->arena, bytes, &sc->addr, err, sizeof err)) {
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "cuda: no device memory for %zu MiB of %s: %s",
                       bytes >> 20, what[which], err);
        return 0;
    }
    sc->bytes = bytes;
    return sc->addr;
}
