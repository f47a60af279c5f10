/*
 * cuda_internal.h — what the CUDA backend's files share: the model-level object (driver,
 * cuBLAS, device, weights arena, kernel cache), the stream object (CUDA stream, cuBLAS handle,
 * activation arena, fp16 scratch) and the op entry points.
 *
 * Weight layout on the device: matrices fp16 [rows][cols] (conv weights keep PyTorch's
 * [c_out][c_in][k] order, which is im2col's column order); vectors fp32.
 *
 * Every entry point first makes the backend's context current on the calling thread (states
 * may be driven from any thread) and does nothing once the stream holds an error.
 */
#ifndef WC_CUDA_INTERNAL_H
#define WC_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "gpu/arena.h"
#include "gpu/cublas_api.h"
#include "gpu/cuda_api.h"
#include "kernels/kernels.h"

/* Which generator builds a kernel, and its shape arguments (kernels.h). */
enum cuda_kernel_kind {
    CK_LAYERNORM,   /* a = c, b = fp16 output */
    CK_F32_TO_F16,  /* no arguments */
    CK_EMBED,       /* a = c */
    CK_BIAS_ACT,    /* a = n, b = flags */
    CK_IM2COL,      /* a = c_in, b = stride */
    CK_ATTENTION,   /* a = n_head, b = d_head, c = causal */
    CK_GATHER,      /* a = n_head, b = d_head */
    CK_SCORES,      /* a = n_head, b = d_head, c = K in f16 */
    CK_GEMV,        /* a = k_in, b = flags */
    CK_ROWS,        /* a = n_head, b = d_head, c = K/V in f16 */
    CK_LOGITS,      /* logits_part; a = n_vocab */
    CK_SCATTER,     /* a = c */
    CK_ATTN_TC,     /* a = n_head, b = d_head, c = K/V in f16 */
    CK_LOGITS_PICK, /* a = n_vocab */
    CK_TOPK,        /* logits_topk_part; a = n_vocab, b = k */
    CK_TOPK_PICK,   /* a = n_vocab, b = k */
    CK_SAMPLE,      /* logits_sample_part; a = n_vocab */
    CK_SAMPLE_PICK, /* a = n_vocab */
    CK_GEMV_TC,     /* a = k_in, b = flags, c = row tiles | columns << 8 */
    CK_TRANSPOSE,   /* no arguments */
    CK_ROWS_TC,     /* a = n_head, b = d_head (K/V in f16) */
    CK_CHAIN,       /* a = K, b = links | n_head << 4, c = a byte a link (cuda_chain_code) */
};

struct cuda_kernel {
    enum cuda_kernel_kind kind;
    int a, b;
    uint64_t c;
    char name[128]; /* the .entry name, for error messages */
    bool grid_dep;  /* its text waits for the kernel before (ptx.h ptx_grid_dep_wait) */
    int coop_ctas;  /* CK_CHAIN: the CTAs the device holds at once (a cooperative grid's most) */
    CUmodule mod;
    CUfunction fn;
};

/* Kernels are generated and JIT-loaded on first use; every stream of the model shares them. */
struct cuda_kernel_cache {
    pthread_mutex_t mu;     /* streams on different threads look kernels up concurrently */
    struct cuda_kernel **k; /* owned, [n]; each kernel stays put once loaded */
    int n, cap;
};

