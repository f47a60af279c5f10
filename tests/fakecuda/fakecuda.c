/*
 * fakecuda.c — a stand-in libcuda.so.1 for tests on machines without a GPU. It implements the
 * driver entry points whisper-c's CUDA backend resolves (src/gpu/cuda_api.c) over host memory:
 * device memory is mmap'd, copies are memcpy, streams run in order on the calling thread, graphs
 * record and replay their copies. Kernels do not run (a launch computes nothing), so outputs are
 * meaningless, but for one thing: the logits pick kernels (logits_pick_*, logits_topk_pick_*)
 * write zeros, token 0 with log-probability 0, so that the host keeps decoding in range and
 * timed dry runs (bench --throughput) go through. What the fake checks is the host side of the
 * backend, which is what fails when a GPU is out of memory or a kernel faults:
 *
 *   - every copy and memset lies inside one live allocation, every free names one;
 *   - every pointer parameter of a launch (a .u64 param the PTX converts with cvta.to.global) is
 *     0 or points into a live allocation; grid and block shapes are within the limits;
 *   - a launch with attributes (cuLaunchKernelEx) has a shape within the same limits and no
 *     attribute but programmatic stream serialization, and that only for a kernel
 *     whose text waits for the kernel before (griddepcontrol.wait: else it could read what that
 *     kernel has not written yet), and cooperative (alone or with that) over a 1-D grid of no
 *     more CTAs than cuOccupancyMaxActiveBlocksPerMultiprocessor (FAKE_CTAS_PER_SM) x 132 SMs;
 *   - nothing synchronises a stream while it is being captured;
 *   - PTX loads only if it has a .version and the named .entry exists.
 *
 * A broken rule returns the error a driver would (CUDA_ERROR_INVALID_VALUE, …) and prints one
 * line starting "fakecuda:" on stderr. Faults are injected through the environment:
 *
 *   FAKECUDA_DEVICES=n        devices (default 1; 0: cuInit fails with CUDA_ERROR_NO_DEVICE)
 *   FAKECUDA_MEM_MB=n         device memory (default 81559, an H100's); cuMemAlloc past it fails
 *                             with CUDA_ERROR_OUT_OF_MEMORY
 *   FAKECUDA_FAIL_KERNEL=p[:async|:hang][@n]
 *                             the n-th (default 1st) launch of a kernel whose name starts with p
 *                             fails: at once with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, or with
 *                             :async as a fault inside the kernel would — the launch succeeds
 *                             and every later call returns CUDA_ERROR_ILLEGAL_ADDRESS (sticky) —
 *                             or with :hang as a kernel that never ends: the launch succeeds,
 *                             and the next synchronisation (stream, event, context, blocking
 *                             copy) never returns, after a line "fakecuda: hanging" on stderr
 *   FAKECUDA_FAIL_STREAM=1    cuStreamCreate fails with CUDA_ERROR_OUT_OF_MEMORY (a device too
 *                             full for a stream's resources); =2 only for the second stream
 *                             made and later ones (a state's second stream)
 *   FAKECUDA_NO_PDL_CAPTURE=1 a dependent launch (cuLaunchKernelEx with programmatic stream
 *                             serialization) while capturing fails as before CUDA 12.3, with
 *                             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and spoils the capture
 *   FAKECUDA_NO_PDL=1         every dependent launch fails with CUDA_ERROR_NOT_SUPPORTED
 *   FAKECUDA_NO_COOP=1        every cooperative launch fails with CUDA_ERROR_NOT_SUPPORTED;
 *                             =capture: only while capturing, and it spoils the capture;
 *                             =early: only one with programmatic stream serialization too
 *   FAKECUDA_REPORT=1         at exit, one line of counts (launches, copies, graphs, peak memory,
 *                             rule violations, allocations still live); =2 also the launches
 *                             of each kernel, most first
 *
 * Test code standing in for a process-wide driver, so its state is process-wide too.
 */
#include <cuda.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fakecuda.h"

#define MAX_PARAMS       160
#define FAKE_SMS         132 /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, an H100's */
#define FAKE_CTAS_PER_SM 2   /* what the occupancy query says of any kernel */

struct fake_alloc {
    uintptr_t base;
    size_t size, mapped;
    struct fake_alloc *next;
};

struct fake_entry { /* one .entry of a module */
    char name[128];
    int n_params;
    int param_size[MAX_PARAMS]; /* bytes */
    char is_ptr[MAX_PARAMS];
    int max_dyn_smem;
    int grid_dep; /* the module's text waits for the kernel before (griddepcontrol.wait) */
};

