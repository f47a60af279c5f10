/* attention_rows_tc.c — gen_attention_rows_tc: backend.h's `attention_rows` over fp16 K/V (the
 * batch decoder's cross-attention: one query a row, each row its own window's 1,500 keys) on
 * tensor cores. attn_rows spends a warp's 32 lanes on one key at a time (a butterfly for every
 * dot product); at 64 lanes a large-v3 step walks 61 M (row, head, key)s, and so many
 * instructions a key make it the step's largest cost. Here a warp takes 32 keys at once as
 * mma.sync.m16n8k16 tiles:
 *
 * - a CTA is (row g, head, split z) of KERNEL_ROWS_TC_SPLIT keys, 4 warps of 32 keys each; a
 *   warp copies its keys' K and V rows to shared memory (cp.async, 16-byte chunks, zeros past
 *   s_len from key 0's address) and reads B fragments with ldmatrix, as attn_tc does;
 * - the query is the A operand's row 0 in fp16 and row 8 its remainder (q - hi, in fp16), the
 *   other rows zero: S = row 0 + row 8 in fp32, q about as exact as fp32 (gemv_tc's hi/lo); the
 *   weights P likewise (row 0 their fp16, row 8 the rest, both of 2^15 P so that the rest of a
 *   small weight is no subnormal; the sums scaled back by 2^-15) for P·V. Rows 0 and 8 sit in
 *   the same lanes of an mma's C fragment (lanes 0-3), so each sum is one add;
 * - a warp's softmax is over its 32 keys (max, ex2.approx.ftz, sum across the 4 lanes of the
 *   row); the warps' (max, sum, acc) then meet as in attn_rows (attn_split_finish_emit): the
 *   CTA's output or record, and the last CTA of (g, head) joins the splits.
 *
 * Latency: the K/V copies are issued before the grid wait (ptx.h ptx_grid_dep_wait), the
 * query's loads after it.
 *
 * A row's bits depend on s_len and its own keys and query only (fixed splits and warp ranges):
 * a row gets the same bits alone and batched. Not attn_rows' bits: the products are summed in
 * the tensor cores' order. d_head 16, 32 or 64 (the shared tiles of 128 would pass 48 KB).
 */
#include <math.h>
#include <stdio.h>

#include "kernels/attention_combine.h"
#include "kernels/attention_rows.h"
#include "kernels/kernels.h"
#include "kernels/mma_tiles.h"
#include "kernels/ptx.h"

#define RT_WARPS 4  /* KERNEL_GATHER_THREADS / 32, as attn_split_finish_emit expects */
#define RT_KEYS  32 /* keys a warp */
#define RT_PAD   8  /* halves of padding per shared row (attn_tc's) */
#define RT_MAXD  64
#define NEG_BIG  "0fF149F2CA" /* -1e30, see attention.c */
_Static_assert(RT_WARPS *RT_KEYS == KERNEL_ROWS_TC_SPLIT, "a split is the warps' keys");
_Static_assert(RT_WARPS * 32 == KERNEL_GATHER_THREADS, "the split finish's thread count");

/* hi, lo = x in fp16 and x - hi in fp16 (f32 registers in, b16 registers out) */
static void split_half(struct ptx_kernel *k, struct ptx_reg hi, struct ptx_reg lo,
                       struct ptx_reg x) {
    struct ptx_reg t = ptx_reg(k, PTX_F32);
    ptx_ins(k, "cvt.rn.f16.f32 %s, %s", hi.s, x.s);
    ptx_ins(k, "cvt.f32.f16 %s, %s", t.s, hi.s);
    ptx_ins(k, "sub.f32 %s, %s, %s", t.s, x.s, t.s);
    ptx_ins(k, "cvt.rn.f16.f32 %s, %s", lo.s, t.s);
}

/* An A fragment register: {lo16, hi16} = {a, b} halves where row0, else 0 */
static void pack_row0(struct ptx_kernel *k, struct ptx_reg dst, struct ptx_reg a, struct ptx_reg b,
                      struct ptx_reg row0) {
    ptx_ins(k, "mov.b32 %s, {%s, %s}", dst.s, a.s, b.s);
    ptx_ins(k, "selp.b32 %s, %s, 0, %s", dst.s, dst.s, row0.s);
}

