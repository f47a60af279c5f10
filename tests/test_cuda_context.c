/*
 * test_cuda_context.c — every public call leaves its caller's thread with the CUDA context it
 * had (none, or a program's own), on the fake driver (tests/fakecuda, which
 * LD_LIBRARY_PATH puts first). The fake counts any call that needs a context made while the
 * library's is not current; its count must stay 0.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "libwhisperc.h"

static CUresult (*get_current)(CUcontext *);
static CUresult (*set_current)(CUcontext);
static CUresult (*create)(CUcontext *, unsigned int, CUdevice);
static CUresult (*destroy)(CUcontext);
static long (*violations)(void);

static CUcontext current(void) {
    CUcontext c = (CUcontext)(uintptr_t)1;
    get_current(&c);
    return c;
}

/* the context current in whisperc_full's progress callback (the library's, as the header
 * says) */
static void on_progress(whisperc_state *st, int percent, void *user) {
    (void)st, (void)percent;
    *(CUcontext *)user = current();
}

/* One model's life from a thread with `mine` current: load, a state, whisperc_full,
 * whisperc_full_batch, a call that fails on its arguments, the frees. */
static void calls_from(CUcontext mine, const char *model, const float *pcm, int n) {
    CHECK(set_current(mine) == CUDA_SUCCESS);
    struct whisperc_model_params mp = whisperc_model_default_params();
    mp.device = WHISPERC_DEVICE_CUDA;
    whisperc_model *m = NULL;
    char err[256] = "";
    CHECK(whisperc_model_load(model, &mp, &m, err, sizeof err) == WHISPERC_OK);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK(current() == mine);
    whisperc_state *st = NULL;
    CHECK(whisperc_state_new(m, &st) == WHISPERC_OK);
    CHECK(current() == mine);
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.n_threads = 1;
    p.no_timestamps = true;
    p.language = "en";
    CUcontext in_callback = mine;
    p.progress_fn = on_progress;
    p.progress_user_data = &in_callback;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(current() == mine);
    CHECK(in_callback != mine && in_callback != NULL);
    p.progress_fn = NULL;
    const float *const in[2] = {pcm, pcm};
    const int n_in[2] = {n, n / 2};
    p.batch_size = 2;
    CHECK(whisperc_full_batch(st, &p, in, n_in, 2) == WHISPERC_OK);
    CHECK(current() == mine);
    CHECK(whisperc_full(st, &p, pcm, 0) != WHISPERC_OK); /* no samples */
    CHECK(current() == mine);
    whisperc_state_free(st);
    CHECK(current() == mine);
    whisperc_model_free(m);
    CHECK(current() == mine);
}

int main(void) {
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cu || !dlsym(cu, "fakecuda_violations")) {
        printf("SKIP: the fake driver is not first on LD_LIBRARY_PATH\n");
        return TEST_SKIP;
    }
    *(void **)&get_current = dlsym(cu, "cuCtxGetCurrent");
    *(void **)&set_current = dlsym(cu, "cuCtxSetCurrent");
    *(void **)&create = dlsym(cu, "cuCtxCreate_v2");
    *(void **)&destroy = dlsym(cu, "cuCtxDestroy_v2");
    *(void **)&violations = dlsym(cu, "fakecuda_violations");
    char model[4096];
    snprintf(model, sizeof model, "%s", shared_path_or_skip("models/ggml-tiny.en.bin"));
    float *pcm = NULL;
    int n = 0;
    char err[256];
    if (whisperc_load_audio(shared_path_or_skip("audio/jfk/jfk.wav"), &pcm, &n, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    calls_from(NULL, model, pcm, n); /* a thread with no context */
    CUcontext own = NULL;            /* a program's own context, as another device's would be */
    CHECK(create(&own, 0, 0) == CUDA_SUCCESS && own);
    calls_from(own, model, pcm, n);
    CHECK(destroy(own) == CUDA_SUCCESS);
    CHECK(violations() == 0);
    free(pcm);
    printf("%s\n", test_failures ? "NOT OK" : "OK");
    return TEST_RESULT();
}
