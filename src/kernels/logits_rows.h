/* logits_rows.h — PTX pieces shared by the logits kernels (logits.c, logits_pick.c,
 * logits_topk.c): a row's packed rule (kernels.h), masked column loads, block-wide argmax and
 * f64 sums over KERNEL_LOGITS_THREADS threads, and log1p in f64. */
#ifndef WC_LOGITS_ROWS_H
#define WC_LOGITS_ROWS_H

#include "kernels/kernels.h"
#include "kernels/ptx.h"

#define LG_WARPS (KERNEL_LOGITS_THREADS / 32)
#define LG_U     (KERNEL_LOGITS_CHUNK / KERNEL_LOGITS_THREADS) /* columns a thread loads: 8 */
#define LG_NONE  "0xFFFFFFFF" /* no index: every column of the part is masked */
#define NEG_INF  "0fFF800000"

/* The row's rule, as the op packs it (kernels.h): lo[8], width[8], tb. */
struct lg_rule {
    struct ptx_reg lo[KERNEL_LOGITS_RANGES], width[KERNEL_LOGITS_RANGES], tb;
};

/* Row `row`'s rule from the kernel's p_rules parameter. */
struct lg_rule lg_load_rule(struct ptx_kernel *k, struct ptx_reg row);

/* A thread's columns of a chunk (kernels.h): ci[u] = chunk C + tid + 256 u, x[u] its masked
 * logit (lg_masked_load), all loads issued at once; p_logits and p_mask are the kernel's. */
struct lg_chunk {
    struct ptx_reg ci[LG_U], x[LG_U];
};
struct lg_chunk lg_load_chunk(struct ptx_kernel *k, struct ptx_reg row, struct ptx_reg chunk,
                              struct ptx_reg tid, const struct lg_rule *ru, int n_vocab);

/* (v, i) := (ov, oi) when ov > v, or ov == v with a lower index: torch.argmax's first max */
void lg_take_better(struct ptx_kernel *k, struct ptx_reg v, struct ptx_reg i, struct ptx_reg ov,
                    struct ptx_reg oi);
/* Block-wide (max, first index); every thread gets it. Slots: shared sv/si [LG_WARPS]. */
void lg_block_argmax(struct ptx_kernel *k, struct ptx_reg v, struct ptx_reg i, const char *sv,
                     const char *si, struct ptx_reg warp, struct ptx_reg lane0);
/* Block-wide f64 sum; every thread gets it. Slots: shared f64 [LG_WARPS] at `slots`. */
void lg_block_sum_f64(struct ptx_kernel *k, struct ptx_reg v, const char *slots,
                      struct ptx_reg warp, struct ptx_reg lane0);
/* f64 sum over the warp (butterfly: every lane gets it, in the same order for every row). */
void lg_warp_sum_f64(struct ptx_kernel *k, struct ptx_reg v);
/* x = the masked logit at column i (addr its address): -inf when suppressed, in a range or
 * past the row (i >= V: nothing read). */
void lg_masked_load(struct ptx_kernel *k, struct ptx_reg x, struct ptx_reg addr, struct ptx_reg i,
                    struct ptx_reg mask, const struct lg_rule *ru, int n_vocab);
/* dst = log1p(r) for r >= 0 in f64 (logits_rows.c states how). */
void lg_log1p_f64(struct ptx_kernel *k, struct ptx_reg dst, struct ptx_reg r);

#endif /* WC_LOGITS_ROWS_H */
