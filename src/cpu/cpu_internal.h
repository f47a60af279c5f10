/*
 * cpu_internal.h — what the CPU backend's files share: the stream object with its thread pool and
 * per-thread scratch, the weight layout, and the op entry points (one file per op family).
 *
 * Weight layout: matrices keep the file's dtype (f16 stays f16: exact, and half the memory
 * traffic of the decoder's matrix-vector products; ggml's quantized blocks stay blocks, a
 * quarter to a half of it again); wc_mat.data is 64-byte aligned, [rows][cols].
 * Conv weights are f32, rearranged to [k][c_out][c_in] so each tap is one plain matrix.
 */
#ifndef WC_CPU_INTERNAL_H
#define WC_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "cpu/pool.h"

/* Up to this many input rows, linear takes the matrix-vector path, where each row is summed
 * alone in a fixed order (so it is also the backend's linear_exact_rows); more take sgemm. */
#define CPU_GEMV_MAX_ROWS 8
/* attention over up to this many queries takes the in-place path: one task per (head, query),
 * the arithmetic of attention_gather's */
#define CPU_ATT_MAX_STEP  8

/* Per-model: which kernels this CPU runs. */
struct cpu_backend {
    int has_avx2_f16c; /* AVX2 + FMA + F16C: vector f16 -> f32 dot products */
};

struct cpu_scratch {
    float *p;
    size_t n; /* floats */
};

struct cpu_stream {
    struct pool *pool;
    int n_threads;
    struct cpu_scratch *scratch;     /* [n_threads], grown by cpu_scratch_reserve */
    double timer_ms[WC_TIMER_SLOTS]; /* timer_mark's clock readings; NaN: never marked */
};

static inline struct cpu_stream *cpu_stream(struct wc_stream *s) { return s->impl; }
static inline struct cpu_backend *cpu_backend(struct wc_stream *s) { return s->be->impl; }

/* Makes every thread's scratch hold at least n floats. Call from the issuing thread before
 * pool_run; returns 0 or records WHISPERC_ERR_NO_MEMORY on the stream. */
int cpu_scratch_reserve(struct wc_stream *s, size_t n);

/* 64-byte aligned allocation, NULL on failure; free() releases it. */
void *cpu_alloc(size_t bytes);

/* Ops (backend.h has their contracts). */
void cpu_linear(struct wc_stream *s, float *out, int ld_out, const float *in,
                const struct wc_mat *w, const float *b, int n_rows, enum wc_act act,
                int accumulate);
void cpu_conv1d(struct wc_stream *s, float *out, const float *in, const struct wc_mat *w,
                const float *b, const float *add, int c_in, int c_out, int t_in, int stride,
                enum wc_act act);
void cpu_layernorm(struct wc_stream *s, float *out, const float *in, const float *g, const float *b,
                   int n_rows, int c);
void cpu_attention_windows(struct wc_stream *s, float *out, const float *q, const float *k,
                           const float *v, int n_win, int t_len, int c, int n_head);
void cpu_attention(struct wc_stream *s, float *out, const float *q, const void *k, const void *v,
                   enum wc_dtype kv_dtype, int ld_kv, int t_len, int s_len, int c, int n_head,
                   int causal_pos0);
void cpu_attention_scores(struct wc_stream *s, float *out, const float *q, const void *k,
                          enum wc_dtype k_dtype, int ld_k, int t_len, int s_len, int c, int n_head,
                          int head);
void cpu_attention_gather(struct wc_stream *s, float *out, const float *q, const float *k,
                          const float *v, const int32_t *slots, int ld_slots,
                          const int32_t *n_kv_seq, int n_seq, int n_kv, int c, int n_head);
void cpu_attention_rows(struct wc_stream *s, float *out, const float *q, const void *k,
                        const void *v, enum wc_dtype kv_dtype, int ld_kv, size_t lane_stride,
                        const int32_t *lane_of_row, int n_rows, int s_len, int c, int n_head);
void cpu_to_f16(struct wc_stream *s, void *dst, const float *src, size_t n);
void cpu_transpose(struct wc_stream *s, float *out, const float *in, int rows, int cols);
void cpu_embed(struct wc_stream *s, float *out, const int32_t *tokens, const int32_t *positions,
               int t_len, const struct wc_mat *tok_emb, const float *pos_emb, int pos0, int c);
void cpu_rows_scatter(struct wc_stream *s, float *dst, const float *src, const int32_t *dst_row,
                      int n_rows, int c);
void cpu_logits_topk(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                     const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                     int n_rows, int n_vocab, int k);
void cpu_logits_sample(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                       const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                       int n_rows, int n_vocab, const struct wc_sample_draw *draws, int n_draws);
void cpu_logits_greedy(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                       const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                       int n_rows, int n_vocab);

/* Elementwise helpers shared by the ops. */
void cpu_gelu_inplace(float *x, size_t n); /* exact erf GELU */
/* Converts rows [r0, r1) of a weight matrix to f32 into dst ([r1-r0][cols]). */
void cpu_mat_rows_f32(int fast, float *dst, const struct wc_mat *w, int r0, int r1);

/* Block-quantized matrices (quant_rows.c): bytes of a [rows][cols] matrix of any dtype; rows
 * [r0, r1) as floats (each value rounded to half, as widened at load; fast: AVX2 + F16C); and,
 * AVX2 + F16C only, row n as halves, and x · row n in linear.c dots_block_f16's order. */
size_t cpu_mat_bytes(enum wc_dtype dtype, int rows, int cols);
void cpu_quant_rows_f32(int fast, float *dst, const struct wc_mat *w, int r0, int r1);
void cpu_quant_row_f16(const struct wc_mat *w, int n, uint16_t *dst);
float cpu_quant_dots(const struct wc_mat *w, int n, const float *x);

#endif /* WC_CPU_INTERNAL_H */
