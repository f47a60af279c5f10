/* bpe.c — see bpe.h. */
#include "model/bpe.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "libwhisperc.h"
#include "util.h"

struct bpe_table {
    char *const *tok;
    const int *len;
    uint32_t mask;  /* capacity - 1, capacity a power of two */
    int32_t *slots; /* rank, or -1 for an empty slot */
    pcre2_code *re; /* the pre-tokenizer */
};

/* Unicode White_Space, which is what \s means to Rust's regex crate (tiktoken). PCRE2's \s with
 * UCP would also match U+180E, so the class is spelled out. */
#define WS                                                                                         \
    "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"    \
    "\\x{205F}\\x{3000}"
static const char pre_tokenizer[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS
                                    "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])|[" WS "]+";

static uint32_t hash_bytes(const uint8_t *s, size_t n) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 16777619u;
    return h ^ (h >> 15);
}

int bpe_new(struct bpe_table **out, char *const *tok, const int *len, int n, char *err,
            size_t err_size) {
    *out = NULL;
    struct bpe_table *t = calloc(1, sizeof *t);
    if (!t) {
        wc_errf(err, err_size, "out of memory");
        return WHISPERC_ERR_NO_MEMORY;
    }
    int code;
    PCRE2_SIZE offset;
    t->re = pcre2_compile((PCRE2_SPTR)pre_tokenizer, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &offset, NULL);
    if (!t->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        wc_errf(err, err_size, "PCRE2 cannot compile the tokenizer regex (at %zu): %s",
                (size_t)offset, (const char *)msg);
        free(t);
        return code == PCRE2_ERROR_HEAPLIMIT || code == PCRE2_ERROR_NOMEMORY
                   ? WHISPERC_ERR_NO_MEMORY
                   : WHISPERC_ERR_UNSUPPORTED;
    }
    pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE); /* optional: the interpreter works as well */
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)(n > 0 ? n : 0))
        cap <<= 1;
    t->slots = malloc(cap * sizeof *t->slots);
    if (!t->slots) {
        wc_errf(err, err_size, "out of memory");
        pcre2_code_free(t->re);
        free(t);
        return WHISPERC_ERR_NO_MEMORY;
    }
    memset(t->slots, 0xff, cap * sizeof *t->slots);
    t->tok = tok;
    t->len = len;
    t->mask = cap - 1;
    for (int r = 0; r < n; r++) {
        if (len[r] <= 0)
            continue;
        const uint8_t *s = (const uint8_t *)tok[r];
        uint32_t i = hash_bytes(s, (size_t)len[r]) & t->mask;
        for (;; i = (i + 1) & t->mask) {
            int32_t o = t->slots[i];
            if (o < 0) {
                t->slots[i] = r;
                break;
            }
            if (len[o] == len[r] && memcmp(tok[o], s, (size_t)len[r]) == 0)
                break; /* duplicate: the lower rank stays */
        }
    }
    *out = t;
    return 0;
}

void bpe_free(struct bpe_table *t) {
    if (!t)
        return;
    free(t->slots);
    pcre2_code_free(t->re);
    free(t);
}

int bpe_rank(const struct bpe_table *t, const uint8_t *s, size_t n) {
    if (n == 0 || n > INT_MAX)
        return -1;
    for (uint32_t i = hash_bytes(s, n) & t->mask;; i = (i + 1) & t->mask) {
        int32_t o = t->slots[i];
        if (o < 0)
            return -1;
        if ((size_t)t->len[o] == n && memcmp(t->tok[o], s, n) == 0)
            return o;
    }
}

