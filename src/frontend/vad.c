/*
 * vad.c — energy/spectral voice activity detector (vad.h), no model file.
 *
 * Per 10 ms frame (25 ms Hann window, one FFTW r2c plan of 400 as mel.c), over the speech band
 * 240..4000 Hz (FFT bins 6..100):
 *   e    band power in dB re full scale (a full-scale sine in band: -3 dB);
 *   snr  e minus the noise floor: the minimum, over +-3 s, of e smoothed over 110 ms (minimum
 *        statistics, R. Martin 2001: speech has pauses every few seconds, so the local minimum
 *        of the smoothed power tracks the noise under it, stationary or slowly varying);
 *   ton  tonality, -10 log10 of the spectral flatness (geometric / arithmetic mean of the band's
 *        power spectrum; Moattar & Homayounpour 2009, "A simple but efficient real-time voice
 *        activity detection algorithm"), minus its own minimum over +-3 s: voiced speech has
 *        harmonics, 10..20 dB over noise, which sits within about 1 dB of its minimum.
 *   p = sigmoid((snr - 9 dB) / 3 dB + clamp((ton - 3 dB) / 2 dB, -1, 1))
 * so a frame at the default threshold 0.5 is speech 9 dB over the floor, from 6 dB when tonal
 * (voiced), only from 12 dB when flat (noise bursts, fricatives inside words are bridged by the
 * minimum silence). Frames under -70 dBFS (a few 16-bit LSBs) are never speech: digital silence
 * and dither have no noise floor worth tracking.
 *
 * Segments follow whisper.cpp's whisper_vad_segments_from_probs (silero-vad
 * get_speech_timestamps): speech starts at p >= threshold, a candidate end is the first frame
 * under threshold - 0.15, confirmed after min_silence_duration_ms; segments shorter than
 * min_speech_duration_ms are dropped; then speech_pad_ms is added to each end (gaps shorter
 * than two pads are split in the middle). Not here: max_speech_duration_s (whisper.cpp's
 * default is unlimited).
 */
#include "frontend/vad.h"

#include <fftw3.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fftw_lock.h"
#include "frontend/silero_vad.h"
#include "libwhisperc.h"
#include "util.h"

#define VAD_SAMPLE_RATE  16000
#define VAD_BIN_LO       6   /* 240 Hz: FFT bins are 40 Hz apart */
#define VAD_BIN_HI       100 /* 4000 Hz, inclusive */
#define VAD_N_BINS       (VAD_BIN_HI - VAD_BIN_LO + 1)
#define VAD_SMOOTH_R     3     /* +-3 frames: 70 ms mean before the minimum */
#define VAD_FLOOR_R      400   /* 4 s: the span of each side of the noise floor */
#define VAD_SILENCE_DB   -70.0 /* frames below are never speech */
#define VAD_SNR_DB       9.0   /* SNR at p = 0.5 for a frame of average tonality */
#define VAD_SNR_SCALE_DB 3.0   /* dB of SNR per unit of logit */
#define VAD_TON_DB       3.0   /* tonality over its minimum that is neutral */
#define VAD_TON_SCALE_DB 2.0   /* dB of tonality per unit of logit, at most +-1 unit */
#define VAD_NEG_OFFSET   0.15f /* whisper.cpp: neg_threshold = threshold - 0.15 */

// ---- frame features

/* Band power (dB re full scale) and tonality (dB) of every frame. */
static int vad_features(const float *pcm, size_t n, size_t n_frames, double *e_db, double *t_db) {
    float *in = NULL;
    fftwf_complex *out = NULL;
    fftwf_plan plan = NULL;
    fftw_planner_lock(); /* FFTW planning is not thread-safe */
    in = fftwf_malloc(VAD_WIN_SAMPLES * sizeof *in);
    out = fftwf_malloc((VAD_WIN_SAMPLES / 2 + 1) * sizeof *out);
    if (in && out) /* FFTW_ESTIMATE: the plan, so every output bit, does not depend on timing */
        plan = fftwf_plan_dft_r2c_1d(VAD_WIN_SAMPLES, in, out, FFTW_ESTIMATE);
    fftw_planner_unlock();
    int rc = plan ? 0 : WHISPERC_ERR_NO_MEMORY;

    float win[VAD_WIN_SAMPLES];
    double win_ss = 0.0;
    for (int i = 0; i < VAD_WIN_SAMPLES; i++) {
        win[i] = (float)(0.5 - 0.5 * cos(2.0 * M_PI * i / VAD_WIN_SAMPLES));
        win_ss += (double)win[i] * win[i];
    }
    /* One-sided bins to the mean square of the band's signal (Parseval, window power removed). */
    const double scale = 2.0 / (VAD_WIN_SAMPLES * win_ss);
    for (size_t f = 0; !rc && f < n_frames; f++) {
        size_t s0 = f * VAD_HOP_SAMPLES;
        for (size_t i = 0; i < VAD_WIN_SAMPLES; i++)
            in[i] = s0 + i < n ? pcm[s0 + i] * win[i] : 0.0f;
        fftwf_execute(plan);
        double sum = 0.0, sum_log = 0.0;
        for (int k = VAD_BIN_LO; k <= VAD_BIN_HI; k++) {
            /* 1e-14 per bin: digital silence is -120 dB and perfectly flat, not NaN */
            double pk = ((double)out[k][0] * out[k][0] + (double)out[k][1] * out[k][1]) * scale;
            sum += pk;
            sum_log += log(pk + 1e-14);
        }
        double mean = sum / VAD_N_BINS + 1e-14;
        e_db[f] = 10.0 * log10(sum + 1e-12);
        t_db[f] = -10.0 * (sum_log / VAD_N_BINS - log(mean)) / log(10.0);
    }

    fftw_planner_lock();
    if (plan)
        fftwf_destroy_plan(plan);
    if (in)
        fftwf_free(in);
    if (out)
        fftwf_free(out);
    fftw_planner_unlock();
    return rc;
}

