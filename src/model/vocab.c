/*
 * vocab.c — see vocab.h.
 *
 * The id layout follows openai-whisper (tokenizer.py, model.py): a model is multilingual when
 * n_vocab >= 51865; its BPE ranks are those of multilingual.tiktoken (50257 of them, the last an
 * empty string) and <|endoftext|> is 50257; ".en" models use gpt2.tiktoken (50256 ranks) and
 * <|endoftext|> is 50256 (ggml .en files store that text as their 50257th token). The number of
 * languages is what is left: n_vocab - eot - 8 - 1501 (99; 100 for large-v3).
 *
 * ggml files store the BPE tokens that are not valid UTF-8 on their own lossily (see bpe.h,
 * vocab_fix.c); vocab_init restores their bytes.
 */
#include "model/vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libwhisperc.h"
#include "model/bpe.h"
#include "model/languages.h"
#include "model/model_file.h"
#include "util.h"

#define N_TIMESTAMPS 1501
#define EOT_GPT2     50256 /* len(gpt2.tiktoken) */

static int set_text(struct wc_vocab *v, int id, const void *bytes, size_t len) {
    char *p = malloc(len + 1);
    if (!p)
        return -1;
    if (len)
        memcpy(p, bytes, len);
    p[len] = '\0';
    free(v->text[id]);
    v->text[id] = p;
    v->text_len[id] = (int)len;
    return 0;
}

static int set_special(struct wc_vocab *v, int id, const char *name) {
    char buf[64];
    int len = snprintf(buf, sizeof buf, "<|%s|>", name);
    return set_text(v, id, buf, (size_t)len);
}

/* Puts back the exact bytes of the tokens the file holds as their U+FFFD-replaced form. */
static int restore_lossy_tokens(struct wc_vocab *v, int n_file) {
    int n_fix;
    const struct bpe_token_fix *fix = bpe_token_fixes(v->multilingual, &n_fix);
    char lossy[3 * 255];
    for (int i = 0; i < n_fix; i++) {
        int id = fix[i].id;
        if (id >= n_file || id >= v->eot)
            continue;
        size_t n = utf8_replace(lossy, (const uint8_t *)fix[i].bytes, fix[i].len);
        if ((size_t)v->text_len[id] == n && memcmp(v->text[id], lossy, n) == 0 &&
            set_text(v, id, fix[i].bytes, fix[i].len))
            return -1;
    }
    return 0;
}

