/*
 * make_model_seeds.c — small model seeds for fuzz_model, written by tests/ggml_synth.c: every
 * tensor of a Whisper model at n_state 1 or 2, 1 layer, n_audio_ctx and n_text_ctx 2 (about
 * 0.5 MB each, nearly all of it the fixed-size mel filters and 50k-token vocabulary), .en and
 * multilingual, f16 and f32, 80 and 128 mels, and each of ggml_synth's corruptions. The real
 * models are 78 MB and up; with these every mutation reaches the tensor table cheaply. Also a
 * Silero VAD file of zero weights (src/frontend/silero_vad.c reads every input too).
 *
 *   make_model_seeds OUT_DIR
 */
#include <stdio.h>

#include "ggml_synth.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_model_seeds OUT_DIR\n");
        return 2;
    }
    struct ggml_synth_opts base = ggml_synth_default_opts();
    base.n_state = 2;
    base.n_head = 1;
    base.n_layer = 1;
    base.n_audio_ctx = 2;
    base.n_text_ctx = 2;
    struct {
        const char *name;
        int multilingual, f16, n_mels, n_state;
    } shapes[] = {{"en-f16", 0, 1, 80, 2}, {"ml-f32", 1, 0, 80, 1}, {"ml-128mel", 1, 1, 128, 2}};
    char path[4096];
    int n = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        struct ggml_synth_opts o = base;
        o.multilingual = shapes[i].multilingual;
        o.f16 = shapes[i].f16;
        o.n_mels = shapes[i].n_mels;
        o.n_state = shapes[i].n_state;
        snprintf(path, sizeof path, "%s/synth-%s.bin", argv[1], shapes[i].name);
        if (ggml_synth_write(path, &o) != 0) {
            perror(path);
            return 1;
        }
        n++;
    }
    for (int c = 1; c < GGML_SYNTH_N_CORRUPTIONS; c++) {
        struct ggml_synth_opts o = base;
        o.corrupt = (enum ggml_synth_corruption)c;
        snprintf(path, sizeof path, "%s/synth-%s.bin", argv[1],
                 ggml_synth_corruption_name(o.corrupt));
        if (ggml_synth_write(path, &o) != 0) {
            perror(path);
            return 1;
        }
        n++;
    }
    snprintf(path, sizeof path, "%s/silero-zeros.bin", argv[1]);
    if (ggml_synth_write_silero(path) != 0) {
        perror(path);
        return 1;
    }
    n++;
    printf("%d model seeds written to %s\n", n, argv[1]);
    return 0;
}