struct CUmod_st {
    int n_entries;
    struct fake_entry *entries;
};

enum node_kind { NODE_COPY, NODE_SET, NODE_KERNEL };
struct fake_node {
    enum node_kind kind;
    int dev_dst; /* a copy's device side: dst (else src) */
    void *dst;
    const void *src;
    size_t n;
    unsigned char value;
    const struct fake_entry *fn;
    uint64_t args[MAX_PARAMS]; /* pointer params by value, as a graph keeps them */
    unsigned gx;               /* a kernel's grid x: a pick kernel's rows */
};

struct CUgraph_st {
    int n, cap;
    struct fake_node *nodes;
    int invalid; /* a capture a refused call spoiled: nothing more records, its end fails */
};
struct CUgraphExec_st {
    struct CUgraph_st g;
};
struct CUstream_st {
    struct CUgraph_st *capture; /* non-NULL while capturing */
    int priority;               /* within [FAKE_PRIORITY_GREATEST, FAKE_PRIORITY_LEAST] */
};
struct CUevent_st {
    int recorded;
};
struct CUctx_st {
    int refs;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct fake_alloc *allocs;
static size_t mem_total, mem_used, mem_peak;
static int n_devices = 1, inited;
static atomic_int sticky; /* a CUresult: a fault inside a kernel spoils the context */
static char fail_prefix[128];
static int fail_async, fail_at = 1, fail_seen;
static int fail_hang;              /* FAKECUDA_FAIL_KERNEL=p:hang */
static atomic_int hanging;         /* the launch that hangs was made */
static int no_pdl_capture;         /* FAKECUDA_NO_PDL_CAPTURE=1 */
static int no_pdl;                 /* FAKECUDA_NO_PDL=1 */
static int fail_stream;            /* FAKECUDA_FAIL_STREAM=1 (every stream) or 2 (2nd on) */
static int n_streams_made;         /* (under mu) */
static int n_streams_low;          /* of those, at FAKE_PRIORITY_LEAST (under mu) */
static atomic_int fail_host_alloc; /* FAKECUDA_FAIL_HOSTALLOC=N: the first N cuMemHostAlloc */
static int no_coop;                /* FAKECUDA_NO_COOP=1 (1), =capture (2), =early (3) */
static unsigned coop_most; /* the largest cooperative grid launched (FAKECUDA_REPORT=2 says) */
static long n_launch, n_copy, n_graph_launch, n_violation;
static struct CUctx_st primary;
/* The calling thread's current context: NULL, the primary one, or `foreign`, which
 * cuCtxCreate makes (a program's own context, as a test holds one around its calls). */
static _Thread_local CUcontext current;
static struct CUctx_st foreign;

/* FAKECUDA_REPORT=2: launches per kernel name (the host's launch structure: what a step costs) */
#define MAX_NAMES 512
struct kernel_count {
    char name[128];
    long n;
};
static struct kernel_count per_kernel[MAX_NAMES];
static int n_names;

static void count_kernel(const char *name) { /* under mu */
    for (int i = 0; i < n_names; i++)
        if (!strcmp(per_kernel[i].name, name)) {
            per_kernel[i].n++;
            return;
        }
    if (n_names < MAX_NAMES) {
        snprintf(per_kernel[n_names].name, sizeof per_kernel[n_names].name, "%s", name);
        per_kernel[n_names++].n = 1;
    }
}

static int by_count(const void *a, const void *b) {
    long x = ((const struct kernel_count *)a)->n, y = ((const struct kernel_count *)b)->n;
    return (x < y) - (x > y);
}

static void report_kernels(void) {
    qsort(per_kernel, (size_t)n_names, sizeof per_kernel[0], by_count);
    for (int i = 0; i < n_names; i++)
        fprintf(stderr, "fakecuda: %10ld %s\n", per_kernel[i].n, per_kernel[i].name);
    if (coop_most)
        fprintf(stderr, "fakecuda: cooperative grids of at most %u CTAs\n", coop_most);
}

static void report(void) {
    long live = 0;
    for (struct fake_alloc *a = allocs; a; a = a->next)
        live++;
    fprintf(stderr,
            "fakecuda: %ld launches, %ld copies, %ld graph launches, peak %zu MiB, %ld violations, "
            "%ld allocations live, %d streams made (%d at the lowest priority)\n",
            n_launch, n_copy, n_graph_launch, mem_peak >> 20, n_violation, live, n_streams_made,
            n_streams_low);
}

static void configure(void) {
    const char *e = getenv("FAKECUDA_DEVICES");
    n_devices = e ? atoi(e) : 1;
    e = getenv("FAKECUDA_MEM_MB");
    mem_total = (size_t)(e ? atoll(e) : 81559) << 20;
    e = getenv("FAKECUDA_FAIL_KERNEL");
    if (e && *e) {
        snprintf(fail_prefix, sizeof fail_prefix, "%s", e);
        char *at = strchr(fail_prefix, '@');
        if (at)
            *at = '\0', fail_at = atoi(at + 1) > 0 ? atoi(at + 1) : 1;
        char *colon = strchr(fail_prefix, ':');
        if (colon) {
            fail_async = strcmp(colon + 1, "async") == 0;
            fail_hang = strcmp(colon + 1, "hang") == 0;
            *colon = '\0';
        }
    }
    e = getenv("FAKECUDA_FAIL_STREAM");
    fail_stream = e ? atoi(e) : 0;
    e = getenv("FAKECUDA_FAIL_HOSTALLOC");
    atomic_store(&fail_host_alloc, e ? atoi(e) : 0);
    e = getenv("FAKECUDA_NO_PDL_CAPTURE");
    no_pdl_capture = e && *e == '1';
    e = getenv("FAKECUDA_NO_PDL");
    no_pdl = e && *e == '1';
    e = getenv("FAKECUDA_NO_COOP");
    no_coop = !e                          ? 0
              : *e == '1'                 ? 1
              : strcmp(e, "capture") == 0 ? 2
              : strcmp(e, "early") == 0   ? 3
                                          : 0;
    e = getenv("FAKECUDA_REPORT");
    if (e && (*e == '1' || *e == '2'))
        atexit(report);
    if (e && *e == '2')
        atexit(report_kernels); /* runs first: the counts above the totals */
}

/* A broken rule: one line on stderr, counted. Caller holds mu. */
static CUresult violation(CUresult r, const char *fmt, ...) {
    char line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    n_violation++;
    fprintf(stderr, "fakecuda: %s\n", line);
    return r;
}

/* The allocation holding [p, p + n), or NULL. Caller holds mu. */
static struct fake_alloc *find(uintptr_t p, size_t n) {
    for (struct fake_alloc *a = allocs; a; a = a->next)
        if (p >= a->base && p - a->base <= a->size && n <= a->size - (p - a->base))
            return a;
    return NULL;
}

int fakecuda_range_ok(const void *p, size_t n, const char *what) {
    pthread_mutex_lock(&mu);
    int ok = find((uintptr_t)p, n) != NULL;
    if (!ok)
        violation(CUDA_ERROR_INVALID_VALUE, "%s: [%p, +%zu) is outside every allocation", what, p,
                  n);
    pthread_mutex_unlock(&mu);
    return ok;
}

CUresult fakecuda_sticky(void) { return (CUresult)atomic_load(&sticky); }

long fakecuda_violations(void) {
    pthread_mutex_lock(&mu);
    long n = n_violation;
    pthread_mutex_unlock(&mu);
    return n;
}

/* A call that works in the calling thread's current context, made while the primary one is not
 * current: on a real driver it would have used the caller's context (another device's), or
 * failed with none. */
static CUresult need_ctx(const char *what) {
    if (current == &primary)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&mu);
    CUresult r = violation(CUDA_ERROR_INVALID_CONTEXT, "%s with %s current", what,
                           current ? "another context" : "no context");
    pthread_mutex_unlock(&mu);
    return r;
}

