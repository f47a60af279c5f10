/*
 * chain_cuda.c — backend.h's step_chain on the GPU: a decoder step's ops that follow one
 * another (projections, and the attentions between them) as one cooperative gemv_chain kernel
 * (src/kernels/gemv_chain.c), a grid barrier where a kernel boundary was. Each output keeps
 * the bits of the launch it replaces (gemv_tc, attn_gather, attn_rows), so a chain is a choice
 * of launches, not of results (WHISPERC_CUDA_CHAIN=1: projections; =block: a whole block).
 */
#include <stdint.h>
#include <stdio.h>

#include "gpu/cuda_internal.h"
#include "kernels/kernels.h"
#include "libwhisperc.h"

#define CHAIN_ROWS 8 /* one row tile: gemv_chain_n1 */

/* A link's byte in the kernel cache's key: gemv_tc's flags (5 bits), the attention kind
 * (KERNEL_LINK_*, 2 bits), and whether the link's K is 4 K (fc2). */
#define CODE_ATTN_SHIFT 5
#define CODE_WIDE       128

struct kernel_chain_link cuda_chain_link_of(int k_in, int n_head, int code) {
    int attn = code >> CODE_ATTN_SHIFT & 3;
    return (struct kernel_chain_link){.k_in = code & CODE_WIDE ? 4 * k_in : k_in,
                                      .flags = attn ? 0 : code & 31,
                                      .attn = attn,
                                      .n_head = attn ? n_head : 0};
}

/* gemv_tc's flags for a projection link; -1 where the link is not one gemv_tc does alone */
static int link_flags(const struct wc_chain_link *l) {
    if (l->dst_row) /* norm_qkv: the norm and nothing else, q's and v's bias are passed */
        return l->g && l->lb && !l->accumulate && l->act == WC_ACT_NONE && !l->ld_out
                   ? KERNEL_GEMV_QKV | KERNEL_GEMV_NORM
                   : -1;
    return (l->b[0] ? KERNEL_GEMV_BIAS : 0) | (l->act == WC_ACT_GELU ? KERNEL_GEMV_GELU : 0) |
           (l->accumulate ? KERNEL_GEMV_ACCUMULATE : 0) | (l->g ? KERNEL_GEMV_NORM : 0);
}

/* The kernel's kind for an attention link: what attention_gather / attention_rows would launch
 * for it, where that is a kernel with a phase form (attn_gather, attn_rows[_kvh]; not
 * attn_rows_tc); 0 where the link declines. */
static int attn_kind(const struct cuda_stream *cs, const struct wc_chain_link *l, int k_in,
                     int n_rows) {
    const struct wc_chain_attn *a = &l->attn;
    int d = a->n_head > 0 && a->c == k_in && k_in % a->n_head == 0 ? k_in / a->n_head : 0;
    if (!d || d % 32 || d > 128 || !l->out || !l->in || !a->k || !a->v)
        return 0;
    if (l->kind == WC_LINK_GATHER)
        return a->slots && a->n_kv >= 1 && a->n_kv <= a->ld_slots &&
                       (uint64_t)n_rows * (uint64_t)a->ld_slots <= UINT32_MAX
                   ? KERNEL_LINK_GATHER
                   : 0;
    int half = a->kv_dtype == WC_F16, esz = half ? 2 : 4;
    if (l->kind != WC_LINK_ROWS || a->s_len < 1 || a->ld_kv < k_in ||
        (uint64_t)a->s_len * (uint64_t)a->ld_kv * (uint64_t)esz > UINT32_MAX)
        return 0;
    if (cuda_rows_use_tc(cs->m, a->kv_dtype, d, a->ld_kv, a->lane_stride, a->k, a->v))
        return 0; /* the op would take attn_rows_tc: other bits */
    return half ? KERNEL_LINK_ROWS_KVH : KERNEL_LINK_ROWS;
}

/* Whether every link checks out for one kernel of K = links[0]'s (1), declines (0) or failed
 * the stream (-1); the kernel cache's (b, c) for it. */
