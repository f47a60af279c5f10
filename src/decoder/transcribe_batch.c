/*
 * transcribe_batch.c — see transcribe_batch.h. One loop (turn): step the running lanes once,
 * and while the device computes the step, hand each window that ended at the step before back
 * to its input's job (which cuts segments, or asks for the fallback), retire the inputs that
 * are done, give every lane without an input an input not started yet, and queue the next
 * windows of the lanes that need one through the encoder; then take the step's tokens, start
 * decoding the windows whose encoder pass is due, and start again, at the next temperature,
 * each window that needs a fallback (its audio still in its lane). The other lanes keep their
 * place: lanes join and leave the batch as windows end (continuous batching). An input's
 * log-Mel exists only while it holds a lane.
 *
 * Encoder passes run on t->s_enc. On a GPU that is a background stream of the state's own,
 * so that a pass (compute-bound) runs beside the steps (bound by latency and by reading the
 * cross-attention K/V), not between them; its windows start decoding after a fixed number of
 * steps (turn), the host then waiting for it: every op queued after that reads what it wrote.
 * One pass is queued at a time; it owns the encoder's buffers and host input, the audio
 * regions of its lanes (no step reads them: their windows have not started) and the decoder
 * lanes they will take, until then. On the CPU s_enc is t->s (unless WHISPERC_ENCODE_STREAM=1)
 * and each pass runs after the step, as before.
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
    bool running;  /* a window of job is in the decoder (started, result not handed back) */
    bool encoding; /* its next window is in the queued or a ready encoder pass */
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
    /* lanes pass[0..n_pass): the windows of the encoder pass queued on t->s_enc; ready[0..
     * n_ready): those of passes waited for, to start decoding after the step. Both keep their
     * decoder lanes free (group each). */
    int *pass, n_pass;
    int *ready, n_ready;
    int due;             /* d.n_steps after which the queued pass's windows start */
    int lag;             /* steps a pass runs beside, a window (WHISPERC_ENCODE_LAG) */
    int n_passes_queued; /* this call's */
    /* on the state's own stream: the windows whose log-Mels prepare_windows copied into the
     * encoder's input while a step ran: slot i holds lane prepared[i]'s, while t->n_windows is
     * still prepared_at */
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

/* The log-Mels of the windows the next encoder pass on the state's own stream takes, copied
 * into the encoder's input while a step runs, in queue_pass's order (the lanes that need a
 * window, as many as a pass takes): queue_pass finds them there and copies only the rest.
 * Copies still valid from an earlier turn (no encoder pass since, the same lane in the same
 * place) stay. */
