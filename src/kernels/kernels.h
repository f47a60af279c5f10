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
 * out[r][:] = (in[r][:] - mean) / sqrt(var + 1e-5) * g + b; C a multiple of 128.
 * half_out: layernorm_c<C>_h writes out as fp16 (rounded to nearest even; out must not overlap
 * in), the f32 kernel's values rounded: a GEMM's operand. */
char *gen_layernorm(int sm, int c, int half_out);

/* bias_gelu_n<N>(x, b, total): x[i] = gelu(x[i] + b[i % N]) in place, exact-erf GELU;
 * grid ceil(total / 256) x 256 threads. */
char *gen_bias_gelu(int sm, int n);

/* f32_to_f16(out, in, n): out[i] = (half)in[i], round to nearest; 4 elements a thread: grid
 * ceil(n / KERNEL_F16_PER_CTA) x 256. */
#define KERNEL_F16_PER_CTA  (4 * KERNEL_EW_THREADS)
/* The most elements f32_to_f16 and bias_act take: a thread's first element index, 4 x its
 * thread index in 32 bits, must not wrap for the last CTA's threads */
#define KERNEL_EW_MAX_ELEMS (0xffffffffu - KERNEL_F16_PER_CTA)
char *gen_f32_to_f16(int sm);

/* embed_c<C>(out, tokens, tok_emb, pos_emb, positions): out[t][:] = tok_emb[tokens[t]][:]
 * (f16) + pos_emb[positions[t]][:] (f32); tokens and positions: device u32 arrays;
 * grid t_len x 128 threads; C a multiple of 128. */
char *gen_embed(int sm, int c);

/* rows_scatter_c<C>(dst, src, dst_row): dst[dst_row[r]][:] = src[r][:] (f32 rows of C);
 * dst_row: device u32 array; grid n_rows x 128 threads; C a multiple of 128. */
char *gen_rows_scatter(int sm, int c);

/* transpose_f32(out, in, rows, cols): out[c][r] = in[r][c], in [rows][cols], out [cols][rows]
 * (f32; not overlapping); grid (ceil(cols / 32), ceil(rows / 32)) x 256 threads. */
char *gen_transpose(int sm);

/* ---- GEMM epilogue, im2col and attention (src/kernels/epilogue.c, im2col.c, attention*.c) ----
 * Activations are fp32 as in backend.h; GEMM operands are fp16 (cuBLAS, fp32 accumulate).
 * Kernel parameters: pointers are .u64 (device addresses), counts and indices .u32, except
 * causal_pos0, which is .s32 (pass a 4-byte int; the non-causal kernels ignore it).
 * Attention kernels take d_head 32, 64 or 128 (every Whisper size: 64); NULL otherwise. */

/* Epilogue of a GEMM, in place: x[r*ld + i] = act(x[r*ld + i] + b[i]) + add[r*n + i],
 * i < N, r < n_rows; the bias term only with KERNEL_EPI_BIAS, the add only with KERNEL_EPI_ADD.
 * bias_act_n<N>_f<flags>(x, ld, b, add, n_rows, out): grid ceil(n_rows * N / (256 * E)) x 256,
 * E = kernel_epi_per_thread(N) elements a thread (16-byte accesses where the addresses allow).
 * KERNEL_EPI_HALF: the result goes to out[r*N + i] as fp16 (rounded to nearest even; out does
 * not overlap x), x is left as it was; out is unused without it. */
#define KERNEL_EPI_BIAS 1
#define KERNEL_EPI_GELU 2
#define KERNEL_EPI_ADD  4
#define KERNEL_EPI_HALF 8
char *gen_bias_act(int sm, int n, int flags);
static inline int kernel_epi_per_thread(int n) { return n % 4 ? 1 : 4; }

/* Conv1d (k = 3, padding 1) as a GEMM: im2col_c<C_IN>_s<STRIDE>(out, in, t_out) writes
 * out[t][ci*3 + k] = (half)in[(t*stride + k - 1)][ci] as fp16, t < t_out; `in` points at row
 * 0 of a buffer with one zero row before it (backend.h conv1d); grid t_out x 128 threads. */
