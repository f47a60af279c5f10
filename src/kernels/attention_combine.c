/* attention_combine.c — attn_combine_emit: the key splits of attn_gather / attn_rows joined into
 * one output row, by the last of a (row g, head h)'s split CTAs to finish (attention_gather.c).
 * Its threads find the splits' maximum M together, then thread i < d walks the splits in order
 * (COMBINE_U records' loads in flight at once): sum += 2^(max_z - M) sum_z and
 * acc += 2^(max_z - M) acc_z[i], with the same fma as the split kernel's own join of its warps,
 * so a row whose keys all sit in split 0 (the others weigh exactly 2^-huge = 0, their sums 0)
 * gets the bits of the split kernel's direct division. The records are read through L2
 * (ld.global.cg): other CTAs wrote them, and this SM's L1 may hold older copies of their lines.
 */
#include "kernels/attention_combine.h"
#include "kernels/kernels.h"

#define NEG_BIG       "0fF149F2CA" /* -1e30, the split kernels' running max before any key */
#define COMBINE_WARPS (KERNEL_GATHER_THREADS / 32)
#define COMBINE_U     4 /* records a thread loads at once */

void attn_combine_emit(struct ptx_kernel *k, const struct attn_combine_at *at, int n_head, int d) {
    struct ptx_reg g = at->g, head = at->head, tid = at->tid, nz = at->nz, done = at->done;
    struct ptx_reg p = ptx_reg(k, PTX_PRED);
    char s_max[32];
    ptx_sym(k, s_max, sizeof s_max, "s_max");
    ptx_raw(k, "    .shared .align 4 .f32 %s[%d];\n", s_max, COMBINE_WARPS);

    /* rec = this (row, head)'s first record; this thread's acc at rec + 4 (2 + tid) */
    struct ptx_reg ri = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", ri.s, g.s, n_head, head.s);
    ptx_ins(k, "mul.lo.u32 %s, %s, %s", ri.s, ri.s, nz.s);
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", ri.s, ri.s, d + 2);
    struct ptx_reg rec = ptx_addr(k, at->part, ri, 4);
    struct ptx_reg a = ptx_reg(k, PTX_B64), z = ptx_reg(k, PTX_B32);
    struct ptx_reg mx = ptx_reg(k, PTX_F32), mz = ptx_reg(k, PTX_F32);
    struct ptx_reg l = ptx_reg(k, PTX_F32), o = ptx_reg(k, PTX_F32);
    struct ptx_reg f = ptx_reg(k, PTX_F32);

    /* pass 1: M, the threads over the splits (max is exact in any order) */
    struct ptx_reg top1 = ptx_label(k), end1 = ptx_label(k), top2 = ptx_label(k);
    struct ptx_reg warp = ptx_reg(k, PTX_B32), sa = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mov.f32 %s, %s", mx.s, NEG_BIG);
    ptx_ins(k, "mov.u32 %s, %s", z.s, tid.s);
    ptx_place(k, top1);
    ptx_ins(k, "setp.ge.u32 %s, %s, %s", p.s, z.s, nz.s);
    ptx_ins(k, "@%s bra %s", p.s, end1.s);
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", ri.s, z.s, d + 2);
    struct ptx_reg za = ptx_addr(k, rec, ri, 4);
    ptx_ins(k, "ld.global.cg.f32 %s, [%s]", mz.s, za.s);
    ptx_ins(k, "max.f32 %s, %s, %s", mx.s, mx.s, mz.s);
    ptx_ins(k, "add.u32 %s, %s, %d", z.s, z.s, KERNEL_GATHER_THREADS);
    ptx_ins(k, "bra %s", top1.s);
    ptx_place(k, end1);
    ptx_warp_reduce(k, mx, "max");
    ptx_ins(k, "shr.u32 %s, %s, 5", warp.s, tid.s);
    ptx_ins(k, "mov.u32 %s, %s", sa.s, s_max);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", sa.s, warp.s, sa.s);
    ptx_ins(k, "st.shared.f32 [%s], %s", sa.s, mx.s); /* every lane: the same value */
    ptx_bar_sync(k);
    ptx_ins(k, "setp.ge.u32 %s, %s, %d", p.s, tid.s, d);
    ptx_ins(k, "@%s bra %s", p.s, done.s);
    for (int w = 0; w < COMBINE_WARPS; w++) {
        ptx_ins(k, "ld.shared.f32 %s, [%s+%d]", mz.s, s_max, 4 * w);
        ptx_ins(k, "max.f32 %s, %s, %s", mx.s, mx.s, mz.s);
    }

    /* pass 2: the rescaled sums, splits in order, COMBINE_U records' loads in flight at once */
    struct ptx_reg ai = ptx_addr(k, rec, tid, 4);
    struct ptx_reg mu[COMBINE_U], lu[COMBINE_U], au[COMBINE_U], ok[COMBINE_U];
    ptx_ins(k, "mov.f32 %s, 0f00000000", l.s);
    ptx_ins(k, "mov.f32 %s, 0f00000000", o.s);
    ptx_ins(k, "mov.b64 %s, %s", a.s, rec.s);
    ptx_ins(k, "mov.u32 %s, 0", z.s);
    ptx_place(k, top2);
    for (int u = 0; u < COMBINE_U; u++) {
        mu[u] = ptx_reg(k, PTX_F32), lu[u] = ptx_reg(k, PTX_F32), au[u] = ptx_reg(k, PTX_F32);
        ok[u] = ptx_reg(k, PTX_PRED);
        ptx_ins(k, "add.u32 %s, %s, %d", ri.s, z.s, u);
        ptx_ins(k, "setp.lt.u32 %s, %s, %s", ok[u].s, ri.s, nz.s);
        ptx_ins(k, "@%s ld.global.cg.f32 %s, [%s+%d]", ok[u].s, mu[u].s, a.s, 4 * u * (d + 2));
        ptx_ins(k, "@%s ld.global.cg.f32 %s, [%s+%d]", ok[u].s, lu[u].s, a.s, 4 * u * (d + 2) + 4);
        ptx_ins(k, "@%s ld.global.cg.f32 %s, [%s+%d]", ok[u].s, au[u].s, ai.s, 4 * u * (d + 2) + 8);
    }
    for (int u = 0; u < COMBINE_U; u++) { /* the records past nz do nothing: no +0 either */
        ptx_ins(k, "sub.f32 %s, %s, %s", f.s, mu[u].s, mx.s);
        ptx_ins(k, "ex2.approx.f32 %s, %s", f.s, f.s);
        ptx_ins(k, "@%s fma.rn.f32 %s, %s, %s, %s", ok[u].s, l.s, f.s, lu[u].s, l.s);
        ptx_ins(k, "@%s fma.rn.f32 %s, %s, %s, %s", ok[u].s, o.s, f.s, au[u].s, o.s);
    }
    ptx_ins(k, "add.s64 %s, %s, %d", a.s, a.s, 4 * COMBINE_U * (d + 2));
    ptx_ins(k, "add.s64 %s, %s, %d", ai.s, ai.s, 4 * COMBINE_U * (d + 2));
    ptx_ins(k, "add.u32 %s, %s, %d", z.s, z.s, COMBINE_U);
    ptx_ins(k, "setp.lt.u32 %s, %s, %s", p.s, z.s, nz.s);
    ptx_ins(k, "@%s bra %s", p.s, top2.s);

    ptx_ins(k, "div.rn.f32 %s, %s, %s", o.s, o.s, l.s);
    struct ptx_reg oi = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", oi.s, head.s, d, tid.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", oi.s, g.s, n_head * d, oi.s);
    struct ptx_reg oa = ptx_addr(k, at->out, oi, 4);
    ptx_ins(k, "st.global.f32 [%s], %s", oa.s, o.s);
}

