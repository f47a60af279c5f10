/*
 * test_api.c — the public API (include/libwhisperc.h) as an embedder uses it: every entry
 * point given NULL, out-of-range or inconsistent arguments returns an error and never crashes;
 * progress and new-segment callbacks; abort between decoder steps; params from an older header.
 * Threads sharing one model: test_threads.c.
 *
 *   test_api            (model: ggml-tiny.en.bin from the shared material; exit 77 without it)
 *   test_api sanitized  (CI's ASan + UBSan build, 3-5x slower): test_offset's offset to the end
 *                       left out (35 s there), its offset with a duration runs the same code
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ggml_synth.h"
#include "libwhisperc.h"

static void test_null_args(const char *model_path) {
    char err[256];
    whisperc_model *m = (whisperc_model *)1;
    CHECK(whisperc_model_load(NULL, NULL, &m, err, sizeof err) == WHISPERC_ERR_INVALID_ARG);
    CHECK(m == NULL);
    CHECK(whisperc_model_load(model_path, NULL, NULL, NULL, 0) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_model_load("/nonexistent/ggml.bin", NULL, &m, err, sizeof err) ==
          WHISPERC_ERR_IO);
    CHECK(m == NULL && strstr(err, "/nonexistent/ggml.bin"));
    CHECK(whisperc_model_load(shared_path("golden/tiny.en/dev.jsonl"), NULL, &m, NULL, 0) ==
          WHISPERC_ERR_MODEL_FORMAT);
    whisperc_model_free(NULL);
    CHECK(whisperc_model_type(NULL) == NULL);
    CHECK(!whisperc_model_is_multilingual(NULL));
    CHECK(whisperc_model_n_vocab(NULL) == 0 && whisperc_model_n_mels(NULL) == 0);
    struct whisperc_model_dims dims = {.size = sizeof dims};
    CHECK(whisperc_model_dims(NULL, &dims) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_model_backend(NULL) == NULL);

    whisperc_state *st = (whisperc_state *)1;
    CHECK(whisperc_state_new(NULL, &st) == WHISPERC_ERR_INVALID_ARG && st == NULL);
    whisperc_state_free(NULL);
    CHECK(whisperc_state_errmsg(NULL) != NULL);

    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    float pcm[16] = {0};
    CHECK(whisperc_full(NULL, &p, pcm, 16) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_full_file(NULL, &p, "x.wav") == WHISPERC_ERR_INVALID_ARG);
    float *audio = (float *)1;
    int n = 5;
    CHECK(whisperc_load_audio(NULL, &audio, &n, err, sizeof err) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_load_audio("x.wav", NULL, &n, NULL, 0) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_load_audio("/nonexistent.wav", &audio, &n, err, sizeof err) == WHISPERC_ERR_IO &&
          audio == NULL && n == 0);

    CHECK(whisperc_n_segments(NULL) == 0 && whisperc_segment_text(NULL, 0) == NULL);
    CHECK(whisperc_segment_t0_ms(NULL, 0) == 0 && whisperc_segment_t1_ms(NULL, 0) == 0);
    CHECK(whisperc_segment_n_tokens(NULL, 0) == 0 && whisperc_segment_token_id(NULL, 0, 0) == -1);
    CHECK(whisperc_segment_token_p(NULL, 0, 0) == 0.0f);
    CHECK(whisperc_token_text(NULL, 0) == NULL && whisperc_token_timestamp_begin(NULL) == -1);
    CHECK(whisperc_full_language(NULL) == NULL && whisperc_full_text(NULL) == NULL);
    struct whisperc_timings t = {.size = sizeof t};
    CHECK(whisperc_state_timings(NULL, &t) == WHISPERC_ERR_INVALID_ARG);

    CHECK(whisperc_status_str((whisperc_status)999) != NULL);
    CHECK(strcmp(whisperc_status_str(WHISPERC_ERR_DEVICE), "WHISPERC_ERR_DEVICE") == 0);
    CHECK(whisperc_lang_code(-1) == NULL && whisperc_lang_code(whisperc_lang_count()) == NULL);
    CHECK(whisperc_lang_name(1000) == NULL);
    CHECK(whisperc_lang_index(NULL) == -1 && whisperc_lang_index("klingon") == -1);
    CHECK(whisperc_lang_index("de") == whisperc_lang_index("german"));
    CHECK(strcmp(whisperc_version(), "") != 0);
    /* the BLAS kernels are named; this process started with OPENBLAS_CORETYPE set wherever
     * there was advice (common.c), and a variable already set is never second-guessed */
    CHECK(whisperc_blas_core() != NULL && whisperc_blas_core()[0] != '\0');
    CHECK(whisperc_blas_coretype_advice() == NULL);
}

/* A state with no result yet, or after a failed run, answers every accessor with NULL / 0. */
static void check_empty_results(const whisperc_state *st) {
    CHECK(whisperc_n_segments(st) == 0);
    CHECK(whisperc_segment_text(st, 0) == NULL && whisperc_segment_text(st, -1) == NULL);
    CHECK(whisperc_segment_n_tokens(st, 0) == 0);
    CHECK(whisperc_full_text(st) == NULL || whisperc_full_text(st)[0] == '\0');
}

