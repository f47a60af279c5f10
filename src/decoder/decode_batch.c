/*
 * decode_batch.c — see decode_batch.h. A greedy slot runs decode_window's greedy loop
 * (sample_group with one sequence) one step at a time in its first lane; a sampling slot the
 * same loop at T > 0 over best_of lanes; a beam slot beam_search.h's state machine over its
 * lanes. The steps of all running slots share one decoder_batch_step.
 */
#include "decoder/decode_batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "decoder/beam_search.h"
#include "decoder/decoder_batch.h"
#include "decoder/hypothesis.h"
#include "decoder/logit_filters.h"
#include "libwhisperc.h"
#include "model/vocab.h"
#include "util.h"

enum slot_state { SLOT_FREE = 0, SLOT_RUNNING, SLOT_ENDED };
enum slot_kind { SLOT_GREEDY, SLOT_BEAMS, SLOT_SAMPLES };

struct decode_batch_slot {
    enum slot_state state;
    enum slot_kind kind;
    const struct decode_opts *o;
    int n_lanes;            /* held: 1, the beams, or best_of samples */
    int lane[WC_MAX_GROUP]; /* the decoder lanes held; lane[0] runs the prompt */
    /* a prompt fed whole with the next step (decode_batch_start): its tokens, where the SOT
     * is; fed_now: in this step, its SOT at row sot_row (downloaded to d->sot_logits) */
    bool feed, fed_now;
    /* d->sot_logits' row for this slot holds the window's SOT row: no_speech_prob comes from it
     * when the result is taken (decode_batch_take, which the batch loop runs while a step is
     * in flight), not in the step's serial part */
    bool sot_ready;
    int32_t prompt[DECODE_BATCH_FEED_MAX];
    int sot_index, sot_row;
    struct hyp_set hs;    /* greedy: one hypothesis; samples: best_of, of sample_len + 1 */
    struct beam_state bs; /* beams */
    struct decode_result r;
    int n_initial;
    int i_step; /* greedy, samples: the next token's index in this window (sample_group's i) */
    /* samples: the unfinished hypotheses in order (hypothesis g decodes in lane[g]); the
     * step's draws from d->drawn[draw0] on */
    int active[WC_MAX_GROUP], n_active;
    int draw0;
};

int decode_batch_feed_max(const struct wc_backend_ops *op) {
    int n = DECODE_BATCH_FEED_MAX;
    n = op->attention_exact_rows < n ? op->attention_exact_rows : n;
    n = op->linear_exact_rows < n ? op->linear_exact_rows : n;
    const char *env = getenv("WHISPERC_BATCH_PROMPT");
    return env && strcmp(env, "prefill") == 0 ? 0 : n;
}

uint64_t decode_batch_bytes(int n_lanes, int n_slots, int n_vocab) {
    /* a SOT row a slot (the picks and draws come back through logits_greedy, logits_topk and
     * logits_sample); n_lanes: the step's rows are counted by decoder_batch */
    (void)n_lanes;
    return (uint64_t)n_slots * (uint64_t)n_vocab * sizeof(float);
}

int decode_batch_init(struct decode_batch *d, struct decoder_batch *db, struct wc_stream *s,
                      const struct wc_vocab *v, int beam_size) {
    /* rows of a step, in step order: up to db->max_rows */
    size_t R = (size_t)db->max_rows, n_ctx = (size_t)db->hp->n_text_ctx;
    size_t K = (size_t)beam_size + 1;
    *d = (struct decode_batch){
        .db = db,
        .s = s,
        .v = v,
        .n_slots = db->n_regions,
        .beam_size = beam_size,
        .feed_max = decode_batch_feed_max(s->be->ops),
        .slots = calloc((size_t)db->n_regions, sizeof *d->slots),
        .seq = malloc((2 * n_ctx + 8) * sizeof *d->seq),
        .last = malloc(R * sizeof *d->last),
        .ids = malloc(R * sizeof *d->ids),
        .src = malloc(R * sizeof *d->src),
        .hyp = malloc(R * sizeof *d->hyp),
        .pick = malloc(R * sizeof *d->pick),
        .top = malloc(R * K * sizeof *d->top),
        .lf = malloc(R * sizeof *d->lf),
        .hk = malloc(R * sizeof *d->hk),
        .rules = malloc(R * sizeof *d->rules),
        .sot_logits = malloc((size_t)db->n_regions * v->n_vocab * sizeof(float)),
        .lane_busy = calloc((size_t)db->n_lanes, sizeof *d->lane_busy),
        .n_free = db->n_lanes,
        .draws = malloc(R * sizeof *d->draws),
        .drawn = malloc(R * sizeof *d->drawn),
    };
    if (!d->slots || !d->seq || !d->last || !d->ids || !d->src || !d->hyp || !d->pick || !d->top ||
        !d->lf || !d->hk || !d->rules || !d->sot_logits || !d->lane_busy || !d->draws ||
        !d->drawn) {
        decode_batch_free(d);
        return WHISPERC_ERR_NO_MEMORY;
    }
    return 0;
}

