/*
 * downmix.c — ffmpeg's mono mix (libswresample's automatic matrix for an output of one front
 * centre channel, default levels): the centre at 1, front left and right at 1/sqrt 2 (as the
 * centre of each pair), every surround or back channel at 1/2 (surround level 1/sqrt 2, halved
 * between the pair), the LFE at 0; then all divided by their sum where it passes 1. Stereo is
 * so the average of its two channels, 5.1 is 0.29 C, 0.21 L and R, 0.15 each surround.
 */
#include "frontend/downmix.h"

#include <math.h>
#include <sndfile.h>
#include <string.h>

/* what tells positions apart in a mono mix */
enum pos { P_C, P_LR, P_S, P_LFE, P_NONE };

static double pos_weight(enum pos p) {
    switch (p) {
    case P_C: return 1.0;
    case P_LR: return M_SQRT1_2;
    case P_S: return 0.5;
    default: return 0.0;
    }
}

static enum pos map_pos(int m) {
    switch (m) {
    case SF_CHANNEL_MAP_MONO:
    case SF_CHANNEL_MAP_CENTER:
    case SF_CHANNEL_MAP_FRONT_CENTER: return P_C;
    case SF_CHANNEL_MAP_LEFT:
    case SF_CHANNEL_MAP_RIGHT:
    case SF_CHANNEL_MAP_FRONT_LEFT:
    case SF_CHANNEL_MAP_FRONT_RIGHT:
    case SF_CHANNEL_MAP_FRONT_LEFT_OF_CENTER: /* as ffmpeg: 1/sqrt 2 each into the centre */
    case SF_CHANNEL_MAP_FRONT_RIGHT_OF_CENTER: return P_LR;
    case SF_CHANNEL_MAP_REAR_CENTER:
    case SF_CHANNEL_MAP_REAR_LEFT:
    case SF_CHANNEL_MAP_REAR_RIGHT:
    case SF_CHANNEL_MAP_SIDE_LEFT:
    case SF_CHANNEL_MAP_SIDE_RIGHT: return P_S;
    case SF_CHANNEL_MAP_LFE: return P_LFE;
    default: return P_NONE;
    }
}

/* The positions ffmpeg gives a file that names none, in the file's order (C: centre, L/R:
 * front left or right, S: a surround or back channel, F: LFE), for 3..8 channels: FLAC's and
 * Vorbis's (and Ogg Opus's) by their specifications, any other format's by ffmpeg's default
 * layout for the count (2.1, 4.0, 5.0, 5.1, 6.1, 7.1). */
static const char *default_order(int sf_format, int channels) {
    static const char *flac[] = {"LRC", "LRSS", "LRCSS", "LRCFSS", "LRCFSSS", "LRCFSSSS"};
    static const char *vorbis[] = {"LCR", "LRSS", "LCRSS", "LCRSSF", "LCRSSSF", "LCRSSSSF"};
    static const char *other[] = {"LRF", "LRCS", "LRCSS", "LRCFSS", "LRCFSSS", "LRCFSSSS"};
    if (channels < 3 || channels > 8)
        return NULL;
    if ((sf_format & SF_FORMAT_TYPEMASK) == SF_FORMAT_FLAC)
        return flac[channels - 3];
    if ((sf_format & SF_FORMAT_TYPEMASK) == SF_FORMAT_OGG)
        return vorbis[channels - 3];
    return other[channels - 3];
}

void downmix_weights(int sf_format, int channels, const int *map, double *w) {
    static const char codes[] = "CLRSF";
    static const enum pos code_pos[] = {P_C, P_LR, P_LR, P_S, P_LFE};
    /* a map with unnamed channels (libsndfile's for a WAVEX mask of fewer bits than channels)
     * is no map: ffmpeg ignores such a mask */
    for (int c = 0; map && c < channels; c++)
        if (map[c] == SF_CHANNEL_MAP_INVALID)
            map = NULL;
    const char *order = map ? NULL : default_order(sf_format, channels);
    double sum = 0.0;
    int i_w = -1; /* an ambisonic W channel */
    for (int c = 0; c < channels; c++) {
        enum pos p = P_NONE;
        if (map) {
            p = map_pos(map[c]);
            if (map[c] == SF_CHANNEL_MAP_AMBISONIC_B_W)
                i_w = c;
        } else if (order) {
            const char *at = strchr(codes, order[c]);
            p = at ? code_pos[at - codes] : P_NONE;
        } else if (channels <= 2) {
            p = channels == 1 ? P_C : P_LR;
        }
        w[c] = pos_weight(p);
        sum += w[c];
    }
    if (sum > 0.0 && i_w < 0) {
        if (sum > 1.0)
            for (int c = 0; c < channels; c++)
                w[c] /= sum;
        return;
    }
    for (int c = 0; c < channels; c++)
        w[c] = i_w >= 0 ? (c == i_w) : 1.0 / channels;
}
