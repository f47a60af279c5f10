/*
 * decode_window.c — see decode_window.h. Mirrors openai-whisper decoding.py: DecodingTask
 * (_get_initial_tokens, _main_loop, run), GreedyDecoder and detect_language.
 */
#include "decoder/decode_window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "backend.h"
#include "decoder/decoder.h"
#include "decoder/logit_filters.h"
#include "libwhisperc.h"
#include "model/vocab.h"

double compression_ratio(const char *text) {
    size_t n = strlen(text);
    uLongf cap = compressBound((uLong)n);
    unsigned char *buf = malloc(cap);
    if (!buf)
        return 0.0;
    double r = 0.0;
    /* Python's zlib.compress(data) is compress2 at Z_DEFAULT_COMPRESSION */
    if (compress2(buf, &cap, (const Bytef *)text, (uLong)n, Z_DEFAULT_COMPRESSION) == Z_OK)
        r = (double)n / (double)cap;
    free(buf);
    return r;
}

static double logsumexp_all(const float *x, int n) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    double s = 0;
    for (int i = 0; i < n; i++)
        s += exp((double)x[i] - m);
    return m + log(s);
}

static int argmax(const float *x, int n) {
    int best = 0; /* first maximum, as torch.argmax */
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* Categorical(logits / T).sample() */
static int sample(const float *x, int n, float temperature, struct wc_rng *rng) {
    float m = x[argmax(x, n)];
    double total = 0;
    for (int i = 0; i < n; i++)
        total += exp(((double)x[i] - m) / temperature);
    double u = wc_rng_uniform(rng) * total, acc = 0;
    int last = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] == -INFINITY)
            continue;
        acc += exp(((double)x[i] - m) / temperature);
        last = i;
        if (u < acc)
            return i;
    }
    return last;
}

/* [sot_prev] + prompt[-(n_ctx/2 - 1):] + sot_sequence; returns the length, *sot_index set. */
static int initial_tokens(const struct decode_opts *o, int n_text_ctx, const struct wc_vocab *v,
                          int32_t *out, int *sot_index) {
    int n = 0;
    if (o->prompt && o->n_prompt > 0) {
        int keep = o->n_prompt < n_text_ctx / 2 - 1 ? o->n_prompt : n_text_ctx / 2 - 1;
        out[n++] = v->sot_prev;
        memcpy(out + n, o->prompt + (o->n_prompt - keep), (size_t)keep * sizeof *out);
        n += keep;
    }
    *sot_index = n;
    memcpy(out + n, o->sot_sequence, (size_t)o->n_sot_sequence * sizeof *out);
    return n + o->n_sot_sequence;
}

static int finish(const struct wc_vocab *v, struct decode_result *r) {
    r->avg_logprob = r->sum_logprob / (r->n_tokens + 1); /* + 1 for the EOT */
    r->text = vocab_decode(v, r->tokens, r->n_tokens);
    if (!r->text)
        return WHISPERC_ERR_NO_MEMORY;
    wc_py_strip(r->text);
    r->compression_ratio = compression_ratio(r->text);
    return 0;
}

int decode_window(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v,
                  const struct decode_opts *o, float *logits, struct decode_result *r) {
    int n_ctx = d->hp->n_text_ctx, n_vocab = v->n_vocab;
    memset(r, 0, sizeof *r);
    r->temperature = o->temperature;
    int32_t *seq = malloc((size_t)(n_ctx + 2) * sizeof *seq);
    r->tokens = malloc((size_t)(o->sample_len + 1) * sizeof *r->tokens);
    r->logprobs = malloc((size_t)(o->sample_len + 1) * sizeof *r->logprobs);
    if (!seq || !r->tokens || !r->logprobs) {
        free(seq);
        return WHISPERC_ERR_NO_MEMORY;
    }
    int sot_index, n_seq = initial_tokens(o, n_ctx, v, seq, &sot_index);
    int sample_begin = n_seq, rc = 0;

    decoder_reset(d);
    for (int i = 0; i < o->sample_len; i++) {
        float *last = logits;
        r->n_steps++;
        if (i == 0) {
            int rows[2] = {sample_begin - 1, sot_index};
            int n_rows = sot_index == sample_begin - 1 ? 1 : 2;
            rc = decoder_forward(d, s, seq, n_seq, rows, n_rows, logits);
            if (rc)
                break;
            /* no_speech_prob: softmax of the raw logits at the sot position */
            const float *at_sot = logits + (size_t)(n_rows - 1) * n_vocab;
            r->no_speech_prob = exp(at_sot[v->no_speech] - logsumexp_all(at_sot, n_vocab));
        } else {
            int row = 0;
            rc = decoder_forward(d, s, seq + n_seq - 1, 1, &row, 1, logits);
            if (rc)
                break;
        }
        logit_filters_apply(o->filters, last, seq + sample_begin, n_seq - sample_begin);
        int next = o->temperature == 0.0f ? argmax(last, n_vocab)
                                          : sample(last, n_vocab, o->temperature, o->rng);
        float lp = (float)(last[next] - logsumexp_all(last, n_vocab));
        r->sum_logprob += lp;
        seq[n_seq++] = next;
        if (next == v->eot)
            break;
        r->tokens[r->n_tokens] = next;
        r->logprobs[r->n_tokens++] = lp;
        if (n_seq > n_ctx)
            break;
    }
    free(seq);
    if (rc)
        return rc;
    return finish(v, r);
}

void decode_result_free(struct decode_result *r) {
    free(r->tokens);
    free(r->logprobs);
    free(r->text);
    memset(r, 0, sizeof *r);
}

int detect_language(struct decoder *d, struct wc_stream *s, const struct wc_vocab *v,
                    float *logits, float *probs) {
    int32_t sot = v->sot;
    int row = 0;
    decoder_reset(d);
    if (decoder_forward(d, s, &sot, 1, &row, 1, logits))
        return -1;
    /* softmax over the language tokens only (every other logit is -inf) */
    float m = -INFINITY;
    for (int i = 0; i < v->n_languages; i++)
        m = logits[v->sot + 1 + i] > m ? logits[v->sot + 1 + i] : m;
    double total = 0;
    for (int i = 0; i < v->n_languages; i++)
        total += exp((double)logits[v->sot + 1 + i] - m);
    int best = 0;
    for (int i = 0; i < v->n_languages; i++) {
        probs[i] = (float)(exp((double)logits[v->sot + 1 + i] - m) / total);
        if (logits[v->sot + 1 + i] > logits[v->sot + 1 + best])
            best = i;
    }
    return best;
}
