/*
 * transcript.h — a transcription result as plain records, the input of the writers
 * (writers*.c). The CLI fills one from a state's accessors right after a run; tests build one
 * by hand. Strings are borrowed (from the state, or the test's literals), arrays are owned.
 */
#ifndef WC_CLI_TRANSCRIPT_H
#define WC_CLI_TRANSCRIPT_H

#include <stdbool.h>
#include <stdint.h>

#include "libwhisperc.h"

struct tr_token {
    int id;
    const char *text; /* token bytes, possibly part of a UTF-8 character */
    float p;
    int64_t t0_ms, t1_ms; /* -1 without alignment */
    bool timestamp;       /* a <|t|> token */
};

struct tr_word {
    const char *text; /* leading space and merged punctuation kept */
    int64_t t0_ms, t1_ms;
    float p;
};

struct tr_segment {
    const char *text;
    int64_t t0_ms, t1_ms;
    int seek; /* its window's first mel frame in the input */
    float temperature, avg_logprob, compression_ratio, no_speech_prob;
    struct tr_token *tokens; /* owned */
    int n_tokens;
    struct tr_word *words; /* owned; NULL when word timestamps are off */
    int n_words;
    int speaker; /* with transcript.diarized: 0 or 1 (the louder channel), -1 neither */
};

struct transcript {
    const char *text, *language;
    float language_prob;
    double duration_s;
    bool has_words;              /* word timestamps were asked for (segments may still have 0) */
    bool diarized;               /* -di on a two-channel input: segments have speakers */
    struct tr_segment *segments; /* owned */
    int n_segments;
};

/* Copies the records of the state's last run (diarized when its segments have speakers).
 * Returns 0, or -1 when out of memory (tr then empty). The strings stay valid until the
 * state's next run or free. */
int cli_transcript_from_state(struct transcript *tr, const whisperc_state *st, bool has_words);
void cli_transcript_free(struct transcript *tr); /* arrays only; leaves tr empty */

/* whisper.cpp's label of a diarized segment's speaker: "(speaker 0)", "(speaker ?)", or with
 * id_only "0", "?". */
const char *cli_speaker_label(int speaker, bool id_only);

#endif /* WC_CLI_TRANSCRIPT_H */
