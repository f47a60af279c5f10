/* vecmath.c — see vecmath.h. Strict IEEE semantics (the magic-number rounding in vm_expf relies
 * on it): reductions are written with explicit lanes so they vectorize without -ffast-math. */
#include "cpu/vecmath.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Each kernel body is inlined into one function per ISA level; vm_* pick one per call. */
#if defined(__x86_64__) && defined(__GNUC__)
#define VM_DISPATCH(name, params, args)                                                            \
    __attribute__((target("avx512f"))) static void name##_avx512 params { name##_body args; }      \
    __attribute__((target("avx2,fma"))) static void name##_avx2 params { name##_body args; }       \
    void vm_##name params {                                                                        \
        if (__builtin_cpu_supports("avx512f"))                                                     \
            name##_avx512 args;                                                                    \
        else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))                  \
            name##_avx2 args;                                                                      \
        else                                                                                       \
            name##_body args;                                                                      \
    }
#else
#define VM_DISPATCH(name, params, args)                                                            \
    void vm_##name params { name##_body args; }
#endif

/* Cephes expf: e^x = 2^n e^r, |r| <= ln2/2, degree-6 polynomial. x is clamped to [-87, 88], so
 * 2^n stays a normal float (callers need no infinities: softmax inputs are <= 0); NaN is
 * clamped too (the comparisons are false for it), so n is always in range, and passed through
 * at the end. */
__attribute__((always_inline)) static inline float vm_expf(float x_in) {
    float x = x_in > -87.0f ? x_in : -87.0f;
    x = x < 88.0f ? x : 88.0f;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x_in == x_in ? p * scale : x_in;
}

__attribute__((always_inline)) static inline void gelu_body(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float z = (v < 0.0f ? -v : v) * 0.70710678118654752f;
        float t = 1.0f / (1.0f + 0.5f * z);
        /* Numerical Recipes erfc(z) = t exp(-z^2 + P(t)) */
        float q = 0.17087277f;
        q = q * t - 0.82215223f;
        q = q * t + 1.48851587f;
        q = q * t - 1.13520398f;
        q = q * t + 0.27886807f;
        q = q * t - 0.18628806f;
        q = q * t + 0.09678418f;
        q = q * t + 0.37409196f;
        q = q * t + 1.00002368f;
        q = q * t - 1.26551223f;
        float erfc = t * vm_expf(q - z * z);
        x[i] = 0.5f * v * (v >= 0.0f ? 2.0f - erfc : erfc);
    }
}

#define VM_LANES 16

__attribute__((always_inline)) static inline void softmax_body(float *p, int n, int len) {
    float lane[VM_LANES];
    int i = 0, n_vec = n / VM_LANES * VM_LANES;
    for (int l = 0; l < VM_LANES; l++)
        lane[l] = p[0];
    for (; i < n_vec; i += VM_LANES)
        for (int l = 0; l < VM_LANES; l++)
            lane[l] = p[i + l] > lane[l] ? p[i + l] : lane[l];
    float mx = p[0];
    for (int l = 0; l < VM_LANES; l++)
        mx = lane[l] > mx ? lane[l] : mx;
    for (; i < n; i++)
        mx = p[i] > mx ? p[i] : mx;

    for (int l = 0; l < VM_LANES; l++)
        lane[l] = 0.0f;
    for (i = 0; i < n_vec; i += VM_LANES)
        for (int l = 0; l < VM_LANES; l++) {
            p[i + l] = vm_expf(p[i + l] - mx);
            lane[l] += p[i + l];
        }
    float sum = 0.0f;
    for (; i < n; i++) {
        p[i] = vm_expf(p[i] - mx);
        sum += p[i];
    }
    for (int l = 0; l < VM_LANES; l++)
        sum += lane[l];
    float inv = 1.0f / sum;
    for (i = 0; i < n; i++)
        p[i] *= inv;
    for (i = n; i < len; i++)
        p[i] = 0.0f;
}

__attribute__((always_inline)) static inline void max_sum_exp_body(const float *x, int n,
                                                                   float *max, double *sum) {
    float lmax[VM_LANES];
    int i = 0, n_vec = n / VM_LANES * VM_LANES;
    for (int l = 0; l < VM_LANES; l++)
        lmax[l] = -INFINITY;
    for (; i < n_vec; i += VM_LANES)
        for (int l = 0; l < VM_LANES; l++)
            lmax[l] = x[i + l] > lmax[l] ? x[i + l] : lmax[l];
    float m = -INFINITY;
    for (int l = 0; l < VM_LANES; l++)
        m = lmax[l] > m ? lmax[l] : m;
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    *max = m;
    *sum = 0.0;
    if (m == -INFINITY)
        return;
    double lane[VM_LANES] = {0};
    for (i = 0; i < n_vec; i += VM_LANES)
        for (int l = 0; l < VM_LANES; l++) {
            float d = x[i + l] - m;
            lane[l] += d < -87.0f ? 0.0 : (double)vm_expf(d);
        }
    double s = 0.0;
    for (; i < n; i++) {
        float d = x[i] - m;
        s += d < -87.0f ? 0.0 : (double)vm_expf(d);
    }
    for (int l = 0; l < VM_LANES; l++)
        s += lane[l];
    *sum = s;
}

VM_DISPATCH(gelu, (float *x, size_t n), (x, n))
VM_DISPATCH(max_sum_exp, (const float *x, int n, float *max, double *sum), (x, n, max, sum))
VM_DISPATCH(softmax, (float *p, int n, int len), (p, n, len))
