/*
 * backend.h — the ops interface the encoder and decoder are written against.
 *
 * Two objects:
 * - struct wc_backend: one per model, shared read-only by every state. Holds the device and the
 *   weights uploaded to it (a CPU backend keeps them in host memory, a CUDA backend on the GPU).
 * - struct wc_stream: one per state. Ops are issued on a stream and run in order; it owns the
 *   thread pool (CPU) or CUDA stream, cuBLAS handle and memory arena (CUDA).
 *
 * Memory: "backend memory" pointers (float *, void *) come from stream_alloc or the upload calls
 * and are host addresses on the CPU backend, device addresses on CUDA. Encoder and decoder code
 * may do pointer arithmetic on them but never dereference them; data crosses with upload/download.
 *
 * Errors are sticky, like CUDA's: an op that fails records the first error in the stream and
 * every later op on that stream does nothing. wc_stream_sync() waits for the queued work and
 * returns the error code (0 = fine); the message is in s->errmsg.
 *
 * Layout: activations are fp32, row-major, time-major: x[T][C] has one row of C values per
 * token or audio frame. Weight matrices are PyTorch's [out][in] (rows = outputs), in whatever
 * dtype the backend chose at upload. Sizes are named as openai-whisper's ModelDimensions.
 */
#ifndef WC_BACKEND_H
#define WC_BACKEND_H

#include <stddef.h>
#include <stdint.h>

/* Element types. The block types are ggml's (model/ggml_quant.h: rows of 32-value blocks, each
 * value q·d [+ m]) and only ever a matrix's, on a backend whose ops->holds_quant is 1. */
enum wc_dtype {
    WC_F32 = 0,
    WC_F16 = 1,
    WC_Q4_0 = 2,
    WC_Q4_1 = 3,
    WC_Q5_0 = 6,
    WC_Q5_1 = 7,
    WC_Q8_0 = 8
};

/* A weight matrix in backend memory, [rows][cols] = [out][in]; layout private to the backend. */
struct wc_mat {
    const void *data;
    int rows, cols;
    enum wc_dtype dtype; /* as stored on the backend */
};

enum wc_act { WC_ACT_NONE = 0, WC_ACT_GELU = 1 }; /* GELU is the exact erf form */

/* One row's LogitFilters for logits_greedy (openai-whisper decoding.py SuppressBlank,
 * SuppressTokens, ApplyTimestampRules), reduced by the host from the row's history
 * (logit_filters_rule) to what costs O(n_vocab): token ranges to forbid, and whether to run
 * ApplyTimestampRules' probability test. */
#define WC_LOGIT_MAX_RANGES 8
struct wc_logit_rule {
    int32_t n_ranges;                /* <= WC_LOGIT_MAX_RANGES */
    int32_t lo[WC_LOGIT_MAX_RANGES]; /* tokens lo[i] <= t < hi[i] are forbidden (-inf); */
    int32_t hi[WC_LOGIT_MAX_RANGES]; /* empty ranges (lo >= hi) are allowed */
    int32_t ts_begin; /* > 0: after masking, if logsumexp(x[ts_begin:]) > max(x[:ts_begin]),
                       * forbid [0, ts_begin) as well; 0: no test */
};

#define WC_LOGIT_MAX_TOPK 17 /* logits_topk's k: beam_size + 1, beam_size <= WC_MAX_GROUP */

/* What logits_greedy picks in one row (logits_topk: one of a row's k). */
struct wc_greedy_pick {
    int32_t token; /* argmax of the masked row, the first maximum (torch.argmax) */
    float logprob; /* log_softmax(masked row)[token] */
};

/* One draw of sampling (temperature > 0) from a row of logits_sample. */
struct wc_sample_draw {
    int32_t row;       /* the row drawn from */
    float temperature; /* > 0 */
    double u;          /* uniform in [0, 1): wc_rng_uniform of the draw's generator */
};

struct wc_backend;
struct wc_stream;

/* An attention link's arguments (struct wc_chain_link): attention_gather's (k, v f32, slots,
 * ld_slots, n_kv_seq, n_kv) or attention_rows' (k, v of kv_dtype, ld_kv, lane_stride,
 * lane_of_row, s_len); c and n_head for both. */
