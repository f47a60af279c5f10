/*
 * ggml_quant.h — ggml's block-quantized tensor formats, as whisper.cpp's `quantize` writes them
 * (ggml-base-q5_1.bin, ggml-large-v3-turbo-q8_0.bin, …): rows cut into blocks of 32 values,
 * each block a half-float scale (and for _1 types a half-float minimum) and 4, 5 or 8 bits a
 * value. whisper-c computes with each value d·q [+ m] rounded to half (far inside the
 * quantization step): widened to f16 at load, or decoded on the fly from blocks kept in memory
 * (src/cpu/quant_rows.c), the same values either way for finite scales.
 */
#ifndef WC_GGML_QUANT_H
#define WC_GGML_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* The ggml_type values of the supported formats. */
enum { GGML_Q4_0 = 2, GGML_Q4_1 = 3, GGML_Q5_0 = 6, GGML_Q5_1 = 7, GGML_Q8_0 = 8 };

enum { GGML_QUANT_BLOCK = 32 }; /* values a block, every supported format */

/* Bytes a block of ggml type `type` takes, or 0 when whisper-c cannot read that type. */
size_t ggml_quant_block_bytes(int32_t type);

/* Widens n values (a whole number of blocks) of a supported type to halves; src unaligned.
 * For whole tensors: it asks the CPU for F16C (a CPUID, slow in a VM) once a call. */
void ggml_dequantize_f16(int32_t type, const void *src, uint16_t *dst, size_t n);

/* The same values as floats (each exactly a half), plain C: for a few blocks at a time. */
void ggml_dequantize_halves(int32_t type, const void *src, float *dst, size_t n);

#endif /* WC_GGML_QUANT_H */
