/* common.c — see common.h. */
#include "common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "blas_reexec.h"
#include "cpu/blas_core.h"
#include "libwhisperc.h"
#include "util.h"

int test_failures = 0;

#ifdef __GLIBC__
/* Where OpenBLAS misjudged the CPU, a test program has it choose again as the library does when
 * it is loaded (src/cpu/blas_core.c; this constructor may run before the library's), else starts
 * again with OPENBLAS_CORETYPE set, as the whisper-c command does (blas_reexec.h): on such a
 * CPU the golden and batch tests would run the encoder about 15 times slower. glibc passes
 * main's arguments to constructors. (This file's object is in every test that checks anything:
 * CHECK counts into test_failures.) */
__attribute__((constructor)) static void test_blas_core(int argc, char **argv) {
    (void)argc;
    if (!blas_core_reselect())
        cli_blas_reexec(argv);
}
#endif

const char *shared_path(const char *rel) {
    static char buf[4096];
    const char *root = getenv("WHISPERC_SHARED");
    if (root && *root)
        snprintf(buf, sizeof buf, "%s/%s", root, rel);
    else
        snprintf(buf, sizeof buf, "%s/../shared/%s", WC_SOURCE_ROOT, rel);
    return buf;
}

const char *shared_path_or_skip(const char *rel) {
    const char *p = shared_path(rel);
    struct stat st;
    if (stat(p, &st) != 0) {
        fprintf(stderr, "SKIP: shared data not found: %s (set WHISPERC_SHARED)\n", p);
        exit(TEST_SKIP);
    }
    return p;
}

float *shared_audio(const char *rel, int *n) {
    float *pcm = NULL;
    char err[256];
    if (whisperc_load_audio(shared_path_or_skip(rel), &pcm, n, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return pcm;
}

float *ljspeech_clips(int first, int count, int *n) {
    float *all = NULL;
    *n = 0;
    for (int i = 0; i < count; i++) {
        char rel[64];
        int m;
        snprintf(rel, sizeof rel, "audio/ljspeech-dev/wavs/LJ001-%04d.flac", first + 1 + i);
        float *p = shared_audio(rel, &m);
        float *grown = realloc(all, ((size_t)*n + (size_t)m) * sizeof(float));
        if (!grown)
            abort();
        all = grown;
        memcpy(all + *n, p, (size_t)m * sizeof(float));
        *n += m;
        free(p);
    }
    return all;
}

/* .npy v1/v2/v3: magic, version, header length, a Python dict literal, then the data. */
int npy_load(const char *path, struct npy *out) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return -1;
    }
    unsigned char magic[8];
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0) {
        fprintf(stderr, "%s: not a .npy file\n", path);
        fclose(f);
        return -1;
    }
    uint32_t hlen = 0;
    if (magic[6] == 1) {
        unsigned char b[2];
        if (fread(b, 1, 2, f) != 2)
            goto bad;
        hlen = b[0] | (b[1] << 8);
    } else {
        unsigned char b[4];
        if (fread(b, 1, 4, f) != 4)
            goto bad;
        hlen = b[0] | (b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
    }
    char *hdr = calloc(1, hlen + 1);
    if (!hdr || fread(hdr, 1, hlen, f) != hlen) {
        free(hdr);
        goto bad;
    }
    int is_f8 = strstr(hdr, "'<f8'") != NULL;
    if (!is_f8 && !strstr(hdr, "'<f4'")) {
        fprintf(stderr, "%s: dtype is not <f4 or <f8: %s\n", path, hdr);
        free(hdr);
        fclose(f);
        return -1;
    }
    if (strstr(hdr, "'fortran_order': True")) {
        fprintf(stderr, "%s: fortran order unsupported\n", path);
        free(hdr);
        fclose(f);
        return -1;
    }
    char *sp = strstr(hdr, "'shape': (");
    if (!sp) {
        free(hdr);
        goto bad;
    }
    sp += strlen("'shape': (");
    out->n = 1;
    while (*sp && *sp != ')' && out->n_dims < 4) {
        char *end;
        long long v = strtoll(sp, &end, 10);
        if (end == sp)
            break;
        out->shape[out->n_dims++] = v;
        out->n *= (size_t)v;
        sp = end;
        while (*sp == ',' || *sp == ' ')
            sp++;
    }
    free(hdr);
    out->data = malloc(out->n * sizeof(float) + 1);
    if (!out->data)
        goto bad;
    if (is_f8) {
        for (size_t i = 0; i < out->n; i++) {
            double d;
            if (fread(&d, sizeof d, 1, f) != 1)
                goto bad;
            out->data[i] = (float)d;
        }
    } else if (fread(out->data, sizeof(float), out->n, f) != out->n) {
        goto bad;
    }
    fclose(f);
    return 0;
bad:
    fprintf(stderr, "%s: truncated or malformed .npy\n", path);
    fclose(f);
    npy_free(out);
    return -1;
}

