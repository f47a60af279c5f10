/*
 * transcript_remap.c — piecewise-linear time map from gathered speech to the original file
 * (transcript_remap.h).
 */
#include "decoder/transcript_remap.h"

#include <math.h>
#include <stdlib.h>

#include "decoder/transcribe.h"
#include "frontend/vad.h"
#include "libwhisperc.h"

int time_map_from_spans(struct time_map *m, const struct vad_span *spans, size_t n_spans,
                        size_t gap, int sample_rate) {
    m->pieces = NULL;
    m->n = 0;
    if (n_spans == 0)
        return 0;
    m->pieces = malloc(n_spans * sizeof *m->pieces);
    if (!m->pieces)
        return WHISPERC_ERR_NO_MEMORY;
    size_t at = 0; /* sample of the gathered audio where span i begins */
    for (size_t i = 0; i < n_spans; i++) {
        size_t len = spans[i].end - spans[i].start;
        m->pieces[i] =
            (struct time_piece){(double)at / sample_rate, (double)(at + len) / sample_rate,
                                (double)spans[i].start / sample_rate};
        at += len + gap;
    }
    m->n = n_spans;
    return 0;
}

int time_map_shift(struct time_map *m, double dt) {
    if (dt == 0.0)
        return 0;
    if (m->n == 0) {
        m->pieces = malloc(sizeof *m->pieces);
        if (!m->pieces)
            return WHISPERC_ERR_NO_MEMORY;
        m->pieces[0] = (struct time_piece){0.0, INFINITY, 0.0};
        m->n = 1;
    }
    for (size_t i = 0; i < m->n; i++)
        m->pieces[i].orig_t0 += dt;
    return 0;
}

void time_map_free(struct time_map *m) {
    if (!m)
        return;
    free(m->pieces);
    m->pieces = NULL;
    m->n = 0;
}

/* The last piece that starts at or before t, or 0 when t precedes them all. */
static size_t piece_at(const struct time_map *m, double t) {
    size_t lo = 0, hi = m->n; /* invariant: pieces[< lo] start <= t (or lo == 0) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->pieces[mid].t0 <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static double orig_t1(const struct time_piece *p) { return p->orig_t0 + (p->t1 - p->t0); }

double time_map_start(const struct time_map *m, double t) {
    if (!m->n)
        return t;
    size_t i = piece_at(m, t);
    const struct time_piece *p = &m->pieces[i];
    if (t < p->t0)
        return p->orig_t0;
    if (t < p->t1)
        return p->orig_t0 + (t - p->t0);
    return i + 1 < m->n ? m->pieces[i + 1].orig_t0 : orig_t1(p); /* in a gap: the next speech */
}

double time_map_end(const struct time_map *m, double t) {
    if (!m->n)
        return t;
    const struct time_piece *p = &m->pieces[piece_at(m, t)];
    if (t < p->t0)
        return p->orig_t0;
    return t < p->t1 ? p->orig_t0 + (t - p->t0) : orig_t1(p); /* in a gap: the previous speech */
}

/* A zero-length span (a timestamp token, an instantaneous segment) is one point: mapped as an
 * end, so a point at the end of speech stays there rather than jumping to the next span. */
static void remap_pair(const struct time_map *m, double *t0, double *t1) {
    if (*t0 == *t1) {
        *t0 = *t1 = time_map_end(m, *t0);
        return;
    }
    double a = time_map_start(m, *t0), b = time_map_end(m, *t1);
    *t0 = a;
    *t1 = b < a ? a : b;
}

void segments_remap(struct wc_segment *seg, int n_seg, const struct time_map *m) {
    for (int i = 0; i < n_seg; i++) {
        struct wc_segment *s = &seg[i];
        remap_pair(m, &s->t0, &s->t1);
        /* its window's first frame (10 ms each), as openai-whisper's seek: of the input */
        s->seek = (int)lround(time_map_start(m, s->seek * 0.01) * 100.0);
        for (int j = 0; j < s->n_words; j++)
            remap_pair(m, &s->words[j].t0, &s->words[j].t1);
        for (int j = 0; s->token_t0 && s->token_t1 && j < s->n_tokens; j++)
            remap_pair(m, &s->token_t0[j], &s->token_t1[j]);
    }
}
