/* gemv_chain.c — gen_gemv_chain: a decoder step's ops that follow one another (a layer's
 * output projection, then the next norm and projection; the MLP's two; the attention between
 * them) as the phases of one cooperative kernel. Launched one by one, each is a kernel boundary
 * the next waits at, several microseconds of a step whose arithmetic takes less; here a grid
 * barrier (ptx_grid_sync) stands between them.
 *
 * Each link is gemv_tc's body emitted as a phase (ptx.h): the same instructions, with its
 * parameters the kernel's (prefixed c<i>_), and %ctaid.x / .y taken from a loop over the
 * virtual CTAs of the grid gemv_tc's launch would have had (virtual CTA v = y gx + x: CTA c
 * takes v = c, c + nctaid, ...). So every output has gemv_tc's bits, whatever the number of
 * CTAs. Between two virtual CTAs a CTA passes bar.sync, as the shared arrays are reused.
 *
 * An attention link is attn_gather's or attn_rows' body (attention_gather.c) the same way, over
 * its launch's 3-D grid (v = (z gy + y) gx + x), on the first KERNEL_GATHER_THREADS threads of
 * each CTA (the others wait at the bar.sync after it); its barriers are named barrier 1 of that
 * many threads. Its splits' join works as in its kernel: the last of a (row, head)'s split CTAs
 * joins their records, whichever CTA ran them.
 *
 * Before each barrier a CTA prefetches into L2 the weight rows of its virtual CTAs of the next
 * link (a virtual CTA's rows n0 .. n0 + C - 1 of W[N][K] are C K halves in a row, one 128-byte
 * line a thread at a time), so that the loads after the barrier, which every CTA waits for,
 * find them there: what gemv_tc does before its grid wait. The first link's go there before
 * the chain's own grid wait. */
#include <stdio.h>
#include <string.h>

#include "kernels/attention_rows.h"
#include "kernels/gemv_parts.h"
#include "kernels/kernels.h"
#include "kernels/ptx.h"

/* A loop over link i's virtual CTAs, c<i>_p_gx by c<i>_p_gy (by c<i>_p_gz where dims is 3;
 * this CTA takes v = %ctaid.x, + %nctaid.x, ...): vloop_begin opens it with ph.ctaid = the
 * virtual CTA's x, y (and z), vloop_end closes it. */
struct vloop {
    struct ptx_phase ph;
    struct ptx_reg v, step, top, end;
};

static void vloop_begin(struct ptx_kernel *k, struct vloop *L, int i, int dims) {
    memset(L, 0, sizeof *L);
    snprintf(L->ph.prefix, sizeof L->ph.prefix, "c%d_", i);
    struct ptx_reg gx = ptx_reg(k, PTX_B32), total = ptx_reg(k, PTX_B32);
    struct ptx_reg done = ptx_reg(k, PTX_PRED), gy = total;
    k->phase = &L->ph;
    ptx_ld_param(k, "u32", gx, "p_gx");
    ptx_ld_param(k, "u32", total, "p_gy");
    if (dims == 3) {
        gy = ptx_reg(k, PTX_B32), L->ph.nctaid_z = ptx_reg(k, PTX_B32);
        ptx_ins(k, "mov.u32 %s, %s", gy.s, total.s);
        ptx_ld_param(k, "u32", L->ph.nctaid_z, "p_gz");
    }
    k->phase = NULL;
    L->v = ptx_special(k, "%ctaid.x"), L->step = ptx_special(k, "%nctaid.x");
    L->top = ptx_label(k), L->end = ptx_label(k);
    ptx_ins(k, "mul.lo.u32 %s, %s, %s", total.s, total.s, gx.s);
    if (dims == 3)
        ptx_ins(k, "mul.lo.u32 %s, %s, %s", total.s, total.s, L->ph.nctaid_z.s);
    L->ph.ctaid[0] = ptx_reg(k, PTX_B32), L->ph.ctaid[1] = ptx_reg(k, PTX_B32);
    ptx_place(k, L->top);
    ptx_ins(k, "setp.ge.u32 %s, %s, %s", done.s, L->v.s, total.s);
    ptx_ins(k, "@%s bra %s", done.s, L->end.s);
    ptx_ins(k, "rem.u32 %s, %s, %s", L->ph.ctaid[0].s, L->v.s, gx.s);
    ptx_ins(k, "div.u32 %s, %s, %s", L->ph.ctaid[1].s, L->v.s, gx.s);
    if (dims == 3) { /* y = (v / gx) % gy, z = v / (gx gy) */
        L->ph.ctaid[2] = ptx_reg(k, PTX_B32);
        ptx_ins(k, "div.u32 %s, %s, %s", L->ph.ctaid[2].s, L->ph.ctaid[1].s, gy.s);
        ptx_ins(k, "rem.u32 %s, %s, %s", L->ph.ctaid[1].s, L->ph.ctaid[1].s, gy.s);
    }
}

