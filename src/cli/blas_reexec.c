/*
 * blas_reexec.c — see blas_reexec.h. The program started again is the file /proc/self/exe
 * names, not argv[0] looked up again (relative, or another PATH). It is executed by its path,
 * not as /proc/self/exe, which would name the process "exe" in ps and top. The new process
 * finds the variable set and does not come back here.
 */
#include "blas_reexec.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "libwhisperc.h"

void cli_blas_reexec(char **argv) {
    const char *core = whisperc_blas_coretype_advice();
    if (!core || !argv || !argv[0])
        return;
    /* Started as the dynamic loader's argument (ld.so ./whisper-c ...), the image is ld.so's:
     * no interpreter was mapped for the program (AT_BASE 0), and /proc/self/exe names ld.so,
     * which would take argv[1] for the program. A set-user-ID start is left alone too. The
     * model load's warning still says what to set. */
    if (getauxval(AT_BASE) == 0 || getauxval(AT_SECURE))
        return;
    if (setenv("OPENBLAS_CORETYPE", core, 1) != 0)
        return;
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path);
    if (n > 0 && (size_t)n < sizeof path) { /* not cut short */
        path[n] = '\0';
        execv(path, argv); /* fails where the file was deleted since: "... (deleted)" */
    }
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE");
}