/* The slot's lanes back to the free ones, and its buffers freed. */
static void slot_clear(struct decode_batch *d, struct decode_batch_slot *sl) {
    for (int g = 0; g < sl->n_lanes; g++)
        d->lane_busy[sl->lane[g]] = false;
    d->n_free += sl->n_lanes;
    sl->n_lanes = 0;
    hyp_set_free(&sl->hs);
    beam_free(&sl->bs);
    decode_result_free(&sl->r);
}

void decode_batch_free(struct decode_batch *d) {
    for (int k = 0; d->slots && k < d->n_slots; k++)
        slot_clear(d, &d->slots[k]);
    free(d->slots), free(d->seq), free(d->last), free(d->ids), free(d->src), free(d->hyp);
    free(d->pick), free(d->top), free(d->lf), free(d->hk), free(d->rules), free(d->sot_logits);
    free(d->lane_busy), free(d->draws), free(d->drawn);
    memset(d, 0, sizeof *d);
}

int decode_batch_lanes_free(const struct decode_batch *d) { return d->n_free; }

/* Step i_step of a greedy slot with its chosen token, as one iteration of sample_group at
 * T = 0. */
static void take(struct decode_batch_slot *sl, const struct wc_vocab *v, int n_ctx, int next,
                 float lp) {
    struct hyp *h = sl->hs.h;
    h->sum += lp;
    if (next == v->eot) {
        h->done = true;
        sl->state = SLOT_ENDED;
        return;
    }
    h->tok[h->n] = next;
    h->lp[h->n++] = lp;
    if (sl->n_initial + sl->i_step + 1 > n_ctx || sl->i_step + 1 >= sl->o->sample_len)
        sl->state = SLOT_ENDED;
    sl->i_step++;
}

/* Slot sl's rows' rules (rules[0..rows)) and its draws (appended to d->draws, from d->drawn's
 * sl->draw0 on), its rows being row0 .. of the logits_sample call: a row a hypothesis, but the
 * first step's one row, the prompt's, for every hypothesis (their histories all empty). Each
 * draw's uniform comes from the window's generator in sample_take's order (decode_window's: a
 * draw a hypothesis, in order). Returns the slot's rows. */
static int add_draws(struct decode_batch *d, struct decode_batch_slot *sl,
                     struct wc_logit_rule *rules, int row0) {
    const struct decode_opts *o = sl->o;
    bool first = sl->i_step == 0;
    int n = first ? sl->n_lanes : sl->n_active, rows = first ? 1 : n;
    for (int r = 0; r < rows; r++) {
        const struct hyp *h = &sl->hs.h[first ? 0 : sl->active[r]];
        logit_filters_rule(o->filters, h->tok, h->n, &rules[r]);
    }
    sl->draw0 = d->n_draws;
    for (int i = 0; i < n; i++)
        d->draws[d->n_draws++] =
            (struct wc_sample_draw){row0 + (first ? 0 : i), o->temperature, wc_rng_uniform(o->rng)};
    return rows;
}

/* The draws added since draw d0, from n_rows rows of logits, through one logits_sample call. */
static void queue_draws(struct decode_batch *d, int d0, const struct logit_filters *f,
                        float *logits, const struct wc_logit_rule *rules, int n_rows) {
    d->s->be->ops->logits_sample(d->s, d->drawn + d0, logits, rules, f->suppress, f->n_suppress,
                                 n_rows, d->v->n_vocab, d->draws + d0, d->n_draws - d0);
}

