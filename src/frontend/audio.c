/*
 * audio.c — decode any file libsndfile reads to mono float, and resample it to 16 kHz with libsoxr.
 *
 * Stands in for openai-whisper audio.py load_audio() (ffmpeg -ac 1 -ar 16000): channels are
 * mixed with ffmpeg's weights (downmix.c: stereo averaged, 5.1 mostly its centre), samples keep
 * libsndfile's float scale (int16 / 32768), and the resampling filter has ffmpeg's frequency
 * response (see RS_PASSBAND_END). The file is read in chunks of about AUDIO_CHUNK_SAMPLES and each
 * chunk is downmixed (and, in audio_load, resampled) at once, so no buffer of all frames times all
 * channels, nor of the native-rate signal, ever exists.
 *
 * Not here: the spectrogram (mel.c). Unlike ffmpeg, samples are not quantised to 16 bits; but
 * they are clipped as its 16-bit output clips them, to [-1, 32767 / 32768] after the mix and
 * the resampling: a loud MP3 or float file peaks past 1, and resampling overshoots near it.
 */
#include "frontend/audio.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <sndfile.h>
#include <soxr.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/downmix.h"
#include "frontend/iff_check.h"
#include "frontend/riff_check.h"
#include "libwhisperc.h"
#include "mem_limit.h"
#include "util.h"

#define AUDIO_CHUNK_SAMPLES (1 << 16) /* interleaved samples read per sf_readf_float call */
#define AUDIO_MAX_RATE      384000    /* Hz; anything above is a corrupt header */
#define AUDIO_RESERVE_MAX   (1 << 26) /* samples reserved up front from the header's length */

/* libsoxr's filter, shaped like the one the reference hears through. openai-whisper's audio comes
 * from ffmpeg, whose default resampler (libswresample: a short Kaiser-windowed sinc, cutoff 0.97)
 * rolls off early and lets some energy above the new Nyquist fold back. A HQ soxr filter with
 * its passband ending at 0.78 and its stopband beginning at 1.16 of the lower Nyquist frequency
 * comes closest: on LJSpeech's 22.05 kHz clips the waveform agrees with ffmpeg's to 44.6 dB
 * (23.6 dB with soxr's defaults), and tiny.en's tokens match the reference on 185 of 186 clips
 * (179 with the defaults). Speech up to 6 kHz passes flat either way. */
#define RS_PASSBAND_END   0.78
#define RS_STOPBAND_BEGIN 1.16

// ---- growable sample buffer

struct fvec {
    float *data; /* [cap], malloc'd */
    size_t n, cap;
};

static int fvec_reserve(struct fvec *v, size_t extra) {
    if (extra <= v->cap - v->n)
        return 0;
    if (extra > SIZE_MAX / sizeof(float) - v->n)
        return WHISPERC_ERR_NO_MEMORY;
    size_t want = v->n + extra;
    size_t cap = v->cap < SIZE_MAX / sizeof(float) / 2 ? v->cap * 2 : want;
    if (cap < want)
        cap = want;
    float *p = realloc(v->data, cap * sizeof(float));
    if (!p)
        return WHISPERC_ERR_NO_MEMORY;
    v->data = p;
    v->cap = cap;
    return 0;
}

// ---- resampling to 16 kHz

struct resampler {
    soxr_t soxr;
    double ratio; /* output / input rate */
};

static int rs_check_rate(double rate, const char *what, char *err, size_t err_size) {
    if (!(rate >= 1.0 && rate <= AUDIO_MAX_RATE)) {
        wc_errf(err, err_size, "%s: sample rate %g Hz is outside 1..%d Hz", what, rate,
                AUDIO_MAX_RATE);
        return WHISPERC_ERR_AUDIO_FORMAT;
    }
    return 0;
}

