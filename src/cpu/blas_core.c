/*
 * blas_core.c — whether OpenBLAS runs kernels older than the CPU it runs on.
 *
 * OpenBLAS built with DYNAMIC_ARCH (every distribution's) picks its kernels from the CPU's
 * model number when it is loaded. An OpenBLAS older than the CPU does not know the number and
 * falls back to its Prescott (SSE3) kernels: Debian 12's 0.3.21 does so on Intel's Emerald
 * Rapids (family 6, model 207), where tiny.en's encoder took 5.0 s a window instead of 0.29 s
 * with the Skylake-X kernels that the CPU's AVX-512 runs. OpenBLAS reads OPENBLAS_CORETYPE only
 * while it is loaded, before any code of ours runs, so the remedy is that variable in the
 * environment the process starts with: the whisper-c command re-executes itself with it, and a
 * program embedding the library is told at model load (api.c).
 */
#include <cblas.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
