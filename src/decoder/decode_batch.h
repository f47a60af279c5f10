/*
 * decode_batch.h — decoding of one window in each slot of a struct decoder_batch, greedy or by
 * beam search at temperature 0, or best_of samples at a temperature above 0 (a fallback's, or
 * a first temperature's), the
 * slots stepped together: each slot's result is what decode_window gives that window alone
 * with the same options, bit for bit (samples too: a slot draws from its options' rng in
 * decode_window's order). Slot k reads the decoder's audio region k and holds, while its
 * window runs, as many of the decoder's lanes as the window decodes sequences
 * (decode_n_group: 1, the beams, or best_of), taken from the free ones. Slots are independent:
 * a slot whose window ends (EOT, enough finished beams, the sample_len limit or the text
 * context) hands its result back and may start another window at once, while the others keep
 * stepping (continuous batching).
 *
 * Every row is picked by the backend, only the picks coming back: greedy rows through
 * logits_greedy, beam rows through logits_topk, sample rows through logits_sample at uniforms
 * drawn in decode_window's order (which draws through the same op).
 *
 * A slot's prompt of up to feed_max tokens (the usual SOT sequence) goes in as rows of the
 * next step, all at once, in its group's first lane, instead of a prefill of its own: a
 * prefill is ~100 launches outside the step's graph and a sync, for each window. The bits are
 * the same where the backend's attention_exact_rows and linear_exact_rows cover the prompt
 * (backend.h); longer prompts (the previous text) run as decoder_batch_prefill.
 *
 * Usage: decode_batch_start(k) for each slot given a window (its audio set with
 * decoder_batch_set_audio(k) first); then, while any slot runs, decode_batch_step(); a slot for
 * which decode_batch_ended() is true gives its result with decode_batch_take() and is free.
 */
#ifndef WC_DECODE_BATCH_H
#define WC_DECODE_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "decoder/decode_window.h"

#define DECODE_BATCH_FEED_MAX 8 /* the longest prompt fed as step rows */

struct decoder_batch;
struct decode_batch_slot;
struct wc_backend_ops;
struct wc_logit_rule;

struct decode_batch {
    struct decoder_batch *db; /* not owned */
    struct wc_stream *s;      /* not owned */
    const struct wc_vocab *v; /* not owned */
    int n_slots;              /* db->n_regions */
    int beam_size;            /* of every beam-search window (0: none) */
    /* prompts up to this long go in as step rows (<= DECODE_BATCH_FEED_MAX; 0: all as
     * prefills, WHISPERC_BATCH_PROMPT=prefill) */
    int feed_max;
    struct decode_batch_slot *slots; /* [n_slots], owned */
    /* host scratch, owned: a prompt [2 n_text_ctx + 8], and a step's rows [db->max_rows] each
     * (lane ids, slots, last tokens, greedy picks, filters, histories, rules), and beam rows'
     * picks [db->max_rows][beam_size + 1] */
    int32_t *seq, *last;
    int *ids, *src, *hyp; /* a row's lane, slot, and place among its slot's lanes */
    struct wc_greedy_pick *pick, *top;
    const struct logit_filters **lf;
    const struct hyp **hk;
    struct wc_logit_rule *rules;
    float *sot_logits; /* [n_slots][n_vocab]: each slot's prompt's SOT row (no_speech_prob) */
    bool *lane_busy;   /* [db->n_lanes] held by a slot */
    int n_free;        /* lanes not held */
    /* a step's draws from sample rows [db->max_rows] (a sampling slot's draws never outnumber
     * its lanes) and what they drew; n_draws of them queued */
    struct wc_sample_draw *draws;
    struct wc_greedy_pick *drawn;
    int n_draws;
    int n_steps;              /* decoder_batch_step calls made, all slots together (statistics) */
    int step_rows, step_pick; /* the step begun and not yet ended: its rows, its first pick row */
};

/* The longest prompt fed as step rows on a backend: what keeps a prefill's bits (backend.h
 * attention_exact_rows, linear_exact_rows), at most DECODE_BATCH_FEED_MAX; 0 under
 * WHISPERC_BATCH_PROMPT=prefill (every prompt a prefill, for comparison). */
int decode_batch_feed_max(const struct wc_backend_ops *op);

/* For db's slots, all free; beam-search windows will have beam_size beams (0: none). Returns
 * 0 or WHISPERC_ERR_NO_MEMORY. */
int decode_batch_init(struct decode_batch *d, struct decoder_batch *db, struct wc_stream *s,
                      const struct wc_vocab *v, int beam_size);

/* Host bytes decode_batch_init and its slots allocate at most, for the memory budget. */
uint64_t decode_batch_bytes(int n_lanes, int n_slots, int n_vocab);
void decode_batch_free(struct decode_batch *d);

/* Free slot k starts a window with options o (at temperature 0 no best_of, and beam_size 0 or
 * d->beam_size; kept by pointer until the slot's result is taken), on decode_n_group(o) free
 * lanes (the caller checks decode_batch_lanes_free): its prompt through the decoder, its
 * no_speech_prob and first token(s), now or (a short prompt) with the next step. It may end
 * at once (decode_batch_ended). Returns 0 or a WHISPERC_ERR_* code (message in the stream). */
int decode_batch_start(struct decode_batch *d, int k, const struct decode_opts *o);
/* decode_batch_start for slots ks[0..n) with options os[i] (n <= DECODE_BATCH_START_MAX and
 * db->max_rows), the same results; the prompts that are prefilled (longer than feed_max) are
 * queued together and synced once, rather than one round trip each. */
#define DECODE_BATCH_START_MAX 64
int decode_batch_start_n(struct decode_batch *d, int n, const int *ks,
                         const struct decode_opts *const *os);

/* One token for every sequence of every slot still running, and the prompts of slots that
 * start (as many as the step has room for), in one decoder_batch_step. *n_stepped (may be
 * NULL) receives the step's rows (0: no slot was running). Returns 0 or the stream's error. */
int decode_batch_step(struct decode_batch *d, int *n_stepped);
/* decode_batch_step in two halves: _begin queues the step and its picks (on a GPU the host
 * returns while the device computes), _end waits for them and hands each slot its tokens.
 * Between them the caller may do host work and ops of its own on the stream, but must not
 * start, step or take the slots (decode_batch_take of a slot that ended before is fine).
 * _end after a failed _begin, or without one, does nothing. */
int decode_batch_step_begin(struct decode_batch *d, int *n_stepped);
int decode_batch_step_end(struct decode_batch *d);

/* Lanes no slot holds. */
int decode_batch_lanes_free(const struct decode_batch *d);

/* Whether slot k's window has ended with its result not yet taken. */
bool decode_batch_ended(const struct decode_batch *d, int k);

/* Slot k's ended window into *r (the caller frees it with decode_result_free, also on error);
 * the slot and its lanes are free again. Returns 0 or WHISPERC_ERR_NO_MEMORY. */
int decode_batch_take(struct decode_batch *d, int k, struct decode_result *r);

#endif /* WC_DECODE_BATCH_H */
