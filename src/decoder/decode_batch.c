/*
 * decode_batch.c — see decode_batch.h. A greedy slot runs decode_window's greedy loop
 * (sample_group with one sequence) one step at a time in its group's first lane; a beam slot
 * runs beam_search.h's state machine over its group's lanes. The steps of all running slots
 * share one decoder_batch_step.
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

struct decode_batch_slot {
    enum slot_state state;
    const struct decode_opts *o;
    bool beams; /* o->beam_size > 0: bs, over the group's lanes */
    /* a prompt fed whole with the next step (decode_batch_start): its tokens, where the SOT
     * is; fed_now: in this step, its SOT at row sot_row (downloaded to d->sot_logits) */
    bool feed, fed_now;
    int32_t prompt[DECODE_BATCH_FEED_MAX];
    int sot_index, sot_row;
    struct hyp_set hs;    /* greedy: one hypothesis, of o->sample_len + 1 tokens */
    struct beam_state bs; /* beams */
    struct decode_result r;
    int n_initial;
    int i_step; /* greedy: the next token's index in this window (sample_group's i) */
};

int decode_batch_feed_max(const struct wc_backend_ops *op) {
    int n = DECODE_BATCH_FEED_MAX;
    n = op->attention_exact_rows < n ? op->attention_exact_rows : n;
    n = op->linear_exact_rows < n ? op->linear_exact_rows : n;
    const char *env = getenv("WHISPERC_BATCH_PROMPT");
    return env && strcmp(env, "prefill") == 0 ? 0 : n;
}

int decode_batch_init(struct decode_batch *d, struct decoder_batch *db, struct wc_stream *s,
                      const struct wc_vocab *v) {
    /* rows of a step, in step order: up to db->max_rows */
    size_t R = (size_t)db->max_rows, n_ctx = (size_t)db->hp->n_text_ctx;
    size_t K = (size_t)db->group + 1;
    *d = (struct decode_batch){
        .db = db,
        .s = s,
        .v = v,
        .n_slots = db->n_lanes / db->group,
        .feed_max = decode_batch_feed_max(s->be->ops),
        .slots = calloc((size_t)(db->n_lanes / db->group), sizeof *d->slots),
        .seq = malloc((2 * n_ctx + 8) * sizeof *d->seq),
        .last = malloc(R * sizeof *d->last),
        .ids = malloc(R * sizeof *d->ids),
        .src = malloc(R * sizeof *d->src),
        .pick = malloc(R * sizeof *d->pick),
        .top = malloc(R * K * sizeof *d->top),
        .lf = malloc(R * sizeof *d->lf),
        .hk = malloc(R * sizeof *d->hk),
        .rules = malloc(R * sizeof *d->rules),
        .sot_logits = malloc((size_t)(db->n_lanes / db->group) * v->n_vocab * sizeof(float)),
    };
    if (!d->slots || !d->seq || !d->last || !d->ids || !d->src || !d->pick || !d->top || !d->lf ||
        !d->hk || !d->rules || !d->sot_logits) {
        decode_batch_free(d);
        return WHISPERC_ERR_NO_MEMORY;
    }
    return 0;
}

static void slot_clear(struct decode_batch_slot *sl) {
    hyp_set_free(&sl->hs);
    beam_free(&sl->bs);
    decode_result_free(&sl->r);
}

void decode_batch_free(struct decode_batch *d) {
    for (int k = 0; d->slots && k < d->n_slots; k++)
        slot_clear(&d->slots[k]);
    free(d->slots), free(d->seq), free(d->last), free(d->ids), free(d->src);
    free(d->pick), free(d->top), free(d->lf), free(d->hk), free(d->rules), free(d->sot_logits);
    memset(d, 0, sizeof *d);
}

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

