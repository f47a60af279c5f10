/*
 * make_audio_seeds.c — short audio seeds for fuzz_audio, written by libsndfile in every format
 * it can write here: a 300 ms chirp in WAV (s16, float, 8-bit u), FLAC, Ogg Vorbis, Ogg Opus
 * and MP3, at 8 to 48 kHz, mono and stereo. Small seeds keep each fuzzing run short (the real
 * dev-set files are seconds long); a format this libsndfile cannot write is skipped.
 *
 *   make_audio_seeds OUT_DIR
 */
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>

struct seed {
    const char *name;
    int format, rate, channels;
};

static const struct seed seeds[] = {
    {"s16-16k.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1},
    {"f32-44k-stereo.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 44100, 2},
    {"u8-8k.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_U8, 8000, 1},
    {"s24-22k.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 22050, 1},
    {"s16-48k-stereo.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 48000, 2},
    {"vorbis-16k.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1},
    {"opus-48k.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, 48000, 1},
    {"mp3-22k.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 22050, 1},
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_audio_seeds OUT_DIR\n");
        return 2;
    }
    int n_written = 0;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        const struct seed *s = &seeds[i];
        SF_INFO info = {.samplerate = s->rate, .channels = s->channels, .format = s->format};
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], s->name);
        SNDFILE *f = sf_format_check(&info) ? sf_open(path, SFM_WRITE, &info) : NULL;
        if (!f) {
            fprintf(stderr, "%s: skipped (%s)\n", s->name, sf_strerror(NULL));
            continue;
        }
        int n = s->rate * 3 / 10;
        float *buf = malloc((size_t)n * s->channels * sizeof *buf);
        if (!buf) {
            sf_close(f);
            return 1;
        }
        for (int t = 0; t < n; t++) /* 200 Hz to 2 kHz chirp, half scale */
            for (int c = 0; c < s->channels; c++)
                buf[t * s->channels + c] =
                    0.5f * (float)sin(2 * M_PI * (200.0 + 3000.0 * t / s->rate) * t / s->rate);
        int ok = sf_writef_float(f, buf, n) == n;
        free(buf);
        if (sf_close(f) != 0 || !ok) {
            fprintf(stderr, "%s: write failed\n", path);
            return 1;
        }
        n_written++;
    }
    printf("%d audio seeds written to %s\n", n_written, argv[1]);
    return n_written > 0 ? 0 : 1;
}
