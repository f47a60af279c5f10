/*
 * api_batch.c — whisperc_full_batch and the selection of its per-input results
 * (include/libwhisperc.h). The batching itself is src/decoder/transcribe_batch.c.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "decoder/decode_batch.h"
#include "decoder/transcribe_batch.h"
#include "decoder/transcript_remap.h"
#include "frontend/audio.h"
#include "frontend/mel.h"
#include "frontend/mel_prefetch.h"
#include "util.h"

#define MAX_BATCH 64

void api_batch_clear(whisperc_state *st) {
    if (!st)
        return;
    for (int i = 0; i < st->n_batch; i++)
        transcript_free(&st->batch_tr[i]);
    free(st->batch_tr);
    st->batch_tr = NULL;
    st->n_batch = st->i_batch = 0;
}

static void swap_transcripts(struct wc_transcript *a, struct wc_transcript *b) {
    struct wc_transcript tmp = *a;
    *a = *b;
    *b = tmp;
}

int whisperc_batch_n_inputs(const whisperc_state *st) { return st ? st->n_batch : 0; }

whisperc_status whisperc_batch_select(whisperc_state *st, int i_input) {
    if (!st || i_input < 0 || i_input >= st->n_batch)
        return WHISPERC_ERR_INVALID_ARG;
    swap_transcripts(&st->tr, &st->batch_tr[st->i_batch]); /* the selected one back */
    swap_transcripts(&st->tr, &st->batch_tr[i_input]);
    st->i_batch = i_input;
    return WHISPERC_OK;
}

/* Sums one whisperc_full's timings into the batch's. */
static void add_timings(struct whisperc_timings *sum, const struct whisperc_timings *t) {
    sum->mel_ms += t->mel_ms;
    sum->encode_ms += t->encode_ms;
    sum->decode_ms += t->decode_ms;
    sum->n_windows += t->n_windows;
    sum->n_decode_tokens += t->n_decode_tokens;
    sum->n_fallbacks += t->n_fallbacks;
    sum->audio_seconds += t->audio_seconds;
    sum->vad_ms += t->vad_ms;
    sum->vad_seconds += t->vad_seconds;
}

/* What whisperc_full_batch cannot batch: each input alone, its transcript moved out. Only
 * the abort callback is kept, as on the batched path. */
static int one_by_one(whisperc_state *st, const struct whisperc_full_params *params,
                      const float *const *pcm, const int *n_samples, int n) {
    struct whisperc_timings sum = {0};
    struct whisperc_full_params p = *params;
    p.new_segment_fn = NULL;
    p.progress_fn = NULL;
    for (int i = 0; i < n; i++) {
        int rc = api_full(st, &p, pcm[i], n_samples[i]);
        if (rc) {
            size_t len = strlen(st->errmsg);
            char msg[sizeof st->errmsg];
            memcpy(msg, st->errmsg, len + 1);
            return api_fail(st, rc, "input %d: %s", i, msg);
        }
        add_timings(&sum, &st->timings);
        st->batch_tr[i] = st->tr;
        memset(&st->tr, 0, sizeof st->tr);
    }
    st->timings = sum;
    return 0;
}

/* After each window of any input: the abort callback. */
static bool on_window(void *user, int n_new, int percent) {
    const struct whisperc_full_params *p = user;
    (void)n_new, (void)percent;
    return p->abort_fn && p->abort_fn(p->abort_user_data);
}

uint64_t api_batch_memory_bytes(const struct wc_hparams *hp, enum wc_dtype cross_kv, int n_lanes,
                                int n_windows) {
    if (n_lanes < 1 || n_windows < 1)
        return 0;
    /* the batch decoder's buffers, then decode_batch's host logits */
    return decoder_batch_bytes(hp, cross_kv, n_lanes, n_windows) +
           decode_batch_bytes(n_lanes, n_windows, hp->n_vocab);
}

