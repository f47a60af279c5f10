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
    struct ptx_reg r = ptx_reg(&k, PTX_B32), c = ptx_reg(&k, PTX_B32), i = ptx_reg(&k, PTX_B32);
    struct ptx_reg sh = ptx_reg(&k, PTX_B32), base = ptx_reg(&k, PTX_B32);
    struct ptx_reg p = ptx_reg(&k, PTX_PRED), q = ptx_reg(&k, PTX_PRED), v = ptx_reg(&k, PTX_F32);
    ptx_ins(&k, "mov.u32 %s, s_t", base.s);

    /* in: tile row ty + 8j is in row by*32 + ty + 8j, column bx*32 + tx; s_t[ty + 8j][tx] */
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", c.s, bx.s, TILE, tx.s);
    ptx_ins(&k, "setp.lt.u32 %s, %s, %s", q.s, c.s, cols.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", sh.s, ty.s, PITCH, tx.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 4, %s", sh.s, sh.s, base.s);
    for (int j = 0; j < TILE / 8; j++) {
        ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", r.s, by.s, TILE, ty.s);
        ptx_ins(&k, "add.u32 %s, %s, %d", r.s, r.s, 8 * j);
        ptx_ins(&k, "setp.lt.u32 %s, %s, %s", p.s, r.s, rows.s);
        ptx_ins(&k, "and.pred %s, %s, %s", p.s, p.s, q.s);
        ptx_ins(&k, "mad.lo.u32 %s, %s, %s, %s", i.s, r.s, cols.s, c.s);
        struct ptx_reg a = ptx_addr(&k, in, i, 4);
        /* written by an upload or a kernel before this one on the stream: a coherent load */
        ptx_ins(&k, "@%s ld.global.f32 %s, [%s]", p.s, v.s, a.s);
        ptx_ins(&k, "@%s st.shared.f32 [%s+%d], %s", p.s, sh.s, 4 * 8 * j * PITCH, v.s);
    }
    ptx_ins(&k, "bar.sync 0");

    /* out: row bx*32 + ty + 8j (a column of in), column by*32 + tx: s_t[tx][ty + 8j] */
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", r.s, by.s, TILE, tx.s);
    ptx_ins(&k, "setp.lt.u32 %s, %s, %s", q.s, r.s, rows.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", sh.s, tx.s, PITCH, ty.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, 4, %s", sh.s, sh.s, base.s);
    for (int j = 0; j < TILE / 8; j++) {
        ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", c.s, bx.s, TILE, ty.s);
        ptx_ins(&k, "add.u32 %s, %s, %d", c.s, c.s, 8 * j);
        ptx_ins(&k, "setp.lt.u32 %s, %s, %s", p.s, c.s, cols.s);
        ptx_ins(&k, "and.pred %s, %s, %s", p.s, p.s, q.s);
        ptx_ins(&k, "mad.lo.u32 %s, %s, %s, %s", i.s, c.s, rows.s, r.s);
        struct ptx_reg a = ptx_addr(&k, out, i, 4);
        ptx_ins(&k, "@%s ld.shared.f32 %s, [%s+%d]", p.s, v.s, sh.s, 4 * 8 * j);
        ptx_ins(&k, "@%s st.global.f32 [%s], %s", p.s, a.s, v.s);
    }
    return ptx_end(&k);
}
