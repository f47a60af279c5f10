/*
 * silero_vad.h — Silero VAD (v5 or v6, 16 kHz) from whisper.cpp's ggml VAD file
 * (ggml-silero-v5.1.2.bin, or tools/convert-silero-vad from the silero-vad package): one speech
 * probability per 512 samples (32 ms), as silero-vad's own OnnxWrapper computes it
 * (docs/vad.md). The model is read-only once loaded: any number of threads may run it at once.
 */
#ifndef WC_SILERO_VAD_H
#define WC_SILERO_VAD_H

#include <stddef.h>

#define SILERO_WINDOW 512 /* samples a probability */

struct silero_vad;

/* Reads a ggml Silero VAD file into *out (silero_vad_free). Returns 0, WHISPERC_ERR_IO,
 * WHISPERC_ERR_MODEL_FORMAT (not such a file, or another architecture) or
 * WHISPERC_ERR_NO_MEMORY, with err filled. */
int silero_vad_load(const char *path, struct silero_vad **out, char *err, size_t err_size);
void silero_vad_free(struct silero_vad *m); /* NULL is a no-op */

/* "5.1.2": the file's model version. */
const char *silero_vad_version(const struct silero_vad *m);

/* p(speech) of window i, samples [i*512, i*512 + 512) of pcm (zeros past the end), which also
 * sees the 64 samples before it, into *probs (malloc'd, the caller frees; *n_windows =
 * ceil(n_samples / 512)), on up to n_threads threads (the result does not depend on it).
 * Returns 0, or WHISPERC_ERR_NO_MEMORY with err filled. */
int silero_vad_probs(const struct silero_vad *m, const float *pcm, size_t n_samples, int n_threads,
                     float **probs, size_t *n_windows, char *err, size_t err_size);

#endif /* WC_SILERO_VAD_H */
