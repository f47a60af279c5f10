/*
 * test_encoder_stream.c — whisperc_full_batch with its encoder passes on a background stream
 * (WHISPERC_ENCODE_STREAM=1, as on a GPU) whose ops do not run when they are issued: the CPU
 * backend behind an ops table that queues every op issued on a background stream and runs the
 * queue at that stream's sync, as a GPU runs a stream's work later. A batch that read what a
 * pass writes (its windows' cross-attention K/V, the encoder's output) before waiting for it,
 * or wrote the encoder's host input or buffers while a pass still had to read them, would
 * decode other text: every input must give whisperc_full's transcript, tokens and times bit for
 * bit. tiny.en on LJSpeech clips and a long input of two windows (greedy with a lag of 1 and 8
 * steps a window: passes long in flight while other lanes need windows; 5 beams), then base on
 * the multilingual clips and jfk with the language detected (a lag of 64: inputs start, and
 * detect, while a pass is queued). Checks that ops were deferred and run. Skips (77) without
 * ../shared.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "common.h"
#include "libwhisperc.h"

/* ---- a CPU backend whose background streams run their ops at sync ---- */

enum call_kind { C_UPLOAD_ASYNC, C_TRANSPOSE, C_CONV1D, C_LAYERNORM, C_LINEAR, C_ATTN_WINDOWS };

struct call { /* one op queued on a deferred stream: its arguments by value */
    enum call_kind kind;
    struct wc_stream *s;
    float *out;
    const float *in, *b, *g, *add, *q, *k, *v;
    const void *src;
    void *dst;
    const struct wc_mat *w;
    size_t bytes;
    int i0, i1, i2, i3, i4;
    enum wc_act act;
};

static const struct wc_backend_ops *real; /* the CPU backend's own table */
static struct wc_backend_ops deferred_ops;
static struct wc_stream *deferred[4]; /* the background streams made */
static int n_deferred_streams;
static struct call *queue;
static int n_queue, cap_queue;
static long n_deferred_calls, n_run_late; /* queued, and run at a sync */

static bool is_deferred(const struct wc_stream *s) {
    for (int i = 0; i < n_deferred_streams; i++)
        if (deferred[i] == s)
            return true;
    return false;
}

static void push(const struct call *c) {
    if (n_queue == cap_queue) {
        cap_queue = cap_queue ? 2 * cap_queue : 256;
        queue = realloc(queue, (size_t)cap_queue * sizeof *queue);
        if (!queue)
            abort();
    }
    queue[n_queue++] = *c;
    n_deferred_calls++;
}

static void run_call(const struct call *c) {
    switch (c->kind) {
    case C_UPLOAD_ASYNC: real->upload_async(c->s, c->dst, c->src, c->bytes); break;
    case C_TRANSPOSE: real->transpose(c->s, c->out, c->in, c->i0, c->i1); break;
    case C_CONV1D:
        real->conv1d(c->s, c->out, c->in, c->w, c->b, c->add, c->i0, c->i1, c->i2, c->i3, c->act);
        break;
    case C_LAYERNORM: real->layernorm(c->s, c->out, c->in, c->g, c->b, c->i0, c->i1); break;
    case C_LINEAR:
        real->linear(c->s, c->out, c->i0, c->in, c->w, c->b, c->i1, c->act, c->i2);
        break;
    case C_ATTN_WINDOWS:
        real->attention_windows(c->s, c->out, c->q, c->k, c->v, c->i0, c->i1, c->i2, c->i3);
        break;
    }
}

/* The stream's queued ops, in order (ops they issue in turn run at once). */
static void run_queue(struct wc_stream *s) {
    int kept = 0;
    for (int i = 0; i < n_queue; i++) {
        if (queue[i].s == s) {
            run_call(&queue[i]);
            n_run_late++;
        } else {
            queue[kept++] = queue[i];
        }
    }
    n_queue = kept;
}

