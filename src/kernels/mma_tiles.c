/* mma_tiles.c — see mma_tiles.h. */
#include "kernels/mma_tiles.h"

static void mma(struct ptx_kernel *k, const struct ptx_reg c[4], const struct ptx_reg a[4],
                struct ptx_reg b0, struct ptx_reg b1) {
    ptx_ins(k, MMA_F16 " {%s, %s, %s, %s}, {%s, %s, %s, %s}, {%s, %s}, {%s, %s, %s, %s}", c[0].s,
            c[1].s, c[2].s, c[3].s, a[0].s, a[1].s, a[2].s, a[3].s, b0.s, b1.s, c[0].s, c[1].s,
            c[2].s, c[3].s);
}

void mma_qk_tile(struct ptx_kernel *k, const struct ptx_reg sc[4], struct ptx_reg (*a)[4],
                 const struct ptx_reg b[4], struct ptx_reg kb, int pk, int nt, int nks) {
    for (int i = 0; i < 4; i++)
        ptx_ins(k, "mov.f32 %s, 0f00000000", sc[i].s);
    for (int ks = 0; ks < nks; ks += 2) { /* one ldmatrix.x4: two k-steps' B fragments */
        int two = ks + 1 < nks, off = 2 * (nt * 8 * pk + 16 * ks);
        if (two)
            ptx_ins(k, "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s+%d]", b[0].s,
                    b[1].s, b[2].s, b[3].s, kb.s, off);
        else
            ptx_ins(k, "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%s, %s}, [%s+%d]", b[0].s, b[1].s,
                    kb.s, off);
        for (int j = 0; j <= two; j++)
            mma(k, sc, a[ks + j], b[2 * j], b[2 * j + 1]);
    }
}

void mma_pv_step(struct ptx_kernel *k, struct ptx_reg (*o)[4], const struct ptx_reg pa[4],
                 const struct ptx_reg b[4], struct ptx_reg vb, int pk, int ks, int nnd) {
    for (int nd = 0; nd < nnd; nd += 2) { /* nnd is even: d % 16 == 0 */
        ptx_ins(k, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%s, %s, %s, %s}, [%s+%d]",
                b[0].s, b[1].s, b[2].s, b[3].s, vb.s, 2 * (16 * ks * pk + nd * 8));
        for (int j = 0; j < 2; j++)
            mma(k, o[nd + j], pa, b[2 * j], b[2 * j + 1]);
    }
}
