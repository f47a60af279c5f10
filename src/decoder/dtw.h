/*
 * dtw.h — the token-to-frame alignment of openai-whisper timing.find_alignment: the alignment
 * heads' cross-attention turned into a cost matrix (softmax over the window's frames,
 * standardised over tokens, median-filtered over time, averaged over heads), then dynamic time
 * warping through it.
 */
#ifndef WC_DTW_H
#define WC_DTW_H

/* qk: [n_heads][n_tok][ld] pre-softmax cross-attention logits of a teacher-forced pass; only the
 * first n_frames columns count (the window's audio: num_frames // 2 encoder frames). The
 * matrix rows first_row .. first_row + n_rows - 1 (the positions that predict the text tokens
 * and the final EOT) are aligned. On return jump[i] (i < *n_jump) is the frame at which the
 * warping path enters its i-th row (time_indices[jumps]); normally *n_jump == n_rows.
 * jump must have room for n_rows + n_frames entries. Returns 0, or -1 when out of memory. */
int alignment_dtw(const float *qk, int n_heads, int n_tok, int ld, int n_frames, int first_row,
                  int n_rows, int *jump, int *n_jump);

/* The median filter of timing.median_filter, width odd, along rows of n values, reflect-padded
 * (a row of at most width / 2 values is left as it is). tmp: n + width - 1 floats. */
void median_filter_row(float *x, int n, int width, float *tmp);

/* dtw_cpu + backtrace for x [n][m] (row-major, cost to minimise): writes the path's
 * (text index, time index) pairs in order to ti[], fi[] (room for n + m) and returns their
 * count, or -1 when out of memory. Indices may be -1 as the reference's are. */
int dtw_path(const double *x, int n, int m, int *ti, int *fi);

#endif /* WC_DTW_H */
