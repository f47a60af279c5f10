/*
 * mel.c — log-Mel spectrogram of 16 kHz samples, as openai-whisper audio.py log_mel_spectrogram().
 *
 * Frames are cut from the virtual signal `samples ++ zeros(pad)`, reflected 200 samples past either
 * end (torch.stft center=True, pad_mode="reflect"), windowed, transformed by one FFTW r2c plan of
 * size 400, squared, multiplied by the mel filters, and log10'd straight into the output. The
 * global max is known only at the end, so the clamp and (x + 4) / 4 are a second pass over the
 * output. Memory beyond the output is a few KiB per thread: frames go through in blocks of
 * MEL_BLOCK_FRAMES, never as a whole [201][n_frames] power matrix. Frames wholly inside the zero
 * padding (most of a short clip's 30 s window) skip the FFT: their column is computed once.
 *
 * Threads split the frames by whole blocks, and every frame is computed the same way whatever
 * thread runs it, so the output is bit-identical for any n_threads.
 *
 * Not here: decoding and resampling (audio.c), reading the filters (the model loader).
 */
#include "frontend/mel.h"

#include <fftw3.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fftw_lock.h"
#include "libwhisperc.h"
#include "util.h"

#define MEL_BLOCK_FRAMES 64 /* frames per FFT/filterbank block; also the unit of thread work */
#define MEL_PAD_CENTRE   (WC_N_FFT / 2)

/* What every worker reads; nothing here is written after mel_compute sets it up. */
struct mel_job {
    const float *samples;  /* [n_samples] */
    size_t n_samples;      /* real samples */
    size_t n_total;        /* n_samples + pad_samples: the signal torch.stft sees */
    const float *filters;  /* [n_mels][WC_N_FFT_BINS] */
    const int *band_begin; /* [n_mels]: first nonzero filter bin of each row */
    const int *band_end;   /* [n_mels]: one past its last nonzero bin */
    int n_mels;
    float window[WC_N_FFT]; /* periodic Hann */
    fftwf_plan plan;        /* r2c, WC_N_FFT; executed with each worker's own buffers */
    float *out;             /* [n_mels][n_frames]: log10 of the mel power, before the clamp */
    int n_frames;
    const float *zero_log; /* [n_mels]: what a frame of zeros gives, computed as any frame */
};

struct mel_worker {
    const struct mel_job *job;
    size_t block_begin, block_end; /* blocks [begin, end) of MEL_BLOCK_FRAMES frames */
    float *fft_in;                 /* [WC_N_FFT], fftwf_malloc'd */
    fftwf_complex *fft_out;        /* [WC_N_FFT_BINS], fftwf_malloc'd */
    float *power;                  /* [MEL_BLOCK_FRAMES][WC_N_FFT_BINS] */
    float max_log;                 /* max of what this worker wrote to job->out */
    pthread_t thread;
    int started;
};

// ---- window, filter bands, one frame

/* torch.hann_window(400) (periodic): torch computes arange * (2*pi/400) in float, cos, then
 * 0.5 - 0.5*cos. Doing the same with a correctly rounded cos gives torch's window to 1 ulp. */
static void mel_hann(float *w) {
    const float step = (float)(2.0 * M_PI / WC_N_FFT);
    for (int n = 0; n < WC_N_FFT; n++) {
        float c = (float)cos((double)((float)n * step));
        w[n] = 0.5f - 0.5f * c;
    }
}

/* The nonzero span of each filter row. Skipping exact zeros leaves the sum bit-identical to the
 * dense dot product (x + 0*p == x for finite p >= 0), and a mel filter spans only a few bins. */
static void mel_bands(const float *filters, int n_mels, int *begin, int *end) {
    for (int m = 0; m < n_mels; m++) {
        const float *f = filters + (size_t)m * WC_N_FFT_BINS;
        int b = 0, e = WC_N_FFT_BINS;
        while (b < e && f[b] == 0.0f)
            b++;
        while (e > b && f[e - 1] == 0.0f)
            e--;
        begin[m] = b;
        end[m] = e;
    }
}