struct wc_chain_attn {
    const void *k, *v;
    const int32_t *slots, *n_kv_seq;
    int ld_slots, n_kv;
    enum wc_dtype kv_dtype;
    int ld_kv, s_len;
    size_t lane_stride;
    const int32_t *lane_of_row;
    int c, n_head;
};

enum wc_link_kind { WC_LINK_LINEAR, WC_LINK_GATHER, WC_LINK_ROWS };

/* One op of step_chain. WC_LINK_LINEAR (0): norm_linear (g and lb given) or linear over the
 * chain's rows, out (+)= act(in' . w[0] + b[0]) with rows ld_out apart (0: w[0]->rows); or,
 * with dst_row, norm_qkv's three projections: q into out (ld_out 0), k and v into rows dst_row
 * of k_dst and v_dst, with w[0..2] and b[0..2]. WC_LINK_GATHER / _ROWS: attention_gather /
 * attention_rows of the chain's rows into out, the queries `in`, the rest in attn. */
struct wc_chain_link {
    enum wc_link_kind kind;
    float *out;
    int ld_out;
    const float *in, *g, *lb;
    const struct wc_mat *w[3];
    const float *b[3];
    enum wc_act act;
    int accumulate;
    float *k_dst, *v_dst;
    const int32_t *dst_row;
    struct wc_chain_attn attn;
};

struct wc_backend_ops {
    const char *name; /* "cpu", "cuda" */
    /* linear over up to this many rows gives each output row the same bits as a call with that
     * row alone (>= 1). Decoding several sequences in one call is then exactly decoding each
     * by itself; callers with more rows split them into calls of at most this many. */
    int linear_exact_rows;
    /* A causal `attention` (f32 K/V, heads the step attention takes: d <= 128, a multiple of 32
     * on CUDA) of up to this many queries gives query t exactly the bits attention_gather gives
     * it over the same keys (>= 1): a prompt that short has the bits of one-token steps, so the
     * batch decoder may feed it to a lane as step rows. */
    int attention_exact_rows;
    /* The encoder over several windows: 1 runs each linear over all the windows' rows in one
     * call (B x n_audio_ctx rows fill a GPU; a window's bits may then differ from its encoding
     * alone, since the GEMM may sum another way at another row count); 0 issues one call per
     * window, so that a window encoded in a batch has exactly the bits it has alone. */
    int linear_merge_windows;
    /* 1: the host's cores are free while the backend computes (a GPU), so host work such as
     * the next inputs' log-Mels can run beside it on other threads; 0: the backend's own
     * threads use them (the CPU). */
    int host_cores_free;
    /* 1: upload_mat takes ggml's block-quantized matrices as they are, and linear computes
     * with each value rounded to half: the bits of the same matrix widened to f16. 0: they
     * are widened to f16 before upload_mat (model/weights.c). */
    int holds_quant;

    /* ---- model level (weights) ---- */
    /* Frees the backend's weights and modules; leaves the calling thread as it found it. */
    void (*backend_free)(struct wc_backend *be);
    /* An API call's hold on the calling thread (NULL where the backend keeps nothing there):
     * thread_enter takes it (CUDA: the device's primary context made current) and returns what
     * thread_leave needs to give the thread back as the caller had it (CUDA: the caller's
     * current context). A program's own CUDA work on the thread (another
     * device, its own context) then goes on where it was after each call. */
    void *(*thread_enter)(struct wc_backend *be);
    void (*thread_leave)(struct wc_backend *be, void *held);
    /* Linear weight, source [rows][cols] row-major in host memory (fp32 or fp16 bits, or a
     * block type's rows where holds_quant). */
    int (*upload_mat)(struct wc_backend *be, struct wc_mat *out, const void *src,
                      enum wc_dtype src_dtype, int rows, int cols);
    /* Conv1d weight, source PyTorch [c_out][c_in][k_width]; out->rows = c_out,
     * out->cols = c_in * k_width. */
    int (*upload_conv)(struct wc_backend *be, struct wc_mat *out, const void *src,
                       enum wc_dtype src_dtype, int c_out, int c_in, int k_width);
    /* A vector or table of n values kept in fp32 (biases, norms, positional embeddings). */
    int (*upload_f32)(struct wc_backend *be, float **out, const void *src, enum wc_dtype src_dtype,
                      size_t n);

