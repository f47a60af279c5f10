/*
 * fuzz_common.h — helpers shared by the libFuzzer targets in fuzz/ (built with -Dfuzz=true).
 */
#ifndef WC_FUZZ_COMMON_H
#define WC_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Writes data to this process's scratch file (created once, in $TMPDIR) and returns its path:
 * the loaders under test map or open paths, not memory. NULL if the file cannot be written. */
const char *fuzz_scratch_file(const uint8_t *data, size_t size);

/* $WHISPERC_SHARED, else ../shared beside the source tree. */
const char *fuzz_shared_path(const char *rel);

#endif /* WC_FUZZ_COMMON_H */