/* A call that waits for the device: after a launch that hangs, it never returns (pause: a
 * signal handler runs, and may end the process, as with a real hung kernel). */
static CUresult wait_device(void) {
    if (atomic_load(&hanging)) {
        fputs("fakecuda: hanging\n", stderr);
        for (;;)
            pause();
    }
    return fakecuda_sticky();
}

// ---------------------------------------------------------------------------------------------
// init, errors, devices, context

CUresult cuInit(unsigned int flags) {
    (void)flags;
    pthread_mutex_lock(&mu);
    if (!inited)
        configure(), inited = 1;
    pthread_mutex_unlock(&mu);
    return n_devices > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion(int *v) {
    *v = 13000;
    return CUDA_SUCCESS;
}

static const struct {
    CUresult r;
    const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

CUresult cuGetErrorName(CUresult r, const char **s) {
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        if (errors[i].r == r)
            return *s = errors[i].name, CUDA_SUCCESS;
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char **s) {
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        if (errors[i].r == r)
            return *s = errors[i].text, CUDA_SUCCESS;
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetCount(int *n) {
    *n = n_devices;
    return inited ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuDeviceGet(CUdevice *d, int i) {
    if (i < 0 || i >= n_devices)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = i;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *s, int len, CUdevice d) {
    (void)d;
    snprintf(s, (size_t)len, "fakecuda (no GPU: kernels do not run)");
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    (void)d;
    switch (a) { /* an H100's */
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = FAKE_SMS; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
    (void)d;
    *bytes = mem_total;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    (void)d;
    pthread_mutex_lock(&mu);
    primary.refs++;
    pthread_mutex_unlock(&mu);
    *c = &primary;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    (void)d;
    pthread_mutex_lock(&mu);
    CUresult r = primary.refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (primary.refs > 0 && --primary.refs == 0) {
        for (struct fake_alloc *a = allocs; a; a = a->next) /* the driver would free them */
            violation(CUDA_SUCCESS, "context release: %p (%zu bytes) still allocated",
                      (void *)a->base, a->size);
        atomic_store(&sticky, CUDA_SUCCESS); /* a fresh context */
    }
    pthread_mutex_unlock(&mu);
    return r;
}

CUresult cuCtxSetCurrent(CUcontext c) {
    if (c && c != &primary && c != &foreign)
        return CUDA_ERROR_INVALID_VALUE;
    current = c;
    return c == &primary ? fakecuda_sticky() : CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext *c) {
    *c = current;
    return CUDA_SUCCESS;
}
CUresult cuCtxCreate_v2(CUcontext *c, unsigned int flags, CUdevice d) {
    (void)flags, (void)d;
    *c = current = &foreign; /* made current, as the driver does */
    return CUDA_SUCCESS;
}
CUresult cuCtxDestroy_v2(CUcontext c) {
    if (c != &foreign)
        return CUDA_ERROR_INVALID_VALUE;
    if (current == c)
        current = NULL;
    return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize(void) {
    CUresult r = need_ctx("cuCtxSynchronize");
    return r ? r : wait_device();
}

// ---------------------------------------------------------------------------------------------
// streams and memory

/* The device's stream priorities, as an H100's: 0 the lowest (the default), -5 the highest. */
#define FAKE_PRIORITY_LEAST    0
#define FAKE_PRIORITY_GREATEST (-5)

CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
    if (need_ctx("cuCtxGetStreamPriorityRange"))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (least)
        *least = FAKE_PRIORITY_LEAST;
    if (greatest)
        *greatest = FAKE_PRIORITY_GREATEST;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int priority) {
    (void)flags;
    if (need_ctx("cuStreamCreate"))
        return *s = NULL, CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&mu);
    int refuse = fail_stream == 1 || (fail_stream == 2 && n_streams_made >= 1);
    pthread_mutex_unlock(&mu);
    if (refuse)
        return *s = NULL, CUDA_ERROR_OUT_OF_MEMORY;
    *s = calloc(1, sizeof **s);
    if (!*s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* as the driver does, a priority outside the range is clamped to it */
    (*s)->priority = priority > FAKE_PRIORITY_LEAST      ? FAKE_PRIORITY_LEAST
                     : priority < FAKE_PRIORITY_GREATEST ? FAKE_PRIORITY_GREATEST
                                                         : priority;
    pthread_mutex_lock(&mu);
    n_streams_made++;
    n_streams_low += (*s)->priority == FAKE_PRIORITY_LEAST;
    pthread_mutex_unlock(&mu);
    return fakecuda_sticky();
}

CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
    return cuStreamCreateWithPriority(s, flags, FAKE_PRIORITY_LEAST);
}

CUresult cuStreamDestroy_v2(CUstream s) {
    if (s && s->capture)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    free(s);
    return CUDA_SUCCESS;
}

static CUresult not_capturing(CUstream s, const char *what) {
    if (!s || !s->capture)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&mu);
    CUresult r = violation(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "%s on a capturing stream", what);
    pthread_mutex_unlock(&mu);
    return r;
}

CUresult cuStreamSynchronize(CUstream s) {
    CUresult r = not_capturing(s, "cuStreamSynchronize");
    return r ? r : wait_device();
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
    if (need_ctx("cuMemAlloc"))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fakecuda_sticky())
        return fakecuda_sticky();
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    CUresult r = CUDA_SUCCESS;
    size_t mapped = (bytes + 4095) & ~(size_t)4095;
    struct fake_alloc *a = NULL;
    void *m = MAP_FAILED;
    if (mapped > mem_total - mem_used)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else if (!(a = malloc(sizeof *a)) ||
             (m = mmap(NULL, mapped, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)) == MAP_FAILED)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        *a = (struct fake_alloc){(uintptr_t)m, bytes, mapped, allocs};
        allocs = a;
        mem_used += mapped;
        mem_peak = mem_used > mem_peak ? mem_used : mem_peak;
        *p = (CUdeviceptr)a->base;
    } else
        free(a);
    pthread_mutex_unlock(&mu);
    return r;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    pthread_mutex_lock(&mu);
    CUresult r = CUDA_SUCCESS;
    struct fake_alloc **pa = &allocs;
    while (*pa && (*pa)->base != (uintptr_t)p)
        pa = &(*pa)->next;
    if (!*pa)
        r = violation(CUDA_ERROR_INVALID_VALUE, "cuMemFree: %p is not an allocation", (void *)p);
    else {
        struct fake_alloc *a = *pa;
        *pa = a->next;
        munmap((void *)a->base, a->mapped);
        mem_used -= a->mapped;
        free(a);
    }
    pthread_mutex_unlock(&mu);
    return r;
}

static CUresult node_add(struct CUgraph_st *g, const struct fake_node *n) {
    if (g->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        struct fake_node *p = realloc(g->nodes, (size_t)cap * sizeof *p);
        if (!p)
            return CUDA_ERROR_OUT_OF_MEMORY;
        g->nodes = p, g->cap = cap;
    }
    g->nodes[g->n++] = *n;
    return CUDA_SUCCESS;
}

/* A copy or memset with its device side checked (again on each replay: the memory may have
 * gone since the capture). */
static CUresult copy_run(const struct fake_node *c, const char *what) {
    pthread_mutex_lock(&mu);
    const void *dev = c->dev_dst ? c->dst : c->src;
    CUresult r = find((uintptr_t)dev, c->n)
                     ? CUDA_SUCCESS
                     : violation(CUDA_ERROR_INVALID_VALUE,
                                 "%s: [%p, +%zu) is outside every allocation", what, dev, c->n);
    n_copy++;
    pthread_mutex_unlock(&mu);
    if (r)
        return r;
    if (c->kind == NODE_SET)
        memset(c->dst, c->value, c->n);
    else
        memcpy(c->dst, c->src, c->n);
    return CUDA_SUCCESS;
}

/* Done now, or recorded in the stream's capture. */
static CUresult copy(CUstream s, void *dst, const void *src, size_t n, int dev_dst, int set,
                     unsigned char value, const char *what) {
    if (need_ctx(what))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fakecuda_sticky())
        return fakecuda_sticky();
    struct fake_node node = {.kind = set ? NODE_SET : NODE_COPY,
                             .dev_dst = dev_dst,
                             .dst = dst,
                             .src = src,
                             .n = n,
                             .value = value};
    if (s && s->capture) {
        pthread_mutex_lock(&mu);
        CUresult r = find((uintptr_t)(dev_dst ? dst : src), n)
                         ? CUDA_SUCCESS
                         : violation(CUDA_ERROR_INVALID_VALUE,
                                     "%s (captured): [%p, +%zu) is outside every allocation", what,
                                     dev_dst ? dst : src, n);
        pthread_mutex_unlock(&mu);
        return r ? r : node_add(s->capture, &node);
    }
    return copy_run(&node, what);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) {
    return copy(NULL, (void *)d, h, n, 1, 0, 0, "cuMemcpyHtoD");
}
CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) {
    CUresult r = wait_device();
    return r ? r : copy(NULL, h, (const void *)d, n, 0, 0, 0, "cuMemcpyDtoH");
}
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
    return copy(NULL, (void *)d, NULL, n, 1, 1, v, "cuMemsetD8");
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s) {
    return copy(s, (void *)d, h, n, 1, 0, 0, "cuMemcpyHtoDAsync");
}
CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s) {
    return copy(s, h, (const void *)d, n, 0, 0, 0, "cuMemcpyDtoHAsync");
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
    return copy(s, (void *)d, NULL, n, 1, 1, v, "cuMemsetD8Async");
}

CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned int flags) {
    (void)flags;
    if (need_ctx("cuMemHostAlloc"))
        return *p = NULL, CUDA_ERROR_INVALID_CONTEXT;
    if (atomic_load(&fail_host_alloc) > 0 && atomic_fetch_sub(&fail_host_alloc, 1) > 0)
        return *p = NULL, CUDA_ERROR_OUT_OF_MEMORY;
    *p = malloc(bytes ? bytes : 1);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFreeHost(void *p) {
    free(p);
    return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// modules: the .entry lines and their parameters, read from the PTX text

/* Whether param `name` is loaded into a register that is then converted to a global address:
 * "ld.param.u64 %rdN, [name];" followed by "cvta.to.global.u64 %rdN, %rdN;". */
static int param_is_pointer(const char *body, const char *name) {
    char pat[160];
    snprintf(pat, sizeof pat, ", [%s];", name);
    for (const char *p = strstr(body, pat); p; p = strstr(p + 1, pat)) {
        const char *line = p;
        while (line > body && line[-1] != '\n')
            line--;
        char reg[32], cvta[96];
        if (sscanf(line, " ld.param.u64 %31[^,]", reg) != 1)
            continue;
        const char *next = strchr(p, '\n');
        if (!next)
            return 0;
        next += 1 + strspn(next + 1, " \t");
        snprintf(cvta, sizeof cvta, "cvta.to.global.u64 %s, %s;", reg, reg);
        if (strncmp(next, cvta, strlen(cvta)) == 0)
            return 1;
    }
    return 0;
}

static int parse_entry(const char *at, struct fake_entry *e) {
    memset(e, 0, sizeof *e);
    if (sscanf(at, ".entry %127[A-Za-z0-9_](", e->name) != 1)
        return -1;
    const char *p = strchr(at, '('), *end = p ? strchr(p, ')') : NULL;
    if (!end)
        return -1;
    const char *body = strchr(end, '{');
    const char *q = p;
    while ((q = strstr(q, ".param")) && q < end) {
        char type[16], name[96];
        if (e->n_params == MAX_PARAMS || sscanf(q, ".param .%15s %95[A-Za-z0-9_]", type, name) != 2)
            return -1;
        int i = e->n_params++, bits = atoi(type + 1); /* u64, s32, f16, b8, ... */
        if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
            return -1;
        e->param_size[i] = bits / 8;
        e->is_ptr[i] = e->param_size[i] == 8 && body && param_is_pointer(body, name);
        q += 6;
    }
    e->max_dyn_smem = 48 * 1024;
    return 0;
}

CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned int n, CUjit_option *opt,
                            void **val) {
    if (need_ctx("cuModuleLoadDataEx"))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fakecuda_sticky())
        return fakecuda_sticky();
    const char *ptx = image;
    char *log = NULL;
    size_t log_size = 0;
    for (unsigned i = 0; i < n; i++) {
        if (opt[i] == CU_JIT_ERROR_LOG_BUFFER)
            log = val[i];
        if (opt[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            log_size = (size_t)(uintptr_t)val[i];
    }
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (const char *p = strstr(ptx, ".entry "); p; p = strstr(p + 1, ".entry "))
        m->n_entries++;
    m->entries = calloc((size_t)(m->n_entries ? m->n_entries : 1), sizeof *m->entries);
    int i = 0, bad = !m->entries || !strstr(ptx, ".version") || m->n_entries == 0;
    for (const char *p = strstr(ptx, ".entry "); p && !bad; p = strstr(p + 1, ".entry ")) {
        bad = parse_entry(p, &m->entries[i]) != 0;
        m->entries[i++].grid_dep = strstr(ptx, "griddepcontrol.wait") != NULL;
    }
    if (bad) {
        if (log && log_size)
            snprintf(log, log_size, "fakecuda: not PTX this fake can read (.version, .entry)");
        free(m->entries), free(m);
        return CUDA_ERROR_INVALID_PTX;
    }
    *out = m;
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m) {
    if (!m)
        return CUDA_ERROR_INVALID_HANDLE;
    free(m->entries), free(m);
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    for (int i = 0; i < m->n_entries; i++)
        if (strcmp(m->entries[i].name, name) == 0)
            return *f = (CUfunction)(void *)&m->entries[i], CUDA_SUCCESS;
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
    struct fake_entry *e = (struct fake_entry *)(void *)f;
    if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (v < 0 || v > 232448)
            return CUDA_ERROR_INVALID_VALUE;
        e->max_dyn_smem = v;
    }
    return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// launches

/* Checks a launch's pointer arguments (taken by value) and applies an injected fault. */
/* The picks a logits pick kernel of gx rows writes to its first parameter (struct
 * wc_greedy_pick, 8 bytes): 1 a row, or k (logits_topk_pick_v<V>_k<k>); 0 for other kernels. */
static size_t pick_bytes(const struct fake_entry *e, unsigned gx) {
    const char *k = strstr(e->name, "_k");
    if (strncmp(e->name, "logits_pick_v", 13) == 0)
        return (size_t)gx * 8;
    if (strncmp(e->name, "logits_topk_pick_v", 18) == 0 && k)
        return (size_t)gx * (size_t)atoi(k + 2) * 8;
    return 0;
}

static CUresult kernel_run(const struct fake_entry *e, const uint64_t *args, unsigned gx) {
    if (fakecuda_sticky())
        return fakecuda_sticky();
    pthread_mutex_lock(&mu);
    CUresult r = CUDA_SUCCESS;
    n_launch++;
    count_kernel(e->name);
    for (int i = 0; i < e->n_params && !r; i++)
        if (e->is_ptr[i] && args[i] && !find((uintptr_t)args[i], 0))
            r = violation(CUDA_ERROR_INVALID_VALUE,
                          "launch of %s: pointer parameter %d (%p) is not device memory", e->name,
                          i, (void *)(uintptr_t)args[i]);
    if (!r && fail_prefix[0] && strncmp(e->name, fail_prefix, strlen(fail_prefix)) == 0 &&
        ++fail_seen == fail_at) {
        if (fail_hang)
            atomic_store(&hanging, 1);
        else if (fail_async) /* the launch itself succeeds; what follows fails */
            atomic_store(&sticky, CUDA_ERROR_ILLEGAL_ADDRESS);
        else
            r = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    }
    size_t pb = pick_bytes(e, gx);
    if (!r && pb && args[0]) {
        if (find((uintptr_t)args[0], pb))
            memset((void *)(uintptr_t)args[0], 0, pb);
        else
            r = violation(CUDA_ERROR_INVALID_VALUE,
                          "launch of %s: %zu bytes of picks at %p: out "
                          "of bounds",
                          e->name, pb, (void *)(uintptr_t)args[0]);
    }
    pthread_mutex_unlock(&mu);
    return r;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
                        void **extra) {
    const struct fake_entry *e = (const struct fake_entry *)(void *)f;
    if (need_ctx("cuLaunchKernel"))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fakecuda_sticky())
        return fakecuda_sticky();
    if (!e || extra || gx == 0 || gy == 0 || gz == 0 || gy > 65535 || gz > 65535 || bx == 0 ||
        by == 0 || bz == 0 || (size_t)bx * by * bz > 1024 || (int)smem > e->max_dyn_smem ||
        (e->n_params > 0 && !params)) {
        pthread_mutex_lock(&mu);
        CUresult r = violation(CUDA_ERROR_INVALID_VALUE,
                               "launch of %s: grid %ux%ux%u, block %ux%ux%u, %u bytes of shared "
                               "memory: out of bounds",
                               e ? e->name : "(null)", gx, gy, gz, bx, by, bz, smem);
        pthread_mutex_unlock(&mu);
        return r;
    }
    struct fake_node node = {.kind = NODE_KERNEL, .fn = e, .gx = gx};
    for (int i = 0; i < e->n_params; i++)
        memcpy(&node.args[i], params[i], (size_t)e->param_size[i]);
    if (s && s->capture) /* checked when the graph runs */
        return node_add(s->capture, &node);
    return kernel_run(e, node.args, gx);
}

/* cuLaunchKernel's checks and effect, after the attributes' own */
CUresult cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra) {
    const struct fake_entry *e = (const struct fake_entry *)(void *)f;
    if (need_ctx("cuLaunchKernelEx"))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fakecuda_sticky())
        return fakecuda_sticky();
    int ok = cfg && e && (cfg->numAttrs == 0 || cfg->attrs), coop = 0;
    for (unsigned i = 0; ok && i < cfg->numAttrs; i++) {
        if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
            coop = cfg->attrs[i].value.cooperative != 0;
            ok = cfg->gridDimY == 1 && cfg->gridDimZ == 1 &&
                 cfg->gridDimX <= FAKE_CTAS_PER_SM * FAKE_SMS;
            continue;
        }
        ok = cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
             (cfg->attrs[i].value.programmaticStreamSerializationAllowed == 0 || e->grid_dep);
    }
    if (!ok) {
        pthread_mutex_lock(&mu);
        CUresult r = violation(CUDA_ERROR_INVALID_VALUE,
                               "cuLaunchKernelEx of %s: an attribute other than programmatic "
                               "stream serialization, or that for a kernel that does not wait, "
                               "or a cooperative grid of more CTAs than the device holds",
                               e ? e->name : "(null)");
        pthread_mutex_unlock(&mu);
        return r;
    }
    int pdl = 0; /* (the attributes' values are a union: only this id's says so) */
    for (unsigned i = 0; i < cfg->numAttrs; i++)
        pdl |= cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
               cfg->attrs[i].value.programmaticStreamSerializationAllowed != 0;
    if (coop && (no_coop == 1 || (no_coop == 3 && pdl)))
        return CUDA_ERROR_NOT_SUPPORTED;
    if (coop && no_coop == 2 && cfg->hStream && cfg->hStream->capture) {
        cfg->hStream->capture->invalid = 1;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (coop) {
        pthread_mutex_lock(&mu);
        coop_most = cfg->gridDimX > coop_most ? cfg->gridDimX : coop_most;
        pthread_mutex_unlock(&mu);
    }
    if (pdl && no_pdl)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (pdl && no_pdl_capture && cfg->hStream && cfg->hStream->capture) {
        cfg->hStream->capture->invalid = 1; /* a driver before 12.3 */
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return cuLaunchKernel(f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX,
                          cfg->blockDimY, cfg->blockDimZ, cfg->sharedMemBytes, cfg->hStream, params,
                          extra);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block, size_t smem) {
    (void)smem;
    if (!n || !f || block < 1 || block > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    *n = FAKE_CTAS_PER_SM;
    return fakecuda_sticky();
}

// ---------------------------------------------------------------------------------------------
// events

CUresult cuEventCreate(CUevent *e, unsigned int flags) {
    (void)flags;
    if (need_ctx("cuEventCreate"))
        return *e = NULL, CUDA_ERROR_INVALID_CONTEXT;
    *e = calloc(1, sizeof **e);
    return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuEventRecord(CUevent e, CUstream s) {
    (void)s;
    e->recorded = 1;
    return fakecuda_sticky();
}
CUresult cuEventSynchronize(CUevent e) {
    (void)e;
    return wait_device();
}
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
    *ms = 0.001f;
    return a->recorded && b->recorded ? fakecuda_sticky() : CUDA_ERROR_INVALID_HANDLE;
}
CUresult cuEventDestroy_v2(CUevent e) {
    free(e);
    return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// graphs: a capture records the stream's copies and launches; a launch replays them

CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
    (void)mode;
    if (!s || s->capture)
        return CUDA_ERROR_INVALID_VALUE;
    s->capture = calloc(1, sizeof *s->capture);
    return s->capture ? fakecuda_sticky() : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuStreamEndCapture(CUstream s, CUgraph *g) {
    if (!s || !s->capture)
        return CUDA_ERROR_INVALID_VALUE;
    *g = s->capture;
    s->capture = NULL;
    if ((*g)->invalid) {
        cuGraphDestroy(*g);
        *g = NULL;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    return fakecuda_sticky();
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags) {
    (void)flags;
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->g.n = x->g.cap = g->n;
    x->g.nodes = malloc((size_t)(g->n ? g->n : 1) * sizeof *g->nodes);
    if (!x->g.nodes)
        return free(x), CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(x->g.nodes, g->nodes, (size_t)g->n * sizeof *g->nodes);
    *out = x;
    return fakecuda_sticky();
}

CUresult cuGraphLaunch(CUgraphExec x, CUstream s) {
    if (need_ctx("cuGraphLaunch"))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fakecuda_sticky())
        return fakecuda_sticky();
    CUresult r = not_capturing(s, "cuGraphLaunch");
    pthread_mutex_lock(&mu);
    n_graph_launch++;
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < x->g.n && !r; i++) {
        const struct fake_node *n = &x->g.nodes[i];
        r = n->kind == NODE_KERNEL ? kernel_run(n->fn, n->args, n->gx) : copy_run(n, "graph copy");
    }
    return r;
}

CUresult cuGraphExecDestroy(CUgraphExec x) {
    if (x)
        free(x->g.nodes);
    free(x);
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph g) {
    if (g)
        free(g->nodes);
    free(g);
    return CUDA_SUCCESS;
}
