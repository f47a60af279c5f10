/*
 * logits_topk.c — gen_logits_topk_part and gen_logits_topk_pick: backend.h's logits_topk, beam
 * search's ranking of a step's rows (kernels.h), in the two halves of logits_greedy's layout.
 *
 * topk_part: one CTA per (row, chunk of KERNEL_LOGITS_CHUNK columns), the chunk's masked
 * columns in registers (logits_rows.h). Per part (text tokens [0, tb), timestamps [tb, V)):
 * the K largest columns in K rounds of a block-wide argmax (the first maximum; the winner's
 * column leaves the round after), descending, so the part's maximum is the first; then
 * sum = sum of exp(x - max) over the part's unmasked columns in f64. Thread 0 writes the
 * record: {f32 text max, f32 timestamp max, f64 text sum, f64 timestamp sum, K text
 * {f32 x, u32 column}, K timestamp {f32 x, u32 column}} (column 0xFFFFFFFF: none left).
 *
 * topk_pick: one warp per row, lane p holding record p. The parts' maxima M and sums (each
 * record's sum scaled by exp(max_p - M), f64) give ApplyTimestampRules' test, logsumexp(ts)
 * > max(text) <=> log1p(sum_ts - 1) > max_text - max_ts, and the log-sum-exp of the allowed
 * parts, lse = M + log1p(S - 1) (S >= 1: the maximum's own term). Then K rounds merge the
 * lanes' sorted lists: each lane offers its best remaining (text unless the test forbade it,
 * or timestamp), the warp takes the largest (lower column on ties), its lane moves on, and
 * lane 0 writes (column, x - lse in f64, rounded to f32) — the CPU's x - (m + log(sum)).
 * The sums use ex2.approx (relative ~2^-22 a term), so log-probabilities are within ~1e-6
 * of the CPU's; the order differs only where two log-probabilities tie to that precision.
 */
#include <stdio.h>

#include "kernels/logits_rows.h"

#define REC_HEAD 24 /* text max, ts max, text sum, ts sum */

static int record_bytes(int k) { return KERNEL_LOGITS_TOPK_RECORD(k); }

/* One part's K rounds over the thread's columns xp[u] (-inf outside the part), each winner
 * written by thread 0 at [rec + off + 8 j]; max = the first winner. */
static void part_topk(struct ptx_kernel *k, const struct lg_chunk *ch, struct ptx_reg *xp, int kk,
                      struct ptx_reg rec, int off, struct ptx_reg max, struct ptx_reg warp,
                      struct ptx_reg lane0, struct ptx_reg t0) {
    struct ptx_reg v = ptx_reg(k, PTX_F32), i = ptx_reg(k, PTX_B32), p = ptx_reg(k, PTX_PRED);
    for (int j = 0; j < kk; j++) {
        if (j > 0)
            ptx_ins(k, "bar.sync 0"); /* every warp has read the last round's slots */
        ptx_ins(k, "mov.f32 %s, " NEG_INF, v.s);
        ptx_ins(k, "mov.u32 %s, " LG_NONE, i.s);
        for (int u = 0; u < LG_U; u++) { /* columns in increasing order: the first max stays */
            ptx_ins(k, "setp.gt.f32 %s, %s, %s", p.s, xp[u].s, v.s);
            ptx_ins(k, "@%s mov.f32 %s, %s", p.s, v.s, xp[u].s);
            ptx_ins(k, "@%s mov.u32 %s, %s", p.s, i.s, ch->ci[u].s);
        }
        lg_block_argmax(k, v, i, "s_tv", "s_ti", warp, lane0);
        if (j == 0)
            ptx_ins(k, "mov.f32 %s, %s", max.s, v.s);
        ptx_ins(k, "@%s st.global.f32 [%s+%d], %s", t0.s, rec.s, off + 8 * j, v.s);
        ptx_ins(k, "@%s st.global.u32 [%s+%d], %s", t0.s, rec.s, off + 8 * j + 4, i.s);
        for (int u = 0; u < LG_U; u++) { /* the winner leaves (none when every x is -inf) */
            ptx_ins(k, "setp.eq.u32 %s, %s, %s", p.s, ch->ci[u].s, i.s);
            ptx_ins(k, "@%s mov.f32 %s, " NEG_INF, p.s, xp[u].s);
        }
    }
}

