/* embed.c — gen_embed: the decoder's token + position embedding, one CTA of 128 threads per
 * token, each thread C/128 columns (coalesced); token ids and positions live on the device. */
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

char *gen_embed(int sm, int c) {
    if (c <= 0 || c % KERNEL_LN_THREADS)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "embed_c%d", c);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_tokens");
    ptx_param(&k, "u64", "p_tok_emb");
    ptx_param(&k, "u64", "p_pos_emb");
    ptx_param(&k, "u64", "p_positions");
    struct ptx_reg t = ptx_special(&k, "%ctaid.x"), tid = ptx_special(&k, "%tid.x");
    struct ptx_reg out = ptx_ld_ptr(&k, "p_out"), tokens = ptx_ld_ptr(&k, "p_tokens");
    struct ptx_reg emb = ptx_ld_ptr(&k, "p_tok_emb"), pos_emb = ptx_ld_ptr(&k, "p_pos_emb");
    struct ptx_reg tok = ptx_reg(&k, PTX_B32), pos = ptx_reg(&k, PTX_B32);
    struct ptx_reg ei = ptx_reg(&k, PTX_B32), pi = ptx_reg(&k, PTX_B32), oi = ptx_reg(&k, PTX_B32);
    struct ptx_reg ta = ptx_addr(&k, tokens, t, 4);
    ptx_ins(&k, "ld.global.nc.u32 %s, [%s]", tok.s, ta.s);
    struct ptx_reg qa = ptx_addr(&k, ptx_ld_ptr(&k, "p_positions"), t, 4);
    ptx_ins(&k, "ld.global.nc.u32 %s, [%s]", pos.s, qa.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", ei.s, tok.s, c, tid.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", pi.s, pos.s, c, tid.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", oi.s, t.s, c, tid.s);
    struct ptx_reg ea = ptx_addr(&k, emb, ei, 2), pa = ptx_addr(&k, pos_emb, pi, 4);
    struct ptx_reg oa = ptx_addr(&k, out, oi, 4);
    struct ptx_reg h = ptx_reg(&k, PTX_B16), v = ptx_reg(&k, PTX_F32), p = ptx_reg(&k, PTX_F32);
    for (int i = 0; i < c / KERNEL_LN_THREADS; i++) {
        ptx_ins(&k, "ld.global.nc.b16 %s, [%s+%d]", h.s, ea.s, 2 * KERNEL_LN_THREADS * i);
        ptx_ins(&k, "cvt.f32.f16 %s, %s", v.s, h.s);
        ptx_ins(&k, "ld.global.nc.f32 %s, [%s+%d]", p.s, pa.s, 4 * KERNEL_LN_THREADS * i);
        ptx_ins(&k, "add.f32 %s, %s, %s", v.s, v.s, p.s);
        ptx_ins(&k, "st.global.f32 [%s+%d], %s", oa.s, 4 * KERNEL_LN_THREADS * i, v.s);
    }
    return ptx_end(&k);
}
