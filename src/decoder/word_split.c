/*
 * word_split.c — words from tokens (openai-whisper tokenizer.py split_tokens_on_unicode and
 * split_tokens_on_spaces) and punctuation merging (timing.py merge_punctuations). Python's
 * `a in b` on strings is a substring test, so "" and "()" count as punctuation: strstr keeps
 * that.
 */
#include "decoder/word_split.h"

#include <stdlib.h>
#include <string.h>

#include "model/bpe.h"
#include "model/vocab.h"
#include "util.h"

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

static const char *const py_punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/* tokenizer.decode_with_timestamps: every token's bytes, specials as their text, then
 * bytes.decode(errors="replace"). */
static char *decode_all(const struct wc_vocab *v, const int32_t *tok, int n) {
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)v->text_len[tok[i]];
    uint8_t *bytes = malloc(len ? len : 1);
    char *out = malloc(3 * len + 1);
    if (!bytes || !out) {
        free(bytes);
        free(out);
        return NULL;
    }
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        memcpy(bytes + k, v->text[tok[i]], (size_t)v->text_len[tok[i]]);
        k += (size_t)v->text_len[tok[i]];
    }
    out[utf8_replace(out, bytes, len)] = '\0';
    free(bytes);
    return out;
}

static int utf8_chars(const char *s, size_t n) {
    int c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

/* The byte offset of character index ci in s, or NULL past the end. */
static const char *utf8_at(const char *s, int ci) {
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80 && ci-- == 0)
            return s;
    return NULL;
}

static int push_word(struct wt_word **w, int *n, int *cap, char *text, int n_tokens) {
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 32;
        struct wt_word *p = realloc(*w, (size_t)c * sizeof *p);
        if (!p)
            return -1;
        *w = p;
        *cap = c;
    }
    (*w)[(*n)++] = (struct wt_word){.text = text, .n_tokens = n_tokens};
    return 0;
}

/* a += b (both owned strings); b freed */
static int append_text(char **a, char *b) {
    size_t la = strlen(*a), lb = strlen(b);
    char *p = realloc(*a, la + lb + 1);
    if (!p)
        return -1;
    memcpy(p + la, b, lb + 1);
    free(b);
    *a = p;
    return 0;
}

/* split_tokens_on_unicode: a piece ends where its decoding has no U+FFFD, or where the
 * U+FFFD is also in the full decoding (invalid bytes, not an unfinished character). */
static int split_unicode(const struct wc_vocab *v, const int32_t *tok, int n, struct wt_word **out,
                         int *n_out) {
    int cap = 0, start = 0, offset = 0, rc = 0;
    *out = NULL;
    *n_out = 0;
    char *full = decode_all(v, tok, n);
    if (!full)
        return -1;
    for (int i = 0; i < n && !rc; i++) {
        char *piece = decode_all(v, tok + start, i + 1 - start);
        if (!piece) {
            rc = -1;
            break;
        }
        const char *r = strstr(piece, REPLACEMENT);
        const char *at = r ? utf8_at(full, offset + utf8_chars(piece, (size_t)(r - piece))) : NULL;
        if (!r || (at && strncmp(at, REPLACEMENT, 3) == 0)) {
            offset += utf8_chars(piece, strlen(piece));
            rc = push_word(out, n_out, &cap, piece, i + 1 - start);
            if (rc)
                free(piece);
            start = i + 1;
        } else {
            free(piece);
        }
    }
    free(full);
    return rc;
}

int split_to_words(const struct wc_vocab *v, const int32_t *tokens, int n, bool on_spaces,
                   struct wt_word **out) {
    struct wt_word *sub;
    int n_sub;
    if (split_unicode(v, tokens, n, &sub, &n_sub)) {
        words_free(sub, n_sub);
        return -1;
    }
    if (!on_spaces) {
        *out = sub;
        return n_sub;
    }
    int n_words = 0, first_token = 0;
    for (int i = 0; i < n_sub; i++) {
        char *stripped = strdup(sub[i].text);
        if (!stripped) {
            for (int k = i; k < n_sub; k++)
                free(sub[k].text);
            words_free(sub, n_words);
            return -1;
        }
        bool special = tokens[first_token] >= v->eot;
        bool with_space = sub[i].text[0] == ' ';
        bool punctuation = strstr(py_punctuation, wc_py_strip(stripped)) != NULL;
        free(stripped);
        first_token += sub[i].n_tokens;
        if (special || with_space || punctuation || n_words == 0) {
            sub[n_words++] = sub[i]; /* compact in place: n_words <= i */
            continue;
        }
        if (append_text(&sub[n_words - 1].text, sub[i].text)) {
            for (int k = i; k < n_sub; k++) /* not yet moved or merged */
                free(sub[k].text);
            words_free(sub, n_words);
            return -1;
        }
        sub[n_words - 1].n_tokens += sub[i].n_tokens;
    }
    *out = sub;
    return n_words;
}

bool words_split_on_spaces(const char *lang) {
    static const char *const no_spaces[] = {"zh", "ja", "th", "lo", "my", "yue"};
    for (size_t i = 0; lang && i < sizeof no_spaces / sizeof no_spaces[0]; i++)
        if (strcmp(lang, no_spaces[i]) == 0)
            return false;
    return true;
}

/* following = previous + following (text and tokens), previous emptied */
static int join_words(struct wt_word *into, struct wt_word *from, bool from_first) {
    size_t la = strlen(into->text), lb = strlen(from->text);
    char *p = malloc(la + lb + 1);
    if (!p)
        return -1;
    if (from_first) {
        memcpy(p, from->text, lb);
        memcpy(p + lb, into->text, la + 1);
    } else {
        memcpy(p, into->text, la);
        memcpy(p + la, from->text, lb + 1);
    }
    free(into->text);
    into->text = p;
    into->n_tokens += from->n_tokens;
    from->text[0] = '\0';
    from->n_tokens = 0;
    return 0;
}

int merge_punctuations(struct wt_word *w, int n, const char *prepended, const char *appended) {
    for (int i = n - 2, j = n - 1; i >= 0; i--) {
        char *stripped = strdup(w[i].text);
        if (!stripped)
            return -1;
        bool merge = w[i].text[0] == ' ' && strstr(prepended, wc_py_strip(stripped)) != NULL;
        free(stripped);
        if (merge) {
            if (join_words(&w[j], &w[i], true))
                return -1;
        } else {
            j = i;
        }
    }
    for (int i = 0, j = 1; j < n; j++) {
        size_t len = strlen(w[i].text);
        if ((len == 0 || w[i].text[len - 1] != ' ') && strstr(appended, w[j].text) != NULL) {
            if (join_words(&w[i], &w[j], false))
                return -1;
        } else {
            i = j;
        }
    }
    return 0;
}

void words_free(struct wt_word *w, int n) {
    for (int i = 0; w && i < n; i++)
        free(w[i].text);
    free(w);
}
