/* gemv_tc.c — gen_gemv_tc: a decoder step's linears (backend.h `linear`, a row per lane, up to
 * KERNEL_GEMV_LAUNCH_ROWS rows) on tensor cores. gemv_f16 converts each fp16 weight and does 8
 * rows' fma with it from shared memory: at 64 rows its shared-memory and conversion throughput
 * hold it near a tenth of the SMs' fma rate (large-v3: a 64-lane step took 17 ms on an H200,
 * 2026-11-27). Here the weights go from memory straight into mma.sync.m16n8k16 fragments.
 *
 * Product: outᵀ = W · inᵀ. The A operand is 16 weight rows (output columns), B is a tile of 8
 * input rows, D 16 columns x 8 rows in fp32. An fp32 input x enters as hi = fp16(x)
 * and lo = fp16(x - hi), one mma each: hi + lo keeps 22 of x's 24 bits and an fp16 product is
 * exact, so a sum is about as close as gemv_f16's fp32 fma (inputs within fp16's range, as the
 * GEMMs' fp16 operands need too).
 *
 * K order: a chunk is 32 values of K. Lane (g = lane / 4, t = lane % 4) loads 16 contiguous
 * bytes of weight rows g and g + 8 (the chunk's values 8t ... 8t + 7) and 32 of input row g of
 * each tile (the same values): no shuffle, no shared memory. The chunk's first mma takes values
 * 8t + 0..3 as its logical k = 2t, 2t + 1, 2t + 8, 2t + 9, the second 8t + 4..7 (the fragment
 * layouts: attention_tc.c). A dot product does not care which logical k a value takes as long
 * as the weight's and the input's agree, and they do by construction.
 *
 * CTA = 8 warps over 16 or 32 columns (1 or 2 column tiles; kernel_gemv_tc_cols) and T tiles of
 * rows. Warp w takes chunks [w nc / 8, (w + 1) nc / 8) of the nc = K / 32 and, tile by tile, adds
 * mma(hi) then mma(lo) of a chunk's first half, then of its second, into the tiles' accumulators.
 * The warps' sums meet in shared memory; the thread that writes an output adds them in warp
 * order, then the old output and the bias, then GELU, in gemv_f16's order. So an output's
 * summation order depends on K alone, not on n_rows, the tiles or the CTA's rows: a row has the
 * bits it has alone.
 *
 * Latency: the bias and the first chunks' weights are loaded, and the warp's later weights
 * prefetched into L2, before the grid wait (ptx_grid_dep_wait), then the inputs and the old
 * output; each chunk's loads are issued `ahead` chunks before its products.
 *
 * KERNEL_GEMV_NORM: warp w first computes rows w, w + 8, ...'s layer-norm statistics with
 * gen_layernorm's bits (gemv_parts.h), through shared memory to every warp; a lane normalises
 * its input values as layernorm would (the gain and bias loaded with the chunk's weights), so
 * the outputs have the bits of layernorm followed by the kernel without the flag.
 * KERNEL_GEMV_QKV: a step's q, k and v in one grid, as gemv_f16's (segment x / (K / columns)).
 */
#include <stdio.h>

#include "kernels/gemv_parts.h"
#include "kernels/kernels.h"
#include "kernels/ptx.h"

#define TC_WARPS      (KERNEL_GEMV_THREADS / 32)
#define TC_T          KERNEL_GEMV_TC_TILES
#define TC_MT         2  /* 16-column tiles a CTA takes at most */
#define TC_MAX_CHUNKS 64 /* chunks a warp takes at most: K <= 16,384 */
#define MMA           "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"

int kernel_gemv_tc_fits(int sm, int k_in) {
    return sm >= 80 && k_in > 0 && k_in % 32 == 0 && k_in <= 32 * TC_WARPS * TC_MAX_CHUNKS;
}

int kernel_gemv_tc_tiles(int n_rows) { return n_rows <= 8 ? 1 : n_rows <= 16 ? 2 : 4; }

int kernel_gemv_tc_cols(int flags) { return flags & KERNEL_GEMV_NORM ? 32 : 16; }