void npy_free(struct npy *a) {
    free(a->data);
    memset(a, 0, sizeof *a);
}

double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d == d) || isinf(d))
            return INFINITY;
        if (d > m)
            m = d;
    }
    return m;
}

double rel_l2(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        if (!isfinite(a[i]))
            return INFINITY;
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

int check_close(const char *name, const float *a, const float *b, size_t n, double atol,
                double rtol) {
    size_t bad = 0;
    double maxd = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        int ok = isfinite(a[i]) && d <= atol + rtol * fabs((double)b[i]);
        if (!ok) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: got %.7g, want %.7g\n", name, i, a[i], b[i]);
            bad++;
        }
        if (!(d <= maxd))
            maxd = d;
    }
    printf("%s: %s (n=%zu, max abs diff %.3g, rel L2 %.3g%s)\n", name, bad ? "NOT OK" : "OK", n,
           maxd, rel_l2(a, b, n), bad ? ", mismatches found" : "");
    if (bad)
        test_failures++;
    return bad == 0;
}

static uint64_t rng_next(struct test_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float test_rng_uniform(struct test_rng *r) {
    return (float)((double)(rng_next(r) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

float test_rng_normal(struct test_rng *r) {
    double u1 = ((double)(rng_next(r) >> 11) + 0.5) * 0x1.0p-53;
    double u2 = (double)(rng_next(r) >> 11) * 0x1.0p-53;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint16_t *test_round_f16(float *x, size_t n) {
    uint16_t *h = malloc(n * sizeof *h);
    for (size_t i = 0; h && i < n; i++)
        x[i] = wc_f16_to_f32(h[i] = wc_f32_to_f16(x[i]));
    return h;
}

int test_draws_at_boundary(const float *row, int n_vocab, float temperature, double u, int a,
                           int b) {
    if (a < 0 || b < 0 || a >= n_vocab || b >= n_vocab || row[a] == -INFINITY ||
        row[b] == -INFINITY)
        return 0;
    double m = -INFINITY, total = 0, acc = 0, inv_t = 1.0 / temperature;
    for (int i = 0; i < n_vocab; i++)
        m = row[i] > m ? row[i] : m;
    int lo = a < b ? a : b;
    for (int i = 0; i < n_vocab; i++) {
        double w = row[i] > -INFINITY ? exp((row[i] - m) * inv_t) : 0;
        total += w;
        acc += i <= lo ? w : 0;
    }
    return fabs(acc - u * total) <= 1e-5 * total;
}

unsigned char *test_wav16(const int16_t *x, uint32_t n, uint16_t channels, uint32_t rate,
                          size_t *size) {
    uint32_t data = n * channels * 2u, byte_rate = rate * channels * 2u;
    uint16_t align = (uint16_t)(channels * 2u), bits = 16, pcm = 1;
    uint32_t riff = 36 + data, fmt_size = 16;
    unsigned char *w = malloc(44 + (size_t)data);
    if (!w)
        return NULL;
    memcpy(w, "RIFF", 4), memcpy(w + 4, &riff, 4), memcpy(w + 8, "WAVEfmt ", 8);
    memcpy(w + 16, &fmt_size, 4), memcpy(w + 20, &pcm, 2), memcpy(w + 22, &channels, 2);
    memcpy(w + 24, &rate, 4), memcpy(w + 28, &byte_rate, 4), memcpy(w + 32, &align, 2);
    memcpy(w + 34, &bits, 2), memcpy(w + 36, "data", 4), memcpy(w + 40, &data, 4);
    memcpy(w + 44, x, data);
    *size = 44 + (size_t)data;
    return w;
}
