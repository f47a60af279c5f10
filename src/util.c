/* util.c — see util.h. */
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend.h"
#include "cpu/simd_x86.h" /* wc_cpu_has_f16c, the intrinsics */
#include "cpu/vecmath.h"  /* vm_max_sum_exp */
#include "libwhisperc.h"

void wc_errf(char *err, size_t err_size, const char *fmt, ...) {
    if (!err || err_size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
}

double wc_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

uint16_t wc_f32_to_f16(float f) {
    /* exponent rebias with the rounding carried by integer adds; halves below 2^-14 come from a
     * float add that aligns the value to the subnormal step (the FPU rounds to nearest even) */
    const uint32_t f16_max = (127u + 16u) << 23; /* 65536: everything from here is inf */
    const uint32_t denorm_magic = (127u - 15u + 23u - 10u + 1u) << 23; /* 0.5 in ulps of 2^-24 */
    uint32_t u, sign;
    memcpy(&u, &f, sizeof u);
    sign = (u >> 16) & 0x8000u;
    u &= 0x7fffffffu;
    if (u >= f16_max)
        return (uint16_t)(sign | (u > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (u < (113u << 23)) { /* below 2^-14 */
        float x, magic;
        memcpy(&x, &u, sizeof x);
        memcpy(&magic, &denorm_magic, sizeof magic);
        x += magic;
        memcpy(&u, &x, sizeof u);
        return (uint16_t)(sign | (u - denorm_magic));
    }
    uint32_t odd = (u >> 13) & 1u; /* ties to even: 0xfff rounds down at a tie, + odd up */
    u += (uint32_t)((15 - 127) * (1 << 23)) + 0xfffu + odd;
    return (uint16_t)(sign | (u >> 13));
}

#ifdef WC_HAVE_X86_DISPATCH
__attribute__((target("avx,f16c"))) static size_t to_f16_f16c(uint16_t *dst, const float *src,
                                                              size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    return i;
}

#endif

bool wc_has_f16c(void) {
#ifdef WC_HAVE_X86_DISPATCH
    /* AVX as __builtin_cpu_supports sees it (the OS saves the YMM registers) */
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") && wc_cpu_has_f16c();
#else
    return false;
#endif
}

void wc_f32_to_f16_n(uint16_t *dst, const float *src, size_t n, bool f16c) {
    size_t i = 0;
#ifdef WC_HAVE_X86_DISPATCH
    if (f16c)
        i = to_f16_f16c(dst, src, n);
#else
    (void)f16c;
#endif
    for (; i < n; i++)
        dst[i] = wc_f32_to_f16(src[i]);
}

int wc_env_f16(const char *name, int dflt) {
    const char *v = getenv(name);
    if (v && !strcmp(v, "f32"))
        return 0;
    if (v && !strcmp(v, "f16"))
        return 1;
    return dflt;
}

void wc_to_f32(float *dst, const void *src, int src_is_f16, size_t n) {
    const unsigned char *p = src;
    if (src_is_f16) {
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = wc_f16_to_f32(h);
        }
    } else {
        memcpy(dst, src, n * sizeof(float));
    }
}

void wc_stream_fail(struct wc_stream *s, int code, const char *fmt, ...) {
    if (s->err)
        return;
    s->err = code ? code : WHISPERC_ERR_BACKEND;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->errmsg, sizeof s->errmsg, fmt, ap);
    va_end(ap);
}

/* Length of the whitespace character at p (Python str.isspace), 0 if none; n > 0 bytes
 * readable. */
static size_t py_space_len(const unsigned char *p, size_t n) {
    if (*p == ' ' || (*p >= 0x09 && *p <= 0x0d) || (*p >= 0x1c && *p <= 0x1f))
        return 1;
    if (n < 2)
        return 0;
    if (p[0] == 0xc2 && (p[1] == 0x85 || p[1] == 0xa0))
        return 2;
    if (n < 3)
        return 0;
    if (p[0] == 0xe1 && p[1] == 0x9a && p[2] == 0x80) /* U+1680 */
        return 3;
    if (p[0] == 0xe2 && p[1] == 0x80 &&
        ((p[2] >= 0x80 && p[2] <= 0x8a) || p[2] == 0xa8 || p[2] == 0xa9 || p[2] == 0xaf))
        return 3;                                     /* U+2000..200A, 2028, 2029, 202F */
    if (p[0] == 0xe2 && p[1] == 0x81 && p[2] == 0x9f) /* U+205F */
        return 3;
    if (p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x80) /* U+3000 */
        return 3;
    return 0;
}

const char *wc_py_strip_span(const char *s, size_t n, size_t *out_n) {
    const unsigned char *p = (const unsigned char *)s, *stop = p + n;
    size_t k;
    while (p < stop && (k = py_space_len(p, (size_t)(stop - p))) > 0)
        p += k;
    /* find the end of the last non-space character */
    const unsigned char *end = p, *q = p;
    while (q < stop) {
        k = py_space_len(q, (size_t)(stop - q));
        if (k) {
            q += k;
        } else {
            q++;
            while (q < stop && (*q & 0xc0) == 0x80)
                q++;
            end = q;
        }
    }
    *out_n = (size_t)(end - p);
    return (const char *)p;
}

char *wc_py_strip(char *s) {
    size_t n;
    const char *p = wc_py_strip_span(s, strlen(s), &n);
    memmove(s, p, n);
    s[n] = '\0';
    return s;
}

void wc_log_softmax(float *x, int n) {
    double lse = wc_logsumexp(x, 0, n);
    if (lse == -INFINITY) /* every value -inf: they stay so (not -inf - -inf = NaN) */
        return;
    for (int i = 0; i < n; i++)
        x[i] = (float)(x[i] - lse);
}

void wc_topk(const float *x, int n, int k, int *idx) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m == k && !(x[i] > x[idx[k - 1]]))
            continue;
        int j = m < k ? m++ : k - 1;
        while (j > 0 && x[i] > x[idx[j - 1]]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
}