/* Every parameter out of range is refused by name, and the state stays usable. */
static void test_bad_params(whisperc_state *st, const float *pcm, int n) {
    check_empty_results(st);
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    CHECK(whisperc_full(st, NULL, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_full(st, &p, NULL, n) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_full(st, &p, pcm, 0) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_full(st, &p, pcm, -3) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_full_file(st, &p, NULL) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_full_file(st, &p, "/nonexistent.wav") == WHISPERC_ERR_IO);
    CHECK(strstr(whisperc_state_errmsg(st), "/nonexistent.wav") != NULL);
    CHECK(whisperc_full_file(st, &p, shared_path("golden/tiny.en/dev.jsonl")) ==
          WHISPERC_ERR_AUDIO_FORMAT);

    struct whisperc_full_params q;
#define REFUSED(field_change, want)                                                                \
    do {                                                                                           \
        q = p;                                                                                     \
        field_change;                                                                              \
        whisperc_status rc_ = whisperc_full(st, &q, pcm, n);                                       \
        if (rc_ != (want))                                                                         \
            fprintf(stderr, "%s: got %s\n", #field_change, whisperc_status_str(rc_));              \
        CHECK(rc_ == (want) && whisperc_state_errmsg(st)[0] != '\0');                              \
        check_empty_results(st);                                                                   \
    } while (0)
    REFUSED(q.size = 0, WHISPERC_ERR_INVALID_ARG);
    REFUSED(q.n_threads = 0, WHISPERC_ERR_INVALID_ARG);
    REFUSED(q.n_threads = 100000, WHISPERC_ERR_INVALID_ARG);
    REFUSED(q.n_temperatures = 0, WHISPERC_ERR_INVALID_ARG);
    REFUSED(q.n_temperatures = WHISPERC_MAX_TEMPERATURES + 1, WHISPERC_ERR_INVALID_ARG);
    REFUSED(q.temperatures[0] = NAN, WHISPERC_ERR_INVALID_ARG);
    REFUSED(q.temperatures[1] = -1.0f, WHISPERC_ERR_INVALID_ARG);
    REFUSED(q.sample_len = -1, WHISPERC_ERR_INVALID_ARG);
    REFUSED(q.sample_len = 100000, WHISPERC_ERR_INVALID_ARG);
    REFUSED(q.language = "klingon", WHISPERC_ERR_INVALID_ARG);
    REFUSED(q.language = "de", WHISPERC_ERR_UNSUPPORTED); /* English-only model */
    REFUSED(q.translate = true, WHISPERC_ERR_UNSUPPORTED);
    REFUSED(q.strategy = (whisperc_strategy)42, WHISPERC_ERR_INVALID_ARG);
#undef REFUSED
    float *bad = malloc((size_t)n * sizeof *bad);
    memcpy(bad, pcm, (size_t)n * sizeof *bad);
    bad[n / 2] = NAN;
    CHECK(whisperc_full(st, &p, bad, n) == WHISPERC_ERR_AUDIO_FORMAT);
    bad[n / 2] = INFINITY;
    CHECK(whisperc_full(st, &p, bad, n) == WHISPERC_ERR_AUDIO_FORMAT);
    free(bad);
    check_empty_results(st);
}

struct progress_log {
    int n_calls, last, monotonic, n_new_total;
};
static void on_progress(whisperc_state *st, int percent, void *user) {
    (void)st;
    struct progress_log *pl = user;
    if (percent < pl->last || percent < 0 || percent > 100)
        pl->monotonic = 0;
    pl->last = percent;
    pl->n_calls++;
}
static void on_segment(whisperc_state *st, int n_new, void *user) {
    struct progress_log *pl = user;
    CHECK(n_new > 0 && n_new <= whisperc_n_segments(st));
    pl->n_new_total += n_new;
}
/* {calls, the call that returns true (0: none)} */
static bool abort_at_call(void *user) {
    int *c = user;
    return ++c[0] == c[1];
}

/* jfk then ten LJSpeech clips, 78 s: three windows. Distinct speech, as jfk repeated gives
 * repetitive text that falls back through every temperature (five times the decoding work). */
static float *long_audio(const float *pcm, int n, int *n_out) {
    size_t len = (size_t)n;
    float *a = malloc(len * sizeof *a);
    memcpy(a, pcm, len * sizeof *a);
    for (int i = 1; i <= 10; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "audio/ljspeech-dev/wavs/LJ001-%04d.flac", i);
        float *clip = NULL;
        int n_clip = 0;
        CHECK(whisperc_load_audio(shared_path_or_skip(rel), &clip, &n_clip, NULL, 0) ==
              WHISPERC_OK);
        float *grown = realloc(a, (len + (size_t)n_clip) * sizeof *a);
        CHECK(grown != NULL);
        if (!grown)
            break;
        a = grown;
        memcpy(a + len, clip, (size_t)n_clip * sizeof *a);
        len += (size_t)n_clip;
        free(clip);
    }
    *n_out = (int)len;
    return a;
}

static void test_callbacks(whisperc_state *st, const float *pcm, int n) {
    int n_long;
    float *a = long_audio(pcm, n, &n_long);
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    struct progress_log pl = {.monotonic = 1};
    p.progress_fn = on_progress;
    p.progress_user_data = &pl;
    p.new_segment_fn = on_segment;
    p.new_segment_user_data = &pl;
    CHECK(whisperc_full(st, &p, a, n_long) == WHISPERC_OK);
    CHECK(pl.n_calls >= 3 && pl.last == 100 && pl.monotonic);
    CHECK(pl.n_new_total == whisperc_n_segments(st) && pl.n_new_total > 3);
    struct whisperc_timings t = {.size = sizeof t};
    CHECK(whisperc_state_timings(st, &t) == WHISPERC_OK && t.n_windows >= 3);

    /* the abort callback is asked before every decoder step, not only after each window: the
     * fifth call ends the run in its first window */
    int calls[2] = {0, 0};
    p.abort_fn = abort_at_call;
    p.abort_user_data = calls;
    CHECK(whisperc_full(st, &p, a, n_long) == WHISPERC_OK);
    CHECK(whisperc_state_timings(st, &t) == WHISPERC_OK);
    CHECK(calls[0] > t.n_decode_tokens / 2 && calls[0] > 3 * t.n_windows);
    calls[0] = 0, calls[1] = 5;
    pl = (struct progress_log){.monotonic = 1};
    CHECK(whisperc_full(st, &p, a, n_long) == WHISPERC_ERR_ABORTED);
    CHECK(whisperc_state_timings(st, &t) == WHISPERC_OK);
    CHECK(t.n_windows == 1 && calls[0] == 5 && pl.n_calls == 0);
    CHECK(strstr(whisperc_state_errmsg(st), "aborted") != NULL);
    check_empty_results(st);
    free(a);
}

static void note_progress(whisperc_state *st, int percent, void *user) {
    (void)st;
    *(int *)user = percent;
}

/* whisperc_detect_language leaves the last transcription's results as they were (it is no
 * whisperc_full*): a random-weight multilingual model of tiny dimensions, real window size. */
/* A model whose encoder takes fewer than 3000 frames (n_audio_ctx below 1500) loads, but
 * transcription, which cuts 30 s windows, refuses it: its windows' ends were never encoded, and
 * the alignment read past its rows. */
/* A state of a synthetic model of options o on the CPU (*m its model); NULL, checked, when
 * either cannot be made. */
static whisperc_state *synth_state(const struct ggml_synth_opts *o, whisperc_model **m) {
    char path[] = "/tmp/wc_test_api_synth_XXXXXX";
    CHECK(ggml_synth_write_temp(path, o) == 0);
    struct whisperc_model_params mp = whisperc_model_default_params();
    mp.device = WHISPERC_DEVICE_CPU;
    whisperc_state *st = NULL;
    *m = NULL;
    CHECK(whisperc_model_load(path, &mp, m, NULL, 0) == WHISPERC_OK);
    unlink(path);
    CHECK(*m && whisperc_state_new(*m, &st) == WHISPERC_OK);
    return st;
}

static void test_short_audio_ctx(const float *pcm, int n) {
    struct ggml_synth_opts o = ggml_synth_default_opts(); /* n_audio_ctx 32 */
    whisperc_model *m = NULL;
    whisperc_state *st = synth_state(&o, &m);
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.word_timestamps = true;
    CHECK(st && whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_UNSUPPORTED &&
          strstr(whisperc_state_errmsg(st), "30 s windows"));
    printf("n_audio_ctx 32: %s\n", st ? whisperc_state_errmsg(st) : "(no state)");
    whisperc_state_free(st);
    whisperc_model_free(m);
}

static void test_detect_keeps_results(const float *pcm, int n) {
    struct ggml_synth_opts o = ggml_synth_default_opts();
    o.multilingual = 1;
    o.n_audio_ctx = 1500;
    o.n_text_ctx = 448;
    whisperc_model *m = NULL;
    whisperc_state *st = synth_state(&o, &m);
    if (!st) {
        whisperc_model_free(m);
        return;
    }
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.language = "de";
    p.n_temperatures = 1;
    p.sample_len = 8;
    int n2 = n < 2 * 16000 ? n : 2 * 16000;
    CHECK(whisperc_full(st, &p, pcm, n2) == WHISPERC_OK);
    const char *text = whisperc_full_text(st);
    char *kept = text ? strdup(text) : NULL;
    int ns = whisperc_n_segments(st);
    float probs[128] = {0};
    int lang = -1;
    CHECK(whisperc_detect_language(st, &p, pcm, n2, probs, 128, &lang) == WHISPERC_OK);
    CHECK(lang >= 0 && probs[lang] > 0.0f);
    p.language = "xx"; /* ignored by detection */
    CHECK(whisperc_detect_language(st, &p, pcm, n2, NULL, 0, &lang) == WHISPERC_OK);
    p.language = "de";
    CHECK(whisperc_full_text(st) == text && kept && strcmp(text, kept) == 0);
    CHECK(whisperc_n_segments(st) == ns && strcmp(whisperc_full_language(st), "de") == 0);
    /* a failed detection leaves them too */
    CHECK(whisperc_detect_language(st, &p, pcm, 0, probs, 128, &lang) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_full_text(st) == text && whisperc_n_segments(st) == ns);
    free(kept);

    /* under 10 ms of audio after language detection: no window, progress 100 all the same */
    int last = -1;
    p.language = NULL;
    p.progress_fn = note_progress;
    p.progress_user_data = &last;
    CHECK(whisperc_full(st, &p, pcm, 100) == WHISPERC_OK && last == 100);
    /* no speech found by vad where the language was to be detected: none was */
    float *silence = calloc(16000, sizeof *silence);
    p.progress_fn = NULL;
    p.vad = true;
    CHECK(silence && whisperc_full(st, &p, silence, 16000) == WHISPERC_OK);
    CHECK(whisperc_n_segments(st) == 0 && strcmp(whisperc_full_language(st), "en") == 0 &&
          whisperc_full_language_prob(st) == 0.0f);
    free(silence);
    whisperc_state_free(st);
    whisperc_model_free(m);
}

/* A caller built against an older header passes a shorter struct: the rest are defaults. */
static void test_old_params(whisperc_state *st, const float *pcm, int n, const char *want) {
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.size = offsetof(struct whisperc_full_params, seed);
    p.new_segment_fn = (whisperc_new_segment_fn)(uintptr_t)1; /* beyond size: must be ignored */
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(strcmp(whisperc_full_text(st), want) == 0);
    struct whisperc_timings t = {.size = offsetof(struct whisperc_timings, decode_ms)};
    t.decode_ms = -7.0; /* beyond size: must stay untouched */
    CHECK(whisperc_state_timings(st, &t) == WHISPERC_OK && t.decode_ms == -7.0);
    CHECK(t.mel_ms > 0.0);

    /* The defaults into an older caller's shorter struct: no byte written past its size */
    struct whisperc_full_params q;
    memset(&q, 0xab, sizeof q);
    size_t old = offsetof(struct whisperc_full_params, seed);
    whisperc_full_params_init(&q, old, WHISPERC_SAMPLING_BEAM_SEARCH);
    CHECK(q.size == old && q.beam_size == 5 && q.best_of == 5 && q.temperatures[1] == 0.2f);
    const unsigned char *past = (const unsigned char *)&q + old;
    for (size_t i = 0; i < sizeof q - old; i++)
        CHECK(past[i] == 0xab);
    struct whisperc_model_params mq;
    memset(&mq, 0xab, sizeof mq);
    whisperc_model_params_init(&mq, offsetof(struct whisperc_model_params, max_memory_bytes));
    CHECK(mq.size == offsetof(struct whisperc_model_params, max_memory_bytes) &&
          mq.device == WHISPERC_DEVICE_AUTO && mq.log_fn == NULL);
    CHECK(((const unsigned char *)&mq.max_memory_bytes)[0] == 0xab);
    /* ... and a newer caller's longer one: the fields this library lacks are zero, the size
     * says which it knows */
    struct {
        struct whisperc_full_params p;
        unsigned char later[24];
    } newer;
    memset(&newer, 0xab, sizeof newer);
    whisperc_full_params_init(&newer.p, sizeof newer, WHISPERC_SAMPLING_GREEDY);
    CHECK(newer.p.size == sizeof newer.p && newer.p.best_of == 1);
    for (size_t i = 0; i < sizeof newer.later; i++)
        CHECK(newer.later[i] == 0);
}

/* params.diarize: jfk's first 7.6 s on the left channel of a WAV, the rest on the right; its
 * segments' speakers through whisperc_full_file, unknown (-2) for every other call. */
static void test_diarize(whisperc_state *st, const float *pcm, int n) {
    int16_t *x = calloc(2 * (size_t)n, sizeof *x);
    for (int i = 0; x && i < n; i++)
        x[2 * i + (i >= 7.6 * 16000)] =
            (int16_t)lrintf(fmaxf(-1.0f, fminf(pcm[i], 32767.0f / 32768)) * 32768);
    size_t size = 0;
    unsigned char *wav = x ? test_wav16(x, (uint32_t)n, 2, 16000, &size) : NULL;
    char path[] = "/tmp/wc_test_api_stereo_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && wav && write(fd, wav, size) == (ssize_t)size);
    if (fd >= 0)
        close(fd);
    free(wav);
    free(x);
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.diarize = true;
    CHECK(whisperc_full_file(st, &p, path) == WHISPERC_OK);
    int ns = whisperc_n_segments(st), first = whisperc_segment_speaker(st, 0),
        last = whisperc_segment_speaker(st, ns - 1);
    printf("diarize: %d segments, speakers %d ... %d\n", ns, first, last);
    CHECK(ns >= 2 && first == 0 && last == 1);
    CHECK(whisperc_segment_speaker(st, ns) == -2 && whisperc_segment_speaker(st, -1) == -2 &&
          whisperc_segment_speaker(NULL, 0) == -2);
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK && whisperc_segment_speaker(st, 0) == -2);
    p.diarize = false;
    CHECK(whisperc_full_file(st, &p, path) == WHISPERC_OK && whisperc_segment_speaker(st, 0) == -2);
    unlink(path);
    /* a file that cannot be read leaves neither results nor the last call's timings */
    struct whisperc_timings t = {.size = sizeof t};
    CHECK(whisperc_full_file(st, &p, path) == WHISPERC_ERR_IO && whisperc_n_segments(st) == 0);
    CHECK(whisperc_state_timings(st, &t) == WHISPERC_OK && t.decode_ms == 0.0 &&
          t.audio_seconds == 0.0 && t.n_windows == 0);
}