char *gen_im2col(int sm, int c_in, int stride);

/* Multi-head attention as backend.h's `attention` op, fp32 in/out, online softmax:
 * attn_h<H>_d<D>[_causal](out, q, k, v, ld_kv, t_len, s_len, causal_pos0), q/out rows of
 * c = H*D floats; t_len, s_len >= 1; the query-block size is KERNEL_ATTN_BQ rows:
 * grid (ceil(t_len / KERNEL_ATTN_BQ), H) x KERNEL_ATTN_THREADS. */
#define KERNEL_ATTN_BQ      64
#define KERNEL_ATTN_THREADS 128
char *gen_attention(int sm, int n_head, int d_head, int causal);

/* The non-causal attention on tensor cores (mma.sync, fp16 operands rounded in the kernel, fp32
 * accumulate and softmax; sm >= 80): attn_tc_h<H>_d<D>, same parameters (causal_pos0 unused)
 * and launch shape as attn_h<H>_d<D>, except that a grid of Z > 1 in z does Z windows at once:
 * CTA z's queries and outputs are rows z * t_len + [0, t_len), its keys and values rows
 * z * s_len + [0, s_len) (backend.h attention_windows). For the encoder and cross-attention; fp16
 * accuracy (relative ~1e-3), as openai-whisper's fp16 inference. d_head 16, 32, 64 or 128. Flags:
 * KERNEL_TC_KV_HALF: attn_tc_h<H>_d<D>_kvh reads k and v as fp16 (ld_kv in elements, a multiple
 * of 8; k, v 16-byte aligned: cp.async copies 16-byte chunks), with the bits the f32 kernel
 * gives on their widened values;
 * KERNEL_TC_OUT_HALF: ..._oh writes out as fp16 (4-byte aligned), the f32 kernel's output
 * rounded. */
#define KERNEL_TC_KV_HALF  1
#define KERNEL_TC_OUT_HALF 2
char *gen_attention_tc(int sm, int n_head, int d_head, int flags);

/* backend.h's `attention_gather`: one query per sequence, keys/values through the slot table:
 * attn_gather_h<H>_d<D>(out, q, k, v, slots, ld_slots, n_kv_seq, n_seq, n_kv, part, count),
 * n_kv >= 1; n_kv_seq: 0, or the device address of n_seq u32 key counts, one per sequence,
 * clamped to [1, n_kv] in the kernel;
 * grid (n_seq, H, Z) x KERNEL_GATHER_THREADS, Z = ceil(n_kv / KERNEL_ATTN_SPLIT): CTA z takes
 * keys [z S, (z + 1) S). Z = 1 writes out (part and count unused); Z > 1 writes, for (row g,
 * head h, split z), the record part + ((g H + h) Z + z)(D + 2) floats: {max, sum, acc[D]} (log2
 * domain, acc not yet divided), and the last split CTA of (g, h) to finish joins the records
 * into out: count holds n_seq x H u32 counters, zero before the launch and zero after it. */
#define KERNEL_GATHER_THREADS 128
#define KERNEL_ATTN_SPLIT     64
char *gen_attention_gather(int sm, int n_head, int d_head);

/* backend.h's `attention_rows`, the same kernel over contiguous keys: attn_rows_h<H>_d<D>(out,
 * q, k, v, ld_kv, lane_stride, lane_of_row, n_rows, s_len, part, count); row g reads keys j < s_len
 * at k + lane_of_row[g] * lane_stride + j * ld_kv (floats; lane_stride .u64, so lanes may lie more
 * than 4 GiB apart; lane_of_row 0: every row reads lane 0), s_len >= 1; grid (n_rows, H, ceil(s_len
 * / KERNEL_ATTN_SPLIT)) x KERNEL_GATHER_THREADS, split as gather. Also `attention` for a few
 * unmasked queries (KERNEL_ROWS_MAX_QUERIES), so that a decoder step gives the same bits alone and
 * batched. kv_half: attn_rows_h<H>_d<D>_kvh, k and v fp16 (ld_kv and lane_stride in elements), with
 * the bits the f32 kernel gives on their widened values. */
