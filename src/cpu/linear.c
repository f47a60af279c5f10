/*
 * linear.c — out = act(in · Wᵀ + b), the op that holds most of the model's arithmetic.
 *
 * Two paths, split over output columns across the pool:
 * - many rows (encoder, prompt, cross-attention K/V): each task converts its slice of W to f32
 *   and calls single-threaded OpenBLAS sgemm, then applies bias and activation to its slice;
 * - few rows (one decoder step): matrix-vector products straight from the f16 weights with
 *   F16C, so every weight byte is read once per step and memory traffic is half of f32's
 *   (quantized blocks: quant_rows.c, the same sums from fewer bytes).
 */
#include <cblas.h>
#include <string.h>

#include "cpu/simd_x86.h"

#include "cpu/cpu_internal.h"
#include "cpu/vecmath.h"
#include "libwhisperc.h"
#include "util.h"

#define GEMV_TASK_COLS 64 /* output columns per matrix-vector task */

void cpu_gelu_inplace(float *x, size_t n) { vm_gelu(x, n); }

#ifdef WC_HAVE_X86_DISPATCH
__attribute__((target("avx2,fma,f16c"))) static void
f16_to_f32_avx2(float *dst, const uint16_t *src, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++)
        dst[i] = wc_f16_to_f32(src[i]);
}
#endif

static void f16_to_f32(int fast, float *dst, const uint16_t *src, size_t n) {
#ifdef WC_HAVE_X86_DISPATCH
    if (fast) {
        f16_to_f32_avx2(dst, src, n);
        return;
    }
#endif
    (void)fast;
    wc_to_f32(dst, src, 1, n);
}

static void mat_rows_f32(int fast, float *dst, const struct wc_mat *w, int r0, int r1) {
    size_t off = (size_t)r0 * (size_t)w->cols, n = (size_t)(r1 - r0) * (size_t)w->cols;
    if (w->dtype == WC_F16)
        f16_to_f32(fast, dst, (const uint16_t *)w->data + off, n);
    else if (w->dtype == WC_F32)
        memcpy(dst, (const float *)w->data + off, n * sizeof(float));
    else
        cpu_quant_rows_f32(fast, dst, w, r0, r1);
}

void cpu_mat_rows_f32(int fast, float *dst, const struct wc_mat *w, int r0, int r1) {
    mat_rows_f32(fast, dst, w, r0, r1);
}

struct linear_job {
    struct wc_stream *s;
    float *out;
    int ld_out;
    const float *in;
    const struct wc_mat *w;
    const float *b;
    int n_rows, chunk, n_out;
    enum wc_act act;
    int accumulate;
    int fast;
};

/* bias and activation on out[:, n0:n1] */
static void epilogue(const struct linear_job *j, int n0, int n1) {
    for (int t = 0; t < j->n_rows; t++) {
        float *o = j->out + (size_t)t * j->ld_out;
        if (j->b)
            for (int n = n0; n < n1; n++)
                o[n] += j->b[n];
        if (j->act == WC_ACT_GELU)
            cpu_gelu_inplace(o + n0, (size_t)(n1 - n0));
    }
}

static void gemm_task(void *ctx, int task, int thread) {
    const struct linear_job *j = ctx;
    int n0 = task * j->chunk, n1 = n0 + j->chunk < j->n_out ? n0 + j->chunk : j->n_out;
    int k = j->w->cols;
    const float *wf;
    if (j->w->dtype == WC_F32) {
        wf = (const float *)j->w->data + (size_t)n0 * k;
    } else {
        float *sc = cpu_stream(j->s)->scratch[thread].p;
        mat_rows_f32(j->fast, sc, j->w, n0, n1);
        wf = sc;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n_rows, n1 - n0, k, 1.0f, j->in, k, wf,
                k, j->accumulate ? 1.0f : 0.0f, j->out + n0, j->ld_out);
    epilogue(j, n0, n1);
}

#ifdef WC_HAVE_X86_DISPATCH
/* Single-row f16 dot with two accumulators: the decoder's common case. */
__attribute__((target("avx2,fma,f16c"))) static float dot1_f16(const uint16_t *w, const float *x,
                                                               int k) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    int i = 0;
    for (; i + 16 <= k; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i))),
                             _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i + 8))),
                             _mm256_loadu_ps(x + i + 8), a1);
    }
    for (; i < k; i += 8)
        a0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i))),
                             _mm256_loadu_ps(x + i), a0);
    return hsum256(_mm256_add_ps(a0, a1));
}

/* dots[t] = x[t] · w for up to 4 rows of x (k a multiple of 8), each row summed in exactly
 * dot1_f16's order: a row's result must not depend on how many rows share the call, so that
 * decoding sequences together (beams, batched files) gives each the bits it gets alone. */