double wc_logsumexp(const float *x, int from, int to) {
    if (to <= from)
        return -INFINITY;
    float m;
    double s;
    vm_max_sum_exp(x + from, to - from, &m, &s); /* the max's own term makes s >= 1 */
    return m == -INFINITY ? -INFINITY : m + log(s);
}

/* One pass of expf (a float's precision is all a draw needs) keeps each weight in w for the
 * search and sums the weights and, at T != 1, exp(x - max) in double: a row of 51,864 took
 * three passes of double exp before (~3 ms, on the host of every step of every fallback). */
void wc_sample_weigh(const float *x, int n, float temperature, float *w,
                     struct wc_sample_weights *sw) {
    float m = x[0], inv_t = 1.0f / temperature;
    for (int i = 1; i < n; i++)
        m = x[i] > m ? x[i] : m;
    bool unit = temperature == 1.0f;
    double total = 0, z = 0;
    for (int i = 0; i < n; i++) {
        float d = x[i] - m; /* -inf for forbidden tokens: weight 0 */
        w[i] = expf(d * inv_t);
        total += w[i];
        if (!unit)
            z += expf(d);
    }
    *sw = (struct wc_sample_weights){.max = m, .total = total, .z = unit ? total : z};
}

int wc_sample_draw(const float *x, int n, const float *w, const struct wc_sample_weights *sw,
                   double u, float *logprob) {
    double target = u * sw->total, acc = 0;
    int tok = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] == -INFINITY)
            continue;
        acc += w[i];
        tok = i;
        if (target < acc)
            break;
    }
    *logprob = (float)((double)x[tok] - sw->max - log(sw->z));
    return tok;
}

int wc_sample(const float *x, int n, float temperature, struct wc_rng *rng, float *w,
              float *logprob) {
    struct wc_sample_weights sw;
    wc_sample_weigh(x, n, temperature, w, &sw);
    return wc_sample_draw(x, n, w, &sw, wc_rng_uniform(rng), logprob);
}

bool wc_sample_draws_ok(const struct wc_sample_draw *draws, int n_draws, int n_rows) {
    for (int j = 0; j < n_draws; j++)
        if (draws[j].row < 0 || draws[j].row >= n_rows || !(draws[j].temperature > 0) ||
            !(draws[j].u >= 0 && draws[j].u < 1))
            return false;
    return true;
}

/* Copies up to 80 bytes of a name read from a file, non-printable bytes as '?', so messages
 * stay one line. */
void wc_printable(char *dst, size_t dst_size, const uint8_t *src, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len && n + 4 < dst_size && i < 80; i++)
        dst[n++] = (src[i] >= 0x20 && src[i] < 0x7f) ? (char)src[i] : '?';
    if (len > 80 && n + 4 < dst_size) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = '\0';
}
