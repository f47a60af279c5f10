/* elementwise.c — gen_bias_gelu (one thread per element) and gen_f32_to_f16 (four), 256 threads
 * per CTA (GELU itself is ptx_gelu, shared with the GEMM epilogue). */
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

/* Elements i .. i + 3 of a thread: one 16-byte load and an 8-byte store where all four exist
 * and the addresses allow, else one at a time up to n (the same rounding either way). */
char *gen_f32_to_f16(int sm) {
    struct ptx_kernel k;
    ptx_begin(&k, "f32_to_f16", sm);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_in");
    ptx_param(&k, "u32", "p_n");
    struct ptx_reg cta = ptx_special(&k, "%ctaid.x"), tid = ptx_special(&k, "%tid.x");
    struct ptx_reg i = ptx_reg(&k, PTX_B32), n = ptx_reg(&k, PTX_B32), p = ptx_reg(&k, PTX_PRED);
    struct ptx_reg done = ptx_label(&k), scalar = ptx_label(&k);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", i.s, cta.s, KERNEL_EW_THREADS, tid.s);
    ptx_ins(&k, "shl.b32 %s, %s, 2", i.s, i.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_n]", n.s);
    struct ptx_reg out = ptx_ld_ptr(&k, "p_out"), in = ptx_ld_ptr(&k, "p_in");
    struct ptx_reg ia = ptx_addr(&k, in, i, 4), oa = ptx_addr(&k, out, i, 2);
    struct ptx_reg v[4], h[2], m = ptx_reg(&k, PTX_B64), mo = ptx_reg(&k, PTX_B64);
    struct ptx_reg end = ptx_reg(&k, PTX_B32), b = ptx_reg(&k, PTX_B16);
    for (int e = 0; e < 4; e++)
        v[e] = ptx_reg(&k, PTX_F32);
    ptx_ins(&k, "add.u32 %s, %s, 4", end.s, i.s);
    ptx_ins(&k, "setp.gt.u32 %s, %s, %s", p.s, end.s, n.s);
    ptx_ins(&k, "@%s bra %s", p.s, scalar.s);
    ptx_ins(&k, "and.b64 %s, %s, 15", m.s, ia.s);
    ptx_ins(&k, "and.b64 %s, %s, 7", mo.s, oa.s);
    ptx_ins(&k, "or.b64 %s, %s, %s", m.s, m.s, mo.s);
    ptx_ins(&k, "setp.ne.u64 %s, %s, 0", p.s, m.s);
    ptx_ins(&k, "@%s bra %s", p.s, scalar.s);
    ptx_ins(&k, "ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s]", v[0].s, v[1].s, v[2].s, v[3].s, ia.s);
    for (int j = 0; j < 2; j++) { /* cvt's first source goes to the upper half */
        h[j] = ptx_reg(&k, PTX_B32);
        ptx_ins(&k, "cvt.rn.f16x2.f32 %s, %s, %s", h[j].s, v[2 * j + 1].s, v[2 * j].s);
    }
    ptx_ins(&k, "st.global.v2.b32 [%s], {%s, %s}", oa.s, h[0].s, h[1].s);
    ptx_ins(&k, "bra.uni %s", done.s);
    ptx_place(&k, scalar);
    for (int e = 0; e < 4; e++) {
        if (e)
            ptx_ins(&k, "add.u32 %s, %s, 1", i.s, i.s);
        ptx_ins(&k, "setp.ge.u32 %s, %s, %s", p.s, i.s, n.s);
        ptx_ins(&k, "@%s bra %s", p.s, done.s);
        ptx_ins(&k, "ld.global.nc.f32 %s, [%s+%d]", v[0].s, ia.s, 4 * e);
        ptx_ins(&k, "cvt.rn.f16.f32 %s, %s", b.s, v[0].s);
        ptx_ins(&k, "st.global.b16 [%s+%d], %s", oa.s, 2 * e, b.s);
    }
    ptx_place(&k, done);
    return ptx_end(&k);
}
