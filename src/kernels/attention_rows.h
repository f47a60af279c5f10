/* attention_rows.h — what attn_rows (attention_gather.c) and attn_rows_tc
 * (attention_rows_tc.c) share: their parameters and where a row's keys are. */
#ifndef WC_KERNELS_ATTENTION_ROWS_H
#define WC_KERNELS_ATTENTION_ROWS_H

#include "kernels/ptx.h"

/* Where a row's keys are: gather mode reads key j's row index from slot_row (global address of
 * the row's slot-table row), rows mode takes row j itself, row_bytes apart (a register: esz
 * ld_kv). kbase, vbase: column `col` of row 0 (of the row's own lane in rows mode). */
struct key_rows {
    int gather, esz; /* esz: bytes per key/value element, 4 (f32) or 2 (f16) */
    struct ptx_reg slot_row, row_bytes, kbase, vbase;
};

/* Declares gather mode's parameters (kernels.h attn_gather_h<H>_d<D>'s, in order), or rows
 * mode's. */
void attn_row_params(struct ptx_kernel *k, int gather);
/* attn_gather's or attn_rows' body (attention_gather.c), in a kernel of its own or as a phase
 * of KERNEL_GATHER_THREADS threads (ptx.h; %ctaid.z and %nctaid.z virtual too). -1, nothing
 * written, for shapes not made. */
int attn_row_emit(struct ptx_kernel *k, int n_head, int d, int gather, int kv_half);

/* Declares rows mode's parameters (kernels.h attn_rows_h<H>_d<D>'s, in order). */
void attn_rows_params(struct ptx_kernel *k);

/* Rows mode: s_len keys (into n_kv), row j at (k or v) + esz (lane_of_row[g] * lane_stride + j
 * ld_kv + col). */
struct key_rows attn_rows_setup(struct ptx_kernel *k, struct ptx_reg g, struct ptx_reg col,
                                struct ptx_reg n_kv, int esz);

#endif