/* Whether no token of the result has one of the texts bad[n_bad]. */
static bool tokens_avoid(whisperc_state *st, const char *const *bad, int n_bad) {
    for (int i = 0; i < whisperc_n_segments(st); i++)
        for (int j = 0; j < whisperc_segment_n_tokens(st, i); j++) {
            int id = whisperc_segment_token_id(st, i, j);
            for (int k = 0; k < n_bad; k++)
                if (strcmp(whisperc_token_text(st, id), bad[k]) == 0)
                    return false;
        }
    return true;
}

/* suppress_regex and suppress_tokens: the tokens they name are never sampled, greedy, with
 * beams and batched alike; the regex matches whole tokens; bad ones are refused and leave
 * the state usable. */
static void test_suppress(const whisperc_model *m, whisperc_state *st, const float *pcm, int n,
                          const char *want) {
    static const char *const ask[] = {" ask", "ask", " Ask", "Ask"};
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.suppress_regex = " ?[Aa]sk";
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    char *by_regex = strdup(whisperc_full_text(st));
    printf("suppress_regex ' ?[Aa]sk': %s\n", by_regex);
    CHECK(strcmp(by_regex, want) != 0 && tokens_avoid(st, ask, 4));
    CHECK(strstr(by_regex, "your country") != NULL);
    /* the same tokens by id give the same text */
    int32_t ids[8];
    int n_ids = 0;
    for (int id = 0; id < whisperc_token_timestamp_begin(st) && n_ids < 8; id++)
        for (int k = 0; k < 4; k++)
            if (strcmp(whisperc_token_text(st, id), ask[k]) == 0)
                ids[n_ids++] = id;
    CHECK(n_ids == 4);
    p.suppress_regex = NULL;
    p.suppress_tokens = ids;
    p.n_suppress_tokens = n_ids;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(strcmp(whisperc_full_text(st), by_regex) == 0);
    /* a part of a token is no match: "s" alone names only the token "s" */
    p.suppress_tokens = NULL;
    p.n_suppress_tokens = 0;
    p.suppress_regex = "s";
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(strcmp(whisperc_full_text(st), want) == 0);
    p.suppress_regex = "ask|[0-9]*"; /* " ask" is no match; nor is any token by matching "" */
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(strcmp(whisperc_full_text(st), want) == 0);
    /* beams, and a batch of two with another regex in between (the kept matches renewed) */
    struct whisperc_full_params b = whisperc_full_default_params(WHISPERC_SAMPLING_BEAM_SEARCH);
    b.suppress_regex = " ?[Aa]sk";
    CHECK(whisperc_full(st, &b, pcm, n) == WHISPERC_OK && tokens_avoid(st, ask, 4));
    b.suppress_regex = " ?[Cc]ountry";
    const float *inputs[2] = {pcm, pcm};
    const int lens[2] = {n, n};
    CHECK(whisperc_full_batch(st, &b, inputs, lens, 2) == WHISPERC_OK);
    static const char *const country[] = {" country", "country", " Country", "Country"};
    for (int i = 0; i < 2; i++)
        CHECK(whisperc_batch_select(st, i) == WHISPERC_OK && tokens_avoid(st, country, 4) &&
              strstr(whisperc_full_text(st), "fellow Americans"));
    /* refused: a regex that does not compile, ids outside the vocabulary, a NULL list */
    p.suppress_regex = "(";
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    CHECK(strstr(whisperc_state_errmsg(st), "suppress_regex '('") != NULL);
    p.suppress_regex = NULL;
    int32_t bad[2] = {5, whisperc_model_n_vocab(m)};
    p.suppress_tokens = bad;
    p.n_suppress_tokens = 2;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    CHECK(strstr(whisperc_state_errmsg(st), "suppress_tokens[1]") != NULL);
    bad[1] = -1;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    p.suppress_tokens = NULL;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    p.n_suppress_tokens = 0;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(strcmp(whisperc_full_text(st), want) == 0);
    free(by_regex);
}

