/*
 * writers.h — transcript output files, written atomically: into a temporary file beside the
 * target, then renamed over it, so a reader never sees a partial file and a failure leaves any
 * previous file untouched.
 *
 *   writers.c       the atomic write; txt, csv, tsv, lrc; timestamps
 *   writers_subs.c  srt and vtt (with words: openai-whisper's subtitle options)
 *   writers_json.c  json (openai-whisper's result) and json-full (everything)
 */
#ifndef WC_CLI_WRITERS_H
#define WC_CLI_WRITERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "libwhisperc.h"
#include "transcript.h"

/* Append only: `whisper-c batch` indexes its format table with these. */
enum out_format {
    OUT_TXT,
    OUT_SRT,
    OUT_VTT,
    OUT_JSON,
    OUT_CSV,
    OUT_TSV,
    OUT_LRC,
    OUT_SCORE, /* FILE.score.txt: whisper.cpp's -ls */
    OUT_N_FORMATS
};

/* What -ojf records besides the results. */
struct run_info {
    const char *model_path, *model_type, *backend;
    bool multilingual;
    struct whisperc_model_dims dims; /* n_vocab, n_mels, and whisper.cpp's JSON "model" */
    const struct whisperc_full_params *params;
};

struct writer_opts {
    /* srt/vtt with words, as openai-whisper's ResultWriter options (utils.py
     * SubtitlesWriter.iterate_result); 0 = not given */
    int max_line_width, max_line_count, max_words_per_line;
    bool highlight_words;
    int srt_index_offset;       /* srt cues numbered from this + 1 (whisper.cpp's -on N) */
    bool json_full;             /* OUT_JSON writes everything (whisper.cpp -ojf) */
    const struct run_info *run; /* json_full: may be NULL */
    bool no_sync;               /* write_output leaves the fsync to the caller (a batch group
                                 * makes all its files durable with one syncfs) */
};

/* "txt", "srt", …: the file extension without its dot. */
const char *out_format_ext(enum out_format fmt);

/* 0, or -1 with the reason in err when output files for base (write_output's) could not be made
 * in its directory: said before an input's transcription, not after hours of it. "-" (standard
 * output) is 0. */
int output_dir_check(const char *base, char *err, size_t err_size);

/* Writes base + "." + ext. Returns 0, or the errno value of the failure (ENOSPC: a full disk)
 * with a one-line message in err. */
int write_output(const struct transcript *tr, enum out_format fmt, const struct writer_opts *wo,
                 const char *base, char *err, size_t err_size);

/* -of - (and standard input without -of), as whisper.cpp: the first of the formats in want, in
 * whisper.cpp's order (txt, vtt, srt, csv, json, lrc, score; then tsv), to stdout; each other
 * one named on stderr as not written. Returns 0 or an errno value, err filled. */
int write_output_stdout(const struct transcript *tr, const bool *want, const struct writer_opts *wo,
                        char *err, size_t err_size);

/* The format to f (writers_*.c); wo may be NULL (defaults). Returns 0, or -1 when out of
 * memory; write errors show in ferror(f). */
int write_format(FILE *f, const struct transcript *tr, enum out_format fmt,
                 const struct writer_opts *wo);
int write_subtitles(FILE *f, const struct transcript *tr, bool srt, const struct writer_opts *wo);
int write_json(FILE *f, const struct transcript *tr, const struct writer_opts *wo);

/* "hh:mm:ss.mmm" (sep '.') or "hh:mm:ss,mmm" (sep ','), hours widening past 99; negative ms
 * count as 0; buf of at least 32 bytes. */
const char *format_timestamp(char *buf, int64_t ms, char sep);

#endif /* WC_CLI_WRITERS_H */
