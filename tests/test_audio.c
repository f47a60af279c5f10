/*
 * test_audio.c — decoding, downmix and resampling (src/frontend/audio.c): jfk.flac (44.1 kHz
 * stereo 24-bit) must come out as the same speech as jfk.wav; a sine survives resampling; more
 * channels than two mix with ffmpeg's weights (downmix.c), by position where the file names
 * them; bad inputs (missing, empty, not audio, unsupported encoding) give one line and the right
 * code.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sndfile.h>

#include "common.h"
#include "frontend/audio.h"
#include "frontend/downmix.h"
#include "libwhisperc.h"

static void expect_error(const char *path, int code) {
    char err[512] = "";
    float *x = NULL;
    size_t n = 0;
    int rc = audio_load(path, &x, &n, err, sizeof err);
    printf("%s -> %d: %s\n", path, rc, err);
    CHECK(rc == code);
    CHECK(x == NULL);
    CHECK(strstr(err, path) != NULL);
    CHECK(strchr(err, '\n') == NULL);
    free(x);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    fwrite(data, 1, n, f);
    fclose(f);
}

static void test_sine_resample(void) {
    const double rate = 44100, hz = 440;
    size_t n = 44100;
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        x[i] = 0.5f * (float)sin(2 * M_PI * hz * (double)i / rate);
    float *y = NULL;
    size_t ny = 0;
    char err[256];
    CHECK(audio_resample(x, n, rate, &y, &ny, err, sizeof err) == 0);
    CHECK(ny >= 15999 && ny <= 16001);
    double max_err = 0;
    for (size_t i = 1000; i + 1000 < ny; i++) { /* away from the edges */
        double want = 0.5 * sin(2 * M_PI * hz * (double)i / 16000.0);
        max_err = fmax(max_err, fabs(y[i] - want));
    }
    printf("sine 44.1 kHz -> 16 kHz: %zu samples, max error %.2e\n", ny, max_err);
    CHECK(max_err < 1e-3);
    free(x);
    free(y);
}

/* The whole of a file, malloc'd (NULL if it cannot be read). */
static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    *n = 0;
    if (f && fseek(f, 0, SEEK_END) == 0) {
        long len = ftell(f);
        buf = len >= 0 ? malloc((size_t)len + 1) : NULL;
        rewind(f);
        if (buf)
            *n = fread(buf, 1, (size_t)len, f);
    }
    if (f)
        fclose(f);
    return buf;
}

/* A file decoded from memory (libsndfile's virtual I/O) = decoded from its path, bit for bit:
 * WAV, FLAC at 44.1 kHz stereo 24-bit and at 22.05 kHz; the errors the same, naming `name`. */
static void test_memory_decode(void) {
    const char *files[] = {"audio/jfk/jfk.wav", "audio/jfk/jfk.flac",
                           "audio/ljspeech-dev/wavs/LJ001-0001.flac"};
    char err[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const char *path = shared_path(files[i]);
        size_t size = 0;
        unsigned char *bytes = read_all(path, &size);
        if (!bytes) {
            fprintf(stderr, "SKIP memory decode: %s missing\n", path);
            continue;
        }
        float *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        CHECK(audio_load(path, &a, &na, err, sizeof err) == 0);
        CHECK(audio_load_memory(bytes, size, "mem", NULL, &b, &nb, err, sizeof err) == 0);
        bool same = a && b && na == nb && memcmp(a, b, na * sizeof(float)) == 0;
        printf("%s from memory: %zu samples, %s\n", files[i], nb,
               same ? "the file's bits" : "DIFFERENT");
        CHECK(same);
        /* cut inside its header: refused, naming the memory */
        free(b);
        b = NULL;
        CHECK(audio_load_memory(bytes, 20, "mem", NULL, &b, &nb, err, sizeof err) ==
                  WHISPERC_ERR_AUDIO_FORMAT &&
              b == NULL && strncmp(err, "mem: ", 5) == 0);
        free(a);
        free(bytes);
    }
    float *x = NULL;
    size_t n = 0;
    CHECK(audio_load_memory(NULL, 0, "none", NULL, &x, &n, err, sizeof err) ==
              WHISPERC_ERR_AUDIO_FORMAT &&
          x == NULL && strstr(err, "none: empty") == err);
    CHECK(audio_load_memory(NULL, 10, "null", NULL, &x, &n, err, sizeof err) ==
          WHISPERC_ERR_INVALID_ARG);
    const char *text = "this is not audio, just some text that is long enough to look at\n";
    CHECK(audio_load_memory(text, strlen(text), "text", NULL, &x, &n, err, sizeof err) ==
          WHISPERC_ERR_AUDIO_FORMAT);
    printf("text from memory: %s\n", err);
}