    /* ---- state level ---- */
    /* 0, or the status with the reason in err (err_size bytes; NULL takes none). flags:
     * WC_STREAM_BACKGROUND for work that may wait behind the other streams' (below). */
    int (*stream_new)(struct wc_backend *be, int n_threads, int flags, struct wc_stream **out,
                      char *err, size_t err_size);
    void (*stream_free)(struct wc_stream *s);
    int (*stream_set_threads)(struct wc_stream *s, int n_threads);
    /* Activation memory for this stream; NULL (and a sticky error) when out of memory. */
    void *(*alloc)(struct wc_stream *s, size_t bytes);
    void (*release)(struct wc_stream *s, void *p);
    void (*upload)(struct wc_stream *s, void *dst, const void *host_src, size_t bytes);
    void (*download)(struct wc_stream *s, void *host_dst, const void *src, size_t bytes);
    /* Host memory that upload_async reads without copying it first (page-locked where the
     * backend has it: a GPU's copy engine reads it as the host goes on); NULL, and a sticky
     * error, when out of memory. host_free(NULL) is fine. */
    void *(*host_alloc)(struct wc_stream *s, size_t bytes);
    void (*host_free)(struct wc_stream *s, void *p);
    /* upload from host_alloc memory, queued as an op: host_src may be read when the copy runs,
     * so the caller leaves those bytes as they are until the next sync (upload copies them
     * before it returns, at the price of a host copy). Not in a step graph. */
    void (*upload_async)(struct wc_stream *s, void *dst, const void *host_src, size_t bytes);
    void (*memset0)(struct wc_stream *s, void *dst, size_t bytes);
    /* Waits for every op queued on s, also after an error (which it returns; not inside a
     * step graph's recording, and not where the device itself is lost). Work the host has seen
     * end this way is ordered before any op it issues later, on any stream. */
    int (*sync)(struct wc_stream *s);

    /* ---- ops ---- */

    /* out[t][c_out] = act(b[c_out] + sum_{ci,k} w[c_out][ci][k] * in[t*stride + k - 1][ci])
     *                 (+ add[t][c_out] if add != NULL, after the activation)
     * kernel width 3, padding 1 (PyTorch Conv1d(k=3, padding=1)).
     * `in` is [t_in][c_in] with one zero row before row 0 and one after row t_in-1 (the caller
     * keeps them zero), so taps at -1 and t_in read zeros. t_out = (t_in - 1) / stride + 1. */
    void (*conv1d)(struct wc_stream *s, float *out, const float *in, const struct wc_mat *w,
                   const float *b, const float *add, int c_in, int c_out, int t_in, int stride,
                   enum wc_act act);

    /* out[t][:] = (in[t][:] - mean) / sqrt(var + 1e-5) * g + b, over c values; out may be in. */
    void (*layernorm)(struct wc_stream *s, float *out, const float *in, const float *g,
                      const float *b, int n_rows, int c);

    /* out[t][n] (+)= act(sum_k in[t][k] * w[n][k] + b[n]);  t < n_rows, n < w->rows, k < w->cols.
     * b may be NULL. accumulate != 0 adds into out (residual) and requires act == NONE.
     * out rows are ld_out floats apart (ld_out >= w->rows; 0 means w->rows). */
    void (*linear)(struct wc_stream *s, float *out, int ld_out, const float *in,
                   const struct wc_mat *w, const float *b, int n_rows, enum wc_act act,
                   int accumulate);

    /* layernorm then linear in one op: out[t][n] (+)= act(LN(in[t]) . w[n] + b[n]), LN as
     * `layernorm` with gain g and bias lb over w->cols values, for n_rows <= linear_exact_rows;
     * the arguments otherwise as `linear`'s. Each output has the bits of `layernorm` followed by
     * `linear` on the same backend. NULL where a backend has no fused form: callers issue the
     * two ops. */
    void (*norm_linear)(struct wc_stream *s, float *out, int ld_out, const float *in,
                        const float *g, const float *lb, const struct wc_mat *w, const float *b,
                        int n_rows, enum wc_act act, int accumulate);