int vocab_init(struct wc_vocab *v, const struct wc_model_file *f, char *err, size_t err_size) {
    memset(v, 0, sizeof *v);
    int n_vocab = f->hp.n_vocab;
    bool multilingual = n_vocab >= 51865;
    int eot = EOT_GPT2 + (multilingual ? 1 : 0);
    int n_languages = n_vocab - eot - 8 - N_TIMESTAMPS;
    if (n_languages < 1 || n_languages > WC_N_LANGUAGES) {
        wc_errf(err, err_size,
                "%s: n_vocab %d is not a Whisper vocabulary (51864 for .en models, 51865 or "
                "51866 for multilingual ones)",
                f->path, n_vocab);
        return n_languages > WC_N_LANGUAGES ? WHISPERC_ERR_UNSUPPORTED : WHISPERC_ERR_MODEL_FORMAT;
    }
    if (f->n_tokens < 256) {
        wc_errf(err, err_size, "%s: the vocabulary has %d tokens, expected %d", f->path,
                f->n_tokens, eot);
        return WHISPERC_ERR_MODEL_FORMAT;
    }
    v->n_vocab = n_vocab;
    v->multilingual = multilingual;
    v->n_languages = n_languages;
    v->eot = eot;
    v->sot = eot + 1;
    v->translate = v->sot + n_languages + 1;
    v->transcribe = v->translate + 1;
    v->sot_lm = v->translate + 2;
    v->sot_prev = v->translate + 3;
    v->no_speech = v->translate + 4;
    v->no_timestamps = v->translate + 5;
    v->timestamp_begin = v->translate + 6;

    v->text = calloc((size_t)n_vocab, sizeof *v->text);
    v->text_len = calloc((size_t)n_vocab, sizeof *v->text_len);
    if (!v->text || !v->text_len)
        goto oom;
    /* BPE tokens: ids the file lacks (below eot) stay empty; file entries from eot on (the .en
     * files' "<|endoftext|>") are replaced by the specials. */
    int n_file = f->n_tokens < eot ? f->n_tokens : eot;
    for (int id = 0; id < eot; id++)
        if (set_text(v, id, id < n_file ? f->token_bytes[id] : NULL,
                     id < n_file ? f->token_len[id] : 0))
            goto oom;
    if (restore_lossy_tokens(v, n_file))
        goto oom;

    static const char *const task_tokens[] = {"translate",   "transcribe", "startoflm",
                                              "startofprev", "nospeech",   "notimestamps"};
    if (set_special(v, v->eot, "endoftext") || set_special(v, v->sot, "startoftranscript"))
        goto oom;
    for (int i = 0; i < n_languages; i++)
        if (set_special(v, v->sot + 1 + i, lang_code(i)))
            goto oom;
    for (int i = 0; i < 6; i++)
        if (set_special(v, v->translate + i, task_tokens[i]))
            goto oom;
    for (int i = 0; i < N_TIMESTAMPS; i++) {
        char ts[16];
        /* Python's f"{i * 0.02:.2f}", written without %f: a program's LC_NUMERIC would make it
         * "0,02" */
        snprintf(ts, sizeof ts, "%d.%02d", i / 50, i % 50 * 2);
        if (set_special(v, v->timestamp_begin + i, ts))
            goto oom;
    }

    char msg[256];
    int rc = bpe_new(&v->bpe, v->text, v->text_len, eot, msg, sizeof msg);
    if (rc) {
        vocab_free(v);
        wc_errf(err, err_size, "%s: %s", f->path, msg);
        return rc;
    }
    return 0;
oom:
    vocab_free(v);
    wc_errf(err, err_size, "%s: out of memory", f->path);
    return WHISPERC_ERR_NO_MEMORY;
}

void vocab_free(struct wc_vocab *v) {
    if (v->text)
        for (int i = 0; i < v->n_vocab; i++)
            free(v->text[i]);
    free(v->text);
    free(v->text_len);
    bpe_free(v->bpe);
    memset(v, 0, sizeof *v);
}

int vocab_lang_token(const struct wc_vocab *v, int i_lang) {
    return i_lang >= 0 && i_lang < v->n_languages ? v->sot + 1 + i_lang : -1;
}

/* The bytes of the tokens below `end`, made valid UTF-8 (vocab_decode, vocab_decode_all). */
static char *decode_below(const struct wc_vocab *v, const int32_t *tokens, int n_tokens, int end) {
    size_t n = 0;
    for (int i = 0; i < n_tokens; i++)
        if (tokens[i] >= 0 && tokens[i] < end)
            n += (size_t)v->text_len[tokens[i]];
    uint8_t *bytes = malloc(n ? n : 1);
    char *out = malloc(3 * n + 1);
    if (!bytes || !out) {
        free(bytes);
        free(out);
        return NULL;
    }
    size_t k = 0;
    for (int i = 0; i < n_tokens; i++)
        if (tokens[i] >= 0 && tokens[i] < end) {
            memcpy(bytes + k, v->text[tokens[i]], (size_t)v->text_len[tokens[i]]);
            k += (size_t)v->text_len[tokens[i]];
        }
    out[utf8_replace(out, bytes, n)] = '\0';
    free(bytes);
    return out;
}

char *vocab_decode(const struct wc_vocab *v, const int32_t *tokens, int n_tokens) {
    return decode_below(v, tokens, n_tokens, v->eot);
}

char *vocab_decode_all(const struct wc_vocab *v, const int32_t *tokens, int n_tokens) {
    return decode_below(v, tokens, n_tokens, v->timestamp_begin);
}

