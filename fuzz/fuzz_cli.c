/*
 * fuzz_cli.c — the `whisper-c transcribe` / `bench` argument parser (src/cli/options.c): the
 * input split at NUL bytes is argv; byte 0 picks bench mode. Run with -close_fd_mask=3: the
 * parser prints usage and errors.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    char *buf = malloc(size);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    for (size_t i = 0; i < size - 1 && argc < MAX_ARGS;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    static struct cli_options o; /* 32 KiB of file pointers: not on the stack */
    cli_parse(&o, argc, argv, data[0] & 1);
    free(buf);
    return 0;
}
