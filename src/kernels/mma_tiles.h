/* mma_tiles.h — the tensor-core steps attn_tc and attn_rows_tc share (mma_tiles.c): S = Q·Kᵀ
 * for 8 keys and O += P·V for 16, with B fragments from K and V staged in shared memory as fp16
 * [key][pitch] (ldmatrix; V transposed as loaded). Fragment layouts: attention_tc.c. */
#ifndef WC_KERNELS_MMA_TILES_H
#define WC_KERNELS_MMA_TILES_H

#include "kernels/ptx.h"

#define MMA_F16 "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"

/* sc (C fragment, 4 f32) = A · K[keys 8 nt ..][0, 16 nks)ᵀ: a[ks] the A fragments (4 b32 each);
 * kb: this lane's ldmatrix row address in the K tile (pitch pk halves); b: 4 b32 scratch. */
void mma_qk_tile(struct ptx_kernel *k, const struct ptx_reg sc[4], struct ptx_reg (*a)[4],
                 const struct ptx_reg b[4], struct ptx_reg kb, int pk, int nt, int nks);

/* o[nd] (C fragments, nd < nnd) += P · V[keys 16 ks ..][dims 8 nd ..]: pa P's A fragment; vb
 * this lane's ldmatrix.trans row address in the V tile; b: 4 b32 scratch. */
void mma_pv_step(struct ptx_kernel *k, struct ptx_reg (*o)[4], const struct ptx_reg pa[4],
                 const struct ptx_reg b[4], struct ptx_reg vb, int pk, int ks, int nnd);

#endif
