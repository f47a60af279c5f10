/* im2col.c — gen_im2col: the conv stems' input as a GEMM operand, fp16. One CTA per output
 * frame t; its 128 threads walk the 3 * C_IN outputs of row t in order (coalesced stores), output
 * o = ci*3 + k reading in[t*stride + k - 1][ci]: the three taps of a channel are neighbours, as
 * the weight's PyTorch [c_out][c_in][3] layout wants. Row -1 is the zero row before `in`. */
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

char *gen_im2col(int sm, int c_in, int stride) {
    if (c_in <= 0 || stride < 1 || stride > 2)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "im2col_c%d_s%d", c_in, stride);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_in");
    ptx_param(&k, "u32", "p_t_out");
    struct ptx_reg t = ptx_special(&k, "%ctaid.x"), tid = ptx_special(&k, "%tid.x");
    struct ptx_reg n_t = ptx_reg(&k, PTX_B32), p = ptx_reg(&k, PTX_PRED), done = ptx_label(&k);
    ptx_ins(&k, "ld.param.u32 %s, [p_t_out]", n_t.s);
    ptx_ins(&k, "setp.ge.u32 %s, %s, %s", p.s, t.s, n_t.s);
    ptx_ins(&k, "@%s bra %s", p.s, done.s);
    struct ptx_reg out = ptx_ld_ptr(&k, "p_out"), in = ptx_ld_ptr(&k, "p_in");
    /* in_row0 = index of in[t*stride - 1][0] (may be -c_in); out_row0 = index of out[t][0] */
    struct ptx_reg in0 = ptx_reg(&k, PTX_B32), out0 = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mul.lo.s32 %s, %s, %d", in0.s, t.s, stride * c_in);
    ptx_ins(&k, "sub.s32 %s, %s, %d", in0.s, in0.s, c_in);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", out0.s, t.s, 3 * c_in);
    struct ptx_reg o = ptx_reg(&k, PTX_B32), ci = ptx_reg(&k, PTX_B32), tap = ptx_reg(&k, PTX_B32);
    struct ptx_reg idx = ptx_reg(&k, PTX_B32), off = ptx_reg(&k, PTX_B64);
    struct ptx_reg a = ptx_reg(&k, PTX_B64), v = ptx_reg(&k, PTX_F32), h = ptx_reg(&k, PTX_B16);
    struct ptx_reg inb = ptx_reg(&k, PTX_PRED);
    int n_out = 3 * c_in;
    for (int i = 0; i * KERNEL_LN_THREADS < n_out; i++) {
        ptx_ins(&k, "add.u32 %s, %s, %d", o.s, tid.s, i * KERNEL_LN_THREADS);
        ptx_ins(&k, "setp.lt.u32 %s, %s, %d", inb.s, o.s, n_out);
        ptx_ins(&k, "div.u32 %s, %s, 3", ci.s, o.s);
        ptx_ins(&k, "mad.lo.s32 %s, %s, -3, %s", tap.s, ci.s, o.s); /* k = o - 3 ci */
        ptx_ins(&k, "mad.lo.s32 %s, %s, %d, %s", idx.s, tap.s, c_in, ci.s);
        ptx_ins(&k, "add.s32 %s, %s, %s", idx.s, idx.s, in0.s);
        ptx_ins(&k, "mul.wide.s32 %s, %s, 4", off.s, idx.s);
        ptx_ins(&k, "add.s64 %s, %s, %s", a.s, in.s, off.s);
        ptx_ins(&k, "@%s ld.global.nc.f32 %s, [%s]", inb.s, v.s, a.s);
        ptx_ins(&k, "cvt.rn.f16.f32 %s, %s", h.s, v.s);
        ptx_ins(&k, "add.u32 %s, %s, %s", idx.s, out0.s, o.s);
        ptx_ins(&k, "mul.wide.u32 %s, %s, 2", off.s, idx.s);
        ptx_ins(&k, "add.s64 %s, %s, %s", a.s, out.s, off.s);
        ptx_ins(&k, "@%s st.global.b16 [%s], %s", inb.s, a.s, h.s);
    }
    ptx_place(&k, done);
    return ptx_end(&k);
}
