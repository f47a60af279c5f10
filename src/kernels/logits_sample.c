/*
 * logits_sample.c — gen_logits_sample_part and gen_logits_sample_pick: backend.h's
 * logits_sample, the draws of sampling (temperature > 0) after logits_part (logits.c) has
 * reduced each row's chunks (kernels.h).
 *
 * Both kernels start alike: every warp joins the draw's row's records (lg_join_records) and
 * takes logits_greedy's decision (lg_decide): whether the timestamp test forbids the text, the
 * allowed maximum m and log1p of the rest. A column's weight is then exp((x - m) / T) where
 * it is allowed, 0 elsewhere, computed by the same instructions in both kernels.
 *
 * sample_part: one CTA per (draw, chunk of KERNEL_LOGITS_CHUNK columns); the chunk's weights
 * summed in f64, written to wsum[draw][chunk].
 * sample_pick: one CTA per draw. Lane p of each warp holds chunk p's sum; an inclusive scan
 * across the lanes gives the total and the chunk c where the cumulative weight first exceeds
 * target = u * total. The CTA then scans chunk c in column order (thread t holds columns t,
 * t + 256, ...: round r of the scan is column c C + 256 r + t; a warp's inclusive scan, the
 * warps' totals through shared memory) and takes the first column whose cumulative weight
 * exceeds target - (the chunks before c), the CPU's inverse CDF (wc_sample_draw). Where
 * rounding leaves no such column (u * total at the very end of the row), the last allowed
 * column of the chunk. Thread 0 writes {token, (x - m) - log1p(rest)}: log_softmax(x)[token]
 * in f64, rounded to f32; every column masked: {0, -inf}.
 *
 * The weights use ex2.approx (relative ~2^-22) where the CPU uses expf, and the sums run in
 * another order, so a draw differs from the CPU's only where target falls within ~1e-6 of a
 * column's boundary relative to the total; the log-probability is within ~1e-6 relative.
 */
#include <stdio.h>

#include "kernels/logits_rows.h"

#define DRAW_BYTES 16 /* struct wc_sample_draw: {s32 row, f32 temperature, f64 u} */

struct draw {
    struct ptx_reg row, inv_t, m, lr, fb, tok;
    struct lg_rule ru;
};

/* The draw's row and 1 / T (div.rn, as the CPU's 1.0f / temperature), its rule and the row's
 * decision (file comment); u too when u_out is not NULL. */
static struct draw load_draw(struct ptx_kernel *k, struct ptx_reg di, struct ptx_reg lane,
                             int n_part, int n_vocab, struct ptx_reg *u_out) {
    struct draw d;
    d.row = ptx_reg(k, PTX_B32), d.inv_t = ptx_reg(k, PTX_F32);
    struct ptx_reg t = ptx_reg(k, PTX_F32);
    struct ptx_reg da = ptx_addr(k, ptx_ld_ptr(k, "p_draws"), di, DRAW_BYTES);
    ptx_ins(k, "ld.global.nc.u32 %s, [%s]", d.row.s, da.s);
    ptx_ins(k, "ld.global.nc.f32 %s, [%s+4]", t.s, da.s);
    if (u_out)
        ptx_ins(k, "ld.global.nc.f64 %s, [%s+8]", u_out->s, da.s);
    ptx_ins(k, "div.rn.f32 %s, 0f3F800000, %s", d.inv_t.s, t.s);
    struct lg_joined j = lg_join_records(k, d.row, lane, n_part);
    d.ru = lg_load_rule(k, d.row);
    d.m = ptx_reg(k, PTX_F32), d.lr = ptx_reg(k, PTX_F64);
    d.fb = ptx_reg(k, PTX_PRED), d.tok = ptx_reg(k, PTX_B32);
    lg_decide(k, &j, d.ru.tb, n_vocab, d.fb, d.tok, d.lr, &d.m);
    return d;
}

/* w[u] = the weight of the thread's column u of chunk ch (f64, 0 where not allowed), ok[u]
 * whether it is allowed. */
