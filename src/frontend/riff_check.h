/*
 * riff_check.h — refuses the RIFF/RIFX/RF64 WAVE chunk layouts that hang libsndfile's parser.
 *
 * libsndfile 1.2.0 (wavlike.c wavlike_subchunk_parse) adds a LIST sub-chunk's size to its
 * running count in 32 bits and skips it with a jump it reads back as a signed int: a size of
 * 2^31 or more that overruns its LIST wraps the "too big" check and jumps backwards, onto the
 * same sub-chunk, forever (fuzz_audio found one: 'IQFT' of 0xfffffff8 bytes). wav.c's and
 * rf64.c's top-level loops jump the same way, but stop after any chunk at least as long as the
 * file, so there only a file over 2 GiB can be sent back. Nothing else is checked here:
 * overruns that libsndfile survives (a streamed data size of 0 or 0xffffffff, a string missing
 * its pad byte, a truncated file) pass.
 */
#ifndef WC_RIFF_CHECK_H
#define WC_RIFF_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads up to n bytes at offset off into buf; returns the count read (short at the end). */
typedef size_t (*riff_read_fn)(void *user, void *buf, size_t n, int64_t off);

/* Walks the chunks of a file of file_size bytes as libsndfile's WAV and RF64 readers do. Returns
 * 0 (not a WAVE file, or none of the layouts above), or WHISPERC_ERR_AUDIO_FORMAT with one line
 * in err, starting with `what` (the file name). */
int riff_check(riff_read_fn read, void *user, int64_t file_size, const char *what, char *err,
               size_t err_size);

/* A WAV file whose data chunk says 0 bytes but has samples after it: a recorder that stopped
 * before it wrote the size back (killed, crashed, a full disk). libsndfile reads no frames
 * from it (it takes the rest of the file only where the RIFF size says 8 too); ffmpeg, and so
 * openai-whisper, reads to the end. `at`: the offset of the size field; `size`: the rest of
 * the file, in the file's byte order, to read in its place. */
struct riff_unsized {
    int64_t at;
    unsigned char size[4];
};
/* true, with *out, for such a RIFF or RIFX file (riff_check's walk: the first data chunk). */
bool riff_unsized_data(riff_read_fn read, void *user, int64_t file_size, struct riff_unsized *out);

#endif /* WC_RIFF_CHECK_H */
