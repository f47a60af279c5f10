/*
 * options.h — command-line options of `whisper-c transcribe` and `whisper-c bench`, with
 * whisper.cpp's spellings (-m, -l, -t, -nt, -otxt, -osrt, -ovtt, -oj, -of, -pp, -wt, -ml, …)
 * and openai-whisper's subtitle options (--max-line-width, …; underscores accepted too).
 */
#ifndef WC_CLI_OPTIONS_H
#define WC_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "libwhisperc.h"
#include "print.h"
#include "writers.h"

#define CLI_MAX_FILES    4096
#define CLI_MAX_SUPPRESS 1024

struct cli_options {
    const char *model;    /* NULL: default_model_path() */
    const char *language; /* "auto" */
    const char *prompt, *prefix, *hotwords;
    /* -of, repeatable as whisper.cpp's: the k-th names the k-th input's outputs (a path
     * without extension); an input without one, or with "", takes its own name
     * (cli_output_base) */
    const char *output_base[CLI_MAX_FILES];
    int n_output_base;
    int n_threads;
    int beam_size, best_of; /* 5 and 5 as whisper.cpp; beam_size 1: greedy */
    int max_context;        /* -1: the model's limit */
    bool no_context, carry_initial_prompt;
    bool translate, no_timestamps, no_fallback, print_progress, no_prints, detect_language;
    bool out[OUT_N_FORMATS]; /* -otxt … -olrc, indexed by enum out_format */
    bool out_json_full;      /* -ojf: -oj with everything */
    /* word timestamps and segment length (whisperc_full_params) */
    bool word_timestamps, split_on_word;
    int max_len;                 /* 0: off */
    int offset_ms, duration_ms;  /* -ot, -d: a part of each file (whisper.cpp's) */
    int offset_n;                /* -on: srt cue numbers start at offset_n + 1 (whisper.cpp's) */
    const char *alignment_heads; /* NULL: auto */
    bool dtw_token_timestamps;   /* -dtw NAME: token times alone (its NAME: alignment_heads) */
    /* srt/vtt with -wt (openai-whisper's ResultWriter options); 0: not given */
    int max_line_width, max_line_count, max_words_per_line;
    bool highlight_words;
    enum print_colors print_colors;       /* -pc, or --print-confidence with print_confidence */
    bool print_confidence, print_special; /* --print-confidence, -ps */
    bool diarize;                         /* -di: a two-channel file's speakers */
    bool vad; /* --vad and its settings, whisper.cpp's spellings and defaults */
    float vad_threshold;
    int vad_min_speech_ms, vad_min_silence_ms, vad_pad_ms;
    const char *vad_model; /* -vm: a Silero VAD file (NULL: the built-in detector) */
    whisperc_device device;
    int gpu_index;
    unsigned long long seed;
    /* the temperature fallback (whisper.cpp's -tp, -tpi, -lpt, -nth; openai-whisper's
     * --compression_ratio_threshold) */
    float temperature, temperature_inc, logprob_thold, no_speech_thold, compression_ratio_thold;
    /* --suppress-tokens (openai-whisper's list: -1 the non-speech set, absent from a list
     * given: allow_non_speech) and --suppress-regex (whisper.cpp's) */
    int32_t suppress_tokens[CLI_MAX_SUPPRESS];
    int n_suppress_tokens;
    bool allow_non_speech;
    bool suppress_nst; /* -sns: the non-speech set, whatever --suppress-tokens says */
    const char *suppress_regex;
    double max_duration_s;             /* --max-duration: longest audio accepted; 0: no limit */
    int64_t max_memory_bytes;          /* --max-memory: 0 auto (available memory), -1 off */
    whisperc_quant_mode quant_weights; /* --quant-weights */
    /* bench */
    const char *whisper_cpp; /* --compare-whisper-cpp PATH */
    int runs;
    bool synthetic; /* --synthetic: one random 30 s window, no FILE */
    int n_tokens;   /* --tokens N: decoder steps per window with --synthetic (default 100) */
    int batch_size; /* --batch-size: files one by one vs whisperc_full_batch; 0: not given */
    int throughput; /* --throughput W: with --synthetic, W windows batched (0: not given) */
    int n_context;  /* --context-tokens N: with --throughput, previous text a prompt (0) */
    const char *files[CLI_MAX_FILES];
    int n_files;
};

/* Parses argv (after the subcommand). Returns 0, 1 if --help was printed, or 2 on a usage
 * error (message already printed to stderr). */
int cli_parse(struct cli_options *o, int argc, char **argv, bool bench);
/* Where input i's outputs go, without extension: its -of, else the input's own path ("-", standard
 * input: standard output). */
const char *cli_output_base(const struct cli_options *o, int i);
/* The fallback temperatures -tp/-tpi/-nf ask for: openai-whisper's arange(temperature, 1.0 +
 * 1e-6, increment), or the first alone without fallback. Writes at most max of them to out and
 * returns how many there are (WHISPERC_MAX_TEMPERATURES + 1: more than the params hold). */
int cli_temperatures(const struct cli_options *o, float *out, int max);

/* For `transcribe` and `bench` (not `batch`, whose parse ends with a "-" of its own): "-"
 * (standard input) at most once, not for bench, and with -of where output files are asked
 * for. Returns 0, or 2 after a usage error on stderr. */
int cli_check_stdin(const struct cli_options *o, bool bench);

/* $WHISPERC_MODEL, else models/ggml-base.bin if it exists, else
 * $XDG_DATA_HOME (~/.local/share)/whisper-c/ggml-base.bin. Returns a static buffer. */
const char *default_model_path(void);

void cli_usage(const char *prog);

#endif /* WC_CLI_OPTIONS_H */
