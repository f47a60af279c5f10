/* print.c — see print.h. */
#include "print.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "writers.h"

/* xterm 256-colour palette: red, through orange and yellow, to green. */
static const int palette[PRINT_N_COLORS] = {196, 202, 208, 214, 220, 226, 190, 154, 118, 82};

bool print_use_colors(enum print_colors mode, FILE *out) {
    if (mode == COLORS_ALWAYS)
        return true;
    const char *no_color = getenv("NO_COLOR"); /* no-color.org */
    return mode == COLORS_AUTO && isatty(fileno(out)) && !(no_color && *no_color);
}

int print_color_index(float p) {
    float x = p * p * p * PRINT_N_COLORS;
    if (!(x > 0)) /* NaN too */
        return 0;
    return x >= PRINT_N_COLORS - 1 ? PRINT_N_COLORS - 1 : (int)x;
}

const char *print_token_style(float p, bool confidence, char *buf, size_t size) {
    if (confidence) /* NaN: the lowest, as print_color_index */
        return p >= 0.66f ? "\033[2m" : p >= 0.33f ? "\033[4m" : "\033[7m";
    snprintf(buf, size, "\033[38;5;%dm", palette[print_color_index(p)]);
    return buf;
}

/* Bytes of buf[0..n) that end on a character boundary; a UTF-8 character split across tokens
 * waits for its rest, so that no colour code lands inside it. Invalid bytes count as one. */
static size_t complete_prefix(const unsigned char *buf, size_t n) {
    size_t pos = 0;
    while (pos < n) {
        unsigned char c = buf[pos];
        size_t len = c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        if (len > 1 && c >= 0xF8)
            len = 1;
        if (pos + len > n)
            break;
        pos += len;
    }
    return pos;
}

/* A segment token by token: styled by probability (po->colors) and with the timestamp tokens
 * (po->special). */
static void print_tokens(FILE *out, const struct print_opts *po, const whisperc_state *st, int i) {
    int ts_begin = whisperc_token_timestamp_begin(st);
    unsigned char pending[4];
    size_t n_pending = 0;
    char style[32];
    for (int j = 0; j < whisperc_segment_n_tokens(st, i); j++) {
        int id = whisperc_segment_token_id(st, i, j);
        const char *t = whisperc_token_text(st, id);
        if ((id >= ts_begin && !po->special) || !t)
            continue;
        size_t n = strlen(t);
        unsigned char *buf = malloc(n_pending + n + 1);
        if (!buf)
            continue;
        memcpy(buf, pending, n_pending);
        memcpy(buf + n_pending, t, n);
        n += n_pending;
        size_t k = complete_prefix(buf, n);
        if (n - k > sizeof pending) /* an invalid run: show it as it is */
            k = n;
        if (k > 0 && po->colors)
            fprintf(out, "%s%.*s\033[0m",
                    print_token_style(whisperc_segment_token_p(st, i, j), po->confidence, style,
                                      sizeof style),
                    (int)k, (const char *)buf);
        else
            fwrite(buf, 1, k, out);
        n_pending = n - k;
        memcpy(pending, buf + k, n_pending);
        free(buf);
    }
    fwrite(pending, 1, n_pending, out);
}

void print_new_segments(whisperc_state *st, int n_new, void *user_data) {
    struct print_opts *po = user_data;
    FILE *out = po->out ? po->out : stdout;
    int n = whisperc_n_segments(st);
    char a[32], b[32];
    for (int i = n - n_new; i < n; i++) {
        if (!po->no_timestamps)
            fprintf(out, "[%s --> %s]  ", format_timestamp(a, whisperc_segment_t0_ms(st, i), '.'),
                    format_timestamp(b, whisperc_segment_t1_ms(st, i), '.'));
        int speaker = whisperc_segment_speaker(st, i);
        if (speaker != -2) /* -di: whisper.cpp's label */
            fprintf(out, "%s", cli_speaker_label(speaker, false));
        if (po->colors || po->special)
            print_tokens(out, po, st, i);
        else
            fputs(whisperc_segment_text(st, i), out);
        po->line_open = po->no_timestamps && speaker == -2;
        if (!po->line_open)
            fputc('\n', out);
    }
    fflush(out);
}
