/*
 * api.c — the public entry points of libwhisperc: model, state, transcription
 * (include/libwhisperc.h). Result accessors live in api_results.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api_internal.h"
#include "decoder/decode_window.h"
#include "decoder/logit_filters.h"
#include "decoder/transcript_remap.h"
#include "frontend/audio.h"
#include "frontend/mel.h"
#include "frontend/silero_vad.h"
#include "frontend/vad.h"
#ifdef WC_HAVE_CUDA
#include "gpu/backend_cuda.h"
#endif
#include "mem_limit.h"
#include "model/alignment_heads.h"
#include "model/languages.h"
#include "util.h"

#define MAX_THREADS 256
#define VAD_MAX_MS  3600000 /* one hour: keeps ms * 16 samples far from overflow */
#define VAD_GAP_MS  1000    /* silences longer than this become this much (vad_merge_close) */

const char *whisperc_version(void) { return "0.1.0"; }

const char *whisperc_status_str(whisperc_status rc) {
    switch (rc) {
    case WHISPERC_OK: return "WHISPERC_OK";
    case WHISPERC_ERR_INVALID_ARG: return "WHISPERC_ERR_INVALID_ARG";
    case WHISPERC_ERR_NO_MEMORY: return "WHISPERC_ERR_NO_MEMORY";
    case WHISPERC_ERR_IO: return "WHISPERC_ERR_IO";
    case WHISPERC_ERR_MODEL_FORMAT: return "WHISPERC_ERR_MODEL_FORMAT";
    case WHISPERC_ERR_AUDIO_FORMAT: return "WHISPERC_ERR_AUDIO_FORMAT";
    case WHISPERC_ERR_UNSUPPORTED: return "WHISPERC_ERR_UNSUPPORTED";
    case WHISPERC_ERR_BACKEND: return "WHISPERC_ERR_BACKEND";
    case WHISPERC_ERR_ABORTED: return "WHISPERC_ERR_ABORTED";
    case WHISPERC_ERR_DEVICE: return "WHISPERC_ERR_DEVICE";
    }
    return "WHISPERC_ERR_UNKNOWN";
}

void api_log(whisperc_log_fn fn, void *user, whisperc_log_level level, const char *fmt, ...) {
    if (!fn)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fn(level, line, user);
}

/* ---------------------------------------------------------------------------------------- */
/* Model                                                                                     */

/* The library's defaults into a caller's struct of `size` bytes (the header's inline
 * defaults functions pass their sizeof): a caller built against an older header gets the fields
 * it has, and no byte past them is written; one built against a newer header gets zeros in the
 * fields this library does not know, and a size that says so. */
static void params_out(void *out, size_t size, const void *defaults, size_t our_size) {
    if (!out || size < sizeof(size_t))
        return;
    memset(out, 0, size);
    size_t n = size < our_size ? size : our_size;
    memcpy(out, defaults, n);
    memcpy(out, &n, sizeof n); /* the size field comes first in every params struct */
}

void whisperc_model_params_init(struct whisperc_model_params *out, size_t size) {
    struct whisperc_model_params p = {
        /*.size =*/sizeof(struct whisperc_model_params),
        /*.device =*/WHISPERC_DEVICE_AUTO,
        /*.gpu_index =*/0,
        /*.log_fn =*/NULL,
        /*.log_user_data =*/NULL,
        /*.max_memory_bytes =*/0,
        /*.quant_weights =*/WHISPERC_QUANT_AUTO,
    };
    params_out(out, size, &p, sizeof p);
}

/* Params from a caller compiled against any header version: defaults, then its fields. */
static struct whisperc_model_params model_params_from(const struct whisperc_model_params *in) {
    struct whisperc_model_params p = whisperc_model_default_params();
    if (in && in->size >= sizeof(size_t))
        memcpy(&p, in, in->size < sizeof p ? in->size : sizeof p);
    p.size = sizeof p;
    return p;
}

/* AUTO: CUDA when this build has it and a usable GPU answers, else the CPU, saying why in one
 * log line; CUDA asked for explicitly: its failure is the caller's error. */
static int open_backend(const struct whisperc_model_params *p, struct wc_backend **be, char *err,
                        size_t err_size) {
#ifdef WC_HAVE_CUDA
    if (p->device == WHISPERC_DEVICE_CUDA || p->device == WHISPERC_DEVICE_AUTO) {
        char why[512];
        int rc = cuda_backend_new(p->gpu_index, be, why, sizeof why);
        if (!rc) {
            api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_INFO, "CUDA device %d: %s",
                    p->gpu_index, cuda_backend_device(*be));
            return 0;
        }
        if (p->device == WHISPERC_DEVICE_CUDA) {
            wc_errf(err, err_size, "%s", why); /* "CUDA unavailable: ..." */
            return rc;
        }
        api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_INFO, "%s; running on the CPU", why);
    }
#else
    if (p->device == WHISPERC_DEVICE_CUDA) {
        wc_errf(err, err_size,
                "the CUDA backend is not available in this build of whisper-c "
                "(built without cuda.h; reconfigure with -Dcuda=enabled)");
        return WHISPERC_ERR_UNSUPPORTED;
    }
#endif
    return cpu_backend_new(be, err, err_size);
}

/* What weights_upload will allocate: matrices are copied as stored (quantized ones widened to
 * f16 unless keep_quant), vectors and convolution kernels are widened to f32 (the CPU backend; the
 * CUDA one keeps less in host memory). */
static uint64_t model_memory_bytes(const struct wc_model_file *f, bool keep_quant) {
    uint64_t n = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        const struct wc_tensor_view *t = &f->tensors[i];
        /* as weights.c uploads them: the positional embeddings are tables of f32 */
        bool mat = t->n_dims == 2 && t->shape[1] > 1 && !strstr(t->name, "positional_embedding");
        if (t->qtype && mat && keep_quant)
            n += t->n_bytes;
        else
            n += t->n_values * (t->dtype == WC_F16 && mat ? 2 : 4);
    }
    return n;
}

/* Whether a quantized file's matrices stay blocks where the backend can hold them (the CPU):
 * KEEP, or AUTO when the f16 weights would take more than half of the memory budget. */
static bool keep_quant_blocks(const struct whisperc_model_params *p,
                              const struct wc_model_file *f) {
    uint64_t f16 = model_memory_bytes(f, false), blocks = model_memory_bytes(f, true);
    if (blocks == f16 || p->quant_weights == WHISPERC_QUANT_WIDEN)
        return false;
    if (p->quant_weights == WHISPERC_QUANT_KEEP)
        return true;
    uint64_t budget = mem_budget(p->max_memory_bytes);
    return budget != UINT64_MAX && f16 > budget / 2;
}

/* Once the backend is known: the blocks are kept only where it holds them (a GPU widens), and
 * AUTO says so when it keeps them. */
static void settle_keep_quant(struct whisperc_model *m, const struct whisperc_model_params *p,
                              const char *path) {
    m->keep_quant = keep_quant_blocks(p, m->file) && m->be->ops->holds_quant;
    if (!m->keep_quant || p->quant_weights != WHISPERC_QUANT_AUTO)
        return;
    api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_INFO,
            "%s: the weights widened to f16 (%" PRIu64 " MiB) would take more than half of the "
            "%" PRIu64 " MiB of memory available; keeping the quantized blocks (%" PRIu64
            " MiB), which decode more slowly (quant_weights, --quant-weights)",
            path, model_memory_bytes(m->file, false) >> 20, mem_budget(p->max_memory_bytes) >> 20,
            model_memory_bytes(m->file, true) >> 20);
}

#ifdef WC_HAVE_CUDA
static uint64_t state_memory_bytes(const struct whisperc_model *m, int n_group, int n_windows,
                                   int n_lanes, int n_batch);