/* Decoder lanes for B windows: transcribe_batch_group(p) each. A temperature fallback's
 * best_of samples take lanes from the others while it runs; one that needs more than there are
 * (a greedy batch smaller than best_of) runs alone. */
static int batch_lane_count(const struct whisperc_full_params *p, int B) {
    return B * transcribe_batch_group(p);
}

/* Whether a batch decoder of n_lanes lanes for n_windows windows is as large as one refused
 * before on this state (and so is not tried again). */
static bool lanes_refused(const whisperc_state *st, int n_lanes, int n_windows) {
    return st->batch_bytes_refused &&
           api_batch_memory_bytes(&st->m->file->hp, st->m->be->cross_kv, n_lanes, n_windows) >=
               st->batch_bytes_refused;
}

/* Records the refusal of a batch decoder of n_lanes lanes for n_windows windows: only smaller
 * ones are tried from now on. */
static void refuse_lanes(whisperc_state *st, int n_lanes, int n_windows) {
    uint64_t bytes =
        api_batch_memory_bytes(&st->m->file->hp, st->m->be->cross_kv, n_lanes, n_windows);
    if (!st->batch_bytes_refused || bytes < st->batch_bytes_refused)
        st->batch_bytes_refused = bytes;
}

/* The batch decoder with room for p->batch_size windows (batch_lane_count lanes), or fewer:
 * when its buffers are refused (the memory budget, or the stream's allocation failing with
 * WHISPERC_ERR_NO_MEMORY, as a GPU arena does when device memory runs out), the number of
 * windows is halved down to 1, with a warning. A size refused once is not tried again on this
 * state. */
static int batch_lanes(whisperc_state *st, const struct whisperc_full_params *p) {
    const struct whisperc_model *m = st->m;
    int B = p->batch_size, G = transcribe_batch_group(p);
    while (B > 1 && lanes_refused(st, batch_lane_count(p, B), B))
        B /= 2;
    if (st->db.n_lanes == batch_lane_count(p, B) && st->db.n_regions == B)
        return 0;
    if (wc_stream_sync(st->s)) /* an earlier failure: the stream does nothing more */
        return api_fail(st, st->s->err, "%s", st->s->errmsg);
    for (;;) {
        char why[256] = "";
        decoder_batch_free(&st->db, st->s);
        int rc = 0;
        int n_lanes = batch_lane_count(p, B);
        if (api_state_budget_check(m, st, st->dec.n_group_max, st->enc.n_windows, n_lanes, B, why,
                                   sizeof why))
            rc = WHISPERC_ERR_NO_MEMORY;
        else if ((rc = decoder_batch_init(&st->db, st->s, &m->file->hp, &m->w, n_lanes, B)))
            snprintf(why, sizeof why, "%s", st->s->errmsg);
        if (!rc)
            return 0;
        if (rc == WHISPERC_ERR_NO_MEMORY && B == 1) {
            /* not even one window's lanes: the caller runs the inputs one by one on the
             * state's own decoder (the failed allocation was the stream's only error) */
            st->s->err = 0;
            st->s->errmsg[0] = '\0';
            refuse_lanes(st, n_lanes, 1);
            if (G > 1)
                return api_fail(st, rc, "batch of 1 with %d %s: %s", G,
                                p->temperatures[0] > 0.0f ? "samples" : "beams", why);
            return api_fail(st, rc, "batch of 1: %s", why);
        }
        if (rc != WHISPERC_ERR_NO_MEMORY)
            return api_fail(st, rc, "batch of %d: %s", B, why);
        /* The stream was synced without error before: the failed allocation is its only
         * error (decoder_batch_init queues no work), and nothing of it stays allocated. */
        st->s->err = 0;
        st->s->errmsg[0] = '\0';
        refuse_lanes(st, n_lanes, B);
        api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_WARN,
                "batch of %d does not fit in memory (%s); using %d", B, why, B / 2);
        B /= 2;
    }
}

