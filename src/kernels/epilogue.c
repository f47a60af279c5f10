/* epilogue.c — gen_bias_act: what follows a cuBLAS GEMM (bias, exact GELU, residual or position
 * add), in place, one thread per element of the n_rows x N block, 256 per CTA. Element i is row
 * i / N, column i % N (N is a constant, so ptxas turns both into multiplies); rows of x are ld
 * floats apart (a GEMM written into a wider buffer, e.g. the KV cache), rows of add are N.
 * KERNEL_EPI_HALF stores the result rounded to fp16 into another buffer instead: the encoder's
 * fc1 output, whose only reader is the fc2 GEMM, in one pass rather than two. */
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

char *gen_bias_act(int sm, int n, int flags) {
    if (n <= 0 || flags < 0 ||
        flags > (KERNEL_EPI_BIAS | KERNEL_EPI_GELU | KERNEL_EPI_ADD | KERNEL_EPI_HALF))
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "bias_act_n%d_f%d", n, flags);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_x");
    ptx_param(&k, "u32", "p_ld");
    ptx_param(&k, "u64", "p_b");
    ptx_param(&k, "u64", "p_add");
    ptx_param(&k, "u32", "p_rows");
    ptx_param(&k, "u64", "p_out");
    struct ptx_reg cta = ptx_special(&k, "%ctaid.x"), tid = ptx_special(&k, "%tid.x");
    struct ptx_reg i = ptx_reg(&k, PTX_B32), total = ptx_reg(&k, PTX_B32);
    struct ptx_reg p = ptx_reg(&k, PTX_PRED), done = ptx_label(&k);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", i.s, cta.s, KERNEL_EW_THREADS, tid.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_rows]", total.s);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", total.s, total.s, n);
    ptx_ins(&k, "setp.ge.u32 %s, %s, %s", p.s, i.s, total.s);
    ptx_ins(&k, "@%s bra %s", p.s, done.s);

    struct ptx_reg row = ptx_reg(&k, PTX_B32), col = ptx_reg(&k, PTX_B32);
    struct ptx_reg ld = ptx_reg(&k, PTX_B32), xi = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "div.u32 %s, %s, %d", row.s, i.s, n);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", col.s, row.s, n);
    ptx_ins(&k, "sub.u32 %s, %s, %s", col.s, i.s, col.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_ld]", ld.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %s, %s", xi.s, row.s, ld.s, col.s);
    struct ptx_reg x = ptx_ld_ptr(&k, "p_x"), xa = ptx_addr(&k, x, xi, 4);
    struct ptx_reg v = ptx_reg(&k, PTX_F32), t = ptx_reg(&k, PTX_F32);
    ptx_ins(&k, "ld.global.f32 %s, [%s]", v.s, xa.s);
    if (flags & KERNEL_EPI_BIAS) {
        struct ptx_reg b = ptx_ld_ptr(&k, "p_b"), ba = ptx_addr(&k, b, col, 4);
        ptx_ins(&k, "ld.global.nc.f32 %s, [%s]", t.s, ba.s);
        ptx_ins(&k, "add.f32 %s, %s, %s", v.s, v.s, t.s);
    }
    if (flags & KERNEL_EPI_GELU)
        ptx_gelu(&k, v);
    if (flags & KERNEL_EPI_ADD) {
        struct ptx_reg add = ptx_ld_ptr(&k, "p_add"), aa = ptx_addr(&k, add, i, 4);
        ptx_ins(&k, "ld.global.f32 %s, [%s]", t.s, aa.s);
        ptx_ins(&k, "add.f32 %s, %s, %s", v.s, v.s, t.s);
    }
    if (flags & KERNEL_EPI_HALF) {
        struct ptx_reg out = ptx_ld_ptr(&k, "p_out"), oa = ptx_addr(&k, out, i, 2);
        struct ptx_reg h = ptx_reg(&k, PTX_B16);
        ptx_ins(&k, "cvt.rn.f16.f32 %s, %s", h.s, v.s);
        ptx_ins(&k, "st.global.b16 [%s], %s", oa.s, h.s);
    } else {
        ptx_ins(&k, "st.global.f32 [%s], %s", xa.s, v.s);
    }
    ptx_place(&k, done);
    return ptx_end(&k);
}
