/* layernorm.c — gen_layernorm: one CTA per row, each thread holds C/128 values in registers;
 * mean, then the variance of the centred values (two passes, as numerically safe as the CPU's),
 * each reduced with warp shuffles and 4 shared-memory slots. The fp16 form rounds the same
 * values once as it stores them: a GEMM's input without an f32_to_f16 pass over the rows. */
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

#define LN_WARPS   (KERNEL_LN_THREADS / 32)
#define LN_MAX_PER 64 /* values per thread held in registers: C <= 64 * 128 = 8192 */

/* v = block-wide sum of v (every thread gets it); slots: shared f32[LN_WARPS] at `smem`. */
static void block_sum(struct ptx_kernel *k, struct ptx_reg v, const char *smem, struct ptx_reg warp,
                      struct ptx_reg lane) {
    struct ptx_reg p = ptx_reg(k, PTX_PRED), a = ptx_reg(k, PTX_B32), t = ptx_reg(k, PTX_F32);
    ptx_warp_reduce(k, v, "add");
    ptx_ins(k, "setp.eq.u32 %s, %s, 0", p.s, lane.s);
    ptx_ins(k, "mov.u32 %s, %s", a.s, smem);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", a.s, warp.s, a.s);
    ptx_ins(k, "@%s st.shared.f32 [%s], %s", p.s, a.s, v.s);
    ptx_ins(k, "bar.sync 0");
    ptx_ins(k, "ld.shared.f32 %s, [%s]", v.s, smem);
    for (int w = 1; w < LN_WARPS; w++) {
        ptx_ins(k, "ld.shared.f32 %s, [%s+%d]", t.s, smem, 4 * w);
        ptx_ins(k, "add.f32 %s, %s, %s", v.s, v.s, t.s);
    }
}

char *gen_layernorm(int sm, int c, int half_out) {
    if (c <= 0 || c % KERNEL_LN_THREADS || c / KERNEL_LN_THREADS > LN_MAX_PER)
        return NULL;
    int per = c / KERNEL_LN_THREADS, out_size = half_out ? 2 : 4;
    char name[64];
    snprintf(name, sizeof name, "layernorm_c%d%s", c, half_out ? "_h" : "");
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_in");
    ptx_param(&k, "u64", "p_g");
    ptx_param(&k, "u64", "p_b");
    ptx_param(&k, "u32", "p_rows");
    ptx_raw(&k, "    .shared .align 4 .f32 s_sum[%d];\n    .shared .align 4 .f32 s_sq[%d];\n",
            LN_WARPS, LN_WARPS);

    struct ptx_reg row = ptx_special(&k, "%ctaid.x"), tid = ptx_special(&k, "%tid.x");
    struct ptx_reg rows = ptx_reg(&k, PTX_B32), p = ptx_reg(&k, PTX_PRED);
    struct ptx_reg done = ptx_label(&k);
    ptx_ins(&k, "ld.param.u32 %s, [p_rows]", rows.s);
    ptx_ins(&k, "setp.ge.u32 %s, %s, %s", p.s, row.s, rows.s);
    ptx_ins(&k, "@%s bra %s", p.s, done.s);
    struct ptx_reg out = ptx_ld_ptr(&k, "p_out"), in = ptx_ld_ptr(&k, "p_in");
    struct ptx_reg g = ptx_ld_ptr(&k, "p_g"), b = ptx_ld_ptr(&k, "p_b");
    struct ptx_reg warp = ptx_reg(&k, PTX_B32), lane = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "shr.u32 %s, %s, 5", warp.s, tid.s);
    ptx_ins(&k, "and.b32 %s, %s, 31", lane.s, tid.s);
    struct ptx_reg idx = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", idx.s, row.s, c, tid.s);
    struct ptx_reg src = ptx_addr(&k, in, idx, 4), dst = ptx_addr(&k, out, idx, out_size);
    struct ptx_reg gp = ptx_addr(&k, g, tid, 4), bp = ptx_addr(&k, b, tid, 4);

    /* every load first (the gain and bias too: the reductions' barriers would hold them back),
     * so the row costs one memory wait */
    struct ptx_reg x[LN_MAX_PER], gv[LN_MAX_PER], bv[LN_MAX_PER];
    struct ptx_reg sum = ptx_reg(&k, PTX_F32), sq = ptx_reg(&k, PTX_F32);
    for (int i = 0; i < per; i++) {
        x[i] = ptx_reg(&k, PTX_F32), gv[i] = ptx_reg(&k, PTX_F32), bv[i] = ptx_reg(&k, PTX_F32);
        /* not .nc: out may alias in */
        ptx_ins(&k, "ld.global.f32 %s, [%s+%d]", x[i].s, src.s, 4 * KERNEL_LN_THREADS * i);
        ptx_ins(&k, "ld.global.nc.f32 %s, [%s+%d]", gv[i].s, gp.s, 4 * KERNEL_LN_THREADS * i);
        ptx_ins(&k, "ld.global.nc.f32 %s, [%s+%d]", bv[i].s, bp.s, 4 * KERNEL_LN_THREADS * i);
    }
    ptx_ins(&k, "mov.f32 %s, 0f00000000", sum.s);
    for (int i = 0; i < per; i++)
        ptx_ins(&k, "add.f32 %s, %s, %s", sum.s, sum.s, x[i].s);
    block_sum(&k, sum, "s_sum", warp, lane);
    struct ptx_reg mean = ptx_reg(&k, PTX_F32), d = ptx_reg(&k, PTX_F32);
    ptx_ins(&k, "mov.f32 %s, %s", d.s, ptx_f32(c).s);
    ptx_ins(&k, "div.rn.f32 %s, %s, %s", mean.s, sum.s, d.s);
    ptx_ins(&k, "mov.f32 %s, 0f00000000", sq.s);
    for (int i = 0; i < per; i++) {
        ptx_ins(&k, "sub.f32 %s, %s, %s", x[i].s, x[i].s, mean.s);
        ptx_ins(&k, "fma.rn.f32 %s, %s, %s, %s", sq.s, x[i].s, x[i].s, sq.s);
    }
    block_sum(&k, sq, "s_sq", warp, lane);
    struct ptx_reg inv = ptx_reg(&k, PTX_F32), h = {""};
    if (half_out)
        h = ptx_reg(&k, PTX_B16);
    ptx_ins(&k, "div.rn.f32 %s, %s, %s", inv.s, sq.s, d.s);
    ptx_ins(&k, "add.f32 %s, %s, %s", inv.s, inv.s, ptx_f32(1e-5f).s);
    ptx_ins(&k, "sqrt.rn.f32 %s, %s", inv.s, inv.s);
    ptx_ins(&k, "rcp.rn.f32 %s, %s", inv.s, inv.s);
    for (int i = 0; i < per; i++) {
        ptx_ins(&k, "mul.f32 %s, %s, %s", x[i].s, x[i].s, inv.s);
        ptx_ins(&k, "fma.rn.f32 %s, %s, %s, %s", x[i].s, x[i].s, gv[i].s, bv[i].s);
        if (half_out) {
            ptx_ins(&k, "cvt.rn.f16.f32 %s, %s", h.s, x[i].s);
            ptx_ins(&k, "st.global.b16 [%s+%d], %s", dst.s, 2 * KERNEL_LN_THREADS * i, h.s);
        } else {
            ptx_ins(&k, "st.global.f32 [%s+%d], %s", dst.s, 4 * KERNEL_LN_THREADS * i, x[i].s);
        }
    }
    ptx_place(&k, done);
    return ptx_end(&k);
}
