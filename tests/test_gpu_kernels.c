/*
 * test_gpu_kernels.c — every generated CUDA kernel against its CPU twin on fresh random inputs
 * (suite gpu). Outputs are poisoned with NaN before each launch. Exits 77 without a CUDA driver
 * or device, so it runs in CI as a skip and on the lent H100/H200 for real.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common.h"
#include "cpu/vecmath.h"
#include "gpu/cuda_api.h"
#include "kernels/kernels.h"
#include "util.h"

static struct cuda_api api;
static struct test_rng rng = {777};
static char err[1024];

#define CU(call)                                                                                   \
    do {                                                                                           \
        if (cuda_check(&api, (call), #call, err, sizeof err)) {                                    \
            fprintf(stderr, "%s\n", err);                                                          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static float *rand_vec(size_t n, float scale) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        p[i] = scale * test_rng_normal(&rng);
    return p;
}

static CUdeviceptr dev_upload(const void *host, size_t bytes) {
    CUdeviceptr d;
    CU(api.mem_alloc(&d, bytes));
    CU(api.memcpy_htod(d, host, bytes));
    return d;
}

static CUdeviceptr dev_poisoned(size_t n_floats) {
    float *nan = malloc(n_floats * sizeof(float));
    for (size_t i = 0; i < n_floats; i++)
        nan[i] = NAN;
    CUdeviceptr d = dev_upload(nan, n_floats * sizeof(float));
    free(nan);
    return d;
}

static CUfunction load(char *ptx, const char *name, CUmodule *mod) {
    if (!ptx) {
        fprintf(stderr, "%s: generator failed\n", name);
        exit(1);
    }
    if (cuda_module_load_ptx(&api, ptx, mod, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", name, err);
        exit(1);
    }
    free(ptx);
    CUfunction f;
    CU(api.module_get_function(&f, *mod, name));
    return f;
}

static void launch(CUfunction f, unsigned grid, unsigned block, void **args) {
    CU(api.launch_kernel(f, grid, 1, 1, block, 1, 1, 0, NULL, args, NULL));
    CU(api.ctx_synchronize());
}

static void test_layernorm(int sm, struct wc_stream *s, int rows, int c) {
    char name[64];
    snprintf(name, sizeof name, "layernorm_c%d", c);
    CUmodule mod;
    CUfunction f = load(gen_layernorm(sm, c), name, &mod);
    size_t n = (size_t)rows * c;
    float *x = rand_vec(n, 3.0f), *g = rand_vec((size_t)c, 1.0f), *b = rand_vec((size_t)c, 1.0f);
    float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    s->be->ops->layernorm(s, want, x, g, b, rows, c);
    CUdeviceptr dx = dev_upload(x, n * 4), dg = dev_upload(g, (size_t)c * 4);
    CUdeviceptr db = dev_upload(b, (size_t)c * 4), dout = dev_poisoned(n);
    unsigned urows = (unsigned)rows;
    void *args[] = {&dout, &dx, &dg, &db, &urows};
    launch(f, (unsigned)rows, KERNEL_LN_THREADS, args);
    CU(api.memcpy_dtoh(got, dout, n * 4));
    CHECK(check_close(name, got, want, n, 1e-6, 1e-5));
    void *args_inplace[] = {&dx, &dx, &dg, &db, &urows}; /* out == in */
    launch(f, (unsigned)rows, KERNEL_LN_THREADS, args_inplace);
    CU(api.memcpy_dtoh(got, dx, n * 4));
    CHECK(check_close("layernorm in place", got, want, n, 1e-6, 1e-5));
    api.mem_free(dx), api.mem_free(dg), api.mem_free(db), api.mem_free(dout);
    api.module_unload(mod);
    free(x), free(g), free(b), free(want), free(got);
}

static void test_bias_gelu(int sm, int rows, int cols) {
    char name[64];
    snprintf(name, sizeof name, "bias_gelu_n%d", cols);
    CUmodule mod;
    CUfunction f = load(gen_bias_gelu(sm, cols), name, &mod);
    size_t n = (size_t)rows * cols;
    float *x = rand_vec(n, 4.0f), *b = rand_vec((size_t)cols, 1.0f);
    float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        want[i] = x[i] + b[i % (size_t)cols];
    vm_gelu(want, n);
    CUdeviceptr dx = dev_upload(x, n * 4), db = dev_upload(b, (size_t)cols * 4);
    unsigned un = (unsigned)n;
    void *args[] = {&dx, &db, &un};
    launch(f, (unsigned)((n + KERNEL_EW_THREADS - 1) / KERNEL_EW_THREADS), KERNEL_EW_THREADS, args);
    CU(api.memcpy_dtoh(got, dx, n * 4));
    CHECK(check_close(name, got, want, n, 1e-6, 1e-5));
    api.mem_free(dx), api.mem_free(db);
    api.module_unload(mod);
    free(x), free(b), free(want), free(got);
}