/* Step i_step of a sampling slot, its draws made (queue_draws), as one iteration of
 * sample_group at T > 0: each unfinished hypothesis, in order, takes its draw (the first step:
 * every hypothesis from the prompt's one row); the ones that go on continue in their lanes
 * (the first step: from the prompt in lane[0]). */
static void sample_take(struct decode_batch *d, struct decode_batch_slot *sl) {
    const struct decode_opts *o = sl->o;
    int n_ctx = d->db->hp->n_text_ctx, G = sl->n_lanes;
    bool first = sl->i_step == 0;
    int n = first ? G : sl->n_active, keep[WC_MAX_GROUP], n_keep = 0;
    for (int i = 0; i < n; i++) {
        int g = first ? i : sl->active[i];
        struct hyp *h = &sl->hs.h[g];
        float lp = d->drawn[sl->draw0 + i].logprob;
        int next = d->drawn[sl->draw0 + i].token;
        h->sum += lp;
        if (next == d->v->eot) {
            h->done = true;
            continue;
        }
        h->tok[h->n] = next;
        h->lp[h->n++] = lp;
        keep[n_keep++] = g;
    }
    if (first && n_keep > 0) {
        int lanes[WC_MAX_GROUP], src[WC_MAX_GROUP];
        for (int i = 0; i < n_keep; i++) {
            lanes[i] = sl->lane[keep[i]];
            src[i] = sl->lane[0];
        }
        decoder_batch_reorder(d->db, lanes, src, n_keep);
    }
    memcpy(sl->active, keep, (size_t)n_keep * sizeof *keep);
    sl->n_active = n_keep;
    if (n_keep == 0 || sl->n_initial + sl->i_step + 1 > n_ctx || sl->i_step + 1 >= o->sample_len)
        sl->state = SLOT_ENDED;
    sl->i_step++;
}

/* A beam slot's update from its rows' picks; its lanes' histories follow the beams. */
static void beam_take(struct decode_batch *d, int k, const struct wc_greedy_pick *top) {
    struct decode_batch_slot *sl = &d->slots[k];
    int G = sl->n_lanes, lanes[WC_MAX_GROUP], src[WC_MAX_GROUP];
    if (beam_update(&sl->bs, top, d->v->eot))
        sl->state = SLOT_ENDED;
    for (int g = 0; g < G; g++) {
        lanes[g] = sl->lane[g];
        src[g] = sl->lane[sl->bs.src_of[g]];
    }
    decoder_batch_reorder(d->db, lanes, src, G);
}

static void add_row(struct decode_batch *d, int n, int k, int g, int32_t tok, const struct hyp *hk);
static void rank_beams(struct decode_batch *d, int r0, int m);

/* The slot's kind and its lanes, taken from the free ones and pointed at its audio. */
static int slot_open(struct decode_batch *d, int k, const struct decode_opts *o) {
    struct wc_stream *s = d->s;
    int G = decode_n_group(o);
    enum slot_kind kind = o->temperature > 0.0f ? SLOT_SAMPLES
                          : o->beam_size > 0    ? SLOT_BEAMS
                                                : SLOT_GREEDY;
    if (k < 0 || k >= d->n_slots || d->slots[k].state != SLOT_FREE) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: slot %d is not free", k);
        return s->err;
    }
    struct decode_batch_slot *sl = &d->slots[k];
    if (!(o->temperature >= 0.0f) || (o->temperature == 0.0f && o->best_of > 1) ||
        (kind == SLOT_BEAMS && (o->beam_size != d->beam_size || !s->be->ops->logits_topk)) ||
        (kind == SLOT_SAMPLES && !s->be->ops->logits_sample) || G > WC_MAX_GROUP) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: batched decoding is greedy, beam search with %d beams or up to "
                       "%d samples",
                       d->beam_size, WC_MAX_GROUP);
        return s->err;
    }
    if (G > d->n_free) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: a window of %d lanes, %d free", G,
                       d->n_free);
        return s->err;
    }
    slot_clear(d, sl);
    *sl = (struct decode_batch_slot){.o = o, .kind = kind};
    for (int lane = 0; sl->n_lanes < G; lane++) {
        if (d->lane_busy[lane])
            continue;
        d->lane_busy[lane] = true;
        sl->lane[sl->n_lanes++] = lane;
        decoder_batch_assign(d->db, lane, k);
    }
    d->n_free -= G;
    return 0;
}