/* Mean of x over [i - r, i + r] (clipped to the signal) into out. */
static void vad_moving_mean(const double *x, size_t n, size_t r, double *out, double *prefix) {
    prefix[0] = 0.0;
    for (size_t i = 0; i < n; i++)
        prefix[i + 1] = prefix[i] + x[i];
    for (size_t i = 0; i < n; i++) {
        size_t lo = i >= r ? i - r : 0, hi = i + r + 1 < n ? i + r + 1 : n;
        out[i] = (prefix[hi] - prefix[lo]) / (double)(hi - lo);
    }
}

/* Minimum of x over [i - back, i + fwd] (clipped) into out, by a monotonic deque of indices:
 * O(n). */
static void vad_moving_min(const double *x, size_t n, size_t back, size_t fwd, double *out,
                           size_t *dq) {
    size_t head = 0, tail = 0, next = 0;
    for (size_t i = 0; i < n; i++) {
        size_t hi = i + fwd < n ? i + fwd : n - 1;
        for (; next <= hi; next++) {
            while (tail > head && x[dq[tail - 1]] >= x[next])
                tail--;
            dq[tail++] = next;
        }
        size_t lo = i >= back ? i - back : 0;
        while (dq[head] < lo)
            head++;
        out[i] = x[dq[head]];
    }
}

/* A feature's excess over its floor. The floor is the larger of the minima over the preceding
 * and the following VAD_FLOOR_R frames of the feature smoothed over VAD_SMOOTH_R frames (in
 * power when smooth_power, else in dB). Taking the larger side keeps a quieter neighbour (a
 * recording with less noise next to a noisy one) from lowering the floor across the junction:
 * noise right before a quiet clip is measured against the noise, not against the clip. */
static void vad_over_floor(const double *x_db, size_t n, bool smooth_power, double *out,
                           double *tmp, double *prefix, size_t *dq) {
    for (size_t i = 0; i < n; i++)
        tmp[i] = smooth_power ? pow(10.0, x_db[i] / 10.0) : x_db[i];
    vad_moving_mean(tmp, n, VAD_SMOOTH_R, out, prefix);
    for (size_t i = 0; smooth_power && i < n; i++)
        out[i] = 10.0 * log10(out[i] + 1e-12);
    vad_moving_min(out, n, VAD_FLOOR_R, 0, tmp, dq);
    double *fwd = prefix; /* the mean is done with prefix: reuse its n + 1 */
    vad_moving_min(out, n, 0, VAD_FLOOR_R, fwd, dq);
    for (size_t i = 0; i < n; i++)
        out[i] = x_db[i] - (tmp[i] > fwd[i] ? tmp[i] : fwd[i]);
}

int vad_frame_probs(const float *pcm, size_t n_samples, float **probs, size_t *n_frames, char *err,
                    size_t err_size) {
    *probs = NULL;
    *n_frames = 0;
    size_t n = (n_samples + VAD_HOP_SAMPLES - 1) / VAD_HOP_SAMPLES;
    if (n == 0)
        return 0;
    double *buf = malloc(6 * n * sizeof *buf + sizeof *buf);
    size_t *dq = malloc(n * sizeof *dq);
    float *p = malloc(n * sizeof *p);
    int rc = buf && dq && p ? 0 : WHISPERC_ERR_NO_MEMORY;
    double *e_db = buf, *t_db = buf + n, *snr = buf + 2 * n, *ton = buf + 3 * n;
    double *tmp = buf + 4 * n, *prefix = buf + 5 * n; /* prefix: n + 1 */
    if (!rc)
        rc = vad_features(pcm, n_samples, n, e_db, t_db);
    if (!rc) {
        vad_over_floor(e_db, n, true, snr, tmp, prefix, dq);
        vad_over_floor(t_db, n, false, ton, tmp, prefix, dq);
        for (size_t i = 0; i < n; i++) {
            double t = (ton[i] - VAD_TON_DB) / VAD_TON_SCALE_DB;
            t = t < -1.0 ? -1.0 : t > 1.0 ? 1.0 : t;
            double logit = (snr[i] - VAD_SNR_DB) / VAD_SNR_SCALE_DB + t;
            p[i] = e_db[i] < VAD_SILENCE_DB ? 0.0f : (float)(1.0 / (1.0 + exp(-logit)));
        }
    }
    free(buf);
    free(dq);
    if (rc) {
        free(p);
        wc_errf(err, err_size, "vad: out of memory for %zu frames", n);
        return rc;
    }
    *probs = p;
    *n_frames = n;
    return 0;
}

