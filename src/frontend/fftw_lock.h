/*
 * fftw_lock.h — the one lock around FFTW's planner for the whole library.
 *
 * FFTW's planner (and plan destruction, fftwf_malloc and fftwf_free, which FFTW does not promise
 * to be thread-safe either) must be called from one thread at a time; only fftwf_execute* may run
 * concurrently. Every FFTW user in the library (mel.c, vad.c) takes this lock around those calls.
 */
#ifndef WC_FFTW_LOCK_H
#define WC_FFTW_LOCK_H

void fftw_planner_lock(void);
void fftw_planner_unlock(void);

#endif /* WC_FFTW_LOCK_H */
