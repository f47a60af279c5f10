/* rows_scatter.c — backend.h's data moves on the CPU: rows_scatter (one memcpy per row),
 * to_f16 (narrowed as cvt.rn.f16.f32 does) and transpose (in 32 x 32 blocks, so that both
 * sides stay in cache). */
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

void cpu_transpose(struct wc_stream *s, float *out, const float *in, int rows, int cols) {
    if (s->err)
        return;
    for (int r0 = 0; r0 < rows; r0 += 32)
        for (int c0 = 0; c0 < cols; c0 += 32) {
            int r1 = r0 + 32 < rows ? r0 + 32 : rows, c1 = c0 + 32 < cols ? c0 + 32 : cols;
            for (int c = c0; c < c1; c++)
                for (int r = r0; r < r1; r++)
                    out[(size_t)c * rows + r] = in[(size_t)r * cols + c];
        }
}