/* Beam search and best_of sampling: valid output, reproducible for a seed; the options that
 * only beam search reads are checked. */
static void test_strategies(whisperc_state *st, const float *pcm, int n, const char *greedy) {
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_BEAM_SEARCH);
    CHECK(p.beam_size == 5 && p.best_of == 5);
    p.patience = 2.0f;
    p.length_penalty = 0.5f;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(strstr(whisperc_full_text(st), "fellow Americans") != NULL);
    p.patience = 0.0f;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    p = whisperc_full_default_params(WHISPERC_SAMPLING_BEAM_SEARCH);
    p.beam_size = 17;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    p.beam_size = 1; /* one beam is greedy search with beam bookkeeping */
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK &&
          strcmp(whisperc_full_text(st), greedy) == 0);

    struct whisperc_full_params q = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    CHECK(q.best_of == 1);
    q.temperatures[0] = 0.7f;
    q.n_temperatures = 1;
    q.best_of = 4;
    q.seed = 1234;
    CHECK(whisperc_full(st, &q, pcm, n) == WHISPERC_OK);
    char *first = strdup(whisperc_full_text(st));
    CHECK(whisperc_full(st, &q, pcm, n) == WHISPERC_OK);
    CHECK(strcmp(first, whisperc_full_text(st)) == 0);
    CHECK(strstr(first, "country") != NULL);
    free(first);
    q.best_of = 0;
    CHECK(whisperc_full(st, &q, pcm, n) == WHISPERC_ERR_INVALID_ARG);
}

/* Prompt and context options, checked by hand against openai-whisper 20250625 on jfk. */
static void test_context(whisperc_state *st, const float *pcm, int n) {
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.initial_prompt = "Kennedy speech.";
    p.carry_initial_prompt = true;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(strcmp(whisperc_full_text(st),
                 " And so my fellow Americans ask not what your country "
                 "can do for you. Ask what you can do for your country.") == 0);
    /* a prefix is forced and left out of the result: here the model ends at once */
    p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.prefix = "And so my";
    p.n_temperatures = 1;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(whisperc_n_segments(st) == 1 && whisperc_segment_n_tokens(st, 0) == 0);
    CHECK(whisperc_segment_t1_ms(st, 0) == 11000);
    p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.hotwords = "Kennedy";
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(strstr(whisperc_full_text(st), "your country") != NULL);
    p.max_context = -2;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);

    /* no previous text and a context of 0 tokens are the same thing */
    int n_long;
    float *a = long_audio(pcm, n, &n_long);
    p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.condition_on_previous_text = false;
    CHECK(whisperc_full(st, &p, a, n_long) == WHISPERC_OK);
    char *no_context = strdup(whisperc_full_text(st));
    p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.max_context = 0;
    CHECK(whisperc_full(st, &p, a, n_long) == WHISPERC_OK);
    CHECK(strcmp(no_context, whisperc_full_text(st)) == 0);
    free(no_context);
    free(a);
}

/* max_memory_bytes covers the model and a state (tiny.en: 74 MiB of weights, a state 60 MiB
 * with room for one sequence, 81 MiB for five): refused before anything is allocated. */
static void test_budget(const char *model_path, const float *pcm, int n) {
    char err[256] = "";
    whisperc_model *m = NULL;
    whisperc_state *st = (whisperc_state *)1;
    CHECK(whisperc_state_new_v2(NULL, &st, err, sizeof err) == WHISPERC_ERR_INVALID_ARG);
    CHECK(st == NULL && err[0] != '\0');
    struct whisperc_model_params mp = whisperc_model_default_params();
    mp.device = WHISPERC_DEVICE_CPU;
    mp.max_memory_bytes = 100 << 20;
    CHECK(whisperc_model_load(model_path, &mp, &m, err, sizeof err) == WHISPERC_OK);
    st = (whisperc_state *)1;
    CHECK(whisperc_state_new_v2(m, &st, err, sizeof err) == WHISPERC_ERR_NO_MEMORY && !st);
    CHECK(strstr(err, "decoding state for 1 sequence needs about 134 MiB") != NULL);
    CHECK(whisperc_state_new(m, &st) == WHISPERC_ERR_NO_MEMORY && !st);
    whisperc_model_free(m);

    mp.max_memory_bytes = 140 << 20;
    CHECK(whisperc_model_load(model_path, &mp, &m, err, sizeof err) == WHISPERC_OK);
    CHECK(whisperc_state_new_v2(m, &st, err, sizeof err) == WHISPERC_OK && st);
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_BEAM_SEARCH);
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_NO_MEMORY);
    CHECK(strstr(whisperc_state_errmsg(st), "for 5 sequences needs about 155 MiB") != NULL);
    check_empty_results(st);
    whisperc_state_free(st);
    whisperc_model_free(m);
}

/* kB of this process's mappings of file `path` that are resident (/proc/self/smaps), -1 if
 * unknown */
static long mapping_rss_kb(const char *path) {
    FILE *fp = fopen("/proc/self/smaps", "r");
    char line[4096];
    long total = fp ? 0 : -1, kb;
    bool in_file = false;
    size_t n = strlen(path);
    while (fp && fgets(line, sizeof line, fp)) {
        size_t len = strcspn(line, "\n");
        line[len] = '\0';
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3) /* a mapping's header line */
            in_file = len >= n && strcmp(line + len - n, path) == 0;
        else if (in_file && sscanf(line, "Rss: %ld kB", &kb) == 1)
            total += kb;
    }
    if (fp)
        fclose(fp);
    return total;
}

/* The last result as text: every segment's, token's and word's text and times, times moved by
 * shift_ms. Caller frees. */