/* AUTO: the weights fitting is not enough. A GPU that cannot also hold a decoding state (five
 * sequences, the CLI's default beam, one window, a batch of one) would fail every transcription,
 * so that much is allocated once on a fresh stream and given back. WHISPERC_ERR_NO_MEMORY (and
 * the reason in err) when it does not fit. The default path's batch decoder (one window's five
 * beams as lanes) is not required: when its lanes are refused, the state's own decoder runs
 * (api_batch.c), slower but on the GPU. */
static int state_fits(struct whisperc_model *m, char *err, size_t err_size) {
    const struct wc_backend_ops *op = m->be->ops;
    struct wc_stream *s = NULL;
    struct api_thread held = api_thread_enter(m->be);
    char why[256];
    int rc = op->stream_new(m->be, 1, 0, &s, why, sizeof why);
    if (rc) {
        wc_errf(err, err_size, "cannot create a stream: %s", why);
        api_thread_leave(held);
        return rc;
    }
    void *p = op->alloc(s, state_memory_bytes(m, 5, 1, 1, 1));
    rc = s->err;
    if (rc)
        wc_errf(err, err_size, "%s", s->errmsg);
    if (p)
        op->release(s, p);
    op->stream_free(s);
    api_thread_leave(held);
    return rc;
}

/* AUTO on a GPU without room for the model or a state: the weights' host side and the CUDA
 * backend given back (its weights arena with it), the model loaded on the CPU, with a warning.
 * tests/test_gpu_faults.py runs it on a fake driver with little memory. */
static int fall_back_to_cpu(struct whisperc_model *m, const struct whisperc_model_params *p,
                            const char *what, char *err, size_t err_size) {
    char why[512];
    snprintf(why, sizeof why, "%s", err && err_size ? err : "out of device memory");
    weights_free(&m->w); /* uploaded (a state did not fit) or not: its tables are the host's */
    m->be->ops->backend_free(m->be);
    m->be = NULL;
    int rc = cpu_backend_new(&m->be, err, err_size);
    if (!rc) {
        settle_keep_quant(m, p, m->file->path);
        rc = weights_upload(&m->w, m->be, m->file, m->keep_quant, err, err_size);
    }
    if (!rc)
        api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_WARN,
                "%s on CUDA device %d (%s); running on the CPU", what, p->gpu_index, why);
    return rc;
}
#endif

whisperc_status whisperc_model_load(const char *path, const struct whisperc_model_params *params,
                                    whisperc_model **out, char *errbuf, size_t errbuf_size) {
    if (out)
        *out = NULL;
    if (!path || !out) {
        wc_errf(errbuf, errbuf_size, "whisperc_model_load: path and out must not be NULL");
        return WHISPERC_ERR_INVALID_ARG;
    }
    struct whisperc_model_params p = model_params_from(params);
    double t0 = wc_now_ms();
    struct whisperc_model *m = calloc(1, sizeof *m);
    if (!m) {
        wc_errf(errbuf, errbuf_size, "%s: out of memory", path);
        return WHISPERC_ERR_NO_MEMORY;
    }
    int rc = model_file_open(path, &m->file, errbuf, errbuf_size);
    if (!rc)
        rc = vocab_init(&m->vocab, m->file, errbuf, errbuf_size);
    if (!rc) {
        m->n_non_speech = vocab_non_speech_tokens(&m->vocab, &m->non_speech);
        if (m->n_non_speech < 0) {
            rc = WHISPERC_ERR_NO_MEMORY;
            wc_errf(errbuf, errbuf_size, "%s: out of memory", path);
        }
    }
    if (!rc && p.device != WHISPERC_DEVICE_AUTO && p.device != WHISPERC_DEVICE_CPU &&
        p.device != WHISPERC_DEVICE_CUDA) {
        wc_errf(errbuf, errbuf_size, "device must be AUTO, CPU or CUDA, got %d", (int)p.device);
        rc = WHISPERC_ERR_INVALID_ARG;
    }
    if (!rc && (unsigned)p.quant_weights > WHISPERC_QUANT_KEEP) {
        wc_errf(errbuf, errbuf_size, "quant_weights must be AUTO, WIDEN or KEEP, got %d",
                (int)p.quant_weights);
        rc = WHISPERC_ERR_INVALID_ARG;
    }
    /* host memory as the CPU would hold the weights (a GPU holds its own copy elsewhere) */
    if (!rc &&
        mem_check(model_memory_bytes(m->file, keep_quant_blocks(&p, m->file)),
                  mem_budget(p.max_memory_bytes), p.max_memory_bytes, path, errbuf, errbuf_size))
        rc = WHISPERC_ERR_NO_MEMORY;
    m->max_memory_bytes = p.max_memory_bytes;
    if (!rc)
        rc = open_backend(&p, &m->be, errbuf, errbuf_size);
    if (!rc) {
        struct api_thread held = api_thread_enter(m->be);
        settle_keep_quant(m, &p, path);
        rc = weights_upload(&m->w, m->be, m->file, m->keep_quant, errbuf, errbuf_size);
        api_thread_leave(held);
#ifdef WC_HAVE_CUDA
        const char *why = cuda_backend_errmsg(m->be); /* the reason, kept by the backend */
        /* only after a failure: errbuf holds the caller's bytes, not a string, before one */
        size_t n = rc && errbuf && errbuf_size ? strnlen(errbuf, errbuf_size) : errbuf_size;
        if (why[0] && n < errbuf_size && errbuf_size - n > 3)
            snprintf(errbuf + n, errbuf_size - n, ": %s", why);
        bool auto_cuda = p.device == WHISPERC_DEVICE_AUTO && strcmp(m->be->ops->name, "cuda") == 0;
        if (rc == WHISPERC_ERR_NO_MEMORY && auto_cuda)
            rc = fall_back_to_cpu(m, &p, "the weights do not fit", errbuf, errbuf_size);
        else if (!rc && auto_cuda && state_fits(m, errbuf, errbuf_size) == WHISPERC_ERR_NO_MEMORY)
            rc = fall_back_to_cpu(m, &p, "no room for a decoding state beside the weights", errbuf,
                                  errbuf_size);
#endif
    }
    if (rc) {
        whisperc_model_free(m);
        return rc;
    }
    api_log(p.log_fn, p.log_user_data, WHISPERC_LOG_INFO, "%s: %s%s, %s backend, loaded in %.0f ms",
            path, model_file_type_name(&m->file->hp), m->vocab.multilingual ? "" : ".en",
            m->be->ops->name, wc_now_ms() - t0);
    const char *core = whisperc_blas_coretype_advice();
    if (core && strcmp(m->be->ops->name, "cpu") == 0)
        api_log(p.log_fn, p.log_user_data, WHISPERC_LOG_WARN,
                "OpenBLAS does not recognise this CPU and runs its %s kernels, about 15 times "
                "slower here: start the program with OPENBLAS_CORETYPE=%s in its environment",
                whisperc_blas_core(), core);
    *out = m;
    return WHISPERC_OK;
}

void whisperc_model_free(whisperc_model *m) {
    if (!m)
        return;
    weights_free(&m->w);
    if (m->be)
        m->be->ops->backend_free(m->be);
    free(m->non_speech);
    vocab_free(&m->vocab);
    model_file_close(m->file);
    free(m);
}

const char *whisperc_model_type(const whisperc_model *m) {
    return m ? model_file_type_name(&m->file->hp) : NULL;
}
bool whisperc_model_is_multilingual(const whisperc_model *m) { return m && m->vocab.multilingual; }
int whisperc_model_n_vocab(const whisperc_model *m) { return m ? m->vocab.n_vocab : 0; }
int whisperc_model_n_mels(const whisperc_model *m) { return m ? m->file->hp.n_mels : 0; }
const char *whisperc_model_backend(const whisperc_model *m) { return m ? m->be->ops->name : NULL; }

