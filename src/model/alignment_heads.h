/*
 * alignment_heads.h — the cross-attention heads whose weights follow the audio in time, per
 * official model (openai-whisper's _ALIGNMENT_HEADS), used for word-level timestamps.
 */
#ifndef WC_ALIGNMENT_HEADS_H
#define WC_ALIGNMENT_HEADS_H

#include "model/model_file.h"

struct wc_align_head {
    int layer, head; /* decoder block, head within its cross-attention */
};

/* The heads of model `preset` (a name of model_size_names, e.g. "large-v1"), or, with preset
 * NULL or "auto", of the official model whose shape hp has (an 80-mel "large" is taken as
 * large-v2). A model of no official shape uses every head of the last half of the decoder
 * blocks, as openai-whisper does for a model without a list. Returns the number of heads with
 * *out malloc'd, or -1 for an unknown preset or a preset whose shape differs from hp, or -2 when
 * out of memory. */
int alignment_heads(const struct wc_hparams *hp, const char *preset, struct wc_align_head **out);

#endif /* WC_ALIGNMENT_HEADS_H */
