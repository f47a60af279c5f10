/*
 * languages.h — Whisper's language list in token order (openai-whisper tokenizer.py LANGUAGES):
 * index i is the language token sot + 1 + i.
 */
#ifndef WC_LANGUAGES_H
#define WC_LANGUAGES_H

#define WC_N_LANGUAGES 100

/* Code ("en") and English name ("english") of language i; NULL if out of range. */
const char *lang_code(int i);
const char *lang_name(int i);
/* Index of a code or name (case-insensitive; aliases such as "castilian" as in
 * TO_LANGUAGE_CODE); -1 if unknown. */
int lang_index(const char *code_or_name);

#endif /* WC_LANGUAGES_H */
