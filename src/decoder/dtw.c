/*
 * dtw.c — find_alignment's numerics (openai-whisper timing.py), in the reference's order of
 * operations: float32 softmax, std/mean and median, DTW costs stored as float32.
 */
#include "decoder/dtw.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

void median_filter_row(float *x, int n, int width, float *tmp) {
    int pad = width / 2;
    if (n <= pad)
        return; /* F.pad(reflect) needs pad < n; the reference returns x unfiltered */
    for (int i = 0; i < n + 2 * pad; i++) {
        int k = i - pad; /* reflect: x[-k] = x[k], x[n-1+k] = x[n-1-k] */
        k = k < 0 ? -k : (k >= n ? 2 * (n - 1) - k : k);
        tmp[i] = x[k];
    }
    float win[64];
    for (int i = 0; i < n; i++) {
        memcpy(win, tmp + i, (size_t)width * sizeof *win);
        qsort(win, (size_t)width, sizeof *win, cmp_float);
        x[i] = win[pad];
    }
}

/* softmax over each row of frames, then (w - mean) / std over tokens per (head, frame) */
static void normalise_head(float *w, const float *qk, int n_tok, int ld, int n_frames) {
    for (int t = 0; t < n_tok; t++) {
        const float *in = qk + (size_t)t * ld;
        float *out = w + (size_t)t * n_frames, mx = -INFINITY;
        for (int f = 0; f < n_frames; f++)
            mx = in[f] > mx ? in[f] : mx;
        double sum = 0;
        for (int f = 0; f < n_frames; f++)
            sum += (out[f] = expf(in[f] - mx));
        for (int f = 0; f < n_frames; f++)
            out[f] = (float)(out[f] / sum);
    }
    for (int f = 0; f < n_frames; f++) {
        double mean = 0, var = 0;
        for (int t = 0; t < n_tok; t++)
            mean += w[(size_t)t * n_frames + f];
        mean /= n_tok;
        for (int t = 0; t < n_tok; t++) {
            double d = w[(size_t)t * n_frames + f] - mean;
            var += d * d;
        }
        float m = (float)mean, sd = (float)sqrt(var / n_tok); /* unbiased=False */
        for (int t = 0; t < n_tok; t++)
            w[(size_t)t * n_frames + f] = (w[(size_t)t * n_frames + f] - m) / sd;
    }
}

int dtw_path(const double *x, int n, int m, int *ti, int *fi) {
    size_t w = (size_t)m + 1;
    float *cost = malloc((size_t)(n + 1) * w * sizeof *cost);
    int8_t *trace = malloc((size_t)(n + 1) * w);
    if (!cost || !trace) {
        free(cost);
        free(trace);
        return -1;
    }
    for (size_t i = 0; i < (size_t)(n + 1) * w; i++) {
        cost[i] = INFINITY;
        trace[i] = -1;
    }
    cost[0] = 0;
    for (int j = 1; j <= m; j++)
        for (int i = 1; i <= n; i++) {
            float c0 = cost[(i - 1) * w + j - 1], c1 = cost[(i - 1) * w + j],
                  c2 = cost[i * w + j - 1], c;
            int8_t t;
            if (c0 < c1 && c0 < c2)
                c = c0, t = 0;
            else if (c1 < c0 && c1 < c2)
                c = c1, t = 1;
            else
                c = c2, t = 2;
            /* float64 x plus a float32 cost, stored into the float32 table as numba does */
            cost[i * w + j] = (float)(x[(size_t)(i - 1) * m + j - 1] + (double)c);
            trace[i * w + j] = t;
        }
    for (int j = 0; j <= m; j++)
        trace[j] = 2;
    for (int i = 0; i <= n; i++)
        trace[i * w] = 1;
    int i = n, j = m, k = 0;
    while (i > 0 || j > 0) {
        ti[k] = i - 1;
        fi[k++] = j - 1;
        int8_t t = trace[i * w + j];
        if (t == 0)
            i--, j--;
        else if (t == 1)
            i--;
        else
            j--;
    }
    for (int a = 0, b = k - 1; a < b; a++, b--) { /* reverse into path order */
        int t = ti[a], f = fi[a];
        ti[a] = ti[b], fi[a] = fi[b];
        ti[b] = t, fi[b] = f;
    }
    free(cost);
    free(trace);
    return k;
}

int alignment_dtw(const float *qk, int n_heads, int n_tok, int ld, int n_frames, int first_row,
                  int n_rows, int *jump, int *n_jump) {
    const int width = 7; /* medfilt_width */
    size_t plane = (size_t)n_tok * n_frames;
    float *w = malloc((size_t)n_heads * plane * sizeof *w);
    float *tmp = malloc(((size_t)n_frames + width) * sizeof *tmp);
    double *x = malloc((size_t)n_rows * n_frames * sizeof *x);
    int *ti = malloc(((size_t)n_rows + n_frames) * sizeof *ti);
    int *fi = malloc(((size_t)n_rows + n_frames) * sizeof *fi);
    int rc = -1;
    if (!w || !tmp || !x || !ti || !fi)
        goto done;
    for (int h = 0; h < n_heads; h++) {
        float *wh = w + h * plane;
        normalise_head(wh, qk + (size_t)h * n_tok * ld, n_tok, ld, n_frames);
        for (int t = 0; t < n_tok; t++)
            median_filter_row(wh + (size_t)t * n_frames, n_frames, width, tmp);
    }
    for (int r = 0; r < n_rows; r++)
        for (int f = 0; f < n_frames; f++) {
            float sum = 0; /* matrix = weights.mean(axis=0), in float32 */
            for (int h = 0; h < n_heads; h++)
                sum += w[h * plane + (size_t)(first_row + r) * n_frames + f];
            x[(size_t)r * n_frames + f] = -(double)(sum / (float)n_heads);
        }
    int k = dtw_path(x, n_rows, n_frames, ti, fi);
    if (k < 0)
        goto done;
    /* jumps = diff(text_indices) != 0, the first entry counting as a jump */
    *n_jump = 0;
    for (int i = 0; i < k; i++)
        if (i == 0 || ti[i] != ti[i - 1])
            jump[(*n_jump)++] = fi[i];
    rc = 0;
done:
    free(w);
    free(tmp);
    free(x);
    free(ti);
    free(fi);
    return rc;
}