static void vloop_end(struct ptx_kernel *k, const struct vloop *L) {
    ptx_ins(k, "add.u32 %s, %s, %s", L->v.s, L->v.s, L->step.s);
    ptx_ins(k, "bra %s", L->top.s);
    ptx_place(k, L->end);
}

/* Attention link i, with its parameters (c<i>_...), over its virtual grid, on the first
 * KERNEL_GATHER_THREADS threads. */
static int chain_attn_link(struct ptx_kernel *k, int i, const struct kernel_chain_link *l) {
    int gather = l->attn == KERNEL_LINK_GATHER, kvh = l->attn == KERNEL_LINK_ROWS_KVH;
    struct vloop L;
    vloop_begin(k, &L, i, 3);
    L.ph.threads = KERNEL_GATHER_THREADS;
    struct ptx_reg tid = ptx_special(k, "%tid.x"), p = ptx_reg(k, PTX_PRED), skip = ptx_label(k);
    ptx_ins(k, "setp.ge.u32 %s, %s, %d", p.s, tid.s, KERNEL_GATHER_THREADS);
    ptx_ins(k, "@%s bra %s", p.s, skip.s);
    k->phase = &L.ph;
    ptx_param(k, "u32", "p_gx");
    ptx_param(k, "u32", "p_gy");
    ptx_param(k, "u32", "p_gz");
    attn_row_params(k, gather);
    int rc = l->n_head > 0 && l->k_in % l->n_head == 0
                 ? attn_row_emit(k, l->n_head, l->k_in / l->n_head, gather, kvh)
                 : -1;
    k->phase = NULL;
    ptx_place(k, skip);
    ptx_ins(k, "bar.sync 0");
    vloop_end(k, &L);
    return rc;
}

/* Link i, with its parameters (c<i>_...), over its virtual grid. */
static int chain_link(struct ptx_kernel *k, int i, int tiles, const struct kernel_chain_link *l) {
    if (l->attn)
        return chain_attn_link(k, i, l);
    struct vloop L;
    vloop_begin(k, &L, i, 2);
    k->phase = &L.ph; /* the grid's parameters, then gemv_tc's (gemv_params) */
    ptx_param(k, "u32", "p_gx");
    ptx_param(k, "u32", "p_gy");
    int rc = gemv_tc_emit(k, k->sm, l->k_in, l->flags, tiles, kernel_gemv_tc_cols(l->flags));
    k->phase = NULL;
    ptx_ins(k, "bar.sync 0"); /* the shared arrays, again for the next virtual CTA */
    vloop_end(k, &L);
    return rc;
}

/* Link i's weight rows for this CTA's virtual CTAs into L2 (file comment); an attention link
 * reads no weights. */