/* A window's start up to its prompt: the slot opened, its hypotheses, a prompt fed whole
 * marked for the next step (*queue false), else one to prefill (*queue true). */
static int start_open(struct decode_batch *d, int k, const struct decode_opts *o, bool *queue) {
    struct wc_stream *s = d->s;
    const struct wc_vocab *v = d->v;
    int n_ctx = d->db->hp->n_text_ctx;
    *queue = false;
    int rc = slot_open(d, k, o);
    if (rc)
        return rc;
    struct decode_batch_slot *sl = &d->slots[k];
    int G = sl->n_lanes;
    sl->r.temperature = o->temperature;
    int sot_index,
        n_initial = decode_initial_tokens(o, n_ctx, o->sample_len, v, d->seq, &sot_index);
    if (n_initial + 1 > n_ctx) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: the prompt and prefix take %d of the %d text positions", n_initial,
                       n_ctx);
        return s->err;
    }
    bool oom = sl->kind == SLOT_BEAMS ? beam_init(&sl->bs, o, n_initial, n_ctx)
                                      : hyp_set_init(&sl->hs, G, o->sample_len + 1);
    if (oom)
        return WHISPERC_ERR_NO_MEMORY;
    sl->r.n_steps = 1;
    sl->n_initial = n_initial;
    sl->sot_index = sot_index;
    if (o->sample_len > 0 && n_initial <= d->feed_max) {
        /* fed whole with the next step (decode_batch_step), the first lane emptied for it (the
         * others take it over after the first pick) */
        memcpy(sl->prompt, d->seq, (size_t)n_initial * sizeof *sl->prompt);
        sl->feed = true;
        decoder_batch_clear(d->db, sl->lane[0]);
        sl->state = SLOT_RUNNING;
        return 0;
    }
    *queue = true;
    return 0;
}

/* The prefill of slot k's prompt (in d->seq) and its first pick queued, as row i of the step
 * arrays (nothing is synced): the prompt in the first lane (the others take it over after the
 * first pick); the SOT row to the host for no_speech_prob; the pick or the samples' draws by
 * the backend, as a step's (decode_window's likewise). */
static int start_queue(struct decode_batch *d, int k, int i) {
    struct wc_stream *s = d->s;
    struct decode_batch_slot *sl = &d->slots[k];
    int n_vocab = d->v->n_vocab, n_initial = sl->n_initial;
    int rows[2] = {n_initial - 1, sl->sot_index};
    int n_rows = sl->sot_index == n_initial - 1 ? 1 : 2;
    float *at_sot = d->sot_logits + (size_t)k * n_vocab;
    int rc = decoder_batch_prefill(d->db, s, sl->lane[0], d->seq, n_initial, rows, n_rows, NULL);
    s->be->ops->download(s, at_sot, d->db->logits + (size_t)(n_rows - 1) * n_vocab,
                         (size_t)n_vocab * sizeof(float));
    sl->state = sl->o->sample_len > 0 ? SLOT_RUNNING : SLOT_ENDED;
    add_row(d, i, k, 0, 0, sl->kind == SLOT_GREEDY ? sl->hs.h : NULL);
    if (rc || sl->state != SLOT_RUNNING)
        return rc;
    /* the prompt's last row is db->logits' first; the pick goes to row i */
    if (sl->kind == SLOT_GREEDY) {
        decode_greedy_queue(s, d->db->logits, 1, n_vocab, d->lf + i, d->hk + i, d->rules + i,
                            d->pick + i);
    } else if (sl->kind == SLOT_BEAMS) {
        const struct logit_filters *f = sl->o->filters;
        int K = d->beam_size + 1;
        beam_rule(&sl->bs, 0, &d->rules[i]);
        s->be->ops->logits_topk(s, d->top + (size_t)i * K, d->db->logits, d->rules + i, f->suppress,
                                f->n_suppress, 1, n_vocab, K);
    } else {
        int d0 = d->n_draws;
        add_draws(d, sl, &d->rules[i], 0);
        queue_draws(d, d0, sl->o->filters, d->db->logits, &d->rules[i], 1);
    }
    return s->err;
}