struct cuda_model {
    struct cuda_api cu;
    struct cublas_api blas;
    struct cublaslt_api lt; /* loaded only with gemm_lt */
    struct cuda_device dev;
    CUcontext ctx;    /* the device's primary context, retained */
    int sm;           /* PTX target: the device's, capped at the newest the generators know */
    int sync_each_op; /* WHISPERC_CUDA_SYNC=1: sync after every launch to name a faulting kernel */
    int attn_simt;    /* WHISPERC_CUDA_ATTN=simt: no tensor-core attention (to compare) */
    int attn_kv32;    /* WHISPERC_CUDA_ATTN=tc32: the encoder's attn_tc on f32 K/V (to compare) */
    int rows_tc;   /* attention_rows over f16 K/V on attn_rows_tc (off: WHISPERC_CUDA_ROWS=kvh) */
    int no_graphs; /* WHISPERC_NO_CUDA_GRAPH=1: decoder steps as plain launches */
    /* A step's projections on tensor cores (gemv_tc, for every row count, so a row keeps the
     * bits it has alone): 1 (sm_80+, the default since the H200 run of 2026-11-28: 64-lane
     * steps 11% faster on base, 39% on large-v3, one-lane batch steps no slower), 16 / 32
     * (WHISPERC_CUDA_GEMV=tc16, tc32) to force its columns a CTA; 0: gemv_f16
     * (WHISPERC_CUDA_GEMV=f16) */
    int gemv_tc;
    /* Programmatic dependent launch: kernels whose text waits for the kernel before
     * (ptx_grid_dep_wait) are launched while it still runs, so that their weights load and
     * their launch latency passes meanwhile. sm_90+ with cuLaunchKernelEx; WHISPERC_CUDA_PDL=0
     * turns it off (to compare). */
    int dep_launch;
    /* The GEMMs over many rows through cuBLASLt, bias in its epilogue, fp16 out where the next
     * kernel reads fp16 (WHISPERC_CUDA_GEMM=lt; gemm_cuda.c) */
    int gemm_lt;
    char lt_why[160]; /* why not, when asked for */
    /* A step's chains of ops (backend.h step_chain) as one cooperative gemv_chain kernel each
     * (opt-in: slower than plain launches on an H200, 2026-11-28; needs gemv_tc, cuLaunchKernelEx
     * and the occupancy query): 1 (WHISPERC_CUDA_CHAIN=1) projections only, 2 (=block) attentions
     * too, a decoder block a kernel; n_sm: the device's SMs */
    int chain, n_sm;
    int chain_ctas;       /* WHISPERC_CUDA_CHAIN_CTAS: a chain's grid at most (0: one CTA an SM) */
    struct arena weights; /* uploaded weights, freed with the backend */
    struct cuda_kernel_cache kernels;
    char device_desc[192];
    char errmsg[256]; /* why the last upload failed (backend.h upload_* return only a code) */
};

/* A stream's own reusable buffers, in its arena, grown when too small. */
enum {
    CUDA_SCRATCH_HALF = 0,   /* fp16 GEMM inputs, im2col output */
    CUDA_SCRATCH_TOKENS = 1, /* embed's token ids */
    CUDA_SCRATCH_LOGITS = 2, /* logits_greedy: suppress mask, picks, rules, chunk records */
    CUDA_SCRATCH_ATTN = 3,   /* the key splits of attn_gather / attn_rows (kernels.h) */
    CUDA_SCRATCH_COUNT = 4,  /* their counters: zeroed when made, left zero by each launch */
    CUDA_SCRATCH_LT = 5,     /* cuBLASLt's workspace */
    CUDA_SCRATCH_CHAIN = 6,  /* gemv_chain's barrier counter: zeroed when made, left zero */
    CUDA_N_SCRATCH = 7
};
struct cuda_scratch {
    uint64_t addr;
    size_t bytes;
};

/* Page-locked host memory (cuMemHostAlloc) that every upload and download up to its size goes
 * through, so that a step's copies are asynchronous from fixed host addresses and can be
 * captured in a graph. Bump-allocated from the start after each sync: a block is in use until
 * the next sync (an async copy from or to it may be queued), which empties it, grows it when
 * something did not fit (the copy went pageable, or failed a capture), and copies the
 * downloads that landed in it to the caller's memory. */
struct cuda_deferred {
    void *dst;       /* the caller's host memory */
    const void *src; /* in the staging */
    size_t bytes;
};
struct cuda_staging {
    unsigned char *host; /* pinned, owned; NULL: none (allocation failed), copies go pageable */
    size_t bytes, used;  /* capacity; taken since the last sync */
    size_t want;         /* what the blocks since the last sync asked for in all, fitting or not */
    struct cuda_deferred *defer; /* owned, [cap_defer]: downloads to finish at sync */
    int n_defer, cap_defer;
};

/* Decoder step graphs (backend.h step_graph_*): one recording per key, replayed by
 * cuGraphLaunch. A graph pass is the host's issuing of one step's ops between begin and end:
 * CUDA_GRAPH_CAPTURE records them (cuStreamBeginCapture), CUDA_GRAPH_REPLAY only runs their
 * host side (checks, staging writes) and skips every launch and copy, which the recording
 * replays. Both passes fold each launch's and copy's shape, addresses and staging offset into a
 * signature: a replay whose signature differs from its recording's is not launched. */
