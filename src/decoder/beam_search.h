/*
 * beam_search.h — openai-whisper decoding.py BeamSearchDecoder for one window as a state
 * machine, so that the same rules drive the beams of one window on struct decoder
 * (beam_search() in decode_window.h) and of many windows stepped together (decode_batch.c).
 *
 * Per step: the caller runs the decoder over beam_rows() rows (the prompt's one row first,
 * then one row per beam, in beam order), ranks each row (beam_rank_host, or the backend's
 * logits_topk with beam_rule's rules) into K = beam_size + 1 picks a row, and calls
 * beam_update(), which sets src_of (new beam g continues old beam src_of[g]: the caller
 * reorders the decoder's histories so) and says whether the window has ended. beam_result()
 * then gives the chosen sequence.
 */
#ifndef WC_BEAM_SEARCH_H
#define WC_BEAM_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "decoder/decode_window.h"
#include "decoder/hypothesis.h"

struct wc_greedy_pick;
struct wc_logit_rule;
struct beam_cand;

struct beam_state {
    const struct decode_opts *o; /* not owned */
    int G, K;                    /* beams, picks a row (G + 1) */
    int max_candidates;          /* finished sequences that end the search */
    int n_initial, n_ctx;        /* the prompt's length, the text context */
    int i_step;                  /* the next update's step: 0 ranks the prompt's row */
    struct hyp_set cur, next, fin;
    int n_fin;
    struct beam_cand *cands;    /* [G * K] */
    struct wc_greedy_pick *top; /* [G][K] picks of each row, for the caller to fill */
    int src_of[WC_MAX_GROUP];
};

/* For options o (beam_size >= 1) after a prompt of n_initial tokens. Returns 0 or
 * WHISPERC_ERR_NO_MEMORY. */
int beam_init(struct beam_state *b, const struct decode_opts *o, int n_initial, int n_ctx);
void beam_free(struct beam_state *b);

/* Rows the next ranking takes: 1 (the prompt's) at step 0, else G. */
static inline int beam_rows(const struct beam_state *b) { return b->i_step == 0 ? 1 : b->G; }

/* The last token of beam g, the next step's input. */
static inline int32_t beam_last(const struct beam_state *b, int g) {
    return b->cur.h[g].tok[b->cur.h[g].n - 1];
}

/* Row j of logits on the host (modified: filtered, log-softmaxed) ranked into b->top[j]. */
void beam_rank_host(struct beam_state *b, int j, float *row, int n_vocab);

/* Row j's filters for the backend's logits_topk (k = b->K, the suppress list o->filters'). */
void beam_rule(const struct beam_state *b, int j, struct wc_logit_rule *out);

/* BeamSearchDecoder.update over the picks in top ([beam_rows()][K], e.g. b->top); sets
 * b->src_of[0..G). Returns true when the window's search has ended. */
bool beam_update(struct beam_state *b, const struct wc_greedy_pick *top, int32_t eot);

/* BeamSearchDecoder.finalize and the ranking: the chosen sequence into r (r->tokens and
 * r->logprobs have room for sample_len + 1), its sum_logprob. */
void beam_result(struct beam_state *b, struct decode_result *r);

#endif /* WC_BEAM_SEARCH_H */
