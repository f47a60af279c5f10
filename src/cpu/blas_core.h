/*
 * blas_core.h — OpenBLAS's kernels chosen again where it fell back to kernels older than the CPU.
 */
#ifndef WC_CPU_BLAS_CORE_H
#define WC_CPU_BLAS_CORE_H

#include <stdbool.h>

/* Where whisperc_blas_coretype_advice() names a core: sets OPENBLAS_CORETYPE to it (unless
 * set) and has OpenBLAS choose its kernels again. True when it did. Runs when the library is
 * loaded; not while another thread may be in OpenBLAS. */
bool blas_core_reselect(void);

#endif
