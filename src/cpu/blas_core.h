/*
 * blas_core.h — OpenBLAS's kernels chosen again where it fell back to kernels older than the CPU.
 */
#ifndef WC_CPU_BLAS_CORE_H
#define WC_CPU_BLAS_CORE_H

#include <stdbool.h>

/* Where whisperc_blas_coretype_advice() names a core: has OpenBLAS choose its kernels again
 * with OPENBLAS_CORETYPE set to it (for that moment: unset again after), in the process, which
 * changes them for the whole process. True when the kernels are then that core's (or another
 * with AVX2). Done only while the process runs no threads but OpenBLAS's own; runs when the
 * library is loaded. */
bool blas_core_reselect(void);

#endif
