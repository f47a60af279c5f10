/* attention_tc.c — gen_attention_tc: the non-causal `attention` (encoder self-attention,
 * decoder cross-attention) on tensor cores, flash style, as attention.c but with Q·Kᵀ and P·V
 * as mma.sync.m16n8k16 (fp16 operands converted in the kernel, fp32 accumulate).
 *
 * CTA = 64 queries of one head, 4 warps of 16 query rows each. Fragment layouts (PTX ISA, mma
 * m16n8k16 .f16): g = lane/4, tg = lane%4; A regs {row g, row g+8} x {cols 2tg.., 2tg+8..};
 * B regs: k rows 2tg.. and 2tg+8.., column g; C: c0,c1 row g, cols 2tg, 2tg+1; c2,c3 row g+8.
 * - Q is loaded once as A fragments, pre-scaled by log2(e)/sqrt(d) (scores in the log2 domain).
 * - Per tile of 64 keys the CTA stages K and V as fp16 [key][d + 8]; B fragments come from
 *   ldmatrix (x4: two mma's worth a load), K's as stored, V's transposed (.trans); the pitch of
 *   36 words puts the 8 rows of an 8 x 8 matrix on 32 different banks. The f32 form issues the
 *   next tile's global loads before this tile's mma work, into registers, and stores them to
 *   shared memory after it; the fp16 form (K/V already halves) copies them with cp.async into
 *   a second buffer (double buffering, where both fit the 48 KB of static shared memory: d <=
 *   64), so that no register holds a tile in flight and no thread waits for the copy.
 * - S = Q·Kᵀ comes out in C layout; two neighbouring 8-key column tiles of S, rounded to fp16,
 *   are exactly the A fragment of P for a 16-key step of P·V (no shuffle through shared).
 * - Row max and sum: a row lives in the 4 lanes of a group (2 shuffles). The exponentials are
 *   ex2.approx.ftz: without .ftz ptxas wraps each MUFU.EX2 in a range test and two multiplies
 *   for a subnormal result (a weight below 2^-126 of the row's largest, which flushes to 0).
 * Keys past s_len are zeros in shared memory and -inf in S; query rows past t_len are computed
 * on a clamped row and not stored. d_head a multiple of 16, at most 128.
 * Grid z: CTA z attends within window z (the encoder's windows of a pass, one launch): its q
 * and out rows start z * t_len rows in, its K/V rows z * s_len rows in.
 * KERNEL_TC_KV_HALF (attn_tc_..._kvh): K and V stored as fp16 (the batch decoder's
 * cross-attention K/V, the encoder's) are staged as loaded; since the f32 kernel rounds them to
 * fp16 the same way, both give the same bits on K/V that fp16 holds exactly.
 * KERNEL_TC_OUT_HALF (_oh): the output rounded to fp16 as stored, for the output projection's
 * GEMM to read as is (the f32 output's bits, rounded once).
 * Only the tile holding key s_len - 1 masks: a full tile's mask changes nothing.
 */
#include <math.h>
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/mma_tiles.h"
#include "kernels/ptx.h"

#define TC_BK   64 /* keys per tile */
#define TC_MAXD 128
#define TC_PAD  8            /* halves of padding per shared row */
#define NEG_BIG "0fF149F2CA" /* -1e30, see attention.c */

/* dst = {lo, hi} as f16x2 (cvt's first source goes to the upper half) */
static void pack(struct ptx_kernel *k, struct ptx_reg dst, struct ptx_reg lo, struct ptx_reg hi) {
    ptx_ins(k, "cvt.rn.f16x2.f32 %s, %s, %s", dst.s, hi.s, lo.s);
}

/* The f32 form's K/V tile in flight, global to shared in two halves (stage_load, stage_store)
 * so that the next tile's loads overlap this tile's mma work: per matrix (K, V) and pair r,
 * two f32. */
#define TC_PAIRS (TC_BK * TC_MAXD / 256)
struct tile_regs {
    struct ptx_reg x[2][TC_PAIRS][2];
};