static int d_stream_new(struct wc_backend *be, int n_threads, int flags, struct wc_stream **out,
                        char *err, size_t err_size) {
    int rc = real->stream_new(be, n_threads, flags, out, err, err_size);
    if (!rc && (flags & WC_STREAM_BACKGROUND)) {
        CHECK(n_deferred_streams < 4);
        if (n_deferred_streams < 4)
            deferred[n_deferred_streams++] = *out;
    }
    return rc;
}

static void d_stream_free(struct wc_stream *s) {
    for (int i = 0; i < n_deferred_streams; i++)
        if (deferred[i] == s) {
            run_queue(s); /* (a free waits for the stream's work, as CUDA's does) */
            deferred[i] = deferred[--n_deferred_streams];
        }
    real->stream_free(s);
}

static int d_sync(struct wc_stream *s) {
    run_queue(s);
    return real->sync(s);
}

/* Each op the encoder and the cross-attention K/V issue on the CPU, queued where s defers. */
static void d_upload_async(struct wc_stream *s, void *dst, const void *src, size_t bytes) {
    if (!is_deferred(s))
        return real->upload_async(s, dst, src, bytes);
    push(&(struct call){.kind = C_UPLOAD_ASYNC, .s = s, .dst = dst, .src = src, .bytes = bytes});
}

static void d_transpose(struct wc_stream *s, float *out, const float *in, int rows, int cols) {
    if (!is_deferred(s))
        return real->transpose(s, out, in, rows, cols);
    push(&(struct call){.kind = C_TRANSPOSE, .s = s, .out = out, .in = in, .i0 = rows, .i1 = cols});
}

static void d_conv1d(struct wc_stream *s, float *out, const float *in, const struct wc_mat *w,
                     const float *b, const float *add, int c_in, int c_out, int t_in, int stride,
                     enum wc_act act) {
    if (!is_deferred(s))
        return real->conv1d(s, out, in, w, b, add, c_in, c_out, t_in, stride, act);
    push(&(struct call){.kind = C_CONV1D,
                        .s = s,
                        .out = out,
                        .in = in,
                        .w = w,
                        .b = b,
                        .add = add,
                        .i0 = c_in,
                        .i1 = c_out,
                        .i2 = t_in,
                        .i3 = stride,
                        .act = act});
}

static void d_layernorm(struct wc_stream *s, float *out, const float *in, const float *g,
                        const float *b, int n_rows, int c) {
    if (!is_deferred(s))
        return real->layernorm(s, out, in, g, b, n_rows, c);
    push(&(struct call){
        .kind = C_LAYERNORM, .s = s, .out = out, .in = in, .g = g, .b = b, .i0 = n_rows, .i1 = c});
}

static void d_linear(struct wc_stream *s, float *out, int ld_out, const float *in,
                     const struct wc_mat *w, const float *b, int n_rows, enum wc_act act,
                     int accumulate) {
    if (!is_deferred(s))
        return real->linear(s, out, ld_out, in, w, b, n_rows, act, accumulate);
    push(&(struct call){.kind = C_LINEAR,
                        .s = s,
                        .out = out,
                        .i0 = ld_out,
                        .in = in,
                        .w = w,
                        .b = b,
                        .i1 = n_rows,
                        .act = act,
                        .i2 = accumulate});
}

static void d_attention_windows(struct wc_stream *s, float *out, const float *q, const float *k,
                                const float *v, int n_win, int t_len, int c, int n_head) {
    if (!is_deferred(s))
        return real->attention_windows(s, out, q, k, v, n_win, t_len, c, n_head);
    push(&(struct call){.kind = C_ATTN_WINDOWS,
                        .s = s,
                        .out = out,
                        .q = q,
                        .k = k,
                        .v = v,
                        .i0 = n_win,
                        .i1 = t_len,
                        .i2 = c,
                        .i3 = n_head});
}

/* Any other op on a deferred stream would run out of order: counted as a failure. */
static void d_to_f16(struct wc_stream *s, void *dst, const float *src, size_t n) {
    CHECK(!is_deferred(s));
    real->to_f16(s, dst, src, n);
}

