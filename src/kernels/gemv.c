/* gemv.c — gen_gemv_f16: backend.h's `linear` for a few rows (decoder steps: one row per lane),
 * fp16 weights as uploaded ([N][K] row-major), fp32 activations, fp32 accumulation, with the
 * bias, GELU or residual add fused. Memory-bound: a CTA reads its weight rows once for its M <= 8
 * rows; CTA row y of the grid takes rows 8y ... 8y + 7, so a launch over more rows re-reads the
 * weights per 8 rows (from L2) instead of issuing one launch per 8 rows.
 *
 * CTA of 256 threads = 8 warps; warp w of CTA b owns the 4 output columns n0 = 4 (8 b + w) ...
 * n0 + 3. K goes in tiles of GEMV_TILE: the CTA stages in[m][tile] (m < M) in shared memory,
 * then lane l takes the tile's 8-column groups g = l, l + 32, ...: one 16-byte load of 8 fp16
 * weights per column (ld.global.nc.v4.u32: the warp reads 512 contiguous bytes of a row), 8
 * activations per row from shared memory, 32 fma per row into acc[col][m]. Shared memory holds
 * a row's tile as two planes (k % 8 < 4, then k % 8 >= 4) so a warp's 16-byte reads are
 * contiguous (no bank conflicts).
 *
 * Latency: a decoder step's gemv is a few µs, most of it memory waits, so loads are issued as
 * early as their addresses are known and used as late as possible: the bias and the first
 * tile's weights (all its steps) before the grid wait (ptx.h ptx_grid_dep_wait: on sm_90 the
 * kernel is launched while the one before still runs, and reads only weights until it
 * finishes), the later tiles' weights into L2 then too, each next tile's weights before that
 * tile's inputs are staged, the old output before the tiles, the inputs of all rows before the
 * stores to shared memory. With the layer norm fused and K > GEMV_EARLY_NORM_K the first tile
 * only goes to L2 before the wait: its 64 registers held across the norm's statistics would
 * take the kernel from 168 to ~238 registers at K = 1280. On the H100 (2026-11-24) each step
 * of a tile and each row of the staging waited for its own loads: 5 µs for a 512 x 512
 * weight, 11 µs for 512 x 2048.
 *
 * Summation order: acc[col][m] sums its lane's groups in k order; then the warp's 32 sums
 * (4 columns x 8 rows) are reduced by recursive halving (31 shuffles), after which lane L holds
 * value L = (column L / 8, row L % 8) and writes it. Nothing in that order depends on M or on the
 * CTA row, so a row has the bits it has alone (backend.h linear_exact_rows).
 *
 * KERNEL_GEMV_NORM (backend.h norm_linear) layer-norms each input row on its way into shared
 * memory, which saves the decoder a layernorm launch and a round trip of its output through
 * memory for each projection. Warp w first computes row 8 y + w's mean and 1 / sqrt(var + eps)
 * in gen_layernorm's order: lane l stands for its threads l, l + 32, l + 64, l + 96, each summing
 * its values in k order, then the four warp sums in thread order, so the normalised inputs, and
 * with them the outputs, have the bits of layernorm followed by this kernel without the flag.
 * Where the row is one tile (K <= GEMV_TILE: every Whisper width but large's 1280) the warp
 * then normalises the values it holds and stores them into the tile itself: the row is read
 * from memory once, not again for the staging.
 *
 * KERNEL_GEMV_QKV (backend.h norm_qkv) runs a step's three self-attention projections as one
 * grid, segment by segment (CTA x / (K / 32) selects q, k or v's weight, bias and output), and
 * writes k and v straight into their cache rows: one launch for what took three and two
 * scatters. A CTA's work is that of the plain kernel on its segment's weight, so the bits are.
 */
#include <stdio.h>

#include "kernels/gemv_parts.h"
#include "kernels/kernels.h"
#include "kernels/ptx.h"

#define GEMV_WARPS        (KERNEL_GEMV_THREADS / 32)
#define GEMV_WCOLS        (KERNEL_GEMV_COLS / GEMV_WARPS) /* columns per warp: 4 */
#define GEMV_M            KERNEL_GEMV_MAX_ROWS            /* 8 */
#define GEMV_TILE         1024 /* K per staged tile: 32 KiB of shared memory */
#define GEMV_EARLY_NORM_K 512  /* the norm form loads its first tile before the wait up to here */
_Static_assert(GEMV_WARPS == GEMV_M, "norm_stats: a warp per row");

