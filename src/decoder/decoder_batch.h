/*
 * decoder_batch.h — the text decoder over independent sequences ("lanes"), one 30 s window
 * each (of different files, or of different places in one), stepped together so that every
 * weight matrix is read once per step for all of them instead of once per sequence.
 *
 * Unlike struct decoder's group (beams over one window sharing a prompt), each lane has its
 * own cross-attention K/V, its own prompt and its own position. Lane k owns the cache rows
 * [k * n_text_ctx, (k+1) * n_text_ctx) of K and V for its whole life: a prompt's keys and
 * values go straight into its lane's first rows; a step's are made for all stepped lanes at
 * once in scratch rows, then copied to each lane's next row (rows_scatter). A lane reads its
 * history through its row of the slot table (attention_gather). Lanes are independent: one
 * lane may start a new window (prefill) while the others are in the middle of theirs.
 *
 * A step issues each op once for all its lanes: embed with per-row positions,
 * attention_gather with per-row key counts, attention_rows over each row's own audio K/V, and
 * linears in calls of at most the backend's linear_exact_rows rows.
 * Those launches depend on the row count only, so a backend with step graphs (backend.h
 * step_graph_*) records a step once per row count and replays it.
 *
 * Exactness: a lane's arithmetic is the single-sequence decoder's (decoder.c), op for op on
 * the same rows, so a lane's logits have the bits struct decoder gives the same window alone:
 * the backend promises each row of those ops the bits it gets alone.
 *
 * Audio regions: the cross-attention K/V of n_regions windows; each lane reads the region it
 * is assigned (decoder_batch_assign), so that the lanes of one window (a beam search's beams,
 * the best_of samples of a temperature fallback) share one K/V. The first lane of such a group
 * runs the prompt; decoder_batch_reorder() gives lanes the history of others (the prompt, then
 * the beam each one continues) by copying slot-table rows, never cache rows: a lane writes
 * only its own rows, at positions past every row other lanes read from it.
 *
 * Usage: for a lane that starts a window, decoder_batch_set_audio() (its region's audio),
 * decoder_batch_assign() and
 * decoder_batch_prefill(), or decoder_batch_clear() and its prompt's tokens as steps;
 * decoder_batch_step() for the lanes in the middle of one; decoder_batch_reorder() between
 * steps.
 */
#ifndef WC_DECODER_BATCH_H
#define WC_DECODER_BATCH_H

#include <stdint.h>

#include "backend.h"
#include "model/model_file.h"
#include "model/weights.h"

struct decoder_batch {
    const struct wc_hparams *hp;
    const struct wc_weights *w;
    int n_lanes;    /* lanes the buffers have room for */
    int max_rows;   /* rows a step may have: decoder_batch_max_rows(n_lanes) */
    int n_regions;  /* cross-attention K/V regions (windows), at most n_lanes */
    int n_slots;    /* cache rows: n_lanes * n_text_ctx */
    int *n_past;    /* [n_lanes] positions of each lane in the cache, owned */
    int *region_of; /* [n_lanes] the audio region each lane reads, owned */
    /* backend memory, owned */
    float *k_cache, *v_cache; /* [n_text_layer][n_lanes][n_text_ctx][s] */
    /* [n_regions][n_text_layer][n_audio_ctx][s] cross-attention K/V, of the backend's
     * cross_kv dtype */
    void *xk, *xv;
    enum wc_dtype xkv;
    float *x, *h, *q, *att; /* [max(n_text_ctx, max_rows)][s] */
    float *mlp;        /* [max(n_text_ctx, max_rows, n_audio_ctx / 4)][4s]; a step's new K/V before,
                        * f16 cross K/V before their narrowing (decoder_batch_set_audio) */
    size_t mlp_floats; /* its size */
    float *logits;     /* [max_rows][n_vocab] */
    /* a step's index arrays, rows in step order: [max_rows] keys each row sees, [max_rows] its
     * lane, [max_rows] its new K/V's cache row, then [n rows][n_text_ctx] its lane's slot-table
     * row */
    int32_t *step_idx;
    /* host, owned */
    int32_t *step_host;  /* what step_idx gets uploaded from */
    int32_t *slots_host; /* [n_lanes][n_text_ctx] cache row of (lane, position); a lane's own
                          * row k * n_ctx + p unless decoder_batch_reorder gave it another's */
    int32_t *slots_tmp;  /* [n_lanes][n_text_ctx] decoder_batch_reorder's scratch */
    int32_t *pos_host;   /* [max_rows] a step's row positions */
};

