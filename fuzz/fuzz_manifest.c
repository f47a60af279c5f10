/*
 * fuzz_manifest.c — the `whisper-c batch --manifest` parser (src/cli/batch_manifest.c): byte 0
 * picks the format (txt, csv, tsv, jsonl), the rest is the manifest.
 */
#include <stdint.h>
#include <string.h>

#include "cli/batch_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    struct manifest m;
    memset(&m, 0, sizeof m);
    char err[256];
    manifest_parse((const char *)data + 1, size - 1, (enum manifest_kind)(data[0] % 4), &m, err,
                   sizeof err);
    for (int i = 0; i < m.n; i++)
        if (!m.v[i].path || !m.v[i].path[0])
            __builtin_trap(); /* "never empty" (batch_manifest.h) */
    manifest_free(&m);
    return 0;
}
