/* attention_combine.h — the splits' join that attn_gather / attn_rows run in their last CTA of
 * a (row, head) (attention_combine.c). */
#ifndef WC_KERNELS_ATTENTION_COMBINE_H
#define WC_KERNELS_ATTENTION_COMBINE_H

#include "kernels/ptx.h"

/* Where the join runs: the CTA's row g, head, thread tid and split count nz (b32); part: the
 * records' global address (kernels.h layout); out: the output's; done: the kernel's end. */
struct attn_combine_at {
    struct ptx_reg g, head, tid, nz, part, out, done;
};

/* Emits the join of (g, head)'s nz records into out[g][head d + tid] (threads tid < d write;
 * all KERNEL_GATHER_THREADS threads take part). Declares the shared array s_max. */
void attn_combine_emit(struct ptx_kernel *k, const struct attn_combine_at *at, int n_head, int d);

/* The end of a split kernel's CTA: its warps' partial results, in the shared arrays s_m, s_l
 * and s_acc ([warp][d]) the kernel declares, joined into out or into the CTA's record; the
 * last CTA of (g, head) then joins the records (attention_combine.c). */
void attn_split_finish_emit(struct ptx_kernel *k, const struct attn_combine_at *at,
                            struct ptx_reg z, struct ptx_reg count, int n_head, int d);

#endif
