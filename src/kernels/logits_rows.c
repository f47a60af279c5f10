/* logits_rows.c — the pieces the logits kernels share (logits_rows.h). */
#include "kernels/logits_rows.h"

#include <stdio.h>
#include <string.h>

struct lg_rule lg_load_rule(struct ptx_kernel *k, struct ptx_reg row) {
    struct ptx_reg idx = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", idx.s, row.s, KERNEL_LOGITS_RULE_WORDS);
    struct ptx_reg ra = ptx_addr(k, ptx_ld_ptr(k, "p_rules"), idx, 4);
    struct lg_rule ru;
    for (int j = 0; j < KERNEL_LOGITS_RANGES; j++) {
        ru.lo[j] = ptx_reg(k, PTX_B32);
        ru.width[j] = ptx_reg(k, PTX_B32);
        ptx_ins(k, "ld.global.nc.u32 %s, [%s+%d]", ru.lo[j].s, ra.s, 4 * j);
        ptx_ins(k, "ld.global.nc.u32 %s, [%s+%d]", ru.width[j].s, ra.s,
                4 * (KERNEL_LOGITS_RANGES + j));
    }
    ru.tb = ptx_reg(k, PTX_B32);
    ptx_ins(k, "ld.global.nc.u32 %s, [%s+%d]", ru.tb.s, ra.s, 8 * KERNEL_LOGITS_RANGES);
    return ru;
}

struct lg_chunk lg_load_chunk(struct ptx_kernel *k, struct ptx_reg row, struct ptx_reg chunk,
                              struct ptx_reg tid, const struct lg_rule *ru, int n_vocab) {
    struct lg_chunk ch;
    struct ptx_reg c0 = ptx_reg(k, PTX_B32), idx = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", c0.s, chunk.s, KERNEL_LOGITS_CHUNK, tid.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", idx.s, row.s, n_vocab, c0.s);
    struct ptx_reg base = ptx_addr(k, ptx_ld_ptr(k, "p_logits"), idx, 4);
    struct ptx_reg mask = ptx_ld_ptr(k, "p_mask");
    for (int u = 0; u < LG_U; u++) {
        ch.ci[u] = ptx_reg(k, PTX_B32), ch.x[u] = ptx_reg(k, PTX_F32);
        struct ptx_reg a = ptx_reg(k, PTX_B64);
        ptx_ins(k, "add.u32 %s, %s, %d", ch.ci[u].s, c0.s, u * KERNEL_LOGITS_THREADS);
        ptx_ins(k, "add.s64 %s, %s, %d", a.s, base.s, 4 * u * KERNEL_LOGITS_THREADS);
        lg_masked_load(k, ch.x[u], a, ch.ci[u], mask, ru, n_vocab);
    }
    return ch;
}

/* (v, i) := (ov, oi) when ov > v, or ov == v with a lower index: torch.argmax's first max */
void lg_take_better(struct ptx_kernel *k, struct ptx_reg v, struct ptx_reg i, struct ptx_reg ov,
                    struct ptx_reg oi) {
    struct ptx_reg p = ptx_reg(k, PTX_PRED), q = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "setp.lt.u32 %s, %s, %s", q.s, oi.s, i.s);
    ptx_ins(k, "setp.eq.and.f32 %s, %s, %s, %s", q.s, ov.s, v.s, q.s);
    ptx_ins(k, "setp.gt.or.f32 %s, %s, %s, %s", p.s, ov.s, v.s, q.s);
    ptx_ins(k, "selp.f32 %s, %s, %s, %s", v.s, ov.s, v.s, p.s);
    ptx_ins(k, "selp.b32 %s, %s, %s, %s", i.s, oi.s, i.s, p.s);
}

