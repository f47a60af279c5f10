/*
 * ggml_synth.h — writes small synthetic whisper.cpp ggml model files for tests: random weights
 * (matrices and embeddings N(0, 0.02), biases N(0, 0.02), layer-norm gains 1 + N(0, 0.02)),
 * triangular mel filters and a real-sized vocabulary of distinct short byte strings, laid out
 * like the real files (f16 matrices, f32 vectors, conv biases as ggml ne=(1,n_state), positional
 * embeddings f32), or with block-quantized matrices. Optionally corrupted in one of several
 * ways, for loader tests.
 *
 *     struct ggml_synth_opts o = ggml_synth_default_opts();
 *     o.multilingual = 1;
 *     if (ggml_synth_write("/tmp/x.bin", &o) != 0) perror("ggml_synth_write");
 */
#ifndef WC_TEST_GGML_SYNTH_H
#define WC_TEST_GGML_SYNTH_H

#include <stdint.h>

enum ggml_synth_corruption {
    GGML_SYNTH_OK = 0,         /* a valid file */
    GGML_SYNTH_EMPTY,          /* zero bytes */
    GGML_SYNTH_BAD_MAGIC,      /* magic is not "ggml" */
    GGML_SYNTH_TRUNC_HEADER,   /* the file ends inside the hparams */
    GGML_SYNTH_TRUNC_VOCAB,    /* the file ends inside the vocabulary */
    GGML_SYNTH_TRUNC_TENSOR,   /* the last tensor's data is cut short */
    GGML_SYNTH_WRONG_SHAPE,    /* encoder.conv1.weight has kernel width 2 */
    GGML_SYNTH_WRONG_VOCAB,    /* 50000 stored tokens */
    GGML_SYNTH_BAD_N_VOCAB,    /* hparams n_vocab 51000 */
    GGML_SYNTH_BAD_N_MELS,     /* hparams n_mels 81 (filters written 81x201) */
    GGML_SYNTH_BAD_HEADS,      /* n_audio_head does not divide n_audio_state */
    GGML_SYNTH_BAD_N_FFT,      /* mel filters n_fft 200 */
    GGML_SYNTH_MISSING_TENSOR, /* decoder.ln.bias left out */
    GGML_SYNTH_DUP_TENSOR,     /* decoder.ln.bias written twice */
    GGML_SYNTH_UNKNOWN_TENSOR, /* an extra tensor "decoder.extra.weight" */
    GGML_SYNTH_TRAILING,       /* 5 bytes of garbage after the last tensor */
    GGML_SYNTH_QUANT_TENSOR,   /* one matrix stored with ggml type 12 (q4_K, unsupported) */
    GGML_SYNTH_QUANT_FTYPE,    /* hparams ftype 2012 (q4_K, quantization version 2) */
    GGML_SYNTH_CONV_BIAS_1D,   /* VALID: conv biases stored with ne=(n_state), i.e. [n_state] */
    GGML_SYNTH_N_CORRUPTIONS
};

struct ggml_synth_opts {
    int n_state;      /* n_audio_state = n_text_state */
    int n_head;       /* both stacks */
    int n_layer;      /* encoder layers */
    int n_text_layer; /* decoder layers; 0: n_layer */
    int n_mels;       /* 80 or 128 */
    int n_audio_ctx;
    int n_text_ctx;
    int multilingual; /* 0: .en layout (n_vocab 51864); 1: multilingual (51865, or 51866) */
    int n_languages;  /* multilingual only: 99 (default when 0) or 100 */
    int f16;          /* 1: matrices f16 like the real files; 0: everything f32 */
    int quant;        /* 0, or a ggml block type (2 q4_0, 3 q4_1, 6 q5_0, 7 q5_1, 8 q8_0): the 2-D
                       * matrices stored as random blocks (values of about the f16 ones' spread), as
                       * whisper.cpp's quantize leaves a file, ftype 2000 + the type's ggml_ftype */
    uint64_t seed;
    enum ggml_synth_corruption corrupt;
};

/* n_state 64, 2 heads, 2+2 layers, 80 mels, n_audio_ctx 32, n_text_ctx 16, .en, f16, seed 1. */
struct ggml_synth_opts ggml_synth_default_opts(void);

/* Writes the file. Returns 0, or -1 with errno set (EINVAL for bad options). */
int ggml_synth_write(const char *path, const struct ggml_synth_opts *o);

/* Writes it to a new temporary file named from path_template ("/tmp/name_XXXXXX", mkstemp's
 * form, rewritten in place); the caller unlinks it. Returns 0, or -1 with errno set. */
int ggml_synth_write_temp(char *path_template, const struct ggml_synth_opts *o);

/* "ok", "empty", "bad_magic", ...: a short name for test messages. */
const char *ggml_synth_corruption_name(enum ggml_synth_corruption c);

/* A 16 kHz Silero VAD file (tools/convert-silero-vad's layout, whisper.cpp's) whose weights are
 * all 0: every window's p(speech) is exactly 0.5. Returns 0 or -1 (errno set). */
int ggml_synth_write_silero(const char *path);

#endif /* WC_TEST_GGML_SYNTH_H */