/* Loads rows [j0, j0 + TC_BK) of k and v into t, zeros for keys >= s_len. Pair e = tid + 128 r
 * of each: key e / (d/2), dims 2 (e % (d/2)) + {0,1}. kp/vp: global address of this thread's
 * r = 0 pair at j0; rem: s_len - j0 - its key; row = ld_kv elements, in bytes. */
static void stage_load(struct ptx_kernel *k, struct tile_regs *t, struct ptx_reg kp,
                       struct ptx_reg vp, struct ptx_reg rem, struct ptx_reg row, int d) {
    int kstep = 128 / (d / 2); /* keys from pair r to r + 1 */
    struct ptx_reg a = ptx_reg(k, PTX_B64), p = ptx_reg(k, PTX_PRED), off = ptx_reg(k, PTX_B64);
    for (int r = 0; r < TC_BK * d / 256; r++) {
        ptx_ins(k, "setp.gt.s32 %s, %s, %d", p.s, rem.s, r * kstep);
        ptx_ins(k, "mul.lo.u64 %s, %s, %d", off.s, row.s, r * kstep);
        for (int m = 0; m < 2; m++) {
            ptx_ins(k, "add.s64 %s, %s, %s", a.s, (m ? vp : kp).s, off.s);
            for (int e = 0; e < 2; e++) {
                ptx_ins(k, "mov.f32 %s, 0f00000000", t->x[m][r][e].s);
                ptx_ins(k, "@%s ld.global.nc.f32 %s, [%s+%d]", p.s, t->x[m][r][e].s, a.s, 4 * e);
            }
        }
    }
}

/* Stores t as k and v (fp16 [key][d + pad]); ksh/vsh: the shared address of this thread's
 * r = 0 pair. */
static void stage_store(struct ptx_kernel *k, const struct tile_regs *t, struct ptx_reg ksh,
                        struct ptx_reg vsh, int d) {
    int kstep = 128 / (d / 2);
    struct ptx_reg h = ptx_reg(k, PTX_B32);
    for (int m = 0; m < 2; m++)
        for (int r = 0; r < TC_BK * d / 256; r++) {
            pack(k, h, t->x[m][r][0], t->x[m][r][1]);
            ptx_ins(k, "st.shared.b32 [%s+%d], %s", (m ? vsh : ksh).s, 2 * r * kstep * (d + TC_PAD),
                    h.s);
        }
}

/* The fp16 form's staging: rows [j0, j0 + TC_BK) of k and v copied to shared memory by
 * cp.async, 16 bytes a chunk, zeros for keys >= s_len (a copy of 0 source bytes, from row0's
 * address, inside the tensor: nothing past it is ever addressed). Chunk e = tid + 128 r of
 * each: key e / (d/8), dims 8 (e % (d/8)) + [0, 8). kp, vp: global address of this thread's
 * r = 0 chunk; rem: s_len - j0 - its key; ksh, vsh: its r = 0 chunk's shared address, in the
 * buffer at byte offset boff. Not committed. */
static void async_issue(struct ptx_kernel *k, struct ptx_reg kp, struct ptx_reg vp,
                        const struct ptx_reg row0[2], struct ptx_reg rem, struct ptx_reg row,
                        struct ptx_reg ksh, struct ptx_reg vsh, struct ptx_reg boff, int d) {
    int kstep = 1024 / d; /* keys from chunk r to r + 1 */
    struct ptx_reg a = ptx_reg(k, PTX_B64), p = ptx_reg(k, PTX_PRED), off = ptx_reg(k, PTX_B64);
    struct ptx_reg n = ptx_reg(k, PTX_B32), sa = ptx_reg(k, PTX_B32);
    for (int r = 0; r < TC_BK * d / 1024; r++) {
        ptx_ins(k, "setp.gt.s32 %s, %s, %d", p.s, rem.s, r * kstep);
        ptx_ins(k, "selp.u32 %s, 16, 0, %s", n.s, p.s);
        ptx_ins(k, "mul.lo.u64 %s, %s, %d", off.s, row.s, r * kstep);
        for (int m = 0; m < 2; m++) {
            ptx_ins(k, "add.s64 %s, %s, %s", a.s, (m ? vp : kp).s, off.s);
            ptx_ins(k, "selp.b64 %s, %s, %s, %s", a.s, a.s, row0[m].s, p.s);
            ptx_ins(k, "add.u32 %s, %s, %s", sa.s, (m ? vsh : ksh).s, boff.s);
            ptx_ins(k, "cp.async.cg.shared.global [%s+%d], [%s], 16, %s", sa.s,
                    2 * r * kstep * (d + TC_PAD), a.s, n.s);
        }
    }
}

