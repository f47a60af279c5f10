/*
 * audio.h — any file libsndfile reads, as 16 kHz mono float samples.
 *
 * Channels are averaged (as ffmpeg's -ac 1 downmix), then libsoxr resamples to 16 kHz at high
 * quality (SOXR_HQ). Samples keep libsndfile's float scale (int16 / 32768), as openai-whisper's
 * load_audio gives them.
 */
#ifndef WC_AUDIO_H
#define WC_AUDIO_H

#include <stddef.h>
#include <stdint.h>

#define WC_SAMPLE_RATE    16000
/* Largest |sample| accepted: 80 dB above full scale. Beyond it a float file is corrupt or not
 * normalised, and its power spectrum would overflow float to inf in the log-Mel. */
#define WC_MAX_ABS_SAMPLE 1e4f

/* Reads `path`. On success returns 0, *out (malloc'd; caller frees) holds *n_samples samples.
 * On failure returns WHISPERC_ERR_IO (missing/unreadable), WHISPERC_ERR_AUDIO_FORMAT (not audio,
 * unsupported encoding, empty, NaN/Inf samples) or WHISPERC_ERR_NO_MEMORY, with one line naming
 * the file and the problem in err. */
int audio_load(const char *path, float **out, size_t *n_samples, char *err, size_t err_size);

/* A two-channel input's channels, measured for whisper.cpp's --diarize (one speaker a channel,
 * as in a call's recording): the sum of |sample| of each over every 10 ms of the input, at its
 * own rate. */
struct audio_loudness {
    int64_t n_frames; /* 0: nothing measured (the input had not two channels) */
    int64_t cap;
    double *sum[2]; /* [n_frames] each, owned */
};

void audio_loudness_free(struct audio_loudness *l); /* and back to nothing measured */

/* 0 or 1: the channel whose sum over [t0_ms, t1_ms) is over 1.1 times the other's (at least
 * its first 10 ms); -1: neither; -2: nothing measured. */
int audio_louder_channel(const struct audio_loudness *l, int64_t t0_ms, int64_t t1_ms);

/* Limits checked from the file's header before decoding, and again while decoding (a header
 * may understate the length). */
struct audio_limits {
    double max_s;             /* longest audio accepted, seconds; 0: no limit */
    uint64_t max_bytes;       /* memory budget for the result; UINT64_MAX: none */
    double bytes_per_sample;  /* what each 16 kHz output sample will cost the caller in all */
    int64_t max_memory_bytes; /* where max_bytes came from, for the message (mem_budget) */
    /* Out, or NULL: a two-channel input's loudness (audio_loudness_free'd first, so with no
     * frames for any other input or on failure). */
    struct audio_loudness *loudness;
};

/* audio_load with limits (NULL: none). Too long: WHISPERC_ERR_UNSUPPORTED; over the memory
 * budget: WHISPERC_ERR_NO_MEMORY; either with the numbers in err. */
int audio_load_limited(const char *path, const struct audio_limits *lim, float **out,
                       size_t *n_samples, char *err, size_t err_size);

/* audio_load_limited for a file held in memory: the size bytes at data, in any format libsndfile
 * reads (through its virtual I/O, as it reads a file). `name` stands for it in messages. */
int audio_load_memory(const void *data, size_t size, const char *name,
                      const struct audio_limits *lim, float **out, size_t *n_samples, char *err,
                      size_t err_size);

/* audio_load_memory for what the file descriptor fd gives until its end (a pipe, a socket, a
 * redirected file): read into memory, waiting where fd is non-blocking, then decoded. With
 * lim, input beyond lim->max_bytes is refused as it arrives (WHISPERC_ERR_NO_MEMORY) and the
 * samples get the rest of the budget. fd is left open. */
int audio_load_fd(int fd, const char *name, const struct audio_limits *lim, float **out,
                  size_t *n_samples, char *err, size_t err_size);

/* Reads `path` as mono float at its own sample rate (*rate), no resampling. Errors as above. */
int audio_read(const char *path, float **out, size_t *n_samples, int *rate, char *err,
               size_t err_size);

/* Resamples mono `in` (n_in samples at rate_in Hz) to 16 kHz. Returns 0 or an error code as
 * above (err without a file name). */
int audio_resample(const float *in, size_t n_in, double rate_in, float **out, size_t *n_out,
                   char *err, size_t err_size);

#endif /* WC_AUDIO_H */
