/*
 * test_api_compat.c — the defaults functions as a binary built before 0.1's inline wrappers
 * calls them: the library's exported symbols, returning 0.1's structs by value (today's
 * header still has 0.1's layouts, so its structs stand in for them).
 */
#include <stdio.h>

#define WHISPERC_NO_INLINE_DEFAULTS
#include "common.h"
#include "libwhisperc.h"

struct whisperc_model_params whisperc_model_default_params(void);
struct whisperc_full_params whisperc_full_default_params(whisperc_strategy strategy);

int main(void) {
    struct whisperc_full_params p = whisperc_full_default_params(WHISPERC_SAMPLING_BEAM_SEARCH);
    struct whisperc_full_params q;
    whisperc_full_params_init(&q, sizeof q, WHISPERC_SAMPLING_BEAM_SEARCH);
    CHECK(p.size == sizeof p && p.beam_size == 5 && p.best_of == 5 && !p.language &&
          p.dtw_token_timestamps == false && p.n_threads == q.n_threads &&
          p.temperatures[5] == 1.0f && p.vad_speech_pad_ms == 30);
    struct whisperc_model_params m = whisperc_model_default_params();
    CHECK(m.size == sizeof m && m.device == WHISPERC_DEVICE_AUTO &&
          m.quant_weights == WHISPERC_QUANT_AUTO && m.max_memory_bytes == 0);
    printf("%s\n", test_failures ? "NOT OK" : "OK");
    return TEST_RESULT();
}
