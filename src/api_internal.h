/*
 * api_internal.h — what the public handles hold. Only src/api*.c include this.
 */
#ifndef WC_API_INTERNAL_H
#define WC_API_INTERNAL_H

#include "backend.h"
#include "decoder/decoder.h"
#include "decoder/decoder_batch.h"
#include "decoder/transcribe.h"
#include "encoder/encoder.h"
#include "frontend/audio.h"
#include "libwhisperc.h"
#include "model/model_file.h"
#include "model/vocab.h"
#include "model/weights.h"

struct silero_vad;

/* Read-only after whisperc_model_load; shared by states. */
struct whisperc_model {
    struct wc_model_file *file; /* mapping, hparams, mel filters */
    struct wc_vocab vocab;
    struct wc_backend *be; /* holds the weights */
    struct wc_weights w;
    int32_t *non_speech; /* tokenizer.non_speech_tokens */
    int n_non_speech;
    int64_t max_memory_bytes; /* whisperc_model_params.max_memory_bytes */
    bool keep_quant;          /* quantized matrices held as blocks where the backend can */
};

struct whisperc_state {
    const struct whisperc_model *m;
    struct wc_stream *s; /* thread pool / GPU stream, activation memory */
    int n_threads;
    struct encoder enc;
    struct decoder dec;
    struct decoder_batch db; /* whisperc_full_batch's lanes, made on first use (db.n_lanes 0) */
    /* the smallest batch decoder (api_batch_memory_bytes) refused for lack of memory (0:
     * none): counted in bytes, since a lane's size depends on its group (beams share their
     * window's cross-attention K/V) */
    uint64_t batch_bytes_refused;
    int n_windows_refused; /* smallest encoder window count refused likewise (0: none) */
    int graph_warned;      /* the batch step's graph failure was logged (once a state) */
    float *audio_features; /* backend [enc.n_windows][n_audio_ctx][n_audio_state] */
    /* a background stream whisperc_full_batch's encoder passes run on, beside the decoder's
     * steps on s (transcribe_batch.c): made on first use where the backend computes apart from
     * the host (a GPU) or WHISPERC_ENCODE_STREAM=1 says; NULL: none (s_enc_refused: could not
     * be made, the passes run on s) */
    struct wc_stream *s_enc;
    bool s_enc_refused;
    struct wc_transcript tr;
    bool has_result;
    struct whisperc_timings timings;
    double pending_audio_ms; /* decode time of whisperc_full_file, for the next timings */
    char errmsg[512];
    /* whisperc_full_batch: every input's transcript; the selected one, i_batch, is moved out
     * into tr (its entry is left empty) so that the result accessors read it */
    struct wc_transcript *batch_tr; /* [n_batch], owned */
    int n_batch, i_batch;
    struct silero_vad *silero; /* params.vad_model_path's model, loaded on first use */
    char *silero_path;         /* the path it was loaded from (owned) */
    /* the params' suppress_tokens and suppress_regex's matches (api_check_params; owned) */
    int32_t *suppress;
    int n_suppress;
    char *regex;        /* the suppress_regex matched into regex_ids */
    int32_t *regex_ids; /* ascending */
    int n_regex_ids;
    /* whisperc_full_file's two channels with params.diarize (whisperc_segment_speaker);
     * loudness_pending: measured for the whisperc_full call that comes next */
    struct audio_loudness loudness;
    bool loudness_pending;
};

/* ---- shared by api.c and api_batch.c ---- */

/* *out: the Silero model of p->vad_model_path, loaded into st unless it holds that path's
 * already (errmsg filled on failure); NULL when there is none (the built-in detector). */
int api_vad_model(whisperc_state *st, const struct whisperc_full_params *p,
                  const struct silero_vad **out);

