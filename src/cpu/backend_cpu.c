/*
 * backend_cpu.c — the CPU reference backend: host memory, a thread pool per stream, OpenBLAS for
 * the large matrix products. Ops run synchronously on the issuing thread (plus the pool), so
 * sync() only reports the sticky error.
 *
 * OpenBLAS is switched to one thread: every op splits its work across the stream's own pool and
 * each task calls single-threaded sgemm, so `-t N` means N threads in total and results do not
 * depend on OpenBLAS's threading. This is process-wide (OpenBLAS has no per-call setting).
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"
#include "cpu/simd_x86.h"
#include "libwhisperc.h"
#include "util.h"

struct cpu_model {
    struct cpu_backend pub; /* first: wc_backend.impl points here */
    void **allocs;          /* every uploaded weight, freed with the backend */
    size_t n_allocs, cap;
};

void *cpu_alloc(size_t bytes) {
    void *p = NULL;
    if (bytes == 0)
        bytes = 64;
    bytes = (bytes + 63) & ~(size_t)63;
    if (posix_memalign(&p, 64, bytes) != 0)
        return NULL;
    return p;
}

static void *model_alloc(struct wc_backend *be, size_t bytes) {
    struct cpu_model *m = be->impl;
    if (m->n_allocs == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        void **a = realloc(m->allocs, cap * sizeof *a);
        if (!a)
            return NULL;
        m->allocs = a;
        m->cap = cap;
    }
    void *p = cpu_alloc(bytes);
    if (p)
        m->allocs[m->n_allocs++] = p;
    return p;
}

static void cpu_backend_free(struct wc_backend *be) {
    if (!be)
        return;
    struct cpu_model *m = be->impl;
    if (m) {
        for (size_t i = 0; i < m->n_allocs; i++)
            free(m->allocs[i]);
        free(m->allocs);
        free(m);
    }
    free(be);
}

static int cpu_upload_mat(struct wc_backend *be, struct wc_mat *out, const void *src,
                          enum wc_dtype src_dtype, int rows, int cols) {
    size_t bytes = cpu_mat_bytes(src_dtype, rows, cols);
    void *p = model_alloc(be, bytes);
    if (!p)
        return WHISPERC_ERR_NO_MEMORY;
    memcpy(p, src, bytes); /* the mapping is unaligned; the copy is 64-byte aligned */
    out->data = p;
    out->rows = rows;
    out->cols = cols;
    out->dtype = src_dtype;
    return 0;
}

static int cpu_upload_conv(struct wc_backend *be, struct wc_mat *out, const void *src,
                           enum wc_dtype src_dtype, int c_out, int c_in, int k_width) {
    size_t n = (size_t)c_out * (size_t)c_in * (size_t)k_width;
    float *tmp = malloc(n * sizeof(float));
    float *p = model_alloc(be, n * sizeof(float));
    if (!tmp || !p) {
        free(tmp);
        return WHISPERC_ERR_NO_MEMORY;
    }
    wc_to_f32(tmp, src, src_dtype == WC_F16, n);
    /* [c_out][c_in][k] -> [k][c_out][c_in] */
    for (int o = 0; o < c_out; o++)
        for (int i = 0; i < c_in; i++)
            for (int k = 0; k < k_width; k++)
                p[((size_t)k * c_out + o) * c_in + i] = tmp[((size_t)o * c_in + i) * k_width + k];
    free(tmp);
    out->data = p;
    out->rows = c_out;
    out->cols = c_in * k_width;
    out->dtype = WC_F32;
    return 0;
}

static int cpu_upload_f32(struct wc_backend *be, float **out, const void *src,
                          enum wc_dtype src_dtype, size_t n) {
    float *p = model_alloc(be, n * sizeof(float));
    if (!p)
        return WHISPERC_ERR_NO_MEMORY;
    wc_to_f32(p, src, src_dtype == WC_F16, n);
    *out = p;
    return 0;
}

// ---- streams

static void cpu_stream_free(struct wc_stream *s) {
    if (!s)
        return;
    struct cpu_stream *cs = s->impl;
    if (cs) {
        pool_free(cs->pool);
        for (int i = 0; cs->scratch && i < cs->n_threads; i++)
            free(cs->scratch[i].p);
        free(cs->scratch);
        free(cs);
    }
    free(s);
}

static int cpu_stream_set_threads(struct wc_stream *s, int n_threads) {
    struct cpu_stream *cs = s->impl;
    if (n_threads < 1)
        n_threads = 1;
    if (cs->pool && cs->n_threads == n_threads)
        return 0;
    struct pool *pool = NULL;
    struct cpu_scratch *scratch = calloc((size_t)n_threads, sizeof *scratch);
    int rc = scratch ? pool_new(n_threads, &pool) : WHISPERC_ERR_NO_MEMORY;
    if (rc) {
        free(scratch);
        return rc;
    }
    pool_free(cs->pool);
    for (int i = 0; cs->scratch && i < cs->n_threads; i++)
        free(cs->scratch[i].p);
    free(cs->scratch);
    cs->pool = pool;
    cs->scratch = scratch;
    cs->n_threads = n_threads;
    return 0;
}