whisperc_status whisperc_model_dims(const whisperc_model *m, struct whisperc_model_dims *out) {
    if (!m || !out || out->size < sizeof(size_t))
        return WHISPERC_ERR_INVALID_ARG;
    const struct wc_hparams *hp = &m->file->hp;
    struct whisperc_model_dims d = {
        .size = sizeof d,
        .n_vocab = hp->n_vocab,
        .n_audio_ctx = hp->n_audio_ctx,
        .n_audio_state = hp->n_audio_state,
        .n_audio_head = hp->n_audio_head,
        .n_audio_layer = hp->n_audio_layer,
        .n_text_ctx = hp->n_text_ctx,
        .n_text_state = hp->n_text_state,
        .n_text_head = hp->n_text_head,
        .n_text_layer = hp->n_text_layer,
        .n_mels = hp->n_mels,
        .ftype = hp->ftype,
    };
    size_t n = out->size < sizeof d ? out->size : sizeof d;
    memcpy(out, &d, n);
    out->size = n;
    return WHISPERC_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* State                                                                                     */

static int default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

/* What a state with room for n_group sequences, n_windows encoder windows and n_lanes batch
 * lanes for n_batch windows (0: none) allocates: encoder and decoder activations and caches,
 * the encoder output, the batch decoder. */
static uint64_t state_memory_bytes(const struct whisperc_model *m, int n_group, int n_windows,
                                   int n_lanes, int n_batch) {
    const struct wc_hparams *hp = &m->file->hp;
    return encoder_memory_bytes(hp, n_windows) + decoder_memory_bytes(hp, n_group) +
           (uint64_t)n_windows * hp->n_audio_ctx * hp->n_audio_state * sizeof(float) +
           api_batch_memory_bytes(hp, m->be->cross_kv, n_lanes, n_batch);
}

int api_state_budget_check(const struct whisperc_model *m, const whisperc_state *st, int n_group,
                           int n_windows, int n_lanes, int n_batch, char *err, size_t err_size) {
    if (strcmp(m->be->ops->name, "cpu") != 0 || m->max_memory_bytes < 0)
        return 0;
    uint64_t need = state_memory_bytes(m, n_group, n_windows, n_lanes, n_batch);
    uint64_t model = model_memory_bytes(m->file, m->keep_quant);
    if (m->max_memory_bytes > 0) {
        need += model;
    } else if (st) {
        uint64_t now = state_memory_bytes(m, st->dec.n_group_max, st->enc.n_windows, st->db.n_lanes,
                                          st->db.n_regions);
        need = need > now ? need - now : 0;
    }
    char state[160], what[240];
    snprintf(state, sizeof state, "a decoding state for %d %s", n_group,
             n_group == 1 ? "sequence" : "sequences");
    if (n_windows > 1)
        snprintf(state + strlen(state), sizeof state - strlen(state), " and %d encoder windows",
                 n_windows);
    if (n_lanes > 0 && n_lanes > n_batch)
        snprintf(state + strlen(state), sizeof state - strlen(state),
                 " and a batch of %d on %d decoder lanes", n_batch, n_lanes);
    else if (n_lanes > 0)
        snprintf(state + strlen(state), sizeof state - strlen(state), " and a batch of %d",
                 n_lanes);
    if (m->max_memory_bytes > 0)
        snprintf(what, sizeof what, "the model (%" PRIu64 " MiB) with %s", model >> 20, state);
    else
        snprintf(what, sizeof what, "%s", state);
    return mem_check(need, mem_budget(m->max_memory_bytes), m->max_memory_bytes, what, err,
                     err_size);
}

int api_encoder_reserve(whisperc_state *st, int n_windows) {
    if (n_windows <= st->enc.n_windows)
        return 0;
    const struct wc_hparams *hp = &st->m->file->hp;
    const struct wc_backend_ops *op = st->s->be->ops;
    if (api_state_budget_check(st->m, st, st->dec.n_group_max, n_windows, st->db.n_lanes,
                               st->db.n_regions, st->errmsg, sizeof st->errmsg))
        return WHISPERC_ERR_NO_MEMORY;
    if (wc_stream_sync(st->s)) /* an earlier failure: the stream does nothing more */
        return api_fail(st, st->s->err, "%s", st->s->errmsg);
    /* the old buffers go first, so that the peak is the new size */
    int old = st->enc.n_windows;
    for (int w = n_windows;; w = old) {
        encoder_free(&st->enc, st->s);
        op->release(st->s, st->audio_features);
        st->audio_features =
            op->alloc(st->s, (size_t)w * hp->n_audio_ctx * hp->n_audio_state * sizeof(float));
        if (!st->s->err)
            encoder_init(&st->enc, st->s, hp, &st->m->w, w);
        if (!st->s->err)
            return w == n_windows ? 0 : WHISPERC_ERR_NO_MEMORY;
        if (st->s->err != WHISPERC_ERR_NO_MEMORY || w == old || old < 1)
            return api_fail(st, st->s->err, "encoder for %d windows: %s", w, st->s->errmsg);
        /* Device memory ran out (the stream was synced without error and allocations queue
         * no work: that failure is its only error). Back to the old size, whose blocks the
         * arena still holds; the caller may ask for fewer. */
        api_fail(st, WHISPERC_ERR_NO_MEMORY, "%s", st->s->errmsg);
        st->s->err = 0;
        st->s->errmsg[0] = '\0';
    }
}

static void state_close(whisperc_state *st);

/* A state's stream and buffers (st->m and st->n_threads set): 0, or the status and why. */
static int state_open(whisperc_state *st, char *err, size_t err_size) {
    const struct whisperc_model *m = st->m;
    const struct wc_hparams *hp = &m->file->hp;
    char why[256] = "";
    int rc = m->be->ops->stream_new(m->be, st->n_threads, 0, &st->s, why, sizeof why);
    if (!rc) {
        st->audio_features =
            m->be->ops->alloc(st->s, (size_t)hp->n_audio_ctx * hp->n_audio_state * sizeof(float));
        rc = st->s->err;
    }
    if (!rc)
        rc = encoder_init(&st->enc, st->s, hp, &m->w, 1);
    if (!rc)
        rc = decoder_init(&st->dec, st->s, hp, &m->w);
    if (rc) {
        wc_errf(err, err_size, "cannot create a decoding state: %s",
                st->s && st->s->errmsg[0] ? st->s->errmsg
                : why[0]                  ? why
                                          : whisperc_status_str(rc));
        state_close(st);
    }
    return rc;
}

/* Gives back what state_open made (any part of it); st->s is NULL after. */
static void state_close(whisperc_state *st) {
    if (!st->s)
        return;
    if (st->s_enc) /* first: freeing it waits for what it may still run on the buffers below */
        st->s_enc->be->ops->stream_free(st->s_enc);
    st->s_enc = NULL;
    decoder_batch_free(&st->db, st->s);
    encoder_free(&st->enc, st->s);
    decoder_free(&st->dec, st->s);
    if (st->audio_features)
        st->s->be->ops->release(st->s, st->audio_features);
    st->audio_features = NULL;
    st->s->be->ops->stream_free(st->s);
    st->s = NULL;
}

whisperc_status whisperc_state_new(const whisperc_model *m, whisperc_state **out) {
    return whisperc_state_new_v2(m, out, NULL, 0);
}

whisperc_status whisperc_state_new_v2(const whisperc_model *m, whisperc_state **out, char *errbuf,
                                      size_t errbuf_size) {
    if (out)
        *out = NULL;
    if (!m || !out) {
        wc_errf(errbuf, errbuf_size, "whisperc_state_new: model and out must not be NULL");
        return WHISPERC_ERR_INVALID_ARG;
    }
    if (api_state_budget_check(m, NULL, 1, 1, 0, 0, errbuf, errbuf_size))
        return WHISPERC_ERR_NO_MEMORY;
    struct whisperc_state *st = calloc(1, sizeof *st);
    if (!st) {
        wc_errf(errbuf, errbuf_size, "out of memory for a decoding state");
        return WHISPERC_ERR_NO_MEMORY;
    }
    st->m = m;
    st->n_threads = default_threads();
    struct api_thread held = api_thread_enter(m->be);
    int rc = state_open(st, errbuf, errbuf_size);
    api_thread_leave(held);
    if (rc) {
        free(st);
        return rc;
    }
    *out = st;
    return WHISPERC_OK;
}

void whisperc_state_free(whisperc_state *st) {
    if (!st)
        return;
    api_batch_clear(st);
    transcript_free(&st->tr);
    struct api_thread held = api_thread_enter(st->m->be);
    state_close(st);
    api_thread_leave(held);
    silero_vad_free(st->silero);
    free(st->silero_path);
    audio_loudness_free(&st->loudness);
    free(st->suppress);
    free(st->regex);
    free(st->regex_ids);
    free(st);
}

int api_state_ready(whisperc_state *st) {
    if (st->s && !st->s->err)
        return 0;
    if (st->s && st->s->err == WHISPERC_ERR_DEVICE) /* the context, not the stream */
        return api_fail(st, WHISPERC_ERR_DEVICE, "%s", st->s->errmsg);
    state_close(st); /* first: its memory may be what the new one needs */
    char why[sizeof st->errmsg];
    int rc = state_open(st, why, sizeof why);
    return rc ? api_fail(st, rc, "%s", why) : 0;
}

const char *whisperc_state_errmsg(const whisperc_state *st) {
    return st ? st->errmsg : "invalid state (NULL)";
}

/* ---------------------------------------------------------------------------------------- */
/* Transcription                                                                             */

void whisperc_full_params_init(struct whisperc_full_params *out, size_t size,
                               whisperc_strategy strategy) {
    /* openai-whisper transcribe() and DecodingOptions defaults */
    struct whisperc_full_params p = {
        /*.size =*/sizeof(struct whisperc_full_params),
        /*.strategy =*/strategy,
        /*.n_threads =*/default_threads(),
        /*.language =*/NULL,
        /*.translate =*/false,
        /*.no_timestamps =*/false,
        /*.initial_prompt =*/NULL,
        /*.condition_on_previous_text =*/true,
        /*.n_temperatures =*/6,
        /*.temperatures =*/{0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f},
        /*.compression_ratio_threshold =*/2.4f,
        /*.logprob_threshold =*/-1.0f,
        /*.no_speech_threshold =*/0.6f,
        /*.suppress_blank =*/true,
        /*.suppress_non_speech =*/true,
        /*.max_initial_timestamp =*/1.0f,
        /*.sample_len =*/0,
        /*.beam_size =*/5,
        /*.best_of =*/strategy == WHISPERC_SAMPLING_BEAM_SEARCH ? 5 : 1,
        /*.patience =*/1.0f,
        /*.length_penalty =*/-1.0f,
        /*.seed =*/0,
        /*.new_segment_fn =*/NULL,
        /*.new_segment_user_data =*/NULL,
        /*.progress_fn =*/NULL,
        /*.progress_user_data =*/NULL,
        /*.abort_fn =*/NULL,
        /*.abort_user_data =*/NULL,
        /*.log_fn =*/NULL,
        /*.log_user_data =*/NULL,
        /*.prefix =*/NULL,
        /*.hotwords =*/NULL,
        /*.max_context =*/-1,
        /*.carry_initial_prompt =*/false,
        /*.word_timestamps =*/false,
        /*.prepend_punctuations =*/NULL,
        /*.append_punctuations =*/NULL,
        /*.alignment_heads =*/NULL,
        /*.max_len =*/0,
        /*.split_on_word =*/false,
        /*.vad =*/false,
        /*.vad_threshold =*/0.5f,
        /*.vad_min_speech_duration_ms =*/250,
        /*.vad_min_silence_duration_ms =*/100,
        /*.vad_speech_pad_ms =*/30,
        /*.max_audio_s =*/0.0,
        /*.batch_size =*/8,
        /*.offset_ms =*/0,
        /*.duration_ms =*/0,
        /*.vad_model_path =*/NULL,
        /*.suppress_tokens =*/NULL,
        /*.n_suppress_tokens =*/0,
        /*.suppress_regex =*/NULL,
        /*.diarize =*/false,
        /*.dtw_token_timestamps =*/false,
    };
    params_out(out, size, &p, sizeof p);
}

int api_fail(whisperc_state *st, int rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->errmsg, sizeof st->errmsg, fmt, ap);
    va_end(ap);
    return rc;
}

