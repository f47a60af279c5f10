/* epilogue.c — gen_bias_act: what follows a cuBLAS GEMM (bias, exact GELU, residual or position
 * add), in place, over the n_rows x N block, 256 threads per CTA. Rows of x are ld floats apart
 * (a GEMM written into a wider buffer, e.g. the KV cache), rows of add are N.
 * KERNEL_EPI_HALF stores the result rounded to fp16 into another buffer instead: the encoder's
 * fc1 output, whose only reader is the fc2 GEMM, in one pass rather than two.
 * Where N is a multiple of 4, a thread takes 4 neighbouring elements of a row (one 16-byte load
 * or store each where its addresses allow, else four), so that the pass runs at the memory's
 * speed rather than the issue rate of single loads (on the H200 a 1500 x 512 pass took 6.1 µs
 * one element a thread, ~4x its bytes' time); else one element. Element i is row i / N, column
 * i % N (N is a constant, so ptxas turns both into multiplies). */
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/ptx.h"

/* v[0..w) = the w floats at addr: one 16-byte load (`ld` is "ld.global" or "ld.global.nc")
 * when vec, else one at a time */
static void load_w(struct ptx_kernel *k, const char *ld, struct ptx_reg *v, int w, int vec,
                   struct ptx_reg addr) {
    if (vec)
        ptx_ins(k, "%s.v4.f32 {%s, %s, %s, %s}, [%s]", ld, v[0].s, v[1].s, v[2].s, v[3].s, addr.s);
    else
        for (int e = 0; e < w; e++)
            ptx_ins(k, "%s.f32 %s, [%s+%d]", ld, v[e].s, addr.s, 4 * e);
}

/* The loads, arithmetic and stores of `w` neighbouring elements (w = 1 or 4) at element
 * addresses xa (x), ba (bias), aa (add), oa (fp16 out): vector accesses when vec. */
static void elements(struct ptx_kernel *k, int flags, int w, int vec, struct ptx_reg xa,
                     struct ptx_reg ba, struct ptx_reg aa, struct ptx_reg oa) {
    struct ptx_reg v[4], t[4], h[2];
    for (int e = 0; e < w; e++)
        v[e] = ptx_reg(k, PTX_F32), t[e] = ptx_reg(k, PTX_F32);
    load_w(k, "ld.global", v, w, vec, xa);
    if (flags & KERNEL_EPI_BIAS) {
        load_w(k, "ld.global.nc", t, w, vec, ba);
        for (int e = 0; e < w; e++)
            ptx_ins(k, "add.f32 %s, %s, %s", v[e].s, v[e].s, t[e].s);
    }
    for (int e = 0; flags & KERNEL_EPI_GELU && e < w; e++)
        ptx_gelu(k, v[e]);
    if (flags & KERNEL_EPI_ADD) {
        load_w(k, "ld.global", t, w, vec, aa);
        for (int e = 0; e < w; e++)
            ptx_ins(k, "add.f32 %s, %s, %s", v[e].s, v[e].s, t[e].s);
    }
    if (flags & KERNEL_EPI_HALF) {
        if (vec) { /* cvt's first source goes to the upper half: element 2j + 1 */
            for (int j = 0; j < 2; j++) {
                h[j] = ptx_reg(k, PTX_B32);
                ptx_ins(k, "cvt.rn.f16x2.f32 %s, %s, %s", h[j].s, v[2 * j + 1].s, v[2 * j].s);
            }
            ptx_ins(k, "st.global.v2.b32 [%s], {%s, %s}", oa.s, h[0].s, h[1].s);
        } else {
            struct ptx_reg b = ptx_reg(k, PTX_B16);
            for (int e = 0; e < w; e++) {
                ptx_ins(k, "cvt.rn.f16.f32 %s, %s", b.s, v[e].s);
                ptx_ins(k, "st.global.b16 [%s+%d], %s", oa.s, 2 * e, b.s);
            }
        }
    } else if (vec) {
        ptx_ins(k, "st.global.v4.f32 [%s], {%s, %s, %s, %s}", xa.s, v[0].s, v[1].s, v[2].s, v[3].s);
    } else {
        for (int e = 0; e < w; e++)
            ptx_ins(k, "st.global.f32 [%s+%d], %s", xa.s, 4 * e, v[e].s);
    }
}