static int rs_init(struct resampler *r, double rate_in, const char *what, char *err,
                   size_t err_size) {
    soxr_error_t e = NULL;
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
    q.passband_end = RS_PASSBAND_END;
    q.stopband_begin = RS_STOPBAND_BEGIN;
    soxr_runtime_spec_t rt = soxr_runtime_spec(1);
    r->ratio = WC_SAMPLE_RATE / rate_in;
    r->soxr = soxr_create(rate_in, WC_SAMPLE_RATE, 1, &e, &io, &q, &rt);
    if (!r->soxr || e) {
        wc_errf(err, err_size, "%s: cannot resample from %g Hz: %s", what, rate_in,
                e ? e : "soxr_create failed");
        if (r->soxr)
            soxr_delete(r->soxr);
        r->soxr = NULL;
        return WHISPERC_ERR_AUDIO_FORMAT;
    }
    return 0;
}

/* Feeds n_in samples (in == NULL: end of input, flush) and appends what comes out to `out`. */
static int rs_push(struct resampler *r, const float *in, size_t n_in, struct fvec *out,
                   const char *what, char *err, size_t err_size) {
    size_t used = 0;
    for (;;) {
        double want = (double)(n_in - used) * r->ratio + 1024.0;
        if (want > (double)(SIZE_MAX / sizeof(float) / 2) || fvec_reserve(out, (size_t)want)) {
            wc_errf(err, err_size, "%s: out of memory after %zu resampled samples", what, out->n);
            return WHISPERC_ERR_NO_MEMORY;
        }
        size_t idone = 0, odone = 0;
        soxr_error_t e = soxr_process(r->soxr, in ? in + used : NULL, n_in - used, &idone,
                                      out->data + out->n, out->cap - out->n, &odone);
        if (e) {
            wc_errf(err, err_size, "%s: resampling failed: %s", what, e);
            return WHISPERC_ERR_AUDIO_FORMAT;
        }
        used += idone;
        out->n += odone;
        if (in ? used == n_in : odone == 0)
            return 0;
    }
}

int audio_resample(const float *in, size_t n_in, double rate_in, float **out, size_t *n_out,
                   char *err, size_t err_size) {
    *out = NULL;
    *n_out = 0;
    int rc = rs_check_rate(rate_in, "resample", err, err_size);
    if (rc)
        return rc;
    if (n_in == 0 || !in) {
        wc_errf(err, err_size, "resample: no audio samples");
        return WHISPERC_ERR_AUDIO_FORMAT;
    }
    struct fvec v = {0};
    if (rate_in == WC_SAMPLE_RATE) {
        if (fvec_reserve(&v, n_in)) {
            wc_errf(err, err_size, "resample: out of memory for %zu samples", n_in);
            return WHISPERC_ERR_NO_MEMORY;
        }
        memcpy(v.data, in, n_in * sizeof(float));
        v.n = n_in;
    } else {
        struct resampler r;
        rc = rs_init(&r, rate_in, "resample", err, err_size);
        if (rc)
            return rc;
        rc = rs_push(&r, in, n_in, &v, "resample", err, err_size);
        if (!rc)
            rc = rs_push(&r, NULL, 0, &v, "resample", err, err_size);
        soxr_delete(r.soxr);
        if (!rc && v.n == 0) { /* a few samples at a high rate make none at 16 kHz */
            wc_errf(err, err_size, "resample: no audio samples at 16 kHz (%zu at %g Hz)", n_in,
                    rate_in);
            rc = WHISPERC_ERR_AUDIO_FORMAT;
        }
        if (rc) {
            free(v.data);
            return rc;
        }
    }
    *out = v.data;
    *n_out = v.n;
    return 0;
}

// ---- reading with libsndfile

/* A file held in memory. */
struct audio_mem {
    const unsigned char *data;
    sf_count_t size;
};

/* A file (read_at over its fd or memory) as libsndfile's virtual I/O reads it: seeks past the
 * end are allowed and reads there return nothing; the bytes of `fix` (at: -1, none) are read in
 * place of the file's. */
struct audio_view {
    riff_read_fn read_at;
    void *user;
    sf_count_t size, pos;
    struct riff_unsized fix;
};

