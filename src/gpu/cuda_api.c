/* cuda_api.c — see cuda_api.h. */
#include "gpu/cuda_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

int cuda_check(const struct cuda_api *api, CUresult r, const char *what, char *err,
               size_t err_size) {
    if (r == CUDA_SUCCESS)
        return 0;
    const char *name = NULL, *desc = NULL;
    if (api->get_error_name)
        api->get_error_name(r, &name);
    if (api->get_error_string)
        api->get_error_string(r, &desc);
    wc_errf(err, err_size, "%s: %s (%s)", what, name ? name : "CUDA error",
            desc ? desc : "no description");
    return -1;
}

void cuda_api_unload(struct cuda_api *api) {
    if (api->lib)
        dlclose(api->lib);
    memset(api, 0, sizeof *api);
}

/* The graph entry points, all or none: a driver without them runs steps as plain launches.
 * The names are the ones cuda.h 12+ selects (no per-thread-stream variants). */
static void load_graph_api(struct cuda_api *api) {
    struct {
        void **slot;
        const char *name;
    } syms[] = {
        {(void **)&api->stream_begin_capture, "cuStreamBeginCapture_v2"},
        {(void **)&api->stream_end_capture, "cuStreamEndCapture"},
        {(void **)&api->graph_instantiate, "cuGraphInstantiateWithFlags"},
        {(void **)&api->graph_launch, "cuGraphLaunch"},
        {(void **)&api->graph_exec_destroy, "cuGraphExecDestroy"},
        {(void **)&api->graph_destroy, "cuGraphDestroy"},
    };
    size_t n = sizeof syms / sizeof syms[0], found = 0;
    for (size_t i = 0; i < n; i++) {
        void *f = dlsym(api->lib, syms[i].name);
        memcpy(syms[i].slot, &f, sizeof f);
        found += f != NULL;
    }
    if (found != n)
        for (size_t i = 0; i < n; i++)
            memset(syms[i].slot, 0, sizeof(void *));
}

