/* rows_scatter.c — backend.h rows_scatter on the CPU: one memcpy per row. */
#include <string.h>

#include "cpu/cpu_internal.h"
#include "libwhisperc.h"

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
