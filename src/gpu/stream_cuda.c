/*
 * stream_cuda.c — the CUDA backend's streams: one CUstream, cuBLAS handle, activation arena
 * and pinned staging per state; copies and memsets queued on the stream; errors made sticky
 * (backend.h).
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
#define ACT_MIN_CHUNK   ((size_t)64 << 20)
/* Pinned staging to start with: a batch step's uploads (~15 KB for 8 rows) many times over. */
#define STAGE_MIN       ((size_t)256 << 10)
#define STAGE_ALIGN     64
/* Larger copies (an encoder's input, many rows' logits) go pageable, as the driver bounces
 * them through its own pinned buffers anyway; the staging grows to at most STAGE_MAX. A block
 * must hold the largest step's tables, or its graph is refused: 1,024 rows (CUDA_GRAPH_KEYS) of
 * a 448-token context as int32 slots, 1.8 MB (decoder_batch.c step_ops). */
#define STAGE_MAX_BLOCK ((size_t)2 << 20)
#define STAGE_MAX       ((size_t)8 << 20)

/* Without pinned memory (cuMemHostAlloc failing) copies go pageable and steps run plain until
 * a later sync's allocation succeeds (cuda_stage_done). */
void cuda_stage_init(struct cuda_stream *cs) {
    void *p = NULL;
    if (cs->m->cu.mem_host_alloc(&p, STAGE_MIN, 0) != CUDA_SUCCESS)
        return;
    cs->stage.host = p;
    cs->stage.bytes = STAGE_MIN;
}

void cuda_stage_free(struct cuda_stream *cs) {
    if (cs->stage.host)
        cs->m->cu.mem_free_host(cs->stage.host);
    free(cs->stage.defer);
    memset(&cs->stage, 0, sizeof cs->stage);
}