int vocab_encode(const struct wc_vocab *v, const char *text, int32_t **out) {
    struct bpe_out o = {0};
    *out = NULL;
    if (!text)
        text = "";
    if (bpe_encode(v->bpe, (const uint8_t *)text, strlen(text), &o)) {
        free(o.ids);
        return -1;
    }
    if (!o.ids && !(o.ids = malloc(sizeof *o.ids))) /* a valid pointer even for "" */
        return -1;
    *out = o.ids;
    return o.n;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Adds the first token of encode(text) to *set when the text encodes to a single token, or
 * always when `always`. */
static int add_first_token(const struct wc_vocab *v, const char *text, bool always,
                           struct bpe_out *set) {
    struct bpe_out o = {0};
    int rc = bpe_encode(v->bpe, (const uint8_t *)text, strlen(text), &o);
    if (!rc && o.n > 0 && (o.n == 1 || always)) {
        if (set->n == set->cap) {
            int cap = set->cap ? 2 * set->cap : 128;
            int32_t *p = realloc(set->ids, (size_t)cap * sizeof *p);
            if (p) {
                set->ids = p;
                set->cap = cap;
            } else {
                rc = -1;
            }
        }
        if (!rc)
            set->ids[set->n++] = o.ids[0];
    }
    free(o.ids);
    return rc;
}

/* encode(symbol) and encode(" " + symbol) */
static int add_symbol(const struct wc_vocab *v, const char *sym, bool always, struct bpe_out *set) {
    char buf[32];
    snprintf(buf, sizeof buf, " %s", sym);
    return add_first_token(v, sym, always, set) || add_first_token(v, buf, always, set) ? -1 : 0;
}

int vocab_non_speech_tokens(const struct wc_vocab *v, int32_t **out) {
    /* tokenizer.non_speech_tokens: list('"#()*+/:;<=>@[\\]^_`{|}~「」『』') + "<< >> <<< >>> -- ---
     * -( -[ (' (\" (( )) ((( ))) [[ ]] {{ }} ♪♪ ♪♪♪".split() */
    static const char ascii_symbols[] = "\"#()*+/:;<=>@[\\]^_`{|}~";
    // clang-format off
    static const char *const symbols[] = {
        "\xe3\x80\x8c", "\xe3\x80\x8d", "\xe3\x80\x8e", "\xe3\x80\x8f", "<<", ">>", "<<<", ">>>",
        "--", "---", "-(", "-[", "('", "(\"", "((", "))", "(((", ")))", "[[", "]]", "{{", "}}",
        "\xe2\x99\xaa\xe2\x99\xaa", "\xe2\x99\xaa\xe2\x99\xaa\xe2\x99\xaa", /* ♪♪ ♪♪♪ */
    };
    // clang-format on
    /* U+2640..U+267F symbols that may take several tokens: the first one is suppressed */
    static const char *const miscellaneous[] = {
        "\xe2\x99\xa9", "\xe2\x99\xaa", "\xe2\x99\xab", "\xe2\x99\xac",
        "\xe2\x99\xad", "\xe2\x99\xae", "\xe2\x99\xaf", /* ♩♪♫♬♭♮♯ */
    };
    struct bpe_out set = {0};
    *out = NULL;
    /* hyphens and single quotes are allowed between words, not at the start of one */
    int rc = add_first_token(v, " -", true, &set) || add_first_token(v, " '", true, &set) ? -1 : 0;
    for (size_t i = 0; i + 1 < sizeof ascii_symbols && !rc; i++) {
        char sym[2] = {ascii_symbols[i], '\0'};
        rc = add_symbol(v, sym, false, &set);
    }
    for (size_t i = 0; i < sizeof symbols / sizeof *symbols && !rc; i++)
        rc = add_symbol(v, symbols[i], false, &set);
    for (size_t i = 0; i < sizeof miscellaneous / sizeof *miscellaneous && !rc; i++)
        rc = add_symbol(v, miscellaneous[i], true, &set);
    if (rc) {
        free(set.ids);
        return -1;
    }
    qsort(set.ids, (size_t)set.n, sizeof *set.ids, cmp_i32);
    int m = 0;
    for (int i = 0; i < set.n; i++)
        if (m == 0 || set.ids[m - 1] != set.ids[i])
            set.ids[m++] = set.ids[i];
    *out = set.ids;
    return m;
}
