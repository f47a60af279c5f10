/*
 * logits.c — gen_logits_greedy: backend.h's logits_greedy, one CTA of 1024 threads per row
 * (a step's few rows alone: 256 threads walking 51,865 columns a load at a time took ~100 µs
 * on an H100, latency-bound); thread t reads columns t, t + 1024, … (coalesced), LG_U loads in
 * flight, twice:
 *   pass 1: the masked row's maximum and its first index, apart for text tokens [0, tb) and
 *           timestamps [tb, V) (tb = V without the timestamp test);
 *   pass 2: rest = sum of exp(x - max) over every other unmasked column, per part, each
 *           thread summing in f64;
 * block-wide through warp shuffles and per-warp shared slots. Thread 0 then decides
 * ApplyTimestampRules' test, logsumexp(ts) > max(text) <=> log1p(rest_ts) > max_text -
 * max_ts, and the log-probability of the argmax, -log1p(rest), where rest joins both parts.
 * Writing it as log1p of the rest keeps a confident token's tiny log-probability accurate
 * (the CPU's m + log(s) in double); log1p is f64 (atanh series), exp is ex2.approx (relative
 * ~2^-22), so the log-probability is within ~1e-6 relative of the CPU's. The argmax is exact.
 */
#include <stdio.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

#define LG_WARPS (KERNEL_LOGITS_THREADS / 32)
#define LG_U     4            /* columns a thread loads at once */
#define LG_NONE  "0xFFFFFFFF" /* no index: every column of the part is masked */
#define NEG_INF  "0fFF800000"

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

/* dst = log1p(r) for r >= 0 in f64: S = 1 + r = 2^e f with f in [√½, √2) (e = 0 and
 * f - 1 = r exactly when S < √2), log S = e ln 2 + 2 atanh(t), t = (f - 1) / (f + 1),
 * |t| <= 0.1716, atanh by its series to t^23 (next term < 2e-19). */
