/* transpose.c — gen_transpose: out[c][r] = in[r][c] (f32), the encoder's log-Mel windows from
 * the [n_mels][frames] layout the frontend computes into the time-major rows the conv stem
 * reads, on the device instead of the host (a strided host loop of ~0.2 ms a window that the
 * GPU waited for). A CTA of 256 threads (8 warps) moves a 32 x 32 tile through shared memory:
 * warp w reads rows w, w + 8, ... of the tile along a row of `in` (coalesced) and writes
 * columns of it along a row of `out` (coalesced); the tile's pitch of 33 words keeps both on 32
 * different banks. */
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

#define TILE  32
#define PITCH (TILE + 1)

/* Rows blk*32 + ty + 8j (j < 4) of a [n_major][ld] matrix at g, at column `minor` (minor_ok:
 * it is inside), to or from the shared words sh + 8j * sh_step: the tile's loads (to_shared)
 * or its stores. */
static void tile_rows(struct ptx_kernel *k, struct ptx_reg g, struct ptx_reg blk, struct ptx_reg ty,
                      struct ptx_reg n_major, struct ptx_reg ld, struct ptx_reg minor,
                      struct ptx_reg minor_ok, struct ptx_reg sh, int sh_step, int to_shared) {
    struct ptx_reg r = ptx_reg(k, PTX_B32), i = ptx_reg(k, PTX_B32), v = ptx_reg(k, PTX_F32);
    struct ptx_reg p = ptx_reg(k, PTX_PRED);
    for (int j = 0; j < TILE / 8; j++) {
        ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", r.s, blk.s, TILE, ty.s);
        ptx_ins(k, "add.u32 %s, %s, %d", r.s, r.s, 8 * j);
        ptx_ins(k, "setp.lt.u32 %s, %s, %s", p.s, r.s, n_major.s);
        ptx_ins(k, "and.pred %s, %s, %s", p.s, p.s, minor_ok.s);
        ptx_ins(k, "mad.lo.u32 %s, %s, %s, %s", i.s, r.s, ld.s, minor.s);
        struct ptx_reg a = ptx_addr(k, g, i, 4);
        int off = 4 * 8 * j * sh_step;
        if (to_shared) { /* written by an upload or a kernel before: a coherent load */
            ptx_ins(k, "@%s ld.global.f32 %s, [%s]", p.s, v.s, a.s);
            ptx_ins(k, "@%s st.shared.f32 [%s+%d], %s", p.s, sh.s, off, v.s);
        } else {
            ptx_ins(k, "@%s ld.shared.f32 %s, [%s+%d]", p.s, v.s, sh.s, off);
            ptx_ins(k, "@%s st.global.f32 [%s], %s", p.s, a.s, v.s);
        }
    }
}

char *gen_transpose(int sm) {
    struct ptx_kernel k;
    ptx_begin(&k, "transpose_f32", sm);
    ptx_param(&k, "u64", "p_out");
    ptx_param(&k, "u64", "p_in");
    ptx_param(&k, "u32", "p_rows");
    ptx_param(&k, "u32", "p_cols");
    ptx_raw(&k, "    .shared .align 4 .f32 s_t[%d];\n", TILE * PITCH);
    struct ptx_reg tid = ptx_special(&k, "%tid.x"), bx = ptx_special(&k, "%ctaid.x");
    struct ptx_reg by = ptx_special(&k, "%ctaid.y");
    struct ptx_reg rows = ptx_reg(&k, PTX_B32), cols = ptx_reg(&k, PTX_B32);
    struct ptx_reg tx = ptx_reg(&k, PTX_B32), ty = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "ld.param.u32 %s, [p_rows]", rows.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_cols]", cols.s);
    ptx_ins(&k, "and.b32 %s, %s, %d", tx.s, tid.s, TILE - 1);
    ptx_ins(&k, "shr.u32 %s, %s, 5", ty.s, tid.s);
    struct ptx_reg in = ptx_ld_ptr(&k, "p_in"), out = ptx_ld_ptr(&k, "p_out");
    struct ptx_reg m = ptx_reg(&k, PTX_B32), sh = ptx_reg(&k, PTX_B32);
    struct ptx_reg base = ptx_reg(&k, PTX_B32), q = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "mov.u32 %s, s_t", base.s);

    /* in: rows by*32 + ty + 8j at column bx*32 + tx into s_t[ty + 8j][tx] */
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", m.s, bx.s, TILE, tx.s);
    ptx_ins(&k, "setp.lt.u32 %s, %s, %s", q.s, m.s, cols.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", sh.s, ty.s, PITCH, tx.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 4, %s", sh.s, sh.s, base.s);
    tile_rows(&k, in, by, ty, rows, cols, m, q, sh, PITCH, 1);
    ptx_ins(&k, "bar.sync 0");

    /* out: rows bx*32 + ty + 8j (columns of in) at column by*32 + tx from s_t[tx][ty + 8j] */
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", m.s, by.s, TILE, tx.s);
    ptx_ins(&k, "setp.lt.u32 %s, %s, %s", q.s, m.s, rows.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", sh.s, tx.s, PITCH, ty.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 4, %s", sh.s, sh.s, base.s);
    tile_rows(&k, out, bx, ty, cols, rows, m, q, sh, 1, 0);
    return ptx_end(&k);
}
