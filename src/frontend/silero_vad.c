/*
 * silero_vad.c — Silero VAD v5 and v6 (one architecture), 16 kHz (silero_vad.h).
 *
 * The network, per 512-sample window x (with the 64 samples before it: 576 samples):
 *   STFT     x reflect-padded by 64 on the right (640), 4 frames of 256 every 128 samples,
 *            times a learnt basis (258 x 256: 129 bins' real and imaginary parts), magnitude;
 *   encoder  4 conv1d (kernel 3, padding 1) + ReLU, 129 -> 128 -> 64 -> 64 -> 128 channels,
 *            strides 1, 2, 2, 1: 4 frames -> 4 -> 2 -> 1 -> 1;
 *   decoder  an LSTM cell (128, PyTorch's gate order i f g o) over the windows in order, then
 *            ReLU, a 128 -> 1 linear and a sigmoid.
 * This is silero-vad's OnnxWrapper: its context is the 64 input samples before the window
 * (zeros before the first). whisper.cpp instead reflect-pads each 512-sample window by 64 on
 * both sides, so its probabilities differ slightly from Silero's; these are Silero's.
 *
 * Everything but the LSTM's recurrence is independent per window, so a block of windows goes
 * through the STFT and the convolutions as matrix products (im2col, OpenBLAS), and the LSTM's
 * input projection too; only h -> gates (128 x 512) runs window by window.
 */
#include "frontend/silero_vad.h"

#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libwhisperc.h"
#include "util.h"

#define SV_CONTEXT     64
#define SV_FFT         256 /* STFT frame */
#define SV_HOP         128
#define SV_FRAMES      4 /* (576 + 64 - 256) / 128 + 1 */
#define SV_BINS        129
#define SV_LAYERS      4
#define SV_HIDDEN      128
#define SV_GATES       (4 * SV_HIDDEN)
#define SV_BLOCK       128                /* windows through the convolutions at once */
#define SV_MAX_FILE    (64 * 1024 * 1024) /* the real file is 885 KB */
#define SV_MAX_THREADS 64

static const int sv_in[SV_LAYERS] = {SV_BINS, 128, 64, 64};
static const int sv_out[SV_LAYERS] = {128, 64, 64, 128};
static const int sv_stride[SV_LAYERS] = {1, 2, 2, 1};

struct silero_vad {
    char version[40];
    float *basis;                               /* [2 * SV_BINS][SV_FFT] */
    float *enc_w[SV_LAYERS], *enc_b[SV_LAYERS]; /* [out][in * 3], [out] */
    float *w_ih, *w_hh, *b_ih, *b_hh;           /* [SV_GATES][SV_HIDDEN], [SV_GATES] */
    float *out_w, *out_b;                       /* [SV_HIDDEN], [1] */
};

void silero_vad_free(struct silero_vad *m) {
    if (!m)
        return;
    free(m->basis);
    for (int i = 0; i < SV_LAYERS; i++) {
        free(m->enc_w[i]);
        free(m->enc_b[i]);
    }
    free(m->w_ih);
    free(m->w_hh);
    free(m->b_ih);
    free(m->b_hh);
    free(m->out_w);
    free(m->out_b);
    free(m);
}

const char *silero_vad_version(const struct silero_vad *m) { return m->version; }

// ---- loading

struct reader {
    const uint8_t *p, *end;
    const char *path;
    char *err;
    size_t err_size;
};

static bool rd_bytes(struct reader *r, void *dst, size_t n) {
    if ((size_t)(r->end - r->p) < n)
        return false;
    memcpy(dst, r->p, n);
    r->p += n;
    return true;
}

static bool rd_i32(struct reader *r, int32_t *v) { return rd_bytes(r, v, 4); }

static int bad(struct reader *r, const char *what) {
    wc_errf(r->err, r->err_size, "%s: not a 16 kHz Silero VAD ggml file: %s", r->path, what);
    return WHISPERC_ERR_MODEL_FORMAT;
}

/* The header: magic, model type, version, window, context, then the architecture, which must be
 * the one this file implements. */
