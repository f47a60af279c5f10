/* rows_scatter.c — gen_rows_scatter: row r of src copied to row dst_row[r] of dst (the batch
 * decoder's new keys and values into each lane's cache rows), one CTA of 128 threads per row,
 * each thread C/128 columns (coalesced); the row indices live on the device. */
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

char *gen_rows_scatter(int sm, int c) {
    if (c <= 0 || c % KERNEL_LN_THREADS)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "rows_scatter_c%d", c);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_dst");
    ptx_param(&k, "u64", "p_src");
    ptx_param(&k, "u64", "p_dst_row");
    struct ptx_reg r = ptx_special(&k, "%ctaid.x"), tid = ptx_special(&k, "%tid.x");
    struct ptx_reg dst = ptx_ld_ptr(&k, "p_dst"), src = ptx_ld_ptr(&k, "p_src");
    struct ptx_reg row = ptx_reg(&k, PTX_B32), di = ptx_reg(&k, PTX_B32), si = ptx_reg(&k, PTX_B32);
    struct ptx_reg ra = ptx_addr(&k, ptx_ld_ptr(&k, "p_dst_row"), r, 4);
    ptx_ins(&k, "ld.global.nc.u32 %s, [%s]", row.s, ra.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", di.s, row.s, c, tid.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", si.s, r.s, c, tid.s);
    struct ptx_reg da = ptx_addr(&k, dst, di, 4), sa = ptx_addr(&k, src, si, 4);
    struct ptx_reg v = ptx_reg(&k, PTX_F32);
    for (int i = 0; i < c / KERNEL_LN_THREADS; i++) {
        /* src was written by the previous launch on this stream: a plain (coherent) load */
        ptx_ins(&k, "ld.global.f32 %s, [%s+%d]", v.s, sa.s, 4 * KERNEL_LN_THREADS * i);
        ptx_ins(&k, "st.global.f32 [%s+%d], %s", da.s, 4 * KERNEL_LN_THREADS * i, v.s);
    }
    return ptx_end(&k);
}
