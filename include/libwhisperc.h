/*
 * libwhisperc.h — the whisper-c speech-to-text library.
 *
 * Basic usage:
 *
 *     whisperc_model *model = NULL;
 *     struct whisperc_model_params mp = whisperc_model_default_params();
 *     char err[256];
 *     if (whisperc_model_load("ggml-base.bin", &mp, &model, err, sizeof err) != WHISPERC_OK) {
 *         fprintf(stderr, "%s\n", err);
 *         return 1;
 *     }
 *     whisperc_state *st = NULL;
 *     whisperc_state_new(model, &st);
 *     struct whisperc_full_params fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
 *     fp.language = "en";
 *     if (whisperc_full_file(st, &fp, "speech.flac") != WHISPERC_OK)
 *         fprintf(stderr, "%s\n", whisperc_state_errmsg(st));
 *     for (int i = 0; i < whisperc_n_segments(st); i++)
 *         printf("[%lld ms] %s\n", (long long)whisperc_segment_t0_ms(st, i),
 *                whisperc_segment_text(st, i));
 *     whisperc_state_free(st);
 *     whisperc_model_free(model);
 *
 * Ownership and threads:
 * - A model is read-only once loaded and may be shared by any number of states on any threads.
 *   Free it after its last state.
 * - A state (decoder caches, scratch, results) serves one thread at a time.
 * - Strings and records returned by accessors belong to the state and stay valid until the next
 *   whisperc_full*() call on that state or whisperc_state_free().
 * - Parameter structs are passed by const pointer; their first field `size` is set by the
 *   defaults function (inline: it tells the library the size this header gives the struct),
 *   and fields are only ever appended, so binaries built against an older header keep working.
 *   Always start from the defaults function.
 * - The library prints nothing. Diagnostics go to the log callback of the params, if set.
 * - Callbacks run on the thread that called whisperc_full*().
 * - On a GPU each call gives its thread back with the CUDA context it had current (none, or
 *   the program's own, on any device); the callbacks of whisperc_full*() run with the device's
 *   primary context current.
 */
#ifndef LIBWHISPERC_H
#define LIBWHISPERC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define WHISPERC_API __declspec(dllexport)
#elif defined(__GNUC__)
#define WHISPERC_API __attribute__((visibility("default")))
#else
#define WHISPERC_API
#endif

#define WHISPERC_VERSION_MAJOR 0
#define WHISPERC_VERSION_MINOR 1
#define WHISPERC_VERSION_PATCH 0
#define WHISPERC_VERSION_NUM                                                                       \
    ((WHISPERC_VERSION_MAJOR << 16) | (WHISPERC_VERSION_MINOR << 8) | WHISPERC_VERSION_PATCH)

/* "0.1.0": the version of the library actually linked. */
WHISPERC_API const char *whisperc_version(void);

/* The OpenBLAS kernels the CPU backend's matrix products run: "SkylakeX", "Haswell", "Zen", ...
 * (OpenBLAS's name of the core it chose when it was loaded). */
WHISPERC_API const char *whisperc_blas_core(void);

/* The OPENBLAS_CORETYPE this CPU should run with, when OpenBLAS did not recognise it (an
 * OpenBLAS older than the CPU) and fell back to kernels without AVX2, which make the encoder
 * about 15 times slower on the CPU: "SkylakeX" or "Haswell". NULL when its choice is fine, the
 * variable is already set, or the CPU is not x86-64. When the library is loaded it has
 * OpenBLAS choose again with the variable set (and unset after), which changes the kernels of
 * the whole process, the program's own products included: only while the process runs no
 * threads but OpenBLAS's own (a program linked with the library, before main), and not with
 * WHISPERC_BLAS_RESELECT=0 in the environment or in a set-user-ID program. This is NULL after
 * that. Where OpenBLAS could not choose again, set the variable in the environment the program
 * starts with: the whisper-c command re-executes itself with it; whisperc_model_load logs this
 * advice as a warning. */
WHISPERC_API const char *whisperc_blas_coretype_advice(void);

/* Status codes. Append only; values never change. A state stays usable after any of them but
 * WHISPERC_ERR_DEVICE: the next call on it starts on fresh buffers. */
