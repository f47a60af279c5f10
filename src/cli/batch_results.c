/*
 * batch_results.c — results.jsonl: one JSON object per line and per finished item. Lines are
 * only ever appended whole (one write() each) or the file is replaced by rename, so a reader
 * sees complete lines except, after a SIGKILL, at most one partial last line, which loading
 * drops.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch.h"
#include "batch_map.h"

static int add_line(struct results *r, const char *s, size_t n, int source) {
    struct json_object o;
    char jerr[128];
    if (json_parse_object(s, n, &o, jerr, sizeof jerr) != 0)
        return 1;
    const char *id = json_get_string(&o, "id"), *status = json_get_string(&o, "status");
    int rc = 1;
    if (id && *id && status) {
        if (r->n == r->cap) {
            int cap = r->cap ? 2 * r->cap : 256;
            struct result_line *v = realloc(r->v, (size_t)cap * sizeof *v);
            if (!v)
                return json_object_free(&o), -1;
            r->v = v;
            r->cap = cap;
        }
        struct result_line l = {.id = strdup(id), .text = strndup(s, n), .source = source};
        l.ok = strcmp(status, "ok") == 0;
        if (!l.id || !l.text) {
            free(l.id);
            free(l.text);
            return json_object_free(&o), -1;
        }
        r->v[r->n++] = l;
        rc = 0;
    }
    json_object_free(&o);
    return rc;
}

int results_load(const char *path, int source, struct results *r, int *n_dropped, bool *rewrite,
                 char *err, size_t es) {
    struct sbuf b = {0};
    *n_dropped = 0;
    *rewrite = false;
    if (sbuf_read_file(&b, path) != 0) {
        int e = errno;
        sbuf_free(&b);
        if (e == ENOENT)
            return 0;
        return snprintf(err, es, "%s: cannot read: %s", path, strerror(e)), -1;
    }
    *rewrite = b.n > 0 && b.p[b.n - 1] != '\n'; /* appending would extend the last line */
    for (const char *s = b.p, *end = b.p + b.n; s < end;) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        int rc = e > s ? add_line(r, s, (size_t)(e - s), source) : 0;
        if (rc < 0) {
            sbuf_free(&b);
            return snprintf(err, es, "%s: out of memory", path), -1;
        }
        *n_dropped += rc;
        s = nl ? nl + 1 : end;
    }
    if (*n_dropped)
        *rewrite = true;
    sbuf_free(&b);
    return 0;
}

int results_dedupe(struct results *r, int *n_dup, char *dup_ids, size_t dup_size) {
    struct strmap first = {0}; /* id → index of its kept line */
    int kept = 0;
    *n_dup = 0;
    if (dup_size)
        dup_ids[0] = '\0';
    for (int i = 0; i < r->n; i++) {
        struct result_line *l = &r->v[i];
        int k = strmap_get(&first, l->id);
        if (k < 0) {
            r->v[kept] = *l;
            if (strmap_put(&first, r->v[kept].id, kept) == -2) {
                /* leave r whole for results_free: v[kept + 1..i] were moved or freed */
                int rest = r->n - i - 1;
                memmove(&r->v[kept + 1], &r->v[i + 1], (size_t)rest * sizeof *r->v);
                r->n = kept + 1 + rest;
                return strmap_free(&first), -1;
            }
            kept++;
            continue;
        }
        struct result_line *have = &r->v[k];
        if (have->ok && l->ok && have->source != l->source && ++*n_dup <= 5) {
            size_t used = strlen(dup_ids);
            snprintf(dup_ids + used, dup_size - used, "%s%s", used ? ", " : "", l->id);
        }
        if (l->ok || !have->ok) { /* the later line wins unless it would replace ok by failed */
            free(have->text);
            have->text = l->text;
            have->ok = l->ok;
            have->source = l->source;
            free(l->id);
        } else {
            free(l->id);
            free(l->text);
        }
    }
    r->n = kept;
    strmap_free(&first);
    return 0;
}

int results_write(const struct results *r, const char *path, const char *tmp, char *err,
                  size_t es) {
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0)
        return snprintf(err, es, "%s: cannot create: %s", tmp, strerror(errno)), -1;
    struct sbuf b = {0};
    int rc = 0;
    for (int i = 0; i < r->n && rc == 0; i++) {
        if (r->v[i].drop)
            continue;
        sbuf_adds(&b, r->v[i].text);
        sbuf_add(&b, "\n", 1);
        if (b.n >= (1 << 20)) { /* write in 1 MiB pieces */
            rc = b.oom ? (errno = ENOMEM, -1) : results_append(fd, &b, true);
            b.n = 0;
        }
    }
    if (rc == 0 && (b.n > 0 || b.oom))
        rc = b.oom ? (errno = ENOMEM, -1) : results_append(fd, &b, true);
    int e = errno;
    sbuf_free(&b);
    if (close(fd) != 0 && rc == 0)
        rc = -1, e = errno;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1, e = errno;
    if (rc) {
        unlink(tmp);
        snprintf(err, es, "%s: cannot write: %s", path, strerror(e));
    }
    return rc;
}

void results_free(struct results *r) {
    for (int i = 0; i < r->n; i++) {
        free(r->v[i].id);
        free(r->v[i].text);
    }
    free(r->v);
    *r = (struct results){0};
}

static void add_number(struct sbuf *b, const char *key, double v, int decimals) {
    if (v < 0 || !isfinite(v))
        sbuf_printf(b, ", \"%s\": null", key);
    else
        sbuf_printf(b, ", \"%s\": %.*f", key, decimals, v);
}

void results_format(struct sbuf *b, const struct batch_item *item, bool ok, double duration_s,
                    const char *language, double seconds, const char *error) {
    sbuf_adds(b, "{\"id\": ");
    json_add_string(b, item->id);
    sbuf_adds(b, ", \"path\": ");
    json_add_string(b, item->path);
    sbuf_printf(b, ", \"status\": \"%s\"", ok ? "ok" : "failed");
    add_number(b, "duration", duration_s, 3);
    sbuf_adds(b, ", \"language\": ");
    if (language && *language)
        json_add_string(b, language);
    else
        sbuf_adds(b, "null");
    add_number(b, "seconds", seconds, 3);
    add_number(b, "rtf", duration_s > 0 ? seconds / duration_s : -1, 4);
    sbuf_adds(b, ", \"error\": ");
    if (error && *error)
        json_add_string(b, error);
    else
        sbuf_adds(b, "null");
    sbuf_adds(b, "}\n");
}

int results_append(int fd, const struct sbuf *line, bool sync) {
    struct stat st;
    off_t before = fstat(fd, &st) == 0 ? st.st_size : -1;
    size_t done = 0;
    while (done < line->n) { /* one write() in practice; loop only on a short write */
        ssize_t w = write(fd, line->p + done, line->n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            /* a short write then ENOSPC or EFBIG: no part of a line may stay, where the next
             * line (another worker's, once the failed item's files are gone) would join it */
            int e = w < 0 ? errno : EIO;
            if (done > 0 && before >= 0 && ftruncate(fd, before) != 0)
                e = errno;
            errno = e;
            return -1;
        }
        done += (size_t)w;
    }
    return !sync || fdatasync(fd) == 0 || errno == EINVAL ? 0 : -1;
}
