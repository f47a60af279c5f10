/*
 * kernel_cache.c — the CUDA backend's kernels: each generated (src/kernels) and JIT-loaded the
 * first time an op needs it, then kept for the life of the backend; and the launch helper that
 * names the kernel in every error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_internal.h"
#include "kernels/kernels.h"
#include "libwhisperc.h"
#include "util.h"

static char *generate(int sm, enum cuda_kernel_kind kind, int a, int b, uint64_t c) {
    switch (kind) {
    case CK_LAYERNORM: return gen_layernorm(sm, a, b);
    case CK_F32_TO_F16: return gen_f32_to_f16(sm);
    case CK_EMBED: return gen_embed(sm, a);
    case CK_BIAS_ACT: return gen_bias_act(sm, a, b);
    case CK_IM2COL: return gen_im2col(sm, a, b);
    case CK_ATTENTION: return gen_attention(sm, a, b, (int)c);
    case CK_GATHER: return gen_attention_gather(sm, a, b);
    case CK_SCORES: return gen_attention_scores(sm, a, b, (int)c);
    case CK_GEMV: return gen_gemv_f16(sm, a, b);
    case CK_ROWS: return gen_attention_rows(sm, a, b, (int)c);
    case CK_LOGITS: return gen_logits_part(sm, a);
    case CK_LOGITS_PICK: return gen_logits_pick(sm, a);
    case CK_TOPK: return gen_logits_topk_part(sm, a, b);
    case CK_TOPK_PICK: return gen_logits_topk_pick(sm, a, b);
    case CK_SAMPLE: return gen_logits_sample_part(sm, a);
    case CK_SAMPLE_PICK: return gen_logits_sample_pick(sm, a);
    case CK_SCATTER: return gen_rows_scatter(sm, a);
    case CK_ATTN_TC: return gen_attention_tc(sm, a, b, (int)c);
    case CK_GEMV_TC: return gen_gemv_tc(sm, a, b, (int)(c & 0xff), (int)(c >> 8));
    case CK_TRANSPOSE: return gen_transpose(sm);
    case CK_ROWS_TC: return gen_attention_rows_tc(sm, a, b);
    case CK_CHAIN: {
        struct kernel_chain_link links[KERNEL_CHAIN_MAX_LINKS];
        int n = b & 15;
        for (int i = 0; i < n && i < KERNEL_CHAIN_MAX_LINKS; i++)
            links[i] = cuda_chain_link_of(a, b >> 4, (int)(c >> (8 * i) & 255));
        return n <= KERNEL_CHAIN_MAX_LINKS ? gen_gemv_chain(sm, 1, n, links) : NULL;
    }
    }
    return NULL;
}

static const char *kind_name(enum cuda_kernel_kind kind) {
    static const char *const names[] = {"layernorm",
                                        "f32_to_f16",
                                        "embed",
                                        "bias_act",
                                        "im2col",
                                        "attention",
                                        "attn_gather",
                                        "attn_scores",
                                        "gemv_f16",
                                        "attn_rows",
                                        "logits_part",
                                        "rows_scatter",
                                        "attn_tc",
                                        "logits_pick",
                                        "logits_topk_part",
                                        "logits_topk_pick",
                                        "logits_sample_part",
                                        "logits_sample_pick",
                                        "gemv_tc",
                                        "transpose",
                                        "attn_rows_tc",
                                        "gemv_chain"};
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

/* The .entry name in the PTX text (".visible .entry NAME("), the name cuModuleGetFunction
 * wants; taken from the text so this file never restates the generators' naming. */
static int entry_name(const char *ptx, char *name, size_t size) {
    const char *e = strstr(ptx, ".entry ");
    const char *end = e ? strchr(e, '(') : NULL;
    if (!e || !end || (size_t)(end - e - 7) >= size)
        return -1;
    memcpy(name, e + 7, (size_t)(end - e - 7));
    name[end - e - 7] = '\0';
    return 0;
}

