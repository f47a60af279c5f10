/*
 * print.h — segments on stdout as they are decoded: "[t0 --> t1]  text", or with -pc each
 * token coloured by its probability (whisper.cpp's --print-colors: a 10-step scale from red,
 * improbable, to green, by p cubed), with --print-confidence styled (whisper.cpp's: inverse
 * below p 0.33, underlined below 0.66, else dim), with -ps the timestamp tokens too.
 */
#ifndef WC_CLI_PRINT_H
#define WC_CLI_PRINT_H

#include <stdbool.h>
#include <stdio.h>

#include "libwhisperc.h"

#define PRINT_N_COLORS 10

enum print_colors { COLORS_NEVER, COLORS_AUTO, COLORS_ALWAYS };

struct print_opts {
    FILE *out;
    bool colors;     /* resolved: print_use_colors() */
    bool confidence; /* styles instead of colours (resolved likewise) */
    bool special;    /* -ps: the timestamp tokens' text too ("<|1.08|>") */
    /* -nt: as whisper.cpp, no "[t0 --> t1]" and the segments' texts run on (but with -di's
     * labels, a line each); line_open then says a file's text wants its closing newline */
    bool no_timestamps;
    bool line_open;
};

/* -pc and --print-confidence (auto): only when out is a terminal and $NO_COLOR is unset;
 * =always: always. */
bool print_use_colors(enum print_colors mode, FILE *out);

/* Index into the colour scale for a token probability: floor(p^3 * 10), clamped to 0..9. */
int print_color_index(float p);

/* The escape sequence of a token of probability p: its colour, or its confidence style. */
const char *print_token_style(float p, bool confidence, char *buf, size_t size);

/* whisperc_new_segment_fn; user_data is a struct print_opts *. */
void print_new_segments(whisperc_state *st, int n_new, void *user_data);

#endif /* WC_CLI_PRINT_H */