/* After the sync: slot k's SOT row in place (sot_ready) and its first pick (row i) taken. */
static void start_take(struct decode_batch *d, int k, int i) {
    struct decode_batch_slot *sl = &d->slots[k];
    const struct wc_vocab *v = d->v;
    sl->sot_ready = true;
    if (sl->state != SLOT_RUNNING)
        return;
    if (sl->kind == SLOT_BEAMS) {
        beam_take(d, k, d->top + (size_t)i * (d->beam_size + 1));
    } else if (sl->kind == SLOT_SAMPLES) {
        sample_take(d, sl);
    } else {
        take(sl, v, d->db->hp->n_text_ctx, d->pick[i].token, d->pick[i].logprob);
    }
}

int decode_batch_start_n(struct decode_batch *d, int n, const int *ks,
                         const struct decode_opts *const *os) {
    int queued[DECODE_BATCH_START_MAX], n_queued = 0, rc = 0;
    if (n > DECODE_BATCH_START_MAX || n > d->db->max_rows) {
        wc_stream_fail(d->s, WHISPERC_ERR_INVALID_ARG, "decoder: %d windows started at once", n);
        return d->s->err;
    }
    d->n_draws = 0;
    for (int i = 0; i < n && !rc; i++) {
        bool queue;
        rc = start_open(d, ks[i], os[i], &queue);
        if (!rc && queue) {
            rc = start_queue(d, ks[i], n_queued);
            queued[n_queued++] = ks[i];
        }
    }
    /* one sync for all the prompts prefilled: a GPU runs them back to back while the host
     * queues the next, instead of a round trip each */
    if (!rc && n_queued)
        rc = wc_stream_sync(d->s);
    for (int i = 0; i < n_queued && !rc; i++)
        start_take(d, queued[i], i);
    return rc;
}

int decode_batch_start(struct decode_batch *d, int k, const struct decode_opts *o) {
    return decode_batch_start_n(d, 1, &k, &o);
}

/* The picks of beam rows r0 .. r0 + m (each slot's beams in a row) through logits_topk, in
 * runs that share a suppress list (in practice: one call), into d->top [row][K]. */
static void rank_beams(struct decode_batch *d, int r0, int m) {
    int K = d->beam_size + 1, n_vocab = d->v->n_vocab;
    for (int a = r0, n; a < r0 + m; a += n) {
        const struct logit_filters *f = d->lf[a];
        for (n = 0; a + n < r0 + m; n++) {
            const struct logit_filters *g = d->lf[a + n];
            if (!logit_filters_same_suppress(f, g))
                break;
            /* the row's beam: its place in the slot's lanes */
            beam_rule(&d->slots[d->src[a + n]].bs, d->hyp[a + n], &d->rules[a + n]);
        }
        d->s->be->ops->logits_topk(d->s, d->top + (size_t)a * K,
                                   d->db->logits + (size_t)a * n_vocab, d->rules + a, f->suppress,
                                   f->n_suppress, n, n_vocab, K);
    }
}

/* Row n of the step: token `tok` of slot k's lane[g]; a greedy pick reads hk's history (NULL:
 * no greedy pick reads the row). */
static void add_row(struct decode_batch *d, int n, int k, int g, int32_t tok,
                    const struct hyp *hk) {
    d->ids[n] = d->slots[k].lane[g];
    d->src[n] = k;
    d->hyp[n] = g;
    d->last[n] = tok;
    d->lf[n] = d->slots[k].o->filters;
    d->hk[n] = hk;
}

/* Rows a running slot picks from in a step: a fed prompt's one, else a row a sequence. */
static int pick_rows(const struct decode_batch_slot *sl) {
    if (sl->fed_now || sl->kind == SLOT_GREEDY)
        return 1;
    return sl->kind == SLOT_BEAMS ? beam_rows(&sl->bs) : sl->n_active;
}

/* The step's rows: first the prompts fed in it but their last tokens, then, from *r_pick on,
 * the rows whose logits are picked from: each running slot's (a fed prompt's last token:
 * its first pick). A prompt goes in whole or waits for a step with room. */