bool api_single_batched(const whisperc_state *st, const struct whisperc_full_params *p) {
    const char *env = getenv("WHISPERC_DECODER");
    if (!transcribe_batch_supported(p) || (env && !strcmp(env, "single")) ||
        lanes_refused(st, batch_lane_count(p, 1), 1))
        return false;
    return (env && !strcmp(env, "batch")) || st->s->be->ops->step_graph_begin != NULL;
}

/* The single input's log-Mel, moved out of the caller's (transcribe_batch frees it). */
static int given_mel(void *user, int i, struct mel_spec *out, char *err, size_t err_size) {
    struct mel_spec *mel = user;
    (void)i, (void)err, (void)err_size;
    *out = *mel;
    memset(mel, 0, sizeof *mel);
    return 0;
}

int api_transcribe_one_batched(whisperc_state *st, const struct whisperc_full_params *p,
                               struct transcribe_ctx *t, struct mel_spec *mel,
                               struct wc_transcript *out) {
    /* a batch's lanes, if there are enough for one window, serve as they are */
    if (st->db.n_lanes < batch_lane_count(p, 1)) {
        if (wc_stream_sync(st->s))
            return api_fail(st, st->s->err, "%s", st->s->errmsg);
        struct whisperc_full_params one = *p;
        one.batch_size = 1;
        int rc = batch_lanes(st, &one);
        if (rc == WHISPERC_ERR_NO_MEMORY) {
            /* refused and recorded by batch_lanes, the stream clean: transcribe() runs
             * instead, now and from now on */
            st->errmsg[0] = '\0';
            return rc;
        }
        if (rc)
            return rc;
    }
    struct batch_source src = {1, given_mel, mel};
    return transcribe_batch(t, &st->db, &src, 1, out, st->errmsg, sizeof st->errmsg);
}

/* transcribe_batch's source of log-Mels: input i's, needed when it enters a lane; computed
 * then, or ahead on other threads by pf. */
struct mel_source {
    whisperc_state *st; /* the prefetcher's threads read its model, never its timings */
    const struct whisperc_full_params *p;
    const float *const *pcm;
    const int *n_samples;
    const int *input;        /* the caller's number of input i (errors name it); NULL: i */
    struct mel_prefetch *pf; /* NULL: each computed when needed */
};

/* Reads only what no thread writes during the batch: the prefetcher's threads call it. */
static int compute_mel(const struct mel_source *ms, int i, int n_threads, struct mel_spec *out,
                       char *err, size_t err_size) {
    const struct whisperc_model *m = ms->st->m;
    char why[256];
    int rc = mel_compute(out, ms->pcm[i], (size_t)ms->n_samples[i], WC_CHUNK_SAMPLES,
                         m->file->mel_filters, m->file->hp.n_mels, n_threads, why, sizeof why);
    if (rc)
        wc_errf(err, err_size, "input %d: %s", ms->input ? ms->input[i] : i, why);
    return rc;
}

static int prefetch_mel(void *user, int i, struct mel_spec *out, char *err, size_t err_size) {
    return compute_mel(user, i, 1, out, err, err_size); /* one input per thread */
}

/* mel_ms counts the time the batch waits for the log-Mel: all of it without the prefetcher. */
static int input_mel(void *user, int i, struct mel_spec *out, char *err, size_t err_size) {
    struct mel_source *ms = user;
    double t0 = wc_now_ms();
    int rc = ms->pf ? mel_prefetch_take(ms->pf, i, out, err, err_size)
                    : compute_mel(ms, i, ms->p->n_threads, out, err, err_size);
    ms->st->timings.mel_ms += wc_now_ms() - t0;
    return rc;
}

/* Log-Mels ahead of the lanes when the host's cores are free (a GPU backend), or as
 * WHISPERC_MEL_PREFETCH=1/0 says: up to two inputs a lane and MEL_PREFETCH_BYTES ahead. */
