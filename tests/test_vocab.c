/*
 * test_vocab.c — the vocabulary of the real tiny.en and base files (src/model/vocab.c, bpe.c)
 * against openai-whisper's tokenizer: tests/data/tokenizer-fixture.txt, written by
 * tools/gen-tokenizer-fixture.py (the line formats are described there); and max_len's cuts
 * (segment_wrap.c) between characters that span tokens.
 *
 * Usage: test_vocab <fixture>. Exit 77 when the shared models are missing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "decoder/segment_wrap.h"
#include "decoder/transcribe.h"
#include "libwhisperc.h"
#include "model/bpe.h"
#include "model/model_file.h"
#include "model/vocab.h"

enum { GPT2, ML, ML100, N_ENC };
static const char *const enc_names[N_ENC] = {"gpt2", "multilingual", "multilingual100"};

static int enc_index(const char *name) {
    for (int i = 0; i < N_ENC; i++)
        if (strcmp(name, enc_names[i]) == 0)
            return i;
    return -1;
}

/* "-" is empty; returns the byte count, or -1. out holds strlen(hex)/2 + 1 bytes. */
static int parse_hex(const char *hex, char *out) {
    if (strcmp(hex, "-") == 0) {
        out[0] = '\0';
        return 0;
    }
    size_t n = strlen(hex);
    if (n % 2)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (char)v;
    }
    out[n / 2] = '\0';
    return (int)(n / 2);
}

/* Comma-separated ids, "-" for none. Returns the count; ids holds strlen(s) entries. */
static int parse_ids(const char *s, int32_t *ids) {
    if (strcmp(s, "-") == 0)
        return 0;
    int n = 0;
    for (const char *p = s; *p;) {
        char *end;
        ids[n++] = (int32_t)strtol(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p)
            return -1;
    }
    return n;
}

static void print_ids(const char *what, const int32_t *ids, int n) {
    fprintf(stderr, "    %s:", what);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%d", i ? "," : " ", ids[i]);
    fprintf(stderr, "\n");
}

static int same_ids(const int32_t *a, int na, const int32_t *b, int nb) {
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

static uint64_t token_hash(const struct wc_vocab *v) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int id = 0; id < v->eot; id++) {
        uint32_t len = (uint32_t)v->text_len[id];
        uint8_t b[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                        (uint8_t)(len >> 24)};
        for (int i = 0; i < 4; i++)
            h = (h ^ b[i]) * 0x100000001b3ull;
        for (uint32_t i = 0; i < len; i++)
            h = (h ^ (uint8_t)v->text[id][i]) * 0x100000001b3ull;
    }
    return h;
}

