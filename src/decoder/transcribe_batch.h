/*
 * transcribe_batch.h — transcribe() over many inputs at once: each input's windows stay in
 * order (a window's seek and prompt come from the one before), and the windows of up to
 * db->n_regions inputs are decoded together (decode_batch), so the decoder reads its
 * weights once per step for all of them. A lane whose window ends starts its input's next window
 * (or the next input's first, when its input is done) while the others keep stepping.
 *
 * Every transcript is exactly transcribe()'s for that input alone: the batch decodes each
 * window as decode_window does, greedily or by beam search at temperature 0, by best_of
 * samples above (a beam search's beams and the samples are lanes of db that read the
 * window's audio region), and a window that needs a fallback is decoded again in the batch
 * at the next temperature, its audio still in its region, drawing from its input's rng as
 * transcribe() would (alone on the state's own decoder where the fallback's samples are more
 * than db's lanes).
 *
 * Word timestamps (and max_len, which needs them): when a window ends, its alignment pass runs
 * on the state's own decoder reading the window's audio region (decoder_borrow_audio), before
 * the region takes the input's next window; the words and the seek they move are
 * transcribe()'s.
 */
#ifndef WC_TRANSCRIBE_BATCH_H
#define WC_TRANSCRIBE_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "decoder/transcribe.h"

struct decoder_batch;

/* Whether transcribe_batch can run these params. */
bool transcribe_batch_supported(const struct whisperc_full_params *p);

/* Decoder lanes a window holds at temperatures[0] (decode_n_group): its beams, its best_of
 * samples (a first temperature above 0), else 1. */
int transcribe_batch_group(const struct whisperc_full_params *p);

/* The inputs: n of them, each one's log-Mel (as transcribe() wants it) made by mel() when the
 * input enters a lane and freed with mel_free when it leaves, so that at most db->n_regions
 * exist at a time. mel returns 0 or a WHISPERC_ERR_* code with err filled. */
struct batch_source {
    int n;
    int (*mel)(void *user, int i, struct mel_spec *out, char *err, size_t err_size);
    void *user;
};

/* Input i of src into outs[i] (i < src->n). The encoder passes run on t->s_enc (NULL: t->s, set
 * so here; it becomes t->s if the first pass runs out of memory there, the stream keeping its
 * error for the caller), which is idle again at the return. t's encoder and decoder serve
 * language detection (and a fallback of more samples than db has lanes); db's lanes the
 * batches. min_pass (>= 1):
 * lanes that need a window wait, while others decode, until this many need one (at most
 * TRANSCRIBE_BATCH_MAX_WAIT steps), so that the encoder runs on several windows at once; 1 starts
 * each window at once. The results do not depend on it where the encoder gives a window the same
 * bits in any pass (the CPU). Returns 0 or the first error, with err filled (naming the input);
 * then every outs[i] is freed. */
#define TRANSCRIBE_BATCH_MAX_WAIT 8
int transcribe_batch(struct transcribe_ctx *t, struct decoder_batch *db,
                     const struct batch_source *src, int min_pass, struct wc_transcript *outs,
                     char *err, size_t err_size);

#endif /* WC_TRANSCRIBE_BATCH_H */
