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

/* Lane 0's decision and output (see the file comment); tmax/tidx/tr: text, s*: timestamps. */
static void pick(struct ptx_kernel *k, struct ptx_reg out, struct ptx_reg tb, int n_vocab,
                 struct ptx_reg tmax, struct ptx_reg tidx, struct ptx_reg tr, struct ptx_reg smax,
                 struct ptx_reg sidx, struct ptx_reg sr) {
    struct ptx_reg lts = ptx_reg(k, PTX_F64), d = ptx_reg(k, PTX_F64), t = ptx_reg(k, PTX_F64);
    struct ptx_reg fb = ptx_reg(k, PTX_PRED), big = ptx_reg(k, PTX_PRED);
    struct ptx_reg hi = ptx_reg(k, PTX_F32), lo = ptx_reg(k, PTX_F32), e = ptx_reg(k, PTX_F32);
    struct ptx_reg tok = ptx_reg(k, PTX_B32), rest = ptx_reg(k, PTX_F64), lp = ptx_reg(k, PTX_F64);
    struct ptx_reg lpf = ptx_reg(k, PTX_F32), other = ptx_reg(k, PTX_F64);
    /* forbid text <=> tb < V, a timestamp unmasked, log1p(rest_ts) > max_text - max_ts */
    lg_log1p_f64(k, lts, sr);
    ptx_ins(k, "cvt.f64.f32 %s, %s", d.s, tmax.s);
    ptx_ins(k, "cvt.f64.f32 %s, %s", t.s, smax.s);
    ptx_ins(k, "sub.f64 %s, %s, %s", d.s, d.s, t.s);
    ptx_ins(k, "setp.gt.f64 %s, %s, %s", fb.s, lts.s, d.s);
    ptx_ins(k, "setp.ne.and.f32 %s, %s, " NEG_INF ", %s", fb.s, smax.s, fb.s);
    ptx_ins(k, "setp.lt.and.u32 %s, %s, %d, %s", fb.s, tb.s, n_vocab, fb.s);
    /* otherwise the larger part's argmax; rest = its rest + the other part scaled to it */
    ptx_ins(k, "setp.gt.f32 %s, %s, %s", big.s, smax.s, tmax.s);
    ptx_ins(k, "selp.f32 %s, %s, %s, %s", hi.s, smax.s, tmax.s, big.s);
    ptx_ins(k, "selp.f32 %s, %s, %s, %s", lo.s, tmax.s, smax.s, big.s);
    ptx_ins(k, "selp.b32 %s, %s, %s, %s", tok.s, sidx.s, tidx.s, big.s);
    ptx_ins(k, "selp.f64 %s, %s, %s, %s", rest.s, sr.s, tr.s, big.s);
    ptx_ins(k, "selp.f64 %s, %s, %s, %s", other.s, tr.s, sr.s, big.s);
    ptx_ins(k, "sub.f32 %s, %s, %s", e.s, lo.s, hi.s);
    ptx_exp(k, e, e); /* exp(-inf) = 0: an empty part adds nothing */
    ptx_ins(k, "cvt.f64.f32 %s, %s", t.s, e.s);
    ptx_ins(k, "add.f64 %s, %s, 0d3FF0000000000000", other.s, other.s);
    ptx_ins(k, "fma.rn.f64 %s, %s, %s, %s", rest.s, other.s, t.s, rest.s);
    lg_log1p_f64(k, lp, rest);
    ptx_ins(k, "@%s mov.b32 %s, %s", fb.s, tok.s, sidx.s);
    ptx_ins(k, "@%s mov.f64 %s, %s", fb.s, lp.s, lts.s);
    ptx_ins(k, "neg.f64 %s, %s", lp.s, lp.s);
    ptx_ins(k, "cvt.rn.f32.f64 %s, %s", lpf.s, lp.s);
    /* all masked: token 0 with log-probability -inf, as the CPU */
    ptx_ins(k, "setp.eq.u32 %s, %s, " LG_NONE, big.s, tok.s);
    ptx_ins(k, "@%s mov.u32 %s, 0", big.s, tok.s);
    ptx_ins(k, "@%s mov.f32 %s, " NEG_INF, big.s, lpf.s);
    ptx_ins(k, "st.global.u32 [%s], %s", out.s, tok.s);
    ptx_ins(k, "st.global.f32 [%s+4], %s", out.s, lpf.s);
}

/* One part (text or timestamps) over the warp's records: max_p, idx_p, rest_p (this lane's
 * record) in; M, its first column I and the part's rest, every lane, out. */
