/*
 * test_audio.c — decoding, downmix and resampling (src/frontend/audio.c): jfk.flac (44.1 kHz
 * stereo 24-bit) must come out as the same speech as jfk.wav; a sine survives resampling; bad
 * inputs (missing, empty, not audio, unsupported encoding) give one line and the right code.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "frontend/audio.h"
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
