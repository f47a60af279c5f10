/*
 * util.h — small helpers shared by the library: error text, clocks, half floats.
 */
#ifndef WC_UTIL_H
#define WC_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* snprintf into an optional caller buffer (err may be NULL or err_size 0). */
void wc_errf(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Up to 80 bytes of src (a name read from a file) into dst, other than printable ASCII as '?'
 * and "..." past 80, so that a message naming it stays one line. */
void wc_printable(char *dst, size_t dst_size, const uint8_t *src, size_t len);

/* Monotonic wall clock in milliseconds. */
double wc_now_ms(void);

/* IEEE half (as stored in ggml f16 tensors) to float; exact for every value. */
static inline float wc_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) { /* inf / nan */
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) { /* normal */
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) { /* zero */
        bits = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while ((man & 0x400u) == 0);
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Float to IEEE half, rounded to nearest even (as CUDA's cvt.rn.f16.f32): beyond the half
 * range to inf, NaN to a quiet NaN. */
uint16_t wc_f32_to_f16(float f);

/* wc_f32_to_f16 over n values (the same bits for every non-NaN value), with F16C where f16c
 * (wc_has_f16c(), which costs a CPUID: ask once per tensor, not per call) says the CPU has it. */
void wc_f32_to_f16_n(uint16_t *dst, const float *src, size_t n, bool f16c);
bool wc_has_f16c(void);

/* The value of environment variable `name` if it is "f32" (0) or "f16" (1), else dflt. */
int wc_env_f16(const char *name, int dflt);

/* log(sum(exp(x[i]))) over [from, to) as max + log(sum of exp(x - max)), the terms in float
 * (about 1 ulp, vectorized: vm_max_sum_exp) summed in double; -inf when every x is -inf (or the
 * range is empty). The one copy used by the decoder's rules and the backends' logits_greedy
 * twins, so both give the same bits. */
double wc_logsumexp(const float *x, int from, int to);

/* log_softmax in place, float32 results (x - wc_logsumexp(x); a row of -inf stays -inf): beam
 * search's, on the host and in the CPU's logits_topk. */
void wc_log_softmax(float *x, int n);

/* idx[0..k): the k largest of x, descending, equal values by the lower index (k small). */
void wc_topk(const float *x, int n, int k, int *idx);

/* Reads n values of an unaligned f32 or f16 source into dst. */
void wc_to_f32(float *dst, const void *src, int src_is_f16, size_t n);

/* Seedable PRNG for sampling (splitmix64): reproducible per seed, state lives in the caller. */
struct wc_rng {
    uint64_t s;
};
static inline uint64_t wc_rng_next(struct wc_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Uniform in [0, 1). */
static inline double wc_rng_uniform(struct wc_rng *r) {
    return (double)(wc_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Categorical(logits = x / T).sample() (T > 0; -inf entries never drawn, one finite entry at
 * least), with log_softmax(x)[token] (untempered, as sum_logprobs wants) in *logprob; w: n
 * floats of scratch. */
int wc_sample(const float *x, int n, float temperature, struct wc_rng *rng, float *w,
              float *logprob);
/* wc_sample in two halves, the same bits: the row's weights (w: n floats) and their sums,
 * which need no random number (so rows may be weighed side by side), then one draw from them
 * with u = wc_rng_uniform(rng) (in each row's order, from one generator). */
struct wc_sample_weights {
    float max;    /* of the row */
    double total; /* of w: exp((x - max) / T) */
    double z;     /* of exp(x - max); total at T = 1 */
};
void wc_sample_weigh(const float *x, int n, float temperature, float *w,
                     struct wc_sample_weights *sw);
int wc_sample_draw(const float *x, int n, const float *w, const struct wc_sample_weights *sw,
                   double u, float *logprob);
/* Whether logits_sample's draws are in range: rows in [0, n_rows), T > 0, u in [0, 1). */
struct wc_sample_draw;
bool wc_sample_draws_ok(const struct wc_sample_draw *draws, int n_draws, int n_rows);

/* Strips leading and trailing whitespace in place as Python's str.strip() does (ASCII and the
 * Unicode White_Space characters, UTF-8 encoded). Returns s. */
char *wc_py_strip(char *s);
/* The same on s[0..n), which stays as it is: the stripped text's start, its length in *out_n. */
const char *wc_py_strip_span(const char *s, size_t n, size_t *out_n);

#endif /* WC_UTIL_H */