static int plan_rows(struct decode_batch *d, int *r_pick) {
    int n = 0, room = d->db->max_rows;
    for (int k = 0; k < d->n_slots; k++) {
        struct decode_batch_slot *sl = &d->slots[k];
        if (sl->state == SLOT_RUNNING && !sl->feed)
            room -= pick_rows(sl);
    }
    for (int k = 0; k < d->n_slots; k++) {
        struct decode_batch_slot *sl = &d->slots[k];
        sl->fed_now = sl->state == SLOT_RUNNING && sl->feed && sl->n_initial <= room;
        if (!sl->fed_now)
            continue;
        room -= sl->n_initial;
        sl->sot_row = n + sl->sot_index; /* unless the SOT is the last token (below) */
        for (int p = 0; p < sl->n_initial - 1; p++, n++)
            add_row(d, n, k, 0, sl->prompt[p], NULL);
    }
    *r_pick = n;
    for (int k = 0; k < d->n_slots; k++) {
        struct decode_batch_slot *sl = &d->slots[k];
        if (sl->state != SLOT_RUNNING || (sl->feed && !sl->fed_now))
            continue;
        const struct hyp *greedy = sl->kind == SLOT_GREEDY ? sl->hs.h : NULL;
        if (sl->fed_now) { /* the first pick, of one row */
            if (sl->sot_index == sl->n_initial - 1)
                sl->sot_row = n;
            add_row(d, n++, k, 0, sl->prompt[sl->n_initial - 1], greedy);
        } else if (sl->kind == SLOT_GREEDY) {
            add_row(d, n++, k, 0, greedy->tok[greedy->n - 1], greedy);
        } else if (sl->kind == SLOT_BEAMS) {
            for (int g = 0; g < sl->n_lanes; g++)
                add_row(d, n++, k, g, beam_last(&sl->bs, g), &sl->bs.cur.h[g]);
        } else {
            for (int i = 0; i < sl->n_active; i++) {
                const struct hyp *h = &sl->hs.h[sl->active[i]];
                add_row(d, n++, k, sl->active[i], h->tok[h->n - 1], NULL);
            }
        }
    }
    return n;
}

/* The SOT rows of the prompts fed in this step, queued for download to their slots' rows of
 * d->sot_logits before anything masks them (no_speech_prob wants the raw row); returns how
 * many. */
static int fetch_sot_rows(struct decode_batch *d) {
    size_t n_vocab = (size_t)d->v->n_vocab;
    int n = 0;
    for (int k = 0; k < d->n_slots; k++) {
        if (!d->slots[k].fed_now)
            continue;
        d->s->be->ops->download(d->s, d->sot_logits + (size_t)k * n_vocab,
                                d->db->logits + (size_t)d->slots[k].sot_row * n_vocab,
                                n_vocab * sizeof(float));
        n++;
    }
    return n;
}

/* The draws of sample rows r0 .. r0 + m (each slot's rows in a row), queued: one
 * logits_sample call for each run of slots that share a suppress list (in practice: one). */
static void draw_samples(struct decode_batch *d, int r0, int m) {
    size_t n_vocab = (size_t)d->v->n_vocab;
    for (int a = r0, n; a < r0 + m; a += n) {
        const struct logit_filters *f = d->lf[a];
        int d0 = d->n_draws;
        for (n = 0; a + n < r0 + m;) {
            const struct logit_filters *g = d->lf[a + n];
            if (!logit_filters_same_suppress(f, g))
                break;
            n += add_draws(d, &d->slots[d->src[a + n]], &d->rules[a + n], n);
        }
        queue_draws(d, d0, f, d->db->logits + (size_t)a * n_vocab, d->rules + a, n);
    }
}