__attribute__((target("avx2,fma,f16c"))) static void
dot4_f16(const uint16_t *w, const float *x, int ldx, int n_x, int k, float *dots) {
    __m256 a[4][2];
    for (int r = 0; r < 4; r++)
        a[r][0] = a[r][1] = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= k; i += 16) {
        __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i)));
        __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i + 8)));
        for (int r = 0; r < n_x; r++) {
            const float *xr = x + (size_t)r * ldx + i;
            a[r][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xr), a[r][0]);
            a[r][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xr + 8), a[r][1]);
        }
    }
    for (; i < k; i += 8) {
        __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i)));
        for (int r = 0; r < n_x; r++)
            a[r][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + (size_t)r * ldx + i), a[r][0]);
    }
    for (int r = 0; r < n_x; r++)
        dots[r] = hsum256(_mm256_add_ps(a[r][0], a[r][1]));
}

/* dots[t] = in[t] . wr for every input row t, wr one row of halves (k a multiple of 8). */
static void dots_f16(const struct linear_job *j, const uint16_t *wr, int k, float *dots) {
    if (j->n_rows == 1) {
        dots[0] = dot1_f16(wr, j->in, k);
        return;
    }
    for (int t = 0; t < j->n_rows; t += 4) {
        int nx = j->n_rows - t < 4 ? j->n_rows - t : 4;
        dot4_f16(wr, j->in + (size_t)t * k, k, nx, k, dots + t);
    }
}
#endif

static float dot_f32(const float *w, const float *x, int k) {
    float acc = 0.0f;
    for (int i = 0; i < k; i++)
        acc += w[i] * x[i];
    return acc;
}

/* dots[t] = in[t] . w[n] for every input row t; scratch holds one converted row if needed. */
static void row_dots(const struct linear_job *j, int n, float *scratch, float *dots) {
    int k = j->w->cols;
#ifdef WC_HAVE_X86_DISPATCH
    if (j->fast && j->w->dtype != WC_F16 && j->w->dtype != WC_F32) { /* k: whole blocks */
        if (j->n_rows == 1) {                                        /* decoded in registers */
            dots[0] = cpu_quant_dots(j->w, n, j->in);
            return;
        }
        uint16_t *h = (uint16_t *)scratch; /* decoded once, to the halves widening gives */
        cpu_quant_row_f16(j->w, n, h);
        dots_f16(j, h, k, dots);
        return;
    }
    if (j->fast && j->w->dtype == WC_F16 && k % 8 == 0) {
        dots_f16(j, (const uint16_t *)j->w->data + (size_t)n * k, k, dots);
        return;
    }
#endif
    const float *wf = (const float *)j->w->data + (size_t)n * k;
    if (j->w->dtype != WC_F32) {
        mat_rows_f32(0, scratch, j->w, n, n + 1);
        wf = scratch;
    }
    for (int t = 0; t < j->n_rows; t++)
        dots[t] = dot_f32(wf, j->in + (size_t)t * k, k);
}

static void gemv_task(void *ctx, int task, int thread) {
    const struct linear_job *j = ctx;
    int n0 = task * GEMV_TASK_COLS;
    int n1 = n0 + GEMV_TASK_COLS < j->n_out ? n0 + GEMV_TASK_COLS : j->n_out;
    float *scratch = cpu_stream(j->s)->scratch[thread].p;
    for (int n = n0; n < n1; n++) {
        float dots[CPU_GEMV_MAX_ROWS];
        row_dots(j, n, scratch, dots);
        for (int t = 0; t < j->n_rows; t++) {
            float *o = j->out + (size_t)t * j->ld_out + n;
            *o = j->accumulate ? *o + dots[t] : dots[t];
        }
    }
    epilogue(j, n0, n1);
}

void cpu_linear(struct wc_stream *s, float *out, int ld_out, const float *in,
                const struct wc_mat *w, const float *b, int n_rows, enum wc_act act,
                int accumulate) {
    if (s->err || n_rows <= 0)
        return;
    struct cpu_stream *cs = cpu_stream(s);
    struct linear_job j = {
        .s = s,
        .out = out,
        .ld_out = ld_out ? ld_out : w->rows,
        .in = in,
        .w = w,
        .b = b,
        .n_rows = n_rows,
        .n_out = w->rows,
        .act = act,
        .accumulate = accumulate,
        .fast = cpu_backend(s)->has_avx2_f16c,
    };
    if (n_rows <= CPU_GEMV_MAX_ROWS) {
        if (w->dtype != WC_F32 && cpu_scratch_reserve(s, (size_t)w->cols))
            return;
        pool_run(cs->pool, gemv_task, &j, (w->rows + GEMV_TASK_COLS - 1) / GEMV_TASK_COLS);
        return;
    }
    int n_tasks = cs->n_threads;
    j.chunk = (w->rows + n_tasks - 1) / n_tasks;
    j.chunk = (j.chunk + 15) / 16 * 16;
    n_tasks = (w->rows + j.chunk - 1) / j.chunk;
    if (w->dtype != WC_F32 && cpu_scratch_reserve(s, (size_t)j.chunk * (size_t)w->cols))
        return;
    pool_run(cs->pool, gemm_task, &j, n_tasks);
}