static int load(struct cuda_model *m, struct cuda_kernel *k, char *err, size_t err_size) {
    char *ptx = generate(m->sm, k->kind, k->a, k->b, k->c);
    if (!ptx) {
        wc_errf(err, err_size, "cuda: no %s kernel for shape (%d, %d, %llu) on sm_%d",
                kind_name(k->kind), k->a, k->b, (unsigned long long)k->c, m->sm);
        return WHISPERC_ERR_UNSUPPORTED;
    }
    int rc = 0;
    char why[512];
    k->grid_dep = strstr(ptx, "griddepcontrol.wait") != NULL;
    if (entry_name(ptx, k->name, sizeof k->name)) {
        wc_errf(err, err_size, "cuda: %s kernel text has no .entry", kind_name(k->kind));
        rc = WHISPERC_ERR_BACKEND;
    } else if (cuda_module_load_ptx(&m->cu, ptx, &k->mod, why, sizeof why)) {
        wc_errf(err, err_size, "cuda: kernel %s: %s", k->name, why);
        rc = WHISPERC_ERR_BACKEND;
    } else if (cuda_check(&m->cu, m->cu.module_get_function(&k->fn, k->mod, k->name),
                          "cuModuleGetFunction", why, sizeof why)) {
        wc_errf(err, err_size, "cuda: kernel %s: %s", k->name, why);
        m->cu.module_unload(k->mod);
        rc = WHISPERC_ERR_BACKEND;
    } else if (k->kind == CK_CHAIN) { /* a cooperative grid's size: what the SMs hold at once */
        int per_sm = 0;
        if (!m->cu.occupancy_max_blocks || m->n_sm < 1)
            snprintf(why, sizeof why, "no occupancy query");
        else if (!cuda_check(&m->cu,
                             m->cu.occupancy_max_blocks(&per_sm, k->fn, KERNEL_GEMV_THREADS, 0),
                             "cuOccupancyMaxActiveBlocksPerMultiprocessor", why, sizeof why) &&
                 per_sm < 1)
            snprintf(why, sizeof why, "no CTA fits an SM");
        if (per_sm < 1) {
            wc_errf(err, err_size, "cuda: kernel %s: %s", k->name, why);
            m->cu.module_unload(k->mod);
            rc = WHISPERC_ERR_BACKEND;
        }
        k->coop_ctas = per_sm * m->n_sm;
    }
    free(ptx);
    return rc;
}

int cuda_kernel_cache_init(struct cuda_model *m) {
    memset(&m->kernels, 0, sizeof m->kernels);
    return pthread_mutex_init(&m->kernels.mu, NULL) ? -1 : 0;
}

void cuda_kernel_cache_free(struct cuda_model *m) {
    struct cuda_kernel_cache *c = &m->kernels;
    for (int i = 0; i < c->n; i++) {
        m->cu.module_unload(c->k[i]->mod);
        free(c->k[i]);
    }
    free(c->k);
    pthread_mutex_destroy(&c->mu);
    memset(c, 0, sizeof *c);
}

int cuda_kernel_find(struct cuda_model *m, enum cuda_kernel_kind kind, int a, int b, uint64_t c,
                     const struct cuda_kernel **out, char *err, size_t err_size) {
    struct cuda_kernel_cache *kc = &m->kernels;
    int rc = 0;
    *out = NULL;
    pthread_mutex_lock(&kc->mu);
    for (int i = 0; i < kc->n && !*out; i++) {
        const struct cuda_kernel *k = kc->k[i];
        if (k->kind == kind && k->a == a && k->b == b && k->c == c)
            *out = k;
    }
    if (!*out) {
        struct cuda_kernel *k = calloc(1, sizeof *k);
        if (kc->n == kc->cap && k) {
            int cap = kc->cap ? 2 * kc->cap : 16;
            struct cuda_kernel **grown = realloc(kc->k, (size_t)cap * sizeof *grown);
            if (grown) {
                kc->k = grown;
                kc->cap = cap;
            }
        }
        if (!k || kc->n == kc->cap) {
            wc_errf(err, err_size, "cuda: out of host memory loading a kernel");
            rc = WHISPERC_ERR_NO_MEMORY;
            free(k);
        } else {
            *k = (struct cuda_kernel){.kind = kind, .a = a, .b = b, .c = c};
            rc = load(m, k, err, err_size);
            if (rc)
                free(k);
            else
                *out = kc->k[kc->n++] = k;
        }
    }
    pthread_mutex_unlock(&kc->mu);
    return rc;
}

const struct cuda_kernel *cuda_kernel_get(struct wc_stream *s, enum cuda_kernel_kind kind, int a,
                                          int b, uint64_t c) {
    const struct cuda_kernel *k = NULL;
    char err[sizeof s->errmsg];
    int rc = cuda_kernel_find(cuda_stream(s)->m, kind, a, b, c, &k, err, sizeof err);
    if (rc)
        wc_stream_fail(s, rc, "%s", err);
    return k;
}

/* cuLaunchKernelEx of k on the stream with n launch attributes */
static CUresult launch_ex(const struct cuda_stream *cs, const struct cuda_kernel *k,
                          const unsigned grid[3], unsigned block, void **args,
                          CUlaunchAttribute *attrs, unsigned n) {
    CUlaunchConfig cfg = {.gridDimX = grid[0],
                          .gridDimY = grid[1],
                          .gridDimZ = grid[2],
                          .blockDimX = block,
                          .blockDimY = 1,
                          .blockDimZ = 1,
                          .hStream = cs->stream,
                          .attrs = attrs,
                          .numAttrs = n};
    return cs->m->cu.launch_kernel_ex(&cfg, k->fn, args, NULL);
}

/* k launched with programmatic stream serialization: it may start while the kernel before it
 * on the stream runs, and waits for it inside (cuda_internal.h dep_launch). A launch the
 * driver refuses with the attribute is made plainly, and outside a recording the stream stops
 * asking (inside one, the refusal may have spoiled the recording: graph_cuda.c decides). */