char *gen_logits_topk_part(int sm, int n_vocab, int kk) {
    int n_part = n_vocab > 0 ? (n_vocab + KERNEL_LOGITS_CHUNK - 1) / KERNEL_LOGITS_CHUNK : 0;
    if (n_part < 1 || n_part > 32 || kk < 1 || kk > KERNEL_LOGITS_MAX_TOPK)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "logits_topk_part_v%d_k%d", n_vocab, kk);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_part");
    ptx_param(&k, "u64", "p_logits");
    ptx_param(&k, "u64", "p_rules");
    ptx_param(&k, "u64", "p_mask");
    ptx_raw(&k,
            "    .shared .align 4 .f32 s_tv[%d];\n    .shared .align 4 .u32 s_ti[%d];\n"
            "    .shared .align 8 .f64 s_tr[%d];\n    .shared .align 8 .f64 s_sr[%d];\n",
            LG_WARPS, LG_WARPS, LG_WARPS, LG_WARPS);
    struct ptx_reg row = ptx_special(&k, "%ctaid.x"), chunk = ptx_special(&k, "%ctaid.y");
    struct ptx_reg tid = ptx_special(&k, "%tid.x");
    struct ptx_reg warp = ptx_reg(&k, PTX_B32), lane0 = ptx_reg(&k, PTX_PRED);
    struct ptx_reg t0 = ptx_reg(&k, PTX_PRED), idx = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "shr.u32 %s, %s, 5", warp.s, tid.s);
    ptx_ins(&k, "and.b32 %s, %s, 31", idx.s, tid.s);
    ptx_ins(&k, "setp.eq.u32 %s, %s, 0", lane0.s, idx.s);
    ptx_ins(&k, "setp.eq.u32 %s, %s, 0", t0.s, tid.s);
    struct lg_rule ru = lg_load_rule(&k, row);
    struct lg_chunk ch = lg_load_chunk(&k, row, chunk, tid, &ru, n_vocab);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", idx.s, row.s, n_part, chunk.s);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", idx.s, idx.s, record_bytes(kk));
    struct ptx_reg rec = ptx_addr(&k, ptx_ld_ptr(&k, "p_part"), idx, 1);

    /* each part's copy of the columns (the rounds knock winners out), then its top K */
    struct ptx_reg xt[LG_U], xs[LG_U], pt = ptx_reg(&k, PTX_PRED);
    for (int u = 0; u < LG_U; u++) {
        xt[u] = ptx_reg(&k, PTX_F32), xs[u] = ptx_reg(&k, PTX_F32);
        ptx_ins(&k, "setp.lt.u32 %s, %s, %s", pt.s, ch.ci[u].s, ru.tb.s);
        ptx_ins(&k, "selp.f32 %s, %s, " NEG_INF ", %s", xt[u].s, ch.x[u].s, pt.s);
        ptx_ins(&k, "selp.f32 %s, " NEG_INF ", %s, %s", xs[u].s, ch.x[u].s, pt.s);
    }
    struct ptx_reg tmax = ptx_reg(&k, PTX_F32), smax = ptx_reg(&k, PTX_F32);
    part_topk(&k, &ch, xt, kk, rec, REC_HEAD, tmax, warp, lane0, t0);
    ptx_ins(&k, "bar.sync 0");
    part_topk(&k, &ch, xs, kk, rec, REC_HEAD + 8 * kk, smax, warp, lane0, t0);

    /* sums of exp(x - max) over each part's unmasked columns */
    struct ptx_reg ts = ptx_reg(&k, PTX_F64), ss = ptx_reg(&k, PTX_F64);
    struct ptx_reg m = ptx_reg(&k, PTX_F32), e = ptx_reg(&k, PTX_F32), ed = ptx_reg(&k, PTX_F64);
    struct ptx_reg pk = ptx_reg(&k, PTX_PRED), pu = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", ts.s);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", ss.s);
    for (int u = 0; u < LG_U; u++) {
        ptx_ins(&k, "setp.lt.u32 %s, %s, %s", pt.s, ch.ci[u].s, ru.tb.s);
        ptx_ins(&k, "selp.f32 %s, %s, %s, %s", m.s, tmax.s, smax.s, pt.s);
        ptx_ins(&k, "setp.gt.f32 %s, %s, " NEG_INF, pk.s, ch.x[u].s);
        ptx_ins(&k, "sub.f32 %s, %s, %s", e.s, ch.x[u].s, m.s);
        ptx_exp(&k, e, e);
        ptx_ins(&k, "cvt.f64.f32 %s, %s", ed.s, e.s);
        ptx_ins(&k, "and.pred %s, %s, %s", pu.s, pk.s, pt.s);
        ptx_ins(&k, "@%s add.f64 %s, %s, %s", pu.s, ts.s, ts.s, ed.s);
        ptx_ins(&k, "not.pred %s, %s", pt.s, pt.s);
        ptx_ins(&k, "and.pred %s, %s, %s", pu.s, pk.s, pt.s);
        ptx_ins(&k, "@%s add.f64 %s, %s, %s", pu.s, ss.s, ss.s, ed.s);
    }
    lg_block_sum_f64(&k, ts, "s_tr", warp, lane0);
    lg_block_sum_f64(&k, ss, "s_sr", warp, lane0);
    ptx_ins(&k, "@%s st.global.f32 [%s], %s", t0.s, rec.s, tmax.s);
    ptx_ins(&k, "@%s st.global.f32 [%s+4], %s", t0.s, rec.s, smax.s);
    ptx_ins(&k, "@%s st.global.f64 [%s+8], %s", t0.s, rec.s, ts.s);
    ptx_ins(&k, "@%s st.global.f64 [%s+16], %s", t0.s, rec.s, ss.s);
    return ptx_end(&k);
}