static int push(struct bpe_out *out, int32_t id) {
    if (out->n == out->cap) {
        int cap = out->cap ? 2 * out->cap : 64;
        int32_t *p = realloc(out->ids, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        out->ids = p;
        out->cap = cap;
    }
    out->ids[out->n++] = id;
    return 0;
}

/* Rank of s[start[i] .. start[i+3]): the pair (i, i+1) after parts i+1 and i+2 merge, as
 * tiktoken's get_rank. */
static int merged_rank(const struct bpe_table *t, const uint8_t *s, const size_t *start,
                       size_t n_parts, size_t i) {
    if (i + 3 >= n_parts)
        return INT_MAX;
    int r = bpe_rank(t, s + start[i], start[i + 3] - start[i]);
    return r < 0 ? INT_MAX : r;
}

/* tiktoken's _byte_pair_merge: parts[k] = (start, rank of the pair beginning there). */
int bpe_encode_piece(const struct bpe_table *t, const uint8_t *s, size_t n, struct bpe_out *out) {
    int whole = bpe_rank(t, s, n);
    if (whole >= 0)
        return push(out, whole);
    if (n == 1)
        return 0; /* a byte the vocabulary lacks */
    size_t small_start[64];
    int small_rank[64];
    size_t *start = small_start;
    int *rank = small_rank;
    if (n + 1 > 64) {
        start = malloc((n + 1) * sizeof *start);
        rank = malloc((n + 1) * sizeof *rank);
        if (!start || !rank) {
            free(start);
            free(rank);
            return -1;
        }
    }
    size_t n_parts = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        int r = bpe_rank(t, s + i, 2);
        start[n_parts] = i;
        rank[n_parts++] = r < 0 ? INT_MAX : r;
    }
    start[n_parts] = n - 1;
    rank[n_parts++] = INT_MAX;
    start[n_parts] = n;
    rank[n_parts++] = INT_MAX;
    for (;;) {
        size_t best = 0;
        int min = INT_MAX;
        for (size_t k = 0; k + 1 < n_parts; k++)
            if (rank[k] < min) {
                min = rank[k];
                best = k;
            }
        if (min == INT_MAX)
            break;
        if (best > 0)
            rank[best - 1] = merged_rank(t, s, start, n_parts, best - 1);
        rank[best] = merged_rank(t, s, start, n_parts, best);
        memmove(start + best + 1, start + best + 2, (n_parts - best - 2) * sizeof *start);
        memmove(rank + best + 1, rank + best + 2, (n_parts - best - 2) * sizeof *rank);
        n_parts--;
    }
    int rc = 0;
    for (size_t k = 0; k + 1 < n_parts && !rc; k++) {
        int r = bpe_rank(t, s + start[k], start[k + 1] - start[k]);
        if (r >= 0)
            rc = push(out, r);
    }
    if (start != small_start) {
        free(start);
        free(rank);
    }
    return rc;
}

int bpe_encode(const struct bpe_table *t, const uint8_t *text, size_t n, struct bpe_out *out) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re, NULL);
    if (!md)
        return -1;
    int rc = 0;
    size_t pos = 0; /* end of the last match: bytes before the next match are invalid UTF-8 */
    while (pos < n && !rc) {
        int m = pcre2_match(t->re, text, n, pos, 0, md, NULL);
        size_t s = n, e = n;
        if (m >= 0) {
            const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            s = ov[0];
            e = ov[1];
        } else if (m != PCRE2_ERROR_NOMATCH) {
            rc = -1; /* out of memory or a resource limit */
            break;
        }
        if (s > pos)
            rc = bpe_encode_piece(t, text + pos, s - pos, out);
        if (!rc && e > s)
            rc = bpe_encode_piece(t, text + s, e - s, out);
        pos = e > s ? e : s + 1; /* no alternative matches the empty string */
    }
    pcre2_match_data_free(md);
    return rc;
}

size_t utf8_replace(char *dst, const uint8_t *s, size_t n) {
    size_t o = 0, i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            dst[o++] = (char)c;
            i++;
            continue;
        }
        size_t need;
        uint8_t lo = 0x80, hi = 0xbf; /* range of the second byte */
        if (c < 0xc2 || c > 0xf4) {
            need = 0;
        } else if (c < 0xe0) {
            need = 1;
        } else if (c < 0xf0) {
            need = 2;
            lo = c == 0xe0 ? 0xa0 : 0x80; /* no overlong forms */
            hi = c == 0xed ? 0x9f : 0xbf; /* no surrogates */
        } else {
            need = 3;
            lo = c == 0xf0 ? 0x90 : 0x80; /* no overlong forms */
            hi = c == 0xf4 ? 0x8f : 0xbf; /* nothing above U+10FFFF */
        }
        size_t j = i + 1;
        if (need > 0 && j < n && s[j] >= lo && s[j] <= hi) {
            j++;
            while (j - i <= need && j < n && s[j] >= 0x80 && s[j] <= 0xbf)
                j++;
        }
        if (need > 0 && j - i == need + 1) {
            memcpy(dst + o, s + i, j - i);
            o += j - i;
        } else { /* the maximal subpart s[i..j) */
            dst[o++] = (char)0xef;
            dst[o++] = (char)0xbf;
            dst[o++] = (char)0xbd;
        }
        i = j;
    }
    return o;
}
