/* gemv_parts.c — the pieces gemv_f16 and gemv_tc share (gemv_parts.h). */
#include "kernels/gemv_parts.h"

int gemv_check(int k_in, int flags, int cols) {
    int all = KERNEL_GEMV_BIAS | KERNEL_GEMV_GELU | KERNEL_GEMV_ACCUMULATE | KERNEL_GEMV_NORM |
              KERNEL_GEMV_QKV;
    int norm = flags & KERNEL_GEMV_NORM, qkv = flags & KERNEL_GEMV_QKV;
    if (flags < 0 || (flags & ~all) ||
        ((flags & KERNEL_GEMV_GELU) && (flags & KERNEL_GEMV_ACCUMULATE)) ||
        (norm && !kernel_gemv_norm_fits(k_in)) ||
        (qkv && (flags != (KERNEL_GEMV_QKV | KERNEL_GEMV_NORM) || k_in % cols)))
        return -1;
    return 0;
}

void gemv_params(struct ptx_kernel *k, int flags) {
    static const char *const base[] = {"p_out", "p_ld_out", "p_in", "p_w", "p_b", "p_n", "p_rows"};
    for (int i = 0; i < 7; i++)
        ptx_param(k, i == 1 || i >= 5 ? "u32" : "u64", base[i]);
    if (flags & KERNEL_GEMV_NORM) {
        ptx_param(k, "u64", "p_g");
        ptx_param(k, "u64", "p_lb");
    }
    if (flags & KERNEL_GEMV_QKV) {
        static const char *const more[] = {"p_wk", "p_wv", "p_bk", "p_bv", "p_kd", "p_vd"};
        for (int i = 0; i < 6; i++)
            ptx_param(k, "u64", more[i]);
        ptx_param(k, "u64", "p_dst");
    }
}

int gemv_begin(struct ptx_kernel *k, const char *name, int sm, int k_in, int flags, int cols) {
    if (gemv_check(k_in, flags, cols))
        return -1;
    ptx_begin(k, name, sm);
    gemv_params(k, flags);
    return 0;
}

void gemv_norm_load(struct ptx_kernel *k, struct gemv_norm_row *nr, struct ptx_reg src,
                    struct ptx_reg ok, int k_in) {
    nr->per = k_in / KERNEL_LN_THREADS;
    for (int j = 0; j < GEMV_LN_VWARPS; j++)
        for (int i = 0; i < nr->per; i++) {
            nr->x[j][i] = ptx_reg(k, PTX_F32);
            ptx_ins(k, "mov.f32 %s, 0f00000000", nr->x[j][i].s);
            ptx_ins(k, "@%s %s.f32 %s, [%s+%d]", ok.s, ptx_ld_act(k, 1), nr->x[j][i].s, src.s,
                    4 * (32 * j + KERNEL_LN_THREADS * i));
        }
}

/* The sum gen_layernorm's block_sum makes of a row's partial sums: part[j] is virtual thread
 * 32 j + lane's; each virtual warp's sum by butterfly (every lane gets it), then the warps'
 * sums in order. */
static struct ptx_reg norm_sum(struct ptx_kernel *k, struct ptx_reg *part) {
    struct ptx_reg total = ptx_reg(k, PTX_F32);
    for (int j = 0; j < GEMV_LN_VWARPS; j++) {
        ptx_warp_reduce(k, part[j], "add");
        if (j == 0)
            ptx_ins(k, "mov.f32 %s, %s", total.s, part[0].s);
        else
            ptx_ins(k, "add.f32 %s, %s, %s", total.s, total.s, part[j].s);
    }
    return total;
}

