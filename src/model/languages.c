/*
 * languages.c — see languages.h. Tables copied from openai-whisper's tokenizer.py (LANGUAGES,
 * TO_LANGUAGE_CODE), in the same order.
 */
#include "model/languages.h"

#include <stddef.h>

static const struct {
    const char *code, *name;
} languages[WC_N_LANGUAGES] = {
    {"en", "english"},        {"zh", "chinese"},     {"de", "german"},        {"es", "spanish"},
    {"ru", "russian"},        {"ko", "korean"},      {"fr", "french"},        {"ja", "japanese"},
    {"pt", "portuguese"},     {"tr", "turkish"},     {"pl", "polish"},        {"ca", "catalan"},
    {"nl", "dutch"},          {"ar", "arabic"},      {"sv", "swedish"},       {"it", "italian"},
    {"id", "indonesian"},     {"hi", "hindi"},       {"fi", "finnish"},       {"vi", "vietnamese"},
    {"he", "hebrew"},         {"uk", "ukrainian"},   {"el", "greek"},         {"ms", "malay"},
    {"cs", "czech"},          {"ro", "romanian"},    {"da", "danish"},        {"hu", "hungarian"},
    {"ta", "tamil"},          {"no", "norwegian"},   {"th", "thai"},          {"ur", "urdu"},
    {"hr", "croatian"},       {"bg", "bulgarian"},   {"lt", "lithuanian"},    {"la", "latin"},
    {"mi", "maori"},          {"ml", "malayalam"},   {"cy", "welsh"},         {"sk", "slovak"},
    {"te", "telugu"},         {"fa", "persian"},     {"lv", "latvian"},       {"bn", "bengali"},
    {"sr", "serbian"},        {"az", "azerbaijani"}, {"sl", "slovenian"},     {"kn", "kannada"},
    {"et", "estonian"},       {"mk", "macedonian"},  {"br", "breton"},        {"eu", "basque"},
    {"is", "icelandic"},      {"hy", "armenian"},    {"ne", "nepali"},        {"mn", "mongolian"},
    {"bs", "bosnian"},        {"kk", "kazakh"},      {"sq", "albanian"},      {"sw", "swahili"},
    {"gl", "galician"},       {"mr", "marathi"},     {"pa", "punjabi"},       {"si", "sinhala"},
    {"km", "khmer"},          {"sn", "shona"},       {"yo", "yoruba"},        {"so", "somali"},
    {"af", "afrikaans"},      {"oc", "occitan"},     {"ka", "georgian"},      {"be", "belarusian"},
    {"tg", "tajik"},          {"sd", "sindhi"},      {"gu", "gujarati"},      {"am", "amharic"},
    {"yi", "yiddish"},        {"lo", "lao"},         {"uz", "uzbek"},         {"fo", "faroese"},
    {"ht", "haitian creole"}, {"ps", "pashto"},      {"tk", "turkmen"},       {"nn", "nynorsk"},
    {"mt", "maltese"},        {"sa", "sanskrit"},    {"lb", "luxembourgish"}, {"my", "myanmar"},
    {"bo", "tibetan"},        {"tl", "tagalog"},     {"mg", "malagasy"},      {"as", "assamese"},
    {"tt", "tatar"},          {"haw", "hawaiian"},   {"ln", "lingala"},       {"ha", "hausa"},
    {"ba", "bashkir"},        {"jw", "javanese"},    {"su", "sundanese"},     {"yue", "cantonese"},
};

/* TO_LANGUAGE_CODE entries beyond the names above: alias -> language index. */
static const struct {
    const char *alias;
    int index;
} aliases[] = {
    {"burmese", 87},       /* my */
    {"valencian", 11},     /* ca */
    {"flemish", 12},       /* nl */
    {"haitian", 80},       /* ht */
    {"letzeburgesch", 86}, /* lb */
    {"pushto", 81},        /* ps */
    {"panjabi", 62},       /* pa */
    {"moldavian", 25},     /* ro */
    {"moldovan", 25},      /* ro */
    {"sinhalese", 63},     /* si */
    {"castilian", 3},      /* es */
    {"mandarin", 1},       /* zh */
};

const char *lang_code(int i) { return i >= 0 && i < WC_N_LANGUAGES ? languages[i].code : NULL; }

const char *lang_name(int i) { return i >= 0 && i < WC_N_LANGUAGES ? languages[i].name : NULL; }

/* ASCII case-insensitive equality, independent of the locale. */
static int eq_nocase(const char *a, const char *b) {
    for (;; a++, b++) {
        unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
        if (x >= 'A' && x <= 'Z')
            x = (unsigned char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = (unsigned char)(y - 'A' + 'a');
        if (x != y)
            return 0;
        if (!x)
            return 1;
    }
}

int lang_index(const char *code_or_name) {
    if (!code_or_name || !*code_or_name)
        return -1;
    for (int i = 0; i < WC_N_LANGUAGES; i++)
        if (eq_nocase(code_or_name, languages[i].code) ||
            eq_nocase(code_or_name, languages[i].name))
            return i;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (eq_nocase(code_or_name, aliases[i].alias))
            return aliases[i].index;
    return -1;
}
