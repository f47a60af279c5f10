/*
 * fuzz_tokenizer.c — the tokenizer of a real multilingual vocabulary ($WHISPERC_SHARED/models/
 * ggml-base.bin, mapped, weights not loaded): byte 0 even decodes the rest as int32 token ids
 * (any value, out-of-range ones included); odd encodes the rest as prompt text (any bytes,
 * invalid UTF-8 included) and decodes the result again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "model/model_file.h"
#include "model/vocab.h"

static struct wc_model_file *file;
static struct wc_vocab vocab;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char err[512];
    const char *path = fuzz_shared_path("models/ggml-base.bin");
    if (model_file_open(path, &file, err, sizeof err) != 0 ||
        vocab_init(&vocab, file, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    if (data[0] % 2 == 0) {
        int n = (int)((size - 1) / 4);
        int32_t *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
        if (!ids)
            return 0;
        memcpy(ids, data + 1, (size_t)n * 4);
        free(vocab_decode(&vocab, ids, n));
        free(ids);
        return 0;
    }
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    int32_t *ids = NULL;
    int n = vocab_encode(&vocab, text, &ids);
    if (n > 0)
        free(vocab_decode(&vocab, ids, n));
    free(ids);
    free(text);
    return 0;
}
