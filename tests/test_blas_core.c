/*
 * test_blas_core.c — OpenBLAS's kernels chosen again in the process (src/cpu/blas_core.c) where
 * it fell back to kernels older than the CPU. The test makes OpenBLAS fall back as Debian 12's
 * 0.3.21 does on a CPU it does not know, by the same two functions: it chooses again with
 * OPENBLAS_CORETYPE=Prescott. Then blas_core_reselect() must leave OpenBLAS on the advised core
 * (or Haswell's kernels, which an OpenBLAS built without AVX-512 ones gives for it), the
 * variable unset again, the products right before and after; a second call, a thread of the
 * program's own running, a variable set by the user and WHISPERC_BLAS_RESELECT=0 change nothing.
 * Exits 77 where there is nothing to choose: not x86-64, no AVX2 and FMA, or an OpenBLAS built for
 * one core (without the two functions).
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common.h"
#include "cpu/blas_core.h"
#include "libwhisperc.h"

/* OpenBLAS's own start (DYNAMIC_ARCH builds only), not in its header */
static void (*dynamic_quit)(void), (*dynamic_init)(void);

static void fall_back_to_prescott(void) {
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    dynamic_quit();
    dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");
}

/* a thread of the program's own, as an embedding program's may be in OpenBLAS */
static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;
static void *held(void *arg) {
    (void)arg;
    pthread_mutex_lock(&hold);
    pthread_mutex_unlock(&hold);
    return NULL;
}

/* C = A B (m x k by k x n) with OpenBLAS, against the same in double: the worst relative error */
static double product_error(int m, int n, int k, unsigned seed) {
    float *a = malloc(sizeof(float) * (size_t)m * k), *b = malloc(sizeof(float) * (size_t)k * n),
          *c = malloc(sizeof(float) * (size_t)m * n);
    srand(seed);
    for (int i = 0; i < m * k; i++)
        a[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < k * n; i++)
        b[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < m * n; i++)
        c[i] = NAN; /* poisoned */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    double worst = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double want = 0, mag = 0;
            for (int p = 0; p < k; p++) {
                want += (double)a[i * k + p] * b[p * n + j];
                mag += fabs((double)a[i * k + p] * b[p * n + j]);
            }
            double err = fabs(c[i * n + j] - want) / (mag > 0 ? mag : 1);
            worst = isnan(c[i * n + j]) ? INFINITY : (err > worst ? err : worst);
        }
    free(a);
    free(b);
    free(c);
    return worst;
}

int main(void) {
    const char *config = openblas_get_config();
    dynamic_quit = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
    dynamic_init = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
    if (!dynamic_quit || !dynamic_init) {
        printf("SKIP: OpenBLAS (%s) chooses no kernels\n", config);
        return TEST_SKIP;
    }
    unsetenv("WHISPERC_BLAS_RESELECT");
    unsetenv("OPENBLAS_CORETYPE");
    fall_back_to_prescott();
    const char *advice = whisperc_blas_coretype_advice();
    printf("OpenBLAS %s; on Prescott's kernels, the advice: %s\n", config,
           advice ? advice : "none");
    if (!advice) {
        printf("SKIP: nothing to choose here (not x86-64, no AVX2 and FMA, or one core built)\n");
        return TEST_SKIP;
    }
    CHECK(strcmp(whisperc_blas_core(), "Prescott") == 0);
    /* shapes of the encoder's products, and odd ones past every blocking's edge */
    CHECK(product_error(96, 384, 384, 1) < 1e-5 && product_error(37, 1029, 515, 2) < 1e-5);

    /* chosen again: the advised core, the variable unset again, the products right */
    char want[32];
    snprintf(want, sizeof want, "%s", advice);
    CHECK(blas_core_reselect());
    printf("chosen again: %s\n", whisperc_blas_core());
    CHECK(strcasecmp(whisperc_blas_core(), want) == 0 ||
          strcasecmp(whisperc_blas_core(), "Haswell") == 0);
    CHECK(getenv("OPENBLAS_CORETYPE") == NULL);
    CHECK(whisperc_blas_coretype_advice() == NULL);
    CHECK(product_error(96, 384, 384, 1) < 1e-5 && product_error(37, 1029, 515, 2) < 1e-5);
    CHECK(!blas_core_reselect()); /* nothing left to do */

    /* not while the program runs a thread of its own */
    fall_back_to_prescott();
    pthread_t t;
    pthread_mutex_lock(&hold);
    CHECK(pthread_create(&t, NULL, held, NULL) == 0);
    CHECK(!blas_core_reselect() && strcmp(whisperc_blas_core(), "Prescott") == 0);
    pthread_mutex_unlock(&hold);
    pthread_join(t, NULL);
    CHECK(blas_core_reselect() && strcmp(whisperc_blas_core(), "Prescott") != 0);

    /* the user's variable is never second-guessed, even "Prescott" */
    fall_back_to_prescott();
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    CHECK(!blas_core_reselect() && strcmp(whisperc_blas_core(), "Prescott") == 0);
    unsetenv("OPENBLAS_CORETYPE");
    /* WHISPERC_BLAS_RESELECT=0: OpenBLAS's choice kept (the model load warns instead) */
    setenv("WHISPERC_BLAS_RESELECT", "0", 1);
    CHECK(!blas_core_reselect() && strcmp(whisperc_blas_core(), "Prescott") == 0);
    CHECK(whisperc_blas_coretype_advice() != NULL);
    CHECK(product_error(64, 64, 64, 3) < 1e-5);
    return TEST_RESULT();
}
