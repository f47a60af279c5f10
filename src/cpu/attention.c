/*
 * attention.c — multi-head attention. Two paths:
 * - many queries (encoder, prompt): one task per (head, block of query rows): S = Q·Kᵀ/√d with
 *   sgemm, a row softmax in place, then O = S·V with sgemm. A block's scores live in the
 *   thread's scratch ([ATT_BLOCK][s_len]), so the full t×s matrix never exists;
 * - a decoder step (few queries): one task per (head, query), reading K and V once in place.
 *   sgemm would pack (copy) all of K and V for a single row, and the 1500-row cross-attention
 *   K/V are the largest thing a decoder step reads after the weights. Queries that read the
 *   same keys with no mask (beams or samples of one window) share a task, a group: each key and
 *   value row is loaded once for all of them, and every query keeps the sums it has alone.
 * f16 K/V (the batch decoder's cross-attention when the backend keeps them so) are widened per
 * task, a head's columns into the thread's scratch, and attended as f32 from there.
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "cpu/simd_x86.h"

#include "cpu/cpu_internal.h"
#include "cpu/vecmath.h"
#include "libwhisperc.h"
#include "util.h"

#define ATT_BLOCK      256  /* query rows per sgemm task */
#define ATT_GROUP      6    /* queries at most in a group: 2 accumulators each in 16 registers */
#define ATT_MAX_GROUPS 1024 /* more rows than this: a task per query */

struct att_job {
    struct wc_stream *s;
    float *out;
    const float *q;
    const void *k, *v;
    int kv_half;                /* k, v are f16 */
    const int32_t *slots;       /* gather: row j of query t is slots[t * ld_slots + j]; or NULL */
    const int32_t *n_kv_seq;    /* gather: query t sees n_kv_seq[t] keys; or NULL (s_len) */
    const int32_t *lane_of_row; /* rows: query t reads k, v + lane_of_row[t] * lane_stride */
    size_t lane_stride;
    int ld_kv, t_len, s_len, c, d, causal_pos0, n_blocks, ld_slots;
    float scale;
    int n_groups;              /* group_task: groups of queries, or 0 */
    const int16_t *group_from; /* [n_groups + 1]: group g is queries [from[g], from[g + 1]) */
};

/* The head's columns [off, off + d) of n f16 rows ld apart, widened into dst ([n][d]). */
static void widen_head(float *dst, const void *src, size_t off, int ld, int n, int d) {
    const uint16_t *p = (const uint16_t *)src + off;
    for (int r = 0; r < n; r++)
        wc_to_f32(dst + (size_t)r * d, p + (size_t)r * ld, 1, (size_t)d);
}

/* Head h's keys and values from element `base` on (rows ld_kv apart): in place when f32, else
 * widened into wk / wv (n rows of d) with *ld set to d. */
static void head_kv(const struct att_job *j, size_t base, int h, int n, float *wk, float *wv,
                    const float **k, const float **v, int *ld) {
    size_t off = base + (size_t)h * j->d;
    if (!j->kv_half) {
        *k = (const float *)j->k + off, *v = (const float *)j->v + off, *ld = j->ld_kv;
        return;
    }
    widen_head(wk, j->k, off, j->ld_kv, n, j->d);
    widen_head(wv, j->v, off, j->ld_kv, n, j->d);
    *k = wk, *v = wv, *ld = j->d;
}