#define MEL_PREFETCH_BYTES ((size_t)256 << 20)
static int start_prefetch(struct mel_source *ms, int n, int n_lanes) {
    const char *env = getenv("WHISPERC_MEL_PREFETCH");
    bool on = env && *env ? strcmp(env, "0") != 0 : ms->st->s->be->ops->host_cores_free;
    if (!on || n < 2)
        return 0;
    size_t *bytes = malloc((size_t)n * sizeof *bytes);
    if (!bytes)
        return WHISPERC_ERR_NO_MEMORY;
    for (int i = 0; i < n; i++)
        bytes[i] = (size_t)ms->st->m->file->hp.n_mels *
                   (((size_t)ms->n_samples[i] + WC_CHUNK_SAMPLES) / WC_HOP_LENGTH) * sizeof(float);
    int rc = mel_prefetch_new(&ms->pf, n, bytes, ms->p->n_threads, 2 * n_lanes, MEL_PREFETCH_BYTES,
                              prefetch_mel, ms);
    free(bytes);
    return rc;
}

/* Windows an encoder pass waits for (transcribe_batch.h): where the backend merges the windows'
 * linears into one GEMM (a GPU), up to `windows` (the pass's size), one for every 8 lanes, so
 * that at most about 1 lane in 16 waits; else 1 (the CPU gains nothing from a fuller pass).
 * WHISPERC_ENCODE_MIN_PASS=N sets it (tests run the waiting on the CPU with it). */
static int min_pass(const whisperc_state *st, int windows) {
    const char *env = getenv("WHISPERC_ENCODE_MIN_PASS");
    if (env && *env)
        return atoi(env) > 0 ? atoi(env) : 1;
    if (!st->s->be->ops->linear_merge_windows)
        return 1;
    int n = st->db.n_regions / 8;
    return n < 1 ? 1 : n > windows ? windows : n;
}

/* The stream for the batch's encoder passes beside its steps (whisperc_state.s_enc), made on
 * first use; NULL where the passes run on st->s between the steps: the CPU (its ops use the
 * cores the steps would), unless WHISPERC_ENCODE_STREAM=1 (a test of the GPU's order on the
 * CPU), WHISPERC_ENCODE_STREAM=0, or a stream that could not be made. */
static struct wc_stream *encoder_stream(whisperc_state *st, const struct whisperc_full_params *p) {
    const struct wc_backend_ops *op = st->s->be->ops;
    const char *env = getenv("WHISPERC_ENCODE_STREAM");
    bool on = env && *env ? strcmp(env, "0") != 0 : op->host_cores_free;
    if (!on || st->s_enc_refused) {
        if (st->s_enc) /* (its memory back) */
            op->stream_free(st->s_enc);
        st->s_enc = NULL;
        return NULL;
    }
    char why[256] = "";
    if (!st->s_enc && op->stream_new(st->m->be, st->n_threads, WC_STREAM_BACKGROUND, &st->s_enc,
                                     why, sizeof why)) {
        st->s_enc = NULL;
        st->s_enc_refused = true;
        api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_WARN,
                "no stream for encoder passes beside the decoder (%s): they run between its steps",
                why);
        return NULL;
    }
    if (op->stream_set_threads(st->s_enc, st->n_threads))
        return NULL; /* (the CPU's; its old pool kept) */
    return st->s_enc;
}

/* A background stream that failed is given back (its stream_free waits for what it still
 * runs) and made again by the next batch; one out of device memory (transcribe_batch then ran
 * the passes on st->s), or beside a state's stream out of it, is not made again: its arena and
 * scratch come on top of what the batch was sized for. A device fault is the state stream's to
 * report too (the context is gone). */
