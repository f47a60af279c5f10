/*
 * ptx.h — a small emitter of PTX text, for kernels generated at run time for the model's shapes.
 *
 * A generator opens a kernel with its parameters, allocates virtual registers by type, writes
 * instructions with printf-style formatting and closes it; ptx_end() assembles the header, the
 * parameter list, the register declarations (counted while the body was written) and the body.
 * Register and label names are short strings held by value, so generators read like PTX:
 *
 *     struct ptx_reg x = ptx_reg(k, PTX_F32), y = ptx_reg(k, PTX_F32);
 *     ptx_ins(k, "add.f32 %s, %s, %s", y.s, x.s, x.s);
 *
 * Errors (out of memory) are sticky: the kernel text comes back NULL from ptx_end().
 */
#ifndef WC_PTX_H
#define WC_PTX_H

#include <stddef.h>

enum ptx_type { PTX_PRED, PTX_B16, PTX_B32, PTX_B64, PTX_F32, PTX_F64, PTX_N_TYPES };

struct ptx_reg {
    char s[12]; /* "%f12", "%rd3", "%p1" */
};

struct ptx_buf {
    char *p;
    size_t len, cap;
    int oom;
};

struct ptx_phase;

struct ptx_kernel {
    char name[128];
    int sm; /* target, e.g. 80 or 90 */
    struct ptx_buf params, body;
    int n_params;
    int n_regs[PTX_N_TYPES];
    int n_labels;
    int grid_dep_placed;       /* ptx_grid_dep_wait was called (else ptx_end puts it first) */
    int max_threads, min_ctas; /* ptx_occupancy's, 0 if not called */
    int bad;                   /* a call this kernel cannot honour: ptx_end gives NULL */
    struct ptx_phase *phase;   /* non-NULL: a generator is writing a phase (below) */
};

/* .maxntid threads and .minnctapersm min_ctas: ptxas keeps the registers to what min_ctas CTAs
 * of `threads` fit in an SM (spilling if it must, which test_ptx.py refuses). The kernel must
 * be launched with at most `threads` threads a CTA. */
void ptx_occupancy(struct ptx_kernel *k, int threads, int min_ctas);
/* Starts kernel `name` for sm_<sm>. */
void ptx_begin(struct ptx_kernel *k, const char *name, int sm);
/* Declares a .u64 pointer or .u32 / .f32 scalar parameter (in a phase, prefixed: ptx_sym);
 * returns its name for ptx_ld_param. */
