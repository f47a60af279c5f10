/* batch_items.c — see batch_items.h. */
#include "batch_items.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "batch_json.h"
#include "batch_manifest.h"

/* What a directory search picks up: formats libsndfile reads (mp3 needs libsndfile >= 1.1). */
static const char *const audio_ext[] = {"wav",  "wave", "flac", "ogg", "oga", "opus", "mp3",
                                        "aif",  "aiff", "aifc", "au",  "snd", "caf",  "w64",
                                        "rf64", "sph",  "voc",  "htk", "mat", "sd2",  NULL};
#define MAX_DEPTH 64 /* directory nesting; deeper is most likely a loop */

static bool has_audio_ext(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name)
        return false;
    for (int i = 0; audio_ext[i]; i++)
        if (strcasecmp(dot + 1, audio_ext[i]) == 0)
            return true;
    return false;
}

static bool id_char_ok(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("._-+=,@", c) != NULL;
}

/* One path component into b, sanitized (see batch_items.h). */
static void add_component(struct sbuf *b, const char *s, size_t n) {
    if (b->n > 0)
        sbuf_add(b, "/", 1);
    char *c = strndup(s, n);
    if (!c) {
        b->oom = true;
        return;
    }
    for (size_t i = 0; i < n;) {
        int len = utf8_len((const unsigned char *)c + i);
        if (len > 1)
            sbuf_add(b, c + i, (size_t)len);
        else
            sbuf_add(b,
                     i == 0 && c[i] == '.'             ? "_"
                     : id_char_ok((unsigned char)c[i]) ? c + i
                                                       : "_",
                     1);
        i += len > 1 ? (size_t)len : 1;
    }
    free(c);
}

char *items_make_id(const char *s, bool drop_extension) {
    struct sbuf b = {0};
    size_t len = strlen(s);
    const char *last = strrchr(s, '/');
    last = last ? last + 1 : s;
    const char *dot = drop_extension ? strrchr(last, '.') : NULL;
    if (dot && dot > last) /* "x.flac" → "x", but ".hidden" keeps its name */
        len = (size_t)(dot - s);
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && s[j] != '/')
            j++;
        if (j > i && !(j - i == 1 && s[i] == '.'))
            add_component(&b, s + i, j - i);
        i = j + 1;
    }
    if (b.oom || b.n == 0) {
        sbuf_free(&b);
        return NULL;
    }
    return b.p;
}

