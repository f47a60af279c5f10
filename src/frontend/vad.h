/*
 * vad.h — voice activity detection without a model file: a speech probability per 10 ms frame
 * from band energy over an adaptive noise floor and spectral flatness, then speech segments by
 * whisper.cpp's rules (silero-vad's get_speech_timestamps): threshold with hysteresis, minimum
 * speech and silence durations, padding. The algorithm and its constants: docs/vad.md.
 */
#ifndef WC_VAD_H
#define WC_VAD_H

#include <stddef.h>

#define VAD_HOP_SAMPLES 160 /* one probability per 10 ms at 16 kHz */
#define VAD_WIN_SAMPLES 400 /* 25 ms Hann window, starting at the frame's first sample */

/* whisper.cpp's whisper_vad_params names; defaults in its whisper_vad_default_params(). */
struct vad_params {
    float threshold;             /* speech when p >= threshold; ends below threshold - 0.15 */
    int min_speech_duration_ms;  /* shorter speech is dropped (250) */
    int min_silence_duration_ms; /* shorter silence does not end speech (100) */
    int speech_pad_ms;           /* added to both ends of each segment (30) */
    int n_threads;               /* threads the Silero model may use (< 1: one) */
};

struct vad_span {
    size_t start, end; /* samples [start, end) of the input */
};

/* p(speech) of frame i, which covers samples [i*160, i*160 + 400) (zeros past the end), into
 * *probs (malloc'd, the caller frees; n_frames = ceil(n_samples / 160)). Deterministic.
 * Returns 0, or WHISPERC_ERR_NO_MEMORY with err filled. */
int vad_frame_probs(const float *pcm, size_t n_samples, float **probs, size_t *n_frames, char *err,
                    size_t err_size);

/* Speech segments of an n_samples signal from its frame probabilities (frame i starts at sample
 * i * hop), sorted and disjoint, into *out (malloc'd, the caller frees; NULL when *n_out is 0).
 * Returns 0 or WHISPERC_ERR_NO_MEMORY. */
int vad_segments_from_probs(const float *probs, size_t n_frames, size_t hop, size_t n_samples,
                            const struct vad_params *p, struct vad_span **out, size_t *n_out);

struct silero_vad;

/* The probabilities of silero (silero_vad_probs, a frame per 512 samples) or, when silero is
 * NULL, vad_frame_probs'; then vad_segments_from_probs. */
int vad_detect(const struct silero_vad *silero, const float *pcm, size_t n_samples,
               const struct vad_params *p, struct vad_span **out, size_t *n_out, char *err,
               size_t err_size);

/* Joins spans less than max_gap apart into one (in place; *n_spans shrinks), so that gathered
 * speech keeps its short pauses as they were: Whisper's segmentation and punctuation depend on
 * them. Only the longer silences are then replaced by vad_gather's gap. */
void vad_merge_close(struct vad_span *spans, size_t *n_spans, size_t max_gap);

/* The spans of pcm one after another, gap samples of zeros between them, into *out (malloc'd,
 * the caller frees; NULL when n_spans is 0) of *n_out samples. Returns 0 or
 * WHISPERC_ERR_NO_MEMORY. */
int vad_gather(const float *pcm, const struct vad_span *spans, size_t n_spans, size_t gap,
               float **out, size_t *n_out);

#endif /* WC_VAD_H */
