/* batch_manifest.c — see batch_manifest.h. */
#include "batch_manifest.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "batch_json.h"

/* Column names / JSON members that hold the audio path, in order of preference. */
static const char *const path_keys[] = {"path", "audio_filepath", "audio", "file"};
#define N_PATH_KEYS (int)(sizeof path_keys / sizeof path_keys[0])

enum manifest_kind manifest_kind_for(const char *filename) {
    const char *dot = strrchr(filename, '.');
    if (dot && strchr(dot, '/') == NULL) {
        if (strcasecmp(dot, ".csv") == 0)
            return MANIFEST_CSV;
        if (strcasecmp(dot, ".tsv") == 0)
            return MANIFEST_TSV;
        if (strcasecmp(dot, ".jsonl") == 0 || strcasecmp(dot, ".ndjson") == 0)
            return MANIFEST_JSONL;
    }
    return MANIFEST_TXT;
}

void manifest_free(struct manifest *m) {
    for (int i = 0; i < m->n; i++) {
        free(m->v[i].id);
        free(m->v[i].path);
    }
    free(m->v);
    *m = (struct manifest){0};
}

static int error_at(char *err, size_t err_size, int line, const char *what, const char *detail) {
    snprintf(err, err_size, "line %d: %s%s%s", line, what, detail ? ": " : "",
             detail ? detail : "");
    return -1;
}

/* Takes copies of id (NULL or "" for none) and path[0..path_len). */
static int add_item(struct manifest *m, const char *id, const char *path, size_t path_len, int line,
                    char *err, size_t err_size) {
    if (path_len == 0)
        return error_at(err, err_size, line, "empty path", NULL);
    if (memchr(path, '\0', path_len))
        return error_at(err, err_size, line, "NUL byte in the path", NULL);
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 64;
        struct manifest_item *v = realloc(m->v, (size_t)cap * sizeof *v);
        if (!v)
            return error_at(err, err_size, line, "out of memory", NULL);
        m->v = v;
        m->cap = cap;
    }
    struct manifest_item it = {.line = line, .path = strndup(path, path_len)};
    if (id && *id)
        it.id = strdup(id);
    if (!it.path || (id && *id && !it.id)) {
        free(it.path);
        free(it.id);
        return error_at(err, err_size, line, "out of memory", NULL);
    }
    m->v[m->n++] = it;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// txt

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* The line at *s (up to '\n' or end) as [*b, *e) without leading blanks; *s moves past it. */
static void next_line(const char **s, const char *end, const char **b, const char **e) {
    const char *nl = memchr(*s, '\n', (size_t)(end - *s));
    *b = *s;
    *e = nl ? nl : end;
    *s = nl ? nl + 1 : end;
    while (*b < *e && is_blank(**b))
        (*b)++;
}

