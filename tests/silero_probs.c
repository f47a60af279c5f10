/*
 * silero_probs.c — Silero VAD's speech probabilities of audio files, one per 512 samples, with
 * whisper-c's implementation (src/frontend/silero_vad.c), for tests/test_silero_vad.py.
 *
 * usage: silero_probs [-t N] MODEL FILE...   (N threads, default 1)
 * prints per file a line "# FILE N" and then N probabilities, one a line (%.8g); exit 1 with
 * the error otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/audio.h"
#include "frontend/silero_vad.h"

int main(int argc, char **argv) {
    int n_threads = 1;
    if (argc > 2 && strcmp(argv[1], "-t") == 0) {
        n_threads = atoi(argv[2]);
        argc -= 2, argv += 2;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: silero_probs [-t N] MODEL FILE...\n");
        return 2;
    }
    char err[512];
    struct silero_vad *m = NULL;
    if (silero_vad_load(argv[1], &m, err, sizeof err) != 0) {
        printf("error: %s\n", err);
        return 1;
    }
    int rc = 0;
    for (int i = 2; i < argc && !rc; i++) {
        float *pcm = NULL, *p = NULL;
        size_t n = 0, n_p = 0;
        rc = audio_load(argv[i], &pcm, &n, err, sizeof err) ||
             silero_vad_probs(m, pcm, n, n_threads, &p, &n_p, err, sizeof err);
        if (rc) {
            printf("error: %s\n", err);
        } else {
            printf("# %s %zu\n", argv[i], n_p);
            for (size_t k = 0; k < n_p; k++)
                printf("%.8g\n", p[k]);
        }
        free(pcm);
        free(p);
    }
    silero_vad_free(m);
    return rc ? 1 : 0;
}