static void install(whisperc_model *m) {
    real = m->be->ops;
    deferred_ops = *real;
    deferred_ops.stream_new = d_stream_new;
    deferred_ops.stream_free = d_stream_free;
    deferred_ops.sync = d_sync;
    deferred_ops.upload_async = d_upload_async;
    deferred_ops.transpose = d_transpose;
    deferred_ops.conv1d = d_conv1d;
    deferred_ops.layernorm = d_layernorm;
    deferred_ops.linear = d_linear;
    deferred_ops.attention_windows = d_attention_windows;
    deferred_ops.to_f16 = d_to_f16;
    /* the fused forms the CPU lacks stay absent (NULL), so the encoder takes the ops above */
    CHECK(!real->norm_qkv && !real->norm_mlp && !real->norm_self_attention &&
          !real->linear_windows && !real->linear_merge_windows);
    m->be->ops = &deferred_ops;
}

/* ---- results ---- */

struct result {
    char *text;
    int n_seg, n_tokens;
    int64_t *t;      /* [n_seg][2] */
    int32_t *tokens; /* every segment's, in order */
    char lang[8];
};

static void take_result(whisperc_state *st, struct result *r) {
    r->text = strdup(whisperc_full_text(st));
    r->n_seg = whisperc_n_segments(st);
    r->t = malloc(((size_t)r->n_seg + 1) * 2 * sizeof *r->t);
    r->n_tokens = 0;
    for (int i = 0; i < r->n_seg; i++)
        r->n_tokens += whisperc_segment_n_tokens(st, i);
    r->tokens = malloc(((size_t)r->n_tokens + 1) * sizeof *r->tokens);
    for (int i = 0, j = 0; i < r->n_seg; i++) {
        r->t[2 * i] = whisperc_segment_t0_ms(st, i);
        r->t[2 * i + 1] = whisperc_segment_t1_ms(st, i);
        for (int k = 0; k < whisperc_segment_n_tokens(st, i); k++)
            r->tokens[j++] = whisperc_segment_token_id(st, i, k);
    }
    snprintf(r->lang, sizeof r->lang, "%s", whisperc_full_language(st));
}

static bool same(const struct result *a, const struct result *b) {
    return !strcmp(a->text, b->text) && a->n_seg == b->n_seg && a->n_tokens == b->n_tokens &&
           !memcmp(a->t, b->t, (size_t)a->n_seg * 2 * sizeof *a->t) &&
           !memcmp(a->tokens, b->tokens, (size_t)a->n_tokens * sizeof *a->tokens) &&
           !strcmp(a->lang, b->lang);
}

static void result_free(struct result *r) {
    free(r->text), free(r->t), free(r->tokens);
    memset(r, 0, sizeof *r);
}

/* The n inputs alone (whisperc_full), then batched with the passes deferred on a background
 * stream; every input the same. */
static void compare(whisperc_state *st, struct whisperc_full_params *fp, const float *const *pcm,
                    const int *n_samples, int n, int batch_size, const char *lag,
                    const char *what) {
    struct result *alone = calloc((size_t)n, sizeof *alone);
    unsetenv("WHISPERC_ENCODE_STREAM");
    for (int i = 0; i < n; i++) {
        CHECK(whisperc_full(st, fp, pcm[i], n_samples[i]) == WHISPERC_OK);
        take_result(st, &alone[i]);
    }
    setenv("WHISPERC_ENCODE_STREAM", "1", 1);
    setenv("WHISPERC_ENCODE_LAG", lag, 1);
    long calls0 = n_deferred_calls, late0 = n_run_late;
    fp->batch_size = batch_size;
    int rc = whisperc_full_batch(st, fp, pcm, n_samples, n);
    CHECK(rc == WHISPERC_OK);
    if (rc)
        fprintf(stderr, "%s\n", whisperc_state_errmsg(st));
    int ok = rc == WHISPERC_OK;
    for (int i = 0; i < n && !rc; i++) {
        CHECK(whisperc_batch_select(st, i) == WHISPERC_OK);
        struct result r;
        take_result(st, &r);
        if (!same(&alone[i], &r)) {
            ok = 0;
            printf("  input %d differs:\n    alone:   [%s] %s\n    batched: [%s] %s\n", i,
                   alone[i].lang, alone[i].text, r.lang, r.text);
        }
        result_free(&r);
    }
    long calls = n_deferred_calls - calls0, late = n_run_late - late0;
    printf("%s, batch_size %d, lag %s: %d inputs %s; %ld encoder ops deferred, %ld run at a "
           "sync\n",
           what, batch_size, lag, n, ok ? "identical" : "DIFFER", calls, late);
    CHECK(ok);
    CHECK(calls > 0 && late == calls && n_queue == 0);
    unsetenv("WHISPERC_ENCODE_STREAM");
    unsetenv("WHISPERC_ENCODE_LAG");
    for (int i = 0; i < n; i++)
        result_free(&alone[i]);
    free(alone);
}

