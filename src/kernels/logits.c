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

#include "kernels/logits_rows.h"

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
    struct ptx_reg warp = ptx_reg(&k, PTX_B32), lane0 = ptx_reg(&k, PTX_PRED);
    struct ptx_reg idx = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "shr.u32 %s, %s, 5", warp.s, tid.s);
    ptx_ins(&k, "and.b32 %s, %s, 31", idx.s, tid.s);
    ptx_ins(&k, "setp.eq.u32 %s, %s, 0", lane0.s, idx.s);
    struct lg_rule ru = lg_load_rule(&k, row);
    struct lg_chunk ch = lg_load_chunk(&k, row, chunk, tid, &ru, n_vocab);
    struct ptx_reg *ci = ch.ci, *x = ch.x;

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
    lg_block_argmax(&k, tmax, tidx, "s_tv", "s_ti", warp, lane0);
    lg_block_argmax(&k, smax, sidx, "s_sv", "s_si", warp, lane0);

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
    lg_block_sum_f64(&k, tr, "s_tr", warp, lane0);
    lg_block_sum_f64(&k, sr, "s_sr", warp, lane0);

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
