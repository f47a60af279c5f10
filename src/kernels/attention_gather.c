/* attention_gather.c — gen_attention_gather and gen_attention_rows: one query row (g) at a time
 * over its own set of keys, the decoder step's attention:
 * - gather: backend.h's `attention_gather`, self-attention over keys reached through g's row of
 *   the slot table, n_kv(g) keys (a per-sequence count, or one for all);
 * - rows: backend.h's `attention_rows`, cross-attention over s_len contiguous keys (ld_kv apart)
 *   at g's own base, k + lane_of_row[g] * lane_stride.
 *
 * One CTA per (row g, head, split z) over keys [z S, (z + 1) S) (S = KERNEL_ATTN_SPLIT: a step's
 * few rows alone would leave most SMs idle, and one CTA walking 1500 keys waits on memory
 * ~200 times), 4 warps splitting them: warp w takes keys w, w+4, ..., GATHER_U of them per step
 * (the loads of all the split's steps in flight together, then the steps' folds in order). A warp
 * handles one key with its 32 lanes across the head's columns (lane owns columns lane + 32 i:
 * coalesced 128-byte rows), the dot product joined by a butterfly so every lane holds the score,
 * and keeps its own online softmax (max m, sum l, acc) in the log2 domain. At the end the 4 partial
 * results meet in shared memory: thread `col` < d rescales each warp's acc and l by 2^(m_w - max
 * m); with one split it divides and stores the output, else it stores (max, sum, acc) as the
 * split's record. The splits sit at fixed key indices, so a row's bits do not depend on the other
 * rows or the grid: a split with no keys weighs exactly 0, and one split through the join gives the
 * bits of the direct division. d_head a multiple of 32, at most 128; n_kv >= 1 (a warp with no key
 * ends with l = 0, m = -1e30 and weighs nothing). The two modes differ only in where key j's row is
 * (struct key_rows). Rows mode's kv_half (attn_rows_..._kvh) reads K and V stored as fp16 (the
 * batch decoder's cross-attention K/V: half the bytes a step reads), each lane still taking
 * columns lane + 32 i, widened exactly: the f32 kernel's bits on the widened values.
 *
 * Latency: as a kernel of its own (not a chain's phase), a CTA reads the step's tables (slots
 * and key counts, or the lane; uploaded at the step's start) and sends its keys' K/V lines to L2
 * before the grid wait (ptx.h ptx_grid_dep_wait), so that under a dependent launch they load
 * while the kernel before runs; the query and the K/V values are read after it.
 *
 * The splits' join needs no launch of its own: each split CTA, its record written, adds 1 to
 * its (row, head)'s counter with an acq_rel atomic (the record is visible on the device before
 * the count says it is there; cooperative groups' grid sync has this shape); the CTA that
 * brings it to Z is the last, sets it back to 0 for the next launch (a step graph replays this
 * one) and joins the Z records (attn_combine_emit).
 */
#include <math.h>
#include <stdio.h>

#include "kernels/attention_combine.h"
#include "kernels/attention_rows.h"
#include "kernels/kernels.h"
#include "kernels/ptx.h"

#define GATHER_WARPS (KERNEL_GATHER_THREADS / 32)
#define GATHER_U     8                                               /* keys per warp per step */
#define GATHER_STEPS (KERNEL_ATTN_SPLIT / (GATHER_WARPS * GATHER_U)) /* steps of a split: 2 */
_Static_assert(KERNEL_ATTN_SPLIT % (GATHER_WARPS * GATHER_U) == 0, "a split is whole steps");
#define GATHER_MAXD 128
#define NEG_BIG     "0fF149F2CA" /* -1e30, see attention.c */

/* dst = the half at [addr + off] when ok, else 0 (a key past the end weighs nothing) */
static void load_half(struct ptx_kernel *k, struct ptx_reg dst, struct ptx_reg ok,
                      struct ptx_reg addr, int off) {
    ptx_ins(k, "mov.b16 %s, 0", dst.s);
    ptx_ins(k, "@%s %s.b16 %s, [%s+%d]", ok.s, ptx_ld_act(k, 0), dst.s, addr.s, off);
}

/* One step of a warp: keys j + GATHER_WARPS u, u < GATHER_U (j = the warp's first key of the
 * step); keys >= n_kv are skipped (weight 0). Its loads (step_rows, step_loads) and its fold
 * (step_fold) are emitted apart, so that every step's loads are in flight before the first
 * step's products: a CTA's keys cost one memory wait (two with the slot table), not one a
 * step. The fold's arithmetic is the same whenever its loads were issued. */