static int read_header(struct reader *r, struct silero_vad *m) {
    uint32_t magic;
    int32_t len, v[3], win, ctx, n_layers;
    char type[65];
    if (!rd_bytes(r, &magic, 4) || magic != 0x67676d6c)
        return bad(r, "no ggml magic");
    if (!rd_i32(r, &len) || len < 1 || len > 64 || !rd_bytes(r, type, (size_t)len))
        return bad(r, "no model type");
    type[len] = '\0';
    if (strcmp(type, "silero-16k") != 0)
        return bad(r, "the model type is not silero-16k");
    if (!rd_i32(r, &v[0]) || !rd_i32(r, &v[1]) || !rd_i32(r, &v[2]) || v[0] < 0 || v[1] < 0 ||
        v[2] < 0)
        return bad(r, "no version");
    snprintf(m->version, sizeof m->version, "%d.%d.%d", (int)v[0], (int)v[1], (int)v[2]);
    if (!rd_i32(r, &win) || !rd_i32(r, &ctx) || win != SILERO_WINDOW || ctx != SV_CONTEXT)
        return bad(r, "window and context are not 512 and 64 samples");
    if (!rd_i32(r, &n_layers) || n_layers != SV_LAYERS)
        return bad(r, "not 4 encoder layers");
    for (int i = 0; i < SV_LAYERS; i++) {
        int32_t ci, co, k;
        if (!rd_i32(r, &ci) || !rd_i32(r, &co) || !rd_i32(r, &k) || ci != sv_in[i] ||
            co != sv_out[i] || k != 3)
            return bad(r, "encoder layers are not 129-128-64-64-128 channels, kernel 3");
    }
    int32_t dims[4];
    for (int i = 0; i < 4; i++)
        if (!rd_i32(r, &dims[i]))
            return bad(r, "truncated header");
    if (dims[0] != SV_HIDDEN || dims[1] != SV_HIDDEN || dims[2] != SV_HIDDEN || dims[3] != 1)
        return bad(r, "the LSTM and output layer are not 128 -> 128 -> 1");
    return 0;
}

struct tensor_spec {
    const char *name;
    int32_t ne[3]; /* ggml order, innermost first; 1 past the tensor's dimensions */
    float **dst;
};

/* The tensors, in whisper.cpp's names and ggml shapes (f16 or f32 accepted for each). */
static int tensor_specs(struct silero_vad *m, struct tensor_spec *t) {
    static const char *enc[SV_LAYERS][2] = {
        {"_model.encoder.0.reparam_conv.weight", "_model.encoder.0.reparam_conv.bias"},
        {"_model.encoder.1.reparam_conv.weight", "_model.encoder.1.reparam_conv.bias"},
        {"_model.encoder.2.reparam_conv.weight", "_model.encoder.2.reparam_conv.bias"},
        {"_model.encoder.3.reparam_conv.weight", "_model.encoder.3.reparam_conv.bias"}};
    int n = 0;
    t[n++] = (struct tensor_spec){
        "_model.stft.forward_basis_buffer", {SV_FFT, 1, 2 * SV_BINS}, &m->basis};
    for (int i = 0; i < SV_LAYERS; i++) {
        t[n++] = (struct tensor_spec){enc[i][0], {3, sv_in[i], sv_out[i]}, &m->enc_w[i]};
        t[n++] = (struct tensor_spec){enc[i][1], {sv_out[i], 1, 1}, &m->enc_b[i]};
    }
    t[n++] =
        (struct tensor_spec){"_model.decoder.rnn.weight_ih", {SV_HIDDEN, SV_GATES, 1}, &m->w_ih};
    t[n++] =
        (struct tensor_spec){"_model.decoder.rnn.weight_hh", {SV_HIDDEN, SV_GATES, 1}, &m->w_hh};
    t[n++] = (struct tensor_spec){"_model.decoder.rnn.bias_ih", {SV_GATES, 1, 1}, &m->b_ih};
    t[n++] = (struct tensor_spec){"_model.decoder.rnn.bias_hh", {SV_GATES, 1, 1}, &m->b_hh};
    t[n++] = (struct tensor_spec){"_model.decoder.decoder.2.weight", {SV_HIDDEN, 1, 1}, &m->out_w};
    t[n++] = (struct tensor_spec){"_model.decoder.decoder.2.bias", {1, 1, 1}, &m->out_b};
    return n;
}