    /* A block's self-attention projections in one op: with h = LN(in[t]) as in norm_linear,
     * q_out[t] = h . w[0] + b[0] ([n_rows][c]), and h . w[1] + b[1], h . w[2] + b[2] into rows
     * dst_row[t] of k_dst and v_dst (backend memory, int32, distinct rows below 2^32 / c; rows
     * of c floats); the weights [c][c], a NULL bias adds nothing. With dst_row (a decoder
     * step), n_rows <= linear_exact_rows and each output has the bits norm_linear then
     * rows_scatter give it; dst_row NULL (the encoder), any n_rows, k_dst and v_dst are
     * [n_rows][c] like q_out, each with the bits layernorm then linear give it, on the same
     * backend. NULL where a backend has no fused form. */
    void (*norm_qkv)(struct wc_stream *s, float *q_out, float *k_dst, float *v_dst,
                     const int32_t *dst_row, const float *in, const float *g, const float *lb,
                     const struct wc_mat *const w[3], const float *const b[3], int n_rows);

    /* A block's MLP in one op, over any n_rows: x[t] += fc2(GELU(fc1(LN(x[t])))), i.e. with
     * h = LN(x[t]) (gain g, bias lb over w0->cols values) and u[k] = GELU(h . w0[k] + b0[k]),
     * x[t][n] += u . w2[n] + b2[n]; work: backend memory [n_rows][w0->rows] floats, left
     * undefined. x has the bits layernorm, linear (GELU) and linear (accumulate) give it on the
     * same backend; the fused form saves passes over the rows (CUDA: the hidden layer goes to
     * the second GEMM as fp16 straight from the first's epilogue). NULL where a backend has no
     * fused form. */
    void (*norm_mlp)(struct wc_stream *s, float *x, const float *g, const float *lb,
                     const struct wc_mat *w0, const float *b0, const struct wc_mat *w2,
                     const float *b2, int n_rows, float *work);

    /* Projections of several windows' rows at once (the batch decoder's cross-attention K and V
     * of an encoder pass): for projection j < n_w and window i < n_win, dst[j * n_win + i] =
     * rows [i n_rows, (i + 1) n_rows) of in (f32 [n_win * n_rows][w[j]->cols], all w[j] of the
     * same cols) times w[j], plus b[j] (NULL: none), stored as dtype (WC_F32, or WC_F16 rounded
     * once after the bias) in rows of w[j]->rows values. work: backend memory of work_floats
     * floats, at least n_win * n_rows * (largest w[j]->rows) (else the stream fails), undefined
     * after. A window's block has the bits `linear`
     * (then to_f16) gives it alone, or, on a backend that merges windows
     * (linear_merge_windows), those of one `linear` over all the windows' rows (CUDA: one GEMM
     * a projection for the whole pass, the input converted to fp16 once for all of them). NULL
     * where a backend has no such form: callers issue the ops. */
    void (*linear_windows)(struct wc_stream *s, void *const *dst, enum wc_dtype dtype,
                           const float *in, int n_win, int n_rows, const struct wc_mat *const *w,
                           const float *const *b, int n_w, float *work, size_t work_floats);

    /* A decoder step's ops in order (projections, and its attentions), each link reading what
     * the links before it wrote (struct wc_chain_link; n_rows <= linear_exact_rows): the bits
     * of the ops the links stand for, issued one after another, in fewer launches where the
     * backend can (CUDA: one cooperative kernel, a grid barrier between links). Returns 0 when
     * issued (or the stream has failed), 1 when the backend has no fused form for these links:
     * the caller issues the ops. NULL where a backend has none. */
    int (*step_chain)(struct wc_stream *s, const struct wc_chain_link *links, int n_links,
                      int n_rows);