int decode_batch_step_begin(struct decode_batch *d, int *n_stepped) {
    int n_vocab = d->v->n_vocab;
    if (d->step_rows) {
        wc_stream_fail(d->s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: a step begun while the one before is not ended");
        return d->s->err;
    }
    int r_pick, n = plan_rows(d, &r_pick);
    if (n_stepped)
        *n_stepped = n;
    if (n == 0)
        return d->s->err;
    int rc = decoder_batch_step(d->db, d->s, d->ids, d->last, n, NULL);
    if (!rc)
        fetch_sot_rows(d);
    d->n_draws = 0;
    /* each step's logits stay on the backend: only the picks come back; greedy rows through
     * logits_greedy, beam rows through logits_topk, sample rows through logits_sample, in runs
     * of one kind, all queued: decode_batch_step_end syncs once */
    for (int r0 = r_pick, m; r0 < n && !rc; r0 += m) {
        enum slot_kind kind = d->slots[d->src[r0]].kind;
        for (m = 1; r0 + m < n && d->slots[d->src[r0 + m]].kind == kind; m++)
            ;
        if (kind == SLOT_BEAMS)
            rank_beams(d, r0, m);
        else if (kind == SLOT_GREEDY)
            decode_greedy_queue(d->s, d->db->logits + (size_t)r0 * n_vocab, m, n_vocab, d->lf + r0,
                                d->hk + r0, d->rules + r0, d->pick + r0);
        else
            draw_samples(d, r0, m);
        rc = d->s->err;
    }
    if (!rc)
        d->step_rows = n, d->step_pick = r_pick;
    return rc;
}

int decode_batch_step_end(struct decode_batch *d) {
    int n_ctx = d->db->hp->n_text_ctx, K = d->beam_size + 1;
    int n = d->step_rows, r_pick = d->step_pick;
    if (n == 0)
        return d->s->err;
    d->step_rows = 0;
    int rc = wc_stream_sync(d->s);
    d->n_steps++;
    for (int a = r_pick; a < n && !rc;) {
        struct decode_batch_slot *sl = &d->slots[d->src[a]];
        int rows = pick_rows(sl);
        if (sl->fed_now) { /* the prompt's step counts as the prefill it replaces */
            sl->sot_ready = true;
            sl->feed = sl->fed_now = false;
        } else {
            sl->r.n_steps++;
        }
        if (sl->kind == SLOT_BEAMS)
            beam_take(d, d->src[a], d->top + (size_t)a * K);
        else if (sl->kind == SLOT_SAMPLES)
            sample_take(d, sl);
        else
            take(sl, d->v, n_ctx, d->pick[a].token, d->pick[a].logprob);
        a += rows;
    }
    return rc;
}

int decode_batch_step(struct decode_batch *d, int *n_stepped) {
    int rc = decode_batch_step_begin(d, n_stepped);
    int rc_end = decode_batch_step_end(d);
    return rc ? rc : rc_end;
}

bool decode_batch_ended(const struct decode_batch *d, int k) {
    return k >= 0 && k < d->n_slots && d->slots[k].state == SLOT_ENDED;
}

int decode_batch_take(struct decode_batch *d, int k, struct decode_result *r) {
    struct decode_batch_slot *sl = &d->slots[k];
    int cap = sl->o->sample_len + 1, n_vocab = d->v->n_vocab;
    if (sl->sot_ready) {
        const float *at_sot = d->sot_logits + (size_t)k * n_vocab;
        sl->r.no_speech_prob = exp(at_sot[d->v->no_speech] - wc_logsumexp(at_sot, 0, n_vocab));
        sl->sot_ready = false;
    }
    *r = sl->r;
    memset(&sl->r, 0, sizeof sl->r);
    sl->state = SLOT_FREE;
    r->tokens = malloc((size_t)cap * sizeof *r->tokens);
    r->logprobs = malloc((size_t)cap * sizeof *r->logprobs);
    if (r->tokens && r->logprobs) {
        const struct hyp *h = NULL;
        if (sl->kind == SLOT_BEAMS)
            beam_result(&sl->bs, r);
        else
            h = &sl->hs.h[hyp_rank(sl->hs.h, sl->hs.n, sl->o->length_penalty)];
        if (h && h->n > 0) {
            memcpy(r->tokens, h->tok, (size_t)h->n * sizeof *r->tokens);
            memcpy(r->logprobs, h->lp, (size_t)h->n * sizeof *r->logprobs);
        }
        if (h) {
            r->n_tokens = h->n;
            r->sum_logprob = h->sum;
        }
    }
    slot_clear(d, sl);
    if (!r->tokens || !r->logprobs)
        return WHISPERC_ERR_NO_MEMORY;
    return decode_result_finish(d->v, r);
}