/* Block-wide (max, first index); every thread gets it. Slots: shared sv/si [LG_WARPS]. */
void lg_block_argmax(struct ptx_kernel *k, struct ptx_reg v, struct ptx_reg i, const char *sv,
                     const char *si, struct ptx_reg warp, struct ptx_reg lane0) {
    struct ptx_reg ov = ptx_reg(k, PTX_F32), oi = ptx_reg(k, PTX_B32), a = ptx_reg(k, PTX_B32);
    for (int d = 16; d >= 1; d /= 2) {
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", ov.s, v.s, d);
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", oi.s, i.s, d);
        lg_take_better(k, v, i, ov, oi);
    }
    ptx_ins(k, "mov.u32 %s, %s", a.s, sv);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", a.s, warp.s, a.s);
    ptx_ins(k, "@%s st.shared.f32 [%s], %s", lane0.s, a.s, v.s);
    ptx_ins(k, "mov.u32 %s, %s", a.s, si);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", a.s, warp.s, a.s);
    ptx_ins(k, "@%s st.shared.u32 [%s], %s", lane0.s, a.s, i.s);
    ptx_ins(k, "bar.sync 0");
    ptx_ins(k, "ld.shared.f32 %s, [%s]", v.s, sv);
    ptx_ins(k, "ld.shared.u32 %s, [%s]", i.s, si);
    for (int w = 1; w < LG_WARPS; w++) {
        ptx_ins(k, "ld.shared.f32 %s, [%s+%d]", ov.s, sv, 4 * w);
        ptx_ins(k, "ld.shared.u32 %s, [%s+%d]", oi.s, si, 4 * w);
        lg_take_better(k, v, i, ov, oi);
    }
}

/* f64 sum over the warp (butterfly: every lane gets it, in the same order for every row). */
void lg_warp_sum_f64(struct ptx_kernel *k, struct ptx_reg v) {
    struct ptx_reg lo = ptx_reg(k, PTX_B32), hi = ptx_reg(k, PTX_B32), t = ptx_reg(k, PTX_F64);
    for (int d = 16; d >= 1; d /= 2) {
        ptx_ins(k, "mov.b64 {%s, %s}, %s", lo.s, hi.s, v.s);
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", lo.s, lo.s, d);
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", hi.s, hi.s, d);
        ptx_ins(k, "mov.b64 %s, {%s, %s}", t.s, lo.s, hi.s);
        ptx_ins(k, "add.f64 %s, %s, %s", v.s, v.s, t.s);
    }
}

/* Block-wide f64 sum; every thread gets it. Slots: shared f64 [LG_WARPS] at `slots`. */
void lg_block_sum_f64(struct ptx_kernel *k, struct ptx_reg v, const char *slots,
                      struct ptx_reg warp, struct ptx_reg lane0) {
    struct ptx_reg lo = ptx_reg(k, PTX_B32), hi = ptx_reg(k, PTX_B32), t = ptx_reg(k, PTX_F64);
    struct ptx_reg a = ptx_reg(k, PTX_B32);
    for (int d = 16; d >= 1; d /= 2) {
        ptx_ins(k, "mov.b64 {%s, %s}, %s", lo.s, hi.s, v.s);
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", lo.s, lo.s, d);
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", hi.s, hi.s, d);
        ptx_ins(k, "mov.b64 %s, {%s, %s}", t.s, lo.s, hi.s);
        ptx_ins(k, "add.f64 %s, %s, %s", v.s, v.s, t.s);
    }
    ptx_ins(k, "mov.u32 %s, %s", a.s, slots);
    ptx_ins(k, "mad.lo.u32 %s, %s, 8, %s", a.s, warp.s, a.s);
    ptx_ins(k, "@%s st.shared.f64 [%s], %s", lane0.s, a.s, v.s);
    ptx_ins(k, "bar.sync 0");
    ptx_ins(k, "ld.shared.f64 %s, [%s]", v.s, slots);
    for (int w = 1; w < LG_WARPS; w++) {
        ptx_ins(k, "ld.shared.f64 %s, [%s+%d]", t.s, slots, 8 * w);
        ptx_ins(k, "add.f64 %s, %s, %s", v.s, v.s, t.s);
    }
}

/* x = the masked logit at column i (addr its address): -inf when suppressed, in a range or
 * past the row (i >= V: nothing read). */
