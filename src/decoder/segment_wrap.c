/*
 * segment_wrap.c — segments cut to a maximum length (whisper.cpp's whisper_wrap_segment, with
 * the alignment's token and word times instead of its token timestamps). Lengths count UTF-8
 * characters, not bytes, so that a limit means the same in every script.
 */
#include "decoder/segment_wrap.h"

#include <stdlib.h>
#include <string.h>

#include "decoder/transcribe.h"
#include "libwhisperc.h"
#include "model/vocab.h"

/* Characters in s[0..n): its bytes that are no UTF-8 continuation byte. */
static int utf8_len(const char *s, size_t n) {
    int c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

/* The piece of s made of tokens [k0, k1) (with words whose first token lies in it). */
static int make_piece(struct wc_segment *p, const struct wc_segment *s, int k0, int k1,
                      const struct wc_vocab *v) {
    int n = k1 - k0, nw = 0;
    memset(p, 0, sizeof *p);
    p->seek = s->seek;
    p->temperature = s->temperature;
    p->avg_logprob = s->avg_logprob;
    p->compression_ratio = s->compression_ratio;
    p->no_speech_prob = s->no_speech_prob;
    p->n_tokens = n;
    p->text = vocab_decode(v, s->tokens + k0, n);
    p->tokens = malloc((size_t)n * sizeof *p->tokens);
    p->token_p = malloc((size_t)n * sizeof *p->token_p);
    p->token_t0 = malloc((size_t)n * sizeof *p->token_t0);
    p->token_t1 = malloc((size_t)n * sizeof *p->token_t1);
    for (int i = 0; i < s->n_words; i++)
        nw += s->words[i].tok0 >= k0 && s->words[i].tok0 < k1;
    p->words = malloc((size_t)(nw > 0 ? nw : 1) * sizeof *p->words);
    if (!p->text || !p->tokens || !p->token_p || !p->token_t0 || !p->token_t1 || !p->words)
        return WHISPERC_ERR_NO_MEMORY;
    memcpy(p->tokens, s->tokens + k0, (size_t)n * sizeof *p->tokens);
    memcpy(p->token_p, s->token_p + k0, (size_t)n * sizeof *p->token_p);
    memcpy(p->token_t0, s->token_t0 + k0, (size_t)n * sizeof *p->token_t0);
    memcpy(p->token_t1, s->token_t1 + k0, (size_t)n * sizeof *p->token_t1);
    for (int i = 0; i < s->n_words; i++) {
        const struct wc_word *w = &s->words[i];
        if (w->tok0 < k0 || w->tok0 >= k1)
            continue;
        struct wc_word *d = &p->words[p->n_words++];
        *d = *w;
        d->tok0 -= k0;
        d->tok_end = (w->tok_end < k1 ? w->tok_end : k1) - k0;
        d->text = strdup(w->text);
        if (!d->text)
            return WHISPERC_ERR_NO_MEMORY;
    }
    return 0;
}

/* Cut points: token indices where a new piece starts (cuts[0] = 0, cuts[n] = n_tokens).
 * Characters are counted on the tokens' bytes, a character where its lead byte is: a token
 * that starts inside a character (byte-level BPE splits many CJK characters) is no cut point,
 * since each piece's text is decoded alone and would lose the character to U+FFFDs. */
static int find_cuts(const struct wc_segment *s, int max_len, bool on_word,
                     const struct wc_vocab *v, int *cuts) {
    int n = 0, len = 0;
    cuts[n++] = 0;
    for (int k = 0; k < s->n_tokens; k++) {
        int id = s->tokens[k];
        if (id >= v->eot || id < 0)
            continue;
        bool word_start = !on_word;
        for (int i = 0; i < s->n_words && !word_start; i++)
            word_start = s->words[i].tok0 == k;
        int tl = utf8_len(v->text[id], (size_t)v->text_len[id]);
        bool char_start = v->text_len[id] > 0 && ((unsigned char)v->text[id][0] & 0xc0) != 0x80;
        if (word_start && char_start && len > 0 && len + tl > max_len) {
            cuts[n++] = k;
            len = 0;
        }
        len += tl;
    }
    cuts[n] = s->n_tokens;
    return n;
}

/* Replaces seg[i] with its pieces (the array has room). Returns the number of pieces. */
static int wrap_one(struct wc_transcript *out, int i, int max_len, bool on_word,
                    const struct wc_vocab *v) {
    struct wc_segment s = out->seg[i];
    int *cuts = malloc(((size_t)s.n_tokens + 2) * sizeof *cuts);
    int n = cuts ? find_cuts(&s, max_len, on_word, v, cuts) : -1;
    if (n < 0) {
        free(cuts);
        return -1;
    }
    if (n == 1) {
        free(cuts);
        return 1;
    }
    struct wc_segment *p = calloc((size_t)n, sizeof *p);
    int rc = p ? 0 : -1;
    for (int k = 0; k < n && !rc; k++)
        rc = make_piece(&p[k], &s, cuts[k], cuts[k + 1], v) ? -1 : 0;
    if (rc) {
        for (int k = 0; p && k < n; k++)
            segment_free(&p[k]);
        free(p);
        free(cuts);
        return -1;
    }
    for (int k = 0; k < n; k++) { /* piece bounds: its first token's start, last token's end */
        int a = cuts[k], b = cuts[k + 1] - 1;
        p[k].t0 = k == 0 ? s.t0 : p[k].token_t0[0];
        p[k].t1 = k == n - 1 ? s.t1 : p[k].token_t1[b - a];
    }
    memmove(out->seg + i + n, out->seg + i + 1, (size_t)(out->n_seg - i - 1) * sizeof *out->seg);
    memcpy(out->seg + i, p, (size_t)n * sizeof *p);
    out->n_seg += n - 1;
    segment_free(&s); /* the original segment's buffers */
    free(p);
    free(cuts);
    return n;
}

int wrap_segments(struct wc_transcript *out, int first, int max_len, bool split_on_word,
                  const struct wc_vocab *v) {
    for (int i = first; i < out->n_seg; i++) {
        struct wc_segment *s = &out->seg[i];
        if (!s->token_t0 || s->n_tokens == 0 || utf8_len(s->text, strlen(s->text)) <= max_len)
            continue;
        /* room for one piece per token */
        if (out->n_seg + s->n_tokens > out->cap_seg) {
            int cap = out->cap_seg;
            while (out->n_seg + out->seg[i].n_tokens > cap)
                cap = cap ? 2 * cap : 64;
            struct wc_segment *p = realloc(out->seg, (size_t)cap * sizeof *p);
            if (!p)
                return WHISPERC_ERR_NO_MEMORY;
            out->seg = p;
            out->cap_seg = cap;
        }
        int n = wrap_one(out, i, max_len, split_on_word, v);
        if (n < 0)
            return WHISPERC_ERR_NO_MEMORY;
        i += n - 1;
    }
    return 0;
}