/* st->suppress: p's suppress_tokens and the text tokens its suppress_regex matches. The
 * regex's matches are kept while the regex stays the same: scanning the vocabulary takes
 * milliseconds, a short file's whole decoding on a GPU. */
static int suppress_set(whisperc_state *st, const struct whisperc_full_params *p) {
    const struct wc_vocab *v = &st->m->vocab;
    if (p->n_suppress_tokens < 0 || (p->n_suppress_tokens > 0 && !p->suppress_tokens))
        return api_fail(st, WHISPERC_ERR_INVALID_ARG,
                        "suppress_tokens is NULL but n_suppress_tokens is %d",
                        p->n_suppress_tokens);
    for (int i = 0; i < p->n_suppress_tokens; i++)
        if (p->suppress_tokens[i] < 0 || p->suppress_tokens[i] >= v->n_vocab)
            return api_fail(st, WHISPERC_ERR_INVALID_ARG,
                            "suppress_tokens[%d] is %d, outside the vocabulary [0, %d)", i,
                            (int)p->suppress_tokens[i], v->n_vocab);
    const char *regex = p->suppress_regex && p->suppress_regex[0] ? p->suppress_regex : NULL;
    if (!regex || !st->regex || strcmp(regex, st->regex) != 0) {
        free(st->regex);
        free(st->regex_ids);
        st->regex = NULL, st->regex_ids = NULL, st->n_regex_ids = 0;
        if (regex) {
            int n =
                logit_filters_regex_set(v, regex, &st->regex_ids, st->errmsg, sizeof st->errmsg);
            if (n < 0)
                return n == -2 ? WHISPERC_ERR_INVALID_ARG
                               : api_fail(st, WHISPERC_ERR_NO_MEMORY, "out of memory");
            st->n_regex_ids = n;
            if (!(st->regex = strdup(regex)))
                return api_fail(st, WHISPERC_ERR_NO_MEMORY, "out of memory");
        }
    }
    size_t n = (size_t)p->n_suppress_tokens + (size_t)st->n_regex_ids;
    int32_t *ids = n ? realloc(st->suppress, n * sizeof *ids) : NULL;
    if (n && !ids)
        return api_fail(st, WHISPERC_ERR_NO_MEMORY, "out of memory");
    if (n) { /* either part may be empty, its pointer NULL: no memcpy from NULL */
        for (int i = 0; i < p->n_suppress_tokens; i++)
            ids[i] = p->suppress_tokens[i];
        for (int i = 0; i < st->n_regex_ids; i++)
            ids[p->n_suppress_tokens + i] = st->regex_ids[i];
        st->suppress = ids;
    }
    st->n_suppress = (int)n;
    return 0;
}

