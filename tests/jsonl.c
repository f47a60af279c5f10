/* jsonl.c — see jsonl.h. Assumes well-formed JSON as json.dumps writes it. */
#include "jsonl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *jsonl_line(const char *path, int i) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = -1;
    for (int k = 0; k <= i; k++)
        if ((n = getline(&line, &cap, f)) < 0)
            break;
    fclose(f);
    if (n < 0) {
        free(line);
        return NULL;
    }
    return line;
}

char *read_text_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = '\0';
    } else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

static const char *find_key(const char *json, const char *key) {
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(json, pat);
    return p ? p + strlen(pat) : NULL;
}

static void put_utf8(char **o, unsigned cp) {
    unsigned char *u = (unsigned char *)*o;
    if (cp < 0x80) {
        *u++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *u++ = (unsigned char)(0xc0 | (cp >> 6));
        *u++ = (unsigned char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *u++ = (unsigned char)(0xe0 | (cp >> 12));
        *u++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        *u++ = (unsigned char)(0x80 | (cp & 0x3f));
    } else {
        *u++ = (unsigned char)(0xf0 | (cp >> 18));
        *u++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        *u++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        *u++ = (unsigned char)(0x80 | (cp & 0x3f));
    }
    *o = (char *)u;
}

char *json_string_at(const char *json, const char *key, const char **end) {
    const char *p = find_key(json, key);
    if (!p || *p != '"')
        return NULL;
    p++;
    char *out = malloc(strlen(p) + 1), *o = out;
    if (!out)
        return NULL;
    while (*p && *p != '"') {
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        p++;
        char c = *p++;
        if (c == 'u') {
            unsigned cp = (unsigned)strtoul((char[5]){p[0], p[1], p[2], p[3], 0}, NULL, 16);
            p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && p[0] == '\\' && p[1] == 'u') {
                unsigned lo = (unsigned)strtoul((char[5]){p[2], p[3], p[4], p[5], 0}, NULL, 16);
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            }
            put_utf8(&o, cp);
        } else {
            *o++ = c == 'n'   ? '\n'
                   : c == 't' ? '\t'
                   : c == 'r' ? '\r'
                   : c == 'b' ? '\b'
                   : c == 'f' ? '\f'
                              : c;
        }
    }
    *o = '\0';
    if (end)
        *end = *p ? p + 1 : p;
    return out;
}

int json_int_arrays(const char *json, const char *key, int32_t **out, int n) {
    const char *p = json;
    while ((p = find_key(p, key)) != NULL) {
        if (*p != '[')
            continue;
        p++;
        while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
            p++;
        while (*p && *p != ']') {
            char *e;
            long v = strtol(p, &e, 10);
            if (e == p)
                break;
            int32_t *q = realloc(*out, (size_t)(n + 1) * sizeof *q);
            if (!q)
                return n;
            *out = q;
            q[n++] = (int32_t)v;
            p = e;
            while (*p == ',' || *p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
                p++;
        }
    }
    return n;
}