/* pred = every address this thread's vector accesses use is aligned to them */
static void aligned(struct ptx_kernel *k, struct ptx_reg pred, int flags, struct ptx_reg xa,
                    struct ptx_reg ba, struct ptx_reg aa, struct ptx_reg oa) {
    struct ptx_reg m = ptx_reg(k, PTX_B64);
    ptx_ins(k, "and.b64 %s, %s, 15", m.s, xa.s);
    if (flags & KERNEL_EPI_BIAS)
        ptx_ins(k, "or.b64 %s, %s, %s", m.s, m.s, ba.s);
    if (flags & KERNEL_EPI_ADD)
        ptx_ins(k, "or.b64 %s, %s, %s", m.s, m.s, aa.s);
    ptx_ins(k, "and.b64 %s, %s, 15", m.s, m.s);
    if (flags & KERNEL_EPI_HALF) { /* 4 halves: 8 bytes */
        struct ptx_reg mo = ptx_reg(k, PTX_B64);
        ptx_ins(k, "and.b64 %s, %s, 7", mo.s, oa.s);
        ptx_ins(k, "or.b64 %s, %s, %s", m.s, m.s, mo.s);
    }
    ptx_ins(k, "setp.eq.u64 %s, %s, 0", pred.s, m.s);
}

char *gen_bias_act(int sm, int n, int flags) {
    if (n <= 0 || flags < 0 ||
        flags > (KERNEL_EPI_BIAS | KERNEL_EPI_GELU | KERNEL_EPI_ADD | KERNEL_EPI_HALF))
        return NULL;
    int w = kernel_epi_per_thread(n);
    char name[64];
    snprintf(name, sizeof name, "bias_act_n%d_f%d", n, flags);
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    ptx_param(&k, "u64", "p_x");
    ptx_param(&k, "u32", "p_ld");
    ptx_param(&k, "u64", "p_b");
    ptx_param(&k, "u64", "p_add");
    ptx_param(&k, "u32", "p_rows");
    ptx_param(&k, "u64", "p_out");
    struct ptx_reg cta = ptx_special(&k, "%ctaid.x"), tid = ptx_special(&k, "%tid.x");
    struct ptx_reg i = ptx_reg(&k, PTX_B32), total = ptx_reg(&k, PTX_B32);
    struct ptx_reg p = ptx_reg(&k, PTX_PRED), done = ptx_label(&k);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %d, %s", i.s, cta.s, KERNEL_EW_THREADS, tid.s);
    if (w > 1)
        ptx_ins(&k, "mul.lo.u32 %s, %s, %d", i.s, i.s, w); /* the thread's first element */
    ptx_ins(&k, "ld.param.u32 %s, [p_rows]", total.s);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", total.s, total.s, n);
    ptx_ins(&k, "setp.ge.u32 %s, %s, %s", p.s, i.s, total.s);
    ptx_ins(&k, "@%s bra %s", p.s, done.s);

    /* n % w == 0: a thread's elements lie in one row */
    struct ptx_reg row = ptx_reg(&k, PTX_B32), col = ptx_reg(&k, PTX_B32);
    struct ptx_reg ld = ptx_reg(&k, PTX_B32), xi = ptx_reg(&k, PTX_B32);
    ptx_ins(&k, "div.u32 %s, %s, %d", row.s, i.s, n);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", col.s, row.s, n);
    ptx_ins(&k, "sub.u32 %s, %s, %s", col.s, i.s, col.s);
    ptx_ins(&k, "ld.param.u32 %s, [p_ld]", ld.s);
    ptx_ins(&k, "mad.lo.u32 %s, %s, %s, %s", xi.s, row.s, ld.s, col.s);
    struct ptx_reg xa = ptx_addr(&k, ptx_ld_ptr(&k, "p_x"), xi, 4), none = {0};
    struct ptx_reg ba =
        flags & KERNEL_EPI_BIAS ? ptx_addr(&k, ptx_ld_ptr(&k, "p_b"), col, 4) : none;
    struct ptx_reg aa = flags & KERNEL_EPI_ADD ? ptx_addr(&k, ptx_ld_ptr(&k, "p_add"), i, 4) : none;
    struct ptx_reg oa =
        flags & KERNEL_EPI_HALF ? ptx_addr(&k, ptx_ld_ptr(&k, "p_out"), i, 2) : none;
    if (w > 1) { /* vector accesses where aligned (ld % 4 and the buffers' own alignment) */
        struct ptx_reg scalar = ptx_label(&k);
        aligned(&k, p, flags, xa, ba, aa, oa);
        ptx_ins(&k, "@!%s bra %s", p.s, scalar.s);
        elements(&k, flags, w, 1, xa, ba, aa, oa);
        ptx_ins(&k, "bra.uni %s", done.s);
        ptx_place(&k, scalar);
    }
    elements(&k, flags, w, 0, xa, ba, aa, oa);
    ptx_place(&k, done);
    return ptx_end(&k);
}