void lg_masked_load(struct ptx_kernel *k, struct ptx_reg x, struct ptx_reg addr, struct ptx_reg i,
                    struct ptx_reg mask, const struct lg_rule *ru, int n_vocab) {
    struct ptx_reg wi = ptx_reg(k, PTX_B32), mw = ptx_reg(k, PTX_B32), f = ptx_reg(k, PTX_PRED);
    struct ptx_reg in = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "setp.lt.u32 %s, %s, %d", in.s, i.s, n_vocab);
    ptx_ins(k, "@%s ld.global.nc.f32 %s, [%s]", in.s, x.s, addr.s);
    ptx_ins(k, "shr.u32 %s, %s, 5", wi.s, i.s);
    struct ptx_reg ma = ptx_addr(k, mask, wi, 4);
    ptx_ins(k, "mov.u32 %s, 1", mw.s);
    ptx_ins(k, "@%s ld.global.nc.u32 %s, [%s]", in.s, mw.s, ma.s);
    ptx_ins(k, "and.b32 %s, %s, 31", wi.s, i.s);
    ptx_ins(k, "@%s shr.b32 %s, %s, %s", in.s, mw.s, mw.s, wi.s);
    ptx_ins(k, "and.b32 %s, %s, 1", mw.s, mw.s);
    ptx_ins(k, "setp.ne.u32 %s, %s, 0", f.s, mw.s);
    for (int j = 0; j < KERNEL_LOGITS_RANGES; j++) { /* lo <= i < lo + width, unsigned */
        ptx_ins(k, "sub.u32 %s, %s, %s", wi.s, i.s, ru->lo[j].s);
        ptx_ins(k, "setp.lt.or.u32 %s, %s, %s, %s", f.s, wi.s, ru->width[j].s, f.s);
    }
    ptx_ins(k, "@%s mov.f32 %s, " NEG_INF, f.s, x.s);
}

struct f64_imm {
    char s[20]; /* "0d3FF0000000000000" */
};

static struct f64_imm f64_imm(double v) {
    struct f64_imm r;
    unsigned long long bits;
    memcpy(&bits, &v, sizeof bits);
    snprintf(r.s, sizeof r.s, "0d%016llX", bits);
    return r;
}

/* dst = log1p(r) for r >= 0 in f64: S = 1 + r = 2^e f with f in [√½, √2) (e = 0 and
 * f - 1 = r exactly when S < √2), log S = e ln 2 + 2 atanh(t), t = (f - 1) / (f + 1),
 * |t| <= 0.1716, atanh by its series to t^23 (next term < 2e-19). */