/* One part over the warp: M = max of the lanes' max_p; sum = sum_p sum_p exp(max_p - M). */
static void join_sums(struct ptx_kernel *k, struct ptx_reg max_p, struct ptx_reg sum_p,
                      struct ptx_reg m, struct ptx_reg sum) {
    struct ptx_reg e = ptx_reg(k, PTX_F32), w = ptx_reg(k, PTX_F64), has = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "mov.f32 %s, %s", m.s, max_p.s);
    ptx_warp_reduce(k, m, "max");
    ptx_ins(k, "setp.gt.f32 %s, %s, " NEG_INF, has.s, max_p.s);
    ptx_ins(k, "sub.f32 %s, %s, %s", e.s, max_p.s, m.s);
    ptx_exp(k, e, e);
    ptx_ins(k, "cvt.f64.f32 %s, %s", w.s, e.s);
    ptx_ins(k, "mul.f64 %s, %s, %s", sum.s, sum_p.s, w.s);
    ptx_ins(k, "@!%s mov.f64 %s, 0d0000000000000000", has.s, sum.s);
    lg_warp_sum_f64(k, sum);
}

/* The lane's head of one list: entry j of the list at rec + off, or (-inf, none) past K or
 * when the list is closed (ok false). */
static void load_head(struct ptx_kernel *k, struct ptx_reg v, struct ptx_reg i, struct ptx_reg rec,
                      int off, struct ptx_reg j, int kk, struct ptx_reg ok) {
    struct ptx_reg p = ptx_reg(k, PTX_PRED), a = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mov.f32 %s, " NEG_INF, v.s);
    ptx_ins(k, "mov.u32 %s, " LG_NONE, i.s);
    ptx_ins(k, "setp.lt.and.u32 %s, %s, %d, %s", p.s, j.s, kk, ok.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, 8, %d", a.s, j.s, off);
    struct ptx_reg ea = ptx_addr(k, rec, a, 1);
    ptx_ins(k, "@%s ld.global.f32 %s, [%s]", p.s, v.s, ea.s);
    ptx_ins(k, "@%s ld.global.u32 %s, [%s+4]", p.s, i.s, ea.s);
}

char *gen_logits_topk_pick(int sm, int n_vocab, int kk) {
    int n_part = n_vocab > 0 ? (n_vocab + KERNEL_LOGITS_CHUNK - 1) / KERNEL_LOGITS_CHUNK : 0;
    if (n_part < 1 || n_part > 32 || kk < 1 || kk > KERNEL_LOGITS_MAX_TOPK)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "logits_topk_pick_v%d_k%d", n_vocab, kk);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_part");
    ptx_param(&k, "u64", "p_rules");
    struct ptx_reg row = ptx_special(&k, "%ctaid.x"), lane = ptx_special(&k, "%tid.x");
    struct ptx_reg idx = ptx_reg(&k, PTX_B32), in = ptx_reg(&k, PTX_PRED);
    struct ptx_reg lane0 = ptx_reg(&k, PTX_PRED), p = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "setp.eq.u32 %s, %s, 0", lane0.s, lane.s);

    /* lane p < P: record p's maxima and sums; the others empty */
    struct ptx_reg tmax = ptx_reg(&k, PTX_F32), smax = ptx_reg(&k, PTX_F32);
    struct ptx_reg tsum = ptx_reg(&k, PTX_F64), ssum = ptx_reg(&k, PTX_F64);
    ptx_ins(&k, "mov.f32 %s, " NEG_INF, tmax.s);
    ptx_ins(&k, "mov.f32 %s, " NEG_INF, smax.s);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", tsum.s);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", ssum.s);
    ptx_ins(&k, "setp.lt.u32 %s, %s, %d", in.s, lane.s, n_part);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", idx.s, row.s, n_part, lane.s);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", idx.s, idx.s, record_bytes(kk));
    struct ptx_reg rec = ptx_addr(&k, ptx_ld_ptr(&k, "p_part"), idx, 1);
    ptx_ins(&k, "@%s ld.global.f32 %s, [%s]", in.s, tmax.s, rec.s);
    ptx_ins(&k, "@%s ld.global.f32 %s, [%s+4]", in.s, smax.s, rec.s);
    ptx_ins(&k, "@%s ld.global.f64 %s, [%s+8]", in.s, tsum.s, rec.s);
    ptx_ins(&k, "@%s ld.global.f64 %s, [%s+16]", in.s, ssum.s, rec.s);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", idx.s, row.s, KERNEL_LOGITS_RULE_WORDS);
    struct ptx_reg rule = ptx_addr(&k, ptx_ld_ptr(&k, "p_rules"), idx, 4);
    struct ptx_reg tb = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "ld.global.nc.u32 %s, [%s+%d]", tb.s, rule.s, 8 * KERNEL_LOGITS_RANGES);

    struct ptx_reg tm = ptx_reg(&k, PTX_F32), sm_ = ptx_reg(&k, PTX_F32);
    struct ptx_reg ts = ptx_reg(&k, PTX_F64), ss = ptx_reg(&k, PTX_F64);
    join_sums(&k, tmax, tsum, tm, ts);
    join_sums(&k, smax, ssum, sm_, ss);

    /* the timestamp test: forbid text <=> tb < V, a timestamp unmasked, log1p(ss - 1) > tm - sm */
    struct ptx_reg l = ptx_reg(&k, PTX_F64), d = ptx_reg(&k, PTX_F64), t = ptx_reg(&k, PTX_F64);
    struct ptx_reg text_ok = ptx_reg(&k, PTX_PRED), fb = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "sub.f64 %s, %s, 0d3FF0000000000000", t.s, ss.s);
    ptx_ins(&k, "max.f64 %s, %s, 0d0000000000000000", t.s, t.s);
    lg_log1p_f64(&k, l, t);
    ptx_ins(&k, "cvt.f64.f32 %s, %s", d.s, tm.s);
    ptx_ins(&k, "cvt.f64.f32 %s, %s", t.s, sm_.s);
    ptx_ins(&k, "sub.f64 %s, %s, %s", d.s, d.s, t.s);
    ptx_ins(&k, "setp.gt.f64 %s, %s, %s", fb.s, l.s, d.s);
    ptx_ins(&k, "setp.ne.and.f32 %s, %s, " NEG_INF ", %s", fb.s, sm_.s, fb.s);
    ptx_ins(&k, "setp.lt.and.u32 %s, %s, %d, %s", fb.s, tb.s, n_vocab, fb.s);
    ptx_ins(&k, "setp.gt.f32 %s, %s, " NEG_INF, text_ok.s, tm.s);
    ptx_ins(&k, "and.pred %s, %s, !%s", text_ok.s, text_ok.s, fb.s);

    /* lse over the allowed parts: M + log1p(S - 1) */
    struct ptx_reg mm = ptx_reg(&k, PTX_F32), e = ptx_reg(&k, PTX_F32), w = ptx_reg(&k, PTX_F64);
    struct ptx_reg s = ptx_reg(&k, PTX_F64), lse = ptx_reg(&k, PTX_F64);
    ptx_ins(&k, "mov.f32 %s, %s", mm.s, sm_.s);
    ptx_ins(&k, "@%s max.f32 %s, %s, %s", text_ok.s, mm.s, mm.s, tm.s);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", s.s);
    ptx_ins(&k, "setp.gt.f32 %s, %s, " NEG_INF, p.s, sm_.s);
    ptx_ins(&k, "sub.f32 %s, %s, %s", e.s, sm_.s, mm.s);
    ptx_exp(&k, e, e);
    ptx_ins(&k, "cvt.f64.f32 %s, %s", w.s, e.s);
    ptx_ins(&k, "@%s fma.rn.f64 %s, %s, %s, %s", p.s, s.s, ss.s, w.s, s.s);
    ptx_ins(&k, "sub.f32 %s, %s, %s", e.s, tm.s, mm.s);
    ptx_exp(&k, e, e);
    ptx_ins(&k, "cvt.f64.f32 %s, %s", w.s, e.s);
    ptx_ins(&k, "@%s fma.rn.f64 %s, %s, %s, %s", text_ok.s, s.s, ts.s, w.s, s.s);
    ptx_ins(&k, "sub.f64 %s, %s, 0d3FF0000000000000", s.s, s.s);
    ptx_ins(&k, "max.f64 %s, %s, 0d0000000000000000", s.s, s.s);
    lg_log1p_f64(&k, lse, s);
    ptx_ins(&k, "cvt.f64.f32 %s, %s", t.s, mm.s);
    ptx_ins(&k, "add.f64 %s, %s, %s", lse.s, lse.s, t.s);

    /* K rounds over the lanes' heads (text, if allowed, and timestamps) */
    struct ptx_reg jt = ptx_reg(&k, PTX_B32), js = ptx_reg(&k, PTX_B32),
                   all = ptx_reg(&k, PTX_PRED);
    struct ptx_reg ht = ptx_reg(&k, PTX_F32), it = ptx_reg(&k, PTX_B32);
    struct ptx_reg hs = ptx_reg(&k, PTX_F32), is = ptx_reg(&k, PTX_B32);
    struct ptx_reg v = ptx_reg(&k, PTX_F32), i = ptx_reg(&k, PTX_B32);
    struct ptx_reg ov = ptx_reg(&k, PTX_F32), oi = ptx_reg(&k, PTX_B32);
    struct ptx_reg tok_ok = ptx_reg(&k, PTX_PRED), lp = ptx_reg(&k, PTX_F64);
    struct ptx_reg lpf = ptx_reg(&k, PTX_F32), ok_t = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "mov.u32 %s, 0", jt.s);
    ptx_ins(&k, "mov.u32 %s, 0", js.s);
    ptx_ins(&k, "and.pred %s, %s, %s", ok_t.s, in.s, text_ok.s);
    ptx_ins(&k, "mov.pred %s, %s", all.s, in.s); /* a record: its timestamp list */
    load_head(&k, ht, it, rec, REC_HEAD, jt, kk, ok_t);
    load_head(&k, hs, is, rec, REC_HEAD + 8 * kk, js, kk, all);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", idx.s, row.s, kk);
    struct ptx_reg oa = ptx_addr(&k, ptx_ld_ptr(&k, "p_out"), idx, 8);
    for (int j = 0; j < kk; j++) {
        ptx_ins(&k, "mov.f32 %s, %s", v.s, ht.s);
        ptx_ins(&k, "mov.u32 %s, %s", i.s, it.s);
        lg_take_better(&k, v, i, hs, is);
        for (int dd = 16; dd >= 1; dd /= 2) {
            ptx_ins(&k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", ov.s, v.s, dd);
            ptx_ins(&k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", oi.s, i.s, dd);
            lg_take_better(&k, v, i, ov, oi);
        }
        /* lane 0 writes it; the lane that offered it moves on in that list */
        ptx_ins(&k, "cvt.f64.f32 %s, %s", lp.s, v.s);
        ptx_ins(&k, "sub.f64 %s, %s, %s", lp.s, lp.s, lse.s);
        ptx_ins(&k, "cvt.rn.f32.f64 %s, %s", lpf.s, lp.s);
        ptx_ins(&k, "setp.ne.u32 %s, %s, " LG_NONE, tok_ok.s, i.s);
        ptx_ins(&k, "@!%s mov.f32 %s, " NEG_INF, tok_ok.s, lpf.s);
        ptx_ins(&k, "selp.b32 %s, %s, 0, %s", oi.s, i.s, tok_ok.s);
        ptx_ins(&k, "@%s st.global.u32 [%s+%d], %s", lane0.s, oa.s, 8 * j, oi.s);
        ptx_ins(&k, "@%s st.global.f32 [%s+%d], %s", lane0.s, oa.s, 8 * j + 4, lpf.s);
        if (j + 1 == kk)
            break;
        /* branch-free (the next round's shuffles need every lane): re-read both heads */
        struct ptx_reg q = ptx_reg(&k, PTX_PRED);
        ptx_ins(&k, "setp.eq.and.u32 %s, %s, %s, %s", p.s, it.s, i.s, tok_ok.s);
        ptx_ins(&k, "@%s add.u32 %s, %s, 1", p.s, jt.s, jt.s);
        ptx_ins(&k, "setp.eq.and.u32 %s, %s, %s, %s", q.s, is.s, i.s, tok_ok.s);
        ptx_ins(&k, "and.pred %s, %s, !%s", q.s, q.s, p.s);
        ptx_ins(&k, "@%s add.u32 %s, %s, 1", q.s, js.s, js.s);
        load_head(&k, ht, it, rec, REC_HEAD, jt, kk, ok_t);
        load_head(&k, hs, is, rec, REC_HEAD + 8 * kk, js, kk, all);
    }
    return ptx_end(&k);
}
