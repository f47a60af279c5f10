/*
 * ops_logits_cuda.c — backend.h's logits_greedy and logits_topk on the GPU: the suppress list
 * becomes a bitmask (uploaded when it changes), each row's rule is packed as kernels.h states and
 * uploaded (80 bytes a row), logits_part_v<V> reduces each chunk of a row and logits_pick_v<V>
 * joins a row's chunks (kernels.h), and the picks come back, 8 bytes a row. logits_topk (beam
 * search) the same with the top-k kernels, k picks a row; logits_sample logits_part, then the
 * sampling kernels over its draws (uploaded, 16 bytes each), a pick a draw. The logits never
 * leave the device.
 *
 * tests/test_gpu_kernels.c and test_gpu_backend.c check it against the CPU twin (passed on an
 * H100, 2026-11-24, docs/gpu-validation.md).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_internal.h"
#include "kernels/kernels.h"
#include "libwhisperc.h"
#include "util.h"

_Static_assert(sizeof(struct wc_greedy_pick) == 8, "the kernel writes {u32 token, f32 logprob}");
_Static_assert(WC_LOGIT_MAX_RANGES == KERNEL_LOGITS_RANGES, "one range per rule slot");
_Static_assert(sizeof(struct wc_sample_draw) == 16 && offsetof(struct wc_sample_draw, u) == 8,
               "the sampling kernels read {s32 row, f32 temperature, f64 u}");

/* Bit i of the suppress set into mask[i / 32]; 0 or -1 on an id outside [0, n_vocab). */
static int build_mask(uint32_t *mask, int n_words, const int32_t *suppress, int n_suppress,
                      int n_vocab) {
    memset(mask, 0, (size_t)n_words * sizeof *mask);
    for (int i = 0; i < n_suppress; i++) {
        if (suppress[i] < 0 || suppress[i] >= n_vocab)
            return -1;
        mask[suppress[i] / 32] |= 1u << (suppress[i] % 32);
    }
    return 0;
}

/* rules[r] as KERNEL_LOGITS_RULE_WORDS words: ranges clamped to [0, V), unused ones empty. */
static void pack_rule(uint32_t *w, const struct wc_logit_rule *r, int n_vocab) {
    memset(w, 0, KERNEL_LOGITS_RULE_WORDS * sizeof *w);
    for (int j = 0; j < r->n_ranges; j++) {
        int lo = r->lo[j] < 0 ? 0 : r->lo[j], hi = r->hi[j] > n_vocab ? n_vocab : r->hi[j];
        w[j] = (uint32_t)lo;
        w[KERNEL_LOGITS_RANGES + j] = hi > lo ? (uint32_t)(hi - lo) : 0;
    }
    int tb = r->ts_begin;
    w[2 * KERNEL_LOGITS_RANGES] = (uint32_t)(tb > 0 && tb < n_vocab ? tb : n_vocab);
}

static size_t up256(size_t n) { return (n + 255) & ~(size_t)255; }

/* The three ops (k = 0 and no draws: logits_greedy, one pick a row; k > 0: logits_topk, k a
 * row; draws: logits_sample, one pick a draw): the mask, rules (and draws) up, the chunk
 * kernel and the pick kernel(s) (kernels.h), the picks down. */
