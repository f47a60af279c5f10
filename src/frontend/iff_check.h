/*
 * iff_check.h — refuses the AIFF and CAF chunk sizes that send libsndfile's header parsers
 * backwards, the AIFF/CAF counterpart of riff_check.h.
 *
 * libsndfile 1.2.0 skips a chunk with psf_binheader_readf's "j", whose count is an int: in
 * aiff.c a 32-bit size of 2^31 or more, in caf.c a 64-bit size whose low 32 bits are, is a jump
 * backwards. aiff_read_header stops after any chunk at least as long as the file, and
 * caf_read_header stops before a chunk longer than the file and after a non-data chunk of
 * 0xffffff00 bytes or more, so only a file over 2 GiB (a sparse one is enough) can be sent back
 * onto an earlier chunk and round again for ever: a 4 GiB AIFF whose FVER chunk says 0xfffffff8
 * bytes, a CAF whose free chunk jumps back onto the one before it. Smaller files were audited and
 * tried (docs/reliability.md): every other backward skip in those parsers (COMT, MARK, basc, a
 * CAF data chunk under 4 bytes, NONE, the resync after an unprintable marker) ends past the
 * chunk's own header, so the parse moves on.
 */
#ifndef WC_IFF_CHECK_H
#define WC_IFF_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "frontend/riff_check.h"

/* Walks a FORM AIFF/AIFC or a caff file of file_size bytes as libsndfile does. Returns 0 (another
 * format, or no chunk that libsndfile would jump back from and go on), or
 * WHISPERC_ERR_AUDIO_FORMAT with one line in err starting with `what` (the file name). */
int iff_check(riff_read_fn read, void *user, int64_t file_size, const char *what, char *err,
              size_t err_size);

#endif /* WC_IFF_CHECK_H */
