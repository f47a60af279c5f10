/*
 * api_compat.c — the defaults functions as binaries built before 0.1's inline wrappers call
 * them: exported, returning the struct by value. Such a caller's return slot holds the struct
 * as its header had it, which is 0.1's first layout (the structs then only grow), so these fill
 * exactly that many bytes through the sized init functions, whatever fields come later.
 */
#include <stdalign.h>
#include <stddef.h>

#define WHISPERC_NO_INLINE_DEFAULTS /* this file defines the out-of-line ones */
#include "libwhisperc.h"

/* 0.1's layouts end at these fields; a struct over 16 bytes is returned through the caller's
 * buffer (every ABI the library builds for), so a byte array of that size and alignment is
 * returned exactly as the struct was. */
#define ROUND_UP(n, a) (((n) + (a)-1) / (a) * (a))
#define MODEL_0_1                                                                                  \
    ROUND_UP(offsetof(struct whisperc_model_params, quant_weights) + sizeof(whisperc_quant_mode),  \
             alignof(struct whisperc_model_params))
#define FULL_0_1                                                                                   \
    ROUND_UP(offsetof(struct whisperc_full_params, dtw_token_timestamps) + sizeof(bool),           \
             alignof(struct whisperc_full_params))

struct model_params_0_1 {
    alignas(struct whisperc_model_params) unsigned char b[MODEL_0_1];
};
struct full_params_0_1 {
    alignas(struct whisperc_full_params) unsigned char b[FULL_0_1];
};

WHISPERC_API struct model_params_0_1 whisperc_model_default_params(void);
WHISPERC_API struct full_params_0_1 whisperc_full_default_params(whisperc_strategy strategy);

struct model_params_0_1 whisperc_model_default_params(void) {
    struct model_params_0_1 p;
    whisperc_model_params_init((struct whisperc_model_params *)(void *)p.b, sizeof p.b);
    return p;
}

struct full_params_0_1 whisperc_full_default_params(whisperc_strategy strategy) {
    struct full_params_0_1 p;
    whisperc_full_params_init((struct whisperc_full_params *)(void *)p.b, sizeof p.b, strategy);
    return p;
}
