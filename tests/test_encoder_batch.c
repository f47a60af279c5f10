/*
 * test_encoder_batch.c — encoder_forward_batch against encoder_forward (suite fast): three
 * different windows of a small random-weight model (tests/ggml_synth.c) encoded in one pass
 * must give each window exactly the bits it gets alone on the CPU backend, which is what lets
 * whisperc_full_batch match whisperc_full bit for bit. The same pass with the linears merged
 * across windows (linear_merge_windows = 1, the CUDA backend's choice) is checked too, on a
 * CPU backend whose ops table says so: close (1e-5 relative), and bitwise where OpenBLAS
 * happens to sum a row the same at every row count (printed, not required).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_internal.h"
#include "common.h"
#include "encoder/encoder.h"
#include "ggml_synth.h"

#define N_WIN 3

static struct test_rng rng = {31};

static float *nan_vec(size_t n) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
    return p;
}

/* The N_WIN windows one at a time on a one-window encoder, then in one pass on a three-window
 * encoder; returns how many windows differ in any bit, and the largest relative L2 error. */
static int encode_both(struct wc_stream *s, const struct wc_hparams *hp, const struct wc_weights *w,
                       const float *const *mels, int n_frames, double *max_rel) {
    size_t n = (size_t)hp->n_audio_ctx * hp->n_audio_state;
    const struct wc_backend_ops *op = s->be->ops;
    struct encoder one, three;
    CHECK(encoder_init(&one, s, hp, w, 1) == 0);
    CHECK(encoder_init(&three, s, hp, w, N_WIN) == 0);
    CHECK(three.n_windows == N_WIN);
    float *dev_one = op->alloc(s, n * sizeof(float));
    float *dev_all = op->alloc(s, N_WIN * n * sizeof(float));
    float *alone = nan_vec(N_WIN * n), *batch = nan_vec(N_WIN * n);
    op->upload(s, dev_all, batch, N_WIN * n * sizeof(float)); /* poisoned */
    for (int i = 0; i < N_WIN; i++) {
        encoder_forward(&one, s, mels[i], n_frames, dev_one);
        op->download(s, alone + i * n, dev_one, n * sizeof(float));
    }
    encoder_forward_batch(&three, s, mels, n_frames, N_WIN, dev_all);
    op->download(s, batch, dev_all, N_WIN * n * sizeof(float));
    CHECK(wc_stream_sync(s) == 0);
    int n_diff = 0;
    *max_rel = 0;
    for (int i = 0; i < N_WIN; i++) {
        n_diff += memcmp(alone + i * n, batch + i * n, n * sizeof(float)) != 0;
        double rel = rel_l2(batch + i * n, alone + i * n, n);
        *max_rel = rel > *max_rel ? rel : *max_rel;
        if (i > 0) /* the windows differ, so a pass that repeated window 0 would fail */
            CHECK(rel_l2(alone + i * n, alone, n) > 1e-2);
    }
    /* a pass over more windows than the encoder has room for is refused, stickily */
    encoder_forward_batch(&one, s, mels, n_frames, 2, dev_all);
    CHECK(s->err == WHISPERC_ERR_INVALID_ARG && strstr(s->errmsg, "room for 1") != NULL);
    s->err = 0, s->errmsg[0] = '\0'; /* CPU stream: nothing queued, so it may go on */
    free(alone), free(batch);
    op->release(s, dev_one), op->release(s, dev_all);
    encoder_free(&one, s), encoder_free(&three, s);
    return n_diff;
}

int main(void) {
    char path[] = "/tmp/wc_encoder_batch_XXXXXX";
    struct ggml_synth_opts o = ggml_synth_default_opts();
    o.n_state = 64;
    o.n_head = 2;
    o.n_layer = 2;
    o.n_audio_ctx = 200; /* 200 rows: the sgemm path of linear, as real windows take */
    o.seed = 11;
    CHECK(ggml_synth_write_temp(path, &o) == 0);
    struct whisperc_model_params mp = whisperc_model_default_params();
    mp.device = WHISPERC_DEVICE_CPU;
    whisperc_model *m = NULL;
    char err[512];
    if (whisperc_model_load(path, &mp, &m, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        unlink(path);
        return 1;
    }
    unlink(path);
    const struct wc_hparams *hp = &m->file->hp;

    /* three random windows, row stride longer than a window (as transcribe's whole log-Mel) */
    int n_frames = 2 * hp->n_audio_ctx + 37;
    float *mel_data[N_WIN];
    for (int i = 0; i < N_WIN; i++) {
        mel_data[i] = malloc((size_t)hp->n_mels * n_frames * sizeof(float));
        for (size_t j = 0; j < (size_t)hp->n_mels * n_frames; j++)
            mel_data[i][j] = test_rng_uniform(&rng);
    }
    const float *mels[N_WIN] = {mel_data[0], mel_data[1], mel_data[2]};

    struct wc_stream *s = NULL;
    CHECK(m->be->ops->stream_new(m->be, 2, 0, &s, NULL, 0) == 0);
    CHECK(m->be->ops->linear_merge_windows == 0);
    double rel;
    int n_diff = encode_both(s, hp, &m->w, mels, n_frames, &rel);
    printf("cpu, one linear call per window: %d of %d windows differ (max rel L2 %.3g)\n", n_diff,
           N_WIN, rel);
    CHECK(n_diff == 0);
    m->be->ops->stream_free(s);

    /* the merged path: the CPU backend with linear_merge_windows = 1 in a copy of its table */
    struct wc_backend_ops merged_ops = *m->be->ops;
    merged_ops.linear_merge_windows = 1;
    struct wc_backend merged = {.ops = &merged_ops, .impl = m->be->impl};
    CHECK(merged_ops.stream_new(&merged, 2, 0, &s, NULL, 0) == 0);
    n_diff = encode_both(s, hp, &m->w, mels, n_frames, &rel);
    printf("cpu, one linear call for all windows: %d of %d windows differ in some bit (max rel "
           "L2 %.3g <= 1e-5)\n",
           n_diff, N_WIN, rel);
    CHECK(rel <= 1e-5);
    merged_ops.stream_free(s);

    for (int i = 0; i < N_WIN; i++)
        free(mel_data[i]);
    whisperc_model_free(m);
    return TEST_RESULT();
}