static int n_reported = 0;
#define FAIL_LINE(lineno, ...)                                                                     \
    do {                                                                                           \
        test_failures++;                                                                           \
        if (n_reported++ < 40) {                                                                   \
            fprintf(stderr, "fixture line %d: ", lineno);                                          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

static void check_line(struct wc_vocab *vs, char *line, int lineno, int *counts) {
    char *save = NULL;
    char *kind = strtok_r(line, " ", &save);
    if (!kind || kind[0] == '#')
        return;
    if (strcmp(kind, "timestamps") == 0) {
        char *t;
        int i = 0, bad = 0;
        while ((t = strtok_r(NULL, " ", &save)) != NULL) {
            char want[32];
            snprintf(want, sizeof want, "<|%s|>", t);
            for (int e = 0; e < N_ENC; e++) {
                int id = vs[e].timestamp_begin + i;
                bad += id >= vs[e].n_vocab || strcmp(vs[e].text[id], want) != 0 ||
                       vs[e].text_len[id] != (int)strlen(want);
            }
            i++;
        }
        if (bad || i != 1501)
            FAIL_LINE(lineno, "timestamps: %d texts, %d mismatches", i, bad);
        counts[0]++;
        return;
    }
    char *ename = strtok_r(NULL, " ", &save);
    int e = ename ? enc_index(ename) : -1;
    if (e < 0) {
        FAIL_LINE(lineno, "bad line");
        return;
    }
    struct wc_vocab *v = &vs[e];
    if (strcmp(kind, "layout") == 0) {
        int want[11], got[11] = {v->n_vocab,         v->eot,        v->sot,
                                 v->translate,       v->transcribe, v->sot_lm,
                                 v->sot_prev,        v->no_speech,  v->no_timestamps,
                                 v->timestamp_begin, v->n_languages};
        for (int i = 0; i < 11; i++) {
            char *f = strtok_r(NULL, " ", &save);
            want[i] = f ? atoi(f) : -1;
        }
        if (memcmp(want, got, sizeof want) != 0)
            FAIL_LINE(lineno, "%s layout differs", ename);
        CHECK(v->multilingual == (e != GPT2));
    } else if (strcmp(kind, "hash") == 0) {
        char *f = strtok_r(NULL, " ", &save);
        unsigned long long want = f ? strtoull(f, NULL, 16) : 0;
        if (token_hash(v) != want)
            FAIL_LINE(lineno, "%s: the BPE token bytes differ from tiktoken's", ename);
    } else if (strcmp(kind, "specials") == 0) {
        char *t;
        int id = v->eot;
        while ((t = strtok_r(NULL, " ", &save)) != NULL) {
            if (strcmp(v->text[id], t) != 0 || v->text_len[id] != (int)strlen(t))
                FAIL_LINE(lineno, "%s: id %d is \"%s\", expected \"%s\"", ename, id, v->text[id],
                          t);
            id++;
        }
        if (id != v->timestamp_begin)
            FAIL_LINE(lineno, "%s: %d specials before the timestamps, expected %d", ename,
                      id - v->eot, v->timestamp_begin - v->eot);
    } else if (strcmp(kind, "nonspeech") == 0) {
        char *f = strtok_r(NULL, " ", &save);
        int32_t *want = malloc(strlen(f) * sizeof *want), *got = NULL;
        int nw = parse_ids(f, want);
        int ng = vocab_non_speech_tokens(v, &got);
        if (!same_ids(want, nw, got, ng)) {
            FAIL_LINE(lineno, "%s: non_speech_tokens differ", ename);
            print_ids("expected", want, nw);
            print_ids("got     ", got, ng);
        }
        free(want);
        free(got);
    } else if (strcmp(kind, "enc") == 0) {
        char *hex = strtok_r(NULL, " ", &save), *f = strtok_r(NULL, " ", &save);
        char *text = malloc(strlen(hex) / 2 + 2);
        int32_t *want = malloc((strlen(f) + 1) * sizeof *want), *got = NULL;
        int nw = parse_ids(f, want);
        CHECK(parse_hex(hex, text) >= 0);
        int ng = vocab_encode(v, text, &got);
        CHECK(got != NULL);
        if (!same_ids(want, nw, got, ng)) {
            FAIL_LINE(lineno, "%s: encode(\"%s\") differs", ename, text);
            print_ids("expected", want, nw);
            print_ids("got     ", got, ng);
        }
        counts[1]++;
        free(text);
        free(want);
        free(got);
    } else if (strcmp(kind, "dec") == 0) {
        char *f = strtok_r(NULL, " ", &save), *hex = strtok_r(NULL, " ", &save);
        char *want = malloc(strlen(hex) / 2 + 2);
        int32_t *ids = malloc((strlen(f) + 1) * sizeof *ids);
        int n = parse_ids(f, ids);
        int nw = parse_hex(hex, want);
        char *got = vocab_decode(v, ids, n);
        if (!got || (int)strlen(got) != nw || memcmp(got, want, (size_t)nw) != 0) {
            FAIL_LINE(lineno, "%s: decode differs: \"%s\", expected \"%s\"", ename,
                      got ? got : "(null)", want);
            print_ids("ids", ids, n);
        }
        counts[2]++;
        free(got);
        free(want);
        free(ids);
    } else {
        FAIL_LINE(lineno, "unknown line kind %s", kind);
    }
}

/* Checks that need no fixture: the rank table, language tokens, invalid UTF-8, long inputs. */
static void check_invariants(const struct wc_vocab *v, const char *name) {
    /* every BPE token is found under its own id (the bytes are unique and complete) */
    int bad = 0;
    for (int id = 0; id < v->eot; id++)
        if (v->text_len[id] > 0 &&
            bpe_rank(v->bpe, (const uint8_t *)v->text[id], (size_t)v->text_len[id]) != id)
            bad++;
    if (bad)
        fprintf(stderr, "%s: %d BPE tokens not found under their own id\n", name, bad);
    CHECK(bad == 0);
    for (int b = 0; b < 256; b++) {
        uint8_t c = (uint8_t)b;
        CHECK(bpe_rank(v->bpe, &c, 1) >= 0);
    }
    CHECK(bpe_rank(v->bpe, (const uint8_t *)"<|endoftext|>", 13) < 0);

    CHECK(vocab_lang_token(v, -1) == -1);
    CHECK(vocab_lang_token(v, 0) == v->sot + 1);
    CHECK(strcmp(v->text[vocab_lang_token(v, 0)], "<|en|>") == 0);
    CHECK(vocab_lang_token(v, v->n_languages - 1) == v->translate - 1);
    CHECK(vocab_lang_token(v, v->n_languages) == -1);

    /* invalid UTF-8 is encoded byte-wise: the tokens give back exactly the input bytes */
    struct test_rng rng = {12345};
    for (int iter = 0; iter < 2000; iter++) {
        char in[40];
        int n = 1 + (int)((test_rng_uniform(&rng) + 1.0f) * 19.0f);
        for (int i = 0; i < n; i++) {
            float u = test_rng_uniform(&rng);
            int c = (int)((u + 1.0f) * 127.5f);
            in[i] = (char)(c == 0 ? 1 : c);
        }
        in[n] = '\0';
        int32_t *ids = NULL;
        int m = vocab_encode(v, in, &ids);
        char back[40 * 40];
        size_t k = 0;
        int ok = m >= 0;
        for (int i = 0; ok && i < m; i++) {
            ok = ids[i] >= 0 && ids[i] < v->eot && k + (size_t)v->text_len[ids[i]] <= sizeof back;
            if (ok) {
                memcpy(back + k, v->text[ids[i]], (size_t)v->text_len[ids[i]]);
                k += (size_t)v->text_len[ids[i]];
            }
        }
        if (!ok || k != (size_t)n || memcmp(back, in, (size_t)n) != 0) {
            test_failures++;
            fprintf(stderr, "%s: encoding random bytes (iteration %d) does not round-trip\n", name,
                    iter);
            free(ids);
            break;
        }
        free(ids);
    }

    /* empty text, and long pieces (the heap path of the merge) */
    int32_t *ids = (int32_t *)1;
    CHECK(vocab_encode(v, "", &ids) == 0 && ids != NULL);
    free(ids);
    size_t len = 20000;
    char *big = malloc(len + 1);
    for (size_t i = 0; i < len; i++)
        big[i] = "abcdefghij klmnopq\xc3\xa9"[i % 20]; /* ends with é (2 bytes) */
    big[len] = '\0';
    int n = vocab_encode(v, big, &ids);
    CHECK(n > 0);
    char *dec = n > 0 ? vocab_decode(v, ids, n) : NULL;
    CHECK(dec && strcmp(dec, big) == 0);
    free(dec);
    free(ids);
    memset(big, 'x', len); /* one 20000-byte piece */
    n = vocab_encode(v, big, &ids);
    CHECK(n > 0);
    dec = n > 0 ? vocab_decode(v, ids, n) : NULL;
    CHECK(dec && strcmp(dec, big) == 0);
    free(dec);
    free(ids);
    free(big);

    /* decode skips specials, timestamps and out-of-range ids */
    int32_t mixed[] = {v->sot, v->eot, -5, v->n_vocab + 3, v->timestamp_begin + 7, v->no_speech};
    dec = vocab_decode(v, mixed, 6);
    CHECK(dec && dec[0] == '\0');
    free(dec);
    dec = vocab_decode(v, NULL, 0);
    CHECK(dec && dec[0] == '\0');
    free(dec);
    /* tokenizer.decode keeps the specials as their names and drops the timestamps: a window's
     * DecodingResult.text and a transcript's text, where the sampler took a language token */
    int32_t hi[] = {v->timestamp_begin, 0, v->sot + 1, v->no_speech, v->timestamp_begin + 7, -5};
    char *text = vocab_decode(v, hi, 1 + 1);
    dec = vocab_decode_all(v, hi, 6);
    char want[64];
    snprintf(want, sizeof want, "%s<|en|><|nospeech|>", text ? text : "?");
    CHECK(text && dec && strcmp(dec, want) == 0);
    printf("decode with specials: %s\n", dec ? dec : "(null)");
    free(text);
    free(dec);
}

/* The id of the one-byte token b, or -1 */
static int byte_token(const struct wc_vocab *v, unsigned char b) {
    for (int id = 0; id < v->eot; id++)
        if (v->text_len[id] == 1 && (unsigned char)v->text[id][0] == b)
            return id;
    return -1;
}

/* max_len cuts between characters only, though byte-level BPE spreads one over tokens: "a語b"
 * as a, E8, AA, 9E, b at max_len 1 is a, 語, b (cut at any token, each piece decoded alone,
 * the character was lost to U+FFFDs). */
static void check_wrap_chars(const struct wc_vocab *v) {
    const unsigned char bytes[5] = {'a', 0xe8, 0xaa, 0x9e, 'b'};
    struct wc_transcript tr = {0};
    struct wc_segment *s = tr.seg = calloc(1, sizeof *tr.seg);
    if (!s)
        return;
    tr.n_seg = tr.cap_seg = 1;
    s->n_tokens = 5;
    s->tokens = malloc(5 * sizeof *s->tokens);
    s->token_p = calloc(5, sizeof *s->token_p);
    s->token_t0 = malloc(5 * sizeof *s->token_t0);
    s->token_t1 = malloc(5 * sizeof *s->token_t1);
    for (int k = 0; s->tokens && s->token_t0 && s->token_t1 && k < 5; k++) {
        s->tokens[k] = byte_token(v, bytes[k]);
        CHECK(s->tokens[k] >= 0);
        s->token_t0[k] = k * 0.1;
        s->token_t1[k] = (k + 1) * 0.1;
    }
    s->t1 = 0.5;
    s->text = s->tokens ? vocab_decode(v, s->tokens, 5) : NULL;
    CHECK(s->text && strcmp(s->text, "a\xe8\xaa\x9e"
                                     "b") == 0);
    CHECK(wrap_segments(&tr, 0, 1, false, v) == 0);
    CHECK(tr.n_seg == 3);
    const char *want[3] = {"a", "\xe8\xaa\x9e", "b"};
    for (int i = 0; i < tr.n_seg && i < 3; i++)
        CHECK(strcmp(tr.seg[i].text, want[i]) == 0);
    CHECK(tr.n_seg < 2 || (tr.seg[1].t0 == 0.1 && tr.seg[1].t1 == 0.4));
    transcript_free(&tr);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s tokenizer-fixture.txt\n", argv[0]);
        return 2;
    }
    const char *paths[2] = {shared_path_or_skip("models/ggml-tiny.en.bin"), NULL};
    char tiny_path[4096];
    snprintf(tiny_path, sizeof tiny_path, "%s", paths[0]);
    paths[0] = tiny_path;
    paths[1] = shared_path_or_skip("models/ggml-base.bin");

    struct wc_model_file *files[2] = {NULL, NULL};
    char err[512];
    for (int i = 0; i < 2; i++)
        if (model_file_open(paths[i], &files[i], err, sizeof err)) {
            fprintf(stderr, "model_file_open: %s\n", err);
            return 1;
        }
    struct wc_vocab vs[N_ENC];
    CHECK(vocab_init(&vs[GPT2], files[0], err, sizeof err) == 0);
    CHECK(vocab_init(&vs[ML], files[1], err, sizeof err) == 0);
    struct wc_model_file v3 = *files[1]; /* large-v3: the same tokens, one more language */
    v3.hp.n_vocab = 51866;
    CHECK(vocab_init(&vs[ML100], &v3, err, sizeof err) == 0);
    if (test_failures)
        return 1;

    /* the shared files hold the lossy form of the split-character tokens: they differ */
    int n_fix;
    const struct bpe_token_fix *fix = bpe_token_fixes(true, &n_fix);
    int n_lossy = 0;
    for (int i = 0; i < n_fix; i++)
        n_lossy += files[1]->token_len[fix[i].id] != fix[i].len ||
                   memcmp(files[1]->token_bytes[fix[i].id], fix[i].bytes, fix[i].len) != 0;
    printf("base: the file holds %d of the %d split-character tokens in U+FFFD form (restored)\n",
           n_lossy, n_fix);

    FILE *fx = fopen(argv[1], "r");
    if (!fx) {
        fprintf(stderr, "%s: cannot open\n", argv[1]);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, counts[3] = {0, 0, 0};
    while ((len = getline(&line, &cap, fx)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        check_line(vs, line, lineno, counts);
    }
    free(line);
    fclose(fx);
    CHECK(counts[0] == 1 && counts[1] > 100 && counts[2] > 100);
    printf("fixture: %d lines, %d encode and %d decode cases\n", lineno, counts[1], counts[2]);

    for (int e = 0; e < N_ENC; e++)
        check_invariants(&vs[e], enc_names[e]);
    check_wrap_chars(&vs[GPT2]);

    /* bad vocabulary sizes */
    struct wc_model_file bad = *files[1];
    struct wc_vocab vb;
    bad.hp.n_vocab = 50000;
    CHECK(vocab_init(&vb, &bad, err, sizeof err) == WHISPERC_ERR_MODEL_FORMAT);
    bad.hp.n_vocab = 52000;
    CHECK(vocab_init(&vb, &bad, err, sizeof err) == WHISPERC_ERR_UNSUPPORTED);
    vocab_free(&vb); /* zeroed: a no-op */

    for (int e = 0; e < N_ENC; e++) {
        vocab_free(&vs[e]);
        vocab_free(&vs[e]); /* idempotent */
    }
    for (int i = 0; i < 2; i++)
        model_file_close(files[i]);
    printf("vocab: %s\n", test_failures ? "FAILED" : "OK");
    return TEST_RESULT();
}
