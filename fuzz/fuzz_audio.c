/*
 * fuzz_audio.c — audio bytes through libsndfile (sf_open_virtual over memory), the downmix,
 * libsoxr resampling to 16 kHz (audio_resample) and the log-Mel spectrogram (mel_compute), as
 * whisperc_full_file chains them. Input is capped at 2^15 frames and 4 seconds to keep each run
 * short: longer audio only repeats the same code, and 2^17 frames at 1 Hz (36 hours, 2e9 samples
 * at 16 kHz) made the resampler run past libFuzzer's timeout; the library bounds that case with
 * max_audio_s and the memory budget. Seeds are 300 ms files in each format libsndfile writes
 * (fuzz/make_audio_seeds.c). riff_check runs first, as in the library: libsndfile 1.2.0 loops
 * for ever on some WAV chunk sizes (docs/reliability.md).
 */
#include <math.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/audio.h"
#include "frontend/iff_check.h"
#include "frontend/mel.h"
#include "frontend/riff_check.h"

#define MAX_FRAMES  (1 << 15)
#define MAX_SECONDS 4

struct mem {
    const uint8_t *p;
    sf_count_t size, pos;
};

static sf_count_t mem_len(void *u) { return ((struct mem *)u)->size; }
static sf_count_t mem_seek(sf_count_t off, int whence, void *u) {
    struct mem *m = u;
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->size;
    if (off > m->size - base || base + off < 0)
        return -1;
    m->pos = base + off;
    return m->pos;
}
static sf_count_t mem_read(void *dst, sf_count_t n, void *u) {
    struct mem *m = u;
    if (n > m->size - m->pos)
        n = m->size - m->pos;
    memcpy(dst, m->p + m->pos, (size_t)n);
    m->pos += n;
    return n;
}
static sf_count_t mem_write(const void *src, sf_count_t n, void *u) {
    (void)src, (void)n, (void)u;
    return 0;
}
static sf_count_t mem_tell(void *u) { return ((struct mem *)u)->pos; }
static size_t mem_read_at(void *u, void *dst, size_t n, int64_t off) {
    const struct mem *m = u;
    if (off < 0 || off >= m->size)
        return 0;
    if ((sf_count_t)n > m->size - off)
        n = (size_t)(m->size - off);
    memcpy(dst, m->p + off, n);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static float filters[80 * WC_N_FFT_BINS];
    /* narrow bands like the real triangular filters: mel_compute multiplies only the nonzero
     * bins, and dense rows made the (input-independent) filter bank 90% of each run */
    if (filters[2] == 0.0f)
        for (int m = 0; m < 80; m++)
            for (int b = 2 * m; b < 2 * m + 4; b++)
                filters[m * WC_N_FFT_BINS + b] = 0.01f;
    struct mem m = {data, (sf_count_t)size, 0};
    SF_VIRTUAL_IO io = {mem_len, mem_seek, mem_read, mem_write, mem_tell};
    char err[256];
    /* the library's guard before libsndfile (src/frontend/audio.c src_open) */
    if (riff_check(mem_read_at, &m, m.size, "fuzz", err, sizeof err) != 0 ||
        iff_check(mem_read_at, &m, m.size, "fuzz", err, sizeof err) != 0)
        return 0;
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *snd = sf_open_virtual(&io, SFM_READ, &info, &m);
    if (!snd)
        return 0;
    if (info.channels < 1 || info.channels > 1024) {
        sf_close(snd);
        return 0;
    }
    float *buf = malloc((size_t)4096 * (size_t)info.channels * sizeof(float));
    float *mono = malloc(MAX_FRAMES * sizeof(float));
    size_t n = 0, max_n = MAX_FRAMES;
    if (info.samplerate > 0 && (size_t)info.samplerate * MAX_SECONDS < max_n)
        max_n = (size_t)info.samplerate * MAX_SECONDS;
    int finite = 1;
    while (buf && mono && n < max_n) {
        sf_count_t got = sf_readf_float(snd, buf, 4096);
        if (got <= 0)
            break;
        for (sf_count_t i = 0; i < got && n < max_n; i++) {
            double s = 0;
            for (int c = 0; c < info.channels; c++)
                s += buf[i * info.channels + c];
            mono[n] = (float)(s / info.channels);
            finite &= isfinite(mono[n]) && fabsf(mono[n]) <= WC_MAX_ABS_SAMPLE;
            n++;
        }
    }
    sf_close(snd);
    float *pcm = NULL;
    size_t n16 = 0;
    /* the library refuses non-finite and out-of-range samples before this point */
    if (finite && n > 0 &&
        audio_resample(mono, n, info.samplerate, &pcm, &n16, err, sizeof err) == 0 && n16 > 0) {
        struct mel_spec mel = {0};
        if (mel_compute(&mel, pcm, n16, 0, filters, 80, 1, err, sizeof err) == 0)
            mel_free(&mel);
    }
    free(pcm);
    free(buf);
    free(mono);
    return 0;
}