struct tc_regs {
    int nt, per, partial;        /* tiles; chunks a warp takes at most; some warps take one fewer */
    struct ptx_reg w0, w1;       /* global: the lane's 16 bytes of weight rows g, g + 8 */
    int mt;                      /* 16-column tiles: tile m's rows are 16 m on */
    struct ptx_reg ok[TC_MT][2]; /* weight row n0 + 16 m + g + 8 h exists */
    struct ptx_reg x[TC_T];      /* global: the lane's 32 bytes of tile j's input row g */
    struct ptx_reg row_ok[TC_T]; /* that row exists */
    struct ptx_reg last_ok;      /* the warp takes chunk per - 1 (partial only) */
    struct ptx_reg acc[TC_MT][TC_T][4]; /* D fragments: {col g, g + 8} x {row 2t, 2t + 1} */
    int k_in;
    struct ptx_reg p, t_zero, ld;         /* scratch predicate; lane % 4 == 0 */
    int norm;                             /* KERNEL_GEMV_NORM: */
    struct ptx_reg ga, ba;                /* global: the gain and bias at the lane's first chunk */
    struct ptx_reg mean[TC_T], inv[TC_T]; /* row 8 j + g's statistics */
};

struct tc_chunk {
    struct ptx_reg a[TC_MT][8];  /* weight rows g (a[m][0..3]) and g + 8 (a[m][4..7]) of tile m */
    struct ptx_reg x[TC_T][8];   /* tile j's input values 8t ... 8t + 7 */
    struct ptx_reg gn[8], bn[8]; /* norm: the gain and bias at those values */
};

/* pred = base, and the warp takes chunk i (only the last one may be missing) */
static struct ptx_reg chunk_pred(struct ptx_kernel *k, struct tc_regs *r, struct ptx_reg base,
                                 int i) {
    if (!r->partial || i != r->per - 1)
        return base;
    ptx_ins(k, "and.pred %s, %s, %s", r->p.s, base.s, r->last_ok.s);
    return r->p;
}

static void load_weights(struct ptx_kernel *k, struct tc_regs *r, struct tc_chunk *c, int i) {
    for (int m = 0; m < r->mt; m++) {
        for (int e = 0; e < 8; e++) {
            c->a[m][e] = ptx_reg(k, PTX_B32);
            ptx_ins(k, "mov.b32 %s, 0", c->a[m][e].s);
        }
        for (int h = 0; h < 2; h++) {
            struct ptx_reg ok = chunk_pred(k, r, r->ok[m][h], i), *a = c->a[m] + 4 * h;
            ptx_ins(k, "@%s ld.global.nc.v4.u32 {%s, %s, %s, %s}, [%s+%d]", ok.s, a[0].s, a[1].s,
                    a[2].s, a[3].s, (h ? r->w1 : r->w0).s, 32 * r->k_in * m + 64 * i);
        }
    }
    if (!r->norm)
        return;
    /* unset where the warp skips the chunk (products() does not read them then) */
    const char *guard = r->partial && i == r->per - 1 ? "@" : "";
    const char *pred = *guard ? r->last_ok.s : "";
    for (int h = 0; h < 4; h++) {
        struct ptx_reg *d = (h < 2 ? c->gn : c->bn) + 4 * (h % 2);
        for (int e = 0; e < 4; e++)
            d[e] = ptx_reg(k, PTX_F32);
        ptx_ins(k, "%s%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s+%d]", guard, pred, d[0].s,
                d[1].s, d[2].s, d[3].s, (h < 2 ? r->ga : r->ba).s, 128 * i + 16 * (h % 2));
    }
}

static void load_inputs(struct ptx_kernel *k, struct tc_regs *r, struct tc_chunk *c, int i) {
    for (int j = 0; j < r->nt; j++) {
        struct ptx_reg *x = c->x[j];
        for (int e = 0; e < 8; e++) {
            x[e] = ptx_reg(k, PTX_F32);
            ptx_ins(k, "mov.f32 %s, 0f00000000", x[e].s);
        }
        struct ptx_reg ok = chunk_pred(k, r, r->row_ok[j], i);
        for (int h = 0; h < 2; h++)
            ptx_ins(k, "@%s %s.v4.f32 {%s, %s, %s, %s}, [%s+%d]", ok.s, ptx_ld_act(k, 1),
                    x[4 * h].s, x[4 * h + 1].s, x[4 * h + 2].s, x[4 * h + 3].s, r->x[j].s,
                    128 * i + 16 * h);
    }
}

/* hi[p] = fp16 pair of x[2p], x[2p + 1] (the lower index in the lower half), lo[p] = the pair
 * of what hi leaves: x - hi, exact in fp32, rounded to fp16 */