static void chain_prefetch(struct ptx_kernel *k, int i, const struct kernel_chain_link *l) {
    if (l->attn)
        return;
    int cols = kernel_gemv_tc_cols(l->flags), qkv = l->flags & KERNEL_GEMV_QKV;
    int lines = cols * l->k_in * 2 / 128; /* a virtual CTA's, when its rows all exist */
    struct vloop L;
    vloop_begin(k, &L, i, 2);
    struct ptx_reg n = ptx_reg(k, PTX_B32), tid = ptx_special(k, "%tid.x"), x = ptx_reg(k, PTX_B32);
    struct ptx_reg end_line = ptx_reg(k, PTX_B32), line = ptx_reg(k, PTX_B32);
    struct ptx_reg p = ptx_reg(k, PTX_PRED), a = ptx_reg(k, PTX_B64), next = ptx_label(k);
    ptx_ins(k, "mov.u32 %s, %s", x.s, L.ph.ctaid[0].s);
    k->phase = &L.ph;
    ptx_ld_param(k, "u32", n, "p_n");
    struct ptx_reg base = ptx_ld_ptr(k, "p_w");
    if (qkv) { /* segment x / (K / C): q's, k's or v's weights */
        struct gemv_qkv q;
        gemv_qkv_segment(k, &q, x, l->k_in / cols);
        gemv_qkv_select(k, &q, base, "p_wk", "p_wv", 0);
    }
    k->phase = NULL;
    /* lines [x C K / 64, min(x C + C, N) K / 64) of the matrix */
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", x.s, x.s, cols);
    ptx_ins(k, "add.u32 %s, %s, %d", end_line.s, x.s, cols);
    ptx_ins(k, "min.u32 %s, %s, %s", end_line.s, end_line.s, n.s);
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", end_line.s, end_line.s, l->k_in / 64);
    ptx_ins(k, "mad.lo.u32 %s, %s, %d, %s", line.s, x.s, l->k_in / 64, tid.s);
    for (int j = 0; j < lines; j += KERNEL_GEMV_THREADS) {
        ptx_ins(k, "setp.lt.u32 %s, %s, %s", p.s, line.s, end_line.s);
        ptx_ins(k, "@!%s bra %s", p.s, next.s);
        ptx_ins(k, "mad.wide.u32 %s, %s, 128, %s", a.s, line.s, base.s);
        ptx_ins(k, "prefetch.global.L2 [%s]", a.s);
        ptx_ins(k, "add.u32 %s, %s, %d", line.s, line.s, KERNEL_GEMV_THREADS);
    }
    ptx_place(k, next);
    vloop_end(k, &L);
}

char *gen_gemv_chain(int sm, int tiles, int n_links, const struct kernel_chain_link *links) {
    char name[128];
    int at = snprintf(name, sizeof name, "gemv_chain_n%d", tiles);
    for (int i = 0; i < n_links && at < (int)sizeof name; i++) {
        const struct kernel_chain_link *l = &links[i];
        at += l->attn ? snprintf(name + at, sizeof name - (size_t)at, "_k%da%dh%d", l->k_in,
                                 l->attn, l->n_head)
                      : snprintf(name + at, sizeof name - (size_t)at, "_k%df%d", l->k_in, l->flags);
    }
    if (n_links < 1 || n_links > KERNEL_CHAIN_MAX_LINKS || at >= (int)sizeof name)
        return NULL;
    struct ptx_kernel k;
    ptx_begin(&k, name, sm);
    /* two CTAs an SM where the registers allow it without spilling (a block of K <= 512; the
     * projections' chains fit anyway): the backend launches one an SM, so the next chain,
     * launched early, finds room beside this one and its first weights go to L2 meanwhile */
    int attn = 0;
    for (int i = 0; i < n_links; i++)
        attn |= links[i].attn;
    if (attn && links[0].k_in <= 512)
        ptx_occupancy(&k, KERNEL_GEMV_THREADS, 2);
    ptx_param(&k, "u64", "p_counter");
    chain_prefetch(&k, 0, &links[0]); /* weights only, while the kernel before may still run */
    ptx_grid_dep_wait(&k);            /* once, before the first link reads anything */
    struct ptx_reg counter = ptx_ld_ptr(&k, "p_counter");
    for (int i = 0; i < n_links; i++) {
        if (i) {
            chain_prefetch(&k, i, &links[i]);
            ptx_grid_sync(&k, counter, i - 1);
        }
        if (chain_link(&k, i, tiles, &links[i])) {
            ptx_discard(&k);
            return NULL;
        }
    }
    /* The counter back to 0 for the next launch: each CTA arrives once more, and the last to
     * arrive (every CTA past its last barrier's poll) stores the 0. */
    struct ptx_reg tid = ptx_special(&k, "%tid.x"), last = ptx_special(&k, "%nctaid.x");
    struct ptx_reg old = ptx_reg(&k, PTX_B32), p = ptx_reg(&k, PTX_PRED);
    ptx_ins(&k, "mul.lo.u32 %s, %s, %d", last.s, last.s, n_links);
    ptx_ins(&k, "sub.u32 %s, %s, 1", last.s, last.s);
    ptx_ins(&k, "setp.eq.u32 %s, %s, 0", p.s, tid.s);
    ptx_ins(&k, "@%s atom.relaxed.gpu.global.add.u32 %s, [%s], 1", p.s, old.s, counter.s);
    ptx_ins(&k, "setp.eq.and.u32 %s, %s, %s, %s", p.s, old.s, last.s, p.s);
    ptx_ins(&k, "@%s st.relaxed.gpu.global.u32 [%s], 0", p.s, counter.s);
    return ptx_end(&k);
}