/* A FLAC stream that does not know its length (written to a pipe: 0 total samples, which
 * libsndfile reports as SF_COUNT_MAX frames) decodes, and the limits hold as it is read; a
 * sample at 44.1 kHz is none at 16 kHz: refused, not an empty success. */
static void test_unknown_length(void) {
    const char *path = shared_path("audio/jfk/jfk.flac");
    size_t size = 0;
    unsigned char *flac = read_all(path, &size);
    if (!flac || size < 26 || memcmp(flac, "fLaC", 4) != 0) {
        fprintf(stderr, "SKIP unknown length: %s missing\n", path);
        free(flac);
        return;
    }
    flac[21] &= 0xf0; /* STREAMINFO's 36-bit total samples */
    memset(flac + 22, 0, 4);
    char err[512];
    float *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    CHECK(audio_load(path, &a, &na, err, sizeof err) == 0);
    struct audio_limits lim = {.max_bytes = (uint64_t)na * 4 + 64};
    CHECK(audio_load_memory(flac, size, "pipe", &lim, &b, &nb, err, sizeof err) == 0);
    CHECK(a && b && na == nb && memcmp(a, b, na * sizeof(float)) == 0);
    free(b);
    b = NULL;
    lim.max_bytes = (uint64_t)na * 2; /* half of it */
    CHECK(audio_load_memory(flac, size, "pipe", &lim, &b, &nb, err, sizeof err) ==
              WHISPERC_ERR_NO_MEMORY &&
          !b && strstr(err, "pipe: over") == err);
    printf("unknown length, half the memory: %s\n", err);
    lim = (struct audio_limits){.max_bytes = UINT64_MAX, .max_s = 5};
    CHECK(audio_load_memory(flac, size, "pipe", &lim, &b, &nb, err, sizeof err) ==
              WHISPERC_ERR_UNSUPPORTED &&
          !b);
    int16_t one = 1000;
    size_t wsize = 0;
    unsigned char *w = test_wav16(&one, 1, 1, 44100, &wsize);
    CHECK(audio_load_memory(w, wsize, "one", NULL, &b, &nb, err, sizeof err) ==
              WHISPERC_ERR_AUDIO_FORMAT &&
          !b && strstr(err, "one: no audio samples") == err);
    float x = 0.5f;
    CHECK(audio_resample(&x, 1, 192000, &b, &nb, err, sizeof err) == WHISPERC_ERR_AUDIO_FORMAT &&
          !b);
    free(w);
    free(a);
    free(flac);
}

/* A WAV recording never closed (its data chunk's size left at 0, the RIFF size right, at the
 * header's or 0; a byte of a torn sample after) decodes to the end of the file, as ffmpeg
 * reads it: the samples of the whole file, from a path and from memory. */