/* Sample i of the padded signal, reflecting (without repeating the edge sample) past either end as
 * torch's reflect padding does; signals shorter than the 200-sample reflection fold repeatedly. */
static float mel_sample_at(const struct mel_job *j, int64_t i) {
    int64_t n = (int64_t)j->n_total;
    if (i < 0 || i >= n) {
        int64_t period = 2 * (n - 1);
        if (period == 0) {
            i = 0;
        } else {
            i %= period;
            if (i < 0)
                i += period;
            if (i >= n)
                i = period - i;
        }
    }
    return (size_t)i < j->n_samples ? j->samples[i] : 0.0f;
}

/* Whether frame t lies wholly in the zero padding (no reflection involved): its power is exactly
 * zero in every bin, so its log-Mel column is job->zero_log. A short clip padded to 30 s is
 * mostly such frames. */
static bool mel_frame_is_padding(const struct mel_job *j, int64_t t) {
    int64_t start = t * WC_HOP_LENGTH - MEL_PAD_CENTRE;
    return start >= (int64_t)j->n_samples && (uint64_t)start + WC_N_FFT <= j->n_total;
}

/* |STFT|^2 of frame t into power[WC_N_FFT_BINS]. */
static void mel_frame_power(struct mel_worker *w, int64_t t, float *power) {
    const struct mel_job *j = w->job;
    int64_t start = t * WC_HOP_LENGTH - MEL_PAD_CENTRE;
    if (start >= 0 && (uint64_t)start + WC_N_FFT <= j->n_samples) {
        const float *x = j->samples + start;
        for (int n = 0; n < WC_N_FFT; n++)
            w->fft_in[n] = x[n] * j->window[n];
    } else {
        for (int n = 0; n < WC_N_FFT; n++)
            w->fft_in[n] = mel_sample_at(j, start + n) * j->window[n];
    }
    fftwf_execute_dft_r2c(j->plan, w->fft_in, w->fft_out);
    for (int k = 0; k < WC_N_FFT_BINS; k++) {
        float re = w->fft_out[k][0], im = w->fft_out[k][1];
        power[k] = re * re + im * im;
    }
}

// ---- workers

/* Filterbank row m over one frame's power, log10'd (clamped at 1e-10 as torch.clamp(min=1e-10)
 * does; a NaN stays NaN). */
static float mel_log_energy(const struct mel_job *j, int m, const float *power) {
    const float *filt = j->filters + (size_t)m * WC_N_FFT_BINS;
    float acc = 0.0f;
    for (int k = j->band_begin[m]; k < j->band_end[m]; k++)
        acc += filt[k] * power[k];
    return log10f(acc < 1e-10f ? 1e-10f : acc);
}

/* Frames of blocks [block_begin, block_end): power, filterbank, log10. Padding frames take the
 * precomputed zero_log column, the same bits as computing it. */
static void *mel_worker_run(void *arg) {
    struct mel_worker *w = arg;
    const struct mel_job *j = w->job;
    float max_log = -INFINITY;
    bool padding[MEL_BLOCK_FRAMES];
    for (size_t b = w->block_begin; b < w->block_end; b++) {
        int64_t t0 = (int64_t)b * MEL_BLOCK_FRAMES;
        int nb = MEL_BLOCK_FRAMES;
        if (t0 + nb > j->n_frames)
            nb = (int)(j->n_frames - t0);
        for (int f = 0; f < nb; f++) {
            padding[f] = mel_frame_is_padding(j, t0 + f);
            if (!padding[f])
                mel_frame_power(w, t0 + f, w->power + (size_t)f * WC_N_FFT_BINS);
        }
        for (int m = 0; m < j->n_mels; m++) {
            float *dst = j->out + (size_t)m * (size_t)j->n_frames + t0;
            for (int f = 0; f < nb; f++) {
                float v = padding[f] ? j->zero_log[m]
                                     : mel_log_energy(j, m, w->power + (size_t)f * WC_N_FFT_BINS);
                dst[f] = v;
                if (v > max_log)
                    max_log = v;
            }
        }
    }
    w->max_log = max_log;
    return NULL;
}

