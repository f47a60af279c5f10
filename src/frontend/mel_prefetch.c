/*
 * mel_prefetch.c — see mel_prefetch.h. One mutex and one condition variable guard everything:
 * the threads wait for room ahead of the consumer, the consumer for its input.
 */
#include "frontend/mel_prefetch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "libwhisperc.h"
#include "util.h"

enum { SLOT_TODO, SLOT_BUSY, SLOT_READY, SLOT_TAKEN };

struct slot {
    int state;
    int rc;
    struct mel_spec mel;
    char err[256];
};

struct mel_prefetch {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* any change: a slot ready, an input taken, stop */
    mel_input_fn fn;
    void *user;
    int n, ahead;
    size_t max_bytes, pending_bytes; /* computed or being computed, not taken */
    size_t *bytes;                   /* [n] */
    struct slot *slots;              /* [n] */
    int next;                        /* the next input a thread takes up */
    int taken;                       /* one past the highest input taken */
    bool stop;
    pthread_t *threads;
    int n_threads; /* started */
};

/* Whether the threads may start input p->next now (under the lock). Inputs the consumer
 * computed itself (it skipped ahead) are passed over. */
static bool room_for_next(struct mel_prefetch *p) {
    while (p->next < p->n && p->slots[p->next].state != SLOT_TODO)
        p->next++;
    if (p->next >= p->n)
        return false;
    if (p->next < p->taken + 1)
        return true; /* the one the consumer wants next (or is waiting for): always */
    return p->next < p->taken + p->ahead && p->pending_bytes + p->bytes[p->next] <= p->max_bytes;
}

static void compute(struct mel_prefetch *p, int i) {
    struct slot *s = &p->slots[i];
    struct mel_spec mel = {0};
    char err[sizeof s->err] = "";
    int rc = p->fn(p->user, i, &mel, err, sizeof err);
    pthread_mutex_lock(&p->mu);
    s->rc = rc;
    s->mel = mel;
    memcpy(s->err, err, sizeof err);
    s->state = SLOT_READY;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void *worker(void *arg) {
    struct mel_prefetch *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && !room_for_next(p) && p->next < p->n)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop || p->next >= p->n)
            break;
        int i = p->next++;
        p->slots[i].state = SLOT_BUSY;
        p->pending_bytes += p->bytes[i];
        pthread_mutex_unlock(&p->mu);
        compute(p, i);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int mel_prefetch_new(struct mel_prefetch **out, int n, const size_t *bytes, int n_threads,
                     int ahead, size_t max_bytes, mel_input_fn fn, void *user) {
    *out = NULL;
    struct mel_prefetch *p = calloc(1, sizeof *p);
    if (!p)
        return WHISPERC_ERR_NO_MEMORY;
    p->fn = fn, p->user = user, p->n = n;
    p->ahead = ahead < 1 ? 1 : ahead;
    p->max_bytes = max_bytes;
    p->bytes = malloc((size_t)(n > 0 ? n : 1) * sizeof *p->bytes);
    p->slots = calloc((size_t)(n > 0 ? n : 1), sizeof *p->slots);
    p->threads = calloc((size_t)(n_threads > 0 ? n_threads : 1), sizeof *p->threads);
    if (!p->bytes || !p->slots || !p->threads || pthread_mutex_init(&p->mu, NULL)) {
        free(p->bytes), free(p->slots), free(p->threads), free(p);
        return WHISPERC_ERR_NO_MEMORY;
    }
    if (pthread_cond_init(&p->cv, NULL)) {
        pthread_mutex_destroy(&p->mu);
        free(p->bytes), free(p->slots), free(p->threads), free(p);
        return WHISPERC_ERR_NO_MEMORY;
    }
    if (n > 0)
        memcpy(p->bytes, bytes, (size_t)n * sizeof *bytes);
    for (int t = 0; t < n_threads && t < n; t++) {
        if (pthread_create(&p->threads[p->n_threads], NULL, worker, p) != 0)
            break; /* fewer threads; with none, take() computes */
        p->n_threads++;
    }
    *out = p;
    return 0;
}

int mel_prefetch_take(struct mel_prefetch *p, int i, struct mel_spec *out, char *err,
                      size_t err_size) {
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= p->n) {
        wc_errf(err, err_size, "mel prefetch: input %d of %d", i, p->n);
        return WHISPERC_ERR_INVALID_ARG;
    }
    pthread_mutex_lock(&p->mu);
    struct slot *s = &p->slots[i];
    room_for_next(p); /* moves next past inputs already done */
    if (s->state == SLOT_TAKEN) {
        pthread_mutex_unlock(&p->mu);
        wc_errf(err, err_size, "mel prefetch: input %d taken twice", i);
        return WHISPERC_ERR_INVALID_ARG;
    }
    if (i + 1 > p->taken) {
        p->taken = i + 1;
        pthread_cond_broadcast(&p->cv); /* room ahead, and input i may be started now */
    }
    if (s->state == SLOT_TODO && (!p->n_threads || i != p->next)) {
        /* no thread will get to it soon (none, or the consumer skipped ahead): compute here */
        s->state = SLOT_BUSY;
        p->pending_bytes += p->bytes[i];
        if (i == p->next)
            p->next++;
        pthread_mutex_unlock(&p->mu);
        compute(p, i);
        pthread_mutex_lock(&p->mu);
    }
    while (s->state != SLOT_READY)
        pthread_cond_wait(&p->cv, &p->mu);
    s->state = SLOT_TAKEN;
    p->pending_bytes -= p->bytes[i];
    *out = s->mel;
    s->mel = (struct mel_spec){0};
    int rc = s->rc;
    if (rc)
        wc_errf(err, err_size, "%s", s->err);
    pthread_cond_broadcast(&p->cv); /* memory freed up */
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void mel_prefetch_free(struct mel_prefetch *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int t = 0; t < p->n_threads; t++)
        pthread_join(p->threads[t], NULL);
    for (int i = 0; i < p->n; i++)
        mel_free(&p->slots[i].mel);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->bytes), free(p->slots), free(p->threads), free(p);
}
