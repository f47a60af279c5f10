/* ptx.c — see ptx.h. */
#include "kernels/ptx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void buf_vappend(struct ptx_buf *b, const char *fmt, va_list ap) {
    if (b->oom)
        return;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

static void buf_append(struct ptx_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    buf_vappend(b, fmt, ap);
    va_end(ap);
}

void ptx_begin(struct ptx_kernel *k, const char *name, int sm) {
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->sm = sm;
}

void ptx_occupancy(struct ptx_kernel *k, int threads, int min_ctas) {
    k->max_threads = threads;
    k->min_ctas = min_ctas;
}

const char *ptx_param(struct ptx_kernel *k, const char *type, const char *name) {
    char full[64];
    ptx_sym(k, full, sizeof full, name);
    buf_append(&k->params, "%s    .param .%s %s", k->n_params ? ",\n" : "", type, full);
    k->n_params++;
    return name;
}

void ptx_ld_param(struct ptx_kernel *k, const char *type, struct ptx_reg dst, const char *name) {
    char full[64];
    ptx_sym(k, full, sizeof full, name);
    ptx_ins(k, "ld.param.%s %s, [%s]", type, dst.s, full);
}

void ptx_sym(const struct ptx_kernel *k, char *dst, size_t n, const char *base) {
    snprintf(dst, n, "%s%s", k->phase ? k->phase->prefix : "", base);
}

const char *ptx_ld_act(const struct ptx_kernel *k, int nc) {
    return k->phase ? "ld.global.cg" : nc ? "ld.global.nc" : "ld.global";
}

void ptx_bar_sync(struct ptx_kernel *k) {
    if (k->phase && k->phase->threads)
        ptx_ins(k, "bar.sync 1, %d", k->phase->threads);
    else
        ptx_ins(k, "bar.sync 0");
}

void ptx_grid_sync(struct ptx_kernel *k, struct ptx_reg counter, int index) {
    struct ptx_reg tid = ptx_special(k, "%tid.x"), want = ptx_special(k, "%nctaid.x");
    struct ptx_reg seen = ptx_reg(k, PTX_B32), wait = ptx_reg(k, PTX_PRED);
    struct ptx_reg spin = ptx_label(k), done = ptx_label(k);
    ptx_ins(k, "mul.lo.u32 %s, %s, %d", want.s, want.s, index + 1);
    ptx_ins(k, "bar.sync 0"); /* the CTA's writes before thread 0's release */
    ptx_ins(k, "setp.ne.u32 %s, %s, 0", wait.s, tid.s);
    ptx_ins(k, "@%s bra %s", wait.s, done.s);
    ptx_ins(k, "red.release.gpu.global.add.u32 [%s], 1", counter.s);
    ptx_place(k, spin);
    ptx_ins(k, "ld.acquire.gpu.global.u32 %s, [%s]", seen.s, counter.s);
    ptx_ins(k, "setp.lt.u32 %s, %s, %s", wait.s, seen.s, want.s);
    ptx_ins(k, "@%s bra %s", wait.s, spin.s);
    ptx_place(k, done);
    ptx_ins(k, "bar.sync 0"); /* the others after thread 0's acquire */
}

static const char *const reg_prefix[PTX_N_TYPES] = {"%p", "%h", "%r", "%rd", "%f", "%fd"};
static const char *const reg_decl[PTX_N_TYPES] = {".pred", ".b16", ".b32", ".b64", ".f32", ".f64"};

struct ptx_reg ptx_reg(struct ptx_kernel *k, enum ptx_type t) {
    struct ptx_reg r;
    snprintf(r.s, sizeof r.s, "%s%d", reg_prefix[t], k->n_regs[t]++);
    return r;
}

struct ptx_reg ptx_label(struct ptx_kernel *k) {
    struct ptx_reg r;
    snprintf(r.s, sizeof r.s, "L%d", k->n_labels++);
    return r;
}

void ptx_place(struct ptx_kernel *k, struct ptx_reg label) {
    buf_append(&k->body, "%s:\n", label.s);
}

void ptx_ins(struct ptx_kernel *k, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    buf_append(&k->body, "    ");
    buf_vappend(&k->body, fmt, ap);
    buf_append(&k->body, ";\n");
    va_end(ap);
}

void ptx_raw(struct ptx_kernel *k, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    buf_vappend(&k->body, fmt, ap);
    va_end(ap);
}

static const char grid_dep_text[] = "    griddepcontrol.wait;\n"
                                    "    griddepcontrol.launch_dependents;\n";

void ptx_grid_dep_wait(struct ptx_kernel *k) {
    if (k->phase)
        return;
    if (k->sm >= 90 && !k->grid_dep_placed)
        ptx_raw(k, "%s", grid_dep_text);
    k->grid_dep_placed = 1;
}

void ptx_grid_dep_wait_at(struct ptx_kernel *k, struct ptx_reg at, struct ptx_reg past,
                          struct ptx_reg done) {
    ptx_place(k, at);
    ptx_grid_dep_wait(k);
    ptx_ins(k, "@%s bra %s", past.s, done.s);
}

void ptx_discard(struct ptx_kernel *k) {
    free(k->params.p);
    free(k->body.p);
    k->params.p = k->body.p = NULL;
}

