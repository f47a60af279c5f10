/*
 * logits.c — gen_logits_part: the first half of backend.h's logits_greedy (kernels.h). A row is
 * cut into chunks of KERNEL_LOGITS_CHUNK columns, one CTA each (a step's few rows alone would
 * otherwise leave the GPU idle: one CTA a row walking 51,865 columns took 45-100 µs on an
 * H100); thread t loads columns t, t + 256, … of its chunk, LG_U of them, all in flight at
 * once, and keeps them in registers for two passes:
 *   pass 1: the masked chunk's maximum and its first column, apart for text tokens [0, tb) and
 *           timestamps [tb, V) (tb = V without the timestamp test);
 *   pass 2: rest = sum of exp(x - max) over every other unmasked column, per part, in f64;
 * block-wide through warp shuffles and per-warp shared slots; thread 0 writes the chunk's
 * record, which logits_pick (logits_pick.c) joins with the row's others.
 */
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

#define LG_WARPS (KERNEL_LOGITS_THREADS / 32)
#define LG_U     (KERNEL_LOGITS_CHUNK / KERNEL_LOGITS_THREADS) /* columns a thread loads: 8 */
#define LG_NONE  "0xFFFFFFFF" /* no index: every column of the part is masked */
#define NEG_INF  "0fFF800000"

/* (v, i) := (ov, oi) when ov > v, or ov == v with a lower index: torch.argmax's first max */
static void take_better(struct ptx_kernel *k, struct ptx_reg v, struct ptx_reg i, struct ptx_reg ov,
                        struct ptx_reg oi) {
    struct ptx_reg p = ptx_reg(k, PTX_PRED), q = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "setp.lt.u32 %s, %s, %s", q.s, oi.s, i.s);
    ptx_ins(k, "setp.eq.and.f32 %s, %s, %s, %s", q.s, ov.s, v.s, q.s);
    ptx_ins(k, "setp.gt.or.f32 %s, %s, %s, %s", p.s, ov.s, v.s, q.s);
    ptx_ins(k, "selp.f32 %s, %s, %s, %s", v.s, ov.s, v.s, p.s);
    ptx_ins(k, "selp.b32 %s, %s, %s, %s", i.s, oi.s, i.s, p.s);
}

/* Block-wide (max, first index); every thread gets it. Slots: shared sv/si [LG_WARPS]. */
static void block_argmax(struct ptx_kernel *k, struct ptx_reg v, struct ptx_reg i, const char *sv,
                         const char *si, struct ptx_reg warp, struct ptx_reg lane0) {
    struct ptx_reg ov = ptx_reg(k, PTX_F32), oi = ptx_reg(k, PTX_B32), a = ptx_reg(k, PTX_B32);
    for (int d = 16; d >= 1; d /= 2) {
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", ov.s, v.s, d);
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", oi.s, i.s, d);
        take_better(k, v, i, ov, oi);
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
        take_better(k, v, i, ov, oi);
    }
}

