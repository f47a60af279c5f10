/*
 * writers_subs.c — srt and vtt. Without words, one cue per segment with text. With words, the
 * cues follow openai-whisper's SubtitlesWriter.iterate_result (utils.py), same semantics:
 *
 * - a cue holds one segment (words taken max_words_per_line at a time, each chunk its own cue),
 *   unless both max_line_width and max_line_count are given: then words flow across segments
 *   into lines of at most max_line_width characters, at most max_line_count lines per cue, and a
 *   pause of more than 3 s between word starts begins a new cue;
 * - a cue runs from its first word's start to its last word's end; a line's first word loses
 *   its surrounding spaces;
 * - highlight_words: one cue per word, that word in <u></u>, gaps between words filled with the
 *   plain text.
 * Lengths count characters (code points), as Python's len().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h" /* wc_py_strip_span */
#include "writers.h"

struct cue_word {
    const struct tr_word *w;
    const char *s; /* the text as shown: a slice of w->text */
    size_t n;
    bool nl;     /* begins a new line of the cue */
    int speaker; /* its segment's (transcript.diarized) */
};

struct cue {
    struct cue_word *v;
    int n, cap;
};

struct cue_writer {
    FILE *f;
    bool srt, highlight;
    bool diarized; /* cues open with their speaker's label */
    int n_cues;    /* written so far (srt numbers) */
};

