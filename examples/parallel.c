/*
 * parallel.c — N threads transcribing files with one shared model.
 *
 *   cc parallel.c $(pkg-config --cflags --libs libwhisperc) -lpthread -o parallel
 *   ./parallel models/ggml-base.bin 4 a.wav b.flac c.ogg ...
 *
 * The model is loaded once and shared read-only; each thread owns a state (its caches and
 * results) and takes the next file from a shared counter. Transcripts are printed in input
 * order, one line per file: "PATH<TAB>TEXT", or "PATH<TAB>ERROR: message".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libwhisperc.h>

struct job {
    const whisperc_model *model;
    char **files;
    char **results; /* results[i]: malloc'd line for files[i] */
    int n_files;
    int threads_per_worker;
    atomic_int next;
};

static char *dup_line(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s", a, b);
    return s;
}

static void *worker(void *arg) {
    struct job *job = arg;
    whisperc_state *st = NULL;
    whisperc_status rc = whisperc_state_new(job->model, &st);
    struct whisperc_full_params fp = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    fp.n_threads = job->threads_per_worker;
    for (int i; (i = atomic_fetch_add(&job->next, 1)) < job->n_files;) {
        if (rc == WHISPERC_OK && whisperc_full_file(st, &fp, job->files[i]) == WHISPERC_OK)
            job->results[i] = dup_line("", whisperc_full_text(st));
        else
            job->results[i] =
                dup_line("ERROR: ", st ? whisperc_state_errmsg(st) : whisperc_status_str(rc));
    }
    whisperc_state_free(st);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL.bin N_THREADS AUDIO...\n", argv[0]);
        return 2;
    }
    int n_workers = atoi(argv[2]);
    if (n_workers < 1 || n_workers > 64) {
        fprintf(stderr, "N_THREADS must be 1..64\n");
        return 2;
    }
    char err[512];
    whisperc_model *model = NULL;
    struct whisperc_model_params mp = whisperc_model_default_params();
    if (whisperc_model_load(argv[1], &mp, &model, err, sizeof err) != WHISPERC_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct job job = {.model = model, .files = argv + 3, .n_files = argc - 3};
    job.results = calloc((size_t)job.n_files, sizeof *job.results);
    /* Split the cores between the workers: each state runs its own CPU thread pool. */
    int per = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY).n_threads / n_workers;
    job.threads_per_worker = per < 1 ? 1 : per;
    atomic_init(&job.next, 0);
    pthread_t tid[64];
    int n_started = 0;
    for (; n_started < n_workers; n_started++)
        if (pthread_create(&tid[n_started], NULL, worker, &job) != 0)
            break;
    if (n_started == 0)
        worker(&job); /* no threads at all: do the work here */
    for (int i = 0; i < n_started; i++)
        pthread_join(tid[i], NULL);
    int failed = 0;
    for (int i = 0; i < job.n_files; i++) {
        const char *r = job.results[i] ? job.results[i] : "ERROR: out of memory";
        failed |= strncmp(r, "ERROR: ", 7) == 0;
        printf("%s\t%s\n", job.files[i], r);
        free(job.results[i]);
    }
    free(job.results);
    whisperc_model_free(model);
    return failed;
}