void gemv_norm_stats(struct ptx_kernel *k, struct gemv_norm_row *nr, int k_in) {
    struct ptx_reg part[GEMV_LN_VWARPS];
    for (int j = 0; j < GEMV_LN_VWARPS; j++) {
        part[j] = ptx_reg(k, PTX_F32);
        ptx_ins(k, "mov.f32 %s, 0f00000000", part[j].s);
        for (int i = 0; i < nr->per; i++)
            ptx_ins(k, "add.f32 %s, %s, %s", part[j].s, part[j].s, nr->x[j][i].s);
    }
    struct ptx_reg sum = norm_sum(k, part), d = ptx_reg(k, PTX_F32);
    nr->mean = ptx_reg(k, PTX_F32);
    ptx_ins(k, "mov.f32 %s, %s", d.s, ptx_f32((float)k_in).s);
    ptx_ins(k, "div.rn.f32 %s, %s, %s", nr->mean.s, sum.s, d.s);
    for (int j = 0; j < GEMV_LN_VWARPS; j++) {
        ptx_ins(k, "mov.f32 %s, 0f00000000", part[j].s);
        for (int i = 0; i < nr->per; i++) {
            struct ptx_reg x = nr->x[j][i];
            ptx_ins(k, "sub.f32 %s, %s, %s", x.s, x.s, nr->mean.s);
            ptx_ins(k, "fma.rn.f32 %s, %s, %s, %s", part[j].s, x.s, x.s, part[j].s);
        }
    }
    nr->inv = norm_sum(k, part);
    ptx_ins(k, "div.rn.f32 %s, %s, %s", nr->inv.s, nr->inv.s, d.s);
    ptx_ins(k, "add.f32 %s, %s, %s", nr->inv.s, nr->inv.s, ptx_f32(1e-5f).s);
    ptx_ins(k, "sqrt.rn.f32 %s, %s", nr->inv.s, nr->inv.s);
    ptx_ins(k, "rcp.rn.f32 %s, %s", nr->inv.s, nr->inv.s);
}

void gemv_qkv_segment(struct ptx_kernel *k, struct gemv_qkv *q, struct ptx_reg cta,
                      int ctas_per_seg) {
    struct ptx_reg t = ptx_reg(k, PTX_B32);
    q->seg = ptx_reg(k, PTX_B32), q->is_k = ptx_reg(k, PTX_PRED), q->is_v = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "div.u32 %s, %s, %d", q->seg.s, cta.s, ctas_per_seg);
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", t.s, q->seg.s, ctas_per_seg);
    ptx_ins(k, "sub.u32 %s, %s, %s", cta.s, cta.s, t.s);
    ptx_ins(k, "setp.eq.u32 %s, %s, 1", q->is_k.s, q->seg.s);
    ptx_ins(k, "setp.eq.u32 %s, %s, 2", q->is_v.s, q->seg.s);
}

void gemv_qkv_select(struct ptx_kernel *k, const struct gemv_qkv *q, struct ptx_reg dst,
                     const char *p_k, const char *p_v, int raw) {
    struct ptx_reg pk = ptx_reg(k, PTX_B64), pv = ptx_reg(k, PTX_B64);
    if (raw) {
        ptx_ld_param(k, "u64", pk, p_k);
        ptx_ld_param(k, "u64", pv, p_v);
    } else {
        pk = ptx_ld_ptr(k, p_k), pv = ptx_ld_ptr(k, p_v);
    }
    ptx_ins(k, "selp.b64 %s, %s, %s, %s", dst.s, pk.s, dst.s, q->is_k.s);
    ptx_ins(k, "selp.b64 %s, %s, %s, %s", dst.s, pv.s, dst.s, q->is_v.s);
}

void gemv_qkv_outputs(struct ptx_kernel *k, const struct gemv_qkv *q, struct ptx_reg out,
                      struct ptx_reg b, struct ptx_reg b_ok, struct ptx_reg ok) {
    struct ptx_reg b_raw = ptx_reg(k, PTX_B64);
    ptx_ld_param(k, "u64", b_raw, "p_b");
    gemv_qkv_select(k, q, b_raw, "p_bk", "p_bv", 1);
    gemv_qkv_select(k, q, out, "p_kd", "p_vd", 0);
    gemv_qkv_select(k, q, b, "p_bk", "p_bv", 0);
    ptx_ins(k, "setp.ne.u64 %s, %s, 0", b_ok.s, b_raw.s);
    ptx_ins(k, "and.pred %s, %s, %s", b_ok.s, b_ok.s, ok.s);
}
