/*
 * simple.c — the smallest whisper-c program: transcribe one file, print its segments.
 *
 *   cc simple.c $(pkg-config --cflags --libs libwhisperc) -o simple
 *   ./simple models/ggml-base.bin samples/jfk.flac
 */
#include <stdio.h>

#include <libwhisperc.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL.bin AUDIO\n", argv[0]);
        return 2;
    }
    char err[512];
    whisperc_model *model = NULL;
    struct whisperc_model_params mp = whisperc_model_default_params();
    if (whisperc_model_load(argv[1], &mp, &model, err, sizeof err) != WHISPERC_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    whisperc_state *st = NULL;
    whisperc_status rc = whisperc_state_new(model, &st);
    if (rc != WHISPERC_OK) {
        fprintf(stderr, "cannot create a state: %s\n", whisperc_status_str(rc));
        whisperc_model_free(model);
        return 1;
    }
    struct whisperc_full_params fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    rc = whisperc_full_file(st, &fp, argv[2]);
    if (rc == WHISPERC_OK) {
        for (int i = 0; i < whisperc_n_segments(st); i++)
            printf("[%6.2f --> %6.2f] %s\n", whisperc_segment_t0_ms(st, i) / 1000.0,
                   whisperc_segment_t1_ms(st, i) / 1000.0, whisperc_segment_text(st, i));
    } else {
        fprintf(stderr, "%s: %s\n", whisperc_status_str(rc), whisperc_state_errmsg(st));
    }
    whisperc_state_free(st);
    whisperc_model_free(model);
    return rc == WHISPERC_OK ? 0 : 1;
}
