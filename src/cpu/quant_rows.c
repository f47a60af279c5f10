/*
 * quant_rows.c — linear's reads of a block-quantized matrix (ggml's q4_0 … q8_0, kept as the
 * file stores them: a row is cols / 32 blocks). Each value is the one ggml_dequantize_f16 gives,
 * q·d [+ m] rounded to half, so a quantized matrix computes exactly what the same matrix widened
 * to f16 at load does, at a half (q8_0) to a quarter (q4_0) of its memory and memory traffic.
 *
 * The AVX2 block decoder turns a block into four vectors of 8 halves. One input row's dot
 * product consumes them in registers in linear.c dots_block_f16's order (two accumulators, 16
 * values a step); several rows take the row decoded to halves once and linear.c's own f16 dot
 * products. Either way the sums are the f16 path's bit for bit.
 */
#include <stdbool.h>
#include <string.h>

#include "cpu/simd_x86.h"

#include "cpu/cpu_internal.h"
#include "model/ggml_quant.h"
#include "util.h"

/* A macro, not a const int: clang wants _mm256_cvtps_ph's rounding as a constant expression. */
#define QUANT_ROUND (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

static size_t row_bytes(const struct wc_mat *w) {
    return (size_t)(w->cols / GGML_QUANT_BLOCK) * ggml_quant_block_bytes((int32_t)w->dtype);
}

size_t cpu_mat_bytes(enum wc_dtype dtype, int rows, int cols) {
    if (dtype == WC_F32 || dtype == WC_F16)
        return (size_t)rows * (size_t)cols * (dtype == WC_F16 ? 2 : 4);
    return (size_t)rows * (size_t)(cols / GGML_QUANT_BLOCK) * ggml_quant_block_bytes(dtype);
}

#ifdef WC_HAVE_X86_DISPATCH
/* 0x10 in byte j where bit j of bits is set (j < 16): the 5-bit types' fifth bits. */
__attribute__((target("avx2"))) static inline __m128i fifth_bits(uint32_t bits) {
    const __m128i spread = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m128i sel = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    __m128i b = _mm_and_si128(_mm_shuffle_epi8(_mm_cvtsi32_si128((int)bits), spread), sel);
    return _mm_and_si128(_mm_cmpeq_epi8(b, sel), _mm_set1_epi8(0x10));
}

/* The block at b as the halves h[0..3] (values 0-7, 8-15, 16-23, 24-31). */
__attribute__((target("avx2,fma,f16c"))) static inline void
decode_halves(enum wc_dtype type, const uint8_t *b, __m128i h[4]) {
    uint16_t dh, mh = 0;
    memcpy(&dh, b, 2);
    __m256 d = _mm256_set1_ps(wc_f16_to_f32(dh));
    if (type == WC_Q8_0) {
        for (int g = 0; g < 4; g++) {
            __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 2 + 8 * g)));
            h[g] = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_cvtepi32_ps(q), d), QUANT_ROUND);
        }
        return;
    }
    bool has_min = type == WC_Q4_1 || type == WC_Q5_1;
    bool five = type == WC_Q5_0 || type == WC_Q5_1;
    const uint8_t *p = b + 2;
    if (has_min) {
        memcpy(&mh, p, 2);
        p += 2;
    }
    uint32_t qh = 0;
    if (five) {
        memcpy(&qh, p, 4); /* little-endian, as ggml writes it */
        p += 4;
    }
    /* the codes as bytes, values 0-15 in lo and 16-31 in hi, less the _0 types' offset */
    __m128i qs = _mm_loadu_si128((const __m128i *)p);
    __m128i lo = _mm_and_si128(qs, _mm_set1_epi8(0x0f));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(qs, 4), _mm_set1_epi8(0x0f));
    if (five) {
        lo = _mm_or_si128(lo, fifth_bits(qh & 0xffffu));
        hi = _mm_or_si128(hi, fifth_bits(qh >> 16));
    }
    if (type == WC_Q4_0 || type == WC_Q5_0) {
        __m128i offset = _mm_set1_epi8(type == WC_Q4_0 ? 8 : 16);
        lo = _mm_sub_epi8(lo, offset);
        hi = _mm_sub_epi8(hi, offset);
    }
    __m128i codes[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    __m256 m = _mm256_set1_ps(wc_f16_to_f32(mh));
    for (int g = 0; g < 4; g++) {
        __m256 x = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes[g])), d);
        h[g] = _mm256_cvtps_ph(has_min ? _mm256_add_ps(x, m) : x, QUANT_ROUND);
    }
}