struct audio_src {
    const char *path; /* the file's name, or what stands for the memory in messages */
    int fd;           /* ours; libsndfile is told not to close it; -1 for memory */
    struct audio_mem mem;
    struct audio_view view;
    SNDFILE *snd; /* per-handle errors only: never sf_strerror(NULL) */
    SF_INFO info;
    float *chunk; /* [chunk_frames][info.channels] interleaved */
    double *mix;  /* [info.channels] downmix_weights, with two channels or more */
    sf_count_t chunk_frames;
    size_t n_read;                  /* mono samples delivered so far */
    double max_s;                   /* 0: no limit */
    const struct audio_limits *lim; /* the memory budget, checked as the samples come (NULL:
                                       none) */
    struct audio_loudness *loud;    /* measured while read (two channels asked for), or NULL */
};

static size_t fd_read_at(void *user, void *buf, size_t n, int64_t off) {
    ssize_t got = pread(*(const int *)user, buf, n, (off_t)off);
    return got > 0 ? (size_t)got : 0;
}

static size_t mem_read_at(void *user, void *buf, size_t n, int64_t off) {
    const struct audio_mem *m = user;
    if (off < 0 || off >= m->size)
        return 0;
    if (n > (size_t)(m->size - off))
        n = (size_t)(m->size - off);
    memcpy(buf, m->data + off, n);
    return n;
}

static sf_count_t view_filelen(void *user) { return ((const struct audio_view *)user)->size; }

static sf_count_t view_seek(sf_count_t off, int whence, void *user) {
    struct audio_view *v = user;
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? v->pos : v->size;
    if ((whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) ||
        (off > 0 && base > INT64_MAX - off) || base + off < 0)
        return -1;
    v->pos = base + off;
    return v->pos;
}

static sf_count_t view_read(void *ptr, sf_count_t count, void *user) {
    struct audio_view *v = user;
    size_t n =
        v->pos < v->size ? v->read_at(v->user, ptr, count > 0 ? (size_t)count : 0, v->pos) : 0;
    for (int k = 0; k < 4 && v->fix.at >= 0; k++) {
        int64_t i = v->fix.at + k - v->pos;
        if (i >= 0 && i < (int64_t)n)
            ((unsigned char *)ptr)[i] = v->fix.size[k];
    }
    v->pos += (sf_count_t)n;
    return (sf_count_t)n;
}

static sf_count_t view_write(const void *ptr, sf_count_t count, void *user) {
    (void)ptr, (void)count, (void)user;
    return 0;
}

static sf_count_t view_tell(void *user) { return ((const struct audio_view *)user)->pos; }

static void src_close(struct audio_src *s) {
    if (s->snd)
        sf_close(s->snd);
    if (s->fd >= 0)
        close(s->fd);
    free(s->chunk);
    free(s->mix);
}

/* The mono mix's weights, from the file's channel positions where it names them. */
static int src_mix(struct audio_src *s, char *err, size_t err_size) {
    int nc = s->info.channels;
    int *map = malloc((size_t)nc * sizeof *map);
    s->mix = malloc((size_t)nc * sizeof *s->mix);
    if (!map || !s->mix) {
        free(map);
        wc_errf(err, err_size, "%s: out of memory", s->path);
        return WHISPERC_ERR_NO_MEMORY;
    }
    bool named =
        sf_command(s->snd, SFC_GET_CHANNEL_MAP_INFO, map, nc * (int)sizeof *map) == SF_TRUE;
    downmix_weights(s->info.format, nc, named ? map : NULL, s->mix);
    free(map);
    return 0;
}

static int too_long(const struct audio_src *s, double seconds, char *err, size_t err_size) {
    wc_errf(err, err_size,
            "%s: %s%.1f s of audio, longer than the limit of %g s (max_audio_s, "
            "--max-duration)",
            s->path, seconds > s->max_s ? "" : "over ", seconds, s->max_s);
    return WHISPERC_ERR_UNSUPPORTED;
}

/* Duration and memory from the header's frame count, before anything is decoded; both are
 * checked again as the samples come (src_read, over_budget), for a header that understates the
 * length or does not know it: a FLAC stream written to a pipe says 0, which libsndfile reports
 * as SF_COUNT_MAX frames. */
