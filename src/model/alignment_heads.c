/*
 * alignment_heads.c — per-model alignment heads, as listed by openai-whisper (__init__.py,
 * _ALIGNMENT_HEADS: base85 of a gzipped [n_text_layer][n_text_head] boolean mask), written out
 * here as (block, head) pairs.
 */
#include "model/alignment_heads.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEADS 23

static const struct {
    const char *name;
    int n;
    struct wc_align_head heads[MAX_HEADS];
} official[] = {
    {"tiny.en", 8, {{1, 0}, {2, 0}, {2, 5}, {3, 0}, {3, 1}, {3, 2}, {3, 3}, {3, 4}}},
    {"tiny", 6, {{2, 2}, {3, 0}, {3, 2}, {3, 3}, {3, 4}, {3, 5}}},
    {"base.en", 5, {{3, 3}, {4, 7}, {5, 1}, {5, 5}, {5, 7}}},
    {"base", 8, {{3, 1}, {4, 2}, {4, 3}, {4, 7}, {5, 1}, {5, 2}, {5, 4}, {5, 6}}},
    {"small.en",
     19,
     {{6, 6},
      {7, 0},
      {7, 3},
      {7, 8},
      {8, 2},
      {8, 5},
      {8, 7},
      {9, 0},
      {9, 4},
      {9, 8},
      {9, 10},
      {10, 0},
      {10, 1},
      {10, 2},
      {10, 3},
      {10, 6},
      {10, 11},
      {11, 2},
      {11, 4}}},
    {"small",
     10,
     {{5, 3}, {5, 9}, {8, 0}, {8, 4}, {8, 7}, {8, 8}, {9, 0}, {9, 7}, {9, 9}, {10, 5}}},
    {"medium.en",
     18,
     {{11, 4},
      {14, 1},
      {14, 12},
      {14, 14},
      {15, 4},
      {16, 0},
      {16, 4},
      {16, 9},
      {17, 12},
      {17, 14},
      {18, 7},
      {18, 10},
      {18, 15},
      {20, 0},
      {20, 3},
      {20, 9},
      {20, 14},
      {21, 12}}},
    {"medium", 6, {{13, 15}, {15, 4}, {15, 15}, {16, 1}, {20, 0}, {23, 4}}},
    {"large-v1",
     9,
     {{9, 19}, {11, 2}, {11, 4}, {11, 17}, {22, 7}, {22, 11}, {22, 17}, {23, 2}, {23, 15}}},
    {"large-v2", 23, {{10, 12}, {13, 17}, {16, 11}, {16, 12}, {16, 13}, {17, 15},
                      {17, 16}, {18, 4},  {18, 11}, {18, 19}, {19, 11}, {21, 2},
                      {21, 3},  {22, 3},  {22, 9},  {22, 12}, {23, 5},  {23, 7},
                      {23, 13}, {25, 5},  {26, 1},  {26, 12}, {27, 15}}},
    {"large-v3",
     10,
     {{7, 0},
      {10, 17},
      {12, 18},
      {13, 12},
      {16, 1},
      {17, 14},
      {19, 11},
      {21, 4},
      {24, 1},
      {25, 6}}},
    {"large-v3-turbo", 6, {{2, 4}, {2, 11}, {3, 3}, {3, 6}, {3, 11}, {3, 14}}},
};

static bool heads_fit(const struct wc_align_head *h, int n, const struct wc_hparams *hp) {
    for (int i = 0; i < n; i++)
        if (h[i].layer < 0 || h[i].layer >= hp->n_text_layer || h[i].head < 0 ||
            h[i].head >= hp->n_text_head)
            return false;
    return true;
}

static int copy_heads(const struct wc_align_head *src, int n, struct wc_align_head **out) {
    *out = malloc((size_t)n * sizeof **out);
    if (!*out)
        return -2;
    memcpy(*out, src, (size_t)n * sizeof **out);
    return n;
}

int alignment_heads(const struct wc_hparams *hp, const char *preset, struct wc_align_head **out) {
    *out = NULL;
    char name[32];
    if (preset && strcmp(preset, "auto") != 0) {
        struct wc_hparams want;
        if (model_size_hparams(preset, &want) != 0 || want.n_text_layer != hp->n_text_layer ||
            want.n_text_head != hp->n_text_head)
            return -1;
        snprintf(name, sizeof name, "%s", preset);
    } else {
        const char *type = model_file_type_name(hp);
        /* ".en" vocabularies have 51864 ids; an 80-mel "large" is v1 or v2: v2 is the later */
        snprintf(name, sizeof name, "%s%s", strcmp(type, "large") == 0 ? "large-v2" : type,
                 hp->n_vocab == 51864 ? ".en" : "");
    }
    /* an official list where it fits: a file of an official size's layers and widths may have
     * other head counts (an official list's heads would then be outside the model) */
    for (size_t i = 0; i < sizeof official / sizeof official[0]; i++)
        if (strcmp(name, official[i].name) == 0 && heads_fit(official[i].heads, official[i].n, hp))
            return copy_heads(official[i].heads, official[i].n, out);
    /* no list: every head of the last half of the decoder blocks */
    int n_layer = hp->n_text_layer, n_head = hp->n_text_head, first = n_layer / 2;
    int n = (n_layer - first) * n_head;
    *out = malloc((size_t)(n > 0 ? n : 1) * sizeof **out);
    if (!*out)
        return -2;
    for (int l = first, i = 0; l < n_layer; l++)
        for (int h = 0; h < n_head; h++, i++)
            (*out)[i] = (struct wc_align_head){l, h};
    return n;
}