static CUresult dep_launch(struct cuda_stream *cs, const struct cuda_kernel *k,
                           const unsigned grid[3], unsigned block, void **args) {
    const struct cuda_model *m = cs->m;
    CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUresult r = launch_ex(cs, k, grid, block, args, &attr, 1);
    if (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_VALUE) {
        if (cs->graphs.mode != CUDA_GRAPH_CAPTURE) {
            cs->dep_launch = false;
            cuda_check(&m->cu, r, "off: the driver refused a dependent launch", cs->graphs.dep_why,
                       sizeof cs->graphs.dep_why);
        }
        r = m->cu.launch_kernel(k->fn, grid[0], grid[1], grid[2], block, 1, 1, 0, cs->stream, args,
                                NULL);
    }
    return r;
}

int cuda_launch_coop(struct wc_stream *s, const struct cuda_kernel *k, unsigned grid_x,
                     unsigned block, void **args) {
    struct cuda_stream *cs = cuda_stream(s);
    const struct cuda_api *cu = &cs->m->cu;
    if (s->err || !k)
        return 0;
    cs->last_kernel = k->name;
    if (cuda_graph_note(cs, (uint64_t)(uintptr_t)k->fn, grid_x | (uint64_t)1 << 32, block))
        return 0; /* a replay pass: the recording launches it */
    cs->last_in_graph = false;
    /* cooperative, and where the stream launches dependents early, that too (the kernel's text
     * waits for the one before); a driver that refuses the pair gets the first alone */
    CUlaunchAttribute attrs[2] = {{.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE},
                                  {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION}};
    attrs[0].value.cooperative = 1;
    attrs[1].value.programmaticStreamSerializationAllowed = 1;
    unsigned grid[3] = {grid_x, 1, 1};
    bool capture = cs->graphs.mode == CUDA_GRAPH_CAPTURE;
    bool early = cs->dep_launch && cs->chain_early && k->grid_dep;
    CUresult r = launch_ex(cs, k, grid, block, args, attrs, early ? 2 : 1);
    if (early && !capture && (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_VALUE)) {
        cs->chain_early = false;
        r = launch_ex(cs, k, grid, block, args, attrs, 1);
    }
    if (r != CUDA_SUCCESS &&
        (capture || r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_VALUE ||
         r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)) {
        cs->chain = false; /* the same launch would be refused again */
        cs->graphs.chain_failed |= capture;
        cuda_check(cu, r,
                   capture ? "off: a cooperative launch failed in a step graph"
                           : "off: the driver refused a cooperative launch",
                   cs->chain_why, sizeof cs->chain_why);
        return 1;
    }
    char what[192];
    if (r != CUDA_SUCCESS) {
        snprintf(what, sizeof what, "cuLaunchKernelEx(%s, cooperative)", k->name);
        cuda_stream_check(s, r, what);
    } else if (cs->m->sync_each_op) {
        snprintf(what, sizeof what, "kernel %s", k->name);
        cuda_stream_check(s, cu->stream_synchronize(cs->stream), what);
    }
    return 0;
}

void cuda_launch(struct wc_stream *s, const struct cuda_kernel *k, unsigned grid_x, unsigned grid_y,
                 unsigned block, void **args) {
    cuda_launch_3d(s, k, grid_x, grid_y, 1, block, args);
}

void cuda_launch_3d(struct wc_stream *s, const struct cuda_kernel *k, unsigned grid_x,
                    unsigned grid_y, unsigned grid_z, unsigned block, void **args) {
    struct cuda_stream *cs = cuda_stream(s);
    const struct cuda_api *cu = &cs->m->cu;
    char what[192];
    if (s->err || !k)
        return;
    if (grid_x == 0 || grid_y == 0 ||
        grid_z == 0) /* empty shapes: nothing to do (a zero grid is an error) */
        return;
    cs->last_kernel = k->name;
    if (cuda_graph_note(cs, (uint64_t)(uintptr_t)k->fn, grid_x | (uint64_t)grid_y << 32,
                        block | (uint64_t)grid_z << 32))
        return; /* a replay pass: the recording launches it */
    cs->last_in_graph = false;
    CUresult r = cs->dep_launch && k->grid_dep
                     ? dep_launch(cs, k, (unsigned[3]){grid_x, grid_y, grid_z}, block, args)
                     : cu->launch_kernel(k->fn, grid_x, grid_y, grid_z, block, 1, 1, 0, cs->stream,
                                         args, NULL);
    if (r != CUDA_SUCCESS) { /* named only then: no formatting a launch */
        snprintf(what, sizeof what, "%s(%s)",
                 cs->dep_launch && k->grid_dep ? "cuLaunchKernelEx" : "cuLaunchKernel", k->name);
        cuda_stream_check(s, r, what);
        return;
    }
    if (cs->m->sync_each_op) { /* a fault inside the kernel surfaces here, under its name */
        snprintf(what, sizeof what, "kernel %s", k->name);
        cuda_stream_check(s, cu->stream_synchronize(cs->stream), what);
    }
}
