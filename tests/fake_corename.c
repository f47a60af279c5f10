/*
 * fake_corename.c — preloaded by test_cli.py (LD_PRELOAD): OpenBLAS reports that it chose its
 * Prescott kernels, as Debian 12's 0.3.21 does on a CPU it does not know, so that whisper-c's
 * re-execution with OPENBLAS_CORETYPE (src/cli/blas_reexec.c) runs on every x86-64 machine
 * with AVX2 and FMA, not only on such a CPU. Nothing else of OpenBLAS changes.
 */
char *openblas_get_corename(void);

char *openblas_get_corename(void) {
    static char name[] = "Prescott";
    return name;
}
