/*
 * fuzz_model.c — the ggml model loader (src/model/model_file.c: header, hparams, mel filters,
 * vocabulary, tensor table) and the vocabulary built from it (vocab.c). Any input must give
 * either a model or an error message, never a crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"
#include "model/model_file.h"
#include "model/vocab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_scratch_file(data, size);
    if (!path)
        return 0;
    struct wc_model_file *f = NULL;
    char err[512];
    if (model_file_open(path, &f, err, sizeof err) == 0) {
        struct wc_vocab v;
        memset(&v, 0, sizeof v);
        if (vocab_init(&v, f, err, sizeof err) == 0)
            vocab_free(&v);
        model_file_close(f);
    } else if (!err[0] || strchr(err, '\n')) {
        __builtin_trap(); /* every error is one line */
    }
    return 0;
}
