/*
 * attention.c — multi-head attention, one task per (head, block of query rows): S = Q·Kᵀ/√d with
 * sgemm, a row softmax in place, then O = S·V with sgemm. A block's scores live in the thread's
 * scratch ([ATT_BLOCK][s_len]), so the full t×s matrix never exists.
 */
#include <cblas.h>
#include <math.h>

#include "cpu/cpu_internal.h"
#include "cpu/vecmath.h"

#define ATT_BLOCK 32

struct att_job {
    struct wc_stream *s;
    float *out;
    const float *q, *k, *v;
    int ld_kv, t_len, s_len, c, d, causal_pos0, n_blocks;
    float scale;
};

static void att_task(void *ctx, int task, int thread) {
    const struct att_job *j = ctx;
    int h = task / j->n_blocks, t0 = (task % j->n_blocks) * ATT_BLOCK;
    int bm = j->t_len - t0 < ATT_BLOCK ? j->t_len - t0 : ATT_BLOCK;
    float *S = cpu_stream(j->s)->scratch[thread].p;
    const float *q = j->q + (size_t)t0 * j->c + (size_t)h * j->d;
    const float *k = j->k + (size_t)h * j->d, *v = j->v + (size_t)h * j->d;
    /* causal: keys beyond the last query's position are never needed */
    int s_len = j->s_len;
    if (j->causal_pos0 >= 0 && j->causal_pos0 + t0 + bm < s_len)
        s_len = j->causal_pos0 + t0 + bm;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bm, s_len, j->d, j->scale, q, j->c, k,
                j->ld_kv, 0.0f, S, s_len);
    for (int t = 0; t < bm; t++) {
        int n = s_len;
        if (j->causal_pos0 >= 0 && j->causal_pos0 + t0 + t + 1 < n)
            n = j->causal_pos0 + t0 + t + 1;
        vm_softmax(S + (size_t)t * s_len, n, s_len);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bm, j->d, s_len, 1.0f, S, s_len, v,
                j->ld_kv, 0.0f, j->out + (size_t)t0 * j->c + (size_t)h * j->d, j->c);
}

void cpu_attention(struct wc_stream *s, float *out, const float *q, const float *k, const float *v,
                   int ld_kv, int t_len, int s_len, int c, int n_head, int causal_pos0) {
    if (s->err || t_len <= 0)
        return;
    if (cpu_scratch_reserve(s, (size_t)ATT_BLOCK * (size_t)s_len))
        return;
    struct att_job j = {
        .s = s,
        .out = out,
        .q = q,
        .k = k,
        .v = v,
        .ld_kv = ld_kv,
        .t_len = t_len,
        .s_len = s_len,
        .c = c,
        .d = c / n_head,
        .causal_pos0 = causal_pos0,
        .n_blocks = (t_len + ATT_BLOCK - 1) / ATT_BLOCK,
    };
    j.scale = 1.0f / sqrtf((float)j.d);
    pool_run(cpu_stream(s)->pool, att_task, &j, n_head * j.n_blocks);
}
