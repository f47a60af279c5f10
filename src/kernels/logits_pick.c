/*
 * logits_pick.c — gen_logits_pick: the second half of backend.h's logits_greedy (kernels.h):
 * one warp per row joins the row's records from logits_part (one per chunk of columns, lane p
 * holding record p) and picks. Per part (text tokens, timestamps): the maximum M over the
 * records, the argmax = the lowest column among the records reaching M (records are in column
 * order and each holds its chunk's first maximum: torch.argmax's first max), and
 * rest = sum_p (rest_p + [p's argmax is not the row's]) 2^((max_p - M) log2 e), summed in f64
 * across the warp. Lane 0 then decides ApplyTimestampRules' test, logsumexp(ts) > max(text) <=>
 * log1p(rest_ts) > max_text - max_ts, and the log-probability of the argmax, -log1p(rest),
 * where rest joins both parts. Writing it as log1p of the rest keeps a confident token's tiny
 * log-probability accurate (the CPU's m + log(s) in double); log1p is f64 (atanh series), exp
 * is ex2.approx (relative ~2^-22, once per column and once per record), so the log-probability
 * is within ~1e-6 relative of the CPU's. The argmax is exact.
 */
#include <stdio.h>

#include "kernels/logits_rows.h"

/* Lane 0's output: the row's pick (lg_decide), -log1p(rest) as f32; all masked: token 0 with
 * log-probability -inf, as the CPU. */
static void pick(struct ptx_kernel *k, struct ptx_reg out, struct ptx_reg tb, int n_vocab,
                 const struct lg_joined *j) {
    struct ptx_reg fb = ptx_reg(k, PTX_PRED), tok = ptx_reg(k, PTX_B32);
    struct ptx_reg lp = ptx_reg(k, PTX_F64), lpf = ptx_reg(k, PTX_F32);
    struct ptx_reg none = ptx_reg(k, PTX_PRED);
    lg_decide(k, j, tb, n_vocab, fb, tok, lp, NULL);
    ptx_ins(k, "neg.f64 %s, %s", lp.s, lp.s);
    ptx_ins(k, "cvt.rn.f32.f64 %s, %s", lpf.s, lp.s);
    ptx_ins(k, "setp.eq.u32 %s, %s, " LG_NONE, none.s, tok.s);
    ptx_ins(k, "@%s mov.u32 %s, 0", none.s, tok.s);
    ptx_ins(k, "@%s mov.f32 %s, " NEG_INF, none.s, lpf.s);
    ptx_ins(k, "st.global.u32 [%s], %s", out.s, tok.s);
    ptx_ins(k, "st.global.f32 [%s+4], %s", out.s, lpf.s);
}

char *gen_logits_pick(int sm, int n_vocab) {
    int n_part = n_vocab > 0 ? (n_vocab + KERNEL_LOGITS_CHUNK - 1) / KERNEL_LOGITS_CHUNK : 0;
    if (n_part < 1 || n_part > 32)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "logits_pick_v%d", n_vocab);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_part");
    ptx_param(&k, "u64", "p_rules");
    struct ptx_reg row = ptx_special(&k, "%ctaid.x"), lane = ptx_special(&k, "%tid.x");
    struct ptx_reg idx = ptx_reg(&k, PTX_B32);
    struct lg_joined j = lg_join_records(&k, row, lane, n_part);
    struct ptx_reg tb = lg_load_tb(&k, row);

    struct ptx_reg done = ptx_label(&k), p = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "setp.ne.u32 %s, %s, 0", p.s, lane.s);
    ptx_ins(&k, "@%s bra %s", p.s, done.s);
    ptx_ins(&k, "shl.b32 %s, %s, 1", idx.s, row.s);
    struct ptx_reg oa = ptx_addr(&k, ptx_ld_ptr(&k, "p_out"), idx, 4);
    pick(&k, oa, tb, n_vocab, &j);
    ptx_place(&k, done);
    return ptx_end(&k);
}