/* Checks the params; on success *i_lang is the language index (-1: detect or English-only). */
int api_check_params(whisperc_state *st, const struct whisperc_full_params *p, int *i_lang) {
    const struct wc_vocab *v = &st->m->vocab;
    if (p->strategy != WHISPERC_SAMPLING_GREEDY && p->strategy != WHISPERC_SAMPLING_BEAM_SEARCH)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "unknown strategy %d", (int)p->strategy);
    if (p->strategy == WHISPERC_SAMPLING_BEAM_SEARCH &&
        (p->beam_size < 1 || p->beam_size > WC_MAX_GROUP))
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "beam_size must be 1..%d, got %d",
                        WC_MAX_GROUP, p->beam_size);
    if (p->best_of < 1 || p->best_of > WC_MAX_GROUP)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "best_of must be 1..%d, got %d", WC_MAX_GROUP,
                        p->best_of);
    if (p->strategy == WHISPERC_SAMPLING_BEAM_SEARCH &&
        !(p->patience > 0.0f && p->beam_size * p->patience >= 0.5f &&
          p->beam_size * p->patience <= 1000.0f))
        return api_fail(st, WHISPERC_ERR_INVALID_ARG,
                        "patience must be > 0 and beam_size * patience in [0.5, 1000], got %g",
                        p->patience);
    if (!(p->length_penalty < 0.0f || (p->length_penalty >= 0.0f && p->length_penalty <= 1.0f)))
        return api_fail(st, WHISPERC_ERR_INVALID_ARG,
                        "length_penalty must be < 0 (off) or in [0, 1], got %g", p->length_penalty);
    if (p->n_threads < 1 || p->n_threads > MAX_THREADS)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "n_threads must be 1..%d, got %d",
                        MAX_THREADS, p->n_threads);
    if (p->n_temperatures < 1 || p->n_temperatures > WHISPERC_MAX_TEMPERATURES)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "n_temperatures must be 1..%d, got %d",
                        WHISPERC_MAX_TEMPERATURES, p->n_temperatures);
    for (int i = 0; i < p->n_temperatures; i++)
        if (!(p->temperatures[i] >= 0.0f && p->temperatures[i] <= 100.0f))
            return api_fail(st, WHISPERC_ERR_INVALID_ARG, "temperature %g is out of range [0, 100]",
                            p->temperatures[i]);
    if (p->sample_len < 0 || p->sample_len > st->m->file->hp.n_text_ctx / 2)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "sample_len must be 0..%d, got %d",
                        st->m->file->hp.n_text_ctx / 2, p->sample_len);
    if (st->m->file->hp.n_audio_ctx * 2 != WC_CHUNK_FRAMES) /* the windows' frames */
        return api_fail(st, WHISPERC_ERR_UNSUPPORTED,
                        "this model's encoder takes %d frames (n_audio_ctx %d); transcription "
                        "takes 30 s windows of %d (n_audio_ctx %d)",
                        2 * st->m->file->hp.n_audio_ctx, st->m->file->hp.n_audio_ctx,
                        WC_CHUNK_FRAMES, WC_CHUNK_FRAMES / 2);
    if (p->max_context < -1)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "max_context must be >= -1, got %d",
                        p->max_context);
    if (p->max_len < 0)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "max_len must be >= 0, got %d", p->max_len);
    if (p->word_timestamps || p->max_len > 0 || p->dtw_token_timestamps) {
        struct wc_align_head *heads = NULL;
        int n = alignment_heads(&st->m->file->hp, p->alignment_heads, &heads);
        free(heads);
        if (n == -1)
            return api_fail(
                st, WHISPERC_ERR_INVALID_ARG,
                "alignment_heads '%s': not an official model of this model's shape (%s)",
                p->alignment_heads, whisperc_model_type(st->m));
    }
    if (p->offset_ms < 0 || p->duration_ms < 0)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG,
                        "offset_ms and duration_ms must be >= 0, got %d and %d", p->offset_ms,
                        p->duration_ms);
    if (p->vad && !(p->vad_threshold > 0.0f && p->vad_threshold <= 1.0f))
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "vad_threshold must be in (0, 1], got %g",
                        p->vad_threshold);
    if (p->vad &&
        (p->vad_min_speech_duration_ms < 0 || p->vad_min_silence_duration_ms < 0 ||
         p->vad_speech_pad_ms < 0 || p->vad_min_speech_duration_ms > VAD_MAX_MS ||
         p->vad_min_silence_duration_ms > VAD_MAX_MS || p->vad_speech_pad_ms > VAD_MAX_MS))
        return api_fail(st, WHISPERC_ERR_INVALID_ARG,
                        "vad durations must be 0..%d ms, got min speech %d, min silence %d, pad %d",
                        VAD_MAX_MS, p->vad_min_speech_duration_ms, p->vad_min_silence_duration_ms,
                        p->vad_speech_pad_ms);
    *i_lang = -1;
    bool detect = !p->language || !p->language[0] || strcasecmp(p->language, "auto") == 0;
    if (!detect) {
        *i_lang = lang_index(p->language);
        if (*i_lang < 0)
            return api_fail(st, WHISPERC_ERR_INVALID_ARG, "unknown language '%s'", p->language);
        if (!v->multilingual && *i_lang != 0)
            return api_fail(st, WHISPERC_ERR_UNSUPPORTED,
                            "this model is English-only; it cannot transcribe '%s' (use a "
                            "multilingual model)",
                            p->language);
        if (v->multilingual && *i_lang >= v->n_languages)
            return api_fail(st, WHISPERC_ERR_UNSUPPORTED, "this model does not know language '%s'",
                            p->language);
        if (!v->multilingual)
            *i_lang = -1;
    }
    if (!v->multilingual && p->translate)
        return api_fail(st, WHISPERC_ERR_UNSUPPORTED,
                        "this model is English-only; it cannot translate");
    return suppress_set(st, p);
}

struct callbacks {
    whisperc_state *st;
    const struct whisperc_full_params *p;
    const struct time_map *map; /* with VAD: gathered speech to the input's times */
    bool done_reported;         /* progress 100 given */
};

static bool on_window(void *user, int n_new, int percent) {
    struct callbacks *cb = user;
    /* New segments get the input's times before anyone sees them; transcribe() reads no time
     * of an earlier window's segments back. */
    if (n_new > 0 && cb->map)
        segments_remap(cb->st->tr.seg + cb->st->tr.n_seg - n_new, n_new, cb->map);
    if (n_new > 0 && cb->p->new_segment_fn)
        cb->p->new_segment_fn(cb->st, n_new, cb->p->new_segment_user_data);
    if (cb->p->progress_fn)
        cb->p->progress_fn(cb->st, percent, cb->p->progress_user_data);
    cb->done_reported |= percent >= 100;
    return cb->p->abort_fn && cb->p->abort_fn(cb->p->abort_user_data);
}

/* whisperc_detect_language's outputs. */
struct detect_req {
    float *probs;
    int n_probs;
    int *i_lang;
};

static int detect_only(struct transcribe_ctx *t, const struct mel_spec *mel,
                       const struct detect_req *det) {
    const struct wc_vocab *v = t->vocab;
    float *logits = malloc(2 * (size_t)v->n_vocab * sizeof *logits);
    float *probs = malloc((size_t)v->n_languages * sizeof *probs);
    int lang = -1;
    if (logits && probs)
        lang = transcribe_detect_language(t, mel, logits, probs);
    for (int i = 0; lang >= 0 && i < det->n_probs; i++)
        det->probs[i] = i < v->n_languages ? probs[i] : 0.0f;
    if (lang >= 0 && det->i_lang)
        *det->i_lang = lang;
    free(logits);
    free(probs);
    if (lang >= 0)
        return 0;
    if (!logits || !probs)
        return WHISPERC_ERR_NO_MEMORY;
    return t->s->err ? t->s->err : WHISPERC_ERR_BACKEND;
}