static void split(struct ptx_kernel *k, const struct ptx_reg *x, struct ptx_reg *hi,
                  struct ptx_reg *lo) {
    struct ptx_reg h[2] = {ptx_reg(k, PTX_B16), ptx_reg(k, PTX_B16)};
    struct ptx_reg y[2] = {ptx_reg(k, PTX_F32), ptx_reg(k, PTX_F32)};
    for (int p = 0; p < 4; p++) {
        hi[p] = ptx_reg(k, PTX_B32), lo[p] = ptx_reg(k, PTX_B32);
        ptx_ins(k, "cvt.rn.f16x2.f32 %s, %s, %s", hi[p].s, x[2 * p + 1].s, x[2 * p].s);
        ptx_ins(k, "mov.b32 {%s, %s}, %s", h[0].s, h[1].s, hi[p].s);
        for (int e = 0; e < 2; e++) {
            ptx_ins(k, "cvt.f32.f16 %s, %s", y[e].s, h[e].s);
            ptx_ins(k, "sub.f32 %s, %s, %s", y[e].s, x[2 * p + e].s, y[e].s);
        }
        ptx_ins(k, "cvt.rn.f16x2.f32 %s, %s, %s", lo[p].s, y[1].s, y[0].s);
    }
}

static void mma(struct ptx_kernel *k, struct ptx_reg *d, const struct ptx_reg *a, int half,
                const struct ptx_reg *b) {
    /* A fragment {row g, row g + 8} x {logical k 2t.., 2t + 8..}: the half's two words of
     * each row */
    const struct ptx_reg *r0 = a + 2 * half, *r1 = a + 4 + 2 * half;
    ptx_ins(k, MMA " {%s, %s, %s, %s}, {%s, %s, %s, %s}, {%s, %s}, {%s, %s, %s, %s}", d[0].s,
            d[1].s, d[2].s, d[3].s, r0[0].s, r1[0].s, r0[1].s, r1[1].s, b[0].s, b[1].s, d[0].s,
            d[1].s, d[2].s, d[3].s);
}

/* The chunk's products into the accumulators, in the order the file comment states; a warp
 * that does not take the chunk (uniform) skips them. */
static void products(struct ptx_kernel *k, struct tc_regs *r, const struct tc_chunk *c, int i) {
    struct ptx_reg skip = ptx_label(k);
    int maybe = r->partial && i == r->per - 1;
    if (maybe)
        ptx_ins(k, "@!%s bra %s", r->last_ok.s, skip.s);
    for (int j = 0; j < r->nt; j++) {
        struct ptx_reg hi[4], lo[4];
        for (int e = 0; r->norm && e < 8; e++) { /* gen_layernorm's (x - mean) * inv * g + b */
            const struct ptx_reg *x = &c->x[j][e];
            ptx_ins(k, "sub.f32 %s, %s, %s", x->s, x->s, r->mean[j].s);
            ptx_ins(k, "mul.f32 %s, %s, %s", x->s, x->s, r->inv[j].s);
            ptx_ins(k, "fma.rn.f32 %s, %s, %s, %s", x->s, x->s, c->gn[e].s, c->bn[e].s);
        }
        split(k, c->x[j], hi, lo);
        for (int m = 0; m < r->mt; m++)
            for (int half = 0; half < 2; half++) {
                mma(k, r->acc[m][j], c->a[m], half, hi + 2 * half);
                mma(k, r->acc[m][j], c->a[m], half, lo + 2 * half);
            }
    }
    if (maybe)
        ptx_place(k, skip);
}

