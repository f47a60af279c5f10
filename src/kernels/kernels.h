/*
 * kernels.h — the CUDA backend's PTX generators. Each builds one kernel, specialised to shape
 * constants (the model's widths), for one target architecture, and returns the PTX text
 * (malloc'd; NULL when out of memory). kernels_for_model() lists every kernel a model needs.
 *
 * Launch shapes are part of each kernel's contract, stated next to its generator.
 */
#ifndef WC_KERNELS_H
#define WC_KERNELS_H

#include "model/model_file.h" /* struct wc_hparams */

#define KERNEL_LN_THREADS 128 /* layernorm and embed: one CTA of 128 threads per row */
#define KERNEL_EW_THREADS 256 /* elementwise kernels: 256 threads per CTA, one element each */

/* layernorm_c<C>(out, in, g, b, n_rows): grid n_rows x 128 threads; out may equal in.
 * out[r][:] = (in[r][:] - mean) / sqrt(var + 1e-5) * g + b; C a multiple of 128. */
char *gen_layernorm(int sm, int c);

/* bias_gelu_n<N>(x, b, total): x[i] = gelu(x[i] + b[i % N]) in place, exact-erf GELU;
 * grid ceil(total / 256) x 256 threads. */
char *gen_bias_gelu(int sm, int n);

/* f32_to_f16(out, in, n): out[i] = (half)in[i], round to nearest; grid ceil(n / 256) x 256. */
char *gen_f32_to_f16(int sm);

/* embed_c<C>(out, tokens, tok_emb, pos_emb, pos0): out[t][:] = tok_emb[tokens[t]][:] (f16) +
 * pos_emb[pos0 + t][:] (f32); grid t_len x 128 threads; C a multiple of 128. */
char *gen_embed(int sm, int c);

/* One generated kernel of a model. */
struct kernel_src {
    char name[64]; /* the .entry name, also the file name in `whisper-c ptx` */
    char *ptx;     /* owned */
};

/* Every kernel a model with these hparams needs, for sm_<sm>. Returns the count and *out
 * (malloc'd, free with kernels_free), or -1 when out of memory. */
int kernels_for_model(const struct wc_hparams *hp, int sm, struct kernel_src **out);
void kernels_free(struct kernel_src *k, int n);

#endif /* WC_KERNELS_H */