static char *result_digest(whisperc_state *st, int64_t shift_ms) {
    size_t cap = 1 << 16, len = 0;
    char *d = malloc(cap);
    d[0] = '\0';
#define ADD(...) (len += (size_t)snprintf(d + len, len < cap ? cap - len : 0, __VA_ARGS__))
    for (int i = 0; i < whisperc_n_segments(st); i++) {
        ADD("[%lld %lld, window at frame %lld]%s\n",
            (long long)(whisperc_segment_t0_ms(st, i) + shift_ms),
            (long long)(whisperc_segment_t1_ms(st, i) + shift_ms),
            (long long)(whisperc_segment_seek(st, i) + shift_ms / 10),
            whisperc_segment_text(st, i));
        for (int j = 0; j < whisperc_segment_n_tokens(st, i); j++)
            ADD(" %d@%lld-%lld", whisperc_segment_token_id(st, i, j),
                (long long)(whisperc_segment_token_t0_ms(st, i, j) + shift_ms),
                (long long)(whisperc_segment_token_t1_ms(st, i, j) + shift_ms));
        for (int j = 0; j < whisperc_segment_n_words(st, i); j++)
            ADD(" %s@%lld-%lld", whisperc_word_text(st, i, j),
                (long long)(whisperc_word_t0_ms(st, i, j) + shift_ms),
                (long long)(whisperc_word_t1_ms(st, i, j) + shift_ms));
        ADD("\n");
    }
#undef ADD
    CHECK(len < cap);
    return d;
}

/* offset_ms / duration_ms: the part of the input, transcribed as if it were the input, its
 * times the input's (33 s: two windows, words, with and without VAD; whisperc_full_batch). */
static void test_offset(whisperc_state *st, const float *jfk, int n_jfk, bool sanitized) {
    int n = 3 * n_jfk;
    float *pcm = malloc((size_t)n * sizeof *pcm);
    for (int i = 0; i < 3; i++)
        memcpy(pcm + (size_t)i * n_jfk, jfk, (size_t)n_jfk * sizeof *pcm);
    static const struct {
        int offset_ms, duration_ms;
        bool vad;
    } cases[] = {{4000, 0, false}, {3000, 25000, false}, {2500, 0, true}};
    for (size_t k = sanitized ? 1 : 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
        p.word_timestamps = true;
        p.vad = cases[k].vad;
        int a = cases[k].offset_ms * 16,
            b = cases[k].duration_ms ? a + cases[k].duration_ms * 16 : n;
        CHECK(whisperc_full(st, &p, pcm + a, b - a) == WHISPERC_OK);
        char *want = result_digest(st, cases[k].offset_ms);
        p.offset_ms = cases[k].offset_ms;
        p.duration_ms = cases[k].duration_ms;
        CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
        char *got = result_digest(st, 0);
        CHECK(whisperc_n_segments(st) >= 2 && strcmp(got, want) == 0);
        CHECK(whisperc_segment_seek(st, 0) >= cases[k].offset_ms / 10 &&
              whisperc_segment_seek(st, whisperc_n_segments(st) - 1) > cases[k].offset_ms / 10 &&
              whisperc_segment_seek(st, -1) == -1); /* two windows */
        if (strcmp(got, want))
            fprintf(stderr, "offset %d duration %d vad %d:\n%s\nwant\n%s\n", p.offset_ms,
                    p.duration_ms, (int)p.vad, got, want);
        free(got);
        const float *const in[2] = {jfk, pcm};
        const int ns[2] = {n_jfk, n};
        p.batch_size = 2; /* the part of every input, each as whisperc_full gives it */
        CHECK(whisperc_full_batch(st, &p, in, ns, 2) == WHISPERC_OK);
        CHECK(whisperc_batch_select(st, 1) == WHISPERC_OK);
        got = result_digest(st, 0);
        CHECK(strcmp(got, want) == 0);
        free(got);
        free(want);
    }
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    p.offset_ms = 34000;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    CHECK(strstr(whisperc_state_errmsg(st), "past the end of the audio") != NULL);
    p.offset_ms = 0;
    p.duration_ms = -1;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    free(pcm);
}

/* Edges a review found: a prefix longer than the text context (refused, nothing written past
 * the prompt's buffer, batched too), a max_initial_timestamp past the last timestamp (all of
 * them allowed, no int overflow), progress 100 on audio too short for a window, and a NULL
 * path clearing the last results as any failed call does. */
/* whisperc_full_params_check: whisperc_full's refusals without audio; the results stay. */
static void test_params_check(whisperc_state *st, const float *pcm, int n) {
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    int n_seg = whisperc_n_segments(st);
    CHECK(whisperc_full_params_check(st, &p) == WHISPERC_OK);
    p.language = "xx";
    CHECK(whisperc_full_params_check(st, &p) == WHISPERC_ERR_INVALID_ARG &&
          strstr(whisperc_state_errmsg(st), "unknown language 'xx'"));
    p.language = "de"; /* an English-only model */
    CHECK(whisperc_full_params_check(st, &p) == WHISPERC_ERR_UNSUPPORTED);
    p.language = "AUTO";
    p.suppress_regex = "(";
    CHECK(whisperc_full_params_check(st, &p) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_full_params_check(NULL, &p) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_full_params_check(st, NULL) == WHISPERC_ERR_INVALID_ARG);
    CHECK(n_seg > 0 && whisperc_n_segments(st) == n_seg);
}

static void test_edges(whisperc_state *st, const float *pcm, int n, const char *want) {
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    size_t len = 6 * 2000 + 1;
    char *prefix = malloc(len);
    for (int i = 0; i < 2000; i++)
        memcpy(prefix + 6 * i, " hello", 6);
    prefix[len - 1] = '\0';
    p.prefix = prefix;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    CHECK(strstr(whisperc_state_errmsg(st), "text positions") != NULL);
    const float *const in[2] = {pcm, pcm};
    const int ns[2] = {n, n};
    CHECK(whisperc_full_batch(st, &p, in, ns, 2) == WHISPERC_ERR_INVALID_ARG);
    /* the longest hotwords and previous text (223 tokens each) with the SOT sequence: the
     * oldest previous tokens give way, where faster-whisper's arithmetic passes 448 */
    p.prefix = NULL;
    p.hotwords = prefix;
    p.initial_prompt = prefix;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK); /* the text: whatever such a prompt
                                                            makes of it */
    p.hotwords = p.initial_prompt = NULL;
    free(prefix);
    const float mits[2] = {1e9f, INFINITY};
    for (int i = 0; i < 2; i++) {
        p.max_initial_timestamp = mits[i];
        CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
        CHECK(strcmp(whisperc_full_text(st), want) == 0);
    }
    p.max_initial_timestamp = 1.0f;
    struct progress_log pl = {.monotonic = 1};
    p.progress_fn = on_progress;
    p.progress_user_data = &pl;
    CHECK(whisperc_full(st, &p, pcm, 100) == WHISPERC_OK);
    CHECK(pl.n_calls == 1 && pl.last == 100 && whisperc_n_segments(st) == 0);
    p.progress_fn = NULL;
    CHECK(whisperc_full_batch(st, &p, in, ns, 2) == WHISPERC_OK);
    CHECK(whisperc_full_file(st, &p, NULL) == WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_batch_n_inputs(st) == 0);
    check_empty_results(st);
}