/* The warp's keys [j0, j0 + RT_KEYS) of k and v to its shared tiles: chunk e = lane + 32 r,
 * key e / (d/8), dims 8 (e % (d/8)) + [0, 8); keys >= s_len zero-filled (source: key 0's).
 * Committed, not waited for. */
static void copy_tiles(struct ptx_kernel *k, struct ptx_reg kbase, struct ptx_reg vbase,
                       struct ptx_reg row_bytes, struct ptx_reg j0, struct ptx_reg s_len,
                       struct ptx_reg lane, struct ptx_reg ksh, struct ptx_reg vsh, int d) {
    int per_key = d / 8, pk = d + RT_PAD;
    struct ptx_reg key = ptx_reg(k, PTX_B32), col = ptx_reg(k, PTX_B32);
    struct ptx_reg j = ptx_reg(k, PTX_B32), p = ptx_reg(k, PTX_PRED), n = ptx_reg(k, PTX_B32);
    struct ptx_reg off = ptx_reg(k, PTX_B64), a = ptx_reg(k, PTX_B64), c0 = ptx_reg(k, PTX_B64);
    struct ptx_reg sa[2] = {ptx_reg(k, PTX_B32), ptx_reg(k, PTX_B32)};
    ptx_ins(k, "div.u32 %s, %s, %d", key.s, lane.s, per_key);
    ptx_ins(k, "rem.u32 %s, %s, %d", col.s, lane.s, per_key);
    ptx_ins(k, "mul.wide.u32 %s, %s, 16", c0.s, col.s);
    for (int m = 0; m < 2; m++) { /* the lane's first chunk in the K and V tiles */
        ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", sa[m].s, key.s, 2 * pk, (m ? vsh : ksh).s);
        ptx_ins(k, "mad.lo.u32 %s, %s, 16, %s", sa[m].s, col.s, sa[m].s);
    }
    for (int r = 0; r < RT_KEYS * per_key / 32; r++) {
        int kr = 32 / per_key * r; /* this chunk's key, past the lane's first */
        ptx_ins(k, "add.u32 %s, %s, %d", j.s, key.s, kr);
        ptx_ins(k, "add.u32 %s, %s, %s", j.s, j.s, j0.s);
        ptx_ins(k, "setp.lt.u32 %s, %s, %s", p.s, j.s, s_len.s);
        ptx_ins(k, "selp.u32 %s, 16, 0, %s", n.s, p.s);
        ptx_ins(k, "selp.u32 %s, %s, 0, %s", j.s, j.s, p.s);
        ptx_ins(k, "mul.wide.u32 %s, %s, %s", off.s, j.s, row_bytes.s);
        ptx_ins(k, "add.s64 %s, %s, %s", off.s, off.s, c0.s);
        for (int m = 0; m < 2; m++) {
            ptx_ins(k, "add.s64 %s, %s, %s", a.s, (m ? vbase : kbase).s, off.s);
            ptx_ins(k, "cp.async.cg.shared.global [%s+%d], [%s], 16, %s", sa[m].s, 2 * kr * pk, a.s,
                    n.s);
        }
    }
    ptx_ins(k, "cp.async.commit_group");
}

