/*
 * vocab.h — Whisper's token vocabulary: byte strings, special tokens, languages, BPE.
 *
 * Token ids follow openai-whisper's tokenizer.py (get_encoding): the byte-level BPE tokens of
 * the file (ranks 0..n_tokens-1; for ".en" models the last one is <|endoftext|> itself), then
 * <|endoftext|> (multilingual only), <|startoftranscript|>, one token per language,
 * <|translate|>, <|transcribe|>, <|startoflm|>, <|startofprev|>, <|nospeech|>,
 * <|notimestamps|>, and 1501 timestamps <|0.00|> … <|30.00|>. So with eot the id of
 * <|endoftext|>: sot = eot+1, languages sot+1 … sot+n_languages, translate = sot+n_languages+1,
 * …, timestamp_begin = sot+n_languages+7 = n_vocab-1501.
 */
#ifndef WC_VOCAB_H
#define WC_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wc_model_file;
struct bpe_table;

struct wc_vocab {
    int n_vocab; /* hparams.n_vocab: all ids, specials and timestamps included */
    bool multilingual;
    int n_languages; /* 99, or 100 for large-v3 */
    int eot, sot, translate, transcribe, sot_lm, sot_prev, no_speech, no_timestamps;
    int timestamp_begin;
    /* Bytes of every id < n_vocab: BPE tokens as in the file, specials as their text
     * ("<|startoftranscript|>", "<|en|>", "<|0.02|>"). Owned. */
    char **text;
    int *text_len;
    struct bpe_table *bpe; /* byte string -> rank, for encoding; owned */
};

/* Builds the vocabulary from the model file's byte strings and hparams.n_vocab.
 * Returns 0, or a WHISPERC_ERR_* code with a message in err. */
int vocab_init(struct wc_vocab *v, const struct wc_model_file *f, char *err, size_t err_size);
void vocab_free(struct wc_vocab *v);

/* Token id of language index i_lang (whisperc_lang_code order), or -1 if the model lacks it. */
int vocab_lang_token(const struct wc_vocab *v, int i_lang);

/* Concatenated bytes of the text tokens (ids < eot: a segment's text, openai-whisper's decode
 * of its text_tokens), then made valid UTF-8: each invalid sequence becomes U+FFFD exactly as
 * Python's bytes.decode("utf-8", errors="replace"). Returns a malloc'd NUL-terminated string
 * (NULL when out of memory). */
char *vocab_decode(const struct wc_vocab *v, const int32_t *tokens, int n_tokens);
/* The same with the special tokens too, as their names ("<|ja|>"), timestamps skipped: what
 * tokenizer.decode gives for a window's sampled tokens (DecodingResult.text, whose compression
 * ratio decides a fallback) and for a transcript's (its "text"). */
char *vocab_decode_all(const struct wc_vocab *v, const int32_t *tokens, int n_tokens);

/* Encodes UTF-8 text as tiktoken's encode() does for Whisper (GPT-2 pre-tokenizer regex, then
 * byte-pair merges by rank); special-token text is encoded as ordinary text. Returns the number
 * of tokens written to *out (malloc'd, caller frees), or -1 on error (out of memory). Invalid
 * UTF-8 input is encoded byte-wise, never rejected. */
int vocab_encode(const struct wc_vocab *v, const char *text, int32_t **out);

/* tokenizer.non_speech_tokens: sorted ids of symbols that mark non-speech annotations. Returns
 * the count, *out malloc'd; -1 on error. */
int vocab_non_speech_tokens(const struct wc_vocab *v, int32_t **out);

#endif /* WC_VOCAB_H */