static int chain_shape(struct wc_stream *s, const struct wc_chain_link *links, int n_links,
                       int n_rows, int *kb, uint64_t *kc) {
    const struct cuda_stream *cs = cuda_stream(s);
    int k_in = links[0].kind ? links[0].attn.c : links[0].w[0]->cols, n_head = 0;
    *kb = n_links, *kc = 0;
    for (int i = 0; i < n_links; i++) {
        const struct wc_chain_link *l = &links[i];
        if (l->kind) {
            int kind = attn_kind(cs, l, k_in, n_rows);
            if (!kind || (n_head && l->attn.n_head != n_head))
                return 0;
            n_head = l->attn.n_head;
            *kc |= (uint64_t)(kind << CODE_ATTN_SHIFT) << (8 * i);
            continue;
        }
        int flags = link_flags(l), n_w = l->dst_row ? 3 : 1;
        if (flags < 0 || (l->g != NULL) != (l->lb != NULL))
            return 0;
        for (int j = 0; j < n_w; j++) {
            int ld = l->ld_out ? l->ld_out : l->w[j]->rows;
            if (!cuda_gemv_args_ok(s, "step_chain", ld, l->w[j], n_rows, l->act, l->accumulate))
                return -1;
            int tc = cuda_use_gemv_tc(s, l->w[j], l->in, l->g, l->lb);
            if (tc <= 0)
                return tc;
        }
        int cols = l->w[0]->cols;
        if ((cols != k_in && cols != 4 * k_in) ||
            ((flags & KERNEL_GEMV_NORM) && !kernel_gemv_norm_fits(cols)) ||
            (l->dst_row &&
             (l->w[0]->rows != cols || l->w[1]->rows != cols || l->w[2]->rows != cols ||
              l->w[1]->cols != cols || l->w[2]->cols != cols)))
            return 0;
        *kc |= (uint64_t)(flags | (cols != k_in ? CODE_WIDE : 0)) << (8 * i);
    }
    *kb |= n_head << 4;
    return 1;
}

/* A chain's parameter values: the counter, then each link's grid and its kernel's parameters
 * (kernels.h), pointed to by args. */
struct chain_args {
    CUdeviceptr counter, ptrs[KERNEL_CHAIN_MAX_LINKS][13];
    unsigned u32s[KERNEL_CHAIN_MAX_LINKS][8];
    uint64_t stride[KERNEL_CHAIN_MAX_LINKS];
    void *args[1 + KERNEL_CHAIN_MAX_LINKS * 18];
    int n;
};

/* Link i, a projection: gemv_tc's parameters over its grid; returns its virtual CTAs. */
static unsigned gemv_link_args(struct chain_args *ca, int i, const struct wc_chain_link *l,
                               unsigned n_rows) {
    int flags = link_flags(l), cols = kernel_gemv_tc_cols(flags), qkv = l->dst_row != NULL;
    CUdeviceptr *p = ca->ptrs[i];
    unsigned *u = ca->u32s[i];
    u[0] = (qkv ? 3 : 1) * ceil_div((size_t)l->w[0]->rows, (size_t)cols); /* grid x */
    u[1] = 1;                                                             /* grid y */
    u[2] = (unsigned)(l->ld_out ? l->ld_out : l->w[0]->rows);
    u[3] = (unsigned)l->w[0]->rows, u[4] = n_rows;
    p[0] = dptr(l->out), p[1] = dptr(l->in), p[2] = dptr(l->w[0]->data), p[3] = dptr(l->b[0]);
    p[4] = dptr(l->g), p[5] = dptr(l->lb);
    void *mine[] = {&u[0], &u[1], &p[0], &u[2], &p[1], &p[2], &p[3], &u[3], &u[4]};
    for (int j = 0; j < 9; j++)
        ca->args[ca->n++] = mine[j];
    if (flags & KERNEL_GEMV_NORM) {
        ca->args[ca->n++] = &p[4];
        ca->args[ca->n++] = &p[5];
    }
    if (qkv) { /* norm_qkv's: wk, wv, bk, bv, k_dst, v_dst, dst_row */
        p[6] = dptr(l->w[1]->data), p[7] = dptr(l->w[2]->data), p[8] = dptr(l->b[1]);
        p[9] = dptr(l->b[2]), p[10] = dptr(l->k_dst), p[11] = dptr(l->v_dst);
        p[12] = dptr(l->dst_row);
        for (int j = 6; j < 13; j++)
            ca->args[ca->n++] = &p[j];
    }
    return u[0];
}

/* Link i, an attention: attn_gather's or attn_rows' parameters over its grid (rows, heads,
 * splits), the splits' records and counters in the stream's scratch, which every attention
 * link of the chain shares: a link's last CTAs have joined its records and zeroed its
 * counters before the grid barrier after it. Returns its virtual CTAs. */