static void drop_failed_encoder_stream(whisperc_state *st, const struct whisperc_full_params *p) {
    if (!st->s_enc)
        return;
    bool oom = st->s_enc->err ? st->s_enc->err == WHISPERC_ERR_NO_MEMORY
                              : st->s->err == WHISPERC_ERR_NO_MEMORY;
    if (!st->s_enc->err && !oom)
        return;
    if (oom) {
        st->s_enc_refused = true;
        api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_WARN,
                "encoder passes beside the decoder: %s; from now on they run between its steps",
                st->s_enc->err ? st->s_enc->errmsg : "the decoder is out of device memory");
    }
    if (st->s_enc->err == WHISPERC_ERR_DEVICE && !st->s->err)
        wc_stream_fail(st->s, WHISPERC_ERR_DEVICE, "%s", st->s_enc->errmsg);
    st->s_enc->be->ops->stream_free(st->s_enc);
    st->s_enc = NULL;
}

/* The batched path: transcribe_batch over the state's lanes, each input's log-Mel made when it
 * enters a lane and freed when it leaves (memory grows with the batch, not the inputs); the
 * transcripts into outs[n]; input[i] (NULL: i) is input i's number in the caller's list. */
static int batched(whisperc_state *st, const struct whisperc_full_params *p,
                   const float *const *pcm, const int *n_samples, const int *input, int n,
                   int i_lang, struct wc_transcript *outs) {
    int rc = batch_lanes(st, p);
    if (rc)
        return rc;
    /* Windows encoded together: a backend that merges their linears into one GEMM gains from
     * many (encoder_pass_cap); the CPU runs the same sgemm calls either way, so it keeps two
     * (the batched staging path, for a fraction of the memory: ~40 MiB a window for base). */
    int cap = st->s->be->ops->linear_merge_windows ? encoder_pass_cap() : 2;
    /* fewer windows when the budget refuses them (a refusal allocates nothing; one window is
     * always there), as the lanes above */
    int slots = st->db.n_regions;
    int w = slots < cap ? slots : cap;
    while (st->n_windows_refused && w >= st->n_windows_refused && w > 1)
        w /= 2;
    for (; w > st->enc.n_windows; w /= 2) {
        rc = api_encoder_reserve(st, w);
        if (!rc)
            break;
        if (rc != WHISPERC_ERR_NO_MEMORY || st->s->err)
            return rc;
        st->n_windows_refused = w;
        api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_WARN,
                "%d encoder windows do not fit in memory (%s); using %d", w, st->errmsg,
                w / 2 > st->enc.n_windows ? w / 2 : st->enc.n_windows);
        st->errmsg[0] = '\0';
        rc = 0;
    }
    struct mel_source ms = {st, p, pcm, n_samples, input, NULL};
    rc = start_prefetch(&ms, n, slots);
    if (rc)
        return api_fail(st, rc, "out of memory for the log-Mel prefetcher");
    struct batch_source src = {n, input_mel, &ms};
    struct transcribe_ctx t = api_transcribe_ctx(st, p, i_lang, on_window, (void *)p);
    t.s_enc = encoder_stream(st, p);
    rc = transcribe_batch(&t, &st->db, &src, min_pass(st, st->enc.n_windows), outs, st->errmsg,
                          sizeof st->errmsg);
    drop_failed_encoder_stream(st, p);
    mel_prefetch_free(ms.pf);
    const struct wc_backend_ops *op = st->s->be->ops;
    char why[384];
    if (op->step_graph_state && !st->graph_warned &&
        op->step_graph_state(st->s, why, sizeof why) < 0) {
        st->graph_warned = 1; /* the steps ran, as plain launches */
        api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_WARN, "decoder step graphs: %s", why);
    }
    st->timings.encode_ms = t.encode_ms;
    st->timings.decode_ms = t.decode_ms;
    st->timings.n_windows = t.n_windows;
    st->timings.n_decode_tokens = t.n_decode_steps;
    st->timings.n_batch_steps = t.n_batch_steps;
    st->timings.n_fallbacks = t.n_fallbacks;
    for (int i = 0; i < n; i++)
        st->timings.audio_seconds += n_samples[i] / (double)WC_SAMPLE_RATE;
    return rc;
}

