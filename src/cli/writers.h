/*
 * writers.h — transcript output files (txt, srt, vtt, json), written atomically: into a
 * temporary file beside the target, then renamed over it, so a reader never sees a partial
 * file and a failure leaves any previous file untouched.
 */
#ifndef WC_CLI_WRITERS_H
#define WC_CLI_WRITERS_H

#include <stddef.h>
#include <stdio.h>

#include "libwhisperc.h"

enum out_format { OUT_TXT, OUT_SRT, OUT_VTT, OUT_JSON };

/* Writes base + ".txt" etc. Returns 0, or -1 with a one-line message in err. */
int write_output(const whisperc_state *st, enum out_format fmt, const char *base, char *err,
                 size_t err_size);

/* "hh:mm:ss.mmm" (sep '.') or "hh:mm:ss,mmm" (sep ','); buf of at least 32 bytes. */
const char *format_timestamp(char *buf, int64_t ms, char sep);

#endif /* WC_CLI_WRITERS_H */
