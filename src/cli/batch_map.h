/*
 * batch_map.h — a string-keyed hash map to int (open addressing, FNV-1a), for looking up items
 * and results by id among millions. Keys are borrowed: they must outlive the map.
 */
#ifndef WC_CLI_BATCH_MAP_H
#define WC_CLI_BATCH_MAP_H

#include <stddef.h>
#include <stdint.h>

struct strmap {
    const char **keys;
    int *vals;
    size_t cap, n;
};

/* FNV-1a 64 of s: also the stable hash that assigns ids to shards. */
uint64_t str_hash(const char *s);

/* Sets key to val. Returns the previous value (>= 0) if key was there, -1 if it was not, or -2
 * when out of memory. Values must be >= 0. */
int strmap_put(struct strmap *m, const char *key, int val);
/* The value of key, or -1. */
int strmap_get(const struct strmap *m, const char *key);
void strmap_free(struct strmap *m);

#endif /* WC_CLI_BATCH_MAP_H */
