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

/* Activation buffers (backend memory, owned) for one stream, with room for n_windows windows
 * encoded together: every layer norm over all their rows in one call, each linear too where
 * the backend merges windows (linear_merge_windows), else one call per window; the convolution
 * stems per window; self-attention in one call (attention_windows: each window over its own
 * keys). A window's rows are n_audio_ctx rows apart. */
struct encoder {
    const struct wc_hparams *hp;
    const struct wc_weights *w;
    int n_windows; /* capacity: windows per encoder_forward_batch */
    float *mel_in; /* [n_windows][n_mels][2*n_audio_ctx]: the windows as uploaded */
    float *mel;    /* [n_windows][1 + 2*n_audio_ctx + 1][n_mels]: zero row, frames,
                      zero row, per window (mel_in transposed on the backend) */
    float *conv1;  /* [n_windows][1 + 2*n_audio_ctx + 1][s], zero rows around each */
    float *x;      /* [n_windows * n_audio_ctx][s] residual stream */
    float *h;      /* [n_windows * n_audio_ctx][s] normed input of a sub-block; NULL where fused */
    float *q, *k, *v, *att; /* [n_windows * n_audio_ctx][s] */
    float *mlp;             /* [n_windows * n_audio_ctx][4s] */
    float *input; /* host (backend host_alloc) [n_windows][n_mels][2*n_audio_ctx]: the windows */
};

/* Windows a batch encodes per pass at most (whisperc_full_batch): 8 x 1500 rows give a GPU's
 * GEMMs 8 times the tiles of one window; more would cost memory (about 40 MiB per window for
 * base, 100 MiB for large) for little more. */
#define ENCODER_MAX_WINDOWS 8
/* The most windows a pass can take at all (arrays sized by it) */
#define ENCODER_PASS_LIMIT  64

/* The pass size a backend that merges windows (a GPU) encodes at most: ENCODER_MAX_WINDOWS,
 * or WHISPERC_ENCODE_MAX_PASS=N (1 ... ENCODER_PASS_LIMIT; anything else: the default), so
 * that a benchmark can time larger passes without a rebuild. */
int encoder_pass_cap(void);

/* Buffers for up to n_windows (>= 1) windows per call. Returns 0 or the stream's error
 * (nothing left allocated). */
int encoder_init(struct encoder *e, struct wc_stream *s, const struct wc_hparams *hp,
                 const struct wc_weights *w, int n_windows);
void encoder_free(struct encoder *e, struct wc_stream *s);
/* The floats of e->mlp ([n_windows * n_audio_ctx][4 s]): free between passes, for others'
 * scratch (the batch decoder's cross K/V of a pass). */
size_t encoder_mlp_floats(const struct encoder *e);
/* Bytes encoder_init allocates for n_windows (backend buffers and host staging), for the
 * memory budget. */
uint64_t encoder_memory_bytes(const struct wc_hparams *hp, int n_windows);

/* mel_window: host [n_mels][n_frames] (frames >= 2*n_audio_ctx; the first 2*n_audio_ctx are
 * used, row stride n_frames). out: backend [n_audio_ctx][s]. Queues the work; errors are sticky
 * in the stream. */
void encoder_forward(struct encoder *e, struct wc_stream *s, const float *mel_window, int n_frames,
                     float *out);

/* The same for n windows (1 <= n <= e->n_windows) in one pass: mel_windows[i] as mel_window
 * above (all with row stride n_frames), copied into encoder_input(e, i) (after a sync: a pass
 * before may still be reading them); out: backend [n][n_audio_ctx][s], window i's features at
 * out + i * n_audio_ctx * s. */
void encoder_forward_batch(struct encoder *e, struct wc_stream *s, const float *const *mel_windows,
                           int n_frames, int n, float *out);

/* Window i's log-Mel in host memory, [n_mels][2*n_audio_ctx], that encoder_forward_input
 * uploads without copying it on the host: a caller that computes windows in place writes them
 * here, only while the stream is idle (after a sync), since a pass reads them as it runs. */
float *encoder_input(struct encoder *e, int i);
/* encoder_forward_batch of the n windows already in encoder_input(e, 0 .. n-1). */
void encoder_forward_input(struct encoder *e, struct wc_stream *s, int n, float *out);

#endif /* WC_ENCODER_H */
