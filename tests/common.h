/*
 * common.h — helpers for the test programs: locating ../shared, reading .npy files,
 * comparing tensors, skipping (exit 77) when shared data is missing.
 */
#ifndef WC_TEST_COMMON_H
#define WC_TEST_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define TEST_SKIP 77

/* Path of `rel` inside the shared material: $WHISPERC_SHARED/rel, else <source root>/../shared/rel.
 * Returns a static buffer (tests are single-threaded where they call this). */
const char *shared_path(const char *rel);

/* Like shared_path, but exits 77 (skip) with a message naming the path when it does not exist. */
const char *shared_path_or_skip(const char *rel);

/* The 16 kHz samples of shared audio file `rel` (whisperc_load_audio; malloc'd), *n of them;
 * exits 77 without it, 1 (the reason on stderr) when it cannot be read. */
float *shared_audio(const char *rel, int *n);
/* LJSpeech dev clips LJ001-(first + 1) .. LJ001-(first + count) joined into one input, as
 * shared_audio gives them. */
float *ljspeech_clips(int first, int count, int *n);

/* A float32 (or float64, converted) C-order .npy array. */
struct npy {
    int n_dims;
    int64_t shape[4];
    size_t n;
    float *data; /* owned */
};
/* Returns 0 or -1 with a message on stderr. */
int npy_load(const char *path, struct npy *out);
void npy_free(struct npy *a);

/* Max |a-b|, relative L2 ||a-b|| / ||b||; NaN/Inf in a makes both +inf. */
double max_abs_diff(const float *a, const float *b, size_t n);
double rel_l2(const float *a, const float *b, size_t n);

/* Prints "name: OK" / "name: NOT OK (...)" like llm.c's check_tensor and returns 1 if ok. Passes
 * when |a-b| <= atol + rtol*|b| everywhere; NaN never passes. Prints the first mismatches. */
int check_close(const char *name, const float *a, const float *b, size_t n, double atol,
                double rtol);

/* Simple test bookkeeping. CHECK prints the failed expression and counts it. */
extern int test_failures;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            test_failures++;                                                                       \
        }                                                                                          \
    } while (0)
#define TEST_RESULT() (test_failures ? 1 : 0)

/* Deterministic PRNG for test inputs (splitmix64 + xorshift). */
struct test_rng {
    uint64_t s;
};
float test_rng_uniform(struct test_rng *r); /* [-1, 1) */
float test_rng_normal(struct test_rng *r);  /* N(0, 1) */

/* x[0..n) rounded to f16 in place (wc_f32_to_f16); returns their halves (malloc'd): the
 * inputs of an f16 K/V case, which an f32 reference then reads exactly. */
uint16_t *test_round_f16(float *x, size_t n);

/* Whether two draws of logits_sample from one row (masked as the CPU masks it) may differ:
 * the cumulative weight exp((x - max) / T) up to the lower token lies within 1e-5 of the
 * target u * total, relative to the total (a GPU's ex2.approx against the CPU's expf, and
 * another summation order, move a boundary that far). Token b must be allowed too. */
int test_draws_at_boundary(const float *row, int n_vocab, float temperature, double u, int a,
                           int b);

/* A 16-bit PCM WAV file's bytes (malloc'd, *size of them): n frames of `channels`
 * interleaved samples at `rate`. */
unsigned char *test_wav16(const int16_t *x, uint32_t n, uint16_t channels, uint32_t rate,
                          size_t *size);

#endif /* WC_TEST_COMMON_H */