static void join_part(struct ptx_kernel *k, struct ptx_reg max_p, struct ptx_reg idx_p,
                      struct ptx_reg rest_p, struct ptx_reg m, struct ptx_reg i,
                      struct ptx_reg rest) {
    struct ptx_reg o = ptx_reg(k, PTX_B32), has = ptx_reg(k, PTX_PRED), p = ptx_reg(k, PTX_PRED);
    struct ptx_reg e = ptx_reg(k, PTX_F32), w = ptx_reg(k, PTX_F64);
    ptx_ins(k, "mov.f32 %s, %s", m.s, max_p.s);
    ptx_warp_reduce(k, m, "max");
    ptx_ins(k, "setp.eq.f32 %s, %s, %s", p.s, max_p.s, m.s);
    ptx_ins(k, "selp.b32 %s, %s, " LG_NONE ", %s", i.s, idx_p.s, p.s);
    for (int d = 16; d >= 1; d /= 2) {
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", o.s, i.s, d);
        ptx_ins(k, "min.u32 %s, %s, %s", i.s, i.s, o.s);
    }
    /* this record's share, scaled to M; its own argmax counts unless it is the row's */
    ptx_ins(k, "setp.ne.u32 %s, %s, " LG_NONE, has.s, idx_p.s);
    ptx_ins(k, "sub.f32 %s, %s, %s", e.s, max_p.s, m.s);
    ptx_exp(k, e, e);
    ptx_ins(k, "cvt.f64.f32 %s, %s", w.s, e.s);
    ptx_ins(k, "mov.f64 %s, %s", rest.s, rest_p.s);
    ptx_ins(k, "setp.ne.and.u32 %s, %s, %s, %s", p.s, idx_p.s, i.s, has.s);
    ptx_ins(k, "@%s add.f64 %s, %s, 0d3FF0000000000000", p.s, rest.s, rest.s);
    ptx_ins(k, "mul.f64 %s, %s, %s", rest.s, rest.s, w.s);
    ptx_ins(k, "@!%s mov.f64 %s, 0d0000000000000000", has.s, rest.s);
    lg_warp_sum_f64(k, rest);
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
    struct ptx_reg idx = ptx_reg(&k, PTX_B32), in = ptx_reg(&k, PTX_PRED);

    /* lane p < P: record p of this row; the others an empty record */
    struct ptx_reg tmax = ptx_reg(&k, PTX_F32), tidx = ptx_reg(&k, PTX_B32);
    struct ptx_reg smax = ptx_reg(&k, PTX_F32), sidx = ptx_reg(&k, PTX_B32);
    struct ptx_reg tr = ptx_reg(&k, PTX_F64), sr = ptx_reg(&k, PTX_F64);
    ptx_ins(&k, "mov.f32 %s, " NEG_INF, tmax.s);
    ptx_ins(&k, "mov.f32 %s, " NEG_INF, smax.s);
    ptx_ins(&k, "mov.u32 %s, " LG_NONE, tidx.s);
    ptx_ins(&k, "mov.u32 %s, " LG_NONE, sidx.s);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", tr.s);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", sr.s);
    ptx_ins(&k, "setp.lt.u32 %s, %s, %d", in.s, lane.s, n_part);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", idx.s, row.s, n_part, lane.s);
    struct ptx_reg ra = ptx_addr(&k, ptx_ld_ptr(&k, "p_part"), idx, KERNEL_LOGITS_RECORD);
    ptx_ins(&k, "@%s ld.global.f32 %s, [%s]", in.s, tmax.s, ra.s);
    ptx_ins(&k, "@%s ld.global.u32 %s, [%s+4]", in.s, tidx.s, ra.s);
    ptx_ins(&k, "@%s ld.global.f32 %s, [%s+8]", in.s, smax.s, ra.s);
    ptx_ins(&k, "@%s ld.global.u32 %s, [%s+12]", in.s, sidx.s, ra.s);
    ptx_ins(&k, "@%s ld.global.f64 %s, [%s+16]", in.s, tr.s, ra.s);
    ptx_ins(&k, "@%s ld.global.f64 %s, [%s+24]", in.s, sr.s, ra.s);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", idx.s, row.s, KERNEL_LOGITS_RULE_WORDS);
    struct ptx_reg rule = ptx_addr(&k, ptx_ld_ptr(&k, "p_rules"), idx, 4);
    struct ptx_reg tb = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "ld.global.nc.u32 %s, [%s+%d]", tb.s, rule.s, 8 * KERNEL_LOGITS_RANGES);

    struct ptx_reg tm = ptx_reg(&k, PTX_F32), ti = ptx_reg(&k, PTX_B32), trs = ptx_reg(&k, PTX_F64);
    struct ptx_reg sm_ = ptx_reg(&k, PTX_F32), si = ptx_reg(&k, PTX_B32),
                   srs = ptx_reg(&k, PTX_F64);
    join_part(&k, tmax, tidx, tr, tm, ti, trs);
    join_part(&k, smax, sidx, sr, sm_, si, srs);

    struct ptx_reg done = ptx_label(&k), p = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "setp.ne.u32 %s, %s, 0", p.s, lane.s);
    ptx_ins(&k, "@%s bra %s", p.s, done.s);
    ptx_ins(&k, "shl.b32 %s, %s, 1", idx.s, row.s);
    struct ptx_reg oa = ptx_addr(&k, ptx_ld_ptr(&k, "p_out"), idx, 4);
    pick(&k, oa, tb, n_vocab, tm, ti, trs, sm_, si, srs);
    ptx_place(&k, done);
    return ptx_end(&k);
}
