/*
 * transcribe_batch.c — see transcribe_batch.h. One loop (turn): step the running lanes once,
 * and while the device computes the step, hand each window that ended at the step before back
 * to its input's job (which cuts segments, or asks for the fallback), retire the inputs that
 * are done, give every lane without an input an input not started yet, and copy the next
 * windows' log-Mels into the encoder's input; then take the step's tokens, start again, at the
 * next temperature, each window that needs a fallback (its audio still in its lane), and
 * encode the next window of every lane that has none running (those that freed up together,
 * in passes of the encoder's windows) and start it. The other lanes keep their place: lanes
 * join and leave the batch as windows end (continuous batching). An input's log-Mel exists
 * only while it holds a lane.
 *
 * A "lane" here is one input's place: decode_batch's slot k and audio region k. The decoder's
 * own lanes are what windows hold while they run (1, the beams, or best_of samples); a
 * fallback's samples may need more of them than a window at temperature 0, so a fallback
 * waiting for lanes goes first, and no new window starts until it has them.
 */
#include "decoder/transcribe_batch.h"

#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "decoder/decode_batch.h"
#include "decoder/decode_window.h"
#include "decoder/decoder.h"
#include "decoder/decoder_batch.h"
#include "encoder/encoder.h"
#include "frontend/mel.h"
#include "model/model_file.h"
#include "model/vocab.h"
#include "util.h"

bool transcribe_batch_supported(const struct whisperc_full_params *p) {
    return (p->strategy == WHISPERC_SAMPLING_GREEDY ||
            p->strategy == WHISPERC_SAMPLING_BEAM_SEARCH) &&
           p->n_temperatures >= 1 && p->temperatures[0] >= 0.0f;
}

int transcribe_batch_group(const struct whisperc_full_params *p) {
    if (p->n_temperatures >= 1 && p->temperatures[0] > 0.0f)
        return p->best_of > 1 ? p->best_of : 1;
    return p->strategy == WHISPERC_SAMPLING_BEAM_SEARCH && p->beam_size > 1 ? p->beam_size : 1;
}

struct lane {
    struct transcribe_job *job; /* NULL: the lane has no input */
    int i_input;
    bool running; /* a window of job is in the decoder (started, result not handed back) */
    /* not NULL: its window is to be decoded again at the next temperature with these
     * options (the job's), when decoder lanes free up */
    const struct decode_opts *retry;
};

struct batch_run {
    struct transcribe_ctx *t;
    struct decoder_batch *db;
    struct decode_batch d;
    struct lane *lanes;       /* [d.n_slots], lane k is decode_batch's slot k */
    int *need;                /* [n_slots] lanes whose next window is to be started */
    struct decode_opts *opts; /* [n_slots] each lane's window's options at temperatures[0] */
    int group;                /* decoder lanes a window at temperatures[0] holds */
    const struct batch_source *src;
    struct mel_spec *mels; /* [src->n]; an input's is computed when it enters a lane, freed
                            * when it leaves */
    int min_pass;          /* windows to wait for before an encoder pass (transcribe_batch.h) */
    int retry_lanes;       /* the most samples a fallback decodes in the batch (more: alone) */
    int waited;            /* steps taken since a lane began to wait for its window */
    /* windows whose log-Mels prepare_windows copied into the encoder's input while a step ran:
     * slot i holds lane prepared[i]'s, while t->n_windows is still prepared_at */
    int *prepared, n_prepared, prepared_at;
};

/* The caller's abort callback (params.abort_fn), asked between steps, inputs and encoder
 * passes: true, err filled, when it asks to stop. */
static bool aborted(const struct transcribe_ctx *t, char *err, size_t err_size) {
    if (!t->p->abort_fn || !t->p->abort_fn(t->p->abort_user_data))
        return false;
    wc_errf(err, err_size, "aborted by the caller");
    return true;
}

/* Ends input i's job and frees its log-Mel (the job points into it). */
static void retire(struct batch_run *b, struct transcribe_job *j, int i) {
    transcribe_job_free(j);
    mel_free(&b->mels[i]);
}

