/*
 * fuzz_model.c — the ggml model loader (src/model/model_file.c: header, hparams, mel filters,
 * vocabulary, tensor table) and the vocabulary built from it (vocab.c), and the Silero VAD
 * loader (src/frontend/silero_vad.c). Any input must give either a model or an error message,
 * never a crash, leak or read out of bounds.
 *
 * Throughput: vocab_init (50k token strings, the BPE tables) costs several ms under ASan and
 * depends only on n_vocab and the stored tokens, which most mutations leave as they were (the
 * hparams, mel filters and tensor table are the rest of the file). It is run again only when
 * those change; seeds are small synthetic models (fuzz/make_model_seeds.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "frontend/silero_vad.h"
#include "fuzz_common.h"
#include "model/model_file.h"
#include "model/vocab.h"

/* FNV-1a over what vocab_init reads. */
static uint64_t vocab_key(const struct wc_model_file *f) {
    uint64_t h = 1469598103934665603ull;
    int32_t head[2] = {f->hp.n_vocab, f->n_tokens};
    const uint8_t *p = (const uint8_t *)head;
    for (size_t i = 0; i < sizeof head; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    for (int t = 0; t < f->n_tokens; t++) {
        h = (h ^ f->token_len[t]) * 1099511628211ull;
        for (uint32_t i = 0; i < f->token_len[t]; i++)
            h = (h ^ f->token_bytes[t][i]) * 1099511628211ull;
    }
    return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_scratch_file(data, size);
    if (!path)
        return 0;
    struct wc_model_file *f = NULL;
    char err[512];
    static uint64_t last_key; /* of the last vocabulary built; 0: none yet */
    if (model_file_open(path, &f, err, sizeof err) == 0) {
        uint64_t key = vocab_key(f);
        if (key != last_key) {
            struct wc_vocab v;
            memset(&v, 0, sizeof v);
            if (vocab_init(&v, f, err, sizeof err) == 0)
                vocab_free(&v);
            last_key = key;
        }
        model_file_close(f);
    } else if (!err[0] || strchr(err, '\n')) {
        __builtin_trap(); /* every error is one line */
    }
    struct silero_vad *vad = NULL;
    err[0] = '\0';
    if (silero_vad_load(path, &vad, err, sizeof err) == 0)
        silero_vad_free(vad);
    else if (!err[0] || strchr(err, '\n'))
        __builtin_trap();
    return 0;
}