static void run(struct wc_stream *s, const char *op, struct wc_greedy_pick *out, float *logits,
                const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                int n_rows, int n_vocab, int k, const struct wc_sample_draw *draws, int n_draws) {
    if (cuda_op_begin(s) || n_rows <= 0 || (draws && n_draws <= 0))
        return;
    struct cuda_stream *cs = cuda_stream(s);
    int n_words = (n_vocab + 31) / 32;
    size_t mask_bytes = up256((size_t)n_words * 4);
    size_t n_out = draws ? (size_t)n_draws : (size_t)n_rows * (size_t)(k ? k : 1);
    size_t out_bytes = n_out * sizeof *out;
    size_t rule_bytes = (size_t)n_rows * KERNEL_LOGITS_RULE_WORDS * 4;
    int n_part = (n_vocab + KERNEL_LOGITS_CHUNK - 1) / KERNEL_LOGITS_CHUNK;
    size_t part_bytes = (size_t)n_rows * (size_t)n_part *
                        (size_t)(k ? KERNEL_LOGITS_TOPK_RECORD(k) : KERNEL_LOGITS_RECORD);
    if (n_vocab < 1 || n_part > KERNEL_LOGITS_PICK_WARP || k < 0 || k > KERNEL_LOGITS_MAX_TOPK ||
        k > n_vocab || (size_t)n_rows * (size_t)n_vocab > UINT32_MAX) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "cuda %s: %d rows of %d, k %d", op, n_rows,
                       n_vocab, k);
        return;
    }
    if (draws && !wc_sample_draws_ok(draws, n_draws, n_rows)) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "cuda %s: a draw's row, temperature or uniform out of range", op);
        return;
    }
    uint32_t *mask = malloc((size_t)n_words * sizeof *mask);
    uint32_t *packed = malloc(rule_bytes);
    int bad = !mask || !packed;
    if (!bad && build_mask(mask, n_words, suppress, n_suppress, n_vocab))
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "cuda %s: a suppressed token outside [0, %d)",
                       op, n_vocab);
    for (int r = 0; !bad && r < n_rows; r++) {
        if (rules[r].n_ranges < 0 || rules[r].n_ranges > WC_LOGIT_MAX_RANGES) {
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "cuda %s: %d ranges", op,
                           rules[r].n_ranges);
            break;
        }
        pack_rule(packed + (size_t)r * KERNEL_LOGITS_RULE_WORDS, &rules[r], n_vocab);
    }
    if (bad)
        wc_stream_fail(s, WHISPERC_ERR_NO_MEMORY, "cuda %s: out of memory", op);
    size_t had = cs->scratch[CUDA_SCRATCH_LOGITS].bytes;
    /* mask | picks | rules | chunk records (rule_bytes is a multiple of 80: round the records
     * up to 8 bytes for their f64 sums) [| draws | the draws' chunk weights] */
    size_t part_off = up256(mask_bytes + out_bytes + rule_bytes);
    size_t draw_off = up256(part_off + part_bytes);
    size_t wsum_off = up256(draw_off + (size_t)n_draws * sizeof *draws);
    size_t total = draws ? wsum_off + (size_t)n_draws * (size_t)n_part * 8 : part_off + part_bytes;
    uint64_t base = s->err ? 0 : cuda_scratch(s, CUDA_SCRATCH_LOGITS, total);
    if (cs->scratch[CUDA_SCRATCH_LOGITS].bytes != had)
        cs->mask_addr = 0; /* a grown scratch is new memory: the mask is not there */
    if (base) {
        /* the mask sits at the scratch's start */
        if (cs->mask_addr != base || cs->mask_words != n_words ||
            memcmp(cs->mask_host, mask, (size_t)n_words * sizeof *mask) != 0) {
            cuda_upload(s, (void *)(uintptr_t)base, mask, (size_t)n_words * sizeof *mask);
            free(cs->mask_host);
            cs->mask_host = mask, cs->mask_words = n_words, cs->mask_addr = base;
            mask = NULL;
        }
        cuda_upload(s, (void *)(uintptr_t)(base + mask_bytes + out_bytes), packed, rule_bytes);
        const struct cuda_kernel *kp = cuda_kernel_get(s, k ? CK_TOPK : CK_LOGITS, n_vocab, k, 0);
        CUdeviceptr po = base + mask_bytes, pl = dptr(logits);
        CUdeviceptr pr = base + mask_bytes + out_bytes, pm = base, pp = base + part_off;
        void *args[] = {&pp, &pl, &pr, &pm};
        cuda_launch(s, kp, (unsigned)n_rows, (unsigned)n_part, KERNEL_LOGITS_THREADS, args);
        if (draws) {
            CUdeviceptr pd = base + draw_off, pw = base + wsum_off;
            cuda_upload(s, (void *)(uintptr_t)pd, draws, (size_t)n_draws * sizeof *draws);
            void *wargs[] = {&pw, &pp, &pl, &pr, &pm, &pd};
            cuda_launch(s, cuda_kernel_get(s, CK_SAMPLE, n_vocab, 0, 0), (unsigned)n_draws,
                        (unsigned)n_part, KERNEL_LOGITS_THREADS, wargs);
            void *dargs[] = {&po, &pw, &pp, &pl, &pr, &pm, &pd};
            cuda_launch(s, cuda_kernel_get(s, CK_SAMPLE_PICK, n_vocab, 0, 0), (unsigned)n_draws, 1,
                        KERNEL_LOGITS_THREADS, dargs);
        } else {
            const struct cuda_kernel *kk =
                cuda_kernel_get(s, k ? CK_TOPK_PICK : CK_LOGITS_PICK, n_vocab, k, 0);
            void *pick_args[] = {&po, &pp, &pr};
            cuda_launch(s, kk, (unsigned)n_rows, 1, KERNEL_LOGITS_PICK_WARP, pick_args);
        }
        cuda_download(s, out, (const void *)(uintptr_t)po, out_bytes);
    }
    free(mask);
    free(packed);
}

void cuda_logits_greedy(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                        const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                        int n_rows, int n_vocab) {
    run(s, "logits_greedy", out, logits, rules, suppress, n_suppress, n_rows, n_vocab, 0, NULL, 0);
}

void cuda_logits_topk(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                      const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                      int n_rows, int n_vocab, int k) {
    if (k < 1) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "cuda logits_topk: k %d", k);
        return;
    }
    run(s, "logits_topk", out, logits, rules, suppress, n_suppress, n_rows, n_vocab, k, NULL, 0);
}

void cuda_logits_sample(struct wc_stream *s, struct wc_greedy_pick *out, float *logits,
                        const struct wc_logit_rule *rules, const int32_t *suppress, int n_suppress,
                        int n_rows, int n_vocab, const struct wc_sample_draw *draws, int n_draws) {
    run(s, "logits_sample", out, logits, rules, suppress, n_suppress, n_rows, n_vocab, 0, draws,
        n_draws);
}
