/*
 * model_file.h — a whisper.cpp ggml model file, mapped and validated.
 *
 * Layout of the file (little-endian, no padding anywhere):
 *   u32 magic 0x67676d6c ("ggml")
 *   i32 hparams: n_vocab n_audio_ctx n_audio_state n_audio_head n_audio_layer
 *                n_text_ctx n_text_state n_text_head n_text_layer n_mels ftype
 *   i32 n_mel, i32 n_fft, then n_mel*n_fft f32 mel filters
 *   i32 n_tokens, then per token: u32 length, bytes
 *   tensors to the end of the file: i32 n_dims, i32 name_len, i32 ttype (0 f32, 1 f16, or a
 *     block-quantized type of model/ggml_quant.h, as whisper.cpp's quantize writes matrices),
 *     i32 ne[n_dims] (ggml order: ne[0] is the innermost dimension), name bytes, data
 *
 * model_file_open() checks everything a later stage relies on: hparams in range and consistent,
 * filter and vocab sizes, and every tensor's name, shape, dtype and byte size against the
 * hparams (the exact set openai-whisper's state dict has, nothing missing, duplicated or
 * unknown), data inside the file and the file fully consumed. It does not read tensor data.
 */
#ifndef WC_MODEL_FILE_H
#define WC_MODEL_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h" /* enum wc_dtype */

struct wc_hparams {
    int32_t n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer;
    int32_t n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype;
};

/* One tensor as stored in the file. */
struct wc_tensor_view {
    char *name;          /* NUL-terminated, owned by the model_file */
    enum wc_dtype dtype; /* WC_F32 or WC_F16; WC_F16 for quantized data (what it widens to) */
    int32_t qtype;       /* 0, or data's ggml block type (model/ggml_quant.h: GGML_Q8_0, ...) */
    int n_dims;
    int64_t shape[4]; /* PyTorch order, outermost first: conv1.weight is [n_state][n_mels][3] */
    const void *data; /* into the mapping; NOT aligned */
    size_t n_bytes;
    size_t n_values; /* the product of shape */
};

struct wc_model_file {
    char *path; /* owned copy */
    const uint8_t *map;
    size_t map_size;
    struct wc_hparams hp;
    int n_fft_bins;     /* 201 */
    float *mel_filters; /* owned, [hp.n_mels][n_fft_bins] */
    int n_tokens;       /* byte strings stored in the file (50257); ids >= this are specials */
    const uint8_t **token_bytes; /* owned array of pointers into the mapping */
    uint32_t *token_len;         /* owned */
    int n_tensors;
    struct wc_tensor_view *tensors; /* owned, in file order */
};

/* Maps and validates `path`. On failure returns a WHISPERC_ERR_* code (IO, MODEL_FORMAT,
 * UNSUPPORTED, NO_MEMORY), *out = NULL, and err holds one line naming the file and the problem,
 * e.g. "ggml-base.bin: tensor encoder.conv1.weight: expected [512,80,3] f16, found [512,80,2]". */
int model_file_open(const char *path, struct wc_model_file **out, char *err, size_t err_size);

/* The tensor called `name`, or NULL. */
const struct wc_tensor_view *model_file_tensor(const struct wc_model_file *f, const char *name);

/* The whole pages of t's data leave the process's resident memory, once the backend holds its
 * own copy, so that loading does not hold every weight twice. They stay in the page cache;
 * a later read (a second upload) faults them back in. */
void model_file_drop_pages(const struct wc_tensor_view *t);

void model_file_close(struct wc_model_file *f); /* NULL is a no-op */

/* "tiny", "base", "small", "medium", "large", "large-v3", "large-v3-turbo", or "custom". */
const char *model_file_type_name(const struct wc_hparams *hp);

/* The hparams of an official model: "tiny", "tiny.en", "base", …, "large-v2", "large-v3",
 * "large-v3-turbo" (f16). Returns 0, or -1 for an unknown name. */
int model_size_hparams(const char *name, struct wc_hparams *hp);

/* Every official size name, NULL-terminated (for listings and tests). */
extern const char *const model_size_names[];

#endif /* WC_MODEL_FILE_H */