static void att_task(void *ctx, int task, int thread) {
    const struct att_job *j = ctx;
    int h = task / j->n_blocks, t0 = (task % j->n_blocks) * ATT_BLOCK;
    int bm = j->t_len - t0 < ATT_BLOCK ? j->t_len - t0 : ATT_BLOCK;
    float *S = cpu_stream(j->s)->scratch[thread].p;
    const float *q = j->q + (size_t)t0 * j->c + (size_t)h * j->d;
    /* causal: keys beyond the last query's position are never needed */
    int s_len = j->s_len;
    if (j->causal_pos0 >= 0 && j->causal_pos0 + t0 + bm < s_len)
        s_len = j->causal_pos0 + t0 + bm;
    const float *k, *v;
    int ld;
    float *wk = j->kv_half ? S + (size_t)ATT_BLOCK * j->s_len : NULL;
    head_kv(j, 0, h, s_len, wk, wk ? wk + (size_t)j->s_len * j->d : NULL, &k, &v, &ld);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bm, s_len, j->d, j->scale, q, j->c, k, ld,
                0.0f, S, s_len);
    for (int t = 0; t < bm; t++) {
        int n = s_len;
        if (j->causal_pos0 >= 0 && j->causal_pos0 + t0 + t + 1 < n)
            n = j->causal_pos0 + t0 + t + 1;
        vm_softmax(S + (size_t)t * s_len, n, s_len);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bm, j->d, s_len, 1.0f, S, s_len, v, ld,
                0.0f, j->out + (size_t)t0 * j->c + (size_t)h * j->d, j->c);
}

#ifdef WC_HAVE_X86_DISPATCH
/* scores[j] = scale * q . k[row(j)*ld : +d] for j < n, row(j) = rows ? rows[j] : j;
 * d a multiple of 8 */
__attribute__((target("avx2,fma"))) static void dots_avx2(float *scores, const float *q,
                                                          const float *k, const int32_t *rows,
                                                          int ld, int n, int d, float scale) {
    for (int j = 0; j < n; j++) {
        const float *kj = k + (size_t)(rows ? rows[j] : j) * ld;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0;
        int i = 0;
        for (; i + 16 <= d; i += 16) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(kj + i), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(kj + i + 8), a1);
        }
        for (; i < d; i += 8)
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(kj + i), a0);
        scores[j] = scale * hsum256(_mm256_add_ps(a0, a1));
    }
}
#endif

static void dots(int fast, float *scores, const float *q, const float *k, const int32_t *rows,
                 int ld, int n, int d, float scale) {
#ifdef WC_HAVE_X86_DISPATCH
    if (fast && d % 8 == 0) {
        dots_avx2(scores, q, k, rows, ld, n, d, scale);
        return;
    }
#endif
    (void)fast;
    for (int j = 0; j < n; j++) {
        const float *kj = k + (size_t)(rows ? rows[j] : j) * ld;
        float acc = 0.0f;
        for (int i = 0; i < d; i++)
            acc += q[i] * kj[i];
        scores[j] = scale * acc;
    }
}

#define ATT_MAX_D 256 /* head width the in-place path keeps on the stack */

#ifdef WC_HAVE_X86_DISPATCH
/* acc[i] += p[r] * v[row(r)*ld + i] for r < n in order, i < d (d a multiple of 64, <=
 * ATT_MAX_D), a multiply then an add as the plain loop (the same bits): 64 columns at a time
 * in 8 registers, which the plain loop (4 wide, its accumulators in memory) does not manage. */
__attribute__((target("avx2,fma"))) static void
weigh_avx2(float *acc, const float *p, const float *v, const int32_t *rows, int ld, int n, int d) {
    for (int i0 = 0; i0 < d; i0 += 64) {
        __m256 a[8];
        for (int u = 0; u < 8; u++)
            a[u] = _mm256_loadu_ps(acc + i0 + 8 * u);
        for (int r = 0; r < n; r++) {
            const float *vr = v + (size_t)(rows ? rows[r] : r) * ld + i0;
            __m256 pr = _mm256_set1_ps(p[r]);
            for (int u = 0; u < 8; u++)
                a[u] = _mm256_add_ps(a[u], _mm256_mul_ps(pr, _mm256_loadu_ps(vr + 8 * u)));
        }
        for (int u = 0; u < 8; u++)
            _mm256_storeu_ps(acc + i0 + 8 * u, a[u]);
    }
}
#endif

/* acc[i] += sum_r p[r] * v[row(r)*ld + i], r in order (acc zeroed by the caller) */
static void weigh(int fast, float *acc, const float *p, const float *v, const int32_t *rows, int ld,
                  int n, int d) {
#ifdef WC_HAVE_X86_DISPATCH
    if (fast && d % 64 == 0) {
        weigh_avx2(acc, p, v, rows, ld, n, d);
        return;
    }
#endif
    (void)fast;
    for (int r = 0; r < n; r++) {
        const float *vr = v + (size_t)(rows ? rows[r] : r) * ld;
        for (int i = 0; i < d; i++) /* vectorizes: independent per i */
            acc[i] += p[r] * vr[i];
    }
}

