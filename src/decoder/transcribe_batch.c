/*
 * transcribe_batch.c — see transcribe_batch.h. One loop: fill the free lanes with inputs not
 * started yet, encode each lane's next window into its lane, decode the batch, hand each
 * result back to its input's job (which cuts segments, or falls back alone), retire the
 * inputs that are done. An input's log-Mel exists only while it holds a lane.
 */
#include "decoder/transcribe_batch.h"

#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "decoder/decode_batch.h"
#include "decoder/decode_window.h"
#include "decoder/decoder_batch.h"
#include "encoder/encoder.h"
#include "frontend/mel.h"
#include "model/model_file.h"
#include "model/vocab.h"
#include "util.h"

bool transcribe_batch_supported(const struct whisperc_full_params *p) {
    return p->strategy == WHISPERC_SAMPLING_GREEDY && p->n_temperatures >= 1 &&
           p->temperatures[0] == 0.0f && !p->word_timestamps && p->max_len == 0;
}

struct lane {
    struct transcribe_job *job;
    int i_input;
};

struct batch_run {
    struct transcribe_ctx *t;
    struct decoder_batch *db;
    struct lane *lanes; /* [db->n_lanes]; lanes[0..n_busy) hold a job */
    int n_busy;
    float *window;             /* host [enc->n_windows][n_mels][3000] */
    const float **windows;     /* [enc->n_windows] pointers into window */
    float *logits;             /* host [max(2, n_lanes)][n_vocab] */
    struct decode_opts *opts;  /* [n_lanes] */
    struct decode_result *res; /* [n_lanes] */
    const struct batch_source *src;
    struct mel_spec *mels; /* [src->n]; an input's is computed when it enters a lane, freed
                            * when it leaves */
};

/* Ends input i's job and frees its log-Mel (the job points into it). */
static void retire(struct batch_run *b, struct transcribe_job *j, int i) {
    transcribe_job_free(j);
    mel_free(&b->mels[i]);
}

/* Starts inputs until every lane has one or none are left; inputs with no audio end at once. */
static int fill_lanes(struct batch_run *b, int *next, struct wc_transcript *outs, char *err,
                      size_t err_size) {
    while (b->n_busy < b->db->n_lanes && *next < b->src->n) {
        int i = (*next)++;
        struct transcribe_job *j = NULL;
        int rc = b->src->mel(b->src->user, i, &b->mels[i], err, err_size);
        if (!rc)
            rc = transcribe_job_start(b->t, &b->mels[i], &outs[i], err, err_size, &j);
        if (!rc && transcribe_job_done(j))
            rc = transcribe_job_end(j);
        if (rc || transcribe_job_done(j)) {
            retire(b, j, i);
            if (rc)
                return rc;
            continue;
        }
        b->lanes[b->n_busy++] = (struct lane){j, i};
    }
    return 0;
}

/* Each busy lane's next window through the encoder into the lane's cross-attention: the
 * windows in passes of up to enc->n_windows, each pass one upload and one encoder run. */
static int encode_lanes(struct batch_run *b) {
    struct transcribe_ctx *t = b->t;
    int n_max = t->enc->n_windows;
    size_t window = (size_t)t->hp->n_mels * WC_CHUNK_FRAMES;
    size_t features = (size_t)t->hp->n_audio_ctx * t->hp->n_audio_state;
    double t0 = wc_now_ms();
    for (int k0 = 0; k0 < b->n_busy; k0 += n_max) {
        int n = b->n_busy - k0 < n_max ? b->n_busy - k0 : n_max;
        for (int i = 0; i < n; i++) {
            b->windows[i] = b->window + i * window;
            transcribe_job_window(b->lanes[k0 + i].job, b->window + i * window, &b->opts[k0 + i]);
        }
        encoder_forward_batch(t->enc, t->s, b->windows, WC_CHUNK_FRAMES, n, t->audio_features);
        for (int i = 0; i < n; i++)
            decoder_batch_set_audio(b->db, t->s, k0 + i, t->audio_features + i * features);
        t->n_windows += n;
    }
    int rc = wc_stream_sync(t->s);
    t->encode_ms += wc_now_ms() - t0;
    return rc;
}

/* Hands each lane's result to its job; lanes whose input is done are retired (compacted). */
static int finish_lanes(struct batch_run *b) {
    int rc = 0, n_keep = 0;
    for (int k = 0; k < b->n_busy; k++) {
        struct lane ln = b->lanes[k];
        if (!rc)
            rc = transcribe_job_decoded(ln.job, &b->res[k]);
        else
            decode_result_free(&b->res[k]);
        if (!rc && transcribe_job_done(ln.job)) {
            rc = transcribe_job_end(ln.job);
            retire(b, ln.job, ln.i_input);
            continue;
        }
        b->lanes[n_keep++] = ln;
    }
    b->n_busy = n_keep;
    return rc;
}

int transcribe_batch(struct transcribe_ctx *t, struct decoder_batch *db,
                     const struct batch_source *src, struct wc_transcript *outs, char *err,
                     size_t err_size) {
    int B = db->n_lanes, n = src->n, n_vocab = t->vocab->n_vocab, next = 0, rc = 0;
    struct batch_run b = {
        .t = t,
        .db = db,
        .lanes = calloc((size_t)B, sizeof *b.lanes),
        .window =
            malloc((size_t)t->enc->n_windows * t->hp->n_mels * WC_CHUNK_FRAMES * sizeof(float)),
        .windows = calloc((size_t)t->enc->n_windows, sizeof *b.windows),
        .logits = malloc((size_t)(B > 2 ? B : 2) * n_vocab * sizeof(float)),
        .opts = calloc((size_t)B, sizeof *b.opts),
        .res = calloc((size_t)B, sizeof *b.res),
        .src = src,
        .mels = calloc((size_t)n, sizeof *b.mels),
    };
    for (int i = 0; i < n; i++)
        memset(&outs[i], 0, sizeof outs[i]);
    if (!b.lanes || !b.window || !b.windows || !b.logits || !b.opts || !b.res || !b.mels) {
        wc_errf(err, err_size, "out of memory for a batch of %d", B);
        rc = WHISPERC_ERR_NO_MEMORY;
    }
    while (!rc) {
        rc = fill_lanes(&b, &next, outs, err, err_size);
        if (rc || b.n_busy == 0)
            break;
        rc = encode_lanes(&b);
        if (rc) {
            wc_errf(err, err_size, "encoder: %s", t->s->errmsg);
            break;
        }
        double t0 = wc_now_ms();
        rc = decode_batch_greedy(db, t->s, t->vocab, b.opts, b.n_busy, b.logits, b.res);
        t->decode_ms += wc_now_ms() - t0;
        for (int k = 0; k < b.n_busy; k++)
            t->n_decode_steps += b.res[k].n_steps;
        if (rc) {
            wc_errf(err, err_size, "decoder: %s", t->s->errmsg[0] ? t->s->errmsg : "failed");
            for (int k = 0; k < b.n_busy; k++)
                decode_result_free(&b.res[k]);
            break;
        }
        rc = finish_lanes(&b); /* each window's end calls t->on_window, which may abort */
    }
    for (int k = 0; k < b.n_busy; k++)
        retire(&b, b.lanes[k].job, b.lanes[k].i_input);
    if (rc)
        for (int i = 0; i < n; i++)
            transcript_free(&outs[i]);
    free(b.lanes), free(b.window), free(b.windows), free(b.logits), free(b.opts), free(b.res);
    free(b.mels);
    return rc;
}
