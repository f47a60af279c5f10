/*
 * jsonl.h — just enough JSON reading for the golden files (dev.jsonl lines): find a key's
 * string or number value, or all integer arrays under a key, in one JSON text.
 */
#ifndef WC_TEST_JSONL_H
#define WC_TEST_JSONL_H

#include <stddef.h>
#include <stdint.h>

/* Reads line i (0-based) of a file; malloc'd, NULL at EOF or error. */
char *jsonl_line(const char *path, int i);

/* A whole file as a NUL-terminated string (malloc'd), NULL on error. */
char *read_text_file(const char *path);

/* The string value of the first "key": "..." at or after `from`, unescaped to UTF-8 (malloc'd),
 * or NULL. If end is not NULL it receives the position after the value. */
char *json_string_at(const char *json, const char *key, const char **end);

/* Appends every integer of every "key": [ints] array in json to *out (realloc'd); returns the
 * new count. */
int json_int_arrays(const char *json, const char *key, int32_t **out, int n);

#endif