#define KERNEL_ROWS_MAX_QUERIES 8
char *gen_attention_rows(int sm, int n_head, int d_head, int kv_half);

/* attention_rows over fp16 K/V on tensor cores (sm >= 80; d_head 16, 32 or 64):
 * attn_rows_tc_h<H>_d<D>, attn_rows_kvh's parameters, records and join, except that a split is
 * KERNEL_ROWS_TC_SPLIT keys: grid (n_rows, H, ceil(s_len / KERNEL_ROWS_TC_SPLIT)) x
 * KERNEL_GATHER_THREADS; ld_kv and lane_stride multiples of 8, k and v 16-byte aligned
 * (cp.async). The query and the weights enter the tensor cores as two fp16 terms each, so the
 * result is about as exact as attn_rows' (not its bits); a row's bits do not depend on the
 * other rows. */
#define KERNEL_ROWS_TC_SPLIT 128
char *gen_attention_rows_tc(int sm, int n_head, int d_head);
static inline int kernel_rows_tc_fits(int sm, int d_head) {
    return sm >= 80 && d_head > 0 && d_head <= 64 && d_head % 16 == 0 && 256 % d_head == 0;
}

/* The splits' join (attention_combine.h), in the last split CTA:
 * out[g][h D + i] = sum_z 2^(max_z - M) acc_z[i] / sum_z 2^(max_z - M) sum_z, M = max_z max_z,
 * z in order. */

/* backend.h's `attention_scores` for one head: attn_scores_h<H>_d<D>(out, q, k, ld_k, t_len,
 * s_len, head); out[t][j] fp32; grid (t_len, ceil(s_len / 128)) x 128 threads. kv_half:
 * attn_scores_h<H>_d<D>_kvh, k fp16 (ld_k in elements), the bits the f32 kernel gives on the
 * widened keys. */
char *gen_attention_scores(int sm, int n_head, int d_head, int kv_half);

/* backend.h's `linear` over a few rows (the CUDA backend: up to KERNEL_GEMV_LAUNCH_ROWS), fp16
 * weights [N][K] as uploaded,
 * fp32 in/out: gemv_f16_k<K>_f<flags>(out, ld_out, in, w, b, n, n_rows):
 *   out[m][j] (+)= act(sum_i in[m][i] * w[j][i] + b[j]),  m < n_rows, j < n; in rows K apart,
 * out rows ld_out apart; the bias term with KERNEL_GEMV_BIAS, exact-erf GELU with
 * KERNEL_GEMV_GELU, out + sum (+ b) with KERNEL_GEMV_ACCUMULATE (not with GELU). K % 8 == 0,
 * w 16-byte aligned. A row's result does not depend on n_rows (bit for bit).
 * grid (ceil(n / KERNEL_GEMV_COLS), ceil(n_rows / KERNEL_GEMV_MAX_ROWS)) x KERNEL_GEMV_THREADS. */
#define KERNEL_GEMV_MAX_ROWS    8 /* rows a CTA takes */
/* Rows the backend sends to one launch (more: cuBLAS): a batch step's every row (the step
 * graphs' most, CUDA_GRAPH_KEYS), so that a step of 64 windows' 5 beams is one launch a
 * projection, not five of 64 rows one after another; a row's bits are the same either way. */
#define KERNEL_GEMV_LAUNCH_ROWS 1024
#define KERNEL_GEMV_THREADS     256
#define KERNEL_GEMV_COLS        32 /* output columns per CTA */
#define KERNEL_GEMV_BIAS        1
#define KERNEL_GEMV_GELU        2
#define KERNEL_GEMV_ACCUMULATE  4
/* KERNEL_GEMV_NORM: backend.h's norm_linear; two more parameters (g, lb): each input row is
 * layer-normed (gain g, bias lb over K values) before the product, with the bits gen_layernorm
 * gives it. K % KERNEL_LN_THREADS == 0, K <= 2048. */
