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

/* Host wall-clock milliseconds of each stage; every stage ends with a stream sync, so GPU
 * work is inside the stage that queued it. The *_dev_ms are the same stages on the stream:
 * from a timer mark queued before the stage's first op to one queued after its last
 * (backend.h timer_mark: CUDA events; the CPU twin reads the clock as ops return). They leave
 * out the host's time before the first op reaches the stream and after the last one ends;
 * gaps between a stage's ops (launch-bound work) are inside them. NaN when the backend has no
 * timer. */
struct wc_bench_times {
    double encode_ms; /* encoder_forward on the window (mel upload included) */
    double cross_ms;  /* cross-attention K/V of every decoder layer */
    double prompt_ms; /* the SOT sequence as one batch, and its first pick */
    double steps_ms;  /* n_steps decoder steps of n_seq sequences, each fed its greedy pick */
    double encode_dev_ms, cross_dev_ms, prompt_dev_ms;
    double steps_dev_ms; /* sum over the steps of the decoder forward's interval */
    double pick_dev_ms;  /* sum over the steps of logits_greedy's interval */
    double wall_ms;      /* host time from the encoder's first mark to the last step's sync */
    int n_prompt, n_steps, n_seq;
};

/* Runs the window: seeded uniform [-1, 1) log-Mel input, the prompt <|startoftranscript|>
 * (<|en|>) <|transcribe|> <|notimestamps|>, then n_tokens steps (fewer if the text context
 * ends) of n_seq sequences, each fed its own logits_greedy pick (no suppression: the argmax),
 * end-of-text included. n_threads <= 0: the state's. Returns a WHISPERC_* status (message in
 * whisperc_state_errmsg). */
whisperc_status wc_bench_window(whisperc_state *st, int n_threads, int n_tokens, int n_seq,
                                uint64_t seed, struct wc_bench_times *out);

/* The encoder over n_windows windows (seeded random log-Mel, as above): per_pass 1, one by
 * one (encoder_forward each, synced, as transcribe() does); per_pass > 1, as
 * whisperc_full_batch encodes them, in passes of up to per_pass windows (<=
 * encoder_pass_cap(); the state's encoder grows to that first). Stream times as above. */
struct wc_bench_encoder_times {
    double ms;     /* host wall time, all n_windows */
    double dev_ms; /* sum of the passes' stream intervals; NaN without a timer */
    int n_windows, per_pass;
};
whisperc_status wc_bench_encoder(whisperc_state *st, int n_threads, int n_windows, int per_pass,
                                 uint64_t seed, struct wc_bench_encoder_times *out);

/* n_tokens steps (fewer if the text context ends) of the batch decoder over n_lanes lanes
 * (decoder_batch, as whisperc_full_batch steps them), each lane's prompt as above over one
 * random window, each lane fed its own logits_greedy pick, after two warm-up steps (not
 * timed: a backend with step graphs records the step then). graph: the backend's
 * step_graph_state after the run (1 steps ran as graphs, 0 not, -1 the recording failed),
 * why: its one line. WHISPERC_NO_CUDA_GRAPH=1 times the same steps without graphs. */
struct wc_bench_batch_times {
    double steps_ms;     /* host wall time of the steps, each with its pick and sync */
    double steps_dev_ms; /* sum over the steps of the forward's and pick's stream interval */
    int n_steps, n_lanes;
    int graph;
    char graph_why[384];
};
whisperc_status wc_bench_batch_steps(whisperc_state *st, int n_lanes, int n_tokens, uint64_t seed,
                                     struct wc_bench_batch_times *out);

/* Batched throughput on a fixed amount of work (issue 4's large-v3 figure: random weights, a
 * fixed number of tokens a window): n_windows windows of seeded random log-Mel, n_lanes at a
 * time (<= 64), as whisperc_full_batch runs them: encoded in passes (encoder_pass_cap() where
 * the backend merges windows, else 2), each lane's cross-attention K/V and prompt (as
 * wc_bench_window's, after n_context tokens of previous text (<= n_text_ctx / 2 - 1) as a
 * long-form window's when > 0; the lanes' picks waited for once), then n_tokens batch-decoder steps
 * of every lane (fewer if the text context ends), each fed its logits_greedy argmax; after one
 * untimed warm-up wave of 2 steps (kernel loads, step graphs). Host wall clock per stage, each
 * ending with a sync. Leaves out the frontend: what reading and log-Mel cost is in
 * `whisper-c batch` runs. */
struct wc_bench_throughput_times {
    double encode_ms, prompt_ms, steps_ms, wall_ms;
    int n_windows, n_lanes, per_pass, n_waves;
    long n_steps;  /* batch steps, all waves */
    long n_tokens; /* tokens decoded, all lanes */
    int n_prompt;  /* a window's prompt tokens */
};
whisperc_status wc_bench_throughput(whisperc_state *st, int n_threads, int n_lanes, int n_windows,
                                    int n_tokens, int n_context, uint64_t seed,
                                    struct wc_bench_throughput_times *out);

/* The state's step graphs as backend.h step_graph_state says (1 in use, 0 not, -1 turned off by
 * a failure) and its one line in why ("none on the cpu backend" without graphs). */
int wc_bench_graphs(const whisperc_state *st, char *why, size_t why_size);

/* "cpu" or the CUDA device as the backend describes it: its cuDeviceGetName name first
 * ("NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)"). */
const char *wc_bench_device(const whisperc_model *m);

#endif /* WC_API_BENCH_H */