/* The batched path with VAD, as whisperc_full runs it for each input: its speech gathered
 * (up front, for all inputs), the inputs with speech batched, each transcript's times mapped
 * back to its input's; an input without speech gets the empty transcript. */
static int batched_vad(whisperc_state *st, const struct whisperc_full_params *p,
                       const float *const *pcm, const int *n_samples, int n, int i_lang) {
    float **speech = calloc((size_t)n, sizeof *speech);
    const float **in = calloc((size_t)n, sizeof *in);
    int *n_in = calloc((size_t)n, sizeof *n_in), *which = calloc((size_t)n, sizeof *which);
    struct time_map *maps = calloc((size_t)n, sizeof *maps);
    struct wc_transcript *outs = calloc((size_t)n, sizeof *outs);
    double vad_ms = 0, vad_seconds = 0;
    int rc = 0, m = 0;
    if (!speech || !in || !n_in || !which || !maps || !outs)
        rc = api_fail(st, WHISPERC_ERR_NO_MEMORY, "out of memory for %d inputs", n);
    const struct silero_vad *silero = NULL;
    if (!rc) /* a Silero file that does not load is no input's fault */
        rc = api_vad_model(st, p, &silero);
    for (int i = 0; i < n && !rc; i++) {
        size_t n_speech = 0;
        if (p->abort_fn && p->abort_fn(p->abort_user_data)) {
            rc = api_fail(st, WHISPERC_ERR_ABORTED, "aborted by the caller");
            break;
        }
        rc = api_vad_speech(st, p, pcm[i], n_samples[i], &speech[i], &n_speech, &maps[i]);
        vad_ms += st->timings.vad_ms, vad_seconds += st->timings.vad_seconds;
        if (!rc && n_speech > (size_t)INT32_MAX)
            rc = api_fail(st, WHISPERC_ERR_UNSUPPORTED, "vad: %zu samples of speech is too long",
                          n_speech);
        if (rc) {
            char msg[sizeof st->errmsg];
            memcpy(msg, st->errmsg, sizeof msg);
            api_fail(st, rc, "input %d: %s", i, msg);
        } else if (n_speech) {
            in[m] = speech[i], n_in[m] = (int)n_speech, which[m++] = i;
        } else {
            rc = api_no_speech_transcript(st, i_lang, &st->batch_tr[i]);
        }
    }
    if (!rc && m)
        rc = batched(st, p, in, n_in, which, m, i_lang, outs);
    for (int j = 0; !rc && j < m; j++) {
        int i = which[j];
        segments_remap(outs[j].seg, outs[j].n_seg, &maps[i]);
        st->batch_tr[i] = outs[j];
        memset(&outs[j], 0, sizeof outs[j]);
    }
    st->timings.vad_ms = vad_ms;
    st->timings.vad_seconds = vad_seconds;
    st->timings.audio_seconds = 0;
    for (int i = 0; i < n; i++)
        st->timings.audio_seconds += n_samples[i] / (double)WC_SAMPLE_RATE;
    for (int i = 0; i < n; i++) {
        if (speech)
            free(speech[i]);
        if (maps)
            time_map_free(&maps[i]);
        if (outs)
            transcript_free(&outs[i]);
    }
    free(speech), free(in), free(n_in), free(which), free(maps), free(outs);
    return rc;
}