#ifdef WC_HAVE_X86_DISPATCH
/* scores[r * n + j] = scale * q_r · k_j for the R queries q_r (ldq floats apart), j < n: each
 * sum as dots_avx2 forms it, each key row loaded once for all R. R <= ATT_GROUP, a constant where
 * this is inlined (its 2 R accumulators in registers). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
dots_group_avx2(float *scores, const float *q, int ldq, const float *k, int ld, int n, int d,
                float scale, const int R) {
    for (int j = 0; j < n; j++) {
        const float *kj = k + (size_t)j * ld;
        __m256 a[ATT_GROUP][2];
        for (int r = 0; r < R; r++)
            a[r][0] = a[r][1] = _mm256_setzero_ps();
        int i = 0;
        for (; i + 16 <= d; i += 16) {
            __m256 k0 = _mm256_loadu_ps(kj + i), k1 = _mm256_loadu_ps(kj + i + 8);
            for (int r = 0; r < R; r++) {
                const float *qr = q + (size_t)r * ldq + i;
                a[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(qr), k0, a[r][0]);
                a[r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(qr + 8), k1, a[r][1]);
            }
        }
        for (; i < d; i += 8) {
            __m256 k0 = _mm256_loadu_ps(kj + i);
            for (int r = 0; r < R; r++)
                a[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(q + (size_t)r * ldq + i), k0, a[r][0]);
        }
        for (int r = 0; r < R; r++)
            scores[(size_t)r * n + j] = scale * hsum256(_mm256_add_ps(a[r][0], a[r][1]));
    }
}

/* acc[r * ATT_MAX_D + i] += sum_j p[r * n + j] * v_j[i], j in order, for the R queries: each
 * element as weigh_avx2 forms it (a multiply then an add), each value row loaded once for all
 * R, 16 columns a pass (d a multiple of 64). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
weigh_group_avx2(float *acc, const float *p, const float *v, int ld, int n, int d, const int R) {
    for (int i0 = 0; i0 < d; i0 += 16) {
        __m256 a[ATT_GROUP][2];
        for (int r = 0; r < R; r++) {
            a[r][0] = _mm256_loadu_ps(acc + r * ATT_MAX_D + i0);
            a[r][1] = _mm256_loadu_ps(acc + r * ATT_MAX_D + i0 + 8);
        }
        for (int j = 0; j < n; j++) {
            const float *vj = v + (size_t)j * ld + i0;
            __m256 v0 = _mm256_loadu_ps(vj), v1 = _mm256_loadu_ps(vj + 8);
            for (int r = 0; r < R; r++) {
                __m256 pr = _mm256_set1_ps(p[(size_t)r * n + j]);
                a[r][0] = _mm256_add_ps(a[r][0], _mm256_mul_ps(pr, v0));
                a[r][1] = _mm256_add_ps(a[r][1], _mm256_mul_ps(pr, v1));
            }
        }
        for (int r = 0; r < R; r++) {
            _mm256_storeu_ps(acc + r * ATT_MAX_D + i0, a[r][0]);
            _mm256_storeu_ps(acc + r * ATT_MAX_D + i0 + 8, a[r][1]);
        }
    }
}

/* Scores then weighted values of R grouped queries (the softmax between, per query). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
group_avx2(float *acc, float *p, const float *q, int ldq, const float *k, const float *v, int ld,
           int n, int d, float scale, const int R) {
    dots_group_avx2(p, q, ldq, k, ld, n, d, scale, R);
    for (int r = 0; r < R; r++)
        vm_softmax(p + (size_t)r * n, n, n);
    weigh_group_avx2(acc, p, v, ld, n, d, R);
}

__attribute__((target("avx2,fma"))) static void group_run(float *acc, float *p, const float *q,
                                                          int ldq, const float *k, const float *v,
                                                          int ld, int n, int d, float scale,
                                                          int nr) {
    switch (nr) { /* 1 <= nr <= ATT_GROUP: a split's last group may hold one query */
    case 1: group_avx2(acc, p, q, ldq, k, v, ld, n, d, scale, 1); break;
    case 2: group_avx2(acc, p, q, ldq, k, v, ld, n, d, scale, 2); break;
    case 3: group_avx2(acc, p, q, ldq, k, v, ld, n, d, scale, 3); break;
    case 4: group_avx2(acc, p, q, ldq, k, v, ld, n, d, scale, 4); break;
    case 5: group_avx2(acc, p, q, ldq, k, v, ld, n, d, scale, 5); break;
    default: group_avx2(acc, p, q, ldq, k, v, ld, n, d, scale, 6); break;
    }
}

