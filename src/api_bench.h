/*
 * api_bench.h — a fixed amount of work for `whisper-c bench --synthetic`: one 30 s window
 * through the encoder and a decoder that never stops early, so that every model size, real or
 * from tools/make-random-model, and every backend is timed on the same work. Not part of the
 * public API (the CLI links the internal library).
 */
#ifndef WC_API_BENCH_H
#define WC_API_BENCH_H

#include <stdint.h>

#include "libwhisperc.h"

/* Wall-clock milliseconds of each stage; every stage ends with a stream sync or a download of
 * logits, so GPU work is inside the stage that queued it. */
struct wc_bench_times {
    double encode_ms; /* encoder_forward on the window */
    double cross_ms;  /* cross-attention K/V of every decoder layer */
    double prompt_ms; /* the SOT sequence as one batch */
    double steps_ms;  /* n_steps decoder steps of n_seq sequences, each fed its argmax as
                       * greedy decoding picks it (the backend's logits_greedy) */
    int n_prompt, n_steps, n_seq;
};

/* Runs the window: seeded uniform [-1, 1) log-Mel input, the prompt <|startoftranscript|>
 * (<|en|>) <|transcribe|> <|notimestamps|>, then n_tokens steps (fewer if the text context
 * ends) of n_seq sequences, each fed its own argmax, end-of-text included. n_threads <= 0:
 * the state's. Returns a WHISPERC_* status (message in whisperc_state_errmsg). */
whisperc_status wc_bench_window(whisperc_state *st, int n_threads, int n_tokens, int n_seq,
                                uint64_t seed, struct wc_bench_times *out);

/* The encoder alone over n_windows windows (seeded random log-Mel, as above): one by one
 * (encoder_forward each), then as whisperc_full_batch encodes them, in passes of up to
 * ENCODER_MAX_WINDOWS windows (the state's encoder grows to that first). */
struct wc_bench_encoder_times {
    double alone_ms; /* all n_windows, one at a time */
    double batch_ms; /* all n_windows, in passes of up to n_per_pass */
    int n_windows, n_per_pass;
};
whisperc_status wc_bench_encoder(whisperc_state *st, int n_threads, int n_windows, uint64_t seed,
                                 struct wc_bench_encoder_times *out);

/* "cpu" or the CUDA device as the backend describes it ("NVIDIA H100 ... (sm_90, 79.1 GiB)"). */
const char *wc_bench_device(const whisperc_model *m);

#endif /* WC_API_BENCH_H */