/* The rows a step of n_lanes lanes may have: one a lane and as many again (at least 8) for
 * prompts fed whole, several rows of one lane (decode_batch.h). */
static inline int decoder_batch_max_rows(int n_lanes) {
    return n_lanes + (n_lanes > 8 ? n_lanes : 8);
}

/* Bytes decoder_batch_init allocates for n_lanes lanes and n_regions audio regions (backend
 * and host memory together), cross-attention K/V in cross_kv (the backend's). */
uint64_t decoder_batch_bytes(const struct wc_hparams *hp, enum wc_dtype cross_kv, int n_lanes,
                             int n_regions);

/* Buffers for n_lanes lanes and n_regions (1 .. n_lanes) cross-attention K/V regions, lane i
 * reading region i * n_regions / n_lanes until assigned another. Returns 0 or the stream's
 * error (nothing left allocated). */
int decoder_batch_init(struct decoder_batch *db, struct wc_stream *s, const struct wc_hparams *hp,
                       const struct wc_weights *w, int n_lanes, int n_regions);
void decoder_batch_free(struct decoder_batch *db, struct wc_stream *s);

/* Empties every lane. */
void decoder_batch_reset(struct decoder_batch *db);

/* Empties lane `lane`: its next step row is its position 0 (a prompt fed as step rows, each
 * giving what decoder_batch_prefill's would where the backend's attention_exact_rows and
 * linear_exact_rows cover the prompt). */
void decoder_batch_clear(struct decoder_batch *db, int lane);

/* Lane `lane` reads audio region `audio` from its next prefill or step on. Host only. */
void decoder_batch_assign(struct decoder_batch *db, int lane, int audio);

/* The cross-attention K/V of audio regions audio[0..n) from n encoder outputs, window i's
 * [n_audio_ctx][s] rows of audio_features at i n_audio_ctx: where the backend has
 * linear_windows, each projection in one op for all n (a GPU's GEMM over every window's rows);
 * work: backend memory of work_floats floats free for the call (n * n_audio_ctx *
 * n_text_state for one op: fewer fail the stream; without linear_windows, one window's), or
 * NULL (the decoder's own room, one window at a time: only on the stream that steps, whose
 * steps use that room too). */
void decoder_batch_set_audio(struct decoder_batch *db, struct wc_stream *s, int n, const int *audio,
                             const float *audio_features, float *work, size_t work_floats);
/* Audio region `audio`'s cross-attention K and V, [n_text_layer][n_audio_ctx][s] of db->xkv
 * (decoder_borrow_audio's layout), until its next decoder_batch_set_audio. */
void decoder_batch_audio(struct decoder_batch *db, int audio, const void **k, const void **v);

/* Runs tokens[0..n) at positions 0.. of lane `lane` (whatever it held is dropped), as
 * decoder_forward, leaving the other lanes as they are; for each of the
 * n_rows (<= 2) row indices in rows[], writes that token's logits to logits_host + i*n_vocab.
 * Returns the stream's error (0 = ok). */
int decoder_batch_prefill(struct decoder_batch *db, struct wc_stream *s, int lane,
                          const int32_t *tokens, int n, const int *rows, int n_rows,
                          float *logits_host);

/* n rows (<= db->max_rows): row k is token tokens[k] of lane lanes[k] at the lane's next
 * position, rows of one lane at consecutive positions in their order (a prompt fed whole, each
 * row seeing those before it); writes their logits to logits_host [n][n_vocab]. logits_host
 * NULL: they stay in backend memory, db->logits [n][n_vocab], for an op queued next (nothing
 * is synced). */
int decoder_batch_step(struct decoder_batch *db, struct wc_stream *s, const int *lanes,
                       const int32_t *tokens, int n, float *logits_host);

/* Lane lanes[i] takes over the history (positions and slot-table row) of lane src[i], for
 * i < n, all at once (a permutation, duplicates allowed); the lanes must read one audio
 * region. Host only: the next step uploads the table. */
void decoder_batch_reorder(struct decoder_batch *db, const int *lanes, const int *src, int n);

#endif /* WC_DECODER_BATCH_H */