static unsigned attn_link_args(struct chain_args *ca, int i, const struct wc_chain_link *l,
                               unsigned n_rows, CUdeviceptr part, CUdeviceptr count) {
    const struct wc_chain_attn *a = &l->attn;
    int gather = l->kind == WC_LINK_GATHER;
    CUdeviceptr *p = ca->ptrs[i];
    unsigned *u = ca->u32s[i], keys = (unsigned)(gather ? a->n_kv : a->s_len);
    u[0] = n_rows, u[1] = (unsigned)a->n_head;
    u[2] = (unsigned)ceil_div(keys, KERNEL_ATTN_SPLIT);
    p[0] = dptr(l->out), p[1] = dptr(l->in), p[2] = dptr(a->k), p[3] = dptr(a->v);
    p[5] = u[2] > 1 ? part : 0, p[6] = u[2] > 1 ? count : 0;
    void **args = ca->args + ca->n;
    args[0] = &u[0], args[1] = &u[1], args[2] = &u[2];
    args[3] = &p[0], args[4] = &p[1], args[5] = &p[2], args[6] = &p[3];
    if (gather) { /* slots, ld_slots, n_kv_seq, n_seq, n_kv */
        p[4] = dptr(a->slots), p[7] = dptr(a->n_kv_seq);
        u[3] = (unsigned)a->ld_slots, u[4] = n_rows, u[5] = keys;
        args[7] = &p[4], args[8] = &u[3], args[9] = &p[7], args[10] = &u[4], args[11] = &u[5];
    } else { /* ld_kv, lane_stride, lane_of_row, n_rows, s_len */
        ca->stride[i] = a->lane_stride, p[4] = dptr(a->lane_of_row);
        u[3] = (unsigned)a->ld_kv, u[4] = n_rows, u[5] = keys;
        args[7] = &u[3], args[8] = &ca->stride[i], args[9] = &p[4], args[10] = &u[4];
        args[11] = &u[5];
    }
    args[12] = &p[5], args[13] = &p[6];
    ca->n += 14;
    return u[0] * u[1] * u[2];
}

int cuda_step_chain(struct wc_stream *s, const struct wc_chain_link *links, int n_links,
                    int n_rows) {
    struct cuda_stream *cs = cuda_stream(s);
    if (cuda_op_begin(s) || n_rows <= 0)
        return 0;
    if (!cs->chain || n_rows > CHAIN_ROWS || n_links < 1 || n_links > KERNEL_CHAIN_MAX_LINKS)
        return 1;
    for (int i = 0; i < n_links; i++)
        if (links[i].kind && !cs->chain_blocks) /* attention links: WHISPERC_CUDA_CHAIN=block */
            return 1;
    int kb;
    uint64_t kc;
    int ok = chain_shape(s, links, n_links, n_rows, &kb, &kc);
    if (ok <= 0)
        return ok < 0 ? 0 : 1;
    int k_in = links[0].kind ? links[0].attn.c : links[0].w[0]->cols, n_head = kb >> 4;
    const struct cuda_kernel *k = NULL;
    char err[sizeof cs->chain_why - 8];
    if (cuda_kernel_find(cs->m, CK_CHAIN, k_in, kb, kc, &k, err, sizeof err)) {
        if (n_head) { /* the blocks' ops as before, their projections still chained */
            cs->chain_blocks = false;
            snprintf(cs->blocks_why, sizeof cs->blocks_why, "%s", err);
        } else { /* the links one by one do the same work */
            cs->chain = false;
            snprintf(cs->chain_why, sizeof cs->chain_why, "off: %s", err);
        }
        return 1;
    }
    struct chain_args ca = {.counter = cuda_scratch_zeroed(s, CUDA_SCRATCH_CHAIN, 4)};
    if (!ca.counter) /* each launch leaves it 0 */
        return 0;
    CUdeviceptr part = 0, count = 0;
    if (n_head) { /* the attention links' split records and counters, sized for the largest */
        size_t zmax = 1, d = (size_t)k_in / (size_t)n_head;
        for (int i = 0; i < n_links; i++) { /* as attention_split sizes them */
            const struct wc_chain_attn *a = &links[i].attn;
            int keys = links[i].kind == WC_LINK_GATHER ? a->ld_slots : a->s_len;
            size_t z = ceil_div((size_t)keys, KERNEL_ATTN_SPLIT);
            zmax = links[i].kind && z > zmax ? z : zmax;
        }
        size_t heads = (size_t)n_rows * (size_t)n_head;
        part = cuda_scratch(s, CUDA_SCRATCH_ATTN, heads * zmax * (d + 2) * 4);
        count = cuda_scratch_zeroed(s, CUDA_SCRATCH_COUNT, heads * 4);
        if (!part || !count)
            return 0;
    }
    ca.args[ca.n++] = &ca.counter;
    unsigned most = 1;
    for (int i = 0; i < n_links; i++) {
        unsigned v = links[i].kind
                         ? attn_link_args(&ca, i, &links[i], (unsigned)n_rows, part, count)
                         : gemv_link_args(&ca, i, &links[i], (unsigned)n_rows);
        most = v > most ? v : most;
    }
    /* no more CTAs than the longest link has virtual CTAs (each CTA takes every nctaid-th), nor
     * than one an SM where two fit: the next chain, launched early, then finds room beside
     * this one and loads its first weights while this one runs */
    unsigned most_ctas = (unsigned)k->coop_ctas, n_sm = (unsigned)cs->m->n_sm;
    if (n_sm > 0 && most_ctas >= 2 * n_sm)
        most_ctas = n_sm;
    if (cs->m->chain_ctas > 0 && (unsigned)cs->m->chain_ctas < most_ctas)
        most_ctas = (unsigned)cs->m->chain_ctas;
    unsigned grid = most_ctas < most ? most_ctas : most;
    return cuda_launch_coop(s, k, grid, KERNEL_GEMV_THREADS, ca.args);
}