static void test_unclosed_wav(const char *dir) {
    const char *path = shared_path("audio/jfk/jfk.wav");
    size_t size = 0;
    unsigned char *wav = read_all(path, &size);
    unsigned char *data = NULL;
    for (size_t i = 12; wav && i + 8 <= size && !data; i++)
        data = memcmp(wav + i, "data", 4) == 0 ? wav + i : NULL;
    if (!data) {
        fprintf(stderr, "SKIP unclosed WAV: %s missing\n", path);
        free(wav);
        return;
    }
    char err[512], out[512];
    float *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    CHECK(audio_load(path, &a, &na, err, sizeof err) == 0);
    unsigned char *cut = malloc(size + 1);
    const uint32_t riff_sizes[3] = {(uint32_t)(size - 8), (uint32_t)(data - wav), 0};
    for (int v = 0; cut && v < 3; v++) {
        memcpy(cut, wav, size);
        cut[size] = 0x55; /* half a sample */
        for (int k = 0; k < 4; k++)
            cut[4 + k] = (unsigned char)(riff_sizes[v] >> 8 * k);
        memset(cut + (data - wav) + 4, 0, 4);
        snprintf(out, sizeof out, "%s/unclosed%d.wav", dir, v);
        write_file(out, cut, size + 1);
        CHECK(audio_load(out, &b, &nb, err, sizeof err) == 0);
        bool same = a && b && na == nb && memcmp(a, b, na * sizeof(float)) == 0;
        free(b);
        b = NULL;
        CHECK(audio_load_memory(cut, size + 1, "mem", NULL, &b, &nb, err, sizeof err) == 0);
        same = same && b && na == nb && memcmp(a, b, na * sizeof(float)) == 0;
        printf("unclosed WAV (RIFF size %u), data size 0: %s\n", riff_sizes[v],
               same ? "the whole file's samples" : "NOT the file's samples");
        CHECK(same);
        free(b);
        b = NULL;
    }
    free(cut);
    free(a);
    free(wav);
}

static bool weights_are(int format, int nc, const int *map, const double *want) {
    double w[16];
    downmix_weights(format, nc, map, w);
    for (int c = 0; c < nc; c++)
        if (fabs(w[c] - want[c]) > 1e-12) {
            printf("downmix %#x, %d channels, channel %d: %.6f, want %.6f\n", format, nc, c, w[c],
                   want[c]);
            return false;
        }
    return true;
}

/* A 16 kHz float file of nc channels, channel c constant at (c + 1) / 16, its positions named
 * (WAVEX) where map is given; read back, each sample is the mix of those constants. */
static void check_file_mix(const char *dir, int format, int nc, const int *map, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    SF_INFO info = {.samplerate = 16000, .channels = nc, .format = format};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    CHECK(f != NULL);
    if (!f)
        return;
    if (map) /* returns 0 on WAVEX though the mask is written: the mix read back tells */
        sf_command(f, SFC_SET_CHANNEL_MAP_INFO, (void *)map, nc * (int)sizeof *map);
    float frames[1600 * 8];
    for (int i = 0; i < 1600; i++)
        for (int c = 0; c < nc; c++)
            frames[i * nc + c] = (float)(c + 1) / 16.0f;
    CHECK(sf_writef_float(f, frames, 1600) == 1600);
    sf_close(f);
    double w[8], want = 0.0;
    downmix_weights(format, nc, map, w);
    for (int c = 0; c < nc; c++)
        want += w[c] * (c + 1) / 16.0;
    float *x = NULL;
    size_t n = 0;
    char err[512];
    CHECK(audio_load(path, &x, &n, err, sizeof err) == 0 && n == 1600);
    bool same = x != NULL;
    for (size_t i = 0; x && i < n; i++)
        same = same && fabsf(x[i] - (float)want) <= 2e-6f; /* FLAC: 24-bit samples */
    printf("%s: %s (%zu samples at %.6f, want %.6f)\n", name, same ? "OK" : "NOT OK", n,
           x ? (double)x[0] : NAN, want);
    CHECK(same);
    free(x);
}

/* Loaded samples are clipped as ffmpeg's s16le output clips them, to [-1, 32767 / 32768], at
 * 16 kHz and after resampling; audio_read (the native rate, no model input) keeps them. */