typedef enum whisperc_status {
    WHISPERC_OK = 0,
    WHISPERC_ERR_INVALID_ARG = 1,  /* NULL handle, out-of-range parameter */
    WHISPERC_ERR_NO_MEMORY = 2,    /* an allocation failed */
    WHISPERC_ERR_IO = 3,           /* a file could not be opened, read or written */
    WHISPERC_ERR_MODEL_FORMAT = 4, /* the model file is not a valid whisper ggml file */
    WHISPERC_ERR_AUDIO_FORMAT = 5, /* the audio could not be decoded */
    WHISPERC_ERR_UNSUPPORTED = 6,  /* valid but not supported (k-quant model, language) */
    WHISPERC_ERR_BACKEND = 7,      /* the compute backend failed (e.g. a CUDA error) */
    WHISPERC_ERR_ABORTED = 8,      /* the abort callback asked to stop */
    /* The GPU failed inside a kernel (an illegal address, ...): the driver has spoiled the
     * context, so every state of this model fails from now on and the GPU is unusable to this
     * process until it restarts (CUDA's rule). A service should exit and be restarted. */
    WHISPERC_ERR_DEVICE = 9,
} whisperc_status;

/* "WHISPERC_ERR_IO" etc.; never NULL. */
WHISPERC_API const char *whisperc_status_str(whisperc_status rc);

typedef struct whisperc_model whisperc_model;
typedef struct whisperc_state whisperc_state;

typedef enum whisperc_device {
    WHISPERC_DEVICE_AUTO = 0, /* CUDA when a usable GPU is present, else CPU */
    WHISPERC_DEVICE_CPU = 1,
    WHISPERC_DEVICE_CUDA = 2,
} whisperc_device;

typedef enum whisperc_log_level {
    WHISPERC_LOG_ERROR = 0,
    WHISPERC_LOG_WARN = 1,
    WHISPERC_LOG_INFO = 2,
    WHISPERC_LOG_DEBUG = 3,
} whisperc_log_level;

/* One complete line without a trailing newline. */
typedef void (*whisperc_log_fn)(whisperc_log_level level, const char *msg, void *user_data);

/* ---------------------------------------------------------------------------------------- */
/* Model                                                                                     */

/* How the weights of a quantized model file (whisper.cpp's q8_0, q5_1, q5_0, q4_1, q4_0) are
 * held. Either way every weight is its quantized value rounded to half, so the results are the
 * same bit for bit (for finite block scales); only memory and speed differ. Other values are
 * refused (WHISPERC_ERR_INVALID_ARG). */
typedef enum {
    /* WIDEN, unless the f16 weights would take more than half of the memory budget
     * (max_memory_bytes): then KEEP */
    WHISPERC_QUANT_AUTO = 0,
    WHISPERC_QUANT_WIDEN = 1, /* widened to f16 at load: an f16 file's memory and speed */
    /* the file's blocks kept in memory (the CPU; a GPU widens them): a quarter (q4_0) to a
     * half (q8_0) of the f16 weights' memory, decoding about 1.3-1.8x slower */
    WHISPERC_QUANT_KEEP = 2,
} whisperc_quant_mode;

struct whisperc_model_params {
    size_t size;            /* sizeof(struct whisperc_model_params), set by the defaults */
    whisperc_device device; /* default WHISPERC_DEVICE_AUTO */
    int gpu_index;          /* CUDA device ordinal, default 0 */
    whisperc_log_fn log_fn; /* default NULL: silent */
    void *log_user_data;

    /* Memory budget (appended in 0.1): a model, or an audio file in whisperc_full_file, that
     * would need more is refused with WHISPERC_ERR_NO_MEMORY and the numbers, before anything
     * is allocated. 0 (default): what the system has available now (MemAvailable, or the
     * cgroup's limit if lower); > 0: this many bytes; < 0: no check. */
    int64_t max_memory_bytes;

    /* Quantized files (appended in 0.1): default WHISPERC_QUANT_AUTO. */
    whisperc_quant_mode quant_weights;
};

/* The defaults written into *params: at most `size` bytes (the caller's own
 * sizeof(struct whisperc_model_params)), params->size set. Call it through
 * whisperc_model_default_params(), which passes the size this header knows: a library built
 * with a longer header then writes nothing past a shorter struct. */
WHISPERC_API void whisperc_model_params_init(struct whisperc_model_params *params, size_t size);