/* The end of a split kernel's CTA (attn_gather, attn_rows, attn_rows_tc), once each of its
 * COMBINE_WARPS warps has put its (max, sum, acc) in the shared arrays s_m[w], s_l[w] and
 * s_acc[w d + col] (declared by the kernel): thread col < d joins the warps (their maximum,
 * then the rescaled sums in warp order); with one split it writes out = acc / sum, else the
 * CTA's record, counts it in (count: the counters' global address) and the last CTA of
 * (g, head) joins every record (attn_combine_emit). Every thread of the CTA takes part. */
void attn_split_finish_emit(struct ptx_kernel *k, const struct attn_combine_at *at,
                            struct ptx_reg z, struct ptx_reg count, int n_head, int d) {
    struct ptx_reg g = at->g, head = at->head, tid = at->tid, nz = at->nz, done = at->done;
    struct ptx_reg p = ptx_reg(k, PTX_PRED), l = ptx_reg(k, PTX_F32), a = ptx_reg(k, PTX_B32);
    int c = n_head * d;
    char s_m[32], s_l[32], s_acc[32], s_last[32];
    ptx_sym(k, s_m, sizeof s_m, "s_m");
    ptx_sym(k, s_l, sizeof s_l, "s_l");
    ptx_sym(k, s_acc, sizeof s_acc, "s_acc");
    ptx_sym(k, s_last, sizeof s_last, "s_last");
    ptx_bar_sync(k);
    struct ptx_reg counted = ptx_label(k); /* threads >= d write nothing, but count */
    ptx_ins(k, "setp.ge.u32 %s, %s, %d", p.s, tid.s, d);
    ptx_ins(k, "@%s bra %s", p.s, counted.s);
    struct ptx_reg mw[COMBINE_WARPS], mx = ptx_reg(k, PTX_F32), f = ptx_reg(k, PTX_F32);
    struct ptx_reg o = ptx_reg(k, PTX_F32), t = ptx_reg(k, PTX_F32);
    ptx_ins(k, "mov.f32 %s, %s", mx.s, NEG_BIG);
    for (int w = 0; w < COMBINE_WARPS; w++) {
        mw[w] = ptx_reg(k, PTX_F32);
        ptx_ins(k, "ld.shared.f32 %s, [%s+%d]", mw[w].s, s_m, 4 * w);
        ptx_ins(k, "max.f32 %s, %s, %s", mx.s, mx.s, mw[w].s);
    }
    ptx_ins(k, "mov.u32 %s, %s", a.s, s_acc);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", a.s, tid.s, a.s);
    ptx_ins(k, "mov.f32 %s, 0f00000000", l.s);
    ptx_ins(k, "mov.f32 %s, 0f00000000", o.s);
    for (int w = 0; w < COMBINE_WARPS; w++) {
        ptx_ins(k, "sub.f32 %s, %s, %s", f.s, mw[w].s, mx.s);
        ptx_ins(k, "ex2.approx.f32 %s, %s", f.s, f.s);
        ptx_ins(k, "ld.shared.f32 %s, [%s+%d]", t.s, s_l, 4 * w);
        ptx_ins(k, "fma.rn.f32 %s, %s, %s, %s", l.s, f.s, t.s, l.s);
        ptx_ins(k, "ld.shared.f32 %s, [%s+%d]", t.s, a.s, 4 * d * w);
        ptx_ins(k, "fma.rn.f32 %s, %s, %s, %s", o.s, f.s, t.s, o.s);
    }
    struct ptx_reg oi = ptx_reg(k, PTX_B32), part = ptx_label(k);
    ptx_ins(k, "setp.ne.u32 %s, %s, 1", p.s, nz.s);
    ptx_ins(k, "@%s bra %s", p.s, part.s);
    ptx_ins(k, "div.rn.f32 %s, %s, %s", o.s, o.s, l.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", oi.s, head.s, d, tid.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", oi.s, g.s, c, oi.s);
    struct ptx_reg oa = ptx_addr(k, at->out, oi, 4);
    ptx_ins(k, "st.global.f32 [%s], %s", oa.s, o.s);
    ptx_ins(k, "bra.uni %s", done.s);
    /* split keys: this CTA's (max, sum, unnormalised acc) for attn_combine, kernels.h's layout */
    ptx_place(k, part);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", oi.s, g.s, n_head, head.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %s, %s", oi.s, oi.s, nz.s, z.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", oi.s, oi.s, d + 2, tid.s);
    struct ptx_reg pa = ptx_addr(k, at->part, oi, 4); /* thread 0: the record */
    ptx_ins(k, "st.global.f32 [%s+8], %s", pa.s, o.s);
    ptx_ins(k, "setp.eq.u32 %s, %s, 0", p.s, tid.s);
    ptx_ins(k, "@%s st.global.f32 [%s], %s", p.s, pa.s, mx.s);
    ptx_ins(k, "@%s st.global.f32 [%s+4], %s", p.s, pa.s, l.s);

    /* count the record in; the last CTA of (g, head) joins them all */
    ptx_place(k, counted);
    ptx_ins(k, "setp.eq.u32 %s, %s, 1", p.s, nz.s); /* one split: written above */
    ptx_ins(k, "@%s bra %s", p.s, done.s);
    ptx_bar_sync(k); /* the CTA's record stores, ordered before thread 0's release */
    struct ptx_reg ci = ptx_reg(k, PTX_B32), old = ptx_reg(k, PTX_B32), zl = ptx_reg(k, PTX_B32);
    struct ptx_reg t0 = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", ci.s, g.s, n_head, head.s);
    struct ptx_reg ca = ptx_addr(k, count, ci, 4);
    ptx_ins(k, "setp.eq.u32 %s, %s, 0", t0.s, tid.s);
    ptx_ins(k, "sub.u32 %s, %s, 1", zl.s, nz.s);
    /* acq_rel at gpu scope: releases this CTA's record (the barrier above brought every
     * thread's stores under thread 0) and, for the last CTA, acquires the others' (the barrier
     * below hands that on to every thread) */
    ptx_ins(k, "@%s atom.acq_rel.gpu.global.add.u32 %s, [%s], 1", t0.s, old.s, ca.s);
    ptx_ins(k, "@%s st.shared.u32 [%s], %s", t0.s, s_last, old.s);
    ptx_bar_sync(k);
    ptx_ins(k, "ld.shared.u32 %s, [%s]", old.s, s_last);
    ptx_ins(k, "setp.ne.u32 %s, %s, %s", p.s, old.s, zl.s);
    ptx_ins(k, "@%s bra %s", p.s, done.s); /* uniform: not the last */
    ptx_ins(k, "@%s st.global.u32 [%s], 0", t0.s, ca.s);
    attn_combine_emit(k, at, n_head, d);
}
