/*
 * test_threads.c — states on one shared model, run by four threads at once, give the
 * transcripts of one thread running them in turn. Built under ThreadSanitizer by .ci/run, it
 * is the race test of the model/state split (shared weights, FFTW planner lock, CPU pool).
 *
 *   test_threads        (model: ggml-tiny.en.bin from the shared material; exit 77 without it)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "libwhisperc.h"

/* Short clips (each is one encoder window whatever its length), in every input path: 44.1 kHz
 * stereo FLAC (resample + downmix), 16 kHz FLAC, 22.05 kHz FLAC, 16 kHz wav. */
#define N_FILES 6
static const char *const rel[N_FILES] = {
    "audio/jfk/jfk.flac",
    "audio/librispeech/test-clean/1089/134686/1089-134686-0001.flac",
    "audio/librispeech/test-clean/1089/134691/1089-134691-0000.flac",
    "audio/ljspeech-dev/wavs/LJ001-0002.flac",
    "audio/ljspeech-dev/wavs/LJ001-0008.flac",
    "audio/librivox/sense_and_sensibility_01_austen_64kb-0880.wav",
};

struct shared_job {
    const whisperc_model *m;
    const char *files[N_FILES];
    /* written by the worker that took file i (next hands each i to one worker only) */
    whisperc_status rc[N_FILES];
    char *text[N_FILES]; /* owned */
    atomic_int next;
};

static void *worker(void *arg) {
    struct shared_job *j = arg;
    whisperc_state *st = NULL;
    whisperc_status rc_new = whisperc_state_new(j->m, &st);
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.n_threads = 1;
    for (int i; (i = atomic_fetch_add(&j->next, 1)) < N_FILES;) {
        j->rc[i] = rc_new != WHISPERC_OK ? rc_new : whisperc_full_file(st, &p, j->files[i]);
        if (j->rc[i] == WHISPERC_OK)
            j->text[i] = strdup(whisperc_full_text(st));
    }
    whisperc_state_free(st);
    return NULL;
}

static void run_files(struct shared_job *j, int n_threads) {
    atomic_init(&j->next, 0);
    pthread_t tid[8];
    for (int i = 0; i < n_threads; i++)
        CHECK(pthread_create(&tid[i], NULL, worker, j) == 0);
    for (int i = 0; i < n_threads; i++)
        pthread_join(tid[i], NULL);
}

int main(void) {
    char *model_path = strdup(shared_path_or_skip("models/ggml-tiny.en.bin"));
    whisperc_model *m = NULL;
    char err[256];
    struct whisperc_model_params mp = whisperc_model_default_params();
    mp.device = WHISPERC_DEVICE_CPU;
    if (whisperc_model_load(model_path, &mp, &m, err, sizeof err) != WHISPERC_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct shared_job seq = {.m = m}, par = {.m = m};
    for (int i = 0; i < N_FILES; i++)
        seq.files[i] = par.files[i] = strdup(shared_path_or_skip(rel[i]));
    run_files(&seq, 1);
    run_files(&par, 4);
    for (int i = 0; i < N_FILES; i++) {
        CHECK(seq.rc[i] == WHISPERC_OK && par.rc[i] == WHISPERC_OK);
        CHECK(seq.text[i] && par.text[i] && strcmp(seq.text[i], par.text[i]) == 0);
        if (seq.text[i] && par.text[i] && strcmp(seq.text[i], par.text[i]) != 0)
            fprintf(stderr, "%s:\n  1 thread:  %s\n  4 threads: %s\n", rel[i], seq.text[i],
                    par.text[i]);
        free(seq.text[i]);
        free(par.text[i]);
        free((char *)seq.files[i]);
    }
    whisperc_model_free(m);
    free(model_path);
    printf("4 threads on one model: %d files, same transcripts as 1 thread: %s\n", N_FILES,
           test_failures ? "FAILED" : "OK");
    return TEST_RESULT();
}