/* A beam slot's update from its rows' picks; its lanes' histories follow the beams. */
static void beam_take(struct decode_batch *d, int k, const struct wc_greedy_pick *top) {
    struct decode_batch_slot *sl = &d->slots[k];
    int G = d->db->group, lanes[WC_MAX_GROUP], src[WC_MAX_GROUP];
    if (beam_update(&sl->bs, top, d->v->eot))
        sl->state = SLOT_ENDED;
    for (int g = 0; g < G; g++) {
        lanes[g] = k * G + g;
        src[g] = k * G + sl->bs.src_of[g];
    }
    decoder_batch_reorder(d->db, lanes, src, G);
}

static void add_row(struct decode_batch *d, int n, int k, int lane, int32_t tok,
                    const struct hyp *hk);
static void rank_beams(struct decode_batch *d, int r0, int m);

int decode_batch_start(struct decode_batch *d, int k, const struct decode_opts *o) {
    struct wc_stream *s = d->s;
    const struct wc_vocab *v = d->v;
    int n_ctx = d->db->hp->n_text_ctx, n_vocab = v->n_vocab, G = d->db->group;
    if (k < 0 || k >= d->n_slots || d->slots[k].state != SLOT_FREE) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "decoder: slot %d is not free", k);
        return s->err;
    }
    if (o->temperature != 0.0f || o->best_of > 1 || (o->beam_size > 0 && o->beam_size != G) ||
        (o->beam_size > 0 && !s->be->ops->logits_topk)) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: batched decoding is greedy or beam search with %d beams", G);
        return s->err;
    }
    struct decode_batch_slot *sl = &d->slots[k];
    slot_clear(sl);
    *sl = (struct decode_batch_slot){.o = o, .beams = o->beam_size > 0};
    sl->r.temperature = o->temperature;
    int sot_index,
        n_initial = decode_initial_tokens(o, n_ctx, o->sample_len, v, d->seq, &sot_index);
    if (sl->beams ? beam_init(&sl->bs, o, n_initial, n_ctx)
                  : hyp_set_init(&sl->hs, 1, o->sample_len + 1))
        return WHISPERC_ERR_NO_MEMORY;
    if (n_initial + 1 > n_ctx) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG,
                       "decoder: the prompt and prefix take %d of the %d text positions", n_initial,
                       n_ctx);
        return s->err;
    }
    sl->r.n_steps = 1;
    sl->n_initial = n_initial;
    if (o->sample_len > 0 && n_initial <= d->feed_max) {
        /* fed whole with the next step (decode_batch_step), the group's first lane emptied for
         * it (beams take it over in beam_take) */
        memcpy(sl->prompt, d->seq, (size_t)n_initial * sizeof *sl->prompt);
        sl->feed = true;
        sl->sot_index = sot_index;
        decoder_batch_clear(d->db, k * G);
        sl->state = SLOT_RUNNING;
        return 0;
    }
    int rows[2] = {n_initial - 1, sot_index};
    int n_rows = sot_index == n_initial - 1 ? 1 : 2;
    /* the prompt in the group's first lane (beams take it over in beam_take); its logits stay
     * in db->logits but the SOT row's, which no_speech_prob reads on the host */
    float *at_sot = d->sot_logits + (size_t)k * n_vocab;
    int rc = decoder_batch_prefill(d->db, s, k * G, d->seq, n_initial, rows, n_rows, NULL);
    s->be->ops->download(s, at_sot, d->db->logits + (size_t)(n_rows - 1) * n_vocab,
                         (size_t)n_vocab * sizeof(float));
    sl->state = o->sample_len > 0 ? SLOT_RUNNING : SLOT_ENDED;
    /* the first pick by the backend, as a step's (decode_window's likewise): the prompt's last
     * row is the first of db->logits; the pick's sync brings the SOT row too */
    add_row(d, 0, k, k * G, 0, sl->beams ? NULL : sl->hs.h);
    if (!rc && sl->state == SLOT_RUNNING && !sl->beams) {
        rc = decode_greedy_pick(s, d->db->logits, 1, n_vocab, d->lf, d->hk, d->pick);
    } else if (!rc) {
        if (sl->state == SLOT_RUNNING)
            rank_beams(d, 0, 1);
        rc = wc_stream_sync(s);
    }
    if (rc)
        return rc;
    sl->r.no_speech_prob = exp(at_sot[v->no_speech] - wc_logsumexp(at_sot, 0, n_vocab));
    if (sl->state != SLOT_RUNNING)
        return 0;
    if (sl->beams)
        beam_take(d, k, d->top);
    else
        take(sl, v, n_ctx, d->pick[0].token, d->pick[0].logprob);
    return 0;
}

