/*
 * fftw_lock.c — the FFTW planner mutex (fftw_lock.h). This mutex is the one piece of
 * process-wide mutable state in the library.
 */
#include "frontend/fftw_lock.h"

#include <pthread.h>

static pthread_mutex_t fftw_planner_mutex = PTHREAD_MUTEX_INITIALIZER;

void fftw_planner_lock(void) { pthread_mutex_lock(&fftw_planner_mutex); }
void fftw_planner_unlock(void) { pthread_mutex_unlock(&fftw_planner_mutex); }