/* The registers of a tile in flight */
static void tile_regs_init(struct ptx_kernel *k, struct tile_regs *t, int d) {
    for (int m = 0; m < 2; m++)
        for (int r = 0; r < TC_BK * d / 256; r++)
            for (int e = 0; e < 2; e++)
                t->x[m][r][e] = ptx_reg(k, PTX_F32);
}

/* v = max (op "max") or sum ("add") over the 4 lanes of a group: they hold one query row */
static void quad_reduce(struct ptx_kernel *k, struct ptx_reg v, const char *op) {
    struct ptx_reg t = ptx_reg(k, PTX_F32);
    for (int lane = 1; lane <= 2; lane *= 2) {
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", t.s, v.s, lane);
        ptx_ins(k, "%s.f32 %s, %s, %s", op, v.s, v.s, t.s);
    }
}

/* The pointer parameter `param` advanced by z_rows rows of row_elems (an immediate when
 * row_reg is NULL) elements of esz bytes: window z's part of a tensor. */
static struct ptx_reg window_ptr(struct ptx_kernel *k, const char *param, struct ptx_reg z_rows,
                                 const struct ptx_reg *row_reg, int row_elems, int esz) {
    struct ptx_reg e = ptx_reg(k, PTX_B32);
    if (row_reg)
        ptx_ins(k, "mul.lo.u32 %s, %s, %s", e.s, z_rows.s, row_reg->s);
    else
        ptx_ins(k, "mul.lo.u32 %s, %s, %d", e.s, z_rows.s, row_elems);
    return ptx_addr(k, ptx_ld_ptr(k, param), e, esz);
}

/* addr = base + (index * 4) for u32 index, base a 64-bit register */
static struct ptx_reg row_addr(struct ptx_kernel *k, struct ptx_reg base, struct ptx_reg index) {
    return ptx_addr(k, base, index, 4);
}