/* row counts 1..1024: the CLI's largest batch (64 windows) of the most beams (16) a step; a
 * window's 5 beams (the CLI's default) at --batch-size 16 already step 80 rows. A batch decoder
 * steps up to decoder_batch_max_rows rows (its lanes and the prompts fed with them), one
 * recording per row count seen (a new decoder drops them: decoder_batch_init,
 * step_graph_reset); past 1024 rows steps run as plain launches. */
#define CUDA_GRAPH_KEYS 1024
enum cuda_graph_mode { CUDA_GRAPH_NONE = 0, CUDA_GRAPH_CAPTURE, CUDA_GRAPH_REPLAY };
struct cuda_step_graph {
    CUgraphExec exec; /* 0: not recorded */
    uint64_t sig;     /* the recording's signature */
    size_t staged;    /* staging bytes its pass took */
    int n_plain;      /* steps with this key run plain so far (the first warms kernels) */
};
struct cuda_graphs {
    int off;       /* 1: plain launches for good (why says why) */
    char why[384]; /* a prefix and a stream message (256) */
    enum cuda_graph_mode mode;
    int key;             /* of the pass under way */
    uint64_t sig;        /* of the pass under way */
    const char *refused; /* set by an op the pass cannot hold (static text); NULL: none */
    struct cuda_step_graph g[CUDA_GRAPH_KEYS + 1]; /* indexed by key 1..CUDA_GRAPH_KEYS */
    long n_captured, n_replayed;
    char dep_why[320]; /* why the stream's dependent launches were turned off; "": they were not */
    bool chain_failed; /* a cooperative launch failed in the capture pass: record it again */
};

/* A cuBLASLt product's shape and what it does (gemm_cuda.c), and its descriptors and the
 * algorithm the heuristics gave for it (ok = 0: none, the stream runs cuBLAS instead). */
struct cuda_lt_key {
    int m, n, k, ldc, half, bias, beta, align;
};
struct cuda_lt_plan {
    struct cuda_lt_key key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t layout[3]; /* A, B, C = D */
    cublasLtMatmulAlgo_t algo;
    int tried, ok;
    unsigned long used; /* the stream's lt_clock when last used */
};
/* an encoder pass's shapes (q/k/v/o, fc1, fc2; f32 or f16 out) at two window counts */
#define CUDA_LT_PLANS 16

struct cuda_stream {
    struct cuda_model *m;
    CUstream stream;
    cublasHandle_t blas;
    cublasLtHandle_t lt; /* created on first use */
    struct cuda_lt_plan lt_plan[CUDA_LT_PLANS];
    unsigned long lt_clock;
    struct arena arena;                          /* activations */
    struct cuda_scratch scratch[CUDA_N_SCRATCH]; /* indexed by CUDA_SCRATCH_* */
    /* the suppress mask last uploaded to the start of scratch[CUDA_SCRATCH_LOGITS] (at
     * mask_addr; 0: none), host copy of mask_words words, owned: uploaded again only when the
     * list or the scratch changes */
    uint32_t *mask_host;
    int mask_words;
    uint64_t mask_addr;
    CUevent timer[WC_TIMER_SLOTS]; /* created on first timer_mark of the slot; 0: never */
    struct cuda_staging stage;
    struct cuda_graphs graphs;
    /* the last kernel queued (a kernel cache name): a fault inside a kernel surfaces at a later
     * call, and the message names this one as the likely culprit */
    const char *last_kernel;
    bool last_in_graph; /* ... as the last node of a step graph launched since */
    /* the model's dep_launch, for this stream: turned off when a step graph with dependent
     * launches fails to record (a driver before 12.3 does not capture them), so that steps
     * keep their graphs (graph_cuda.c) */
    bool dep_launch;
    /* the model's chain, for this stream: turned off when the driver refuses a cooperative
     * launch (chain_why says how), and the steps' chains then run as single launches */
    bool chain;
    char chain_why[160];
    /* chains with attention links (a decoder block a kernel; the model's chain 2): off under
     * attn_rows_tc (the default cross-attention; WHISPERC_CUDA_ROWS=kvh), which has no phase form,
     * or when their kernel fails to load (blocks_why says which); the projections' chains go on */
    bool chain_blocks;
    char blocks_why[160];
    /* chains launched with dependent launch too (cooperative and early); off when the driver
     * refuses the pair */
    bool chain_early;
};

