/*
 * norm_embed.c — layer norm (row-parallel, statistics in double so the result does not depend
 * on the summation order) and the decoder's token + position embedding.
 */
#include <math.h>

#include "cpu/cpu_internal.h"
#include "libwhisperc.h"
#include "util.h"

#define LN_ROWS_PER_TASK 16

struct ln_job {
    float *out;
    const float *in, *g, *b;
    int n_rows, c;
};

static void ln_task(void *ctx, int task, int thread) {
    (void)thread;
    const struct ln_job *j = ctx;
    int r0 = task * LN_ROWS_PER_TASK;
    int r1 = r0 + LN_ROWS_PER_TASK < j->n_rows ? r0 + LN_ROWS_PER_TASK : j->n_rows;
    for (int r = r0; r < r1; r++) {
        const float *x = j->in + (size_t)r * j->c;
        float *y = j->out + (size_t)r * j->c;
        double sum = 0.0, sq = 0.0;
        for (int i = 0; i < j->c; i++)
            sum += x[i];
        double mean = sum / j->c;
        for (int i = 0; i < j->c; i++)
            sq += (x[i] - mean) * (x[i] - mean);
        float m = (float)mean, inv = (float)(1.0 / sqrt(sq / j->c + 1e-5));
        for (int i = 0; i < j->c; i++)
            y[i] = (x[i] - m) * inv * j->g[i] + j->b[i];
    }
}

void cpu_layernorm(struct wc_stream *s, float *out, const float *in, const float *g, const float *b,
                   int n_rows, int c) {
    if (s->err)
        return;
    struct ln_job j = {.out = out, .in = in, .g = g, .b = b, .n_rows = n_rows, .c = c};
    pool_run(cpu_stream(s)->pool, ln_task, &j, (n_rows + LN_ROWS_PER_TASK - 1) / LN_ROWS_PER_TASK);
}

void cpu_embed(struct wc_stream *s, float *out, const int32_t *tokens, const int32_t *positions,
               int t_len, const struct wc_mat *tok_emb, const float *pos_emb, int pos0, int c) {
    if (s->err)
        return;
    for (int t = 0; t < t_len; t++) {
        if (tokens[t] < 0 || tokens[t] >= tok_emb->rows) {
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: token id %d out of range",
                           tokens[t]);
            return;
        }
        int pos = positions ? positions[t] : pos0 + t;
        if (pos < 0) {
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: position %d out of range", pos);
            return;
        }
        float *o = out + (size_t)t * c;
        cpu_mat_rows_f32(cpu_backend(s)->has_avx2_f16c, o, tok_emb, tokens[t], tokens[t] + 1);
        const float *p = pos_emb + (size_t)pos * c;
        for (int i = 0; i < c; i++)
            o[i] += p[i];
    }
}
