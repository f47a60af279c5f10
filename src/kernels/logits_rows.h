/* logits_rows.h — PTX pieces shared by the logits kernels (logits.c, logits_pick.c,
 * logits_topk.c, logits_sample.c): a row's packed rule (kernels.h), masked column loads,
 * block-wide argmax and f64 sums over KERNEL_LOGITS_THREADS threads, log1p in f64, and a row's
 * greedy decision from logits_part's records. */
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

/* A row's parts joined from its logits_part records (logits_pick.c states how): the text
 * tokens' maximum, its first column and the rest (f64), and the timestamps' likewise. */
struct lg_joined {
    struct ptx_reg tm, ti, tr, sm, si, sr;
};
/* One warp joins row `row`'s n_part records of p_part (lane p: record p); every lane gets
 * them. lane: the thread's lane id. */
struct lg_joined lg_join_records(struct ptx_kernel *k, struct ptx_reg row, struct ptx_reg lane,
                                 int n_part);
/* Row `row`'s tb from p_rules. */
struct ptx_reg lg_load_tb(struct ptx_kernel *k, struct ptx_reg row);
/* The row's greedy pick from its joined parts: fb = ApplyTimestampRules' test forbids the
 * text, tok = the allowed argmax (LG_NONE: every column masked), lr = log1p(rest): the allowed
 * row's log-sum-exp is its maximum + lr; m, when not NULL, gets that maximum (f32). */
void lg_decide(struct ptx_kernel *k, const struct lg_joined *j, struct ptx_reg tb, int n_vocab,
               struct ptx_reg fb, struct ptx_reg tok, struct ptx_reg lr, const struct ptx_reg *m);

#endif /* WC_LOGITS_ROWS_H */