/* The picks of beam rows r0 .. r0 + m (each slot's G rows in a row) through logits_topk, in
 * runs that share a suppress list (in practice: one call), into d->top [row][K]. */
static void rank_beams(struct decode_batch *d, int r0, int m) {
    int K = d->db->group + 1, n_vocab = d->v->n_vocab;
    for (int a = r0, n; a < r0 + m; a += n) {
        const struct logit_filters *f = d->lf[a];
        for (n = 0; a + n < r0 + m; n++) {
            const struct logit_filters *g = d->lf[a + n];
            if (g->suppress != f->suppress || g->n_suppress != f->n_suppress)
                break;
            /* the row's beam: its lane's place in the slot's group */
            beam_rule(&d->slots[d->src[a + n]].bs, d->ids[a + n] % d->db->group, &d->rules[a + n]);
        }
        d->s->be->ops->logits_topk(d->s, d->top + (size_t)a * K,
                                   d->db->logits + (size_t)a * n_vocab, d->rules + a, f->suppress,
                                   f->n_suppress, n, n_vocab, K);
    }
}

/* Row n of the step: token `tok` of lane `lane`, of slot k; a greedy pick reads hk's history
 * (NULL: no greedy pick reads the row). */
static void add_row(struct decode_batch *d, int n, int k, int lane, int32_t tok,
                    const struct hyp *hk) {
    d->ids[n] = lane;
    d->src[n] = k;
    d->last[n] = tok;
    d->lf[n] = d->slots[k].o->filters;
    d->hk[n] = hk;
}

/* The step's rows: first the prompts fed in it but their last tokens, then, from *r_pick on,
 * the rows whose logits are picked from: each running slot's (a fed prompt's last token:
 * its first pick). A prompt goes in whole or waits for a step with room. */
