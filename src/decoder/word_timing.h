/*
 * word_timing.h — word-level timestamps (openai-whisper timing.py add_word_timestamps): a
 * teacher-forced decoder pass over a window's text, the alignment heads' cross-attention
 * warped onto the audio frames, words with start, end and probability; then the reference's
 * corrections of over-long words and of segment bounds.
 */
#ifndef WC_WORD_TIMING_H
#define WC_WORD_TIMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/alignment_heads.h"

struct decoder;
struct wc_hparams;
struct wc_segment;
struct wc_stream;
struct wc_vocab;

struct word_aligner {
    const struct wc_hparams *hp;
    const struct wc_vocab *vocab;
    struct decoder *dec;
    struct wc_stream *s;
    struct wc_align_head *heads; /* owned */
    int n_heads;
    const char *prepend, *append; /* punctuation joined to the next / previous word */
    bool on_spaces;               /* words are split at spaces (not zh, ja, th, lo, my, yue) */
    bool tokens_only;             /* times the tokens only: no words, segment bounds kept */
    double last_speech;           /* last_speech_timestamp: end of the last word so far */
};

/* The heads of `preset` (alignment_heads()); prepend/append NULL take the reference's
 * defaults. Returns 0, or a WHISPERC_ERR_* code with err filled. */
int word_aligner_init(struct word_aligner *a, const struct wc_hparams *hp,
                      const struct wc_vocab *vocab, struct decoder *dec, struct wc_stream *s,
                      const char *preset, const char *prepend, const char *append, char *err,
                      size_t err_size);
void word_aligner_free(struct word_aligner *a);

/* add_word_timestamps for seg[0..n_seg), the segments of one window whose audio features are
 * loaded in the decoder; sot[0..n_sot) is the SOT sequence without <|notimestamps|>, num_frames
 * the window's mel frames. Fills each segment's token times and words, and may move its t0/t1
 * to them; with a->tokens_only, the token times alone.
 * Returns 0, or a WHISPERC_ERR_* code with err filled. */
int add_word_timestamps(struct word_aligner *a, struct wc_segment *seg, int n_seg,
                        const int32_t *sot, int n_sot, int num_frames, char *err, size_t err_size);

/* utils.get_end: the end of the last word of seg[0..n_seg), else of the last segment; returns
 * false when there are no segments. */
bool segments_get_end(const struct wc_segment *seg, int n_seg, double *end);

#endif /* WC_WORD_TIMING_H */