static void test_clip(const char *dir) {
    static const float in[5] = {2.0f, -3.0f, 0.5f, 1.0f, -1.0f};
    const float top = 32767.0f / 32768.0f, want[5] = {top, -1.0f, 0.5f, top, -1.0f};
    for (int rate = 16000; rate <= 48000; rate += 32000) {
        char path[512];
        snprintf(path, sizeof path, "%s/loud%d.wav", dir, rate);
        SF_INFO info = {
            .samplerate = rate, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT};
        SNDFILE *f = sf_open(path, SFM_WRITE, &info);
        CHECK(f != NULL);
        if (!f)
            return;
        float x[4800];
        for (int i = 0; i < 4800; i++) /* 16 kHz: the five values; 48 kHz: a loud sine */
            x[i] = rate == 16000 ? in[i % 5] : 3.0f * sinf(2.0f * (float)M_PI * 440.0f * i / rate);
        CHECK(sf_write_float(f, x, 4800) == 4800);
        sf_close(f);
        float *a = NULL;
        size_t n = 0;
        char err[512];
        CHECK(audio_load(path, &a, &n, err, sizeof err) == 0);
        float lo = 0.0f, hi = 0.0f;
        for (size_t i = 0; a && i < n; i++) {
            lo = fminf(lo, a[i]), hi = fmaxf(hi, a[i]);
            if (rate == 16000)
                CHECK(a[i] == want[i % 5]);
        }
        CHECK(a && lo == -1.0f && hi == top);
        free(a);
        int r = 0;
        CHECK(audio_read(path, &a, &n, &r, err, sizeof err) == 0 && r == rate && a &&
              fabsf(a[0] - x[0]) < 1e-6f && (rate != 16000 || a[1] == -3.0f));
        free(a);
        unlink(path);
    }
}

/* ffmpeg -ac 1's weights: C 1, L/R 1/sqrt 2, surround 1/2, LFE 0, over their sum past 1. */
static void test_downmix(const char *dir) {
    const double r = M_SQRT1_2, s51 = 1.0 + 2 * r + 2 * 0.5; /* 5.1's sum */
    int wav = SF_FORMAT_WAV | SF_FORMAT_FLOAT, flac = SF_FORMAT_FLAC | SF_FORMAT_PCM_24;
    int ogg = SF_FORMAT_OGG | SF_FORMAT_VORBIS;
    CHECK(weights_are(wav, 1, NULL, (double[]){1}));
    CHECK(weights_are(wav, 2, NULL, (double[]){.5, .5}));
    /* no positions named: ffmpeg's default layouts, FLAC's and Vorbis's channel orders */
    CHECK(weights_are(wav, 3, NULL, (double[]){.5, .5, 0})); /* 2.1 */
    CHECK(
        weights_are(flac, 3, NULL, (double[]){r / (1 + 2 * r), r / (1 + 2 * r), 1 / (1 + 2 * r)}));
    CHECK(weights_are(ogg, 3, NULL, (double[]){r / (1 + 2 * r), 1 / (1 + 2 * r), r / (1 + 2 * r)}));
    CHECK(weights_are(wav, 6, NULL,
                      (double[]){r / s51, r / s51, 1 / s51, 0, .5 / s51, .5 / s51})); /* 5.1 */
    CHECK(weights_are(ogg, 6, NULL, (double[]){r / s51, 1 / s51, r / s51, .5 / s51, .5 / s51, 0}));
    double tenth[10] = {.1, .1, .1, .1, .1, .1, .1, .1, .1, .1};
    CHECK(weights_are(wav, 10, NULL, tenth)); /* no layout: the average */
    /* named: WAVEX's mask, CAF's layout */
    int side51[6] = {SF_CHANNEL_MAP_FRONT_CENTER, SF_CHANNEL_MAP_FRONT_LEFT,
                     SF_CHANNEL_MAP_FRONT_RIGHT,  SF_CHANNEL_MAP_SIDE_LEFT,
                     SF_CHANNEL_MAP_SIDE_RIGHT,   SF_CHANNEL_MAP_LFE};
    CHECK(
        weights_are(wav, 6, side51, (double[]){1 / s51, r / s51, r / s51, .5 / s51, .5 / s51, 0}));
    /* a WAVEX mask of fewer bits than channels (libsndfile leaves the rest unnamed): as ffmpeg,
     * no layout, so 4.0's (L R C S) */
    int partial[4] = {SF_CHANNEL_MAP_FRONT_LEFT, SF_CHANNEL_MAP_FRONT_RIGHT, SF_CHANNEL_MAP_INVALID,
                      SF_CHANNEL_MAP_INVALID};
    double s40 = 2 * r + 1.5;
    CHECK(weights_are(wav, 4, partial, (double[]){r / s40, r / s40, 1 / s40, .5 / s40}));
    int bformat[4] = {SF_CHANNEL_MAP_AMBISONIC_B_W, SF_CHANNEL_MAP_AMBISONIC_B_X,
                      SF_CHANNEL_MAP_AMBISONIC_B_Y, SF_CHANNEL_MAP_AMBISONIC_B_Z};
    CHECK(weights_are(wav, 4, bformat, (double[]){1, 0, 0, 0}));
    int tops[3] = {SF_CHANNEL_MAP_TOP_CENTER, SF_CHANNEL_MAP_TOP_FRONT_LEFT,
                   SF_CHANNEL_MAP_TOP_FRONT_RIGHT};
    CHECK(weights_are(wav, 3, tops, (double[]){1. / 3, 1. / 3, 1. / 3}));
    /* through files: read back as mixed */
    check_file_mix(dir, wav, 6, NULL, "51.wav");
    /* WAVEX's mask (its channels in the mask's order): a quad, not ffmpeg's 4.0 guess */
    int quad[4] = {SF_CHANNEL_MAP_FRONT_LEFT, SF_CHANNEL_MAP_FRONT_RIGHT, SF_CHANNEL_MAP_REAR_LEFT,
                   SF_CHANNEL_MAP_REAR_RIGHT};
    double sq = 2 * r + 1;
    CHECK(weights_are(wav, 4, quad, (double[]){r / sq, r / sq, .5 / sq, .5 / sq}));
    check_file_mix(dir, SF_FORMAT_WAVEX | SF_FORMAT_FLOAT, 4, quad, "quad.wav");
    check_file_mix(dir, flac, 3, NULL, "30.flac");
    check_file_mix(dir, wav, 2, NULL, "stereo.wav");
    const char *names[] = {"51.wav", "quad.wav", "30.flac", "stereo.wav"};
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
}

