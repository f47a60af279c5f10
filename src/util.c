/* util.c — see util.h. */
#include "util.h"

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