/* The token times of segment i, "t0-t1 " each. */
static char *token_times(whisperc_state *st, int i) {
    size_t cap = 1 << 14, len = 0;
    char *d = malloc(cap);
    d[0] = '\0';
    for (int j = 0; j < whisperc_segment_n_tokens(st, i); j++)
        len += (size_t)snprintf(d + len, len < cap ? cap - len : 0, "%lld-%lld ",
                                (long long)whisperc_segment_token_t0_ms(st, i, j),
                                (long long)whisperc_segment_token_t1_ms(st, i, j));
    CHECK(len < cap);
    return d;
}

/* dtw_token_timestamps: token times as word_timestamps gives them, while the segments, their
 * times and the later windows' decoding stay those of a run without alignment (33 s: two
 * windows; whisperc_full_batch the same). */
static void test_dtw_tokens(whisperc_state *st, const float *jfk, int n_jfk) {
    int n = 3 * n_jfk;
    float *pcm = malloc((size_t)n * sizeof *pcm);
    for (int i = 0; i < 3; i++)
        memcpy(pcm + (size_t)i * n_jfk, jfk, (size_t)n_jfk * sizeof *pcm);
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    char *plain = result_digest(st, 0);
    p.dtw_token_timestamps = true;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    char *dtw = result_digest(st, 0);
    int tb = whisperc_token_timestamp_begin(st), n_seg = whisperc_n_segments(st);
    CHECK(n_seg >= 4);
    int64_t last = 0;
    for (int i = 0; i < n_seg; i++) {
        CHECK(whisperc_segment_n_words(st, i) == 0);
        for (int j = 0; j < whisperc_segment_n_tokens(st, i); j++) {
            int64_t t0 = whisperc_segment_token_t0_ms(st, i, j),
                    t1 = whisperc_segment_token_t1_ms(st, i, j);
            CHECK(t0 >= 0 && t1 >= t0);
            if (whisperc_segment_token_id(st, i, j) < tb) { /* the path only moves forward */
                CHECK(t0 >= last);
                last = t0;
            }
        }
    }
    /* the segments' lines of both digests (token times aside) are the same */
    char *a = plain, *b = dtw;
    for (int i = 0; i < n_seg; i++) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        CHECK(la == lb && memcmp(a, b, la) == 0);
        a = strchr(strchr(a, '\n') + 1, '\n') + 1;
        b = strchr(strchr(b, '\n') + 1, '\n') + 1;
    }
    CHECK(*a == '\0' && *b == '\0');
    const float *const in[2] = {jfk, pcm};
    const int ns[2] = {n_jfk, n};
    p.batch_size = 2;
    CHECK(whisperc_full_batch(st, &p, in, ns, 2) == WHISPERC_OK);
    CHECK(whisperc_batch_select(st, 1) == WHISPERC_OK);
    char *batched = result_digest(st, 0);
    CHECK(strcmp(batched, dtw) == 0);

    /* one window: the token times of word_timestamps, which moves the segment bounds */
    p.batch_size = 8;
    CHECK(whisperc_full(st, &p, jfk, n_jfk) == WHISPERC_OK);
    int64_t seg1_t0 = whisperc_segment_t0_ms(st, 1);
    char *alone[2] = {token_times(st, 0), token_times(st, 1)};
    p.word_timestamps = true;
    CHECK(whisperc_full(st, &p, jfk, n_jfk) == WHISPERC_OK);
    CHECK(whisperc_segment_t0_ms(st, 1) == 8060 && seg1_t0 == 7740);
    for (int i = 0; i < 2; i++) {
        char *with_words = token_times(st, i);
        CHECK(strcmp(with_words, alone[i]) == 0);
        free(with_words);
        free(alone[i]);
    }
    p.word_timestamps = false;
    p.alignment_heads = "large-v3";
    CHECK(whisperc_full(st, &p, jfk, n_jfk) == WHISPERC_ERR_INVALID_ARG);
    free(batched);
    free(dtw);
    free(plain);
    free(pcm);
}

static void log_keep(whisperc_log_level level, const char *msg, void *user) {
    if (level == WHISPERC_LOG_INFO && strstr(msg, "keeping the quantized blocks"))
        *(int *)user += 1;
}

static void log_silero_loads(whisperc_log_level level, const char *msg, void *user) {
    if (level == WHISPERC_LOG_INFO && strstr(msg, "vad: Silero VAD v5.1.2 from"))
        *(int *)user += 1;
}

/* vad_model_path: a Silero file of zero weights says p = 0.5 everywhere, all speech at the
 * default threshold, so the whole input is transcribed as without VAD; the state keeps the
 * model while the path stays (loaded once), loads the other for another path, and reports a
 * missing file. */
static void test_vad_model(whisperc_state *st, const float *pcm, int n) {
    char path[] = "/tmp/wc_test_silero_XXXXXX", path2[] = "/tmp/wc_test_silero_XXXXXX";
    int fd = mkstemp(path), fd2 = mkstemp(path2);
    CHECK(fd >= 0 && ggml_synth_write_silero(path) == 0);
    CHECK(fd2 >= 0 && ggml_synth_write_silero(path2) == 0);
    if (fd >= 0)
        close(fd);
    if (fd2 >= 0)
        close(fd2);
    char err[512];
    CHECK(whisperc_vad_model_check(path, err, sizeof err) == WHISPERC_OK);
    CHECK(whisperc_vad_model_check("/nonexistent/v.bin", err, sizeof err) == WHISPERC_ERR_IO);
    CHECK(strstr(err, "/nonexistent/v.bin: cannot open the VAD model") != NULL);
    CHECK(whisperc_vad_model_check(NULL, NULL, 0) == WHISPERC_ERR_INVALID_ARG);
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    char *want = result_digest(st, 0);
    int loads = 0;
    p.log_fn = log_silero_loads;
    p.log_user_data = &loads;
    p.vad = true;
    p.vad_model_path = path;
    for (int k = 0; k < 2; k++) { /* loaded, then kept */
        CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
        struct whisperc_timings t = {.size = sizeof t};
        CHECK(whisperc_state_timings(st, &t) == WHISPERC_OK);
        CHECK(t.vad_seconds == (double)n / 16000);
        char *got = result_digest(st, 0);
        CHECK(strcmp(got, want) == 0);
        free(got);
    }
    const float *const in[1] = {pcm};
    CHECK(whisperc_full_batch(st, &p, in, &n, 1) == WHISPERC_OK);
    CHECK(loads == 1); /* kept across calls, batched or not */
    p.vad_model_path = path2;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(loads == 2);
    p.vad_model_path = "/nonexistent/ggml-silero.bin";
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_IO);
    CHECK(strstr(whisperc_state_errmsg(st), "/nonexistent/ggml-silero.bin") != NULL);
    CHECK(whisperc_full_batch(st, &p, in, &n, 1) == WHISPERC_ERR_IO); /* no "input 0:" */
    CHECK(strncmp(whisperc_state_errmsg(st), "/nonexistent/ggml-silero.bin", 28) == 0);
    p.vad_model_path = NULL; /* the built-in detector */
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    p.vad_model_path = path;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(loads == 3);
    unlink(path);
    unlink(path2);
    free(want);
}

/* A quantized model (random q5_1 weights, Whisper's context sizes, 64 wide: ggml_synth) held as
 * its blocks (KEEP) or widened (WIDEN) transcribes alike, bit for bit; AUTO keeps the blocks,
 * and says so, when the widened weights would take over half of max_memory_bytes. */