char *gen_attention_rows_tc(int sm, int n_head, int d) {
    if (n_head <= 0 || !kernel_rows_tc_fits(sm, d))
        return NULL;
    int c = n_head * d, nks = d / 16, nnd = d / 8, nnt = RT_KEYS / 8, pk = d + RT_PAD;
    int tile = 2 * RT_KEYS * pk; /* bytes of a warp's K (or V) tile */
    char name[64];
    snprintf(name, sizeof name, "attn_rows_tc_h%d_d%d", n_head, d);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    attn_rows_params(&k);
    ptx_raw(&k, "    .shared .align 4 .u32 s_last;\n");
    ptx_raw(&k, "    .shared .align 4 .f32 s_m[%d];\n    .shared .align 4 .f32 s_l[%d];\n",
            RT_WARPS, RT_WARPS);
    ptx_raw(&k, "    .shared .align 4 .f32 s_acc[%d];\n", RT_WARPS * d);
    ptx_raw(&k, "    .shared .align 16 .b16 s_k[%d];\n    .shared .align 16 .b16 s_v[%d];\n",
            RT_WARPS * RT_KEYS * pk, RT_WARPS * RT_KEYS * pk);

    struct ptx_reg g = ptx_special(&k, "%ctaid.x"), head = ptx_special(&k, "%ctaid.y");
    struct ptx_reg z = ptx_special(&k, "%ctaid.z"), nz = ptx_special(&k, "%nctaid.z");
    struct ptx_reg tid = ptx_special(&k, "%tid.x"), n_seq = ptx_reg(&k, PTX_B32);
    struct ptx_reg p = ptx_reg(&k, PTX_PRED), done = ptx_label(&k);
    struct ptx_reg past = ptx_reg(&k, PTX_PRED), waits = ptx_label(&k);
    ptx_ins(&k, "ld.param.u32 %s, [p_n_seq]", n_seq.s);
    /* a CTA past the rows skips to the grid wait (every thread waits), then ends; whole CTA:
     * no barrier skipped */
    ptx_ins(&k, "setp.ge.u32 %s, %s, %s", past.s, g.s, n_seq.s);
    ptx_ins(&k, "@%s bra %s", past.s, waits.s);
    struct ptx_reg warp = ptx_reg(&k, PTX_B32), lane = ptx_reg(&k, PTX_B32);
    struct ptx_reg gq = ptx_reg(&k, PTX_B32), tg = ptx_reg(&k, PTX_B32);
    struct ptx_reg row0 = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "shr.u32 %s, %s, 5", warp.s, tid.s);
    ptx_ins(&k, "and.b32 %s, %s, 31", lane.s, tid.s);
    ptx_ins(&k, "shr.u32 %s, %s, 2", gq.s, lane.s);
    ptx_ins(&k, "and.b32 %s, %s, 3", tg.s, lane.s);
    ptx_ins(&k, "setp.eq.u32 %s, %s, 0", row0.s, gq.s); /* lanes 0-3: the query's row */

    /* the row's K/V: k + 2 (lane_of_row[g] lane_stride + head d), rows 2 ld_kv bytes apart */
    struct ptx_reg s_len = ptx_reg(&k, PTX_B32), hd = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", hd.s, head.s, d);
    struct key_rows kr = attn_rows_setup(&k, g, hd, s_len, 2);
    struct ptx_reg kbase = kr.kbase, vbase = kr.vbase, row_bytes = kr.row_bytes;

    /* this warp's keys [j0, j0 + RT_KEYS) and its shared tiles */
    struct ptx_reg j0 = ptx_reg(&k, PTX_B32), ksh = ptx_reg(&k, PTX_B32);
    struct ptx_reg vsh = ptx_reg(&k, PTX_B32), x = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, 0", j0.s, z.s, KERNEL_ROWS_TC_SPLIT);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", j0.s, warp.s, RT_KEYS, j0.s);
    ptx_ins(&k, "mov.u32 %s, s_k", x.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", ksh.s, warp.s, tile, x.s);
    ptx_ins(&k, "mov.u32 %s, s_v", x.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", vsh.s, warp.s, tile, x.s);
    copy_tiles(&k, kbase, vbase, row_bytes, j0, s_len, lane, ksh, vsh, d);
    /* K/V (the encoder's, written before this step began) and the row table (uploaded at its
     * start) are in flight before the grid wait: under a dependent launch they load while the
     * cross query's kernel runs; the query, and every write, come after it */
    ptx_grid_dep_wait_at(&k, waits, past, done);

    /* the query (pre-scaled into the log2 domain) as A fragments: row 0 its fp16, row 8 the
     * rest; a[ks] = {row 0 cols 16ks + 2tg.., row 8 same, row 0 cols +8, row 8 cols +8} */
    struct ptx_reg qi = ptx_reg(&k, PTX_B32), a[RT_MAXD / 16][4];
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", qi.s, g.s, c, hd.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 2, %s", qi.s, tg.s, qi.s);
    struct ptx_reg qa = ptx_addr(&k, ptx_ld_ptr(&k, "p_q"), qi, 4);
    struct ptx_reg scale = ptx_f32((float)(1.4426950408889634 / sqrt((double)d)));
    struct ptx_reg f = ptx_reg(&k, PTX_F32), hi[2], lo[2];
    for (int e = 0; e < 2; e++)
        hi[e] = ptx_reg(&k, PTX_B16), lo[e] = ptx_reg(&k, PTX_B16);
    for (int ks = 0; ks < nks; ks++)
        for (int half = 0; half < 2; half++) { /* cols 16ks + 2tg (+8) */
            for (int e = 0; e < 2; e++) {
                ptx_ins(&k, "ld.global.nc.f32 %s, [%s+%d]", f.s, qa.s,
                        4 * (16 * ks + 8 * half + e));
                ptx_ins(&k, "mul.f32 %s, %s, %s", f.s, f.s, scale.s);
                split_half(&k, hi[e], lo[e], f);
            }
            a[ks][2 * half] = ptx_reg(&k, PTX_B32), a[ks][2 * half + 1] = ptx_reg(&k, PTX_B32);
            pack_row0(&k, a[ks][2 * half], hi[0], hi[1], row0);
            pack_row0(&k, a[ks][2 * half + 1], lo[0], lo[1], row0);
        }
    /* the copies, in flight while the query loaded, land; the warp's lanes see each other's */
    ptx_ins(&k, "cp.async.wait_group 0");
    ptx_ins(&k, "bar.warp.sync -1");

    /* ldmatrix rows, as attn_tc: K's lane L gives row L % 8 of matrix L / 8 (8 keys by dims
     * +0, +8, +16, +24), V's (transposed) keys 8((L/8)%2) + L%8 by dims 8(L/16) */
    struct ptx_reg kb = ptx_reg(&k, PTX_B32), vb = ptx_reg(&k, PTX_B32), t = ptx_reg(&k, PTX_B32);
    struct ptx_reg lm = ptx_reg(&k, PTX_B32), l8 = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "and.b32 %s, %s, 7", l8.s, lane.s);
    ptx_ins(&k, "shr.u32 %s, %s, 3", lm.s, lane.s);
    ptx_ins(&k, "shl.b32 %s, %s, 3", t.s, lm.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", kb.s, l8.s, pk, t.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 2, %s", kb.s, kb.s, ksh.s);
    ptx_ins(&k, "and.b32 %s, %s, 1", lm.s, lm.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 8, %s", lm.s, lm.s, l8.s);
    ptx_ins(&k, "shr.u32 %s, %s, 4", t.s, lane.s);
    ptx_ins(&k, "shl.b32 %s, %s, 3", t.s, t.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", vb.s, lm.s, pk, t.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 2, %s", vb.s, vb.s, vsh.s);

    /* S = Q·Kᵀ over the warp's keys: s[nt][e] = row 0 + row 8 = key j0 + 8nt + 2tg + e */
    struct ptx_reg sc[RT_KEYS / 8][4], s[RT_KEYS / 8][2], b[4];
    for (int i = 0; i < 4; i++)
        b[i] = ptx_reg(&k, PTX_B32);
    struct ptx_reg rem = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "sub.s32 %s, %s, %s", rem.s, s_len.s, j0.s);
    ptx_ins(&k, "mad.lo.s32 %s, %s, -2, %s", rem.s, tg.s, rem.s); /* keys left from 2tg on */
    for (int nt = 0; nt < nnt; nt++) {
        for (int i = 0; i < 4; i++)
            sc[nt][i] = ptx_reg(&k, PTX_F32);
        mma_qk_tile(&k, sc[nt], a, b, kb, pk, nt, nks);
        for (int e = 0; e < 2; e++) {
            s[nt][e] = ptx_reg(&k, PTX_F32);
            ptx_ins(&k, "add.f32 %s, %s, %s", s[nt][e].s, sc[nt][e].s, sc[nt][e + 2].s);
            ptx_ins(&k, "setp.le.s32 %s, %s, %d", p.s, rem.s, nt * 8 + e);
            ptx_ins(&k, "@%s mov.f32 %s, 0fFF800000", p.s, s[nt][e].s);
        }
    }
    /* the warp's softmax over its keys: max and sum across the row's 4 lanes */
    struct ptx_reg m = ptx_reg(&k, PTX_F32), l = ptx_reg(&k, PTX_F32), u = ptx_reg(&k, PTX_F32);
    ptx_ins(&k, "mov.f32 %s, %s", m.s, NEG_BIG);
    for (int nt = 0; nt < nnt; nt++)
        for (int e = 0; e < 2; e++)
            ptx_ins(&k, "max.f32 %s, %s, %s", m.s, m.s, s[nt][e].s);
    for (int sh = 1; sh <= 2; sh *= 2) {
        ptx_ins(&k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", u.s, m.s, sh);
        ptx_ins(&k, "max.f32 %s, %s, %s", m.s, m.s, u.s);
    }
    ptx_ins(&k, "mov.f32 %s, 0f00000000", l.s);
    for (int nt = 0; nt < nnt; nt++)
        for (int e = 0; e < 2; e++) {
            ptx_ins(&k, "sub.f32 %s, %s, %s", s[nt][e].s, s[nt][e].s, m.s);
            ptx_ins(&k, "ex2.approx.ftz.f32 %s, %s", s[nt][e].s, s[nt][e].s);
            ptx_ins(&k, "add.f32 %s, %s, %s", l.s, l.s, s[nt][e].s);
        }
    for (int sh = 1; sh <= 2; sh *= 2) {
        ptx_ins(&k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", u.s, l.s, sh);
        ptx_ins(&k, "add.f32 %s, %s, %s", l.s, l.s, u.s);
    }

    /* O = P·V, 16 keys a step: P's A fragment, row 0 the weights' fp16, row 8 the rest (keys
     * 16ks + 2tg.. from S tile 2ks, +8 from tile 2ks + 1) */
    struct ptx_reg o[RT_MAXD / 8][4], pa[4];
    for (int nd = 0; nd < nnd; nd++)
        for (int i = 0; i < 4; i++) {
            o[nd][i] = ptx_reg(&k, PTX_F32);
            ptx_ins(&k, "mov.f32 %s, 0f00000000", o[nd][i].s);
        }
    for (int i = 0; i < 4; i++)
        pa[i] = ptx_reg(&k, PTX_B32);
    for (int ks = 0; ks < RT_KEYS / 16; ks++) {
        for (int h = 0; h < 2; h++) {
            /* 2^15 p: its remainder stays a normal fp16 down to p = 2^-18 (exact scaling) */
            for (int e = 0; e < 2; e++) {
                ptx_ins(&k, "mul.f32 %s, %s, 0f47000000", u.s, s[2 * ks + h][e].s);
                split_half(&k, hi[e], lo[e], u);
            }
            pack_row0(&k, pa[2 * h], hi[0], hi[1], row0);
            pack_row0(&k, pa[2 * h + 1], lo[0], lo[1], row0);
        }
        mma_pv_step(&k, o, pa, b, vb, pk, ks, nnd);
    }
    /* the warp's (max, sum, acc) to shared memory: lanes 0-3 hold dims nd 8 + 2tg + {0, 1} */
    struct ptx_reg sa = ptx_reg(&k, PTX_B32), w0 = ptx_reg(&k, PTX_PRED);
    struct ptx_reg skip = ptx_label(&k);
    ptx_ins(&k, "setp.eq.u32 %s, %s, 0", w0.s, lane.s);
    ptx_ins(&k, "mov.u32 %s, s_m", sa.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 4, %s", sa.s, warp.s, sa.s);
    ptx_ins(&k, "@%s st.shared.f32 [%s], %s", w0.s, sa.s, m.s);
    ptx_ins(&k, "mov.u32 %s, s_l", sa.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 4, %s", sa.s, warp.s, sa.s);
    ptx_ins(&k, "@%s st.shared.f32 [%s], %s", w0.s, sa.s, l.s);
    ptx_ins(&k, "@!%s bra %s", row0.s, skip.s);
    ptx_ins(&k, "mov.u32 %s, s_acc", sa.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", sa.s, warp.s, 4 * d, sa.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 8, %s", sa.s, tg.s, sa.s);
    for (int nd = 0; nd < nnd; nd++)
        for (int e = 0; e < 2; e++) {
            ptx_ins(&k, "add.f32 %s, %s, %s", u.s, o[nd][e].s, o[nd][e + 2].s);
            ptx_ins(&k, "mul.f32 %s, %s, 0f38000000", u.s, u.s); /* 2^-15: the weights' scale */
            ptx_ins(&k, "st.shared.f32 [%s+%d], %s", sa.s, 4 * (nd * 8 + e), u.s);
        }
    ptx_place(&k, skip);
    struct attn_combine_at at = {
        g, head, tid, nz, ptx_ld_ptr(&k, "p_part"), ptx_ld_ptr(&k, "p_out"), done};
    attn_split_finish_emit(&k, &at, z, ptx_ld_ptr(&k, "p_count"), n_head, d);
    ptx_place(&k, done);
    return ptx_end(&k);
}
