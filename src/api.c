/*
 * api.c — the public entry points of libwhisperc (include/libwhisperc.h).
 */
#include "libwhisperc.h"

const char *whisperc_version(void) { return "0.1.0"; }

const char *whisperc_status_str(whisperc_status rc) {
    switch (rc) {
    case WHISPERC_OK: return "WHISPERC_OK";
    case WHISPERC_ERR_INVALID_ARG: return "WHISPERC_ERR_INVALID_ARG";
    case WHISPERC_ERR_NO_MEMORY: return "WHISPERC_ERR_NO_MEMORY";
    case WHISPERC_ERR_IO: return "WHISPERC_ERR_IO";
    case WHISPERC_ERR_MODEL_FORMAT: return "WHISPERC_ERR_MODEL_FORMAT";
    case WHISPERC_ERR_AUDIO_FORMAT: return "WHISPERC_ERR_AUDIO_FORMAT";
    case WHISPERC_ERR_UNSUPPORTED: return "WHISPERC_ERR_UNSUPPORTED";
    case WHISPERC_ERR_BACKEND: return "WHISPERC_ERR_BACKEND";
    case WHISPERC_ERR_ABORTED: return "WHISPERC_ERR_ABORTED";
    }
    return "WHISPERC_ERR_UNKNOWN";
}