/* A line to the params' log callback, if any. */
void api_log(whisperc_log_fn fn, void *user, whisperc_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* 0 if the model with a state grown to room for n_group sequences, n_windows encoder windows
 * and n_lanes batch lanes for n_batch windows fits
 * the model's memory budget (else err filled): an explicit budget (max_memory_bytes > 0) holds
 * the model and the whole state; the default one (available memory, which already counts the
 * model and st as it is; st NULL: a new state) the growth. Host memory only: a CUDA state's
 * buffers live on the GPU, where its arena refuses what does not fit. */
int api_state_budget_check(const struct whisperc_model *m, const whisperc_state *st, int n_group,
                           int n_windows, int n_lanes, int n_batch, char *err, size_t err_size);
/* What decoder_batch_init allocates for n_lanes lanes and n_windows audio regions (0 for
 * none), with decode_batch's host buffers (api_batch.c). */
uint64_t api_batch_memory_bytes(const struct wc_hparams *hp, enum wc_dtype cross_kv, int n_lanes,
                                int n_windows);

/* A public call's hold on its caller's thread for the backend's ops (backend.h thread_enter):
 * what api_thread_leave needs to give the thread back as it was (a CUDA context current). */
struct api_thread {
    struct wc_backend *be;
    void *held;
};
static inline struct api_thread api_thread_enter(struct wc_backend *be) {
    return (struct api_thread){be, be && be->ops->thread_enter ? be->ops->thread_enter(be) : NULL};
}
static inline void api_thread_leave(struct api_thread t) {
    if (t.be && t.be->ops->thread_leave)
        t.be->ops->thread_leave(t.be, t.held);
}

/* Records the message in st->errmsg; returns rc. */
int api_fail(whisperc_state *st, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Defaults, then the fields of a caller's params (in->size of them: any header version). */
struct whisperc_full_params api_params_from(const struct whisperc_full_params *in);
/* 0, or api_fail for audio whisperc_full refuses (no samples, not finite, too loud, too long). */
int api_check_samples(whisperc_state *st, const struct whisperc_full_params *p, const float *pcm16k,
                      int n_samples);
/* 0, or api_fail for bad params; *i_lang: the language index (-1: detect or English-only). */
int api_check_params(whisperc_state *st, const struct whisperc_full_params *p, int *i_lang);
int api_set_threads(whisperc_state *st, int n_threads);
/* Before a call's work: a state whose stream failed (its error is sticky) gets a fresh stream
 * and buffers, so that one failure does not fail every later call; 0 or api_fail. Not after
 * WHISPERC_ERR_DEVICE (the GPU context is spoiled: that error again). */
int api_state_ready(whisperc_state *st);
/* The transcription context of st's model, encoder and decoder for params p. */
struct transcribe_ctx api_transcribe_ctx(whisperc_state *st, const struct whisperc_full_params *p,
                                         int i_lang, bool (*on_window)(void *, int, int),
                                         void *user);
/* Gives st's encoder room for n_windows windows per pass (and audio_features room for their
 * output), within the model's memory budget; never shrinks. 0 or api_fail; on
 * WHISPERC_ERR_NO_MEMORY with the stream's error clear (the budget refused, or device memory
 * ran out) the encoder keeps its old size and fewer windows may be asked for. */
int api_encoder_reserve(whisperc_state *st, int n_windows);
/* whisperc_full without touching the batch results. */
whisperc_status api_full(whisperc_state *st, const struct whisperc_full_params *params,
                         const float *pcm16k, int n_samples);
/* Frees the batch results (api_batch.c); the selected one in tr stays for the caller. */
void api_batch_clear(whisperc_state *st);
/* Whether whisperc_full decodes p through the batch decoder, one lane (api_batch.c): greedy
 * params it supports, on a backend with step graphs (each step then replays as one graph), or
 * as WHISPERC_DECODER=batch / single says. */
bool api_single_batched(const whisperc_state *st, const struct whisperc_full_params *p);
/* transcribe() of one log-Mel through the batch decoder (one lane); takes mel over (freed).
 * WHISPERC_ERR_NO_MEMORY, with nothing done, when the lane does not fit: the caller then
 * runs transcribe(). */
int api_transcribe_one_batched(whisperc_state *st, const struct whisperc_full_params *p,
                               struct transcribe_ctx *t, struct mel_spec *mel,
                               struct wc_transcript *out);

struct time_map;
/* VAD (api.c): the speech of pcm gathered into *speech (malloc'd) and the map back to pcm's
 * times; sets st->timings.vad_ms and vad_seconds for this input. Returns 0 or an error (st's
 * message set where it is out of memory; vad_detect's in st->errmsg otherwise). */
int api_vad_speech(whisperc_state *st, const struct whisperc_full_params *p, const float *pcm,
                   int n, float **speech, size_t *n_speech, struct time_map *map);
/* *out = the transcript of audio with no speech (no segments, empty text, language i_lang). */
int api_no_speech_transcript(whisperc_state *st, int i_lang, struct wc_transcript *out);

#endif /* WC_API_INTERNAL_H */
