/* kernels.c — the list of kernels a model needs (kernels.h). */
#include "kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KERNELS 80 /* a model's distinct kernels (62 for every official size today) */

/* Appends ptx to list[0..*n) unless a kernel of its name is there; -1 (ptx freed) when it is
 * NULL, unnamed, or the list is full. */
static int add(struct kernel_src *list, int *n, char *ptx) {
    if (!ptx)
        return -1;
    /* the name is the .entry's: ".visible .entry NAME(" */
    const char *e = strstr(ptx, ".entry ");
    const char *end = e ? strchr(e, '(') : NULL;
    if (!e || !end || end - e - 7 >= (long)sizeof list[0].name) {
        free(ptx);
        return -1;
    }
    memcpy(list[*n].name, e + 7, (size_t)(end - e - 7));
    list[*n].name[end - e - 7] = '\0';
    for (int i = 0; i < *n; i++) /* same shape twice (e.g. n_state == 4 * something) */
        if (strcmp(list[i].name, list[*n].name) == 0) {
            free(ptx);
            return 0;
        }
    if (*n >= MAX_KERNELS) {
        free(ptx);
        return -1;
    }
    list[(*n)++].ptx = ptx;
    return 0;
}

int kernels_for_model(const struct wc_hparams *hp, int sm, struct kernel_src **out) {
    struct kernel_src *list = calloc(MAX_KERNELS, sizeof *list);
    int n = 0, bad = !list;
    int ca = hp->n_audio_state, ct = hp->n_text_state;
    int ha = hp->n_audio_head, ht = hp->n_text_head;
    const int B = KERNEL_EPI_BIAS, G = KERNEL_EPI_GELU, A = KERNEL_EPI_ADD;
    const int KV = KERNEL_TC_KV_HALF, OH = KERNEL_TC_OUT_HALF;
    if (!bad)
        bad |= add(list, &n, gen_layernorm(sm, ca, 0)) | add(list, &n, gen_layernorm(sm, ct, 0)) |
               add(list, &n, gen_layernorm(sm, ca, 1)) | add(list, &n, gen_bias_gelu(sm, ca)) |
               add(list, &n, gen_bias_gelu(sm, 4 * ca)) | add(list, &n, gen_bias_gelu(sm, 4 * ct)) |
               add(list, &n, gen_f32_to_f16(sm)) | add(list, &n, gen_embed(sm, ct)) |
               add(list, &n, gen_rows_scatter(sm, ct)) | add(list, &n, gen_transpose(sm));
    /* GEMM epilogues: q/v/out projections and fc2 (bias; bias + residual when the GEMM does
     * not accumulate itself), fc1 and conv1 (bias + GELU), conv2 (bias + GELU + positions);
     * the encoder's layer norms and fc1 epilogue in fp16 too (norm_qkv, norm_mlp) */
    const int H = KERNEL_EPI_HALF;
    if (!bad)
        bad |= add(list, &n, gen_bias_act(sm, ca, B)) | add(list, &n, gen_bias_act(sm, ct, B)) |
               add(list, &n, gen_bias_act(sm, ca, B | A)) |
               add(list, &n, gen_bias_act(sm, ct, B | A)) |
               add(list, &n, gen_bias_act(sm, ca, B | G)) |
               add(list, &n, gen_bias_act(sm, 4 * ca, B | G)) |
               add(list, &n, gen_bias_act(sm, 4 * ca, B | G | H)) |
               add(list, &n, gen_bias_act(sm, 4 * ct, B | G)) |
               add(list, &n, gen_bias_act(sm, ca, B | G | A)) |
               add(list, &n, gen_bias_act(sm, ca, B | H)); /* norm_self_attention's v */
    /* conv stems; encoder self-attention, decoder self (causal) and cross attention, the
     * decoder's gathered self-attention and alignment-head scores */
    if (!bad)
        bad |= add(list, &n, gen_im2col(sm, hp->n_mels, 1)) | add(list, &n, gen_im2col(sm, ca, 2)) |
               add(list, &n, gen_attention(sm, ha, ca / ha, 0)) |
               add(list, &n, gen_attention(sm, ht, ct / ht, 1)) |
               add(list, &n, gen_attention(sm, ht, ct / ht, 0)) |
               add(list, &n, gen_attention_tc(sm, ha, ca / ha, 0)) |
               add(list, &n, gen_attention_tc(sm, ha, ca / ha, KV)) |      /* attention_windows' */
               add(list, &n, gen_attention_tc(sm, ha, ca / ha, KV | OH)) | /* the fused block's */
               add(list, &n, gen_attention_tc(sm, ht, ct / ht, 0)) |
               add(list, &n, gen_attention_tc(sm, ht, ct / ht, KV)) |
               add(list, &n, gen_attention_gather(sm, ht, ct / ht)) |
               add(list, &n, gen_attention_scores(sm, ht, ct / ht, 0)) |
               add(list, &n, gen_attention_scores(sm, ht, ct / ht, 1)) |
               add(list, &n, gen_logits_part(sm, hp->n_vocab)) |
               add(list, &n, gen_logits_pick(sm, hp->n_vocab)) |
               /* beam search, the CLI's 5 beams */
               add(list, &n, gen_logits_topk_part(sm, hp->n_vocab, 6)) |
               add(list, &n, gen_logits_topk_pick(sm, hp->n_vocab, 6)) |
               /* temperature fallbacks' samples */
               add(list, &n, gen_logits_sample_part(sm, hp->n_vocab)) |
               add(list, &n, gen_logits_sample_pick(sm, hp->n_vocab));
    /* decoder steps (<= 64 rows): projections (none for k and the logits, bias for q/v, bias +
     * residual for out/fc2, bias + GELU for fc1), each also with its layer norm fused (all but
     * out/fc2), the three self-attention projections as one (norm_qkv), and cross-attention
     * per lane (its K/V in f32 or, the batch decoder's, f16: also a prompt's on tensor cores) */
    const int GB = KERNEL_GEMV_BIAS, GG = KERNEL_GEMV_GELU, GA = KERNEL_GEMV_ACCUMULATE;
    const int GN = KERNEL_GEMV_NORM, GQ = KERNEL_GEMV_QKV;
    if (!bad)
        bad |= add(list, &n, gen_gemv_f16(sm, ct, 0)) | add(list, &n, gen_gemv_f16(sm, ct, GB)) |
               add(list, &n, gen_gemv_f16(sm, ct, GB | GA)) |
               add(list, &n, gen_gemv_f16(sm, ct, GB | GG)) |
               add(list, &n, gen_gemv_f16(sm, ct, GN)) |
               add(list, &n, gen_gemv_f16(sm, ct, GN | GB)) |
               add(list, &n, gen_gemv_f16(sm, ct, GN | GB | GG)) |
               add(list, &n, gen_gemv_f16(sm, ct, GN | GQ)) |
               add(list, &n, gen_gemv_f16(sm, 4 * ct, GB | GA)) |
               add(list, &n, gen_attention_rows(sm, ht, ct / ht, 0)) |
               add(list, &n, gen_attention_rows(sm, ht, ct / ht, 1)) |
               (kernel_rows_tc_fits(sm, ct / ht)
                    ? add(list, &n, gen_attention_rows_tc(sm, ht, ct / ht))
                    : 0);
    /* the same projections on tensor cores (WHISPERC_CUDA_GEMV=tc), 1 and 4 row tiles a CTA;
     * the hot ones (q/k/v, out, fc1, fc2) with 2 too */
    const int tc_flags[][3] = {{1, 0, 0},       {1, GB, 0},      {1, GB | GG, 0},
                               {1, GB | GA, 1}, {4, GB | GA, 1}, {1, GN, 0},
                               {1, GN | GB, 0}, {1, GN | GQ, 1}, {1, GN | GB | GG, 1}};
    for (int i = 0; !bad && kernel_gemv_tc_fits(sm, ct) && i < 9; i++)
        for (int t = 1; t <= KERNEL_GEMV_TC_TILES; t *= 2)
            if (t != 2 || tc_flags[i][2])
                bad |= add(list, &n,
                           gen_gemv_tc(sm, tc_flags[i][0] * ct, tc_flags[i][1], t,
                                       kernel_gemv_tc_cols(tc_flags[i][1])));
    /* chains of them in one cooperative launch (gemv_chain.c), one row tile: the self-attention's
     * output projection, then the norm and the cross query; the cross-attention's output
     * projection, the MLP (and the next layer's norm and q/k/v); a whole block (its norm and
     * q/k/v, attention, output projection, the cross query and attention over f16 K/V, its
     * output projection, the MLP) */
    const struct kernel_chain_link block[] = {
        {ct, GN | GQ, 0, 0},
        {.k_in = ct, .attn = KERNEL_LINK_GATHER, .n_head = ht},
        {ct, GB | GA, 0, 0},
        {ct, GN | GB, 0, 0},
        {.k_in = ct, .attn = KERNEL_LINK_ROWS_KVH, .n_head = ht},
        {ct, GB | GA, 0, 0},
        {ct, GN | GB | GG, 0, 0},
        {4 * ct, GB | GA, 0, 0},
        {ct, GN | GQ, 0, 0}};
    if (!bad && kernel_gemv_tc_fits(sm, ct))
        bad |= add(list, &n, gen_gemv_chain(sm, 1, 2, block + 2)) |
               add(list, &n, gen_gemv_chain(sm, 1, 3, block + 5)) |
               add(list, &n, gen_gemv_chain(sm, 1, 4, block + 5)) |
               add(list, &n, gen_gemv_chain(sm, 1, 8, block));
    if (bad) {
        kernels_free(list, n);
        *out = NULL;
        return -1;
    }
    *out = list;
    return n;
}

void kernels_free(struct kernel_src *k, int n) {
    for (int i = 0; k && i < n; i++)
        free(k[i].ptx);
    free(k);
}