static void test_quant_weights(const float *pcm, int n) {
    struct ggml_synth_opts o = ggml_synth_default_opts();
    o.n_audio_ctx = 1500;
    o.n_text_ctx = 448;
    o.quant = 7; /* q5_1 */
    char path[] = "/tmp/test_api_q5_1_XXXXXX";
    CHECK(ggml_synth_write_temp(path, &o) == 0);
    const whisperc_quant_mode modes[2] = {WHISPERC_QUANT_KEEP, WHISPERC_QUANT_WIDEN};
    char *digest[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        struct whisperc_model_params mp = whisperc_model_default_params();
        mp.device = WHISPERC_DEVICE_CPU;
        mp.quant_weights = modes[k];
        whisperc_model *m = NULL;
        whisperc_state *st = NULL;
        char err[256] = "";
        CHECK(whisperc_model_load(path, &mp, &m, err, sizeof err) == WHISPERC_OK);
        CHECK(m && whisperc_state_new(m, &st) == WHISPERC_OK);
        struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
        p.n_temperatures = 1; /* random weights: no fallback */
        p.sample_len = 24;
        CHECK(st && whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
        digest[k] = st ? result_digest(st, 0) : NULL;
        whisperc_state_free(st);
        whisperc_model_free(m);
    }
    CHECK(digest[0] && digest[1] && strlen(digest[0]) > 0 && strcmp(digest[0], digest[1]) == 0);
    free(digest[0]);
    free(digest[1]);
    /* the widened weights (7 MiB, the token embedding's 51864 x 64 halves) over half of 12 MiB */
    struct whisperc_model_params mp = whisperc_model_default_params();
    mp.device = WHISPERC_DEVICE_CPU;
    int kept = 0;
    mp.log_fn = log_keep;
    mp.log_user_data = &kept;
    mp.max_memory_bytes = 12 << 20;
    whisperc_model *m = NULL;
    char err[256] = "";
    CHECK(whisperc_model_load(path, &mp, &m, err, sizeof err) == WHISPERC_OK && kept == 1);
    whisperc_model_free(m);
    mp.max_memory_bytes = 64 << 20; /* room: widened, silently */
    kept = 0;
    CHECK(whisperc_model_load(path, &mp, &m, err, sizeof err) == WHISPERC_OK && kept == 0);
    whisperc_model_free(m);
    mp.quant_weights = (whisperc_quant_mode)3;
    CHECK(whisperc_model_load(path, &mp, &m, err, sizeof err) == WHISPERC_ERR_INVALID_ARG && !m);
    mp.quant_weights = WHISPERC_QUANT_AUTO;
    mp.device = (whisperc_device)7; /* not the CPU in silence */
    CHECK(whisperc_model_load(path, &mp, &m, err, sizeof err) == WHISPERC_ERR_INVALID_ARG && !m &&
          strstr(err, "device must be"));
    unlink(path);
}

/* Word timestamps and max_len on jfk (golden words.jsonl is checked by the words_* tests). */
static void test_words(whisperc_state *st, const float *pcm, int n, const char *want) {
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(whisperc_segment_n_words(st, 0) == 0 && whisperc_word_text(st, 0, 0) == NULL);
    CHECK(whisperc_segment_token_t0_ms(st, 0, 1) == -1);
    p.word_timestamps = true;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(strcmp(whisperc_full_text(st), want) == 0);
    int n_words = 0;
    int64_t last = 0;
    for (int i = 0; i < whisperc_n_segments(st); i++)
        for (int j = 0; j < whisperc_segment_n_words(st, i); j++, n_words++) {
            CHECK(whisperc_word_t0_ms(st, i, j) >= last);
            CHECK(whisperc_word_t1_ms(st, i, j) >= whisperc_word_t0_ms(st, i, j));
            CHECK(whisperc_word_p(st, i, j) > 0.0f && whisperc_word_p(st, i, j) <= 1.0f);
            last = whisperc_word_t1_ms(st, i, j);
        }
    CHECK(n_words == 22 && strcmp(whisperc_word_text(st, 0, 0), " And") == 0);
    CHECK(whisperc_word_t1_ms(st, 0, 0) == 760 && whisperc_word_t0_ms(st, 1, 0) == 8060);
    CHECK(whisperc_word_text(st, 0, -1) == NULL && whisperc_word_p(st, 0, 1000) == 0.0f);
    CHECK(whisperc_segment_token_t0_ms(st, 0, 0) == 0); /* <|0.00|> */
    CHECK(whisperc_segment_token_t0_ms(st, 0, 1) == 0 &&
          whisperc_segment_token_t1_ms(st, 0, 1) == 760);

    /* max_len 1 at words: one word per segment, same text, same times as the words */
    p.max_len = 1;
    p.split_on_word = true;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    CHECK(whisperc_n_segments(st) == 22);
    CHECK(strcmp(whisperc_full_text(st), want) == 0);
    CHECK(strcmp(whisperc_segment_text(st, 4), " Americans") == 0);
    CHECK(whisperc_segment_n_words(st, 4) == 1 && whisperc_segment_t0_ms(st, 1) == 760);
    /* max_len 12 at tokens: pieces of at most 12 characters but for single long tokens */
    p.max_len = 12;
    p.split_on_word = false;
    p.word_timestamps = false;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    size_t total = 0;
    for (int i = 0; i < whisperc_n_segments(st); i++) {
        const char *text = whisperc_segment_text(st, i);
        CHECK(strlen(text) <= 12 || whisperc_segment_n_tokens(st, i) <= 3);
        CHECK(i == 0 || whisperc_segment_t0_ms(st, i) >= whisperc_segment_t1_ms(st, i - 1));
        total += strlen(text);
    }
    CHECK(whisperc_n_segments(st) > 8 && total == strlen(want));
    p.max_len = -1;
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    p.max_len = 0;
    p.word_timestamps = true;
    p.alignment_heads = "large-v3";
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_ERR_INVALID_ARG);
    CHECK(strstr(whisperc_state_errmsg(st), "large-v3") != NULL);
    p.alignment_heads = "tiny"; /* the multilingual tiny's heads: a different list, same shape */
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
}

/* whisperc_model_load_audio: the samples of whisperc_load_audio, the limits and messages of
 * whisperc_state_load_audio, into the caller's buffer. */
