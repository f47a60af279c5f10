/*
 * decode_batch.h — greedy decoding (temperature 0) of one window in each lane of a struct
 * decoder_batch, the lanes stepped together: each lane's result is what decode_window gives
 * that window alone with the same options, bit for bit. Lanes are independent: a lane whose
 * window ends (EOT, the sample_len limit or the text context) hands its result back and may
 * start another window at once, while the others keep stepping (continuous batching).
 *
 * Usage: decode_batch_start(lane) for each lane given a window (its audio set with
 * decoder_batch_set_audio first); then, while any lane runs, decode_batch_step(); a lane for
 * which decode_batch_ended() is true gives its result with decode_batch_take() and is free.
 */
#ifndef WC_DECODE_BATCH_H
#define WC_DECODE_BATCH_H

#include <stdbool.h>

#include "decoder/decode_window.h"

struct decoder_batch;
struct decode_batch_lane;

struct decode_batch {
    struct decoder_batch *db;        /* not owned */
    struct wc_stream *s;             /* not owned */
    const struct wc_vocab *v;        /* not owned */
    struct decode_batch_lane *lanes; /* [db->n_lanes], owned */
    /* host scratch, owned: a prompt's logits [2][n_vocab], a prompt [2 n_text_ctx + 8], and a
     * step's rows [n_lanes] each (lane ids, last tokens, picks, filters, histories) */
    float *logits;
    int32_t *seq, *last;
    int *ids;
    struct wc_greedy_pick *pick;
    const struct logit_filters **lf;
    const struct hyp **hk;
    int n_steps; /* decoder_batch_step calls made, all lanes together (statistics) */
};

/* For db's lanes, all free. Returns 0 or WHISPERC_ERR_NO_MEMORY. */
int decode_batch_init(struct decode_batch *d, struct decoder_batch *db, struct wc_stream *s,
                      const struct wc_vocab *v);
void decode_batch_free(struct decode_batch *d);

/* Free lane k starts a window with options o (temperature 0, no beams, no best_of; kept by
 * pointer until the lane's result is taken): its prompt through the decoder, its
 * no_speech_prob and first token. It may end at once (decode_batch_ended). Returns 0 or a
 * WHISPERC_ERR_* code (message in the stream). */
int decode_batch_start(struct decode_batch *d, int k, const struct decode_opts *o);

/* One token for every lane still running, in one decoder_batch_step. *n_stepped (may be NULL)
 * receives how many lanes stepped (0: none was running). Returns 0 or the stream's error. */
int decode_batch_step(struct decode_batch *d, int *n_stepped);

/* Whether lane k's window has ended with its result not yet taken. */
bool decode_batch_ended(const struct decode_batch *d, int k);

/* Lane k's ended window into *r (the caller frees it with decode_result_free, also on error);
 * the lane is free again. Returns 0 or WHISPERC_ERR_NO_MEMORY. */
int decode_batch_take(struct decode_batch *d, int k, struct decode_result *r);

#endif /* WC_DECODE_BATCH_H */
