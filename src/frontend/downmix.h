/*
 * downmix.h — the weights that mix a file's channels to mono, as ffmpeg -ac 1 (openai-whisper's
 * load_audio) mixes them, so that a 5.1 film gives the model its dialogue channel as ffmpeg
 * would and not a plain average.
 */
#ifndef WC_FRONTEND_DOWNMIX_H
#define WC_FRONTEND_DOWNMIX_H

/* w[channels]: the weight of each channel, summing to 1 (at most 1: ffmpeg normalises a mix
 * whose weights sum past 1, for its 16-bit output). sf_format: SF_INFO.format; map: the file's
 * channel positions (SFC_GET_CHANNEL_MAP_INFO, SF_CHANNEL_MAP_*), or NULL where it has none: then
 * the positions ffmpeg assumes for that format and number of channels. A channel ffmpeg drops
 * (the LFE) weighs 0; channels no rule places (more than 8 unnamed, or only top ones) fall back
 * to a plain average. One choice of ours, not ffmpeg's (which guesses a speaker layout for the
 * count): an ambisonic B-format file gives its W (omnidirectional) channel alone. */
void downmix_weights(int sf_format, int channels, const int *map, double *w);

#endif