#define KERNEL_GEMV_NORM        8
/* KERNEL_GEMV_QKV (with KERNEL_GEMV_NORM and nothing else): backend.h's norm_qkv, a decoder
 * step's q, k and v projections in one launch; n = K, grid x 3 K / KERNEL_GEMV_COLS: segment
 * 0 is `w`, `b` into out as above, segments 1 and 2 weights wk, wv and biases bk, bv (a NULL
 * bias: none) into rows dst_row[m] (K floats apart) of kd and vd. Parameters after lb: wk, wv,
 * bk, bv, kd, vd, dst_row. Each output has the bits KERNEL_GEMV_NORM (| BIAS) gives it. */
#define KERNEL_GEMV_QKV         16
char *gen_gemv_f16(int sm, int k_in, int flags);
/* Whether gen_gemv_f16 makes KERNEL_GEMV_NORM kernels for K. */
int kernel_gemv_norm_fits(int k_in);

/* backend.h's `linear` over a step's rows on tensor cores: gemv_tc_k<K>_c<C>_n<T>_f<flags>, the
 * parameters, flags and results of gen_gemv_f16 (NORM: the bits of layernorm then this kernel
 * without it), for K % 32 == 0 and sm >= 80, C output columns (16 or 32) and T tiles of 8 rows a
 * CTA; QKV's grid x is 3 K / C. The fp32 inputs go in as two fp16 terms (hi + lo), so a product is
 * as exact as gemv_f16's; fp32 accumulation. A row's result depends neither on n_rows nor on C or
 * T (bit for bit), so the host picks C = kernel_gemv_tc_cols(flags) and T =
 * kernel_gemv_tc_tiles(n_rows). grid (ceil(n / C), ceil(n_rows / (8 T))) x KERNEL_GEMV_THREADS. */
#define KERNEL_GEMV_TC_TILES 4 /* T at most */
char *gen_gemv_tc(int sm, int k_in, int flags, int tiles, int cols);
/* Whether gen_gemv_tc makes kernels for K; the T for n_rows (1, 2 or 4); the C for flags (32
 * with the norm, whose row statistics a CTA computes for its columns; else 16: more CTAs). */
int kernel_gemv_tc_fits(int sm, int k_in);
int kernel_gemv_tc_tiles(int n_rows);
int kernel_gemv_tc_cols(int flags);

/* A chain of a decoder step's ops in one cooperative launch, a grid barrier between links
 * (gemv_chain.c): gemv_chain_n<T>_<link 0>_<link 1>...(counter, <link 0's grid>, <link 0's>,
 * <link 1's grid>, <link 1's>, ...). A gemv_tc link, named k<K>f<F> (attn 0), does
 * gen_gemv_tc(K, F, T, kernel_gemv_tc_cols(F))'s work with the parameters that kernel takes
 * (<link i's>, in its order) over the grid (gx, gy) its launch would have had. An attention
 * link (attn KERNEL_LINK_GATHER, _ROWS or _ROWS_KVH; K = n_head x d), named k<K>a<attn>h<H>,
 * does attn_gather_h<H>'s, attn_rows_h<H>'s or attn_rows_h<H>_kvh's over the grid (gx, gy,
 * gz) of its launch, with its parameters. Each output has that kernel's bits, and a link reads
 * what the links before it wrote. counter: a u32 that is 0 at launch, and 0 again when the
 * kernel ends (the next launch's). Grid: CTAs that are all resident at once (a cooperative
 * launch; any number) x KERNEL_GEMV_THREADS. */
#define KERNEL_CHAIN_MAX_LINKS 8
#define KERNEL_LINK_GATHER     1
#define KERNEL_LINK_ROWS       2
#define KERNEL_LINK_ROWS_KVH   3
struct kernel_chain_link {
    int k_in, flags; /* gemv_tc's K and flags; an attention link's K = n_head x d */
    int attn, n_head;
};
char *gen_gemv_chain(int sm, int tiles, int n_links, const struct kernel_chain_link *links);