struct gather_step_regs {
    struct ptx_reg j, ok[GATHER_U], r[GATHER_U];
    struct ptx_reg kv[GATHER_U][GATHER_MAXD / 32], vv[GATHER_U][GATHER_MAXD / 32];
    struct ptx_reg kh[GATHER_U][GATHER_MAXD / 32], vh[GATHER_U][GATHER_MAXD / 32];
};

/* The keys' rows: gather mode loads them from the slot table, rows mode takes the key index. */
static void step_rows(struct ptx_kernel *k, struct gather_step_regs *st, struct ptx_reg n_kv,
                      const struct key_rows *kr) {
    struct ptx_reg ju = ptx_reg(k, PTX_B32), off = ptx_reg(k, PTX_B64), sa = ptx_reg(k, PTX_B64);
    for (int u = 0; u < GATHER_U; u++) {
        st->ok[u] = ptx_reg(k, PTX_PRED), st->r[u] = ptx_reg(k, PTX_B32);
        ptx_ins(k, "add.u32 %s, %s, %d", ju.s, st->j.s, GATHER_WARPS * u);
        ptx_ins(k, "setp.lt.u32 %s, %s, %s", st->ok[u].s, ju.s, n_kv.s);
        if (kr->gather) {
            ptx_ins(k, "mul.wide.u32 %s, %s, 4", off.s, ju.s);
            ptx_ins(k, "add.s64 %s, %s, %s", sa.s, kr->slot_row.s, off.s);
            ptx_ins(k, "mov.u32 %s, 0", st->r[u].s);
            ptx_ins(k, "@%s ld.global.nc.u32 %s, [%s]", st->ok[u].s, st->r[u].s, sa.s);
        } else {
            ptx_ins(k, "mov.u32 %s, %s", st->r[u].s, ju.s);
        }
    }
}

/* Their keys and values (zeros for keys past the end). */
static void step_loads(struct ptx_kernel *k, struct gather_step_regs *st, const struct key_rows *kr,
                       int c, int nd) {
    struct ptx_reg off = ptx_reg(k, PTX_B64), ka = ptx_reg(k, PTX_B64), va = ptx_reg(k, PTX_B64);
    for (int u = 0; u < GATHER_U; u++) {
        if (kr->gather)
            ptx_ins(k, "mul.wide.u32 %s, %s, %d", off.s, st->r[u].s, 4 * c);
        else
            ptx_ins(k, "mul.wide.u32 %s, %s, %s", off.s, st->r[u].s, kr->row_bytes.s);
        ptx_ins(k, "add.s64 %s, %s, %s", ka.s, kr->kbase.s, off.s);
        ptx_ins(k, "add.s64 %s, %s, %s", va.s, kr->vbase.s, off.s);
        for (int i = 0; i < nd; i++) {
            st->kv[u][i] = ptx_reg(k, PTX_F32), st->vv[u][i] = ptx_reg(k, PTX_F32);
            if (kr->esz == 2) {
                st->kh[u][i] = ptx_reg(k, PTX_B16), st->vh[u][i] = ptx_reg(k, PTX_B16);
                load_half(k, st->kh[u][i], st->ok[u], ka, 64 * i);
                load_half(k, st->vh[u][i], st->ok[u], va, 64 * i);
                continue;
            }
            ptx_ins(k, "mov.f32 %s, 0f00000000", st->kv[u][i].s);
            ptx_ins(k, "@%s %s.f32 %s, [%s+%d]", st->ok[u].s, ptx_ld_act(k, 0), st->kv[u][i].s,
                    ka.s, 128 * i);
            ptx_ins(k, "mov.f32 %s, 0f00000000", st->vv[u][i].s);
            ptx_ins(k, "@%s %s.f32 %s, [%s+%d]", st->ok[u].s, ptx_ld_act(k, 0), st->vv[u][i].s,
                    va.s, 128 * i);
        }
    }
}

/* Their rows' lines sent to L2 (prefetch: no value read, so a row the kernel before still
 * writes is no hazard), the loads of step_loads' addresses. */