static void weights(struct ptx_kernel *k, const struct draw *d, const struct lg_chunk *ch,
                    struct ptx_reg *w, struct ptx_reg *ok) {
    struct ptx_reg e = ptx_reg(k, PTX_F32), txt = ptx_reg(k, PTX_PRED);
    for (int u = 0; u < LG_U; u++) {
        w[u] = ptx_reg(k, PTX_F64), ok[u] = ptx_reg(k, PTX_PRED);
        ptx_ins(k, "setp.lt.and.u32 %s, %s, %s, %s", txt.s, ch->ci[u].s, d->ru.tb.s, d->fb.s);
        ptx_ins(k, "setp.gt.and.f32 %s, %s, " NEG_INF ", !%s", ok[u].s, ch->x[u].s, txt.s);
        ptx_ins(k, "sub.f32 %s, %s, %s", e.s, ch->x[u].s, d->m.s);
        ptx_ins(k, "mul.f32 %s, %s, %s", e.s, e.s, d->inv_t.s);
        ptx_exp(k, e, e);
        ptx_ins(k, "cvt.f64.f32 %s, %s", w[u].s, e.s);
        ptx_ins(k, "@!%s mov.f64 %s, 0d0000000000000000", ok[u].s, w[u].s);
    }
}

struct ids {
    struct ptx_reg tid, warp, lane, lane0;
};

/* Opens kernel <what>_v<V> with both kernels' parameters (p_out first in the pick), its
 * shared declarations and the thread's ids; returns the number of chunks, 0 when V needs more
 * than 32 (a lane a chunk). */
static int begin(struct ptx_kernel *k, const char *what, int sm, int n_vocab, int pick,
                 const char *shared, struct ids *id) {
    int n_part = n_vocab > 0 ? (n_vocab + KERNEL_LOGITS_CHUNK - 1) / KERNEL_LOGITS_CHUNK : 0;
    if (n_part < 1 || n_part > 32)
        return 0;
    char name[64];
    snprintf(name, sizeof name, "%s_v%d", what, n_vocab);
    ptx_begin(k, name, sm);
    if (pick)
        ptx_param(k, "u64", "p_out");
    ptx_param(k, "u64", "p_wsum");
    ptx_param(k, "u64", "p_part");
    ptx_param(k, "u64", "p_logits");
    ptx_param(k, "u64", "p_rules");
    ptx_param(k, "u64", "p_mask");
    ptx_param(k, "u64", "p_draws");
    ptx_raw(k, "%s", shared);
    id->tid = ptx_special(k, "%tid.x");
    id->warp = ptx_reg(k, PTX_B32), id->lane = ptx_reg(k, PTX_B32);
    id->lane0 = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "shr.u32 %s, %s, 5", id->warp.s, id->tid.s);
    ptx_ins(k, "and.b32 %s, %s, 31", id->lane.s, id->tid.s);
    ptx_ins(k, "setp.eq.u32 %s, %s, 0", id->lane0.s, id->lane.s);
    return n_part;
}

char *gen_logits_sample_part(int sm, int n_vocab) {
    struct ptx_kernel k;
    struct ids id;
    char shared[64];
    snprintf(shared, sizeof shared, "    .shared .align 8 .f64 s_sum[%d];\n", LG_WARPS);
    int n_part = begin(&k, "logits_sample_part", sm, n_vocab, 0, shared, &id);
    if (!n_part)
        return NULL;
    struct ptx_reg tid = id.tid, warp = id.warp, lane = id.lane, lane0 = id.lane0;
    struct ptx_reg di = ptx_special(&k, "%ctaid.x"), chunk = ptx_special(&k, "%ctaid.y");
    struct draw d = load_draw(&k, di, lane, n_part, n_vocab, NULL);
    struct lg_chunk ch = lg_load_chunk(&k, d.row, chunk, tid, &d.ru, n_vocab);
    struct ptx_reg w[LG_U], ok[LG_U], sum = ptx_reg(&k, PTX_F64);
    weights(&k, &d, &ch, w, ok);
    ptx_ins(&k, "mov.f64 %s, %s", sum.s, w[0].s);
    for (int u = 1; u < LG_U; u++)
        ptx_ins(&k, "add.f64 %s, %s, %s", sum.s, sum.s, w[u].s);
    lg_block_sum_f64(&k, sum, "s_sum", warp, lane0);
    struct ptx_reg done = ptx_label(&k), p = ptx_reg(&k, PTX_PRED), idx = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "setp.ne.u32 %s, %s, 0", p.s, tid.s);
    ptx_ins(&k, "@%s bra %s", p.s, done.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", idx.s, di.s, n_part, chunk.s);
    struct ptx_reg oa = ptx_addr(&k, ptx_ld_ptr(&k, "p_wsum"), idx, 8);
    ptx_ins(&k, "st.global.f64 [%s], %s", oa.s, sum.s);
    ptx_place(&k, done);
    return ptx_end(&k);
}

