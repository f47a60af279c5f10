/* rows_scatter.c — backend.h's data moves on the CPU: rows_scatter (one memcpy per row) and
 * to_f16 (narrowed as cvt.rn.f16.f32 does). */
#include <string.h>

#include "cpu/cpu_internal.h"
#include "libwhisperc.h"
#include "util.h"

void cpu_to_f16(struct wc_stream *s, void *dst, const float *src, size_t n) {
    if (s->err)
        return;
    uint16_t *h = dst;
    for (size_t i = 0; i < n; i++)
        h[i] = wc_f32_to_f16(src[i]);
}

void cpu_rows_scatter(struct wc_stream *s, float *dst, const float *src, const int32_t *dst_row,
                      int n_rows, int c) {
    if (s->err)
        return;
    for (int r = 0; r < n_rows; r++) {
        if (dst_row[r] < 0) {
            wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "rows_scatter: row %d", dst_row[r]);
            return;
        }
        memcpy(dst + (size_t)dst_row[r] * c, src + (size_t)r * c, (size_t)c * sizeof *dst);
    }
}