    /* Multi-head scaled dot-product attention, per head h (d = c / n_head columns each):
     *   out[t][h] = softmax_j(q[t][h] . k[j][h] / sqrt(d) + mask) . v[j][h],  j < s_len
     * q, out: [t_len][c]; k, v: [s_len][c] of kv_dtype with rows ld_kv elements apart. WC_F16
     * K/V (the batch decoder's cross-attention, wc_backend.cross_kv) give what their widened
     * values give in f32; only without a mask (CUDA: where the backend chose cross_kv F16).
     * causal_pos0 >= 0: query t sits at position causal_pos0 + t and sees keys j <= that
     * (decoder self-attention over its KV cache); causal_pos0 < 0: no mask. */
    void (*attention)(struct wc_stream *s, float *out, const float *q, const void *k, const void *v,
                      enum wc_dtype kv_dtype, int ld_kv, int t_len, int s_len, int c, int n_head,
                      int causal_pos0);

    /* n_win unmasked attentions side by side, the encoder's windows of a pass: window i's
     * queries, keys, values and outputs are rows [i * t_len, (i + 1) * t_len) of q, k, v, out
     * (f32, [n_win * t_len][c]), its keys those of its own window. Each window gets the bits
     * `attention` gives it alone (CUDA: one launch for all, where one window's fills a fraction
     * of the GPU). */
    void (*attention_windows)(struct wc_stream *s, float *out, const float *q, const float *k,
                              const float *v, int n_win, int t_len, int c, int n_head);

    /* The encoder's self-attention half-block over n_win windows of t_len rows (x: [n_win *
     * t_len][c]): x += W_o · attention_windows(norm_qkv(x)) + b_o, w = {q, k, v, o} ([c][c]),
     * b likewise (k's NULL); work: four [n_win * t_len][c] buffers, their contents undefined
     * after. x has the bits norm_qkv, attention_windows and linear (accumulate) give it on the
     * same backend (CUDA with WHISPERC_CUDA_GEMM=lt: close, K's product being written in fp16
     * by its GEMM); the fused form saves passes over the rows (CUDA: K, V and the attention's
     * output go from kernel to kernel in fp16). NULL where a backend has no fused form. */
    void (*norm_self_attention)(struct wc_stream *s, float *x, const float *g, const float *lb,
                                const struct wc_mat *const w[4], const float *const b[4], int n_win,
                                int t_len, int n_head, float *const work[4]);

    /* Decoder self-attention for one new query per sequence, keys and values gathered through
     * a slot table, so that beams share their common prefix and reorder without copying:
     *   out[g][h] = softmax_j(q[g][h] . k[r][h] / sqrt(d)) . v[r][h],  r = slots[g*ld_slots + j]
     * for g < n_seq, j < n_kv(g). q, out: [n_seq][c]; k, v: rows of c floats; slots: backend
     * memory (int32 row indices). n_kv(g) = n_kv_seq[g] (backend memory, 1 <= n_kv_seq[g] <=
     * n_kv: sequences of different lengths in one call), or n_kv for all when n_kv_seq is NULL. */
    void (*attention_gather)(struct wc_stream *s, float *out, const float *q, const float *k,
                             const float *v, const int32_t *slots, int ld_slots,
                             const int32_t *n_kv_seq, int n_seq, int n_kv, int c, int n_head);

    /* Cross-attention of one query row per lane, each over its own lane's keys and values:
     *   out[g][h] = softmax_j(q[g][h] . K_g[j][h] / sqrt(d)) . V_g[j][h],  j < s_len, g < n_rows
     * K_g = k + lane_of_row[g] * lane_stride (elements of kv_dtype; likewise V_g), rows ld_kv
     * elements apart; q, out: [n_rows][c]; lane_of_row: backend memory. Row g has the bits
     * `attention` gives it alone (t_len 1, no mask, the same kv_dtype) on the same backend. */
    void (*attention_rows)(struct wc_stream *s, float *out, const float *q, const void *k,
                           const void *v, enum wc_dtype kv_dtype, int ld_kv, size_t lane_stride,
                           const int32_t *lane_of_row, int n_rows, int s_len, int c, int n_head);

