/*
 * tools_model_info.c — opens a ggml file with whisper-c's loader (model_file_open: every header
 * checked, tensor data not read) and prints one line of what it found, for tests/test_tools.py.
 * Given a size name too, it checks the hparams against model_size_hparams() for that size.
 *
 * usage: tools_model_info FILE [SIZE]
 *        tools_model_info FILE --values NAME OUT
 * prints: type=NAME n_vocab=N ... ftype=N n_tokens=N n_tensors=N; exit 1 with the loader's
 * error (or "hparams differ from SIZE") otherwise. --values also writes tensor NAME to OUT as
 * little-endian f32, the values the backends are handed (quantized blocks widened to halves).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/ggml_quant.h"
#include "model/model_file.h"
#include "util.h"

static int write_values(const struct wc_model_file *f, const char *name, const char *out) {
    const struct wc_tensor_view *t = model_file_tensor(f, name);
    if (!t) {
        printf("error: no tensor %s\n", name);
        return 1;
    }
    float *v = malloc(t->n_values * sizeof *v);
    uint16_t *h = t->qtype ? malloc(t->n_values * sizeof *h) : NULL;
    FILE *fp = v && (h || !t->qtype) ? fopen(out, "wb") : NULL;
    int ok = fp != NULL;
    if (ok) {
        if (t->qtype) {
            ggml_dequantize_f16(t->qtype, t->data, h, t->n_values);
            for (size_t i = 0; i < t->n_values; i++)
                v[i] = wc_f16_to_f32(h[i]);
        } else {
            wc_to_f32(v, t->data, t->dtype == WC_F16, t->n_values);
        }
        ok = fwrite(v, sizeof *v, t->n_values, fp) == t->n_values;
    }
    if (fp && fclose(fp) != 0)
        ok = 0;
    free(v);
    free(h);
    if (!ok)
        printf("error: cannot write %s\n", out);
    return !ok;
}

int main(int argc, char **argv) {
    int values = argc == 5 && strcmp(argv[2], "--values") == 0;
    if (argc < 2 || (argc > 3 && !values)) {
        fprintf(stderr, "usage: tools_model_info FILE [SIZE]\n"
                        "       tools_model_info FILE --values NAME OUT\n");
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
    int rc = values ? write_values(f, argv[3], argv[4]) : 0;
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