/* flags: a background stream is a stream like any other (its ops run as they are issued) */
static int cpu_stream_new(struct wc_backend *be, int n_threads, int flags, struct wc_stream **out,
                          char *err, size_t err_size) {
    (void)flags;
    *out = NULL;
    struct wc_stream *s = calloc(1, sizeof *s);
    struct cpu_stream *cs = calloc(1, sizeof *cs);
    if (!s || !cs) {
        free(s);
        free(cs);
        wc_errf(err, err_size, "cpu: out of memory for a stream");
        return WHISPERC_ERR_NO_MEMORY;
    }
    s->be = be;
    s->impl = cs;
    for (int i = 0; i < WC_TIMER_SLOTS; i++)
        cs->timer_ms[i] = NAN;
    int rc = cpu_stream_set_threads(s, n_threads);
    if (rc) {
        wc_errf(err, err_size,
                rc == WHISPERC_ERR_NO_MEMORY ? "cpu: out of memory for %d threads"
                                             : "cpu: cannot start %d threads",
                n_threads);
        cpu_stream_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int cpu_scratch_reserve(struct wc_stream *s, size_t n) {
    struct cpu_stream *cs = s->impl;
    for (int i = 0; i < cs->n_threads; i++) {
        struct cpu_scratch *sc = &cs->scratch[i];
        if (sc->n >= n)
            continue;
        float *p = cpu_alloc(n * sizeof(float));
        if (!p) {
            wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "cpu: out of memory for %zu MB of scratch",
                           n * sizeof(float) >> 20);
            return s->err;
        }
        free(sc->p);
        sc->p = p;
        sc->n = n;
    }
    return 0;
}

static void *cpu_stream_alloc(struct wc_stream *s, size_t bytes) {
    if (s->err)
        return NULL;
    void *p = cpu_alloc(bytes);
    if (!p)
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "cpu: out of memory for %zu MB of activations",
                       bytes >> 20);
    return p;
}

static void cpu_release(struct wc_stream *s, void *p) {
    (void)s;
    free(p);
}

static void cpu_copy(struct wc_stream *s, void *dst, const void *src, size_t bytes) {
    if (!s->err && bytes)
        memcpy(dst, src, bytes);
}

static void cpu_memset0(struct wc_stream *s, void *dst, size_t bytes) {
    if (!s->err && bytes)
        memset(dst, 0, bytes);
}

static int cpu_sync(struct wc_stream *s) { return s->err; }

/* Ops have run when they return: a mark is the clock now, the CPU twin of a CUDA event. */
static void cpu_timer_mark(struct wc_stream *s, int slot) {
    if (slot >= 0 && slot < WC_TIMER_SLOTS)
        cpu_stream(s)->timer_ms[slot] = wc_now_ms();
}

static double cpu_timer_elapsed_ms(struct wc_stream *s, int a, int b) {
    if (s->err || a < 0 || b < 0 || a >= WC_TIMER_SLOTS || b >= WC_TIMER_SLOTS)
        return NAN;
    return cpu_stream(s)->timer_ms[b] - cpu_stream(s)->timer_ms[a];
}

static const struct wc_backend_ops cpu_ops = {
    .name = "cpu",
    .linear_exact_rows = CPU_GEMV_MAX_ROWS,
    .attention_exact_rows = CPU_ATT_MAX_STEP, /* one task per (head, query), as a gather's */
    /* OpenBLAS picks kernels and blocking by shape, so a row's sum is not promised to be the
     * same at 1500 and 12000 rows; 1500-row sgemm calls already keep every core busy. */
    .linear_merge_windows = 0,
    .host_cores_free = 0,
    .holds_quant = 1,
    .backend_free = cpu_backend_free,
    .upload_mat = cpu_upload_mat,
    .upload_conv = cpu_upload_conv,
    .upload_f32 = cpu_upload_f32,
    .stream_new = cpu_stream_new,
    .stream_free = cpu_stream_free,
    .stream_set_threads = cpu_stream_set_threads,
    .alloc = cpu_stream_alloc,
    .release = cpu_release,
    .upload = cpu_copy,
    .download = cpu_copy,
    .host_alloc = cpu_stream_alloc, /* the CPU's "device" memory is host memory */
    .host_free = cpu_release,
    .upload_async = cpu_copy,
    .memset0 = cpu_memset0,
    .sync = cpu_sync,
    .conv1d = cpu_conv1d,
    .layernorm = cpu_layernorm,
    .linear = cpu_linear,
    .attention = cpu_attention,
    .attention_windows = cpu_attention_windows,
    .attention_gather = cpu_attention_gather,
    .attention_rows = cpu_attention_rows,
    .attention_scores = cpu_attention_scores,
    .embed = cpu_embed,
    .rows_scatter = cpu_rows_scatter,
    .to_f16 = cpu_to_f16,
    .transpose = cpu_transpose,
    .logits_greedy = cpu_logits_greedy,
    .logits_topk = cpu_logits_topk,
    .logits_sample = cpu_logits_sample,
    .timer_mark = cpu_timer_mark,
    .timer_elapsed_ms = cpu_timer_elapsed_ms,
};

int cpu_backend_new(struct wc_backend **out, char *err, size_t err_size) {
    *out = NULL;
    struct wc_backend *be = calloc(1, sizeof *be);
    struct cpu_model *m = calloc(1, sizeof *m);
    if (!be || !m) {
        free(be);
        free(m);
        wc_errf(err, err_size, "cpu backend: out of memory");
        return WHISPERC_ERR_NO_MEMORY;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    m->pub.has_avx2_f16c =
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && wc_cpu_has_f16c();
#endif
    openblas_set_num_threads(1);
    be->ops = &cpu_ops;
    be->impl = m;
    be->cross_kv = wc_env_f16("WHISPERC_CROSS_KV", 0) ? WC_F16 : WC_F32;
    *out = be;
    return 0;
}
