/*
 * api_internal.h — what the public handles hold. Only src/api*.c include this.
 */
#ifndef WC_API_INTERNAL_H
#define WC_API_INTERNAL_H

#include "backend.h"
#include "decoder/decoder.h"
#include "decoder/transcribe.h"
#include "encoder/encoder.h"
#include "libwhisperc.h"
#include "model/model_file.h"
#include "model/vocab.h"
#include "model/weights.h"

/* Read-only after whisperc_model_load; shared by states. */
struct whisperc_model {
    struct wc_model_file *file; /* mapping, hparams, mel filters */
    struct wc_vocab vocab;
    struct wc_backend *be; /* holds the weights */
    struct wc_weights w;
    int32_t *non_speech; /* tokenizer.non_speech_tokens */
    int n_non_speech;
    int64_t max_memory_bytes; /* whisperc_model_params.max_memory_bytes */
};

struct whisperc_state {
    const struct whisperc_model *m;
    struct wc_stream *s; /* thread pool / GPU stream, activation memory */
    int n_threads;
    struct encoder enc;
    struct decoder dec;
    float *audio_features; /* backend [n_audio_ctx][n_audio_state] */
    struct wc_transcript tr;
    bool has_result;
    struct whisperc_timings timings;
    double pending_audio_ms; /* decode time of whisperc_full_file, for the next timings */
    char errmsg[512];
};

#endif /* WC_API_INTERNAL_H */