static size_t n_chars(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* A cue's text s[0..n) made safe in place; returns its new length. "-->" would read as a
 * timing line: it is shown as "->" (openai-whisper's replace) until none is left, where one
 * replace turns "--->" into "-->" (and the words of a cue meet only here). A line of nothing or
 * spaces would end the cue (the text of newline tokens, "\n\n"): such lines are left out. */
static size_t clean_text(char *s, size_t n) {
    for (size_t i = 0; i + 3 <= n;) {
        if (memcmp(s + i, "-->", 3) != 0) {
            i++;
            continue;
        }
        memmove(s + i, s + i + 1, n - i - 1);
        n--;
        i = i > 0 ? i - 1 : 0; /* a '-' before may now start one */
    }
    size_t w = 0;                 /* written; never past a, the line being read */
    for (size_t a = 0; a <= n;) { /* line [a, b) */
        size_t b = a, k = a;
        while (b < n && s[b] != '\n')
            b++;
        while (k < b && is_blank(s[k]))
            k++;
        if (k < b) {
            if (w > 0)
                s[w++] = '\n';
            memmove(s + w, s + a, b - a);
            w += b - a;
        }
        a = b + 1;
    }
    return w;
}

/* clean_text on a copy, written (out of memory: the text as it is). */
static void put_text(FILE *f, const char *s, size_t n) {
    char *copy = malloc(n + 1);
    if (!copy) {
        fwrite(s, 1, n, f);
        return;
    }
    memcpy(copy, s, n);
    fwrite(copy, 1, clean_text(copy, n), f);
    free(copy);
}

/* The cue's number (srt), times and, diarized, whisper.cpp's label of its speaker: "(speaker
 * 0) " in srt, a voice span "<v Speaker0>" in vtt. */
static void put_cue_head(struct cue_writer *cw, int64_t t0_ms, int64_t t1_ms, int speaker) {
    char a[32], b[32];
    char sep = cw->srt ? ',' : '.';
    if (cw->srt)
        fprintf(cw->f, "%d\n", ++cw->n_cues);
    fprintf(cw->f, "%s --> %s\n", format_timestamp(a, t0_ms, sep), format_timestamp(b, t1_ms, sep));
    if (cw->diarized && cw->srt)
        fprintf(cw->f, "%s ", cli_speaker_label(speaker, false));
    else if (cw->diarized)
        fprintf(cw->f, "<v Speaker%s>", cli_speaker_label(speaker, true));
}

/* The cue's words as they are; `underline` (-1: none) wrapped in <u></u> after its leading
 * spaces. */
static void write_words(FILE *f, const struct cue *c, int underline) {
    for (int i = 0; i < c->n; i++) {
        const struct cue_word *w = &c->v[i];
        if (w->nl)
            fputc('\n', f);
        size_t lead = 0, n_text; /* the underlined word's leading spaces (Unicode's too) */
        if (i == underline)
            lead = (size_t)(wc_py_strip_span(w->s, w->n, &n_text) - w->s);
        fwrite(w->s, 1, lead, f);
        if (i == underline)
            fputs("<u>", f);
        fwrite(w->s + lead, 1, w->n - lead, f);
        if (i == underline)
            fputs("</u>", f);
    }
}

/* A cue of c's words, their text made safe as a whole (clean_text); none where nothing is
 * left of it, since an empty cue would end the cue list (out of memory: the words as they
 * are). */
static void put_cue(struct cue_writer *cw, int64_t t0_ms, int64_t t1_ms, int speaker,
                    const struct cue *c, int underline) {
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (f)
        write_words(f, c, underline);
    if (f && fclose(f) == 0) {
        n = clean_text(text, n);
        if (n > 0) {
            put_cue_head(cw, t0_ms, t1_ms, speaker);
            fwrite(text, 1, n, cw->f);
            fputs("\n\n", cw->f);
        }
    } else {
        put_cue_head(cw, t0_ms, t1_ms, speaker);
        write_words(cw->f, c, underline);
        fputs("\n\n", cw->f);
    }
    free(text);
}

static int64_t clamp0(int64_t ms) { return ms < 0 ? 0 : ms; }

static void emit(struct cue_writer *cw, const struct cue *c) {
    if (c->n == 0)
        return;
    int64_t t0 = clamp0(c->v[0].w->t0_ms), t1 = clamp0(c->v[c->n - 1].w->t1_ms);
    int speaker = c->v[0].speaker; /* a cue across segments: its first word's */
    if (!cw->highlight) {
        put_cue(cw, t0, t1, speaker, c, -1);
        return;
    }
    int64_t last = t0;
    for (int i = 0; i < c->n; i++) {
        int64_t w0 = clamp0(c->v[i].w->t0_ms), w1 = clamp0(c->v[i].w->t1_ms);
        if (last != w0) /* the gap before this word, unhighlighted */
            put_cue(cw, last, w0, speaker, c, -1);
        put_cue(cw, w0, w1, speaker, c, i);
        last = w1;
    }
}

static int push(struct cue *c, struct cue_word w) {
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 32;
        struct cue_word *v = realloc(c->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = w;
    return 0;
}

/* The first word's start (get_start in utils.py), else the first segment's. */
static int64_t first_start(const struct transcript *tr) {
    for (int i = 0; i < tr->n_segments; i++)
        if (tr->segments[i].n_words > 0)
            return tr->segments[i].words[0].t0_ms;
    return tr->n_segments ? tr->segments[0].t0_ms : 0;
}

static int word_cues(struct cue_writer *cw, const struct transcript *tr,
                     const struct writer_opts *wo) {
    const bool preserve = wo->max_line_count <= 0 || wo->max_line_width <= 0;
    const size_t width = wo->max_line_width > 0 ? (size_t)wo->max_line_width : 1000;
    const int per_line = wo->max_words_per_line > 0 ? wo->max_words_per_line : 1000;
    struct cue c = {0};
    size_t line_len = 0;
    int line_count = 1;
    int64_t last = first_start(tr);
    for (int s = 0; s < tr->n_segments; s++) {
        const struct tr_segment *seg = &tr->segments[s];
        for (int chunk = 0; chunk < seg->n_words; chunk += per_line) {
            int n = seg->n_words - chunk < per_line ? seg->n_words - chunk : per_line;
            for (int i = 0; i < n; i++) {
                const struct tr_word *w = &seg->words[chunk + i];
                struct cue_word x = {
                    .w = w, .s = w->text, .n = strlen(w->text), .speaker = seg->speaker};
                size_t len = n_chars(x.s, x.n);
                /* in seconds, as utils.py's floats: 4.15 - 1.15 > 3.0 there */
                bool long_pause = !preserve && w->t0_ms / 1000.0 - last / 1000.0 > 3.0;
                bool has_room = line_len + len <= width;
                bool seg_break = i == 0 && c.n > 0 && preserve;
                if (line_len > 0 && has_room && !long_pause && !seg_break) {
                    line_len += len; /* the line goes on */
                } else {
                    x.s = wc_py_strip_span(x.s, x.n, &x.n); /* word.strip() */
                    if ((c.n > 0 && wo->max_line_count > 0 &&
                         (long_pause || line_count >= wo->max_line_count)) ||
                        seg_break) { /* a new cue */
                        emit(cw, &c);
                        c.n = 0;
                        line_count = 1;
                    } else if (line_len > 0) { /* a new line in this cue */
                        line_count++;
                        x.nl = true;
                    }
                    line_len = n_chars(x.s, x.n);
                }
                if (push(&c, x) != 0) {
                    free(c.v);
                    errno = ENOMEM;
                    return -1;
                }
                last = w->t0_ms;
            }
        }
    }
    emit(cw, &c);
    free(c.v);
    return 0;
}

int write_subtitles(FILE *f, const struct transcript *tr, bool srt, const struct writer_opts *wo) {
    struct cue_writer cw = {.f = f,
                            .srt = srt,
                            .highlight = wo->highlight_words,
                            .diarized = tr->diarized,
                            .n_cues = wo->srt_index_offset};
    if (!srt)
        fputs("WEBVTT\n\n", f);
    if (tr->has_words)
        return word_cues(&cw, tr, wo);
    for (int i = 0; i < tr->n_segments; i++) {
        size_t n;
        const char *t = tr->segments[i].text;
        t = wc_py_strip_span(t, strlen(t), &n); /* text.strip(), Unicode's spaces too */
        if (n == 0)
            continue; /* an empty cue would end the cue list early */
        put_cue_head(&cw, tr->segments[i].t0_ms, tr->segments[i].t1_ms, tr->segments[i].speaker);
        put_text(f, t, n);
        fputs("\n\n", f);
    }
    return 0;
}