int cuda_api_load(struct cuda_api *api, char *err, size_t err_size) {
    memset(api, 0, sizeof *api);
    api->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!api->lib) {
        const char *why = dlerror();
        wc_errf(err, err_size, "no CUDA driver (%s)", why ? why : "libcuda.so.1 not found");
        return -1;
    }
    /* field, exported (versioned) name */
    struct {
        void **slot;
        const char *name;
    } syms[] = {
        {(void **)&api->init, "cuInit"},
        {(void **)&api->driver_get_version, "cuDriverGetVersion"},
        {(void **)&api->get_error_name, "cuGetErrorName"},
        {(void **)&api->get_error_string, "cuGetErrorString"},
        {(void **)&api->device_get_count, "cuDeviceGetCount"},
        {(void **)&api->device_get, "cuDeviceGet"},
        {(void **)&api->device_get_name, "cuDeviceGetName"},
        {(void **)&api->device_get_attribute, "cuDeviceGetAttribute"},
        {(void **)&api->device_total_mem, "cuDeviceTotalMem_v2"},
        {(void **)&api->primary_ctx_retain, "cuDevicePrimaryCtxRetain"},
        {(void **)&api->primary_ctx_release, "cuDevicePrimaryCtxRelease_v2"},
        {(void **)&api->ctx_set_current, "cuCtxSetCurrent"},
        {(void **)&api->ctx_get_current, "cuCtxGetCurrent"},
        {(void **)&api->ctx_synchronize, "cuCtxSynchronize"},
        {(void **)&api->stream_create, "cuStreamCreate"},
        {(void **)&api->stream_create_with_priority, "cuStreamCreateWithPriority"},
        {(void **)&api->ctx_get_stream_priority_range, "cuCtxGetStreamPriorityRange"},
        {(void **)&api->stream_destroy, "cuStreamDestroy_v2"},
        {(void **)&api->stream_synchronize, "cuStreamSynchronize"},
        {(void **)&api->mem_alloc, "cuMemAlloc_v2"},
        {(void **)&api->mem_free, "cuMemFree_v2"},
        {(void **)&api->memcpy_htod, "cuMemcpyHtoD_v2"},
        {(void **)&api->memcpy_dtoh, "cuMemcpyDtoH_v2"},
        {(void **)&api->memset_d8, "cuMemsetD8_v2"},
        {(void **)&api->memcpy_htod_async, "cuMemcpyHtoDAsync_v2"},
        {(void **)&api->memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2"},
        {(void **)&api->memset_d8_async, "cuMemsetD8Async"},
        {(void **)&api->module_load_data_ex, "cuModuleLoadDataEx"},
        {(void **)&api->module_unload, "cuModuleUnload"},
        {(void **)&api->module_get_function, "cuModuleGetFunction"},
        {(void **)&api->func_set_attribute, "cuFuncSetAttribute"},
        {(void **)&api->launch_kernel, "cuLaunchKernel"},
        {(void **)&api->event_create, "cuEventCreate"},
        {(void **)&api->event_record, "cuEventRecord"},
        {(void **)&api->event_synchronize, "cuEventSynchronize"},
        /* cuda.h 12.8+ maps the name to _v2 (same signature); older drivers have only v1 */
        {(void **)&api->event_elapsed_time,
         dlsym(api->lib, "cuEventElapsedTime_v2") ? "cuEventElapsedTime_v2" : "cuEventElapsedTime"},
        {(void **)&api->event_destroy, "cuEventDestroy_v2"},
        {(void **)&api->mem_host_alloc, "cuMemHostAlloc"},
        {(void **)&api->mem_free_host, "cuMemFreeHost"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        /* dlsym returns void *; the driver's entry points are functions of the declared types */
        void *f = dlsym(api->lib, syms[i].name);
        if (!f) {
            wc_errf(err, err_size, "CUDA driver too old: %s missing", syms[i].name);
            cuda_api_unload(api);
            return -1;
        }
        memcpy(syms[i].slot, &f, sizeof f);
    }
    load_graph_api(api);
    void *ex = dlsym(api->lib, "cuLaunchKernelEx");
    memcpy(&api->launch_kernel_ex, &ex, sizeof ex);
    void *occ = dlsym(api->lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    memcpy(&api->occupancy_max_blocks, &occ, sizeof occ);
    if (cuda_check(api, api->init(0), "cuInit", err, err_size)) {
        cuda_api_unload(api);
        return -1;
    }
    return 0;
}

int cuda_device_open(const struct cuda_api *api, int index, struct cuda_device *out, char *err,
                     size_t err_size) {
    int n = 0, major = 0, minor = 0;
    memset(out, 0, sizeof *out);
    if (cuda_check(api, api->device_get_count(&n), "cuDeviceGetCount", err, err_size))
        return -1;
    if (index < 0 || index >= n) {
        wc_errf(err, err_size, "no CUDA device %d (%d found)", index, n);
        return -1;
    }
    if (cuda_check(api, api->device_get(&out->dev, index), "cuDeviceGet", err, err_size) ||
        cuda_check(api, api->device_get_name(out->name, (int)sizeof out->name, out->dev),
                   "cuDeviceGetName", err, err_size) ||
        cuda_check(api,
                   api->device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                             out->dev),
                   "cuDeviceGetAttribute", err, err_size) ||
        cuda_check(api,
                   api->device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                             out->dev),
                   "cuDeviceGetAttribute", err, err_size) ||
        cuda_check(api, api->device_total_mem(&out->total_mem, out->dev), "cuDeviceTotalMem", err,
                   err_size))
        return -1;
    out->sm = 10 * major + minor;
    return 0;
}

int cuda_module_load_ptx(const struct cuda_api *api, const char *ptx, CUmodule *out, char *err,
                         size_t err_size) {
    char log[4096] = "";
    CUjit_option opt[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[] = {log, (void *)(size_t)sizeof log};
    CUresult r = api->module_load_data_ex(out, ptx, 2, opt, val);
    if (r == CUDA_SUCCESS)
        return 0;
    cuda_check(api, r, "cuModuleLoadDataEx", err, err_size);
    size_t n = strlen(err);
    if (log[0] && n + 3 < err_size) {
        for (char *c = log; *c; c++) /* keep the message on one line */
            if (*c == '\n')
                *c = ' ';
        snprintf(err + n, err_size - n, ": %s", log);
    }
    return -1;
}