/* -di's measure: a 22.05 kHz stereo file with a tone on the left for its first second and on
 * the right for its second; every 10 ms summed per channel; the louder channel of a span. */
static void test_loudness(void) {
    const uint32_t rate = 22050, n = 2 * rate;
    int16_t *x = calloc(2 * (size_t)n, sizeof *x);
    for (uint32_t i = 0; x && i < n; i++)
        x[2 * i + (i >= rate)] = (int16_t)(8000 * sin(2 * M_PI * 300.0 * i / rate));
    size_t size = 0;
    unsigned char *w = x ? test_wav16(x, n, 2, rate, &size) : NULL;
    CHECK(w != NULL);
    struct audio_loudness loud = {0};
    struct audio_limits lim = {.max_bytes = UINT64_MAX, .loudness = &loud};
    float *pcm = NULL;
    size_t n_pcm = 0;
    char err[256];
    CHECK(w && audio_load_memory(w, size, "tones", &lim, &pcm, &n_pcm, err, sizeof err) == 0);
    printf("loudness: %lld frames of 10 ms\n", (long long)loud.n_frames);
    CHECK(loud.n_frames == 200);
    CHECK(audio_louder_channel(&loud, 0, 1000) == 0 &&
          audio_louder_channel(&loud, 1000, 2000) == 1);
    CHECK(audio_louder_channel(&loud, 500, 1500) == -1); /* half each */
    CHECK(audio_louder_channel(&loud, 1995, 1995) == 1); /* an empty span: its first 10 ms */
    CHECK(audio_louder_channel(&loud, 5000, 6000) == 1); /* past the end: the last 10 ms */
    CHECK(audio_louder_channel(&loud, -40, 300) == 0);
    free(pcm);
    /* mono: nothing measured; a failing input leaves nothing either */
    int16_t mono[16000] = {0};
    free(w);
    w = test_wav16(mono, 16000, 1, 16000, &size);
    CHECK(w && audio_load_memory(w, size, "mono", &lim, &pcm, &n_pcm, err, sizeof err) == 0);
    CHECK(loud.n_frames == 0 && audio_louder_channel(&loud, 0, 1000) == -2);
    CHECK(audio_louder_channel(NULL, 0, 1000) == -2);
    free(pcm);
    free(w);
    w = x ? test_wav16(x, n, 2, rate, &size) : NULL;
    CHECK(w && audio_load_memory(w, size, "tones", &lim, &pcm, &n_pcm, err, sizeof err) == 0);
    free(pcm);
    CHECK(w && audio_load_memory(w, 40, "cut", &lim, &pcm, &n_pcm, err, sizeof err) != 0);
    CHECK(loud.n_frames == 0 && loud.sum[0] == NULL);
    audio_loudness_free(&loud);
    free(w);
    free(x);
}