/* One tensor record: n_dims, name length, type, dims, name, data; into its spec's f32 array. */
static int read_tensor(struct reader *r, struct tensor_spec *specs, int n_specs) {
    int32_t n_dims, len, type, ne[4] = {1, 1, 1, 1};
    char name[257];
    if (!rd_i32(r, &n_dims) || !rd_i32(r, &len) || !rd_i32(r, &type))
        return bad(r, "truncated tensor header");
    if (n_dims < 0 || n_dims > 4 || len < 1 || len > 256 || (type != 0 && type != 1))
        return bad(r, "a tensor header is invalid (dimensions, name or type)");
    for (int i = 0; i < n_dims; i++)
        if (!rd_i32(r, &ne[i]) || ne[i] < 1)
            return bad(r, "a tensor's dimensions are invalid");
    if (!rd_bytes(r, name, (size_t)len))
        return bad(r, "truncated tensor name");
    name[len] = '\0';
    struct tensor_spec *s = NULL;
    for (int i = 0; i < n_specs && !s; i++)
        if (strlen(specs[i].name) == (size_t)len && memcmp(specs[i].name, name, (size_t)len) == 0)
            s = &specs[i];
    if (!s) {
        char shown[96];
        wc_printable(shown, sizeof shown, (const uint8_t *)name, (size_t)len);
        wc_errf(r->err, r->err_size, "%s: unknown tensor '%s' in a Silero VAD file", r->path,
                shown);
        return WHISPERC_ERR_MODEL_FORMAT;
    }
    /* from here on name is one of the known names: printable */
    if (*s->dst) {
        wc_errf(r->err, r->err_size, "%s: tensor '%s' appears twice", r->path, name);
        return WHISPERC_ERR_MODEL_FORMAT;
    }
    if (ne[0] != s->ne[0] || ne[1] != s->ne[1] || ne[2] != s->ne[2] || ne[3] != 1) {
        wc_errf(r->err, r->err_size, "%s: tensor '%s' is [%d, %d, %d%s], expected [%d, %d, %d]",
                r->path, name, ne[0], ne[1], ne[2], ne[3] != 1 ? ", ..." : "", s->ne[0], s->ne[1],
                s->ne[2]);
        return WHISPERC_ERR_MODEL_FORMAT;
    }
    size_t n = (size_t)ne[0] * (size_t)ne[1] * (size_t)ne[2];
    size_t bytes = n * (type == 1 ? 2 : 4);
    if ((size_t)(r->end - r->p) < bytes)
        return bad(r, "truncated tensor data");
    float *d = malloc(n * sizeof *d);
    if (!d) {
        wc_errf(r->err, r->err_size, "%s: out of memory", r->path);
        return WHISPERC_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        if (type == 1) {
            uint16_t h;
            memcpy(&h, r->p + 2 * i, 2);
            d[i] = wc_f16_to_f32(h);
        } else {
            memcpy(&d[i], r->p + 4 * i, 4);
        }
        if (!isfinite(d[i])) {
            free(d);
            wc_errf(r->err, r->err_size, "%s: tensor '%s' holds a non-finite value", r->path, name);
            return WHISPERC_ERR_MODEL_FORMAT;
        }
    }
    r->p += bytes;
    *s->dst = d;
    return 0;
}

static int parse(struct reader *r, struct silero_vad *m) {
    int rc = read_header(r, m);
    struct tensor_spec specs[16];
    int n_specs = tensor_specs(m, specs);
    while (!rc && r->p < r->end)
        rc = read_tensor(r, specs, n_specs);
    for (int i = 0; i < n_specs && !rc; i++)
        if (!*specs[i].dst) {
            wc_errf(r->err, r->err_size, "%s: tensor '%s' is missing", r->path, specs[i].name);
            rc = WHISPERC_ERR_MODEL_FORMAT;
        }
    return rc;
}