/* Plans the FFT and allocates the workers' FFT buffers, all under the planner lock. */
static int mel_fft_setup(struct mel_job *j, struct mel_worker *w, int n_workers) {
    int rc = 0;
    fftw_planner_lock(); /* FFTW planning is not thread-safe */
    for (int i = 0; i < n_workers && !rc; i++) {
        w[i].fft_in = fftwf_malloc(WC_N_FFT * sizeof(float));
        w[i].fft_out = fftwf_malloc(WC_N_FFT_BINS * sizeof(fftwf_complex));
        if (!w[i].fft_in || !w[i].fft_out)
            rc = WHISPERC_ERR_NO_MEMORY;
    }
    /* FFTW_ESTIMATE: the plan (and so every output bit) does not depend on timing. */
    if (!rc)
        j->plan = fftwf_plan_dft_r2c_1d(WC_N_FFT, w[0].fft_in, w[0].fft_out, FFTW_ESTIMATE);
    if (!rc && !j->plan)
        rc = WHISPERC_ERR_NO_MEMORY;
    fftw_planner_unlock();
    return rc;
}

static void mel_fft_teardown(struct mel_job *j, struct mel_worker *w, int n_workers) {
    fftw_planner_lock();
    if (j->plan)
        fftwf_destroy_plan(j->plan);
    j->plan = NULL;
    for (int i = 0; i < n_workers; i++) {
        if (w[i].fft_in)
            fftwf_free(w[i].fft_in);
        if (w[i].fft_out)
            fftwf_free(w[i].fft_out);
    }
    fftw_planner_unlock();
}

/* Runs the workers (worker 0 on the calling thread; if a thread cannot be started, its share runs
 * here too) and returns the global max of the log spectrum. */
static float mel_run_workers(struct mel_worker *w, int n_workers) {
    for (int i = 1; i < n_workers; i++)
        w[i].started = pthread_create(&w[i].thread, NULL, mel_worker_run, &w[i]) == 0;
    mel_worker_run(&w[0]);
    float max_log = w[0].max_log;
    for (int i = 1; i < n_workers; i++) {
        if (w[i].started)
            pthread_join(w[i].thread, NULL);
        else
            mel_worker_run(&w[i]);
        if (w[i].max_log > max_log)
            max_log = w[i].max_log;
    }
    return max_log;
}

// ---- public

static int mel_check_args(const float *samples, size_t n_samples, size_t pad_samples,
                          const float *filters, int n_mels, int n_threads, char *err,
                          size_t err_size) {
    if ((!samples && n_samples) || !filters) {
        wc_errf(err, err_size, "mel: %s is NULL", filters ? "samples" : "filters");
        return WHISPERC_ERR_INVALID_ARG;
    }
    if (n_mels < 1 || n_threads < 1) {
        wc_errf(err, err_size, "mel: n_mels (%d) and n_threads (%d) must be >= 1", n_mels,
                n_threads);
        return WHISPERC_ERR_INVALID_ARG;
    }
    if (n_samples > SIZE_MAX - pad_samples ||
        (n_samples + pad_samples) / WC_HOP_LENGTH > (size_t)INT_MAX ||
        (n_samples + pad_samples) / WC_HOP_LENGTH > SIZE_MAX / sizeof(float) / (size_t)n_mels) {
        wc_errf(err, err_size, "mel: %zu + %zu samples is too long for one spectrogram", n_samples,
                pad_samples);
        return WHISPERC_ERR_INVALID_ARG;
    }
    if ((n_samples + pad_samples) / WC_HOP_LENGTH == 0) {
        wc_errf(err, err_size, "mel: %zu samples is shorter than one hop (%d samples)",
                n_samples + pad_samples, WC_HOP_LENGTH);
        return WHISPERC_ERR_INVALID_ARG;
    }
    return 0;
}

