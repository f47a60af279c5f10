/*
 * blas_reexec.h — start again with OPENBLAS_CORETYPE set where OpenBLAS misjudged the CPU.
 */
#ifndef WC_CLI_BLAS_REEXEC_H
#define WC_CLI_BLAS_REEXEC_H

/* When OpenBLAS fell back to kernels older than the CPU (whisperc_blas_coretype_advice) and
 * the library could not have it choose again as it was loaded (src/cpu/blas_core.c), sets
 * OPENBLAS_CORETYPE and executes this program again with argv: OpenBLAS reads the variable only
 * while it is loaded. Returns when there is nothing to do, or when the exec failed (the
 * variable is then unset again, so that the model load's warning still says what to do). */
void cli_blas_reexec(char **argv);

#endif
