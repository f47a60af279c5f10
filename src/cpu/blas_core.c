/*
 * blas_core.c — whether OpenBLAS runs kernels older than the CPU it runs on.
 *
 * OpenBLAS built with DYNAMIC_ARCH (every distribution's) picks its kernels from the CPU's
 * model number when it is loaded. An OpenBLAS older than the CPU does not know the number and
 * falls back to its Prescott (SSE3) kernels: Debian 12's 0.3.21 does so on Intel's Emerald
 * Rapids (family 6, model 207), where tiny.en's encoder took 5.0 s a window instead of 0.29 s
 * with the Skylake-X kernels that the CPU's AVX-512 runs. OpenBLAS reads OPENBLAS_CORETYPE
 * when it chooses, while it is loaded, before any code of ours runs. So when the library is
 * loaded, it has OpenBLAS choose again with the variable set (blas_core_reselect) through the
 * two functions its own start runs; where that OpenBLAS has no such functions (or other threads
 * run), the whisper-c command re-executes itself with the variable set, and a program
 * embedding the library is told at model load (api.c).
 */
#define _GNU_SOURCE /* dladdr */
#include "cpu/blas_core.h"

#include <cblas.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>

#include "libwhisperc.h"

/* OpenBLAS's names of the cores whose kernels use neither AVX2 nor FMA. On a CPU with both,
 * one of these was a fallback, not a choice. */
static bool blas_core_pre_avx2(const char *name) {
    static const char *const old[] = {"Prescott", "Core2",       "Penryn",       "Dunnington",
                                      "Nehalem",  "Sandybridge", "Atom",         "Nano",
                                      "Katmai",   "Coppermine",  "Northwood",    "Banias",
                                      "Athlon",   "Opteron",     "Opteron_SSE3", "Barcelona",
                                      "Bobcat",   "Bulldozer",   "Piledriver",   "Unknown"};
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
        if (strcasecmp(name, old[i]) == 0)
            return true;
    return false;
}

const char *whisperc_blas_core(void) { return openblas_get_corename(); }

const char *whisperc_blas_coretype_advice(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (getenv("OPENBLAS_CORETYPE")) /* the user's choice, even a poor one */
        return NULL;
    const char *core = openblas_get_corename(), *config = openblas_get_config();
    __builtin_cpu_init();
    /* only a DYNAMIC_ARCH build chooses its kernels, and reads the variable */
    if (!core || !config || !strstr(config, "DYNAMIC_ARCH") || !blas_core_pre_avx2(core) ||
        !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return NULL;
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512cd");
    return avx512 ? "SkylakeX" : "Haswell";
#else
    return NULL;
#endif
}

/* The threads of this process, from /proc/self/status; -1 where it cannot tell. */
static int process_threads(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* OpenBLAS's gotoblas_dynamic_quit() forgets its choice of kernels and gotoblas_dynamic_init()
 * makes it again, reading OPENBLAS_CORETYPE: what OpenBLAS's own start does, in a DYNAMIC_ARCH
 * build, exported though not in its header. They are looked up in the OpenBLAS that answers
 * openblas_get_corename for us (a library opened RTLD_LOCAL is not in the global scope), else
 * in the global scope. Nothing OpenBLAS set up at its start depends on the choice: its buffers
 * are of one size for every core, a product's blocking is read from the chosen table as it
 * starts. But a product running meanwhile on another thread would mix two tables (or find
 * none), so this is done only while the process has no threads but OpenBLAS's own. The
 * variable is unset again: a child process, or another OpenBLAS loaded later, chooses for
 * itself. */
bool blas_core_reselect(void) {
    const char *core = whisperc_blas_coretype_advice();
    const char *off = getenv("WHISPERC_BLAS_RESELECT");
    const char *now = openblas_get_corename();
    /* "Unknown": OpenBLAS has not chosen yet (a static link, our constructor first) */
    if (!core || (off && strcmp(off, "0") == 0) || getauxval(AT_SECURE) || !now ||
        strcasecmp(now, "Unknown") == 0)
        return false;
    int threads = process_threads();
    if (threads < 1 || threads > openblas_get_num_threads())
        return false;
    Dl_info info;
    void *lib = NULL;
    if (dladdr((void *)openblas_get_corename, &info) && info.dli_fname)
        lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    /* (a non-PIE program's own address of the function names the program: the global scope) */
    void *scope = lib ? lib : RTLD_DEFAULT;
    void (*quit)(void) = (void (*)(void))dlsym(scope, "gotoblas_dynamic_quit");
    void (*init)(void) = (void (*)(void))dlsym(scope, "gotoblas_dynamic_init");
    bool done = false;
    if (quit && init && setenv("OPENBLAS_CORETYPE", core, 0) == 0) {
        quit();
        init();
        unsetenv("OPENBLAS_CORETYPE");
        /* an OpenBLAS without that core's table keeps a fallback: then the warning stays */
        done = !blas_core_pre_avx2(openblas_get_corename());
    }
    if (lib)
        dlclose(lib);
    return done;
}

/* When the library is loaded: in a program linked with it, before main; in one that opens it,
 * only where no other thread runs (above). WHISPERC_BLAS_RESELECT=0 leaves OpenBLAS's choice
 * alone: the whisper-c command then starts itself again, and the model load warns an
 * embedding program. */
__attribute__((constructor)) static void blas_core_at_load(void) { blas_core_reselect(); }
