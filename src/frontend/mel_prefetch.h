/*
 * mel_prefetch.h — the log-Mels of a list of inputs computed ahead, on background threads,
 * while their consumer works on earlier ones (a batch on a GPU leaves the host's cores idle;
 * computing an input's log-Mel only when it enters a lane would put it on the critical path).
 *
 * Threads take inputs in order, at most `ahead` inputs and `max_bytes` of spectrograms beyond
 * the last one taken (at least one is always allowed), so memory stays bounded whatever the
 * inputs' lengths. Each log-Mel is computed by the caller's function exactly as without the
 * prefetcher, so the bits are the same.
 */
#ifndef WC_MEL_PREFETCH_H
#define WC_MEL_PREFETCH_H

#include <stddef.h>

#include "frontend/mel.h"

/* Computes input i's log-Mel into *out (0, or an error code with err filled). Called from the
 * prefetcher's threads, several at once for different i: it must be thread-safe. */
typedef int (*mel_input_fn)(void *user, int i, struct mel_spec *out, char *err, size_t err_size);

struct mel_prefetch;

/* n inputs; bytes[i]: the size of input i's spectrogram (for the memory bound; copied).
 * n_threads >= 1 background threads (fewer if some cannot be started; with none, take()
 * computes on the caller's thread). Returns 0 or WHISPERC_ERR_NO_MEMORY. */
int mel_prefetch_new(struct mel_prefetch **out, int n, const size_t *bytes, int n_threads,
                     int ahead, size_t max_bytes, mel_input_fn fn, void *user);

/* Input i's log-Mel (waiting for it if it is not ready yet), moved into *out: the caller frees
 * it with mel_free. Each i at most once; in increasing order for the bound to work as said. */
int mel_prefetch_take(struct mel_prefetch *p, int i, struct mel_spec *out, char *err,
                      size_t err_size);

/* Stops the threads (waiting for the log-Mels they are computing) and frees what was computed
 * but not taken. NULL is fine. */
void mel_prefetch_free(struct mel_prefetch *p);

#endif /* WC_MEL_PREFETCH_H */
