/*
 * chain_cuda.c — backend.h's linear_chain on the GPU: a decoder step's projections that follow
 * one another (an output projection, then the next norm and projection; the MLP's two) as one
 * cooperative gemv_chain kernel (src/kernels/gemv_chain.c), a grid barrier where a kernel
 * boundary was. Each output keeps the bits of the gemv_tc launch it replaces, so the chain is
 * a choice of launches, not of results (WHISPERC_CUDA_CHAIN=1).
 */
#include <stdint.h>
#include <stdio.h>

#include "gpu/cuda_internal.h"
#include "kernels/kernels.h"
#include "libwhisperc.h"

#define CHAIN_ROWS 8 /* one row tile: gemv_chain_n1 */

/* gemv_tc's flags for a link; -1 where the link is not one gemv_tc does alone */
static int link_flags(const struct wc_chain_link *l) {
    if (l->dst_row) /* norm_qkv: the norm and nothing else, q's and v's bias are passed */
        return l->g && l->lb && !l->accumulate && l->act == WC_ACT_NONE && !l->ld_out
                   ? KERNEL_GEMV_QKV | KERNEL_GEMV_NORM
                   : -1;
    return (l->b[0] ? KERNEL_GEMV_BIAS : 0) | (l->act == WC_ACT_GELU ? KERNEL_GEMV_GELU : 0) |
           (l->accumulate ? KERNEL_GEMV_ACCUMULATE : 0) | (l->g ? KERNEL_GEMV_NORM : 0);
}

/* Whether every link checks out for one kernel of K = links[0]'s (1), declines (0) or failed
 * the stream (-1); the kernel cache's (b, c) for it. */
static int chain_shape(struct wc_stream *s, const struct wc_chain_link *links, int n_links,
                       int n_rows, int *kb, int *kc) {
    int k_in = links[0].w[0]->cols;
    *kb = n_links, *kc = 0;
    for (int i = 0; i < n_links; i++) {
        const struct wc_chain_link *l = &links[i];
        int flags = link_flags(l), n_w = l->dst_row ? 3 : 1;
        if (flags < 0 || (l->g != NULL) != (l->lb != NULL))
            return 0;
        for (int j = 0; j < n_w; j++) {
            int ld = l->ld_out ? l->ld_out : l->w[j]->rows;
            if (!cuda_gemv_args_ok(s, "linear_chain", ld, l->w[j], n_rows, l->act, l->accumulate))
                return -1;
            int tc = cuda_use_gemv_tc(s, l->w[j], l->in, l->g, l->lb);
            if (tc <= 0)
                return tc;
        }
        int cols = l->w[0]->cols;
        if ((cols != k_in && cols != 4 * k_in) ||
            ((flags & KERNEL_GEMV_NORM) && !kernel_gemv_norm_fits(cols)) ||
            (l->dst_row &&
             (l->w[0]->rows != cols || l->w[1]->rows != cols || l->w[2]->rows != cols ||
              l->w[1]->cols != cols || l->w[2]->cols != cols)))
            return 0;
        *kb |= (cols != k_in) << (4 + i);
        *kc |= flags << (5 * i);
    }
    return 1;
}

int cuda_linear_chain(struct wc_stream *s, const struct wc_chain_link *links, int n_links,
                      int n_rows) {
    struct cuda_stream *cs = cuda_stream(s);
    if (cuda_op_begin(s) || n_rows <= 0)
        return 0;
    if (!cs->chain || n_rows > CHAIN_ROWS || n_links < 1 || n_links > KERNEL_CHAIN_MAX_LINKS)
        return 1;
    int kb, kc, ok = chain_shape(s, links, n_links, n_rows, &kb, &kc);
    if (ok <= 0)
        return ok < 0 ? 0 : 1;
    const struct cuda_kernel *k = NULL;
    char err[sizeof cs->chain_why - 8];
    if (cuda_kernel_find(cs->m, CK_CHAIN, links[0].w[0]->cols, kb, kc, &k, err, sizeof err)) {
        cs->chain = false; /* the links one by one do the same work */
        snprintf(cs->chain_why, sizeof cs->chain_why, "off: %s", err);
        return 1;
    }
    uint64_t counter = cuda_scratch_zeroed(s, CUDA_SCRATCH_CHAIN, 4); /* each launch leaves 0 */
    if (!counter)
        return 0;

    /* the kernel's parameters: the counter, then each link's grid and gemv_tc's parameters */
    CUdeviceptr ptrs[KERNEL_CHAIN_MAX_LINKS][13];
    unsigned u32s[KERNEL_CHAIN_MAX_LINKS][5];
    void *args[1 + KERNEL_CHAIN_MAX_LINKS * 18];
    int n_args = 0;
    CUdeviceptr pc = counter;
    args[n_args++] = &pc;
    unsigned most = 1, urows = (unsigned)n_rows;
    for (int i = 0; i < n_links; i++) {
        const struct wc_chain_link *l = &links[i];
        int flags = link_flags(l), cols = kernel_gemv_tc_cols(flags), qkv = l->dst_row != NULL;
        CUdeviceptr *p = ptrs[i];
        unsigned *u = u32s[i];
        u[0] = (qkv ? 3 : 1) * ceil_div((size_t)l->w[0]->rows, (size_t)cols); /* grid x */
        u[1] = 1;                                                             /* grid y */
        u[2] = (unsigned)(l->ld_out ? l->ld_out : l->w[0]->rows);
        u[3] = (unsigned)l->w[0]->rows, u[4] = urows;
        most = u[0] > most ? u[0] : most;
        p[0] = dptr(l->out), p[1] = dptr(l->in), p[2] = dptr(l->w[0]->data), p[3] = dptr(l->b[0]);
        p[4] = dptr(l->g), p[5] = dptr(l->lb);
        void *mine[] = {&u[0], &u[1], &p[0], &u[2], &p[1], &p[2], &p[3], &u[3], &u[4]};
        for (int j = 0; j < 9; j++)
            args[n_args++] = mine[j];
        if (flags & KERNEL_GEMV_NORM) {
            args[n_args++] = &p[4];
            args[n_args++] = &p[5];
        }
        if (qkv) { /* norm_qkv's: wk, wv, bk, bv, k_dst, v_dst, dst_row */
            p[6] = dptr(l->w[1]->data), p[7] = dptr(l->w[2]->data), p[8] = dptr(l->b[1]);
            p[9] = dptr(l->b[2]), p[10] = dptr(l->k_dst), p[11] = dptr(l->v_dst);
            p[12] = dptr(l->dst_row);
            for (int j = 6; j < 13; j++)
                args[n_args++] = &p[j];
        }
    }
    /* no more CTAs than the longest link has virtual CTAs; each CTA takes every nctaid-th */
    unsigned grid = (unsigned)k->coop_ctas < most ? (unsigned)k->coop_ctas : most;
    return cuda_launch_coop(s, k, grid, KERNEL_GEMV_THREADS, args);
}