/* backend.h's `logits_greedy` in two kernels, over P = ceil(V / KERNEL_LOGITS_CHUNK) <= 32
 * chunks of each row (V <= 65,536):
 *   logits_part_v<V>(part, logits, rules, mask), grid (n_rows, P) x KERNEL_LOGITS_THREADS: CTA
 *   (r, p) takes columns [p C, (p + 1) C) of row r and writes the record at part + (r P + p)
 *   KERNEL_LOGITS_RECORD bytes: {f32 text max, u32 its first column, f32 timestamp max, u32 its
 *   first column, f64 text rest, f64 timestamp rest} (column 0xFFFFFFFF: every one masked;
 *   rest: sum of exp(x - max) over the chunk's other unmasked columns of the part);
 *   logits_pick_v<V>(out, part, rules), grid n_rows x 32: joins row r's records and picks.
 * logits [n_rows][V] fp32; out [n_rows] of {u32 token, f32 logprob}; mask: u32[ceil(V / 32)],
 * bit i%32 of word i/32 set = token i suppressed; rules [n_rows] of KERNEL_LOGITS_RULE_WORDS
 * u32: lo[KERNEL_LOGITS_RANGES], width[KERNEL_LOGITS_RANGES] (token i is forbidden when (u32)(i
 * - lo) < width; 0 for unused ranges), tb (the timestamp test's first timestamp; tb >= V: no
 * test), padding. Accuracy: src/kernels/logits_pick.c. */
#define KERNEL_LOGITS_THREADS    256
#define KERNEL_LOGITS_CHUNK      (8 * KERNEL_LOGITS_THREADS)
#define KERNEL_LOGITS_RECORD     32
#define KERNEL_LOGITS_PICK_WARP  32
#define KERNEL_LOGITS_RANGES     8
#define KERNEL_LOGITS_RULE_WORDS (2 * KERNEL_LOGITS_RANGES + 4)
char *gen_logits_part(int sm, int n_vocab);
char *gen_logits_pick(int sm, int n_vocab);

/* backend.h's `logits_topk` (beam search), the same layout with K candidates:
 *   logits_topk_part_v<V>_k<K>(part, logits, rules, mask), grid (n_rows, P) x
 *   KERNEL_LOGITS_THREADS, record (r, p) at part + (r P + p) (24 + 16 K) bytes (layout:
 *   src/kernels/logits_topk.c);
 *   logits_topk_pick_v<V>_k<K>(out, part, rules), grid n_rows x 32: out [n_rows][K] of
 *   {u32 token, f32 logprob}, descending (a row with fewer than K unmasked tokens: the rest
 *   token 0, -inf). K <= KERNEL_LOGITS_MAX_TOPK. */
#define KERNEL_LOGITS_MAX_TOPK       17
#define KERNEL_LOGITS_TOPK_RECORD(k) (24 + 16 * (k))
char *gen_logits_topk_part(int sm, int n_vocab, int k);
char *gen_logits_topk_pick(int sm, int n_vocab, int k);

/* backend.h's `logits_sample` (sampling at T > 0), after logits_part_v<V> over the rows:
 *   logits_sample_part_v<V>(wsum, part, logits, rules, mask, draws), grid (n_draws, P) x
 *   KERNEL_LOGITS_THREADS: wsum [n_draws][P] f64, each chunk's weight under the draw;
 *   logits_sample_pick_v<V>(out, wsum, part, logits, rules, mask, draws), grid n_draws x
 *   KERNEL_LOGITS_THREADS: out [n_draws] of {u32 token, f32 logprob}.
 * draws [n_draws] of struct wc_sample_draw {s32 row, f32 temperature, f64 u}; part, rules and
 * mask as logits_part's. How: src/kernels/logits_sample.c. */
char *gen_logits_sample_part(int sm, int n_vocab);
char *gen_logits_sample_pick(int sm, int n_vocab);

/* One generated kernel of a model. */
struct kernel_src {
    char name[128]; /* the .entry name, also the file name in `whisper-c ptx` */
    char *ptx;      /* owned */
};

/* Every kernel a model with these hparams needs, for sm_<sm>. Returns the count and *out
 * (malloc'd, free with kernels_free), or -1 when out of memory. */
int kernels_for_model(const struct wc_hparams *hp, int sm, struct kernel_src **out);
void kernels_free(struct kernel_src *k, int n);

#endif /* WC_KERNELS_H */