/* Starts inputs in the lanes without one until none is left; inputs with no audio end at
 * once. */
static int fill_lanes(struct batch_run *b, int *next, struct wc_transcript *outs, char *err,
                      size_t err_size) {
    for (int k = 0; k < b->d.n_slots; k++) {
        while (!b->lanes[k].job && *next < b->src->n) {
            /* an input's start may be a language detection, an encoder pass */
            if (aborted(b->t, err, err_size))
                return WHISPERC_ERR_ABORTED;
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
            b->lanes[k] = (struct lane){.job = j, .i_input = i};
        }
    }
    return 0;
}

/* The log-Mels of the windows the next encoder pass starts, copied into the encoder's input
 * while a step runs, in start_windows' order (the lanes without a running window, as many as
 * a pass takes): start_windows finds them there and copies only the rest. Copies still valid
 * from an earlier turn (no encoder pass since, the same lane in the same place) stay. */
static void prepare_windows(struct batch_run *b) {
    struct transcribe_ctx *t = b->t;
    if (b->prepared_at != t->n_windows)
        b->n_prepared = 0;
    b->prepared_at = t->n_windows;
    for (int k = 0, i = 0; k < b->d.n_slots && i < t->enc->n_windows; k++) {
        const struct lane *ln = &b->lanes[k];
        if (!ln->job || ln->running || ln->retry)
            continue;
        if (i >= b->n_prepared || b->prepared[i] != k) {
            transcribe_job_window(ln->job, encoder_input(t->enc, i), 2 * t->hp->n_audio_ctx,
                                  &b->opts[k]);
            b->prepared[i] = k;
        }
        if (++i > b->n_prepared)
            b->n_prepared = i;
    }
}

/* The next window of each of the n lanes in b->need through the encoder into the lane's
 * cross-attention, in passes of up to enc->n_windows (one upload and one encoder run each),
 * and its decoding started. */
static int start_windows(struct batch_run *b, int n_need, char *err, size_t err_size) {
    struct transcribe_ctx *t = b->t;
    int n_max = t->enc->n_windows, rc = 0;
    bool ready = b->prepared_at == t->n_windows; /* no encoder pass wrote the input since */
    for (int k0 = 0; k0 < n_need && !rc; k0 += n_max) {
        if (k0 > 0 && aborted(t, err, err_size)) /* a large model's pass takes seconds */
            return WHISPERC_ERR_ABORTED;
        int n = n_need - k0 < n_max ? n_need - k0 : n_max;
        double t0 = wc_now_ms();
        /* each window straight into the encoder's input, which the pass's upload reads as it
         * runs, without a host copy: no upload before is pending (each pass ends in a sync);
         * those prepare_windows put there already are not copied again */
        for (int i = 0; i < n; i++) {
            int k = b->need[k0 + i];
            if (ready && k0 == 0 && i < b->n_prepared && b->prepared[i] == k)
                continue;
            transcribe_job_window(b->lanes[k].job, encoder_input(t->enc, i), 2 * t->hp->n_audio_ctx,
                                  &b->opts[k]);
        }
        encoder_forward_input(t->enc, t->s, n, t->audio_features);
        /* the encoder's MLP buffer ([n][n_audio_ctx][4 s] floats) is free until its next pass */
        decoder_batch_set_audio(b->db, t->s, n, b->need + k0, t->audio_features, t->enc->mlp,
                                encoder_mlp_floats(t->enc));
        t->n_windows += n;
        rc = wc_stream_sync(t->s);
        t->encode_ms += wc_now_ms() - t0;
        if (rc) {
            wc_errf(err, err_size, "encoder: %s", t->s->errmsg);
            return rc;
        }
        t0 = wc_now_ms();
        const struct decode_opts *os[ENCODER_PASS_LIMIT];
        for (int i = 0; i < n; i++) {
            int k = b->need[k0 + i];
            os[i] = &b->opts[k];
            b->lanes[k].running = true;
        }
        rc = decode_batch_start_n(&b->d, n, b->need + k0, os);
        t->decode_ms += wc_now_ms() - t0;
    }
    if (rc)
        wc_errf(err, err_size, "decoder: %s", t->s->errmsg[0] ? t->s->errmsg : "failed");
    return rc;
}

