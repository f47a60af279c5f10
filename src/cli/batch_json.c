/* batch_json.c — see batch_json.h. Grammar as RFC 8259; inputs may be hostile (fuzzed). */
#include "batch_json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------------------------
// string buffer

static bool sbuf_reserve(struct sbuf *b, size_t extra) {
    if (b->oom)
        return false;
    if (b->n + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void sbuf_add(struct sbuf *b, const char *s, size_t n) {
    if (!sbuf_reserve(b, n))
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void sbuf_adds(struct sbuf *b, const char *s) { sbuf_add(b, s, strlen(s)); }

void sbuf_printf(struct sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !sbuf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void sbuf_free(struct sbuf *b) {
    free(b->p);
    *b = (struct sbuf){0};
}

int sbuf_read_file(struct sbuf *b, const char *path) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return -1;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        sbuf_add(b, chunk, n);
    int saved = errno, bad = ferror(f);
    if (f != stdin)
        fclose(f);
    sbuf_add(b, "", 0); /* an empty file still gives "" */
    errno = b->oom ? ENOMEM : saved;
    return bad || b->oom ? -1 : 0;
}

// ---------------------------------------------------------------------------------------------
// writing

int utf8_len(const unsigned char *s) {
    if (s[0] < 0x80)
        return 1;
    int n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || s[0] > 0xf4)
        return 0;
    uint32_t c = s[0] & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    /* overlong forms, surrogates and code points past U+10FFFF are invalid */
    if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0;
    return n;
}

void json_add_string(struct sbuf *b, const char *s) {
    sbuf_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_len(p);
        if (*p == '"' || *p == '\\')
            sbuf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            sbuf_adds(b, "\\n");
        else if (*p == '\t')
            sbuf_adds(b, "\\t");
        else if (*p < 0x20 || *p == 0x7f)
            sbuf_printf(b, "\\u%04x", *p);
        else if (n == 0)
            sbuf_adds(b, "\\ufffd");
        else
            sbuf_add(b, (const char *)p, (size_t)n);
        p += n ? n : 1;
    }
    sbuf_add(b, "\"", 1);
}

// ---------------------------------------------------------------------------------------------
// parsing

#define JSON_MAX_DEPTH 64

struct parser {
    const char *s, *p, *end;
    char *err;
    size_t err_size;
};

static int fail(struct parser *ps, const char *what) {
    snprintf(ps->err, ps->err_size, "column %zu: %s", (size_t)(ps->p - ps->s) + 1, what);
    return -1;
}

static void skip_ws(struct parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r' || *ps->p == '\n'))
        ps->p++;
}

static int hex4(struct parser *ps, uint32_t *out) {
    if (ps->end - ps->p < 4)
        return fail(ps, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *ps->p++;
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return fail(ps, "bad \\u escape");
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return 0;
}

static void put_utf8(struct sbuf *b, uint32_t c) {
    char u[4];
    size_t n;
    if (c < 0x80)
        u[0] = (char)c, n = 1;
    else if (c < 0x800)
        u[0] = (char)(0xc0 | c >> 6), u[1] = (char)(0x80 | (c & 0x3f)), n = 2;
    else if (c < 0x10000)
        u[0] = (char)(0xe0 | c >> 12), u[1] = (char)(0x80 | (c >> 6 & 0x3f)),
        u[2] = (char)(0x80 | (c & 0x3f)), n = 3;
    else
        u[0] = (char)(0xf0 | c >> 18), u[1] = (char)(0x80 | (c >> 12 & 0x3f)),
        u[2] = (char)(0x80 | (c >> 6 & 0x3f)), u[3] = (char)(0x80 | (c & 0x3f)), n = 4;
    sbuf_add(b, u, n);
}

/* \uXXXX after the backslash and 'u', surrogate pairs joined; lone surrogates become U+FFFD. */
static int unicode_escape(struct parser *ps, struct sbuf *out) {
    uint32_t c, lo;
    if (hex4(ps, &c))
        return -1;
    if (c >= 0xd800 && c <= 0xdbff && ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u') {
        const char *save = ps->p;
        ps->p += 2;
        if (hex4(ps, &lo))
            return -1;
        if (lo >= 0xdc00 && lo <= 0xdfff)
            c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
        else
            ps->p = save;
    }
    if (c == 0)
        return fail(ps, "\\u0000 in a string");
    put_utf8(out, c >= 0xd800 && c <= 0xdfff ? 0xfffd : c);
    return 0;
}

/* A string at ps->p (on the opening quote); out receives it unescaped, or NULL to skip. */
static int parse_string(struct parser *ps, struct sbuf *out) {
    struct sbuf skip = {0};
    if (!out)
        out = &skip;
    ps->p++;
    for (;;) {
        if (ps->p >= ps->end)
            return sbuf_free(&skip), fail(ps, "unterminated string");
        unsigned char c = (unsigned char)*ps->p++;
        if (c == '"')
            break;
        if (c < 0x20)
            return sbuf_free(&skip), fail(ps, "control character in a string");
        if (c != '\\') {
            sbuf_add(out, (const char *)&c, 1);
            continue;
        }
        if (ps->p >= ps->end)
            return sbuf_free(&skip), fail(ps, "unterminated string");
        const char *esc = strchr("\"\\/bfnrtu", *ps->p);
        if (!esc || !*ps->p)
            return sbuf_free(&skip), fail(ps, "bad escape in a string");
        ps->p++;
        if (*esc == 'u') {
            if (unicode_escape(ps, out))
                return sbuf_free(&skip), -1;
        } else
            sbuf_add(out, &"\"\\/\b\f\n\r\t"[esc - "\"\\/bfnrtu"], 1);
    }
    if (out == &skip) {
        sbuf_free(&skip);
        return 0;
    }
    if (!out->p) /* an empty string still yields "" */
        sbuf_add(out, "", 0);
    return out->oom ? fail(ps, "out of memory") : 0;
}

static int parse_number(struct parser *ps) {
    const char *p = ps->p, *e = ps->end;
    if (p < e && *p == '-')
        p++;
    if (p < e && *p == '0')
        p++;
    else if (p < e && *p >= '1' && *p <= '9')
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    else
        return fail(ps, "bad number");
    if (p < e && *p == '.') {
        if (++p >= e || *p < '0' || *p > '9')
            return fail(ps, "bad number");
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        if (++p < e && (*p == '+' || *p == '-'))
            p++;
        if (p >= e || *p < '0' || *p > '9')
            return fail(ps, "bad number");
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    ps->p = p;
    return 0;
}

static int parse_literal(struct parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return fail(ps, "unexpected character");
    ps->p += n;
    return 0;
}

/* Any value, not kept; nested arrays and objects to JSON_MAX_DEPTH. */
static int skip_value(struct parser *ps, int depth) {
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "value expected");
    char c = *ps->p;
    if (c == '"')
        return parse_string(ps, NULL);
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(ps);
    if (c != '[' && c != '{')
        return parse_literal(ps, c == 't' ? "true" : c == 'f' ? "false" : "null");
    if (depth >= JSON_MAX_DEPTH)
        return fail(ps, "nested too deeply");
    char close = c == '[' ? ']' : '}';
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close)
        return ps->p++, 0;
    for (;;) {
        if (close == '}') {
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != '"' || parse_string(ps, NULL))
                return fail(ps, "member name expected");
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p++ != ':')
                return fail(ps, "':' expected");
        }
        if (skip_value(ps, depth + 1))
            return -1;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close)
            return ps->p++, 0;
        return fail(ps, close == ']' ? "',' or ']' expected" : "',' or '}' expected");
    }
}