void *cuda_stage_take(struct cuda_stream *cs, size_t bytes) {
    struct cuda_staging *st = &cs->stage;
    if (bytes > STAGE_MAX_BLOCK)
        return NULL;
    size_t need = (bytes + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
    st->want += need;
    if (!st->host || need > st->bytes - st->used)
        return NULL;
    void *p = st->host + st->used;
    st->used += need;
    return p;
}

/* Remembers a download that landed in the staging; 0, or -1 when out of host memory. */
static int stage_defer(struct cuda_stream *cs, void *dst, const void *src, size_t bytes) {
    struct cuda_staging *st = &cs->stage;
    if (st->n_defer == st->cap_defer) {
        int cap = st->cap_defer ? 2 * st->cap_defer : 16;
        struct cuda_deferred *d = realloc(st->defer, (size_t)cap * sizeof *d);
        if (!d)
            return -1;
        st->defer = d, st->cap_defer = cap;
    }
    st->defer[st->n_defer++] = (struct cuda_deferred){dst, src, bytes};
    return 0;
}

void cuda_stage_done(struct wc_stream *s) {
    struct cuda_stream *cs = cuda_stream(s);
    struct cuda_staging *st = &cs->stage;
    for (int i = 0; !s->err && i < st->n_defer; i++)
        memcpy(st->defer[i].dst, st->defer[i].src, st->defer[i].bytes);
    st->n_defer = 0;
    size_t want = st->want < STAGE_MAX ? st->want : STAGE_MAX;
    st->used = st->want = 0;
    if (!st->host && want > 0 && want < STAGE_MIN) /* none yet: at least the first size */
        want = STAGE_MIN;
    if (want <= st->bytes || s->err)
        return;
    /* grow to what the last stretch between syncs asked for: the next one likely asks the same */
    size_t bytes = st->bytes ? st->bytes : STAGE_MIN;
    while (bytes < want)
        bytes *= 2;
    void *p = NULL;
    if (cs->m->cu.mem_host_alloc(&p, bytes, 0) != CUDA_SUCCESS)
        return;              /* keep what there is: the rest goes pageable, as before */
    cuda_graph_drop_all(cs); /* recordings copy from the old block */
    if (st->host)
        cs->m->cu.mem_free_host(st->host);
    st->host = p;
    st->bytes = bytes;
}

/* Errors of a kernel that ran (and spoil the context), reported by whatever call comes next. */
static bool kernel_fault(CUresult r) {
    return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED ||
           r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_ILLEGAL_INSTRUCTION ||
           r == CUDA_ERROR_INVALID_ADDRESS_SPACE || r == CUDA_ERROR_INVALID_PC ||
           r == CUDA_ERROR_HARDWARE_STACK_ERROR || r == CUDA_ERROR_ASSERT ||
           r == CUDA_ERROR_LAUNCH_TIMEOUT;
}

int cuda_stream_check(struct wc_stream *s, CUresult r, const char *what) {
    if (r == CUDA_SUCCESS)
        return 0;
    struct cuda_stream *cs = cuda_stream(s);
    char msg[sizeof s->errmsg];
    cuda_check(&cs->m->cu, r, what, msg, sizeof msg);
    if (kernel_fault(r) && cs->last_kernel && !cs->m->sync_each_op)
        wc_stream_fail(s, WHISPERC_ERR_DEVICE,
                       "cuda: %s; the last kernel queued was %s%s (WHISPERC_CUDA_SYNC=1 names the "
                       "one that failed)",
                       msg, cs->last_kernel,
                       cs->last_in_graph ? ", at the end of a step graph" : "");
    else /* out of memory as any: a caller may try less, or --device auto the CPU */
        wc_stream_fail(s,
                       kernel_fault(r)                 ? WHISPERC_ERR_DEVICE
                       : r == CUDA_ERROR_OUT_OF_MEMORY ? WHISPERC_ERR_NO_MEMORY
                                                       : WHISPERC_ERR_BACKEND,
                       "cuda: %s", msg);
    return s->err;
}

int cublas_stream_check(struct wc_stream *s, cublasStatus_t st, const char *what) {
    if (st == CUBLAS_STATUS_SUCCESS)
        return 0;
    struct cuda_stream *cs = cuda_stream(s);
    /* a kernel that faulted before the call spoils the context, and cuBLAS says only that its
     * own launch failed: the stream's error says which (and marks the device lost) */
    if (st == CUBLAS_STATUS_EXECUTION_FAILED || st == CUBLAS_STATUS_INTERNAL_ERROR) {
        CUresult r = cs->m->cu.stream_synchronize(cs->stream);
        if (kernel_fault(r))
            return cuda_stream_check(s, r, what);
    }
    char msg[sizeof s->errmsg];
    cublas_check(&cs->m->blas, st, what, msg, sizeof msg);
    wc_stream_fail(s,
                   st == CUBLAS_STATUS_ALLOC_FAILED ? WHISPERC_ERR_NO_MEMORY : WHISPERC_ERR_BACKEND,
                   "cuda: %s", msg);
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
    snprintf(what, sizeof what, "cuMemAlloc(%zu MiB)", mib_up(bytes));
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
        cuda_graph_drop_all(cs);
        if (cs->blas)
            cs->m->blas.destroy(cs->blas);
        cuda_lt_free(cs);
        for (int i = 0; i < WC_TIMER_SLOTS; i++)
            if (cs->timer[i])
                cu->event_destroy(cs->timer[i]);
        arena_free(&cs->arena);
        if (cs->stream)
            cu->stream_destroy(cs->stream);
        cuda_stage_free(cs);
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

/* *what: the call made, for its error */
static CUresult stream_create(const struct cuda_model *m, int flags, CUstream *out,
                              const char **what) {
    const struct cuda_api *cu = &m->cu;
    int least = 0, greatest = 0;
    *what = "cuStreamCreate";
    if (cu->ctx_get_stream_priority_range(&least, &greatest) != CUDA_SUCCESS)
        return cu->stream_create(out, CU_STREAM_NON_BLOCKING);
    *what = "cuStreamCreateWithPriority";
    return cu->stream_create_with_priority(out, CU_STREAM_NON_BLOCKING,
                                           flags & WC_STREAM_BACKGROUND ? least : greatest);
}

int cuda_stream_new(struct wc_backend *be, int n_threads, int flags, struct wc_stream **out,
                    char *err, size_t err_size) {
    (void)n_threads;
    *out = NULL;
    struct cuda_model *m = be->impl;
    struct wc_stream *s = calloc(1, sizeof *s);
    struct cuda_stream *cs = calloc(1, sizeof *cs);
    if (!s || !cs) {
        free(s);
        free(cs);
        wc_errf(err, err_size, "cuda: out of host memory for a stream");
        return WHISPERC_ERR_NO_MEMORY;
    }
    s->be = be;
    s->impl = cs;
    cs->m = m;
    cs->dep_launch = m->dep_launch;
    cs->chain = m->chain;
    /* attn_rows_tc (no phase form) takes the cross-attention over f16 K/V alone */
    bool rows_tc = m->rows_tc && be->cross_kv == WC_F16;
    cs->chain_blocks = m->chain == 2 && !rows_tc;
    if (m->chain == 2 && rows_tc)
        snprintf(
            cs->blocks_why, sizeof cs->blocks_why,
            "the cross-attention runs on tensor cores, WHISPERC_CUDA_ROWS=kvh for a warp a key");
    cs->chain_early = true;
    arena_init(
        &cs->arena,
        &(struct arena_chunk_ops){.alloc = cuda_chunk_alloc, .free = cuda_chunk_free, .ctx = m},
        ACT_MIN_CHUNK, 1);
    /* A non-blocking stream: no implicit sync with the legacy default stream that weight
     * uploads use (they finish before load returns). A state's stream takes the device's
     * highest priority and a background one its lowest: where both have work queued, the
     * state's latency-bound decoder steps get the SMs that free up first (running CTAs are
     * not preempted). */
    const char *what = "cuStreamCreate";
    CUresult r = cuda_op_begin(s) ? CUDA_SUCCESS : stream_create(m, flags, &cs->stream, &what);
    if (!s->err && !cuda_stream_check(s, r, what) &&
        !cublas_stream_check(s, m->blas.create(&cs->blas), "cublasCreate") &&
        !cublas_stream_check(s, m->blas.set_stream(cs->blas, cs->stream), "cublasSetStream"))
        /* fp16 inputs with fp32 accumulation use tensor cores in the default math mode;
         * CUBLAS_DEFAULT_MATH keeps cuBLAS from lowering fp32 GEMMs to TF32 behind our back */
        if (!cublas_stream_check(s, m->blas.set_math_mode(cs->blas, CUBLAS_DEFAULT_MATH),
                                 "cublasSetMathMode"))
            cuda_stage_init(cs);
    int rc = s->err;
    if (rc) {
        wc_errf(err, err_size, "%s", s->errmsg);
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
                       mib_up(bytes), mib_up(cs->arena.reserved), err);
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

/* Offset of a staging block in the signature of a graph pass; a pageable block is refused. */
static uint64_t stage_off(struct cuda_stream *cs, const void *h) {
    return h ? (uint64_t)((const unsigned char *)h - cs->stage.host) : UINT64_MAX;
}

void cuda_upload(struct wc_stream *s, void *dst, const void *host_src, size_t bytes) {
    if (!bytes || cuda_op_begin(s))
        return;
    struct cuda_stream *cs = cuda_stream(s);
    /* through the staging: an async copy from pinned memory (capturable); host_src may be
     * reused at once either way (from pageable memory the driver stages it before returning) */
    void *h = cuda_stage_take(cs, bytes);
    if (h)
        memcpy(h, host_src, bytes);
    else if (cuda_graph_refuse(cs, "an upload larger than the staging"))
        return;
    if (cuda_graph_note(cs, 1, dptr(dst) ^ bytes << 48, stage_off(cs, h)))
        return;
    cuda_stream_check(s,
                      cs->m->cu.memcpy_htod_async(dptr(dst), h ? h : host_src, bytes, cs->stream),
                      "cuMemcpyHtoDAsync");
}

/* A host block starts HOST_HEAD bytes into its allocation, after a tag that says how to free
 * it: page-locked (cuMemHostAlloc), or malloc'd where pinning failed (then upload_async's copy
 * is the driver's pageable one, which reads the bytes before it returns: still safe). */
#define HOST_HEAD 64

void *cuda_host_alloc(struct wc_stream *s, size_t bytes) {
    if (cuda_op_begin(s))
        return NULL;
    void *p = NULL;
    char tag = 'P';
    if (bytes <= SIZE_MAX - HOST_HEAD &&
        cuda_stream(s)->m->cu.mem_host_alloc(&p, bytes + HOST_HEAD, 0) != CUDA_SUCCESS) {
        p = malloc(bytes + HOST_HEAD);
        tag = 'M';
    }
    if (!p) {
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "cuda: out of host memory (%zu MiB)",
                       mib_up(bytes));
        return NULL;
    }
    *(char *)p = tag;
    return (char *)p + HOST_HEAD;
}

/* After an error too (cleanup paths); a copy still queued may be reading the block: the stream
 * is waited for first (at once when idle, as it is after a sync). */
void cuda_host_free(struct wc_stream *s, void *p) {
    if (!p)
        return;
    struct cuda_stream *cs = cuda_stream(s);
    char *block = (char *)p - HOST_HEAD;
    cs->m->cu.ctx_set_current(cs->m->ctx);
    if (cs->stream)
        cs->m->cu.stream_synchronize(cs->stream);
    if (*block == 'P')
        cs->m->cu.mem_free_host(block);
    else
        free(block);
}

void cuda_upload_async(struct wc_stream *s, void *dst, const void *host_src, size_t bytes) {
    if (!bytes || cuda_op_begin(s))
        return;
    struct cuda_stream *cs = cuda_stream(s);
    if (cuda_graph_refuse(cs, "an upload from host memory"))
        return;
    cuda_stream_check(s, cs->m->cu.memcpy_htod_async(dptr(dst), host_src, bytes, cs->stream),
                      "cuMemcpyHtoDAsync");
}

void cuda_download(struct wc_stream *s, void *host_dst, const void *src, size_t bytes) {
    if (!bytes || cuda_op_begin(s))
        return;
    struct cuda_stream *cs = cuda_stream(s);
    /* host_dst holds the data once sync() returns (backend.h), as with any op: a download
     * into the staging is copied there by the sync */
    void *h = cuda_stage_take(cs, bytes);
    if (h && stage_defer(cs, host_dst, h, bytes)) {
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "cuda: out of host memory");
        return;
    }
    if (!h && cuda_graph_refuse(cs, "a download larger than the staging"))
        return;
    if (cuda_graph_note(cs, 2, dptr(src) ^ bytes << 48, stage_off(cs, h)))
        return;
    cuda_stream_check(s,
                      cs->m->cu.memcpy_dtoh_async(h ? h : host_dst, dptr(src), bytes, cs->stream),
                      "cuMemcpyDtoHAsync");
}

uint64_t cuda_scratch_zeroed(struct wc_stream *s, int which, size_t bytes) {
    struct cuda_scratch *sc = &cuda_stream(s)->scratch[which];
    size_t had = sc->bytes;
    uint64_t addr = cuda_scratch(s, which, bytes);
    if (addr && sc->bytes != had) /* new memory */
        cuda_memset0(s, (void *)(uintptr_t)addr, sc->bytes);
    return addr;
}

void cuda_memset0(struct wc_stream *s, void *dst, size_t bytes) {
    if (!bytes || cuda_op_begin(s))
        return;
    struct cuda_stream *cs = cuda_stream(s);
    if (cuda_graph_note(cs, 3, dptr(dst), bytes))
        return;
    cuda_stream_check(s, cs->m->cu.memset_d8_async(dptr(dst), 0, bytes, cs->stream),
                      "cuMemsetD8Async");
}

/* A kernel fault shows up here, not at its launch (set WHISPERC_CUDA_SYNC=1 to find which).
 * After an error the work queued before it may still run (and use memory the caller is about
 * to hand on): it is waited for all the same. */
int cuda_sync(struct wc_stream *s) {
    struct cuda_stream *cs = cuda_stream(s);
    if (s->err) {
        if (cs->graphs.mode == CUDA_GRAPH_NONE &&
            cs->m->cu.ctx_set_current(cs->m->ctx) == CUDA_SUCCESS)
            cs->m->cu.stream_synchronize(cs->stream);
        return s->err;
    }
    if (cuda_op_begin(s))
        return s->err;
    if (cuda_graph_refuse(cs, "a sync")) /* waiting inside a step's recording: refused */
        return s->err;
    cuda_stream_check(s, cs->m->cu.stream_synchronize(cs->stream), "cuStreamSynchronize");
    cuda_stage_done(s);
    return s->err;
}

/* Timing events (CU_EVENT_DEFAULT: with timing; a host waiting on one spins, as sync does). */
void cuda_timer_mark(struct wc_stream *s, int slot) {
    struct cuda_stream *cs = cuda_stream(s);
    const struct cuda_api *cu = &cs->m->cu;
    if (slot < 0 || slot >= WC_TIMER_SLOTS || cuda_op_begin(s) ||
        cuda_graph_refuse(cs, "a timer mark"))
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
    static const char *const what[CUDA_N_SCRATCH] = {
        "fp16 scratch",   "token ids",          "logit rules",  "attention splits",
        "split counters", "cuBLASLt workspace", "chain counter"};
    struct cuda_stream *cs = cuda_stream(s);
    struct cuda_scratch *sc = &cs->scratch[which];
    if (s->err)
        return 0;
    if (sc->bytes >= bytes)
        return sc->addr;
    if (cuda_graph_refuse(cs, "a scratch buffer that grows"))
        return 0;
    if (sc->addr) {
        cuda_graph_drop_all(cs); /* recordings may use the old buffer */
        arena_release(&cs->arena, sc->addr);
    }
    *sc = (struct cuda_scratch){0, 0};
    char err[sizeof s->errmsg];
    if (arena_alloc(&cs->arena, bytes, &sc->addr, err, sizeof err)) {
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "cuda: no device memory for %zu MiB of %s: %s",
                       mib_up(bytes), what[which], err);
        return 0;
    }
    sc->bytes = (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; /* what the block holds */
    return sc->addr;
}
