/*
 * decoder.h — Whisper's text decoder (openai-whisper model.py TextDecoder) over backend ops,
 * with a self-attention KV cache and cross-attention K/V computed once per 30 s window.
 *
 * Usage per window: decoder_reserve(n_group) (it reallocates, so before the audio);
 * decoder_set_audio(encoder output); decoder_reset(); decoder_forward() with the initial tokens
 * (one batch, shared by every sequence of the group), then decoder_step() with one token for
 * each of n_seq sequences. A forward pass without audio fails the stream (INVALID_ARG).
 *
 * A group of sequences (beams, or best_of samples) shares one cache, [n_ctx][n_group_max]
 * slots per layer: the prompt lives in slots (pos, 0); sequence g writes its token at
 * position pos into slot (pos, g), and reads its history through its row of a slot table.
 * decoder_reorder() (beam search keeping, dropping and duplicating sequences) permutes the
 * table's rows, never the cache.
 */
#ifndef WC_DECODER_H
#define WC_DECODER_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "model/alignment_heads.h"
#include "model/model_file.h"
#include "model/weights.h"

struct decoder {
    const struct wc_hparams *hp;
    const struct wc_weights *w;
    int n_past;      /* positions whose K/V are in the cache */
    int n_group_max; /* sequences the cache and scratch have room for */
    /* backend memory, owned */
    float *k_cache, *v_cache; /* [n_text_layer][n_text_ctx][n_group_max][s] */
    float *xk, *xv;           /* [n_text_layer][n_audio_ctx][s] cross-attention K/V */
    /* not NULL: the cross-attention K/V read instead of xk, xv (decoder_borrow_audio) */
    const void *borrowed_k, *borrowed_v;
    enum wc_dtype borrowed_dtype;
    bool has_audio; /* xk, xv hold a window's K/V: decoder_set_audio since the last allocation */
    float *x, *h, *q, *att; /* [max(n_text_ctx, n_group_max)][s] */
    float *mlp;             /* [max(n_text_ctx, n_group_max)][4s] */
    float *logits;          /* [max(2, n_group_max)][n_vocab] */
    int32_t *slots;         /* [n_group_max][n_text_ctx] cache slot of (sequence, position) */
    int32_t *slots_host;    /* host copy of slots, owned */
    int32_t *slots_tmp;     /* host scratch for decoder_reorder, owned */
};

int decoder_init(struct decoder *d, struct wc_stream *s, const struct wc_hparams *hp,
                 const struct wc_weights *w);
void decoder_free(struct decoder *d, struct wc_stream *s);

/* Bytes decoder_init (n_group 1) or decoder_reserve(n_group) allocates, for the memory budget. */
uint64_t decoder_memory_bytes(const struct wc_hparams *hp, int n_group);

/* Room for n_group sequences (reallocates the caches when it grows; the cache is emptied). */
int decoder_reserve(struct decoder *d, struct wc_stream *s, int n_group);

/* Cross-attention keys and values of every layer from the encoder output [n_audio_ctx][s]. */
void decoder_set_audio(struct decoder *d, struct wc_stream *s, const float *audio_features);
/* Reads cross-attention K/V made elsewhere, in xk's layout [n_text_layer][n_audio_ctx][s] of
 * dtype dt (backend memory; WC_F16 where the backend takes it, wc_backend.cross_kv), instead
 * of its own, until decoder_set_audio, decoder_reserve or a borrow of NULL: the batch
 * decoder's audio region of a window that ended, for its word alignment and for a fallback
 * decoded alone (transcribe_job_decoded). Host only. */
void decoder_borrow_audio(struct decoder *d, const void *k, const void *v, enum wc_dtype dt);

static inline void decoder_reset(struct decoder *d) { d->n_past = 0; }

/* Runs tokens[0..n) at positions n_past.. as the shared prefix of every sequence. For each of
 * the n_rows row indices in rows[] (0 <= rows[i] < n, at most 2), writes that token's logits
 * [n_vocab] to logits_host + i*n_vocab. Returns the stream's error (0 = ok). */
int decoder_forward(struct decoder *d, struct wc_stream *s, const int32_t *tokens, int n,
                    const int *rows, int n_rows, float *logits_host);

/* One token for each of sequences 0..n_seq-1 (n_seq <= n_group_max) at position n_past;
 * writes their logits to logits_host [n_seq][n_vocab]. logits_host NULL: the logits stay in
 * backend memory, d->logits [n_seq][n_vocab], for an op queued next (nothing is synced). */
int decoder_step(struct decoder *d, struct wc_stream *s, const int32_t *tokens, int n_seq,
                 float *logits_host);

/* Sequence g takes over the history of sequence src[g], for g < n_seq. */
void decoder_reorder(struct decoder *d, const int *src, int n_seq);

/* For word alignment (openai-whisper timing.find_alignment): runs tokens[0..n) from position
 * 0, as one teacher-forced batch (the cache is overwritten; reset before decoding again), and
 * downloads the pre-softmax cross-attention logits of each alignment head i to
 * qk_host + i * n * n_audio_ctx ([n][n_audio_ctx]). For the n_targets rows from row0 it also
 * writes p_out[i] = softmax(logits[row0 + i][0 : n_softmax])[targets[i]]. Returns the stream's
 * error (0 = ok). */
int decoder_align(struct decoder *d, struct wc_stream *s, const int32_t *tokens, int n,
                  const struct wc_align_head *heads, int n_heads, float *qk_host, int row0,
                  const int32_t *targets, int n_targets, int n_softmax, float *p_out);

#endif /* WC_DECODER_H */