static int run_pcm(whisperc_state *st, const struct whisperc_full_params *p, const float *pcm,
                   int n, int i_lang, const struct detect_req *det, const struct time_map *map) {
    const struct whisperc_model *m = st->m;
    double t0 = wc_now_ms();
    struct mel_spec mel = {0};
    int rc = mel_compute(&mel, pcm, (size_t)n, WC_CHUNK_SAMPLES, m->file->mel_filters,
                         m->file->hp.n_mels, p->n_threads, st->errmsg, sizeof st->errmsg);
    st->timings.mel_ms = wc_now_ms() - t0;
    if (rc)
        return rc;
    struct callbacks cb = {st, p, map, false};
    struct transcribe_ctx t = api_transcribe_ctx(st, p, i_lang, on_window, &cb);
    if (det) {
        rc = detect_only(&t, &mel, det);
        if (rc)
            snprintf(st->errmsg, sizeof st->errmsg, "language detection: %s",
                     st->s->errmsg[0] ? st->s->errmsg : whisperc_status_str(rc));
    } else {
        rc = api_single_batched(st, p) ? api_transcribe_one_batched(st, p, &t, &mel, &st->tr)
                                       : WHISPERC_ERR_NO_MEMORY;
        if (rc == WHISPERC_ERR_NO_MEMORY && mel.data) /* not tried, or no room for a lane */
            rc = transcribe(&t, &mel, &st->tr, st->errmsg, sizeof st->errmsg);
    }
    mel_free(&mel);
    st->timings.encode_ms = t.encode_ms;
    st->timings.decode_ms = t.decode_ms;
    st->timings.n_windows = t.n_windows;
    st->timings.n_decode_tokens = t.n_decode_steps;
    st->timings.n_fallbacks = t.n_fallbacks;
    /* under 10 ms of audio (or of the part asked for) is no window (language detection may
     * have run on it): 100 all the same */
    if (!rc && !det && !cb.done_reported && p->progress_fn)
        p->progress_fn(st, 100, p->progress_user_data);
    if (!rc && !det && st->tr.i_language >= 0) /* (detection leaves the last results) */
        api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_INFO, "language: %s (p = %.2f)",
                lang_code(st->tr.i_language), st->tr.language_prob);
    return rc;
}

whisperc_status whisperc_vad_model_check(const char *path, char *errbuf, size_t errbuf_size) {
    if (!path) {
        wc_errf(errbuf, errbuf_size, "no VAD model path (NULL)");
        return WHISPERC_ERR_INVALID_ARG;
    }
    struct silero_vad *m = NULL;
    char err[512];
    int rc = silero_vad_load(path, &m, err, sizeof err);
    silero_vad_free(m);
    if (rc)
        wc_errf(errbuf, errbuf_size, "%s", err);
    return (whisperc_status)rc;
}

int api_vad_model(whisperc_state *st, const struct whisperc_full_params *p,
                  const struct silero_vad **out) {
    const char *path = p->vad_model_path && *p->vad_model_path ? p->vad_model_path : NULL;
    *out = NULL;
    if (!path)
        return 0;
    if (st->silero_path && strcmp(path, st->silero_path) == 0) {
        *out = st->silero;
        return 0;
    }
    silero_vad_free(st->silero);
    free(st->silero_path);
    st->silero = NULL;
    st->silero_path = NULL;
    double t0 = wc_now_ms();
    int rc = silero_vad_load(path, &st->silero, st->errmsg, sizeof st->errmsg);
    if (rc)
        return rc;
    st->silero_path = strdup(path);
    if (!st->silero_path) {
        silero_vad_free(st->silero);
        st->silero = NULL;
        return api_fail(st, WHISPERC_ERR_NO_MEMORY, "vad: out of memory");
    }
    api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_INFO, "vad: Silero VAD v%s from %s (%.0f ms)",
            silero_vad_version(st->silero), path, wc_now_ms() - t0);
    *out = st->silero;
    return 0;
}

int api_vad_speech(whisperc_state *st, const struct whisperc_full_params *p, const float *pcm,
                   int n, float **speech, size_t *n_speech, struct time_map *map) {
    double t0 = wc_now_ms();
    struct vad_params vp = {p->vad_threshold, p->vad_min_speech_duration_ms,
                            p->vad_min_silence_duration_ms, p->vad_speech_pad_ms, p->n_threads};
    struct vad_span *spans = NULL;
    size_t n_spans = 0, gap = VAD_GAP_MS * (WC_SAMPLE_RATE / 1000);
    *speech = NULL;
    *n_speech = 0;
    const struct silero_vad *silero = NULL;
    int rc = api_vad_model(st, p, &silero);
    if (!rc) /* errors with their own message */
        rc = vad_detect(silero, pcm, (size_t)n, &vp, &spans, &n_spans, st->errmsg,
                        sizeof st->errmsg);
    if (!rc) {
        vad_merge_close(spans, &n_spans, gap);
        rc = vad_gather(pcm, spans, n_spans, gap, speech, n_speech);
        if (!rc)
            rc = time_map_from_spans(map, spans, n_spans, gap, WC_SAMPLE_RATE);
        if (rc == WHISPERC_ERR_NO_MEMORY)
            api_fail(st, rc, "vad: out of memory for %zu speech spans", n_spans);
    }
    st->timings.vad_ms = wc_now_ms() - t0;
    st->timings.vad_seconds = (double)*n_speech / WC_SAMPLE_RATE;
    api_log(p->log_fn, p->log_user_data, WHISPERC_LOG_INFO,
            "vad: %zu speech spans, %.1f s of %.1f s, in %.0f ms", n_spans, st->timings.vad_seconds,
            (double)n / WC_SAMPLE_RATE, st->timings.vad_ms);
    free(spans);
    return rc;
}

int api_no_speech_transcript(whisperc_state *st, int i_lang, struct wc_transcript *out) {
    memset(out, 0, sizeof *out);
    out->text = calloc(1, 1);
    if (!out->text)
        return api_fail(st, WHISPERC_ERR_NO_MEMORY, "out of memory");
    out->i_language = i_lang;
    /* a multilingual model asked to detect has detected nothing: "en", as whisper.cpp, but
     * with probability 0 */
    out->language_prob = i_lang >= 0 || !st->m->vocab.multilingual ? 1.0f : 0.0f;
    return 0;
}

/* The result of audio with no speech: no segments, empty text (as whisper.cpp with VAD). */
static int no_speech_result(whisperc_state *st, const struct whisperc_full_params *p, int i_lang) {
    int rc = api_no_speech_transcript(st, i_lang, &st->tr);
    if (rc)
        return rc;
    if (p->progress_fn)
        p->progress_fn(st, 100, p->progress_user_data);
    return 0;
}

/* Transcription (or language detection) of pcm (its part offset_ms, duration_ms), through VAD
 * when asked: the speech is transcribed and the results mapped back to pcm's times. Language
 * detection always sees the part as given, without VAD. */
static int run_full(whisperc_state *st, const struct whisperc_full_params *p, const float *pcm,
                    int n, int i_lang, const struct detect_req *det) {
    /* offset_ms, duration_ms: the part [a, b) of pcm, its times moved back by a */
    int64_t a = (int64_t)p->offset_ms * (WC_SAMPLE_RATE / 1000), b = n;
    if (p->duration_ms > 0 && a + (int64_t)p->duration_ms * (WC_SAMPLE_RATE / 1000) < b)
        b = a + (int64_t)p->duration_ms * (WC_SAMPLE_RATE / 1000);
    if (a >= n)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG,
                        "offset_ms %d is at or past the end of the audio (%.0f ms)", p->offset_ms,
                        n * 1000.0 / WC_SAMPLE_RATE);
    pcm += a;
    n = (int)(b - a);
    double shift = (double)a / WC_SAMPLE_RATE;
    struct time_map map = {0};
    if (!p->vad || det) {
        int rc = time_map_shift(&map, shift);
        if (rc)
            return api_fail(st, rc, "out of memory");
        rc = run_pcm(st, p, pcm, n, i_lang, det, map.n ? &map : NULL);
        time_map_free(&map);
        return rc;
    }
    float *speech = NULL;
    size_t n_speech = 0;
    int rc = api_vad_speech(st, p, pcm, n, &speech, &n_speech, &map);
    if (!rc && time_map_shift(&map, shift))
        rc = api_fail(st, WHISPERC_ERR_NO_MEMORY, "out of memory");
    if (!rc && n_speech > (size_t)INT32_MAX)
        rc = api_fail(st, WHISPERC_ERR_UNSUPPORTED, "vad: %zu samples of speech is too long",
                      n_speech);
    if (!rc && n_speech == 0)
        rc = no_speech_result(st, p, i_lang);
    else if (!rc)
        rc = run_pcm(st, p, speech, (int)n_speech, i_lang, NULL, &map);
    free(speech);
    time_map_free(&map);
    return rc;
}