/* v := the inclusive f64 sum over lanes 0 .. lane of the warp (shfl.up). */
static void warp_scan_f64(struct ptx_kernel *k, struct ptx_reg v, struct ptx_reg lane) {
    struct ptx_reg lo = ptx_reg(k, PTX_B32), hi = ptx_reg(k, PTX_B32), t = ptx_reg(k, PTX_F64);
    struct ptx_reg p = ptx_reg(k, PTX_PRED);
    for (int d = 1; d < 32; d *= 2) {
        ptx_ins(k, "mov.b64 {%s, %s}, %s", lo.s, hi.s, v.s);
        ptx_ins(k, "shfl.sync.up.b32 %s, %s, %d, 0, -1", lo.s, lo.s, d);
        ptx_ins(k, "shfl.sync.up.b32 %s, %s, %d, 0, -1", hi.s, hi.s, d);
        ptx_ins(k, "mov.b64 %s, {%s, %s}", t.s, lo.s, hi.s);
        ptx_ins(k, "setp.ge.u32 %s, %s, %d", p.s, lane.s, d);
        ptx_ins(k, "@%s add.f64 %s, %s, %s", p.s, v.s, v.s, t.s);
    }
}

/* An f64 from lane `src` (a register) to every lane. */
static void warp_get_f64(struct ptx_kernel *k, struct ptx_reg dst, struct ptx_reg v,
                         struct ptx_reg src) {
    struct ptx_reg lo = ptx_reg(k, PTX_B32), hi = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mov.b64 {%s, %s}, %s", lo.s, hi.s, v.s);
    ptx_ins(k, "shfl.sync.idx.b32 %s, %s, %s, 31, -1", lo.s, lo.s, src.s);
    ptx_ins(k, "shfl.sync.idx.b32 %s, %s, %s, 31, -1", hi.s, hi.s, src.s);
    ptx_ins(k, "mov.b64 %s, {%s, %s}", dst.s, lo.s, hi.s);
}

/* u32 min (op "min") or max over the warp; every lane gets it. */
static void warp_u32(struct ptx_kernel *k, struct ptx_reg v, const char *op) {
    struct ptx_reg o = ptx_reg(k, PTX_B32);
    for (int d = 16; d >= 1; d /= 2) {
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", o.s, v.s, d);
        ptx_ins(k, "%s.u32 %s, %s, %s", op, v.s, v.s, o.s);
    }
}

/* u32 min (op "min") or max over the block; every thread gets it. Slots: shared u32
 * [LG_WARPS]; the caller's barrier before any earlier use of them is done. */
static void block_u32(struct ptx_kernel *k, struct ptx_reg v, const char *op, const char *slots,
                      struct ptx_reg warp, struct ptx_reg lane0) {
    struct ptx_reg o = ptx_reg(k, PTX_B32), a = ptx_reg(k, PTX_B32);
    warp_u32(k, v, op);
    ptx_ins(k, "mov.u32 %s, %s", a.s, slots);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", a.s, warp.s, a.s);
    ptx_ins(k, "@%s st.shared.u32 [%s], %s", lane0.s, a.s, v.s);
    ptx_ins(k, "bar.sync 0");
    ptx_ins(k, "ld.shared.u32 %s, [%s]", v.s, slots);
    for (int w = 1; w < LG_WARPS; w++) {
        ptx_ins(k, "ld.shared.u32 %s, [%s+%d]", o.s, slots, 4 * w);
        ptx_ins(k, "%s.u32 %s, %s, %s", op, v.s, v.s, o.s);
    }
}

