/*
 * transcript_remap.h — times of a transcript of gathered speech (VAD) back to the original file.
 *
 * With --vad the decoder sees only the speech spans, one after another with a gap of silence
 * between them (vad_gather). The time map is piecewise linear: each span keeps its length and moves
 * back to where it came from. Times in a gap (or past the last span) belong to no speech: a
 * start maps to the beginning of the next span, an end to the end of the previous one, so no
 * segment, word or token starts or ends inside the silence that VAD removed.
 */
#ifndef WC_TRANSCRIPT_REMAP_H
#define WC_TRANSCRIPT_REMAP_H

#include <stddef.h>

struct vad_span;
struct wc_segment;

struct time_piece {
    double t0, t1;  /* seconds of the gathered audio */
    double orig_t0; /* where t0 is in the original; t1 is at orig_t0 + (t1 - t0) */
};

struct time_map {
    struct time_piece *pieces; /* owned, sorted, disjoint */
    size_t n;
};

/* The map of spans (samples of the original, sorted, disjoint) gathered by vad_gather with
 * gap samples between them, at sample_rate. Returns 0 or WHISPERC_ERR_NO_MEMORY. */
int time_map_from_spans(struct time_map *m, const struct vad_span *spans, size_t n_spans,
                        size_t gap, int sample_rate);
void time_map_free(struct time_map *m); /* frees pieces; the struct itself is the caller's */

/* Every original time dt seconds later (the audio was a part of a longer input, starting dt
 * in): an empty map becomes the one piece t -> t + dt. dt 0 changes nothing. Returns 0 or
 * WHISPERC_ERR_NO_MEMORY. */
int time_map_shift(struct time_map *m, double dt);

/* A start or an end time of the gathered audio in the original (identity with no pieces). */
double time_map_start(const struct time_map *m, double t);
double time_map_end(const struct time_map *m, double t);

/* Maps every time of segments seg[0 .. n_seg) (their words and tokens too) in place; an end
 * never precedes its start. */
void segments_remap(struct wc_segment *seg, int n_seg, const struct time_map *m);

#endif /* WC_TRANSCRIPT_REMAP_H */