static inline struct cuda_stream *cuda_stream(struct wc_stream *s) { return s->impl; }
static inline CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }
/* Sizes in messages: MiB rounded up, so that a small tensor is not "0 MiB". */
static inline size_t mib_up(size_t bytes) { return (bytes + ((size_t)1 << 20) - 1) >> 20; }
/* Grid sizes: ceil(n / d). */
static inline unsigned ceil_div(size_t n, size_t d) { return (unsigned)((n + d - 1) / d); }
/* Fails the stream unless n fits the kernels' 32-bit indices (those of the elementwise
 * kernels, which take 4 elements a thread, with a CTA to spare): 1 if it fits, else 0. */
int cuda_fits_u32(struct wc_stream *s, const char *op, size_t n);

/* Makes the context current; 0 when the op may go ahead, else the sticky (or new) error. */
int cuda_op_begin(struct wc_stream *s);
/* Records a failed driver/cuBLAS call ("what: CUDA_ERROR_X (...)") as WHISPERC_ERR_BACKEND, or
 * WHISPERC_ERR_DEVICE for a fault inside a kernel (the context is spoiled). */
int cuda_stream_check(struct wc_stream *s, CUresult r, const char *what);
int cublas_stream_check(struct wc_stream *s, cublasStatus_t st, const char *what);
/* Scratch buffer `which` (CUDA_SCRATCH_*) of at least `bytes`: its previous contents are gone
 * when it grows. 0 with the stream failed when out of device memory. */
uint64_t cuda_scratch(struct wc_stream *s, int which, size_t bytes);
/* The same for counters that every kernel using them leaves at zero: zeroed (in stream order)
 * when the buffer is new. */
uint64_t cuda_scratch_zeroed(struct wc_stream *s, int which, size_t bytes);

/* The kernel for (kind, a, b, c), generated and loaded on first use. Returns 0 and *out, or a
 * WHISPERC_ERR_* code with err when the generator or the JIT fails. Thread-safe. */
int cuda_kernel_find(struct cuda_model *m, enum cuda_kernel_kind kind, int a, int b, uint64_t c,
                     const struct cuda_kernel **out, char *err, size_t err_size);
/* The same for a stream's op: NULL with the stream failed. */
const struct cuda_kernel *cuda_kernel_get(struct wc_stream *s, enum cuda_kernel_kind kind, int a,
                                          int b, uint64_t c);
int cuda_kernel_cache_init(struct cuda_model *m);
void cuda_kernel_cache_free(struct cuda_model *m);
/* Launches k with args on the stream; a failure names the kernel. */
void cuda_launch(struct wc_stream *s, const struct cuda_kernel *k, unsigned grid_x, unsigned grid_y,
                 unsigned block, void **args);
/* The same over a 3-D grid. */
void cuda_launch_3d(struct wc_stream *s, const struct cuda_kernel *k, unsigned grid_x,
                    unsigned grid_y, unsigned grid_z, unsigned block, void **args);

/* A cooperative launch (every CTA resident at once; no dependent launch): 0 when queued or the
 * stream failed, 1 when the driver refuses it (the stream stops asking, cuda_stream.chain, and
 * the caller does the work another way; in a capture pass, whatever the error, and the pass is
 * recorded again, without chains, at the next step). */
int cuda_launch_coop(struct wc_stream *s, const struct cuda_kernel *k, unsigned grid_x,
                     unsigned block, void **args);

/* gemv's checks (ops_cuda.c): whether a gemv over w runs as gemv_tc (1), gemv_f16 (0) or the
 * stream failed on an unaligned pointer (-1); whether the arguments hold (else the stream
 * fails, 0). */
int cuda_use_gemv_tc(struct wc_stream *s, const struct wc_mat *w, const float *in, const float *g,
                     const float *lb);
int cuda_gemv_args_ok(struct wc_stream *s, const char *op, int ld_out, const struct wc_mat *w,
                      int n_rows, enum wc_act act, int accumulate);

/* Ops (backend.h has their contracts). */
void cuda_norm_linear(struct wc_stream *s, float *out, int ld_out, const float *in, const float *g,
                      const float *lb, const struct wc_mat *w, const float *b, int n_rows,
                      enum wc_act act, int accumulate);
