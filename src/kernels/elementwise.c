/* elementwise.c — gen_bias_gelu and gen_f32_to_f16: one thread per element, 256 per CTA
 * (GELU itself is ptx_gelu, shared with the GEMM epilogue). */
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

/* i = ctaid.x * 256 + tid.x; branches to `done` when i >= the u32 parameter `p_n`. */
static struct ptx_reg element_index(struct ptx_kernel *k, const char *p_n, struct ptx_reg done) {
    struct ptx_reg cta = ptx_special(k, "%ctaid.x"), tid = ptx_special(k, "%tid.x");
    struct ptx_reg i = ptx_reg(k, PTX_B32), n = ptx_reg(k, PTX_B32), p = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", i.s, cta.s, KERNEL_EW_THREADS, tid.s);
    ptx_ins(k, "ld.param.u32 %s, [%s]", n.s, p_n);
    ptx_ins(k, "setp.ge.u32 %s, %s, %s", p.s, i.s, n.s);
    ptx_ins(k, "@%s bra %s", p.s, done.s);
    return i;
}

char *gen_bias_gelu(int sm, int n) {
    if (n <= 0)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "bias_gelu_n%d", n);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_x");
    ptx_param(&k, "u64", "p_b");
    ptx_param(&k, "u32", "p_n");
    struct ptx_reg done = ptx_label(&k);
    struct ptx_reg i = element_index(&k, "p_n", done);
    struct ptx_reg x = ptx_ld_ptr(&k, "p_x"), b = ptx_ld_ptr(&k, "p_b");
    struct ptx_reg col = ptx_reg(&k, PTX_B32), v = ptx_reg(&k, PTX_F32), bv = ptx_reg(&k, PTX_F32);
    ptx_ins(&k, "rem.u32 %s, %s, %d", col.s, i.s, n);
    struct ptx_reg xa = ptx_addr(&k, x, i, 4), ba = ptx_addr(&k, b, col, 4);
    ptx_ins(&k, "ld.global.f32 %s, [%s]", v.s, xa.s);
    ptx_ins(&k, "ld.global.nc.f32 %s, [%s]", bv.s, ba.s);
    ptx_ins(&k, "add.f32 %s, %s, %s", v.s, v.s, bv.s);
    ptx_gelu(&k, v);
    ptx_ins(&k, "st.global.f32 [%s], %s", xa.s, v.s);
    ptx_place(&k, done);
    return ptx_end(&k);
}

char *gen_f32_to_f16(int sm) {
    struct ptx_kernel k;
    ptx_begin(&k, "f32_to_f16", sm);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_in");
    ptx_param(&k, "u32", "p_n");
    struct ptx_reg done = ptx_label(&k);
    struct ptx_reg i = element_index(&k, "p_n", done);
    struct ptx_reg out = ptx_ld_ptr(&k, "p_out"), in = ptx_ld_ptr(&k, "p_in");
    struct ptx_reg v = ptx_reg(&k, PTX_F32), h = ptx_reg(&k, PTX_B16);
    struct ptx_reg ia = ptx_addr(&k, in, i, 4), oa = ptx_addr(&k, out, i, 2);
    ptx_ins(&k, "ld.global.nc.f32 %s, [%s]", v.s, ia.s);
    ptx_ins(&k, "cvt.rn.f16.f32 %s, %s", h.s, v.s);
    ptx_ins(&k, "st.global.b16 [%s], %s", oa.s, h.s);
    ptx_place(&k, done);
    return ptx_end(&k);
}