static void test_f32_to_f16(int sm, size_t n) {
    CUmodule mod;
    CUfunction f = load(gen_f32_to_f16(sm), "f32_to_f16", &mod);
    float *x = rand_vec(n, 10.0f), *back = malloc(n * sizeof(float));
    uint16_t *h = malloc(n * 2);
    CUdeviceptr dx = dev_upload(x, n * 4), dh;
    CU(api.mem_alloc(&dh, n * 2));
    CU(api.memset_d8(dh, 0xff, n * 2)); /* NaN halves */
    unsigned un = (unsigned)n;
    void *args[] = {&dh, &dx, &un};
    launch(f, (unsigned)((n + KERNEL_EW_THREADS - 1) / KERNEL_EW_THREADS), KERNEL_EW_THREADS, args);
    CU(api.memcpy_dtoh(h, dh, n * 2));
    for (size_t i = 0; i < n; i++)
        back[i] = wc_f16_to_f32(h[i]);
    /* round to nearest: within half an f16 ulp (2^-11 relative) */
    CHECK(check_close("f32_to_f16", back, x, n, 1e-7, 1.0 / 2048));
    api.mem_free(dx), api.mem_free(dh);
    api.module_unload(mod);
    free(x), free(back), free(h);
}

static void test_embed(int sm, struct wc_backend *be, struct wc_stream *s, int c) {
    char name[64];
    snprintf(name, sizeof name, "embed_c%d", c);
    CUmodule mod;
    CUfunction f = load(gen_embed(sm, c), name, &mod);
    int n_vocab = 1000, n_ctx = 64, t_len = 7, pos0 = 11;
    float *e = rand_vec((size_t)n_vocab * c, 0.5f), *pos = rand_vec((size_t)n_ctx * c, 0.5f);
    uint16_t *eh = malloc((size_t)n_vocab * c * 2);
    for (size_t i = 0; i < (size_t)n_vocab * c; i++) { /* f16 bits of small normal values */
        uint32_t bits;
        memcpy(&bits, &e[i], 4);
        int ex = (int)((bits >> 23) & 0xff) - 112;
        eh[i] = ex <= 0 ? 0
                        : (uint16_t)(((bits >> 16) & 0x8000u) | ((uint32_t)ex << 10) |
                                     ((bits >> 13) & 0x3ffu));
    }
    int32_t tokens[7] = {0, 999, 5, 5, 123, 42, 777};
    struct wc_mat m;
    CHECK(be->ops->upload_mat(be, &m, eh, WC_F16, n_vocab, c) == 0);
    float *want = malloc((size_t)t_len * c * 4), *got = malloc((size_t)t_len * c * 4);
    s->be->ops->embed(s, want, tokens, t_len, &m, pos, pos0, c);
    CUdeviceptr dout = dev_poisoned((size_t)t_len * c), dtok = dev_upload(tokens, sizeof tokens);
    CUdeviceptr demb = dev_upload(eh, (size_t)n_vocab * c * 2);
    CUdeviceptr dpos = dev_upload(pos, (size_t)n_ctx * c * 4);
    unsigned upos0 = (unsigned)pos0;
    void *args[] = {&dout, &dtok, &demb, &dpos, &upos0};
    launch(f, (unsigned)t_len, KERNEL_LN_THREADS, args);
    CU(api.memcpy_dtoh(got, dout, (size_t)t_len * c * 4));
    CHECK(check_close(name, got, want, (size_t)t_len * c, 0, 0));
    api.mem_free(dout), api.mem_free(dtok), api.mem_free(demb), api.mem_free(dpos);
    api.module_unload(mod);
    free(e), free(pos), free(eh), free(want), free(got);
}

int main(void) {
    if (cuda_api_load(&api, err, sizeof err)) {
        printf("SKIP: %s\n", err);
        return TEST_SKIP;
    }
    struct cuda_device dev;
    if (cuda_device_open(&api, 0, &dev, err, sizeof err)) {
        printf("SKIP: %s\n", err);
        return TEST_SKIP;
    }
    int sm = dev.sm > 90 ? 90 : dev.sm; /* PTX for the newest target the generators know */
    printf("device: %s (sm_%d, %.1f GiB), kernels for sm_%d\n", dev.name, dev.sm,
           dev.total_mem / 1073741824.0, sm);
    CUcontext ctx;
    CU(api.primary_ctx_retain(&ctx, dev.dev));
    CU(api.ctx_set_current(ctx));

    struct wc_backend *be;
    struct wc_stream *s;
    CHECK(cpu_backend_new(&be, err, sizeof err) == 0);
    CHECK(be->ops->stream_new(be, 2, &s) == 0);
    const int widths[] = {384, 512, 768, 1024, 1280};
    for (int i = 0; i < 5; i++) {
        test_layernorm(sm, s, 37, widths[i]);
        test_bias_gelu(sm, 5, widths[i]);
        test_bias_gelu(sm, 3, 4 * widths[i]);
        test_embed(sm, be, s, widths[i]);
    }
    test_f32_to_f16(sm, 100003);
    be->ops->stream_free(s);
    be->ops->backend_free(be);
    api.primary_ctx_release(dev.dev);
    cuda_api_unload(&api);
    return TEST_RESULT();
}