/* The chunk the draw falls in and the target within it (file comment), every thread. */
static void pick_chunk(struct ptx_kernel *k, struct ptx_reg di, struct ptx_reg lane, int n_part,
                       struct ptx_reg u, struct ptx_reg c, struct ptx_reg t_in) {
    struct ptx_reg wp = ptx_reg(k, PTX_F64), incl = ptx_reg(k, PTX_F64);
    struct ptx_reg excl = ptx_reg(k, PTX_F64), tgt = ptx_reg(k, PTX_F64);
    struct ptx_reg in = ptx_reg(k, PTX_PRED), p = ptx_reg(k, PTX_PRED);
    struct ptx_reg idx = ptx_reg(k, PTX_B32), last = ptx_reg(k, PTX_B32);
    struct ptx_reg lo = ptx_reg(k, PTX_B32), hi = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mov.f64 %s, 0d0000000000000000", wp.s);
    ptx_ins(k, "setp.lt.u32 %s, %s, %d", in.s, lane.s, n_part);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", idx.s, di.s, n_part, lane.s);
    struct ptx_reg wa = ptx_addr(k, ptx_ld_ptr(k, "p_wsum"), idx, 8);
    ptx_ins(k, "@%s ld.global.f64 %s, [%s]", in.s, wp.s, wa.s);
    ptx_ins(k, "mov.f64 %s, %s", incl.s, wp.s);
    warp_scan_f64(k, incl, lane);
    /* the total from lane 31; the target; the first lane past it */
    ptx_ins(k, "mov.u32 %s, 31", idx.s);
    warp_get_f64(k, tgt, incl, idx);
    ptx_ins(k, "mul.f64 %s, %s, %s", tgt.s, tgt.s, u.s);
    ptx_ins(k, "setp.gt.and.f64 %s, %s, %s, %s", p.s, incl.s, tgt.s, in.s);
    ptx_ins(k, "selp.u32 %s, %s, 32, %s", c.s, lane.s, p.s);
    warp_u32(k, c, "min");
    /* none (u * total rounded to the total): the last chunk with weight */
    ptx_ins(k, "setp.gt.and.f64 %s, %s, 0d0000000000000000, %s", p.s, wp.s, in.s);
    ptx_ins(k, "selp.u32 %s, %s, 0, %s", last.s, lane.s, p.s);
    warp_u32(k, last, "max");
    ptx_ins(k, "setp.eq.u32 %s, %s, 32", p.s, c.s);
    ptx_ins(k, "@%s mov.u32 %s, %s", p.s, c.s, last.s);
    /* the chunks before c: lane c - 1's inclusive sum (0 for c = 0) */
    ptx_ins(k, "mov.b64 {%s, %s}, %s", lo.s, hi.s, incl.s);
    ptx_ins(k, "shfl.sync.up.b32 %s, %s, 1, 0, -1", lo.s, lo.s);
    ptx_ins(k, "shfl.sync.up.b32 %s, %s, 1, 0, -1", hi.s, hi.s);
    ptx_ins(k, "mov.b64 %s, {%s, %s}", excl.s, lo.s, hi.s);
    ptx_ins(k, "setp.eq.u32 %s, %s, 0", p.s, lane.s);
    ptx_ins(k, "@%s mov.f64 %s, 0d0000000000000000", p.s, excl.s);
    warp_get_f64(k, excl, excl, c);
    ptx_ins(k, "sub.f64 %s, %s, %s", t_in.s, tgt.s, excl.s);
}