static int plan_rows(struct decode_batch *d, int *r_pick) {
    int G = d->db->group, n = 0, room = d->db->max_rows;
    for (int k = 0; k < d->n_slots; k++) {
        struct decode_batch_slot *sl = &d->slots[k];
        if (sl->state == SLOT_RUNNING && !sl->feed)
            room -= sl->beams ? G : 1;
    }
    for (int k = 0; k < d->n_slots; k++) {
        struct decode_batch_slot *sl = &d->slots[k];
        sl->fed_now = sl->state == SLOT_RUNNING && sl->feed && sl->n_initial <= room;
        if (!sl->fed_now)
            continue;
        room -= sl->n_initial;
        sl->sot_row = n + sl->sot_index; /* unless the SOT is the last token (below) */
        for (int p = 0; p < sl->n_initial - 1; p++, n++)
            add_row(d, n, k, k * G, sl->prompt[p], NULL);
    }
    *r_pick = n;
    for (int k = 0; k < d->n_slots; k++) {
        struct decode_batch_slot *sl = &d->slots[k];
        if (sl->state != SLOT_RUNNING || (sl->feed && !sl->fed_now))
            continue;
        if (sl->fed_now) { /* the first pick, of one row (beams: beam 0's, beam_rows) */
            if (sl->sot_index == sl->n_initial - 1)
                sl->sot_row = n;
            add_row(d, n++, k, k * G, sl->prompt[sl->n_initial - 1], sl->beams ? NULL : sl->hs.h);
        } else if (!sl->beams)
            add_row(d, n++, k, k * G, sl->hs.h->tok[sl->hs.h->n - 1], sl->hs.h);
        else
            for (int g = 0; g < G; g++)
                add_row(d, n++, k, k * G + g, beam_last(&sl->bs, g), &sl->bs.cur.h[g]);
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

int decode_batch_step(struct decode_batch *d, int *n_stepped) {
    int n_ctx = d->db->hp->n_text_ctx, G = d->db->group, K = G + 1, n_vocab = d->v->n_vocab;
    int r_pick, n = plan_rows(d, &r_pick);
    if (n_stepped)
        *n_stepped = n;
    if (n == 0)
        return d->s->err;
    int rc = decoder_batch_step(d->db, d->s, d->ids, d->last, n, NULL);
    bool fed = !rc && fetch_sot_rows(d) > 0;
    /* each step's logits stay on the backend: only the picks come back; greedy rows through
     * logits_greedy, beam rows through logits_topk, in runs of one kind */
    for (int r0 = r_pick, m; r0 < n && !rc; r0 += m) {
        bool beams = d->slots[d->src[r0]].beams;
        for (m = 1; r0 + m < n && d->slots[d->src[r0 + m]].beams == beams; m++)
            ;
        if (beams) {
            rank_beams(d, r0, m);
            rc = wc_stream_sync(d->s);
        } else {
            rc = decode_greedy_pick(d->s, d->db->logits + (size_t)r0 * n_vocab, m, n_vocab,
                                    d->lf + r0, d->hk + r0, d->pick + r0);
        }
    }
    if (!rc && fed) /* the SOT rows' downloads, where no pick synced after them */
        rc = wc_stream_sync(d->s);
    d->n_steps++;
    for (int a = r_pick; a < n && !rc;) {
        struct decode_batch_slot *sl = &d->slots[d->src[a]];
        int rows = sl->beams ? beam_rows(&sl->bs) : 1;
        if (sl->fed_now) { /* the prompt's step counts as the prefill it replaces */
            const float *at_sot = d->sot_logits + (size_t)d->src[a] * n_vocab;
            sl->r.no_speech_prob = exp(at_sot[d->v->no_speech] - wc_logsumexp(at_sot, 0, n_vocab));
            sl->feed = sl->fed_now = false;
        } else {
            sl->r.n_steps++;
        }
        if (sl->beams)
            beam_take(d, d->src[a], d->top + (size_t)a * K);
        else
            take(sl, d->v, n_ctx, d->pick[a].token, d->pick[a].logprob);
        a += rows;
    }
    return rc;
}

bool decode_batch_ended(const struct decode_batch *d, int k) {
    return k >= 0 && k < d->n_slots && d->slots[k].state == SLOT_ENDED;
}

int decode_batch_take(struct decode_batch *d, int k, struct decode_result *r) {
    struct decode_batch_slot *sl = &d->slots[k];
    int cap = sl->o->sample_len + 1;
    *r = sl->r;
    memset(&sl->r, 0, sizeof sl->r);
    sl->state = SLOT_FREE;
    r->tokens = malloc((size_t)cap * sizeof *r->tokens);
    r->logprobs = malloc((size_t)cap * sizeof *r->logprobs);
    if (!r->tokens || !r->logprobs)
        return WHISPERC_ERR_NO_MEMORY;
    if (sl->beams) {
        beam_result(&sl->bs, r);
    } else {
        const struct hyp *h = sl->hs.h;
        if (h->n > 0) {
            memcpy(r->tokens, h->tok, (size_t)h->n * sizeof *r->tokens);
            memcpy(r->logprobs, h->lp, (size_t)h->n * sizeof *r->logprobs);
        }
        r->n_tokens = h->n;
        r->sum_logprob = h->sum;
    }
    return decode_result_finish(d->v, r);
}