static int check_limits(struct audio_src *s, const struct audio_limits *lim, char *err,
                        size_t err_size) {
    s->max_s = lim->max_s > 0 ? lim->max_s : 0;
    s->lim = lim->max_bytes != UINT64_MAX ? lim : NULL;
    if (s->info.frames == SF_COUNT_MAX)
        return 0;
    double seconds = (double)s->info.frames / s->info.samplerate;
    if (s->max_s > 0 && seconds > s->max_s)
        return too_long(s, seconds, err, err_size);
    double n16k = seconds * WC_SAMPLE_RATE + 1.0;
    double need = n16k * (lim->bytes_per_sample > 0 ? lim->bytes_per_sample : sizeof(float));
    char what[4200];
    snprintf(what, sizeof what, "%s: %.1f s of audio", s->path, seconds);
    if (lim->max_bytes != UINT64_MAX &&
        mem_check(need >= 1.8e19 ? UINT64_MAX : (uint64_t)need, lim->max_bytes,
                  lim->max_memory_bytes, what, err, err_size))
        return WHISPERC_ERR_NO_MEMORY;
    return 0;
}

/* Opens with open() first so that a missing or unreadable file is told apart (with strerror) from
 * one that libsndfile cannot decode; libsndfile's own open error would only say "System error".
 * *size: the file's. */
static int src_open_file(struct audio_src *s, const char *path, int64_t *size, char *err,
                         size_t err_size) {
    /* O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever. Only regular
     * files are read: a FIFO, socket or device (/dev/zero) may never end. */
    s->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (s->fd < 0 || fstat(s->fd, &st) != 0) {
        wc_errf(err, err_size, "%s: %s", path, strerror(errno));
        return WHISPERC_ERR_IO;
    }
    if (S_ISDIR(st.st_mode)) {
        wc_errf(err, err_size, "%s: %s", path, strerror(EISDIR));
        return WHISPERC_ERR_IO;
    }
    if (!S_ISREG(st.st_mode)) {
        wc_errf(err, err_size, "%s: not a regular file (%s); audio is read from files only", path,
                S_ISFIFO(st.st_mode)   ? "a FIFO"
                : S_ISCHR(st.st_mode)  ? "a character device"
                : S_ISBLK(st.st_mode)  ? "a block device"
                : S_ISSOCK(st.st_mode) ? "a socket"
                                       : "a special file");
        return WHISPERC_ERR_IO;
    }
    int fl = fcntl(s->fd, F_GETFL);
    if (fl >= 0)
        fcntl(s->fd, F_SETFL, fl & ~O_NONBLOCK);
    *size = st.st_size;
    return 0;
}

/* Opens `path`, or the `size` bytes at `data` when data != NULL (path then names them in
 * messages), for decoding: the chunk layouts that hang libsndfile refused, the header's
 * format, rate, length and limits checked. */