struct whisperc_full_params api_params_from(const struct whisperc_full_params *in) {
    /* Defaults for the fields an older caller's struct does not have, then its own. */
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    memcpy(&p, in, in->size < sizeof p ? in->size : sizeof p);
    return p;
}

int api_check_samples(whisperc_state *st, const struct whisperc_full_params *p, const float *pcm16k,
                      int n_samples) {
    if (!pcm16k || n_samples <= 0)
        return api_fail(st, WHISPERC_ERR_INVALID_ARG, "no audio samples (n_samples = %d)",
                        n_samples);
    for (int i = 0; i < n_samples; i++)
        if (!isfinite(pcm16k[i]))
            return api_fail(st, WHISPERC_ERR_AUDIO_FORMAT, "sample %d is not a finite number", i);
        else if (fabsf(pcm16k[i]) > WC_MAX_ABS_SAMPLE)
            return api_fail(st, WHISPERC_ERR_AUDIO_FORMAT,
                            "sample %d is %g, outside +-%g (not normalised to [-1, 1])", i,
                            (double)pcm16k[i], (double)WC_MAX_ABS_SAMPLE);
    if (p->max_audio_s > 0 && n_samples > p->max_audio_s * WC_SAMPLE_RATE)
        return api_fail(st, WHISPERC_ERR_UNSUPPORTED,
                        "%.1f s of audio, longer than the limit of %g s (max_audio_s)",
                        n_samples / (double)WC_SAMPLE_RATE, p->max_audio_s);
    return 0;
}

struct transcribe_ctx api_transcribe_ctx(whisperc_state *st, const struct whisperc_full_params *p,
                                         int i_lang, bool (*on_window)(void *, int, int),
                                         void *user) {
    const struct whisperc_model *m = st->m;
    return (struct transcribe_ctx){
        .hp = &m->file->hp,
        .vocab = &m->vocab,
        .s = st->s,
        .enc = &st->enc,
        .dec = &st->dec,
        .audio_features = st->audio_features,
        .p = p,
        .non_speech = m->non_speech,
        .n_non_speech = m->n_non_speech,
        .suppress_extra = st->suppress,
        .n_suppress_extra = st->n_suppress,
        .i_language = i_lang,
        .on_window = on_window,
        .user = user,
    };
}

int api_set_threads(whisperc_state *st, int n_threads) {
    if (n_threads == st->n_threads)
        return 0;
    int rc = st->s->be->ops->stream_set_threads(st->s, n_threads);
    if (rc)
        return api_fail(st, rc, "cannot start %d threads", n_threads);
    st->n_threads = n_threads;
    return 0;
}

/* whisperc_full, or language detection only when det is not NULL. */
static whisperc_status full_or_detect(whisperc_state *st, const struct whisperc_full_params *params,
                                      const float *pcm16k, int n_samples,
                                      const struct detect_req *det) {
    if (!st)
        return WHISPERC_ERR_INVALID_ARG;
    double t0 = wc_now_ms();
    double audio_ms = st->pending_audio_ms; /* set by whisperc_full_file */
    st->pending_audio_ms = 0;
    if (!det) { /* detection is no whisperc_full*: the last results stay as they are */
        if (!st->loudness_pending) /* the channels measured are those of another input */
            audio_loudness_free(&st->loudness);
        st->loudness_pending = false;
        transcript_free(&st->tr);
        st->has_result = false;
    }
    st->errmsg[0] = '\0';
    memset(&st->timings, 0, sizeof st->timings);
    st->timings.size = sizeof st->timings;
    st->timings.audio_ms = audio_ms;
    if (!params || params->size < sizeof(size_t))
        return api_fail(st, WHISPERC_ERR_INVALID_ARG,
                        "params must come from "
                        "whisperc_full_default_params()");
    struct whisperc_full_params p = api_params_from(params);
    if (det) /* ignored (the header): a language this model lacks is no error here */
        p.language = NULL;
    int i_lang = -1;
    int rc = api_check_samples(st, &p, pcm16k, n_samples);
    if (!rc)
        rc = api_check_params(st, &p, &i_lang);
    if (!rc && det && !st->m->vocab.multilingual)
        rc = api_fail(st, WHISPERC_ERR_UNSUPPORTED,
                      "this model is English-only; it has no language detection");
    if (!rc && det && det->n_probs > 0 && !det->probs)
        rc =
            api_fail(st, WHISPERC_ERR_INVALID_ARG, "probs is NULL but n_probs is %d", det->n_probs);
    /* beams at T = 0 and best_of samples at T > 0 share the decoder's caches (transcribe.c) */
    int n_group = p.strategy == WHISPERC_SAMPLING_BEAM_SEARCH ? p.beam_size : 1;
    n_group = p.best_of > n_group ? p.best_of : n_group;
    if (!rc)
        rc = api_state_ready(st);
    if (!rc && !det && n_group > st->dec.n_group_max &&
        api_state_budget_check(st->m, st, n_group, st->enc.n_windows, st->db.n_lanes,
                               st->db.n_regions, st->errmsg, sizeof st->errmsg))
        rc = WHISPERC_ERR_NO_MEMORY;
    if (!rc)
        rc = api_set_threads(st, p.n_threads);
    if (!rc)
        rc = run_full(st, &p, pcm16k, n_samples, i_lang, det);
    st->timings.audio_seconds = n_samples / (double)WC_SAMPLE_RATE;
    st->timings.total_ms = wc_now_ms() - t0 + audio_ms;
    if (!det) {
        st->has_result = rc == 0;
        if (!st->has_result)
            transcript_free(&st->tr);
    }
    return rc;
}

whisperc_status whisperc_full_params_check(whisperc_state *st,
                                           const struct whisperc_full_params *params) {
    if (!st)
        return WHISPERC_ERR_INVALID_ARG;
    st->errmsg[0] = '\0';
    if (!params || params->size < sizeof(size_t))
        return api_fail(st, WHISPERC_ERR_INVALID_ARG,
                        "params must come from whisperc_full_default_params()");
    struct whisperc_full_params p = api_params_from(params);
    int i_lang;
    return api_check_params(st, &p, &i_lang);
}

/* full_or_detect with the caller's thread given back as it was */
static whisperc_status full_or_detect_held(whisperc_state *st,
                                           const struct whisperc_full_params *params,
                                           const float *pcm16k, int n_samples,
                                           const struct detect_req *det) {
    struct api_thread held = api_thread_enter(st ? st->m->be : NULL);
    whisperc_status rc = full_or_detect(st, params, pcm16k, n_samples, det);
    api_thread_leave(held);
    return rc;
}

whisperc_status api_full(whisperc_state *st, const struct whisperc_full_params *params,
                         const float *pcm16k, int n_samples) {
    return full_or_detect_held(st, params, pcm16k, n_samples, NULL);
}

