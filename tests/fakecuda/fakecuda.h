/* fakecuda.h — what the fake libcuda.so.1 (fakecuda.c) offers its fake cuBLAS (fakecublas.c). */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <cuda.h>
#include <stddef.h>

/* 1 if [p, p + n) lies inside one live device allocation; else 0, and a "fakecuda:" line. */
int fakecuda_range_ok(const void *p, size_t n, const char *what);
/* The context's sticky error (CUDA_SUCCESS until an injected fault inside a kernel). */
CUresult fakecuda_sticky(void);
/* Broken rules counted so far (a test's own check, through dlsym). */
long fakecuda_violations(void);

#endif /* FAKECUDA_H */