/* Up to size bytes of fd into buf; the count read, or -1 on an error. */
static ssize_t read_all(int fd, uint8_t *buf, size_t size) {
    size_t n = 0;
    while (n < size) {
        ssize_t k = read(fd, buf + n, size - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        n += (size_t)k;
    }
    return (ssize_t)n;
}

int silero_vad_load(const char *path, struct silero_vad **out, char *err, size_t err_size) {
    *out = NULL;
    /* O_NONBLOCK: a FIFO with no writer must not block the open; it is refused below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        wc_errf(err, err_size, "%s: cannot open the VAD model: %s", path, strerror(errno));
        return WHISPERC_ERR_IO;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        wc_errf(err, err_size, "%s: not a regular file", path);
        return WHISPERC_ERR_IO;
    }
    size_t size = sb.st_size > SV_MAX_FILE ? 0 : (size_t)sb.st_size;
    uint8_t *buf = malloc(size + 1);
    ssize_t got = buf ? read_all(fd, buf, size) : 0;
    bool failed = buf && got != (ssize_t)size;
    size_t n = got > 0 ? (size_t)got : 0;
    close(fd);
    if (!buf) {
        wc_errf(err, err_size, "%s: out of memory", path);
        return WHISPERC_ERR_NO_MEMORY;
    }
    int rc = 0;
    struct silero_vad *m = calloc(1, sizeof *m);
    struct reader r = {buf, buf + n, path, err, err_size};
    if (failed) {
        wc_errf(err, err_size, "%s: cannot read the VAD model", path);
        rc = WHISPERC_ERR_IO;
    } else if (sb.st_size > SV_MAX_FILE) {
        rc = bad(&r, "over 64 MB (Silero VAD files are about 1 MB: a Whisper model?)");
    } else if (!m) {
        wc_errf(err, err_size, "%s: out of memory", path);
        rc = WHISPERC_ERR_NO_MEMORY;
    } else {
        rc = parse(&r, m);
    }
    free(buf);
    if (rc) {
        silero_vad_free(m);
        return rc;
    }
    /* Blocks run side by side on the caller's threads, each product on one: OpenBLAS's own
     * threads would oversubscribe the cores (the CPU backend sets the same, process-wide). */
    openblas_set_num_threads(1);
    *out = m;
    return 0;
}

// ---- inference

/* Scratch for SV_BLOCK windows. */
struct sv_work {
    float *frames;             /* [SV_BLOCK * SV_FRAMES][SV_FFT] */
    float *spec;               /* [SV_BLOCK * SV_FRAMES][2 * SV_BINS] */
    float *act[SV_LAYERS + 1]; /* layer i's input [SV_BLOCK][frames][channels]; act[4]: output */
    float *col;                /* im2col rows, at most [SV_BLOCK * SV_FRAMES][SV_BINS * 3] */
    float *gates;              /* [SV_BLOCK][SV_GATES]: the LSTM's input projection + biases */
};

static void work_free(struct sv_work *w) {
    free(w->frames);
    free(w->spec);
    for (int i = 0; i <= SV_LAYERS; i++)
        free(w->act[i]);
    free(w->col);
    free(w->gates);
}

static bool work_alloc(struct sv_work *w) {
    memset(w, 0, sizeof *w);
    size_t rows = (size_t)SV_BLOCK * SV_FRAMES;
    w->frames = malloc(rows * SV_FFT * sizeof(float));
    w->spec = malloc(rows * 2 * SV_BINS * sizeof(float));
    w->col = malloc(rows * SV_BINS * 3 * sizeof(float));
    w->gates = malloc((size_t)SV_BLOCK * SV_GATES * sizeof(float));
    bool ok = w->frames && w->spec && w->col && w->gates;
    int t = SV_FRAMES;
    for (int i = 0; i <= SV_LAYERS; i++) {
        int ch = i < SV_LAYERS ? sv_in[i] : sv_out[SV_LAYERS - 1];
        w->act[i] = malloc((size_t)SV_BLOCK * (size_t)t * (size_t)ch * sizeof(float));
        ok = ok && w->act[i];
        if (i < SV_LAYERS)
            t = (t - 1) / sv_stride[i] + 1;
    }
    if (!ok)
        work_free(w);
    return ok;
}

/* The 4 STFT frames of window b: the 64 samples before it and its 512 (zeros outside the
 * signal), reflect-padded by 64 on the right (torch's ReflectionPad1d: x[575 + j] mirrored
 * about x[575]). */
static void window_frames(const float *pcm, size_t n, size_t b, float *frames) {
    float x[SV_CONTEXT + SILERO_WINDOW + SV_CONTEXT];
    const int len = SV_CONTEXT + SILERO_WINDOW;
    for (int i = 0; i < len; i++) {
        size_t at = b * SILERO_WINDOW + (size_t)i; /* + 64 past the sample's index */
        x[i] = at >= SV_CONTEXT && at - SV_CONTEXT < n ? pcm[at - SV_CONTEXT] : 0.0f;
    }
    for (int j = 0; j < SV_CONTEXT; j++)
        x[len + j] = x[len - 2 - j];
    for (int f = 0; f < SV_FRAMES; f++)
        memcpy(frames + (size_t)f * SV_FFT, x + f * SV_HOP, SV_FFT * sizeof(float));
}

/* out[b][t][o] = relu(bias[o] + sum over c, j of w[o][c][j] in[b][t * stride + j - 1][c]), for
 * kernel 3, padding 1, each window's frames a sequence of their own. */
static void conv_relu(const float *in, int n_b, int t_in, int c_in, const float *w,
                      const float *bias, int c_out, int stride, float *col, float *out) {
    int t_out = (t_in - 1) / stride + 1, k = 3 * c_in;
    for (int b = 0; b < n_b; b++)
        for (int t = 0; t < t_out; t++) {
            float *row = col + ((size_t)b * t_out + t) * k;
            for (int j = 0; j < 3; j++) {
                int ti = t * stride + j - 1;
                if (ti < 0 || ti >= t_in) { /* the zero padding */
                    for (int c = 0; c < c_in; c++)
                        row[3 * c + j] = 0.0f;
                    continue;
                }
                const float *src = in + ((size_t)b * t_in + (size_t)ti) * c_in;
                for (int c = 0; c < c_in; c++)
                    row[3 * c + j] = src[c];
            }
        }
    int rows = n_b * t_out;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, c_out, k, 1.0f, col, k, w, k, 0.0f,
                out, c_out);
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < c_out; o++) {
            float v = out[(size_t)r * c_out + o] + bias[o];
            out[(size_t)r * c_out + o] = v > 0.0f ? v : 0.0f;
        }
}