struct gemv_regs {
    struct ptx_reg tid, lane, n_rows, k0; /* k0: the tile's first column */
    struct ptx_reg in, s_row;             /* in: global, of in[0][0]; s_row: shared, lane's group */
    struct ptx_reg wrow[GEMV_WCOLS];      /* global: w[n0 + c][16 lane / 2] */
    struct ptx_reg col_ok[GEMV_WCOLS];    /* n0 + c < N */
    struct ptx_reg acc[GEMV_WCOLS][GEMV_M];
    int norm;             /* KERNEL_GEMV_NORM: s_ln holds each row's mean and 1 / std */
    struct ptx_reg g, lb; /* global: the layer norm's gain and bias */
};

/* The shared-memory byte address of value kk of row m of a tile (stage_tile's planes: kk ->
 * plane (kk / 4) % 2, place (kk / 8) * 4 + kk % 4), kk and m known at generation time but for
 * the register parts: dst = s_in + 4 (m_reg * GEMV_TILE + place(kk_reg + kk_add)). */
static void tile_place(struct ptx_kernel *k, struct ptx_reg dst, struct ptx_reg m_reg,
                       struct ptx_reg kk_reg, int kk_add) {
    struct ptx_reg kk = ptx_reg(k, PTX_B32), t = ptx_reg(k, PTX_B32);
    ptx_ins(k, "add.u32 %s, %s, %d", kk.s, kk_reg.s, kk_add);
    ptx_ins(k, "shr.u32 %s, %s, 3", dst.s, kk.s);
    ptx_ins(k, "shl.b32 %s, %s, 2", dst.s, dst.s);
    ptx_ins(k, "and.b32 %s, %s, 3", t.s, kk.s);
    ptx_ins(k, "add.u32 %s, %s, %s", dst.s, dst.s, t.s);
    ptx_ins(k, "and.b32 %s, %s, 4", t.s, kk.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", dst.s, t.s, GEMV_TILE / 8, dst.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", dst.s, m_reg.s, GEMV_TILE, dst.s);
    ptx_ins(k, "mov.u32 %s, s_in", t.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", dst.s, dst.s, t.s);
}

/* Warp w: row w's layer-norm statistics into s_ln[2 w], s_ln[2 w + 1] (mean, 1 / std), with
 * gen_layernorm's instructions in its order (the file comment). Rows past n_rows load nothing
 * and their statistics are never used. stage (K <= GEMV_TILE: the row is one tile): instead of
 * s_ln, the normalised row goes straight into the tile's shared planes, with the instructions
 * stage_tile would run on it (the same bits), which saves the tile a second read of the row
 * and a barrier; a barrier then makes the tile visible. */
static void norm_stats(struct ptx_kernel *k, const struct gemv_regs *r, struct ptx_reg warp,
                       int k_in, int stage) {
    int per = k_in / KERNEL_LN_THREADS; /* values a virtual thread holds */
    struct ptx_reg ok = ptx_reg(k, PTX_PRED), idx = ptx_reg(k, PTX_B32);
    ptx_ins(k, "setp.lt.u32 %s, %s, %s", ok.s, warp.s, r->n_rows.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", idx.s, warp.s, k_in, r->lane.s);
    struct gemv_norm_row nr;
    gemv_norm_load(k, &nr, ptx_addr(k, r->in, idx, 4), ok, k_in);
    /* the gain and bias at the lane's values, loaded beside the row (stage only) */
    struct ptx_reg gv[GEMV_LN_VWARPS][GEMV_NORM_MAX_K / KERNEL_LN_THREADS];
    struct ptx_reg bv[GEMV_LN_VWARPS][GEMV_NORM_MAX_K / KERNEL_LN_THREADS];
    if (stage) {
        struct ptx_reg ga = ptx_addr(k, r->g, r->lane, 4), ba = ptx_addr(k, r->lb, r->lane, 4);
        for (int j = 0; j < GEMV_LN_VWARPS; j++)
            for (int i = 0; i < per; i++) {
                int kk = 32 * j + KERNEL_LN_THREADS * i;
                gv[j][i] = ptx_reg(k, PTX_F32), bv[j][i] = ptx_reg(k, PTX_F32);
                ptx_ins(k, "ld.global.nc.f32 %s, [%s+%d]", gv[j][i].s, ga.s, 4 * kk);
                ptx_ins(k, "ld.global.nc.f32 %s, [%s+%d]", bv[j][i].s, ba.s, 4 * kk);
            }
    }
    gemv_norm_stats(k, &nr, k_in);
    struct ptx_reg a = ptx_reg(k, PTX_B32);
    if (stage) { /* stage_tile's (x - mean) * inv, then * g + b; x - mean is in x already */
        struct ptx_reg row_ok = ptx_reg(k, PTX_PRED), sa = ptx_reg(k, PTX_B32);
        ptx_ins(k, "setp.lt.u32 %s, %s, %s", row_ok.s, warp.s, r->n_rows.s);
        for (int j = 0; j < GEMV_LN_VWARPS; j++)
            for (int i = 0; i < per; i++) {
                struct ptx_reg v = nr.x[j][i];
                ptx_ins(k, "mul.f32 %s, %s, %s", v.s, v.s, nr.inv.s);
                ptx_ins(k, "fma.rn.f32 %s, %s, %s, %s", v.s, v.s, gv[j][i].s, bv[j][i].s);
                tile_place(k, sa, warp, r->lane, 32 * j + KERNEL_LN_THREADS * i);
                ptx_ins(k, "@%s st.shared.f32 [%s], %s", row_ok.s, sa.s, v.s);
            }
        ptx_ins(k, "bar.sync 0");
        return;
    }
    ptx_ins(k, "setp.eq.u32 %s, %s, 0", ok.s, r->lane.s);
    ptx_ins(k, "mov.u32 %s, s_ln", a.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, 8, %s", a.s, warp.s, a.s);
    ptx_ins(k, "@%s st.shared.v2.f32 [%s], {%s, %s}", ok.s, a.s, nr.mean.s, nr.inv.s);
}

/* Copies in[m][k0 + kk] (kk < kt, m < M) into the shared planes: every load first (distinct
 * registers, all in flight), then the barrier that frees the previous tile, then the stores. */
#define GEMV_STAGE (GEMV_TILE / KERNEL_GEMV_THREADS) /* loads a thread makes per row: 4 */
static void stage_tile(struct ptx_kernel *k, const struct gemv_regs *r, int k_in, int kt) {
    struct ptx_reg idx = ptx_reg(k, PTX_B32), t = ptx_reg(k, PTX_B32);
    struct ptx_reg row_ok[GEMV_M], ok[GEMV_STAGE], sa[GEMV_STAGE], v[GEMV_M][GEMV_STAGE];
    struct ptx_reg gv[GEMV_STAGE], bv[GEMV_STAGE];
    int n_i = (kt + KERNEL_GEMV_THREADS - 1) / KERNEL_GEMV_THREADS;
    for (int i = 0; i < n_i; i++) {
        struct ptx_reg kk = ptx_reg(k, PTX_B32);
        ok[i] = ptx_reg(k, PTX_PRED), sa[i] = ptx_reg(k, PTX_B32);
        ptx_ins(k, "add.u32 %s, %s, %d", kk.s, r->tid.s, i * KERNEL_GEMV_THREADS);
        ptx_ins(k, "setp.lt.u32 %s, %s, %d", ok[i].s, kk.s, kt);
        /* kk -> plane (kk / 4) % 2, place (kk / 8) * 4 + kk % 4 */
        ptx_ins(k, "shr.u32 %s, %s, 3", sa[i].s, kk.s);
        ptx_ins(k, "shl.b32 %s, %s, 2", sa[i].s, sa[i].s);
        ptx_ins(k, "and.b32 %s, %s, 3", t.s, kk.s);
        ptx_ins(k, "add.u32 %s, %s, %s", sa[i].s, sa[i].s, t.s);
        ptx_ins(k, "and.b32 %s, %s, 4", t.s, kk.s);
        ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", sa[i].s, t.s, GEMV_TILE / 8, sa[i].s);
        ptx_ins(k, "mov.u32 %s, s_in", t.s);
        ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", sa[i].s, sa[i].s, t.s);
        if (r->norm) { /* the norm's gain and bias at k0 + kk, for every row */
            gv[i] = ptx_reg(k, PTX_F32), bv[i] = ptx_reg(k, PTX_F32);
            ptx_ins(k, "add.u32 %s, %s, %s", idx.s, kk.s, r->k0.s);
            struct ptx_reg ga = ptx_addr(k, r->g, idx, 4), ba = ptx_addr(k, r->lb, idx, 4);
            ptx_ins(k, "@%s ld.global.nc.f32 %s, [%s]", ok[i].s, gv[i].s, ga.s);
            ptx_ins(k, "@%s ld.global.nc.f32 %s, [%s]", ok[i].s, bv[i].s, ba.s);
        }
        for (int m = 0; m < GEMV_M; m++) {
            struct ptx_reg pm = ptx_reg(k, PTX_PRED);
            if (i == 0) {
                row_ok[m] = ptx_reg(k, PTX_PRED);
                ptx_ins(k, "setp.gt.u32 %s, %s, %d", row_ok[m].s, r->n_rows.s, m);
            }
            v[m][i] = ptx_reg(k, PTX_F32);
            ptx_ins(k, "and.pred %s, %s, %s", pm.s, ok[i].s, row_ok[m].s);
            ptx_ins(k, "add.u32 %s, %s, %s", idx.s, kk.s, r->k0.s);
            ptx_ins(k, "add.u32 %s, %s, %d", idx.s, idx.s, m * k_in);
            struct ptx_reg ga = ptx_addr(k, r->in, idx, 4);
            ptx_ins(k, "@%s ld.global.nc.f32 %s, [%s]", pm.s, v[m][i].s, ga.s);
        }
    }
    ptx_ins(k, "bar.sync 0"); /* every warp is done with the previous tile (and s_ln is set) */
    struct ptx_reg mean = ptx_reg(k, PTX_F32), inv = ptx_reg(k, PTX_F32);
    for (int m = 0; m < GEMV_M; m++) {
        if (r->norm) /* gen_layernorm's (x - mean) * inv, then * g + b */
            ptx_ins(k, "ld.shared.v2.f32 {%s, %s}, [s_ln+%d]", mean.s, inv.s, 8 * m);
        for (int i = 0; i < n_i; i++) {
            struct ptx_reg pm = ptx_reg(k, PTX_PRED);
            if (r->norm) {
                ptx_ins(k, "sub.f32 %s, %s, %s", v[m][i].s, v[m][i].s, mean.s);
                ptx_ins(k, "mul.f32 %s, %s, %s", v[m][i].s, v[m][i].s, inv.s);
                ptx_ins(k, "fma.rn.f32 %s, %s, %s, %s", v[m][i].s, v[m][i].s, gv[i].s, bv[i].s);
            }
            ptx_ins(k, "and.pred %s, %s, %s", pm.s, ok[i].s, row_ok[m].s);
            ptx_ins(k, "@%s st.shared.f32 [%s+%d], %s", pm.s, sa[i].s, 4 * m * GEMV_TILE,
                    v[m][i].s);
        }
    }
    ptx_ins(k, "bar.sync 0");
}

/* A tile's weights, loaded ahead of its products: wv[i][c][e] = the 16 bytes of column c that
 * lane takes in step i (step i: groups 32 i + lane), zeros where the column is out of range or
 * the lane has no group in a partial step. All of a tile's loads are issued at once, before its
 * inputs are staged, so that their latency is paid once per tile, not once per step. */
#define GEMV_STEPS (GEMV_TILE / 8 / 32) /* steps of a full tile: 4 */
struct gemv_tile_w {
    struct ptx_reg wv[GEMV_STEPS][GEMV_WCOLS][4];
    int made[GEMV_STEPS]; /* step i's registers exist: every tile loads into the same ones */
};

static void tile_loads(struct ptx_kernel *k, struct gemv_regs *r, struct gemv_tile_w *tw, int kt) {
    int groups = kt / 8;
    struct ptx_reg in_step = ptx_reg(k, PTX_PRED), ok = ptx_reg(k, PTX_PRED);
    for (int i = 0; 32 * i < groups; i++) {
        int partial = 32 * (i + 1) > groups;
        if (partial) /* lanes past the tile's groups load nothing */
            ptx_ins(k, "setp.lt.u32 %s, %s, %d", in_step.s, r->lane.s, groups - 32 * i);
        for (int c = 0; c < GEMV_WCOLS; c++) {
            struct ptx_reg *wv = tw->wv[i][c];
            for (int e = 0; e < 4; e++) {
                if (!tw->made[i])
                    wv[e] = ptx_reg(k, PTX_B32);
                ptx_ins(k, "mov.b32 %s, 0", wv[e].s);
            }
            if (partial)
                ptx_ins(k, "and.pred %s, %s, %s", ok.s, in_step.s, r->col_ok[c].s);
            ptx_ins(k, "@%s ld.global.nc.v4.u32 {%s, %s, %s, %s}, [%s+%d]",
                    partial ? ok.s : r->col_ok[c].s, wv[0].s, wv[1].s, wv[2].s, wv[3].s,
                    r->wrow[c].s, 512 * i);
        }
        tw->made[i] = 1;
    }
}

/* The L2 prefetches of the tile of kt columns `off` bytes past the current one: the lines
 * tile_loads would load there, by every 8th lane (8 lanes' 16 bytes make a 128-byte line;
 * rows start on one, K % 8 == 0), nothing for columns out of range or past the tile's groups. */
static void tile_prefetch(struct ptx_kernel *k, struct gemv_regs *r, int kt, int off) {
    int groups = kt / 8;
    struct ptx_reg lead = ptx_reg(k, PTX_PRED), in_step = ptx_reg(k, PTX_PRED);
    struct ptx_reg ok = ptx_reg(k, PTX_PRED), t = ptx_reg(k, PTX_B32);
    ptx_ins(k, "and.b32 %s, %s, 7", t.s, r->lane.s);
    ptx_ins(k, "setp.eq.u32 %s, %s, 0", lead.s, t.s);
    for (int i = 0; 32 * i < groups; i++) {
        int partial = 32 * (i + 1) > groups;
        if (partial) {
            ptx_ins(k, "setp.lt.u32 %s, %s, %d", in_step.s, r->lane.s, groups - 32 * i);
            ptx_ins(k, "and.pred %s, %s, %s", in_step.s, in_step.s, lead.s);
        }
        for (int c = 0; c < GEMV_WCOLS; c++) {
            ptx_ins(k, "and.pred %s, %s, %s", ok.s, partial ? in_step.s : lead.s, r->col_ok[c].s);
            ptx_ins(k, "@%s prefetch.global.L2 [%s+%d]", ok.s, r->wrow[c].s, off + 512 * i);
        }
    }
}

/* The products of one tile of kt columns (kt % 8 == 0, weights from tile_loads) folded into
 * acc: step by step, row by row, column by column, in k order (the order the file comment
 * states). */
static void tile_products(struct ptx_kernel *k, struct gemv_regs *r, const struct gemv_tile_w *tw,
                          int kt) {
    int groups = kt / 8;
    struct ptx_reg wf[GEMV_WCOLS][8], a[8], h[2];
    struct ptx_reg p = ptx_reg(k, PTX_PRED), ok = ptx_reg(k, PTX_PRED);
    for (int c = 0; c < GEMV_WCOLS; c++)
        for (int e = 0; e < 8; e++)
            wf[c][e] = ptx_reg(k, PTX_F32);
    for (int e = 0; e < 8; e++)
        a[e] = ptx_reg(k, PTX_F32);
    h[0] = ptx_reg(k, PTX_B16), h[1] = ptx_reg(k, PTX_B16);
    for (int i = 0; 32 * i < groups; i++) {
        struct ptx_reg step_end = ptx_label(k);
        if (32 * (i + 1) > groups) { /* a partial step: lanes past the tile's groups sit out */
            ptx_ins(k, "setp.ge.u32 %s, %s, %d", p.s, r->lane.s, groups - 32 * i);
            ptx_ins(k, "@%s bra %s", p.s, step_end.s);
        }
        for (int c = 0; c < GEMV_WCOLS; c++)
            for (int e = 0; e < 4; e++) {
                ptx_ins(k, "mov.b32 {%s, %s}, %s", h[0].s, h[1].s, tw->wv[i][c][e].s);
                ptx_ins(k, "cvt.f32.f16 %s, %s", wf[c][2 * e].s, h[0].s);
                ptx_ins(k, "cvt.f32.f16 %s, %s", wf[c][2 * e + 1].s, h[1].s);
            }
        for (int m = 0; m < GEMV_M; m++) {
            ptx_ins(k, "setp.le.u32 %s, %s, %d", ok.s, r->n_rows.s, m); /* uniform */
            ptx_ins(k, "@%s bra %s", ok.s, step_end.s);
            int off = 4 * (m * GEMV_TILE) + 512 * i;
            ptx_ins(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", a[0].s, a[1].s, a[2].s, a[3].s,
                    r->s_row.s, off);
            ptx_ins(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", a[4].s, a[5].s, a[6].s, a[7].s,
                    r->s_row.s, off + 4 * GEMV_TILE / 2);
            for (int c = 0; c < GEMV_WCOLS; c++)
                for (int e = 0; e < 8; e++)
                    ptx_ins(k, "fma.rn.f32 %s, %s, %s, %s", r->acc[c][m].s, wf[c][e].s, a[e].s,
                            r->acc[c][m].s);
        }
        ptx_place(k, step_end);
    }
}

/* Recursive halving over the warp: afterwards acc[0][0] of lane L holds the sum of value L
 * (value v = acc[v / 8][v % 8]) over the 32 lanes. */
static void reduce_scatter(struct ptx_kernel *k, struct gemv_regs *r) {
    struct ptx_reg v[GEMV_WCOLS * GEMV_M];
    for (int i = 0; i < GEMV_WCOLS * GEMV_M; i++)
        v[i] = r->acc[i / GEMV_M][i % GEMV_M];
    struct ptx_reg bit = ptx_reg(k, PTX_B32), up = ptx_reg(k, PTX_PRED);
    struct ptx_reg send = ptx_reg(k, PTX_F32), keep = ptx_reg(k, PTX_F32);
    struct ptx_reg got = ptx_reg(k, PTX_F32);
    for (int o = 16; o >= 1; o /= 2) {
        ptx_ins(k, "and.b32 %s, %s, %d", bit.s, r->lane.s, o);
        ptx_ins(k, "setp.ne.u32 %s, %s, 0", up.s, bit.s); /* this lane keeps the upper half */
        for (int i = 0; i < o; i++) {
            ptx_ins(k, "selp.f32 %s, %s, %s, %s", send.s, v[i].s, v[i + o].s, up.s);
            ptx_ins(k, "selp.f32 %s, %s, %s, %s", keep.s, v[i + o].s, v[i].s, up.s);
            ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", got.s, send.s, o);
            ptx_ins(k, "add.f32 %s, %s, %s", v[i].s, keep.s, got.s);
        }
    }
}

int kernel_gemv_norm_fits(int k_in) {
    return k_in > 0 && k_in % KERNEL_LN_THREADS == 0 && k_in <= GEMV_NORM_MAX_K;
}

char *gen_gemv_f16(int sm, int k_in, int flags) {
    int norm = flags & KERNEL_GEMV_NORM, qkv = flags & KERNEL_GEMV_QKV;
    char name[64];
    snprintf(name, sizeof name, "gemv_f16_k%d_f%d", k_in, flags);
    struct ptx_kernel k;
    if (k_in <= 0 || k_in % 8 || gemv_begin(&k, name, sm, k_in, flags, KERNEL_GEMV_COLS))
        return NULL;
    if (norm)
        ptx_raw(&k, "    .shared .align 8 .f32 s_ln[%d];\n", 2 * GEMV_M);
    ptx_raw(&k, "    .shared .align 16 .f32 s_in[%d];\n", GEMV_M * GEMV_TILE);

    struct gemv_regs r = {.norm = norm};
    struct ptx_reg cta = ptx_special(&k, "%ctaid.x"), warp = ptx_reg(&k, PTX_B32);
    struct ptx_reg row0 = ptx_special(&k, "%ctaid.y"); /* this CTA's rows: 8 y ... */
    struct ptx_reg n = ptx_reg(&k, PTX_B32), n0 = ptx_reg(&k, PTX_B32), t = ptx_reg(&k, PTX_B32);
    r.tid = ptx_special(&k, "%tid.x");
    r.lane = ptx_reg(&k, PTX_B32), r.n_rows = ptx_reg(&k, PTX_B32), r.k0 = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "shr.u32 %s, %s, 5", warp.s, r.tid.s);
    ptx_ins(&k, "and.b32 %s, %s, 31", r.lane.s, r.tid.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_rows]", r.n_rows.s);
    ptx_ins(&k, "shl.b32 %s, %s, 3", row0.s, row0.s);
    ptx_ins(&k, "sub.u32 %s, %s, %s", r.n_rows.s, r.n_rows.s, row0.s); /* >= 1 here */
    ptx_ins(&k, "ld.param.u32 %s, [p_n]", n.s);
    struct gemv_qkv qs;
    struct ptx_reg b_ok = ptx_reg(&k, PTX_PRED); /* q/k/v: the segment's bias is given */
    if (qkv) /* segment seg = x / (K / 32); the CTA's columns within it */
        gemv_qkv_segment(&k, &qs, cta, k_in / KERNEL_GEMV_COLS);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", n0.s, cta.s, GEMV_WARPS, warp.s);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", n0.s, n0.s, GEMV_WCOLS);
    struct ptx_reg in_off = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", in_off.s, row0.s, k_in);
    r.in = ptx_addr(&k, ptx_ld_ptr(&k, "p_in"), in_off, 4);
    if (norm)
        r.g = ptx_ld_ptr(&k, "p_g"), r.lb = ptx_ld_ptr(&k, "p_lb");
    r.s_row = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "mov.u32 %s, s_in", r.s_row.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 16, %s", r.s_row.s, r.lane.s, r.s_row.s);
    struct ptx_reg w = ptx_ld_ptr(&k, "p_w"), wi = ptx_reg(&k, PTX_B32);
    if (qkv)
        gemv_qkv_select(&k, &qs, w, "p_wk", "p_wv", 0);
    for (int c = 0; c < GEMV_WCOLS; c++) {
        r.col_ok[c] = ptx_reg(&k, PTX_PRED);
        ptx_ins(&k, "add.u32 %s, %s, %d", t.s, n0.s, c);
        ptx_ins(&k, "setp.lt.u32 %s, %s, %s", r.col_ok[c].s, t.s, n.s);
        ptx_ins(&k, "mul.lo.u32 %s, %s, %d", wi.s, t.s, k_in / 8); /* in 16-byte units */
        ptx_ins(&k, "add.u32 %s, %s, %s", wi.s, wi.s, r.lane.s);
        r.wrow[c] = ptx_addr(&k, w, wi, 16);
        for (int m = 0; m < GEMV_M; m++) {
            r.acc[c][m] = ptx_reg(&k, PTX_F32);
            ptx_ins(&k, "mov.f32 %s, 0f00000000", r.acc[c][m].s);
        }
    }

    /* this lane's output after the reduction, lane L: column n0 + L / 8, row L % 8; what the
     * epilogue adds to it (the bias now, the old out after the grid wait) is loaded early, its
     * wait hidden by the tiles */
    struct ptx_reg col = ptx_reg(&k, PTX_B32), row = ptx_reg(&k, PTX_B32);
    struct ptx_reg st_ok = ptx_reg(&k, PTX_PRED), q = ptx_reg(&k, PTX_PRED);
    struct ptx_reg oi = ptx_reg(&k, PTX_B32), ld = ptx_reg(&k, PTX_B32);
    struct ptx_reg x_old = ptx_reg(&k, PTX_F32), x_b = ptx_reg(&k, PTX_F32);
    ptx_ins(&k, "shr.u32 %s, %s, 3", col.s, r.lane.s);
    ptx_ins(&k, "add.u32 %s, %s, %s", col.s, col.s, n0.s);
    ptx_ins(&k, "and.b32 %s, %s, 7", row.s, r.lane.s);
    ptx_ins(&k, "setp.lt.u32 %s, %s, %s", st_ok.s, col.s, n.s);
    ptx_ins(&k, "setp.lt.u32 %s, %s, %s", q.s, row.s, r.n_rows.s);
    ptx_ins(&k, "and.pred %s, %s, %s", st_ok.s, st_ok.s, q.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_ld_out]", ld.s);
    ptx_ins(&k, "add.u32 %s, %s, %s", row.s, row.s, row0.s);
    struct ptx_reg out = ptx_ld_ptr(&k, "p_out"), b = ptx_ld_ptr(&k, "p_b");
    struct ptx_reg kv = ptx_reg(&k, PTX_PRED);
    if (qkv) { /* k and v: row dst_row[row] of their cache (below), K floats apart; a bias if
                * given */
        ptx_ins(&k, "setp.ne.u32 %s, %s, 0", kv.s, qs.seg.s);
        ptx_ins(&k, "and.pred %s, %s, %s", kv.s, kv.s, st_ok.s);
        gemv_qkv_outputs(&k, &qs, out, b, b_ok, st_ok);
        struct ptx_reg ba = ptx_addr(&k, b, col, 4);
        ptx_ins(&k, "@%s ld.global.nc.f32 %s, [%s]", b_ok.s, x_b.s, ba.s);
    }
    if (flags & KERNEL_GEMV_BIAS) {
        struct ptx_reg ba = ptx_addr(&k, b, col, 4);
        ptx_ins(&k, "@%s ld.global.nc.f32 %s, [%s]", st_ok.s, x_b.s, ba.s);
    }

    /* The first tile's weights into registers and the later tiles' into L2, then the wait for
     * the kernel before (ptx_grid_dep_wait): under a dependent launch the weights arrive while
     * that kernel still runs. Only then what earlier kernels wrote: the input rows (norm
     * statistics, staging), the cache rows of k and v, the old output. */
    struct gemv_tile_w tw = {0};
    int n_full = k_in / GEMV_TILE, rest = k_in % GEMV_TILE, first = n_full ? GEMV_TILE : rest;
    int early = !norm || k_in <= GEMV_EARLY_NORM_K; /* the first tile into registers */
    if (early)
        tile_loads(&k, &r, &tw, first);
    for (int t = early; t < n_full + (rest > 0); t++) /* tile 0 too where it waits */
        tile_prefetch(&k, &r, t < n_full ? GEMV_TILE : rest, 2 * GEMV_TILE * t);
    ptx_grid_dep_wait(&k);
    int staged = norm && k_in <= GEMV_TILE; /* norm_stats stages the one tile */
    if (norm)
        norm_stats(&k, &r, warp, k_in, staged);
    if (!early)
        tile_loads(&k, &r, &tw, first);
    if (qkv) {
        struct ptx_reg dst = ptx_reg(&k, PTX_B32);
        struct ptx_reg da = ptx_addr(&k, ptx_ld_ptr(&k, "p_dst"), row, 4);
        ptx_ins(&k, "@%s ld.global.nc.u32 %s, [%s]", kv.s, dst.s, da.s);
        ptx_ins(&k, "selp.b32 %s, %d, %s, %s", ld.s, k_in, ld.s, kv.s);
        ptx_ins(&k, "selp.b32 %s, %s, %s, %s", row.s, dst.s, row.s, kv.s);
    }
    ptx_ins(&k, "mad.lo.u32 %s, %s, %s, %s", oi.s, row.s, ld.s, col.s);
    struct ptx_reg oa = ptx_addr(&k, out, oi, 4);
    if (flags & KERNEL_GEMV_ACCUMULATE)
        ptx_ins(&k, "@%s ld.global.f32 %s, [%s]", st_ok.s, x_old.s, oa.s);

    /* full tiles in a loop (weight addresses advance by a tile; each next tile's weights are
     * loaded at the end of the one before), then the rest */
    ptx_ins(&k, "mov.u32 %s, 0", r.k0.s);
    if (n_full) {
        struct ptx_reg loop = ptx_label(&k), last = ptx_label(&k), p = ptx_reg(&k, PTX_PRED);
        ptx_place(&k, loop);
        if (!staged) /* staged: K == GEMV_TILE, one pass, no loop */
            stage_tile(&k, &r, k_in, GEMV_TILE);
        tile_products(&k, &r, &tw, GEMV_TILE);
        for (int c = 0; c < GEMV_WCOLS; c++)
            ptx_ins(&k, "add.s64 %s, %s, %d", r.wrow[c].s, r.wrow[c].s, 2 * GEMV_TILE);
        ptx_ins(&k, "add.u32 %s, %s, %d", r.k0.s, r.k0.s, GEMV_TILE);
        if (n_full > 1) {
            ptx_ins(&k, "setp.ge.u32 %s, %s, %d", p.s, r.k0.s, n_full * GEMV_TILE);
            ptx_ins(&k, "@%s bra %s", p.s, last.s);
            tile_loads(&k, &r, &tw, GEMV_TILE);
            ptx_ins(&k, "bra %s", loop.s);
            ptx_place(&k, last);
        }
        if (rest)
            tile_loads(&k, &r, &tw, rest);
    }
    if (rest) {
        if (!staged)
            stage_tile(&k, &r, k_in, rest);
        tile_products(&k, &r, &tw, rest);
    }
    reduce_scatter(&k, &r);

    struct ptx_reg done = ptx_label(&k), v = r.acc[0][0];
    ptx_ins(&k, "@!%s bra %s", st_ok.s, done.s);
    if (flags & KERNEL_GEMV_ACCUMULATE) /* the CPU's order: (out + sum) + b */
        ptx_ins(&k, "add.f32 %s, %s, %s", v.s, x_old.s, v.s);
    if (flags & KERNEL_GEMV_BIAS)
        ptx_ins(&k, "add.f32 %s, %s, %s", v.s, v.s, x_b.s);
    if (qkv) /* no add at all without a bias: -0 stays -0, as in the plain kernel */
        ptx_ins(&k, "@%s add.f32 %s, %s, %s", b_ok.s, v.s, v.s, x_b.s);
    if (flags & KERNEL_GEMV_GELU)
        ptx_gelu(&k, v);
    ptx_ins(&k, "st.global.f32 [%s], %s", oa.s, v.s);
    ptx_place(&k, done);
    return ptx_end(&k);
}
