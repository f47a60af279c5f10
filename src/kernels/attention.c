/* attention.c — gen_attention: backend.h's `attention` op, flash style, fp32 throughout.
 *
 * One CTA per (block of KERNEL_ATTN_BQ = 64 queries, head), 128 threads: two threads per query,
 * thread `half` of query row tid/2 owns the columns 4i + 2*half + {0, 1} of its q and output
 * (so the pair's shared-memory reads hit different banks). Keys go in tiles of ATT_BK rows: the
 * CTA stages K and V of a tile in shared memory, each pair computes its query's ATT_BK scores
 * (half dot products joined by one shuffle), then folds the tile into an online softmax:
 * m = running max, l = running sum of 2^(s - m), acc = running sum of 2^(s - m) v, rescaled
 * by 2^(m_old - m_new) once per tile. Scores are kept in the log2 domain (q is pre-scaled by
 * log2(e)/sqrt(d)) so each weight is one ex2.
 *
 * Causal (decoder self-attention): query t sits at pos0 + t and sees keys j <= pos0 + t; the
 * CTA stops at its last query's limit. Query rows past t_len (the ragged last block) compute
 * on a clamped copy of row t_len - 1 and store nothing, so every thread reaches every barrier
 * and shuffle. d_head must divide 128 (one tile row per 128/d threads) and be a multiple of 4.
 */
#include <math.h>
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

#define ATT_BK   32  /* keys per shared-memory tile */
#define ATT_MAXD 128 /* widest head: 2 x d/2 registers for q and acc, ATT_BK for scores */
/* -1e30, the running max before any key: finite, so 2^(m_old - m_new) never sees inf - inf */
#define NEG_BIG  "0fF149F2CA"

/* The tile of rows [j0, j0 + ATT_BK) of k (or v) into shared `s_tile`, zeros past kmax:
 * element tid + 128 r is tile row tid/d + r*128/d, column tid % d. `src` points at
 * row j0 + tid/d, column head*d + tid%d; `step` = (128/d) rows in bytes; `rem` = kmax - j0 -
 * tid/d. */
static void load_tile(struct ptx_kernel *k, const char *s_tile, struct ptx_reg tid4,
                      struct ptx_reg src, struct ptx_reg step, struct ptx_reg rem, int d) {
    struct ptx_reg a = ptx_reg(k, PTX_B64), v = ptx_reg(k, PTX_F32), p = ptx_reg(k, PTX_PRED);
    struct ptx_reg sa = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mov.b64 %s, %s", a.s, src.s);
    ptx_ins(k, "mov.u32 %s, %s", sa.s, s_tile);
    ptx_ins(k, "add.u32 %s, %s, %s", sa.s, sa.s, tid4.s);
    for (int r = 0; r < ATT_BK * d / 128; r++) {
        ptx_ins(k, "setp.gt.s32 %s, %s, %d", p.s, rem.s, r * (128 / d));
        ptx_ins(k, "mov.f32 %s, 0f00000000", v.s);
        ptx_ins(k, "@%s ld.global.nc.f32 %s, [%s]", p.s, v.s, a.s);
        ptx_ins(k, "st.shared.f32 [%s+%d], %s", sa.s, 512 * r, v.s);
        ptx_ins(k, "add.s64 %s, %s, %s", a.s, a.s, step.s);
    }
}

