/*
 * segment_wrap.h — whisper.cpp's --max-len / --split-on-word: segments cut into pieces of at
 * most max_len characters, timed by the word alignment. Only the results change: the decoder's
 * prompt keeps the model's own segments.
 */
#ifndef WC_SEGMENT_WRAP_H
#define WC_SEGMENT_WRAP_H

#include <stdbool.h>

struct wc_transcript;
struct wc_vocab;

/* Splits out->seg[first..] (aligned: token times set) into pieces of at most max_len UTF-8
 * characters, at word starts (split_on_word) or at any text token; a word or token longer than
 * max_len is a piece by itself. A piece runs from its first unit's start to its last unit's
 * end, the segment's own bounds kept at its two ends. Returns 0, or WHISPERC_ERR_NO_MEMORY. */
int wrap_segments(struct wc_transcript *out, int first, int max_len, bool split_on_word,
                  const struct wc_vocab *v);

#endif /* WC_SEGMENT_WRAP_H */
