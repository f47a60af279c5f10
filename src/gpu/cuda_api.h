/*
 * cuda_api.h — the CUDA driver API, loaded with dlopen at run time so that one whisper-c binary
 * runs on machines with and without a GPU. Only cuda.h's types are used at build time; no CUDA
 * library is linked.
 *
 * Entry points are resolved by their versioned names (cuMemAlloc_v2, …), the ones cuda.h's
 * macros select, and called through this table. Every call that can fail goes through
 * cuda_check(), which turns a CUresult into a message naming the call and the CUDA error.
 */
#ifndef WC_CUDA_API_H
#define WC_CUDA_API_H

#include <cuda.h>
#include <stddef.h>

struct cuda_api {
    void *lib; /* dlopen handle of libcuda.so.1 */
    CUresult (*init)(unsigned int);
    CUresult (*driver_get_version)(int *);
    CUresult (*get_error_name)(CUresult, const char **);
    CUresult (*get_error_string)(CUresult, const char **);
    CUresult (*device_get_count)(int *);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_get_name)(char *, int, CUdevice);
    CUresult (*device_get_attribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*device_total_mem)(size_t *, CUdevice);
    CUresult (*primary_ctx_retain)(CUcontext *, CUdevice);
    CUresult (*primary_ctx_release)(CUdevice);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_synchronize)(void);
    CUresult (*stream_create)(CUstream *, unsigned int);
    CUresult (*stream_create_with_priority)(CUstream *, unsigned int, int);
    CUresult (*ctx_get_stream_priority_range)(int *, int *);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*stream_synchronize)(CUstream);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*memcpy_htod)(CUdeviceptr, const void *, size_t);
    CUresult (*memcpy_dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*memcpy_htod_async)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*memcpy_dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*memset_d8_async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*module_load_data_ex)(CUmodule *, const void *, unsigned int, CUjit_option *,
                                    void **);
    CUresult (*module_unload)(CUmodule);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*func_set_attribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
    /* launches with attributes (dependent launch); NULL before CUDA 12.0: plain launches */
    CUresult (*launch_kernel_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
    /* CTAs of a kernel an SM holds at once, for cooperative grids; NULL if missing */
    CUresult (*occupancy_max_blocks)(int *, CUfunction, int, size_t);
    /* events, for bench's stage times */
    CUresult (*event_create)(CUevent *, unsigned int);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*event_synchronize)(CUevent);
    CUresult (*event_elapsed_time)(float *, CUevent, CUevent);
    CUresult (*event_destroy)(CUevent);
    /* page-locked host memory, for the streams' staging */
    CUresult (*mem_host_alloc)(void **, size_t, unsigned int);
    CUresult (*mem_free_host)(void *);
    /* stream capture into graphs (decoder steps); NULL where the driver lacks one of them
     * (cuGraphInstantiateWithFlags: 11.4+), and then steps run as plain launches */
    CUresult (*stream_begin_capture)(CUstream, CUstreamCaptureMode);
    CUresult (*stream_end_capture)(CUstream, CUgraph *);
    CUresult (*graph_instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*graph_launch)(CUgraphExec, CUstream);
    CUresult (*graph_exec_destroy)(CUgraphExec);
    CUresult (*graph_destroy)(CUgraph);
};

/* Loads libcuda.so.1 and resolves every entry point, then cuInit(0). Returns 0, or -1 with a
 * one-line reason in err ("no CUDA driver (libcuda.so.1: cannot open shared object file)",
 * "cuInit: CUDA_ERROR_NO_DEVICE ..."); *api is then unloaded. */
int cuda_api_load(struct cuda_api *api, char *err, size_t err_size);
void cuda_api_unload(struct cuda_api *api);

/* 0 if r == CUDA_SUCCESS; otherwise -1 and "what: CUDA_ERROR_X (description)" in err. */
int cuda_check(const struct cuda_api *api, CUresult r, const char *what, char *err,
               size_t err_size);

/* A device to run on: its handle, name, compute capability (e.g. 90) and memory. */
struct cuda_device {
    CUdevice dev;
    char name[128];
    int sm;
    size_t total_mem;
};
/* Opens device `index` (0-based). Returns 0 or -1 with err. */
int cuda_device_open(const struct cuda_api *api, int index, struct cuda_device *out, char *err,
                     size_t err_size);

/* JIT-compiles PTX text for the current context. On failure returns -1 and puts the JIT's
 * error log (the first lines) in err. */
int cuda_module_load_ptx(const struct cuda_api *api, const char *ptx, CUmodule *out, char *err,
                         size_t err_size);

#endif /* WC_CUDA_API_H */
