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

struct sym {
    void **slot;
    const char *name;
    int optional;
};

/* dlopens the first of names[n] found and resolves syms[n_syms]: the handle, or NULL with a
 * one-line reason in err ("what" names the library). */
static void *load_lib(const char *what, const char *const *names, size_t n, const struct sym *syms,
                      size_t n_syms, char *err, size_t err_size) {
    void *lib = NULL;
    const char *why = NULL;
    for (size_t i = 0; i < n && !lib; i++) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib && i == 0) /* the first failure is the informative one */
            why = dlerror();
    }
    if (!lib) {
        wc_errf(err, err_size, "no %s (%s; also tried .12 and .11)", what,
                why ? why : "library not found");
        return NULL;
    }
    for (size_t i = 0; i < n_syms; i++) {
        /* dlsym returns void *; the entry points are functions of the declared types */
        void *f = dlsym(lib, syms[i].name);
        if (!f && !syms[i].optional) {
            wc_errf(err, err_size, "%s too old: %s missing", what, syms[i].name);
            dlclose(lib);
            return NULL;
        }
        memcpy(syms[i].slot, &f, sizeof f);
    }
    return lib;
}

int cublas_api_load(struct cublas_api *api, char *err, size_t err_size) {
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"};
    memset(api, 0, sizeof *api);
    const struct sym syms[] = {
        {(void **)&api->create, "cublasCreate_v2", 0},
        {(void **)&api->destroy, "cublasDestroy_v2", 0},
        {(void **)&api->set_stream, "cublasSetStream_v2", 0},
        {(void **)&api->set_math_mode, "cublasSetMathMode", 0},
        {(void **)&api->gemm_ex, "cublasGemmEx", 0},
        {(void **)&api->get_status_name, "cublasGetStatusName", 1},
        {(void **)&api->get_status_string, "cublasGetStatusString", 1},
    };
    api->lib = load_lib("cuBLAS", names, 3, syms, sizeof syms / sizeof syms[0], err, err_size);
    if (!api->lib)
        memset(api, 0, sizeof *api);
    return api->lib ? 0 : -1;
}

void cublaslt_api_unload(struct cublaslt_api *api) {
    if (api->lib)
        dlclose(api->lib);
    memset(api, 0, sizeof *api);
}

int cublaslt_api_load(struct cublaslt_api *api, char *err, size_t err_size) {
    static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                        "libcublasLt.so.11"};
    memset(api, 0, sizeof *api);
    const struct sym syms[] = {
        {(void **)&api->create, "cublasLtCreate", 0},
        {(void **)&api->destroy, "cublasLtDestroy", 0},
        {(void **)&api->desc_create, "cublasLtMatmulDescCreate", 0},
        {(void **)&api->desc_destroy, "cublasLtMatmulDescDestroy", 0},
        {(void **)&api->desc_set, "cublasLtMatmulDescSetAttribute", 0},
        {(void **)&api->layout_create, "cublasLtMatrixLayoutCreate", 0},
        {(void **)&api->layout_destroy, "cublasLtMatrixLayoutDestroy", 0},
        {(void **)&api->pref_create, "cublasLtMatmulPreferenceCreate", 0},
        {(void **)&api->pref_destroy, "cublasLtMatmulPreferenceDestroy", 0},
        {(void **)&api->pref_set, "cublasLtMatmulPreferenceSetAttribute", 0},
        {(void **)&api->heuristic, "cublasLtMatmulAlgoGetHeuristic", 0},
        {(void **)&api->matmul, "cublasLtMatmul", 0},
    };
    api->lib = load_lib("cuBLASLt", names, 3, syms, sizeof syms / sizeof syms[0], err, err_size);
    if (!api->lib)
        memset(api, 0, sizeof *api);
    return api->lib ? 0 : -1;
}