static whisperc_status full_batch(whisperc_state *st, const struct whisperc_full_params *params,
                                  const float *const *pcm16k, const int *n_samples, int n_inputs) {
    double t0 = wc_now_ms();
    api_batch_clear(st);
    transcript_free(&st->tr);
    st->has_result = false;
    st->errmsg[0] = '\0';
    st->pending_audio_ms = 0;
    audio_loudness_free(&st->loudness); /* speakers unknown: whisperc_full_file's only */
    st->loudness_pending = false;
    memset(&st->timings, 0, sizeof st->timings);
    st->timings.size = sizeof st->timings;
    if (!params || params->size < sizeof(size_t))
        return api_fail(st, WHISPERC_ERR_INVALID_ARG,
                        "params must come from whisperc_full_default_params()");
    if (!pcm16k || !n_samples || n_inputs < 1)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "no inputs (n_inputs = %d)", n_inputs);
    struct whisperc_full_params p = api_params_from(params);
    if (p.batch_size < 1 || p.batch_size > MAX_BATCH)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "batch_size must be 1..%d, got %d", MAX_BATCH,
                        p.batch_size);
    int i_lang = -1, rc = api_check_params(st, &p, &i_lang);
    for (int i = 0; i < n_inputs && !rc; i++)
        if ((rc = api_check_samples(st, &p, pcm16k[i], n_samples[i]))) {
            char msg[sizeof st->errmsg];
            memcpy(msg, st->errmsg, sizeof msg);
            api_fail(st, rc, "input %d: %s", i, msg);
        }
    if (!rc)
        rc = api_state_ready(st);
    if (!rc)
        rc = api_set_threads(st, p.n_threads);
    st->batch_tr = rc ? NULL : calloc((size_t)n_inputs, sizeof *st->batch_tr);
    if (!rc && !st->batch_tr)
        rc = api_fail(st, WHISPERC_ERR_NO_MEMORY, "out of memory for %d inputs", n_inputs);
    if (!rc) {
        st->n_batch = n_inputs;
        bool refused =
            lanes_refused(st, batch_lane_count(&p, 1), 1); /* not even one window's lanes */
        /* a part of each input (offset_ms, duration_ms): one by one, where run_full cuts it */
        bool parts = p.offset_ms > 0 || p.duration_ms > 0;
        if (transcribe_batch_supported(&p) && !refused && !parts) {
            rc = p.vad ? batched_vad(st, &p, pcm16k, n_samples, n_inputs, i_lang)
                       : batched(st, &p, pcm16k, n_samples, NULL, n_inputs, i_lang, st->batch_tr);
            if (rc == WHISPERC_ERR_NO_MEMORY && lanes_refused(st, batch_lane_count(&p, 1), 1) &&
                !st->s->err) { /* one window's lanes do not fit: one by one */
                api_log(p.log_fn, p.log_user_data, WHISPERC_LOG_WARN,
                        "%s; the inputs run one by one", st->errmsg);
                st->errmsg[0] = '\0';
                for (int i = 0; i < n_inputs; i++) /* VAD's empty results, made already */
                    transcript_free(&st->batch_tr[i]);
                rc = one_by_one(st, &p, pcm16k, n_samples, n_inputs);
            }
        } else {
            rc = one_by_one(st, &p, pcm16k, n_samples, n_inputs);
        }
    }
    st->timings.total_ms = wc_now_ms() - t0;
    if (rc) {
        api_batch_clear(st);
        transcript_free(&st->tr);
        return rc;
    }
    /* input 0 selected: its transcript moves into tr, its entry left empty */
    st->tr = st->batch_tr[0];
    memset(&st->batch_tr[0], 0, sizeof st->batch_tr[0]);
    st->has_result = true;
    return WHISPERC_OK;
}

whisperc_status whisperc_full_batch(whisperc_state *st, const struct whisperc_full_params *params,
                                    const float *const *pcm16k, const int *n_samples,
                                    int n_inputs) {
    if (!st)
        return WHISPERC_ERR_INVALID_ARG;
    struct api_thread held = api_thread_enter(st->m->be);
    whisperc_status rc = full_batch(st, params, pcm16k, n_samples, n_inputs);
    api_thread_leave(held);
    return rc;
}