    /* The attention logits of one head before the softmax, for word alignment:
     *   out[t][j] = q[t][head] . k[j][head] / sqrt(d),  t < t_len, j < s_len
     * q: [t_len][c]; k: [s_len] rows ld_k elements of k_dtype apart; out: [t_len][s_len].
     * WC_F16 keys (the batch decoder's cross-attention) give what their widened values give. */
    void (*attention_scores)(struct wc_stream *s, float *out, const float *q, const void *k,
                             enum wc_dtype k_dtype, int ld_k, int t_len, int s_len, int c,
                             int n_head, int head);

    /* out[t][:] = tok_emb[tokens[t]][:] + pos_emb[p(t)][:], t < t_len, p(t) = positions[t]
     * (each row its own position: sequences of a batch step) or pos0 + t when positions is
     * NULL; tokens and positions in host memory. */
    void (*embed)(struct wc_stream *s, float *out, const int32_t *tokens, const int32_t *positions,
                  int t_len, const struct wc_mat *tok_emb, const float *pos_emb, int pos0, int c);

    /* dst[dst_row[r]][:] = src[r][:], r < n_rows, rows of c floats; dst_row: backend memory
     * (int32, distinct rows); src and dst do not overlap. The batch decoder's new keys and
     * values, made for all lanes in one call, into each lane's own cache rows. */
    void (*rows_scatter)(struct wc_stream *s, float *dst, const float *src, const int32_t *dst_row,
                         int n_rows, int c);

    /* dst[i] = src[i] as IEEE half, rounded to nearest even (overflow to inf), i < n; backend
     * memory both. The batch decoder's cross-attention K/V when cross_kv is WC_F16. */
    void (*to_f16)(struct wc_stream *s, void *dst, const float *src, size_t n);

    /* out[c][r] = in[r][c], r < rows, c < cols: in [rows][cols], out [cols][rows], backend
     * memory both, not overlapping. The encoder's log-Mel windows, uploaded as the frontend
     * computes them ([n_mels][frames]), into the time-major rows conv1d reads. */
    void (*transpose)(struct wc_stream *s, float *out, const float *in, int rows, int cols);

    /* Greedy decoding's logit post-processing, per row r < n_rows of logits [n_rows][n_vocab]:
     * forbid (-inf) the tokens in suppress[0..n_suppress) (host memory, sorted, one list for
     * every row) and in rules[r]'s ranges, run rules[r]'s timestamp test, then pick
     *   out[r].token = argmax(x), out[r].logprob = log_softmax(x)[token].
     * rules and out are host memory; out is filled once sync() returns. The logits rows are
     * left undefined (the CPU masks them in place). CPU: the bits of logit_filters_apply +
     * decode_argmax + wc_logsumexp. Other backends: logprob within 1e-5 relative of the
     * CPU's; the token and the timestamp test equal except where two candidates tie to within
     * the arithmetic's error (backend docs state it). A row with every token forbidden gives
     * token 0 and logprob -inf (torch's log_softmax would give NaN: no NaN leaves here). */
    void (*logits_greedy)(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                          const struct wc_logit_rule *rules, const int32_t *suppress,
                          int n_suppress, int n_rows, int n_vocab);
    /* Beam search's, the same masking, then out[r * k + j] (j < k <= WC_LOGIT_MAX_TOPK) = the
     * j-th largest log_softmax(x) of row r and its token, equal values by the lower token (the
     * beams' candidates). CPU: the bits of logit_filters_apply + wc_log_softmax + wc_topk.
     * Other backends: logprobs within 1e-5 relative; the order equal except near-ties. NULL
     * where a backend has none: the caller downloads the rows and ranks them itself. */
    void (*logits_topk)(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                        const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                        int n_rows, int n_vocab, int k);
    /* Sampling's: rows r < n_rows masked as logits_greedy masks them (rules[r]), then draw j <
     * n_draws from row draws[j].row (several draws may share a row: a window's samples all
     * start from its prompt's row) by the inverse CDF of softmax(x / T) at draws[j].u:
     *   out[j].token = the first token whose cumulative weight exceeds u * total,
     *   out[j].logprob = log_softmax(x)[token] (untempered, as sum_logprobs wants).
     * CPU: the bits of logit_filters_apply + wc_sample_weigh + wc_sample_draw. Other
     * backends: logprob within 1e-5 relative; the token equal except where u * total falls
     * within the arithmetic's error of a token's boundary. A row with every token forbidden
     * gives token 0 and logprob -inf. NULL where a backend has none: the caller downloads the
     * rows and draws itself. */
    void (*logits_sample)(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                          const struct wc_logit_rule *rules, const int32_t *suppress,
                          int n_suppress, int n_rows, int n_vocab,
                          const struct wc_sample_draw *draws, int n_draws);

