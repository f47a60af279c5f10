/*
 * conv1d.c — the encoder's stems, Conv1d(k=3, padding=1) as three matrix products, one per tap:
 * out = Σ_k in[t*stride + k - 1] · W_kᵀ. The input's zero rows at -1 and t_in make the padding,
 * and a tap's input rows are `stride` rows apart, so each product reads `in` in place (lda =
 * stride * c_in) with no im2col copy.
 */
#include <cblas.h>

#include "cpu/cpu_internal.h"

struct conv_job {
    float *out;
    const float *in, *w, *b, *add;
    int c_in, c_out, t_out, stride, chunk;
    enum wc_act act;
};

static void conv_task(void *ctx, int task, int thread) {
    (void)thread;
    const struct conv_job *j = ctx;
    int o0 = task * j->chunk, o1 = o0 + j->chunk < j->c_out ? o0 + j->chunk : j->c_out;
    for (int k = 0; k < 3; k++) {
        const float *a = j->in + (ptrdiff_t)(k - 1) * j->c_in;
        const float *wk = j->w + ((size_t)k * j->c_out + (size_t)o0) * j->c_in;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->t_out, o1 - o0, j->c_in, 1.0f, a,
                    j->stride * j->c_in, wk, j->c_in, k ? 1.0f : 0.0f, j->out + o0, j->c_out);
    }
    for (int t = 0; t < j->t_out; t++) {
        float *o = j->out + (size_t)t * j->c_out;
        for (int n = o0; n < o1; n++)
            o[n] += j->b[n];
        if (j->act == WC_ACT_GELU)
            cpu_gelu_inplace(o + o0, (size_t)(o1 - o0));
        if (j->add)
            for (int n = o0; n < o1; n++)
                o[n] += j->add[(size_t)t * j->c_out + n];
    }
}

void cpu_conv1d(struct wc_stream *s, float *out, const float *in, const struct wc_mat *w,
                const float *b, const float *add, int c_in, int c_out, int t_in, int stride,
                enum wc_act act) {
    if (s->err)
        return;
    struct cpu_stream *cs = cpu_stream(s);
    struct conv_job j = {
        .out = out,
        .in = in,
        .w = w->data,
        .b = b,
        .add = add,
        .c_in = c_in,
        .c_out = c_out,
        .t_out = (t_in - 1) / stride + 1,
        .stride = stride,
        .act = act,
    };
    int n_tasks = cs->n_threads;
    j.chunk = ((c_out + n_tasks - 1) / n_tasks + 15) / 16 * 16;
    pool_run(cs->pool, conv_task, &j, (c_out + j.chunk - 1) / j.chunk);
}