char *gen_attention(int sm, int n_head, int d, int causal) {
    if (n_head <= 0 || d <= 0 || d > ATT_MAXD || 128 % d || d % 4)
        return NULL;
    int c = n_head * d, nd = d / 2; /* columns per thread */
    char name[64];
    snprintf(name, sizeof name, "attn_h%d_d%d%s", n_head, d, causal ? "_causal" : "");
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_q");
    ptx_param(&k, "u64", "p_k");
    ptx_param(&k, "u64", "p_v");
    ptx_param(&k, "u32", "p_ld_kv");
    ptx_param(&k, "u32", "p_t_len");
    ptx_param(&k, "u32", "p_s_len");
    ptx_param(&k, "s32", "p_pos0");
    ptx_raw(&k, "    .shared .align 16 .f32 s_k[%d];\n    .shared .align 16 .f32 s_v[%d];\n",
            ATT_BK * d, ATT_BK * d);

    struct ptx_reg tid = ptx_special(&k, "%tid.x"), blk = ptx_special(&k, "%ctaid.x");
    struct ptx_reg head = ptx_special(&k, "%ctaid.y");
    struct ptx_reg t0 = ptx_reg(&k, PTX_B32), t = ptx_reg(&k, PTX_B32), tq = ptx_reg(&k, PTX_B32);
    struct ptx_reg t_len = ptx_reg(&k, PTX_B32), s_len = ptx_reg(&k, PTX_B32);
    struct ptx_reg ld = ptx_reg(&k, PTX_B32), pos0 = ptx_reg(&k, PTX_B32);
    struct ptx_reg half = ptx_reg(&k, PTX_B32), col = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "ld.param.u32 %s, [p_t_len]", t_len.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_s_len]", s_len.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_ld_kv]", ld.s);
    ptx_ins(&k, "ld.param.s32 %s, [p_pos0]", pos0.s);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", t0.s, blk.s, KERNEL_ATTN_BQ);
    ptx_ins(&k, "shr.u32 %s, %s, 1", t.s, tid.s);
    ptx_ins(&k, "add.u32 %s, %s, %s", t.s, t.s, t0.s);
    ptx_ins(&k, "sub.u32 %s, %s, 1", tq.s, t_len.s);
    ptx_ins(&k, "min.u32 %s, %s, %s", tq.s, tq.s, t.s);
    ptx_ins(&k, "and.b32 %s, %s, 1", half.s, tid.s);
    /* col = head*d + 2*half: this thread's first column within a row of c */
    ptx_ins(&k, "shl.b32 %s, %s, 1", col.s, half.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", col.s, head.s, d, col.s);

    /* q, pre-scaled so that scores come out as log2(e) * q.k / sqrt(d) */
    struct ptx_reg q[ATT_MAXD / 2], acc[ATT_MAXD / 2];
    struct ptx_reg qi = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", qi.s, tq.s, c, col.s);
    struct ptx_reg qa = ptx_addr(&k, ptx_ld_ptr(&k, "p_q"), qi, 4);
    struct ptx_reg scale = ptx_f32((float)(1.4426950408889634 / sqrt((double)d)));
    for (int i = 0; i < nd; i++) {
        q[i] = ptx_reg(&k, PTX_F32);
        acc[i] = ptx_reg(&k, PTX_F32);
        ptx_ins(&k, "ld.global.nc.f32 %s, [%s+%d]", q[i].s, qa.s, 4 * (4 * (i / 2) + i % 2));
        ptx_ins(&k, "mul.f32 %s, %s, %s", q[i].s, q[i].s, scale.s);
        ptx_ins(&k, "mov.f32 %s, 0f00000000", acc[i].s);
    }

    /* key limits: kmax for the CTA, lim for this thread's query */
    struct ptx_reg kmax = ptx_reg(&k, PTX_B32), lim = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mov.u32 %s, %s", kmax.s, s_len.s);
    ptx_ins(&k, "mov.u32 %s, %s", lim.s, s_len.s);
    if (causal) {
        struct ptx_reg e = ptx_reg(&k, PTX_B32);
        ptx_ins(&k, "add.s32 %s, %s, %s", e.s, pos0.s, t0.s);
        ptx_ins(&k, "add.s32 %s, %s, %d", e.s, e.s, KERNEL_ATTN_BQ);
        ptx_ins(&k, "min.s32 %s, %s, %s", kmax.s, kmax.s, e.s);
        ptx_ins(&k, "add.s32 %s, %s, %s", e.s, pos0.s, t.s);
        ptx_ins(&k, "add.s32 %s, %s, 1", e.s, e.s);
        ptx_ins(&k, "min.s32 %s, %s, %s", lim.s, lim.s, e.s);
    }

    /* tile sources: row tid/d, column head*d + tid%d of k and v; step 128/d rows */
    struct ptx_reg lrow = ptx_reg(&k, PTX_B32), ki = ptx_reg(&k, PTX_B32);
    struct ptx_reg tid4 = ptx_reg(&k, PTX_B32), step = ptx_reg(&k, PTX_B64);
    ptx_ins(&k, "div.u32 %s, %s, %d", lrow.s, tid.s, d);
    ptx_ins(&k, "and.b32 %s, %s, %d", ki.s, tid.s, d - 1);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", ki.s, head.s, d, ki.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %s, %s", ki.s, lrow.s, ld.s, ki.s);
    ptx_ins(&k, "shl.b32 %s, %s, 2", tid4.s, tid.s);
    ptx_ins(&k, "mul.wide.u32 %s, %s, %d", step.s, ld.s, 4 * (128 / d));
    struct ptx_reg ka = ptx_addr(&k, ptx_ld_ptr(&k, "p_k"), ki, 4);
    struct ptx_reg va = ptx_addr(&k, ptx_ld_ptr(&k, "p_v"), ki, 4);
    struct ptx_reg tile_step = ptx_reg(&k, PTX_B64);
    ptx_ins(&k, "mul.wide.u32 %s, %s, %d", tile_step.s, ld.s, 4 * ATT_BK);

    /* this thread's slice of a shared row: byte 8*half, +16 per column pair */
    struct ptx_reg sk = ptx_reg(&k, PTX_B32), sv = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mov.u32 %s, s_k", sk.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 8, %s", sk.s, half.s, sk.s);
    ptx_ins(&k, "mov.u32 %s, s_v", sv.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 8, %s", sv.s, half.s, sv.s);

    struct ptx_reg m = ptx_reg(&k, PTX_F32), l = ptx_reg(&k, PTX_F32);
    ptx_ins(&k, "mov.f32 %s, %s", m.s, NEG_BIG);
    ptx_ins(&k, "mov.f32 %s, 0f00000000", l.s);
    struct ptx_reg j0 = ptx_reg(&k, PTX_B32), rem = ptx_reg(&k, PTX_B32);
    struct ptx_reg remq = ptx_reg(&k, PTX_B32), p = ptx_reg(&k, PTX_PRED);
    struct ptx_reg loop = ptx_label(&k), end = ptx_label(&k);
    struct ptx_reg s[ATT_BK], x0 = ptx_reg(&k, PTX_F32), x1 = ptx_reg(&k, PTX_F32);
    struct ptx_reg mt = ptx_reg(&k, PTX_F32), corr = ptx_reg(&k, PTX_F32);
    ptx_ins(&k, "mov.u32 %s, 0", j0.s);
    ptx_place(&k, loop);
    ptx_ins(&k, "setp.ge.s32 %s, %s, %s", p.s, j0.s, kmax.s);
    ptx_ins(&k, "@%s bra %s", p.s, end.s);
    ptx_ins(&k, "sub.s32 %s, %s, %s", rem.s, kmax.s, j0.s);
    ptx_ins(&k, "sub.s32 %s, %s, %s", rem.s, rem.s, lrow.s);
    load_tile(&k, "s_k", tid4, ka, step, rem, d);
    load_tile(&k, "s_v", tid4, va, step, rem, d);
    ptx_ins(&k, "bar.sync 0");

    /* scores of the tile; keys at or past lim get -inf (weight 0) */
    ptx_ins(&k, "sub.s32 %s, %s, %s", remq.s, lim.s, j0.s);
    for (int jj = 0; jj < ATT_BK; jj++) {
        s[jj] = ptx_reg(&k, PTX_F32);
        ptx_ins(&k, "mov.f32 %s, 0f00000000", s[jj].s);
        for (int i = 0; i < nd; i += 2) {
            ptx_ins(&k, "ld.shared.v2.f32 {%s, %s}, [%s+%d]", x0.s, x1.s, sk.s,
                    4 * (jj * d + 2 * i));
            ptx_ins(&k, "fma.rn.f32 %s, %s, %s, %s", s[jj].s, q[i].s, x0.s, s[jj].s);
            ptx_ins(&k, "fma.rn.f32 %s, %s, %s, %s", s[jj].s, q[i + 1].s, x1.s, s[jj].s);
        }
        ptx_ins(&k, "shfl.sync.bfly.b32 %s, %s, 1, 31, -1", x0.s, s[jj].s);
        ptx_ins(&k, "add.f32 %s, %s, %s", s[jj].s, s[jj].s, x0.s);
        ptx_ins(&k, "setp.le.s32 %s, %s, %d", p.s, remq.s, jj);
        ptx_ins(&k, "@%s mov.f32 %s, 0fFF800000", p.s, s[jj].s);
    }
    /* online softmax: new max, rescale the running sums once, add the tile */
    ptx_ins(&k, "mov.f32 %s, %s", mt.s, m.s);
    for (int jj = 0; jj < ATT_BK; jj++)
        ptx_ins(&k, "max.f32 %s, %s, %s", mt.s, mt.s, s[jj].s);
    ptx_ins(&k, "sub.f32 %s, %s, %s", corr.s, m.s, mt.s);
    ptx_ins(&k, "ex2.approx.f32 %s, %s", corr.s, corr.s);
    ptx_ins(&k, "mov.f32 %s, %s", m.s, mt.s);
    ptx_ins(&k, "mul.f32 %s, %s, %s", l.s, l.s, corr.s);
    for (int i = 0; i < nd; i++)
        ptx_ins(&k, "mul.f32 %s, %s, %s", acc[i].s, acc[i].s, corr.s);
    for (int jj = 0; jj < ATT_BK; jj++) {
        ptx_ins(&k, "sub.f32 %s, %s, %s", s[jj].s, s[jj].s, m.s);
        ptx_ins(&k, "ex2.approx.f32 %s, %s", s[jj].s, s[jj].s);
        ptx_ins(&k, "add.f32 %s, %s, %s", l.s, l.s, s[jj].s);
        for (int i = 0; i < nd; i += 2) {
            ptx_ins(&k, "ld.shared.v2.f32 {%s, %s}, [%s+%d]", x0.s, x1.s, sv.s,
                    4 * (jj * d + 2 * i));
            ptx_ins(&k, "fma.rn.f32 %s, %s, %s, %s", acc[i].s, s[jj].s, x0.s, acc[i].s);
            ptx_ins(&k, "fma.rn.f32 %s, %s, %s, %s", acc[i + 1].s, s[jj].s, x1.s, acc[i + 1].s);
        }
    }
    ptx_ins(&k, "bar.sync 0"); /* the tile is read by all before the next overwrites it */
    ptx_ins(&k, "add.s32 %s, %s, %d", j0.s, j0.s, ATT_BK);
    ptx_ins(&k, "add.s64 %s, %s, %s", ka.s, ka.s, tile_step.s);
    ptx_ins(&k, "add.s64 %s, %s, %s", va.s, va.s, tile_step.s);
    ptx_ins(&k, "bra.uni %s", loop.s);
    ptx_place(&k, end);

    /* out = acc / l, rows < t_len only */
    struct ptx_reg done = ptx_label(&k), oi = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "setp.ge.u32 %s, %s, %s", p.s, t.s, t_len.s);
    ptx_ins(&k, "@%s bra %s", p.s, done.s);
    ptx_ins(&k, "rcp.rn.f32 %s, %s", l.s, l.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", oi.s, t.s, c, col.s);
    struct ptx_reg oa = ptx_addr(&k, ptx_ld_ptr(&k, "p_out"), oi, 4);
    for (int i = 0; i < nd; i++) {
        ptx_ins(&k, "mul.f32 %s, %s, %s", acc[i].s, acc[i].s, l.s);
        ptx_ins(&k, "st.global.f32 [%s+%d], %s", oa.s, 4 * (4 * (i / 2) + i % 2), acc[i].s);
    }
    ptx_place(&k, done);
    return ptx_end(&k);
}