static void step_prefetch(struct ptx_kernel *k, struct gather_step_regs *st,
                          const struct key_rows *kr, int c, int nd) {
    struct ptx_reg off = ptx_reg(k, PTX_B64), a = ptx_reg(k, PTX_B64);
    for (int u = 0; u < GATHER_U; u++) {
        if (kr->gather)
            ptx_ins(k, "mul.wide.u32 %s, %s, %d", off.s, st->r[u].s, 4 * c);
        else
            ptx_ins(k, "mul.wide.u32 %s, %s, %s", off.s, st->r[u].s, kr->row_bytes.s);
        for (int m = 0; m < 2; m++) {
            ptx_ins(k, "add.s64 %s, %s, %s", a.s, (m ? kr->vbase : kr->kbase).s, off.s);
            for (int i = 0; i < nd; i++)
                ptx_ins(k, "@%s prefetch.global.L2 [%s+%d]", st->ok[u].s, a.s, 32 * kr->esz * i);
        }
    }
}

/* q row g's values of this lane, pre-scaled into the log2 domain; acc zeroed */
static void load_query(struct ptx_kernel *k, struct ptx_reg qa, struct ptx_reg *q,
                       struct ptx_reg *acc, int d, int nd) {
    struct ptx_reg scale = ptx_f32((float)(1.4426950408889634 / sqrt((double)d)));
    for (int i = 0; i < nd; i++) {
        q[i] = ptx_reg(k, PTX_F32), acc[i] = ptx_reg(k, PTX_F32);
        ptx_ins(k, "%s.f32 %s, [%s+%d]", ptx_ld_act(k, 1), q[i].s, qa.s, 128 * i);
        ptx_ins(k, "mul.f32 %s, %s, %s", q[i].s, q[i].s, scale.s);
        ptx_ins(k, "mov.f32 %s, 0f00000000", acc[i].s);
    }
}

/* The step's scores, weights and value sums folded into m, l, acc. */
static void step_fold(struct ptx_kernel *k, struct gather_step_regs *st, const struct key_rows *kr,
                      const struct ptx_reg *q, struct ptx_reg *acc, struct ptx_reg m,
                      struct ptx_reg l, int nd) {
    struct ptx_reg s[GATHER_U];
    for (int u = 0; u < GATHER_U && kr->esz == 2; u++) /* widened once every load is issued */
        for (int i = 0; i < nd; i++) {
            ptx_ins(k, "cvt.f32.f16 %s, %s", st->kv[u][i].s, st->kh[u][i].s);
            ptx_ins(k, "cvt.f32.f16 %s, %s", st->vv[u][i].s, st->vh[u][i].s);
        }
    for (int u = 0; u < GATHER_U; u++) {
        s[u] = ptx_reg(k, PTX_F32);
        ptx_ins(k, "mov.f32 %s, 0f00000000", s[u].s);
        for (int i = 0; i < nd; i++)
            ptx_ins(k, "fma.rn.f32 %s, %s, %s, %s", s[u].s, q[i].s, st->kv[u][i].s, s[u].s);
    }
    struct ptx_reg mt = ptx_reg(k, PTX_F32), corr = ptx_reg(k, PTX_F32);
    ptx_ins(k, "mov.f32 %s, %s", mt.s, m.s);
    for (int u = 0; u < GATHER_U; u++) {
        ptx_warp_reduce(k, s[u], "add");
        ptx_ins(k, "@!%s mov.f32 %s, 0fFF800000", st->ok[u].s, s[u].s);
        ptx_ins(k, "max.f32 %s, %s, %s", mt.s, mt.s, s[u].s);
    }
    ptx_ins(k, "sub.f32 %s, %s, %s", corr.s, m.s, mt.s);
    ptx_ins(k, "ex2.approx.f32 %s, %s", corr.s, corr.s);
    ptx_ins(k, "mov.f32 %s, %s", m.s, mt.s);
    ptx_ins(k, "mul.f32 %s, %s, %s", l.s, l.s, corr.s);
    for (int i = 0; i < nd; i++)
        ptx_ins(k, "mul.f32 %s, %s, %s", acc[i].s, acc[i].s, corr.s);
    for (int u = 0; u < GATHER_U; u++) {
        ptx_ins(k, "sub.f32 %s, %s, %s", s[u].s, s[u].s, m.s);
        ptx_ins(k, "ex2.approx.f32 %s, %s", s[u].s, s[u].s);
        ptx_ins(k, "add.f32 %s, %s, %s", l.s, l.s, s[u].s);
        for (int i = 0; i < nd; i++)
            ptx_ins(k, "fma.rn.f32 %s, %s, %s, %s", acc[i].s, s[u].s, st->vv[u][i].s, acc[i].s);
    }
}

