/*
 * write_synth_model.c — writes a random-weight ggml model (tests/ggml_synth.h) for the CLI
 * tests that need a model file but not a real one: `write_synth_model PATH` gives n_state 64,
 * 2 heads, 2+2 layers, a real-sized vocabulary, and Whisper's context sizes (1500 audio, 448
 * text), so that whisper-c bench --synthetic runs its full-length window in well under a
 * second.
 */
#include <stdio.h>

#include "ggml_synth.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: write_synth_model PATH\n");
        return 2;
    }
    struct ggml_synth_opts o = ggml_synth_default_opts();
    o.n_audio_ctx = 1500;
    o.n_text_ctx = 448;
    if (ggml_synth_write(argv[1], &o) != 0) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