/* The same as floats, v[0..3]. */
__attribute__((target("avx2,fma,f16c"))) static inline void
decode_block(enum wc_dtype type, const uint8_t *b, __m256 v[4]) {
    __m128i h[4];
    decode_halves(type, b, h);
    for (int g = 0; g < 4; g++)
        v[g] = _mm256_cvtph_ps(h[g]);
}

__attribute__((target("avx2,fma,f16c"))) static void rows_avx2(float *dst, const struct wc_mat *w,
                                                               int r0, int r1) {
    size_t rb = row_bytes(w), bb = ggml_quant_block_bytes((int32_t)w->dtype);
    for (int r = r0; r < r1; r++) {
        const uint8_t *b = (const uint8_t *)w->data + (size_t)r * rb;
        for (int i = 0; i < w->cols; i += GGML_QUANT_BLOCK, b += bb, dst += GGML_QUANT_BLOCK) {
            __m256 v[4];
            decode_block(w->dtype, b, v);
            for (int g = 0; g < 4; g++)
                _mm256_storeu_ps(dst + 8 * g, v[g]);
        }
    }
}

__attribute__((target("avx2,fma,f16c"))) void cpu_quant_row_f16(const struct wc_mat *w, int n,
                                                                uint16_t *dst) {
    size_t bb = ggml_quant_block_bytes((int32_t)w->dtype);
    const uint8_t *b = (const uint8_t *)w->data + (size_t)n * row_bytes(w);
    for (int i = 0; i < w->cols; i += GGML_QUANT_BLOCK, b += bb) {
        __m128i h[4];
        decode_halves(w->dtype, b, h);
        for (int g = 0; g < 4; g++)
            _mm_storeu_si128((__m128i *)(dst + i + 8 * g), h[g]);
    }
}

__attribute__((target("avx2,fma,f16c"))) float cpu_quant_dots(const struct wc_mat *w, int n,
                                                              const float *x) {
    size_t bb = ggml_quant_block_bytes((int32_t)w->dtype);
    const uint8_t *b = (const uint8_t *)w->data + (size_t)n * row_bytes(w);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    for (int i = 0; i < w->cols; i += GGML_QUANT_BLOCK, b += bb) {
        __m256 v[4];
        decode_block(w->dtype, b, v);
        a0 = _mm256_fmadd_ps(v[0], _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(v[1], _mm256_loadu_ps(x + i + 8), a1);
        a0 = _mm256_fmadd_ps(v[2], _mm256_loadu_ps(x + i + 16), a0);
        a1 = _mm256_fmadd_ps(v[3], _mm256_loadu_ps(x + i + 24), a1);
    }
    return hsum256(_mm256_add_ps(a0, a1));
}
#endif

void cpu_quant_rows_f32(int fast, float *dst, const struct wc_mat *w, int r0, int r1) {
#ifdef WC_HAVE_X86_DISPATCH
    if (fast) {
        rows_avx2(dst, w, r0, r1);
        return;
    }
#endif
    (void)fast;
    size_t rb = row_bytes(w);
    for (int r = r0; r < r1; r++, dst += w->cols)
        ggml_dequantize_halves((int32_t)w->dtype, (const uint8_t *)w->data + (size_t)r * rb, dst,
                               (size_t)w->cols);
}