void lg_log1p_f64(struct ptx_kernel *k, struct ptx_reg dst, struct ptx_reg r) {
    struct ptx_reg s = ptx_reg(k, PTX_F64), f = ptx_reg(k, PTX_F64), num = ptx_reg(k, PTX_F64);
    struct ptx_reg den = ptx_reg(k, PTX_F64), t = ptx_reg(k, PTX_F64), u = ptx_reg(k, PTX_F64);
    struct ptx_reg bits = ptx_reg(k, PTX_B64), e = ptx_reg(k, PTX_B32), ef = ptx_reg(k, PTX_F64);
    struct ptx_reg small = ptx_reg(k, PTX_PRED), big = ptx_reg(k, PTX_PRED);
    struct f64_imm sq2 = f64_imm(1.4142135623730951);
    const char *sqrt2 = sq2.s;
    ptx_ins(k, "add.f64 %s, %s, 0d3FF0000000000000", s.s, r.s);
    ptx_ins(k, "mov.b64 %s, %s", bits.s, s.s);
    ptx_ins(k, "shr.u64 %s, %s, 52", bits.s, bits.s);
    ptx_ins(k, "cvt.u32.u64 %s, %s", e.s, bits.s);
    ptx_ins(k, "sub.s32 %s, %s, 1023", e.s, e.s);
    ptx_ins(k, "mov.b64 %s, %s", bits.s, s.s);
    ptx_ins(k, "and.b64 %s, %s, 0x000FFFFFFFFFFFFF", bits.s, bits.s);
    ptx_ins(k, "or.b64 %s, %s, 0x3FF0000000000000", bits.s, bits.s);
    ptx_ins(k, "mov.b64 %s, %s", f.s, bits.s);
    ptx_ins(k, "setp.gt.f64 %s, %s, %s", big.s, f.s, sqrt2);
    ptx_ins(k, "@%s mul.f64 %s, %s, 0d3FE0000000000000", big.s, f.s, f.s);
    ptx_ins(k, "@%s add.s32 %s, %s, 1", big.s, e.s, e.s);
    ptx_ins(k, "sub.f64 %s, %s, 0d3FF0000000000000", num.s, f.s);
    ptx_ins(k, "add.f64 %s, %s, 0d3FF0000000000000", den.s, f.s);
    ptx_ins(k, "setp.lt.f64 %s, %s, %s", small.s, s.s, sqrt2);
    ptx_ins(k, "@%s mov.f64 %s, %s", small.s, num.s, r.s);
    ptx_ins(k, "@%s add.f64 %s, %s, 0d4000000000000000", small.s, den.s, r.s);
    ptx_ins(k, "@%s mov.u32 %s, 0", small.s, e.s);
    ptx_ins(k, "div.rn.f64 %s, %s, %s", t.s, num.s, den.s);
    ptx_ins(k, "mul.f64 %s, %s, %s", u.s, t.s, t.s);
    ptx_ins(k, "mov.f64 %s, %s", dst.s, f64_imm(1.0 / 23).s);
    for (int n = 21; n >= 1; n -= 2)
        ptx_ins(k, "fma.rn.f64 %s, %s, %s, %s", dst.s, dst.s, u.s, f64_imm(1.0 / n).s);
    ptx_ins(k, "mul.f64 %s, %s, %s", dst.s, dst.s, t.s);
    ptx_ins(k, "add.f64 %s, %s, %s", dst.s, dst.s, dst.s);
    ptx_ins(k, "cvt.rn.f64.s32 %s, %s", ef.s, e.s);
    ptx_ins(k, "fma.rn.f64 %s, %s, %s, %s", dst.s, ef.s, f64_imm(0.69314718055994531).s, dst.s);
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

struct lg_joined lg_join_records(struct ptx_kernel *k, struct ptx_reg row, struct ptx_reg lane,
                                 int n_part) {
    struct ptx_reg idx = ptx_reg(k, PTX_B32), in = ptx_reg(k, PTX_PRED);
    /* lane p < P: record p of this row; the others an empty record */
    struct ptx_reg tmax = ptx_reg(k, PTX_F32), tidx = ptx_reg(k, PTX_B32);
    struct ptx_reg smax = ptx_reg(k, PTX_F32), sidx = ptx_reg(k, PTX_B32);
    struct ptx_reg tr = ptx_reg(k, PTX_F64), sr = ptx_reg(k, PTX_F64);
    ptx_ins(k, "mov.f32 %s, " NEG_INF, tmax.s);
    ptx_ins(k, "mov.f32 %s, " NEG_INF, smax.s);
    ptx_ins(k, "mov.u32 %s, " LG_NONE, tidx.s);
    ptx_ins(k, "mov.u32 %s, " LG_NONE, sidx.s);
    ptx_ins(k, "mov.f64 %s, 0d0000000000000000", tr.s);
    ptx_ins(k, "mov.f64 %s, 0d0000000000000000", sr.s);
    ptx_ins(k, "setp.lt.u32 %s, %s, %d", in.s, lane.s, n_part);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", idx.s, row.s, n_part, lane.s);
    struct ptx_reg ra = ptx_addr(k, ptx_ld_ptr(k, "p_part"), idx, KERNEL_LOGITS_RECORD);
    ptx_ins(k, "@%s ld.global.f32 %s, [%s]", in.s, tmax.s, ra.s);
    ptx_ins(k, "@%s ld.global.u32 %s, [%s+4]", in.s, tidx.s, ra.s);
    ptx_ins(k, "@%s ld.global.f32 %s, [%s+8]", in.s, smax.s, ra.s);
    ptx_ins(k, "@%s ld.global.u32 %s, [%s+12]", in.s, sidx.s, ra.s);
    ptx_ins(k, "@%s ld.global.f64 %s, [%s+16]", in.s, tr.s, ra.s);
    ptx_ins(k, "@%s ld.global.f64 %s, [%s+24]", in.s, sr.s, ra.s);
    struct lg_joined j;
    j.tm = ptx_reg(k, PTX_F32), j.ti = ptx_reg(k, PTX_B32), j.tr = ptx_reg(k, PTX_F64);
    j.sm = ptx_reg(k, PTX_F32), j.si = ptx_reg(k, PTX_B32), j.sr = ptx_reg(k, PTX_F64);
    join_part(k, tmax, tidx, tr, j.tm, j.ti, j.tr);
    join_part(k, smax, sidx, sr, j.sm, j.si, j.sr);
    return j;
}

struct ptx_reg lg_load_tb(struct ptx_kernel *k, struct ptx_reg row) {
    struct ptx_reg idx = ptx_reg(k, PTX_B32), tb = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", idx.s, row.s, KERNEL_LOGITS_RULE_WORDS);
    struct ptx_reg rule = ptx_addr(k, ptx_ld_ptr(k, "p_rules"), idx, 4);
    ptx_ins(k, "ld.global.nc.u32 %s, [%s+%d]", tb.s, rule.s, 8 * KERNEL_LOGITS_RANGES);
    return tb;
}

void lg_decide(struct ptx_kernel *k, const struct lg_joined *j, struct ptx_reg tb, int n_vocab,
               struct ptx_reg fb, struct ptx_reg tok, struct ptx_reg lr, const struct ptx_reg *m) {
    struct ptx_reg lts = ptx_reg(k, PTX_F64), d = ptx_reg(k, PTX_F64), t = ptx_reg(k, PTX_F64);
    struct ptx_reg big = ptx_reg(k, PTX_PRED);
    struct ptx_reg hi = ptx_reg(k, PTX_F32), lo = ptx_reg(k, PTX_F32), e = ptx_reg(k, PTX_F32);
    struct ptx_reg rest = ptx_reg(k, PTX_F64), other = ptx_reg(k, PTX_F64);
    /* forbid text <=> tb < V, a timestamp unmasked, log1p(rest_ts) > max_text - max_ts */
    lg_log1p_f64(k, lts, j->sr);
    ptx_ins(k, "cvt.f64.f32 %s, %s", d.s, j->tm.s);
    ptx_ins(k, "cvt.f64.f32 %s, %s", t.s, j->sm.s);
    ptx_ins(k, "sub.f64 %s, %s, %s", d.s, d.s, t.s);
    ptx_ins(k, "setp.gt.f64 %s, %s, %s", fb.s, lts.s, d.s);
    ptx_ins(k, "setp.ne.and.f32 %s, %s, " NEG_INF ", %s", fb.s, j->sm.s, fb.s);
    ptx_ins(k, "setp.lt.and.u32 %s, %s, %d, %s", fb.s, tb.s, n_vocab, fb.s);
    /* otherwise the larger part's argmax; rest = its rest + the other part scaled to it */
    ptx_ins(k, "setp.gt.f32 %s, %s, %s", big.s, j->sm.s, j->tm.s);
    ptx_ins(k, "selp.f32 %s, %s, %s, %s", hi.s, j->sm.s, j->tm.s, big.s);
    ptx_ins(k, "selp.f32 %s, %s, %s, %s", lo.s, j->tm.s, j->sm.s, big.s);
    ptx_ins(k, "selp.b32 %s, %s, %s, %s", tok.s, j->si.s, j->ti.s, big.s);
    ptx_ins(k, "selp.f64 %s, %s, %s, %s", rest.s, j->sr.s, j->tr.s, big.s);
    ptx_ins(k, "selp.f64 %s, %s, %s, %s", other.s, j->tr.s, j->sr.s, big.s);
    ptx_ins(k, "sub.f32 %s, %s, %s", e.s, lo.s, hi.s);
    ptx_exp(k, e, e); /* exp(-inf) = 0: an empty part adds nothing */
    ptx_ins(k, "cvt.f64.f32 %s, %s", t.s, e.s);
    ptx_ins(k, "add.f64 %s, %s, 0d3FF0000000000000", other.s, other.s);
    ptx_ins(k, "fma.rn.f64 %s, %s, %s, %s", rest.s, other.s, t.s, rest.s);
    lg_log1p_f64(k, lr, rest);
    ptx_ins(k, "@%s mov.b32 %s, %s", fb.s, tok.s, j->si.s);
    ptx_ins(k, "@%s mov.f64 %s, %s", fb.s, lr.s, lts.s);
    if (m) {
        ptx_ins(k, "mov.f32 %s, %s", m->s, hi.s);
        ptx_ins(k, "@%s mov.f32 %s, %s", fb.s, m->s, j->sm.s);
    }
}