void cuda_norm_qkv(struct wc_stream *s, float *q_out, float *k_dst, float *v_dst,
                   const int32_t *dst_row, const float *in, const float *g, const float *lb,
                   const struct wc_mat *const w[3], const float *const b[3], int n_rows);
void cuda_norm_mlp(struct wc_stream *s, float *x, const float *g, const float *lb,
                   const struct wc_mat *w0, const float *b0, const struct wc_mat *w2,
                   const float *b2, int n_rows, float *work);
void cuda_linear(struct wc_stream *s, float *out, int ld_out, const float *in,
                 const struct wc_mat *w, const float *b, int n_rows, enum wc_act act,
                 int accumulate);
void cuda_conv1d(struct wc_stream *s, float *out, const float *in, const struct wc_mat *w,
                 const float *b, const float *add, int c_in, int c_out, int t_in, int stride,
                 enum wc_act act);
void cuda_layernorm(struct wc_stream *s, float *out, const float *in, const float *g,
                    const float *b, int n_rows, int c);
void cuda_embed(struct wc_stream *s, float *out, const int32_t *tokens, const int32_t *positions,
                int t_len, const struct wc_mat *tok_emb, const float *pos_emb, int pos0, int c);
void cuda_attention_windows(struct wc_stream *s, float *out, const float *q, const float *k,
                            const float *v, int n_win, int t_len, int c, int n_head);
void cuda_norm_self_attention(struct wc_stream *s, float *x, const float *g, const float *lb,
                              const struct wc_mat *const w[4], const float *const b[4], int n_win,
                              int t_len, int n_head, float *const work[4]);
void cuda_attention(struct wc_stream *s, float *out, const float *q, const void *k, const void *v,
                    enum wc_dtype kv_dtype, int ld_kv, int t_len, int s_len, int c, int n_head,
                    int causal_pos0);
void cuda_attention_gather(struct wc_stream *s, float *out, const float *q, const float *k,
                           const float *v, const int32_t *slots, int ld_slots,
                           const int32_t *n_kv_seq, int n_seq, int n_kv, int c, int n_head);
void cuda_attention_rows(struct wc_stream *s, float *out, const float *q, const void *k,
                         const void *v, enum wc_dtype kv_dtype, int ld_kv, size_t lane_stride,
                         const int32_t *lane_of_row, int n_rows, int s_len, int c, int n_head);
void cuda_to_f16(struct wc_stream *s, void *dst, const float *src, size_t n);

/* Products over many rows (gemm_cuda.c): c [n_rows][ldc] f32 = w · x16 (+ c when beta = 1),
 * x16 fp16 [n_rows][w->cols]; cuda_gemm_bias adds b (NULL: none); cuda_gemm_half writes the
 * product + b in fp16 to out16 [n_rows][w->rows] (work: f32 room for it; without cuBLASLt the
 * bits of cuda_gemm, cuda_epilogue and to_f16).
 * cuda_epilogue: x[r][i] = act(x[r][i] + b[i]) + add[r][i] over n_rows x n (rows ld apart), in
 * place; with out16, that value rounded to fp16 goes to out16[r][i] instead (x unchanged). */
void cuda_gemm(struct wc_stream *s, float *c, int ldc, const struct wc_mat *w, uint64_t x16,
               int n_rows, float beta);
void cuda_gemm_bias(struct wc_stream *s, float *out, int ldc, const struct wc_mat *w, uint64_t x16,
                    int n_rows, float beta, const float *b);
void cuda_gemm_half(struct wc_stream *s, uint64_t out16, float *work, const struct wc_mat *w,
                    uint64_t x16, int n_rows, const float *b);
void cuda_epilogue(struct wc_stream *s, float *x, int ld, const float *b, const float *add, int n,
                   int n_rows, int gelu, uint64_t out16);
void cuda_linear_windows(struct wc_stream *s, void *const *dst, enum wc_dtype dtype,
                         const float *in, int n_win, int n_rows, const struct wc_mat *const *w,
                         const float *const *b, int n_w, float *work, size_t work_floats);
void cuda_lt_free(struct cuda_stream *cs);
void cuda_transpose(struct wc_stream *s, float *out, const float *in, int rows, int cols);
void cuda_attention_scores(struct wc_stream *s, float *out, const float *q, const void *k,
                           enum wc_dtype k_dtype, int ld_k, int t_len, int s_len, int c, int n_head,
                           int head);