/* The windows that wait to be decoded again at the next temperature started, in lane order,
 * while decoder lanes are free for them (*waiting: one still waits). Returns 0 or
 * decode_batch_start's error. */
static int restart_fallbacks(struct batch_run *b, bool *waiting) {
    *waiting = false;
    for (int k = 0; k < b->d.n_slots; k++) {
        struct lane *ln = &b->lanes[k];
        if (!ln->retry)
            continue;
        if (decode_n_group(ln->retry) > decode_batch_lanes_free(&b->d)) {
            *waiting = true;
            return 0;
        }
        double t0 = wc_now_ms();
        int rc = decode_batch_start(&b->d, k, ln->retry);
        b->t->decode_ms += wc_now_ms() - t0;
        if (rc)
            return rc;
        ln->retry = NULL;
        ln->running = true;
    }
    return 0;
}

/* Hands each ended window back to its lane's job, in lane order; a lane whose input is done
 * is emptied (the input retired); a window that needs the next temperature waits to start
 * again (restart_fallbacks). */
static int finish_lanes(struct batch_run *b) {
    int rc = 0;
    for (int k = 0; k < b->d.n_slots; k++) {
        struct lane *ln = &b->lanes[k];
        if (!ln->running || !decode_batch_ended(&b->d, k))
            continue;
        struct decode_result r;
        int rt = decode_batch_take(&b->d, k, &r);
        ln->running = false;
        if (!rc && rt)
            rc = rt;
        if (rc) {
            decode_result_free(&r);
            continue;
        }
        b->t->n_decode_steps += r.n_steps;
        if (transcribe_job_retry(ln->job, &r, b->retry_lanes, &ln->retry))
            continue;
        /* word timestamps: the alignment reads the window's audio, still in region k */
        const void *xk, *xv;
        decoder_batch_audio(b->db, k, &xk, &xv);
        decoder_borrow_audio(b->t->dec, xk, xv, b->db->xkv);
        rc = transcribe_job_decoded(ln->job, &r); /* calls t->on_window, which may abort */
        decoder_borrow_audio(b->t->dec, NULL, NULL, WC_F32);
        if (!rc && transcribe_job_done(ln->job)) {
            rc = transcribe_job_end(ln->job);
            retire(b, ln->job, ln->i_input);
            *ln = (struct lane){0};
        }
    }
    return rc;
}

/* One loop turn: one step of the running windows queued, and while the device computes it,
 * the windows the step before ended handed back (an input done retires, a window that needs a
 * fallback waits for lanes), inputs started in the lanes left without one, and the log-Mels of
 * the windows the next encoder pass starts copied into its input; then the step's tokens
 * taken, the fallbacks started again, and the next window of every lane that has an input but
 * no window started (they join the next turn's step). On a GPU the host's share of a turn so
 * hides behind the step; on the CPU the ops run as they are issued, in the same order, so a
 * window gets the same tokens either way. *idle: no lane has an input left. */
