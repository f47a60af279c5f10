/* attention_scores.c — gen_attention_scores: one head's pre-softmax attention logits, for word
 * alignment (cross-attention of the alignment heads, a few rows per step; not a hot kernel).
 * CTA (t, jb), thread tid: key j = jb*128 + tid of query t. Every thread of the CTA reads the
 * same q row (one broadcast transaction per load) and walks its own key row; the scale comes
 * after the dot product, as the CPU twin's sgemm alpha. kv_half (attn_scores_..._kvh): keys
 * stored as fp16 (the batch decoder's cross-attention K), widened as loaded: the f32 kernel's
 * bits on the widened values. */
#include <math.h>
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

char *gen_attention_scores(int sm, int n_head, int d, int kv_half) {
    if (n_head <= 0 || d <= 0 || d > 256)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "attn_scores_h%d_d%d%s", n_head, d, kv_half ? "_kvh" : "");
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_q");
    ptx_param(&k, "u64", "p_k");
    ptx_param(&k, "u32", "p_ld_k");
    ptx_param(&k, "u32", "p_t_len");
    ptx_param(&k, "u32", "p_s_len");
    ptx_param(&k, "u32", "p_head");
    struct ptx_reg t = ptx_special(&k, "%ctaid.x"), jb = ptx_special(&k, "%ctaid.y");
    struct ptx_reg tid = ptx_special(&k, "%tid.x"), j = ptx_reg(&k, PTX_B32);
    struct ptx_reg t_len = ptx_reg(&k, PTX_B32), s_len = ptx_reg(&k, PTX_B32);
    struct ptx_reg p = ptx_reg(&k, PTX_PRED), done = ptx_label(&k);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 128, %s", j.s, jb.s, tid.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_t_len]", t_len.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_s_len]", s_len.s);
    ptx_ins(&k, "setp.ge.u32 %s, %s, %s", p.s, j.s, s_len.s);
    ptx_ins(&k, "@%s bra %s", p.s, done.s);
    ptx_ins(&k, "setp.ge.u32 %s, %s, %s", p.s, t.s, t_len.s);
    ptx_ins(&k, "@%s bra %s", p.s, done.s);

    struct ptx_reg head = ptx_reg(&k, PTX_B32), ld = ptx_reg(&k, PTX_B32);
    struct ptx_reg qi = ptx_reg(&k, PTX_B32), ki = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "ld.param.u32 %s, [p_head]", head.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_ld_k]", ld.s);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", head.s, head.s, d);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", qi.s, t.s, n_head * d, head.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %s, %s", ki.s, j.s, ld.s, head.s);
    struct ptx_reg qa = ptx_addr(&k, ptx_ld_ptr(&k, "p_q"), qi, 4);
    struct ptx_reg ka = ptx_addr(&k, ptx_ld_ptr(&k, "p_k"), ki, kv_half ? 2 : 4);
    struct ptx_reg kh = {""};
    if (kv_half)
        kh = ptx_reg(&k, PTX_B16);
    struct ptx_reg s = ptx_reg(&k, PTX_F32), qv = ptx_reg(&k, PTX_F32), kv = ptx_reg(&k, PTX_F32);
    ptx_ins(&k, "mov.f32 %s, 0f00000000", s.s);
    for (int i = 0; i < d; i++) {
        ptx_ins(&k, "ld.global.nc.f32 %s, [%s+%d]", qv.s, qa.s, 4 * i);
        if (kv_half) {
            ptx_ins(&k, "ld.global.nc.b16 %s, [%s+%d]", kh.s, ka.s, 2 * i);
            ptx_ins(&k, "cvt.f32.f16 %s, %s", kv.s, kh.s);
        } else {
            ptx_ins(&k, "ld.global.nc.f32 %s, [%s+%d]", kv.s, ka.s, 4 * i);
        }
        ptx_ins(&k, "fma.rn.f32 %s, %s, %s, %s", s.s, qv.s, kv.s, s.s);
    }
    ptx_ins(&k, "mul.f32 %s, %s, %s", s.s, s.s, ptx_f32((float)(1.0 / sqrt((double)d))).s);
    struct ptx_reg oi = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %s, %s", oi.s, t.s, s_len.s, j.s);
    struct ptx_reg oa = ptx_addr(&k, ptx_ld_ptr(&k, "p_out"), oi, 4);
    ptx_ins(&k, "st.global.f32 [%s], %s", oa.s, s.s);
    ptx_place(&k, done);
    return ptx_end(&k);
}
