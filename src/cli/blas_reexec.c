/*
 * blas_reexec.c — see blas_reexec.h. The program is the same file (/proc/self/exe), so a
 * relative argv[0] or a changed PATH cannot pick another; the new process finds the variable
 * set and does not come back here.
 */
#include "blas_reexec.h"

#include <stdlib.h>
#include <unistd.h>

#include "libwhisperc.h"

void cli_blas_reexec(char **argv) {
    const char *core = whisperc_blas_coretype_advice();
    if (!core || !argv || !argv[0])
        return;
    if (setenv("OPENBLAS_CORETYPE", core, 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE");
}