static int turn(struct batch_run *b, int *next, struct wc_transcript *outs, char *err,
                size_t err_size, bool *idle) {
    struct transcribe_ctx *t = b->t;
    double t0 = wc_now_ms();
    int rc = decode_batch_step_begin(&b->d, NULL);
    t->decode_ms += wc_now_ms() - t0;
    if (rc)
        wc_errf(err, err_size, "decoder: %s", t->s->errmsg[0] ? t->s->errmsg : "failed");
    if (!rc)
        rc = finish_lanes(b);
    if (!rc)
        rc = fill_lanes(b, next, outs, err, err_size);
    if (!rc)
        prepare_windows(b);
    t0 = wc_now_ms();
    int rc_end = decode_batch_step_end(&b->d); /* after a failure too: nothing left queued */
    t->decode_ms += wc_now_ms() - t0;
    if (!rc && rc_end) {
        rc = rc_end;
        wc_errf(err, err_size, "decoder: %s", t->s->errmsg[0] ? t->s->errmsg : "failed");
    }
    bool fallback_waits = false;
    if (!rc && (rc = restart_fallbacks(b, &fallback_waits)))
        wc_errf(err, err_size, "decoder: %s", t->s->errmsg[0] ? t->s->errmsg : "failed");
    int n_need = 0, n_busy = 0;
    for (int k = 0; k < b->d.n_slots && !rc; k++) {
        n_busy += b->lanes[k].job != NULL;
        if (b->lanes[k].job && !b->lanes[k].running && !b->lanes[k].retry)
            b->need[n_need++] = k;
    }
    *idle = n_busy == 0;
    if (rc || *idle)
        return rc;
    /* a pass of few windows, while other lanes still decode, can wait a few steps for more;
     * windows start only on free decoder lanes, none while a fallback waits for some */
    bool start =
        n_need >= b->min_pass || n_need == n_busy || b->waited >= TRANSCRIBE_BATCH_MAX_WAIT;
    int room = fallback_waits ? 0 : decode_batch_lanes_free(&b->d) / b->group;
    int n_start = n_need < room ? n_need : room;
    if (n_start && start) {
        b->waited = 0;
        if ((rc = start_windows(b, n_start, err, err_size)))
            return rc;
    } else if (n_need) {
        b->waited++;
    }
    return 0;
}

int transcribe_batch(struct transcribe_ctx *t, struct decoder_batch *db,
                     const struct batch_source *src, int min_pass, struct wc_transcript *outs,
                     char *err, size_t err_size) {
    const struct whisperc_full_params *p = t->p;
    int beams = p->strategy == WHISPERC_SAMPLING_BEAM_SEARCH ? p->beam_size : 0;
    int B = db->n_regions, n = src->n, next = 0, rc = 0;
    struct batch_run b = {
        .t = t,
        .db = db,
        .lanes = calloc((size_t)B, sizeof *b.lanes),
        .need = calloc((size_t)B, sizeof *b.need),
        .prepared = calloc((size_t)B, sizeof *b.prepared),
        .prepared_at = -1,
        .opts = calloc((size_t)B, sizeof *b.opts),
        .src = src,
        .mels = calloc((size_t)n, sizeof *b.mels),
        .min_pass = min_pass < 1 ? 1 : min_pass,
        .group = transcribe_batch_group(p),
        .retry_lanes = db->n_lanes,
    };
    /* "alone": each fallback on the state's decoder (over the window's K/V here), to compare */
    const char *env = getenv("WHISPERC_BATCH_FALLBACK");
    if (env && !strcmp(env, "alone"))
        b.retry_lanes = 0;
    for (int i = 0; i < n; i++)
        memset(&outs[i], 0, sizeof outs[i]);
    int d_rc = decode_batch_init(&b.d, db, t->s, t->vocab, beams);
    if (d_rc || !b.lanes || !b.need || !b.prepared || !b.opts || !b.mels) {
        wc_errf(err, err_size, "out of memory for a batch of %d", B);
        rc = WHISPERC_ERR_NO_MEMORY;
    }
    decoder_batch_reset(db);
    for (bool idle = false; !rc && !idle;) {
        rc = turn(&b, &next, outs, err, err_size, &idle);
        /* between steps too, as decode_window: nothing is queued after a turn */
        if (!rc && !idle && aborted(t, err, err_size))
            rc = WHISPERC_ERR_ABORTED;
    }
    t->n_batch_steps += b.d.n_steps;
    for (int k = 0; b.lanes && k < B; k++)
        if (b.lanes[k].job)
            retire(&b, b.lanes[k].job, b.lanes[k].i_input);
    if (rc)
        for (int i = 0; i < n; i++)
            transcript_free(&outs[i]);
    if (!d_rc)
        decode_batch_free(&b.d);
    free(b.lanes), free(b.need), free(b.prepared), free(b.opts), free(b.mels);
    return rc;
}