char *gen_logits_sample_pick(int sm, int n_vocab) {
    struct ptx_kernel k;
    struct ids id;
    char shared[192];
    snprintf(shared, sizeof shared,
             "    .shared .align 8 .f64 s_wt[%d];\n    .shared .align 4 .u32 s_hit[%d];\n"
             "    .shared .align 4 .u32 s_last[%d];\n",
             LG_U * LG_WARPS, LG_WARPS, LG_WARPS);
    int n_part = begin(&k, "logits_sample_pick", sm, n_vocab, 1, shared, &id);
    if (!n_part)
        return NULL;
    struct ptx_reg tid = id.tid, warp = id.warp, lane = id.lane, lane0 = id.lane0;
    struct ptx_reg di = ptx_special(&k, "%ctaid.x"), u = ptx_reg(&k, PTX_F64);
    struct draw d = load_draw(&k, di, lane, n_part, n_vocab, &u);
    struct ptx_reg c = ptx_reg(&k, PTX_B32), t_in = ptx_reg(&k, PTX_F64);
    pick_chunk(&k, di, lane, n_part, u, c, t_in);

    /* chunk c's weights; each round's warp scan, the warps' totals to s_wt[round][warp] */
    struct lg_chunk ch = lg_load_chunk(&k, d.row, c, tid, &d.ru, n_vocab);
    struct ptx_reg w[LG_U], ok[LG_U], a = ptx_reg(&k, PTX_B32), p = ptx_reg(&k, PTX_PRED);
    weights(&k, &d, &ch, w, ok);
    for (int r = 0; r < LG_U; r++) {
        warp_scan_f64(&k, w[r], lane);
        ptx_ins(&k, "setp.eq.u32 %s, %s, 31", p.s, lane.s);
        ptx_ins(&k, "mov.u32 %s, s_wt", a.s);
        ptx_ins(&k, "mad.lo.u32 %s, %s, 8, %s", a.s, warp.s, a.s);
        ptx_ins(&k, "@%s st.shared.f64 [%s+%d], %s", p.s, a.s, 8 * LG_WARPS * r, w[r].s);
    }
    ptx_ins(&k, "bar.sync 0");

    /* in column order: the first allowed column past t_in, and the last allowed one (+ 1) */
    struct ptx_reg carry = ptx_reg(&k, PTX_F64), before = ptx_reg(&k, PTX_F64);
    struct ptx_reg t = ptx_reg(&k, PTX_F64), hit = ptx_reg(&k, PTX_B32);
    struct ptx_reg last = ptx_reg(&k, PTX_B32), c1 = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", carry.s);
    ptx_ins(&k, "mov.u32 %s, " LG_NONE, hit.s);
    ptx_ins(&k, "mov.u32 %s, 0", last.s);
    for (int r = 0; r < LG_U; r++) {
        ptx_ins(&k, "mov.f64 %s, %s", before.s, carry.s);
        for (int v = 0; v < LG_WARPS; v++) {
            ptx_ins(&k, "ld.shared.f64 %s, [s_wt+%d]", t.s, 8 * (LG_WARPS * r + v));
            ptx_ins(&k, "add.f64 %s, %s, %s", carry.s, carry.s, t.s);
            ptx_ins(&k, "setp.lt.u32 %s, %s, %d", p.s, warp.s, v + 1); /* v < warp: before */
            ptx_ins(&k, "@!%s add.f64 %s, %s, %s", p.s, before.s, before.s, t.s);
        }
        ptx_ins(&k, "add.f64 %s, %s, %s", before.s, before.s, w[r].s);
        ptx_ins(&k, "setp.gt.and.f64 %s, %s, %s, %s", p.s, before.s, t_in.s, ok[r].s);
        ptx_ins(&k, "setp.eq.and.u32 %s, %s, " LG_NONE ", %s", p.s, hit.s, p.s);
        ptx_ins(&k, "@%s mov.u32 %s, %s", p.s, hit.s, ch.ci[r].s);
        ptx_ins(&k, "add.u32 %s, %s, 1", c1.s, ch.ci[r].s);
        ptx_ins(&k, "@%s max.u32 %s, %s, %s", ok[r].s, last.s, last.s, c1.s);
    }
    block_u32(&k, hit, "min", "s_hit", warp, lane0);
    block_u32(&k, last, "max", "s_last", warp, lane0);

    /* thread 0: the token and its log-probability */
    struct ptx_reg done = ptx_label(&k), none = ptx_reg(&k, PTX_PRED);
    struct ptx_reg x = ptx_reg(&k, PTX_F32), lp = ptx_reg(&k, PTX_F64);
    struct ptx_reg md = ptx_reg(&k, PTX_F64), lpf = ptx_reg(&k, PTX_F32);
    ptx_ins(&k, "setp.ne.u32 %s, %s, 0", p.s, tid.s);
    ptx_ins(&k, "@%s bra %s", p.s, done.s);
    ptx_ins(&k, "setp.eq.u32 %s, %s, " LG_NONE, p.s, hit.s);
    ptx_ins(&k, "@%s sub.u32 %s, %s, 1", p.s, hit.s, last.s);
    ptx_ins(&k, "setp.eq.u32 %s, %s, " LG_NONE, none.s, d.tok.s); /* every column masked */
    ptx_ins(&k, "@%s mov.u32 %s, 0", none.s, hit.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", a.s, d.row.s, n_vocab, hit.s);
    struct ptx_reg xa = ptx_addr(&k, ptx_ld_ptr(&k, "p_logits"), a, 4);
    ptx_ins(&k, "ld.global.nc.f32 %s, [%s]", x.s, xa.s);
    ptx_ins(&k, "cvt.f64.f32 %s, %s", lp.s, x.s);
    ptx_ins(&k, "cvt.f64.f32 %s, %s", md.s, d.m.s);
    ptx_ins(&k, "sub.f64 %s, %s, %s", lp.s, lp.s, md.s);
    ptx_ins(&k, "sub.f64 %s, %s, %s", lp.s, lp.s, d.lr.s);
    ptx_ins(&k, "cvt.rn.f32.f64 %s, %s", lpf.s, lp.s);
    ptx_ins(&k, "@%s mov.f32 %s, " NEG_INF, none.s, lpf.s);
    ptx_ins(&k, "shl.b32 %s, %s, 1", a.s, di.s);
    struct ptx_reg oa = ptx_addr(&k, ptx_ld_ptr(&k, "p_out"), a, 4);
    ptx_ins(&k, "st.global.u32 [%s], %s", oa.s, hit.s);
    ptx_ins(&k, "st.global.f32 [%s+4], %s", oa.s, lpf.s);
    ptx_place(&k, done);
    return ptx_end(&k);
}
