/*
 * batch_manifest.h — the manifest formats of `whisper-c batch --manifest FILE`, as a pure
 * function from bytes to items (no file system, no globals), so it can be fuzzed alone:
 *
 *   .txt (or anything else)  one path per line; blank lines and lines starting with '#' skipped,
 *                            surrounding spaces and tabs and a trailing CR removed
 *   .csv                     RFC 4180: a header row naming a `path` column (or audio_filepath,
 *                            audio, file) and optionally an `id` column; quoted fields may hold
 *                            commas, "" and newlines
 *   .tsv                     the same with tabs and no quoting (Common Voice's layout)
 *   .jsonl / .ndjson         one object per line with "path" (or "audio_filepath", "audio",
 *                            "file") and optionally "id" (a string or a number)
 *
 * A UTF-8 byte-order mark at the start is ignored. Paths are returned as written.
 */
#ifndef WC_CLI_BATCH_MANIFEST_H
#define WC_CLI_BATCH_MANIFEST_H

#include <stddef.h>

enum manifest_kind { MANIFEST_TXT, MANIFEST_CSV, MANIFEST_TSV, MANIFEST_JSONL };

struct manifest_item {
    char *id;   /* NULL when the manifest gives none (or an empty one) */
    char *path; /* never empty */
    int line;   /* 1-based line where the entry starts */
};

struct manifest {
    struct manifest_item *v;
    int n, cap;
};

/* The kind for a manifest file name, by its extension (case-insensitive). */
enum manifest_kind manifest_kind_for(const char *filename);

/* Appends the entries of data[0..len) to out. Returns 0, or -1 with "line N: what is wrong" in
 * err (the entries before the error stay in out). */
int manifest_parse(const char *data, size_t len, enum manifest_kind kind, struct manifest *out,
                   char *err, size_t err_size);

void manifest_free(struct manifest *m); /* frees the entries; the struct itself is the caller's */

#endif /* WC_CLI_BATCH_MANIFEST_H */
