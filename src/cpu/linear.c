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

#define GEMV_TASK_COLS  64 /* output columns per matrix-vector task */
#define GEMV_BLOCK_COLS 8  /* weight rows whose dot products are taken together (L1-resident) */

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
/* The f16 dot products of R input rows (x, ldx floats apart) with C weight rows (w, k halves
 * apart), R <= 5 and C <= 4 constants where this is inlined, so that the 2 R C accumulators stay
 * in registers (a run-time count sends them to the stack, a store and a load per FMA).
 * dots[c * ldd + r] = x[r] · w[c], each pair summed in one fixed order, whatever R and C: two
 * accumulators of 8 lanes over steps of 16 (the first 8 values into the first), a last step of 8
 * into the first, then their sum's lanes (hsum256). A row's result must not depend on how many
 * rows share the call, so that decoding sequences together (beams, batched files) gives each
 * the bits it gets alone. k: a multiple of 8. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
dots_block_f16(const uint16_t *w, int k, const float *x, int ldx, float *dots, int ldd, const int R,
               const int C) {
    __m256 a[5][4][2];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            a[r][c][0] = a[r][c][1] = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= k; i += 16)
        for (int c = 0; c < C; c++) {
            const uint16_t *wc = w + (size_t)c * k + i;
            __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)wc));
            __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wc + 8)));
            for (int r = 0; r < R; r++) {
                const float *xr = x + (size_t)r * ldx + i;
                a[r][c][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xr), a[r][c][0]);
                a[r][c][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xr + 8), a[r][c][1]);
            }
        }
    for (; i < k; i += 8)
        for (int c = 0; c < C; c++) {
            __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + (size_t)c * k + i)));
            for (int r = 0; r < R; r++)
                a[r][c][0] =
                    _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + (size_t)r * ldx + i), a[r][c][0]);
        }
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            dots[c * ldd + r] = hsum256(_mm256_add_ps(a[r][c][0], a[r][c][1]));
}

/* dots_block_f16 over nc weight rows, CB at a time, for R input rows. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
dots_cols_f16(const uint16_t *w, int nc, int k, const float *x, float *dots, const int R,
              const int CB) {
    int c = 0;
    for (; c + CB <= nc; c += CB)
        dots_block_f16(w + (size_t)c * k, k, x, k, dots + c * CPU_GEMV_MAX_ROWS, CPU_GEMV_MAX_ROWS,
                       R, CB);
    for (; c < nc; c++)
        dots_block_f16(w + (size_t)c * k, k, x, k, dots + c * CPU_GEMV_MAX_ROWS, CPU_GEMV_MAX_ROWS,
                       R, 1);
}

/* dots[c * CPU_GEMV_MAX_ROWS + t] = in[t] · w[c] for every input row t (k floats apart) and
 * nc <= GEMV_BLOCK_COLS weight rows of halves: the rows four at a time (five where five are
 * left: beam search's default), the weight rows as many at a time as the 16 AVX2 registers hold
 * accumulators for. */
__attribute__((target("avx2,fma,f16c"))) static void
dots_f16(const uint16_t *w, int nc, int k, const float *in, int n_rows, float *dots) {
    for (int t = 0, g; t < n_rows; t += g) {
        const float *x = in + (size_t)t * k;
        float *d = dots + t;
        g = n_rows - t == 5 ? 5 : n_rows - t < 4 ? n_rows - t : 4;
        switch (g) {
        case 1: dots_cols_f16(w, nc, k, x, d, 1, 4); break;
        case 2: dots_cols_f16(w, nc, k, x, d, 2, 2); break;
        case 3: dots_cols_f16(w, nc, k, x, d, 3, 2); break;
        case 4: dots_cols_f16(w, nc, k, x, d, 4, 1); break;
        default: dots_cols_f16(w, nc, k, x, d, 5, 1); break;
        }
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
        dots_f16(h, 1, k, j->in, j->n_rows, dots);
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

/* out[t][n] (+)= dots[(n - n0) * CPU_GEMV_MAX_ROWS + t] for columns [n0, n1) */
static void gemv_store(const struct linear_job *j, int n0, int n1, const float *dots) {
    for (int n = n0; n < n1; n++)
        for (int t = 0; t < j->n_rows; t++) {
            float *o = j->out + (size_t)t * j->ld_out + n;
            float d = dots[(n - n0) * CPU_GEMV_MAX_ROWS + t];
            *o = j->accumulate ? *o + d : d;
        }
}

static void gemv_task(void *ctx, int task, int thread) {
    const struct linear_job *j = ctx;
    int n0 = task * GEMV_TASK_COLS;
    int n1 = n0 + GEMV_TASK_COLS < j->n_out ? n0 + GEMV_TASK_COLS : j->n_out;
    float *scratch = cpu_stream(j->s)->scratch[thread].p;
#ifdef WC_HAVE_X86_DISPATCH
    int k = j->w->cols;
    if (j->fast && j->w->dtype == WC_F16 && k % 8 == 0) { /* straight from the f16 rows */
        float dots[GEMV_BLOCK_COLS * CPU_GEMV_MAX_ROWS];
        for (int n = n0; n < n1; n += GEMV_BLOCK_COLS) {
            int nc = n1 - n < GEMV_BLOCK_COLS ? n1 - n : GEMV_BLOCK_COLS;
            dots_f16((const uint16_t *)j->w->data + (size_t)n * k, nc, k, j->in, j->n_rows, dots);
            gemv_store(j, n, n + nc, dots);
        }
        epilogue(j, n0, n1);
        return;
    }
#endif
    for (int n = n0; n < n1; n++) {
        float dots[CPU_GEMV_MAX_ROWS];
        row_dots(j, n, scratch, dots);
        gemv_store(j, n, n + 1, dots);
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