/* This row's key count and key_rows, gather mode: n_kv(g) from p_n_kv_seq when non-null. */
static struct key_rows gather_setup(struct ptx_kernel *k, struct ptx_reg g, struct ptx_reg col,
                                    struct ptx_reg n_kv) {
    struct key_rows kr = {.gather = 1, .esz = 4};
    struct ptx_reg ld_slots = ptx_reg(k, PTX_B32), si = ptx_reg(k, PTX_B32);
    struct ptx_reg seq = ptx_reg(k, PTX_B64), has = ptx_reg(k, PTX_PRED);
    struct ptx_reg n_max = ptx_reg(k, PTX_B32);
    ptx_ld_param(k, "u32", n_max, "p_n_kv");
    ptx_ins(k, "mov.u32 %s, %s", n_kv.s, n_max.s);
    ptx_ld_param(k, "u64", seq, "p_n_kv_seq");
    ptx_ins(k, "setp.ne.u64 %s, %s, 0", has.s, seq.s);
    ptx_ins(k, "cvta.to.global.u64 %s, %s", seq.s, seq.s);
    struct ptx_reg sa = ptx_addr(k, seq, g, 4);
    ptx_ins(k, "@%s ld.global.nc.u32 %s, [%s]", has.s, n_kv.s, sa.s);
    /* a bad count must not read past the slot table or the cache: clamp to [1, n_kv] (the CPU
     * twin refuses it; here the host never sees the device-side counts) */
    ptx_ins(k, "min.u32 %s, %s, %s", n_kv.s, n_kv.s, n_max.s);
    ptx_ins(k, "max.u32 %s, %s, 1", n_kv.s, n_kv.s);
    ptx_ld_param(k, "u32", ld_slots, "p_ld_slots");
    ptx_ins(k, "mul.lo.u32 %s, %s, %s", si.s, g.s, ld_slots.s);
    kr.slot_row = ptx_addr(k, ptx_ld_ptr(k, "p_slots"), si, 4);
    kr.kbase = ptx_addr(k, ptx_ld_ptr(k, "p_k"), col, 4);
    kr.vbase = ptx_addr(k, ptx_ld_ptr(k, "p_v"), col, 4);
    return kr;
}

void attn_rows_params(struct ptx_kernel *k) {
    ptx_param(k, "u64", "p_out");
    ptx_param(k, "u64", "p_q");
    ptx_param(k, "u64", "p_k");
    ptx_param(k, "u64", "p_v");
    ptx_param(k, "u32", "p_ld_kv");
    ptx_param(k, "u64", "p_lane_stride");
    ptx_param(k, "u64", "p_lane_of_row");
    ptx_param(k, "u32", "p_n_seq");
    ptx_param(k, "u32", "p_s_len");
    ptx_param(k, "u64", "p_part");
    ptx_param(k, "u64", "p_count");
}

struct key_rows attn_rows_setup(struct ptx_kernel *k, struct ptx_reg g, struct ptx_reg col,
                                struct ptx_reg n_kv, int esz) {
    struct key_rows kr = {.gather = 0, .esz = esz, .row_bytes = ptx_reg(k, PTX_B32)};
    struct ptx_reg lane = ptx_reg(k, PTX_B32), stride = ptx_reg(k, PTX_B64);
    struct ptx_reg off = ptx_reg(k, PTX_B64), kb = ptx_reg(k, PTX_B64), vb = ptx_reg(k, PTX_B64);
    ptx_ld_param(k, "u32", n_kv, "p_s_len");
    ptx_ld_param(k, "u32", kr.row_bytes, "p_ld_kv");
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", kr.row_bytes.s, kr.row_bytes.s, esz);
    struct ptx_reg lp = ptx_reg(k, PTX_B64), has = ptx_reg(k, PTX_PRED);
    ptx_ld_param(k, "u64", lp, "p_lane_of_row"); /* null: every row is lane 0's */
    ptx_ins(k, "setp.ne.u64 %s, %s, 0", has.s, lp.s);
    ptx_ins(k, "cvta.to.global.u64 %s, %s", lp.s, lp.s);
    struct ptx_reg la = ptx_addr(k, lp, g, 4);
    ptx_ins(k, "mov.u32 %s, 0", lane.s);
    ptx_ins(k, "@%s ld.global.nc.u32 %s, [%s]", has.s, lane.s, la.s);
    ptx_ld_param(k, "u64", stride, "p_lane_stride");
    ptx_ins(k, "cvt.u64.u32 %s, %s", off.s, lane.s);
    ptx_ins(k, "mul.lo.u64 %s, %s, %s", off.s, off.s, stride.s);
    ptx_ins(k, "mul.lo.u64 %s, %s, %d", off.s, off.s, esz);
    ptx_ins(k, "add.s64 %s, %s, %s", kb.s, ptx_ld_ptr(k, "p_k").s, off.s);
    ptx_ins(k, "add.s64 %s, %s, %s", vb.s, ptx_ld_ptr(k, "p_v").s, off.s);
    kr.kbase = ptx_addr(k, kb, col, esz);
    kr.vbase = ptx_addr(k, vb, col, esz);
    return kr;
}

