/*
 * batch_progress.c — what `whisper-c batch` shows on stderr while it runs: on a terminal, a bar
 * redrawn in place (items, audio hours, speed, ETA); otherwise (a Slurm log) a plain line every
 * 30 seconds. The ETA counts items, as durations are unknown before decoding.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "batch.h"

#define PLAIN_INTERVAL_S 30.0
#define BAR_WIDTH        24

double batch_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "1:02:03" or "2:03" into buf (32 bytes); "?" when unknown. */
static const char *hms(char *buf, double s) {
    if (!(s >= 0) || s > 1e8)
        return "?";
    int t = (int)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, 32, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, 32, "%d:%02d", t / 60, t % 60);
    return buf;
}

/* Items done and failed of this shard, ETA, speed: the figures both displays share. */
struct figures {
    int done, total;
    double fraction, elapsed, eta, speed;
};

static struct figures figures_of(const struct batch_progress *p) {
    struct figures f = {.total = p->n_items};
    int ran = p->n_ok + p->n_failed;
    f.done = p->n_done_before + p->n_failed_before + ran;
    f.elapsed = batch_now() - p->t_start;
    double progress = ran + p->in_flight; /* items' worth of work this run */
    f.fraction = f.total ? (f.done + p->in_flight) / f.total : 1.0;
    f.eta = progress > 0.05 ? f.elapsed / progress * (p->n_todo - progress) : -1;
    f.speed = f.elapsed > 0 ? p->audio_s / f.elapsed : 0;
    return f;
}

void progress_show(struct batch_progress *p, bool tty, bool final) {
    struct figures f = figures_of(p);
    char a[32], b[32];
    int n_failed = p->n_failed + p->n_failed_before;
    if (tty) {
        char bar[BAR_WIDTH + 1];
        int filled = (int)(f.fraction * BAR_WIDTH + 0.5);
        for (int i = 0; i < BAR_WIDTH; i++)
            bar[i] = i < filled ? '#' : '-';
        bar[BAR_WIDTH] = '\0';
        fprintf(stderr, "\r[%s] %d/%d %3.0f%%  %.2f h audio  %.1fx RT  ETA %s", bar, f.done,
                f.total, 100 * f.fraction, p->audio_s / 3600, f.speed,
                final && f.done == f.total ? hms(a, 0) : hms(a, f.eta));
        if (n_failed)
            fprintf(stderr, "  %d failed", n_failed);
        fputs(final ? "\033[K\n" : "\033[K", stderr);
    } else if (final || f.elapsed - p->last_plain_s >= PLAIN_INTERVAL_S) {
        p->last_plain_s = f.elapsed;
        fprintf(stderr,
                "whisper-c batch: %d/%d items (%d failed), %.2f h audio, %.1fx real time, "
                "elapsed %s, ETA %s\n",
                f.done, f.total, n_failed, p->audio_s / 3600, f.speed, hms(a, f.elapsed),
                final && f.done == f.total ? "0:00" : hms(b, f.eta));
    }
    fflush(stderr);
}

void progress_message(bool tty, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (tty)
        fputs("\r\033[K", stderr);
    fputs("whisper-c batch: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