char *gen_attention_tc(int sm, int n_head, int d, int flags) {
    if (sm < 80 || n_head <= 0 || d <= 0 || d % 16 || d > TC_MAXD || 256 % d ||
        (flags & ~(KERNEL_TC_KV_HALF | KERNEL_TC_OUT_HALF)))
        return NULL;
    int kv_half = !!(flags & KERNEL_TC_KV_HALF), out_half = !!(flags & KERNEL_TC_OUT_HALF);
    int c = n_head * d, nks = d / 16, nnd = d / 8, nnt = TC_BK / 8;
    int pk = d + TC_PAD; /* shared pitch in halves */
    char name[64];
    snprintf(name, sizeof name, "attn_tc_h%d_d%d%s%s", n_head, d, kv_half ? "_kvh" : "",
             out_half ? "_oh" : "");
    int esz = kv_half ? 2 : 4; /* bytes per key or value element */
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    if (kv_half && d <= 64) /* three CTAs an SM: 160 registers, no spill (four spill; the f32
                             * form needs 202 for its tile of f32 in flight: two) */
        ptx_occupancy(&k, KERNEL_ATTN_THREADS, 3);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_q");
    ptx_param(&k, "u64", "p_k");
    ptx_param(&k, "u64", "p_v");
    ptx_param(&k, "u32", "p_ld_kv");
    ptx_param(&k, "u32", "p_t_len");
    ptx_param(&k, "u32", "p_s_len");
    ptx_param(&k, "s32", "p_pos0"); /* unused: same parameters as attn_h<H>_d<D> */
    /* the fp16 form's buffers: two where they fit the static 48 KB */
    int nbuf = kv_half && 2 * 2 * TC_BK * pk * 2 <= 48 * 1024 ? 2 : 1;
    ptx_raw(&k, "    .shared .align 16 .b16 s_k[%d];\n    .shared .align 16 .b16 s_v[%d];\n",
            nbuf * TC_BK * pk, nbuf * TC_BK * pk);

    struct ptx_reg tid = ptx_special(&k, "%tid.x"), blk = ptx_special(&k, "%ctaid.x");
    struct ptx_reg head = ptx_special(&k, "%ctaid.y");
    struct ptx_reg t_len = ptx_reg(&k, PTX_B32), s_len = ptx_reg(&k, PTX_B32);
    struct ptx_reg ld = ptx_reg(&k, PTX_B32), g = ptx_reg(&k, PTX_B32), tg = ptx_reg(&k, PTX_B32);
    struct ptx_reg r0 = ptx_reg(&k, PTX_B32), r1 = ptx_reg(&k, PTX_B32);
    struct ptx_reg last = ptx_reg(&k, PTX_B32), x = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "ld.param.u32 %s, [p_t_len]", t_len.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_s_len]", s_len.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_ld_kv]", ld.s);
    ptx_ins(&k, "and.b32 %s, %s, 31", x.s, tid.s);
    ptx_ins(&k, "shr.u32 %s, %s, 2", g.s, x.s);
    ptx_ins(&k, "and.b32 %s, %s, 3", tg.s, x.s);
    /* r0 = blk*64 + warp*16 + g, r1 = r0 + 8 */
    ptx_ins(&k, "shr.u32 %s, %s, 5", x.s, tid.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", r0.s, blk.s, KERNEL_ATTN_BQ / 16, x.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 16, %s", r0.s, r0.s, g.s);
    ptx_ins(&k, "add.u32 %s, %s, 8", r1.s, r0.s);
    ptx_ins(&k, "sub.u32 %s, %s, 1", last.s, t_len.s);
    struct ptx_reg win = ptx_special(&k, "%ctaid.z"), zt = ptx_reg(&k, PTX_B32);
    struct ptx_reg zs = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %s", zt.s, win.s, t_len.s); /* window z's first query */
    ptx_ins(&k, "mul.lo.u32 %s, %s, %s", zs.s, win.s, s_len.s); /* and key */

    /* Q as A fragments: qa[ks][0..3] = rows (r0, r1, r0, r1) x cols 16 ks + 2 tg + (0, 0, 8, 8) */
    struct ptx_reg col = ptx_reg(&k, PTX_B32), qi = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", col.s, head.s, d);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 2, %s", col.s, tg.s, col.s);
    struct ptx_reg q = window_ptr(&k, "p_q", zt, NULL, c, 4), qa[2];
    for (int h = 0; h < 2; h++) {
        ptx_ins(&k, "min.u32 %s, %s, %s", qi.s, h ? r1.s : r0.s, last.s);
        ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", qi.s, qi.s, c, col.s);
        qa[h] = row_addr(&k, q, qi);
    }
    struct ptx_reg a[TC_MAXD / 16][4], f0 = ptx_reg(&k, PTX_F32), f1 = ptx_reg(&k, PTX_F32);
    struct ptx_reg scale = ptx_f32((float)(1.4426950408889634 / sqrt((double)d)));
    for (int ks = 0; ks < nks; ks++)
        for (int i = 0; i < 4; i++) {
            int off = 4 * (16 * ks + 8 * (i / 2));
            a[ks][i] = ptx_reg(&k, PTX_B32);
            ptx_ins(&k, "ld.global.nc.f32 %s, [%s+%d]", f0.s, qa[i % 2].s, off);
            ptx_ins(&k, "ld.global.nc.f32 %s, [%s+%d]", f1.s, qa[i % 2].s, off + 4);
            ptx_ins(&k, "mul.f32 %s, %s, %s", f0.s, f0.s, scale.s);
            ptx_ins(&k, "mul.f32 %s, %s, %s", f1.s, f1.s, scale.s);
            pack(&k, a[ks][i], f0, f1);
        }

    /* staging addresses (stage()) and this lane's fragment rows in shared memory */
    struct ptx_reg kkey = ptx_reg(&k, PTX_B32), kcol = ptx_reg(&k, PTX_B32);
    struct ptx_reg ksh = ptx_reg(&k, PTX_B32), vsh = ptx_reg(&k, PTX_B32);
    struct ptx_reg kb = ptx_reg(&k, PTX_B32), vb = ptx_reg(&k, PTX_B32);
    struct ptx_reg krem = ptx_reg(&k, PTX_B32), xv = ptx_reg(&k, PTX_B32);
    /* a thread's first K/V pair (f32 form) or 16-byte chunk of 8 halves (fp16 form) */
    int per_key = kv_half ? d / 8 : d / 2;
    ptx_ins(&k, "div.u32 %s, %s, %d", kkey.s, tid.s, per_key); /* its key */
    ptx_ins(&k, "and.b32 %s, %s, %d", kcol.s, tid.s, per_key - 1);
    ptx_ins(&k, "shl.b32 %s, %s, %d", kcol.s, kcol.s, kv_half ? 3 : 1); /* its first dim */
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", ksh.s, kkey.s, pk, kcol.s);
    ptx_ins(&k, "mov.u32 %s, s_k", x.s);
    ptx_ins(&k, "mov.u32 %s, s_v", xv.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 2, %s", vsh.s, ksh.s, xv.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 2, %s", ksh.s, ksh.s, x.s);
    /* ldmatrix rows: lane L gives row L % 8 of matrix L / 8; K's four matrices are 8 keys by
     * dims +0, +8, +16, +24 (two k-steps' b0, b1), V's (transposed as loaded) keys +0 and +8
     * by 8 dims, then the same keys by the next 8 dims (two n-tiles' b0, b1) */
    struct ptx_reg ln = ptx_reg(&k, PTX_B32), lr = ptx_reg(&k, PTX_B32), lm = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "and.b32 %s, %s, 31", ln.s, tid.s);
    ptx_ins(&k, "and.b32 %s, %s, 7", lr.s, ln.s);
    ptx_ins(&k, "shr.u32 %s, %s, 3", lm.s, ln.s);
    ptx_ins(&k, "shl.b32 %s, %s, 3", kb.s, lm.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", kb.s, lr.s, pk, kb.s); /* (L%8)*pk + 8(L/8) */
    ptx_ins(&k, "mad.lo.u32 %s, %s, 2, %s", kb.s, kb.s, x.s);
    ptx_ins(&k, "and.b32 %s, %s, 1", lm.s, lm.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 8, %s", lm.s, lm.s, lr.s); /* key row: 8((L/8)%2) + L%8 */
    ptx_ins(&k, "shr.u32 %s, %s, 4", vb.s, ln.s);
    ptx_ins(&k, "shl.b32 %s, %s, 3", vb.s, vb.s); /* dim column: 8(L/16) */
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", vb.s, lm.s, pk, vb.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 2, %s", vb.s, vb.s, xv.s);
    ptx_ins(&k, "sub.s32 %s, %s, %s", krem.s, s_len.s, kkey.s);
    struct ptx_reg hd = ptx_reg(&k, PTX_B32), gi = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", hd.s, head.s, d);
    ptx_ins(&k, "add.u32 %s, %s, %s", gi.s, hd.s, kcol.s);
    struct ptx_reg kw = window_ptr(&k, "p_k", zs, &ld, 0, esz);
    struct ptx_reg vw = window_ptr(&k, "p_v", zs, &ld, 0, esz);
    /* the fp16 form's stand-in source for a chunk past s_len: the same columns of key 0 */
    struct ptx_reg row0[2];
    if (kv_half)
        row0[0] = ptx_addr(&k, kw, gi, esz), row0[1] = ptx_addr(&k, vw, gi, esz);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %s, %s", gi.s, kkey.s, ld.s, gi.s);
    struct ptx_reg kp = ptx_addr(&k, kw, gi, esz), vp = ptx_addr(&k, vw, gi, esz);
    struct ptx_reg row = ptx_reg(&k, PTX_B64), tstep = ptx_reg(&k, PTX_B64);
    ptx_ins(&k, "mul.wide.u32 %s, %s, %d", row.s, ld.s, esz);
    ptx_ins(&k, "mul.wide.u32 %s, %s, %d", tstep.s, ld.s, esz * TC_BK);

    /* running max m, sum l (this lane's columns only; summed over the group at the end) and
     * output o[nd] (C layout, dims nd*8 + 2tg..) for rows r0 (index 0) and r1 (index 1) */
    struct ptx_reg m[2], l[2], o[TC_MAXD / 8][4], sc[TC_BK / 8][4];
    for (int h = 0; h < 2; h++) {
        m[h] = ptx_reg(&k, PTX_F32), l[h] = ptx_reg(&k, PTX_F32);
        ptx_ins(&k, "mov.f32 %s, %s", m[h].s, NEG_BIG);
        ptx_ins(&k, "mov.f32 %s, 0f00000000", l[h].s);
    }
    for (int nd = 0; nd < nnd; nd++)
        for (int i = 0; i < 4; i++) {
            o[nd][i] = ptx_reg(&k, PTX_F32);
            ptx_ins(&k, "mov.f32 %s, 0f00000000", o[nd][i].s);
        }
    for (int nt = 0; nt < nnt; nt++)
        for (int i = 0; i < 4; i++)
            sc[nt][i] = ptx_reg(&k, PTX_F32);
    struct ptx_reg j0 = ptx_reg(&k, PTX_B32), rem = ptx_reg(&k, PTX_B32);
    struct ptx_reg p = ptx_reg(&k, PTX_PRED), b[4]; /* B fragments of two mma (ldmatrix.x4) */
    for (int i = 0; i < 4; i++)
        b[i] = ptx_reg(&k, PTX_B32);
    struct ptx_reg loop = ptx_label(&k), end = ptx_label(&k);
    /* the tile's buffer (byte offset boff) and this lane's ldmatrix rows in it */
    struct ptx_reg boff = ptx_reg(&k, PTX_B32), kbb = kb, vbb = vb;
    int tile_bytes = 2 * TC_BK * pk;
    ptx_ins(&k, "mov.u32 %s, 0", boff.s);
    ptx_ins(&k, "mov.u32 %s, 0", j0.s);
    struct tile_regs tile;
    /* f32 form: past d = 64 a tile in flight would not fit the registers, loaded as stored */
    int ahead = !kv_half && d <= 64;
    if (kv_half) {
        kbb = ptx_reg(&k, PTX_B32), vbb = ptx_reg(&k, PTX_B32);
        async_issue(&k, kp, vp, row0, krem, row, ksh, vsh, boff, d);
        ptx_ins(&k, "cp.async.commit_group");
    } else
        tile_regs_init(&k, &tile, d);
    if (ahead)
        stage_load(&k, &tile, kp, vp, krem, row, d);
    ptx_place(&k, loop);
    ptx_ins(&k, "setp.ge.u32 %s, %s, %s", p.s, j0.s, s_len.s);
    ptx_ins(&k, "@%s bra %s", p.s, end.s);
    if (kv_half && nbuf == 2) {
        /* the next tile into the other buffer (read last iteration, released by its closing
         * barrier; past s_len only zeros), then wait for this one's */
        ptx_ins(&k, "sub.s32 %s, %s, %d", krem.s, krem.s, TC_BK);
        ptx_ins(&k, "add.s64 %s, %s, %s", kp.s, kp.s, tstep.s);
        ptx_ins(&k, "add.s64 %s, %s, %s", vp.s, vp.s, tstep.s);
        struct ptx_reg other = ptx_reg(&k, PTX_B32);
        ptx_ins(&k, "xor.b32 %s, %s, %d", other.s, boff.s, tile_bytes);
        async_issue(&k, kp, vp, row0, krem, row, ksh, vsh, other, d);
        ptx_ins(&k, "cp.async.commit_group");
        ptx_ins(&k, "cp.async.wait_group 1");
    } else if (kv_half)
        ptx_ins(&k, "cp.async.wait_group 0");
    if (kv_half) {
        ptx_ins(&k, "add.u32 %s, %s, %s", kbb.s, kb.s, boff.s);
        ptx_ins(&k, "add.u32 %s, %s, %s", vbb.s, vb.s, boff.s);
    }
    if (!kv_half && !ahead)
        stage_load(&k, &tile, kp, vp, krem, row, d);
    if (!kv_half)
        stage_store(&k, &tile, ksh, vsh, d);
    ptx_ins(&k, "bar.sync 0");
    if (!kv_half) {
        /* the next tile's loads, in flight while this one's mma work runs (none past s_len) */
        ptx_ins(&k, "sub.s32 %s, %s, %d", krem.s, krem.s, TC_BK);
        ptx_ins(&k, "add.s64 %s, %s, %s", kp.s, kp.s, tstep.s);
        ptx_ins(&k, "add.s64 %s, %s, %s", vp.s, vp.s, tstep.s);
    }
    if (ahead)
        stage_load(&k, &tile, kp, vp, krem, row, d);

    /* S = Q·Kᵀ for 8 column tiles of 8 keys; keys >= s_len to -inf (in the last tile: the
     * branch is uniform) */
    ptx_ins(&k, "sub.s32 %s, %s, %s", rem.s, s_len.s, j0.s);
    struct ptx_reg full = ptx_reg(&k, PTX_PRED), masked = ptx_label(&k);
    ptx_ins(&k, "setp.ge.s32 %s, %s, %d", full.s, rem.s, TC_BK);
    ptx_ins(&k, "mad.lo.s32 %s, %s, -2, %s", rem.s, tg.s, rem.s);
    for (int nt = 0; nt < nnt; nt++)
        mma_qk_tile(&k, sc[nt], a, b, kbb, pk, nt, nks);
    ptx_ins(&k, "@%s bra.uni %s", full.s, masked.s);
    for (int nt = 0; nt < nnt; nt++)
        for (int i = 0; i < 4; i++) {
            ptx_ins(&k, "setp.le.s32 %s, %s, %d", p.s, rem.s, nt * 8 + i % 2);
            ptx_ins(&k, "@%s mov.f32 %s, 0fFF800000", p.s, sc[nt][i].s);
        }
    ptx_place(&k, masked);
    /* online softmax per row: c0, c1 belong to r0 (h = 0), c2, c3 to r1 */
    struct ptx_reg mx = ptx_reg(&k, PTX_F32), corr = ptx_reg(&k, PTX_F32);
    for (int h = 0; h < 2; h++) {
        ptx_ins(&k, "mov.f32 %s, %s", mx.s, m[h].s);
        for (int nt = 0; nt < nnt; nt++)
            for (int i = 2 * h; i < 2 * h + 2; i++)
                ptx_ins(&k, "max.f32 %s, %s, %s", mx.s, mx.s, sc[nt][i].s);
        quad_reduce(&k, mx, "max");
        ptx_ins(&k, "sub.f32 %s, %s, %s", corr.s, m[h].s, mx.s);
        ptx_ins(&k, "ex2.approx.ftz.f32 %s, %s", corr.s, corr.s);
        ptx_ins(&k, "mov.f32 %s, %s", m[h].s, mx.s);
        ptx_ins(&k, "mul.f32 %s, %s, %s", l[h].s, l[h].s, corr.s);
        for (int nd = 0; nd < nnd; nd++)
            for (int i = 2 * h; i < 2 * h + 2; i++)
                ptx_ins(&k, "mul.f32 %s, %s, %s", o[nd][i].s, o[nd][i].s, corr.s);
        for (int nt = 0; nt < nnt; nt++)
            for (int i = 2 * h; i < 2 * h + 2; i++) {
                ptx_ins(&k, "sub.f32 %s, %s, %s", sc[nt][i].s, sc[nt][i].s, m[h].s);
                ptx_ins(&k, "ex2.approx.ftz.f32 %s, %s", sc[nt][i].s, sc[nt][i].s);
                ptx_ins(&k, "add.f32 %s, %s, %s", l[h].s, l[h].s, sc[nt][i].s);
            }
    }
    /* O += P·V: 16 keys per step; P's A fragment is S tiles 2ks (regs 0, 1) and 2ks+1 (2, 3) */
    struct ptx_reg pa[4];
    for (int i = 0; i < 4; i++)
        pa[i] = ptx_reg(&k, PTX_B32);
    for (int ks = 0; ks < TC_BK / 16; ks++) {
        for (int i = 0; i < 4; i++) {
            struct ptx_reg *t = sc[2 * ks + i / 2];
            pack(&k, pa[i], t[2 * (i % 2)], t[2 * (i % 2) + 1]);
        }
        mma_pv_step(&k, o, pa, b, vbb, pk, ks, nnd);
    }
    ptx_ins(&k, "bar.sync 0"); /* every warp is done with the tile before it is overwritten */
    if (kv_half && nbuf == 2)
        ptx_ins(&k, "xor.b32 %s, %s, %d", boff.s, boff.s, tile_bytes);
    else if (kv_half) { /* one buffer: the next tile's copy starts now */
        ptx_ins(&k, "sub.s32 %s, %s, %d", krem.s, krem.s, TC_BK);
        ptx_ins(&k, "add.s64 %s, %s, %s", kp.s, kp.s, tstep.s);
        ptx_ins(&k, "add.s64 %s, %s, %s", vp.s, vp.s, tstep.s);
        async_issue(&k, kp, vp, row0, krem, row, ksh, vsh, boff, d);
        ptx_ins(&k, "cp.async.commit_group");
    }
    ptx_ins(&k, "add.u32 %s, %s, %d", j0.s, j0.s, TC_BK);
    ptx_ins(&k, "bra.uni %s", loop.s);
    ptx_place(&k, end);
    if (kv_half) /* the copies past the last tile (zeros) are done before the CTA exits */
        ptx_ins(&k, "cp.async.wait_all");

    /* out[r][head*d + nd*8 + 2tg + {0,1}] = o / l, rows < t_len */
    int osz = out_half ? 2 : 4;
    struct ptx_reg out = window_ptr(&k, "p_out", zt, NULL, c, osz), oi = ptx_reg(&k, PTX_B32);
    struct ptx_reg o16 = ptx_reg(&k, PTX_B32);
    for (int h = 0; h < 2; h++) { /* all lanes, before any branch */
        quad_reduce(&k, l[h], "add");
        ptx_ins(&k, "rcp.rn.f32 %s, %s", l[h].s, l[h].s);
    }
    for (int h = 0; h < 2; h++) {
        struct ptx_reg skip = ptx_label(&k);
        ptx_ins(&k, "setp.ge.u32 %s, %s, %s", p.s, h ? r1.s : r0.s, t_len.s);
        ptx_ins(&k, "@%s bra %s", p.s, skip.s);
        ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", oi.s, h ? r1.s : r0.s, c, col.s);
        struct ptx_reg oa = ptx_addr(&k, out, oi, osz);
        for (int nd = 0; nd < nnd; nd++) {
            for (int i = 2 * h; i < 2 * h + 2; i++) {
                ptx_ins(&k, "mul.f32 %s, %s, %s", o[nd][i].s, o[nd][i].s, l[h].s);
                if (!out_half)
                    ptx_ins(&k, "st.global.f32 [%s+%d], %s", oa.s, 4 * (nd * 8 + i % 2),
                            o[nd][i].s);
            }
            if (out_half) {
                pack(&k, o16, o[nd][2 * h], o[nd][2 * h + 1]);
                ptx_ins(&k, "st.global.b32 [%s+%d], %s", oa.s, 2 * nd * 8, o16.s);
            }
        }
        ptx_place(&k, skip);
    }
    return ptx_end(&k);
}