    /* ---- stage timing (for bench; either may be NULL: the backend does not time) ----
     * timer_mark queues mark `slot` (0 <= slot < WC_TIMER_SLOTS) on the stream; it is taken
     * when every op queued before it has run (CUDA: an event recorded on the stream; CPU: the
     * monotonic clock, as CPU ops have run when they return). Marking a slot again replaces
     * it. timer_elapsed_ms: milliseconds from mark a to mark b, valid once a sync after both
     * returned; NaN when a slot was never marked or the stream holds an error. */
    void (*timer_mark)(struct wc_stream *s, int slot);
    double (*timer_elapsed_ms)(struct wc_stream *s, int a, int b);

    /* ---- step graphs (all NULL where the backend has none: ops run as issued) ----
     * A decoder step issues the same ops on the same backend memory every time, only the
     * values in its host inputs (embed's ids, uploads) differ; a backend may record such a
     * step once per key and replay the recording (CUDA: a graph, one launch instead of ~90).
     * The caller brackets the step's ops, issued exactly as without a graph:
     *   if (step_graph_begin(s, key)) { ops...; if (step_graph_end(s, key)) ops again; }
     *   else ops...;
     * begin returns 1 when a graph pass is under way (end must follow), 0 when the ops just
     * run. Within a pass: no sync, no timer marks, no op that could move a buffer; a key's
     * steps must issue the same ops with the same sizes and backend pointers (a replay that
     * differs is refused, not replayed). end returns 0 when the step ran (recorded and run,
     * or replayed), 1 when it did not (the recording failed; graphs are then off for good on
     * this stream and the caller issues the ops again, plainly). Errors are the stream's as
     * always. Recordings hold backend pointers: whoever releases or moves a buffer that a
     * recorded step uses calls step_graph_reset first. step_graph_state: 1 graphs in use, 0
     * not (yet) or switched off, -1 turned off by a failure; a one-line reason in why. */
    int (*step_graph_begin)(struct wc_stream *s, int key);
    int (*step_graph_end)(struct wc_stream *s, int key);
    void (*step_graph_reset)(struct wc_stream *s);
    int (*step_graph_state)(const struct wc_stream *s, char *why, size_t why_size);
};

#define WC_TIMER_SLOTS 4

struct wc_backend {
    const struct wc_backend_ops *ops;
    void *impl; /* owned by the backend */
    /* The dtype the batch decoder keeps cross-attention K/V in: a step reads every lane's
     * (n_audio_ctx rows a layer), the most bytes of a batched step. The CPU keeps F32 (the
     * reference's bits); CUDA F16 where its kernels take it: tensor-core attention on (head
     * widths the tensor-core kernel takes: every Whisper size's 64). WHISPERC_CROSS_KV=f32
     * turns F16 off, =f16 turns it on (the CPU too). */
    enum wc_dtype cross_kv;
};

/* stream_new's flags. A background stream's work runs where the device has room beside the
 * other streams' (CUDA: the lowest stream priority, the others' the highest: SMs that free up
 * go to the others first), e.g. encoder passes beside a batch's decoder steps. */
#define WC_STREAM_BACKGROUND 1

struct wc_stream {
    struct wc_backend *be;
    void *impl; /* owned by the backend */
    int err;    /* first error, 0 = none */
    char errmsg[256];
};

/* The CPU reference backend (src/cpu/backend_cpu.c). */
int cpu_backend_new(struct wc_backend **out, char *err, size_t err_size);

/* Records the first error on a stream (a WHISPERC_ERR_* code, printf-style message); later
 * calls keep the first. */
void wc_stream_fail(struct wc_stream *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline int wc_stream_sync(struct wc_stream *s) { return s->be->ops->sync(s); }

#endif /* WC_BACKEND_H */