whisperc_status whisperc_full(whisperc_state *st, const struct whisperc_full_params *params,
                              const float *pcm16k, int n_samples) {
    api_batch_clear(st);
    return full_or_detect_held(st, params, pcm16k, n_samples, NULL);
}

whisperc_status whisperc_detect_language(whisperc_state *st,
                                         const struct whisperc_full_params *params,
                                         const float *pcm16k, int n_samples, float *probs,
                                         int n_probs, int *i_lang) {
    struct detect_req det = {probs, n_probs < 0 ? 0 : n_probs, i_lang};
    return full_or_detect_held(st, params, pcm16k, n_samples, &det);
}

/* The decoded samples as the API hands them out: at most INT32_MAX of them. */
static whisperc_status audio_out(int rc, float *pcm, size_t n, const char *name, float **out,
                                 int *n_samples, char *errbuf, size_t errbuf_size) {
    if (rc)
        return rc;
    if (n > (size_t)INT32_MAX) { /* ~37 hours at 16 kHz */
        free(pcm);
        wc_errf(errbuf, errbuf_size, "%s: too long (%.0f hours)", name, n / 16000.0 / 3600.0);
        return WHISPERC_ERR_UNSUPPORTED;
    }
    *out = pcm;
    *n_samples = (int)n;
    return WHISPERC_OK;
}

whisperc_status whisperc_load_audio(const char *path, float **out, int *n_samples, char *errbuf,
                                    size_t errbuf_size) {
    if (!path || !out || !n_samples) {
        wc_errf(errbuf, errbuf_size, "whisperc_load_audio: NULL argument");
        return WHISPERC_ERR_INVALID_ARG;
    }
    *out = NULL;
    *n_samples = 0;
    size_t n = 0;
    float *pcm = NULL;
    int rc = audio_load(path, &pcm, &n, errbuf, errbuf_size);
    return audio_out(rc, pcm, n, path, out, n_samples, errbuf, errbuf_size);
}

whisperc_status whisperc_state_load_audio(whisperc_state *st,
                                          const struct whisperc_full_params *params,
                                          const char *path, float **out, int *n_samples) {
    if (!st)
        return WHISPERC_ERR_INVALID_ARG;
    return whisperc_model_load_audio(st->m, params, path, out, n_samples, st->errmsg,
                                     sizeof st->errmsg);
}

/* What whisperc_full_file refuses before decoding: params->max_audio_s and the model's memory
 * budget. */
static struct audio_limits model_audio_limits(const whisperc_model *m,
                                              const struct whisperc_full_params *params) {
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_GREEDY);
    if (params && params->size >= sizeof(size_t))
        memcpy(&p, params, params->size < sizeof p ? params->size : sizeof p);
    /* Per 16 kHz sample: the float itself, its log-Mel column share (n_mels floats per 160
     * samples) and room for the STFT's scratch. */
    return (struct audio_limits){
        .max_s = p.max_audio_s,
        .max_bytes = mem_budget(m->max_memory_bytes),
        .bytes_per_sample = 8.0,
        .max_memory_bytes = m->max_memory_bytes,
    };
}

/* whisperc_model_load_audio, its arguments checked; with loudness, a stereo file's channels
 * measured too (params.diarize). */
static whisperc_status load_file(const whisperc_model *m, const struct whisperc_full_params *params,
                                 const char *path, struct audio_loudness *loudness, float **out,
                                 int *n_samples, char *errbuf, size_t errbuf_size) {
    *out = NULL;
    *n_samples = 0;
    struct audio_limits lim = model_audio_limits(m, params);
    lim.loudness = loudness;
    float *pcm = NULL;
    size_t n = 0;
    int rc = audio_load_limited(path, &lim, &pcm, &n, errbuf, errbuf_size);
    return audio_out(rc, pcm, n, path, out, n_samples, errbuf, errbuf_size);
}

whisperc_status whisperc_model_load_audio(const whisperc_model *m,
                                          const struct whisperc_full_params *params,
                                          const char *path, float **out, int *n_samples,
                                          char *errbuf, size_t errbuf_size) {
    if (!m || !path || !out || !n_samples) {
        wc_errf(errbuf, errbuf_size, "model, path, out and n_samples must not be NULL");
        return WHISPERC_ERR_INVALID_ARG;
    }
    return load_file(m, params, path, NULL, out, n_samples, errbuf, errbuf_size);
}

/* whisperc_decode_audio and _fd, their arguments checked: the size bytes at data, or what fd
 * gives when fd >= 0. */
static whisperc_status decode_input(const whisperc_model *m,
                                    const struct whisperc_full_params *params, const void *data,
                                    size_t size, int fd, const char *name, float **out,
                                    int *n_samples, char *errbuf, size_t errbuf_size) {
    *out = NULL;
    *n_samples = 0;
    struct audio_limits lim = m ? model_audio_limits(m, params) : (struct audio_limits){0};
    const struct audio_limits *l = m ? &lim : NULL;
    float *pcm = NULL;
    size_t n = 0;
    int rc = fd >= 0 ? audio_load_fd(fd, name, l, &pcm, &n, errbuf, errbuf_size)
                     : audio_load_memory(data, size, name, l, &pcm, &n, errbuf, errbuf_size);
    return audio_out(rc, pcm, n, name, out, n_samples, errbuf, errbuf_size);
}

whisperc_status whisperc_decode_audio(const whisperc_model *m,
                                      const struct whisperc_full_params *params, const void *data,
                                      size_t size, const char *name, float **out, int *n_samples,
                                      char *errbuf, size_t errbuf_size) {
    if (!out || !n_samples) {
        wc_errf(errbuf, errbuf_size, "whisperc_decode_audio: out and n_samples must not be NULL");
        return WHISPERC_ERR_INVALID_ARG;
    }
    return decode_input(m, params, data, size, -1, name ? name : "audio in memory", out, n_samples,
                        errbuf, errbuf_size);
}

whisperc_status whisperc_decode_audio_fd(const whisperc_model *m,
                                         const struct whisperc_full_params *params, int fd,
                                         const char *name, float **out, int *n_samples,
                                         char *errbuf, size_t errbuf_size) {
    if (!out || !n_samples || fd < 0) {
        wc_errf(errbuf, errbuf_size, "whisperc_decode_audio_fd: fd %d, out or n_samples NULL", fd);
        return WHISPERC_ERR_INVALID_ARG;
    }
    return decode_input(m, params, NULL, 0, fd, name ? name : "audio from a file descriptor", out,
                        n_samples, errbuf, errbuf_size);
}

whisperc_status whisperc_full_file(whisperc_state *st, const struct whisperc_full_params *params,
                                   const char *path) {
    if (!st)
        return WHISPERC_ERR_INVALID_ARG;
    double t0 = wc_now_ms();
    float *pcm = NULL;
    int n = 0;
    bool diarize = params && params->size >= sizeof(size_t) && api_params_from(params).diarize;
    int rc = path ? load_file(st->m, params, path, diarize ? &st->loudness : NULL, &pcm, &n,
                              st->errmsg, sizeof st->errmsg)
                  : (whisperc_status)api_fail(st, WHISPERC_ERR_INVALID_ARG, "path is NULL");
    if (rc) { /* as any failed call: no results nor timings left from the last one */
        memset(&st->timings, 0, sizeof st->timings);
        st->timings.size = sizeof st->timings;
        st->timings.total_ms = wc_now_ms() - t0;
        audio_loudness_free(&st->loudness);
        api_batch_clear(st);
        transcript_free(&st->tr);
        st->has_result = false;
        return rc;
    }
    st->pending_audio_ms = wc_now_ms() - t0;
    st->loudness_pending = diarize;
    rc = whisperc_full(st, params, pcm, n);
    free(pcm);
    return rc;
}