/* Head h of query group g (no mask, no slots, one lane): step_task's work for each query, the
 * head's keys and values read once for the group (and widened once when f16). */
static void group_task(void *ctx, int task, int thread) {
    const struct att_job *j = ctx;
    int h = task / j->n_groups, g = task % j->n_groups;
    int t0 = j->group_from[g], nr = j->group_from[g + 1] - t0, n = j->s_len;
    float *p = cpu_stream(j->s)->scratch[thread].p; /* [nr][n] scores, then widened K/V */
    size_t lane = j->lane_of_row ? (size_t)j->lane_of_row[t0] * j->lane_stride : 0;
    const float *k, *v;
    int ld;
    float *wk = j->kv_half ? p + (size_t)ATT_GROUP * n : NULL;
    head_kv(j, lane, h, n, wk, wk ? wk + (size_t)n * j->d : NULL, &k, &v, &ld);
    float acc[ATT_GROUP * ATT_MAX_D];
    memset(acc, 0, (size_t)nr * ATT_MAX_D * sizeof(float)); /* the rows the group uses */
    group_run(acc, p, j->q + (size_t)t0 * j->c + (size_t)h * j->d, j->c, k, v, ld, n, j->d,
              j->scale, nr);
    for (int r = 0; r < nr; r++)
        memcpy(j->out + (size_t)(t0 + r) * j->c + (size_t)h * j->d, acc + r * ATT_MAX_D,
               (size_t)j->d * sizeof(float));
}
#endif

static void step_task(void *ctx, int task, int thread) {
    const struct att_job *j = ctx;
    int h = task / j->t_len, t = task % j->t_len;
    float *p = cpu_stream(j->s)->scratch[thread].p;
    int n = j->n_kv_seq ? j->n_kv_seq[t] : j->s_len;
    if (j->causal_pos0 >= 0 && j->causal_pos0 + t + 1 < n)
        n = j->causal_pos0 + t + 1;
    size_t lane = j->lane_of_row ? (size_t)j->lane_of_row[t] * j->lane_stride : 0;
    const float *k, *v;
    int ld; /* f16 K/V (never gathered) widened after the scores' n floats */
    float *wk = j->kv_half ? p + n : NULL;
    head_kv(j, lane, h, n, wk, wk ? wk + (size_t)n * j->d : NULL, &k, &v, &ld);
    const int32_t *rows = j->slots ? j->slots + (size_t)t * j->ld_slots : NULL;
    int fast = cpu_backend(j->s)->has_avx2_f16c;
    dots(fast, p, j->q + (size_t)t * j->c + (size_t)h * j->d, k, rows, ld, n, j->d, j->scale);
    vm_softmax(p, n, n);
    float acc[ATT_MAX_D];
    memset(acc, 0, (size_t)j->d * sizeof(float));
    weigh(fast, acc, p, v, rows, ld, n, j->d);
    memcpy(j->out + (size_t)t * j->c + (size_t)h * j->d, acc, (size_t)j->d * sizeof(float));
}