void cuda_rows_scatter(struct wc_stream *s, float *dst, const float *src, const int32_t *dst_row,
                       int n_rows, int c);
void cuda_logits_topk(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                      const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                      int n_rows, int n_vocab, int k);
void cuda_logits_sample(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                        const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                        int n_rows, int n_vocab, const struct wc_sample_draw *draws, int n_draws);
/* Whether attention_rows runs attn_rows_tc (f16 K/V on tensor cores where rows are 16-byte
 * aligned for cp.async, as the batch decoder's are; not with WHISPERC_CUDA_ROWS=kvh) rather
 * than attn_rows[_kvh]: the op and a chain's rows link choose alike. */
int cuda_rows_use_tc(const struct cuda_model *m, enum wc_dtype kv_dtype, int d, int ld_kv,
                     size_t lane_stride, const void *k, const void *v);
/* A chain link's byte of the CK_CHAIN key (chain_cuda.c) as the generator's link, for a chain
 * of K = k_in and n_head heads. */
struct kernel_chain_link cuda_chain_link_of(int k_in, int n_head, int code);
int cuda_step_chain(struct wc_stream *s, const struct wc_chain_link *links, int n_links,
                    int n_rows);
void cuda_logits_greedy(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                        const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                        int n_rows, int n_vocab);

/* Stream-level entry points (stream_cuda.c) for the ops table. */
int cuda_stream_new(struct wc_backend *be, int n_threads, int flags, struct wc_stream **out,
                    char *err, size_t err_size);
void cuda_stream_free(struct wc_stream *s);
int cuda_stream_set_threads(struct wc_stream *s, int n_threads);
void *cuda_alloc(struct wc_stream *s, size_t bytes);
void cuda_release(struct wc_stream *s, void *p);
void cuda_upload(struct wc_stream *s, void *dst, const void *host_src, size_t bytes);
void cuda_download(struct wc_stream *s, void *host_dst, const void *src, size_t bytes);
void *cuda_host_alloc(struct wc_stream *s, size_t bytes);
void cuda_host_free(struct wc_stream *s, void *p);
void cuda_upload_async(struct wc_stream *s, void *dst, const void *host_src, size_t bytes);
void cuda_memset0(struct wc_stream *s, void *dst, size_t bytes);
int cuda_sync(struct wc_stream *s);
void cuda_timer_mark(struct wc_stream *s, int slot);
double cuda_timer_elapsed_ms(struct wc_stream *s, int a, int b);

/* Staging (stream_cuda.c): `bytes` of the stream's pinned memory until the next sync, or NULL
 * when they do not fit (the sync after grows it) or are too many to stage (over 2 MiB). */
void *cuda_stage_take(struct cuda_stream *cs, size_t bytes);
void cuda_stage_init(struct cuda_stream *cs);
void cuda_stage_free(struct cuda_stream *cs);
/* After the stream synchronized: finishes the deferred downloads, empties the staging and
 * grows it if it was short (dropping the graphs, which point into it). */
void cuda_stage_done(struct wc_stream *s);

/* Step graphs (graph_cuda.c). cuda_graph_note folds one launch's or copy's shape into the
 * pass's signature and returns 1 when the op must not be issued (a replay pass); it is 0
 * outside a pass. cuda_graph_refuse marks the pass as one that cannot be recorded or replayed
 * (`what`: static text), and returns 1 where the op must be skipped (in a pass). */
int cuda_graph_note(struct cuda_stream *cs, uint64_t a, uint64_t b, uint64_t c);
int cuda_graph_refuse(struct cuda_stream *cs, const char *what);
/* Destroys every recording (after the stream's queued work is done: one may be running). */
void cuda_graph_drop_all(struct cuda_stream *cs);
int cuda_step_graph_begin(struct wc_stream *s, int key);
int cuda_step_graph_end(struct wc_stream *s, int key);
void cuda_step_graph_reset(struct wc_stream *s);
int cuda_step_graph_state(const struct wc_stream *s, char *why, size_t why_size);

/* Chunk allocator for arenas on the device (ctx: struct cuda_model *). */
int cuda_chunk_alloc(void *ctx, size_t bytes, uint64_t *addr, char *err, size_t err_size);
void cuda_chunk_free(void *ctx, uint64_t addr);

#endif /* WC_CUDA_INTERNAL_H */