#ifndef WHISPERC_NO_INLINE_DEFAULTS /* (the library's exported one, for older binaries) */
static inline struct whisperc_model_params whisperc_model_default_params(void) {
    struct whisperc_model_params p;
    whisperc_model_params_init(&p, sizeof p);
    return p;
}
#endif

/* Loads a whisper.cpp ggml .bin file (f32, f16 or quantized; any official size). On failure *out is
 * NULL and, if errbuf is not NULL, it receives one line naming the file and the problem.
 * A model on the CPU sets OpenBLAS to one thread (openblas_set_num_threads(1)): whisper-c
 * spreads the work over its own n_threads, each calling OpenBLAS. That setting is the process's:
 * a program that also calls OpenBLAS itself sets its own count again after loading. */
WHISPERC_API whisperc_status whisperc_model_load(const char *path,
                                                 const struct whisperc_model_params *params,
                                                 whisperc_model **out, char *errbuf,
                                                 size_t errbuf_size);
WHISPERC_API void whisperc_model_free(whisperc_model *model); /* NULL is a no-op */

/* "tiny", "base", "small", "medium", "large", "large-v3", "large-v3-turbo" or "custom". */
WHISPERC_API const char *whisperc_model_type(const whisperc_model *model);
WHISPERC_API bool whisperc_model_is_multilingual(const whisperc_model *model);
WHISPERC_API int whisperc_model_n_vocab(const whisperc_model *model);
WHISPERC_API int whisperc_model_n_mels(const whisperc_model *model);
/* "cpu" or "cuda": where the weights live. */
WHISPERC_API const char *whisperc_model_backend(const whisperc_model *model);

/* The model's dimensions as its file gives them (whisper.cpp's whisper_model_n_audio_ctx, …).
 * (Appended in 0.1.) */
struct whisperc_model_dims {
    size_t size; /* set by the caller: sizeof(struct whisperc_model_dims) */
    int n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer;
    int n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels;
    int ftype; /* the file's weight type: 0 f32, 1 f16, else ggml's quantized (8: q5_0, …) */
};
WHISPERC_API whisperc_status whisperc_model_dims(const whisperc_model *model,
                                                 struct whisperc_model_dims *out);

/* ---------------------------------------------------------------------------------------- */
/* State                                                                                     */

/* A decoding state for one thread at a time. Its activations and caches (tens of MiB for tiny,
 * about a GiB for large) are checked against the model's max_memory_bytes first: the model and
 * one state must fit an explicit budget; with the default, the state must fit what is available
 * now. Refused with WHISPERC_ERR_NO_MEMORY and, with _v2, the numbers in errbuf. */
WHISPERC_API whisperc_status whisperc_state_new(const whisperc_model *model, whisperc_state **out);
WHISPERC_API whisperc_status whisperc_state_new_v2(const whisperc_model *model,
                                                   whisperc_state **out, char *errbuf,
                                                   size_t errbuf_size);
WHISPERC_API void whisperc_state_free(whisperc_state *state); /* NULL is a no-op */
/* Detail of the last error on this state ("" if none); never NULL. */
WHISPERC_API const char *whisperc_state_errmsg(const whisperc_state *state);

/* ---------------------------------------------------------------------------------------- */
/* Transcription                                                                             */

typedef enum whisperc_strategy {
    WHISPERC_SAMPLING_GREEDY = 0,
    WHISPERC_SAMPLING_BEAM_SEARCH = 1,
} whisperc_strategy;

/* Called after each 30 s window with the number of segments it added (the newest n_new). */
typedef void (*whisperc_new_segment_fn)(whisperc_state *state, int n_new, void *user_data);
/* Percent of the audio done, 0..100; 100 is always reported on success. */
typedef void (*whisperc_progress_fn)(whisperc_state *state, int percent, void *user_data);
/* Return true to stop: asked after each window and before each decoder step (a token of every
 * sequence), so the run ends with WHISPERC_ERR_ABORTED within one step, a few milliseconds on
 * a GPU, tens on a CPU (an encoder pass, seconds for a large model on a CPU, is not cut). */
typedef bool (*whisperc_abort_fn)(void *user_data);

#define WHISPERC_MAX_TEMPERATURES 16

/* Defaults follow openai-whisper's transcribe() (see whisperc_full_default_params). */
struct whisperc_full_params {
    size_t size; /* sizeof(struct whisperc_full_params), set by the defaults */
    whisperc_strategy strategy;
    int n_threads; /* CPU threads; default: the number of online cores, at most 8 */

