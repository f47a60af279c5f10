/* batch_map.c — see batch_map.h. */
#include "batch_map.h"

#include <stdlib.h>
#include <string.h>

uint64_t str_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static size_t slot_of(const struct strmap *m, const char *key) {
    size_t i = (size_t)str_hash(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & (m->cap - 1);
    return i;
}

/* Doubles the table (a power of two, at most half full). */
static int grow(struct strmap *m) {
    struct strmap g = {.cap = m->cap ? 2 * m->cap : 64};
    g.keys = calloc(g.cap, sizeof *g.keys);
    g.vals = malloc(g.cap * sizeof *g.vals);
    if (!g.keys || !g.vals) {
        free(g.keys);
        free(g.vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = slot_of(&g, m->keys[i]);
            g.keys[j] = m->keys[i];
            g.vals[j] = m->vals[i];
        }
    g.n = m->n;
    strmap_free(m);
    *m = g;
    return 0;
}

int strmap_put(struct strmap *m, const char *key, int val) {
    if (2 * (m->n + 1) > m->cap && grow(m))
        return -2;
    size_t i = slot_of(m, key);
    int old = m->keys[i] ? m->vals[i] : -1;
    if (!m->keys[i])
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return old;
}

int strmap_get(const struct strmap *m, const char *key) {
    if (m->cap == 0)
        return -1;
    size_t i = slot_of(m, key);
    return m->keys[i] ? m->vals[i] : -1;
}

void strmap_free(struct strmap *m) {
    free(m->keys);
    free(m->vals);
    *m = (struct strmap){0};
}