int mel_compute(struct mel_spec *out, const float *samples, size_t n_samples, size_t pad_samples,
                const float *filters, int n_mels, int n_threads, char *err, size_t err_size) {
    if (!out) {
        wc_errf(err, err_size, "mel: output is NULL");
        return WHISPERC_ERR_INVALID_ARG;
    }
    memset(out, 0, sizeof *out);
    int rc =
        mel_check_args(samples, n_samples, pad_samples, filters, n_mels, n_threads, err, err_size);
    if (rc)
        return rc;

    struct mel_job job = {
        .samples = samples,
        .n_samples = n_samples,
        .n_total = n_samples + pad_samples,
        .filters = filters,
        .n_mels = n_mels,
        .n_frames = (int)((n_samples + pad_samples) / WC_HOP_LENGTH),
    };
    size_t n_blocks = ((size_t)job.n_frames + MEL_BLOCK_FRAMES - 1) / MEL_BLOCK_FRAMES;
    int n_workers = (size_t)n_threads < n_blocks ? n_threads : (int)n_blocks;
    int *bands = malloc(2 * (size_t)n_mels * sizeof *bands);
    float *zero_log = malloc((size_t)n_mels * sizeof *zero_log);
    float zero_power[WC_N_FFT_BINS] = {0};
    struct mel_worker *w = calloc((size_t)n_workers, sizeof *w);
    job.out = malloc((size_t)n_mels * (size_t)job.n_frames * sizeof(float));
    if (!bands || !zero_log || !w || !job.out) {
        rc = WHISPERC_ERR_NO_MEMORY;
        goto fail;
    }
    job.band_begin = bands;
    job.band_end = bands + n_mels;
    mel_bands(filters, n_mels, bands, bands + n_mels);
    for (int m = 0; m < n_mels; m++)
        zero_log[m] = mel_log_energy(&job, m, zero_power);
    job.zero_log = zero_log;
    mel_hann(job.window);
    for (int i = 0; i < n_workers; i++) {
        w[i].job = &job;
        w[i].block_begin = n_blocks * (size_t)i / (size_t)n_workers;
        w[i].block_end = n_blocks * (size_t)(i + 1) / (size_t)n_workers;
        w[i].power = malloc(MEL_BLOCK_FRAMES * WC_N_FFT_BINS * sizeof(float));
        if (!w[i].power)
            rc = WHISPERC_ERR_NO_MEMORY;
    }
    if (!rc)
        rc = mel_fft_setup(&job, w, n_workers);
    if (rc)
        goto fail;

    /* audio.py: log_spec = maximum(log_spec, log_spec.max() - 8.0); (log_spec + 4.0) / 4.0,
     * in float32 as torch computes them. */
    float floor_log = mel_run_workers(w, n_workers) - 8.0f;
    size_t n_out = (size_t)n_mels * (size_t)job.n_frames;
    for (size_t i = 0; i < n_out; i++) {
        float v = job.out[i];
        v = v < floor_log ? floor_log : v;
        job.out[i] = (v + 4.0f) / 4.0f;
    }
    out->n_mels = n_mels;
    out->n_frames = job.n_frames;
    out->data = job.out;
    job.out = NULL;

fail:
    if (rc)
        wc_errf(err, err_size, "mel: out of memory for %d x %d frames", n_mels, job.n_frames);
    if (w) {
        mel_fft_teardown(&job, w, n_workers);
        for (int i = 0; i < n_workers; i++)
            free(w[i].power);
    }
    free(w);
    free(bands);
    free(zero_log);
    free(job.out);
    return rc;
}

void mel_free(struct mel_spec *m) {
    if (!m)
        return;
    free(m->data);
    m->data = NULL;
    m->n_mels = 0;
    m->n_frames = 0;
}