static void prepare_windows(struct batch_run *b) {
    struct transcribe_ctx *t = b->t;
    if (b->prepared_at != t->n_windows)
        b->n_prepared = 0;
    b->prepared_at = t->n_windows;
    for (int k = 0, i = 0; k < b->d.n_slots && i < t->enc->n_windows; k++) {
        const struct lane *ln = &b->lanes[k];
        if (!ln->job || ln->running || ln->retry || ln->encoding)
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

/* The next windows of lanes[0..n) (n <= the encoder's windows) through the encoder into their
 * lanes' cross-attention, queued on t->s_enc: one upload and one encoder run. Their log-Mels
 * go straight into the encoder's input, which the upload reads as it runs: no pass is queued
 * there (the one before was waited for). The windows start decoding after lag * n more steps
 * (pass_done). */
static void queue_pass(struct batch_run *b, const int *lanes, int n) {
    struct transcribe_ctx *t = b->t;
    double t0 = wc_now_ms();
    bool prepared = b->prepared_at == t->n_windows; /* no pass since prepare_windows */
    for (int i = 0; i < n; i++) {
        int k = lanes[i];
        if (!(prepared && i < b->n_prepared && b->prepared[i] == k))
            transcribe_job_window(b->lanes[k].job, encoder_input(t->enc, i), 2 * t->hp->n_audio_ctx,
                                  &b->opts[k]);
        b->pass[i] = k;
        b->lanes[k].encoding = true;
    }
    encoder_forward_input(t->enc, t->s_enc, n, t->audio_features);
    /* the encoder's MLP buffer ([n][n_audio_ctx][4 s] floats) is free until its next pass */
    decoder_batch_set_audio(b->db, t->s_enc, n, b->pass, t->audio_features, t->enc->mlp,
                            encoder_mlp_floats(t->enc));
    t->n_windows += n;
    t->enc_queued = true;
    b->n_pass = n;
    b->n_passes_queued++;
    b->due = b->d.n_steps + b->lag * n;
    t->encode_ms += wc_now_ms() - t0;
}

/* The queued pass waited for: its windows ready to start decoding. Returns 0 or the encoder's
 * error, err filled. A background stream that could not grow its memory for the first pass
 * hands the passes to the state's stream (the caller, seeing its error, says so). */
static int pass_done(struct batch_run *b, char *err, size_t err_size) {
    struct transcribe_ctx *t = b->t;
    int rc = transcribe_encoder_idle(t); /* (language detection may have waited already) */
    if (rc == WHISPERC_ERR_NO_MEMORY && t->s_enc != t->s && b->n_passes_queued == 1 && !t->s->err) {
        t->s_enc = t->s; /* (the failed stream keeps its error: api_batch.c drops it) */
        t->n_windows -= b->n_pass;
        queue_pass(b, b->pass, b->n_pass);
        rc = transcribe_encoder_idle(t);
    }
    if (rc) {
        wc_errf(err, err_size, "encoder: %s", t->s_enc->errmsg);
        return rc;
    }
    memcpy(b->ready + b->n_ready, b->pass, (size_t)b->n_pass * sizeof *b->pass);
    b->n_ready += b->n_pass;
    b->n_pass = 0;
    return 0;
}

/* The ready windows' decoding started (their prompts now, or with the next step). */
static int start_ready(struct batch_run *b, char *err, size_t err_size) {
    struct transcribe_ctx *t = b->t;
    int chunk = b->db->max_rows < DECODE_BATCH_START_MAX ? b->db->max_rows : DECODE_BATCH_START_MAX;
    int rc = 0;
    double t0 = wc_now_ms();
    for (int i0 = 0; i0 < b->n_ready && !rc; i0 += chunk) {
        int n = b->n_ready - i0 < chunk ? b->n_ready - i0 : chunk;
        const struct decode_opts *os[DECODE_BATCH_START_MAX];
        for (int i = 0; i < n; i++) {
            int k = b->ready[i0 + i];
            os[i] = &b->opts[k];
            b->lanes[k].running = true;
            b->lanes[k].encoding = false;
        }
        rc = decode_batch_start_n(&b->d, n, b->ready + i0, os);
    }
    b->n_ready = 0;
    t->decode_ms += wc_now_ms() - t0;
    if (rc)
        wc_errf(err, err_size, "decoder: %s", t->s->errmsg[0] ? t->s->errmsg : "failed");
    return rc;
}

/* Decoder lanes that no slot holds and no window of the queued or ready passes will take. */
static int lanes_unclaimed(const struct batch_run *b) {
    return decode_batch_lanes_free(&b->d) - (b->n_pass + b->n_ready) * b->group;
}

/* The lanes that need their next window encoded, into b->need (lane order); *n_busy: lanes
 * with an input; *retry_need: the decoder lanes the fallbacks waiting to start take. */
static int lanes_needing(struct batch_run *b, int *n_busy, int *retry_need) {
    int n_need = 0;
    *n_busy = *retry_need = 0;
    for (int k = 0; k < b->d.n_slots; k++) {
        const struct lane *ln = &b->lanes[k];
        *n_busy += ln->job != NULL;
        if (ln->retry)
            *retry_need += decode_n_group(ln->retry);
        if (ln->job && !ln->running && !ln->retry && !ln->encoding)
            b->need[n_need++] = k;
    }
    return n_need;
}

/* The windows the next pass takes (the first of b->need), if one is to be queued now (else
 * 0): none while a pass is queued; as many as need one, the encoder takes and the decoder lanes
 * left after the waiting fallbacks hold. At a turn's first call (once_a_turn) a pass of few
 * windows, while other lanes still decode, waits a few steps for more (the wait counted here);
 * later calls (the state's stream's next passes in the same turn) take whatever is needed. */
static int next_pass(struct batch_run *b, bool once_a_turn) {
    int n_busy, retry_need;
    int n_need = lanes_needing(b, &n_busy, &retry_need);
    if (!n_need)
        return 0;
    int room = (lanes_unclaimed(b) - retry_need) / b->group;
    int n = n_need < room ? n_need : room;
    n = n < b->t->enc->n_windows ? n : b->t->enc->n_windows;
    bool start = !once_a_turn || n_need >= b->min_pass || n_need == n_busy ||
                 b->waited >= TRANSCRIBE_BATCH_MAX_WAIT;
    if (!b->n_pass && n > 0 && start) {
        b->waited = 0;
        return n;
    }
    if (once_a_turn)
        b->waited++;
    return 0;
}

/* The windows that wait to be decoded again at the next temperature started, in lane order,
 * while decoder lanes no pass claims are free for them. Returns 0 or decode_batch_start's
 * error. */
static int restart_fallbacks(struct batch_run *b) {
    for (int k = 0; k < b->d.n_slots; k++) {
        struct lane *ln = &b->lanes[k];
        if (!ln->retry)
            continue;
        if (decode_n_group(ln->retry) > lanes_unclaimed(b))
            return 0;
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
 * fallback waits for lanes), inputs started in the lanes left without one, and the next
 * encoder pass queued on a background stream (or, on the state's own stream, the log-Mels of
 * its windows copied into the encoder's input); then the step's tokens taken, the passes due
 * waited for (on the state's stream: run now, one after another, as many as the windows
 * needed take), their windows started, and the fallbacks started again. On a GPU the host's
 * share of a turn so hides behind the step; on the CPU the ops run as they are issued, in the
 * same order, so a window gets the same tokens either way. *idle: no lane has an input left.
 *
 * A pass on a background stream starts its windows after a fixed number of steps (lag a
 * window), or at once when no step runs: when that is decides which windows the next passes
 * hold, and a GPU's encoder gives a window of a larger pass other bits, so the schedule must
 * not depend on when a pass happens to end. */
static int turn(struct batch_run *b, int *next, struct wc_transcript *outs, char *err,
                size_t err_size, bool *idle) {
    struct transcribe_ctx *t = b->t;
    bool apart = t->s_enc != t->s;
    double t0 = wc_now_ms();
    int n_rows = 0;
    int rc = decode_batch_step_begin(&b->d, &n_rows);
    t->decode_ms += wc_now_ms() - t0;
    if (rc)
        wc_errf(err, err_size, "decoder: %s", t->s->errmsg[0] ? t->s->errmsg : "failed");
    if (!rc)
        rc = finish_lanes(b);
    if (!rc)
        rc = fill_lanes(b, next, outs, err, err_size);
    if (!rc && apart && b->n_pass && n_rows == 0) /* no step to run beside: done with it now */
        rc = pass_done(b, err, err_size);
    int n_next = !rc && apart ? next_pass(b, true) : 0;
    if (n_next) /* its host copies hidden behind the step */
        queue_pass(b, b->need, n_next);
    else if (!rc && !apart)
        prepare_windows(b);
    t0 = wc_now_ms();
    int rc_end = decode_batch_step_end(&b->d); /* after a failure too: nothing left queued */
    t->decode_ms += wc_now_ms() - t0;
    if (!rc && rc_end) {
        rc = rc_end;
        wc_errf(err, err_size, "decoder: %s", t->s->errmsg[0] ? t->s->errmsg : "failed");
    }
    if (!rc && apart && b->n_pass && (n_rows == 0 || b->d.n_steps >= b->due))
        rc = pass_done(b, err, err_size);
    /* on the state's own stream each pass runs now, after the step, waited for (its errors
     * the encoder's), as many as the windows needed take, asking the caller between them */
    for (bool first = true; !rc && !apart && (n_next = next_pass(b, first)); first = false) {
        if (!first && aborted(t, err, err_size)) { /* (a large model's pass takes seconds) */
            rc = WHISPERC_ERR_ABORTED;
            break;
        }
        queue_pass(b, b->need, n_next);
        rc = pass_done(b, err, err_size);
    }
    if (!rc && b->n_ready)
        rc = start_ready(b, err, err_size);
    if (!rc && (rc = restart_fallbacks(b)))
        wc_errf(err, err_size, "decoder: %s", t->s->errmsg[0] ? t->s->errmsg : "failed");
    int n_busy = 0;
    for (int k = 0; k < b->d.n_slots; k++)
        n_busy += b->lanes[k].job != NULL;
    *idle = n_busy == 0;
    return rc;
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
        .pass = calloc((size_t)B, sizeof *b.pass),
        .ready = calloc((size_t)B, sizeof *b.ready),
        .prepared = calloc((size_t)B, sizeof *b.prepared),
        .prepared_at = -1,
        .lag = 1,
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
    env = getenv("WHISPERC_ENCODE_LAG"); /* an experiment's knob: 0 .. 64, else the default */
    char *end = NULL;
    long lag = env ? strtol(env, &end, 10) : -1;
    if (env && *env && !*end && lag >= 0 && lag <= 64)
        b.lag = (int)lag;
    for (int i = 0; i < n; i++)
        memset(&outs[i], 0, sizeof outs[i]);
    int d_rc = decode_batch_init(&b.d, db, t->s, t->vocab, beams);
    if (d_rc || !b.lanes || !b.need || !b.pass || !b.ready || !b.prepared || !b.opts || !b.mels) {
        wc_errf(err, err_size, "out of memory for a batch of %d", B);
        rc = WHISPERC_ERR_NO_MEMORY;
    }
    decoder_batch_reset(db);
    if (!t->s_enc)
        t->s_enc = t->s;
    /* what the state's stream queued before (the encoder's zero rows, say) has run before
     * the first pass on another stream reads it */
    if (!rc && t->s_enc != t->s && (rc = wc_stream_sync(t->s)))
        wc_errf(err, err_size, "%s", t->s->errmsg);
    for (bool idle = false; !rc && !idle;) {
        rc = turn(&b, &next, outs, err, err_size, &idle);
        /* between steps too, as decode_window: no step is queued after a turn */
        if (!rc && !idle && aborted(t, err, err_size))
            rc = WHISPERC_ERR_ABORTED;
    }
    /* a pass still queued (an error, an abort) ends before its buffers can change hands */
    int rc_enc = transcribe_encoder_idle(t);
    if (!rc && rc_enc) {
        rc = rc_enc;
        wc_errf(err, err_size, "encoder: %s", t->s_enc->errmsg);
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
    free(b.lanes), free(b.need), free(b.pass), free(b.ready), free(b.prepared), free(b.opts);
    free(b.mels);
    return rc;
}