/* Block-wide f64 sum; every thread gets it. Slots: shared f64 [LG_WARPS] at `slots`. */
static void block_sum_f64(struct ptx_kernel *k, struct ptx_reg v, const char *slots,
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

/* The row's rule, as the op packs it (kernels.h): lo[8], width[8], tb. */
struct lg_rule {
    struct ptx_reg lo[KERNEL_LOGITS_RANGES], width[KERNEL_LOGITS_RANGES], tb;
};

/* x = the masked logit at column i (addr its address): -inf when suppressed, in a range or
 * past the row (i >= V: nothing read). */
static void masked_load(struct ptx_kernel *k, struct ptx_reg x, struct ptx_reg addr,
                        struct ptx_reg i, struct ptx_reg mask, const struct lg_rule *ru,
                        int n_vocab) {
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

char *gen_logits_part(int sm, int n_vocab) {
    int n_part = n_vocab > 0 ? (n_vocab + KERNEL_LOGITS_CHUNK - 1) / KERNEL_LOGITS_CHUNK : 0;
    if (n_part < 1 || n_part > 32) /* logits_pick: one lane per record */
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "logits_part_v%d", n_vocab);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_part");
    ptx_param(&k, "u64", "p_logits");
    ptx_param(&k, "u64", "p_rules");
    ptx_param(&k, "u64", "p_mask");
    ptx_raw(&k,
            "    .shared .align 4 .f32 s_tv[%d];\n    .shared .align 4 .u32 s_ti[%d];\n"
            "    .shared .align 4 .f32 s_sv[%d];\n    .shared .align 4 .u32 s_si[%d];\n"
            "    .shared .align 8 .f64 s_tr[%d];\n    .shared .align 8 .f64 s_sr[%d];\n",
            LG_WARPS, LG_WARPS, LG_WARPS, LG_WARPS, LG_WARPS, LG_WARPS);
    struct ptx_reg row = ptx_special(&k, "%ctaid.x"), chunk = ptx_special(&k, "%ctaid.y");
    struct ptx_reg tid = ptx_special(&k, "%tid.x");
    struct ptx_reg logits = ptx_ld_ptr(&k, "p_logits"), rules = ptx_ld_ptr(&k, "p_rules");
    struct ptx_reg mask = ptx_ld_ptr(&k, "p_mask");
    struct ptx_reg warp = ptx_reg(&k, PTX_B32), lane0 = ptx_reg(&k, PTX_PRED);
    struct ptx_reg idx = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "shr.u32 %s, %s, 5", warp.s, tid.s);
    ptx_ins(&k, "and.b32 %s, %s, 31", idx.s, tid.s);
    ptx_ins(&k, "setp.eq.u32 %s, %s, 0", lane0.s, idx.s);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", idx.s, row.s, KERNEL_LOGITS_RULE_WORDS);
    struct ptx_reg ra = ptx_addr(&k, rules, idx, 4);
    struct lg_rule ru;
    for (int j = 0; j < KERNEL_LOGITS_RANGES; j++) {
        ru.lo[j] = ptx_reg(&k, PTX_B32);
        ru.width[j] = ptx_reg(&k, PTX_B32);
        ptx_ins(&k, "ld.global.nc.u32 %s, [%s+%d]", ru.lo[j].s, ra.s, 4 * j);
        ptx_ins(&k, "ld.global.nc.u32 %s, [%s+%d]", ru.width[j].s, ra.s,
                4 * (KERNEL_LOGITS_RANGES + j));
    }
    ru.tb = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "ld.global.nc.u32 %s, [%s+%d]", ru.tb.s, ra.s, 8 * KERNEL_LOGITS_RANGES);

    /* this thread's columns i[u] = chunk C + tid + 256 u, masked, all loads at once */
    struct ptx_reg ci[LG_U], x[LG_U], c0 = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", c0.s, chunk.s, KERNEL_LOGITS_CHUNK, tid.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", idx.s, row.s, n_vocab, c0.s);
    struct ptx_reg base = ptx_addr(&k, logits, idx, 4);
    for (int u = 0; u < LG_U; u++) {
        ci[u] = ptx_reg(&k, PTX_B32), x[u] = ptx_reg(&k, PTX_F32);
        struct ptx_reg a = ptx_reg(&k, PTX_B64);
        ptx_ins(&k, "add.u32 %s, %s, %d", ci[u].s, c0.s, u * KERNEL_LOGITS_THREADS);
        ptx_ins(&k, "add.s64 %s, %s, %d", a.s, base.s, 4 * u * KERNEL_LOGITS_THREADS);
        masked_load(&k, x[u], a, ci[u], mask, &ru, n_vocab);
    }

    /* pass 1: per-part maximum and its first column */
    struct ptx_reg tmax = ptx_reg(&k, PTX_F32), tidx = ptx_reg(&k, PTX_B32);
    struct ptx_reg smax = ptx_reg(&k, PTX_F32), sidx = ptx_reg(&k, PTX_B32);
    struct ptx_reg pt = ptx_reg(&k, PTX_PRED), pu = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "mov.f32 %s, " NEG_INF, tmax.s);
    ptx_ins(&k, "mov.f32 %s, " NEG_INF, smax.s);
    ptx_ins(&k, "mov.u32 %s, " LG_NONE, tidx.s);
    ptx_ins(&k, "mov.u32 %s, " LG_NONE, sidx.s);
    for (int u = 0; u < LG_U; u++) { /* columns in increasing order: the first max stays */
        ptx_ins(&k, "setp.lt.u32 %s, %s, %s", pt.s, ci[u].s, ru.tb.s);
        ptx_ins(&k, "setp.gt.and.f32 %s, %s, %s, %s", pu.s, x[u].s, tmax.s, pt.s);
        ptx_ins(&k, "@%s mov.f32 %s, %s", pu.s, tmax.s, x[u].s);
        ptx_ins(&k, "@%s mov.u32 %s, %s", pu.s, tidx.s, ci[u].s);
        ptx_ins(&k, "setp.gt.and.f32 %s, %s, %s, !%s", pu.s, x[u].s, smax.s, pt.s);
        ptx_ins(&k, "@%s mov.f32 %s, %s", pu.s, smax.s, x[u].s);
        ptx_ins(&k, "@%s mov.u32 %s, %s", pu.s, sidx.s, ci[u].s);
    }
    block_argmax(&k, tmax, tidx, "s_tv", "s_ti", warp, lane0);
    block_argmax(&k, smax, sidx, "s_sv", "s_si", warp, lane0);

    /* pass 2: per-part sum of exp(x - max) over the unmasked columns but the argmax */
    struct ptx_reg tr = ptx_reg(&k, PTX_F64), sr = ptx_reg(&k, PTX_F64);
    struct ptx_reg m = ptx_reg(&k, PTX_F32), e = ptx_reg(&k, PTX_F32), ed = ptx_reg(&k, PTX_F64);
    struct ptx_reg bi = ptx_reg(&k, PTX_B32), pk = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", tr.s);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", sr.s);
    for (int u = 0; u < LG_U; u++) {
        ptx_ins(&k, "setp.lt.u32 %s, %s, %s", pt.s, ci[u].s, ru.tb.s);
        ptx_ins(&k, "selp.f32 %s, %s, %s, %s", m.s, tmax.s, smax.s, pt.s);
        ptx_ins(&k, "selp.b32 %s, %s, %s, %s", bi.s, tidx.s, sidx.s, pt.s);
        ptx_ins(&k, "setp.ne.u32 %s, %s, %s", pk.s, ci[u].s, bi.s);
        ptx_ins(&k, "setp.gt.and.f32 %s, %s, " NEG_INF ", %s", pk.s, x[u].s, pk.s);
        ptx_ins(&k, "sub.f32 %s, %s, %s", e.s, x[u].s, m.s);
        ptx_exp(&k, e, e);
        ptx_ins(&k, "cvt.f64.f32 %s, %s", ed.s, e.s);
        ptx_ins(&k, "and.pred %s, %s, %s", pu.s, pk.s, pt.s);
        ptx_ins(&k, "@%s add.f64 %s, %s, %s", pu.s, tr.s, tr.s, ed.s);
        ptx_ins(&k, "not.pred %s, %s", pt.s, pt.s);
        ptx_ins(&k, "and.pred %s, %s, %s", pu.s, pk.s, pt.s);
        ptx_ins(&k, "@%s add.f64 %s, %s, %s", pu.s, sr.s, sr.s, ed.s);
    }
    block_sum_f64(&k, tr, "s_tr", warp, lane0);
    block_sum_f64(&k, sr, "s_sr", warp, lane0);

    /* thread 0: the record (kernels.h) */
    struct ptx_reg done = ptx_label(&k);
    ptx_ins(&k, "setp.ne.u32 %s, %s, 0", pk.s, tid.s);
    ptx_ins(&k, "@%s bra %s", pk.s, done.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", idx.s, row.s, n_part, chunk.s);
    struct ptx_reg oa = ptx_addr(&k, ptx_ld_ptr(&k, "p_part"), idx, KERNEL_LOGITS_RECORD);
    ptx_ins(&k, "st.global.f32 [%s], %s", oa.s, tmax.s);
    ptx_ins(&k, "st.global.u32 [%s+4], %s", oa.s, tidx.s);
    ptx_ins(&k, "st.global.f32 [%s+8], %s", oa.s, smax.s);
    ptx_ins(&k, "st.global.u32 [%s+12], %s", oa.s, sidx.s);
    ptx_ins(&k, "st.global.f64 [%s+16], %s", oa.s, tr.s);
    ptx_ins(&k, "st.global.f64 [%s+24], %s", oa.s, sr.s);
    ptx_place(&k, done);
    return ptx_end(&k);
}