    const char *language; /* "en", "de", …; NULL or "auto" (any case): detect (multilingual) */
    bool translate;       /* task=translate (X → English) instead of transcribe */
    bool no_timestamps;   /* decode without timestamp tokens (<|notimestamps|>) */
    const char *initial_prompt;      /* text for the first window's context, or NULL */
    bool condition_on_previous_text; /* feed each window's text to the next (default true) */

    /* Temperature fallback: decode at temperatures[0]; if the result is too repetitive or too
     * improbable, retry at the next one. Default 0.0, 0.2, 0.4, 0.6, 0.8, 1.0. */
    int n_temperatures;
    float temperatures[WHISPERC_MAX_TEMPERATURES];
    float compression_ratio_threshold; /* 2.4; <= 0 disables */
    float logprob_threshold;           /* -1.0; use -INFINITY to disable */
    float no_speech_threshold;         /* 0.6; > 1 disables */

    bool suppress_blank;      /* suppress " " and EOT as the first sampled token (default true) */
    bool suppress_non_speech; /* suppress tokenizer.non_speech_tokens (the "-1" default) */
    float max_initial_timestamp; /* seconds, 1.0; < 0 disables */
    int sample_len;              /* max tokens per window; 0: n_text_ctx / 2 */

    /* Beam search runs at temperature 0 only, best_of sampling at temperatures > 0 only, as
     * in openai-whisper; the candidates are ranked by sum_logprob / length (length_penalty < 0)
     * or sum_logprob / ((5 + length) / 6) ** length_penalty. */
    int beam_size;        /* 1..16, WHISPERC_SAMPLING_BEAM_SEARCH only; default 5 */
    int best_of;          /* 1..16 samples at temperature > 0; default 1 greedy, 5 beam search */
    float patience;       /* beam search ends with round(beam_size * patience) finished; 1.0 */
    float length_penalty; /* < 0 (default): length-normalised log-probability; else 0..1 */

    uint64_t seed; /* sampling at temperature > 0 is reproducible for a given seed */

    whisperc_new_segment_fn new_segment_fn;
    void *new_segment_user_data;
    whisperc_progress_fn progress_fn;
    void *progress_user_data;
    whisperc_abort_fn abort_fn;
    void *abort_user_data;
    whisperc_log_fn log_fn; /* default NULL: silent */
    void *log_user_data;

    /* Context and forced text (appended in 0.1: older callers get these defaults). */
    const char *prefix;        /* DecodingOptions.prefix: every window's text starts with it (and
                                  it is left out of the results); NULL: none */
    const char *hotwords;      /* faster-whisper's hotwords: put before each window's previous text
                                  to bias spelling; ignored with a prefix; NULL: none */
    int max_context;           /* most tokens of previous text in a window's prompt; -1 (default):
                                  the model's limit, n_text_ctx / 2 - 1; 0: none */
    bool carry_initial_prompt; /* keep initial_prompt at the head of every window's prompt */

    /* Word-level timestamps (appended in 0.1: older callers get these defaults). */
    bool word_timestamps;             /* words with start, end and probability (default false) */
    const char *prepend_punctuations; /* joined to the following word; NULL: "\"'“¿([{-" */
    const char
        *append_punctuations; /* joined to the preceding word; NULL: "\"'.。,，!！?？:：”)]}、" */
    const char *alignment_heads; /* cross-attention heads to align with: NULL or "auto" (the
                                    official model of this shape; an 80-mel large is taken as
                                    "large-v2"), or a model name such as "large-v1" */
    int max_len;                 /* cut segments to at most this many characters (whisper.cpp's
                                    --max-len; 1 gives one word per segment), timed by the word alignment;
                                    0 (default): off. Decoding and its prompts are unchanged. */
    bool split_on_word; /* with max_len: cut only where a word starts (else at any token) */

