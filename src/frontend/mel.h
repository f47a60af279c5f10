/*
 * mel.h — log-Mel spectrogram exactly as openai-whisper's audio.py log_mel_spectrogram():
 * periodic Hann window of 400, hop 160, centre padding of 200 by reflection, |STFT|^2 with the
 * last frame dropped, mel filters (from the model file) times power, log10(max(x, 1e-10)),
 * clamp to (global max - 8), then (x + 4) / 4.
 */
#ifndef WC_MEL_H
#define WC_MEL_H

#include <stddef.h>

#define WC_N_FFT         400
#define WC_HOP_LENGTH    160
#define WC_N_FFT_BINS    201
#define WC_CHUNK_FRAMES  3000 /* 30 s window */
#define WC_CHUNK_SAMPLES 480000

struct mel_spec {
    int n_mels;
    int n_frames;
    float *data; /* [n_mels][n_frames], owned */
};

/* Log-Mel of `samples` followed by `pad_samples` zeros (transcribe() passes 480000 so the
 * clamp sees the padding). filters: [n_mels][201]. n_threads >= 1. Returns 0, or
 * WHISPERC_ERR_NO_MEMORY / WHISPERC_ERR_INVALID_ARG with err filled. n_frames = (n + pad) / 160. */
int mel_compute(struct mel_spec *out, const float *samples, size_t n_samples, size_t pad_samples,
                const float *filters, int n_mels, int n_threads, char *err, size_t err_size);

void mel_free(struct mel_spec *m); /* frees data; the struct itself is the caller's */

#endif /* WC_MEL_H */