static int add_item(struct batch_items *it, const char *path, const char *id_source, bool drop_ext,
                    char *err, size_t es) {
    if (it->n == it->cap) {
        int cap = it->cap ? 2 * it->cap : 256;
        struct batch_item *v = realloc(it->v, (size_t)cap * sizeof *v);
        if (!v)
            return snprintf(err, es, "out of memory"), -1;
        it->v = v;
        it->cap = cap;
    }
    struct batch_item item = {.id = items_make_id(id_source, drop_ext), .path = strdup(path)};
    if (!item.id || !item.path) {
        snprintf(err, es, "%s: cannot make an id from '%s'", path, id_source);
        free(item.id);
        free(item.path);
        return -1;
    }
    it->v[it->n++] = item;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// directories and globs

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir, hidden ones left out. */
static char **list_dir(const char *dir, int *n_out, char *err, size_t es) {
    DIR *d = opendir(dir);
    if (!d)
        return snprintf(err, es, "%s: cannot open directory: %s", dir, strerror(errno)), NULL;
    char **v = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv)
                break;
            v = nv;
        }
        if (!(v[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (e != NULL) { /* left the loop early: out of memory */
        for (int i = 0; i < n; i++)
            free(v[i]);
        free(v);
        return snprintf(err, es, "%s: out of memory", dir), NULL;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    *n_out = n;
    return v ? v : calloc(1, sizeof *v);
}

/* Adds the audio files under dir; ids relative to root (a prefix of dir, or ""). */
static int walk(struct batch_items *it, const char *root, const char *dir, int depth, char *err,
                size_t es) {
    if (depth > MAX_DEPTH)
        return snprintf(err, es, "%s: directories nested too deeply", dir), -1;
    int n = 0, rc = 0;
    char **names = list_dir(dir, &n, err, es);
    if (!names)
        return -1;
    size_t root_len = strlen(root);
    for (int i = 0; i < n && rc == 0; i++) {
        struct sbuf path = {0};
        bool slash = dir[0] && dir[strlen(dir) - 1] != '/';
        sbuf_printf(&path, "%s%s%s", dir, slash ? "/" : "", names[i]);
        struct stat st, lst;
        if (path.oom)
            rc = -1, snprintf(err, es, "%s: out of memory", dir);
        else if (stat(path.p, &st) != 0 || lstat(path.p, &lst) != 0)
            ; /* a dangling link or a file gone meanwhile: nothing to transcribe */
        else if (S_ISDIR(st.st_mode) && !S_ISLNK(lst.st_mode))
            rc = walk(it, root, path.p, depth + 1, err, es);
        else if (S_ISREG(st.st_mode) && has_audio_ext(names[i]))
            rc = add_item(it, path.p, path.p + root_len, true, err, es);
        sbuf_free(&path);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* The directory part of a pattern before its first wildcard, with its trailing '/'. */
static size_t glob_root_len(const char *pattern) {
    size_t magic = strcspn(pattern, "*?[");
    size_t len = 0;
    for (size_t i = 0; i < magic; i++)
        if (pattern[i] == '/')
            len = i + 1;
    return len;
}

/* A pattern whose name ends in a literal extension (as "*.sph") asks for those files; the
 * matches of any other (a directory's star, "2024-*") are taken as a directory's are, by their
 * audio extension, so that the transcripts, notes and sidecars beside them stay out. */
static bool pattern_names_ext(const char *pattern) {
    const char *base = strrchr(pattern, '/');
    base = base ? base + 1 : pattern;
    const char *dot = strrchr(base, '.');
    return dot && dot[1] && !strpbrk(dot, "*?[");
}

static int add_glob(struct batch_items *it, const char *pattern, char *err, size_t es) {
    glob_t g;
    int grc = glob(pattern, 0, NULL, &g);
    if (grc == GLOB_NOMATCH)
        return snprintf(err, es, "%s: no file matches", pattern), -1;
    if (grc != 0)
        return snprintf(err, es, "%s: cannot expand the pattern", pattern), -1;
    char *root = strndup(pattern, glob_root_len(pattern));
    int rc = root ? 0 : -1, n_before = it->n;
    bool any_file = pattern_names_ext(pattern);
    for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) {
        const char *p = g.gl_pathv[i];
        const char *rel = strncmp(p, root, strlen(root)) == 0 ? p + strlen(root) : p;
        const char *name = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
        if (!strcmp(name, ".") || !strcmp(name, "..")) /* '.*' matches them: not the inputs */
            continue;
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rc = walk(it, root, p, 0, err, es);
        else if (stat(p, &st) == 0 && (any_file || has_audio_ext(name)))
            rc = add_item(it, p, rel, true, err, es);
    }
    if (!root)
        snprintf(err, es, "out of memory");
    else if (rc == 0 && it->n == n_before)
        rc = -1,
        snprintf(err, es, "%s: no audio file matches (by extension: wav, flac, mp3, …)", pattern);
    free(root);
    globfree(&g);
    return rc;
}

int items_add_input(struct batch_items *it, const char *input, char *err, size_t es) {
    struct stat st;
    if (stat(input, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return walk(it, input, input, 0, err, es);
        const char *base = strrchr(input, '/');
        return add_item(it, input, base ? base + 1 : input, true, err, es);
    }
    if (strpbrk(input, "*?["))
        return add_glob(it, input, err, es);
    snprintf(err, es, "%s: %s", input, strerror(errno));
    return -1;
}

// ---------------------------------------------------------------------------------------------
// manifests

int items_add_manifest(struct batch_items *it, const char *file, char *err, size_t es) {
    struct sbuf data = {0};
    if (sbuf_read_file(&data, file) != 0) {
        snprintf(err, es, "%s: %s", file, strerror(errno));
        sbuf_free(&data);
        return -1;
    }
    struct manifest m = {0};
    char perr[512];
    int rc = manifest_parse(data.p, data.n, manifest_kind_for(file), &m, perr, sizeof perr);
    if (rc)
        snprintf(err, es, "%s: %s", file, perr);
    for (int i = 0; i < m.n && rc == 0; i++) {
        const struct manifest_item *e = &m.v[i];
        if (add_item(it, e->path, e->id ? e->id : e->path, e->id == NULL, perr, sizeof perr))
            rc = -1, snprintf(err, es, "%s: line %d: %s", file, e->line, perr);
    }
    manifest_free(&m);
    sbuf_free(&data);
    return rc;
}

// ---------------------------------------------------------------------------------------------

/* s in lower case, as a case-insensitive file system compares names (ASCII) */
static void fold_case(char *s) {
    for (char *c = s; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
}

/* The names of the results files batch.c writes (in lower case): results.jsonl,
 * results.all.jsonl, results.shard-K-of-N.jsonl. */
static bool results_name(const char *s) {
    size_t n = strlen(s);
    return strcmp(s, "results.jsonl") == 0 || strcmp(s, "results.all.jsonl") == 0 ||
           (strncmp(s, "results.shard-", 14) == 0 && n > 20 && strcmp(s + n - 6, ".jsonl") == 0);
}

int items_check_outputs(const struct batch_items *it, const char *const *exts, int n_exts,
                        char *err, size_t es) {
    struct strmap names = {0};
    size_t n_keys = (size_t)it->n * (size_t)n_exts;
    char **keys = calloc(n_keys + 1, sizeof *keys); /* key k: item k / n_exts */
    int rc = keys ? 0 : -2;
    for (size_t k = 0; k < n_keys && rc == 0; k++) {
        int i = (int)(k / (size_t)n_exts);
        const char *ext = exts[k % (size_t)n_exts];
        size_t len = strlen(it->v[i].id) + 1 + strlen(ext) + 1;
        if (!(keys[k] = malloc(len))) {
            rc = -2;
            break;
        }
        snprintf(keys[k], len, "%s.%s", it->v[i].id, ext);
        fold_case(keys[k]);
        int old = strmap_put(&names, keys[k], (int)k);
        if (old == -2) {
            rc = -2;
        } else if (old >= 0) {
            const struct batch_item *x = &it->v[old / n_exts], *y = &it->v[i];
            if (strcasecmp(x->id, y->id) == 0)
                snprintf(err, es,
                         "ids '%s' and '%s' differ only in case: on a case-insensitive file "
                         "system (macOS, Windows, SMB, exFAT) their outputs are the same files: "
                         "%s and %s (give ids in a manifest)",
                         x->id, y->id, x->path, y->path);
            else
                snprintf(err, es,
                         "ids '%s' and '%s' would both write %s.%s: %s and %s (give ids in a "
                         "manifest)",
                         x->id, y->id, y->id, ext, x->path, y->path);
            rc = -1;
        }
    }
    /* a file where another item needs a directory: 'a' writes a.txt, 'a.txt/b' writes into a
     * directory a.txt; so does one named results...jsonl beside the results file */
    for (int i = 0; i < it->n && rc == 0; i++) {
        char *dir = strdup(it->v[i].id);
        if (!dir) {
            rc = -2;
            break;
        }
        fold_case(dir);
        for (char *slash = strchr(dir, '/'); slash && rc == 0; slash = strchr(slash + 1, '/')) {
            *slash = '\0';
            int k = strmap_get(&names, dir), len = (int)(slash - dir); /* the id's spelling */
            if (k >= 0) {
                const struct batch_item *x = &it->v[k / n_exts];
                snprintf(err, es,
                         "id '%s' writes into a directory %.*s, but id '%s' writes a file of "
                         "that name: %s and %s (give ids in a manifest)",
                         it->v[i].id, len, it->v[i].id, x->id, it->v[i].path, x->path);
                rc = -1;
            } else if (!strchr(dir, '/') && results_name(dir)) {
                snprintf(err, es,
                         "id '%s' writes into a directory %.*s, the name of a results file: %s "
                         "(give ids in a manifest)",
                         it->v[i].id, len, it->v[i].id, it->v[i].path);
                rc = -1;
            }
            *slash = '/';
        }
        free(dir);
    }
    if (rc == -2)
        snprintf(err, es, "out of memory");
    strmap_free(&names);
    for (size_t k = 0; keys && k < n_keys; k++)
        free(keys[k]);
    free(keys);
    return rc ? -1 : 0;
}

int items_index(const struct batch_items *it, struct strmap *map, char *err, size_t es) {
    for (int i = 0; i < it->n; i++) {
        int old = strmap_put(map, it->v[i].id, i);
        if (old == -2)
            return snprintf(err, es, "out of memory"), -1;
        if (old >= 0) {
            snprintf(err, es, "duplicate id '%s': %s and %s (give ids in a manifest)", it->v[i].id,
                     it->v[old].path, it->v[i].path);
            return -1;
        }
    }
    return 0;
}

void items_keep_shard(struct batch_items *it, int k, int n) {
    int kept = 0;
    for (int i = 0; i < it->n; i++) {
        if ((int)(str_hash(it->v[i].id) % (uint64_t)n) == k)
            it->v[kept++] = it->v[i];
        else {
            free(it->v[i].id);
            free(it->v[i].path);
        }
    }
    it->n = kept;
}

void items_free(struct batch_items *it) {
    for (int i = 0; i < it->n; i++) {
        free(it->v[i].id);
        free(it->v[i].path);
    }
    free(it->v);
    *it = (struct batch_items){0};
}
