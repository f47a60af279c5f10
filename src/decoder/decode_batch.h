/*
 * decode_batch.h — greedy decoding (temperature 0) of one window in each of n lanes of a
 * struct decoder_batch at once: each lane's result is what decode_window gives that window
 * alone with the same options, bit for bit; lanes leave the batch as they end (EOT, the
 * sample_len limit or the text context) and the others keep stepping together.
 */
#ifndef WC_DECODE_BATCH_H
#define WC_DECODE_BATCH_H

#include "decoder/decode_window.h"

struct decoder_batch;

/* Lane k (k < n <= db->n_lanes) decodes with o[k] (temperature 0, no beams, no best_of) over
 * the audio set by decoder_batch_set_audio(db, s, k, …); the batch is reset first. logits: host
 * scratch of max(2, n) * n_vocab floats. r[k] receives lane k's result (freed by the caller
 * with decode_result_free, also on error). Returns 0 or a WHISPERC_ERR_* code (message in the
 * stream). */
int decode_batch_greedy(struct decoder_batch *db, struct wc_stream *s, const struct wc_vocab *v,
                        const struct decode_opts *o, int n, float *logits, struct decode_result *r);

#endif /* WC_DECODE_BATCH_H */
