/* util.c — see util.h. */
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "backend.h"
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

/* Length of the whitespace character at p (Python str.isspace), 0 if none. */
static size_t py_space_len(const unsigned char *p) {
    if (*p == ' ' || (*p >= 0x09 && *p <= 0x0d) || (*p >= 0x1c && *p <= 0x1f))
        return 1;
    if (p[0] == 0xc2 && (p[1] == 0x85 || p[1] == 0xa0))
        return 2;
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

char *wc_py_strip(char *s) {
    unsigned char *p = (unsigned char *)s;
    size_t k;
    while (*p && (k = py_space_len(p)) > 0)
        p += k;
    /* find the end of the last non-space character */
    unsigned char *end = p, *q = p;
    while (*q) {
        k = py_space_len(q);
        if (k) {
            q += k;
        } else {
            q++;
            while ((*q & 0xc0) == 0x80)
                q++;
            end = q;
        }
    }
    size_t n = (size_t)(end - p);
    memmove(s, p, n);
    s[n] = '\0';
    return s;
}

void wc_log_softmax(float *x, int n) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    if (m == -INFINITY) /* every value -inf: they stay so (not -inf - -inf = NaN) */
        return;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += exp((double)x[i] - m);
    double lse = m + log(sum);
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
    float m = -INFINITY;
    for (int i = from; i < to; i++)
        m = x[i] > m ? x[i] : m;
    if (m == -INFINITY)
        return -INFINITY;
    double s = 0;
    for (int i = from; i < to; i++)
        s += exp((double)x[i] - m);
    return m + log(s);
}