/* Windows [b0, b0 + n_b): STFT, encoder, and the LSTM's input projection into w->gates. */
static void block_forward(const struct silero_vad *m, const float *pcm, size_t n, size_t b0,
                          int n_b, struct sv_work *w) {
    for (int b = 0; b < n_b; b++)
        window_frames(pcm, n, b0 + (size_t)b, w->frames + (size_t)b * SV_FRAMES * SV_FFT);
    int rows = n_b * SV_FRAMES;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, 2 * SV_BINS, SV_FFT, 1.0f, w->frames,
                SV_FFT, m->basis, SV_FFT, 0.0f, w->spec, 2 * SV_BINS);
    for (int r = 0; r < rows; r++) {
        const float *s = w->spec + (size_t)r * 2 * SV_BINS;
        for (int k = 0; k < SV_BINS; k++)
            w->act[0][(size_t)r * SV_BINS + k] =
                sqrtf(s[k] * s[k] + s[SV_BINS + k] * s[SV_BINS + k]);
    }
    int t = SV_FRAMES;
    for (int i = 0; i < SV_LAYERS; i++) {
        conv_relu(w->act[i], n_b, t, sv_in[i], m->enc_w[i], m->enc_b[i], sv_out[i], sv_stride[i],
                  w->col, w->act[i + 1]);
        t = (t - 1) / sv_stride[i] + 1;
    }
    /* t is 1: act[4] is [n_b][128] */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_b, SV_GATES, SV_HIDDEN, 1.0f,
                w->act[SV_LAYERS], SV_HIDDEN, m->w_ih, SV_HIDDEN, 0.0f, w->gates, SV_GATES);
    for (int b = 0; b < n_b; b++)
        for (int g = 0; g < SV_GATES; g++)
            w->gates[(size_t)b * SV_GATES + g] += m->b_ih[g];
}

static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* tanh through expf: libm's tanhf (expm1f) was a fifth of the whole run; this is within 1e-7
 * of it absolutely, which is all an LSTM's state needs. */
static float tanh_fast(float x) {
    if (x > 15.0f) /* exp(2x) would overflow past 44; tanh is 1 in float well before */
        return 1.0f;
    if (x < -15.0f)
        return -1.0f;
    return 1.0f - 2.0f / (expf(2.0f * x) + 1.0f);
}