static void log1p_f64(struct ptx_kernel *k, struct ptx_reg dst, struct ptx_reg r) {
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

/* The columns of this thread, LG_U at a time (their loads in flight together): i = tid + T u
 * for u < LG_U, then i += T LG_U while the first is below V (T = KERNEL_LOGITS_THREADS);
 * x[u] = the masked logit of column i[u] (-inf past the row). */
struct lg_loop {
    struct ptx_reg i0, addr, top, end;
    struct ptx_reg i[LG_U], x[LG_U];
};

static void loop_begin(struct ptx_kernel *k, struct lg_loop *l, struct ptx_reg tid,
                       struct ptx_reg row, struct ptx_reg mask, const struct lg_rule *ru,
                       int n_vocab) {
    struct ptx_reg p = ptx_reg(k, PTX_PRED);
    l->i0 = ptx_reg(k, PTX_B32), l->addr = ptx_reg(k, PTX_B64);
    l->top = ptx_label(k), l->end = ptx_label(k);
    ptx_ins(k, "mov.u32 %s, %s", l->i0.s, tid.s);
    struct ptx_reg a = ptx_addr(k, row, tid, 4);
    ptx_ins(k, "mov.b64 %s, %s", l->addr.s, a.s);
    ptx_place(k, l->top);
    ptx_ins(k, "setp.ge.u32 %s, %s, %d", p.s, l->i0.s, n_vocab);
    ptx_ins(k, "@%s bra %s", p.s, l->end.s);
    struct ptx_reg au = ptx_reg(k, PTX_B64);
    for (int u = 0; u < LG_U; u++) {
        l->i[u] = ptx_reg(k, PTX_B32), l->x[u] = ptx_reg(k, PTX_F32);
        ptx_ins(k, "add.u32 %s, %s, %d", l->i[u].s, l->i0.s, u * KERNEL_LOGITS_THREADS);
        ptx_ins(k, "add.s64 %s, %s, %d", au.s, l->addr.s, 4 * u * KERNEL_LOGITS_THREADS);
        masked_load(k, l->x[u], au, l->i[u], mask, ru, n_vocab);
    }
}

static void loop_end(struct ptx_kernel *k, const struct lg_loop *l) {
    ptx_ins(k, "add.u32 %s, %s, %d", l->i0.s, l->i0.s, LG_U * KERNEL_LOGITS_THREADS);
    ptx_ins(k, "add.s64 %s, %s, %d", l->addr.s, l->addr.s, 4 * LG_U * KERNEL_LOGITS_THREADS);
    ptx_ins(k, "bra.uni %s", l->top.s);
    ptx_place(k, l->end);
}

/* Thread 0's decision and output (see the file comment); tmax/tidx/tr: text, s*: timestamps. */
static void pick(struct ptx_kernel *k, struct ptx_reg out, struct ptx_reg tb, int n_vocab,
                 struct ptx_reg tmax, struct ptx_reg tidx, struct ptx_reg tr, struct ptx_reg smax,
                 struct ptx_reg sidx, struct ptx_reg sr) {
    struct ptx_reg lts = ptx_reg(k, PTX_F64), d = ptx_reg(k, PTX_F64), t = ptx_reg(k, PTX_F64);
    struct ptx_reg fb = ptx_reg(k, PTX_PRED), big = ptx_reg(k, PTX_PRED);
    struct ptx_reg hi = ptx_reg(k, PTX_F32), lo = ptx_reg(k, PTX_F32), e = ptx_reg(k, PTX_F32);
    struct ptx_reg tok = ptx_reg(k, PTX_B32), rest = ptx_reg(k, PTX_F64), lp = ptx_reg(k, PTX_F64);
    struct ptx_reg lpf = ptx_reg(k, PTX_F32), other = ptx_reg(k, PTX_F64);
    /* forbid text <=> tb < V, a timestamp unmasked, log1p(rest_ts) > max_text - max_ts */
    log1p_f64(k, lts, sr);
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
    log1p_f64(k, lp, rest);
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

char *gen_logits_greedy(int sm, int n_vocab) {
    if (n_vocab < 1)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "logits_greedy_v%d", n_vocab);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_logits");
    ptx_param(&k, "u64", "p_rules");
    ptx_param(&k, "u64", "p_mask");
    ptx_raw(&k,
            "    .shared .align 4 .f32 s_tv[%d];\n    .shared .align 4 .u32 s_ti[%d];\n"
            "    .shared .align 4 .f32 s_sv[%d];\n    .shared .align 4 .u32 s_si[%d];\n"
            "    .shared .align 8 .f64 s_tr[%d];\n    .shared .align 8 .f64 s_sr[%d];\n",
            LG_WARPS, LG_WARPS, LG_WARPS, LG_WARPS, LG_WARPS, LG_WARPS);
    struct ptx_reg row = ptx_special(&k, "%ctaid.x"), tid = ptx_special(&k, "%tid.x");
    struct ptx_reg out = ptx_ld_ptr(&k, "p_out"), logits = ptx_ld_ptr(&k, "p_logits");
    struct ptx_reg rules = ptx_ld_ptr(&k, "p_rules"), mask = ptx_ld_ptr(&k, "p_mask");
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
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", idx.s, row.s, n_vocab);
    struct ptx_reg base = ptx_addr(&k, logits, idx, 4);

    /* pass 1: per-part maximum and its first column */
    struct ptx_reg tmax = ptx_reg(&k, PTX_F32), tidx = ptx_reg(&k, PTX_B32);
    struct ptx_reg smax = ptx_reg(&k, PTX_F32), sidx = ptx_reg(&k, PTX_B32);
    struct ptx_reg pt = ptx_reg(&k, PTX_PRED), pu = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "mov.f32 %s, " NEG_INF, tmax.s);
    ptx_ins(&k, "mov.f32 %s, " NEG_INF, smax.s);
    ptx_ins(&k, "mov.u32 %s, " LG_NONE, tidx.s);
    ptx_ins(&k, "mov.u32 %s, " LG_NONE, sidx.s);
    struct lg_loop l;
    loop_begin(&k, &l, tid, base, mask, &ru, n_vocab);
    for (int u = 0; u < LG_U; u++) { /* columns in increasing order: the first max stays */
        ptx_ins(&k, "setp.lt.u32 %s, %s, %s", pt.s, l.i[u].s, ru.tb.s);
        ptx_ins(&k, "setp.gt.and.f32 %s, %s, %s, %s", pu.s, l.x[u].s, tmax.s, pt.s);
        ptx_ins(&k, "@%s mov.f32 %s, %s", pu.s, tmax.s, l.x[u].s);
        ptx_ins(&k, "@%s mov.u32 %s, %s", pu.s, tidx.s, l.i[u].s);
        ptx_ins(&k, "setp.gt.and.f32 %s, %s, %s, !%s", pu.s, l.x[u].s, smax.s, pt.s);
        ptx_ins(&k, "@%s mov.f32 %s, %s", pu.s, smax.s, l.x[u].s);
        ptx_ins(&k, "@%s mov.u32 %s, %s", pu.s, sidx.s, l.i[u].s);
    }
    loop_end(&k, &l);
    block_argmax(&k, tmax, tidx, "s_tv", "s_ti", warp, lane0);
    block_argmax(&k, smax, sidx, "s_sv", "s_si", warp, lane0);

    /* pass 2: per-part sum of exp(x - max) over the unmasked columns but the argmax */
    struct ptx_reg tr = ptx_reg(&k, PTX_F64), sr = ptx_reg(&k, PTX_F64);
    struct ptx_reg m = ptx_reg(&k, PTX_F32), e = ptx_reg(&k, PTX_F32), ed = ptx_reg(&k, PTX_F64);
    struct ptx_reg bi = ptx_reg(&k, PTX_B32), pk = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", tr.s);
    ptx_ins(&k, "mov.f64 %s, 0d0000000000000000", sr.s);
    loop_begin(&k, &l, tid, base, mask, &ru, n_vocab);
    for (int u = 0; u < LG_U; u++) {
        ptx_ins(&k, "setp.lt.u32 %s, %s, %s", pt.s, l.i[u].s, ru.tb.s);
        ptx_ins(&k, "selp.f32 %s, %s, %s, %s", m.s, tmax.s, smax.s, pt.s);
        ptx_ins(&k, "selp.b32 %s, %s, %s, %s", bi.s, tidx.s, sidx.s, pt.s);
        ptx_ins(&k, "setp.ne.u32 %s, %s, %s", pk.s, l.i[u].s, bi.s);
        ptx_ins(&k, "setp.gt.and.f32 %s, %s, " NEG_INF ", %s", pk.s, l.x[u].s, pk.s);
        ptx_ins(&k, "sub.f32 %s, %s, %s", e.s, l.x[u].s, m.s);
        ptx_exp(&k, e, e);
        ptx_ins(&k, "cvt.f64.f32 %s, %s", ed.s, e.s);
        ptx_ins(&k, "and.pred %s, %s, %s", pu.s, pk.s, pt.s);
        ptx_ins(&k, "@%s add.f64 %s, %s, %s", pu.s, tr.s, tr.s, ed.s);
        ptx_ins(&k, "not.pred %s, %s", pt.s, pt.s);
        ptx_ins(&k, "and.pred %s, %s, %s", pu.s, pk.s, pt.s);
        ptx_ins(&k, "@%s add.f64 %s, %s, %s", pu.s, sr.s, sr.s, ed.s);
    }
    loop_end(&k, &l);
    block_sum_f64(&k, tr, "s_tr", warp, lane0);
    block_sum_f64(&k, sr, "s_sr", warp, lane0);

    struct ptx_reg done = ptx_label(&k);
    ptx_ins(&k, "setp.ne.u32 %s, %s, 0", pk.s, tid.s);
    ptx_ins(&k, "@%s bra %s", pk.s, done.s);
    ptx_ins(&k, "shl.b32 %s, %s, 1", idx.s, row.s);
    struct ptx_reg oa = ptx_addr(&k, out, idx, 4);
    pick(&k, oa, ru.tb, n_vocab, tmax, tidx, tr, smax, sidx, sr);
    ptx_place(&k, done);
    return ptx_end(&k);
}