static void test_model_load_audio(const whisperc_model *m, whisperc_state *st, const float *pcm,
                                  int n) {
    const char *jfk = shared_path_or_skip("audio/jfk/jfk.wav");
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    float *got = NULL;
    int n_got = 0;
    char err[512] = "";
    CHECK(whisperc_model_load_audio(m, &p, jfk, &got, &n_got, err, sizeof err) == WHISPERC_OK);
    CHECK(n_got == n && got && memcmp(got, pcm, (size_t)n * sizeof *pcm) == 0);
    free(got);
    p.max_audio_s = 5.0f;
    CHECK(whisperc_model_load_audio(m, &p, jfk, &got, &n_got, err, sizeof err) != WHISPERC_OK);
    CHECK(!got && n_got == 0 && strstr(err, "jfk.wav"));
    CHECK(whisperc_state_load_audio(st, &p, jfk, &got, &n_got) != WHISPERC_OK);
    CHECK(strcmp(whisperc_state_errmsg(st), err) == 0); /* the same message */
    CHECK(whisperc_model_load_audio(NULL, &p, jfk, &got, &n_got, err, sizeof err) ==
          WHISPERC_ERR_INVALID_ARG);
    CHECK(whisperc_model_load_audio(m, &p, "/nonexistent.wav", &got, &n_got, NULL, 0) ==
          WHISPERC_ERR_IO);

    /* whisperc_decode_audio: the file's bytes in memory give its samples; the model's limits
     * (none without a model); messages name the caller's name, or "audio in memory" */
    FILE *f = fopen(jfk, "rb");
    unsigned char *bytes = malloc(1 << 20);
    size_t size = f && bytes ? fread(bytes, 1, 1 << 20, f) : 0;
    if (f)
        fclose(f);
    CHECK(size > 44 && size < (1 << 20));
    p.max_audio_s = 0.0f;
    CHECK(whisperc_decode_audio(m, &p, bytes, size, "upload", &got, &n_got, err, sizeof err) ==
          WHISPERC_OK);
    CHECK(n_got == n && got && memcmp(got, pcm, (size_t)n * sizeof *pcm) == 0);
    free(got);
    got = NULL;
    p.max_audio_s = 5.0f;
    CHECK(whisperc_decode_audio(m, &p, bytes, size, "upload", &got, &n_got, err, sizeof err) ==
          WHISPERC_ERR_UNSUPPORTED);
    CHECK(!got && n_got == 0 && strncmp(err, "upload: ", 8) == 0);
    CHECK(whisperc_decode_audio(NULL, &p, bytes, size, NULL, &got, &n_got, err, sizeof err) ==
          WHISPERC_OK);
    CHECK(n_got == n);
    free(got);
    got = NULL;
    CHECK(whisperc_decode_audio(NULL, NULL, bytes, 30, NULL, &got, &n_got, err, sizeof err) ==
          WHISPERC_ERR_AUDIO_FORMAT);
    CHECK(!got && strncmp(err, "audio in memory: ", 17) == 0);
    CHECK(whisperc_decode_audio(m, &p, bytes, size, NULL, NULL, &n_got, err, sizeof err) ==
          WHISPERC_ERR_INVALID_ARG);
    free(bytes);

    /* whisperc_decode_audio_fd: a descriptor read to its end, the same samples and limits */
    int fd = open(jfk, O_RDONLY);
    CHECK(fd >= 0);
    p.max_audio_s = 0.0f;
    CHECK(whisperc_decode_audio_fd(m, &p, fd, "fd", &got, &n_got, err, sizeof err) == WHISPERC_OK);
    CHECK(n_got == n && got && memcmp(got, pcm, (size_t)n * sizeof *pcm) == 0);
    free(got);
    got = NULL;
    CHECK(lseek(fd, 0, SEEK_SET) == 0);
    p.max_audio_s = 5.0f;
    CHECK(whisperc_decode_audio_fd(m, &p, fd, "fd", &got, &n_got, err, sizeof err) ==
              WHISPERC_ERR_UNSUPPORTED &&
          !got && strncmp(err, "fd: ", 4) == 0);
    CHECK(whisperc_decode_audio_fd(m, &p, fd, NULL, &got, &n_got, err, sizeof err) ==
              WHISPERC_ERR_AUDIO_FORMAT && /* at its end now: nothing left */
          strstr(err, "empty") != NULL);
    close(fd);
    CHECK(whisperc_decode_audio_fd(m, &p, -1, NULL, &got, &n_got, err, sizeof err) ==
          WHISPERC_ERR_INVALID_ARG);
}

int main(int argc, char **argv) {
    bool sanitized = argc > 1 && !strcmp(argv[1], "sanitized");
    char *model_path = strdup(shared_path_or_skip("models/ggml-tiny.en.bin"));
    test_null_args(model_path);

    whisperc_model *m = NULL;
    char err[256];
    struct whisperc_model_params mp = whisperc_model_default_params();
    CHECK(mp.quant_weights == WHISPERC_QUANT_AUTO); /* tools_quantize runs the three modes */
    mp.device = WHISPERC_DEVICE_CPU;
    CHECK(whisperc_model_load(model_path, &mp, &m, err, sizeof err) == WHISPERC_OK);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    CHECK(strcmp(whisperc_model_backend(m), "cpu") == 0);
    /* the backend holds its copy of the weights; the mapping's pages of them were dropped, so
     * the 74 MiB file is not resident twice: what stays is the header and vocabulary (~0.9 MiB)
     * and the pages tensors share */
    char *real = realpath(model_path, NULL); /* as /proc names the mapping */
    long rss_map = real ? mapping_rss_kb(real) : -1;
    printf("model file resident after loading: %ld kB\n", rss_map);
    CHECK(rss_map > 0 && rss_map < 4 * 1024);
    free(real);
    CHECK(strcmp(whisperc_model_type(m), "tiny") == 0 && !whisperc_model_is_multilingual(m));
    /* tiny.en's dimensions; a caller's older, shorter struct gets its fields only */
    struct whisperc_model_dims dims = {.size = sizeof dims};
    CHECK(whisperc_model_dims(m, &dims) == WHISPERC_OK && dims.size == sizeof dims);
    CHECK(dims.n_vocab == 51864 && dims.n_audio_ctx == 1500 && dims.n_audio_state == 384 &&
          dims.n_audio_head == 6 && dims.n_audio_layer == 4 && dims.n_text_ctx == 448 &&
          dims.n_text_state == 384 && dims.n_text_head == 6 && dims.n_text_layer == 4 &&
          dims.n_mels == 80 && dims.ftype == 1);
    struct whisperc_model_dims short_dims = {.size = offsetof(struct whisperc_model_dims, n_mels)};
    short_dims.n_mels = -7; /* beyond size: untouched */
    CHECK(whisperc_model_dims(m, &short_dims) == WHISPERC_OK && short_dims.n_mels == -7 &&
          short_dims.n_text_layer == 4);
    CHECK(whisperc_state_new(m, NULL) == WHISPERC_ERR_INVALID_ARG);
    whisperc_state *st = NULL;
    CHECK(whisperc_state_new(m, &st) == WHISPERC_OK);

    float *pcm = NULL;
    int n = 0;
    CHECK(whisperc_load_audio(shared_path_or_skip("audio/jfk/jfk.wav"), &pcm, &n, err,
                              sizeof err) == WHISPERC_OK);
    test_bad_params(st, pcm, n);
    test_budget(model_path, pcm, n);
    test_model_load_audio(m, st, pcm, n);

    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    CHECK(whisperc_full(st, &p, pcm, n) == WHISPERC_OK);
    char *want = strdup(whisperc_full_text(st));
    int ns = whisperc_n_segments(st);
    CHECK(ns == 2 && strstr(want, "ask not what your country can do for you"));
    CHECK(whisperc_segment_text(st, ns) == NULL && whisperc_segment_text(st, -1) == NULL);
    CHECK(whisperc_segment_token_id(st, 0, -1) == -1 &&
          whisperc_segment_token_p(st, 0, 1 << 20) == 0);
    CHECK(whisperc_token_text(st, -1) == NULL && whisperc_token_text(st, 1 << 20) == NULL);
    CHECK(whisperc_state_timings(st, NULL) == WHISPERC_ERR_INVALID_ARG);
    struct whisperc_timings t0 = {.size = 0};
    CHECK(whisperc_state_timings(st, &t0) == WHISPERC_ERR_INVALID_ARG);

    test_strategies(st, pcm, n, want);
    test_context(st, pcm, n);
    test_words(st, pcm, n, want);
    test_offset(st, pcm, n, sanitized);
    test_dtw_tokens(st, pcm, n);
    test_params_check(st, pcm, n);
    test_edges(st, pcm, n, want);
    test_vad_model(st, pcm, n);
    test_quant_weights(pcm, n);
    test_callbacks(st, pcm, n);
    test_old_params(st, pcm, n, want);
    test_detect_keeps_results(pcm, n);
    test_short_audio_ctx(pcm, n);
    test_suppress(m, st, pcm, n, want);
    test_diarize(st, pcm, n);

    free(want);
    free(pcm);
    whisperc_state_free(st);
    whisperc_model_free(m);
    free(model_path);
    printf("%s\n", test_failures ? "FAILED" : "OK");
    return TEST_RESULT();
}