    /* Voice activity detection (appended in 0.1: older callers get these defaults). Names and
     * defaults as whisper.cpp's; the built-in detector needs no model file, vad_model_path
     * (below) runs Silero VAD instead (docs/vad.md). */
    bool vad; /* transcribe only the speech found, pauses over 1 s shortened to 1 s; every
                 time in the results stays in the input's time base (default false) */
    float vad_threshold;             /* p(speech) that starts speech, (0, 1]; speech ends below
                                        vad_threshold - 0.15 (default 0.5) */
    int vad_min_speech_duration_ms;  /* shorter speech is dropped (250) */
    int vad_min_silence_duration_ms; /* shorter pauses do not end speech (100) */
    int vad_speech_pad_ms;           /* added to both ends of each speech span (30) */
    /* Longest audio accepted, in seconds (appended in 0.1); longer input is refused with
     * WHISPERC_ERR_UNSUPPORTED before it is decoded. 0 (default): no limit. */
    double max_audio_s;
    /* whisperc_full_batch (appended in 0.1): how many inputs' windows are decoded together,
     * 1..64 (default 8). */
    int batch_size;
    /* A part of the audio (appended in 0.1; whisper.cpp's offset_ms and duration_ms): only
     * [offset_ms, offset_ms + duration_ms) is transcribed, or to the end when duration_ms is
     * 0 (the defaults: all of it). Every time in the results stays the input's. Language
     * detection and VAD see that part only. whisperc_full_batch takes such inputs one by one. */
    int offset_ms;
    int duration_ms;
    /* With vad (appended in 0.1; whisper.cpp's vad_model_path): a whisper.cpp ggml Silero VAD
     * file (ggml-silero-v5.1.2.bin; tools/convert-silero-vad makes one from the silero-vad
     * package) whose speech probabilities, one per 32 ms, replace the built-in detector's.
     * Loaded on first use and kept by the state while the path stays the same. NULL or ""
     * (default): the built-in detector. */
    const char *vad_model_path;
    /* Tokens never sampled (appended in 0.1), besides suppress_non_speech's: the ids in
     * suppress_tokens[n_suppress_tokens] (openai-whisper's suppress_tokens), and every text
     * token whose bytes suppress_regex, a POSIX extended regular expression, matches as a
     * whole (whisper.cpp's suppress_regex: "[0-9]+" leaves the text without digits). NULL / 0
     * (default): none. An id outside the vocabulary or a regex that does not compile is
     * WHISPERC_ERR_INVALID_ARG. */
    const int32_t *suppress_tokens;
    int n_suppress_tokens;
    const char *suppress_regex;
    /* whisper.cpp's --diarize (appended in 0.1), for two-channel recordings with one speaker a
     * channel, such as a call's: whisperc_full_file measures the file's two channels as it
     * reads them, and whisperc_segment_speaker tells which is louder over each segment. Other
     * calls, and inputs with another number of channels, leave the speakers unknown. */
    bool diarize;
    /* whisper.cpp's dtw_token_timestamps (appended in 0.1): every token's time from the
     * alignment_heads' cross-attention (dynamic time warping, as word_timestamps align), read
     * with whisperc_segment_token_t0_ms / _t1_ms, while the segments, their times and the
     * decoding stay those of a run without it (word_timestamps moves segment bounds to the
     * words). Costs one teacher-forced decoder pass a window. Default false. */
    bool dtw_token_timestamps;
};

/* The defaults for strategy written into *params: at most `size` bytes (the caller's own
 * sizeof(struct whisperc_full_params)), params->size set. Call it through
 * whisperc_full_default_params(), which passes the size this header knows: a library built
 * with a longer header then writes nothing past a shorter struct. */
WHISPERC_API void whisperc_full_params_init(struct whisperc_full_params *params, size_t size,
                                            whisperc_strategy strategy);

#ifndef WHISPERC_NO_INLINE_DEFAULTS
static inline struct whisperc_full_params whisperc_full_default_params(whisperc_strategy strategy) {
    struct whisperc_full_params p;
    whisperc_full_params_init(&p, sizeof p, strategy);
    return p;
}
#endif

/* Checks params against the state's model as whisperc_full* does before it reads any audio
 * (a language the model lacks, a suppress_regex that does not compile, a value out of range):
 * WHISPERC_OK, or the status that call would return, with whisperc_state_errmsg() saying why.
 * A program with many inputs can refuse bad params once, before decoding the first. The last
 * results stay as they are. */
WHISPERC_API whisperc_status whisperc_full_params_check(whisperc_state *state,
                                                        const struct whisperc_full_params *params);

/* Transcribes 16 kHz mono float samples in [-1, 1]. Results replace the state's previous ones. */
WHISPERC_API whisperc_status whisperc_full(whisperc_state *state,
                                           const struct whisperc_full_params *params,
                                           const float *pcm16k, int n_samples);
