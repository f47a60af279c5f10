/*
 * batch_json.h — the little JSON that `whisper-c batch` needs: a growable string buffer, JSON
 * string quoting, and a parser for one flat JSON object per line (JSONL manifests and
 * results.jsonl). Nested arrays and objects are skipped, not returned. Not a general JSON
 * library: no DOM, no numbers converted.
 */
#ifndef WC_CLI_BATCH_JSON_H
#define WC_CLI_BATCH_JSON_H

#include <stdbool.h>
#include <stddef.h>

/* A NUL-terminated, growable string. An allocation failure sets oom and drops later appends,
 * so callers check once at the end. */
struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
};

void sbuf_add(struct sbuf *b, const char *s, size_t n);
void sbuf_adds(struct sbuf *b, const char *s);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbuf_free(struct sbuf *b);
/* Appends the whole file at path ("-": standard input). Returns 0, or -1 with errno set
 * (ENOMEM when out of memory). */
int sbuf_read_file(struct sbuf *b, const char *path);

/* Appends s as a quoted JSON string. Invalid UTF-8 bytes become U+FFFD, so the line always
 * parses. */
void json_add_string(struct sbuf *b, const char *s);

/* Length of the valid UTF-8 sequence at s (1..4; 1 for ASCII), or 0 if there is none. */
int utf8_len(const unsigned char *s);

enum json_type { JSON_STRING, JSON_NUMBER, JSON_TRUE, JSON_FALSE, JSON_NULL, JSON_NESTED };

struct json_member {
    char *key;
    char *value; /* unescaped string, or the number's text; NULL for the other types */
    enum json_type type;
};

struct json_object {
    struct json_member *m;
    int n;
};

/* Parses exactly one JSON object (surrounding whitespace allowed) from s[0..len). Returns 0, or
 * -1 with a message naming the column in err. Strings holding \u0000 are rejected. */
int json_parse_object(const char *s, size_t len, struct json_object *out, char *err,
                      size_t err_size);
/* The last member named key, or NULL. */
const struct json_member *json_get(const struct json_object *o, const char *key);
/* The string value of key, or NULL if absent or not a string. */
const char *json_get_string(const struct json_object *o, const char *key);
void json_object_free(struct json_object *o);

#endif /* WC_CLI_BATCH_JSON_H */