static int src_open(struct audio_src *s, const char *path, const void *data, size_t size,
                    const struct audio_limits *lim, char *err, size_t err_size) {
    memset(s, 0, sizeof *s);
    s->path = path;
    s->fd = -1;
    if (lim && lim->loudness)
        audio_loudness_free(lim->loudness);
    int64_t n_bytes = (int64_t)size;
    if (data) {
        s->mem = (struct audio_mem){.data = data, .size = (sf_count_t)size};
    } else {
        int rc = src_open_file(s, path, &n_bytes, err, err_size);
        if (rc)
            return rc;
    }
    if (n_bytes == 0) {
        wc_errf(err, err_size, "%s: empty %s(0 bytes), not an audio file", path,
                data ? "" : "file ");
        return WHISPERC_ERR_AUDIO_FORMAT;
    }
    riff_read_fn read_at = data ? mem_read_at : fd_read_at;
    void *user = data ? (void *)&s->mem : (void *)&s->fd;
    int rc = riff_check(read_at, user, n_bytes, path, err, err_size);
    if (!rc)
        rc = iff_check(read_at, user, n_bytes, path, err, err_size);
    if (rc)
        return rc;
    SF_VIRTUAL_IO io = {view_filelen, view_seek, view_read, view_write, view_tell};
    s->view = (struct audio_view){read_at, user, n_bytes, 0, {.at = -1}};
    if (data)
        s->snd = sf_open_virtual(&io, SFM_READ, &s->info, &s->view);
    else
        s->snd = sf_open_fd(s->fd, SFM_READ, &s->info, SF_FALSE);
    /* a WAV recording never closed: its data read to the end of the file, as ffmpeg does */
    if (s->snd && s->info.frames == 0 &&
        ((s->info.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_WAV ||
         (s->info.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_WAVEX) &&
        riff_unsized_data(read_at, user, n_bytes, &s->view.fix)) {
        sf_close(s->snd);
        memset(&s->info, 0, sizeof s->info);
        s->view.pos = 0;
        s->snd = sf_open_virtual(&io, SFM_READ, &s->info, &s->view);
    }
    if (!s->snd) {
        wc_errf(err, err_size, "%s: not an audio format libsndfile can read", path);
        return WHISPERC_ERR_AUDIO_FORMAT;
    }
    if (s->info.channels < 1) {
        wc_errf(err, err_size, "%s: %d channels", path, s->info.channels);
        return WHISPERC_ERR_AUDIO_FORMAT;
    }
    rc = rs_check_rate(s->info.samplerate, path, err, err_size);
    if (rc)
        return rc;
    if (s->info.frames == 0) {
        wc_errf(err, err_size, "%s: no audio samples (0 frames)", path);
        return WHISPERC_ERR_AUDIO_FORMAT;
    }
    if (lim) {
        rc = check_limits(s, lim, err, err_size);
        if (rc)
            return rc;
        if (s->info.channels == 2)
            s->loud = lim->loudness;
    }
    if (s->info.channels > 1 && (rc = src_mix(s, err, err_size)))
        return rc;
    s->chunk_frames = AUDIO_CHUNK_SAMPLES / s->info.channels;
    if (s->chunk_frames < 1)
        s->chunk_frames = 1;
    s->chunk = malloc((size_t)s->chunk_frames * (size_t)s->info.channels * sizeof(float));
    if (!s->chunk) {
        wc_errf(err, err_size, "%s: out of memory", path);
        return WHISPERC_ERR_NO_MEMORY;
    }
    return 0;
}

void audio_loudness_free(struct audio_loudness *l) {
    free(l->sum[0]);
    free(l->sum[1]);
    *l = (struct audio_loudness){0};
}

int audio_louder_channel(const struct audio_loudness *l, int64_t t0_ms, int64_t t1_ms) {
    if (!l || l->n_frames == 0)
        return -2;
    int64_t f0 = t0_ms < 0 ? 0 : t0_ms / 10, f1 = t1_ms < 0 ? 0 : t1_ms / 10;
    f0 = f0 < l->n_frames ? f0 : l->n_frames - 1;
    f1 = f1 > f0 ? (f1 < l->n_frames ? f1 : l->n_frames) : f0 + 1;
    double e0 = 0.0, e1 = 0.0;
    for (int64_t f = f0; f < f1; f++)
        e0 += l->sum[0][f], e1 += l->sum[1][f];
    return e0 > 1.1 * e1 ? 0 : e1 > 1.1 * e0 ? 1 : -1;
}

/* Adds n interleaved two-channel frames, the first of them the input's frame `first`, to the
 * 10 ms sums: a run of frames at a time, no division per sample. */
static int loudness_add(struct audio_loudness *l, const float *x, size_t n, size_t first,
                        int rate) {
    for (size_t i = 0; i < n;) {
        uint64_t g = first + i, r = (uint64_t)rate;
        int64_t f = (int64_t)(g * 100 / r);
        uint64_t next = ((uint64_t)(f + 1) * r + 99) / 100; /* frame f + 1's first sample */
        size_t stop = next - first < n ? (size_t)(next - first) : n;
        if (f >= l->cap) {
            int64_t cap = l->cap ? 2 * l->cap : 1024;
            cap = cap > f ? cap : f + 1;
            for (int c = 0; c < 2; c++) {
                double *p = realloc(l->sum[c], (size_t)cap * sizeof *p);
                if (!p)
                    return WHISPERC_ERR_NO_MEMORY;
                memset(p + l->cap, 0, (size_t)(cap - l->cap) * sizeof *p);
                l->sum[c] = p;
            }
            l->cap = cap;
        }
        double s0 = 0.0, s1 = 0.0;
        for (; i < stop; i++)
            s0 += fabs((double)x[2 * i]), s1 += fabs((double)x[2 * i + 1]);
        l->sum[0][f] += s0;
        l->sum[1][f] += s1;
        l->n_frames = f + 1 > l->n_frames ? f + 1 : l->n_frames;
    }
    return 0;
}

/* Reads up to chunk_frames frames, averaged to mono, into mono[chunk_frames]; *n = 0 at the end. */
static int src_read(struct audio_src *s, float *mono, size_t *n, char *err, size_t err_size) {
    int nc = s->info.channels;
    sf_count_t got = sf_readf_float(s->snd, s->chunk, s->chunk_frames);
    if (got <= 0 && sf_error(s->snd) != SF_ERR_NO_ERROR) {
        wc_errf(err, err_size, "%s: decoding failed after %zu samples: %s", s->path, s->n_read,
                sf_strerror(s->snd));
        return WHISPERC_ERR_AUDIO_FORMAT;
    }
    *n = got > 0 ? (size_t)got : 0;
    for (size_t i = 0; i < *n; i++) {
        const float *x = s->chunk + i * (size_t)nc;
        float v = x[0];
        if (nc > 1) { /* stereo: (l + r) / 2 exactly, the weights being 1/2 */
            double sum = 0.0;
            for (int c = 0; c < nc; c++)
                if (s->mix[c] != 0.0) /* as ffmpeg: a dropped channel's NaN is no sample */
                    sum += s->mix[c] * x[c];
            v = (float)sum;
        }
        if (!isfinite(v)) {
            wc_errf(err, err_size, "%s: sample %zu (%.3f s) is NaN or infinite", s->path,
                    s->n_read + i, (double)(s->n_read + i) / s->info.samplerate);
            return WHISPERC_ERR_AUDIO_FORMAT;
        }
        if (fabsf(v) > WC_MAX_ABS_SAMPLE) {
            wc_errf(err, err_size,
                    "%s: sample %zu (%.3f s) is %g, outside +-%g (corrupt or not normalised to "
                    "[-1, 1])",
                    s->path, s->n_read + i, (double)(s->n_read + i) / s->info.samplerate, (double)v,
                    (double)WC_MAX_ABS_SAMPLE);
            return WHISPERC_ERR_AUDIO_FORMAT;
        }
        mono[i] = v;
    }
    if (s->loud && loudness_add(s->loud, s->chunk, *n, s->n_read, s->info.samplerate)) {
        wc_errf(err, err_size, "%s: out of memory for the channels' loudness", s->path);
        return WHISPERC_ERR_NO_MEMORY;
    }
    s->n_read += *n;
    if (s->max_s > 0 && (double)s->n_read > s->max_s * s->info.samplerate)
        return too_long(s, s->max_s, err, err_size);
    return 0;
}

/* Whether n_out samples of output pass the memory budget (err filled). */
static bool over_budget(const struct audio_src *s, size_t n_out, char *err, size_t err_size) {
    const struct audio_limits *lim = s->lim;
    if (!lim)
        return false;
    double need =
        (double)n_out * (lim->bytes_per_sample > 0 ? lim->bytes_per_sample : sizeof(float));
    if (need <= (double)lim->max_bytes)
        return false;
    char what[4200];
    snprintf(what, sizeof what, "%s: over %.1f s of audio", s->path,
             (double)n_out / WC_SAMPLE_RATE);
    return mem_check(need >= 1.8e19 ? UINT64_MAX : (uint64_t)need, lim->max_bytes,
                     lim->max_memory_bytes, what, err, err_size) != 0;
}

/* Decodes `path` (or the size bytes at data, which path then names) to mono; resample != 0: to
 * 16 kHz, chunk by chunk. */
static int audio_decode(const char *path, const void *data, size_t size, int resample,
                        const struct audio_limits *lim, float **out, size_t *n_samples, int *rate,
                        char *err, size_t err_size) {
    struct audio_src src;
    struct resampler rs = {0};
    struct fvec v = {0};
    float *mono = NULL;
    int native = 1;
    *out = NULL;
    *n_samples = 0;
    int rc = src_open(&src, path, data, size, lim, err, err_size);
    if (rc)
        goto done;
    native = !resample || src.info.samplerate == WC_SAMPLE_RATE;
    double hint =
        (double)src.info.frames * (native ? 1.0 : (double)WC_SAMPLE_RATE / src.info.samplerate);
    if (fvec_reserve(&v, hint > 0 && hint < AUDIO_RESERVE_MAX ? (size_t)hint + 1 : 1)) {
        rc = WHISPERC_ERR_NO_MEMORY;
        goto oom;
    }
    if (!native) {
        rc = rs_init(&rs, src.info.samplerate, path, err, err_size);
        mono = malloc((size_t)src.chunk_frames * sizeof(float));
        if (!rc && !mono) {
            rc = WHISPERC_ERR_NO_MEMORY;
            goto oom;
        }
    }
    for (size_t n = 1; !rc && n > 0;) {
        size_t from = v.n;
        if (native) {
            rc = fvec_reserve(&v, (size_t)src.chunk_frames);
            if (rc)
                goto oom;
            rc = src_read(&src, v.data + v.n, &n, err, err_size);
            v.n += n;
        } else {
            rc = src_read(&src, mono, &n, err, err_size);
            if (!rc)
                rc = rs_push(&rs, n ? mono : NULL, n, &v, path, err, err_size);
        }
        for (size_t i = from; !rc && resample && i < v.n; i++) /* ffmpeg's s16le output clips */
            v.data[i] = fminf(fmaxf(v.data[i], -1.0f), 32767.0f / 32768.0f);
        if (!rc && over_budget(&src, v.n, err, err_size))
            rc = WHISPERC_ERR_NO_MEMORY;
    }
    if (!rc && v.n == 0) { /* none read, or a few at a high rate: none at 16 kHz */
        wc_errf(err, err_size, "%s: no audio samples%s", path,
                src.n_read ? " at 16 kHz (under a sample's worth)" : "");
        rc = WHISPERC_ERR_AUDIO_FORMAT;
    }
    goto done;
oom:
    wc_errf(err, err_size, "%s: out of memory after %zu samples", path, src.n_read);
done:
    if (rate && !rc)
        *rate = native ? src.info.samplerate : WC_SAMPLE_RATE;
    if (rs.soxr)
        soxr_delete(rs.soxr);
    if (rc && src.loud)
        audio_loudness_free(src.loud);
    src_close(&src);
    free(mono);
    if (rc) {
        free(v.data);
        return rc;
    }
    *out = v.data;
    *n_samples = v.n;
    return 0;
}

int audio_read(const char *path, float **out, size_t *n_samples, int *rate, char *err,
               size_t err_size) {
    return audio_decode(path, NULL, 0, 0, NULL, out, n_samples, rate, err, err_size);
}

int audio_load(const char *path, float **out, size_t *n_samples, char *err, size_t err_size) {
    return audio_decode(path, NULL, 0, 1, NULL, out, n_samples, NULL, err, err_size);
}

int audio_load_limited(const char *path, const struct audio_limits *lim, float **out,
                       size_t *n_samples, char *err, size_t err_size) {
    return audio_decode(path, NULL, 0, 1, lim, out, n_samples, NULL, err, err_size);
}

/* Appends what fd gives until its end to *buf (malloc'd, *cap bytes), waiting where it is
 * non-blocking; more than `max` bytes is refused. */
static int fd_read_all(int fd, const char *name, uint64_t max, unsigned char **buf, size_t *n,
                       size_t *cap, char *err, size_t err_size) {
    for (;;) {
        if (*n == *cap) {
            size_t want = *cap ? 2 * *cap : (size_t)1 << 20;
            if ((uint64_t)want > max + 1) /* never more than the budget and a byte */
                want = (size_t)(max + 1);
            unsigned char *p = want > *cap ? realloc(*buf, want) : NULL;
            if (!p) {
                wc_errf(err, err_size, "%s: out of memory after %zu bytes", name, *n);
                return WHISPERC_ERR_NO_MEMORY;
            }
            *buf = p;
            *cap = want;
        }
        size_t room = *cap - *n;
        if ((uint64_t)room > max - *n + 1) /* one byte past max tells that there is more */
            room = (size_t)(max - *n + 1);
        ssize_t got = read(fd, *buf + *n, room);
        if (got == 0)
            return 0;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            if (poll(&pfd, 1, -1) >= 0 || errno == EINTR)
                continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            wc_errf(err, err_size, "%s: reading failed after %zu bytes: %s", name, *n,
                    strerror(errno));
            return WHISPERC_ERR_IO;
        }
        *n += (size_t)got;
        if ((uint64_t)*n > max)
            return WHISPERC_ERR_NO_MEMORY; /* the caller says how much */
    }
}

int audio_load_fd(int fd, const char *name, const struct audio_limits *lim, float **out,
                  size_t *n_samples, char *err, size_t err_size) {
    *out = NULL;
    *n_samples = 0;
    uint64_t max = lim ? lim->max_bytes : UINT64_MAX;
    if (max > (uint64_t)INT64_MAX)
        max = (uint64_t)INT64_MAX;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        wc_errf(err, err_size, "%s: %s", name, strerror(errno));
        return WHISPERC_ERR_IO;
    }
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) {
        n = (size_t)st.st_size; /* a redirected file says its size: refused unread */
        rc = WHISPERC_ERR_NO_MEMORY;
    } else if (S_ISREG(st.st_mode) && st.st_size > 0) {
        cap = (size_t)st.st_size + 1; /* the whole file in one read, then its end */
        buf = malloc(cap);
        if (!buf) {
            wc_errf(err, err_size, "%s: out of memory for %zu bytes", name, cap);
            return WHISPERC_ERR_NO_MEMORY;
        }
    }
    if (!rc)
        rc = fd_read_all(fd, name, max, &buf, &n, &cap, err, err_size);
    if (rc == WHISPERC_ERR_NO_MEMORY && n > max)
        wc_errf(err, err_size, "%s: more input than the %" PRIu64 " MiB of memory available (%s)",
                name, max >> 20,
                lim && lim->max_memory_bytes > 0 ? "max_memory_bytes"
                                                 : "MemAvailable or the cgroup limit");
    if (!rc) {
        /* the bytes stay while they are decoded: the samples get what is left of the budget */
        struct audio_limits rest;
        if (lim) {
            rest = *lim;
            if (rest.max_bytes != UINT64_MAX)
                rest.max_bytes -= n; /* n <= max <= max_bytes */
        }
        rc = audio_load_memory(buf, n, name, lim ? &rest : NULL, out, n_samples, err, err_size);
    }
    free(buf);
    return rc;
}

int audio_load_memory(const void *data, size_t size, const char *name,
                      const struct audio_limits *lim, float **out, size_t *n_samples, char *err,
                      size_t err_size) {
    if (!data && size) {
        wc_errf(err, err_size, "%s: NULL data of %zu bytes", name, size);
        return WHISPERC_ERR_INVALID_ARG;
    }
    if (size > (size_t)INT64_MAX) {
        wc_errf(err, err_size, "%s: %zu bytes", name, size);
        return WHISPERC_ERR_INVALID_ARG;
    }
    static const unsigned char none[1];
    return audio_decode(name, data ? data : none, size, 1, lim, out, n_samples, NULL, err,
                        err_size);
}
