/*
 * word_split.h — tokens to words as openai-whisper's Tokenizer.split_to_word_tokens, and the
 * punctuation merging of timing.merge_punctuations.
 */
#ifndef WC_WORD_SPLIT_H
#define WC_WORD_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

struct wc_vocab;

/* One word of an alignment (timing.WordTiming). */
struct wt_word {
    char *text;   /* owned, valid UTF-8; "" once merged into a neighbour */
    int n_tokens; /* tokens it spans */
    double start, end;
    double prob;
};

/* Splits tokens[0..n) (text tokens then EOT) into words: at every token boundary where the
 * decoded text is complete UTF-8, then (on_spaces, every language but zh, ja, th, lo, my and
 * yue) joining pieces that neither start with a space, nor are special, nor punctuation.
 * Returns the number of words with *out malloc'd (free with words_free), -1 when out of
 * memory. */
int split_to_words(const struct wc_vocab *v, const int32_t *tokens, int n, bool on_spaces,
                   struct wt_word **out);

/* Whether words are split at spaces for language code lang (NULL: English-only model). */
bool words_split_on_spaces(const char *lang);

/* timing.merge_punctuations: leading punctuation (in prepended) joins the next word, trailing
 * punctuation (in appended) the previous one. Returns 0, -1 when out of memory. */
int merge_punctuations(struct wt_word *w, int n, const char *prepended, const char *appended);

void words_free(struct wt_word *w, int n);

#endif /* WC_WORD_SPLIT_H */
