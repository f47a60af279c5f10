/*
 * blas_core.c — whether OpenBLAS runs kernels older than the CPU it runs on.
 *
 * OpenBLAS built with DYNAMIC_ARCH (every distribution's) picks its kernels from the CPU's
 * model number when it is loaded. An OpenBLAS older than the CPU does not know the number and
 * falls back to its Prescott (SSE3) kernels: Debian 12's 0.3.21 does so on Intel's Emerald
 * Rapids (family 6, model 207), where tiny.en's encoder took 5.0 s a window instead of 0.29 s
 * with the Skylake-X kernels that the CPU's AVX-512 runs. OpenBLAS reads OPENBLAS_CORETYPE
 * when it chooses, while it is loaded, before any code of ours runs. So when the library is
 * loaded, before anything has multiplied a matrix, it sets the variable and has OpenBLAS choose
 * again (blas_core_reselect) through the two functions its own start runs; where that OpenBLAS
 * has no such functions, the whisper-c command re-executes itself with the variable set, and a
 * program embedding the library is told at model load (api.c).
 */
#define _GNU_SOURCE /* dladdr */
#include "cpu/blas_core.h"

#include <cblas.h>
#include <dlfcn.h>
#include <stdbool.h>
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

/* OpenBLAS's gotoblas_dynamic_quit() forgets its choice of kernels and gotoblas_dynamic_init()
 * makes it again, reading OPENBLAS_CORETYPE: what OpenBLAS's own start does, in a
 * DYNAMIC_ARCH build, exported though not in its header. They are looked up in the OpenBLAS
 * that answers openblas_get_corename for us (a library opened RTLD_LOCAL is not in the global
 * scope). Called before any product has run, the new kernels are those a start with the
 * variable set would have chosen; the buffers OpenBLAS allocates at its first product are sized
 * for every core it supports. */
bool blas_core_reselect(void) {
    const char *core = whisperc_blas_coretype_advice();
    const char *off = getenv("WHISPERC_BLAS_RESELECT");
    if (!core || (off && strcmp(off, "0") == 0) || getauxval(AT_SECURE))
        return false;
    Dl_info info;
    if (!dladdr((void *)openblas_get_corename, &info) || !info.dli_fname)
        return false;
    void *lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!lib)
        return false;
    void (*quit)(void) = (void (*)(void))dlsym(lib, "gotoblas_dynamic_quit");
    void (*init)(void) = (void (*)(void))dlsym(lib, "gotoblas_dynamic_init");
    bool done = false;
    if (quit && init && setenv("OPENBLAS_CORETYPE", core, 0) == 0) {
        quit();
        init();
        done = true;
    }
    dlclose(lib);
    return done;
}

/* When the library is loaded: the process (or the program that opened the library) has not
 * started threads of its own that multiply yet. WHISPERC_BLAS_RESELECT=0 leaves OpenBLAS's
 * choice alone (the model load then warns). */
__attribute__((constructor)) static void blas_core_at_load(void) { blas_core_reselect(); }
