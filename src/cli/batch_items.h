/*
 * batch_items.h — the work list of `whisper-c batch`: audio files from the command line's
 * inputs (files, directories searched recursively, globs, manifests), each with a unique id
 * that names its outputs (DIR/<id>.txt, …) and its line in results.jsonl.
 *
 * An id is the path relative to its input root (the directory given, the directory part of a
 * glob before its first wildcard, the file's own directory for a single file, nothing for a
 * manifest path) without the extension, or the manifest's id column as given. Either way it is
 * made safe as a relative path: characters other than letters, digits, UTF-8, and . _ - + = , @
 * become '_', '/' separates subdirectories, empty and "." components are dropped, and a
 * component starting with '.' (".." included) gets '_' instead.
 */
#ifndef WC_CLI_BATCH_ITEMS_H
#define WC_CLI_BATCH_ITEMS_H

#include <stdbool.h>
#include <stddef.h>

#include "batch_map.h"

struct batch_item {
    char *id;
    char *path; /* the audio file as given or found */
};

struct batch_items {
    struct batch_item *v;
    int n, cap;
};

/* Adds INPUT: an audio file, a directory (files with an audio extension, recursively; hidden
 * entries and symbolic links to directories are skipped), or a glob pattern (matched
 * directories are searched as above). Returns 0, or -1 with a message in err. */
int items_add_input(struct batch_items *it, const char *input, char *err, size_t err_size);

/* Adds the entries of a manifest file ("-": standard input); see batch_manifest.h. */
int items_add_manifest(struct batch_items *it, const char *file, char *err, size_t err_size);

/* The id for a path relative to its root (extension dropped) or for an explicit id (kept
 * whole); NULL if nothing usable is left or out of memory. Caller frees. */
char *items_make_id(const char *s, bool drop_extension);

/* Fills map (id → index). Fails naming both paths when two items share an id. */
int items_index(const struct batch_items *it, struct strmap *map, char *err, size_t err_size);

/* Fails naming both paths when two items' outputs (id.ext for the n_exts extensions) would be
 * one file, their names compared with ASCII letters' case ignored: ids that differ only in
 * case (Spk1/Utt, spk1/utt) are one file on macOS's, Windows's, an SMB or exFAT mount, or
 * wherever the outputs are copied later; ids x and x.score are with txt and score.txt. Fails
 * too when an item's output is a file where another's id needs a directory (ids a and a.txt/b
 * with txt), or an id's first directory has a results file's name (results...jsonl). */
int items_check_outputs(const struct batch_items *it, const char *const *exts, int n_exts,
                        char *err, size_t err_size);

/* Keeps only shard k of n (0 <= k < n): the items whose str_hash(id) % n == k, in order. */
void items_keep_shard(struct batch_items *it, int k, int n);

void items_free(struct batch_items *it);

#endif /* WC_CLI_BATCH_ITEMS_H */