void attn_row_params(struct ptx_kernel *k, int gather) {
    if (!gather) {
        attn_rows_params(k);
        return;
    }
    ptx_param(k, "u64", "p_out");
    ptx_param(k, "u64", "p_q");
    ptx_param(k, "u64", "p_k");
    ptx_param(k, "u64", "p_v");
    ptx_param(k, "u64", "p_slots");
    ptx_param(k, "u32", "p_ld_slots");
    ptx_param(k, "u64", "p_n_kv_seq");
    ptx_param(k, "u32", "p_n_seq");
    ptx_param(k, "u32", "p_n_kv");
    ptx_param(k, "u64", "p_part");
    ptx_param(k, "u64", "p_count");
}

/* The body of either mode (the file's top comment), as a kernel's or a phase's (ptx.h): what
 * an earlier phase wrote (q, and the self-attention's fresh keys and values) is read through
 * L2 there. */
int attn_row_emit(struct ptx_kernel *k, int n_head, int d, int gather, int kv_half) {
    if (n_head <= 0 || d <= 0 || d % 32 || d > GATHER_MAXD)
        return -1;
    int c = n_head * d, nd = d / 32;
    char s_m[32], s_l[32], s_acc[32], s_last[32];
    ptx_sym(k, s_m, sizeof s_m, "s_m");
    ptx_sym(k, s_l, sizeof s_l, "s_l");
    ptx_sym(k, s_acc, sizeof s_acc, "s_acc");
    ptx_sym(k, s_last, sizeof s_last, "s_last");
    ptx_raw(k, "    .shared .align 4 .u32 %s;\n", s_last);
    ptx_raw(k, "    .shared .align 4 .f32 %s[%d];\n    .shared .align 4 .f32 %s[%d];\n", s_m,
            GATHER_WARPS, s_l, GATHER_WARPS);
    ptx_raw(k, "    .shared .align 4 .f32 %s[%d];\n", s_acc, GATHER_WARPS * d);

    struct ptx_reg g = ptx_special(k, "%ctaid.x"), head = ptx_special(k, "%ctaid.y");
    struct ptx_reg tid = ptx_special(k, "%tid.x"), n_seq = ptx_reg(k, PTX_B32);
    struct ptx_reg p = ptx_reg(k, PTX_PRED), done = ptx_label(k);
    /* A kernel of its own finds its keys' rows (the step's tables, uploaded at its start) and
     * sends their lines to L2 before its grid wait, while the kernel before (the q/k/v or the
     * cross query) runs; the query is read after it. A phase reads them as before. A CTA past
     * the rows skips to the wait (every thread waits), then ends; whole CTA: no barrier
     * skipped. */
    int early = !k->phase;
    struct ptx_reg past = early ? ptx_reg(k, PTX_PRED) : p, waits = early ? ptx_label(k) : done;
    ptx_ld_param(k, "u32", n_seq, "p_n_seq");
    ptx_ins(k, "setp.ge.u32 %s, %s, %s", past.s, g.s, n_seq.s);
    ptx_ins(k, "@%s bra %s", past.s, waits.s);
    struct ptx_reg warp = ptx_reg(k, PTX_B32), lane = ptx_reg(k, PTX_B32);
    struct ptx_reg n_kv = ptx_reg(k, PTX_B32);
    ptx_ins(k, "shr.u32 %s, %s, 5", warp.s, tid.s);
    ptx_ins(k, "and.b32 %s, %s, 31", lane.s, tid.s);

    /* col = head*d + lane; q row g (pre-scaled), this row's keys */
    struct ptx_reg col = ptx_reg(k, PTX_B32), qi = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", col.s, head.s, d, lane.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", qi.s, g.s, c, col.s);
    struct ptx_reg qa = ptx_addr(k, ptx_ld_ptr(k, "p_q"), qi, 4);
    struct key_rows kr =
        gather ? gather_setup(k, g, col, n_kv) : attn_rows_setup(k, g, col, n_kv, kv_half ? 2 : 4);
    struct ptx_reg q[GATHER_MAXD / 32], acc[GATHER_MAXD / 32];
    if (!early)
        load_query(k, qa, q, acc, d, nd);
    /* this CTA's keys: [z S, min(n_kv, (z + 1) S)), S = KERNEL_ATTN_SPLIT */
    struct ptx_reg z = ptx_special(k, "%ctaid.z"), nz = ptx_special(k, "%nctaid.z");
    struct ptx_reg j_end = ptx_reg(k, PTX_B32);
    struct ptx_reg m = ptx_reg(k, PTX_F32), l = ptx_reg(k, PTX_F32), j = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mov.f32 %s, %s", m.s, NEG_BIG);
    ptx_ins(k, "mov.f32 %s, 0f00000000", l.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", j.s, z.s, KERNEL_ATTN_SPLIT, warp.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %d", j_end.s, z.s, KERNEL_ATTN_SPLIT, KERNEL_ATTN_SPLIT);
    ptx_ins(k, "min.u32 %s, %s, %s", j_end.s, j_end.s, n_kv.s);
    /* the split's steps unrolled: every step's loads, then the folds of the steps that have
     * keys (a branch uniform per warp: j depends on the warp only) */
    struct gather_step_regs st[GATHER_STEPS];
    struct ptx_reg end = ptx_label(k);
    for (int i = 0; i < GATHER_STEPS; i++) {
        st[i].j = ptx_reg(k, PTX_B32);
        ptx_ins(k, "add.u32 %s, %s, %d", st[i].j.s, j.s, GATHER_WARPS * GATHER_U * i);
        step_rows(k, &st[i], j_end, &kr);
    }
    if (early) {
        for (int i = 0; i < GATHER_STEPS; i++)
            step_prefetch(k, &st[i], &kr, c, nd);
        ptx_grid_dep_wait_at(k, waits, past, done);
        load_query(k, qa, q, acc, d, nd);
    }
    for (int i = 0; i < GATHER_STEPS; i++)
        step_loads(k, &st[i], &kr, c, nd);
    for (int i = 0; i < GATHER_STEPS; i++) {
        ptx_ins(k, "setp.ge.u32 %s, %s, %s", p.s, st[i].j.s, j_end.s);
        ptx_ins(k, "@%s bra %s", p.s, end.s);
        step_fold(k, &st[i], &kr, q, acc, m, l, nd);
    }
    ptx_place(k, end);

    /* the warps' partial results to shared memory, then thread col < d combines them */
    struct ptx_reg a = ptx_reg(k, PTX_B32), lane0 = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "setp.eq.u32 %s, %s, 0", lane0.s, lane.s);
    ptx_ins(k, "mov.u32 %s, %s", a.s, s_m);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", a.s, warp.s, a.s);
    ptx_ins(k, "@%s st.shared.f32 [%s], %s", lane0.s, a.s, m.s);
    ptx_ins(k, "mov.u32 %s, %s", a.s, s_l);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", a.s, warp.s, a.s);
    ptx_ins(k, "@%s st.shared.f32 [%s], %s", lane0.s, a.s, l.s);
    ptx_ins(k, "mov.u32 %s, %s", a.s, s_acc);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", a.s, warp.s, 4 * d, a.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", a.s, lane.s, a.s);
    for (int i = 0; i < nd; i++)
        ptx_ins(k, "st.shared.f32 [%s+%d], %s", a.s, 128 * i, acc[i].s);
    struct attn_combine_at at = {
        g, head, tid, nz, ptx_ld_ptr(k, "p_part"), ptx_ld_ptr(k, "p_out"), done};
    attn_split_finish_emit(k, &at, z, ptx_ld_ptr(k, "p_count"), n_head, d);
    ptx_place(k, done);
    return 0;
}

/* One kernel of either mode. */
static char *gen_one_row(int sm, int n_head, int d, int gather, int kv_half) {
    char name[64];
    snprintf(name, sizeof name, "attn_%s_h%d_d%d%s", gather ? "gather" : "rows", n_head, d,
             kv_half ? "_kvh" : "");
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    attn_row_params(&k, gather);
    if (attn_row_emit(&k, n_head, d, gather, kv_half)) {
        ptx_discard(&k);
        return NULL;
    }
    return ptx_end(&k);
}

char *gen_attention_gather(int sm, int n_head, int d) { return gen_one_row(sm, n_head, d, 1, 0); }

char *gen_attention_rows(int sm, int n_head, int d, int kv_half) {
    return gen_one_row(sm, n_head, d, 0, kv_half);
}