static struct att_job make_job(struct wc_stream *s, float *out, const float *q, const void *k,
                               const void *v, enum wc_dtype kv_dtype, int ld_kv, int t_len,
                               int s_len, int c, int n_head, int causal_pos0) {
    struct att_job j = {
        .s = s,
        .out = out,
        .q = q,
        .k = k,
        .v = v,
        .kv_half = kv_dtype == WC_F16,
        .ld_kv = ld_kv,
        .t_len = t_len,
        .s_len = s_len,
        .c = c,
        .d = c / n_head,
        .causal_pos0 = causal_pos0,
        .n_blocks = (t_len + ATT_BLOCK - 1) / ATT_BLOCK,
    };
    j.scale = 1.0f / sqrtf((float)j.d);
    return j;
}

/* Splits the t_len queries into groups that read the same keys (the same lane, or all of them
 * without lanes; group_task's preconditions: no mask, no slots, AVX2, d a multiple of 64), as
 * long as every thread keeps two tasks or more; from[] receives the bounds. Returns the count
 * of groups, or 0 where a task per query is better (or the only way). */
static int make_groups(struct wc_stream *s, const struct att_job *j, int16_t *from, int n_head) {
#ifdef WC_HAVE_X86_DISPATCH
    if (!cpu_backend(s)->has_avx2_f16c || j->d % 64 != 0 || j->causal_pos0 >= 0 || j->slots ||
        j->n_kv_seq || j->t_len < 2 || j->t_len > ATT_MAX_GROUPS)
        return 0;
    /* queries per group: at most ATT_GROUP, and few enough that each thread has two tasks */
    int cap = j->t_len * n_head / (2 * cpu_stream(s)->n_threads);
    cap = cap < ATT_GROUP ? cap : ATT_GROUP;
    if (cap < 2)
        return 0;
    int n = 0;
    from[0] = 0;
    for (int t = 1; t <= j->t_len; t++)
        if (t == j->t_len || t - from[n] == cap ||
            (j->lane_of_row && j->lane_of_row[t] != j->lane_of_row[from[n]]))
            from[++n] = (int16_t)t;
    return n < j->t_len ? n : 0;
#else
    (void)s, (void)j, (void)from, (void)n_head;
    return 0;
#endif
}

/* The step path's tasks: a task per (head, group) where queries share their keys, else per
 * (head, query). */
static void run_step(struct wc_stream *s, struct att_job *j, int n_head) {
    int16_t from[ATT_MAX_GROUPS + 1];
    j->n_groups = make_groups(s, j, from, n_head);
#ifdef WC_HAVE_X86_DISPATCH
    if (j->n_groups) {
        j->group_from = from;
        pool_run(cpu_stream(s)->pool, group_task, j, n_head * j->n_groups);
        return;
    }
#endif
    pool_run(cpu_stream(s)->pool, step_task, j, n_head * j->t_len);
}

/* Thread scratch in floats for n_scores scores and, with f16 K/V, a head's s_len keys and values
 * widened. */
static size_t scratch_floats(enum wc_dtype kv_dtype, size_t n_scores, int s_len, int c,
                             int n_head) {
    return n_scores + (kv_dtype == WC_F16 ? 2 * (size_t)s_len * (size_t)(c / n_head) : 0);
}

void cpu_attention(struct wc_stream *s, float *out, const float *q, const void *k, const void *v,
                   enum wc_dtype kv_dtype, int ld_kv, int t_len, int s_len, int c, int n_head,
                   int causal_pos0) {
    if (s->err || t_len <= 0)
        return;
    if (kv_dtype == WC_F16 && causal_pos0 >= 0) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "attention: f16 keys under a causal mask");
        return;
    }
    size_t n_scores = (size_t)ATT_BLOCK * (size_t)s_len; /* >= ATT_GROUP queries' */
    if (cpu_scratch_reserve(s, scratch_floats(kv_dtype, n_scores, s_len, c, n_head)))
        return;
    struct att_job j =
        make_job(s, out, q, k, v, kv_dtype, ld_kv, t_len, s_len, c, n_head, causal_pos0);
    if (t_len <= CPU_ATT_MAX_STEP && j.d <= ATT_MAX_D) {
        run_step(s, &j, n_head);
        return;
    }
    pool_run(cpu_stream(s)->pool, att_task, &j, n_head * j.n_blocks);
}