/* Decodes any file libsndfile reads, resamples to 16 kHz mono, then as whisperc_full(). */
WHISPERC_API whisperc_status whisperc_full_file(whisperc_state *state,
                                                const struct whisperc_full_params *params,
                                                const char *path);

/* Reads the Silero VAD file at path as params.vad_model_path would, and frees it: WHISPERC_OK,
 * or WHISPERC_ERR_IO / _MODEL_FORMAT / _NO_MEMORY with the one-line reason in errbuf (may be
 * NULL). For programs that refuse a bad file before a long run rather than at every input. */
WHISPERC_API whisperc_status whisperc_vad_model_check(const char *path, char *errbuf,
                                                      size_t errbuf_size);

/* Transcribes n_inputs inputs (pcm16k[i]: n_samples[i] samples, as whisperc_full) in one state,
 * each input's result exactly what whisperc_full gives it alone. Up to params->batch_size
 * inputs are in flight: the next 30 s window of each is decoded in one batch, so the decoder
 * reads its weights once per token step for all of them (the gain on a CPU; on a GPU, fewer
 * launches). Each input's windows stay in order; a window that ends hands its lane to the
 * input's next window (or to the next input) without waiting for the others.
 * Batched: greedy decoding or beam search, and best_of sampling at temperatures above 0, with
 * fallback (a window that falls back is decoded again in the batch at the next temperature;
 * a window's beams and samples are batch lanes too, so a batch of 8 with 5 beams steps 40
 * sequences; a batch with fewer lanes than best_of, such as a greedy batch smaller than
 * best_of, decodes its fallbacks alone). Word timestamps and max_len are batched too (each
 * window aligned as it ends), and vad (every input's speech gathered first, times mapped back
 * to each input's).
 * Callbacks: only abort_fn is called, and log_fn. The first failing input ends the call (the
 * message names it) and no results are kept. Results: input 0's are selected;
 * whisperc_batch_select() picks another input for the result accessors, which read the
 * selected input's transcript; whisperc_state_timings() gives the whole call's.
 * Memory: the batch decoder's buffers for batch_size lanes, and the log-Mels of the inputs in
 * flight only. When the buffers do not fit (the model's max_memory_bytes, or device memory on
 * a GPU) the batch is halved, down to 1, with a WHISPERC_LOG_WARN line ("batch of 8 does not
 * fit in memory (...); using 4"); the state remembers the refused size. */
WHISPERC_API whisperc_status whisperc_full_batch(whisperc_state *state,
                                                 const struct whisperc_full_params *params,
                                                 const float *const *pcm16k, const int *n_samples,
                                                 int n_inputs);
/* Inputs of the last successful whisperc_full_batch (0 after any other whisperc_full*). */
WHISPERC_API int whisperc_batch_n_inputs(const whisperc_state *state);
/* Makes input i_input's results the ones the result accessors read (strings of the previously
 * selected input stay valid until the next whisperc_full* or whisperc_state_free). */
WHISPERC_API whisperc_status whisperc_batch_select(whisperc_state *state, int i_input);

/* Language identification only, as openai-whisper's detect_language() within transcribe():
 * the first 30 s are encoded and the decoder's next-token distribution after
 * <|startoftranscript|> is restricted to the language tokens. probs[i] (i < n_probs; may be
 * NULL when n_probs is 0) receives the probability of language i (whisperc_lang_code(i)), 0 for
 * languages the model does not know; *i_lang (may be NULL) the most probable. Multilingual
 * models only (WHISPERC_ERR_UNSUPPORTED otherwise). params: threads (language is ignored).
 * The results of the last whisperc_full*() stay as they were. */
WHISPERC_API whisperc_status whisperc_detect_language(whisperc_state *state,
                                                      const struct whisperc_full_params *params,
                                                      const float *pcm16k, int n_samples,
                                                      float *probs, int n_probs, int *i_lang);

/* Reads, downmixes and resamples an audio file to 16 kHz mono. *out (malloc'd, the caller
 * frees it with free()) holds *n_samples samples. Errors name the file and the problem. */
WHISPERC_API whisperc_status whisperc_load_audio(const char *path, float **out, int *n_samples,
                                                 char *errbuf, size_t errbuf_size);
