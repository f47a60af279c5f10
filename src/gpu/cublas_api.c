/* cublas_api.c — see cublas_api.h. */
#include "gpu/cublas_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

int cublas_check(const struct cublas_api *api, cublasStatus_t s, const char *what, char *err,
                 size_t err_size) {
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    const char *name = api->get_status_name ? api->get_status_name(s) : NULL;
    const char *desc = api->get_status_string ? api->get_status_string(s) : NULL;
    if (name)
        wc_errf(err, err_size, "%s: %s (%s)", what, name, desc ? desc : "no description");
    else
        wc_errf(err, err_size, "%s: cuBLAS status %d", what, (int)s);
    return -1;
}

void cublas_api_unload(struct cublas_api *api) {
    if (api->lib)
        dlclose(api->lib);
    memset(api, 0, sizeof *api);
}

int cublas_api_load(struct cublas_api *api, char *err, size_t err_size) {
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"};
    memset(api, 0, sizeof *api);
    const char *why = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !api->lib; i++) {
        api->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!api->lib && i == 0) /* the first failure is the informative one */
            why = dlerror();
    }
    if (!api->lib) {
        wc_errf(err, err_size, "no cuBLAS (%s; also tried .12 and .11)",
                why ? why : "libcublas.so.13 not found");
        return -1;
    }
    struct {
        void **slot;
        const char *name;
        int optional;
    } syms[] = {
        {(void **)&api->create, "cublasCreate_v2", 0},
        {(void **)&api->destroy, "cublasDestroy_v2", 0},
        {(void **)&api->set_stream, "cublasSetStream_v2", 0},
        {(void **)&api->set_math_mode, "cublasSetMathMode", 0},
        {(void **)&api->gemm_ex, "cublasGemmEx", 0},
        {(void **)&api->get_status_name, "cublasGetStatusName", 1},
        {(void **)&api->get_status_string, "cublasGetStatusString", 1},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        /* dlsym returns void *; the entry points are functions of the declared types */
        void *f = dlsym(api->lib, syms[i].name);
        if (!f && !syms[i].optional) {
            wc_errf(err, err_size, "cuBLAS too old: %s missing", syms[i].name);
            cublas_api_unload(api);
            return -1;
        }
        memcpy(syms[i].slot, &f, sizeof f);
    }
    return 0;
}