static whisperc_model *load(const char *rel) {
    struct whisperc_model_params mp = whisperc_model_default_params();
    mp.device = WHISPERC_DEVICE_CPU;
    whisperc_model *m = NULL;
    char err[256];
    CHECK(whisperc_model_load(shared_path_or_skip(rel), &mp, &m, err, sizeof err) == WHISPERC_OK);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    install(m);
    return m;
}

#define N_CLIPS 4
#define N_LONG  6 /* clips joined into one input of two windows */

int main(int argc, char **argv) {
    /* under a sanitizer (CI's ASan + UBSan build, 3-5x slower): the passes long in flight only */
    bool sanitized = argc > 1 && !strcmp(argv[1], "sanitized");
    /* tiny.en: clips of different lengths and a long input, so that windows end at other steps
     * and passes are queued while others decode */
    float *pcm[N_CLIPS + 1];
    int n[N_CLIPS + 1];
    for (int i = 0; i < N_CLIPS; i++)
        pcm[i] = ljspeech_clips(i, 1, &n[i]);
    pcm[N_CLIPS] = ljspeech_clips(N_CLIPS, N_LONG, &n[N_CLIPS]);
    whisperc_model *m = load("models/ggml-tiny.en.bin");
    whisperc_state *st = NULL;
    CHECK(whisperc_state_new(m, &st) == WHISPERC_OK);
    struct whisperc_full_params fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    fp.n_threads = 2;
    fp.language = "en";
    const float *const *in = (const float *const *)pcm;
    if (!sanitized)
        compare(st, &fp, in, n, N_CLIPS + 1, 3, "1", "tiny.en greedy");
    /* passes long in flight: lanes need windows meanwhile */
    compare(st, &fp, in, n, N_CLIPS + 1, 4, "8", "tiny.en greedy");
    struct whisperc_full_params bp = whisperc_full_default_params(WHISPERC_SAMPLING_BEAM_SEARCH);
    bp.n_threads = 2;
    bp.language = "en";
    if (!sanitized)
        compare(st, &bp, in, n, 3, 2, "1", "tiny.en 5 beams");
    CHECK(n_deferred_streams == 1); /* the state's, made once */
    whisperc_state_free(st);
    CHECK(n_deferred_streams == 0 && n_queue == 0);
    whisperc_model_free(m);
    for (int i = 0; i <= N_CLIPS; i++)
        free(pcm[i]);
    if (sanitized) {
        free(queue);
        return TEST_RESULT();
    }

    /* base: the languages detected, on the state's stream, while passes are queued */
    /* inputs of other lengths, so that a lane frees up while another's pass is queued */
    static const char *const files[] = {"multilingual/de.wav", "jfk/jfk.wav", "multilingual/es.wav",
                                        "multilingual/fr.wav"};
    float *ml[4];
    int n_ml[4];
    for (int i = 0; i < 4; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "audio/%s", files[i]);
        ml[i] = shared_audio(rel, &n_ml[i]);
    }
    m = load("models/ggml-base.bin");
    CHECK(whisperc_state_new(m, &st) == WHISPERC_OK);
    fp.language = NULL; /* detect */
    /* passes long in flight: the next inputs' languages detected meanwhile */
    compare(st, &fp, (const float *const *)ml, n_ml, 4, 2, "64", "base, language detected");
    whisperc_state_free(st);
    whisperc_model_free(m);
    for (int i = 0; i < 4; i++)
        free(ml[i]);
    free(queue);
    return TEST_RESULT();
}
