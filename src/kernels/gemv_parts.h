/* gemv_parts.h — what gemv_f16 and gemv_tc (a decoder step's projections on CUDA cores and on
 * tensor cores) share: a row's layer-norm statistics with gen_layernorm's bits, and the q/k/v
 * segment a CTA of a KERNEL_GEMV_QKV launch works on. */
#ifndef WC_GEMV_PARTS_H
#define WC_GEMV_PARTS_H

#include "kernels/kernels.h"
#include "kernels/ptx.h"

#define GEMV_LN_VWARPS  (KERNEL_LN_THREADS / 32) /* gen_layernorm's warps */
#define GEMV_NORM_MAX_K 2048                     /* a row's values a lane holds: K / 32 <= 64 */

/* Checks flags for K (kernels.h: bias, GELU or accumulate, the norm where K fits it, q/k/v with
 * the norm alone and segments of whole CTAs of `cols` columns), then begins kernel `name` with
 * the parameters every gemv form takes, in gen_gemv_f16's order; -1 (nothing begun) for flags
 * not made. */
int gemv_begin(struct ptx_kernel *k, const char *name, int sm, int k_in, int flags, int cols);
/* gemv_begin's two halves, for a body that may be a phase (ptx.h): 0 if the flags are made for
 * K; the parameters. */
int gemv_check(int k_in, int flags, int cols);
void gemv_params(struct ptx_kernel *k, int flags);

/* A row as one warp holds it for its layer norm: lane l stands for gen_layernorm's threads
 * l + 32 j (j < 4), x[j][i] its value 32 j + KERNEL_LN_THREADS i + l (i < per = K / 128). */
struct gemv_norm_row {
    int per;
    struct ptx_reg x[GEMV_LN_VWARPS][GEMV_NORM_MAX_K / KERNEL_LN_THREADS];
    struct ptx_reg mean, inv;
};

/* Loads the row of k_in values (src: the global address of value `lane`) where ok, zeros
 * elsewhere; every load is issued before any use. */
void gemv_norm_load(struct ptx_kernel *k, struct gemv_norm_row *nr, struct ptx_reg src,
                    struct ptx_reg ok, int k_in);
/* mean and inv = 1 / sqrt(var + 1e-5) with gen_layernorm's instructions in its order: each
 * virtual thread sums its values in k order, each virtual warp by butterfly, then the four
 * warps' sums in order; x becomes x - mean. gen_layernorm then gives (x - mean) * inv, then
 * that * g + b (mul.f32, fma.rn.f32): whoever applies the norm issues those two. */
void gemv_norm_stats(struct ptx_kernel *k, struct gemv_norm_row *nr, int k_in);

/* KERNEL_GEMV_QKV: a CTA's segment (0 q, 1 k, 2 v) of the grid's x, ctas_per_seg CTAs each;
 * cta becomes the CTA's index within its segment. */
struct gemv_qkv {
    struct ptx_reg seg, is_k, is_v;
};
void gemv_qkv_segment(struct ptx_kernel *k, struct gemv_qkv *q, struct ptx_reg cta,
                      int ctas_per_seg);
/* dst (holding the q segment's pointer, p_q's) = the segment's: p_q's, p_k's or p_v's; raw:
 * the values as passed (0 for none), else converted to global addresses. */
void gemv_qkv_select(struct ptx_kernel *k, const struct gemv_qkv *q, struct ptx_reg dst,
                     const char *p_k, const char *p_v, int raw);

/* out and b (holding q's pointers) = the segment's output (q's, k's or v's cache) and bias;
 * b_ok = its bias is given (a NULL tested as passed) and ok. */
void gemv_qkv_outputs(struct ptx_kernel *k, const struct gemv_qkv *q, struct ptx_reg out,
                      struct ptx_reg b, struct ptx_reg b_ok, struct ptx_reg ok);

/* gen_gemv_tc's body (its kernels.h contract) into k, begun by the caller: a kernel of its own,
 * or a phase of a chain (ptx.h; gemv_chain.c). -1, nothing written, for shapes not made. */
int gemv_tc_emit(struct ptx_kernel *k, int sm, int k_in, int flags, int nt, int cols);

#endif /* WC_GEMV_PARTS_H */