// ---- segments

static int vad_push(struct vad_span **v, size_t *n, size_t *cap, size_t start, size_t end) {
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        struct vad_span *g = realloc(*v, c * sizeof *g);
        if (!g)
            return WHISPERC_ERR_NO_MEMORY;
        *v = g;
        *cap = c;
    }
    (*v)[(*n)++] = (struct vad_span){start, end};
    return 0;
}

/* speech_pad_ms on both ends; a gap shorter than two pads is shared half and half. */
static void vad_pad(struct vad_span *s, size_t n, size_t n_samples, size_t pad) {
    for (size_t i = 0; i < n; i++) {
        if (i == 0)
            s[0].start = s[0].start > pad ? s[0].start - pad : 0;
        if (i + 1 < n) {
            size_t gap = s[i + 1].start - s[i].end;
            size_t d = gap < 2 * pad ? gap / 2 : pad;
            s[i].end += d;
            s[i + 1].start -= d;
        } else {
            s[i].end = s[i].end + pad < n_samples ? s[i].end + pad : n_samples;
        }
    }
}

int vad_segments_from_probs(const float *probs, size_t n_frames, size_t hop, size_t n_samples,
                            const struct vad_params *p, struct vad_span **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    const size_t per_ms = VAD_SAMPLE_RATE / 1000;
    size_t min_speech = (size_t)p->min_speech_duration_ms * per_ms;
    size_t min_silence = (size_t)p->min_silence_duration_ms * per_ms;
    float neg = p->threshold - VAD_NEG_OFFSET > 0.01f ? p->threshold - VAD_NEG_OFFSET : 0.01f;
    struct vad_span *v = NULL;
    size_t n = 0, cap = 0, start = 0, temp_end = 0;
    bool speech = false, ending = false;
    int rc = 0;
    for (size_t i = 0; i < n_frames && !rc; i++) {
        size_t cur = i * hop;
        if (probs[i] >= p->threshold) {
            ending = false;
            if (!speech) {
                speech = true;
                start = cur;
            }
        } else if (speech && probs[i] < neg) {
            if (!ending) {
                ending = true;
                temp_end = cur;
            }
            if (cur - temp_end >= min_silence) {
                if (temp_end - start > min_speech)
                    rc = vad_push(&v, &n, &cap, start, temp_end);
                speech = ending = false;
            }
        }
    }
    if (!rc && speech && n_samples - start > min_speech)
        rc = vad_push(&v, &n, &cap, start, n_samples);
    if (rc) {
        free(v);
        return rc;
    }
    vad_pad(v, n, n_samples, (size_t)p->speech_pad_ms * per_ms);
    *out = v;
    *n_out = n;
    return 0;
}

int vad_detect(const struct silero_vad *silero, const float *pcm, size_t n_samples,
               const struct vad_params *p, struct vad_span **out, size_t *n_out, char *err,
               size_t err_size) {
    float *probs = NULL;
    size_t n_frames = 0;
    int rc = silero ? silero_vad_probs(silero, pcm, n_samples, p->n_threads, &probs, &n_frames, err,
                                       err_size)
                    : vad_frame_probs(pcm, n_samples, &probs, &n_frames, err, err_size);
    if (!rc) {
        size_t hop = silero ? SILERO_WINDOW : VAD_HOP_SAMPLES;
        rc = vad_segments_from_probs(probs, n_frames, hop, n_samples, p, out, n_out);
        if (rc)
            wc_errf(err, err_size, "vad: out of memory for the speech segments");
    }
    free(probs);
    return rc;
}

void vad_merge_close(struct vad_span *spans, size_t *n_spans, size_t max_gap) {
    size_t n = 0;
    for (size_t i = 0; i < *n_spans; i++) {
        if (n > 0 && spans[i].start - spans[n - 1].end < max_gap)
            spans[n - 1].end = spans[i].end;
        else
            spans[n++] = spans[i];
    }
    *n_spans = n;
}

int vad_gather(const float *pcm, const struct vad_span *spans, size_t n_spans, size_t gap,
               float **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (n_spans == 0)
        return 0;
    size_t n = (n_spans - 1) * gap;
    for (size_t i = 0; i < n_spans; i++)
        n += spans[i].end - spans[i].start;
    float *x = calloc(n, sizeof *x); /* zeros: the gaps */
    if (!x)
        return WHISPERC_ERR_NO_MEMORY;
    size_t at = 0;
    for (size_t i = 0; i < n_spans; i++) {
        size_t len = spans[i].end - spans[i].start;
        memcpy(x + at, pcm + spans[i].start, len * sizeof *x);
        at += len + gap;
    }
    *out = x;
    *n_out = n;
    return 0;
}