void cpu_attention_windows(struct wc_stream *s, float *out, const float *q, const float *k,
                           const float *v, int n_win, int t_len, int c, int n_head) {
    for (int i = 0; i < n_win; i++) {
        size_t o = (size_t)i * (size_t)t_len * (size_t)c;
        cpu_attention(s, out + o, q + o, k + o, v + o, WC_F32, c, t_len, t_len, c, n_head, -1);
    }
}

/* Fails the stream unless the in-place path (step_task) can take heads of c / n_head. */
static int step_head_ok(struct wc_stream *s, int c, int n_head) {
    if (c / n_head <= ATT_MAX_D)
        return 1;
    wc_stream_fail(s, WHISPERC_ERR_UNSUPPORTED, "attention: head width %d > %d", c / n_head,
                   ATT_MAX_D);
    return 0;
}

void cpu_attention_gather(struct wc_stream *s, float *out, const float *q, const float *k,
                          const float *v, const int32_t *slots, int ld_slots,
                          const int32_t *n_kv_seq, int n_seq, int n_kv, int c, int n_head) {
    if (s->err || n_seq <= 0 || !step_head_ok(s, c, n_head))
        return;
    for (int g = 0; n_kv_seq && g < n_seq; g++)
        if (n_kv_seq[g] < 1 || n_kv_seq[g] > n_kv) {
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                           "attention_gather: sequence %d has %d keys (1 to %d)", g, n_kv_seq[g],
                           n_kv);
            return;
        }
    if (cpu_scratch_reserve(s, (size_t)n_kv))
        return;
    struct att_job j = make_job(s, out, q, k, v, WC_F32, c, n_seq, n_kv, c, n_head, -1);
    j.slots = slots;
    j.ld_slots = ld_slots;
    j.n_kv_seq = n_kv_seq;
    pool_run(cpu_stream(s)->pool, step_task, &j, n_head * n_seq);
}

/* Each row is cpu_attention's t_len = 1 case (step_task) over its lane's K/V, so it has the
 * bits that call gives it. */
void cpu_attention_rows(struct wc_stream *s, float *out, const float *q, const void *k,
                        const void *v, enum wc_dtype kv_dtype, int ld_kv, size_t lane_stride,
                        const int32_t *lane_of_row, int n_rows, int s_len, int c, int n_head) {
    if (s->err || n_rows <= 0 || !step_head_ok(s, c, n_head))
        return;
    size_t n_scores = (size_t)ATT_GROUP * (size_t)s_len;
    if (cpu_scratch_reserve(s, scratch_floats(kv_dtype, n_scores, s_len, c, n_head)))
        return;
    struct att_job j = make_job(s, out, q, k, v, kv_dtype, ld_kv, n_rows, s_len, c, n_head, -1);
    j.lane_of_row = lane_of_row;
    j.lane_stride = lane_stride;
    run_step(s, &j, n_head);
}

void cpu_attention_scores(struct wc_stream *s, float *out, const float *q, const void *k,
                          enum wc_dtype k_dtype, int ld_k, int t_len, int s_len, int c, int n_head,
                          int head) {
    if (s->err || t_len <= 0 || s_len <= 0)
        return;
    if (head < 0 || head >= n_head) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "attention scores: head %d of %d", head,
                       n_head);
        return;
    }
    int d = c / n_head;
    const float *kh = (const float *)k + (size_t)head * d;
    int ld = ld_k;
    if (k_dtype == WC_F16) { /* the head's keys widened into the first thread's scratch */
        if (cpu_scratch_reserve(s, (size_t)s_len * d))
            return;
        float *w = cpu_stream(s)->scratch[0].p;
        for (int j = 0; j < s_len; j++)
            wc_to_f32(w + (size_t)j * d, (const uint16_t *)k + (size_t)j * ld_k + (size_t)head * d,
                      1, (size_t)d);
        kh = w, ld = d;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t_len, s_len, d, 1.0f / sqrtf((float)d),
                q + (size_t)head * d, c, kh, ld, 0.0f, out, s_len);
}