char *ptx_end(struct ptx_kernel *k) {
    struct ptx_buf out = {0};
    /* PTX ISA 8.0 (CUDA 12.0): understood by every driver that runs sm_90. */
    buf_append(&out, "//\n// %s - generated by whisper-c (src/kernels)\n//\n", k->name);
    buf_append(&out, ".version 8.0\n.target sm_%d\n.address_size 64\n\n", k->sm);
    buf_append(&out, ".visible .entry %s(\n%s\n)\n", k->name, k->params.p ? k->params.p : "");
    if (k->max_threads > 0 && k->min_ctas > 0)
        buf_append(&out, ".maxntid %d, 1, 1\n.minnctapersm %d\n", k->max_threads, k->min_ctas);
    buf_append(&out, "{\n");
    for (int t = 0; t < PTX_N_TYPES; t++)
        if (k->n_regs[t])
            buf_append(&out, "    .reg %s %s<%d>;\n", reg_decl[t], reg_prefix[t], k->n_regs[t]);
    if (k->sm >= 90 && !k->grid_dep_placed)
        buf_append(&out, "%s", grid_dep_text);
    buf_append(&out, "%s    ret;\n}\n", k->body.p ? k->body.p : "");
    int oom = out.oom || k->params.oom || k->body.oom || k->bad;
    ptx_discard(k);
    if (oom) {
        free(out.p);
        return NULL;
    }
    return out.p;
}

struct ptx_reg ptx_f32(float v) {
    struct ptx_reg r;
    unsigned bits;
    memcpy(&bits, &v, sizeof bits);
    snprintf(r.s, sizeof r.s, "0f%08X", bits);
    return r;
}

struct ptx_reg ptx_special(struct ptx_kernel *k, const char *sreg) {
    struct ptx_reg r = ptx_reg(k, PTX_B32);
    const struct ptx_phase *ph = k->phase;
    if (ph && strstr(sreg, "ctaid")) { /* a phase's grid is virtual */
        int axis = sreg[strlen(sreg) - 1] - 'x';
        const char *v = sreg[1] == 'n' ? (axis == 2 ? ph->nctaid_z.s : "") : ph->ctaid[axis].s;
        if (axis < 0 || axis > 2 || !v[0])
            k->bad = 1; /* %nctaid.x / .y, or a virtual register the caller did not set */
        else
            sreg = v;
    }
    ptx_ins(k, "mov.u32 %s, %s", r.s, sreg);
    return r;
}

struct ptx_reg ptx_ld_ptr(struct ptx_kernel *k, const char *param) {
    struct ptx_reg r = ptx_reg(k, PTX_B64);
    ptx_ld_param(k, "u64", r, param);
    ptx_ins(k, "cvta.to.global.u64 %s, %s", r.s, r.s);
    return r;
}

struct ptx_reg ptx_addr(struct ptx_kernel *k, struct ptx_reg base, struct ptx_reg index,
                        int elem_size) {
    struct ptx_reg off = ptx_reg(k, PTX_B64), a = ptx_reg(k, PTX_B64);
    ptx_ins(k, "mul.wide.u32 %s, %s, %d", off.s, index.s, elem_size);
    ptx_ins(k, "add.s64 %s, %s, %s", a.s, base.s, off.s);
    return a;
}

void ptx_warp_reduce(struct ptx_kernel *k, struct ptx_reg v, const char *op) {
    struct ptx_reg t = ptx_reg(k, PTX_F32);
    for (int lane = 16; lane >= 1; lane /= 2) {
        ptx_ins(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1", t.s, v.s, lane);
        ptx_ins(k, "%s.f32 %s, %s, %s", op, v.s, v.s, t.s);
    }
}

void ptx_exp(struct ptx_kernel *k, struct ptx_reg dst, struct ptx_reg x) {
    ptx_ins(k, "mul.f32 %s, %s, 0f3FB8AA3B", dst.s, x.s); /* log2(e) */
    ptx_ins(k, "ex2.approx.f32 %s, %s", dst.s, dst.s);
}

void ptx_gelu(struct ptx_kernel *k, struct ptx_reg v) {
    static const float coef[] = {0.17087277f, -0.82215223f, 1.48851587f, -1.13520398f,
                                 0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,
                                 1.00002368f, -1.26551223f};
    struct ptx_reg z = ptx_reg(k, PTX_F32), t = ptx_reg(k, PTX_F32), q = ptx_reg(k, PTX_F32);
    struct ptx_reg e = ptx_reg(k, PTX_F32), neg = ptx_reg(k, PTX_PRED);
    ptx_ins(k, "abs.f32 %s, %s", z.s, v.s);
    ptx_ins(k, "mul.f32 %s, %s, %s", z.s, z.s, ptx_f32(0.70710678118654752f).s);
    ptx_ins(k, "fma.rn.f32 %s, %s, 0f3F000000, 0f3F800000", t.s, z.s); /* 1 + z/2 */
    ptx_ins(k, "rcp.rn.f32 %s, %s", t.s, t.s);
    ptx_ins(k, "mov.f32 %s, %s", q.s, ptx_f32(coef[0]).s);
    for (int i = 1; i < 10; i++)
        ptx_ins(k, "fma.rn.f32 %s, %s, %s, %s", q.s, q.s, t.s, ptx_f32(coef[i]).s);
    ptx_ins(k, "neg.f32 %s, %s", e.s, z.s);
    ptx_ins(k, "fma.rn.f32 %s, %s, %s, %s", q.s, e.s, z.s, q.s); /* q - z^2 */
    ptx_exp(k, e, q);
    ptx_ins(k, "mul.f32 %s, %s, %s", e.s, e.s, t.s); /* erfc(z) */
    ptx_ins(k, "setp.lt.f32 %s, %s, 0f00000000", neg.s, v.s);
    ptx_ins(k, "@!%s sub.f32 %s, 0f40000000, %s", neg.s, e.s, e.s); /* 2 - erfc */
    ptx_ins(k, "mul.f32 %s, %s, 0f3F000000", v.s, v.s);
    ptx_ins(k, "mul.f32 %s, %s, %s", v.s, v.s, e.s);
}