/* One member's value at top level: strings and numbers kept, the rest typed only. */
static int member_value(struct parser *ps, struct json_member *m) {
    skip_ws(ps);
    const char *start = ps->p;
    char c = ps->p < ps->end ? *ps->p : '\0';
    if (c == '"') {
        struct sbuf v = {0};
        if (parse_string(ps, &v))
            return sbuf_free(&v), -1;
        m->type = JSON_STRING;
        m->value = v.p;
        return 0;
    }
    if (skip_value(ps, 1))
        return -1;
    m->type = c == '[' || c == '{' ? JSON_NESTED
              : c == 't'           ? JSON_TRUE
              : c == 'f'           ? JSON_FALSE
              : c == 'n'           ? JSON_NULL
                                   : JSON_NUMBER;
    if (m->type == JSON_NUMBER && !(m->value = strndup(start, (size_t)(ps->p - start))))
        return fail(ps, "out of memory");
    return 0;
}

static int parse_members(struct parser *ps, struct json_object *o) {
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"')
            return fail(ps, "member name expected");
        struct json_member *m = realloc(o->m, (size_t)(o->n + 1) * sizeof *m);
        if (!m)
            return fail(ps, "out of memory");
        o->m = m;
        m = &o->m[o->n++];
        *m = (struct json_member){0};
        struct sbuf key = {0};
        if (parse_string(ps, &key))
            return sbuf_free(&key), -1;
        m->key = key.p;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p++ != ':')
            return fail(ps, "':' expected");
        if (member_value(ps, m))
            return -1;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}')
            return ps->p++, 0;
        return fail(ps, "',' or '}' expected");
    }
}

int json_parse_object(const char *s, size_t len, struct json_object *out, char *err,
                      size_t err_size) {
    struct parser ps = {.s = s, .p = s, .end = s + len, .err = err, .err_size = err_size};
    *out = (struct json_object){0};
    skip_ws(&ps);
    if (ps.p >= ps.end || *ps.p != '{')
        return fail(&ps, "a JSON object '{' expected");
    ps.p++;
    skip_ws(&ps);
    int rc = 0;
    if (ps.p < ps.end && *ps.p == '}')
        ps.p++;
    else
        rc = parse_members(&ps, out);
    skip_ws(&ps);
    if (rc == 0 && ps.p != ps.end)
        rc = fail(&ps, "text after the object");
    if (rc)
        json_object_free(out);
    return rc;
}

const struct json_member *json_get(const struct json_object *o, const char *key) {
    for (int i = o->n - 1; i >= 0; i--)
        if (strcmp(o->m[i].key, key) == 0)
            return &o->m[i];
    return NULL;
}

const char *json_get_string(const struct json_object *o, const char *key) {
    const struct json_member *m = json_get(o, key);
    return m && m->type == JSON_STRING ? m->value : NULL;
}

void json_object_free(struct json_object *o) {
    for (int i = 0; i < o->n; i++) {
        free(o->m[i].key);
        free(o->m[i].value);
    }
    free(o->m);
    *o = (struct json_object){0};
}