/* The same, refused by the limits whisperc_full_file() applies (params->max_audio_s and the
 * model's max_memory_bytes), before the samples are read; the message (as whisperc_full_file's)
 * in whisperc_state_errmsg(). The state's results are left as they are. For a caller that
 * loads files itself to pass them to whisperc_full_batch(). (Appended in 0.1.) */
WHISPERC_API whisperc_status whisperc_state_load_audio(whisperc_state *state,
                                                       const struct whisperc_full_params *params,
                                                       const char *path, float **out,
                                                       int *n_samples);
/* The same limits and messages with no state: the message goes to errbuf. Safe to call from
 * many threads at once on one model, beside its states' work (a caller's read-ahead).
 * (Appended in 0.1.) */
WHISPERC_API whisperc_status whisperc_model_load_audio(const whisperc_model *model,
                                                       const struct whisperc_full_params *params,
                                                       const char *path, float **out,
                                                       int *n_samples, char *errbuf,
                                                       size_t errbuf_size);
/* The same for a file held in memory: the size bytes at data, in any format libsndfile reads
 * (WAV, FLAC, Ogg, MP3, ...), such as a file read from a pipe or received over a network. name
 * stands for it in messages (NULL: "audio in memory"). With a model, its limits as above; with
 * model NULL, none (params is then ignored). (Appended in 0.1.) */
WHISPERC_API whisperc_status whisperc_decode_audio(const whisperc_model *model,
                                                   const struct whisperc_full_params *params,
                                                   const void *data, size_t size, const char *name,
                                                   float **out, int *n_samples, char *errbuf,
                                                   size_t errbuf_size);
/* The same for what the file descriptor fd gives until its end: a pipe (standard input), a
 * socket, a redirected file. The bytes are read into memory (waiting where fd is non-blocking),
 * then decoded; with a model, input beyond its memory budget is refused as it arrives
 * (WHISPERC_ERR_NO_MEMORY), never read to its end. fd is not closed. (Appended in 0.1.) */
WHISPERC_API whisperc_status whisperc_decode_audio_fd(const whisperc_model *model,
                                                      const struct whisperc_full_params *params,
                                                      int fd, const char *name, float **out,
                                                      int *n_samples, char *errbuf,
                                                      size_t errbuf_size);

/* ---------------------------------------------------------------------------------------- */
/* Results (valid after a successful whisperc_full*; out-of-range indices give NULL, 0, or  */
/* -1 where 0 is a valid answer: token ids)                                                  */

WHISPERC_API int whisperc_n_segments(const whisperc_state *state);
WHISPERC_API const char *whisperc_segment_text(const whisperc_state *state, int i_segment);
WHISPERC_API int64_t whisperc_segment_t0_ms(const whisperc_state *state, int i_segment);
WHISPERC_API int64_t whisperc_segment_t1_ms(const whisperc_state *state, int i_segment);
/* Decoding details of the window the segment came from. */
WHISPERC_API float whisperc_segment_temperature(const whisperc_state *state, int i_segment);
/* The window's first mel frame (10 ms each) in the input: openai-whisper's segment["seek"];
 * with offset_ms or vad, where that window's audio starts in the input. -1: no such segment. */
WHISPERC_API int whisperc_segment_seek(const whisperc_state *state, int i_segment);
/* With params.diarize (whisperc_full_file, a two-channel file): 0 or 1, the channel whose sum
 * of |sample| over the segment's time is over 1.1 times the other's (whisper.cpp's rule); -1:
 * neither (both speak, or neither); -2: unknown (no such measure, or no such segment). */
WHISPERC_API int whisperc_segment_speaker(const whisperc_state *state, int i_segment);
WHISPERC_API float whisperc_segment_avg_logprob(const whisperc_state *state, int i_segment);
WHISPERC_API float whisperc_segment_compression_ratio(const whisperc_state *state, int i_segment);
WHISPERC_API float whisperc_segment_no_speech_prob(const whisperc_state *state, int i_segment);

/* Tokens of a segment, timestamp tokens included (as openai-whisper's segment["tokens"]). */
WHISPERC_API int whisperc_segment_n_tokens(const whisperc_state *state, int i_segment);
/* -1 if out of range. */
WHISPERC_API int whisperc_segment_token_id(const whisperc_state *state, int i_segment, int i_token);
/* Probability the model gave the token when it was chosen; 0 if out of range. */
WHISPERC_API float whisperc_segment_token_p(const whisperc_state *state, int i_segment,
                                            int i_token);
