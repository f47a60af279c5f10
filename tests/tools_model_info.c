/*
 * tools_model_info.c — opens a ggml file with whisper-c's loader (model_file_open: every header
 * checked, tensor data not read) and prints one line of what it found, for tests/test_tools.py.
 * Given a size name too, it checks the hparams against model_size_hparams() for that size.
 *
 * usage: tools_model_info FILE [SIZE]
 * prints: type=NAME n_vocab=N ... ftype=N n_tokens=N n_tensors=N; exit 1 with the loader's
 * error (or "hparams differ from SIZE") otherwise.
 */
#include <stdio.h>
#include <string.h>

#include "model/model_file.h"

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: tools_model_info FILE [SIZE]\n");
        return 2;
    }
    struct wc_model_file *f;
    char err[512];
    if (model_file_open(argv[1], &f, err, sizeof err) != 0) {
        printf("error: %s\n", err);
        return 1;
    }
    const struct wc_hparams *hp = &f->hp;
    printf("type=%s n_vocab=%d n_audio_ctx=%d n_audio_state=%d n_audio_head=%d n_audio_layer=%d "
           "n_text_ctx=%d n_text_state=%d n_text_head=%d n_text_layer=%d n_mels=%d ftype=%d "
           "n_tokens=%d n_tensors=%d\n",
           model_file_type_name(hp), hp->n_vocab, hp->n_audio_ctx, hp->n_audio_state,
           hp->n_audio_head, hp->n_audio_layer, hp->n_text_ctx, hp->n_text_state, hp->n_text_head,
           hp->n_text_layer, hp->n_mels, hp->ftype, f->n_tokens, f->n_tensors);
    int rc = 0;
    struct wc_hparams want;
    if (argc == 3) {
        if (model_size_hparams(argv[2], &want) != 0) {
            printf("error: unknown size %s\n", argv[2]);
            rc = 1;
        } else if (memcmp(&want, hp, sizeof want) != 0) {
            printf("error: hparams differ from %s\n", argv[2]);
            rc = 1;
        }
    }
    model_file_close(f);
    return rc;
}
