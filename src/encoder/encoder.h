/*
 * encoder.h — Whisper's audio encoder (openai-whisper model.py AudioEncoder) over backend ops:
 * conv1 + GELU, conv2 (stride 2) + GELU, + sinusoidal positions, n_audio_layer residual
 * attention blocks, ln_post. One 30 s log-Mel window [n_mels][3000] in, [n_audio_ctx][s] out.
 */
#ifndef WC_ENCODER_H
#define WC_ENCODER_H

#include <stdint.h>

#include "backend.h"
#include "model/model_file.h"
#include "model/weights.h"

/* Activation buffers (backend memory, owned) for one stream. */
struct encoder {
    const struct wc_hparams *hp;
    const struct wc_weights *w;
    float *mel;             /* [1 + 2*n_audio_ctx + 1][n_mels]: zero row, frames, zero row */
    float *conv1;           /* [1 + 2*n_audio_ctx + 1][s], zero rows around */
    float *x;               /* [n_audio_ctx][s] residual stream */
    float *h;               /* [n_audio_ctx][s] normed input of a sub-block */
    float *q, *k, *v, *att; /* [n_audio_ctx][s] */
    float *mlp;             /* [n_audio_ctx][4s] */
    float *mel_host;        /* [2*n_audio_ctx][n_mels] host staging, transposed window */
};

int encoder_init(struct encoder *e, struct wc_stream *s, const struct wc_hparams *hp,
                 const struct wc_weights *w);
void encoder_free(struct encoder *e, struct wc_stream *s);
/* Bytes encoder_init allocates (backend buffers and host staging), for the memory budget. */
uint64_t encoder_memory_bytes(const struct wc_hparams *hp);

/* mel_window: host [n_mels][n_frames] (frames >= 2*n_audio_ctx; the first 2*n_audio_ctx are
 * used, row stride n_frames). out: backend [n_audio_ctx][s]. Queues the work; errors are sticky
 * in the stream. */
void encoder_forward(struct encoder *e, struct wc_stream *s, const float *mel_window, int n_frames,
                     float *out);

#endif /* WC_ENCODER_H */