/* One LSTM step from the window's input gates, then the output layer: p(speech). */
static float lstm_step(const struct silero_vad *m, const float *gates_in, float *h, float *c) {
    float g[SV_GATES];
    memcpy(g, m->b_hh, sizeof g);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, SV_GATES, SV_HIDDEN, 1.0f, m->w_hh, SV_HIDDEN, h, 1,
                1.0f, g, 1);
    float logit = m->out_b[0];
    for (int k = 0; k < SV_HIDDEN; k++) {
        float i = sigmoidf(gates_in[k] + g[k]);
        float f = sigmoidf(gates_in[SV_HIDDEN + k] + g[SV_HIDDEN + k]);
        float cell = tanh_fast(gates_in[2 * SV_HIDDEN + k] + g[2 * SV_HIDDEN + k]);
        float o = sigmoidf(gates_in[3 * SV_HIDDEN + k] + g[3 * SV_HIDDEN + k]);
        c[k] = f * c[k] + i * cell;
        h[k] = o * tanh_fast(c[k]);
    }
    for (int k = 0; k < SV_HIDDEN; k++)
        logit += m->out_w[k] * (h[k] > 0.0f ? h[k] : 0.0f);
    return sigmoidf(logit);
}

/* One thread's block of a round. */
struct sv_job {
    const struct silero_vad *m;
    const float *pcm;
    size_t n_samples, b0;
    int n_b;
    struct sv_work w;
    pthread_t thread;
};

static void *sv_job_run(void *arg) {
    struct sv_job *j = arg;
    block_forward(j->m, j->pcm, j->n_samples, j->b0, j->n_b, &j->w);
    return NULL;
}

int silero_vad_probs(const struct silero_vad *m, const float *pcm, size_t n_samples, int n_threads,
                     float **probs, size_t *n_windows, char *err, size_t err_size) {
    *probs = NULL;
    *n_windows = 0;
    size_t n = (n_samples + SILERO_WINDOW - 1) / SILERO_WINDOW;
    if (n == 0)
        return 0;
    size_t n_blocks = (n + SV_BLOCK - 1) / SV_BLOCK;
    int n_jobs = n_threads < 1 ? 1 : n_threads > SV_MAX_THREADS ? SV_MAX_THREADS : n_threads;
    if ((size_t)n_jobs > n_blocks)
        n_jobs = (int)n_blocks;
    struct sv_job *jobs = calloc((size_t)n_jobs, sizeof *jobs);
    float *p = malloc(n * sizeof *p);
    int n_alloc = 0;
    while (jobs && n_alloc < n_jobs && work_alloc(&jobs[n_alloc].w))
        n_alloc++;
    if (!p || n_alloc < n_jobs) {
        for (int t = 0; t < n_alloc; t++)
            work_free(&jobs[t].w);
        free(jobs);
        free(p);
        wc_errf(err, err_size, "vad: out of memory for %zu windows", n);
        return WHISPERC_ERR_NO_MEMORY;
    }
    /* Rounds of n_jobs blocks: the blocks' convolutions side by side (each job has its own
     * scratch; a thread that cannot start runs inline), then the recurrence over them in
     * order. Each block's sums are the same whichever thread computes them. */
    float h[SV_HIDDEN] = {0}, c[SV_HIDDEN] = {0};
    for (size_t r0 = 0; r0 < n; r0 += (size_t)n_jobs * SV_BLOCK) {
        bool started[SV_MAX_THREADS] = {false};
        for (int t = 0; t < n_jobs; t++) {
            struct sv_job *j = &jobs[t];
            j->m = m, j->pcm = pcm, j->n_samples = n_samples;
            j->b0 = r0 + (size_t)t * SV_BLOCK;
            j->n_b = j->b0 >= n ? 0 : n - j->b0 < SV_BLOCK ? (int)(n - j->b0) : SV_BLOCK;
            if (t > 0 && j->n_b > 0)
                started[t] = pthread_create(&j->thread, NULL, sv_job_run, j) == 0;
        }
        for (int t = 0; t < n_jobs; t++) {
            if (started[t])
                pthread_join(jobs[t].thread, NULL);
            else if (jobs[t].n_b > 0)
                sv_job_run(&jobs[t]);
        }
        for (int t = 0; t < n_jobs; t++)
            for (int b = 0; b < jobs[t].n_b; b++)
                p[jobs[t].b0 + (size_t)b] =
                    lstm_step(m, jobs[t].w.gates + (size_t)b * SV_GATES, h, c);
    }
    for (int t = 0; t < n_jobs; t++)
        work_free(&jobs[t].w);
    free(jobs);
    *probs = p;
    *n_windows = n;
    return 0;
}