int main(void) {
    test_sine_resample();
    test_memory_decode();
    test_loudness();
    test_unknown_length();

    /* bad inputs */
    char tmpl[] = "/tmp/wc_test_audio_XXXXXX";
    char *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    test_downmix(dir);
    test_clip(dir);
    test_unclosed_wav(dir);
    char path[512];
    snprintf(path, sizeof path, "%s/missing.wav", dir);
    expect_error(path, WHISPERC_ERR_IO);
    snprintf(path, sizeof path, "%s/empty.wav", dir);
    write_file(path, "", 0);
    expect_error(path, WHISPERC_ERR_AUDIO_FORMAT);
    char empty_path[512];
    snprintf(empty_path, sizeof empty_path, "%s", path);
    snprintf(path, sizeof path, "%s/text.wav", dir);
    const char *text = "this is not audio, just some text that is long enough to look at\n";
    write_file(path, text, strlen(text));
    expect_error(path, WHISPERC_ERR_AUDIO_FORMAT);
    char text_path[512];
    snprintf(text_path, sizeof text_path, "%s", path);
    /* a RIFF/WAVE header with an unknown format tag (0x1234) */
    unsigned char wav[44 + 16] = "RIFF\x34\0\0\0WAVEfmt \x10\0\0\0\x34\x12\x01\0\x80\x3e\0\0"
                                 "\0\x7d\0\0\x02\0\x10\0data\x10\0\0\0";
    snprintf(path, sizeof path, "%s/format.wav", dir);
    write_file(path, wav, sizeof wav);
    expect_error(path, WHISPERC_ERR_AUDIO_FORMAT);
    unlink(path);
    unlink(text_path);
    unlink(empty_path);
    rmdir(dir);

    /* jfk.wav as read, jfk.flac downmixed and resampled: the same speech */
    float *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    char err[512];
    if (access(shared_path("audio/jfk/jfk.wav"), R_OK) != 0) {
        fprintf(stderr, "SKIP jfk: %s missing\n", shared_path("audio/jfk/jfk.wav"));
        return TEST_RESULT();
    }
    CHECK(audio_load(shared_path("audio/jfk/jfk.wav"), &a, &na, err, sizeof err) == 0);
    CHECK(na == 176000);
    CHECK(audio_load(shared_path("audio/jfk/jfk.flac"), &b, &nb, err, sizeof err) == 0);
    printf("jfk.wav %zu samples, jfk.flac %zu samples at 16 kHz\n", na, nb);
    CHECK(nb + 16 >= na && nb <= na + 16);
    if (a && b) {
        size_t n = na < nb ? na : nb;
        double num = 0, den = 0;
        for (size_t i = 0; i < n; i++) {
            num += (double)(a[i] - b[i]) * (a[i] - b[i]);
            den += (double)a[i] * a[i];
        }
        printf("jfk.flac vs jfk.wav: relative L2 difference %.3g\n", sqrt(num / den));
        CHECK(sqrt(num / den) < 0.05);
    }
    free(a);
    free(b);
    return TEST_RESULT();
}