const char *ptx_param(struct ptx_kernel *k, const char *type, const char *name);
/* dst = parameter `name` (type "u32", "u64", ...). */
void ptx_ld_param(struct ptx_kernel *k, const char *type, struct ptx_reg dst, const char *name);
struct ptx_reg ptx_reg(struct ptx_kernel *k, enum ptx_type t);
struct ptx_reg ptx_label(struct ptx_kernel *k); /* "L3"; place it with ptx_place() */
void ptx_place(struct ptx_kernel *k, struct ptx_reg label);
/* One instruction (or directive); ";" and the newline are added. */
void ptx_ins(struct ptx_kernel *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Raw text (e.g. a .shared declaration) appended to the body as is. */
void ptx_raw(struct ptx_kernel *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The whole module text (malloc'd, caller frees) or NULL when out of memory; frees k's buffers. */
char *ptx_end(struct ptx_kernel *k);
/* Frees k's buffers without producing text (error paths). */
void ptx_discard(struct ptx_kernel *k);

/* Programmatic dependent launch (sm_90+; nothing on older targets): the kernel may be launched
 * while the previous kernel on its stream still runs (the CUDA backend launches every kernel
 * whose text has the wait that way). Here it waits for that kernel to complete and its writes
 * to be visible (griddepcontrol.wait), then lets the next kernel launch early in turn
 * (griddepcontrol.launch_dependents: one kernel ahead at most, and that kernel cannot complete
 * before this one's wait returned, so every earlier kernel has completed too). Before it a
 * kernel may compute addresses, read what no kernel writes (weights) or what was written two
 * launches back or before a copy on the stream (the step's uploaded tables, the encoder's
 * cross K/V), and prefetch anything into L2 (no value read); it writes nothing. After it,
 * anything. Called at most once, by every thread (a CTA with nothing to do branches to it,
 * then ends), never skipped; a kernel that does not call it gets it as its first instruction
 * (ptx_end). The reasoning needs every kernel on the stream either to wait so or to be launched
 * without the attribute, as cuBLAS's are: those start only once the kernel before has
 * completed, as always. */
void ptx_grid_dep_wait(struct ptx_kernel *k);
/* ptx_grid_dep_wait for a kernel whose CTAs past its rows (predicate `past`) branched to the
 * label `at` before their work: `at` placed, the wait, then those CTAs go to `done`. */
void ptx_grid_dep_wait_at(struct ptx_kernel *k, struct ptx_reg at, struct ptx_reg past,
                          struct ptx_reg done);

/* ---- phases: a kernel's body as one step of a persistent kernel ----
 * A cooperative kernel (every CTA resident at once) can run several kernels' work one after
 * another, separated by grid barriers, instead of launching them: what a decoder step's chain
 * of projections pays in kernel boundaries. A generator written with the calls of this header
 * emits its body either as a kernel of its own or, while k->phase is set, as a phase: its
 * parameters and shared arrays are the outer kernel's, named with the phase's prefix
 * (ptx_param, ptx_ld_param, ptx_sym), %ctaid.x / .y / .z are the virtual CTA the caller's loop
 * gives (and %nctaid.z its grid's z, where set), ptx_grid_dep_wait emits nothing (the outer
 * kernel waits once), its CTA-wide barriers are ptx_bar_sync's,
 * and what an earlier phase of the same launch may have written is read with ld.global.cg
 * (ptx_ld_act): an .nc load may return data older than the launch's own writes. The body
 * must not return, and %nctaid is not available in it. */
struct ptx_phase {
    char prefix[16];         /* of its parameters' and shared arrays' names */
    struct ptx_reg ctaid[3]; /* .b32: the virtual CTA's x, y (and z: a 3-D virtual grid) */
    struct ptx_reg nctaid_z; /* .b32: the virtual grid's z size, where the body reads it */
    int threads;             /* 0: the body runs on the whole CTA; else on its first `threads`
                              * threads (ptx_bar_sync), the others wait past it */
};
/* dst (n bytes) = the name of a parameter or shared array: base, with the phase's prefix in a
 * phase. */
void ptx_sym(const struct ptx_kernel *k, char *dst, size_t n, const char *base);
/* The load of an activation: ld.global.nc (nc) or ld.global in a kernel of its own, which
 * reads only what earlier kernels wrote; ld.global.cg (L2, coherent) in a phase. */
const char *ptx_ld_act(const struct ptx_kernel *k, int nc);
/* bar.sync across the threads that run the body: the CTA's (bar.sync 0), or in a phase of
 * fewer threads (ptx_phase.threads) theirs alone (named barrier 1). */
void ptx_bar_sync(struct ptx_kernel *k);
/* A barrier across the grid of a cooperative launch: every thread waits until every CTA has
 * arrived, and writes before it (by any CTA) are seen by ptx_ld_act loads after it. counter:
 * .b64 global address of a u32 that is 0 at launch; index: the barrier's number in the
 * launch, from 0 (barrier i waits for the count (i + 1) x %nctaid.x). By every thread, outside
 * any branch that is not uniform across the CTA. */
void ptx_grid_sync(struct ptx_kernel *k, struct ptx_reg counter, int index);

/* ---- common sequences ---- */

/* An f32 immediate, exactly: "0f3F800000" for 1.0f. */
struct ptx_reg ptx_f32(float v);

/* A 32-bit register holding %tid.x / %ctaid.x etc. */
struct ptx_reg ptx_special(struct ptx_kernel *k, const char *sreg);
/* Loads a .u64 pointer parameter as a global address. */
struct ptx_reg ptx_ld_ptr(struct ptx_kernel *k, const char *param);
/* dst = base + (u32 index) * elem_size, as a 64-bit address. */
struct ptx_reg ptx_addr(struct ptx_kernel *k, struct ptx_reg base, struct ptx_reg index,
                        int elem_size);
/* Sum (op "add") or max ("max") of a f32 over the 32 lanes of a warp (butterfly shuffles);
 * every lane gets the result. */
void ptx_warp_reduce(struct ptx_kernel *k, struct ptx_reg v, const char *op);
/* exp(x) for f32 as ex2.approx(x * log2 e): relative error ~2^-22 over the range softmax and
 * GELU use. */
void ptx_exp(struct ptx_kernel *k, struct ptx_reg dst, struct ptx_reg x);

/* v = gelu(v) = v/2 (1 + erf(v/√2)) in place, exact-erf GELU as the CPU twin: erfc from
 * Numerical Recipes (relative error 1.2e-7), 1 + erf(v/√2) = 2 - erfc(z) for v >= 0 and erfc(z)
 * otherwise, z = |v|/√2. */
void ptx_gelu(struct ptx_kernel *k, struct ptx_reg v);

#endif /* WC_PTX_H */