int gemv_tc_emit(struct ptx_kernel *k, int sm, int k_in, int flags, int nt, int cols) {
    int norm = flags & KERNEL_GEMV_NORM, qkv = flags & KERNEL_GEMV_QKV;
    int nc = k_in / 32, per = (nc + TC_WARPS - 1) / TC_WARPS;
    /* chunks of loads in flight: about 40 registers of them; half with the norm, whose gain and
     * bias come with each chunk and whose statistics hold a row (K / 32 registers) */
    int mt = cols / 16, pitch = cols + 4; /* 4 more floats keep the stores conflict-free */
    int ahead = (norm || mt > 1) && nt < TC_T ? TC_T / nt / 2 : TC_T / nt;
    char s_ln[24], s_red[24];
    if (!kernel_gemv_tc_fits(sm, k_in) || (nt != 1 && nt != 2 && nt != TC_T) ||
        (cols != 16 && cols != 16 * TC_MT) || gemv_check(k_in, flags, cols))
        return -1;
    gemv_params(k, flags);
    ptx_sym(k, s_ln, sizeof s_ln, "s_ln");
    ptx_sym(k, s_red, sizeof s_red, "s_red");
    if (norm)
        ptx_raw(k, "    .shared .align 8 .f32 %s[%d];\n", s_ln, 2 * 8 * nt);
    ptx_raw(k, "    .shared .align 16 .f32 %s[%d];\n", s_red, TC_WARPS * 8 * nt * pitch);

    struct tc_regs r = {
        .nt = nt, .per = per, .partial = nc % TC_WARPS != 0, .norm = norm, .mt = mt, .k_in = k_in};
    struct ptx_reg tid = ptx_special(k, "%tid.x"), warp = ptx_reg(k, PTX_B32);
    struct ptx_reg lane = ptx_reg(k, PTX_B32), g = ptx_reg(k, PTX_B32), t = ptx_reg(k, PTX_B32);
    struct ptx_reg n0 = ptx_special(k, "%ctaid.x"), row0 = ptx_special(k, "%ctaid.y");
    struct ptx_reg rows = ptx_reg(k, PTX_B32), n = ptx_reg(k, PTX_B32);
    struct ptx_reg c0 = ptx_reg(k, PTX_B32), c1 = ptx_reg(k, PTX_B32), v = ptx_reg(k, PTX_B32);
    r.p = ptx_reg(k, PTX_PRED), r.t_zero = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "shr.u32 %s, %s, 5", warp.s, tid.s);
    ptx_ins(k, "and.b32 %s, %s, 31", lane.s, tid.s);
    ptx_ins(k, "shr.u32 %s, %s, 2", g.s, lane.s);
    ptx_ins(k, "and.b32 %s, %s, 3", t.s, lane.s);
    ptx_ins(k, "setp.eq.u32 %s, %s, 0", r.t_zero.s, t.s);
    struct gemv_qkv qs;
    if (qkv) /* segment x / (K / cols): q, k or v; n0 within it */
        gemv_qkv_segment(k, &qs, n0, k_in / cols);
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", n0.s, n0.s, cols);
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", row0.s, row0.s, 8 * nt);
    ptx_ld_param(k, "u32", rows, "p_rows");
    ptx_ins(k, "sub.u32 %s, %s, %s", rows.s, rows.s, row0.s); /* >= 1 here */
    ptx_ld_param(k, "u32", n, "p_n");
    /* the warp's chunks [c0, c1) */
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", c0.s, warp.s, nc);
    ptx_ins(k, "add.u32 %s, %s, %d", c1.s, c0.s, nc);
    ptx_ins(k, "shr.u32 %s, %s, 3", c0.s, c0.s);
    ptx_ins(k, "shr.u32 %s, %s, 3", c1.s, c1.s);
    if (r.partial) {
        r.last_ok = ptx_reg(k, PTX_PRED);
        ptx_ins(k, "sub.u32 %s, %s, %s", v.s, c1.s, c0.s);
        ptx_ins(k, "setp.eq.u32 %s, %s, %d", r.last_ok.s, v.s, per);
    }
    /* weight rows n0 + g and n0 + g + 8, from chunk c0, the lane's 16 bytes: in 16-byte units
     * (n0 + g) K / 8 + 4 c0 + t */
    struct ptx_reg col = ptx_reg(k, PTX_B32);
    ptx_ins(k, "add.u32 %s, %s, %s", col.s, n0.s, g.s);
    for (int m = 0; m < mt; m++)
        for (int h = 0; h < 2; h++) {
            r.ok[m][h] = ptx_reg(k, PTX_PRED);
            ptx_ins(k, "add.u32 %s, %s, %d", v.s, col.s, 16 * m + 8 * h);
            ptx_ins(k, "setp.lt.u32 %s, %s, %s", r.ok[m][h].s, v.s, n.s);
        }
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", v.s, col.s, k_in / 8);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", v.s, c0.s, v.s);
    ptx_ins(k, "add.u32 %s, %s, %s", v.s, v.s, t.s);
    struct ptx_reg w = ptx_ld_ptr(k, "p_w");
    if (qkv)
        gemv_qkv_select(k, &qs, w, "p_wk", "p_wv", 0);
    r.w0 = ptx_addr(k, w, v, 16);
    r.w1 = ptx_reg(k, PTX_B64);
    ptx_ins(k, "add.s64 %s, %s, %d", r.w1.s, r.w0.s, 16 * k_in);
    /* input row row0 + 8 j + g of tile j, from chunk c0, the lane's 8 floats */
    struct ptx_reg in = ptx_ld_ptr(k, "p_in"), xr = ptx_reg(k, PTX_B32);
    if (norm) { /* the gain and bias from chunk c0, the lane's 8 */
        ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", v.s, c0.s, t.s);
        r.ga = ptx_addr(k, ptx_ld_ptr(k, "p_g"), v, 32);
        r.ba = ptx_addr(k, ptx_ld_ptr(k, "p_lb"), v, 32);
    }
    for (int j = 0; j < nt; j++) {
        r.row_ok[j] = ptx_reg(k, PTX_PRED);
        ptx_ins(k, "add.u32 %s, %s, %d", xr.s, g.s, 8 * j);
        ptx_ins(k, "setp.lt.u32 %s, %s, %s", r.row_ok[j].s, xr.s, rows.s);
        ptx_ins(k, "add.u32 %s, %s, %s", xr.s, xr.s, row0.s);
        ptx_ins(k, "mul.lo.u32 %s, %s, %d", v.s, xr.s, k_in);
        ptx_ins(k, "mad.lo.u32 %s, %s, 32, %s", v.s, c0.s, v.s);
        ptx_ins(k, "mad.lo.u32 %s, %s, 8, %s", v.s, t.s, v.s);
        r.x[j] = ptx_addr(k, in, v, 4);
        for (int m = 0; m < mt; m++)
            for (int e = 0; e < 4; e++) {
                r.acc[m][j][e] = ptx_reg(k, PTX_F32);
                ptx_ins(k, "mov.f32 %s, 0f00000000", r.acc[m][j][e].s);
            }
    }

    /* the outputs this thread writes: column n0 + tid % cols, rows tid / cols + pass o */
    int pass = KERNEL_GEMV_THREADS / cols;
    int n_out = (8 * nt * cols + KERNEL_GEMV_THREADS - 1) / KERNEL_GEMV_THREADS; /* <= 4 */
    struct ptx_reg oc = ptx_reg(k, PTX_B32), orow = ptx_reg(k, PTX_B32);
    struct ptx_reg c_ok = ptx_reg(k, PTX_PRED), st_ok[4], oa[4], x_old[4];
    struct ptx_reg x_b = ptx_reg(k, PTX_F32), b_ok = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "and.b32 %s, %s, %d", oc.s, tid.s, cols - 1);
    ptx_ins(k, "add.u32 %s, %s, %s", col.s, n0.s, oc.s);
    ptx_ins(k, "setp.lt.u32 %s, %s, %s", c_ok.s, col.s, n.s);
    struct ptx_reg out = ptx_ld_ptr(k, "p_out"), b = ptx_ld_ptr(k, "p_b");
    if (qkv) { /* the segment's bias if given (tested as passed), its output: q's, or k's and
                * v's cache rows (below) */
        gemv_qkv_outputs(k, &qs, out, b, b_ok, c_ok);
    }
    if (qkv || (flags & KERNEL_GEMV_BIAS)) {
        struct ptx_reg ba = ptx_addr(k, b, col, 4);
        ptx_ins(k, "@%s ld.global.nc.f32 %s, [%s]", qkv ? b_ok.s : c_ok.s, x_b.s, ba.s);
    }

    /* weights before the wait: the first chunks into registers, the rest into L2 (lanes
     * t = 0: a 128-byte line holds two chunks of a row) */
    struct tc_chunk ch[TC_MAX_CHUNKS];
    for (int i = 0; i < per && i < ahead; i++)
        load_weights(k, &r, &ch[i], i);
    for (int i = ahead; i < per; i++)
        for (int m = 0; m < mt; m++)
            for (int h = 0; h < 2; h++) {
                struct ptx_reg ok = r.p;
                ptx_ins(k, "and.pred %s, %s, %s", ok.s, r.ok[m][h].s, r.t_zero.s);
                if (r.partial && i == per - 1)
                    ptx_ins(k, "and.pred %s, %s, %s", ok.s, ok.s, r.last_ok.s);
                ptx_ins(k, "@%s prefetch.global.L2 [%s+%d]", ok.s, (h ? r.w1 : r.w0).s,
                        32 * k_in * m + 64 * i);
            }
    ptx_grid_dep_wait(k);
    for (int i = 0; i < per && i < ahead; i++)
        load_inputs(k, &r, &ch[i], i);
    r.ld = ptx_reg(k, PTX_B32);
    ptx_ld_param(k, "u32", r.ld, "p_ld_out");
    struct ptx_reg kv = ptx_reg(k, PTX_PRED), dst = ptx_reg(k, PTX_B32);
    struct ptx_reg ldo = ptx_reg(k, PTX_B32), dst_row = {{0}};
    if (qkv)
        dst_row = ptx_ld_ptr(k, "p_dst");
    for (int o = 0; o < n_out; o++) {
        struct ptx_reg q = ptx_reg(k, PTX_PRED);
        st_ok[o] = ptx_reg(k, PTX_PRED), x_old[o] = ptx_reg(k, PTX_F32);
        ptx_ins(k, "div.u32 %s, %s, %d", orow.s, tid.s, cols);
        ptx_ins(k, "add.u32 %s, %s, %d", orow.s, orow.s, pass * o);
        ptx_ins(k, "setp.lt.u32 %s, %s, %s", q.s, orow.s, rows.s);
        ptx_ins(k, "and.pred %s, %s, %s", st_ok[o].s, q.s, c_ok.s);
        ptx_ins(k, "setp.lt.u32 %s, %s, %d", q.s, orow.s, 8 * nt); /* T = 1: half the CTA */
        ptx_ins(k, "and.pred %s, %s, %s", st_ok[o].s, st_ok[o].s, q.s);
        ptx_ins(k, "add.u32 %s, %s, %s", orow.s, orow.s, row0.s);
        ptx_ins(k, "mov.u32 %s, %s", ldo.s, r.ld.s);
        if (qkv) { /* k and v: row dst_row[row] of their cache, K floats apart */
            ptx_ins(k, "setp.ne.u32 %s, %s, 0", kv.s, qs.seg.s);
            ptx_ins(k, "and.pred %s, %s, %s", kv.s, kv.s, st_ok[o].s);
            struct ptx_reg da = ptx_addr(k, dst_row, orow, 4);
            ptx_ins(k, "@%s ld.global.nc.u32 %s, [%s]", kv.s, dst.s, da.s);
            ptx_ins(k, "selp.b32 %s, %d, %s, %s", ldo.s, k_in, ldo.s, kv.s);
            ptx_ins(k, "selp.b32 %s, %s, %s, %s", orow.s, dst.s, orow.s, kv.s);
        }
        ptx_ins(k, "mad.lo.u32 %s, %s, %s, %s", v.s, orow.s, ldo.s, col.s);
        oa[o] = ptx_addr(k, out, v, 4);
        if (flags & KERNEL_GEMV_ACCUMULATE)
            ptx_ins(k, "@%s %s.f32 %s, [%s]", st_ok[o].s, ptx_ld_act(k, 0), x_old[o].s, oa[o].s);
    }

    if (norm) { /* rows 8 j + warp's statistics (gemv_parts.h) into s_ln, then the lane's rows' */
        struct gemv_norm_row nr;
        struct ptx_reg ok = ptx_reg(k, PTX_PRED), a = ptx_reg(k, PTX_B32);
        for (int j = 0; j < nt; j++) {
            ptx_ins(k, "add.u32 %s, %s, %d", xr.s, warp.s, 8 * j);
            ptx_ins(k, "setp.lt.u32 %s, %s, %s", ok.s, xr.s, rows.s);
            ptx_ins(k, "add.u32 %s, %s, %s", v.s, xr.s, row0.s);
            ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", v.s, v.s, k_in, lane.s);
            gemv_norm_load(k, &nr, ptx_addr(k, in, v, 4), ok, k_in);
            gemv_norm_stats(k, &nr, k_in);
            ptx_ins(k, "setp.eq.u32 %s, %s, 0", r.p.s, lane.s);
            ptx_ins(k, "mov.u32 %s, %s", a.s, s_ln);
            ptx_ins(k, "mad.lo.u32 %s, %s, 8, %s", a.s, xr.s, a.s);
            ptx_ins(k, "@%s st.shared.v2.f32 [%s], {%s, %s}", r.p.s, a.s, nr.mean.s, nr.inv.s);
        }
        ptx_ins(k, "bar.sync 0");
        ptx_ins(k, "mov.u32 %s, %s", a.s, s_ln);
        ptx_ins(k, "mad.lo.u32 %s, %s, 8, %s", a.s, g.s, a.s);
        for (int j = 0; j < nt; j++) { /* rows past n_rows: values never stored */
            r.mean[j] = ptx_reg(k, PTX_F32), r.inv[j] = ptx_reg(k, PTX_F32);
            ptx_ins(k, "ld.shared.v2.f32 {%s, %s}, [%s+%d]", r.mean[j].s, r.inv[j].s, a.s, 64 * j);
        }
    }
    for (int i = 0; i < per; i++) {
        if (i + ahead < per) {
            load_weights(k, &r, &ch[i + ahead], i + ahead);
            load_inputs(k, &r, &ch[i + ahead], i + ahead);
        }
        products(k, &r, &ch[i], i);
    }

    /* s_red[warp][row][col]: D element e of tile (m, j) is (col 16 m + g + 8 (e / 2), row
     * 8 j + 2 t + e % 2) */
    struct ptx_reg sa = ptx_reg(k, PTX_B32);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", v.s, warp.s, 8 * nt, t.s); /* + t: half of 2 t */
    ptx_ins(k, "add.u32 %s, %s, %s", v.s, v.s, t.s);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", v.s, v.s, pitch, g.s);
    ptx_ins(k, "mov.u32 %s, %s", sa.s, s_red);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", sa.s, v.s, sa.s);
    for (int m = 0; m < mt; m++)
        for (int j = 0; j < nt; j++)
            for (int e = 0; e < 4; e++)
                ptx_ins(k, "st.shared.f32 [%s+%d], %s", sa.s,
                        4 * ((8 * j + e % 2) * pitch + 16 * m + 8 * (e / 2)), r.acc[m][j][e].s);
    ptx_ins(k, "bar.sync 0");

    /* each output: the warps' sums in warp order, then gemv_f16's epilogue */
    struct ptx_reg ra = ptx_reg(k, PTX_B32), sum = ptx_reg(k, PTX_F32);
    struct ptx_reg part = ptx_reg(k, PTX_F32);
    ptx_ins(k, "div.u32 %s, %s, %d", v.s, tid.s, cols);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", v.s, v.s, pitch, oc.s);
    ptx_ins(k, "mov.u32 %s, %s", ra.s, s_red);
    ptx_ins(k, "mad.lo.u32 %s, %s, 4, %s", ra.s, v.s, ra.s);
    for (int o = 0; o < n_out; o++) {
        struct ptx_reg next = ptx_label(k);
        ptx_ins(k, "@!%s bra %s", st_ok[o].s, next.s);
        for (int w = 0; w < TC_WARPS; w++) {
            int off = 4 * ((w * 8 * nt + pass * o) * pitch);
            ptx_ins(k, "ld.shared.f32 %s, [%s+%d]", w ? part.s : sum.s, ra.s, off);
            if (w)
                ptx_ins(k, "add.f32 %s, %s, %s", sum.s, sum.s, part.s);
        }
        if (flags & KERNEL_GEMV_ACCUMULATE) /* the CPU's order: (out + sum) + b */
            ptx_ins(k, "add.f32 %s, %s, %s", sum.s, x_old[o].s, sum.s);
        if (flags & KERNEL_GEMV_BIAS)
            ptx_ins(k, "add.f32 %s, %s, %s", sum.s, sum.s, x_b.s);
        if (qkv) /* no add at all without a bias: -0 stays -0, as in gemv_f16 */
            ptx_ins(k, "@%s add.f32 %s, %s, %s", b_ok.s, sum.s, sum.s, x_b.s);
        if (flags & KERNEL_GEMV_GELU)
            ptx_gelu(k, sum);
        ptx_ins(k, "st.global.f32 [%s], %s", oa[o].s, sum.s);
        ptx_place(k, next);
    }
    return 0;
}

char *gen_gemv_tc(int sm, int k_in, int flags, int nt, int cols) {
    char name[64];
    snprintf(name, sizeof name, "gemv_tc_k%d_c%d_n%d_f%d", k_in, cols, nt, flags);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    if (gemv_tc_emit(&k, sm, k_in, flags, nt, cols)) {
        ptx_discard(&k);
        return NULL;
    }
    return ptx_end(&k);
}
