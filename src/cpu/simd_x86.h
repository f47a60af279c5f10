/*
 * simd_x86.h — small AVX2 helpers shared by the CPU kernels that dispatch on the CPU's features
 * at run time (functions carry target attributes; the file compiles for baseline x86-64).
 */
#ifndef WC_CPU_SIMD_X86_H
#define WC_CPU_SIMD_X86_H

#if defined(__x86_64__) && defined(__GNUC__)
#define WC_HAVE_X86_DISPATCH 1
#include <cpuid.h>
#include <immintrin.h>

/* F16C from CPUID leaf 1 (ECX bit 29): clang before 15 has no "f16c" for
 * __builtin_cpu_supports. AVX2 and FMA still come from __builtin_cpu_supports, which also checks
 * that the OS saves the YMM registers. */
static inline int wc_cpu_has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

/* Sum of the 8 lanes. */
__attribute__((target("avx2,fma"))) static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#endif

#endif /* WC_CPU_SIMD_X86_H */