static int parse_txt(const char *s, const char *end, struct manifest *m, char *err, size_t es) {
    for (int line = 1; s < end; line++) {
        const char *b, *e;
        next_line(&s, end, &b, &e);
        while (e > b && is_blank(e[-1]))
            e--;
        if (b == e || *b == '#')
            continue;
        if (add_item(m, NULL, b, (size_t)(e - b), line, err, es))
            return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// csv / tsv

struct record {
    struct sbuf *f; /* fields */
    int n, cap;
};

static void record_clear(struct record *r) {
    for (int i = 0; i < r->cap; i++)
        sbuf_free(&r->f[i]);
    r->n = 0;
}

static struct sbuf *record_new_field(struct record *r) {
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 8;
        struct sbuf *f = realloc(r->f, (size_t)cap * sizeof *f);
        if (!f)
            return NULL;
        memset(f + r->cap, 0, (size_t)(cap - r->cap) * sizeof *f);
        r->f = f;
        r->cap = cap;
    }
    struct sbuf *f = &r->f[r->n++];
    sbuf_add(f, "", 0); /* an empty field is "", not NULL */
    return f;
}

/* A quoted field after its opening quote; stops after the closing quote. */
static int quoted_field(const char **ps, const char *end, int *line, struct sbuf *f, char *err,
                        size_t es) {
    int start_line = *line;
    for (const char *s = *ps; s < end; s++) {
        if (*s == '\n')
            ++*line;
        if (*s != '"') {
            sbuf_add(f, s, 1);
            continue;
        }
        if (s + 1 < end && s[1] == '"') {
            sbuf_add(f, "\"", 1);
            s++;
            continue;
        }
        *ps = s + 1;
        return 0;
    }
    return error_at(err, es, start_line, "unterminated quoted field", NULL);
}

/* One record into r; *ps moves past its end of line. Returns 0 or -1. */
static int next_record(const char **ps, const char *end, char sep, int *line, struct record *r,
                       char *err, size_t es) {
    const char *s = *ps;
    record_clear(r);
    for (;;) {
        struct sbuf *f = record_new_field(r);
        if (!f)
            return error_at(err, es, *line, "out of memory", NULL);
        if (sep == ',' && s < end && *s == '"') {
            s++;
            if (quoted_field(&s, end, line, f, err, es))
                return -1;
            if (s < end && *s == '\r')
                s++;
            if (s < end && *s != sep && *s != '\n')
                return error_at(err, es, *line, "text after a closing quote", NULL);
        } else {
            const char *b = s;
            while (s < end && *s != sep && *s != '\n')
                s++;
            const char *e = s;
            if (e > b && e[-1] == '\r' && (s == end || *s == '\n'))
                e--;
            sbuf_add(f, b, (size_t)(e - b));
        }
        if (f->oom)
            return error_at(err, es, *line, "out of memory", NULL);
        if (s < end && *s == sep) {
            s++;
            continue;
        }
        if (s < end) /* '\n' */
            s++;
        *ps = s;
        return 0;
    }
}

static void trim_copy(char *dst, size_t cap, const char *src) {
    while (*src == ' ' || *src == '\t')
        src++;
    snprintf(dst, cap, "%s", src);
    size_t n = strlen(dst);
    while (n > 0 && (dst[n - 1] == ' ' || dst[n - 1] == '\t'))
        dst[--n] = '\0';
}

/* Finds the path and id columns in the header record. */
static int header_columns(const struct record *h, int *i_path, int *i_id, int line, char *err,
                          size_t es) {
    int best = N_PATH_KEYS;
    *i_path = *i_id = -1;
    for (int i = 0; i < h->n; i++) {
        char name[64];
        trim_copy(name, sizeof name, h->f[i].p);
        if (strcasecmp(name, "id") == 0 && *i_id < 0)
            *i_id = i;
        for (int k = 0; k < best; k++)
            if (strcasecmp(name, path_keys[k]) == 0) {
                best = k;
                *i_path = i;
            }
    }
    if (*i_path < 0)
        return error_at(err, es, line, "the header names no path column",
                        "expected one of path, audio_filepath, audio, file");
    return 0;
}

static int parse_csv(const char *s, const char *end, char sep, struct manifest *m, char *err,
                     size_t es) {
    struct record r = {0};
    int line = 1, i_path = -1, i_id = -1, rc = 0;
    while (s < end && rc == 0) {
        int rec_line = line;
        if ((rc = next_record(&s, end, sep, &line, &r, err, es)) != 0)
            break;
        line++;
        if (r.n == 1 && r.f[0].n == 0)
            continue; /* empty line */
        if (i_path < 0) {
            rc = header_columns(&r, &i_path, &i_id, rec_line, err, es);
            continue;
        }
        if (i_path >= r.n) {
            char d[64];
            snprintf(d, sizeof d, "%d field(s), the path is field %d", r.n, i_path + 1);
            rc = error_at(err, es, rec_line, "row too short", d);
            break;
        }
        const char *id = i_id >= 0 && i_id < r.n ? r.f[i_id].p : NULL;
        rc = add_item(m, id, r.f[i_path].p, r.f[i_path].n, rec_line, err, es);
    }
    if (rc == 0 && i_path < 0)
        rc = error_at(err, es, line, "no header row", NULL);
    record_clear(&r);
    free(r.f);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// jsonl

static int jsonl_item(const struct json_object *o, struct manifest *m, int line, char *err,
                      size_t es) {
    const char *path = NULL;
    for (int k = 0; k < N_PATH_KEYS && !path; k++)
        path = json_get_string(o, path_keys[k]);
    if (!path)
        return error_at(err, es, line, "no \"path\" string member", NULL);
    const struct json_member *id = json_get(o, "id");
    if (id && id->type != JSON_STRING && id->type != JSON_NUMBER && id->type != JSON_NULL)
        return error_at(err, es, line, "\"id\" must be a string or a number", NULL);
    return add_item(m, id ? id->value : NULL, path, strlen(path), line, err, es);
}

static int parse_jsonl(const char *s, const char *end, struct manifest *m, char *err, size_t es) {
    for (int line = 1; s < end; line++) {
        const char *b, *e;
        next_line(&s, end, &b, &e);
        if (b == e)
            continue;
        struct json_object o;
        char jerr[128];
        if (json_parse_object(b, (size_t)(e - b), &o, jerr, sizeof jerr))
            return error_at(err, es, line, "not a JSON object", jerr);
        int rc = jsonl_item(&o, m, line, err, es);
        json_object_free(&o);
        if (rc)
            return -1;
    }
    return 0;
}

int manifest_parse(const char *data, size_t len, enum manifest_kind kind, struct manifest *out,
                   char *err, size_t err_size) {
    const char *s = data, *end = data + len;
    if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
        s += 3;
    switch (kind) {
    case MANIFEST_CSV: return parse_csv(s, end, ',', out, err, err_size);
    case MANIFEST_TSV: return parse_csv(s, end, '\t', out, err, err_size);
    case MANIFEST_JSONL: return parse_jsonl(s, end, out, err, err_size);
    case MANIFEST_TXT: break;
    }
    return parse_txt(s, end, out, err, err_size);
}