/* The token's bytes as text ("<|0.00|>" for timestamps); NULL if out of range. A token may hold
 * part of a UTF-8 character. */
/* A token's span in milliseconds, from the word alignment (word_timestamps, max_len or
 * dtw_token_timestamps): text tokens where the alignment enters and leaves them, a timestamp
 * token at its own time; -1 without alignment. */
WHISPERC_API int64_t whisperc_segment_token_t0_ms(const whisperc_state *state, int i_segment,
                                                  int i_token);
WHISPERC_API int64_t whisperc_segment_token_t1_ms(const whisperc_state *state, int i_segment,
                                                  int i_token);
WHISPERC_API const char *whisperc_token_text(const whisperc_state *state, int token_id);
/* First id of the timestamp tokens: id - this is the time in 20 ms steps; -1 if state is NULL. */
WHISPERC_API int whisperc_token_timestamp_begin(const whisperc_state *state);

/* Words of a segment (whisperc_full_params.word_timestamps; else 0 words). A word's text keeps
 * its leading space and the punctuation merged into it; times are in milliseconds of the
 * input; p is the mean probability of its tokens. */
WHISPERC_API int whisperc_segment_n_words(const whisperc_state *state, int i_segment);
WHISPERC_API const char *whisperc_word_text(const whisperc_state *state, int i_segment, int i_word);
WHISPERC_API int64_t whisperc_word_t0_ms(const whisperc_state *state, int i_segment, int i_word);
WHISPERC_API int64_t whisperc_word_t1_ms(const whisperc_state *state, int i_segment, int i_word);
WHISPERC_API float whisperc_word_p(const whisperc_state *state, int i_segment, int i_word);

/* Language transcribed ("en"), and the probability of the detected language (1.0 when given).
 * With vad on a multilingual model asked to detect, audio with no speech gives "en" with
 * probability 0: no language was detected. */
WHISPERC_API const char *whisperc_full_language(const whisperc_state *state);
WHISPERC_API float whisperc_full_language_prob(const whisperc_state *state);
/* The whole transcript, as openai-whisper's result["text"]. */
WHISPERC_API const char *whisperc_full_text(const whisperc_state *state);

/* Where the time of the last whisperc_full*() or whisperc_detect_language() went, in
 * milliseconds. */
struct whisperc_timings {
    size_t size;      /* set by the caller: sizeof(struct whisperc_timings) */
    double audio_ms;  /* decode + resample (whisperc_full_file only) */
    double mel_ms;    /* log-Mel spectrogram (whisperc_full_batch on a GPU: the wait for it; it is
                       * computed ahead on other threads) */
    double encode_ms; /* encoder, all windows, language detection included (whisperc_full_batch
                       * with its passes beside the decoder's steps, a GPU's default: the time
                       * the host spent queuing passes and waiting for them) */
    double decode_ms; /* decoder, all windows and temperatures */
    double total_ms;
    int n_windows;        /* encoder runs */
    int n_decode_tokens;  /* decoder forward steps, prompt batches counted as one each */
    int n_fallbacks;      /* windows re-decoded at a higher temperature */
    double audio_seconds; /* length of the audio */
    double vad_ms;        /* voice activity detection and gathering of the speech (params.vad) */
    double vad_seconds;   /* length of the speech transcribed with params.vad, else 0 */
    /* whisperc_full_batch (appended in 0.1): batched decoder steps, each one token for every
     * lane decoding at the time (n_decode_tokens counts each lane's tokens); 0 otherwise. */
    int n_batch_steps;
};
WHISPERC_API whisperc_status whisperc_state_timings(const whisperc_state *state,
                                                    struct whisperc_timings *out);

/* ---------------------------------------------------------------------------------------- */
/* Languages                                                                                 */

/* Number of language codes the library knows (100: Whisper's list in its token order). */
WHISPERC_API int whisperc_lang_count(void);
/* "en", "zh", …; NULL if out of range. */
WHISPERC_API const char *whisperc_lang_code(int i_lang);
/* "english", …; NULL if out of range. */
WHISPERC_API const char *whisperc_lang_name(int i_lang);
/* Index of a code ("de") or an English name ("german"); -1 if unknown. */
WHISPERC_API int whisperc_lang_index(const char *code_or_name);

#ifdef __cplusplus
}
#endif

#endif /* LIBWHISPERC_H */
