/*
 * ggml_quant.c — ggml's q4_0, q4_1, q5_0, q5_1 and q8_0 blocks to halves. Each block starts
 * with its half scale d (then the half minimum m for the _1 types); the 4-bit types pack value
 * j in the low nibble of byte j and value j + 16 in its high nibble; the 5-bit types keep the
 * fifth bits in a little-endian u32 (bit j for value j); q8_0 stores 32 signed bytes. The value
 * is q·d (unsigned q, offset -8 or -16 for the _0 types) or q·d + m, in float as ggml computes
 * it, then rounded to half.
 */
#include "model/ggml_quant.h"

#include <stdbool.h>

#include "util.h"

size_t ggml_quant_block_bytes(int32_t type) {
    switch (type) {
    case GGML_Q4_0: return 2 + 16;
    case GGML_Q4_1: return 2 + 2 + 16;
    case GGML_Q5_0: return 2 + 4 + 16;
    case GGML_Q5_1: return 2 + 2 + 4 + 16;
    case GGML_Q8_0: return 2 + 32;
    default: return 0;
    }
}

static float half_at(const uint8_t *p) { return wc_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* One block's 32 unsigned codes (before the _0 types' offset). */
static void block_codes(int32_t type, const uint8_t *qs, uint32_t qh, int q[GGML_QUANT_BLOCK]) {
    bool five = type == GGML_Q5_0 || type == GGML_Q5_1;
    for (int j = 0; j < 16; j++) {
        q[j] = qs[j] & 0x0f;
        q[j + 16] = qs[j] >> 4;
        if (five) {
            q[j] |= (int)((qh >> j) & 1u) << 4;
            q[j + 16] |= (int)((qh >> (j + 16)) & 1u) << 4;
        }
    }
}

/* n values' floats, before the rounding to half, into v. The product and the minimum's sum are
 * separate statements: rounded each, never one fused multiply-add (ISO C's default contraction,
 * which the build's c11 mode keeps), as the AVX2 decoder of quant_rows.c computes them. */
static void dequantize_f32(int32_t type, const uint8_t *b, float *v, size_t n) {
    size_t bytes = ggml_quant_block_bytes(type);
    int q[GGML_QUANT_BLOCK];
    for (size_t i = 0; i < n; i += GGML_QUANT_BLOCK, b += bytes, v += GGML_QUANT_BLOCK) {
        float d = half_at(b);
        if (type == GGML_Q8_0) {
            for (int j = 0; j < GGML_QUANT_BLOCK; j++)
                v[j] = (float)(int8_t)b[2 + j] * d;
            continue;
        }
        bool has_min = type == GGML_Q4_1 || type == GGML_Q5_1;
        const uint8_t *p = b + (has_min ? 4 : 2);
        float m = has_min ? half_at(b + 2) : 0.0f;
        uint32_t qh = 0;
        if (type == GGML_Q5_0 || type == GGML_Q5_1) {
            qh = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            p += 4;
        }
        block_codes(type, p, qh, q);
        int offset = type == GGML_Q4_0 ? 8 : type == GGML_Q5_0 ? 16 : 0;
        for (int j = 0; j < GGML_QUANT_BLOCK; j++) {
            float x = (float)(q[j] - offset) * d;
            v[j] = has_min ? x + m : x;
        }
    }
}

void ggml_dequantize_halves(int32_t type, const void *src, float *dst, size_t n) {
    dequantize_f32(type, src, dst, n);
    for (size_t i = 0; i < n; i++)
        dst[i] = wc_f16_to_f32(wc_f32_to_f16(dst[i]));
}

void ggml_dequantize_f16(int32_t type, const void *src, uint16_t *dst, size_t n) {
    enum { CHUNK = 64 * GGML_QUANT_BLOCK }; /* converted to halves a chunk at a time */
    float v[CHUNK];
    const uint8_t *b = src;
    bool f16c = wc_has_f16c();
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        dequantize_f32(type, b, v, k);
        wc_f32_to_f16_n(dst + i, v, k, f16c);
        b += k / GGML_QUANT_BLOCK * ggml_quant_block_bytes(type);
    }
}
